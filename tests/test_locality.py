"""Locality metrics against brute force; their place in the summary; the Cplant queue; the run-time model."""

from __future__ import annotations

import itertools
import json
import random

import networkx as nx
import numpy as np
import pytest

import topoalloc
from topoalloc.alloc.base import Allocation, Request
from topoalloc.curves import make_ordering
from topoalloc.metrics import locality as _locality
from topoalloc.errors import InvalidArgument
from topoalloc.metrics.locality import job_locality, linear_span, ring_span, smallest_cube
from topoalloc.sched.runtime_model import LocalityRuntime
from topoalloc.topology import parse_machine
from topoalloc.workload.core import Workload


def brute_ring_span(ranks, n):
    """Smallest arc of the ring covering every rank, by trying every start."""
    rs = set(ranks)
    best = n
    for start in range(n):
        for length in range(1, n + 1):
            if all((r - start) % n < length for r in rs):
                best = min(best, length)
                break
    return best


@pytest.mark.parametrize("seed", range(30))
def test_span_formulas_match_brute_force(seed):
    rng = random.Random(seed)
    n = rng.randint(1, 30)
    k = rng.randint(1, n)
    ranks = rng.sample(range(n), k)
    assert linear_span(ranks) == max(ranks) - min(ranks) + 1
    assert ring_span(ranks, n) == brute_ring_span(ranks, n)
    assert ring_span(ranks, n) <= linear_span(ranks)


def _brute(top, nodes, ordering):
    n = top.n_nodes
    ranks = [int(ordering.rank_of[v]) for v in nodes] if ordering is not None else list(nodes)
    p = len(nodes)
    out = {"linear_span": linear_span(ranks), "ring_span": brute_ring_span(ranks, n)}
    out["stretch_span"] = out["ring_span"] / p
    coords = [top.coord(v) for v in nodes]
    ext = []
    for i, (D, w) in enumerate(zip(top.dims, top.wrap)):
        vals = {c[i] for c in coords}
        if w:
            ext.append(min(L for L in range(1, D + 1) for s in range(D) if all((v - s) % D < L for v in vals)))
        else:
            ext.append(max(vals) - min(vals) + 1)
    out["bbox_volume"] = float(np.prod(ext))
    out["bbox_sides"] = float(sum(ext))
    out["bbox_cube"] = float(max(ext) ** len(ext))
    g = nx.Graph()
    g.add_nodes_from(nodes)
    g.add_edges_from((a, b) for a, b in itertools.combinations(nodes, 2) if b in top.neighbors(a))
    out["components"] = nx.number_connected_components(g)
    pairs = list(itertools.combinations(nodes, 2))
    if pairs:
        out["pairwise_l1"] = sum(top.distance(a, b) for a, b in pairs) / len(pairs)
        ordered = [(a, b) for a in nodes for b in nodes if a != b]
        out["mean_hops"] = sum(len(top.route(a, b)) - 1 for a, b in ordered) / len(ordered)
        out["hop_bytes"] = float(sum(len(top.route(a, b)) - 1 for a, b in ordered))
    else:
        out["pairwise_l1"] = out["mean_hops"] = float("nan")
        out["hop_bytes"] = 0.0
    return out


@pytest.mark.parametrize("compiled", [True, False], ids=["compiled", "numpy"])
@pytest.mark.parametrize("spec", ["mesh:5x3", "torus:4x4", "torus:2x3x4", "mesh:4x3x2", "torus:6,wrap=1", "mesh:16x8", "torus:3x4,wrap=01"])
def test_per_job_metrics_match_brute_force(spec, compiled):
    """Both paths (the compiled per-job kernel when built, and numpy) against the definitions."""
    top = parse_machine(spec)
    rng = random.Random(spec)
    ordering = make_ordering("snake", top)
    allocs = [sorted(rng.sample(range(top.n_nodes), rng.randint(1, min(12, top.n_nodes)))) for _ in range(25)]
    flat = np.array([v for a in allocs for v in a], dtype=np.int64)
    offsets = np.cumsum([0] + [len(a) for a in allocs])
    per = job_locality(topology=top, allocations=(flat, offsets), ordering=ordering, compiled=compiled)
    for j, nodes in enumerate(allocs):
        want = _brute(top, nodes, ordering)
        for key, value in want.items():
            got = per[key][j]
            if np.isnan(value):
                assert np.isnan(got), (key, nodes)
            else:
                assert got == pytest.approx(value), (key, nodes, got, value)


