"""The compiled counting kernel against the general engine: job for job, field for field.

The general engine (``engine="python"``) is the reference; the compiled
kernel (``engine="compiled"``) must give every job the same start and end
and the run the same summary, for every built-in scheduler and queue order,
including jobs that overrun their estimates and zero-length jobs.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import topoalloc
from topoalloc.errors import InvalidArgument
from topoalloc.sched import EASY, Simulation, fastpath
from topoalloc.workload import Workload, read_swf
from topoalloc.workload.header import default_trace_path

from .conftest import GOLDEN, shared_trace

needs_kernel = pytest.mark.skipif(not fastpath.compiled_available(), reason="the compiled kernel was not built")

SCHEDULERS = [
    "fcfs",
    "fcfs:order=sjf",
    "fcfs:order=lpt",
    "fcfs:order=cplant",
    "easy",
    "easy:incremental=false",
    "easy:order=sjf",
    "easy:order=lpt",
    "easy:order=cplant",
    "conservative",
    "conservative:order=sjf",
    "conservative:order=lpt",
    "conservative:order=cplant",
]
GOLDEN_FILES = sorted(GOLDEN.glob("*.swf"))


def both(w, machine: str, sched: str, **kw):
    a = topoalloc.simulate(w, machine=machine, scheduler=sched, engine="compiled", **kw)
    b = topoalloc.simulate(w, machine=machine, scheduler=sched, engine="python", **kw)
    return a, b


def assert_same(a, b) -> None:
    assert np.array_equal(a.start, b.start), f"first difference at job position {int(np.flatnonzero(a.start != b.start)[0])}"
    assert np.array_equal(a.end, b.end)
    assert np.array_equal(a.allocated_size, b.allocated_size)
    assert a.reservation_changes == b.reservation_changes
    assert a.to_json() == b.to_json()
    assert a.to_csv() == b.to_csv()


@st.composite
def workloads(draw: st.DrawFn, nodes: int) -> Workload:
    """Small workloads where ties, overruns, zero-length jobs and rounding are common.

    Times are integers times one scale (1, 0.1, 1/3 or 1e-7) plus one offset
    (0, or 1e9 where ``now + estimate`` and ``shadow - now`` round), requested
    times may be missing (the estimate is then twice the run time, 0 for a
    zero-length job) or shorter than the run (overruns).
    """
    scale = draw(st.sampled_from([1.0, 0.1, 1 / 3, 1e-7]))
    offset = draw(st.sampled_from([0.0, 0.0, 1e9]))
    rows = draw(
        st.lists(
            st.tuples(
                st.integers(0, 40),  # submit
                st.integers(0, 30),  # run
                st.integers(1, nodes),  # size
                st.integers(-1, 40),  # requested time (-1 or 0: missing)
            ),
            min_size=1,
            max_size=30,
        )
    )
    rows.sort(key=lambda r: r[0])
    return Workload(
        job_id=np.arange(1, len(rows) + 1),
        submit=[offset + r[0] * scale for r in rows],
        run=[r[1] * scale for r in rows],
        size=[r[2] for r in rows],
        requested_time=[r[3] * scale if r[3] > 0 else -1.0 for r in rows],
        header={"MaxProcs": str(nodes)},
        source="<hypothesis>",
    )


@needs_kernel
@settings(max_examples=400)
@given(data=st.data(), sched=st.sampled_from(SCHEDULERS), nodes=st.sampled_from([4, 16]), estimate=st.sampled_from(["double-runtime", "exact"]))
def test_kernel_equals_general_engine(data, sched, nodes, estimate):
    w = data.draw(workloads(nodes))
    a, b = both(w, f"flat:{nodes}", sched, estimate=estimate)
    assert_same(a, b)


@needs_kernel
@settings(max_examples=100)
@given(w=workloads(16), sched=st.sampled_from(["easy", "conservative", "fcfs:order=sjf"]))
def test_kernel_equals_replay_probes(w, sched):
    """The kernel against the general engine without any counting shortcut (replay on snapshots)."""
    a = topoalloc.simulate(w, machine="flat:16", scheduler=sched, engine="compiled")
    b = topoalloc.simulate(w, machine="flat:16", scheduler=sched, allocator="flat:probe=replay")
    assert np.array_equal(a.start, b.start)


def test_ends_by_the_shadow_time_is_the_sum_every_expected_end_is():
    """A job ends by the shadow time iff ``now + estimate <= shadow``, the float sum every expected end is,
    not ``estimate <= shadow - now``, which is a unit in the last place off at large times.  Found by
    Hypothesis (``test_kernel_equals_replay_probes``): at 1e9 + 3.3 job 6 (estimate 1.8) ends exactly at the
    shadow time 1e9 + 5.1, though 1.8 > shadow - now; counted as running past it, it took the head's five
    extra processors, and job 7 (one processor, past the shadow time) could not start at its arrival,
    while the replay guard, which sees job 6's expected end, let it.  Every engine now starts job 7 on arrival."""
    w = Workload(
        job_id=np.arange(1, 8), submit=[1e9 + 0.3] * 4 + [1e9 + 0.4] * 2 + [1e9 + 3.4],
        run=[2.9000000000000004, 3.0, 0.2, 0.30000000000000004, 0.0, 0.2, 0.9], size=[1, 13, 4, 3, 11, 5, 1],
        requested_time=[-1.0, -1.0, 1.8, 1.9000000000000001, -1.0, 1.8, -1.0], header={"MaxProcs": "16"}, source="<ulp>",
    )
    runs = [topoalloc.simulate(w, machine="flat:16", scheduler="easy", **kw)
            for kw in ({"engine": "python"}, {"allocator": "flat:probe=replay"}, {"engine": "compiled"} if fastpath.compiled_available() else {})]
    for r in runs:
        assert r.start.tolist() == runs[0].start.tolist()
    assert runs[0].start[6] == w.submit[6] and runs[0].start[5] == 1e9 + 0.3 + 3.0


@needs_kernel
@pytest.mark.parametrize("sched", ["fcfs", "easy", "conservative"])
@pytest.mark.parametrize("path", GOLDEN_FILES, ids=[p.stem for p in GOLDEN_FILES])
def test_kernel_on_golden_traces(path, sched):
    a, b = both(path, None, sched)
    assert_same(a, b)
    label = {"fcfs": "FCFS", "easy": "EASY", "conservative": "Conservative"}[sched]
    text = read_swf(path).header[f"Expected-{label}"]
    expected = {int(x): float(y) for x, y in (pair.split(":") for pair in text.split())}
    assert dict(zip(a.workload.job_id.tolist(), a.start.tolist())) == expected


@needs_kernel
@pytest.mark.parametrize("sched", ["fcfs", "easy:order=sjf", "conservative", "conservative:order=lpt"])
def test_kernel_on_a_real_trace_prefix(sched):
    """The first 3,000 jobs of KTH-SP2 (real sizes, estimates and overruns; conservative keeps its
    profile from pass to pass between overruns, and rebuilds it at each one)."""
    w = read_swf(shared_trace("KTH-SP2-1996-2.1-cln.swf"))
    w = w.take(np.arange(3000))
    a, b = both(w, "flat:100", sched, filters=["drop-no-size", "drop-nonpositive-runtime"])
    assert_same(a, b)


