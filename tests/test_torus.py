"""Tori, semitori, preprocessing, EP/NEP, conversion and the subtorus allocators (Mao, Chen & Watson)."""

from __future__ import annotations

import json

import numpy as np
import pytest

import topoalloc
from topoalloc.alloc import PartitionAllocator, Request
from topoalloc.alloc.partition import convert, ep_partition, initial_available_set, nep_partition, split_dimension
from topoalloc.alloc.partition.schemes import ep_piece_exponents
from topoalloc.cli import main
from topoalloc.errors import InvalidArgument, RequestNeverFits
from topoalloc.testing import check_schedule
from topoalloc.topology import Mesh, Semitorus, Torus, parse_machine


def multiset(pieces):
    return sorted(tuple(sorted(s for s in p.sides if s > 1)) for p in pieces)


# ------------------------------------------------------------------ topology
def test_torus_basics():
    t = parse_machine("torus:2x2x2x6x8")
    assert t == Torus((2, 2, 2, 6, 8)) and t.n_nodes == 384 and t.spec() == "torus:2x2x2x6x8"
    assert t.node_at(t.coord(123)) == 123
    assert parse_machine("mesh:16x8") == Mesh((16, 8)) and Mesh((16, 8)).coord(17) == (1, 1)
    ring = Torus((8,))
    assert ring.distance(0, 7) == 1 and Mesh((8,)).distance(0, 7) == 7
    assert ring.route(0, 5) == [0, 7, 6, 5] and ring.route(0, 4) == [0, 1, 2, 3, 4]  # tie: positive way
    t3 = Torus((4, 4))
    assert t3.route(0, 5) == [0, 1, 5]  # dimension 0 first
    assert all(len(t3.route(a, b)) - 1 == t3.distance(a, b) for a in range(16) for b in range(16))


def test_size_one_and_two_dimensions():
    t = Torus((2, 3))
    assert t.neighbors(0) == [1, 2, 4]
    # size 2 wrapped: one neighbour, two channels (+1 direct, -1 through the wrap cable)
    assert sorted(l for l in t.links(0) if l[1] == 0) == [(1, 0, -1), (1, 0, 1)]
    assert Mesh((2, 3)).links(0) == [(1, 0, 1), (2, 1, 1)]
    assert Torus((1, 4)).neighbors(0) == [1, 3]


def test_bad_machine_specs():
    for spec in ("torus:2x0", "torus:axb", "mesh:4x4:wrap=11", "torus:4x4:wrap=1"):
        with pytest.raises(InvalidArgument):
            parse_machine(spec)


# ----------------------------------------------------------- preprocessing
def test_preprocessing_paper_example():
    pieces = initial_available_set(Torus((2, 2, 2, 6, 8)))
    assert [(p.offset, p.sides, p.wrapped) for p in pieces] == [
        ((0, 0, 0, 0, 0), (2, 2, 2, 4, 8), (True, True, True, False, True)),
        ((0, 0, 0, 4, 0), (2, 2, 2, 2, 8), (True, True, True, True, True)),
    ]


def test_preprocessing_several_cut_dimensions():
    assert split_dimension(6) == [4, 2] and split_dimension(7) == [4, 2, 1] and split_dimension(12) == [8, 4]
    pieces = initial_available_set(Torus((3, 6)))
    assert sorted(p.size for p in pieces) == [2, 4, 4, 8]
    assert sum(p.size for p in pieces) == 18
    assert initial_available_set(Torus((4, 8)))[0].wrapped == (True, True)


# ---------------------------------------------------------------- schemes
S = Semitorus((0, 0, 0, 0), (2, 4, 4, 8), (True, True, True, True))


def test_ep_paper_examples():
    assert sorted(1 << e for e in ep_piece_exponents(S.exponents, 3) if e) == [2, 2, 2]
    assert sorted(1 << e for e in ep_piece_exponents(S.exponents, 6) if e) == [2, 2, 4, 4]
    pieces = ep_partition(S, 6)
    assert len(pieces) == 4 and len({p.sides for p in pieces}) == 1 and pieces[0].offset == S.offset


@pytest.mark.parametrize("wrapped", [(True, True, True), (False, True, False)])
def test_ep_pieces_are_semitori_as_checked_construction_makes_them(wrapped):
    """EP builds its pieces unchecked, through the slots' descriptors: each equals the semitorus the checked
    constructor makes from the same fields (size, order, hash, ring flags), and stays frozen."""
    import dataclasses

    s = Semitorus((1, 2, 0), (4, 8, 2), wrapped)
    for k in range(s.order + 1):
        for p in ep_partition(s, k):
            q = Semitorus(p.offset, p.sides, p.wrapped)
            assert (p, p.size, p.order, hash(p), p.wrapped) == (q, q.size, q.order, hash(q), q.wrapped)
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.order = 0  # type: ignore[misc]


