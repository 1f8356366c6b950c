"""The flat machine's allocator: any free nodes will do."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from ..errors import InvalidArgument
from ..registry import ALLOCATORS
from ..topology.base import Topology
from .base import Allocation, Allocator, CountingGuard, Request, ReservationGuard, counting_earliest_fit

__all__ = ["FlatAllocator"]


class FlatAllocator(Allocator):
    """Grant the lowest-numbered free nodes; a request fits iff enough nodes are free.

    Works on any topology (it ignores the links), which makes it the
    topology-blind baseline of every comparison.

    Parameters
    ----------
    topology : Topology
    probe : {"counting", "replay"}
        How reservation questions are answered.  ``"counting"`` (default) uses
        free-node arithmetic, exact for this allocator; ``"replay"`` answers
        them the general way, by replaying on snapshots, as every
        topology-aware allocator does.  The two must give identical schedules;
        the differential tests hold them to it.

    Examples
    --------
    >>> from topoalloc.topology import FlatTopology
    >>> a = FlatAllocator(FlatTopology(4))
    >>> a.allocate(Request(3)).nodes.tolist()
    [0, 1, 2]
    >>> a.allocate(Request(2)) is None
    True
    """

    name = "flat"
    claims = frozenset({"exact_size"})
    canonical_output = True

    def __init__(self, topology: Topology, *, probe: str = "counting"):
        super().__init__(topology)
        if probe not in ("counting", "replay"):
            raise InvalidArgument("probe", probe, "'counting' or 'replay'")
        self.probe = probe
        self.counting = probe == "counting"  # instance attribute shadows the class default

    def _allocate(self, request: Request) -> np.ndarray:
        # size <= free_count is guaranteed by the base class
        return (~self._busy).nonzero()[0][: request.size]

    def _fits_empty(self, request: Request) -> bool:
        return request.size <= self.n_nodes

    def can_allocate(self, request: Request) -> bool:
        return request.size <= self._free_count

    def earliest_fit(self, request: Request, releases: Iterable[Allocation]) -> int | None:
        if not self.counting:
            return super().earliest_fit(request, releases)
        return counting_earliest_fit(self._free_count, request, releases)

    def reservation_guard(self, head: Request, releases: Iterable[Allocation]) -> ReservationGuard:
        if not self.counting:
            return super().reservation_guard(head, releases)
        return CountingGuard(self, head, releases)


@ALLOCATORS.register("flat")
def _make_flat(topology: Topology, probe: str = "counting") -> FlatAllocator:
    """Any free nodes (fully connected machine); probe=counting|replay."""
    return FlatAllocator(topology, probe=probe)
