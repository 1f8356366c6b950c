"""The linear allocators' compiled replay (``_clinear.c``) against :class:`LinearAllocator`, the reference.

After the compiled kernel has fixed a schedule, a run that wants placements (locality metrics, recorded
nodes) replays the kernel's starts and ends through the allocator.  For the linear allocators that replay
is compiled: the same rules, state for state (free intervals after every event) and grant for grant.
"""

from __future__ import annotations

import random

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import topoalloc
from topoalloc.alloc import Request
from topoalloc.alloc.linear import STRATEGIES, LinearAllocator
from topoalloc.curves import Ordering, make_ordering
from topoalloc.metrics import locality as _locality
from topoalloc.metrics.locality import LocalityStream, job_locality
from topoalloc.sched import fastpath
from topoalloc.topology import parse_machine

from .test_fastpath import assert_same_placements, needs_kernel, workloads

try:
    from topoalloc.alloc.linear import _clinear
except ImportError:  # pragma: no cover - built wherever a C compiler is
    _clinear = None

needs_clinear = pytest.mark.skipif(_clinear is None, reason="the compiled linear replay was not built")

#: machines and curves: identity orders (ranks are node ids) and permuted ones, lines, rings of odd sizes
MACHINES = [("mesh:4x4", "hilbert"), ("mesh:10", "row_major"), ("torus:3x5", "snake"), ("torus:4x2x2", "zorder"),
            ("hypercube:4", "gray"), ("mesh:7x3", "shuffled")]


def _allocator(machine: str, curve: str, strategy: str, span: str) -> LinearAllocator:
    top = parse_machine(machine)
    if curve == "shuffled":  # an ordering file's arbitrary permutation
        perm = list(range(top.n_nodes))
        random.Random(machine).shuffle(perm)
        curve = Ordering(perm, name="shuffled")
    return LinearAllocator(top, strategy=strategy, curve=curve, span=span)


def _state(a: LinearAllocator, jobs: int):
    s = fastpath._linear_state(a, jobs)
    assert s is not None
    return s


@needs_clinear
@settings(max_examples=300, deadline=None)
@given(data=st.data(), case=st.sampled_from(MACHINES), strategy=st.sampled_from(STRATEGIES), span=st.sampled_from(["linear", "ring"]))
def test_compiled_state_equals_the_allocator_event_by_event(data, case, strategy, span):
    """Random starts and ends: every ended job's nodes equal the allocator's grant, and the free intervals
    equal the allocator's after every event (fallback windows, wrapping grants and merges included)."""
    a = _allocator(*case, strategy, span)
    n = a.n_nodes
    steps = data.draw(st.integers(1, 60))
    sizes: list[int] = []
    log: list[int] = []
    held: dict[int, object] = {}
    for _ in range(steps):
        if held and (a.free_count == 0 or data.draw(st.booleans())):
            j = data.draw(st.sampled_from(sorted(held)))
            a.release(held.pop(j))
            log.append(-1 - j)
        else:
            j = len(sizes)
            sizes.append(data.draw(st.integers(1, a.free_count)))
            log.append(j)
            held[j] = a.allocate(Request(sizes[j]))
    s = _state(_allocator(*case, strategy, span), len(sizes))
    size_arr = np.array(sizes, dtype=np.int64)
    out_nodes = np.empty(n, dtype=np.int64)
    out_jobs, out_ids = np.empty(1, dtype=np.int64), np.empty(1, dtype=np.int64)
    # replay the same log event by event on a fresh allocator and the compiled state
    ref = _allocator(*case, strategy, span)
    held_ref: dict[int, object] = {}
    for i, e in enumerate(log):
        pos, nj, nn = s.replay(np.array(log[: i + 1], dtype=np.int64), i, size_arr, out_nodes, out_jobs, out_ids, 1, 1)
        assert pos == i + 1
        if e >= 0:
            held_ref[e] = ref.allocate(Request(sizes[e]))
            assert nj == 0
        else:
            j = -1 - e
            x = held_ref.pop(j)
            assert (nj, int(out_jobs[0]), int(out_ids[0])) == (1, j, -1)  # (no memo: every job's nodes written)
            assert out_nodes[:nn].tolist() == x.nodes.tolist(), (strategy, span, case, i)
            ref.release(x)
        if strategy != "sorted_free_list":
            assert s.intervals() == ref.free_intervals(), (strategy, span, case, i)


