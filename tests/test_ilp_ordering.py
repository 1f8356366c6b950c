"""topoalloc.ilp.ordering: CP-SAT optimum == brute force on every small instance, grid
linear-arrangement closed form, symmetry breaking soundness, statuses, files, errors."""

from __future__ import annotations

import networkx as nx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from topoalloc.errors import InvalidArgument, SolverError
from topoalloc.ilp import ordering as ordmod
from topoalloc.ilp._solver import SolveOutcome, run_solver
from topoalloc.ilp.graphs import hypercube_graph, machine_graph
from topoalloc.ilp.ordering import (
    brute_force_ordering,
    grid_linear_arrangement,
    optimal_ordering,
    ordering_cost,
    parse_weights,
    save_ordering,
)

WEIGHTS = ["window:3", "hamiltonian", "linear-arrangement", "custom:3,0,1", "window:2"]


def _tree8():
    return [(0, 1), (1, 2), (1, 3), (3, 4), (3, 5), (5, 6), (0, 7)]


def _random7():
    g = nx.gnm_random_graph(7, 10, seed=3)
    assert nx.is_connected(g)
    return g


SMALL = {
    "path5": "mesh:5",
    "ring6": "torus:6",
    "mesh2x3": "mesh:2x3",
    "mesh2x4": "mesh:2x4",
    "torus2x3": "torus:2x3",
    "cube3": "hypercube:3",
    "star6": [(0, i) for i in range(1, 6)],
    "tree8": _tree8(),
    "random7": _random7(),
}
NINE = {"mesh3x3": "mesh:3x3", "torus3x3": "torus:3x3"}


def _check(machine, weights, ring):
    res = optimal_ordering(machine, weights, ring=ring, time_limit=120)
    best, _ = brute_force_ordering(machine, weights, ring=ring)
    assert res.status == "optimal"
    assert res.objective == best == res.bound
    assert ordering_cost(machine, res.order, weights, ring=ring) == best


@pytest.mark.parametrize("ring", [False, True])
@pytest.mark.parametrize("weights", WEIGHTS)
@pytest.mark.parametrize("name", sorted(SMALL))
def test_solver_equals_brute_force_up_to_8_nodes(name, weights, ring):
    _check(SMALL[name], weights, ring)


@pytest.mark.parametrize("ring", [False, True])
@pytest.mark.parametrize("weights", ["window:3", "hamiltonian", "custom:3,0,1"])
@pytest.mark.parametrize("name", sorted(NINE))
def test_solver_equals_brute_force_9_nodes(name, weights, ring):
    _check(NINE[name], weights, ring)


@pytest.mark.slow
@pytest.mark.parametrize("ring", [False, True])
@pytest.mark.parametrize("weights", ["linear-arrangement", "window:2"])
@pytest.mark.parametrize("name", sorted(NINE))
def test_solver_equals_brute_force_9_nodes_slow(name, weights, ring):
    _check(NINE[name], weights, ring)


@settings(max_examples=25)
@given(
    n=st.integers(3, 7),
    extra=st.integers(0, 6),
    seed=st.integers(0, 10_000),
    weights=st.lists(st.integers(0, 5), min_size=1, max_size=4).filter(any),
    ring=st.booleans(),
)
def test_random_graphs_match_brute_force(n, extra, seed, weights, ring):
    g = nx.random_labeled_tree(n, seed=seed) if hasattr(nx, "random_labeled_tree") else nx.random_tree(n, seed=seed)
    rng = __import__("random").Random(seed)
    for _ in range(extra):
        u, v = rng.sample(range(n), 2)
        g.add_edge(u, v)
    res = optimal_ordering(g, weights, ring=ring, time_limit=60)
    best, _ = brute_force_ordering(g, weights, ring=ring)
    assert res.status == "optimal" and res.objective == best


@pytest.mark.parametrize("m,n", [(2, 2), (2, 3), (2, 4), (3, 3), (1, 6)])
def test_grid_linear_arrangement_closed_form(m, n):
    """Fishburn–Tetali–Winkler (2000) / Muradyan–Piliposyan (1980) closed form."""
    spec = f"mesh:{m}x{n}" if m > 1 else f"mesh:{n}"
    res = optimal_ordering(spec, "linear-arrangement", time_limit=120)
    assert res.status == "optimal"
    assert res.objective == grid_linear_arrangement(m, n)
    if m * n <= 9:
        assert brute_force_ordering(spec, "linear-arrangement")[0] == res.objective


