"""Exact optimisation with OR-Tools CP-SAT (installed as ``topoalloc.ilp``).

One module per problem: instance -> model -> solve -> validated solution.

``ordering``   optimal processor orderings of any network (seed 003 §2.2)
``minspan``    minimum-span allocation of fixed-time jobs (§2.3, §5)
``schedule``   offline optimal schedules: contiguous rank intervals or flat capacity
``gap``        online allocators against the offline optimum (competitive-ratio gaps)
``mesh_schedule`` optimal contiguous schedules on a 2-D mesh (time × x × y) and the 2-D heuristics' ratios
``family_schedule`` optimal schedules of subcubes, subtori and slices, and those families' ratios
``lagrange``   certified Lagrangian lower bounds for window orderings beyond the DP's 16 nodes
``frontier``   the committed table of proven orderings (``frontier.json``) and its checker
``adversary``  hill-climbing for the worst instances of the subcube, subtorus, slice and 2-D families

Every solver status is handled (see :mod:`topoalloc.ilp._solver`) and every
solution is re-checked by an independent evaluator before it is returned.
"""

# Exports load on first use (PEP 562): ``import topoalloc.ilp`` — and the CLI, which adds
# the ``order`` / ``minspan`` / ``gap`` commands — must not pay for importing OR-Tools.
_EXPORTS = {
    "adversarial_search": "gap",
    "family_adversary": "adversary",
    "mesh_adversary": "adversary",
    "gap_study": "gap",
    "run_online": "gap",
    "dp_ordering": "dp",
    "certify_bound": "lagrange",
    "lagrange_ordering": "lagrange",
    "lagrangian_bound": "lagrange",
    "local_search_ordering": "lagrange",
    "walk_relaxation": "lagrange",
    "load_frontier": "frontier",
    "MachineGraph": "graphs",
    "hypercube_graph": "graphs",
    "machine_graph": "graphs",
    "min_span_allocation": "minspan",
    "random_fixed_instance": "minspan",
    "span_of": "minspan",
    "OrderingResult": "ordering",
    "brute_force_ordering": "ordering",
    "optimal_ordering": "ordering",
    "ordering_cost": "ordering",
    "parse_weights": "ordering",
    "save_ordering": "ordering",
    "optimal_schedule": "schedule",
    "optimal_mesh_schedule": "mesh_schedule",
    "mesh_gap_study": "mesh_schedule",
    "random_mesh_instance": "mesh_schedule",
    "random_release_instance": "schedule",
}


def __getattr__(name: str):
    mod = _EXPORTS.get(name)
    if mod is None:
        raise AttributeError(f"module 'topoalloc.ilp' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f".{mod}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))


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
    "optimal_mesh_schedule",
    "mesh_gap_study",
    "random_mesh_instance",
    "gap_study",
    "adversarial_search",
    "family_adversary",
    "mesh_adversary",
    "run_online",
]