def test_kernel_applies_only_when_nothing_else_is_needed():
    w = read_swf(GOLDEN_FILES[0])

    def why(**kw):
        alloc = topoalloc.make_allocator(kw.pop("allocator", "flat"), "flat:8")
        sched = kw.pop("scheduler", EASY())
        return fastpath.why_not(Simulation(w, alloc, sched, np.maximum(w.requested_time, 1.0), **kw))

    assert "record_reservations" in why(record_reservations=True)
    assert "counting" in why(allocator="flat:probe=replay")

    class MyEASY(EASY):
        pass

    assert "MyEASY" in why(scheduler=MyEASY())
    if fastpath.compiled_available():
        assert why(record_allocations=False) is None
        assert why(record_allocations=True) is None  # served by replaying the kernel's log through the allocator


#: counting allocators that grant exactly the size asked (the kernel's), with placements worth comparing
PLACING = [("mesh:4x4", "flat"), ("mesh:4x4", "first_fit"), ("mesh:4x4", "best_fit:curve=hilbert"), ("mesh:4x4", "sum_of_squares:curve=snake"),
           ("mesh:4x4", "mbs"), ("mesh:4x4", "mesh_random:seed=3"), ("torus:4x2x2", "best_fit"), ("hypercube:4", "first_fit")]


def assert_same_placements(a, b) -> None:
    assert_same(a, b)
    assert (a.allocations is None) == (b.allocations is None)
    if a.allocations is not None:
        assert all(np.array_equal(x, y) for x, y in zip(a.allocations, b.allocations))
    for field in ("blocks", "slice_hops", "locality"):
        x, y = getattr(a, field), getattr(b, field)
        assert (x is None) == (y is None), field
        if isinstance(x, np.ndarray):
            assert np.array_equal(x, y, equal_nan=True), field
        else:
            assert repr(x) == repr(y), field  # (NaN-safe: an undefined metric is nan in both)


@needs_kernel
@settings(max_examples=150)
@given(data=st.data(), sched=st.sampled_from(SCHEDULERS), case=st.sampled_from(PLACING), record=st.booleans(), locality=st.booleans())
def test_kernel_with_placements_equals_general_engine(data, sched, case, record, locality):
    """Recorded nodes, locality metrics and blocks come from replaying the kernel's log through the allocator:
    the same allocate/release calls as the general engine, so the same nodes, metrics and blocks."""
    machine, allocator = case
    w = data.draw(workloads(16))
    a, b = both(w, machine, sched, allocator=allocator, record_allocations=record, locality=locality)
    assert_same_placements(a, b)


@needs_kernel
@pytest.mark.parametrize("sched", ["fcfs", "easy", "conservative:order=sjf"])
@pytest.mark.parametrize("case", [("mesh:16x8", "best_fit:curve=hilbert"), ("mesh:16x8", "mbs"), ("torus:8x4x4", "first_fit")])
def test_kernel_with_placements_on_a_real_trace(sched, case):
    """NASA's first 4,000 jobs with every locality metric and the nodes of every job, both engines."""
    w = read_swf(shared_trace("NASA-iPSC-1993-3.1-cln.swf")).take(np.arange(4000))
    a, b = both(w, case[0], sched, allocator=case[1], record_allocations=True, locality=True, filters=["drop-no-size", "drop-nonpositive-runtime"])
    assert_same_placements(a, b)


#: the schedulers the kernel runs on the subcube allocators' busy masks (all of them)
MASK_SCHEDULERS = SCHEDULERS


@needs_kernel
@settings(max_examples=300)
@given(data=st.data(), sched=st.sampled_from(MASK_SCHEDULERS), allocator=st.sampled_from(["buddy", "gray_code"]),
       dim=st.sampled_from([0, 1, 2, 3, 4, 5, 6, 7, 8, 10]), record=st.booleans(), locality=st.booleans())
def test_kernel_follows_the_subcube_allocators(data, sched, allocator, dim, record, locality):
    """Buddy and Gray code on the kernel's busy mask, against the general engine (its exact probes and mask guard,
    and conservative's replay plan on snapshots).

    Cubes below one word (Q0-Q5), of one word (Q6), of several (Q7, Q8: windows of whole words; Q10:
    Gray halves of several words); sizes that are not powers of two (the window is larger); nodes,
    locality metrics and allocated sizes from the replay."""
    w = data.draw(workloads(1 << dim))
    a, b = both(w, f"hypercube:{dim}", sched, allocator=allocator, record_allocations=record, locality=locality)
    assert_same_placements(a, b)