@pytest.mark.slow
@pytest.mark.parametrize("m,n", [(2, 5), (3, 4), (2, 6)])
def test_grid_linear_arrangement_closed_form_slow(m, n):
    res = optimal_ordering(f"mesh:{m}x{n}", "linear-arrangement", time_limit=600)
    assert res.status == "optimal" and res.objective == grid_linear_arrangement(m, n)


def test_closed_form_matches_published_values():
    # A195647 (n x n grids): 0, 6, 24, 60, 116, 200, 318, 472
    assert [grid_linear_arrangement(k, k) for k in range(1, 9)] == [0, 6, 24, 60, 116, 200, 318, 472]


def test_evaluator_by_hand():
    # path 0-1-2-3, order 0 2 1 3, window 2 (w1=2, w2=1)
    # rank pairs k=1: d(0,2)=2, d(2,1)=1, d(1,3)=2 -> 2*(5)=10 ; k=2: d(0,1)=1, d(2,3)=1 -> 2 ; total 12
    assert ordering_cost("mesh:4", [0, 2, 1, 3], "window:2") == 12
    # ring: k=3 wraps to 1: pair (0,3) d=3 added with w(1)=2 -> 18
    assert ordering_cost("mesh:4", [0, 2, 1, 3], "window:2", ring=True) == 18
    # linear arrangement counts rank distance over links: edges (0,1):2 (1,2):1 (2,3):2
    assert ordering_cost("mesh:4", [0, 2, 1, 3], "linear-arrangement") == 5


def test_evaluator_reversal_invariant():
    order = [0, 1, 2, 5, 4, 3, 6, 7, 8]
    for w in WEIGHTS:
        for ring in (False, True):
            assert ordering_cost("mesh:3x3", order, w, ring=ring) == ordering_cost("mesh:3x3", order[::-1], w, ring=ring)


def test_hamiltonian_path_criterion():
    """§2.2: optimum n-1 iff a Hamiltonian path exists."""
    assert optimal_ordering("mesh:3x3", "hamiltonian").objective == 8
    star = [(0, i) for i in range(1, 5)]  # K_{1,4}: no Hamiltonian path
    assert optimal_ordering(star, "hamiltonian").objective > 4


@pytest.mark.parametrize(
    "machine,ring",
    [(m, r) for m in ("mesh:3x3", "hypercube:3", "torus:2x4") for r in (False, True)]
    + [("petersen", True), pytest.param("petersen", False, marks=pytest.mark.slow)],  # ~14 s without symmetry breaking
)
def test_symmetry_breaking_is_sound(machine, ring):
    a = optimal_ordering(machine, "window:2", ring=ring, symmetry=True, time_limit=120)
    b = optimal_ordering(machine, "window:2", ring=ring, symmetry=False, time_limit=120)
    assert a.status == b.status == "optimal" and a.objective == b.objective


def test_formulations_agree():
    for ring in (False, True):
        a = optimal_ordering("mesh:2x4", "window:3", ring=ring, formulation="window")
        b = optimal_ordering("mesh:2x4", "window:3", ring=ring, formulation="position")
        assert a.objective == b.objective


def test_distances_equal_topology_routing():
    from topoalloc.topology import parse_machine

    for spec in ("mesh:4x3", "torus:4x4", "torus:2x3x2"):
        top = parse_machine(spec)
        d = machine_graph(top).dist
        assert all(d[a, b] == top.distance(a, b) for a in range(top.n_nodes) for b in range(top.n_nodes))
    assert machine_graph("hypercube:4").dist[0, 15] == 4
    assert nx.is_isomorphic(machine_graph("torus:4x4").graph, hypercube_graph(4))


def test_deterministic_with_one_worker():
    a = optimal_ordering("mesh:3x3", "window:3", workers=1, seed=0)
    b = optimal_ordering("mesh:3x3", "window:3", workers=1, seed=0)
    assert a.order == b.order and a.objective == b.objective == 73


