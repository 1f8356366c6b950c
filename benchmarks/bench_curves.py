"""Curve allocators: the NASA run end to end, and allocate+release on a 10,000-processor machine.

Targets (curve orderings and one-dimensional allocation):

* NASA iPSC/860 (bundled, 18,239 jobs), EASY, ``sorted_free_list:curve=snake``
  on ``mesh:16x8``, end to end (read the trace, simulate) <= 0.3 s.  The
  summary with every locality metric is timed apart.
* allocate+release median <= 50 µs on a 10,000-processor machine
  (``mesh:100x100``, Hilbert order).

Method for the second: the machine is brought to a steady state by a stream of
requests whose sizes are the NASA log's sizes × 64 (1..8192), each held while
about half the machine is busy, so the free ranks are fragmented as in a busy
machine (a second run uses sizes uniform on 1..400, which leaves many more,
smaller free intervals); then each measured operation allocates one request (a size from the
same stream) and releases it.  Reported: median and 90th percentile, and the
share of requests that took the min-span fallback (no free interval large
enough), whose time is also reported apart.  All four strategies fit every
request that has enough free processors, so there is no "no fit" case.

Usage: python benchmarks/bench_curves.py [--pairs N] [--repeat R]
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import statistics
import sys
import time

import topoalloc
from topoalloc.alloc import Request
from topoalloc.alloc.linear import STRATEGIES, LinearAllocator
from topoalloc.topology import parse_machine
from topoalloc.workload import default_trace_path, read_swf


def nasa_end_to_end(repeat: int) -> None:
    times, reads, sims, summ, flat = [], [], [], [], []
    for _ in range(repeat):
        t0 = time.perf_counter()
        w = read_swf(default_trace_path())
        t1 = time.perf_counter()
        r = topoalloc.simulate(w, machine="mesh:16x8", allocator="sorted_free_list:curve=snake", scheduler="easy")
        t2 = time.perf_counter()
        s = r.summary()
        t3 = time.perf_counter()
        topoalloc.simulate(w, machine="mesh:16x8", allocator="flat", scheduler="easy")
        t4 = time.perf_counter()
        times.append(t2 - t0)
        reads.append(t1 - t0)
        sims.append(t2 - t1)
        summ.append(t3 - t2)
        flat.append(t4 - t3)
    best = min(times)
    print(f"NASA iPSC/860, EASY, sorted_free_list:curve=snake on mesh:16x8: {len(r)} jobs (best of {repeat})")
    print(f"  read trace + simulate: {best:.3f} s   target <= 0.3 s {'met' if best <= 0.3 else 'MISSED'}")
    print(f"    of which read {min(reads):.3f} s, simulate {min(sims):.3f} s (the flat allocator on the same mesh: {min(flat):.3f} s)")
    print(f"  summary with every locality metric: {min(summ):.3f} s")
    print(f"  mean wait {s['mean_wait']:.4f} s, utilization {s['utilization']:.4f}, mean bounded slowdown {s['mean_bounded_slowdown']:.4f}, mean pairwise L1 {s['mean_pairwise_l1']:.4f}")
    for alloc in ("first_fit:curve=hilbert", "best_fit:curve=hilbert", "sum_of_squares:curve=hilbert", "best_fit:curve=hilbert,span=ring"):
        t0 = time.perf_counter()
        r = topoalloc.simulate(w, machine="mesh:16x8", allocator=alloc, scheduler="easy")
        t1 = time.perf_counter()
        print(f"  {alloc:36s} simulate {t1 - t0:.3f} s, mean pairwise L1 {r.summary()['mean_pairwise_l1']:.4f}")


def pairs_10k(n_pairs: int, fragmented: bool) -> None:
    top = parse_machine("mesh:100x100")
    w = read_swf(default_trace_path())
    if fragmented:
        rs = random.Random(7)
        stream = [rs.randint(1, 400) for _ in range(len(w))]
        what = "sizes uniform on 1..400 (many small free intervals)"
    else:
        stream = [min(8192, int(s) * 64) for s in w.size.tolist()]
        what = "NASA sizes x 64"
    print(f"\nallocate+release on {top.spec()} ({top.n_nodes} processors), Hilbert order, steady state about half busy, {what}")
    print(f"{'strategy':18s} {'span':6s} {'pairs':>6s} {'median µs':>10s} {'p90 µs':>8s} {'fallback':>9s} {'fallback median µs':>19s}  target")
    for strategy in STRATEGIES:
        for span in ("linear", "ring"):
            if strategy == "sorted_free_list" and span == "ring":
                continue
            rng = random.Random(1)
            a = LinearAllocator(top, strategy=strategy, curve="hilbert", span=span)
            held = []
            for s in stream[:6000]:
                while held and a.free_count < a.n_nodes // 2:
                    a.release(held.pop(rng.randrange(len(held))))
                if s <= a.free_count:
                    held.append(a.allocate(Request(s)))
            sizes = [stream[rng.randrange(len(stream))] for _ in range(n_pairs)]
            sizes = [s for s in sizes if s <= a.free_count]
            ok, fb = [], []
            clock = time.perf_counter
            for s in sizes:
                req = Request(s)
                t0 = clock()
                x = a.allocate(req)
                a.release(x)
                dt = clock() - t0
                ok.append(dt)
                if not x.info.get("contiguous", True):
                    fb.append(dt)
            med = statistics.median(ok) * 1e6
            p90 = sorted(ok)[int(0.9 * len(ok))] * 1e6
            fbm = statistics.median(fb) * 1e6 if fb else float("nan")
            print(f"{strategy:18s} {span:6s} {len(ok):6d} {med:10.2f} {p90:8.2f} {len(fb) / len(ok):9.1%} {fbm:19.2f}  <= 50 µs {'met' if med <= 50 else 'MISSED'}  ({len(a.free_intervals())} free intervals)")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pairs", type=int, default=5000)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    print(f"machine: {platform.machine()} {os.cpu_count()} cores, Python {platform.python_version()}")
    nasa_end_to_end(args.repeat)
    pairs_10k(args.pairs, fragmented=False)
    pairs_10k(args.pairs, fragmented=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
