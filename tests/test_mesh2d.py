"""2-D mesh allocators (Bani-Ahmad): brute-force checks on random occupancy grids, and the choices the paper leaves open.

The conformance suite runs every registered allocator with plain sizes; here
the same properties are checked with shaped requests (the paper's workload),
and each search is compared with a plain brute-force reference.
"""

from __future__ import annotations

import itertools
import random

import numpy as np
import pytest

import topoalloc
from topoalloc.alloc import Request
from topoalloc.alloc.mesh2d import core
from topoalloc.alloc.mesh2d import (
    ANCA,
    INDEXINGS,
    MBS,
    PALD,
    AdaptiveScan,
    BestFit,
    Buddy2D,
    FirstFit,
    FrameSliding,
    Layers,
    Paging,
    RandomAllocator,
    anca_levels,
    base4_digits,
    frame_for,
    free_bases,
    page_order,
    reference_free_bases,
    square_roots,
)
from topoalloc.errors import InvalidArgument, RequestNeverFits
from topoalloc.registry import ALLOCATORS
from topoalloc.testing.conformance import check_allocation_valid, check_invariants
from topoalloc.topology import parse_machine
from topoalloc.workload.synthetic import Uniform, poisson_workload

MACHINES = ("mesh:6x5", "mesh:8x8", "torus:5x4", "mesh:4x3x3")


def occupy(allocator, busy_nodes):
    """Bring ``allocator`` to a state where exactly ``busy_nodes`` are busy (1 x 1 grants, the rest released)."""
    held = {}
    while allocator.free_count:
        a = allocator.allocate(Request(1, (1, 1)))
        held[int(a.nodes[0])] = a
    for v, a in held.items():
        if v not in busy_nodes:
            allocator.release(a)
    return allocator


def random_busy(top, rng, p=None):
    p = rng.uniform(0.1, 0.8) if p is None else p
    return {v for v in range(top.n_nodes) if rng.random() < p}