@pytest.mark.skipif(_locality._cmetrics is None, reason="the compiled metrics are not built")
@pytest.mark.parametrize("spec", ["mesh:7x5", "torus:6x5x4", "torus:24x23x24x2x3x2", "mesh:256x3", "torus:5", "tofu:4x3x2", "bgq:8x4x4x4x2"])
@pytest.mark.parametrize("table", [True, False], ids=["coordinate-table", "dividing"])
def test_compiled_grid_metrics_equal_numpys(spec, table, monkeypatch):
    """Every per-job metric, bit for bit: the compiled kernel (looking coordinates up, or dividing as
    on machines too large for the table) against the numpy path, on batches of random jobs (empty
    ones, single nodes, unsorted node lists, with and without an ordering)."""
    if not table:
        monkeypatch.setattr(_locality, "COORD_TABLE_ENTRIES", 0)
    top = parse_machine(spec)
    n = top.n_nodes
    rng = np.random.default_rng(11)
    allocs = []
    for _ in range(300):
        p = int(rng.integers(0, min(n, 80) + 1))
        nodes = rng.choice(n, p, replace=False)
        allocs.append(np.sort(nodes) if rng.random() < 0.6 else nodes)
    offsets = np.zeros(len(allocs) + 1, np.int64)
    offsets[1:] = np.cumsum([a.size for a in allocs])
    flat = np.concatenate(allocs).astype(np.int64)
    for ordering in (None, make_ordering("snake", top)):
        got = job_locality(topology=top, allocations=(flat, offsets), ordering=ordering)
        want = job_locality(topology=top, allocations=(flat, offsets), ordering=ordering, compiled=False)
        for key in want:
            assert np.array_equal(got[key], want[key], equal_nan=True), key


def test_smallest_cube():
    assert smallest_cube(1, (8, 8, 5)) == 1
    assert smallest_cube(8, (8, 8, 5)) == 8
    assert smallest_cube(9, (8, 8, 5)) == 27
    assert smallest_cube(320, (8, 8, 5)) == 512  # the whole machine: sides 8, 8, 5 in an 8-cube
    assert smallest_cube(30, (16, 8)) == 36
    for p in range(1, 321):
        s3 = round(smallest_cube(p, (8, 8, 5)) ** (1 / 3))
        assert min(s3, 8) * min(s3, 8) * min(s3, 5) >= p


def test_summary_has_locality_on_a_topology_and_not_on_flat():
    w = Workload(job_id=[1, 2, 3], submit=[0, 0, 1], run=[10, 10, 10], size=[2, 3, 1], requested_time=[20, 20, 20])
    r = topoalloc.simulate(w, machine="mesh:4x4", allocator="best_fit:curve=hilbert", scheduler="fcfs")
    s = r.summary()
    assert "mean_pairwise_l1" in s and "locality" in s
    json.dumps(s)
    flat = topoalloc.simulate(w, machine="flat:16", allocator="flat", scheduler="fcfs").summary()
    assert "mean_pairwise_l1" not in flat


def test_cplant_queue_order():
    from topoalloc.sched.fcfs import FCFS

    s = FCFS(order="cplant")
    key = s.queue_key([0, 1, 2, 3], [50, 10, 10, 5], [4, 2, 4, 2])
    assert sorted(range(4), key=key) == [3, 1, 2, 0]  # size, then requested time
    with pytest.raises(InvalidArgument, match="order"):
        FCFS(order="cplant-desc")


