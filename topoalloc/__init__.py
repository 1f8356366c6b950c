"""topoalloc: processor allocation for tori, meshes, hypercubes and graphs.

Allocators from Mao/Chen/Watson (EP, NEP), Turner (Free List, AFL),
Bani-Ahmad (ANCA, MBS, Paging) and Leung/Phillips/Bunde et al. (curves,
First/Best Fit, Sum of Squares); an event-driven scheduling simulator driven
by Parallel Workloads Archive traces; Z3 proofs of what the allocators output;
CP-SAT optima.

>>> import topoalloc
>>> r = topoalloc.simulate(machine="flat:128")
>>> round(r.summary()["utilization"], 3) > 0
True
"""

from . import alloc as _alloc  # noqa: F401  (registers allocators)
from . import sched as _sched  # noqa: F401  (registers schedulers)
from . import topology as _topology  # noqa: F401  (registers topologies)
from .api import simulate
from .errors import TopoallocError
from .registry import ALLOCATORS, METRICS, SCHEDULERS, TOPOLOGIES

__version__ = "0.1.0"
__all__ = ["simulate", "TopoallocError", "ALLOCATORS", "SCHEDULERS", "TOPOLOGIES", "METRICS", "__version__"]
