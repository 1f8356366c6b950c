"""Linear allocators against a plain reference that rescans the free mask on every request."""

from __future__ import annotations

import itertools
import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import topoalloc  # noqa: F401
from topoalloc.alloc import Request
from topoalloc.alloc.linear import STRATEGIES, LinearAllocator, min_span_window
from topoalloc.alloc.linear.allocator import _runs
from topoalloc.curves import Ordering
from topoalloc.errors import InvalidArgument
from topoalloc.metrics.locality import linear_span, ring_span
from topoalloc.topology import parse_machine


def reference_choice(free: np.ndarray, p: int, strategy: str, ring: bool) -> list[int]:
    """Ranks the paper's rules pick, found by brute force over the free mask."""
    n = free.size
    fr = np.flatnonzero(free)
    if strategy == "sorted_free_list":
        return fr[:p].tolist()
    runs = _runs(free, ring)
    fits = [(s, L) for s, L in runs if L >= p]
    if fits:
        if strategy == "first_fit":
            s, _ = min(fits)
        elif strategy == "best_fit":
            s, _ = min(fits, key=lambda sl: (sl[1], sl[0]))
        else:
            def sos(after):
                counts: dict[int, int] = {}
                for _, L in after:
                    counts[L] = counts.get(L, 0) + 1
                return sum(c * c for c in counts.values())

            scored = []
            for s, L in fits:
                after = [r for r in runs if r != (s, L)] + ([(s + p, L - p)] if L > p else [])
                scored.append((sos(after), s))
            s = min(scored)[1]
        return sorted(((s + np.arange(p)) % n).tolist())
    # minimum span over every p-subset of the free ranks, ties at the smallest starting rank
    best = None
    for combo in itertools.combinations(fr.tolist(), p):
        span = ring_span(np.array(combo), n) if ring else linear_span(np.array(combo))
        if ring:
            # the start of the arc: the rank after the largest gap
            c = list(combo)
            gaps = [(c[(i + 1) % p] - c[i]) % n or n for i in range(p)]
            start = c[(int(np.argmax(gaps)) + 1) % p] if p > 1 else c[0]
        else:
            start = combo[0]
        key = (span, start)
        if best is None or key < best[0]:
            best = (key, combo)
    return sorted(best[1])


def _free_by_rank(a: LinearAllocator) -> np.ndarray:
    """The allocator's free mask in rank order."""
    free = np.ones(a.n_nodes, dtype=bool)
    free[a.ordering.rank_of[np.flatnonzero(a.busy_mask)]] = False
    return free


def _ranks(a: LinearAllocator, alloc) -> list[int]:
    return sorted(a.ordering.rank_of[alloc.nodes].tolist())


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("span", ["linear", "ring"])
@pytest.mark.parametrize("spec,curve", [("mesh:4x2", "snake"), ("torus:3x3", "hilbert"), ("mesh:5x2", "row_major")])
def test_matches_brute_force_reference(strategy, span, spec, curve):
    top = parse_machine(spec)
    rng = random.Random(hash((strategy, span, spec)) & 0xFFFF)
    a = LinearAllocator(top, strategy=strategy, curve=curve, span=span)
    held = []
    for _ in range(120):
        if held and rng.random() < 0.45:
            x = held.pop(rng.randrange(len(held)))
            a.release(x)
        else:
            p = rng.randint(1, max(1, a.free_count))
            if p > a.free_count:
                continue
            free = _free_by_rank(a)
            want = reference_choice(free, p, strategy, span == "ring")
            x = a.allocate(Request(p))
            assert x is not None
            assert _ranks(a, x) == want, (strategy, span, free.astype(int).tolist(), p)
            held.append(x)
        # the interval structure equals the runs of the free mask
        free = _free_by_rank(a)
        if free.any():
            got = a.free_intervals()
            ref = _runs(free, span == "ring")
            if len(ref) == 1 and ref[0][1] == top.n_nodes:
                assert len(got) == 1 and got[0][1] == top.n_nodes
            else:
                assert got == ref


