"""The 2-D mesh allocators (seed 001) on real traces, beside the linear curve allocators (seed 003).

Which family wins on waiting time, on blocks per job and on distance between a
job's processors, on the logs of real 128-processor machines:

* NASA iPSC/860 (18,239 jobs, the bundled trace) on ``mesh:16x8``, at its logged
  load (offered load 0.47) and with run times multiplied by 1.6 (0.75);
* SDSC-SP2 (first 20,000 jobs of the cleaned log, 128 processors) on ``mesh:16x8``;

under FCFS and EASY.  A job's size becomes a W x L frame by each 2-D
allocator's ``shape_rule`` (default ``square``: the squarest frame of at least
that many processors that fits the mesh, see ``topoalloc.alloc.mesh2d``); the
curve allocators take the size as is.  ``blocks`` is the allocator's own count
of pieces per job (sub-meshes, pages, buddies; 1 for contiguous), ``hops`` the
mean pairwise Manhattan distance between a job's processors.

Usage: python benchmarks/mesh2d_traces.py [--workers N] [--out CSV]
"""

from __future__ import annotations

import argparse
import csv
import os
import platform
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
TRACES = Path(os.environ.get("TOPOALLOC_TRACES", HERE.parents[0].parent / "shared" / "traces"))

ALLOCATORS = [
    ("2-D contiguous", "mesh_first_fit"),
    ("2-D contiguous", "mesh_best_fit"),
    ("2-D contiguous", "frame_sliding"),
    ("2-D contiguous", "adaptive_scan"),
    ("2-D non-contiguous", "mbs"),
    ("2-D non-contiguous", "paging:page_index=0"),
    ("2-D non-contiguous", "anca_ff"),
    ("2-D non-contiguous", "anca_bf"),
    ("2-D non-contiguous", "pald"),
    ("2-D non-contiguous", "mesh_random:seed=1"),
    ("curve", "first_fit:curve=hilbert"),
    ("curve", "best_fit:curve=hilbert"),
    ("curve", "best_fit:curve=snake"),
    ("curve", "sum_of_squares:curve=hilbert"),
]
CASES = [
    ("NASA x1.0", "default", None, 1.0),
    ("NASA x1.6", "default", None, 1.6),
    ("SDSC-SP2 20k", "SDSC-SP2-1998-4.2-cln.swf.gz", 20_000, 1.0),
]


def one(case: tuple, family: str, alloc: str, sched: str) -> dict:
    import numpy as np

    import topoalloc
    from topoalloc.workload import default_trace_path, read_swf

    label, trace, jobs, mult = case
    w = read_swf(default_trace_path() if trace == "default" else TRACES / trace)
    if jobs:
        w = w.take(np.arange(min(jobs, len(w))))
    t0 = time.perf_counter()
    r = topoalloc.simulate(w, machine="mesh:16x8", allocator=alloc, scheduler=sched, clean=True, work_multiple=None if mult == 1.0 else mult)
    s = r.summary()
    blocks = r.blocks[r.blocks >= 0] if getattr(r, "blocks", None) is not None else None
    return {
        "case": label, "family": family, "allocator": alloc, "scheduler": sched, "jobs": s["jobs"],
        "offered_load": round(s["offered_load"], 3), "mean_wait": round(s["mean_wait"], 1),
        "bounded_slowdown": round(s["mean_bounded_slowdown"], 3), "utilization": round(s["utilization"], 3),
        "blocks": round(float(blocks.mean()), 2) if blocks is not None and blocks.size else (1.0 if family == "2-D contiguous" else ""),
        "hops": round(s.get("mean_pairwise_l1", float("nan")), 2), "seconds": round(time.perf_counter() - t0, 1),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--out", default=None, help="also write the rows as CSV")
    args = ap.parse_args()
    print(f"# {time.strftime('%Y-%m-%d')}  {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}; load {os.getloadavg()[0]:.2f}")
    jobs = [(case, fam, a, s) for case in CASES for s in ("fcfs", "easy") for fam, a in ALLOCATORS]
    if not (TRACES / CASES[2][1]).exists():
        jobs = [j for j in jobs if j[0][1] == "default"]
    with ProcessPoolExecutor(args.workers) as ex:
        rows = list(ex.map(one, *zip(*jobs)))
    cols = ["family", "allocator", "mean_wait", "bounded_slowdown", "utilization", "blocks", "hops", "seconds"]
    for case in CASES:
        for sched in ("fcfs", "easy"):
            sel = [r for r in rows if r["case"] == case[0] and r["scheduler"] == sched]
            if not sel:
                continue
            print(f"\n{case[0]} on mesh:16x8, {sched} ({sel[0]['jobs']:,} jobs, offered load {sel[0]['offered_load']})")
            print("| " + " | ".join(cols) + " |")
            print("|" + "---|" * len(cols))
            for r in sorted(sel, key=lambda r: r["mean_wait"]):
                print("| " + " | ".join(str(r[c]) for c in cols) + " |")
    if args.out:
        with open(args.out, "w", newline="") as fh:
            wr = csv.DictWriter(fh, fieldnames=list(rows[0]))
            wr.writeheader()
            wr.writerows(rows)
    print(f"\n# load at end {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
