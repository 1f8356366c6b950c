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
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import InvalidArgument
from .core import F, Workload
from .swf import job_sizes

__all__ = ["FilterReport", "FILTERS", "STANDARD_CLEAN", "apply_filter"]

_EXAMPLES = 5


@dataclass(frozen=True)
class FilterReport:
    """What one filter or transform did to a workload (or, with ``warning``, what the reader noticed and kept).

    ``examples`` name the first few jobs touched by id and line; ``source``
    names the trace once for all of them.
    """

    name: str
    reason: str
    removed: int = 0
    changed: int = 0
    examples: tuple[str, ...] = field(default_factory=tuple)
    source: str = ""
    warning: bool = False

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "reason": self.reason,
            "removed": self.removed,
            "changed": self.changed,
            "examples": list(self.examples),
            "source": self.source,
            "warning": self.warning,
        }

    def __str__(self) -> str:
        of = f" of {self.source!r}" if self.source else ""
        if self.warning:
            return f"warning: {self.source + ': ' if self.source else ''}{self.reason}"
        what = f"removed {self.removed}" if self.removed else f"changed {self.changed}"
        ex = f" (e.g. {', '.join(self.examples)})" if self.examples else ""
        return f"{self.name}: {what} jobs{of} — {self.reason}{ex}"


def _examples(w: Workload, mask: np.ndarray) -> tuple[str, ...]:
    out = []
    for i in np.flatnonzero(mask)[:_EXAMPLES]:
        line = int(w.line[i])
        out.append(f"job {int(w.job_id[i])}" + (f" line {line}" if line > 0 else ""))
    return tuple(out)


def drop_wider(w: Workload, machine_nodes: int) -> tuple[Workload, FilterReport]:
    """Drop jobs asking for more processors than the machine has."""
    bad = w.size > machine_nodes
    return w.take(~bad), FilterReport("drop-wider", f"size > {machine_nodes} processors of the machine", int(bad.sum()), 0, _examples(w, bad), w.source)


def drop_nonpositive_runtime(w: Workload, machine_nodes: int) -> tuple[Workload, FilterReport]:
    """Drop jobs whose run time is missing (-1) or <= 0."""
    bad = w.run <= 0
    return w.take(~bad), FilterReport("drop-nonpositive-runtime", "run time missing or <= 0", int(bad.sum()), 0, _examples(w, bad), w.source)


def drop_no_size(w: Workload, machine_nodes: int) -> tuple[Workload, FilterReport]:
    """Drop jobs with neither a requested nor an allocated processor count (> 0)."""
    bad = w.size <= 0
    return w.take(~bad), FilterReport("drop-no-size", "requested and allocated processors both missing or <= 0", int(bad.sum()), 0, _examples(w, bad), w.source)


def cap_runtime(w: Workload, machine_nodes: int) -> tuple[Workload, FilterReport]:
    """Cap the run time at the requested time where a requested time (> 0) is given.

    Real systems kill a job at its requested time; logs nonetheless record
    overruns (clock skew, grace periods).  Capping keeps estimates honest
    upper bounds, which EASY's and conservative's guarantees assume.
    """
    req = w.requested_time
    over = (req > 0) & (w.run > req)
    run = np.where(over, req, w.run)
    return w.replace(run=run), FilterReport("cap-runtime", "run time > requested time, set to the requested time", 0, int(over.sum()), _examples(w, over), w.source)


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
    return out, FilterReport("fill-size", "missing requested/allocated processors filled from the other field", 0, int(changed.sum()), _examples(w, changed), w.source)


#: Every named filter: name -> function(workload, machine_nodes) -> (workload, report).
FILTERS: dict[str, Callable[[Workload, int], tuple[Workload, FilterReport]]] = {
    "fill-size": fill_size,
    "drop-no-size": drop_no_size,
    "drop-wider": drop_wider,
    "drop-nonpositive-runtime": drop_nonpositive_runtime,
    "cap-runtime": cap_runtime,
}

#: ``--clean``: applied in this order.
STANDARD_CLEAN: tuple[str, ...] = ("drop-no-size", "drop-wider", "drop-nonpositive-runtime", "cap-runtime")


def apply_filter(name: str, w: Workload, machine_nodes: int) -> tuple[Workload, FilterReport]:
    """Apply the filter called ``name``."""
    try:
        fn = FILTERS[name]
    except KeyError:
        raise InvalidArgument("filter", name, f"one of {', '.join(FILTERS)}") from None
    return fn(w, machine_nodes)
