"""Allocation-dependent run-time models (optional, off by default).

Leung, Phillips, Bunde et al. hold run times fixed in their simulations (§3)
and measure locality instead; their Cplant experiments (§4) show that
scattered jobs ran longer.  To explore "locality improves throughput" in
simulation, a run-time model stretches each job's run time by a measure of
how scattered its allocation is — in the spirit of SST's time-per-distance
option.  **This is a model, not a fact**: the coefficients are assumptions
to vary, not measurements.

Registered models (``simulate(runtime_model="locality:alpha=0.1,metric=pairwise_l1")``,
``--runtime-model`` on the command line):

``locality``
    ``run' = run × (1 + alpha × m)`` where ``m`` is, for ``metric=``

    * ``pairwise_l1`` (default): the job's average pairwise hop distance
      minus 1 (so a job whose processors are all neighbours of each other
      pays nothing; 0 for one processor);
    * ``stretch_span``: ring span / size − 1 in the allocator's ordering
      (0 for a contiguous interval; node-id order if the allocator has no curve);
    * ``components``: connected components of the allocation − 1.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..errors import InvalidArgument
from ..alloc.base import Allocation, Allocator
from ..registry import Registry
from ..topology.base import Topology

__all__ = ["RUNTIME_MODELS", "LocalityRuntime", "make_runtime_model"]

#: ``model(job, run, allocation) -> run time on that allocation``
RuntimeModel = Callable[[int, float, Allocation], float]

RUNTIME_MODELS: Registry[RuntimeModel] = Registry("runtime model", fixed=("topology", "allocator"))

_METRICS = ("pairwise_l1", "stretch_span", "components")


class LocalityRuntime:
    """``run × (1 + alpha × m(allocation))`` (see the module notes).

    Parameters
    ----------
    topology : Topology
    allocator : Allocator, optional
        Supplies the ordering for ``stretch_span``.
    alpha : float
        Slowdown per unit of the measure (>= 0).
    metric : {"pairwise_l1", "stretch_span", "components"}

    Examples
    --------
    >>> from topoalloc.topology import parse_machine
    >>> from topoalloc.alloc.base import Allocation, Request
    >>> m = LocalityRuntime(parse_machine("mesh:4x4"), alpha=0.5)
    >>> m(0, 100.0, Allocation([0, 1], Request(2), 1)), m(0, 100.0, Allocation([0, 15], Request(2), 2))
    (100.0, 350.0)
    """

    def __init__(self, topology: Topology, allocator: Allocator | None = None, *, alpha: float = 0.1, metric: str = "pairwise_l1"):
        if not isinstance(alpha, (int, float)) or isinstance(alpha, bool) or not alpha >= 0:
            raise InvalidArgument("alpha", alpha, "a number >= 0")
        if metric not in _METRICS:
            raise InvalidArgument("metric", metric, f"one of {', '.join(_METRICS)}")
        self.topology = topology
        self.alpha = float(alpha)
        self.metric = metric
        self.ordering = getattr(allocator, "ordering", None)

    def measure(self, nodes: np.ndarray) -> float:
        from ..metrics.locality import job_locality

        offsets = np.array([0, nodes.size], dtype=np.int64)
        if self.metric == "pairwise_l1":
            if nodes.size < 2:
                return 0.0
            v = job_locality(topology=self.topology, allocations=(nodes, offsets), ordering=self.ordering)["pairwise_l1"][0]
            return float(v) - 1.0
        per = job_locality(topology=self.topology, allocations=(nodes, offsets), ordering=self.ordering)
        if self.metric == "stretch_span":
            return float(per["stretch_span"][0]) - 1.0
        return float(per["components"][0]) - 1.0

    def __call__(self, job: int, run: float, allocation: Allocation) -> float:
        if self.alpha == 0 or run <= 0:
            return run
        return run * (1.0 + self.alpha * self.measure(allocation.nodes))

    def __repr__(self) -> str:
        return f"locality:alpha={self.alpha:g},metric={self.metric}"


@RUNTIME_MODELS.register("locality")
def _locality(topology: Topology, allocator: Allocator | None = None, alpha: float = 0.1, metric: str = "pairwise_l1") -> LocalityRuntime:
    """run × (1 + alpha × locality measure); metric=pairwise_l1|stretch_span|components."""
    return LocalityRuntime(topology, allocator, alpha=alpha, metric=metric)


def make_runtime_model(spec: "str | RuntimeModel | None", topology: Topology, allocator: Allocator | None = None) -> "RuntimeModel | None":
    """A run-time model from a spec string (``"locality:alpha=0.1"``), a callable, or None."""
    if spec is None or spec == "none":
        return None
    if callable(spec):
        return spec
    return RUNTIME_MODELS.create(spec, topology=topology, allocator=allocator)
