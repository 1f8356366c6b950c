"""Certified Lagrangian bounds for window orderings and the table of proven orderings (ilp/lagrange.py, ilp/frontier.py)."""

from __future__ import annotations

import copy
import itertools
import json
import random
import subprocess
import sys

import networkx as nx
import numpy as np
import pytest

from topoalloc.errors import InvalidArgument
from topoalloc.ilp import brute_force_ordering, ordering_cost
from topoalloc.ilp.frontier import FRONTIER_FILE, check_entry, frontier_markdown, load_frontier
from topoalloc.ilp.graphs import machine_graph
from topoalloc.ilp.lagrange import certify_bound, lagrange_ordering, lagrangian_bound, local_search_ordering, walk_relaxation

WEIGHTS = ["window:3", "window:2", "hamiltonian", "custom:3,0,5", "custom:1,2"]


def _random_graphs(count: int, seed: int, lo: int = 5, hi: int = 9):
    rng = random.Random(seed)
    out = []
    while len(out) < count:
        g = nx.gnp_random_graph(rng.randint(lo, hi), 0.4, seed=rng.randint(0, 10**6))
        if nx.is_connected(g):
            out.append(sorted(g.edges()))
    return out


def _enumerated_relaxation(D: np.ndarray, w, lam, scale: int, distinct: int) -> int:
    """L(λ) from its definition: every walk of n nodes whose ``distinct`` consecutive entries differ."""
    n = len(D)
    best = None
    for s in itertools.product(range(n), repeat=n):
        if any(len(set(s[i : i + distinct])) < min(distinct, n - i) for i in range(n)):
            continue
        cost = sum(wk * D[s[i], s[i + k]] for k, wk in enumerate(w, 1) for i in range(n - k))
        v = scale * cost + sum(lam[x] for x in s)
        best = v if best is None or v < best else best
    return best


@pytest.mark.parametrize("memory", [4, 5])
@pytest.mark.parametrize("machine", ["mesh:2x3", "cycle6", "path6", "star"], ids=str)
def test_relaxation_equals_enumeration(machine, memory):
    """The layered pass computes L(λ) exactly: every locally distinct walk enumerated on 6 nodes."""
    graphs = {"cycle6": [(i, (i + 1) % 6) for i in range(6)], "path6": [(i, i + 1) for i in range(5)], "star": [(0, i) for i in range(1, 6)]}
    mg = machine_graph(graphs.get(machine, machine))
    rng = np.random.default_rng(7)
    D = np.asarray(mg.dist)
    for w, spec in (((4, 2, 1), "window:3"), ((3, 0, 5), "custom:3,0,5")):
        for trial in range(2):
            lam = [int(x) for x in rng.integers(-9, 10, mg.n)] if trial else [0] * mg.n
            value, walk = walk_relaxation(mg, spec, lam, 3, memory=memory)
            assert value == _enumerated_relaxation(D, w, lam, 3, memory + 1)
            assert len(walk) == mg.n and all(len(set(walk[i : i + memory + 1])) == len(walk[i : i + memory + 1]) for i in range(mg.n))
            cost = sum(wk * D[walk[i], walk[i + k]] for k, wk in enumerate(w, 1) for i in range(mg.n - k))
            assert 3 * cost + sum(lam[x] for x in walk) == value


@pytest.mark.parametrize("weights", WEIGHTS)
@pytest.mark.parametrize("machine", ["mesh:2x3", "mesh:3x3", "hypercube:3", "torus:2x4", "petersen"] + _random_graphs(5, seed=11), ids=lambda m: m if isinstance(m, str) else f"graph{len(m)}")
def test_certified_bound_never_exceeds_brute_force(machine, weights):
    """(★) is sound: any integer multipliers, any scale, both memories — never above the optimum."""
    best, _ = brute_force_ordering(machine, weights)
    mg = machine_graph(machine)
    rng = np.random.default_rng(len(str(machine)) * 31 + len(weights))
    for scale in (1, 7, 1000):
        for _ in range(3):
            lam = [int(x) for x in rng.integers(-5 * scale, 5 * scale + 1, mg.n)]
            for memory in (4, 5):
                if mg.n > memory:
                    assert certify_bound(mg, weights, lam, scale, memory=memory) <= best
    wb = lagrangian_bound(mg, weights, iterations=30, upper=best)
    assert wb.bound <= best
    assert certify_bound(mg, weights, wb.multipliers, wb.scale, memory=wb.memory) == wb.bound
    if wb.order is not None:
        assert ordering_cost(mg, wb.order, weights) == wb.bound == best


