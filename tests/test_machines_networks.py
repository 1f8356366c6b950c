"""SST's center-based allocators, and dragonfly / fat-tree router networks with their placement policies."""

from __future__ import annotations

import numpy as np
import pytest

from topoalloc.alloc import Request
from topoalloc.alloc.center import CenterAllocator
from topoalloc.api import make_allocator, simulate
from topoalloc.errors import InvalidArgument
from topoalloc.topology import Dragonfly, FatTree, parse_machine


# ------------------------------------------------------------- center-based
def test_mc1x1_takes_a_shell_round_the_first_best_center():
    a = CenterAllocator(parse_machine("mesh:4x4"), "mc1x1")
    assert a.allocate(Request(4)).nodes.tolist() == [0, 1, 4, 5]
    # 3x3 block round (1, 1): shell 1 complete, score 8
    b = CenterAllocator(parse_machine("mesh:5x5"), "mc1x1")
    got = b.allocate(Request(9))
    assert got.info["score"] == 8 and got.info["center"] == (1, 1)


def test_nearest_minimises_total_pairwise_distance():
    a = CenterAllocator(parse_machine("mesh:4x4"), "nearest")
    busy = a.allocate(Request(1))  # node 0
    assert busy.nodes.tolist() == [0]
    got = a.allocate(Request(4))
    # from center (2, 0): itself, its two free neighbours, then the first (by node id) of those
    # 2 away: node 3, not the square's node 7, so the greedy set scores 9, not the square's 8
    assert got.info == {"center": (2, 0), "score": 9} and got.nodes.tolist() == [1, 2, 3, 6]


def test_mm_centers_need_not_be_free():
    top = parse_machine("mesh:3x3")
    a = CenterAllocator(top, "mm")
    held = [a.allocate(Request(1)) for _ in range(9)]
    for node in (1, 3, 5, 7):  # free the four edge midpoints; every intersection scores the same
        a.release(next(h for h in held if h.nodes[0] == node))
    got = a.allocate(Request(4))
    # the tie goes to the first intersection, (0, 0), which is busy
    assert got.nodes.tolist() == [1, 3, 5, 7] and got.info["center"] == (0, 0) and a.busy_mask[0]


def test_center_allocators_on_a_torus_use_wrap_distance():
    a = CenterAllocator(parse_machine("torus:8"), "nearest")
    held = [a.allocate(Request(1)) for _ in range(8)]
    for node in (0, 7):
        a.release(held[node])
    got = a.allocate(Request(2))
    assert got.nodes.tolist() == [0, 7] and got.info["score"] == 1


def _grants_under(monkeypatch, name: str, setting: str, values: tuple, machine: str, jobs: int) -> list:
    """(starts, nodes) of the same run once per value of the module constant ``setting`` of the center allocators."""
    import topoalloc.alloc.center as center
    from topoalloc.workload import default_trace_path, read_swf

    w = read_swf(default_trace_path()).take(np.arange(jobs))
    runs = []
    for value in values:
        monkeypatch.setattr(center, setting, value)
        r = simulate(w, machine=machine, allocator=name, scheduler="easy", clean=True, record_allocations=True)
        runs.append((r.start.tolist(), r.allocations[0].tolist()))
    return runs


@pytest.mark.parametrize("name", ["nearest", "mc1x1", "mm"])
def test_long_dimensions_measured_by_arithmetic_agree_with_the_tables(name, monkeypatch):
    """A dimension longer than the table bound is measured by arithmetic: same grants as by the tables."""
    import topoalloc.alloc.center as center

    runs = _grants_under(monkeypatch, name, "_TABLE_MAX", (center._TABLE_MAX, 3), "torus:6x4x5", 200)
    assert runs[0] == runs[1]


@pytest.mark.parametrize("name", ["nearest", "mc1x1", "mm"])
def test_chunk_size_does_not_change_the_grants(name, monkeypatch):
    """Centers are scored in chunks bounded in memory; a chunk of one center gives the same grants."""
    import topoalloc.alloc.center as center

    runs = _grants_under(monkeypatch, name, "_CHUNK_BYTES", (center._CHUNK_BYTES, 1), "mesh:6x5", 120)
    assert runs[0] == runs[1]


def _compiled_center():
    import topoalloc.alloc.center as center

    if center._ccenter is None:
        pytest.skip("the compiled center search (_ccenter) is not built")
    return center