def grid_of(top, busy):
    g = Layers(tuple(top.dims))
    b = np.zeros((g.rows, g.X), dtype=bool)
    for v in busy:
        b[v // g.X, v % g.X] = True
    return g, b


def brute_bases(b, Y, w, l):
    rows, X = b.shape
    return [(x, r) for r in range(rows) for x in range(X)
            if x + w <= X and r % Y + l <= Y and r + l <= rows and not b[r : r + l, x : x + w].any()]


def brute_score(b, Y, x, r, w, l, criterion):
    rows, X = b.shape
    y0 = r - r % Y
    s = 0
    cells = [(x + i, r - 1) for i in range(w)] + [(x + i, r + l) for i in range(w)]
    cells += [(x - 1, r + j) for j in range(l)] + [(x + w, r + j) for j in range(l)]
    for cx, cr in cells:
        outside = cx < 0 or cx >= X or cr < y0 or cr >= y0 + Y
        s += (criterion == "perimeter") if outside else int(b[cr, cx])
    return s


FRAMES = [(1, 1), (2, 1), (1, 2), (2, 2), (3, 2), (2, 3), (4, 1), (3, 3), (5, 2)]


def fitting(a):
    return [(w, l) for w, l in FRAMES if w <= a.geom.X and l <= a.geom.Y]


@pytest.mark.parametrize("machine", MACHINES)
def test_free_bases_equal_prefix_sum_reference(machine):
    top = parse_machine(machine)
    rng = random.Random(1)
    for _ in range(30):
        busy = random_busy(top, rng)
        g, b = grid_of(top, busy)
        free = g.all_free & ~g.mask_of_nodes(np.array(sorted(busy), dtype=np.int64)) if busy else g.all_free
        for w, l in FRAMES:
            v = free_bases(g, free, w, l)
            got = [g.base_of_bit(int(i)) for i in g.set_bits(v)] if v else []
            assert got == sorted(reference_free_bases(b, g.Y, w, l), key=lambda t: (t[1], t[0])) == brute_bases(b, g.Y, w, l)


@pytest.mark.parametrize("machine", MACHINES)
def test_first_fit_takes_the_first_free_base_in_row_major_order(machine):
    top = parse_machine(machine)
    rng = random.Random(2)
    for _ in range(25):
        busy = random_busy(top, rng)
        a = occupy(FirstFit(top), busy)
        _, b = grid_of(top, busy)
        for w, l in fitting(a):
            bases = brute_bases(b, a.geom.Y, w, l)
            assert a.can_allocate(Request(w * l, (w, l))) == bool(bases)
            got = a.allocate(Request(w * l, (w, l)))
            if not bases:
                assert got is None
                continue
            x, r = bases[0]
            assert got.info["blocks"][0] == (x, r, w, l)
            check_allocation_valid(got, a)
            a.release(got)


@pytest.fixture(params=["compiled", "python"])
def search(request, monkeypatch):
    """Best Fit's search: the compiled extension (skipped where it is not built) or the Python reference."""
    if request.param == "compiled" and core._cmesh is None:
        pytest.skip("the compiled Best Fit search is not built")
    monkeypatch.setattr(core, "USE_COMPILED", request.param == "compiled")
    return request.param


@pytest.mark.parametrize("criterion", ["perimeter", "busy"])
@pytest.mark.parametrize("machine", MACHINES)
def test_best_fit_takes_the_best_score_first_in_row_major_order(machine, criterion, search):
    top = parse_machine(machine)
    rng = random.Random(3)
    for _ in range(20):
        busy = random_busy(top, rng)
        a = occupy(BestFit(top, criterion=criterion), busy)
        _, b = grid_of(top, busy)
        Y = a.geom.Y
        for w, l in fitting(a):
            bases = brute_bases(b, Y, w, l)
            got = a.allocate(Request(w * l, (w, l)))
            if not bases:
                assert got is None
                continue
            scores = [brute_score(b, Y, x, r, w, l, criterion) for x, r in bases]
            best = bases[scores.index(max(scores))]
            assert got.info["blocks"][0] == (*best, w, l), (w, l, scores)
            a.release(got)


@pytest.mark.parametrize("criterion", ["perimeter", "busy"])
def test_best_fit_prefix_sums_on_a_large_machine(criterion, search):
    top = parse_machine("mesh:50x46x2")  # above PREFIX_SUMS_ABOVE: the Python search scores from prefix sums
    rng = random.Random(9)
    a = BestFit(top, criterion=criterion)
    assert (a._perim is not None) == (search == "python") and (a._cbest is not None) == (search == "compiled")
    for _ in range(3):
        busy = random_busy(top, rng, rng.uniform(0.2, 0.6))
        for x in list(a.allocations):
            a.release(x)
        occupy(a, busy)
        _, b = grid_of(top, busy)
        for w, l in [(1, 1), (2, 3), (5, 2), (4, 4)]:
            bases = brute_bases(b, 46, w, l)
            got = a.allocate(Request(w * l, (w, l)))
            scores = [brute_score(b, 46, x, r, w, l, criterion) for x, r in bases]
            assert got.info["blocks"][0] == (*bases[scores.index(max(scores))], w, l)
            a.release(got)


@pytest.mark.skipif(core._cmesh is None, reason="the compiled Best Fit search is not built")
@pytest.mark.parametrize("machine", ["mesh:1x1", "mesh:1x9", "mesh:9x1", "mesh:63x2", "mesh:64x3", "mesh:65x4x2", "mesh:20x20", "mesh:7x5x2x2", "torus:31x33"])
def test_compiled_best_fit_equals_the_python_search(machine, monkeypatch):
    """The compiled search gives the Python search's base for every frame on random states, both criteria
    (widths around the 64-bit word size, several layers, one-wide meshes, full and empty machines)."""
    top = parse_machine(machine)
    rng = random.Random(machine)
    for criterion in ("perimeter", "busy"):
        monkeypatch.setattr(core, "USE_COMPILED", False)
        py = BestFit(top, criterion=criterion)
        monkeypatch.setattr(core, "USE_COMPILED", True)
        c = BestFit(top, criterion=criterion)
        assert c._cbest is not None and py._cbest is None
        for p in (0.0, 1.0, 0.2, 0.5, 0.8):
            busy = random_busy(top, rng, p)
            for a in (py, c):
                for x in list(a.allocations):
                    a.release(x)
                occupy(a, busy)
            g = c.geom
            frames = {(rng.randint(1, g.X), rng.randint(1, g.Y)) for _ in range(12)} | {(1, 1), (g.X, 1), (1, g.Y), (g.X, g.Y)}
            for w, l in sorted(frames):
                assert c._best_fit(w, l) == py._best_fit(w, l), (criterion, p, w, l)
            assert c._best_fit(g.X + 1, 1) is None and c._best_fit(1, g.Y + 1) is None


def test_compiled_best_fit_refuses_bad_arguments():
    if core._cmesh is None:
        pytest.skip("the compiled Best Fit search is not built")
    g = Layers((4, 3))
    with pytest.raises(ValueError, match="inconsistent geometry"):
        core._cmesh.best_fit(g.all_free.to_bytes(g.nbytes, "little"), g.S + 1, g.LS, g.X, g.Y, g.nbits, 1, 1, 1)
    with pytest.raises(ValueError, match="expected 3 bytes"):
        core._cmesh.best_fit(b"\xff" * 40, g.S, g.LS, g.X, g.Y, g.nbits, 1, 1, 1)
    with pytest.raises(TypeError, match="expected 9 arguments"):
        core._cmesh.best_fit(b"")


@pytest.mark.parametrize("machine", MACHINES)
def test_frame_sliding_examines_the_stride_lattice_only(machine):
    top = parse_machine(machine)
    rng = random.Random(4)
    misses = 0
    for _ in range(25):
        busy = random_busy(top, rng, 0.3)
        a = occupy(FrameSliding(top), busy)
        _, b = grid_of(top, busy)
        Y = a.geom.Y
        for w, l in fitting(a):
            bases = brute_bases(b, Y, w, l)
            anchors = {}
            for r in range(b.shape[0]):
                for x in range(b.shape[1]):
                    if not b[r, x]:
                        anchors.setdefault(r // Y, (x, r))
            lattice = [(x, r) for x, r in bases if (x - anchors[r // Y][0]) % w == 0 and (r - anchors[r // Y][1]) % l == 0]
            got = a.allocate(Request(w * l, (w, l)))
            if not lattice:
                assert got is None
                misses += bool(bases)
                continue
            assert got.info["blocks"][0] == (*lattice[0], w, l)
            a.release(got)
    assert misses > 0  # Frame Sliding is not complete: some free submesh off the lattice was missed


def test_adaptive_scan_rotates_only_when_needed():
    top = parse_machine("mesh:6x3")
    a = AdaptiveScan(top)
    x = a.allocate(Request(3, (1, 3)))
    assert x.info["blocks"][0] == (0, 0, 1, 3)
    y = a.allocate(Request(4, (1, 4)))  # 1 x 4 never stands in 3 rows: 4 x 1
    assert y.info["blocks"][0] == (1, 0, 4, 1)
    assert a.fit_key(Request(4, (1, 4))) == a.fit_key(Request(4, (4, 1)))
    with pytest.raises(RequestNeverFits):
        FirstFit(top).allocate(Request(4, (1, 4)))


# ------------------------------------------------------------------ buddies
def test_mbs_initial_blocks_of_20x20():
    roots = square_roots(Layers((20, 20)))
    assert sorted(k for k, _, _ in roots) == [2] * 9 + [4]
    assert (4, 0, 0) in roots
    g = Layers((20, 20))
    seen = np.zeros(400, int)
    for k, x, r in roots:
        seen[g.rect_nodes((x, r, 1 << k, 1 << k))] += 1
    assert (seen == 1).all()


def _expected_mbs(p, K):
    need = [0] * (K + 1)
    for j, d in enumerate(base4_digits(p)):
        need[min(j, K)] += d << (2 * (j - min(j, K)))
    return need


@pytest.mark.parametrize("machine", ["mesh:20x20", "mesh:8x8", "mesh:6x5", "mesh:4x4x2"])
def test_mbs_blocks_are_disjoint_aligned_squares_following_base4_digits(machine):
    top = parse_machine(machine)
    rng = random.Random(5)
    K = MBS(top).buddies.K
    for _ in range(15):
        busy = random_busy(top, rng, rng.uniform(0.0, 0.6))
        a = occupy(MBS(top), busy)
        for p in sorted({1, 3, 4, 5, 16, 17, 63, rng.randint(1, a.free_count)}):
            if p > a.free_count:
                continue
            before = a.buddies.copy()
            got = a.allocate(Request(p))
            check_allocation_valid(got, a)  # blocks, aligned squares, exact size
            sides = sorted((b[2] for b in got.info["blocks"]), reverse=True)
            # Lo et al.: digit by digit from the top; a missing block of level k (no free block of level >= k)
            # becomes four requests of level k - 1
            need = _expected_mbs(p, K)
            want = []
            for k in range(K, -1, -1):
                n = need[k]
                while n:
                    if before.take(k) is None:
                        need[k - 1] += 4 * n
                        break
                    want.append(1 << k)
                    n -= 1
            assert sides == want, (p, sides, want)
            a.release(got)


def test_mbs_follows_the_digits_on_an_empty_machine():
    a = MBS(parse_machine("mesh:20x20"))
    for p in (1, 4, 5, 21, 100, 256, 300, 400):
        got = a.allocate(Request(p))
        sides = [b[2] for b in got.info["blocks"]]
        digits = base4_digits(p)
        assert sorted(sides, reverse=True) == sorted((1 << k for k, d in enumerate(digits) for _ in range(d)), reverse=True) or p == 400
        a.release(got)


def test_buddy_rounds_up_and_merges_back():
    top = parse_machine("mesh:8x8")
    a = Buddy2D(top)
    x = a.allocate(Request(15, (5, 3)))
    assert x.size == 64 and a.granted_size(Request(15, (5, 3))) == 64  # 5 -> 8: 49 processors wasted
    a.release(x)
    got = [a.allocate(Request(1)) for _ in range(64)]
    assert all(g is not None for g in got) and a.allocate(Request(1)) is None
    for g in got:
        a.release(g)
    assert a.buddies.free_blocks() == [(3, 0, 0)]
    with pytest.raises(InvalidArgument):
        ALLOCATORS.create("buddy_2d", topology=parse_machine("mesh:6x6"))


@pytest.mark.parametrize("machine", ["mesh:16x16", "mesh:8x8x2", "torus:4x4x3", "mesh:1x1"])
def test_buddy_free_lists_are_the_whole_squares_of_the_free_set(machine):
    """The 2-D Buddy's free lists are a function of the busy cells: level ``j`` lists exactly the aligned
    squares wholly free whose parent is not (brute force over cells here), and the square ``_placement``
    finds from the free bit set alone is the one ``allocate`` then takes, through random histories."""
    a = Buddy2D(parse_machine(machine))
    g, K = a.geom, a.buddies.K
    rng = random.Random(7)
    held = []
    sizes = [s for s in (1, 1, 2, 3, 4, 5, 9, 16, 17, 40, 64, 256) if s <= g.X * g.Y]
    for _ in range(1500):
        if held and rng.random() < 0.45:
            a.release(held.pop(rng.randrange(len(held))))
            continue
        req = Request(rng.choice(sizes))
        placed = a._placement(req)
        got = a.allocate(req)
        assert (placed is None) == (got is None) and (got is None or tuple(got.info["blocks"]) == placed)
        if got is not None:
            held.append(got)
        free_nodes = {int(v) for v in g.node_of_bit[[i for i in range(g.nbits) if a._free >> i & 1]]}

        def whole(j, x, r):
            return all(x + dx + g.X * (r + dy) in free_nodes for dx in range(1 << j) for dy in range(1 << j))

        want = []
        for j in range(K + 1):
            s = 1 << j
            for r in range(0, g.Y * g.Z, s):
                for x in range(0, g.X, s):
                    if whole(j, x, r) and (j == K or not whole(j + 1, x - x % (2 * s), r - r % (2 * s))):
                        want.append((j, x, r))
        assert sorted(a.buddies.free_blocks()) == sorted(want)


# ------------------------------------------------------------------- paging
@pytest.mark.parametrize("indexing", INDEXINGS)
@pytest.mark.parametrize("px,py", [(1, 1), (4, 4), (5, 3), (8, 2), (3, 7)])
def test_page_indexings_are_bijections(indexing, px, py):
    order = page_order(px, py, indexing)
    assert sorted(order.tolist()) == list(range(px * py))


def test_paging_takes_pages_in_index_order_and_rounds():
    top = parse_machine("mesh:8x8")
    a = Paging(top, page_index=1, indexing="shuffled_row_major")
    x = a.allocate(Request(9))
    assert x.size == 12 and list(x.info["blocks"]) == [(0, 0, 2, 2), (2, 0, 2, 2), (0, 2, 2, 2)]
    check_allocation_valid(x, a)
    with pytest.raises(InvalidArgument):
        Paging(parse_machine("mesh:6x6"), page_index=2)


# ----------------------------------------------------------- partitioning
@pytest.mark.parametrize("variant", ["modified", "original"])
def test_anca_levels_tile_the_frame(variant):
    for w, l in itertools.product(range(1, 9), range(1, 7)):
        for lv in anca_levels(w, l, variant=variant):
            assert sum(p[2] * p[3] for p in lv) == w * l
            assert all(p[0] >= p[2] and p[1] >= p[3] for p in lv)
            if variant == "modified":
                assert all(p[:2] == p[2:] for p in lv)


def _remembered_as_made(a, twin, top, rng, memo: str, rotated: bool) -> None:
    """Random grants and releases on ``a`` (which remembers its placements in ``a.<memo>``, bounded at 40 entries) and
    on ``twin`` (which places afresh): every grant, refusal, probe and placement on another free set (the free set
    with one cell changed, as a shadow's; the whole machine free) alike; the memo used and kept within its bound."""
    held = []
    for _ in range(250):
        if held and rng.random() < 0.4:
            x, y = held.pop(rng.randrange(len(held)))
            a.release(x)
            twin.release(y)
            continue
        w, l = rng.randint(1, top.dims[0] // 2), rng.randint(1, top.dims[1] if rotated else top.dims[1] // 2)
        req = Request(w * l, (w, l))
        cell = a.geom.rect_mask((rng.randrange(top.dims[0]), rng.randrange(top.dims[1]), 1, 1))
        if a._free_set_probes():
            for other in (a._free ^ cell, a.geom.all_free):
                assert a._placement_on(other, req) == twin._placement_on(other, req)
        assert a.can_allocate(req) == twin.can_allocate(req)
        got, want = a.allocate(req), twin.allocate(req)
        assert (got is None) == (want is None) and (got is None or got.info["blocks"] == want.info["blocks"]), (w, l)
        assert a._free == twin._free
        if got is not None:
            held.append((got, want))
        assert len(getattr(a, memo)) <= 40
    assert getattr(a, memo)


@pytest.mark.parametrize(("machine", "spec"), [("mesh:10x8", "anca_ff"), ("mesh:10x8", "anca_bf:max_blocks=2"), ("mesh:10x8", "pald"),
                                            ("mesh:10x8", "pald:base=bf,max_blocks=3"), ("mesh:50x46x2", "anca_bf")])
def test_partitioning_placements_remembered_are_the_placements_made(machine, spec, search):
    """ANCA and PALD remember each placement by (free set, frame): every answer equals a twin's that plans afresh each
    time (:func:`_remembered_as_made`), on a small mesh and on a large layered one (where Python's Best Fit keeps
    perimeter sums beside the free set); the memo starts again past its bound."""
    top = parse_machine(machine)
    a = ALLOCATORS.create(spec, topology=top)
    twin = ALLOCATORS.create(spec, topology=top)

    def afresh(w, l):
        rects = twin._plan(w, l)
        if rects is not None:
            twin._give(rects)
        return None if rects is None else tuple(rects)

    twin._placed = afresh
    a._placements_kept = 40
    _remembered_as_made(a, twin, top, random.Random(spec), "_placements", rotated=False)
    assert not twin._placements


@pytest.mark.parametrize(("machine", "spec"), [("mesh:10x8", "mesh_first_fit"), ("mesh:10x8", "mesh_best_fit"), ("mesh:10x8", "frame_sliding"),
                                            ("mesh:10x8", "adaptive_scan"), ("mesh:50x46x2", "mesh_best_fit")])
def test_contiguous_locations_remembered_are_the_searches(machine, spec, search):
    """The four contiguous searches remember each submesh by (free set, frame): every answer equals a twin's that
    searches afresh each time (:func:`_remembered_as_made`; frames as long as the mesh, which Adaptive Scan rotates),
    on a small mesh and on a large layered one; the memo starts again past its bound; a subclass, which may search
    otherwise, keeps none."""
    top = parse_machine(machine)
    a = ALLOCATORS.create(spec, topology=top)
    twin = ALLOCATORS.create(spec, topology=top)
    twin._located = None
    a._located_kept = 40
    _remembered_as_made(a, twin, top, random.Random(spec), "_located", rotated=True)

    class Mine(type(a)):  # type: ignore[misc]
        pass

    assert Mine(top)._located is None


@pytest.mark.parametrize("bound", [1, 2, 4, 8])
@pytest.mark.parametrize("name", ["anca_ff", "anca_bf", "pald"])
def test_bounded_partitioning_never_exceeds_its_bound(name, bound):
    top = parse_machine("mesh:10x8")
    rng = random.Random(6)
    a = ALLOCATORS.create(f"{name}:max_blocks={bound}", topology=top)
    held = []
    for step in range(300):
        if held and rng.random() < 0.45:
            a.release(held.pop(rng.randrange(len(held))))
            continue
        w, l = rng.randint(1, 10), rng.randint(1, 8)
        req = Request(w * l, (w, l))
        fits = a.can_allocate(req)
        try:
            got = a.allocate(req)
        except RequestNeverFits:
            continue
        assert fits == (got is not None)
        if got is not None:
            check_allocation_valid(got, a)  # blocks, exact rounded size, max_blocks
            assert len(got.info["blocks"]) <= bound and got.size == w * l
            held.append(got)
        check_invariants(a)


def test_anca_splits_only_when_contiguous_fails():
    top = parse_machine("mesh:6x6")
    a, ff = ANCA(top), FirstFit(top)
    rng = random.Random(7)
    for _ in range(30):
        busy = random_busy(top, rng, 0.4)
        occupy(a, busy)
        occupy(ff, busy)
        for w, l in FRAMES:
            got, want = a.allocate(Request(w * l, (w, l))), ff.allocate(Request(w * l, (w, l)))
            if want is not None:
                assert list(got.info["blocks"]) == list(want.info["blocks"])
                ff.release(want)
            if got is not None:
                a.release(got)
        for x in list(a.allocations):
            a.release(x)
        for x in list(ff.allocations):
            ff.release(x)


def test_original_anca_searches_ceiling_halves_and_keeps_only_the_request():
    top = parse_machine("mesh:6x3")
    # free: column 2 rows 0-1 and the 2 x 2 square at columns 4-5, rows 0-1
    busy = {x + 6 * y for y in range(3) for x in (0, 1, 3)} | {2 + 12, 4 + 12, 5 + 12}
    mod, orig = occupy(ANCA(top, variant="modified"), busy), occupy(ANCA(top, variant="original"), busy)
    # 3 x 2 does not fit; the modified split 2 x 2 + 1 x 2 does
    assert list(mod.allocate(Request(6, (3, 2))).info["blocks"]) == [(4, 0, 2, 2), (2, 0, 1, 2)]
    # the original searches two 2 x 2 submeshes (one is free), so it goes one level down: three 1 x 2
    got = orig.allocate(Request(6, (3, 2)))
    assert got.size == 6 and sorted(got.info["blocks"]) == [(2, 0, 1, 2), (4, 0, 1, 2), (5, 0, 1, 2)]


def test_pald_peels_one_row_off_the_longest_side():
    top = parse_machine("mesh:5x5")
    a = occupy(PALD(top, max_blocks=None), {0, 24})  # corners (0, 0) and (4, 4) busy
    got = a.allocate(Request(20, (5, 4)))
    # 5 x 4 does not fit: 4 x 4 at (1, 0), then the 1 x 4 strip, at (0, 1)
    assert list(got.info["blocks"]) == [(1, 0, 4, 4), (0, 1, 1, 4)]


def test_unbounded_partitioning_is_counting():
    top = parse_machine("mesh:6x6")
    for spec in ("pald", "anca_ff:max_blocks=none", "mbs", "paging", "mesh_random"):
        assert ALLOCATORS.create(spec, topology=top).counting
    assert not ALLOCATORS.create("anca_ff", topology=top).counting


# ----------------------------------------------------------- shape rules
def test_shape_rules():
    assert frame_for(12, 20, 20) == (4, 3)
    assert frame_for(7, 4, 4) == (4, 2)  # no factor pair fits: padded (one processor wasted)
    assert frame_for(7, 4, 4, "square_strict") == (7, 1)
    assert frame_for(13, 4, 4, pad=False) == (13, 1)
    a = FirstFit(parse_machine("mesh:4x4"))
    x = a.allocate(Request(7))
    assert x.size == 8 and a.granted_size(Request(7)) == 8
    with pytest.raises(RequestNeverFits):
        FirstFit(parse_machine("mesh:4x4"), shape_rule="square_strict").allocate(Request(7))
    anca = ANCA(parse_machine("mesh:4x4"))
    assert anca.frame_for(Request(7)) == (7, 1) and anca.allocate(Request(7)).size == 7
    with pytest.raises(InvalidArgument):
        FirstFit(parse_machine("mesh:4x4"), shape_rule="round")


def test_requests_in_three_dimensions_are_squeezed_or_refused():
    a = FirstFit(parse_machine("mesh:4x4x2"))
    assert a.allocate(Request(6, (3, 1, 2))).info["frame"] == (3, 2)
    with pytest.raises(InvalidArgument):
        a.allocate(Request(8, (2, 2, 2)))


# ----------------------------------------------- random shaped operations
ALL = ["mesh_first_fit", "mesh_best_fit", "frame_sliding", "adaptive_scan", "mbs", "paging", "paging:page_index=1,indexing=shuffled_snake",
       "mesh_random", "anca_ff", "anca_bf", "anca_bf:variant=original", "pald", "pald:base=bf,max_blocks=4"]


@pytest.mark.parametrize("spec", ALL + ["buddy_2d"])
def test_shaped_random_operations_keep_every_claim(spec):
    top = parse_machine("mesh:8x8")
    a = ALLOCATORS.create(spec, topology=top)
    rng = random.Random(8)
    held = []
    for _ in range(250):
        if held and rng.random() < 0.4:
            a.release(held.pop(rng.randrange(len(held))))
        else:
            w, l = rng.randint(1, 8), rng.randint(1, 8)
            req = Request(w * l, (w, l))
            fits = a.can_allocate(req)
            snap = a.snapshot()
            got = a.allocate(req)
            assert fits == (got is not None)
            twin = snap.allocate(req)
            assert (twin is None) == (got is None) and (got is None or np.array_equal(twin.nodes, got.nodes))
            if got is not None:
                check_allocation_valid(got, a)
                held.append(got)
        check_invariants(a)
    for x in held:
        a.release(x)
    assert a.free_count == a.n_nodes


def test_every_allocator_is_listed_and_seeded_random_is_reproducible():
    names = set(ALLOCATORS.names())
    assert {"mesh_first_fit", "mesh_best_fit", "frame_sliding", "adaptive_scan", "buddy_2d", "mesh_random", "paging", "mbs",
            "anca_ff", "anca_bf", "pald"} <= names
    top = parse_machine("mesh:6x6")
    runs = [[RandomAllocator(top, seed=s).allocate(Request(9)).nodes.tolist() for _ in range(2)] for s in (1, 1, 2)]
    assert runs[0] == runs[1] != runs[2]
    w = poisson_workload(40, load=0.8, sizes=Uniform(1, 20), machine_nodes=36, seed=1)
    r1 = topoalloc.simulate(w, machine=top, allocator="mesh_random", scheduler="fcfs", seed=5, record_allocations=True)
    r2 = topoalloc.simulate(w, machine=top, allocator="mesh_random", scheduler="fcfs", seed=5, record_allocations=True)
    assert r1.allocator == "mesh_random:seed=5" and np.array_equal(r1.allocations[0], r2.allocations[0])


# ----------------------------------------------------------------- metrics
def test_simulation_records_blocks_per_job_and_internal_fragmentation():
    from topoalloc.metrics.blocks import blocks_per_job, internal_fragmentation
    from topoalloc.workload.synthetic import Exponential, mesh_workload

    w = mesh_workload(150, load=0.8, x=Exponential(3.0, 8), machine_nodes=64, load_definition="machine", seed=2)
    per = {}
    for spec in ("mesh_first_fit", "mbs", "anca_ff:max_blocks=2", "paging:page_index=1", "buddy_2d"):
        r = topoalloc.simulate(w, machine="mesh:8x8", allocator=spec, scheduler="fcfs")
        s = r.summary()
        per[spec] = (s["mean_blocks_per_job"], s["internal_fragmentation"]["mean_per_job"])
        b = blocks_per_job(r)
        assert np.isfinite(b).all() and (b >= 1).all()
        assert "blocks" in r.to_csv().splitlines()[0].split(",")
        frag = internal_fragmentation(r)
        assert frag["mean_per_job"] == pytest.approx(float((r.allocated_size - r.size).mean()))
    assert per["mesh_first_fit"] == (1.0, 0.0) and per["buddy_2d"][0] == 1.0 and per["buddy_2d"][1] > 0
    assert 1.0 <= per["anca_ff:max_blocks=2"][0] <= 2.0 and per["anca_ff:max_blocks=2"][1] == 0.0
    assert per["mbs"][1] == 0.0 and per["paging:page_index=1"][1] > 0
    flat = topoalloc.simulate(w, machine="flat:64", allocator="flat", scheduler="fcfs").summary()
    assert "mean_blocks_per_job" not in flat


@pytest.mark.parametrize("spec", ["paging:page_index=1,indexing=snake", "mbs", "mesh_random", "anca_bf", "pald", "mesh_first_fit"])
def test_process_order_is_block_by_block_row_major(spec):
    top = parse_machine("mesh:8x8")
    a = ALLOCATORS.create(spec, topology=top)
    a.allocate(Request(9))
    x = a.allocate(Request(20, (5, 4)))
    order = a.process_order(x).tolist()
    g = Layers((8, 8))
    assert order == [v for b in x.info["blocks"] for v in g.rect_nodes(b).tolist()]
    assert sorted(order) == x.nodes.tolist()


# ------------------------------------------------------- options pinned
def test_split_options_are_pinned():
    # a square is "longest" along x by default, along y with tie=y
    assert [p[2:] for p in anca_levels(4, 4, bound=2)[1]] == [(2, 4), (2, 4)]
    assert [p[2:] for p in anca_levels(4, 4, tie="y", bound=2)[1]] == [(4, 2), (4, 2)]
    top = parse_machine("mesh:8x8")
    big_first = ANCA(top, piece_order="largest").levels(5, 3)[1]
    in_order = ANCA(top, piece_order="split").levels(5, 3)[1]
    assert [p[2:] for p in big_first] == [(3, 3), (2, 3)] and [p[2:] for p in in_order] == [(3, 3), (2, 3)]
    assert [p[2:] for p in ANCA(top, piece_order="split").levels(5, 3)[2]] == [(2, 3), (1, 3), (2, 2), (2, 1)]
    assert [p[2:] for p in ANCA(top, piece_order="largest").levels(5, 3)[2]] == [(2, 3), (2, 2), (1, 3), (2, 1)]
    # PALD peels along y for a square with tie=y
    a = occupy(PALD(top, max_blocks=None, tie="y"), {0})
    assert list(a.allocate(Request(64 - 8, (8, 7))).info["blocks"])[0] == (0, 1, 8, 7)


@pytest.mark.slow
@pytest.mark.parametrize("machine", ["mesh:9x7", "mesh:16x16", "torus:6x5x3", "mesh:3x3x4"])
def test_brute_force_many_states(machine):
    """The First Fit, Best Fit and Frame Sliding brute-force checks on more machines and states."""
    top = parse_machine(machine)
    rng = random.Random(10)
    for _ in range(60):
        busy = random_busy(top, rng)
        _, b = grid_of(top, busy)
        ff, bf = occupy(FirstFit(top), busy), occupy(BestFit(top), busy)
        Y = ff.geom.Y
        for w, l in fitting(ff):
            bases = brute_bases(b, Y, w, l)
            x = ff.allocate(Request(w * l, (w, l)))
            y = bf.allocate(Request(w * l, (w, l)))
            assert (x is None) == (y is None) == (not bases)
            if bases:
                assert x.info["blocks"][0] == (*bases[0], w, l)
                scores = [brute_score(b, Y, bx, br, w, l, "perimeter") for bx, br in bases]
                assert y.info["blocks"][0] == (*bases[scores.index(max(scores))], w, l)
                ff.release(x)
                bf.release(y)
