"""Hypercube topology, subcube allocators and Turner's AFL (seed 004, ch. 3)."""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import topoalloc  # noqa: F401
from topoalloc.alloc import Request
from topoalloc.alloc.hypercube import AFLAllocator, BuddyAllocator, FreeListAllocator, GrayCodeAllocator, mesh_layout
from topoalloc.alloc.hypercube.embedding import brgc, cluster_partition, coalesce, embed_mesh, gray_blocks, partition_leftover, square_shape
from topoalloc.errors import InvalidArgument, RequestNeverFits
from topoalloc.registry import ALLOCATORS
from topoalloc.testing import CHECKS
from topoalloc.testing.conformance import CLAIM_CHECKS, check_invariants
from topoalloc.topology import Hypercube, Subcube, Torus, parse_machine
from topoalloc.topology.hypercube import channels_within, ecube_channels, shared_channels


# --------------------------------------------------------------- topology
def test_hypercube_basics_and_spec():
    q = parse_machine("hypercube:4")
    assert q == Hypercube(4) and q.n_nodes == 16 and q.spec() == "hypercube:4"
    assert q.route(0b0100, 0b1010) == [0b0100, 0b0110, 0b0010, 0b1010]  # lowest differing bit first
    assert q.distance(0, 15) == 4 and sorted(q.neighbors(0)) == [1, 2, 4, 8]
    assert [tuple(c) for c in ecube_channels(0b01, 0b10)] == [(1, 0, -1), (0, 1, 1)]


@pytest.mark.parametrize("spec", ["hypercube:x", "hypercube:-1", "hypercube:40"])
def test_bad_hypercube_spec(spec):
    with pytest.raises(InvalidArgument, match="machine"):
        parse_machine(spec)


def test_subcube_address():
    c = Subcube.parse("1*0*")
    assert c.dim == 2 and c.nodes().tolist() == [8, 9, 12, 13] and str(c) == "1*0*"
    assert Subcube.parse("10**").adjacent(Subcube.parse("11**"))
    assert not Subcube.parse("10**").adjacent(Subcube.parse("1*0*"))
    with pytest.raises(InvalidArgument, match="subcube"):
        Subcube.parse("12*")
    with pytest.raises(InvalidArgument, match="subcube"):
        Hypercube(3).subcube("1*")


def _ref_channels(nodes):
    return {c for s in nodes for t in nodes for c in ecube_channels(s, t)}


@settings(max_examples=150, deadline=None)
@given(st.integers(1, 6), st.data())
def test_channel_sets_match_all_pairs_reference(n, data):
    a = data.draw(st.sets(st.integers(0, (1 << n) - 1), min_size=1, max_size=10))
    b = data.draw(st.sets(st.integers(0, (1 << n) - 1), min_size=1, max_size=10))
    assert channels_within(a, n) == _ref_channels(a)
    assert set(shared_channels(a, b, n)) == _ref_channels(a) & _ref_channels(b)


def test_figure_3_1_interference():
    """A 2×5 and a 2×3 mesh packed in Q4: 0100→1010 and 0110→0010 both use the channel 0110 ↓ on dimension 2."""
    shared = shared_channels([0b0100, 0b1010], [0b0110, 0b0010], 4)
    assert (0b0110, 2, -1) in shared


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 7), st.data())
def test_lemma1_routes_stay_in_subcube(n, data):
    free = data.draw(st.integers(0, (1 << n) - 1))
    value = data.draw(st.integers(0, (1 << n) - 1)) & ~free
    cube = Subcube(n, free, value)
    nodes = cube.nodes().tolist()
    s, d = data.draw(st.sampled_from(nodes)), data.draw(st.sampled_from(nodes))
    assert all(cube.contains(v) for v in Hypercube(n).route(s, d))


# ------------------------------------------------------------- embedding
def test_brgc_and_lemma2_blocks():
    assert [brgc(i) for i in range(8)] == [0b000, 0b001, 0b011, 0b010, 0b110, 0b111, 0b101, 0b100]
    for bits in range(1, 7):
        for lo in range(1 << bits):
            for hi in range(lo, (1 << bits) + 1):
                covered = sorted(v for f, val in gray_blocks(lo, hi, bits) for v in Subcube(bits, f, val).nodes().tolist())
                assert covered == sorted(brgc(i) for i in range(lo, hi))


def test_thesis_example_20x30_in_10_cube():
    """§3.3.1: a 20×30 mesh in a 10-cube leaves an 8-cube, a 7-cube, a 5-cube and a 3-cube."""
    lefts = partition_leftover(20, 30)
    assert sorted(f.bit_count() for f, _ in lefts) == [3, 5, 7, 8]
    assert sum(1 << f.bit_count() for f, _ in lefts) == 1024 - 600
    a = AFLAllocator(Hypercube(10))
    m = a.allocate(Request(600, (20, 30)))
    assert m.size == 600 and Subcube(10, *m.info["cube"]).dim == 10
    assert sorted(Subcube(10, *c).dim for c in m.info["leftover"]) == [3, 5, 7, 8]
    assert CLAIM_CHECKS["mesh_embedding"](m, a) is None


def test_figure_3_4_5x5_in_6_cube():
    lefts = [Subcube(6, f, v) for f, v in partition_leftover(5, 5)]
    # case (a) (regions tie: 3·8 = 3·8): x codewords 5..7 → 11 1* and 1 0 1..., then A_x × L_y
    assert sum(c.size for c in lefts) == 64 - 25
    mesh = set(embed_mesh(5, 5).ravel().tolist())
    assert all(not (set(c.nodes().tolist()) & mesh) for c in lefts)


def test_partition_case_rule_pinned():
    """Region (1) = |L_x|·2^m, region (2) = |L_y|·2^t; the larger goes first, case (a) on a tie."""
    # 3×7: t=2, m=3: region (1) = 1·8 = 8, region (2) = 1·4 = 4 → case (a): first cube has every y bit free
    assert partition_leftover(3, 7)[0][0] & 0b111 == 0b111
    # 7×3: region (1) = 1·4, region (2) = 1·8 → case (b): first cube has every x bit free
    assert partition_leftover(7, 3)[0][0] >> 2 == 0b111
    assert partition_leftover(5, 5) == partition_leftover(5, 5, "a") != partition_leftover(5, 5, "b")


@pytest.mark.parametrize("x,y", [(1, 1), (2, 3), (5, 5), (20, 30), (3, 17), (31, 33), (1, 100)])
def test_mesh_and_leftovers_tile_the_cube_and_cluster_partition(x, y):
    t, m = (x - 1).bit_length(), (y - 1).bit_length()
    k = t + m
    mesh = embed_mesh(x, y)
    # dilation 1
    assert all((int(mesh[i, j]) ^ int(mesh[i + 1, j])).bit_count() == 1 for i in range(x - 1) for j in range(y))
    assert all((int(mesh[i, j]) ^ int(mesh[i, j + 1])).bit_count() == 1 for i in range(x) for j in range(y - 1))
    parts = [Subcube(k, f, v) for f, v in cluster_partition(x, y)]
    assert sorted(v for c in parts for v in c.nodes().tolist()) == sorted(mesh.ravel().tolist())
    lefts = [Subcube(k, f, v) for f, v in partition_leftover(x, y)]
    allnodes = sorted(v for c in parts + lefts for v in c.nodes().tolist())
    assert allnodes == list(range(1 << k))
    # Theorem 1 on the implementation's output
    for c in lefts:
        assert shared_channels(mesh.ravel(), c.nodes(), k) == []
    # coalescing the mesh pieces with every leftover rebuilds the k-cube
    assert coalesce(list(cluster_partition(x, y)) + list(partition_leftover(x, y))) == [((1 << k) - 1, 0)]


def test_square_shape_rules():
    assert square_shape(600) == (24, 25) and square_shape(24) == (4, 6) and square_shape(7) == (1, 7)
    assert square_shape(15) == (1, 15) and square_shape(15, "square_strict") == (3, 5)
    with pytest.raises(InvalidArgument, match="shape_rule"):
        square_shape(4, "round")


