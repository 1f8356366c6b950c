"""Optional communication metrics: E-cube channel contention between jobs running at the same time.

Not registered in ``METRICS`` (they need the allocations recorded and a
hypercube machine, and cost more than the scheduling metrics); call them on a
result simulated with ``record_allocations=True``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import InvalidArgument
from ..topology.hypercube import Hypercube, shared_channels

__all__ = ["contending_pairs"]


def contending_pairs(result: Any) -> list[tuple[int, int, int]]:
    """Pairs of jobs that ran at the same time and could use a common E-cube channel (Turner §3.1).

    Parameters
    ----------
    result : SimulationResult
        Simulated on ``hypercube:n`` with ``record_allocations=True``.

    Returns
    -------
    list of (job index, job index, shared channels)
        One entry per overlapping pair whose node sets share at least one
        channel under E-cube routing (any two nodes of a job may communicate);
        empty for contention-free allocators (buddy, gray_code, free_list, afl).

    Raises
    ------
    InvalidArgument
        If the machine is not a hypercube or the allocations were not recorded.
    """
    top = result.topology
    if not isinstance(top, Hypercube):
        raise InvalidArgument("machine", result.machine, "a hypercube (hypercube:n)")
    if result.allocations is None:
        raise InvalidArgument("result", "allocations not recorded", "a result simulated with record_allocations=True")
    flat, off = result.allocations
    order = np.argsort(result.start, kind="stable").tolist()
    active: list[int] = []
    out = []
    for j in order:
        t = result.start[j]
        active = [k for k in active if result.end[k] > t]
        if result.end[j] == t:
            continue
        nodes = flat[off[j] : off[j + 1]]
        for k in active:
            shared = shared_channels(nodes, flat[off[k] : off[k + 1]], top.n)
            if shared:
                out.append((min(j, k), max(j, k), len(shared)))
        active.append(j)
    return sorted(out)
