"""Scheduling metrics: pure functions of a :class:`SimulationResult`.

Definitions follow Mao/Chen/Watson §4.2 and Feitelson's metric conventions:

* wait = start − submit; response = end − submit;
* bounded slowdown = max(1, (wait + run) / max(run, 10 s));
* utilization U = Σ size·run / (N · (last end − first submit)) — the
  variant of Mao/Chen/Watson §4.2 (useful work over the whole schedule,
  sizes as requested, so rounding waste counts as idle);
* allocated utilization: the same with allocated sizes (rounding counted as busy);
* offered load = Σ size·run / (N · (last submit − first submit));
* makespan = last end − first submit.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from typing import TYPE_CHECKING, Any

import numpy as np

from ..registry import METRICS

if TYPE_CHECKING:
    from ..sched.result import SimulationResult

__all__ = ["Metric", "summarize"]


@dataclass(frozen=True)
class Metric:
    """A named aggregate: ``fn(result) -> float``, with its unit and which way is better."""

    name: str
    fn: Callable[["SimulationResult"], float]
    unit: str
    better: str  # "lower" | "higher" | "none"
    doc: str = ""

    def __call__(self, result: "SimulationResult") -> float:
        return float(self.fn(result))


MetricFn = Callable[["SimulationResult"], float]


def _metric(name: str, unit: str, better: str) -> Callable[[MetricFn], MetricFn]:
    def deco(fn: MetricFn) -> MetricFn:
        m = Metric(name, fn, unit, better, (fn.__doc__ or "").strip())
        METRICS.register(name, doc=m.doc)(lambda: m)
        return fn

    return deco


def _mean(x: np.ndarray) -> float:
    """The mean, from the correctly rounded sum (``math.fsum``): it does not depend on the order of the
    jobs nor on how a library groups the additions, so every path that sums the same values agrees to the
    last bit (:mod:`topoalloc.counts` sums without numpy)."""
    return math.fsum(x.tolist()) / x.size if x.size else 0.0


def _dot(size: np.ndarray, time: np.ndarray) -> float:
    """Σ size·time: each product rounded once, then summed correctly rounded (as :func:`_mean`)."""
    return math.fsum((size.astype(float) * time).tolist())


@_metric("mean_wait", "s", "lower")
def mean_wait(r: "SimulationResult") -> float:
    """Mean of start − submit."""
    return _mean(r.wait)


@_metric("mean_response", "s", "lower")
def mean_response(r: "SimulationResult") -> float:
    """Mean of end − submit."""
    return _mean(r.response)


@_metric("mean_bounded_slowdown", "", "lower")
def mean_bounded_slowdown(r: "SimulationResult") -> float:
    """Mean of max(1, (wait + run) / max(run, 10 s))."""
    return _mean(r.bounded_slowdown)


@_metric("max_wait", "s", "lower")
def max_wait(r: "SimulationResult") -> float:
    """Largest wait."""
    return float(np.max(r.wait)) if len(r) else 0.0


def _span(r: "SimulationResult") -> float:
    return float(np.max(r.end) - np.min(r.submit)) if len(r) else 0.0


@_metric("makespan", "s", "lower")
def makespan(r: "SimulationResult") -> float:
    """Last end − first submit."""
    return _span(r)


@_metric("utilization", "", "higher")
def utilization(r: "SimulationResult") -> float:
    """Σ size·service / (N · (last end − first submit)), sizes as requested (Mao/Chen/Watson §4.2).

    ``service`` is the trace's run time, or the modelled one when the run times
    come from a model or from the network (then processors busy communicating count).
    """
    span = _span(r)
    return _dot(r.size, r.service) / (r.n_nodes * span) if span > 0 else 0.0


@_metric("allocated_utilization", "", "higher")
def allocated_utilization(r: "SimulationResult") -> float:
    """Σ allocated size·service / (N · (last end − first submit)): processors held, rounding included."""
    span = _span(r)
    return _dot(r.allocated_size, r.service) / (r.n_nodes * span) if span > 0 else 0.0


@_metric("offered_load", "", "none")
def offered_load(r: "SimulationResult") -> float:
    """Σ size·run / (N · (last submit − first submit))."""
    if len(r) < 2:
        return 0.0
    span = float(np.max(r.submit) - np.min(r.submit))
    return _dot(r.size, r.run) / (r.n_nodes * span) if span > 0 else 0.0


def summarize(result: "SimulationResult") -> dict[str, Any]:
    """Every registered metric, plus what was simulated and what the filters did."""
    out: dict[str, Any] = {
        "jobs": len(result),
        "machine": result.machine,
        "nodes": result.n_nodes,
        "allocator": result.allocator,
        "scheduler": result.scheduler,
    }
    for name in METRICS.names():
        out[name] = METRICS.create(name)(result)
    if result.locality is not None:  # streamed while the jobs finished
        out.update(result.locality)
    elif result.allocations is not None and result.topology.has_locality:
        from .locality import locality_summary  # the machine has a topology: locality metrics too

        out.update(locality_summary(result))
    if result.network is not None:
        out["network"] = {**result.network["spec"], **result.network["summary"]}
    if result.blocks is not None or bool((result.allocated_size != result.size).any()):
        from .blocks import block_summary  # blocks per job (the allocator's own) and internal fragmentation

        out.update(block_summary(result))
    if result.slice_hops is not None:  # the slices' own networks (see topoalloc.topology.slicenet)
        h = result.slice_hops[np.isfinite(result.slice_hops)]
        out["mean_slice_hops"] = float(h.mean()) if h.size else float("nan")
    out["first_submit"] = float(np.min(result.submit)) if len(result) else 0.0
    out["last_end"] = float(np.max(result.end)) if len(result) else 0.0
    if result.reservation_changes is not None:  # conservative's plan: reservations made or moved
        out["reservation_changes"] = result.reservation_changes
    if result.params:
        out["params"] = result.params
    if result.reports:
        out["filters"] = [rep.as_dict() for rep in result.reports]
    return out
