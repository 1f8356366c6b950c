"""Workloads: SWF traces, cleaning filters, transforms and synthetic generators.

The names below load on first use (PEP 562), so that :mod:`.steps` can be
imported without numpy.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .core import SWF_FIELDS, Job, Workload
    from .swf import default_trace_path, read_swf, write_swf

__all__ = ["SWF_FIELDS", "Job", "Workload", "read_swf", "write_swf", "default_trace_path"]

_HOMES = {"SWF_FIELDS": "core", "Job": "core", "Workload": "core", "default_trace_path": "swf", "read_swf": "swf", "write_swf": "swf"}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{home}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
