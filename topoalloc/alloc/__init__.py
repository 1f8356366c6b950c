"""Allocators: the base contract and every registered allocator."""

from .base import Allocation, Allocator, Request, ReservationGuard
from .flat import FlatAllocator
from .linear import LinearAllocator
from .partition import PartitionAllocator

__all__ = ["Allocation", "Allocator", "Request", "ReservationGuard", "FlatAllocator", "LinearAllocator", "PartitionAllocator", "make_allocator"]


def make_allocator(spec: str, topology) -> Allocator:
    """Build a registered allocator from a spec such as ``"flat"`` or ``"best_fit:curve=hilbert"``."""
    from ..registry import ALLOCATORS
    from ..topology import parse_machine

    return ALLOCATORS.create(spec, topology=parse_machine(topology))