@pytest.mark.parametrize(
    "machine,optimum",
    [("mesh:3x3", 73), ("hypercube:3", 60), ("petersen", 82), ("mesh:4x4", 141), ("torus:4x4", 138), ("hypercube:4", 138)],
)
def test_lagrange_proves_known_optima(machine, optimum):
    """The DP's (and brute force's) proven optima, reached and proven without the 2^n table."""
    res, wb = lagrange_ordering(machine, search_iterations=20_000, restarts=2)
    assert res.status == "optimal" and res.objective == res.bound == optimum == wb.bound
    assert ordering_cost(machine, res.order, "window:3") == optimum
    assert certify_bound(machine, "window:3", wb.multipliers, wb.scale) == optimum


def test_four_distinct_is_weaker_on_the_4x4_mesh():
    """Why five: with four distinct the walk goes round one 4-cycle, and even the unpenalised bound drops.

    Memory 4 (five distinct) gives 140 at λ = 0 on the 4×4 mesh; the walk that
    repeats a square every four steps costs 9 per step after the start,
    4·3 + 2·2·2 + 1 + 12·9 = 129 — the trivial bound.  This pins the distinct
    window: a relaxation that allowed the dropped node back would fall to 129.
    """
    mg = machine_graph("mesh:4x4")
    value, walk = walk_relaxation(mg, "window:3", [0] * 16, 1)
    assert value == 140
    square = [0, 1, 5, 4] * 4
    D = mg.dist
    cost = sum(w * D[square[i], square[i + k]] for k, w in ((1, 4), (2, 2), (3, 1)) for i in range(16 - k))
    assert cost == 129 < value  # locally distinct over four, not over five


def test_bound_is_deterministic_and_certificate_round_trips():
    a = lagrangian_bound("mesh:5x5", iterations=25, upper=234)
    b = lagrangian_bound("mesh:5x5", iterations=25, upper=234)
    assert a.as_dict() | {"seconds": 0} == b.as_dict() | {"seconds": 0}
    d = json.loads(json.dumps(a.as_dict()))
    assert certify_bound("mesh:5x5", d["weights"], d["multipliers"], d["scale"], memory=d["memory"]) == a.bound


def test_local_search_is_deterministic_and_valid():
    c1, o1 = local_search_ordering("mesh:4x3", iterations=5000, restarts=2, seed=3)
    c2, o2 = local_search_ordering("mesh:4x3", iterations=5000, restarts=2, seed=3)
    assert (c1, o1) == (c2, o2)
    assert sorted(o1) == list(range(12)) and ordering_cost("mesh:4x3", o1, "window:3") == c1
    assert c1 >= brute_force_ordering("mesh:2x3")[0]  # sanity: a cost, not a bound
    c3, o3 = local_search_ordering("mesh:4x3", "window:4", iterations=2000, restarts=1)
    assert ordering_cost("mesh:4x3", o3, "window:4") == c3


@pytest.mark.parametrize(
    "call,argument",
    [
        (lambda: walk_relaxation("mesh:3x3", "window:4", [0] * 9), "weights"),
        (lambda: walk_relaxation("mesh:3x3", "linear-arrangement", [0] * 9), "weights"),
        (lambda: walk_relaxation("mesh:3x3", "window:3", [0] * 8), "multipliers"),
        (lambda: walk_relaxation("mesh:3x3", "window:3", [0.5] * 9), "multipliers"),
        (lambda: walk_relaxation("mesh:3x3", "window:3", [0] * 9, 0), "scale"),
        (lambda: walk_relaxation("mesh:3x3", "window:3", [0] * 9, memory=3), "memory"),
        (lambda: walk_relaxation("mesh:2x2", "window:3", [0] * 4), "machine"),
        (lambda: walk_relaxation("mesh:9x8", "window:3", [0] * 72), "machine"),
        (lambda: certify_bound("mesh:8x8", "window:3", [0] * 64, 1, memory=5), "memory"),
        (lambda: lagrangian_bound("mesh:3x3", iterations=0), "iterations"),
        (lambda: walk_relaxation("mesh:2x4", f"custom:{2**29},{2**29},{2**29}", [0] * 8), "weights"),
        (lambda: walk_relaxation("mesh:2x4", f"custom:{2**22}", [0] * 8, 2**20), "scale"),
        (lambda: lagrangian_bound("mesh:3x3", start=[2e9] * 9), "start"),
        (lambda: lagrangian_bound("mesh:3x3", start=[0.0] * 3), "start"),
        (lambda: local_search_ordering("mesh:3x3", start=[0, 0, 1, 2, 3, 4, 5, 6, 7]), "start"),
        (lambda: local_search_ordering("mesh:3x3", "linear-arrangement"), "weights"),
    ],
)
def test_bad_arguments_are_named(call, argument):
    with pytest.raises(InvalidArgument) as exc:
        call()
    assert exc.value.name == argument


