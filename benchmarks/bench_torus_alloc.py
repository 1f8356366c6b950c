"""Allocate+release time of the subtorus allocators on QCDOC (2×2×2×4×4×8, 1024 nodes).

Target (multi-dimensional torus allocation): median allocate+release <= 20 µs.

Method: the machine is first brought to a steady state by a stream of jobs whose
sizes are the NASA iPSC/860 log's sizes ×8 (all powers of two, 8..1024), each
held while about half the machine is busy; then, in that state, each measured
operation allocates one request (a size from the same stream) and releases it.
Reported: median and 90th percentile over successful pairs, the share of
requests that did not fit (their time — a failed search — is reported apart),
and, for comparison, the same on a fresh (empty) machine with sizes 1..128.

Usage: python benchmarks/bench_torus_alloc.py [--pairs N]
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import statistics
import sys

from _timing import measure_pairs

from topoalloc.alloc import PartitionAllocator, Request
from topoalloc.topology import Torus
from topoalloc.workload import default_trace_path, read_swf

QCDOC = Torus((2, 2, 2, 4, 4, 8))


def steady_state(scheme: str, sizes: list[int], rng: random.Random) -> tuple[PartitionAllocator, list]:
    a = PartitionAllocator(QCDOC, scheme=scheme)
    held = []
    for s in sizes[:3000]:
        while held and a.free_count < a.n_nodes // 2:
            a.release(held.pop(rng.randrange(len(held))))
        x = a.allocate(Request(s))
        if x is not None:
            held.append(x)
    return a, held


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pairs", type=int, default=20000)
    args = ap.parse_args()
    print(f"machine: {platform.machine()} {os.cpu_count()} cores, Python {platform.python_version()}")
    w = read_swf(default_trace_path())
    stream = [min(1024, int(s) * 8) for s in w.size.tolist()]
    print(f"{'scheme':6s} {'state':8s} {'pairs':>7s} {'median µs':>10s} {'p90 µs':>8s} {'no fit':>7s} {'no-fit median µs':>17s}  target")
    for scheme in ("ep", "nep"):
        rng = random.Random(1)
        a, _ = steady_state(scheme, stream, rng)
        sizes = [stream[rng.randrange(len(stream))] for _ in range(args.pairs)]
        ok, failed = measure_pairs(a, [Request(x) for x in sizes])
        med = statistics.median(ok) * 1e6
        p90 = sorted(ok)[int(0.9 * len(ok))] * 1e6
        nf = statistics.median(failed) * 1e6 if failed else float("nan")
        print(f"{scheme:6s} {'steady':8s} {len(ok):7d} {med:10.2f} {p90:8.2f} {len(failed) / len(sizes):7.1%} {nf:17.2f}  <= 20 µs {'met' if med <= 20 else 'MISSED'}")
        fresh = PartitionAllocator(QCDOC, scheme=scheme)
        sizes = [1 << rng.randint(0, 7) for _ in range(args.pairs)]
        ok, failed = measure_pairs(fresh, [Request(x) for x in sizes])
        print(f"{scheme:6s} {'empty':8s} {len(ok):7d} {statistics.median(ok) * 1e6:10.2f} {sorted(ok)[int(0.9 * len(ok))] * 1e6:8.2f} {len(failed) / len(sizes):7.1%} {'':>17s}  (sizes 1..128 on an empty machine)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
