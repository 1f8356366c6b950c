"""Flat EASY, topoalloc's command against the naive loop of ``naive_easy.py``: wall time and peak memory.

Target: the command's wall time <= 0.5 x the naive loop's on CTC-SP2 and on
SDSC-BLUE, and its peak memory <= the naive loop's.  Both are run as the
command a user types (a new process each, imports and reading included),
interleaved A B A B ... so that a change in the machine's load hits both;
the ratio is taken per pair and the median reported.  Both schedules are the
same job for job (``tests/test_naive_easy.py``); here the mean waits printed
by the two must agree too, or the benchmark stops.

Usage: python benchmarks/bench_naive_easy.py [--pairs N] [--trace NAME ...]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
TRACES = Path(os.environ.get("TOPOALLOC_TRACES", HERE.parents[0].parent / "shared" / "traces"))
CASES = {"CTC-SP2": ("CTC-SP2-1996-3.1-cln.swf.gz", 338), "SDSC-BLUE": ("SDSC-BLUE-2000-4.2-cln.swf.gz", 1152)}
WALL_TARGET, MEMORY_TARGET = 0.5, 1.0


def run_measured(cmd: list[str]) -> tuple[float, float, str]:
    """Wall seconds, peak RSS in MB (the child's own, from wait4) and stdout."""
    import tempfile

    with tempfile.TemporaryFile(mode="w+") as fout, tempfile.TemporaryFile(mode="w+") as ferr:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=fout, stderr=ferr)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        fout.seek(0)
        ferr.seek(0)
        if proc.returncode:
            raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}): {ferr.read().strip()[-500:]}")
        return wall, usage.ru_maxrss / 1024, fout.read()


def _own_peak() -> float:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=5, help="interleaved pairs per trace (default 5)")
    ap.add_argument("--trace", action="append", choices=sorted(CASES), help="trace(s) to run (default: both)")
    args = ap.parse_args()
    # This process imports neither numpy nor topoalloc: a child's peak (ru_maxrss) includes what it was
    # forked from, kept across exec, so the parent must stay smaller than either command.
    info = subprocess.run(
        [sys.executable, "-c", "import numpy, topoalloc; from topoalloc.sched import fastpath; print(numpy.__version__, topoalloc.__version__, fastpath.compiled_available())"],
        capture_output=True, text=True, check=True,
    ).stdout.split()
    print(f"# {time.strftime('%Y-%m-%d')}  {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, numpy {info[0]}, topoalloc {info[1]}")
    print(f"# compiled kernel built: {info[2]}; load average at start {os.getloadavg()[0]:.2f}; this process peaks at {_own_peak():.0f} MB (a floor under both)")
    print(f"# target: topoalloc wall <= {WALL_TARGET} x naive, peak memory <= {MEMORY_TARGET} x naive")
    worst = True
    for name in args.trace or sorted(CASES):
        trace, procs = CASES[name]
        path = TRACES / trace
        if not path.exists():
            print(f"{name}: trace {path.name} not found, skipped")
            continue
        ta = [sys.executable, "-m", "topoalloc", "simulate", "--trace", str(path), "--machine", f"flat:{procs}", "--scheduler", "easy", "--clean", "--json", "--quiet"]
        nv = [sys.executable, str(HERE / "naive_easy.py"), str(path), str(procs), "--clean"]
        ratios, mem_ratios, walls_a, walls_b, mems_a, mems_b = [], [], [], [], [], []
        for _ in range(args.pairs):
            wa, ma, oa = run_measured(ta)
            wb, mb, ob = run_measured(nv)
            summary = json.loads(oa)
            naive_wait = float(ob.split("mean wait")[1])
            if abs(summary["mean_wait"] - naive_wait) > 1e-3 * max(1.0, naive_wait):
                raise SystemExit(f"{name}: schedules differ: topoalloc mean wait {summary['mean_wait']}, naive {naive_wait}")
            walls_a.append(wa)
            walls_b.append(wb)
            mems_a.append(ma)
            mems_b.append(mb)
            ratios.append(wa / wb)
            mem_ratios.append(ma / mb)
        r, m = statistics.median(ratios), statistics.median(mem_ratios)
        ok = r <= WALL_TARGET and m <= MEMORY_TARGET
        worst = worst and ok
        print(f"{name} ({summary['jobs']:,} jobs, flat:{procs}, EASY, --clean; mean wait {summary['mean_wait']:.4f} both)")
        print(f"  topoalloc  wall median {statistics.median(walls_a):.3f} s   peak {statistics.median(mems_a):.0f} MB")
        print(f"  naive loop wall median {statistics.median(walls_b):.3f} s   peak {statistics.median(mems_b):.0f} MB")
        print(f"  wall ratio per pair {', '.join(f'{x:.3f}' for x in ratios)}  median {r:.3f} (target <= {WALL_TARGET}): {'met' if r <= WALL_TARGET else 'MISSED'}")
        print(f"  memory ratio median {m:.3f} (target <= {MEMORY_TARGET}): {'met' if m <= MEMORY_TARGET else 'MISSED'}")
    print(f"# load average at end {os.getloadavg()[0]:.2f}")
    return 0 if worst else 1


if __name__ == "__main__":
    sys.exit(main())