def test_small_machines_fall_back_to_brute_force():
    wb = lagrangian_bound("mesh:2x2")
    assert wb.bound == brute_force_ordering("mesh:2x2")[0] and wb.order is not None


# ------------------------------------------------------------------ the committed table


_ENTRIES = load_frontier()
#: entries whose certificate is re-checked in the default tier (one relaxation pass each, under a second);
#: the larger ones (7x7, 8x8: 5-20 s a pass) in the slow tier
_QUICK = 40


def test_frontier_table_has_the_named_machines():
    names = {e["machine"] for e in _ENTRIES}
    assert {"mesh:5x5", "mesh:4x4x2", "mesh:3x3x3", "hypercube:5", "mesh:4x4", "torus:4x4", "hypercube:4"} <= names
    for e in _ENTRIES:
        if e["machine"] in {"mesh:5x5", "mesh:4x4x2", "mesh:3x3x3", "hypercube:5"}:
            assert e["status"] == "optimal" or e["gap"] <= 0.02, e["machine"]
    md = frontier_markdown(_ENTRIES)
    assert md.count("\n") == len(_ENTRIES) + 2 and "`mesh:5x5`" in md


@pytest.mark.parametrize(
    "entry",
    [pytest.param(e, marks=() if e["n"] <= _QUICK else pytest.mark.slow, id=e["machine"]) for e in _ENTRIES],
)
def test_frontier_entry_checks_from_first_principles(entry):
    """The order's cost, every curve's cost, and the bound from its certificate, re-derived."""
    check_entry(entry)


@pytest.mark.parametrize(
    "field,value,message",
    [
        ("objective", -1, "costs"),
        ("bound", None, "certificate gives"),
        ("status", "optimal", "status"),
        ("curves", {"snake": 1}, "curve costs"),
        ("multipliers", None, "certificate gives"),
        ("order", None, "permutation"),
    ],
)
def test_frontier_checker_catches_a_wrong_entry(field, value, message):
    e = copy.deepcopy(next(x for x in _ENTRIES if x["machine"] == "mesh:5x5"))
    if field == "bound":
        e["bound"] = e["bound"] - 1
        e["gap"] = (e["objective"] - e["bound"]) / e["objective"]
        e["status"] = "bracketed"
    elif field == "status":
        e["status"] = "optimal" if e["status"] == "bracketed" else "bracketed"
    elif field == "multipliers":
        e["multipliers"] = [x + (i % 3) * 3 * e["scale"] for i, x in enumerate(e["multipliers"])]
    elif field == "order":
        e["order"] = e["order"][:-1] + [e["order"][0]]
    elif field == "objective":
        e["objective"] = e["objective"] + 1
    else:
        e[field] = value
    with pytest.raises(AssertionError, match=message):
        check_entry(e)


def test_frontier_file_ships_with_the_package():
    assert FRONTIER_FILE.name == "frontier.json" and FRONTIER_FILE.exists()


@pytest.mark.slow
def test_frontier_dp_rows_rerun():
    for e in _ENTRIES:
        if e["proof"] == "dp":
            check_entry(e, rerun_dp=True)


def test_cli_order_lagrange(tmp_path):
    out = tmp_path / "o.txt"
    r = subprocess.run(
        [sys.executable, "-m", "topoalloc", "order", "--topology", "mesh:3x3", "--method", "lagrange", "--iterations", "50", "--search-iterations", "5000", "--restarts", "1", "--output", str(out), "--json"],
        capture_output=True, text=True, timeout=120,
    )
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["status"] == "optimal" and d["objective"] == d["bound"] == 73 and d["formulation"] == "lagrange"
    assert out.read_text().strip()
    r = subprocess.run([sys.executable, "-m", "topoalloc", "order", "--topology", "mesh:3x3", "--method", "lagrange", "--ring"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "--ring" in r.stderr and r.stderr.count("\n") == 1
    for flag in ("--iterations", "--search-iterations", "--restarts"):
        r = subprocess.run([sys.executable, "-m", "topoalloc", "order", "--topology", "mesh:3x3", "--method", "lagrange", flag, "0"], capture_output=True, text=True, timeout=60)
        assert r.returncode == 2 and f"argument {flag}=0" in r.stderr
