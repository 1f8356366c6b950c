"""The names of the workload's preparation steps, and their reports: what the command line needs before
any trace is read, without loading numpy.

The filters themselves are in :mod:`topoalloc.workload.clean`, the transforms and the estimate policies in
:mod:`topoalloc.workload.transform`; the order they are applied in is :data:`PIPELINE_ORDER`
(:func:`topoalloc.api.prepare_workload`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["FilterReport", "FILTER_HELP", "REASONS", "STANDARD_CLEAN", "ESTIMATE_POLICIES", "PIPELINE_ORDER"]

#: Each built-in filter's one-line help (the first line of its docstring in :data:`~.clean.FILTERS`, which a test checks).
FILTER_HELP: dict[str, str] = {
    "fill-size": "Fill a missing requested or allocated processor count from the other field.",
    "drop-no-size": "Drop jobs with neither a requested nor an allocated processor count (> 0).",
    "drop-wider": "Drop jobs asking for more processors than the machine has.",
    "drop-nonpositive-runtime": "Drop jobs whose run time is missing (-1) or <= 0.",
    "cap-runtime": "Cap the run time at the requested time where a requested time (> 0) is given.",
}

#: What each built-in filter and estimate policy reports as its reason (``{nodes}``: the machine's size).
REASONS: dict[str, str] = {
    "fill-size": "missing requested/allocated processors filled from the other field",
    "drop-no-size": "requested and allocated processors both missing or <= 0",
    "drop-wider": "size > {nodes} processors of the machine",
    "drop-nonpositive-runtime": "run time missing or <= 0",
    "cap-runtime": "run time > requested time, set to the requested time",
    "estimate:double-runtime": "missing requested time filled with 2 × run time",
    "estimate:exact": "missing requested time filled with the run time",
    "estimate:exact-all": "every estimate set to the run time (perfect knowledge)",
}

#: ``--clean``: applied in this order.
STANDARD_CLEAN: tuple[str, ...] = ("drop-no-size", "drop-wider", "drop-nonpositive-runtime", "cap-runtime")

#: Estimate policies for a missing requested time (``-1`` or ``<= 0``).
ESTIMATE_POLICIES: tuple[str, ...] = ("double-runtime", "exact", "exact-all")

#: The order in which filters and transforms are applied, whatever order they are asked in.
PIPELINE_ORDER: tuple[str, ...] = (
    "fill-size",
    "scale-sizes",
    "round-pow2",
    "work-multiple",
    "drop-no-size",
    "drop-wider",
    "drop-nonpositive-runtime",
    "cap-runtime",
    "estimate",
)


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
        dropping = bool(self.removed) or self.name.startswith("drop-")  # (a dropping filter that dropped none says so)
        count = self.removed if dropping else self.changed
        what = f"{'removed' if dropping else 'changed'} {count} job{'' if count == 1 else 's'}"
        ex = f" (e.g. {', '.join(self.examples)})" if self.examples else ""
        return f"{self.name}: {what}{of} — {self.reason}{ex}"