def test_cplant_queue_order_in_simulation():
    from topoalloc.workload.synthetic import Uniform, poisson_workload

    w = poisson_workload(80, load=1.5, sizes=Uniform(1, 16), machine_nodes=16, mean_runtime=50, estimate_factor=1.5, seed=2)
    r = topoalloc.simulate(w, machine="mesh:4x4", allocator="first_fit:curve=snake", scheduler="fcfs:order=cplant")
    assert r.scheduler == "fcfs:order=cplant"
    # strict FCFS in Cplant order: whenever a job starts, no waiting job that sorts before it is still queued
    # after the start instant unless it had not yet arrived
    est = r.estimate
    for j in range(len(w)):
        for k in range(len(w)):
            if (w.size[k], est[k], w.submit[k], k) < (w.size[j], est[j], w.submit[j], j) and w.submit[k] <= r.start[j]:
                assert r.start[k] <= r.start[j]


def test_runtime_model_off_by_default_and_named():
    from topoalloc.workload.synthetic import Uniform, poisson_workload

    w = poisson_workload(60, load=1.0, sizes=Uniform(1, 16), machine_nodes=16, mean_runtime=50, estimate_factor=1.5, seed=4)
    base = topoalloc.simulate(w, machine="mesh:4x4", allocator="sorted_free_list:curve=row_major", scheduler="easy")
    assert base.actual_run is None
    assert np.allclose(base.end - base.start, w.run)
    r = topoalloc.simulate(w, machine="mesh:4x4", allocator="sorted_free_list:curve=row_major", scheduler="easy", runtime_model="locality:alpha=0.2")
    assert r.params["runtime_model"] == "locality:alpha=0.2"
    assert (r.actual_run >= w.run - 1e-9).all() and (r.actual_run > w.run).any()
    assert np.allclose(r.end - r.start, r.actual_run)
    from topoalloc.testing import check_schedule

    check_schedule(r)
    with pytest.raises(InvalidArgument, match="alpha"):
        topoalloc.simulate(w, machine="mesh:4x4", allocator="flat", runtime_model="locality:alpha=-1")
    with pytest.raises(InvalidArgument, match="metric"):
        topoalloc.simulate(w, machine="mesh:4x4", allocator="flat", runtime_model="locality:metric=volume")


def test_runtime_model_formula():
    top = parse_machine("mesh:4x4")
    m = LocalityRuntime(top, alpha=0.5)
    assert m(0, 100.0, Allocation([5], Request(1), 1)) == 100.0
    assert m(0, 100.0, Allocation([0, 1], Request(2), 2)) == 100.0  # neighbours: avg L1 1 → no stretch
    assert m(0, 100.0, Allocation([0, 15], Request(2), 3)) == pytest.approx(100.0 * (1 + 0.5 * 5))
    c = LocalityRuntime(top, alpha=1.0, metric="components")
    assert c(0, 10.0, Allocation([0, 2, 8], Request(3), 4)) == pytest.approx(30.0)


def test_component_labels_numpy_path_equals_scipy_path():
    pytest.importorskip("scipy")
    from topoalloc.metrics.locality import _component_labels

    rng = np.random.default_rng(0)
    for k in (1, 5, 50, 400):
        m = rng.integers(0, 2 * k)
        a = rng.integers(0, k, m)
        b = rng.integers(0, k, m)
        assert np.array_equal(_component_labels(k, a, b, use_scipy=True), _component_labels(k, a, b, use_scipy=False))


from topoalloc.topology.base import Topology  # noqa: E402


