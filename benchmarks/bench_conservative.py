"""Conservative backfilling against EASY on CTC-SP2: the command's wall time, side by side.

Target (performance at scale): conservative <= 3 x EASY's time on CTC-SP2 on the flat
machine and on mesh:26x13 with ``best_fit`` (338 processors both).  Each case runs
``topoalloc simulate`` as a user types it (a new process, imports and reading included;
on the mesh the locality metrics are on, as the command's default for a topology),
conservative and EASY in turn, A B A B ..., and the ratio is taken pair by pair; the
median is reported.

Usage: python benchmarks/bench_conservative.py [--pairs N]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time

from bench_naive_easy import TRACES, run_measured

TARGET = 3.0
CASES = [("flat:338", "flat"), ("mesh:26x13", "best_fit")]
TRACE = "CTC-SP2-1996-3.1-cln.swf.gz"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=5, help="interleaved pairs per case (default 5)")
    args = ap.parse_args()
    import topoalloc
    from topoalloc.sched import fastpath

    print(f"# {time.strftime('%Y-%m-%d %H:%M')}  {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, topoalloc {topoalloc.__version__}")
    print(f"# compiled kernel built: {fastpath.compiled_available()}; load average at start {os.getloadavg()[0]:.2f}; target conservative <= {TARGET} x EASY")
    path = TRACES / TRACE
    ok_all = True
    for machine, allocator in CASES:
        cmd = [sys.executable, "-m", "topoalloc", "simulate", "--trace", str(path), "--machine", machine, "--allocator", allocator, "--clean", "--json", "--quiet"]
        walls: dict[str, list[float]] = {"conservative": [], "easy": []}
        waits = {}
        ratios = []
        for _ in range(args.pairs):
            for sched in ("conservative", "easy"):
                w, _, out = run_measured(cmd + ["--scheduler", sched])
                walls[sched].append(w)
                waits[sched] = json.loads(out)["mean_wait"]
            ratios.append(walls["conservative"][-1] / walls["easy"][-1])
        r = statistics.median(ratios)
        ok = r <= TARGET
        ok_all = ok_all and ok
        print(f"CTC-SP2 on {machine} {allocator}: conservative {statistics.median(walls['conservative']):.3f} s (mean wait {waits['conservative']:.1f}), "
              f"EASY {statistics.median(walls['easy']):.3f} s (mean wait {waits['easy']:.1f})")
        print(f"  ratio per pair {', '.join(f'{x:.2f}' for x in ratios)}  median {r:.2f} (target <= {TARGET}): {'met' if ok else 'MISSED'}")
    print(f"# load average at end {os.getloadavg()[0]:.2f}")
    return 0 if ok_all else 1


if __name__ == "__main__":
    sys.exit(main())
