"""Jobs that communicate: patterns, the NetworkModel hook, contention slowdown, and Turner's contention-free allocations."""

from __future__ import annotations

import doctest

import numpy as np
import pytest

from topoalloc.alloc import Request
from topoalloc.alloc.hypercube import AFLAllocator, BuddyAllocator, FreeListAllocator
from topoalloc.errors import InvalidArgument, UnknownName
from topoalloc.network import NetworkConfig
from topoalloc.network.engine import compiled_available
from topoalloc.network.jobs import JobSpec, JobTraffic, NetworkModel, job_messages, process_pairs, run_jobs
from topoalloc.topology import Hypercube
from topoalloc.topology.hypercube import shared_channels

ENGINES = ["python"] + (["c"] if compiled_available() else [])


def test_patterns():
    t = JobTraffic.parse("all-to-all")
    pairs = process_pairs(5, t)
    assert len(pairs) == 20 and len(set(pairs)) == 20 and all(a != b for a, b in pairs)
    assert pairs[:5] == [(0, 1), (1, 2), (2, 3), (3, 4), (4, 0)]
    assert process_pairs(4, JobTraffic("one-to-all", root=2)) == [(2, 0), (2, 1), (2, 3)]
    assert process_pairs(3, JobTraffic("ring")) == [(0, 1), (1, 2), (2, 0)]
    st = process_pairs(6, JobTraffic.parse("stencil:shape=3x2"))
    assert len(st) == 2 * (2 * 2 + 3 * 1) and (0, 1) in st and (0, 3) in st and (2, 3) not in st
    assert len(process_pairs(12, JobTraffic("stencil"))) == 2 * (3 * 3 + 4 * 2)  # 4 x 3 by default
    rp = process_pairs(5, JobTraffic("random-pairs", messages=50, seed=3))
    assert len(rp) == 50 and all(a != b for a, b in rp) and rp == process_pairs(5, JobTraffic("random-pairs", messages=50, seed=3))
    assert process_pairs(1, t) == []


def test_message_times_and_nodes():
    create, src, dst = job_messages([10, 11, 12], JobTraffic("all-to-all", messages=8, compute=5), start=100)
    # pairs (0,1),(1,2),(2,0),(0,2),(1,0),(2,1), then (0,1),(1,2) again
    assert src.tolist() == [10, 11, 12, 10, 11, 12, 10, 11]
    assert dst.tolist() == [11, 12, 10, 12, 10, 11, 11, 12]
    assert create.tolist() == [100, 100, 100, 105, 105, 105, 110, 110]


def test_spec_grammar_and_errors():
    t = JobTraffic.parse("stencil:messages=40,compute=3,shape=4x2")
    assert (t.messages, t.compute, t.shape) == (40, 3, (4, 2))
    assert JobTraffic.parse(t.spec()) == t
    with pytest.raises(UnknownName, match="all-to-all"):
        JobTraffic.parse("everyone")
    with pytest.raises(InvalidArgument, match="messages"):
        JobTraffic.parse("ring:messages=-1")
    with pytest.raises(InvalidArgument, match="traffic"):
        JobTraffic.parse("ring:size=3")
    with pytest.raises(InvalidArgument, match="shape"):
        process_pairs(6, JobTraffic.parse("stencil:shape=4x2"))
    m = NetworkModel("mesh:4x4")
    with pytest.raises(InvalidArgument, match="nodes"):
        m.start_job(1, [0, 0], "ring")
    with pytest.raises(InvalidArgument, match="nodes"):
        m.start_job(1, [0, 16], "ring")
    m.start_job(1, [0, 1], "ring", at=5)
    with pytest.raises(InvalidArgument, match="job_id"):
        m.start_job(1, [2, 3], "ring")
    with pytest.raises(InvalidArgument, match="jobs"):
        run_jobs("mesh:4x4", [JobSpec(1, 0, (0,), "ring"), JobSpec(1, 0, (1,), "ring")])


@pytest.mark.parametrize("engine", ENGINES)
def test_model_reports_each_completion_once_in_order(engine):
    seen = []
    m = NetworkModel("mesh:4x4", NetworkConfig(engine=engine), on_complete=seen.append)
    m.start_job(1, [0, 3], "ring:messages=2", at=0)
    m.start_job(2, [5], "all-to-all", at=0)  # one process: nothing to send, done at its start
    m.start_job(3, [12, 15], "ring:messages=2", at=40)
    assert [c.job_id for c in m.next_completion(1)] == [2]
    first = m.next_completion(1000)
    assert [c.job_id for c in first] == [1]
    # 0 -> 3 and 3 -> 0 at once: both 3 links, disjoint routes: (3 + 1)(1 + 1) + 7 = 15
    assert first[0].end == 15 and first[0].comm_time == 15 and first[0].latency_mean == 15
    assert m.now == 16 and m.running == [3]
    rest = m.advance_to(1000)
    assert [c.job_id for c in rest] == [3] and rest[0].start == 40 and rest[0].comm_time == 15
    assert [c.job_id for c in seen] == [2, 1, 3]
    assert m.next_completion(2000) == [] and m.now == 2000


