"""Metrics: pure functions of a SimulationResult (see :mod:`.scheduling`)."""

from .scheduling import Metric, summarize

__all__ = ["Metric", "summarize"]