@needs_clinear
@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("span", ["linear", "ring"])
def test_compiled_state_on_long_histories_with_fallbacks(strategy, span):
    """Five hundred events of small requests on 40 and 36 nodes (many intervals, many min-span fallbacks):
    the nodes of every job equal the allocator's, from one replay call with batches of a few jobs."""
    for machine, curve in (("mesh:40", "row_major"), ("mesh:6x6", "hilbert")):
        a = _allocator(machine, curve, strategy, span)
        rng = random.Random(f"{machine}/{strategy}/{span}")
        sizes, log, want, held = [], [], {}, {}
        fallbacks = 0
        for _ in range(500):
            if held and (rng.random() < 0.5 or a.free_count < 2):
                j = rng.choice(sorted(held))
                x = held.pop(j)
                want[j] = x.nodes.tolist()
                a.release(x)
                log.append(-1 - j)
            else:
                j = len(sizes)
                sizes.append(rng.randint(1, min(6, a.free_count)))
                x = a.allocate(Request(sizes[j]))
                fallbacks += x.info.get("contiguous") is False
                held[j] = x
                log.append(j)
        fresh = _allocator(machine, curve, strategy, span)
        s = _state(fresh, len(sizes))
        log_arr, size_arr = np.array(log, dtype=np.int64), np.array(sizes, dtype=np.int64)
        out_nodes, out_jobs, out_ids = np.empty(10 + fresh.n_nodes, dtype=np.int64), np.empty(3, dtype=np.int64), np.empty(3, dtype=np.int64)
        pos, got = 0, {}
        while pos < log_arr.size:
            pos, nj, nn = s.replay(log_arr, pos, size_arr, out_nodes, out_jobs, out_ids, 11, 3)
            o = 0
            for j in out_jobs[:nj].tolist():
                got[j] = out_nodes[o : o + sizes[j]].tolist()
                o += sizes[j]
            assert o == nn
        assert got == want
        assert strategy == "sorted_free_list" or fallbacks > 0


@needs_clinear
def test_compiled_state_refuses_what_it_cannot_replay():
    a = _allocator("mesh:4x4", "hilbert", "best_fit", "linear")
    s = _state(a, 2)
    sizes = np.array([10, 10], dtype=np.int64)
    out_nodes, out_jobs, out_ids = np.empty(40, dtype=np.int64), np.empty(4, dtype=np.int64), np.empty(4, dtype=np.int64)
    with pytest.raises(RuntimeError, match="cannot grant"):  # 20 nodes on 16
        s.replay(np.array([0, 1], dtype=np.int64), 0, sizes, out_nodes, out_jobs, out_ids, 1, 1)
    s = _state(a, 2)
    with pytest.raises(RuntimeError, match="holds nothing"):
        s.replay(np.array([-1], dtype=np.int64), 0, sizes, out_nodes, out_jobs, out_ids, 1, 1)
    with pytest.raises(RuntimeError, match="out of range"):
        s.replay(np.array([5], dtype=np.int64), 0, sizes, out_nodes, out_jobs, out_ids, 1, 1)
    with pytest.raises(RuntimeError, match="buffers"):
        s.replay(np.array([0], dtype=np.int64), 0, sizes, np.empty(3, dtype=np.int64), out_jobs, out_ids, 1, 1)
    with pytest.raises(RuntimeError, match="buffers"):
        s.replay(np.array([0], dtype=np.int64), 0, sizes, out_nodes, out_jobs, np.empty(0, dtype=np.int64), 1, 1)
    with pytest.raises(ValueError, match="memo"):
        _clinear.State(16, 1, False, None, 2, -1)
    with pytest.raises(ValueError, match="strategy"):
        _clinear.State(16, 7, False, None, 2)
    with pytest.raises(ValueError, match="node_at_rank"):
        _clinear.State(16, 1, False, np.arange(15, dtype=np.int64), 2)
    with pytest.raises(ValueError, match="out of range"):
        _clinear.State(4, 1, False, np.array([0, 1, 2, 9], dtype=np.int64), 2)


