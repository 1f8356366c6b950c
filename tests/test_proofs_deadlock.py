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
    dragonfly_route,
    grid_cdg,
    fattree_route,
    prove_dragonfly_deadlock_free,
    prove_fattree_deadlock_free,
    prove_valiant_deadlock_free,
    simulator_router_routes_agree,
    valiant_routes_agree,
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
    assert [r["holds"] for r in rows] == [True] * 10, rows
    assert rows[0]["cases"] == 16 + 64 + 64 and rows[5]["cases"] == 9
    assert rows[0]["largest"] == "mesh:4x4x4"  # most channels: 288 (8x8 has 224)
    # partially wrapped tori: 2-D sides <= 6 (two mixed patterns), 3-D sides <= 3 (six)
    assert rows[3]["cases"] == rows[4]["cases"] == 36 * 2 + 27 * 6
    assert {r["method"] for r in rows} == {"exhaustive"}
    # router networks: dragonflies a <= 4, h <= 2, every number of groups (38); fat trees k <= 4, n <= 4 (12)
    assert rows[6]["cases"] == rows[7]["cases"] == rows[8]["cases"] == 38 and rows[9]["cases"] == 12
    assert rows[9]["largest"] == "fattree:k=4,n=4"


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


# ------------------------------------------------------------- router networks
def test_dragonfly_needs_the_class_change_at_the_global_hop():
    """One class: local, global, local, global ... closes a cycle through three groups (the check can fail)."""
    r = prove_dragonfly_deadlock_free(2, 1, 3, classes=False)
    assert not r.holds
    cycle = r.counterexample["cycle"]
    groups = {c["from_router"] // 2 for c in cycle}
    assert len(groups) == 3 and len(cycle) == 6  # a local and a global hop in each of the three groups
    assert prove_dragonfly_deadlock_free(2, 1, 3).holds
    # two groups: the one global link arrives and leaves on the same router, no cycle without classes
    assert prove_dragonfly_deadlock_free(4, 2, 2, classes=False).holds
    # every global channel in use on router 0 (g - 2 < h): no local hop between two global hops
    assert prove_dragonfly_deadlock_free(3, 3, 4, classes=False).holds


def test_router_route_definitions():
    # dragonfly a=4, h=2 (9 groups): router 0 (group 0) to router 35 (group 8): channel 7 of group 0 is router 3's,
    # and it lands on group 8's channel back to 0, (0 - 8 - 1) mod 9 = 0, router 32's
    assert dragonfly_route(4, 2, 9, 0, 35, classes=True) == [(0, 3, 0), (3, 32, 1), (32, 35, 1)]
    assert dragonfly_route(4, 2, 9, 1, 2) == [(1, 2, 0)]
    # 2-ary 3-tree (4 leaf switches per level): leaf 0 to leaf 3 climbs to level 2 through (1, 1), comes down through (3, 1)
    assert fattree_route(2, 3, 0, 3) == [(0, 4 + 1, 0), (4 + 1, 8 + 3, 0), (8 + 3, 4 + 3, 0), (4 + 3, 3, 0)]
    assert fattree_route(2, 3, 2, 3) == [(2, 4 + 3, 0), (4 + 3, 3, 0)]


@pytest.mark.parametrize("k,n", [(2, 1), (2, 4), (3, 3), (4, 3), (5, 2)])
def test_fat_tree_is_deadlock_free(k, n):
    assert prove_fattree_deadlock_free(k, n).holds


@pytest.mark.parametrize("spec", ["dragonfly:p=2,a=4,h=2", "dragonfly:p=1,a=3,h=2,g=5", "dragonfly:p=3,a=2,h=1", "fattree:k=2,n=3", "fattree:k=3,n=3", "fattree:k=4,n=2"])
@pytest.mark.parametrize("vcs", [1, 2])
def test_simulator_routes_on_router_networks_are_the_proved_routes(spec, vcs):
    top = parse_machine(spec)
    r = simulator_router_routes_agree(top, vcs=vcs)
    assert r.holds, r.counterexample
    assert r.details["cases"] == top.n_nodes * (top.n_nodes - 1)


def test_router_route_agreement_can_fail(monkeypatch):
    """A fat tree climbing by the source's digits instead of the destination's is caught, pair named."""
    from topoalloc.network.tables import network_tables
    from topoalloc.topology.indirect import FatTree

    def by_source(self, a, b):  # up*/down* through the leftmost top switch: minimal, destination-based, not the definition
        k, per = self.k, self.k ** (self.n - 1)
        ra, rb = self.router_of(a), self.router_of(b)
        L = max((i + 1 for i in range(self.n - 1) if (ra // k**i) % k != (rb // k**i) % k), default=0)
        up = [ra]
        w = ra
        for level in range(L):
            w -= ((w // k**level) % k) * k**level
            up.append((level + 1) * per + w)
        down = [rb]
        w = rb
        for level in range(L - 1):
            w -= ((w // k**level) % k) * k**level
            down.append((level + 1) * per + w)
        return up + down[::-1][:-1] + [rb] if L else [ra]

    monkeypatch.setattr(FatTree, "router_route", by_source)
    network_tables.cache_clear()
    try:
        r = simulator_router_routes_agree(FatTree(2, 3))
    finally:
        network_tables.cache_clear()
    assert not r.holds and r.counterexample["pair"]


def test_valiant_needs_a_class_per_global_hop():
    """Valiant's routes (local, global, local, global, local) are acyclic with three classes, not with two."""
    assert prove_valiant_deadlock_free(3, 2).holds
    r = prove_valiant_deadlock_free(3, 2, classes=2)
    assert not r.holds and {c["class"] for c in r.counterexample["cycle"]} == {1}
    assert prove_valiant_deadlock_free(1, 2, 3).holds  # one router a group: no local hop to chain


@pytest.mark.parametrize("spec", ["dragonfly:p=2,a=4,h=2", "dragonfly:p=1,a=3,h=2,g=5", "dragonfly:p=1,a=1,h=3"])
def test_valiant_routes_are_the_definition(spec):
    top = parse_machine(spec)
    r = valiant_routes_agree(top)
    assert r.holds, r.counterexample
    assert r.details["cases"] == top.n_nodes**2 * top.groups


def test_cdg_from_walks_is_the_cdg_of_every_full_route():
    """``grid_cdg`` builds each per-dimension walk once; the graph, channel and dependency order included,
    is the one every full route (:func:`dor_route`) added in turn gives: every mesh, torus and partly
    wrapped torus with sides up to 9 / 6x6 / 3x3x3 / 2x2x2x2, with and without dateline classes."""
    import itertools

    from topoalloc.proofs.deadlock import _cdg

    for dims in grid_shapes({1: 9, 2: 6, 3: 3, 4: 2}):
        n = 1
        for k in dims:
            n *= k
        for wrap in itertools.product((False, True), repeat=len(dims)):
            for dateline in (False, True):
                full = _cdg(dor_route(dims, wrap, s, d, dateline=dateline) for s in range(n) for d in range(n) if s != d)
                got = grid_cdg(dims, wrap, dateline=dateline)
                assert list(got.nodes) == list(full.nodes) and list(got.edges) == list(full.edges), (dims, wrap, dateline)