@settings(max_examples=200, deadline=None)
@given(st.integers(2, 40).flatmap(lambda n: st.tuples(st.just(n), st.lists(st.booleans(), min_size=n, max_size=n), st.integers(1, n), st.booleans())))
def test_min_span_window_is_optimal(args):
    n, mask, p, ring = args
    free = np.flatnonzero(np.array(mask))
    if free.size < p:
        return
    i = min_span_window(free, p, n, ring)
    m = free.size
    idx = [(i + k) % m for k in range(p)]
    chosen = free[idx]
    span = ring_span(chosen, n) if ring else linear_span(chosen)
    # optimal among all windows (a window is optimal among all subsets: see min_span_window)
    for j in range(m if ring else m - p + 1):
        other = free[[(j + k) % m for k in range(p)]]
        s2 = ring_span(other, n) if ring else linear_span(other)
        assert span <= s2
        if s2 == span and set(other.tolist()) != set(chosen.tolist()):
            assert free[i] <= free[j]  # ties at the smallest starting rank


def test_first_fit_best_fit_sum_of_squares_differ_as_the_paper_says():
    # ranks 0..11, row-major on a 12-node line; holes of sizes 3 (at 0), 2 (at 4), 4 (at 8) after setup
    top = parse_machine("mesh:12")
    out = {}
    for strategy in ("first_fit", "best_fit", "sum_of_squares"):
        a = LinearAllocator(top, strategy=strategy, curve="row_major")
        blocks = [a.allocate(Request(k)) for k in (3, 1, 2, 2, 4)]
        a.release(blocks[0]); a.release(blocks[2]); a.release(blocks[4])
        assert a.free_intervals() == [(0, 3), (4, 2), (8, 4)]
        out[strategy] = a.allocate(Request(2)).nodes.tolist()
    assert out["first_fit"] == [0, 1]          # first interval large enough
    assert out["best_fit"] == [4, 5]           # leaves no free processor in the interval
    # sum of squares: from 3 → sizes {1,2,4}: 3; from 2 → {3,4}: 2; from 4 → {3,2,2}: 1+4 = 5
    assert out["sum_of_squares"] == [4, 5]


def test_fallback_min_span_ties_at_smallest_rank():
    top = parse_machine("mesh:10")
    a = LinearAllocator(top, strategy="first_fit", curve="row_major")
    xs = [a.allocate(Request(1)) for _ in range(10)]
    for k in (1, 2, 4, 6, 7, 9):  # free ranks 1,2,4,6,7,9: no interval of 3
        a.release(xs[k])
    got = a.allocate(Request(3))
    # windows {1,2,4} span 4, {2,4,6} 5, {4,6,7} 4, {6,7,9} 4: tie at span 4, smallest start 1
    assert got.nodes.tolist() == [1, 2, 4]
    assert got.info["contiguous"] is False


def test_ring_wraps_intervals():
    top = parse_machine("mesh:8")
    a = LinearAllocator(top, strategy="first_fit", curve="row_major", span="ring")
    xs = [a.allocate(Request(2)) for _ in range(4)]
    a.release(xs[0]); a.release(xs[3])  # free ranks 0,1 and 6,7: one ring interval of 4 from rank 6
    assert a.free_intervals() == [(6, 4)]
    assert a.allocate(Request(3)).nodes.tolist() == [0, 6, 7]
    lin = LinearAllocator(top, strategy="first_fit", curve="row_major", span="linear")
    ys = [lin.allocate(Request(2)) for _ in range(4)]
    lin.release(ys[0]); lin.release(ys[3])
    assert lin.free_intervals() == [(0, 2), (6, 2)]