@needs_clinear
def test_only_a_fresh_linear_allocator_of_the_exact_type_is_replayed_in_c():
    top = parse_machine("mesh:4x4")
    a = LinearAllocator(top, strategy="first_fit")
    assert fastpath._linear_state(a, 3) is not None
    x = a.allocate(Request(2))
    assert fastpath._linear_state(a, 3) is None  # holds nodes: the replay starts from an empty machine
    a.release(x)
    assert fastpath._linear_state(a, 3) is not None

    class Mine(LinearAllocator):
        pass

    assert fastpath._linear_state(Mine(top, strategy="first_fit"), 3) is None  # a subclass may place differently
    assert fastpath._linear_state(topoalloc.make_allocator("mbs", top), 3) is None


@needs_kernel
@needs_clinear
@settings(max_examples=120, deadline=None)
@given(data=st.data(), sched=st.sampled_from(["fcfs", "easy", "conservative:order=sjf", "easy:order=cplant"]),
       case=st.sampled_from([("mesh:4x4", "sorted_free_list:curve=hilbert"), ("torus:4x4", "best_fit:span=ring"),
                             ("mesh:8x2", "sum_of_squares:curve=snake,span=ring"), ("torus:4x2x2", "first_fit:curve=zorder,span=ring"),
                             ("hypercube:4", "best_fit")]),
       record=st.booleans())
def test_kernel_with_compiled_linear_replay_equals_general_engine(data, sched, case, record):
    """The whole run, with batches of a few nodes and jobs so that the stream measures many batches: the
    compiled replay hands them over as the general engine's job-by-job adds form them."""
    init = LocalityStream.__init__
    nodes, jobs = data.draw(st.integers(1, 40)), data.draw(st.integers(1, 9))
    calls = []
    real = fastpath._replay_linear
    w = data.draw(workloads(16))
    machine, allocator = case
    kw = dict(machine=machine, scheduler=sched, allocator=allocator, record_allocations=record, locality=True)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(LocalityStream, "__init__", lambda self, top, ordering=None, **_: init(self, top, ordering, batch_nodes=nodes, batch_jobs=jobs))
        mp.setattr(fastpath, "_replay_linear", lambda *a: calls.append(1) or real(*a))
        a = topoalloc.simulate(w, engine="compiled", **kw)
        b = topoalloc.simulate(w, engine="python", **kw)
    assert_same_placements(a, b)
    assert calls  # (the compiled replay ran)


@needs_kernel
@needs_clinear
@pytest.mark.parametrize("allocator", ["sum_of_squares:curve=zorder,span=ring", "sorted_free_list", "first_fit:curve=snake"])
def test_compiled_linear_replay_on_a_real_trace(allocator):
    """NASA's first 4,000 jobs on a 3-D torus with every metric and every job's nodes, both engines."""
    from topoalloc.workload import read_swf

    from .conftest import shared_trace

    w = read_swf(shared_trace("NASA-iPSC-1993-3.1-cln.swf")).take(np.arange(4000))
    kw = dict(machine="torus:8x4x4", scheduler="easy", allocator=allocator, record_allocations=True, locality=True,
              filters=["drop-no-size", "drop-nonpositive-runtime"])
    assert_same_placements(topoalloc.simulate(w, engine="compiled", **kw), topoalloc.simulate(w, engine="python", **kw))


