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
"""

from . import alloc as _alloc  # noqa: F401  (registers allocators)
from . import metrics as _metrics  # noqa: F401  (registers metrics)
from . import sched as _sched  # noqa: F401  (registers schedulers)
from . import topology as _topology  # noqa: F401  (registers topologies)
from .api import make_allocator, make_scheduler, simulate
from .errors import TopoallocError
from .registry import ALLOCATORS, METRICS, SCHEDULERS, TOPOLOGIES

__version__ = "0.1.0"
__all__ = ["simulate", "make_allocator", "make_scheduler", "TopoallocError", "ALLOCATORS", "SCHEDULERS", "TOPOLOGIES", "METRICS", "__version__"]