# ------------------------------------------------------------ allocators
def test_factories_refuse_other_topologies():
    for name in ("buddy", "gray_code", "free_list", "afl"):
        with pytest.raises(InvalidArgument, match="topology"):
            ALLOCATORS.create(name, topology=Torus((4, 4)))


def test_buddy_and_gray_code_recognition():
    """With node 0 busy, buddy's only free 2-cube in Q3 is 1**; the Gray code also recognises *1* = g(2..5)."""
    q = Hypercube(3)
    b, g = BuddyAllocator(q), GrayCodeAllocator(q)
    assert b.allocate(Request(1)).nodes.tolist() == [0]
    assert g.allocate(Request(1)).nodes.tolist() == [0]
    got_b, got_g = b.allocate(Request(4)), g.allocate(Request(4))
    assert got_b.nodes.tolist() == [4, 5, 6, 7] and str(Subcube(3, *got_b.info["cube"])) == "1**"
    assert got_g.nodes.tolist() == [2, 3, 6, 7] and str(Subcube(3, *got_g.info["cube"])) == "*1*"
    # the cyclic window g(6), g(7), g(0), g(1) = 101, 100, 000, 001 is the subcube *0*
    g2 = GrayCodeAllocator(q)
    held = [g2.allocate(Request(2)) for _ in range(4)]
    g2.release(held[0])
    g2.release(held[3])
    assert str(Subcube(3, *g2.allocate(Request(4)).info["cube"])) == "*0*"


@pytest.mark.parametrize("cls", [BuddyAllocator, GrayCodeAllocator])
@pytest.mark.parametrize("n", [0, 1, 3, 6])
def test_plan_model_places_as_the_allocator(cls, n):
    """Conservative's plan on free positions (the general engine's StatePlan) places every request as the
    allocator does: on random states reached by real grants and releases, for every cube dimension (and one too
    large), the model's token is the positions of the nodes the allocator would grant, its next state the free
    positions after that grant, and a release of an allocation's token gives the state before it.  The Gray code's
    cyclic windows (past the last position) are among them: the test fails without them."""
    from topoalloc.alloc.hypercube.allocators import _PositionsModel, _gray_rank

    rng = random.Random(n)
    a = cls(Hypercube(n))
    pos = _gray_rank(n) if cls is GrayCodeAllocator else np.arange(1 << n)
    bits = lambda nodes: sum(1 << int(p) for p in pos[np.asarray(nodes)])  # noqa: E731
    held, wrapped = [], 0
    for _ in range(120):
        model = _PositionsModel(a)
        assert model.state == bits(np.flatnonzero(~a.busy_mask)) and model.free_count == a.free_count
        for alloc in held:
            assert model.token_of(alloc) == bits(alloc.nodes) and model.cells_of(alloc) == alloc.size
        for k in range(n + 2):
            req = Request(1 << k)
            got = model.place(model.state, req)
            clone = a.snapshot()
            grant = clone.allocate(req) if k <= n else None
            if grant is None:
                assert got is None, (k, model.state)
                continue
            assert got == (bits(grant.nodes), bits(np.flatnonzero(~clone.busy_mask))), (k, model.state)
            assert model.release(got[1], got[0]) == model.state and model.frame(req) == k and model.cells(req) == 1 << k
            wrapped += 0 < k < n and max(pos[grant.nodes]) - min(pos[grant.nodes]) >= 1 << k
        if held and (rng.random() < 0.45 or a.free_count == 0):
            a.release(held.pop(rng.randrange(len(held))))
        else:
            got = a.allocate(Request(1 << rng.randrange(n + 1)))
            if got is not None:
                held.append(got)
    assert cls is BuddyAllocator or n < 3 or wrapped, "no cyclic window was placed"


@pytest.mark.parametrize("spec", ["free_list", "free_list:recognition=lists", "afl", "afl:pieces=as_is", "afl:recognition=lists"])
def test_lists_plan_model_places_and_releases_as_the_allocator(spec):
    """Conservative's plan on the lists' states (the general engine's StatePlan for the free list and the AFL)
    follows the allocator: on random states reached by real grants and releases of meshes that do not fill their
    cube (live meshes, auxiliary lists), for requests of every size, the model's placement is the allocator's grant
    and its next state the allocator's state after it, and releasing that grant from there gives the allocator's
    state after its release; releasing any held job gives the allocator's state after that release (the last one
    resets the lists)."""
    from topoalloc.alloc.hypercube.allocators import _ListsModel, _node_bits

    n = 5
    rng = random.Random(spec)
    a = ALLOCATORS.create(spec, topology=Hypercube(n))
    held, live_seen = [], 0

    def state_of(x):
        m = _ListsModel(x)
        return m.value(m.state)

    for _ in range(150):
        model = _ListsModel(a)
        live_seen += bool(a._live)
        assert model.free_count == a.free_count
        for size in sorted({1, 2, 3, 5, 6, 7, 12, rng.randrange(1, 33), 32, 33}):
            req = Request(size)
            try:
                want = a.snapshot()
                grant = want.allocate(req)
            except RequestNeverFits:  # (the model refuses it too)
                grant = None
            got = model.place(model.state, req)
            if grant is None:
                assert got is None, (size, model.state)
                continue
            assert got is not None
            token, after = got
            assert model.token_value(token)[:2] == (_node_bits(1 << n, grant.nodes), grant.info["cube"]), size
            assert model.value(after) == state_of(want), size
            # released again from the state the placement made (which the model's scratch copy still holds)
            want.release(grant)
            assert model.value(model.release(after, token)) == state_of(want), size
        for alloc in held:
            after = a.snapshot()
            after.release(after._held[alloc.serial])
            assert model.value(model.release(model.state, model.token_of(alloc))) == state_of(after)
        if held and (rng.random() < 0.4 or a.free_count == 0):
            a.release(held.pop(rng.randrange(len(held))))
        else:
            try:
                got = a.allocate(Request(rng.choice([1, 2, 3, 5, 6, 12])))
            except RequestNeverFits:
                got = None
            if got is not None:
                held.append(got)
    assert spec.startswith("free_list") or live_seen, "no live mesh was reached"


def _free_subcube_exists(a, k):
    free = ~a.busy_mask
    n = a.topology.n
    from itertools import combinations

    for comb in combinations(range(n), k):
        fr = sum(1 << p for p in comb)
        for v in range(1 << n):
            if v & fr == 0 and free[Subcube(n, fr, v).nodes()].all():
                return True
    return False


def test_free_list_complete_recognition_vs_lists():
    """Complete recognition finds a k-cube whenever the free nodes hold one; the lists alone sometimes miss it."""
    missed = 0
    for seed in range(30):
        rng = random.Random(seed)
        full, lists = FreeListAllocator(Hypercube(4)), FreeListAllocator(Hypercube(4), recognition="lists")
        for _ in range(40):
            for a in (full, lists):
                held = a.allocations
                if held and rng.random() < 0.45:
                    a.release(held[rng.randrange(len(held))])
            k = rng.randint(0, 3)
            exists = _free_subcube_exists(full, k)
            got = full.allocate(Request(1 << k))
            assert (got is not None) == exists
            if lists.allocate(Request(1 << k)) is None and _free_subcube_exists(lists, k):
                missed += 1
            rng.random()
    assert missed > 0


def test_free_list_mesh_gets_whole_cube_afl_exact():
    fl, afl = FreeListAllocator(Hypercube(10)), AFLAllocator(Hypercube(10))
    assert fl.allocate(Request(24, (4, 6))).size == 32
    assert afl.allocate(Request(24, (4, 6))).size == 24


def test_constant_workload_pairs_share_a_5_cube():
    """Ch. 4: each 4×6 leaves a 3-cube that the following 4×2 takes (AFL); FL needs a 5-cube + a 3-cube."""
    q = Hypercube(5)
    afl = AFLAllocator(q)
    a = afl.allocate(Request(24, (4, 6)))
    b = afl.allocate(Request(8, (4, 2)))
    assert b is not None and set(b.nodes.tolist()) == set(Subcube(5, *a.info["leftover"][0]).nodes().tolist())
    assert shared_channels(a.nodes, b.nodes, 5) == []
    fl = FreeListAllocator(q)
    fl.allocate(Request(24, (4, 6)))
    assert fl.allocate(Request(8, (4, 2))) is None


