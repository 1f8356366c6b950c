"""Schedulers and the event-driven simulation.

The names below load on first use (PEP 562), so that the compiled kernel
(``_ckernel``) can be imported without numpy (:mod:`topoalloc.counts`); the
built-in schedulers register when the scheduler registry is first used.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .base import QUEUE_ORDERS, ReservationRecord, Scheduler, SchedulingContext
    from .conservative import Conservative
    from .easy import EASY
    from .fcfs import FCFS
    from .result import SimulationResult
    from .simulation import Simulation

__all__ = [
    "QUEUE_ORDERS",
    "ReservationRecord",
    "Scheduler",
    "SchedulingContext",
    "FCFS",
    "EASY",
    "Conservative",
    "Simulation",
    "SimulationResult",
]

_HOMES = {
    "QUEUE_ORDERS": "base",
    "ReservationRecord": "base",
    "Scheduler": "base",
    "SchedulingContext": "base",
    "FCFS": "fcfs",
    "EASY": "easy",
    "Conservative": "conservative",
    "Simulation": "simulation",
    "SimulationResult": "result",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{home}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
