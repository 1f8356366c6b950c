"""Timing helpers shared by the allocator benchmarks (imported as a sibling module)."""

from __future__ import annotations

import time


def measure_pairs(allocator, requests) -> tuple[list[float], list[float]]:
    """Time allocate+release for each request in turn.

    Returns the seconds of the pairs that fitted (allocate, then release at once)
    and of the allocate calls that found no room.
    """
    ok, failed = [], []
    clock = time.perf_counter
    for req in requests:
        t0 = clock()
        x = allocator.allocate(req)
        if x is not None:
            allocator.release(x)
            ok.append(clock() - t0)
        else:
            failed.append(clock() - t0)
    return ok, failed