def test_ordering_file_curve(tmp_path):
    top = parse_machine("mesh:2x2")
    f = tmp_path / "o.txt"
    f.write_text("# reversed\n0 3\n1 2\n2 1\n3 0\n")
    a = LinearAllocator(top, strategy="sorted_free_list", curve=str(f))
    assert a.allocate(Request(1)).nodes.tolist() == [3]
    b = topoalloc.registry.ALLOCATORS.create(f"first_fit:curve={f}", topology=top)
    assert b.allocate(Request(2)).nodes.tolist() == [2, 3]


def test_bad_options():
    top = parse_machine("mesh:4x4")
    with pytest.raises(InvalidArgument, match="span"):
        LinearAllocator(top, span="circle")
    with pytest.raises(InvalidArgument, match="strategy"):
        LinearAllocator(top, strategy="worst_fit")
    with pytest.raises(InvalidArgument, match="curve"):
        LinearAllocator(top, curve="peano")
    with pytest.raises(InvalidArgument, match="grid machine"):
        LinearAllocator(parse_machine("flat:8"), curve="hilbert")
    with pytest.raises(InvalidArgument, match="power of two"):
        LinearAllocator(parse_machine("flat:6"), curve="gray")
    with pytest.raises(InvalidArgument, match="16 nodes"):
        LinearAllocator(top, curve=Ordering([0, 1], "tiny"))


def test_sum_of_squares_prefers_a_common_interval_size():
    """Free intervals 2, 2, 2 and 5 (Σ N(i)² = 3² + 1² = 10): taking 2 from a 2-interval leaves {2, 2, 5}
    (5), from the 5 leaves {2, 2, 2, 3} (10); Sum of Squares must take ranks 0..1, as the brute force does."""
    top = parse_machine("mesh:16")
    a = LinearAllocator(top, strategy="sum_of_squares", curve="row_major")
    blocks = [a.allocate(Request(k)) for k in (2, 1, 2, 1, 2, 1, 5, 2)]
    for i in (0, 2, 4, 6):
        a.release(blocks[i])
    assert a.free_intervals() == [(0, 2), (3, 2), (6, 2), (9, 5)]
    free = np.zeros(16, dtype=bool)
    free[[0, 1, 3, 4, 6, 7, 9, 10, 11, 12, 13]] = True
    assert reference_choice(free, 2, "sum_of_squares", False) == [0, 1]
    assert a.allocate(Request(2)).nodes.tolist() == [0, 1]


@pytest.mark.parametrize("spec", ["best_fit", "first_fit", "sum_of_squares", "best_fit:span=ring", "first_fit:curve=hilbert,span=ring", "best_fit:curve=snake"])
def test_a_contiguous_grant_gives_back_the_runs_a_sort_would_find(spec):
    """Contiguous grants carry their runs of ranks (no sort at release); the interval state after every
    release is the one the sort of the ranks gives (the other allocator is made to sort every time)."""
    import random as _r

    from topoalloc.alloc import Request
    from topoalloc.api import make_allocator

    top = parse_machine("mesh:8x6")
    a, b = make_allocator(spec, top), make_allocator(spec, top)
    rng = _r.Random(spec)
    held = []
    state = lambda x: (dict(x._len_at), dict(x._start_at_end), list(x._lens), {k: list(v) for k, v in x._starts_by_len.items()})  # noqa: E731
    carried = 0
    for _ in range(400):
        if held and (rng.random() < 0.45 or a.free_count < 6):
            i = rng.randrange(len(held))
            xa, xb = held.pop(i)
            b._tokens.pop(xb.serial, None)  # b finds the runs by sorting
            carried += a.token_of(xa) is not None if xa.serial in a._tokens else 0
            a.release(xa)
            b.release(xb)
        else:
            req = Request(rng.randint(1, min(12, a.free_count)))
            xa, xb = a.allocate(req), b.allocate(req)
            assert np.array_equal(xa.nodes, xb.nodes)
            held.append((xa, xb))
        assert state(a) == state(b)
    assert carried > 0


