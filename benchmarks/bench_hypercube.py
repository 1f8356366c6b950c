"""Allocate+release time of the AFL (and the subcube allocators) on a 10-cube, and the Theorem 1 proof time.

Targets (hypercube allocation): AFL allocate+release median <= 50 µs on Q10
(Turner measured about 800 µs on a SPARCstation 10); the Theorem 1 proof over every
mesh fitting Q10 in <= 120 s.

Method: the machine is first brought to a steady state by a stream of X×Y mesh
requests with sides uniform on [1, 32] (Turner's rectangular [1, 32] workload),
each held while about half the machine is busy; then, in that state, each measured
operation allocates one request from the same stream and releases it.  Reported:
median and 90th percentile over successful pairs, the share that did not fit (timed
apart), and the same on a fresh machine for the thesis's 20×30 example.

Usage: python benchmarks/bench_hypercube.py [--pairs N] [--no-proof]
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import statistics
import sys
import time

from _timing import measure_pairs

from topoalloc.alloc import Request
from topoalloc.registry import ALLOCATORS
from topoalloc.topology import Hypercube

Q10 = Hypercube(10)
TARGET_US = 50.0


def stream(n: int, seed: int) -> list[Request]:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        x, y = rng.randint(1, 32), rng.randint(1, 32)
        out.append(Request(x * y, (x, y)))
    return out


def steady_state(name: str, reqs: list[Request], rng: random.Random):
    a = ALLOCATORS.create(name, topology=Q10)
    held = []
    for r in reqs:
        while held and a.free_count < a.n_nodes // 2:
            a.release(held.pop(rng.randrange(len(held))))
        x = a.allocate(r)
        if x is not None:
            held.append(x)
    return a


def _us(v: float) -> str:
    return f"{v * 1e6:8.1f}"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--pairs", type=int, default=20000)
    p.add_argument("--no-proof", action="store_true", help="skip timing the Theorem 1 proof")
    args = p.parse_args()
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, {platform.system()}")
    print(f"steady state on Q10 (about half busy), meshes with sides uniform on [1, 32], {args.pairs} pairs")
    print(f"{'allocator':10s} {'median µs':>10s} {'p90 µs':>8s} {'no fit':>7s} {'no-fit median µs':>17s}")
    medians = {}
    for name in ("afl", "free_list", "buddy", "gray_code"):
        a = steady_state(name, stream(4000, 1), random.Random(2))
        ok, failed = measure_pairs(a, stream(args.pairs, 3))
        ok.sort()
        med = statistics.median(ok)
        medians[name] = med
        fmed = _us(statistics.median(failed)) if failed else "       -"
        print(f"{name:10s} {_us(med):>10s} {_us(ok[int(0.9 * len(ok))]):>8s} {len(failed) / args.pairs:7.1%} {fmed:>17s}")
    a = ALLOCATORS.create("afl", topology=Q10)
    r = Request(600, (20, 30))
    times = []
    for _ in range(5000):
        t0 = time.perf_counter()
        x = a.allocate(r)
        a.release(x)
        times.append(time.perf_counter() - t0)
    fresh = statistics.median(times)
    print(f"fresh Q10, 20x30 mesh (the thesis's example): AFL median {_us(fresh).strip()} µs")
    verdict = "met" if medians["afl"] * 1e6 <= TARGET_US else "NOT met"
    print(f"target: AFL allocate+release median <= {TARGET_US:.0f} µs (steady state): {medians['afl'] * 1e6:.1f} µs — {verdict}")
    if not args.no_proof:
        from topoalloc.proofs.hypercube import afl_output, mesh_shapes, prove_theorem1

        shapes = mesh_shapes(10)
        t0 = time.perf_counter()
        results = [prove_theorem1(x, y, afl_output(x, y)) for x, y in shapes]
        took = time.perf_counter() - t0
        ok = all(results)
        print(f"Theorem 1 over all {len(shapes)} meshes fitting Q10: {'holds' if ok else 'FAILS'} in {took:.1f} s (target <= 120 s: {'met' if took <= 120 else 'NOT met'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