class _Ring(Topology):
    """A topology that is not a grid: a ring of n nodes with a chord 0–n/2 (no coordinates)."""

    kind = "ringchord"

    def __init__(self, n):
        self._n = n
        g = nx.cycle_graph(n)
        g.add_edge(0, n // 2)
        self._g = g

    @property
    def n_nodes(self):
        return self._n

    def key(self):
        return (self._n,)

    def spec(self):
        return f"ringchord:{self._n}"

    def neighbors(self, node):
        return sorted(self._g[node])

    def distance(self, a, b):
        return nx.shortest_path_length(self._g, a, b)

    def route(self, a, b):
        return nx.shortest_path(self._g, a, b)


def test_metrics_on_a_topology_without_coordinates():
    top = _Ring(12)
    rng = random.Random(3)
    allocs = [sorted(rng.sample(range(12), rng.randint(1, 7))) for _ in range(20)]
    flat = np.array([v for a in allocs for v in a], dtype=np.int64)
    offsets = np.cumsum([0] + [len(a) for a in allocs])
    per = job_locality(topology=top, allocations=(flat, offsets))
    for j, nodes in enumerate(allocs):
        g = top._g.subgraph(nodes)
        assert per["components"][j] == nx.number_connected_components(g)
        pairs = list(itertools.combinations(nodes, 2))
        if pairs:
            assert per["pairwise_l1"][j] == pytest.approx(sum(top.distance(a, b) for a, b in pairs) / len(pairs))
        assert np.isnan(per["bbox_volume"][j])
    from topoalloc.alloc.linear import LinearAllocator

    a = LinearAllocator(top, strategy="best_fit")  # default curve off a grid: node-id order
    assert a.ordering.name == "row_major"
    assert LinearAllocator(_Ring(16), strategy="first_fit", curve="gray").ordering.name == "gray"


@pytest.mark.parametrize("spec", ["mesh:5x3", "torus:4x4", "torus:2x3x4", "torus:2x2,wrap=11", "mesh:7", "torus:3x4,wrap=01", "hypercube:5", "mesh:4x1x3"])
def test_compiled_components_equal_the_numpy_path(spec):
    """Union-find in C against label propagation in numpy, on batches where jobs share nodes (jobs that ran
    at different times), with empty jobs, and across the stamps' reset when tokens would overflow."""
    from topoalloc.metrics import locality as L

    if L._cmetrics is None:
        pytest.skip("the compiled components are not built")
    top = parse_machine(spec)
    rng = random.Random(spec)
    for trial in range(30):
        allocs = [sorted(rng.sample(range(top.n_nodes), rng.randint(0, top.n_nodes))) for _ in range(rng.randint(1, 12))]
        flat = np.array([v for a in allocs for v in a], dtype=np.int64)
        seg = np.repeat(np.arange(len(allocs)), [len(a) for a in allocs])
        if trial == 5:  # the next tokens would overflow: the stamps start afresh
            L._WORK.setdefault(top.n_nodes, (np.zeros(top.n_nodes, np.int32), np.zeros(top.n_nodes, np.int32), np.zeros(1, np.int64)))[2][0] = 2**31 - 3
        got = L._components(flat, seg, len(allocs), top)
        want = L._components(flat, seg, len(allocs), top, compiled=False)
        assert got.tolist() == want.tolist(), allocs


@pytest.mark.skipif(_locality._cmetrics is None, reason="the compiled metrics are not built")
@pytest.mark.parametrize("spec", ["mesh:7x5", "torus:6x5", "torus:2x3x4", "torus:2x2,wrap=11", "mesh:7", "torus:5", "torus:3x4,wrap=01", "torus:3x4,wrap=10", "mesh:1x6x3", "mesh:4x1x3", "mesh:16x16"])
def test_grid_components_by_runs_match_the_graph(spec):
    """The components ``job_locality`` measures with the rest on a grid (``grid_stats``: union-find over runs
    of consecutive ids for a sorted list, over nodes otherwise) against networkx on the machine's own
    graph: boxes, rows and columns round the wrap links, intervals of a curve (many runs, one piece), random
    sets sorted and not, single nodes and empty jobs, and across the stamps' reset when tokens would
    overflow."""
    top = parse_machine(spec)
    n = top.n_nodes
    g = nx.Graph()
    g.add_nodes_from(range(n))
    g.add_edges_from((v, w) for v in range(n) for w in top.neighbors(v))
    rng = random.Random(spec)
    curve = make_ordering("hilbert" if len(top.dims) == 2 else "snake", top)
    allocs: list[list[int]] = [[], [rng.randrange(n)]]
    for _ in range(120):
        kind = rng.random()
        if kind < 0.25:  # a box, its sides possibly round the wrap links
            lo = [rng.randrange(D) for D in top.dims]
            side = [rng.randint(1, D) for D in top.dims]
            cells = itertools.product(*[[(a + t) % D for t in range(s)] for a, s, D in zip(lo, side, top.dims)])
            allocs.append(sorted({sum(c * st for c, st in zip(cell, top.strides)) for cell in cells}))
        elif kind < 0.5:  # an interval of a curve
            a = rng.randrange(n)
            allocs.append(sorted(int(curve.node_at_rank[r]) for r in range(a, min(n, a + rng.randint(1, 3 * max(top.dims))))))
        elif kind < 0.8:
            allocs.append(sorted(rng.sample(range(n), rng.randint(1, n))))
        else:  # unsorted: the search over nodes
            allocs.append(rng.sample(range(n), rng.randint(2, n)))
    flat = np.array([v for a in allocs for v in a], dtype=np.int64)
    offsets = np.cumsum([0] + [len(a) for a in allocs]).astype(np.int64)
    _locality._work(n)[2][0] = 2**31 - 60  # the tokens run out within the batch: the stamps start afresh
    got = job_locality(topology=top, allocations=(flat, offsets))["components"]
    for j, nodes in enumerate(allocs):
        assert got[j] == nx.number_connected_components(g.subgraph(nodes)), (j, nodes)


def test_compiled_components_refuse_bad_arguments():
    from topoalloc.metrics import locality as L

    if L._cmetrics is None:
        pytest.skip("the compiled components are not built")
    stamp, index, state, out = np.zeros(4, np.int32), np.zeros(4, np.int32), np.zeros(1, np.int64), np.zeros(1, np.int64)
    with pytest.raises(ValueError, match="out of range"):
        L._cmetrics.components(np.array([5], np.int64), np.array([0, 1], np.int64), (4,), (1,), (0,), stamp, index, state, out)
    with pytest.raises(ValueError, match="inconsistent"):
        L._cmetrics.components(np.array([1], np.int64), np.array([0, 2], np.int64), (4,), (1,), (0,), stamp, index, state, out)
    with pytest.raises(ValueError, match="differ in length"):
        L._cmetrics.components(np.array([1], np.int64), np.array([0, 1], np.int64), (4,), (1, 2), (0,), stamp, index, state, out)


def test_hypercube_metrics_match_brute_force():
    """Pairwise hops (a popcount) and components on a hypercube, against brute force, for random node sets
    and whole subcubes (counted as one piece without the graph search) of every dimension."""
    top = parse_machine("hypercube:6")
    rng = random.Random(6)
    allocs = [sorted(rng.sample(range(64), rng.randint(1, 20))) for _ in range(40)]
    for _ in range(20):  # whole subcubes: fixed bits anywhere, k varying bits
        k = rng.randint(0, 6)
        free_bits = rng.sample(range(6), k)
        base = rng.randrange(64) & ~sum(1 << b for b in free_bits)
        allocs.append(sorted(base | sum(((i >> t) & 1) << b for t, b in enumerate(free_bits)) for i in range(1 << k)))
    allocs.append([0, 3])  # two nodes, two bits apart: 2 pieces, not a subcube although 2 = 2^1
    flat = np.array([v for a in allocs for v in a], dtype=np.int64)
    offsets = np.cumsum([0] + [len(a) for a in allocs])
    per = job_locality(topology=top, allocations=(flat, offsets))
    for j, nodes in enumerate(allocs):
        g = nx.Graph()
        g.add_nodes_from(nodes)
        g.add_edges_from((a, b) for a, b in itertools.combinations(nodes, 2) if bin(a ^ b).count("1") == 1)
        assert per["components"][j] == nx.number_connected_components(g), nodes
        pairs = list(itertools.combinations(nodes, 2))
        if pairs:
            assert per["pairwise_l1"][j] == pytest.approx(sum(bin(a ^ b).count("1") for a, b in pairs) / len(pairs))


@pytest.mark.skipif(_locality._cmetrics is None, reason="the compiled metrics are not built")
@pytest.mark.parametrize("dim", [1, 3, 6, 10])
@pytest.mark.parametrize("curve", [None, "gray"])
def test_compiled_hypercube_metrics_equal_numpys(dim, curve):
    """``_cmetrics.cube_stats`` (spans; bit counts over runs of consecutive ids) against the numpy path,
    every metric bit for bit: random sets, runs, whole subcubes, empty jobs; unsorted input falls back."""
    top = parse_machine(f"hypercube:{dim}")
    n = top.n_nodes
    ordering = None if curve is None else make_ordering(curve, top)
    rng = random.Random(f"{dim}/{curve}")
    allocs: list[list[int]] = [[]]
    for _ in range(60):
        kind = rng.random()
        if kind < 0.4:
            allocs.append(sorted(rng.sample(range(n), rng.randint(1, min(n, 40)))))
        elif kind < 0.7:  # a run of consecutive ids (a buddy block when aligned)
            a = rng.randrange(n)
            allocs.append(list(range(a, min(n, a + rng.randint(1, 50)))))
        else:  # a whole subcube, fixed bits anywhere
            k = rng.randint(0, dim)
            free_bits = rng.sample(range(dim), k)
            base = rng.randrange(n) & ~sum(1 << b for b in free_bits)
            allocs.append(sorted(base | sum(((i >> t) & 1) << b for t, b in enumerate(free_bits)) for i in range(1 << k)))
    flat = np.array([v for a in allocs for v in a], dtype=np.int64)
    offsets = np.cumsum([0] + [len(a) for a in allocs]).astype(np.int64)
    ranks = flat if ordering is None else ordering.rank_of[flat]
    assert _locality._cube_stats_compiled(top, flat, offsets, ranks) is not None
    got = job_locality(topology=top, allocations=(flat, offsets), ordering=ordering)
    want = job_locality(topology=top, allocations=(flat, offsets), ordering=ordering, compiled=False)
    for key in want:
        assert np.array_equal(got[key], want[key], equal_nan=True), key
    # a job given unsorted: the compiled call declines and the numpy path answers, the same numbers
    shuffled = [a[::-1] for a in allocs]
    flat2 = np.array([v for a in shuffled for v in a], dtype=np.int64)
    assert dim == 1 or _locality._cube_stats_compiled(top, flat2, offsets, flat2 if ordering is None else ordering.rank_of[flat2]) is None
    got2 = job_locality(topology=top, allocations=(flat2, offsets), ordering=ordering)
    for key in want:
        assert np.array_equal(got2[key], want[key], equal_nan=True), key


def test_compiled_components_are_safe_to_share_between_threads():
    """Threads measuring jobs on machines of one size share the work arrays; the last token lives with them
    and is taken inside the compiled call, so no two jobs ever share a token."""
    import threading

    from topoalloc.metrics import locality as L

    if L._cmetrics is None:
        pytest.skip("the compiled components are not built")
    top = parse_machine("torus:6x6")
    rng = random.Random(11)
    batches = []
    for _ in range(40):
        allocs = [sorted(rng.sample(range(36), rng.randint(1, 20))) for _ in range(8)]
        flat = np.array([v for a in allocs for v in a], dtype=np.int64)
        seg = np.repeat(np.arange(len(allocs)), [len(a) for a in allocs])
        batches.append((flat, seg, len(allocs), L._components(flat, seg, len(allocs), top, compiled=False).tolist()))
    bad = []

    def worker():
        for _ in range(25):
            for flat, seg, m, want in batches:
                if L._components(flat, seg, m, top).tolist() != want:
                    bad.append(want)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not bad


def test_stream_remembers_read_only_arrays_only_and_sums_the_same(monkeypatch):
    """A read-only node array measured before is looked up (allocators hand out one immutable array per
    box); the aggregates are bit for bit those of measuring every job, batch boundaries included; a
    writable array is measured afresh each time (it may have changed)."""
    from topoalloc.metrics.locality import LocalityStream

    top = parse_machine("torus:6x5x4")
    rng = np.random.default_rng(5)
    boxes = []
    for _ in range(6):
        a = np.sort(rng.choice(top.n_nodes, int(rng.integers(1, 40)), replace=False)).astype(np.int64)
        a.flags.writeable = False
        boxes.append(a)
    jobs = [(boxes[int(rng.integers(len(boxes)))], float(rng.integers(1, 100))) for _ in range(400)]
    calls = []
    real = _locality.job_locality

    def counting(**kw):
        calls.append(len(kw["allocations"][1]) - 1)
        return real(**kw)

    monkeypatch.setattr(_locality, "job_locality", counting)
    memo = LocalityStream(top, batch_nodes=300)
    for nodes, run in jobs:
        memo.add(nodes, run)
    measured_with_memo = sum(calls)
    calls.clear()
    plain = LocalityStream(top, batch_nodes=300)
    for nodes, run in jobs:
        plain.add(nodes.copy(), run)  # writable copies: every job measured
    assert json.dumps(memo.summary(), sort_keys=True) == json.dumps(plain.summary(), sort_keys=True)
    assert 0 < measured_with_memo <= len(boxes) and sum(calls) == len(jobs)
    # a writable array changed between two jobs is measured each time
    w = np.array([0, 1, 2], dtype=np.int64)
    s = LocalityStream(top, batch_nodes=1)
    s.add(w, 1.0)
    w[:] = [0, 30, 60]
    s.add(w, 1.0)
    t = LocalityStream(top, batch_nodes=1)
    t.add(np.array([0, 1, 2], dtype=np.int64), 1.0)
    t.add(np.array([0, 30, 60], dtype=np.int64), 1.0)
    assert s.summary() == t.summary()


@pytest.mark.parametrize("machine", ["mesh:12x10", "hypercube:7", "torus:6x4x3"])
def test_stream_sums_do_not_depend_on_the_batches(monkeypatch, machine):
    """The stream's aggregates are summed over runs of jobs fixed by FOLD_NODES and FOLD_JOBS, whatever batches the
    jobs were measured in: the summary is the same to the last bit for any batch sizes (their defaults differ with
    and without the compiled metrics), asked at the end or mid-run."""
    from topoalloc.metrics.locality import LocalityStream

    top = parse_machine(machine)
    rng = np.random.default_rng(7)
    jobs = [(np.sort(rng.choice(top.n_nodes, size=int(rng.integers(1, 40)), replace=False)), float(rng.choice([0.0, 1.5, 3e6, 7.25, 1e-3])))
            for _ in range(700)]
    monkeypatch.setattr(LocalityStream, "FOLD_NODES", 500)
    monkeypatch.setattr(LocalityStream, "FOLD_JOBS", 37)
    seen = set()
    for batch_nodes, batch_jobs in [(1, 1), (7, 3), (300, 1 << 14), (1 << 20, 11), (1 << 20, 1 << 14)]:
        s = LocalityStream(top, batch_nodes=batch_nodes, batch_jobs=batch_jobs)
        for k, (nodes, run) in enumerate(jobs):
            s.add(nodes, run)
            if k == 350:
                s.summary()  # (mid-run: changes no later sum)
        seen.add(repr(s.summary()))
    assert len(seen) == 1
    # unsummed jobs are carried: never more than a run of them
    assert s._carry_nodes < 500 and s._carry_jobs < 37


@pytest.mark.parametrize("batch", [(1, 1), (7, 3), (300, 1 << 14), (1 << 20, 11)])
def test_stream_runs_end_where_their_nodes_or_jobs_reach_the_bound(monkeypatch, batch):
    """A run of the stream's sums ends right after the job that brings its nodes to FOLD_NODES or its jobs to
    FOLD_JOBS, counted from the run's first job whatever batch it came in: the runs folded are those of a plain
    walk over the jobs (jobs of 1 to 120 nodes, some alone nearly at the bound)."""
    from topoalloc.metrics.locality import LocalityStream

    top = parse_machine("mesh:12x10")
    rng = np.random.default_rng(3)
    jobs = [np.sort(rng.choice(top.n_nodes, size=int(rng.choice([1, 2, 5, 40, 99, 120])), replace=False)) for _ in range(500)]
    monkeypatch.setattr(LocalityStream, "FOLD_NODES", 250)
    monkeypatch.setattr(LocalityStream, "FOLD_JOBS", 9)
    want, nodes, count = [], 0, 0
    for a in jobs:
        nodes, count = nodes + a.size, count + 1
        if nodes >= 250 or count >= 9:
            want.append((count, nodes))
            nodes = count = 0
    folded = []
    real = LocalityStream._sum_carry

    def spy(self, aggs):
        sizes = np.concatenate([p[1] for p in self._carry])
        folded.append((int(sizes.size), int(sizes.sum())))
        return real(self, aggs)

    monkeypatch.setattr(LocalityStream, "_sum_carry", spy)
    s = LocalityStream(top, batch_nodes=batch[0], batch_jobs=batch[1])
    for a in jobs:
        s.add(a, 1.0)
    s.flush()
    assert folded == want
    assert (s._carry_jobs, s._carry_nodes) == (count, nodes)


@pytest.mark.parametrize("machine", ["mesh:12x10", "hypercube:7", "torus:6x4x3", "fattree:k=4,n=3"])
@pytest.mark.parametrize("fold", [(500, 37), (1 << 16, 1 << 14)])
def test_stream_aggregates_are_those_of_the_whole_table(monkeypatch, machine, fold):
    """Every aggregate the stream folds run by run (mean, max, mean per processor, run-time-weighted mean,
    sum × run time, and the mean pairwise L1 distance) is, up to rounding, the same aggregate taken over the
    table of every job's metrics at once; single-node jobs (no pairwise distance) and zero run times included."""
    from topoalloc.metrics.locality import JOB_METRICS, LocalityStream, job_locality

    top = parse_machine(machine)
    rng = np.random.default_rng(11)
    jobs = [np.sort(rng.choice(top.n_nodes, size=int(rng.integers(1, 30)), replace=False)).astype(np.int64) for _ in range(600)]
    run = rng.choice([0.0, 1.5, 3e6, 7.25, 1e-3, 60.0], size=len(jobs))
    monkeypatch.setattr(LocalityStream, "FOLD_NODES", fold[0])
    monkeypatch.setattr(LocalityStream, "FOLD_JOBS", fold[1])
    s = LocalityStream(top, batch_nodes=257, batch_jobs=29)
    for nodes, t in zip(jobs, run):
        s.add(nodes, float(t))
    got = s.summary()
    sizes = np.array([a.size for a in jobs])
    per = job_locality(topology=top, allocations=(np.concatenate(jobs), np.concatenate([[0], np.cumsum(sizes)])))
    for name in JOB_METRICS:
        v = per[name]
        ok = np.isfinite(v)
        agg = got["locality"][name]
        if not ok.any():
            assert all(np.isnan(x) for x in agg.values()), name
            continue
        v, sz, t = v[ok], sizes[ok].astype(float), run[ok]
        want = {"mean": v.mean(), "max": v.max(), "mean_per_proc": (v / sz).mean(), "sum_x_runtime": (v * t).sum(),
                "runtime_weighted_mean": (v * t).sum() / t.sum() if t.sum() > 0 else v.mean()}
        for key, x in want.items():
            assert agg[key] == pytest.approx(float(x), rel=1e-11, abs=1e-12), (name, key)
    l1 = per["pairwise_l1"]
    assert got["mean_pairwise_l1"] == pytest.approx(float(l1[np.isfinite(l1)].mean()), rel=1e-12)


@pytest.mark.skipif(_locality._cmetrics is None, reason="the compiled metrics are not built")
@pytest.mark.parametrize("machine", ["mesh:12x10", "hypercube:7", "torus:6x4x3"])
def test_summaries_are_the_same_with_and_without_the_compiled_metrics(monkeypatch, machine):
    """A whole simulation's JSON is the same, to the last bit, with the compiled metrics (batches of 1 Mi nodes)
    and without them (64 Ki): the stream's sums do not follow its batches."""
    kw = dict(machine=machine, allocator="best_fit" if not machine.startswith("hypercube") else "buddy", scheduler="easy", clean=True)
    a = topoalloc.simulate(None, **kw)
    monkeypatch.setattr(_locality, "_cmetrics", None)
    b = topoalloc.simulate(None, **kw)
    assert a.to_json() == b.to_json()