def test_completions_come_in_cycle_order():
    """A job with nothing to send, started later, is reported after a network completion that comes first."""
    m = NetworkModel("mesh:4x4")
    m.start_job(1, [0, 3], "ring:messages=1", at=0)  # one message over 3 links: done in cycle 15
    m.start_job(2, [5], "ring", at=30)  # one process: done at 30
    m.start_job(3, [6], "ring", at=10)  # done at 10
    got = [(c.job_id, c.end) for c in m.advance_to(100)]
    assert got == [(3, 10), (1, 15), (2, 30)]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("mode", ["flit", "packet"])
def test_contention_slowdown(mode, engine):
    """Two jobs interleaved on a line share links and slow each other; placed apart they do not."""
    cfg = NetworkConfig(engine=engine, mode=mode)
    traffic = "all-to-all:messages=24"
    apart = run_jobs("mesh:8", [JobSpec(1, 0, (0, 1, 2, 3), traffic), JobSpec(2, 0, (4, 5, 6, 7), traffic)], cfg)
    assert [r.slowdown for r in apart] == [1.0, 1.0]
    mixed = run_jobs("mesh:8", [JobSpec(1, 0, (0, 2, 4, 6), traffic), JobSpec(2, 0, (1, 3, 5, 7), traffic)], cfg)
    assert max(r.slowdown for r in mixed) > 1.1
    assert all(r.comm_time >= r.alone for r in mixed)


def _contention_free_jobs(allocator, requests):
    jobs = []
    for i, req in enumerate(requests):
        got = allocator.allocate(req)
        assert got is not None
        jobs.append(got.nodes.tolist())
    return jobs


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("mode", ["flit", "packet"])
@pytest.mark.parametrize(
    "make,n,requests",
    [
        # Turner's Theorem 1: an AFL mesh and jobs placed in its leftover subcubes
        (AFLAllocator, 4, [Request(9, (3, 3)), Request(4, (2, 2)), Request(2, (1, 2)), Request(1)]),
        (AFLAllocator, 6, [Request(15, (3, 5)), Request(6, (2, 3)), Request(12, (3, 4)), Request(8, (2, 4)), Request(4), Request(2)]),
        (BuddyAllocator, 6, [Request(16), Request(8), Request(4), Request(16), Request(2), Request(8)]),
        (FreeListAllocator, 6, [Request(8), Request(16), Request(4), Request(4), Request(2), Request(1), Request(16)]),
    ],
)
def test_contention_free_allocations_show_zero_interjob_blocking(make, n, requests, mode, engine):
    """Every job's packets take exactly as long next to the others as alone on the network (E-cube routing)."""
    top = Hypercube(n)
    node_sets = _contention_free_jobs(make(top), requests)
    for i, a in enumerate(node_sets):  # the property the simulation must agree with
        for b in node_sets[i + 1 :]:
            assert shared_channels(a, b, n) == []
    cfg = NetworkConfig(engine=engine, mode=mode, buffers=4)
    specs = [JobSpec(i, 0, tuple(nodes), "all-to-all:messages=60") for i, nodes in enumerate(node_sets)]
    together = run_jobs(top, specs, cfg)
    for spec, r in zip(specs, together):
        solo = NetworkModel(top, cfg)
        solo.start_job(spec.job_id, spec.nodes, spec.traffic, at=0)
        alone = solo.finish()[0]
        assert r.slowdown == 1.0 and r.comm_time == r.alone
        assert np.array_equal(r.latencies, alone.latencies)  # packet by packet
        assert r.messages == 0 or r.blocking_mean == alone.blocking_mean  # blocking within the job only


def test_interleaved_hypercube_jobs_do_contend():
    top = Hypercube(4)
    a, b = [0, 3, 5, 6, 9, 10, 12, 15], [1, 2, 4, 7, 8, 11, 13, 14]  # even / odd parity: every channel shared
    assert shared_channels(a, b, 4)
    traffic = "all-to-all:messages=200"
    res = run_jobs(top, [JobSpec(0, 0, tuple(a), traffic), JobSpec(1, 0, tuple(b), traffic)])
    assert min(r.slowdown for r in res) > 1.0
    solo = NetworkModel(top)
    solo.start_job(0, a, traffic)
    assert res[0].latency_mean > solo.finish()[0].latency_mean


def test_docstring_examples():
    import topoalloc.network.config as config
    import topoalloc.network.engine as engine
    import topoalloc.network.jobs as jobs
    import topoalloc.network.sim as sim
    import topoalloc.network.traffic as traffic
    import topoalloc.proofs.deadlock as deadlock

    for mod in (config, engine, jobs, sim, traffic, deadlock):
        res = doctest.testmod(mod)
        assert res.failed == 0 and res.attempted > 0, mod.__name__
