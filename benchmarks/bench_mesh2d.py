"""Allocate+release time of the 2-D mesh allocators on mesh:20x20 and mesh:128x128.

Targets (2-D mesh allocation): median allocate+release <= 20 µs for First
Fit, Best Fit, MBS and Paging on mesh:20x20, <= 100 µs on mesh:128x128 (steady
state, half busy).  The other allocators are timed beside them, without a target.

Method: requests are W x L frames with each side the ceiling of an exponential
variate of mean 10, truncated to the mesh side by rejection (Bani-Ahmad's workload;
``topoalloc.workload.synthetic.Exponential``).  The machine is first brought to a
steady state: a stream of requests is allocated, and before each one held jobs are
released (a random one each time) while more than half the machine is busy.  In
that state each measured pair allocates one request and releases it at once.
Reported: median and 90th percentile over the pairs that fitted, the share that did
not fit now (their time — a failed search — apart).  Each figure goes through the
base class's grant validation (a copy, a sortedness check and a busy check of the
granted nodes), as every simulated allocation does.

Usage: python benchmarks/bench_mesh2d.py [--pairs N] [--repeats R] [--only NAMES]
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import statistics
import sys

import numpy as np
from _timing import measure_pairs

import topoalloc  # noqa: F401  (registers the allocators)
from topoalloc.alloc import Request
from topoalloc.api import make_allocator
from topoalloc.topology import parse_machine
from topoalloc.workload.synthetic import Exponential

TARGETS = {("mesh:20x20", n): 20.0 for n in ("mesh_first_fit", "mesh_best_fit", "mbs", "paging")}
TARGETS.update({("mesh:128x128", n): 100.0 for n in ("mesh_first_fit", "mesh_best_fit", "mbs", "paging")})
OTHERS = ("frame_sliding", "adaptive_scan", "anca_ff", "anca_bf", "pald", "mesh_random", "buddy_2d")


def requests(side: int, n: int, seed: int) -> list[Request]:
    rng = np.random.default_rng(seed)
    d = Exponential(10.0, side)
    w, l = d.sample(rng, n), d.sample(rng, n)
    return [Request(int(a * b), (int(a), int(b))) for a, b in zip(w.tolist(), l.tolist())]


def steady(spec: str, machine: str, stream: list[Request], rng: random.Random):
    a = make_allocator(spec, parse_machine(machine))
    held = []
    for req in stream:
        while held and a.free_count < a.n_nodes // 2:
            a.release(held.pop(rng.randrange(len(held))))
        x = a.allocate(req)
        if x is not None:
            held.append(x)
    while held and a.free_count < a.n_nodes // 2:
        a.release(held.pop(rng.randrange(len(held))))
    return a


def run(spec: str, machine: str, pairs: int, repeats: int) -> tuple[list[float], float, float, float]:
    side = parse_machine(machine).dims[0]
    medians, p90s, nofit, fails = [], [], [], []
    for rep in range(repeats):
        rng = random.Random(rep)
        a = steady(spec, machine, requests(side, 3000, 100 + rep), rng)
        ok, failed = measure_pairs(a, requests(side, pairs, 200 + rep))
        medians.append(statistics.median(ok) * 1e6)
        p90s.append(sorted(ok)[int(0.9 * len(ok))] * 1e6)
        nofit.append(len(failed) / pairs)
        fails.append(statistics.median(failed) * 1e6 if failed else float("nan"))
    return medians, statistics.median(p90s), statistics.median(nofit), statistics.median(fails)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=5000)
    ap.add_argument("--repeats", type=int, default=5, help="independent steady states per figure (min and median reported)")
    ap.add_argument("--only", default=None, help="comma-separated allocator names")
    args = ap.parse_args(argv)
    print(f"machine: {platform.machine()} {os.cpu_count()} cores, Python {platform.python_version()}, numpy {np.__version__}")
    names = [n for n in dict.fromkeys([k[1] for k in TARGETS] + list(OTHERS)) if args.only is None or n in args.only.split(",")]
    print(f"{'machine':13s} {'allocator':15s} {'min µs':>8s} {'median µs':>10s} {'p90 µs':>8s} {'no fit':>7s} {'no-fit µs':>10s}  target")
    missed = 0
    for machine in ("mesh:20x20", "mesh:128x128"):
        for name in names:
            if name == "buddy_2d" and machine == "mesh:20x20":
                continue  # square power-of-two meshes only
            meds, p90, nofit, nf = run(name, machine, args.pairs, args.repeats)
            med = statistics.median(meds)
            target = TARGETS.get((machine, name))
            verdict = "" if target is None else f"<= {target:g} µs {'met' if med <= target else 'MISSED'}"
            missed += target is not None and med > target
            print(f"{machine:13s} {name:15s} {min(meds):8.2f} {med:10.2f} {p90:8.2f} {nofit:7.1%} {nf:10.2f}  {verdict}", flush=True)
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