def test_nep_paper_example():
    pieces = nep_partition(S, 4)
    assert multiset(pieces) == sorted([(2, 2, 4), (2, 2, 4), (2, 4, 4), (2, 2, 4, 4), (2, 4, 4, 4)])
    assert pieces[-1].size == 16 and len(pieces) == 5
    balanced = nep_partition(S, 4, "balanced")
    assert len(balanced) == 5 and multiset(balanced) != multiset(pieces)


def test_halving_drops_wrap():
    pieces = nep_partition(Semitorus((0,), (16,), (True,)), 1)
    assert pieces[0].sides == (8,) and pieces[0].wrapped == (False,)
    assert pieces[-1].sides == (2,) and pieces[-1].wrapped == (True,)  # a 2-node ring needs no extra link


# ------------------------------------------------------------- conversion
def test_conversion_paper_examples():
    st = Semitorus((0, 0, 0, 0), (4, 8, 2, 4), (False, False, True, True))
    m = Torus((4, 8, 2, 4))
    assert sorted(convert(st, m, "collapse").shape) == [2, 4, 32]
    assert convert(st, m, "pair").shape == (16, 16)
    path = convert(Semitorus((0,), (8,), (False,)), Torus((12,)), "collapse")
    assert path.torus is False and path.shape == (8,)


def test_conversion_embedding_is_dilation_one():
    m = Torus((8, 8, 4))
    st = Semitorus((0, 0, 0), (8, 4, 2), (True, False, True))
    for mode in ("collapse", "pair"):
        c = convert(st, m, mode)
        emb = c.embedding
        assert sorted(emb.tolist()) == m.box_nodes(st.offset, st.sides).tolist()
        assert all(m.adjacent(int(emb[a]), int(emb[b])) for a, b in c.virtual_edges())


# --------------------------------------------------------------- allocator
def test_allocation_rounds_and_records():
    a = PartitionAllocator(Torus((2, 2, 2, 4, 4, 8)), scheme="nep")
    x = a.allocate(Request(12))
    assert x.size == 16 and x.info["requested"] == 12 and x.info["rounded"] == 16
    assert x.info["semitorus"].size == 16 and np.prod(x.info["conversion"].shape) == 16
    assert len(a.available()) == 6  # 1 + log2(1024/16) pieces, one allocated
    a.release(x)
    assert a.available() == initial_available_set(Torus((2, 2, 2, 4, 4, 8)))


def test_identification_policies():
    m = Torus((2, 2, 2, 6, 8))
    small = PartitionAllocator(m, scheme="nep", identify="smallest")
    first = PartitionAllocator(m, scheme="nep", identify="first")
    assert small.allocate(Request(128)).info["semitorus"].offset == (0, 0, 0, 4, 0)  # the 128-node piece
    assert first.allocate(Request(128)).info["semitorus"].offset == (0, 0, 0, 0, 0)  # the first piece (256)


def test_ep_fragments_more_than_nep():
    m = Torus((2, 2, 2, 4, 4, 8))
    ep, nep = PartitionAllocator(m, scheme="ep"), PartitionAllocator(m, scheme="nep")
    ep.allocate(Request(1))
    nep.allocate(Request(1))
    assert len(ep.available()) == 1023 and len(nep.available()) == 10
    assert ep.allocate(Request(512)) is None and nep.allocate(Request(512)) is not None


def test_never_fits():
    a = PartitionAllocator(Torus((2, 2, 2, 6, 8)))
    with pytest.raises(RequestNeverFits):
        a.allocate(Request(257))  # rounds to 512 > the largest piece, 256


def test_rejects_non_torus():
    with pytest.raises(InvalidArgument, match="tori and meshes"):
        PartitionAllocator(parse_machine("flat:16"))


@pytest.mark.parametrize("sched", ["fcfs", "easy", "conservative"])
@pytest.mark.parametrize("scheme", ["ep", "nep"])
def test_simulate_on_jlab(sched, scheme):
    from topoalloc.workload.synthetic import Uniform, poisson_workload

    n = 40 if sched == "conservative" else 150  # conservative replays every reservation on snapshots: slow
    w = poisson_workload(n, load=0.8, sizes=Uniform(1, 200), machine_nodes=384, mean_runtime=100, estimate_factor=2, seed=3)
    r = topoalloc.simulate(w, machine="torus:2x2x2x6x8", allocator=scheme, scheduler=sched, round_pow2=True, record_reservations=True)
    check_schedule(r)
    assert r.summary()["jobs"] == n


