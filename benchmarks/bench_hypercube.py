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

``--sizes``: the buddy's and Gray code's allocate+release on Q10 ... Q24 (no target: it shows how the
cost grows with the machine), each with its own searches through the block tree (from Q15 up, as the
allocators choose) and through the bit-parallel search alone, whose every grant costs O(2**n / 64).
The machine is first filled to about half by blocks of 2**k nodes, k uniform on 0 .. n - 6; the measured
requests are blocks of 2**k nodes, k exponential with mean 2.

Usage: python benchmarks/bench_hypercube.py [--pairs N] [--no-proof] [--sizes]
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
#: the machines of --sizes
SIZES = (10, 14, 15, 16, 18, 20, 22, 24)


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


def by_size(pairs: int) -> None:
    """Allocate+release median and p90 on Q10 ... Q24, block tree (as chosen) against the bit-parallel search."""
    print(f"buddy and Gray code by machine size: filled to about half by blocks of 2**k nodes (k uniform on 0 .. n - 6),")
    print(f"then {pairs} pairs of blocks of 2**k nodes (k exponential, mean 2; fewer pairs for the bit-parallel search above Q18)")
    print(f"{'machine':8s} {'allocator':10s} {'search':>6s} {'median µs':>10s} {'p90 µs':>8s} {'no fit':>7s}")

    def blocks(n: int, count: int, seed: int) -> list[Request]:
        rng = random.Random(seed)
        return [Request(1 << min(n, int(rng.expovariate(0.5)))) for _ in range(count)]

    for n in SIZES:
        for name in ("buddy", "gray_code"):
            for search in ("tree", "bits"):
                a = ALLOCATORS.create(name, topology=Hypercube(n))
                if search == "tree" and n < a.TREE_MIN_DIM:
                    continue  # (below it the allocator itself uses the bit-parallel search)
                rng = random.Random(2)
                while a.free_count > a.n_nodes // 2:
                    a.allocate(Request(1 << rng.randint(0, n - 6)))
                if search == "bits":
                    a.TREE_MIN_DIM = n + 1
                count = pairs if search == "tree" or n <= 18 else max(50, pairs // (1 << (n - 16)))
                ok, failed = measure_pairs(a, blocks(n, count, 3))
                ok.sort()
                print(f"Q{n:<7d} {name:10s} {search:>6s} {_us(statistics.median(ok)):>10s} {_us(ok[int(0.9 * len(ok))]):>8s} {len(failed) / count:7.1%}")


def _us(v: float) -> str:
    return f"{v * 1e6:8.1f}"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--pairs", type=int, default=20000)
    p.add_argument("--no-proof", action="store_true", help="skip timing the Theorem 1 proof")
    p.add_argument("--sizes", action="store_true", help="only the buddy and Gray code on Q10 ... Q24, block tree against bit-parallel search")
    args = p.parse_args()
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, {platform.system()}")
    if args.sizes:
        by_size(min(args.pairs, 5000))
        return 0
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
        from topoalloc.proofs.hypercube import _Checker, afl_output, mesh_shapes, prove_theorem1

        shapes = mesh_shapes(10)
        t0 = time.perf_counter()
        checker = _Checker()  # one incremental solver for every mesh, as `topoalloc prove hypercube` does
        results = [prove_theorem1(x, y, afl_output(x, y), checker=checker) for x, y in shapes]
        took = time.perf_counter() - t0
        ok = all(results)
        print(f"Theorem 1 over all {len(shapes)} meshes fitting Q10: {'holds' if ok else 'FAILS'} in {took:.1f} s (target <= 120 s: {'met' if took <= 120 else 'NOT met'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