def long_queue(n: int, seed: int, nodes: int) -> Workload:
    """``n`` jobs arriving faster than they run (seeded): sizes powers of two, a fifth without estimates."""
    rng = np.random.default_rng(seed)
    submit = np.sort(rng.integers(0, n // 2, n)).astype(float)
    run = rng.integers(0, 40, n).astype(float)
    size = 1 << rng.integers(0, max(1, nodes.bit_length()), n)
    size = np.minimum(size, nodes)
    requested = np.where(rng.random(n) < 0.2, -1.0, run * rng.choice([0.5, 1.0, 2.0, 5.0], n))
    return Workload(job_id=np.arange(1, n + 1), submit=submit, run=run, size=size, requested_time=requested,
                    header={"MaxProcs": str(nodes)}, source="<seeded>")


@st.composite
def long_queues(draw: st.DrawFn, nodes: int, longest: int = 400) -> Workload:
    """Hundreds of jobs arriving faster than they run: queues longer than a word of ranks (64), so that
    EASY's walk on a layout crosses from word to word."""
    return long_queue(draw(st.integers(65, longest)), draw(st.integers(0, 2**32 - 1)), nodes)


@needs_kernel
@settings(max_examples=40, deadline=None)
@given(data=st.data(), sched=st.sampled_from(["easy", "easy:order=sjf", "easy:order=lpt"]), allocator=st.sampled_from(["buddy", "gray_code"]),
       dim=st.sampled_from([3, 5, 7]))
def test_kernel_easy_on_masks_with_long_queues(data, sched, allocator, dim):
    """EASY's walk on a layout follows one bit set of ranks per window size (passing over the jobs too wide
    and the sizes refused): with queues of hundreds of jobs the walk crosses words of ranks."""
    w = data.draw(long_queues(1 << dim))
    a, b = both(w, f"hypercube:{dim}", sched, allocator=allocator)
    assert_same_placements(a, b)


_MASK_QUEUES = dict(data=st.data(), sched=st.sampled_from(["conservative", "conservative:order=sjf", "conservative:order=lpt"]),
                    allocator=st.sampled_from(["buddy", "gray_code"]), dim=st.sampled_from([3, 5]), longest=st.just(80))


def _conservative_on_masks_with_long_queues(data, sched, allocator, dim, longest):
    """Conservative on a layout with queues of tens to hundreds of jobs: many reservations per time, moves whose
    replay stops where the plan becomes what it was, and candidates the free-count profile passes over, against
    the general engine's plan on free positions (here: 6 workloads of at most 80 jobs on Q3 and Q5; the slow tier:
    40 of at most 400 on Q3, Q5 and Q7)."""
    w = data.draw(long_queues(1 << dim, longest=longest))
    a, b = both(w, f"hypercube:{dim}", sched, allocator=allocator)
    assert_same_placements(a, b)


test_kernel_conservative_on_masks_with_long_queues = needs_kernel(settings(max_examples=6, deadline=None)(given(**_MASK_QUEUES)(
    _conservative_on_masks_with_long_queues)))
test_kernel_conservative_on_masks_with_many_long_queues = pytest.mark.slow(needs_kernel(settings(max_examples=40, deadline=None)(
    given(**{**_MASK_QUEUES, "dim": st.sampled_from([3, 5, 7]), "longest": st.just(400)})(_conservative_on_masks_with_long_queues))))


@needs_kernel
@pytest.mark.parametrize(("allocator", "seed"), [("buddy", 5), ("buddy", 6), ("gray_code", 1), ("gray_code", 5)])
def test_kernel_conservative_replay_stops_only_where_the_plan_is_what_it_was(allocator, seed):
    """A move replays the kept masks from the job's new start, and stops once the mask is the one it was
    with every reservation in the window it held: a mask alone is not enough (two reservations may have
    swapped windows, and free different positions later).  On these queues of 80 jobs on Q3, a replay
    stopping on the mask alone gives a broken plan or, for Gray code seed 5, another schedule."""
    w = long_queue(80, seed, 8)
    a, b = both(w, "hypercube:3", "conservative", allocator=allocator)
    assert_same_placements(a, b)


def burst(n: int, seed: int, nodes: int) -> Workload:
    """``n`` jobs submitted at one instant (seeded): sizes powers of two up to an eighth of the machine, run
    times that end before their estimates, so that every end moves reservations earlier."""
    rng = np.random.default_rng(seed)
    size = 1 << rng.integers(0, max(1, nodes.bit_length() - 3), n)
    run = rng.integers(1, 1000, n).astype(float)
    requested = run * rng.choice([1.0, 1.5, 3.0], n)
    return Workload(job_id=np.arange(1, n + 1), submit=np.zeros(n), run=run, size=size, requested_time=requested,
                    header={"MaxProcs": str(nodes)}, source="<burst>")


@needs_kernel
@pytest.mark.parametrize("allocator", ["buddy", "gray_code", "free_list", "free_list:recognition=lists"])
def test_kernel_conservative_on_a_burst_on_a_cube_of_many_words(allocator):
    """A burst at one instant on Q10 (a kept mask of 16 words): each reservation is inserted into a plan of
    hundreds of events, and each end moves states by their slots (st_move) rather than their words; on the
    free list without recognition the states keep no masks at all.  Against the general engine."""
    w = burst(160, 3, 1024)
    a, b = both(w, "hypercube:10", "conservative", allocator=allocator)
    assert_same_placements(a, b)
    assert a.reservation_changes > 160


#: the schedulers the kernel runs on the free list's lists: all of them (conservative keeps lists per plan state)
LIST_SCHEDULERS = SCHEDULERS


@st.composite
def pow2_workloads(draw: st.DrawFn, nodes: int) -> Workload:
    """:func:`workloads` with every size rounded up to a power of two (the AFL's meshes then fill their cubes)."""
    w = draw(workloads(nodes))
    size = np.array([1 << (int(x) - 1).bit_length() for x in w.size], dtype=np.int64)
    return Workload(job_id=w.job_id, submit=w.submit, run=w.run, size=size, requested_time=w.requested_time, header=dict(w.header), source="<hypothesis>")


@needs_kernel
@settings(max_examples=250)
@given(data=st.data(), sched=st.sampled_from(LIST_SCHEDULERS), allocator=st.sampled_from(["free_list", "afl"]),
       dim=st.sampled_from([0, 1, 2, 3, 4, 5, 6, 7, 8, 10]), record=st.booleans(), locality=st.booleans())
def test_kernel_follows_the_free_list(data, sched, allocator, dim, record, locality):
    """The free list (and the AFL on power-of-two sizes) on the kernel's own lists, against the general engine
    (its mask probes and _FreeSubcubeGuard): cubes below a word, of one, of several (Q10: cubes whose free bits
    span words), sizes that are not powers of two for the free list (the cube is larger); nodes, locality
    metrics and allocated sizes from the replay, which checks every cube against the kernel's."""
    w = data.draw(pow2_workloads(1 << dim) if allocator == "afl" else workloads(1 << dim))
    a, b = both(w, f"hypercube:{dim}", sched, allocator=allocator, record_allocations=record, locality=locality)
    assert_same_placements(a, b)


@needs_kernel
@settings(max_examples=30, deadline=None)
@given(data=st.data(), sched=st.sampled_from(["easy", "easy:order=sjf", "easy:order=lpt"]), allocator=st.sampled_from(["free_list", "afl"]),
       dim=st.sampled_from([3, 5, 7]))
def test_kernel_easy_on_the_free_list_with_long_queues(data, sched, allocator, dim):
    """Hundreds of queued jobs: EASY's candidates allocated and released again, some of them leaving the
    lists otherwise than they were (then the refusals the guard made are asked again)."""
    w = data.draw(long_queues(1 << dim))
    a, b = both(w, f"hypercube:{dim}", sched, allocator=allocator, record_allocations=True)
    assert_same_placements(a, b)


_LIST_QUEUES = dict(data=st.data(), sched=st.sampled_from(["conservative", "conservative:order=sjf", "conservative:order=lpt"]),
                    allocator=st.sampled_from(["free_list", "afl"]), dim=st.sampled_from([3, 4, 5]), longest=st.just(80))


def _conservative_on_the_free_list_with_long_queues(data, sched, allocator, dim, longest):
    """Conservative backfilling on the free list keeps the lists of every state of its plan beside the mask:
    queues of tens to hundreds of jobs, many moves, trials that end where the plan's own state comes back, against
    the general engine's plan on the lists' states (here: 5 workloads of at most 80 jobs on Q3-Q5; the slow tier:
    20 of at most 240 on Q3-Q7)."""
    w = data.draw(long_queues(1 << dim, longest=longest))
    a, b = both(w, f"hypercube:{dim}", sched, allocator=allocator, record_allocations=True)
    assert_same_placements(a, b)


test_kernel_conservative_on_the_free_list_with_long_queues = needs_kernel(settings(max_examples=5, deadline=None)(
    given(**_LIST_QUEUES)(_conservative_on_the_free_list_with_long_queues)))
test_kernel_conservative_on_the_free_list_with_many_long_queues = pytest.mark.slow(needs_kernel(settings(max_examples=20, deadline=None)(
    given(**{**_LIST_QUEUES, "dim": st.sampled_from([3, 5, 7]), "longest": st.just(240)})(_conservative_on_the_free_list_with_long_queues))))


@needs_kernel
@pytest.mark.parametrize(("sched", "seed", "n", "dim"), [("conservative:order=lpt", 41, 81, 4), ("conservative:order=lpt", 11, 51, 5), ("conservative", 21, 61, 4)])
@pytest.mark.parametrize("allocator", ["free_list", "afl", "free_list:recognition=lists"])
def test_kernel_conservative_on_the_free_list_stops_only_where_the_lists_are_what_they_were(sched, seed, n, dim, allocator):
    """On the free list a replay, or a trial, may stop early only where the mask, every reservation's cube
    and the lists are the plan's: the same mask can come with other lists (a cube merged with another mate),
    and later allocations then take other cubes.  A kernel that compares masks alone gives another schedule
    on the first queue (a move's replay stopping early, its kept lists then wrong), and breaks its plan on
    the other two (a trial stopping early: it said a start was feasible where the plan's replay fails)."""
    w = long_queue(n, seed, 1 << dim)
    a, b = both(w, f"hypercube:{dim}", sched, allocator=allocator, record_allocations=True)
    assert_same_placements(a, b)


#: the schedulers the kernel runs on the free list's lists alone (layout 5): not EASY, whose shadow asks the mask
LISTS_ONLY_SCHEDULERS = [s for s in SCHEDULERS if not s.startswith("easy")]

#: (allocator, cube dimension) looking at the lists only: recognition=lists, or above Q12 (no complete recognition)
LISTS_ONLY = ([("free_list:recognition=lists", d) for d in (0, 1, 2, 3, 4, 5, 6, 7, 8, 10)] + [("afl:recognition=lists", d) for d in (2, 4, 6)]
              + [("free_list", 13), ("free_list", 14), ("free_list", 15), ("afl", 13)])


@needs_kernel
@settings(max_examples=150, deadline=None)
@given(data=st.data(), sched=st.sampled_from(LISTS_ONLY_SCHEDULERS), case=st.sampled_from(LISTS_ONLY), record=st.booleans(), locality=st.booleans())
def test_kernel_follows_the_free_list_on_its_lists_only(data, sched, case, record, locality):
    """The free list looking at its lists only (recognition=lists, or a cube above Q12, where it has no complete
    recognition), and the AFL so on power-of-two sizes, on the kernel's lists without recognition (layout 5), under
    FCFS and conservative backfilling, against the general engine: a request the lists cannot place waits, though
    the mask has a free cube for it; nodes from the replay, which checks every cube against the kernel's."""
    allocator, dim = case
    w = data.draw(pow2_workloads(1 << dim) if allocator.startswith("afl") else workloads(1 << dim))
    a, b = both(w, f"hypercube:{dim}", sched, allocator=allocator, record_allocations=record, locality=locality)
    assert_same_placements(a, b)


test_kernel_conservative_on_the_free_list_lists_only_with_long_queues = needs_kernel(settings(max_examples=8, deadline=None)(
    given(**{**_LIST_QUEUES, "allocator": st.sampled_from(["free_list:recognition=lists", "afl:recognition=lists"])})(
        _conservative_on_the_free_list_with_long_queues)))


@needs_kernel
@pytest.mark.parametrize("sched", ["fcfs", "conservative"])
def test_kernel_on_the_lists_only_waits_where_the_mask_has_a_free_cube(sched):
    """What layout 5 must not do: recognise a cube the lists do not hold.  On Q3 jobs of 1, 2, 1 and 1 nodes take
    nodes 0, 2-3, 1 and 4; once the last two end (t = 5) nodes 1 and 4-7 are free, but the lists hold them as
    {1, 5}, {6, 7} and {4}: the lists-only free list starts the 4-node job when job 1 ends (t = 8), complete
    recognition at once, on the free 2-cube {4, 5, 6, 7}.  The kernel follows each."""
    w = Workload(job_id=[1, 2, 3, 4, 5], submit=[1.0, 2.0, 2.0, 3.0, 3.0], run=[7.0, 7.0, 2.0, 2.0, 5.0], size=[1, 2, 1, 1, 4],
                 requested_time=[7.0, 7.0, 2.0, 2.0, 5.0], header={"MaxProcs": "8"}, source="<t>")
    lists, full = (both(w, "hypercube:3", sched, allocator=spec, record_allocations=True) for spec in ("free_list:recognition=lists", "free_list"))
    for a, b in (lists, full):
        assert_same_placements(a, b)
    assert lists[0].start[4] == 8.0 and sorted(lists[0].nodes_of(4).tolist()) == [0, 1, 4, 5]
    assert full[0].start[4] == 5.0 and sorted(full[0].nodes_of(4).tolist()) == [4, 5, 6, 7]


@needs_kernel
@pytest.mark.parametrize("sched", ["conservative", "fcfs"])
def test_kernel_follows_the_free_list_above_q12_on_a_real_trace(sched):
    """LLNL-Atlas's first 3,000 jobs on Q14 (16,384 nodes), the free list looking at its lists only, with
    nodes and locality metrics: the kernel's lists without recognition (layout 5) against the general engine's
    plan on the lists' states.  (Under conservative the whole log took over 400 s on the general engine.)"""
    w = read_swf(shared_trace("LLNL-Atlas-2006-2.1-cln.swf")).take(np.arange(3000))
    a, b = both(w, "hypercube:14", sched, allocator="free_list:recognition=lists", clean=True, record_allocations=True, locality=True)
    assert_same_placements(a, b)


@needs_kernel
@pytest.mark.parametrize("sched", ["conservative", "easy", "fcfs"])
def test_kernel_follows_complete_recognition_above_q12_on_a_real_trace(sched):
    """LLNL-Atlas's jobs 5,000 to 7,500 (where its queue builds up) on Q14 with complete recognition (layout 3 above
    Q12, the kernel remembering the search's answers by mask), nodes and locality metrics, against the general
    engine; the lists alone give another schedule there, so recognition is at work."""
    w = read_swf(shared_trace("LLNL-Atlas-2006-2.1-cln.swf")).take(np.arange(5000, 7500))
    a, b = both(w, "hypercube:14", sched, allocator="free_list", clean=True, record_allocations=True, locality=True)
    assert a.engine == "compiled" and "recognition=complete" in a.allocator
    assert_same_placements(a, b)
    lists = topoalloc.simulate(w, machine="hypercube:14", allocator="free_list:recognition=lists", scheduler=sched, clean=True, locality=False,
                               engine="python" if sched == "easy" else "compiled")
    assert not np.array_equal(lists.start, a.start)


@pytest.mark.slow
@needs_kernel
def test_kernel_follows_complete_recognition_above_q12_on_a_long_real_prefix():
    """LLNL-Atlas's first 9,000 jobs on Q14 under conservative backfilling with complete recognition: per-job CSVs
    identical."""
    w = read_swf(shared_trace("LLNL-Atlas-2006-2.1-cln.swf")).take(np.arange(9000))
    a, b = both(w, "hypercube:14", "conservative", allocator="free_list", clean=True)
    assert a.to_csv() == b.to_csv()
    assert a.to_json() == b.to_json()


@pytest.mark.slow
@needs_kernel
def test_kernel_follows_the_free_list_above_q12_on_a_long_real_prefix():
    """LLNL-Atlas's first 9,000 jobs on Q14 under conservative backfilling: per-job CSVs identical (a queue of
    hundreds of jobs builds up between the 5,000th and the 10,000th)."""
    w = read_swf(shared_trace("LLNL-Atlas-2006-2.1-cln.swf")).take(np.arange(9000))
    a, b = both(w, "hypercube:14", "conservative", allocator="free_list:recognition=lists", clean=True)
    assert a.to_csv() == b.to_csv()
    assert a.to_json() == b.to_json()


@needs_kernel
@pytest.mark.parametrize(("trace", "allocator", "sched"), [("KTH-SP2-1996-2.1-cln.swf", "free_list", "conservative"),
                                                           ("SDSC-SP2-1998-4.2-cln.swf.gz", "afl", "conservative:order=sjf")])
def test_kernel_conservative_follows_the_free_list_on_a_real_trace(trace, allocator, sched):
    """The first 400 jobs of a real log on Q7 under conservative backfilling, with nodes and locality metrics
    (KTH-SP2 with its own sizes, the free list's cubes then larger; SDSC-SP2 rounded to powers of two, for
    the AFL): the same schedule and cubes as the general engine's replay plan on snapshots of the lists."""
    w = read_swf(shared_trace(trace)).take(np.arange(400))
    a, b = both(w, "hypercube:7", sched, allocator=allocator, clean=True, round_pow2=allocator == "afl", record_allocations=True,
               locality=True, filters=["drop-no-size", "drop-nonpositive-runtime"])
    assert_same_placements(a, b)


@needs_kernel
@pytest.mark.parametrize("allocator", ["free_list", "afl"])
def test_kernel_follows_the_free_list_on_ctc_sp2(allocator):
    """CTC-SP2's first 4,000 jobs, sizes rounded to powers of two, on Q9 under EASY in FCFS order (the general
    engine's keyed walk): 427 jobs started otherwise when the walk kept the guard's refusals after a refused
    candidate's allocate-and-release had changed the lists."""
    w = read_swf(shared_trace("CTC-SP2-1996-3.1-cln.swf.gz")).take(np.arange(4000))
    a, b = both(w, "hypercube:9", "easy", allocator=allocator, clean=True, round_pow2=True, locality=False)
    assert a.to_csv() == b.to_csv()


@needs_kernel
@pytest.mark.parametrize("sched", ["fcfs", "easy", "easy:order=sjf"])
@pytest.mark.parametrize("allocator", ["free_list", "afl"])
def test_kernel_follows_the_free_list_on_a_real_trace(sched, allocator, monkeypatch):
    """SDSC-SP2's first 5,000 jobs, sizes rounded to powers of two, on Q7 with nodes and locality metrics.
    Under EASY some refused candidates' allocate-and-release merge a cube with another mate than the one
    it was split from: the kernel repeats them on its lists and the replay repeats them on the allocator
    (counted here: a kernel that dropped them would give later jobs other cubes, which the replay catches)."""
    seen: list[int] = []
    replay = fastpath._replay

    def counting(sim, log, tried=None, placed=None, table=None):
        seen.append(len(tried or b"") // 16)
        return replay(sim, log, tried, placed, table)

    monkeypatch.setattr(fastpath, "_replay", counting)
    w = read_swf(shared_trace("SDSC-SP2-1998-4.2-cln.swf.gz")).take(np.arange(5000))
    a, b = both(w, "hypercube:7", sched, allocator=allocator, clean=True, round_pow2=True, record_allocations=True)
    assert_same_placements(a, b)
    assert seen and (seen[0] > 0) == sched.startswith("easy")


@st.composite
def mesh_requests(draw: st.DrawFn, dim: int) -> Workload:
    """Jobs asking for X×Y meshes (the subcube allocators give them a ⌈log₂X⌉+⌈log₂Y⌉-cube)."""
    rows = draw(st.lists(st.tuples(st.integers(0, 30), st.integers(0, 20), st.integers(1, 1 << dim), st.integers(1, 1 << dim), st.integers(-1, 30)),
                         min_size=1, max_size=25))
    rows = [r for r in rows if (r[2] - 1).bit_length() + (r[3] - 1).bit_length() <= dim] or [(0, 1, 1, 1, -1)]
    rows.sort(key=lambda r: r[0])
    return Workload(job_id=np.arange(1, len(rows) + 1), submit=[float(r[0]) for r in rows], run=[float(r[1]) for r in rows],
                    size=[r[2] * r[3] for r in rows], requested_time=[float(r[4]) if r[4] > 0 else -1.0 for r in rows],
                    shape=[[r[2], r[3]] for r in rows], header={"MaxProcs": str(1 << dim)}, source="<hypothesis>")


@needs_kernel
@settings(max_examples=60)
@given(data=st.data(), sched=st.sampled_from(["fcfs", "easy", "easy:order=lpt", "conservative", "conservative:order=sjf"]),
       allocator=st.sampled_from(["buddy", "gray_code"]), dim=st.sampled_from([3, 4, 7]))
def test_kernel_follows_the_subcube_allocators_on_mesh_requests(data, sched, allocator, dim):
    w = data.draw(mesh_requests(dim))
    a, b = both(w, f"hypercube:{dim}", sched, allocator=allocator, record_allocations=True)
    assert_same_placements(a, b)


@needs_kernel
@pytest.mark.parametrize("sched", ["fcfs", "easy", "easy:order=sjf"])
@pytest.mark.parametrize("allocator", ["buddy", "gray_code"])
def test_kernel_follows_the_subcube_allocators_on_a_real_trace(sched, allocator):
    """KTH-SP2's first 3,000 jobs on Q7 (sizes up to 100: most windows are larger than the request)."""
    w = read_swf(shared_trace("KTH-SP2-1996-2.1-cln.swf")).take(np.arange(3000))
    a, b = both(w, "hypercube:7", sched, allocator=allocator, locality=True, filters=["drop-no-size", "drop-nonpositive-runtime"])
    assert_same_placements(a, b)
    assert (a.allocated_size >= a.workload.size).all() and (a.allocated_size > a.workload.size).any()


@needs_kernel
@pytest.mark.parametrize("plan", ["free positions", "snapshots"])
@pytest.mark.parametrize(("sched", "allocator"), [("conservative", "buddy"), ("conservative:order=sjf", "gray_code")])
def test_kernel_conservative_follows_the_subcube_allocators_on_a_real_trace(monkeypatch, sched, allocator, plan):
    """Conservative backfilling: the kernel's plan replayed on busy masks against the general engine's, on
    KTH-SP2's first 400 jobs on Q7 (a queue of tens of jobs, reservations moved by early ends and overruns),
    nodes and locality metrics from the replay.  The general engine's plan is its own (a StatePlan on free
    positions) or plan.ReplayPlan on snapshots of the allocator, the definition."""
    if plan == "snapshots":
        from topoalloc.alloc.base import Allocator
        from topoalloc.alloc.hypercube.allocators import _SubcubeBase

        monkeypatch.setattr(_SubcubeBase, "future_plan", Allocator.future_plan)
    w = read_swf(shared_trace("KTH-SP2-1996-2.1-cln.swf")).take(np.arange(400))
    a, b = both(w, "hypercube:7", sched, allocator=allocator, locality=True, filters=["drop-no-size", "drop-nonpositive-runtime"])
    assert_same_placements(a, b)


@pytest.mark.slow
@needs_kernel
@pytest.mark.parametrize(("sched", "allocator", "jobs"), [("conservative", "buddy", 5000), ("conservative:order=sjf", "gray_code", 5000),
                                                          ("conservative", "free_list", 3000), ("conservative:order=lpt", "afl", 3000)])
def test_kernel_conservative_follows_the_subcube_allocators_on_sdsc_sp2(sched, allocator, jobs):
    """SDSC-SP2's first 5,000 or 3,000 jobs, sizes rounded to powers of two, on Q7 under conservative backfilling:
    per-job CSVs identical.  The general engine plans the buddy and Gray code on free positions, the free list and the AFL
    on the lists' states (StatePlans: seconds a run; by replay on snapshots it took about a minute for 1,000 jobs);
    the whole log is the benchmark's."""
    w = read_swf(shared_trace("SDSC-SP2-1998-4.2-cln.swf.gz")).take(np.arange(jobs))
    a, b = both(w, "hypercube:7", sched, allocator=allocator, clean=True, round_pow2=True, locality=False)
    assert a.to_csv() == b.to_csv()
    assert a.to_json() == b.to_json()


@pytest.mark.slow
@needs_kernel
@pytest.mark.parametrize("sched", ["fcfs", "easy", "easy:order=sjf"])
@pytest.mark.parametrize("allocator", ["buddy", "gray_code", "free_list", "afl"])
def test_kernel_follows_the_subcube_allocators_on_full_sdsc_sp2(sched, allocator):
    """The whole SDSC-SP2 log, sizes rounded to powers of two, on Q7: per-job CSVs identical (the issue's benchmark run;
    the free list and the AFL on the kernel's own lists)."""
    a, b = both(shared_trace("SDSC-SP2-1998-4.2-cln.swf.gz"), "hypercube:7", sched, allocator=allocator, clean=True, round_pow2=True, locality=False)
    assert a.to_csv() == b.to_csv()
    assert a.to_json() == b.to_json()


def test_kernel_layouts_are_exact_types_and_schedulers():
    """Only the buddy and Gray code allocators themselves (a subclass may place differently), under every scheduler."""
    from topoalloc.alloc.hypercube.allocators import BuddyAllocator
    from topoalloc.sched import Conservative
    from topoalloc.topology import Hypercube

    w = read_swf(GOLDEN_FILES[0])

    class MyBuddy(BuddyAllocator):
        pass

    assert fastpath.layout_of(BuddyAllocator(Hypercube(3))) == 1
    assert fastpath.layout_of(topoalloc.make_allocator("gray_code", "hypercube:3")) == 2
    assert fastpath.layout_of(MyBuddy(Hypercube(3))) == 0
    sim = Simulation(w, MyBuddy(Hypercube(4)), EASY(), np.maximum(w.requested_time, 1.0))
    assert "nor one whose busy mask" in fastpath.why_not(sim)
    sim = Simulation(w, MyBuddy(Hypercube(4)), Conservative(), np.maximum(w.requested_time, 1.0))
    assert "nor one whose busy mask" in fastpath.why_not(sim)
    if fastpath.compiled_available():
        for sched in (EASY(), Conservative()):
            assert fastpath.why_not(Simulation(w, BuddyAllocator(Hypercube(4)), sched, np.maximum(w.requested_time, 1.0))) is None


def test_kernel_follows_the_free_list_where_its_lists_say_what_fits():
    """The free list with complete recognition up to Q12 under every scheduler (fitting is then a function of the
    mask); looking at its lists only (recognition=lists, or Q13-Q15) under FCFS and conservative, not EASY (its
    shadow asks the mask); the AFL too when every request fills its cube (no mesh leaves leftovers on the
    auxiliary lists); never a subclass, nor above Q15."""
    from topoalloc.alloc.hypercube.allocators import AFLAllocator, FreeListAllocator
    from topoalloc.sched import FCFS, Conservative
    from topoalloc.topology import Hypercube

    class MyList(FreeListAllocator):
        pass

    pow2 = Workload(job_id=[1, 2], submit=[0.0, 1.0], run=[5.0, 5.0], size=[4, 8], requested_time=[9.0, 9.0], header={}, source="<t>")
    odd = Workload(job_id=[1, 2], submit=[0.0, 1.0], run=[5.0, 5.0], size=[4, 6], requested_time=[9.0, 9.0], header={}, source="<t>")
    meshes = Workload(job_id=[1], submit=[0.0], run=[5.0], size=[6], shape=[[2, 3]], requested_time=[9.0], header={}, source="<t>")
    assert fastpath.layout_of(FreeListAllocator(Hypercube(3))) == 3
    assert fastpath.layout_of(FreeListAllocator(Hypercube(12))) == 3
    assert fastpath.layout_of(FreeListAllocator(Hypercube(13))) == 3  # (complete recognition up to Q15)
    assert fastpath.layout_of(FreeListAllocator(Hypercube(15))) == 3
    assert fastpath.layout_of(FreeListAllocator(Hypercube(15), recognition="lists")) == 5
    assert fastpath.layout_of(FreeListAllocator(Hypercube(16))) == 0  # (a cube's key is an int32 in the kernel)
    assert fastpath.layout_of(FreeListAllocator(Hypercube(5), recognition="lists")) == 5
    assert fastpath.layout_of(AFLAllocator(Hypercube(4), recognition="lists"), pow2) == 5
    assert fastpath.layout_of(MyList(Hypercube(3))) == 0
    assert fastpath.layout_of(AFLAllocator(Hypercube(4))) == 0  # (no workload: its meshes are unknown)
    assert fastpath.layout_of(AFLAllocator(Hypercube(4)), pow2) == 3
    assert fastpath.layout_of(AFLAllocator(Hypercube(4)), odd) == 0
    assert fastpath.layout_of(AFLAllocator(Hypercube(4)), meshes) == 0
    busy = FreeListAllocator(Hypercube(3))
    busy.allocate(topoalloc.alloc.base.Request(2))
    assert fastpath.layout_of(busy) == 0  # (the kernel starts from the fresh lists)
    est = np.array([9.0, 9.0])
    assert "does not fill its cube" in fastpath.why_not(Simulation(odd, AFLAllocator(Hypercube(4)), EASY(), est))
    assert "lists only under EASY" in fastpath.why_not(Simulation(pow2, FreeListAllocator(Hypercube(13), recognition="lists"), EASY(), est))
    assert "lists only under EASY" in fastpath.why_not(Simulation(pow2, FreeListAllocator(Hypercube(4), recognition="lists"), EASY(), est))
    assert "up to Q15" in fastpath.why_not(Simulation(pow2, FreeListAllocator(Hypercube(16)), Conservative(), est))
    assert "nor one whose busy mask" in fastpath.why_not(Simulation(pow2, MyList(Hypercube(4)), EASY(), est))
    if fastpath.compiled_available():
        for sched in (FCFS(), EASY(), Conservative()):
            assert fastpath.why_not(Simulation(pow2, AFLAllocator(Hypercube(4)), sched, est)) is None
            assert fastpath.why_not(Simulation(pow2, FreeListAllocator(Hypercube(4)), sched, est)) is None
        for sched in (FCFS(), Conservative()):
            assert fastpath.why_not(Simulation(pow2, FreeListAllocator(Hypercube(4), recognition="lists"), sched, est)) is None
            assert fastpath.why_not(Simulation(pow2, FreeListAllocator(Hypercube(13), recognition="lists"), sched, est)) is None


@needs_kernel
def test_kernel_refuses_bad_layout_arguments():
    from topoalloc.sched import _ckernel  # type: ignore[attr-defined]

    z = np.zeros(2)
    sz = np.array([1, 3], dtype=np.int64)
    with pytest.raises(ValueError, match="a power of two"):
        _ckernel.run(1, 8, z, z, z, sz, None, False, np.zeros(2), np.zeros(2), None, 1)
    with pytest.raises(ValueError, match="nodes must be a power of two"):
        _ckernel.run(1, 12, z, z, z, np.ones(2, dtype=np.int64), None, False, np.zeros(2), np.zeros(2), None, 2)
    with pytest.raises(ValueError, match="layout: expected"):
        _ckernel.run(1, 8, z, z, z, np.ones(2, dtype=np.int64), None, False, np.zeros(2), np.zeros(2), None, 6)
    with pytest.raises(ValueError, match="layout 3: at most 32768 nodes"):
        _ckernel.run(1, 65536, z, z, z, np.ones(2, dtype=np.int64), None, False, np.zeros(2), np.zeros(2), None, 3)
    with pytest.raises(ValueError, match="layout 5: FCFS and conservative only"):
        _ckernel.run(1, 8, z, z, z, np.ones(2, dtype=np.int64), None, False, np.zeros(2), np.zeros(2), None, 5)
    with pytest.raises(ValueError, match="at most 32768 nodes"):
        _ckernel.run(2, 65536, z, z, z, np.ones(2, dtype=np.int64), None, False, np.zeros(2), np.zeros(2), None, 5)
    with pytest.raises(ValueError, match="a layout's"):
        _ckernel.run(1, 8, z, z, z, np.ones(2, dtype=np.int64), None, False, np.zeros(2), np.zeros(2), None, 0, np.zeros(2, dtype=np.int64))
    with pytest.raises(ValueError, match="arrivals-only"):
        _ckernel.run(1, 8, z, z, z, np.ones(2, dtype=np.int64), None, True, np.zeros(2), np.zeros(2), None, 1)


def test_compiled_engine_refuses_what_it_cannot_do():
    with pytest.raises(InvalidArgument, match="record_reservations"):
        topoalloc.simulate(GOLDEN_FILES[0], scheduler="easy", record_reservations=True, engine="compiled")
    with pytest.raises(InvalidArgument, match="engine"):
        topoalloc.simulate(GOLDEN_FILES[0], engine="fast")


def test_without_the_kernel_results_are_identical(monkeypatch):
    """A copy installed without a C compiler runs the general engine (``auto``) and gives the same results."""
    path = GOLDEN_FILES[0]
    with_kernel = {s: topoalloc.simulate(path, scheduler=s).to_json() for s in ("fcfs", "easy", "conservative")}
    monkeypatch.setattr(fastpath, "compiled_available", lambda: False)
    for s, text in with_kernel.items():
        assert topoalloc.simulate(path, scheduler=s).to_json() == text
        with pytest.raises(InvalidArgument, match="not built"):
            topoalloc.simulate(path, scheduler=s, engine="compiled")


def test_queue_ranks_follow_the_queue_keys():
    rng = np.random.default_rng(1)
    n = 200
    submit = np.sort(rng.integers(0, 20, n)).astype(float)
    est = rng.integers(0, 5, n).astype(float)
    size = rng.integers(1, 4, n)
    for order in ("sjf", "lpt", "cplant"):
        key = EASY(order=order).queue_key(submit.tolist(), est.tolist(), size.tolist())
        assert key is not None
        want = sorted(range(n), key=key)
        rank = fastpath.queue_ranks(order, submit, est, size)
        assert rank is not None
        assert np.argsort(rank).tolist() == want
    assert fastpath.queue_ranks("fcfs", submit, est, size) is None


@pytest.mark.slow
@needs_kernel
@pytest.mark.parametrize("sched", ["fcfs", "easy", "conservative"])
def test_kernel_on_full_ctc(sched, tmp_path):
    """The whole CTC-SP2 log (77,222 jobs) on flat:338: per-job CSVs identical (conservative: minutes)."""
    trace = shared_trace("CTC-SP2-1996-3.1-cln.swf.gz")
    a, b = both(trace, "flat:338", sched)
    assert a.to_csv() == b.to_csv()
    assert a.to_json() == b.to_json()


def test_conservative_moves_a_job_whose_window_ends_exactly_where_a_reservation_starts():
    """Found by Hypothesis: job 3 fits [0.7, 0.7 + 3.2) ending exactly at job 2's reservation (3.9000000000000004);
    the Python profile measured the job's window as end - start of its old reservation, one rounding step longer,
    and refused. Kernel, Python engine and replay probes now agree."""
    from topoalloc.workload.core import Workload

    w = Workload(job_id=np.arange(1, 5), submit=[0.0, 0.5, 0.5, 0.5], run=[0.7000000000000001, 1.7000000000000002, 1.4000000000000001, 1.6],
                 size=[5, 7, 12, 5], requested_time=[-1.0] * 4, header={"MaxProcs": "16"}, source="<pinned>")
    py = topoalloc.simulate(w, machine="flat:16", scheduler="conservative", engine="python")
    replay = topoalloc.simulate(w, machine="flat:16", scheduler="conservative", allocator="flat:probe=replay")
    assert py.start.tolist() == replay.start.tolist() == [0.0, 0.5, 2.3000000000000003, 0.7000000000000001]
    if fastpath.compiled_available():
        assert topoalloc.simulate(w, machine="flat:16", scheduler="conservative", engine="compiled").start.tolist() == py.start.tolist()


@settings(max_examples=500)
@given(now=st.one_of(st.floats(0, 1e12), st.sampled_from([0.0, 1.0, 1e9, 2.0**52])), d=st.one_of(st.floats(0, 1e6), st.floats(0, 1e-6), st.integers(0, 10**6).map(lambda i: i / 10)))
def test_latest_end_by_is_the_largest_estimate_that_ends_by_the_shadow_time(now, d):
    from topoalloc.sched.easy import latest_end_by

    import math

    shadow = now + d
    e = latest_end_by(shadow, now)
    assert now + e <= shadow < now + math.nextafter(e, math.inf)


@needs_kernel
@pytest.mark.parametrize("machine, allocator", [("hypercube:4", "buddy"), ("hypercube:4", "gray_code"), ("hypercube:4", "free_list")])
def test_easy_walk_passes_over_words_of_long_jobs_only(machine, allocator):
    """EASY's walk on a layout passes over a word (64 ranks) of a window size whose long jobs the guard refused
    when no job of that size in the word ends by the shadow time.  Here the head (16 nodes) waits for the first
    job's expected end at 100; the first 8-node candidate runs past it and is refused, so are the 70 after it
    (passed over, a word and more of them), and the last, whose estimate 99 ends exactly at the shadow time from
    1, starts at once, in a word of its own: the word is read because its least estimate is 99, not below."""
    nl = 70
    est = [100.0, 10.0] + [200.0] * nl + [99.0]
    w = Workload(job_id=np.arange(1, nl + 4), submit=[0.0] + [1.0] * (nl + 2), run=est, size=[8, 16] + [8] * (nl + 1),
                 requested_time=est, header={"MaxProcs": "16"}, source="<walk>")
    a = topoalloc.simulate(w, machine=machine, allocator=allocator, scheduler="easy", engine="compiled")
    b = topoalloc.simulate(w, machine=machine, allocator=allocator, scheduler="easy", engine="python")
    assert a.engine == "compiled"
    assert a.start.tolist() == b.start.tolist()
    assert a.start[-1] == 1.0 and a.start[1] == 100.0 and a.start[2] > 100.0


@needs_kernel
@settings(max_examples=2000)
@given(now=st.one_of(st.floats(-1e12, 1e12), st.sampled_from([0.0, 1.0, 1e9, 2.0**52, -(2.0**40)])),
       d=st.one_of(st.floats(0, 1e6), st.floats(0, 1e-6), st.integers(0, 10**6).map(lambda i: i / 10), st.integers(0, 40)),
       ulps=st.booleans())
def test_the_kernels_latest_end_by_is_easys(now, d, ulps):
    """The kernel steps to the answer from the difference plus half the gap above the shadow time, where the
    difference is not it; easy.py bisects.  Both are the largest estimate that ends by the shadow time, on
    shadow times whole units and a few units in the last place past now (``ulps``: d of them)."""
    import math

    from topoalloc.sched import _ckernel  # type: ignore[attr-defined]
    from topoalloc.sched.easy import latest_end_by

    if ulps:
        shadow = now
        for _ in range(int(d) % 41):
            shadow = math.nextafter(shadow, math.inf)
    else:
        shadow = now + d
    e = _ckernel.latest_end_by(shadow, now)
    assert e == latest_end_by(shadow, now)
    assert now + e <= shadow < now + math.nextafter(e, math.inf)


# ------------------------------------------------ the static slice rule on the kernel's table of windows (layout 4)

ROOT_TRACE = default_trace_path()  # the bundled NASA log
SLICE_MACHINES = ["tpu:4x2x3,cube=1", "tpu:2x2x2,cube=1", "bgq:6x4x2x2x2,midplane=2x2x2x2x2", "tpu:v4"]
SLICE_SCHEDULERS = ["fcfs", "fcfs:order=sjf", "conservative", "conservative:order=sjf", "conservative:order=lpt", "conservative:order=cplant"]


def _slice_both(w, machine: str, sched: str, **kw):
    """The kernel and the general engine on ``w`` with the static slice rule; the kernel must take the run."""
    alloc = topoalloc.make_allocator("slice", machine)
    sim = Simulation(w, alloc, topoalloc.make_scheduler(sched), np.maximum(w.requested_time, 1.0))
    assert fastpath.layout_of(alloc, w) == 4
    assert fastpath.why_not(sim) is None or not fastpath.compiled_available()
    return both(w, machine, sched, allocator="slice", **kw)


@needs_kernel
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_kernel_follows_the_static_slice_rule(data):
    """Small workloads on small unit machines (wrapped and open dimensions, a 5-D Blue Gene/Q), FCFS and
    conservative in every queue order: the same start of every job, the same nodes and slice networks (the
    replay checks every grant against the kernel's window), the same reservation changes."""
    machine = data.draw(st.sampled_from(SLICE_MACHINES))
    sched = data.draw(st.sampled_from(SLICE_SCHEDULERS))
    alloc = topoalloc.make_allocator("slice", machine)
    w = data.draw(workloads(alloc.n_nodes))
    a, b = _slice_both(w, machine, sched, record_allocations=True)
    assert_same(a, b)
    assert_same_placements(a, b)


@needs_kernel
@pytest.mark.parametrize("sched", ["conservative", "conservative:order=sjf", "fcfs"])
def test_kernel_follows_the_static_slice_rule_on_a_tpu_pod(sched):
    """NASA's first 1,500 jobs scaled to a TPU v5p pod (8,960 chips, 140 cubes): per-job CSVs identical, with every
    grant's slice network (``slice_hops``).  The whole log is the benchmark's (``bench_scaling.py --only large``)."""
    w = read_swf(ROOT_TRACE).take(np.arange(1500))
    a, b = _slice_both(w, "tpu:v5p", sched, clean=True, scale_sizes=70, locality=False)
    assert a.to_csv() == b.to_csv()
    assert a.to_json() == b.to_json()
    assert a.slice_hops is not None and np.isfinite(a.slice_hops).all()


@pytest.mark.slow
@needs_kernel
@pytest.mark.parametrize(("machine", "sched", "scale", "jobs"), [("tpu:v5p", "conservative", 70, 9000), ("tpu:v5p", "conservative:order=lpt", 70, 6000),
                                                                 ("bgq:sequoia", "conservative", 768, None), ("tpu:v4", "conservative:order=sjf", 32, None)])
def test_kernel_follows_the_static_slice_rule_at_full_size(machine, sched, scale, jobs):
    """NASA scaled to today's machines (an overloaded v5p pod; Sequoia with whole-machine jobs): per-job CSVs identical."""
    w = read_swf(ROOT_TRACE)
    if jobs:
        w = w.take(np.arange(jobs))
    a, b = _slice_both(w, machine, sched, clean=True, scale_sizes=scale, locality=False)
    assert a.to_csv() == b.to_csv()
    assert a.to_json() == b.to_json()


def test_kernel_table_layout_reasons():
    """What keeps the static slice rule off the kernel, each with its reason: EASY (boxes do not nest, which its walk
    assumes), OCS, a machine of more units than the kernel's masks keep, an allocator already holding units."""
    from topoalloc.alloc.base import Request

    w = read_swf(GOLDEN_FILES[0])

    def why(alloc, sched="conservative"):
        return fastpath.why_not(Simulation(w, alloc, topoalloc.make_scheduler(sched), np.maximum(w.requested_time, 1.0)))

    static = topoalloc.make_allocator("slice", "tpu:v4")
    assert fastpath.layout_of(static, w) == 4
    assert fastpath.layout_of(static) == 0  # (the table is made for a workload's volumes)
    assert "nest" in why(static, "easy")
    assert "OCS" in why(topoalloc.make_allocator("slice:rule=ocs", "tpu:v4"))
    assert "13,248 units" in why(topoalloc.make_allocator("slice", "tofu:fugaku"))
    held = topoalloc.make_allocator("slice", "tpu:v4")
    held.allocate(Request(64))
    assert "already holds" in fastpath._table_why_not(held, w) and fastpath.layout_of(held, w) == 0
    if fastpath.compiled_available():
        assert why(static) is None and why(static, "fcfs") is None


@needs_kernel
def test_kernel_refuses_a_bad_table():
    """The table's arguments are checked before anything runs: each mistake named."""
    from topoalloc.sched import _ckernel  # type: ignore[attr-defined]

    z = np.zeros(2)
    sz = np.array([1, 2], dtype=np.int64)
    tab = np.array([1, 2, 3, 6], dtype=np.uint64)  # class 0: units 0, 1; class 1: units 0-1, 1-2
    bounds = np.array([0, 2, 4], dtype=np.int64)
    cls = np.array([0, 1], dtype=np.int64)

    def run(kind=2, nodes=3, size=sz, t=tab, b=bounds, c=cls):
        return _ckernel.run(kind, nodes, z, z, z, size, None, False, np.zeros(2), np.zeros(2), None, 4, None, t, b, c)

    assert run()[0] == 0
    with pytest.raises(ValueError, match="FCFS and conservative only"):
        run(kind=1)
    with pytest.raises(ValueError, match="given with layout 4"):
        _ckernel.run(2, 3, z, z, z, sz, None, False, np.zeros(2), np.zeros(2), None, 4)
    with pytest.raises(ValueError, match="strictly increasing"):
        run(b=np.array([0, 2, 2], dtype=np.int64))
    with pytest.raises(ValueError, match="positions past 3"):
        run(t=np.array([1, 2, 3, 8], dtype=np.uint64))
    with pytest.raises(ValueError, match="rows of class 1 hold 2 and 1"):
        run(t=np.array([1, 2, 3, 4], dtype=np.uint64))
    with pytest.raises(ValueError, match="job position 0 is 2, its class's windows hold 1"):
        run(size=np.array([2, 2], dtype=np.int64))
    with pytest.raises(ValueError, match="class 2, expected 0..1"):
        run(c=np.array([0, 2], dtype=np.int64))
    with pytest.raises(ValueError, match="table: expected 4 items"):
        run(t=np.array([1, 2, 3], dtype=np.uint64))


@needs_kernel
@pytest.mark.parametrize(("machine", "allocator", "locality"), [("flat:128", "flat", False), ("hypercube:7", "buddy", False),
                                                                ("hypercube:7", "free_list", True), ("mesh:16x8", "first_fit", True)])
def test_the_kernel_reports_progress_while_it_runs(machine, allocator, locality):
    """The progress callback hears the jobs ended while the kernel simulates (a conservative plan on a layout
    can take minutes), about every n / 200 ends; where the placements are replayed afterwards (metrics), the
    schedule is the bar's first half and the replay its second.  Either way the counts never go back and end at
    (n, n), as the general engine's do."""
    w = burst(1200, 7, 128).replace(submit=np.arange(1200, dtype=float) * 50)
    seen: list[tuple[int, int]] = []
    r = topoalloc.simulate(w, machine=machine, allocator=allocator, scheduler="conservative", locality=locality,
                           progress=lambda done, total: seen.append((done, total)))
    assert r.engine == "compiled"
    done = [d for d, _ in seen]
    assert {t for _, t in seen} == {1200}
    assert done == sorted(done) and done[-1] == 1200
    assert len(seen) > 150  # (during the run, not only at its end)
    if locality:  # the kernel's ends as the first half, then the replay's
        assert 0 < done[0] <= 6 and any(590 <= d <= 600 for d in done)
    else:
        assert done[0] == 6


@needs_kernel
def test_an_exception_in_the_progress_callback_stops_the_kernel():
    """What the callback raises (a user's own interruption, say) stops the run and reaches the caller."""
    class Stop(Exception):
        pass

    calls = []

    def progress(done, total):
        calls.append(done)
        if len(calls) == 3:
            raise Stop(done)

    w = burst(1200, 7, 128).replace(submit=np.arange(1200, dtype=float) * 50)
    with pytest.raises(Stop):
        topoalloc.simulate(w, machine="hypercube:7", allocator="buddy", scheduler="conservative", locality=False, progress=progress)
    assert len(calls) == 3
    from topoalloc.sched import _ckernel

    z = np.zeros(2)
    with pytest.raises(TypeError, match="progress: expected a callable"):
        _ckernel.run(1, 8, z, z, z, np.ones(2, dtype=np.int64), None, False, np.zeros(2), np.zeros(2), None, 0, None, None, None, None, 5)