def _windows_reference(free: np.ndarray, p: int, strategy: str, ring: bool) -> list[int]:
    """``reference_choice`` with the min-span fallback found over windows of the free list (optimal among
    all subsets, ``test_min_span_window_is_optimal``), in plain Python: fast enough for 40-node machines."""
    fr = np.flatnonzero(free).tolist()
    n, m = free.size, len(fr)
    fits = [r for r in _runs(free, ring) if r[1] >= p]
    if strategy == "sorted_free_list" or fits:
        return reference_choice(free, p, strategy, ring)
    best = None
    for i in range(m if ring else m - p + 1):
        last = fr[(i + p - 1) % m]
        span = (last - fr[i]) % n + 1 if ring else last - fr[i] + 1
        if best is None or (span, fr[i]) < best[0]:
            best = ((span, fr[i]), sorted(fr[(i + k) % m] for k in range(p)))
    return best[1]


def _one_run(ranks: list[int], n: int, ring: bool) -> bool:
    r = sorted(ranks)
    gaps = sum(b - a != 1 for a, b in zip(r, r[1:]))
    return gaps == 0 or (ring and gaps == 1 and r[0] == 0 and r[-1] == n - 1)


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("span", ["linear", "ring"])
@pytest.mark.parametrize("spec,curve", [("mesh:40", "row_major"), ("mesh:6x6", "hilbert")])
def test_matches_reference_on_larger_machines(strategy, span, spec, curve):
    """The brute-force comparison on 36–40 nodes with small requests: many intervals of distinct and of equal
    sizes (where Best Fit and Sum of Squares part), wrapping grants on the ring, fallbacks mid-interval."""
    top = parse_machine(spec)
    n = top.n_nodes
    ring = span == "ring"
    rng = random.Random(f"{strategy}/{span}/{spec}")
    a = LinearAllocator(top, strategy=strategy, curve=curve, span=span)
    held = []
    fallbacks = wraps = 0
    for _ in range(500):
        if held and (rng.random() < 0.5 or a.free_count < 2):
            a.release(held.pop(rng.randrange(len(held))))
        else:
            p = rng.randint(1, min(6, a.free_count))
            free = _free_by_rank(a)
            want = _windows_reference(free, p, strategy, ring)
            fallbacks += strategy != "sorted_free_list" and not any(L >= p for _, L in _runs(free, ring))
            x = a.allocate(Request(p))
            got = _ranks(a, x)
            assert got == want, (strategy, span, free.astype(int).tolist(), p)
            if strategy != "sorted_free_list":
                assert x.info["contiguous"] is _one_run(got, n, ring)
            wraps += ring and 0 in got and n - 1 in got and p < n
            held.append(x)
        free = _free_by_rank(a)
        if free.any():
            ref = _runs(free, ring)
            got_iv = a.free_intervals()
            assert got_iv == ref or (len(ref) == 1 and ref[0][1] == n and got_iv == [(0, n)])
    if strategy != "sorted_free_list":
        assert fallbacks > 0
        assert wraps > 0 or not ring or strategy == "first_fit"  # First Fit reaches the wrapping interval last


def test_ring_fallback_starting_inside_the_wrapping_interval():
    """The one carve that does not start an interval: a ring's min-span window from rank 0 inside the
    interval that wraps past the last rank.  Free ranks 9, 0 | 3, 4 and three wanted: no interval fits; the
    windows {0, 3, 4} and {9, 0, 3} both span 5, and the smaller start, rank 0, wins."""
    top = parse_machine("mesh:10")
    a = LinearAllocator(top, strategy="first_fit", curve="row_major", span="ring")
    xs = [a.allocate(Request(1)) for _ in range(10)]
    for k in (0, 3, 4, 9):
        a.release(xs[k])
    assert a.free_intervals() == [(3, 2), (9, 2)]
    got = a.allocate(Request(3))
    assert sorted(got.nodes.tolist()) == [0, 3, 4] and got.info["contiguous"] is False
    assert a.free_intervals() == [(9, 1)]


