"""Deadlock freedom of the routing (Dally-Seitz), checked exactly, and the simulator's routes equal to the definition.

Default bounds: every mesh and torus with 1 dimension of side <= 16, 2 dimensions of sides <= 8,
3 dimensions of sides <= 4 (all orientations), hypercubes Q0..Q8.  ``-m slow``: sides <= 12 in 2-D,
<= 6 in 3-D, <= 3 in 4-D, hypercubes up to Q10.
"""

from __future__ import annotations

import pytest

from topoalloc.proofs.deadlock import (
    deadlock_rows,
    dor_route,
    grid_shapes,
    mixed_wrap_cases,
    prove_grid_deadlock_free,
    prove_hypercube_deadlock_free,
    simulator_routes_agree,
)
from topoalloc.topology import parse_machine

DEFAULT = {1: 16, 2: 8, 3: 4}
SLOW = {2: 12, 3: 6, 4: 3}


def test_default_family_holds():
    rows = deadlock_rows(max_side=DEFAULT, max_cube=8)
    assert [r["holds"] for r in rows] == [True] * 6, rows
    assert rows[0]["cases"] == 16 + 64 + 64 and rows[5]["cases"] == 9
    assert rows[0]["largest"] == "mesh:4x4x4"  # most channels: 288 (8x8 has 224)
    # partially wrapped tori: 2-D sides <= 6 (two mixed patterns), 3-D sides <= 3 (six)
    assert rows[3]["cases"] == rows[4]["cases"] == 36 * 2 + 27 * 6
    assert {r["method"] for r in rows} == {"exhaustive"}


def test_torus_without_dateline_has_a_cycle():
    """The check can fail: a ring of 4 or more under dimension order and one VC has a dependency cycle."""
    r = prove_grid_deadlock_free((4, 4), (True, True))
    assert not r.holds
    cycle = r.counterexample["cycle"]
    assert len({c["dimension"] for c in cycle}) == 1 and len({c["direction"] for c in cycle}) == 1
    assert len(cycle) == 4  # one ring of the torus, all the way round
    # with dateline classes the same torus is acyclic; rings of <= 3 never need them
    assert prove_grid_deadlock_free((4, 4), (True, True), dateline=True).holds
    assert prove_grid_deadlock_free((3, 3, 2), (True, True, True)).holds
    assert not prove_grid_deadlock_free((3, 5), (False, True)).holds  # one wrapped side of 5 suffices


def test_definition_examples():
    # tie (distance k/2) goes the positive way; the wrap link switches to class 1 for the rest of the dimension
    assert dor_route((4,), (True,), 1, 3, dateline=True) == [(1, 0, 1, 0), (2, 0, 1, 0)]
    assert dor_route((4,), (True,), 3, 1, dateline=True) == [(3, 0, 1, 1), (0, 0, 1, 1)]
    assert dor_route((5, 3), (True, True), 0, 4 + 2 * 5, dateline=True) == [(0, 0, -1, 1), (4, 1, -1, 1)]
    assert dor_route((3, 3), (False, False), 0, 8) == [(0, 0, 1, 0), (1, 0, 1, 0), (2, 1, 1, 0), (5, 1, 1, 0)]


@pytest.mark.parametrize("spec", ["mesh:5x4", "mesh:3x2x3", "torus:4x4", "torus:5x3", "torus:2x3x4", "torus:6,wrap=1", "torus:4x5,wrap=01", "hypercube:5"])
def test_simulator_routes_are_the_proved_routes(spec):
    r = simulator_routes_agree(parse_machine(spec), vcs=2)
    assert r.holds, r.counterexample
    n = parse_machine(spec).n_nodes
    assert r.details["cases"] == n * (n - 1)


def test_partially_wrapped_torus_needs_dateline_only_on_long_wrapped_sides():
    """torus:4x5,wrap=01 (the simulator runs such machines): the wrapped side of 5 alone makes a cycle."""
    assert not prove_grid_deadlock_free((4, 5), (False, True)).holds
    assert prove_grid_deadlock_free((4, 5), (False, True), dateline=True).holds
    assert prove_grid_deadlock_free((5, 3), (False, True)).holds  # the wrapped side is 3: one hop at most


@pytest.mark.slow
@pytest.mark.long
def test_larger_family_holds():
    for dims, wrap in mixed_wrap_cases(SLOW):
        assert prove_grid_deadlock_free(dims, wrap, dateline=True).holds, (dims, wrap)
        assert prove_grid_deadlock_free(dims, wrap).holds == (not any(w and k >= 4 for w, k in zip(wrap, dims))), (dims, wrap)
    for dims in grid_shapes(SLOW):
        assert prove_grid_deadlock_free(dims).holds, dims
        assert prove_grid_deadlock_free(dims, (True,) * len(dims), dateline=True).holds, dims
        assert prove_grid_deadlock_free(dims, (True,) * len(dims)).holds == (max(dims) < 4), dims
    for n in range(9, 11):
        assert prove_hypercube_deadlock_free(n).holds


@pytest.mark.slow
@pytest.mark.parametrize("spec", ["mesh:8x8", "torus:8x8", "torus:4x4x4", "hypercube:8"])
def test_simulator_routes_larger(spec):
    assert simulator_routes_agree(parse_machine(spec), vcs=2).holds