@needs_clinear
@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("span", ["linear", "ring"])
def test_the_placement_memo_numbers_runs_of_ranks_and_writes_each_once(strategy, span):
    """With a memo, a job on one run of ranks a .. a+p-1 gets the number of (a, p): written the first time
    (-2 - number), not written when seen again (the number); other jobs are written every time (-1).  What
    is written equals the memo-less replay's, and the memo fills up to its size and then writes again."""
    rng = random.Random(f"memo/{strategy}/{span}")
    a = _allocator("mesh:6x6", "hilbert", strategy, span)
    sizes, log, held = [], [], {}
    for _ in range(400):
        if held and (rng.random() < 0.5 or a.free_count < 2):
            j = rng.choice(sorted(held))
            a.release(held.pop(j))
            log.append(-1 - j)
        else:
            j = len(sizes)
            sizes.append(rng.choice([1, 2, 4, 4, 8]) if rng.random() < 0.8 else rng.randint(1, min(6, a.free_count)))
            sizes[j] = min(sizes[j], a.free_count)
            held[j] = a.allocate(Request(sizes[j]))
            log.append(j)
    log_arr, size_arr = np.array(log, dtype=np.int64), np.array(sizes, dtype=np.int64)

    def run(memo):
        s = _clinear.State(36, STRATEGIES.index(strategy), span == "ring", np.ascontiguousarray(a.ordering.node_at_rank), len(sizes), memo)
        out = np.empty(36 + 1000, dtype=np.int64)
        oj, oi = np.empty(len(sizes), dtype=np.int64), np.empty(len(sizes), dtype=np.int64)
        pos, nj, nn = s.replay(log_arr, 0, size_arr, out, oj, oi, 1000, len(sizes))
        assert pos == log_arr.size
        return oj[:nj].tolist(), oi[:nj].tolist(), out[:nn].tolist()

    jobs0, ids0, nodes0 = run(0)
    assert set(ids0) == {-1}
    per_job, o = {}, 0
    for j in jobs0:
        per_job[j] = nodes0[o : o + sizes[j]]
        o += sizes[j]
    rank = a.ordering.rank_of
    for cap in (1 << 10, 5):
        jobs, ids, nodes = run(cap)
        assert jobs == jobs0
        by_number, o = {}, 0
        for j, k in zip(jobs, ids):
            ranks = sorted(rank[per_job[j]].tolist())
            one_run = ranks == list(range(ranks[0], ranks[0] + len(ranks)))
            if k >= 0:  # seen before: nothing written, the same node set as when it was numbered
                assert by_number[k] == per_job[j]
                continue
            assert nodes[o : o + sizes[j]] == per_job[j]
            o += sizes[j]
            if k <= -2:
                assert one_run and -2 - k not in by_number
                by_number[-2 - k] = per_job[j]
            else:
                assert not one_run or len(by_number) == cap  # (no number: not one run, or the memo is full)
        assert o == len(nodes)
        assert len(by_number) == min(cap, len(by_number)) and (cap > 5 or len(by_number) == 5)
        assert sum(k >= 0 for k in ids) > 0


