"""Allocators: the base contract and every registered allocator.

Every module and subpackage of this package is imported here, so an
allocator added as a new file registers itself without an import line
anywhere else (its ``@ALLOCATORS.register`` is the registry line).
"""

import importlib as _importlib
import pkgutil as _pkgutil
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..topology.base import Topology

from .base import Allocation, Allocator, Grant, Request
from .flat import FlatAllocator
from .hypercube import AFLAllocator, BuddyAllocator, FreeListAllocator, GrayCodeAllocator
from .linear import LinearAllocator
from .partition import PartitionAllocator
from .probes import CountingProbes, ReservationGuard

__all__ = ["Allocation", "Allocator", "Grant", "Request", "ReservationGuard", "CountingProbes", "FlatAllocator", "LinearAllocator", "PartitionAllocator", "make_allocator",
           "AFLAllocator", "BuddyAllocator", "FreeListAllocator", "GrayCodeAllocator"]

for _m in _pkgutil.iter_modules(__path__):
    if not _m.name.startswith("_"):
        _importlib.import_module(f"{__name__}.{_m.name}")


def make_allocator(spec: str, topology: "Topology | str", seed: int | None = None) -> Allocator:
    """Build a registered allocator from a spec such as ``"flat"`` or ``"best_fit:curve=hilbert"`` (see :func:`topoalloc.api.make_allocator`)."""
    from ..api import make_allocator as make

    return make(spec, topology, seed)
