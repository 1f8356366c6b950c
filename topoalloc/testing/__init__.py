"""Checks and Hypothesis strategies any allocator or scheduler author can reuse.

>>> from topoalloc.testing import check_allocator
>>> from topoalloc.alloc import FlatAllocator
>>> from topoalloc.topology import FlatTopology
>>> check_allocator(lambda: FlatAllocator(FlatTopology(8)), seed=1)
"""

from .conformance import (
    CHECKS,
    CLAIM_CHECKS,
    AllocatorStateMachine,
    allocator_checks,
    check_allocation_valid,
    check_allocator,
    check_invariants,
    check_schedule,
    parametrize_with_checks,
    registered_allocator_factories,
    replaying,
    small_topologies,
)
from .strategies import workloads

__all__ = [
    "CHECKS",
    "CLAIM_CHECKS",
    "AllocatorStateMachine",
    "allocator_checks",
    "check_allocation_valid",
    "check_allocator",
    "check_invariants",
    "check_schedule",
    "parametrize_with_checks",
    "registered_allocator_factories",
    "replaying",
    "small_topologies",
    "workloads",
]