@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_add_batch_forms_the_batches_add_does(data):
    """Jobs handed over in runs that end where :meth:`LocalityStream.room` says (the compiled replay's way),
    or in arbitrary runs: the sums equal those of adding job by job, to the last bit."""
    top = parse_machine("torus:6x4")
    ordering = make_ordering("hilbert", top)
    rng = random.Random(data.draw(st.integers(0, 10**6)))
    m = data.draw(st.integers(1, 60))
    jobs = [np.array(sorted(rng.sample(range(24), rng.randint(1, 10))), dtype=np.int64) for _ in range(m)]
    run = np.array([rng.choice([0.0, 1.5, 3e6, 7.25]) for _ in range(m)])
    bn, bj = data.draw(st.integers(1, 50)), data.draw(st.integers(1, 12))
    flat = np.concatenate(jobs)
    offsets = np.zeros(m + 1, dtype=np.int64)
    np.cumsum([j.size for j in jobs], out=offsets[1:])
    one = LocalityStream(top, ordering, batch_nodes=bn, batch_jobs=bj)
    for j, r in zip(jobs, run):
        one.add(j, float(r))
    aligned = LocalityStream(top, ordering, batch_nodes=bn, batch_jobs=bj)
    i = 0
    while i < m:  # as the compiled replay does: stop right after the job that fills the room
        nodes_left, jobs_left = aligned.room()
        k, got = i, 0
        while k < m:
            got += jobs[k].size
            k += 1
            if got >= nodes_left or k - i >= jobs_left:
                break
        aligned.add_batch(flat, offsets[i : k + 1], run[i:k])
        i = k
    arbitrary = LocalityStream(top, ordering, batch_nodes=bn, batch_jobs=bj)
    i = 0
    while i < m:
        k = min(m, i + data.draw(st.integers(1, 8)))
        arbitrary.add_batch(flat, offsets[i : k + 1], run[i:k])
        i = k
    want = repr(one.summary())
    assert repr(aligned.summary()) == want
    assert repr(arbitrary.summary()) == want
    assert one.jobs == aligned.jobs == arbitrary.jobs == m


@pytest.mark.parametrize("spec", ["mesh:6x5", "torus:4x6", "mesh:3x4x2", "torus:5x3,wrap=01"])
@pytest.mark.parametrize("curve", ["row_major", "snake", "hilbert", "zorder", "shuffled"])
def test_a_run_of_ranks_on_a_path_is_one_component(spec, curve):
    """The components shortcut (consecutive ranks whose every step goes to a neighbour form a path)
    against networkx on every run of ranks, on curves with and without jumps."""
    top = parse_machine(spec)
    n = top.n_nodes
    if curve == "shuffled":
        perm = list(range(n))
        random.Random(spec).shuffle(perm)
        ordering = Ordering(perm, name="shuffled")
    else:
        ordering = make_ordering(curve, top)
    runs = [(a, p) for p in range(1, n + 1) for a in range(0, n - p + 1)]
    allocs = [np.sort(ordering.node_at_rank[a : a + p]) for a, p in runs]
    flat = np.concatenate(allocs).astype(np.int64)
    offsets = np.zeros(len(allocs) + 1, dtype=np.int64)
    np.cumsum([x.size for x in allocs], out=offsets[1:])
    per = job_locality(topology=top, allocations=(flat, offsets), ordering=ordering)
    g = nx.Graph()
    g.add_edges_from((u, v) for u in range(n) for v in top.neighbors(u))
    paths = 0
    for j, nodes in enumerate(allocs):
        want = nx.number_connected_components(g.subgraph(nodes.tolist()))
        assert per["components"][j] == want, (curve, runs[j])
        ranks = ordering.node_at_rank
        a, p = runs[j]
        paths += all(top.distance(int(ranks[r]), int(ranks[r + 1])) == 1 for r in range(a, a + p - 1))
    assert paths > 0
    # the numpy path's shortcut is what answered those there: its graph search sees only the others (the
    # compiled path searches every job by runs of consecutive ids, whatever the ordering: checked above)
    slow = job_locality(topology=top, allocations=(flat, offsets), ordering=ordering, compiled=False)
    assert np.array_equal(slow["components"], per["components"])
    seen = []
    real = _locality._components

    def spy(nodes, seg, m, topology, **kw):
        seen.append(int(np.unique(seg).size))
        return real(nodes, seg, m, topology, **kw)

    _locality._components = spy
    try:
        job_locality(topology=top, allocations=(flat, offsets), ordering=ordering, compiled=False)
    finally:
        _locality._components = real
    assert seen and seen[0] <= len(allocs) - paths
