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

With ``--network`` every job also communicates after its run (all-to-all, 20 messages of
one 8-flit packet, the flit-level wormhole network, service = run + communication time):
the table gains the mean communication time, packet latency and packet blocking (cycles).

Usage: python benchmarks/mesh2d_traces.py [--workers N] [--out CSV] [--machines mesh:16x8,mesh:16x16] [--schedulers fcfs,easy] [--network]
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


#: --network: every job sends 20 messages all-to-all (one 8-flit packet each) on the flit-level wormhole network after
#: its run (service = run time + communication time, one cycle = one second of the trace)
NETWORK = {"network": "wormhole:packet=8,buffers=4,vcs=1,mode=flit", "traffic": "all-to-all:messages=20,compute=0", "service": "add", "contention": False}


def one(case: tuple, family: str, alloc: str, sched: str, machine: str = "mesh:16x8", network: bool = False) -> dict:
    import numpy as np

    import topoalloc
    from topoalloc.topology import parse_machine
    from topoalloc.workload import default_trace_path, read_swf

    label, trace, jobs, mult = case
    w = read_swf(default_trace_path() if trace == "default" else TRACES / trace)
    if jobs:
        w = w.take(np.arange(min(jobs, len(w))))
    scale = parse_machine(machine).n_nodes / 128  # both logs are of 128-processor machines: sizes in proportion
    t0 = time.perf_counter()
    r = topoalloc.simulate(w, machine=machine, allocator=alloc, scheduler=sched, clean=True, work_multiple=None if mult == 1.0 else mult,
                           scale_sizes=None if scale == 1 else scale, **(NETWORK if network else {}))
    s = r.summary()
    blocks = r.blocks[r.blocks >= 0] if getattr(r, "blocks", None) is not None else None
    row = {
        "case": label, "machine": machine, "family": family, "allocator": alloc, "scheduler": sched, "jobs": s["jobs"],
        "offered_load": round(s["offered_load"], 3), "mean_wait": round(s["mean_wait"], 1),
        "bounded_slowdown": round(s["mean_bounded_slowdown"], 3), "utilization": round(s["utilization"], 3),
        "blocks": round(float(blocks.mean()), 2) if blocks is not None and blocks.size else (1.0 if family == "2-D contiguous" else ""),
        "hops": round(s.get("mean_pairwise_l1", float("nan")), 2), "seconds": round(time.perf_counter() - t0, 1),
    }
    if network:
        net = s["network"]
        row.update({"comm_time": round(net["mean_comm_time"], 2), "packet_latency": round(net["mean_packet_latency"], 2),
                    "packet_blocking": round(net["mean_packet_blocking"], 3)})
    return row


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--out", default=None, help="also write the rows as CSV")
    ap.add_argument("--machines", default="mesh:16x8", help="comma-separated meshes (sizes scaled in proportion to 128 processors), e.g. mesh:16x8,mesh:16x16")
    ap.add_argument("--schedulers", default="fcfs,easy")
    ap.add_argument("--network", action="store_true", help="jobs communicate (all-to-all, 20 messages, flit level): adds communication time, packet latency and blocking")
    args = ap.parse_args()
    print(f"# {time.strftime('%Y-%m-%d')}  {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}; load {os.getloadavg()[0]:.2f}")
    machines, scheds = args.machines.split(","), args.schedulers.split(",")
    jobs = [(case, fam, a, s, m, args.network) for m in machines for case in CASES for s in scheds for fam, a in ALLOCATORS]
    if not (TRACES / CASES[2][1]).exists():
        jobs = [j for j in jobs if j[0][1] == "default"]
    with ProcessPoolExecutor(args.workers) as ex:
        rows = list(ex.map(one, *zip(*jobs)))
    cols = ["family", "allocator", "mean_wait", "bounded_slowdown", "utilization", "blocks", "hops"] + (["comm_time", "packet_latency", "packet_blocking"] if args.network else []) + ["seconds"]
    for machine in machines:
        for case in CASES:
            for sched in scheds:
                sel = [r for r in rows if r["case"] == case[0] and r["scheduler"] == sched and r["machine"] == machine]
                if not sel:
                    continue
                print(f"\n{case[0]} on {machine}, {sched} ({sel[0]['jobs']:,} jobs, offered load {sel[0]['offered_load']})")
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