def test_easy_replay_equals_overlay_probe():
    """The allocator's overlay probe gives the schedule the general snapshot replay gives."""
    from topoalloc.alloc.base import Allocator
    from topoalloc.workload.synthetic import Uniform, poisson_workload

    class Replay(PartitionAllocator):
        earliest_fit = Allocator.earliest_fit
        reservation_guard = Allocator.reservation_guard

    m = Torus((2, 2, 2, 6, 8))
    w = poisson_workload(300, load=1.1, sizes=Uniform(1, 128), machine_nodes=384, mean_runtime=100, estimate_factor=2, seed=11)
    a = topoalloc.simulate(w, machine=m, allocator=PartitionAllocator(m, scheme="nep"), scheduler="easy")
    b = topoalloc.simulate(w, machine=m, allocator=Replay(m, scheme="nep"), scheduler="easy")
    assert np.array_equal(a.start, b.start)


# --------------------------------------------------------------------- CLI
def test_partition_cli_paper_example(capsys):
    assert main(["partition", "--scheme", "nep", "--shape", "2x4x4x8", "--nodes", "16", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    pieces = out["pieces"]
    assert len(pieces) == 5 and sum(p["allocated"] for p in pieces) == 1
    assert sorted(tuple(sorted(s for s in p["sides"] if s > 1)) for p in pieces) == sorted([(2, 2, 4), (2, 2, 4), (2, 4, 4), (2, 2, 4, 4), (2, 4, 4, 4)])
    alloc = next(p for p in pieces if p["allocated"])
    assert np.prod(alloc["sides"]) == 16 and set(alloc) == {"offset", "sides", "wrapped", "allocated"}


def test_partition_cli_job_torus(capsys):
    """The job's torus in the JSON: each virtual side the product of its group's sides, the groups the allocated
    piece's dimensions of side > 1."""
    assert main(["partition", "--scheme", "nep", "--shape", "2x4x4x8", "--nodes", "16", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    alloc = next(p for p in out["pieces"] if p["allocated"])
    conv = out["conversion"]
    assert set(conv) == {"shape", "groups", "torus"} and isinstance(conv["torus"], bool)
    assert conv["shape"] == [int(np.prod([alloc["sides"][i] for i in g])) for g in conv["groups"]]
    assert sorted(i for g in conv["groups"] for i in g) == [i for i, side in enumerate(alloc["sides"]) if side > 1]


def test_partition_cli_ep_and_bad_input(capsys):
    assert main(["partition", "--scheme", "ep", "--shape", "2x4x4x8", "--nodes", "64", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert len(out["pieces"]) == 4
    assert main(["partition", "--scheme", "ep", "--shape", "2x4", "--nodes", "64"]) == 2
    assert "can never fit" in capsys.readouterr().err
    assert main(["partition", "--shape", "2xq", "--nodes", "4"]) == 2


def test_simulate_cli_on_torus(capsys):
    assert main(["simulate", "--machine", "torus:2x2x2x6x8", "--allocator", "nep", "--scale-sizes", "2", "--round-pow2", "--clean", "--json", "--quiet"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["machine"] == "torus:2x2x2x6x8" and out["allocator"].startswith("nep:") and out["jobs"] == 18239 - 173  # --clean drops the 173 jobs of run time 0


class _ReplayNEP(PartitionAllocator):
    """The same allocator answering EASY's questions the general way (snapshots)."""

    from topoalloc.alloc.base import Allocator as _A

    earliest_fit = _A.earliest_fit
    reservation_guard = _A.reservation_guard
    max_request_now = _A.max_request_now
    fit_key = _A.fit_key  # no memo of refusals: every candidate is asked


from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from topoalloc.testing import workloads  # noqa: E402


@settings(max_examples=150, deadline=None)
@given(
    w=workloads(max_jobs=30, machine_nodes=16, overrun=True),
    dims=st.sampled_from([(4, 4, 2), (2, 3, 4), (8, 2)]),
    scheme=st.sampled_from(["ep", "nep"]),
    identify=st.sampled_from(["smallest", "first"]),
)
def test_easy_probe_equals_general_replay(w, dims, scheme, identify):
    """The overlay probe, its ends-by-shadow shortcut, max_request_now and EASY's memo of
    refused request orders give exactly the schedule that snapshot replay gives."""
    m = Torus(dims)
    a = topoalloc.simulate(w, machine=m, allocator=PartitionAllocator(m, scheme=scheme, identify=identify), scheduler="easy")
    b = topoalloc.simulate(w, machine=m, allocator=_ReplayNEP(m, scheme=scheme, identify=identify), scheduler="easy")
    assert np.array_equal(a.start, b.start)


@pytest.mark.parametrize(
    "dims,scheme,identify,seed",
    [((2, 2, 2, 4, 4, 8), "ep", "smallest", 1), ((2, 2, 2, 4, 4, 8), "nep", "first", 6), ((2, 2, 2, 6, 8), "ep", "first", 4), ((2, 2, 2, 6, 8), "nep", "smallest", 2)],
)
def test_easy_probe_equals_general_replay_long_queues(dims, scheme, identify, seed):
    """Overloaded machines (load 1.6, 500 jobs) build queues with many requests of each
    order, where the memo of refusals matters; seeds include ones that once told apart a
    history-dependent ``identify=first`` from the replay."""
    from topoalloc.workload.synthetic import Uniform, poisson_workload

    m = Torus(dims)
    w = poisson_workload(500, load=1.6, sizes=Uniform(1, m.n_nodes // 2), machine_nodes=m.n_nodes, estimate_factor=2.0, seed=seed)
    a = topoalloc.simulate(w, machine=m, allocator=PartitionAllocator(m, scheme=scheme, identify=identify), scheduler="easy")
    b = topoalloc.simulate(w, machine=m, allocator=_ReplayNEP(m, scheme=scheme, identify=identify), scheduler="easy")
    assert np.array_equal(a.start, b.start)


def test_identify_first_is_history_free():
    """Allocating and releasing a job does not change where the next request goes."""
    m = Torus((2, 2, 2, 6, 8))
    a = PartitionAllocator(m, scheme="nep", identify="first")
    keep = a.allocate(Request(8))
    probe = a.allocate(Request(64))
    a.release(probe)
    again = a.allocate(Request(16))
    b = PartitionAllocator(m, scheme="nep", identify="first")
    b.allocate(Request(8))
    assert np.array_equal(again.nodes, b.allocate(Request(16)).nodes)
    assert keep.size == 8


def test_prefer_three_dimensions():
    """§2.1: 'a reasonable effort will be made to allocate a subtorus with a dimension no
    less than three'.  Among free semitori of the smallest sufficient order, identification
    prefers one giving the job a torus of >= prefer_dims dimensions (default 3)."""
    m = Torus((4, 4, 4))

    def run(prefer_dims):
        a = PartitionAllocator(m, scheme="nep", convert="pair", prefer_dims=prefer_dims)
        x4 = a.allocate(Request(4))
        a.allocate(Request(8))
        y4 = a.allocate(Request(4))
        x2 = a.allocate(Request(2))
        a.release(y4)
        a.allocate(Request(16))
        a.release(x4)
        a.release(x2)
        return a.allocate(Request(16))

    with_pref, without = run(3), run(0)
    assert with_pref.info["semitorus"].sides == (4, 2, 2) and with_pref.info["conversion"].shape == (4, 2, 2)
    assert without.info["semitorus"].sides == (4, 4, 1) and without.info["conversion"].shape == (4, 4)
    with pytest.raises(InvalidArgument):
        PartitionAllocator(m, prefer_dims=-1)


@pytest.mark.slow
def test_conservative_compression_keeps_reservations_on_subtori():
    """Taking one reservation out of the plan can change where the later ones land on a
    subtorus allocator and make them infeasible; compression then keeps the job's old
    time instead of finding no time at all (it used to fail here: 'never fits the plan').
    Slow tier (~30 s): of the trace's prefixes tried (10 to 70 jobs), only 70 fails without the fix."""
    from topoalloc.workload import read_swf
    from topoalloc.workload.swf import default_trace_path

    w = read_swf(default_trace_path()).take(np.arange(70))
    r = topoalloc.simulate(w, machine="torus:2x2x2x4x4x8", allocator="nep", scheduler="conservative", clean=True, scale_sizes=8, round_pow2=True, work_multiple=2.0)
    assert np.isfinite(r.start).all()
    check_schedule(r)


@pytest.mark.parametrize("scheme", ["ep", "nep"])
def test_never_fits_says_the_rounding_and_the_largest_grant(scheme):
    """A request that rounds past every semitorus is refused with the rounded size and the largest grant
    (on a 7x7x7 torus a power-of-two subtorus has at most 64 processors: 79 -> 128 never fits, 64 does)."""
    from topoalloc.api import make_allocator

    alloc = make_allocator(scheme, "torus:7x7x7")
    alloc.check_request(Request(64))
    with pytest.raises(RequestNeverFits, match=rf"request for 79 processors can never fit torus:7x7x7 with allocator '{scheme}': "
                       rf"{scheme} rounds it up to 128 \(a power of two\), and the largest subtorus it grants on torus:7x7x7 has 64"):
        alloc.check_request(Request(79))
    with pytest.raises(RequestNeverFits, match=r"request for 400 processors can never fit torus:7x7x7 with allocator '\w+'$"):
        alloc.check_request(Request(400))  # wider than the machine: nothing to add