@pytest.mark.parametrize(
    "spec,machine,strategy,curve,span",
    [
        ("best_fit", "mesh:4x4", "best_fit", "hilbert", "linear"),
        ("first_fit:span=ring", "torus:4x2x2", "first_fit", "hilbert", "ring"),
        ("sum_of_squares:curve=snake", "mesh:4x4", "sum_of_squares", "snake", "linear"),
        ("sorted_free_list", "hypercube:4", "sorted_free_list", "gray", "linear"),
        ("first_fit", "flat:6", "first_fit", "row_major", "linear"),
    ],
)
def test_registered_names_and_default_curves(spec, machine, strategy, curve, span):
    """The registry's factories pass strategy, curve and span through; the default curve is Hilbert on grids
    (the paper's, §2.2), Gray on hypercubes, node ids elsewhere."""
    a = topoalloc.registry.ALLOCATORS.create(spec, topology=parse_machine(machine))
    assert (a.strategy, a.curve, a.span) == (strategy, curve, span)
    assert a.name == f"{strategy}:curve={curve},span={span}"


def test_bad_strategy_and_span_name_argument_value_and_choices():
    top = parse_machine("mesh:4x4")
    with pytest.raises(InvalidArgument) as exc:
        LinearAllocator(top, strategy="worst_fit")
    assert (exc.value.name, exc.value.value) == ("strategy", "worst_fit")
    assert exc.value.expected == "one of sorted_free_list, first_fit, best_fit, sum_of_squares"
    with pytest.raises(InvalidArgument) as exc:
        LinearAllocator(top, span="circle")
    assert (exc.value.name, exc.value.value, exc.value.expected) == ("span", "circle", "'linear' or 'ring'")


def test_sum_of_squares_weighs_the_intervals_a_remainder_joins():
    """Free intervals 3, 2, 3 (ranks 0-2, 4-5, 7-9), one rank wanted: from a 3 leaves {2, 2, 3} (Σ N² = 5), from
    the 2 leaves {1, 3, 3} (5): a tie, broken at the smallest start, rank 0; Best Fit takes rank 4."""
    top = parse_machine("mesh:10")
    got = {}
    for strategy in ("sum_of_squares", "best_fit"):
        a = LinearAllocator(top, strategy=strategy, curve="row_major")
        xs = [a.allocate(Request(1)) for _ in range(10)]
        for k in (0, 1, 2, 4, 5, 7, 8, 9):
            a.release(xs[k])
        assert a.free_intervals() == [(0, 3), (4, 2), (7, 3)]
        free = np.ones(10, dtype=bool)
        free[[3, 6]] = False
        assert reference_choice(free, 1, strategy, False) == ([0] if strategy == "sum_of_squares" else [4])
        got[strategy] = a.allocate(Request(1)).nodes.tolist()
    assert got == {"sum_of_squares": [0], "best_fit": [4]}


@pytest.mark.parametrize("strategy", ["first_fit", "best_fit", "sum_of_squares"])
@pytest.mark.parametrize("span", ["linear", "ring"])
def test_whole_machine_grant_leaves_no_interval_behind(strategy, span):
    """All n ranks in one grant: no interval is left (not even an empty one), and the release gives back (0, n)."""
    top = parse_machine("mesh:4x3")
    a = LinearAllocator(top, strategy=strategy, curve="snake", span=span)
    for _ in range(3):
        x = a.allocate(Request(12))
        assert a.free_intervals() == [] and a._lens == [] and a._start_at_end == {}
        a.release(x)
        assert a.free_intervals() == [(0, 12)]
    y = a.allocate(Request(5))
    assert a.free_intervals() == [(5, 7)]
    a.release(y)
    assert a.free_intervals() == [(0, 12)]
