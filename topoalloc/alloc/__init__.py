"""Allocators: the base contract and every registered allocator."""

from .base import Allocation, Allocator, Grant, Request
from .probes import CountingProbes, ReservationGuard
from .flat import FlatAllocator
from .hypercube import AFLAllocator, BuddyAllocator, FreeListAllocator, GrayCodeAllocator
from .linear import LinearAllocator
from .partition import PartitionAllocator

__all__ = ["Allocation", "Allocator", "Grant", "Request", "ReservationGuard", "CountingProbes", "FlatAllocator", "LinearAllocator", "PartitionAllocator", "make_allocator",
           "AFLAllocator", "BuddyAllocator", "FreeListAllocator", "GrayCodeAllocator"]


def make_allocator(spec: str, topology, seed: int | None = None) -> Allocator:
    """Build a registered allocator from a spec such as ``"flat"`` or ``"best_fit:curve=hilbert"`` (see :func:`topoalloc.api.make_allocator`)."""
    from ..api import make_allocator as make

    return make(spec, topology, seed)
