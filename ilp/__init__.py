"""Exact optimisation with OR-Tools CP-SAT (installed as ``topoalloc.ilp``).

One module per problem: instance -> model -> solve -> validated solution.

``ordering``   optimal processor orderings of any network (seed 003 §2.2)
``minspan``    minimum-span allocation of fixed-time jobs (§2.3, §5)
``schedule``   offline optimal schedules: contiguous rank intervals or flat capacity
``gap``        online allocators against the offline optimum (competitive-ratio gaps)

Every solver status is handled (see :mod:`topoalloc.ilp._solver`) and every
solution is re-checked by an independent evaluator before it is returned.
"""

from .gap import adversarial_search, gap_study, run_online
from .dp import dp_ordering
from .graphs import MachineGraph, hypercube_graph, machine_graph
from .minspan import min_span_allocation, random_fixed_instance, span_of
from .ordering import OrderingResult, brute_force_ordering, optimal_ordering, ordering_cost, parse_weights, save_ordering
from .schedule import optimal_schedule, random_release_instance

__all__ = [
    "optimal_ordering",
    "dp_ordering",
    "ordering_cost",
    "brute_force_ordering",
    "parse_weights",
    "save_ordering",
    "OrderingResult",
    "machine_graph",
    "MachineGraph",
    "hypercube_graph",
    "min_span_allocation",
    "random_fixed_instance",
    "span_of",
    "optimal_schedule",
    "random_release_instance",
    "gap_study",
    "adversarial_search",
    "run_online",
]