#: machines of every kind the center allocators take: lines, rings (odd, even, of 1 and 2), mixed wraps, 1-D to 4-D
_CENTER_MACHINES = ("mesh:4x4", "mesh:5x3", "mesh:7", "mesh:1", "mesh:3x4x5", "torus:8", "torus:5", "torus:2x3", "torus:1x6",
                    "torus:4x6", "torus:3x3x4", "torus:2x2x2x4", "torus:6x5,wrap=10", "torus:5x4x3,wrap=010")


@pytest.mark.parametrize("machine", _CENTER_MACHINES + ("torus:7x2x3x2", "torus:6x5,wrap=01", "mesh:6x1x3"))
@pytest.mark.parametrize("name,way", [(name, way) for name, ways in (("mc1x1", ("shells", "every")), ("nearest", ("lines", "every")),
                                                                    ("mm", ("lines", "every"))) for way in ("picked",) + ways])
def test_each_compiled_search_answers_as_the_numpy_path(name, way, machine, monkeypatch):
    """Each compiled search (``_ccenter.c``: MC1x1's shells on a summed-area table, Gen-Alg's and MM's counts along
    the lines, or every free processor measured from every center), forced or as the cost estimate picks it, gives
    the numpy path's grant, center and score on random busy maps, from one free processor to all of them, and
    requests from one processor to every free one."""
    center = _compiled_center()
    if way != "picked":
        monkeypatch.setattr(CenterAllocator, "_way", lambda self, centers, free, k: way)
    top = parse_machine(machine)
    rng = np.random.default_rng(sum(map(ord, name + way + machine)))
    for trial in range(25):
        a = CenterAllocator(top, name)
        busy = rng.random(top.n_nodes) < (0.0 if trial == 0 else rng.random())
        if busy.all():
            busy[rng.integers(top.n_nodes)] = False
        a._busy[:] = busy
        free = int((~busy).sum())
        for k in sorted({1, free, int(rng.integers(1, free + 1))}):
            got = []
            for compiled in (True, False):
                monkeypatch.setattr(center, "USE_COMPILED", compiled)
                g = a._allocate(Request(k))
                got.append((g.nodes.tolist(), g.nodes.dtype, g.info))
            assert got[0] == got[1], (trial, k)


def test_the_cheapest_compiled_search_is_picked():
    """The estimate picks MC1x1's table and Gen-Alg's lines on a mesh with many free processors, and measuring each
    free processor when few are free on a large machine (a table of every node for a handful of centers)."""
    mc, ga = (CenterAllocator(parse_machine("mesh:48x24"), v) for v in ("mc1x1", "nearest"))
    assert mc._way(1000, 1000, 64) == "shells" and ga._way(1000, 1000, 64) == "lines"
    assert mc._way(3, 3, 2) == "every" and ga._way(3, 3, 2) == "every"
    assert CenterAllocator(parse_machine("torus:2x2x2x2x2x2x2x2x2"), "mc1x1")._way(512, 512, 8) == "every"  # (2**9 corners)
    # an 8-sided torus of 4s: a table of 9**8 cells (344 MB) costs more than measuring 6,475 free processors
    assert CenterAllocator(parse_machine("torus:" + "x".join(["4"] * 8)), "mc1x1")._way(6475, 6475, 8) == "every"


@pytest.mark.parametrize("name", ["nearest", "mc1x1", "mm"])
def test_a_machine_of_more_sides_than_the_compiled_searches_take_is_measured_point_by_point(name, monkeypatch):
    """17 sides: the shells and lines searches refuse more than 16, so every free processor is measured (the same
    grant as the numpy path), not an error."""
    center = _compiled_center()
    top = parse_machine("torus:" + "x".join(["2"] * 17))
    a = CenterAllocator(top, name)
    assert a._way(10**6, 10**6, 4) == "every"
    busy = np.ones(top.n_nodes, dtype=bool)
    busy[np.random.default_rng(3).choice(top.n_nodes, 24, replace=False)] = False
    a._busy[:] = busy
    got = []
    for compiled in (True, False):
        monkeypatch.setattr(center, "USE_COMPILED", compiled)
        g = a._allocate(Request(5))
        got.append((g.nodes.tolist(), g.info))
    assert got[0] == got[1]


