"""Workloads: SWF traces, cleaning filters, transforms and synthetic generators.

The names below load on first use (PEP 562), so that :mod:`.steps` can be
imported without numpy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import attach

if TYPE_CHECKING:
    from .core import SWF_FIELDS, Job, Workload
    from .swf import default_trace_path, read_swf, write_swf

__all__ = ["SWF_FIELDS", "Job", "Workload", "read_swf", "write_swf", "default_trace_path"]

_HOMES = {"SWF_FIELDS": "core", "Job": "core", "Workload": "core", "default_trace_path": "swf", "read_swf": "swf", "write_swf": "swf"}


__getattr__, __dir__ = attach(__name__, _HOMES, __all__)
