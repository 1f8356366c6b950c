"""Schedulers and the event-driven simulation."""

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