def test_afl_deallocation_rebuilds_k_cube_and_ownership():
    q = Hypercube(6)
    a = AFLAllocator(q)
    m = a.allocate(Request(25, (5, 5)))
    assert {str(c) for c in a.free_cubes("afl")} == {str(Subcube(6, *c)) for c in m.info["leftover"]}
    # a leftover used by another mesh: the first mesh's release cannot rebuild the 6-cube
    big = max(m.info["leftover"], key=lambda c: c[0].bit_count())
    d = big[0].bit_count()
    other = a.allocate(Request(1 << d, (1, 1 << d)))
    assert other.info["cube"] == big
    a.release(m)
    assert all(c.dim < 6 for c in a.free_cubes("fl"))
    assert not any(Subcube(6, *c).contains_cube(Subcube(6, *big)) for c in [(cc.free, cc.value) for cc in a.free_cubes("fl")])
    check_invariants(a)
    # everything released: the whole 6-cube is one free cube again
    a.release(other)
    assert [str(c) for c in a.free_cubes("fl")] == ["******"] and not a.free_cubes("afl")
    # leftovers all free when the mesh goes: the k-cube comes back by coalescing (a 4-cube mesh in Q6)
    y = a.allocate(Request(32, (4, 8)))  # a whole 5-cube, no leftovers
    x = a.allocate(Request(15, (3, 5)))  # the other 5-cube, 17 leftover nodes on the AFL
    assert x.info["cube"] != y.info["cube"] and a.free_cubes("afl")
    a.release(x)
    assert [(c.free, c.value) for c in a.free_cubes("fl")] == [x.info["cube"]] and not a.free_cubes("afl")


@pytest.mark.parametrize("seed", range(4))
def test_afl_random_meshes_contention_free(seed):
    rng = random.Random(seed)
    q = Hypercube(7)
    for name in ("afl", "free_list", "buddy", "gray_code"):
        a = ALLOCATORS.create(name, topology=q)
        for _ in range(120):
            held = a.allocations
            if held and rng.random() < 0.4:
                a.release(rng.choice(held))
            else:
                x, y = rng.randint(1, 11), rng.randint(1, 8)
                got = a.allocate(Request(x * y, (x, y)))
                if got is not None:
                    for claim in a.claims:
                        assert CLAIM_CHECKS[claim](got, a) is None, (name, claim)
            check_invariants(a)


def test_never_fits_and_bad_shape():
    a = AFLAllocator(Hypercube(4))
    with pytest.raises(RequestNeverFits):
        a.allocate(Request(15, (3, 5)))  # needs a 5-cube
    assert a.allocate(Request(15)) is not None  # 1×15 by the "square" rule
    with pytest.raises(InvalidArgument, match="shape"):
        a.allocate(Request(8, (2, 2, 2)))
    with pytest.raises(RequestNeverFits):
        AFLAllocator(Hypercube(4), shape_rule="square_strict").allocate(Request(15))


def test_mesh_layout_positions():
    a = AFLAllocator(Hypercube(10))
    m = a.allocate(Request(600, (20, 30)))
    lay = mesh_layout(m)
    assert len(lay) == 600 and lay[0] == [0, 0, 0] and lay[1] == [0, 1, 1] and lay[2] == [0, 2, 3]
    assert lay[30] == [1, 0, 1 << 5]
    assert np.array_equal(np.sort([v for _, _, v in lay]), m.nodes)


