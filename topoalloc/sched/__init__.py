"""Schedulers and the event-driven simulation.

The names below load on first use (PEP 562), so that the compiled kernel
(``_ckernel``) can be imported without numpy (:mod:`topoalloc.counts`); the
built-in schedulers register when the scheduler registry is first used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import attach

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


__getattr__, __dir__ = attach(__name__, _HOMES, __all__)