def test_time_limited_statuses_are_consistent():
    res = optimal_ordering("mesh:6x6", "window:3", time_limit=0.05, warm_start=None)
    assert res.status in ("feasible", "unknown", "optimal")
    if res.status == "unknown":
        assert res.order is None and res.objective is None and res.gap is None
    else:
        assert res.bound <= res.objective
        assert ordering_cost("mesh:6x6", res.order, "window:3") == res.objective
    warm = optimal_ordering("mesh:4x4", "window:3", time_limit=1)  # not proved in 1 s: the warm start is the floor
    assert warm.order is not None and warm.status in ("feasible", "optimal")
    assert warm.objective <= warm.warm_start_cost


def test_infeasible_status_raises(monkeypatch):
    from ortools.sat.python import cp_model

    def fake(model, **kw):
        return SolveOutcome("infeasible", cp_model.CpSolver(), 0.0)

    monkeypatch.setattr(ordmod, "run_solver", fake)
    with pytest.raises(SolverError, match="infeasible"):
        optimal_ordering("mesh:2x3", "window:2")


def test_run_solver_statuses():
    from ortools.sat.python import cp_model

    m = cp_model.CpModel()
    x = m.new_int_var(0, 3, "x")
    m.add(x >= 5)
    assert run_solver(m, time_limit=5, workers=1, seed=0, what="t").status == "infeasible"
    bad = cp_model.CpModel()
    bad.new_int_var(0, 3, "y")
    bad.proto.constraints.add().linear.vars.append(7)  # a constraint naming a variable that does not exist
    with pytest.raises(SolverError, match="model_invalid"):
        run_solver(bad, time_limit=5, workers=1, seed=0, what="t")


def test_ordering_file_feeds_curve_allocators(tmp_path):
    from topoalloc.alloc import Request, make_allocator
    from topoalloc.curves import read_ordering

    res = optimal_ordering("mesh:3x3", "window:3")
    path = tmp_path / "opt.txt"
    save_ordering(res, path)
    assert tuple(read_ordering(path, 9).node_at_rank.tolist()) == res.order
    a = make_allocator(f"best_fit:curve={path}", "mesh:3x3")
    got = a.allocate(Request(3))
    assert got.nodes.tolist() == sorted(res.order[:3])


@pytest.mark.parametrize(
    "weights",
    ["window:0", "window:x", "custom:", "custom:1,-1", "custom:0,0", "linear-arrangement:2", "nope", [1.5]],
)
def test_bad_weights(weights):
    from topoalloc.errors import UnknownName

    with pytest.raises((InvalidArgument, UnknownName)):
        parse_weights(weights)


def test_bad_machines_and_options():
    with pytest.raises(InvalidArgument, match="connected"):
        optimal_ordering([(0, 1), (2, 3)])
    g = nx.path_graph(["a", "b", "c"])
    with pytest.raises(InvalidArgument, match="0..2"):
        optimal_ordering(g)
    with pytest.raises(InvalidArgument, match="formulation"):
        optimal_ordering("mesh:3x3", "linear-arrangement", formulation="window")
    with pytest.raises(InvalidArgument, match="time_limit"):
        optimal_ordering("mesh:3x3", time_limit=-1)
    with pytest.raises(InvalidArgument, match="order"):
        ordering_cost("mesh:2x2", [0, 1, 1, 3])
    with pytest.raises(InvalidArgument, match="warm_start"):
        optimal_ordering("mesh:2x2", warm_start=[0, 1])


def test_tiny_machines():
    assert optimal_ordering("mesh:1", "window:3").order == (0,)
    assert optimal_ordering("mesh:2", "window:3").objective == 4
    assert optimal_ordering("mesh:3", "window:3", ring=True).objective == brute_force_ordering("mesh:3", "window:3", ring=True)[0]


@pytest.mark.parametrize("machine", ["mesh:2x3", "hypercube:3", "torus:2x4", [(0, 1), (1, 2), (2, 0), (2, 3), (3, 4)]])
@pytest.mark.parametrize("ring", [False, True])
def test_flow_linking_is_exact(machine, ring):
    w = "window:2" if ring else "window:3"  # a ring needs 2K < n for the window model
    res = optimal_ordering(machine, w, ring=ring, flow=True)
    assert res.status == "optimal" and res.objective == brute_force_ordering(machine, w, ring=ring)[0]


def test_flow_needs_the_window_model():
    with pytest.raises(InvalidArgument, match="flow"):
        optimal_ordering("mesh:2x3", "linear-arrangement", flow=True)
