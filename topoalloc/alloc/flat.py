"""The flat machine's allocator: any free nodes will do."""

from __future__ import annotations

from typing import Self

import numpy as np

from ..errors import InvalidArgument
from ..registry import ALLOCATORS
from ..topology.base import Topology
from .base import Allocator, Request
from .probes import CountingProbes

__all__ = ["FlatAllocator"]


class FlatAllocator(CountingProbes, Allocator):
    """Grant the lowest-numbered free nodes; a request fits iff enough nodes are free.

    Works on any topology (it ignores the links), which makes it the
    topology-blind baseline of every comparison.  A counting allocator
    (:class:`~topoalloc.alloc.probes.CountingProbes`): schedulers answer their
    questions about it by arithmetic.

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

    def _allocate(self, request: Request) -> np.ndarray:
        # size <= free_count is guaranteed by the base class
        return (~self._busy).nonzero()[0][: request.size]

    def _copy_state(self, clone: Self) -> None:
        pass  # the base's busy mask is all the state there is


class FlatByReplay(FlatAllocator):
    """The flat allocator with the general probes (replay on snapshots) instead of arithmetic.

    The same placements; schedulers take their general paths.  It exists so
    the tests and benchmarks can hold the general machinery to the counting
    answers on real traces (identical schedules).
    """

    counting = False
    can_allocate = Allocator.can_allocate
    earliest_fit = Allocator.earliest_fit
    reservation_guard = Allocator.reservation_guard
    fit_key = Allocator.fit_key
    max_request_now = Allocator.max_request_now


@ALLOCATORS.register("flat")
def _make_flat(topology: Topology, probe: str = "counting") -> FlatAllocator:
    """Any free nodes (fully connected machine); probe=counting|replay."""
    if probe == "counting":
        return FlatAllocator(topology)
    if probe == "replay":
        return FlatByReplay(topology)
    raise InvalidArgument("probe", probe, "'counting' or 'replay'")
