"""Named cleaning filters.  Each returns the new workload and a report of what it did.

Nothing is dropped silently: every filter says how many jobs it removed or
changed, why, and names the first few (job id and source line).

The standard set (``--clean``) is, in this order: ``drop-no-size``,
``drop-wider``, ``drop-nonpositive-runtime``, ``cap-runtime``.  Common
cleaning uses the last three; ``drop-no-size`` is added because a job
that asks for no processors at all (both processor fields missing or <= 0,
19,516 such records in SDSC-BLUE) cannot be simulated, so ``--clean`` would
otherwise stop on real traces.  ``fill-size`` is optional.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..errors import InvalidArgument
from .core import F, Workload
from .steps import REASONS, STANDARD_CLEAN, FilterReport
from .swf import job_sizes

__all__ = ["FilterReport", "FILTERS", "STANDARD_CLEAN", "apply_filter"]

_EXAMPLES = 5


def _examples(w: Workload, mask: np.ndarray) -> tuple[str, ...]:
    out = []
    for i in np.flatnonzero(mask)[:_EXAMPLES]:
        line = int(w.line[i])
        out.append(f"job {int(w.job_id[i])}" + (f" line {line}" if line > 0 else ""))
    return tuple(out)


def _wider(w: Workload, machine_nodes: int) -> tuple[np.ndarray, str]:
    return w.size > machine_nodes, REASONS["drop-wider"].format(nodes=machine_nodes)


def _nonpositive_runtime(w: Workload, machine_nodes: int) -> tuple[np.ndarray, str]:
    return w.run <= 0, REASONS["drop-nonpositive-runtime"]


def _no_size(w: Workload, machine_nodes: int) -> tuple[np.ndarray, str]:
    return w.size <= 0, REASONS["drop-no-size"]


def _drop(name: str, w: Workload, machine_nodes: int) -> tuple[Workload, FilterReport]:
    bad, reason = DROPS[name](w, machine_nodes)
    return w.take(~bad), FilterReport(name, reason, int(bad.sum()), 0, _examples(w, bad), w.source)


def drop_wider(w: Workload, machine_nodes: int) -> tuple[Workload, FilterReport]:
    """Drop jobs asking for more processors than the machine has."""
    return _drop("drop-wider", w, machine_nodes)


def drop_nonpositive_runtime(w: Workload, machine_nodes: int) -> tuple[Workload, FilterReport]:
    """Drop jobs whose run time is missing (-1) or <= 0."""
    return _drop("drop-nonpositive-runtime", w, machine_nodes)


def drop_no_size(w: Workload, machine_nodes: int) -> tuple[Workload, FilterReport]:
    """Drop jobs with neither a requested nor an allocated processor count (> 0)."""
    return _drop("drop-no-size", w, machine_nodes)


#: The filters that only drop jobs, each as (the jobs it drops, why) from the workload and the machine size.
DROPS: dict[str, Callable[[Workload, int], tuple[np.ndarray, str]]] = {
    "drop-no-size": _no_size,
    "drop-wider": _wider,
    "drop-nonpositive-runtime": _nonpositive_runtime,
}


def cap_runtime(w: Workload, machine_nodes: int) -> tuple[Workload, FilterReport]:
    """Cap the run time at the requested time where a requested time (> 0) is given.

    Real systems kill a job at its requested time; logs nonetheless record
    overruns (clock skew, grace periods).  Capping keeps estimates honest
    upper bounds, which EASY's and conservative's guarantees assume.
    """
    req = w.requested_time
    over = (req > 0) & (w.run > req)
    run = np.where(over, req, w.run)
    return w.replace(run=run), FilterReport("cap-runtime", REASONS["cap-runtime"], 0, int(over.sum()), _examples(w, over), w.source)


def fill_size(w: Workload, machine_nodes: int) -> tuple[Workload, FilterReport]:
    """Fill a missing requested or allocated processor count from the other field.

    The size already falls back from requested to allocated processors; this
    filter makes the raw SWF fields agree as well, so a written trace says
    the same thing in both columns.
    """
    if w.swf is None:
        return w, FilterReport("fill-size", "no SWF record to fill", 0, 0)
    raw = w.swf.copy()
    req = raw[:, F["requested_procs"]]
    alloc = raw[:, F["allocated_procs"]]
    fill_req = (req <= 0) & (alloc > 0)
    fill_alloc = (alloc <= 0) & (req > 0)
    raw[fill_req, F["requested_procs"]] = alloc[fill_req]
    raw[fill_alloc, F["allocated_procs"]] = req[fill_alloc]
    changed = fill_req | fill_alloc
    out = w.replace(swf=raw, size=job_sizes(raw))
    return out, FilterReport("fill-size", REASONS["fill-size"], 0, int(changed.sum()), _examples(w, changed), w.source)


#: Every named filter: name -> function(workload, machine_nodes) -> (workload, report).
FILTERS: dict[str, Callable[[Workload, int], tuple[Workload, FilterReport]]] = {
    "fill-size": fill_size,
    "drop-no-size": drop_no_size,
    "drop-wider": drop_wider,
    "drop-nonpositive-runtime": drop_nonpositive_runtime,
    "cap-runtime": cap_runtime,
}


def apply_filter(name: str, w: Workload, machine_nodes: int) -> tuple[Workload, FilterReport]:
    """Apply the filter called ``name``."""
    try:
        fn = FILTERS[name]
    except KeyError:
        raise InvalidArgument("filter", name, f"one of {', '.join(FILTERS)}") from None
    return fn(w, machine_nodes)


class PendingDrops:
    """Several dropping filters applied in turn with one copy of the workload at the end.

    :meth:`add` reports exactly what :func:`apply_filter` would (the same
    counts and the same example jobs, in the same order) but only marks the
    jobs; :meth:`workload` then takes the survivors once.  On a trace of
    hundreds of thousands of jobs this saves a full copy of every column
    per filter.

    >>> from topoalloc.workload import Workload
    >>> w = Workload(job_id=[1, 2, 3], submit=[0, 1, 2], run=[5, 0, 5], size=[1, 2, 9], requested_time=[-1, -1, -1])
    >>> d = PendingDrops(w, 8)
    >>> [d.add(name).removed for name in ("drop-wider", "drop-nonpositive-runtime")], d.left
    ([1, 1], 1)
    >>> d.workload().job_id.tolist()
    [1]
    """

    def __init__(self, w: Workload, machine_nodes: int):
        self._w = w
        self._nodes = machine_nodes
        self._keep: np.ndarray | None = None
        self.left = len(w)  #: jobs still kept

    @staticmethod
    def handles(name: str) -> bool:
        """Whether ``name`` is a built-in dropping filter (not replaced in :data:`FILTERS`)."""
        builtin = {"drop-no-size": drop_no_size, "drop-wider": drop_wider, "drop-nonpositive-runtime": drop_nonpositive_runtime}
        return name in builtin and FILTERS.get(name) is builtin[name]

    def add(self, name: str) -> FilterReport:
        """Drop the jobs filter ``name`` drops from those still kept; its report."""
        w = self._w
        bad, reason = DROPS[name](w, self._nodes)
        if self._keep is not None:
            bad &= self._keep
        self._keep = ~bad if self._keep is None else self._keep & ~bad
        removed = int(bad.sum())
        self.left -= removed
        return FilterReport(name, reason, removed, 0, _examples(w, bad), w.source)

    def workload(self) -> Workload:
        """The workload of the jobs still kept (the same object if none was dropped)."""
        if self._keep is None or self.left == len(self._w):
            return self._w
        return self._w.take(self._keep)