# -------------------------------------------------------------------- CLI
def test_cli_afl_json_format(capsys):
    import json

    from topoalloc.cli import main

    assert main(["afl", "--cube", "10", "--mesh", "20x30", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out) == {"cube", "mesh", "leftover"}
    assert out["cube"] == "*" * 10
    assert len(out["mesh"]) == 600 and out["mesh"][:3] == [[0, 0, 0], [0, 1, 1], [0, 2, 3]]
    assert all(isinstance(v, int) for row in out["mesh"] for v in row)
    assert sorted(Subcube.parse(c).dim for c in out["leftover"]) == [3, 5, 7, 8]


@pytest.mark.parametrize("argv,needle", [
    (["afl", "--cube", "10", "--mesh", "20x"], "--mesh"),
    (["afl", "--cube", "10", "--mesh", "2x3x4"], "--mesh"),
    (["afl", "--cube", "99", "--mesh", "2x3"], "--cube"),
    (["afl", "--cube", "4", "--mesh", "3x5"], "never fit"),
])
def test_cli_afl_errors(argv, needle, capsys):
    from topoalloc.cli import main

    assert main(argv) == 2
    err = capsys.readouterr().err
    assert needle in err and err.count("\n") == 1


def test_cli_simulate_on_hypercube(capsys):
    import json

    from topoalloc.cli import main

    assert main(["simulate", "--machine", "hypercube:7", "--allocator", "afl", "--scheduler", "fcfs", "--quiet", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["machine"] == "hypercube:7" and out["allocator"].startswith("afl:") and out["jobs"] > 18000
    # Q10 with EASY (reservations answered by replay on allocator snapshots)
    assert main(["simulate", "--machine", "hypercube:10", "--allocator", "free_list", "--quiet", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["machine"] == "hypercube:10" and out["nodes"] == 1024 and out["max_wait"] == 0.0


def test_afl_pieces_option_pinned():
    """Fig. 3.9 step 4 adds the coalesced pieces "to the FL": pieces=merge (default) goes through free-list
    deallocation (merging complementary cubes), pieces=as_is inserts them unmerged."""
    out = {}
    for mode in ("merge", "as_is"):
        a = ALLOCATORS.create(f"afl:pieces={mode}", topology=Hypercube(6))
        m1 = a.allocate(Request(24, (4, 6)))
        p1 = a.allocate(Request(8, (4, 2)))  # takes m1's leftover 3-cube
        m2 = a.allocate(Request(24, (4, 6)))
        p2 = a.allocate(Request(8, (4, 2)))
        assert p1.info["cube"] == m1.info["leftover"][0] and p2.info["cube"] == m2.info["leftover"][0]
        a.release(m1)
        a.release(m2)
        out[mode] = sorted(c.dim for c in a.free_cubes("fl"))
        check_invariants(a)
    assert out["as_is"] == [3, 3, 4, 4]
    assert out["merge"] == [4, 5]  # the two meshes' 4-cubes merge, and so do their 3-cubes
    with pytest.raises(InvalidArgument, match="pieces"):
        ALLOCATORS.create("afl:pieces=never", topology=Hypercube(3))


def test_contending_pairs_metric():
    from topoalloc.metrics.communication import contending_pairs
    from topoalloc.workload.synthetic import Uniform, mesh_workload

    wl = mesh_workload(150, load=3.0, x=Uniform(1, 8), y=Uniform(1, 8), load_definition="service", seed=3)
    for alloc in ("afl", "free_list", "gray_code"):
        r = topoalloc.simulate(wl, machine="hypercube:7", allocator=alloc, scheduler="fcfs", record_allocations=True)
        assert contending_pairs(r) == []
    # the flat allocator packs jobs by node number: some running jobs do share channels
    r = topoalloc.simulate(wl, machine="hypercube:7", allocator="flat", scheduler="fcfs", record_allocations=True)
    pairs = contending_pairs(r)
    assert pairs and all(n > 0 for _, _, n in pairs)
    with pytest.raises(InvalidArgument, match="allocations"):
        contending_pairs(topoalloc.simulate(wl, machine="hypercube:7", allocator="afl", scheduler="fcfs", record_allocations=False))


def test_docstring_examples():
    import doctest

    import topoalloc.alloc.hypercube.allocators as allocators
    import topoalloc.alloc.hypercube.embedding as embedding
    import topoalloc.topology.hypercube as hypercube

    for mod in (hypercube, allocators, embedding):
        res = doctest.testmod(mod)
        assert res.failed == 0 and res.attempted > 0, mod.__name__


def _split_cubes(n: int, draws: list[int]) -> list[tuple[int, int]]:
    """Disjoint cubes tiling the n-cube: split a cube (chosen by each draw) at one of its * bits."""
    cubes = [((1 << n) - 1, 0)]
    for r in draws:
        splittable = [c for c in cubes if c[0]]
        if not splittable:
            break
        free, value = splittable[r % len(splittable)]
        bits = [b for b in range(n) if free >> b & 1]
        b = 1 << bits[(r // 7) % len(bits)]
        cubes.remove((free, value))
        cubes += [(free ^ b, value), (free ^ b, value | b)]
    return cubes


@settings(max_examples=150, deadline=None)
@given(st.integers(1, 6), st.lists(st.integers(0, 10**6), min_size=1, max_size=14), st.integers(0, 10**6))
def test_coalesce_keeps_the_nodes_and_leaves_no_complementary_pair(n, draws, drop):
    """Figure 3.8 on any set of disjoint cubes: the same nodes, disjoint, and no two complementary cubes left.

    (Greedy pairwise merging need not rebuild a whole tiling into one cube: cubes split
    at different bits may end up unmergeable; the AFL release path relies only on these
    two properties and on the mesh + leftover case, tested above.)"""
    cubes = _split_cubes(n, draws)
    if len(cubes) > 2:
        cubes = [c for i, c in enumerate(cubes) if (drop >> i) & 1 == 0] or cubes[:1]
    out = coalesce(list(cubes))
    nodes = lambda cs: sorted(v for f, val in cs for v in Subcube(n, f, val).nodes().tolist())  # noqa: E731
    assert nodes(out) == nodes(cubes)
    for i, a in enumerate(out):
        for b in out[i + 1 :]:
            assert not (a[0] == b[0] and (a[1] ^ b[1]).bit_count() == 1), (a, b)
    assert out == sorted(out, key=lambda c: (-c[0].bit_count(), c[1], c[0]))  # largest first, then by address


def test_coalesce_of_nothing_is_nothing():
    assert coalesce([]) == []


def test_subcube_validation_names_the_argument():
    for free, value in ((0b100, 0), (0, 0b100), (0b01, 0b01)):
        with pytest.raises(InvalidArgument, match=r"^argument subcube=\(2, %d, %d\): expected free and value masks of 2 bits, value zero where free$" % (free, value)):
            Subcube(2, free, value)
    with pytest.raises(InvalidArgument, match=r"^argument subcube='1\*2': expected an address over 0, 1 and \* \(highest bit first\), e\.g\. 10\*\*$"):
        Subcube.parse("1*2")


def test_mesh_sides_must_be_positive():
    from topoalloc.alloc.hypercube.embedding import mesh_dims

    for x, y in ((0, 3), (3, 0)):
        with pytest.raises(InvalidArgument, match=r"^argument mesh='%dx%d': expected positive sides X and Y$" % (x, y)):
            mesh_dims(x, y)


def test_hypercube_arguments_are_named_in_errors():
    q = Hypercube(3)
    for call in (q.distance, q.route):
        with pytest.raises(InvalidArgument, match=r"^argument a=8: expected a node id in 0\.\.7$"):
            call(8, 0)
        with pytest.raises(InvalidArgument, match=r"^argument b=9: expected a node id in 0\.\.7$"):
            call(0, 9)
    with pytest.raises(InvalidArgument, match=r"^argument subcube='1\*': expected 3 symbols over 0, 1 and \*$"):
        q.subcube("1*")
    for bad in (25, -1, True, 2.0):
        with pytest.raises(InvalidArgument, match=r"^argument n=.*: expected a hypercube dimension in 0\.\.24$"):
            Hypercube(bad)
    assert Hypercube(24).n_nodes == 1 << 24 and Hypercube(0).address(0) == "" and Hypercube(0).whole() == Subcube(0, 0, 0)


def test_subcube_relations_from_their_definitions():
    """adjacent (complementary), intersects, channels and whole, against node sets and routes by definition."""
    from topoalloc.proofs.hypercube import definition_channels

    n = 3
    cubes = [Subcube(n, f, v) for f in range(8) for v in range(8) if v & f == 0]
    nodes = {c: set(c.nodes().tolist()) for c in cubes}
    for a in cubes:
        assert {tuple(ch) for ch in a.channels()} == definition_channels(nodes[a], n)
        for b in cubes:
            assert a.intersects(b) == bool(nodes[a] & nodes[b])
            assert a.adjacent(b) == (a.free == b.free and (a.value ^ b.value).bit_count() == 1)
            assert a.contains_cube(b) == (nodes[b] <= nodes[a])
    assert not Subcube(3, 0, 0b110).adjacent(Subcube(3, 0, 0b011))  # two bits apart, one bit in common
    q = Hypercube(n)
    assert q.whole() == Subcube(n, 7, 0) and set(q.whole().nodes().tolist()) == set(range(8))
    assert [q.adjacent(0, v) for v in range(8)] == [(v.bit_count() == 1) for v in range(8)]


# --------------------------------------------- EASY keeps the mask guard between passes
from topoalloc.testing import replaying  # noqa: E402


@pytest.mark.parametrize("cls", [BuddyAllocator, GrayCodeAllocator])
@pytest.mark.parametrize("dim,seed,load", [(5, 1, 1.6), (6, 2, 1.3), (6, 3, 2.0)])
def test_kept_mask_guard_equals_fresh_passes_and_replay(cls, dim, seed, load):
    """EASY keeps the buddy and Gray code guard across passes in which jobs only arrived: the same
    starts and reservations as full passes and as snapshot replay asking every candidate."""
    from topoalloc.workload.synthetic import Uniform, poisson_workload

    m = Hypercube(dim)
    w = poisson_workload(300, load=load, sizes=Uniform(1, m.n_nodes // 2), machine_nodes=m.n_nodes, estimate_factor=2.0, seed=seed)
    runs = [
        topoalloc.simulate(w, machine=m, allocator=cls(m), scheduler="easy", record_reservations=True),
        topoalloc.simulate(w, machine=m, allocator=cls(m), scheduler="easy:incremental=false", record_reservations=True),
        topoalloc.simulate(w, machine=m, allocator=replaying(cls(m)), scheduler="easy", record_reservations=True),
    ]
    for r in runs[1:]:
        assert np.array_equal(runs[0].start, r.start)
        assert runs[0].reservations == r.reservations


def _with_sizes(w, sizes):
    from topoalloc.workload import Workload

    return Workload(job_id=w.job_id, submit=w.submit, run=w.run, size=sizes, requested_time=w.requested_time, header=w.header, source="<sizes>")


def _free_list_runs(cls, dim, seed, load, pow2, order):
    """EASY on the free list (or AFL) with its mask probes and with replaying(allocator): starts,
    reservations and every job's nodes (the same allocate/release calls, so the same lists)."""
    from topoalloc.workload.synthetic import Uniform, poisson_workload

    m = Hypercube(dim)
    w = poisson_workload(250, load=load, sizes=Uniform(1, m.n_nodes // 2), machine_nodes=m.n_nodes, estimate_factor=2.0, seed=seed)
    if pow2:
        w = _with_sizes(w, 1 << np.ceil(np.log2(w.size)).astype(np.int64))
    sched = "easy" if order == "fcfs" else f"easy:order={order}"
    kw = dict(machine=m, scheduler=sched, record_reservations=True, record_allocations=True)
    return w, topoalloc.simulate(w, allocator=cls(m), **kw), topoalloc.simulate(w, allocator=replaying(cls(m)), **kw)


@pytest.mark.parametrize("cls", [FreeListAllocator, AFLAllocator])
@pytest.mark.parametrize("dim,seed,load,order", [(4, 1, 1.6, "fcfs"), (5, 2, 1.3, "sjf"), (6, 3, 2.0, "fcfs"), (6, 4, 1.8, "lpt")])
@pytest.mark.parametrize("pow2", [False, True], ids=["any-size", "pow2"])
def test_free_list_mask_probes_equal_replay(cls, dim, seed, load, order, pow2):
    """The free list's and the AFL's mask probes (earliest fit on ranks, the free-subcube guard; with the
    subcubes live partial meshes make unsafe) against replay on snapshots."""
    w, a, b = _free_list_runs(cls, dim, seed, load, pow2, order)
    assert np.array_equal(a.start, b.start)
    assert a.reservations == b.reservations
    assert all(np.array_equal(x, y) for x, y in zip(a.allocations, b.allocations))


def test_free_list_mask_probes_replay_nothing_on_power_of_two_sizes(monkeypatch):
    """Issue 12's realistic run, small: sizes powers of two, the free list and the AFL under EASY take
    no snapshot (the replay guard and replayed earliest fit take one per question)."""
    from topoalloc.alloc.base import Allocator
    from topoalloc.workload.synthetic import Uniform, poisson_workload

    m = Hypercube(6)
    w = poisson_workload(300, load=1.8, sizes=Uniform(1, 32), machine_nodes=64, estimate_factor=2.0, seed=7)
    w = _with_sizes(w, np.random.default_rng(7).choice([1, 2, 4, 8, 16, 32], size=300))
    taken = []
    real = Allocator.snapshot
    monkeypatch.setattr(Allocator, "snapshot", lambda self: taken.append(1) or real(self))
    for cls in (FreeListAllocator, AFLAllocator):
        r = topoalloc.simulate(w, machine=m, allocator=cls(m), scheduler="easy", engine="python")
        assert np.isfinite(r.start).all()
    assert not taken
    AFLAllocator(m).reservation_guard(Request(3), [])  # (the guard is made without a snapshot too)
    assert not taken
    for order in ("fcfs", "sjf"):
        topoalloc.simulate(w, machine=m, allocator=FreeListAllocator(m, recognition="lists"), scheduler=f"easy:order={order}", engine="python")
    assert taken  # (lists-only recognition: fitting depends on the lists, so the replay probes stay)


# ---------------------------------------------------------------- the free list's helpers, from their definitions
def _cube_nodes(cube) -> set[int]:
    """The nodes of the subcube ``(free, value)``: value with every subset of the free bits set."""
    free, value = cube
    bits = [1 << i for i in range(free.bit_length()) if free >> i & 1]
    out = {value}
    for b in bits:
        out |= {x | b for x in out}
    return out


@st.composite
def _subcubes(draw, n: int, inside=None):
    """A subcube of Q_n (inside the cube ``inside`` if given): free bits any subset, value on the other bits."""
    full = (1 << n) - 1
    if inside is None:
        free = draw(st.integers(0, full))
        value = draw(st.integers(0, full)) & ~free
        return free, value
    qf, qv = inside
    free = draw(st.integers(0, full)) & qf
    value = qv | (draw(st.integers(0, full)) & qf & ~free)
    return free, value


@settings(max_examples=400, deadline=None)
@given(data=st.data(), n=st.sampled_from([3, 4, 5]))
def test_free_list_safety_follows_its_definition(data, n):
    """``_safe`` against Turner's condition stated on node sets: for every live mesh, the cube's nodes
    inside the mesh's k-cube are empty or lie inside one of the mesh's leftover cubes."""
    from topoalloc.alloc.hypercube.allocators import FreeListAllocator

    a = FreeListAllocator(Hypercube(n))
    live = {}
    for _ in range(data.draw(st.integers(0, 3))):
        host = data.draw(_subcubes(n))
        live[host] = tuple(data.draw(st.lists(_subcubes(n, inside=host), max_size=3)))
    a._live = live
    cube = data.draw(_subcubes(n))
    nodes = _cube_nodes(cube)
    want = all(not (nodes & _cube_nodes(host)) or any(nodes & _cube_nodes(host) <= _cube_nodes(l) for l in lefts) for host, lefts in live.items())
    assert a._safe(cube) == want


@settings(max_examples=200, deadline=None)
@given(data=st.data(), n=st.sampled_from([3, 4, 5]))
def test_unsafe_subcubes_follow_the_definition(data, n):
    """``_unsafe_for`` (every k-subcube at once, as the probes and recognition read it) against Turner's
    condition on node sets, for each dimension k: a subcube is unsafe iff, for some live mesh, its nodes
    inside the mesh's k-cube are not empty and lie inside none of the mesh's leftovers."""
    from topoalloc.alloc.hypercube.allocators import _all_subcubes, _unsafe_for

    live = {}
    for _ in range(data.draw(st.integers(1, 3))):
        host = data.draw(_subcubes(n))
        live[host] = tuple(data.draw(st.lists(_subcubes(n, inside=host), max_size=3)))
    for k in range(n + 1):
        frees, values, _ = _all_subcubes(n, k)
        got = _unsafe_for(n, k, live.items())
        for i, cube in enumerate(zip(frees.tolist(), values.tolist())):
            nodes = _cube_nodes(cube)
            safe = all(not (nodes & _cube_nodes(h)) or any(nodes & _cube_nodes(h) <= _cube_nodes(l) for l in lefts) for h, lefts in live.items())
            assert bool(got[i]) == (not safe), (k, cube, live)


@pytest.mark.parametrize("spec", ["afl", "afl:pieces=as_is", "free_list"])
@settings(max_examples=60, deadline=None)
@given(ops=st.lists(st.tuples(st.booleans(), st.integers(0, 2**16), st.integers(1, 64)), max_size=60))
def test_listed_cubes_are_free_and_safe_so_fitting_reads_the_mask_and_the_live_meshes(spec, ops):
    """The lemma the free list's and the AFL's mask probes rest on (``FreeListAllocator._mask_exact``): after
    every allocation and release of meshes of any size (live partial meshes, auxiliary lists), every cube on
    the free and the auxiliary lists is free and safe against every live mesh; so a request fits iff the
    machine has a free, safe subcube of its dimension, whatever the lists hold."""
    from topoalloc.alloc.hypercube.allocators import _all_subcubes, _unsafe_for

    n = 6
    a = ALLOCATORS.create(spec, topology=Hypercube(n))
    held = []
    for release, pick, size in ops:
        if release and held:
            a.release(held.pop(pick % len(held)))
        else:
            got = a.allocate(Request(size))
            if got is not None:
                held.append(got)
        for lists in (a._fl, a._aux):
            for d, group in enumerate(lists):
                for cube in group:
                    assert cube[0].bit_count() == d and not a.busy_mask[sorted(_cube_nodes(cube))].any(), (cube, "listed but busy")
                    assert a._safe(cube), (cube, "listed but unsafe", a._live)
        for k in range(n + 1):
            frees, values, table = _all_subcubes(n, k)
            free = ~a.busy_mask[table].any(axis=1)
            unsafe = _unsafe_for(n, k, a._live.items())
            want = bool((free & ~unsafe).any()) if unsafe is not None else bool(free.any())
            assert a.can_allocate(Request(1 << k)) == want, (k, a._live)


def test_afl_probes_for_a_head_wider_than_the_machine_answer_as_replay():
    """With a partial mesh live, a head needing more dimensions than the machine has never fits: the mask
    probes say so as replay does (no subcube to be unsafe, and none free), rather than fail."""
    from topoalloc.alloc.probes import ReplayGuard, replay_earliest_fit

    a = AFLAllocator(Hypercube(3))
    mesh = a.allocate(Request(3))
    assert mesh is not None and mesh.info["leftover"] and a._live
    head = Request(16)
    assert a.earliest_fit(head, [mesh]) is None and replay_earliest_fit(a, head, [mesh]) is None
    guard, replay = a.reservation_guard(head, []), ReplayGuard(a, head, [])
    cand = a.allocate(Request(1))
    assert guard.admit(cand, False) is False and replay.admit(cand, False) is False


@settings(max_examples=400, deadline=None)
@given(data=st.data(), n=st.sampled_from([3, 4, 5]))
def test_cube_difference_follows_its_definition(data, n):
    """``_difference(c, b)`` for intersecting cubes: disjoint subcubes whose nodes are exactly c's minus b's."""
    from topoalloc.alloc.hypercube.allocators import _difference

    c = data.draw(_subcubes(n))
    b = data.draw(_subcubes(n))
    if not _cube_nodes(c) & _cube_nodes(b):
        return
    pieces = _difference(c, b)
    sets = [_cube_nodes(p) for p in pieces]
    assert all(p[1] & p[0] == 0 for p in pieces)
    assert sum(len(s) for s in sets) == len(set().union(*sets))
    assert set().union(*sets) == _cube_nodes(c) - _cube_nodes(b)


def test_request_dimension_of_meshes_and_bad_shapes():
    """A mesh X×Y takes a ⌈log₂X⌉+⌈log₂Y⌉-cube (more than ⌈log₂XY⌉ for 3×5 or 5×5); a 1-D shape is its size;
    three sides are refused naming the argument and value."""
    from topoalloc.alloc.hypercube.allocators import AFLAllocator, _request_dim

    assert _request_dim(Request(15, (3, 5))) == 5
    assert _request_dim(Request(25, (5, 5))) == 6
    assert _request_dim(Request(8, (8,))) == 3
    assert _request_dim(Request(5)) == 3
    for call in (lambda: _request_dim(Request(8, (2, 2, 2))), lambda: AFLAllocator(Hypercube(4))._shape(Request(8, (2, 2, 2)))):
        with pytest.raises(InvalidArgument) as e:
            call()
        assert (e.value.name, e.value.value, e.value.expected) == ("shape", (2, 2, 2), "an X×Y mesh (two sides) on a hypercube")


def test_free_list_merges_complementary_cubes_repeatedly():
    """Free-list deallocation: a released node merges with its free mate along dimension 0, and the
    result again with its own free mate, up to a 2-cube; the lists list the largest first."""
    from topoalloc.alloc.hypercube.allocators import FreeListAllocator

    a = FreeListAllocator(Hypercube(3))
    x, y, pair, half = (a.allocate(Request(s)) for s in (1, 1, 2, 4))
    assert [al.nodes.tolist() for al in (x, y, pair, half)] == [[0], [1], [2, 3], [4, 5, 6, 7]]
    a.release(pair)
    a.release(x)
    assert [(c.free, c.value) for c in a.free_cubes()] == [(0b001, 0b010), (0, 0)]
    a.release(y)  # {1} + {0} -> {0,1}; + {2,3} -> {0..3}
    assert [(c.free, c.value) for c in a.free_cubes()] == [(0b011, 0)]
    b = FreeListAllocator(Hypercube(3))
    b._fl = [{}, {(0b001, 0b100): None, (0b010, 0b001): None}, {}, {}]
    assert [(c.free, c.value) for c in b.free_cubes()] == [(0b010, 0b001), (0b001, 0b100)]  # by value, then free mask


def _afl_sequence(n: int, seed: int, pieces: str, ops: int = 400):
    """Random allocations (sizes 1 .. 2**n / 2, most of them partial meshes) and releases on the AFL,
    each new allocation checked for contention with every held one; returns the placements made."""
    from topoalloc.testing.conformance import _contention_free

    rng = random.Random(seed)
    a = AFLAllocator(Hypercube(n), pieces=pieces)
    held, placed = [], []
    for _ in range(ops):
        if held and (rng.random() < 0.45 or len(held) > 12):
            a.release(held.pop(rng.randrange(len(held))))
            continue
        got = a.allocate(Request(rng.randint(1, 1 << (n - 1))))
        if got is None:
            placed.append(None)
            continue
        assert _contention_free(got, a) is None, (seed, got.info)
        held.append(got)
        placed.append(got.nodes.tolist())
    return placed


@pytest.mark.parametrize("pieces", ["merge", "as_is"])
def test_afl_stays_contention_free_through_merges(pieces):
    """Turner's Theorem 1 in use: on Q5 and Q6, over random sequences where leftovers are split, taken
    and released, no cube formed by a merge or handed out ever shares an E-cube channel with a live mesh
    (the merges consult the safety rule; unowned AFL cubes merge into the FL).  The placements are
    also pinned (a digest) so that a change of where the AFL places things is a decision, not an accident."""
    import hashlib

    runs = [_afl_sequence(n, seed, pieces) for n in (5, 6) for seed in range(12)]
    digest = hashlib.sha256(repr(runs).encode()).hexdigest()[:16]
    assert digest == {"merge": "245dddad97f6e997", "as_is": "922c0590c40be493"}[pieces]


@pytest.mark.parametrize("cls", [BuddyAllocator, GrayCodeAllocator])
def test_subcube_probes_at_their_edges(cls):
    """The buddy and Gray code probes on Q3, by hand: the whole machine is a request like any other;
    the earliest fit counts the releases (0: fits now, None: never), with busy nodes no release frees;
    the mask guard refuses a candidate whose window leaves the head no window at the shadow time."""
    from topoalloc.alloc.hypercube.allocators import cube_of

    a = cls(Hypercube(3))
    assert not a.reservation_guard(Request(1), []).may_admit(Request(8), False)  # the whole machine past the shadow time
    whole = a.allocate(Request(8))
    assert whole is not None and whole.size == 8
    a.release(whole)
    assert a.earliest_fit(Request(8), []) == 0
    x, y, pair, half = (a.allocate(Request(s)) for s in (1, 1, 2, 4))
    assert a.free_count == 0
    assert a.earliest_fit(Request(2), [pair]) == 1  # x and y stay busy
    assert a.earliest_fit(Request(4), [pair]) is None
    assert a.earliest_fit(Request(8), [x, y, pair, half]) == 4
    assert a.earliest_fit(Request(16), [x, y, pair, half]) is None
    a.release(half)
    # the head needs 4 nodes; once `pair` ends (the shadow) the 4 it gets are `half`'s free nodes
    g = a.reservation_guard(Request(4), [pair])
    assert not g.may_admit(Request(4), False)  # it would take `half`'s nodes past the shadow time
    assert g.may_admit(Request(4), True)
    assert g.may_admit(Request(16), False)  # too wide: allocate refuses it, the guard need not
    blocker = a.allocate(Request(4))
    assert not g.admit(blocker, False)
    assert g.releases == [pair]
    assert g.admit(blocker, True) and g.releases == [pair, blocker]
    for al in (blocker, pair, x, y):
        a.release(al)
    singles = [a.allocate(Request(1)) for _ in range(8)]
    for al in singles:
        if int(al.nodes[0]) in (2, 3, 6, 7):
            a.release(al)
    g = a.reservation_guard(Request(2), [])  # free: {2, 3} and {6, 7}; one may be taken past the shadow time
    first = a.allocate(Request(2))
    assert g.admit(first, False)
    assert not g.may_admit(Request(2), False)  # the second would leave the head none: the first is in the shadow mask
    assert cube_of([]) is None and cube_of([5]) == (0, 5) and cube_of([0, 1, 2]) is None


def test_complete_recognition_up_to_its_limit():
    """The free list's complete recognition works up to MAX_COMPLETE_DIM (15) inclusive, the AFL's up to 12: a free
    pair of nodes (straddling two listed cubes) is found whatever the lists say.  The spec and summary say which
    recognition a run has; asking for
    complete recognition above the limit is an error naming the argument, the value and the limit.  (Without the
    option: complete wherever it is available, the free list up to Q15, the AFL up to Q12.)"""
    from topoalloc.alloc.hypercube.allocators import AFL_MAX_COMPLETE_DIM, DEFAULT_COMPLETE_DIM, MAX_COMPLETE_DIM, AFLAllocator, FreeListAllocator

    assert (MAX_COMPLETE_DIM, AFL_MAX_COMPLETE_DIM, DEFAULT_COMPLETE_DIM) == (15, 12, 15)
    for n, how in ((12, "complete"), (13, "complete"), (15, "complete"), (16, "lists")):
        assert FreeListAllocator(Hypercube(n)).recognition == how
    for n, how in ((12, "complete"), (13, "lists")):
        assert AFLAllocator(Hypercube(n)).recognition == how
    for n in (12, 13, 15):
        a = FreeListAllocator(Hypercube(n), recognition="complete")
        a._busy[:] = True
        a._busy[[1, 3]] = False  # (the cube (2, 1): free bit 1, value 1)
        assert a._recognisable(1) == (2, 1)
        lists = FreeListAllocator(Hypercube(n), recognition="lists")
        lists._busy[:] = a._busy
        assert lists._recognisable(1) is None
    assert topoalloc.make_allocator("free_list", "hypercube:12").describe() == "free_list:recognition=complete"
    assert topoalloc.make_allocator("free_list", "hypercube:13").describe() == "free_list:recognition=complete"
    assert topoalloc.make_allocator("free_list", "hypercube:16").describe() == "free_list:recognition=lists"
    assert topoalloc.make_allocator("free_list:recognition=complete", "hypercube:14").describe() == "free_list:recognition=complete"
    assert topoalloc.make_allocator("afl", "hypercube:14").recognition == "lists"
    assert topoalloc.make_allocator("free_list:recognition=lists", "hypercube:5").recognition == "lists"
    with pytest.raises(InvalidArgument, match=r"recognition='complete'.*free_list's complete recognition is available up to hypercube:15"):
        FreeListAllocator(Hypercube(16), recognition="complete")
    with pytest.raises(InvalidArgument, match=r"recognition='complete'.*afl's complete recognition is available up to hypercube:12"):
        AFLAllocator(Hypercube(13), recognition="complete")
    with pytest.raises(InvalidArgument, match="recognition='some'"):
        FreeListAllocator(Hypercube(3), recognition="some")


@pytest.mark.parametrize("scheduler", ["fcfs", "easy", "conservative"])
def test_complete_recognition_above_q12_makes_the_same_run_with_the_reference(scheduler, monkeypatch):
    """The free list with complete recognition on Q13, on the general engine: the compiled search and the reference
    without a node table (placements, EASY's earliest fit and guard, conservative's plan) give the same starts and
    nodes; and the kernel (layout 3, now up to Q15) gives them too."""
    A = _compiled_recognition()
    rng = np.random.default_rng(5)
    n = 160
    w = topoalloc.workload.Workload(job_id=np.arange(1, n + 1), submit=np.sort(rng.integers(0, 3000, n)).astype(float),
                                    run=rng.integers(1, 900, n).astype(float), size=1 << rng.integers(3, 13, n),
                                    requested_time=rng.integers(900, 2000, n).astype(float), source="<seeded>")
    runs = []
    for compiled, engine, how in ((True, "python", "complete"), (False, "python", "complete"), (True, "compiled", "complete"),
                                  (True, "python", "lists")):
        monkeypatch.setattr(A, "USE_COMPILED", compiled)
        r = topoalloc.simulate(w, machine="hypercube:13", allocator=f"free_list:recognition={how}", scheduler=scheduler,
                               record_allocations=True, locality=False, engine=engine)
        runs.append((r.start.tolist(), [a.tolist() for a in r.allocations]))
    assert runs[0] == runs[1] == runs[2]
    assert runs[3][0] != runs[0][0]  # (recognition found cubes the lists did not hold: the schedules differ)


@settings(max_examples=200, deadline=None)
@given(a=st.sets(st.integers(0, 15), min_size=2, max_size=6), b=st.sets(st.integers(0, 15), min_size=2, max_size=6))
def test_shared_channels_sorted_by_dimension_then_node(a, b):
    """The documented order: (dimension, node, direction), not the channel tuple's own (node first)."""
    got = shared_channels(sorted(a), sorted(b), 4)
    assert got == sorted(got, key=lambda c: (c.dimension, c.node, c.direction))
    assert got == sorted(set(got), key=lambda c: (c.dimension, c.node, c.direction))


def test_block_nodes_are_shared_only_for_small_blocks():
    """Grants of a small block share one read-only node array; a block above the kept size is built per grant
    (the caches then hold at most 4,096 blocks of 1,024 nodes each, whatever the machine's size)."""
    from topoalloc.alloc.hypercube import allocators as A

    small = A._buddy_block(64, 6)
    assert A._buddy_block(64, 6) is small and not small[0].flags.writeable
    big = A._buddy_block(0, 11)
    again = A._buddy_block(0, 11)
    assert big[0] is not again[0] and big[1] == again[1] == ((1 << 11) - 1, 0)
    assert A._cube_nodes((1 << 11) - 1, 0) is not A._cube_nodes((1 << 11) - 1, 0)
    assert A._cube_nodes(0b111, 8) is A._cube_nodes(0b111, 8)


# ------------------------------------------------ the block tree (large machines' own searches)
def _tree_forced(cls):
    """``cls`` with its own searches always through the block tree (it is used from Q15 up otherwise)."""
    return type(f"Tree{cls.__name__}", (cls,), {"TREE_MIN_DIM": 0})


@pytest.mark.parametrize("cls", [BuddyAllocator, GrayCodeAllocator], ids=["buddy", "gray_code"])
def test_block_tree_gives_the_bit_parallel_search_blocks_and_stays_exact(cls):
    """On random grants and releases (Q1-Q8, requests of every size, shaped or not), the tree-backed allocator
    answers ``can_allocate`` and grants exactly as the bit-parallel search does, and after every step its tree
    equals one built afresh from the busy mask (so updates never drift)."""
    from topoalloc.alloc.hypercube import allocators as A

    rng = random.Random(4)
    steps = 0
    for n in range(1, 9):
        for _ in range(12):
            tree_side, bits_side = _tree_forced(cls)(Hypercube(n)), cls(Hypercube(n))
            held = []
            for _ in range(50):
                if held and rng.random() < 0.45:
                    x, y = held.pop(rng.randrange(len(held)))
                    tree_side.release(x)
                    bits_side.release(y)
                else:
                    size = 1 << rng.randrange(n + 1) if rng.random() < 0.8 else rng.randint(1, 1 << n)
                    req = Request(size)
                    assert tree_side.can_allocate(req) == bits_side.can_allocate(req)
                    x, y = tree_side.allocate(req), bits_side.allocate(req)
                    assert (x is None) == (y is None)
                    if x is not None:
                        assert x.nodes.tolist() == y.nodes.tolist() and x.info == y.info
                        held.append((x, y))
                tree = tree_side._own_tree()
                free = ~tree_side._busy[A._gray_order(n)] if tree_side._gray else ~tree_side._busy
                fresh = A._BlockTree(free, tree_side._gray, tree.stamp)
                for kept, built in zip(tree.arrays, fresh.arrays):
                    assert all((a == b).all() for a, b in zip(kept, built))
                steps += 1
    assert steps == 8 * 12 * 50


@pytest.mark.parametrize("cls", [BuddyAllocator, GrayCodeAllocator], ids=["buddy", "gray_code"])
def test_block_tree_is_kept_across_grants_and_rebuilt_after_a_clone(cls):
    """The tree is updated in place by the allocator's own grants and releases; a snapshot starts without one."""
    a = _tree_forced(cls)(Hypercube(6))
    x = a.allocate(Request(4))
    tree = a._own_tree()
    y = a.allocate(Request(8))
    a.release(x)
    assert a._own_tree() is tree and a.token_of(y)[1] == 3
    clone = a.snapshot()
    assert clone._tree is None and clone.allocate(Request(2)).nodes.tolist() == a.snapshot().allocate(Request(2)).nodes.tolist()
    assert a._own_tree() is tree


@pytest.mark.parametrize("check", list(CHECKS))
@pytest.mark.parametrize("cls", [BuddyAllocator, GrayCodeAllocator], ids=["buddy", "gray_code"])
@pytest.mark.parametrize("n", [3, 5])
def test_block_tree_passes_the_conformance_checks(cls, n, check):
    """Every conformance check on the tree-backed searches (which the registered allocators use from Q15 up,
    beyond the suite's small machines)."""
    CHECKS[check](lambda: _tree_forced(cls)(Hypercube(n)), **({"examples": 20} if check == "stateful" else {}))


def test_block_tree_threshold_is_where_the_tree_is_used():
    """Below TREE_MIN_DIM the own searches are bit-parallel (no tree); from it up they go through the tree."""
    small, large = BuddyAllocator(Hypercube(BuddyAllocator.TREE_MIN_DIM - 1)), GrayCodeAllocator(Hypercube(GrayCodeAllocator.TREE_MIN_DIM))
    small.allocate(Request(2))
    large.allocate(Request(2))
    assert small._tree is None and large._tree is not None


# ------------------------------------------------ complete recognition, compiled
def _compiled_recognition():
    from topoalloc.alloc.hypercube import allocators

    if allocators._csubcube is None:
        pytest.skip("the compiled subcube search (_csubcube) is not built")
    return allocators


def test_compiled_recognition_answers_as_the_node_table():
    """``_csubcube.first_free`` gives the node table's answer (the first k-subcube in ``_all_subcubes``' order whose
    nodes are free and whose row is not excluded) on random states of Q0..Q10 and Q12: busy masks and release
    numbers against a threshold, with no rows, unsafe marks or safe-after numbers, every k from 0 to n + 1."""
    A = _compiled_recognition()
    rng = np.random.default_rng(20261204)
    for case in range(2500):
        n = 12 if case % 250 == 0 else int(rng.integers(0, 11))
        k = int(rng.integers(0, n + 2))
        busy = rng.random(1 << n) < rng.random() * 0.9
        if k > n:
            assert A._csubcube.first_free(busy, n, k, None, 0) == -1
            continue
        _, _, table = A._all_subcubes(n, k)
        rows = table.shape[0]
        unsafe = None if case % 2 else rng.random(rows) < rng.random()
        ok = ~busy[table].any(axis=1) & (True if unsafe is None else ~unsafe)
        want = int(ok.argmax()) if ok.any() else -1
        assert A._csubcube.first_free(busy, n, k, unsafe, 0) == want, (n, k)
        A.USE_COMPILED = False
        try:
            assert A._first_free_safe(busy, n, k, unsafe) == want
        finally:
            A.USE_COMPILED = True
        rank = np.where(busy, rng.integers(1, 6, 1 << n), 0)
        after = None if unsafe is None else np.where(unsafe, rng.integers(0, 7, rows), 0)
        r = int(rng.integers(0, 7))
        ok = (rank[table].max(axis=1) <= r) & (True if after is None else after <= r)
        assert A._csubcube.first_free(rank, n, k, after, r) == (int(ok.argmax()) if ok.any() else -1), (n, k, r)


def test_recognition_without_the_node_table_answers_as_the_table():
    """The reference above Q12 (``_first_free_py``, a depth-first search in numpy, no node table) gives the node
    table's answer on random states of Q0..Q10, with busy masks or release numbers and every kind of rows; and
    ``_subcube_at`` names the subcube at each index as the table's keys do."""
    A = _compiled_recognition()
    rng = np.random.default_rng(20261205)
    for case in range(600):
        n = int(rng.integers(0, 11))
        k = int(rng.integers(0, n + 2))
        busy = rng.random(1 << n) < rng.random() * 0.9
        if k > n:
            assert A._first_free_py(busy, n, k, None, 0) == -1
            continue
        _, _, table = A._all_subcubes(n, k)
        rows = table.shape[0]
        unsafe = None if case % 2 else rng.random(rows) < rng.random()
        ok = ~busy[table].any(axis=1) & (True if unsafe is None else ~unsafe)
        assert A._first_free_py(busy, n, k, unsafe, 0) == (int(ok.argmax()) if ok.any() else -1), (n, k)
        rank = np.where(busy, rng.integers(1, 6, 1 << n), 0)
        after = None if unsafe is None else np.where(unsafe, rng.integers(0, 7, rows), 0)
        r = int(rng.integers(0, 7))
        ok = (rank[table].max(axis=1) <= r) & (True if after is None else after <= r)
        assert A._first_free_py(rank, n, k, after, r) == (int(ok.argmax()) if ok.any() else -1), (n, k, r)
    for n in range(9):
        for k in range(n + 1):
            frees, values = A._subcube_keys(n, k)
            assert [A._subcube_at(n, k, i) for i in range(frees.size)] == list(zip(frees.tolist(), values.tolist()))


def test_recognition_above_q12_answers_as_the_reference():
    """Q13 to Q15: the compiled search against the reference without a node table, on random busy masks from nearly
    empty to nearly full (where most searches find nothing and visit many masks), and with release numbers."""
    A = _compiled_recognition()
    rng = np.random.default_rng(13)
    for case in range(36):
        n = 13 + case % 3
        k = int(rng.integers(0, 9))
        busy = rng.random(1 << n) < (0.02, 0.4, 0.8, 0.97)[case % 4]
        assert A._csubcube.first_free(busy, n, k, None, 0) == A._first_free_py(busy, n, k, None, 0), (n, k)
        rank = np.where(busy, rng.integers(1, 6, 1 << n), 0)
        r = int(rng.integers(0, 6))
        assert A._csubcube.first_free(rank, n, k, None, r) == A._first_free_py(rank, n, k, None, r), (n, k, r)


def test_recognition_on_small_and_large_cubes_in_turn():
    """The compiled search reads its levels through lists of the words that are not 0, in one static buffer kept 0
    outside them between searches: searches on small and large cubes in turn (in one process) each answer as the
    reference."""
    A = _compiled_recognition()
    rng = np.random.default_rng(5)
    for case, n in enumerate((9, 13, 10, 14, 5, 11, 8, 15, 12, 7, 13)):
        k = int(rng.integers(0, min(n, 8) + 1))
        busy = rng.random(1 << n) < (0.1, 0.5, 0.85)[case % 3]
        assert A._csubcube.first_free(busy, n, k, None, 0) == A._first_free_py(busy, n, k, None, 0), (n, k)
    # a small cube all free (its levels written whole, full of bases), then Q13 with two free edges and no free
    # square: what the small cube left in its levels must not read as bases of the large one
    assert A._csubcube.first_free(np.zeros(1 << 10, dtype=bool), 10, 10, None, 0) == 0
    busy = np.ones(1 << 13, dtype=bool)
    busy[[0, 1, 8190, 8191]] = False
    assert A._first_free_py(busy, 13, 2, None, 0) == -1
    assert A._csubcube.first_free(busy, 13, 2, None, 0) == -1
    assert A._csubcube.first_free(busy, 13, 1, None, 0) == A._first_free_py(busy, 13, 1, None, 0) >= 0


def test_compiled_recognition_refuses_what_it_cannot_read():
    A = _compiled_recognition()
    busy = np.zeros(16, dtype=bool)
    with pytest.raises(ValueError, match="nodes: expected 32 items, got 16"):
        A._csubcube.first_free(busy, 5, 2, None, 0)
    with pytest.raises(ValueError, match="rows: expected 24 items, got 3"):
        A._csubcube.first_free(busy, 4, 2, np.zeros(3, dtype=bool), 0)
    with pytest.raises(ValueError, match="1- or 8-byte items"):
        A._csubcube.first_free(np.zeros(16, dtype=np.int32), 4, 2, None, 0)
    with pytest.raises(ValueError, match="n = 16: expected 0 <= n <= 15"):
        A._csubcube.first_free(np.zeros(1 << 16, dtype=bool), 16, 2, None, 0)
    assert A._csubcube.first_free(busy, 4, 5, None, 0) == -1


@pytest.mark.parametrize("spec,machine,scale,scheduler,jobs", [
    ("afl", "hypercube:7", 0.75, "easy", 3000),
    ("afl:pieces=as_is", "hypercube:9", 3.0, "easy:order=sjf", 2000),
    ("afl", "hypercube:8", 1.5, "conservative", 300),
    ("free_list", "hypercube:9", 2.5, "easy", 2000),
])
def test_compiled_recognition_makes_the_same_run(spec, machine, scale, scheduler, jobs, monkeypatch):
    """The AFL on sizes that are not powers of two (the general engine: placements, EASY's earliest fit and guard,
    conservative's plan) and the free list on the general engine: the same starts and nodes with the compiled search
    as with the numpy reference."""
    A = _compiled_recognition()
    from topoalloc.workload import default_trace_path, read_swf

    w = read_swf(default_trace_path()).take(np.arange(jobs))
    runs = []
    for compiled in (True, False):
        monkeypatch.setattr(A, "USE_COMPILED", compiled)
        r = topoalloc.simulate(w, machine=machine, allocator=spec, scheduler=scheduler, clean=True, scale_sizes=scale,
                               record_allocations=True, engine="python")
        runs.append((r.start.tolist(), r.allocations[0].tolist()))
    assert runs[0] == runs[1]
