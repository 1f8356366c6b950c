"""topoalloc: processor allocation for tori, meshes, hypercubes and graphs.

Allocators from Mao/Chen/Watson (subtorus allocation: EP, NEP), Turner
(hypercubes: buddy, Gray code, Free List, the Auxiliary Free List) and
Leung/Phillips/Bunde et al. (curve orderings; sorted free list, First Fit,
Best Fit, Sum of Squares); an event-driven scheduling simulator (FCFS, EASY,
conservative backfilling) driven by Parallel Workloads Archive traces; Z3
proofs of what the allocators output (``topoalloc.proofs``); CP-SAT optima
(``topoalloc.ilp``).

>>> import topoalloc
>>> r = topoalloc.simulate(machine="flat:128")
>>> round(r.summary()["utilization"], 3) > 0
True

Importing the package is cheap: the names below and the subpackages load on
first use (PEP 562), and the built-in allocators, schedulers, machines and
metrics register themselves the first time a registry is asked
(:mod:`topoalloc.registry`).  So the command line can run a flat simulation
over processor counts without loading numpy (:mod:`topoalloc.counts`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._lazy import attach

if TYPE_CHECKING:
    from .api import make_allocator, make_scheduler, simulate
    from .errors import TopoallocError
    from .registry import ALLOCATORS, METRICS, SCHEDULERS, TOPOLOGIES

__version__ = "0.1.0"
__all__ = ["simulate", "make_allocator", "make_scheduler", "TopoallocError", "ALLOCATORS", "SCHEDULERS", "TOPOLOGIES", "METRICS", "__version__"]

#: where each public name lives
_HOMES = {
    "simulate": "api",
    "make_allocator": "api",
    "make_scheduler": "api",
    "TopoallocError": "errors",
    "ALLOCATORS": "registry",
    "SCHEDULERS": "registry",
    "TOPOLOGIES": "registry",
    "METRICS": "registry",
}


__getattr__, __dir__ = attach(__name__, _HOMES, __all__, submodules=True)
