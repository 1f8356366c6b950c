"""Foundation performance: whole-trace simulations, timed end to end, and peak memory.

Targets (the foundation):
  * CTC-SP2 (77,222 jobs, 338 processors, EASY, flat): <= 1.5 s end to end, reading included
  * NASA iPSC/860 (18,239 jobs, 128 processors, EASY, flat): <= 0.3 s
  * SDSC-BLUE (243,306 jobs): completes with peak memory <= 400 MB

"End to end" is measured two ways: in one process (``topoalloc.simulate(path)``: read,
prepare, simulate, summarise; median of several runs, interpreter already started) and
as the command a user types (``topoalloc simulate --trace ... --json --quiet``: a new
process, imports included; median wall time).  Peak memory is the child process's
maximum resident set size.

Usage: python benchmarks/bench_foundation.py [--repeat N]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TRACES = Path(os.environ.get("TOPOALLOC_TRACES", Path(__file__).resolve().parents[1].parent / "shared" / "traces"))

CASES = [
    # name, trace, machine, extra CLI args, target seconds, target MB
    ("CTC-SP2 EASY flat", "CTC-SP2-1996-3.1-cln.swf.gz", "flat:338", [], 1.5, None),
    ("NASA iPSC/860 EASY flat", "NASA-iPSC-1993-3.1-cln.swf", "flat:128", [], 0.3, None),
    ("SDSC-BLUE EASY flat (--clean)", "SDSC-BLUE-2000-4.2-cln.swf.gz", "flat:1152", ["--clean"], None, 400),
]


def in_process(trace: Path, machine: str, clean: bool, repeat: int) -> tuple[float, dict]:
    import topoalloc

    times = []
    summary = {}
    for _ in range(repeat):
        t0 = time.perf_counter()
        r = topoalloc.simulate(trace, machine=machine, scheduler="easy", clean=clean)
        summary = r.summary()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), summary


def cli(trace: Path, machine: str, extra: list[str], repeat: int) -> tuple[float, float, dict]:
    """Median wall time of the CLI in a new process, and that process's own peak RSS (MB)."""
    times, peaks = [], []
    out: dict = {}
    for _ in range(repeat):
        cmd = [sys.executable, "-m", "topoalloc", "simulate", "--trace", str(trace), "--machine", machine, "--json", "--quiet", *extra]
        with tempfile.TemporaryFile() as fout, tempfile.TemporaryFile() as ferr:
            t0 = time.perf_counter()
            proc = subprocess.Popen(cmd, stdout=fout, stderr=ferr)
            _, status, usage = os.wait4(proc.pid, 0)  # this child's own rusage
            times.append(time.perf_counter() - t0)
            code = os.waitstatus_to_exitcode(status)
            fout.seek(0)
            ferr.seek(0)
            if code:
                raise SystemExit(f"{' '.join(cmd)} failed: {ferr.read().decode()}")
            out = json.loads(fout.read())
        peaks.append(usage.ru_maxrss / 1024.0)  # KiB on Linux
    return statistics.median(times), max(peaks), out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    print(f"machine: {platform.machine()} {os.cpu_count()} cores, Python {platform.python_version()}, {platform.platform()}")
    rows = []
    # every CLI run first: a child's peak RSS includes what it inherits from this process at
    # fork, so this process must stay small (no simulation in it) until they are done
    cli_results = {}
    for name, fname, machine, extra, target_s, target_mb in CASES:
        trace = TRACES / fname
        if not trace.exists():
            print(f"{name}: SKIPPED ({trace} not found)")
            continue
        cli_results[name] = cli(trace, machine, extra, args.repeat)
    for name, fname, machine, extra, target_s, target_mb in CASES:
        if name not in cli_results:
            continue
        wall, peak, out = cli_results[name]
        inproc, summary = in_process(TRACES / fname, machine, "--clean" in extra, args.repeat)
        rows.append((name, out["jobs"], inproc, wall, peak, target_s, target_mb, summary))
    print()
    print(f"{'case':32s} {'jobs':>8s} {'in-process s':>13s} {'CLI wall s':>11s} {'peak MB':>8s}  target")
    for name, jobs, inproc, wall, peak, target_s, target_mb, summary in rows:
        target = f"<= {target_s} s" if target_s else f"<= {target_mb} MB"
        ok = (max(inproc, wall) <= target_s) if target_s else (peak <= target_mb)
        print(f"{name:32s} {jobs:8d} {inproc:13.3f} {wall:11.3f} {peak:8.1f}  {target}  {'met' if ok else 'MISSED'}")
    print()
    for name, jobs, *_, summary in rows:
        print(f"{name}: mean_wait={summary['mean_wait']:.1f} s  mean_bsld={summary['mean_bounded_slowdown']:.3f}  utilization={summary['utilization']:.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
