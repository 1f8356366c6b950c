"""Machines of units at full size: a 50,000-job trace under EASY with the slice allocator.

Target (per family, full real size): <= 30 s and <= 1 GB for 50,000 jobs.

The trace is the first 50,000 jobs of SDSC-SP2 (128 processors), sizes scaled
to the machine by the *proportional* rule: every size is multiplied by
(machine nodes / the trace's MaxProcs), so a job that took a tenth of the
SP2 takes a tenth of the machine (``--scale-sizes``; then ``--clean``).  Each
case runs in a new process; the time is that of ``topoalloc.simulate``
(preparing the workload, simulating, summarising, with the locality metrics),
the memory the process's peak resident set.

Usage: python benchmarks/bench_machines.py [--jobs N] [--trace FILE] [--case NAME ...]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

TRACES = Path(os.environ.get("TOPOALLOC_TRACES", Path(__file__).resolve().parents[1].parent / "shared" / "traces"))

CASES = [
    # name, machine, allocator
    ("TPU v4 static", "tpu:v4", "slice:rule=static"),
    ("TPU v4 OCS", "tpu:v4", "slice:rule=ocs"),
    ("TPU v5p static", "tpu:v5p", "slice:rule=static"),
    ("TPU v5p OCS", "tpu:v5p", "slice:rule=ocs"),
    ("Fugaku (Tofu-D)", "tofu:fugaku", "slice"),
    ("Sequoia (BG/Q)", "bgq:sequoia", "slice"),
]
TARGET_S = 30.0
TARGET_MB = 1024.0


def one(trace: Path, jobs: int, machine: str, allocator: str) -> dict:
    import numpy as np

    import topoalloc
    from topoalloc.topology import parse_machine
    from topoalloc.workload import read_swf

    w = read_swf(trace)
    w = w.take(np.arange(min(jobs, len(w))))
    n = parse_machine(machine).n_nodes
    factor = n / (w.max_procs or int(w.size.max()))
    t0 = time.perf_counter()
    r = topoalloc.simulate(w, machine=machine, allocator=allocator, scheduler="easy", clean=True, scale_sizes=factor)
    seconds = time.perf_counter() - t0
    s = r.summary()
    return {
        "jobs": s["jobs"],
        "seconds": seconds,
        "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "utilization": s["utilization"],
        "mean_wait": s["mean_wait"],
        "factor": factor,
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--jobs", type=int, default=50_000)
    p.add_argument("--trace", default=str(TRACES / "SDSC-SP2-1998-4.2-cln.swf.gz"))
    p.add_argument("--case", action="append", default=None, help="run only the named case(s)")
    p.add_argument("--one", nargs=2, metavar=("MACHINE", "ALLOCATOR"), help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.one:
        print(json.dumps(one(Path(args.trace), args.jobs, *args.one)))
        return
    print(f"trace: first {args.jobs:,} jobs of {Path(args.trace).name}, sizes scaled proportionally; EASY; target <= {TARGET_S:.0f} s, <= {TARGET_MB:.0f} MB")
    print(f"{'case':<18} {'machine':<12} {'nodes':>8} {'jobs':>7} {'seconds':>8} {'peak MB':>8} {'util':>6} {'mean wait (s)':>14}  target")
    from topoalloc.topology import parse_machine

    for name, machine, allocator in CASES:
        if args.case and name not in args.case:
            continue
        out = subprocess.run([sys.executable, __file__, "--trace", args.trace, "--jobs", str(args.jobs), "--one", machine, allocator],
                             capture_output=True, text=True, check=True)
        r = json.loads(out.stdout.strip().splitlines()[-1])
        met = "met" if r["seconds"] <= TARGET_S and r["peak_mb"] <= TARGET_MB else "MISSED"
        print(f"{name:<18} {machine:<12} {parse_machine(machine).n_nodes:>8,} {r['jobs']:>7,} {r['seconds']:>8.1f} {r['peak_mb']:>8.0f} "
              f"{r['utilization']:>6.3f} {r['mean_wait']:>14,.0f}  {met}")


if __name__ == "__main__":
    main()