@pytest.mark.parametrize("machine", ["mesh:16x8", "torus:4x4x8", "torus:6x5,wrap=10"])
@pytest.mark.parametrize("name", ["nearest", "mc1x1", "mm"])
def test_the_compiled_search_makes_the_same_run(name, machine, monkeypatch):
    """A whole simulation: the same starts and the same nodes for every job, compiled or not."""
    _compiled_center()
    runs = _grants_under(monkeypatch, name, "USE_COMPILED", (True, False), machine, 300)
    assert runs[0] == runs[1]


@pytest.mark.skipif(not hasattr(__import__("signal"), "setitimer"), reason="needs signal.setitimer")
@pytest.mark.parametrize("search,side", [("best", 160), ("shells", 400), ("lines", 160)])
def test_a_signal_stops_a_long_compiled_search(search, side):
    """Each compiled search asks for signals as it goes (Ctrl-C must stop a placement on a large machine, which takes
    seconds): a handler's exception, raised 20 ms into a search of about half a second or more, comes out of the
    call before the search is over (each writes its set at its end: out is left as it was)."""
    import signal

    _compiled_center()
    from topoalloc.alloc import _ccenter

    class Stop(Exception):
        pass

    def stop(signum, frame):
        raise Stop

    dims, n = np.array([side, side], dtype=np.int64), side * side
    free, strides = np.ones(n, dtype=np.uint8), np.array([1, side])
    fc = np.stack([np.arange(n) % side, np.arange(n) // side], axis=1).astype(np.int64)
    wrap, out = np.zeros(2, dtype=np.uint8), np.full(n // 2, -1, dtype=np.int64)
    call = {"best": lambda: _ccenter.best(fc, fc, dims, wrap, False, n // 2, out),
            "shells": lambda: _ccenter.shells(free, strides, fc, dims, wrap, n // 2, out),
            "lines": lambda: _ccenter.lines(free, strides, fc, dims, wrap, n // 2, out)}[search]
    old = signal.signal(signal.SIGALRM, stop)
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.02)
        with pytest.raises(Stop):
            call()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    assert (out == -1).all()
    call()  # (uninterrupted, the same call writes its set)
    assert (out >= 0).all()


def test_the_compiled_search_refuses_arrays_it_cannot_read():
    _compiled_center()
    from topoalloc.alloc import _ccenter

    c = np.zeros((1, 2), dtype=np.int64)
    dims, wrap, out = np.array([4, 4]), np.zeros(2, dtype=np.uint8), np.empty(1, dtype=np.int64)
    with pytest.raises(ValueError, match="one coordinate per dimension"):
        _ccenter.best(c, np.zeros((3, 1), dtype=np.int64), dims, wrap, False, 1, out)
    with pytest.raises(ValueError, match="0 < k <= 3"):
        _ccenter.best(c, np.zeros((3, 2), dtype=np.int64), dims, wrap, False, 4, np.empty(4, dtype=np.int64))
    with pytest.raises(ValueError, match="outside its side"):
        _ccenter.best(c, np.full((3, 2), 4, dtype=np.int64), dims, wrap, False, 1, out)
    with pytest.raises(ValueError, match="8-byte items"):
        _ccenter.best(c.astype(np.int32), np.zeros((3, 2), dtype=np.int64), dims, wrap, False, 1, out)
    free, strides = np.ones(16, dtype=np.uint8), np.array([1, 4])
    with pytest.raises(ValueError, match="16 nodes, the sides hold 12"):
        _ccenter.shells(free, strides, c, np.array([4, 3]), wrap, 1, out)
    with pytest.raises(ValueError, match="0 < k <= 16"):
        _ccenter.shells(free, strides, c, dims, wrap, 17, np.empty(17, dtype=np.int64))
    with pytest.raises(ValueError, match="outside its side"):
        _ccenter.shells(free, strides, np.full((1, 2), 4, dtype=np.int64), dims, wrap, 1, out)


def test_center_allocators_refuse_machines_of_units():
    with pytest.raises(InvalidArgument):
        make_allocator("mm", "tpu:v4")


@pytest.mark.parametrize("name", ["nearest", "mc1x1", "mm"])
def test_center_allocators_simulate(name):
    from topoalloc.workload import read_swf, default_trace_path

    w = read_swf(default_trace_path())
    w = w.take(np.arange(1500))
    r = simulate(w, machine="mesh:16x8", allocator=name, scheduler="easy", clean=True)
    assert 1000 < r.summary()["jobs"] <= 1500


# ----------------------------------------------------------- router networks
@pytest.mark.parametrize("k,n", [(2, 3), (4, 2), (4, 3), (2, 5)])
def test_k_ary_n_tree_has_full_bisection(k, n):
    t = FatTree(k, n)
    assert t.n_nodes == k**n and t.n_routers == n * k ** (n - 1)
    assert t.bisection() == k**n // 2
    assert all(t.graph.degree(r) <= 2 * k for r in t.graph.nodes)


def test_fat_tree_distance_climbs_to_the_common_ancestor():
    t = FatTree(4, 3)
    assert [t.distance(0, x) for x in (0, 1, 4, 16, 63)] == [0, 2, 4, 6, 6]


def test_dragonfly_shape_and_minimal_routes():
    d = Dragonfly(2, 4, 2)
    assert (d.groups, d.n_routers, d.n_nodes) == (9, 36, 72)
    local = [e for e in d.graph.edges(data=True) if e[2]["kind"] == "local"]
    glob = [e for e in d.graph.edges(data=True) if e[2]["kind"] == "global"]
    assert len(local) == 9 * 6 and len(glob) == 9 * 8 // 2  # one global link between every pair of groups
    assert all(d.graph.degree(r) == 3 + 2 for r in d.graph.nodes)
    for b in range(0, 72, 5):
        path = d.router_route(0, b)
        assert len(path) - 1 <= 3
        assert all(d.graph.has_edge(u, v) for u, v in zip(path, path[1:]))
    v = d.valiant_route(0, 71, 4)
    assert any(r // 4 == 4 for r in v) and all(d.graph.has_edge(x, y) for x, y in zip(v, v[1:]))


def test_specs_round_trip():
    for spec in ("dragonfly:p=2,a=4,h=2", "dragonfly:p=1,a=2,h=2,g=3", "fattree:k=4,n=3"):
        t = parse_machine(spec)
        assert t.spec() == spec and parse_machine(t.spec()) == t


@pytest.mark.parametrize("policy", ["contiguous", "random_nodes", "random_routers", "round_robin"])
def test_policies_place_and_simulate(policy):
    d = parse_machine("dragonfly:p=2,a=4,h=2")
    a = make_allocator(policy, d)
    got = a.allocate(Request(9))
    assert got.size == 9
    groups = set(d.group[d.node_router[got.nodes]].tolist())
    if policy == "contiguous":
        assert got.nodes.tolist() == list(range(9)) and groups == {0, 1}
    if policy == "round_robin":
        assert groups == set(range(9))
    r = simulate(machine="fattree:k=4,n=3", allocator=policy, scheduler="easy", clean=True)  # 64 nodes: --clean drops the wider jobs
    assert r.summary()["jobs"] > 17_000 and r.summary()["mean_pairwise_l1"] >= 2


@pytest.mark.parametrize("spec", ["dragonfly:p=100,a=100,h=100", "fattree:k=64,n=5"])
def test_router_networks_too_big_are_refused_before_they_are_built(spec):
    """One line naming the machine and the memory it would need (the graph of ~10^6 routers is never built)."""
    with pytest.raises(InvalidArgument, match=rf"machine='{spec}'.*router network of .* routers.*needs about"):
        parse_machine(spec)


@pytest.mark.parametrize("spec", ["torus:6x3x2", "torus:5x4x3,wrap=101", "mesh:3x4x5", "torus:2x2x2x6x8"])
def test_pair_sum_is_the_sum_over_pairs(spec):
    """The score of MM and Gen-Alg, Σ over unordered pairs of the L1 distance (the shorter way round a ring),
    computed per dimension (sorted coordinates on a line, a histogram on a ring), against the pairs one by one,
    for rows of several sizes on machines whose rings and lines have different lengths."""
    top = parse_machine(spec)
    a = CenterAllocator(top, "nearest")
    dims, wrap = np.array(top.dims), np.array(top.wrap)
    rng = np.random.default_rng(7)
    for k in (1, 2, 5, 11):
        sel = np.stack([rng.integers(0, dims, size=(k, len(dims))) for _ in range(9)])
        want = []
        for row in sel:
            d = np.abs(row[:, None, :] - row[None, :, :])
            d = np.where(wrap, np.minimum(d, dims - d), d)
            want.append(int(d.sum()) // 2)
        assert a._pair_sum(sel).tolist() == want
