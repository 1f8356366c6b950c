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

import importlib
from typing import TYPE_CHECKING, Any

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


def __getattr__(name: str) -> Any:
    """A public name or a subpackage, imported on first use."""
    home = _HOMES.get(name)
    if home is not None:
        value = getattr(importlib.import_module(f".{home}", __name__), name)
    elif name.startswith("__"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    else:
        try:
            value = importlib.import_module(f".{name}", __name__)
        except ModuleNotFoundError as exc:
            if exc.name != f"{__name__}.{name}":
                raise
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
