"""Schedulers as policies with no clock: decisions on a hand-made context."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from topoalloc.alloc import FlatAllocator, Request
from topoalloc.alloc.flat import FlatByReplay
from topoalloc.alloc.probes import ReplayGuard
from topoalloc.sched import EASY, FCFS, Conservative, SchedulingContext
from topoalloc.sched import plan as _plan
from topoalloc.topology import FlatTopology

#: the tests that compare StatePlan's compiled loops with the Python ones (the extension is optional: without a C
#: compiler the Python loops run alone, and CI's install check fails if a compiler is there and it was not built)
needs_cplan = pytest.mark.skipif(_plan._cplan is None, reason="the compiled search (_cplan) is not built")


def context(sizes, estimates, n=8):
    alloc = FlatAllocator(FlatTopology(n))
    reqs = [Request(s, job_id=i) for i, s in enumerate(sizes)]
    return SchedulingContext(alloc, estimate=estimates, size=sizes, requests=reqs.__getitem__, record_reservations=True)


def workload(submit, run, size, requested, nodes):
    """A hand-made log of len(submit) jobs (ids from 1) for a machine of ``nodes`` processors."""
    from topoalloc.workload import Workload

    return Workload(job_id=list(range(1, len(submit) + 1)), submit=submit, run=run, size=size, requested_time=requested,
                    header={"MaxProcs": str(nodes)}, source="<test>")


def test_fcfs_head_blocks():
    ctx = context([6, 4, 1], [10, 10, 10])
    ctx.set_queue([0, 1, 2])
    FCFS().schedule(ctx)
    assert ctx.started == [0] and ctx.queue == [1, 2]  # job 2 would fit but FCFS is strict


def test_easy_backfills_without_delaying_head():
    ctx = context([6, 4, 2, 2], [10, 10, 5, 20])
    ctx.set_queue([0])
    FCFS().schedule(ctx)
    ctx.set_queue([1, 2, 3])  # head needs 4, 2 free; job 0 expected to end at 10
    ctx.now = 1.0
    s = EASY()
    s.schedule(ctx)
    # shadow = 10, extra = 8 - 4 = 4: job 2 (ends at 6) and job 3 (2 <= extra) both fit, but only 2 free
    assert ctx.started == [0, 2] and ctx.queue == [1, 3]
    assert ctx.reservations[-1].job == 1 and ctx.reservations[-1].time == 10.0


def test_conservative_reserves_everyone():
    # job 0 (6 procs, 10 s) starts; job 1 (4) is reserved at 10 on [10, 20); job 2 (2 procs, 20 s)
    # fits the 2 free processors for all of [0, 20) (at most 4 + 2 busy after 10): starts now
    ctx = context([6, 4, 2], [10, 10, 20])
    ctx.set_queue([0, 1, 2])
    Conservative().schedule(ctx)
    assert ctx.started == [0, 2] and ctx.queue == [1]
    assert {r.job: r.time for r in ctx.reservations} == {0: 0.0, 1: 10.0, 2: 0.0}


def test_conservative_refuses_to_delay_a_reservation():
    # as above but job 1 takes the whole machine on [10, 20): job 2 would overlap it, so it
    # is reserved after job 1 (EASY would start it now: it fits the extra nodes? no: extra = 0,
    # and it does not end by the shadow, so EASY refuses too; conservative reserves it at 20)
    ctx = context([6, 8, 2], [10, 10, 20])
    ctx.set_queue([0, 1, 2])
    Conservative().schedule(ctx)
    assert ctx.started == [0] and ctx.queue == [1, 2]
    assert {r.job: r.time for r in ctx.reservations} == {0: 0.0, 1: 10.0, 2: 20.0}


def test_easy_counts_every_job_ending_at_the_shadow_time():
    """Pinned convention: all running jobs expected to end at the shadow instant count as ended,
    so the extra nodes include both of two jobs that end together."""
    # running: A (2 procs) and B (2 procs) expected to end at 10, C (3 procs) at 30; 1 free
    ctx = context([2, 2, 3, 3, 1], [10, 10, 30, 5, 100])
    ctx.set_queue([0, 1, 2])
    FCFS().schedule(ctx)
    assert ctx.started == [0, 1, 2]
    ctx.set_queue([3, 4])  # head: 3 procs; candidate: 1 proc for 100 s (ends after the shadow)
    EASY().schedule(ctx)
    # shadow 10; free then 1 + 2 + 2 = 5, extra = 2 (would be 0 counting only A): job 4 starts
    assert ctx.reservations[-1].time == 10.0
    assert ctx.started[-1] == 4 and ctx.queue == [3]


def test_overrunning_job_is_expected_at_the_next_instant():
    """Pinned convention: a job past its estimate is expected to end at the next instant."""
    ctx = context([8, 4], [10, 10])
    ctx.set_queue([0])
    FCFS().schedule(ctx)
    ctx.now = 50.0  # job 0 overran its 10 s estimate
    ctx.set_queue([1])
    EASY().schedule(ctx)
    shadow = ctx.reservations[-1].time
    assert 50.0 < shadow < 50.0 + 1e-9


@pytest.mark.parametrize(
    "machine, allocator",
    [
        ("tofu:2x2x2", "slice"),
        ("tpu:2x2x2", "slice:rule=static,shapes=all"),
        ("hypercube:4", "buddy"),
        ("hypercube:4", "free_list"),
        ("hypercube:4", "afl"),
        ("torus:2x4x4", "ep"),
        ("torus:2x4x4", "nep"),
        ("mesh:4x8", "mesh_first_fit"),
    ],
)
def test_replay_plan_earliest_equals_replaying_the_whole_plan(monkeypatch, machine, allocator):
    """Conservative backfilling's plan for non-counting allocators finds a job's earliest start with one
    walk through the events before it and a replay of the rest per candidate time; every answer of a run
    must equal the definition (the whole plan replayed with the job at each candidate time)."""
    import numpy as np

    import topoalloc
    from topoalloc.alloc.base import Allocator
    from topoalloc.alloc.mesh2d.core import FreeSetProbes
    from topoalloc.alloc.partition import PartitionAllocator
    from topoalloc.alloc.hypercube.allocators import FreeListAllocator, _SubcubeBase
    from topoalloc.alloc.slices import SliceAllocator
    from topoalloc.sched.plan import ReplayPlan
    from topoalloc.topology import parse_machine
    from topoalloc.workload import read_swf
    from topoalloc.workload.swf import default_trace_path

    fast = ReplayPlan.earliest
    calls = []

    def both(self, job, size, dur, not_after=None):
        want = self.earliest_by_full_replay(job, size, dur, not_after)
        got = fast(self, job, size, dur, not_after)
        assert got == want, (job, size, dur, not_after)
        calls.append(got > self.now)
        return got

    monkeypatch.setattr(ReplayPlan, "earliest", both)
    # the 2-D allocators that place by their free set, EP and NEP, and the slice allocators answer with StatePlan
    # (checked against ReplayPlan below): here they replay on snapshots
    monkeypatch.setattr(FreeSetProbes, "_free_set_probes", lambda self: False)
    monkeypatch.setattr(PartitionAllocator, "future_plan", Allocator.future_plan)
    monkeypatch.setattr(SliceAllocator, "future_plan", Allocator.future_plan)
    monkeypatch.setattr(_SubcubeBase, "future_plan", Allocator.future_plan)
    monkeypatch.setattr(FreeListAllocator, "future_plan", Allocator.future_plan)
    w = read_swf(default_trace_path())
    w = w.take(np.arange(30))
    # sizes scaled to the largest job the machine can ever hold (the uneven blocks' is 15 of their 18 nodes)
    from topoalloc.api import make_allocator

    probe = make_allocator(allocator, machine)
    most = max(k for k in range(1, probe.n_nodes + 1) if probe._fits_empty(Request(k)))
    factor = most / w.max_procs
    topoalloc.simulate(w, machine=machine, allocator=allocator, scheduler="conservative", clean=True, scale_sizes=factor, work_multiple=4.0, engine="python")
    assert len(calls) > 10 and any(calls)  # reservations in the future were made and compared


@pytest.mark.parametrize(
    ("machine", "allocator"),
    [
        ("mesh:4x8", "mesh_first_fit"),
        ("mesh:4x8", "mesh_best_fit"),
        ("mesh:4x8", "frame_sliding"),
        ("mesh:4x8", "adaptive_scan"),
        ("mesh:4x8", "anca_ff"),
        ("mesh:4x8", "anca_bf"),
        ("mesh:4x8", "pald:max_blocks=4"),
        ("mesh:8x8", "buddy_2d"),
        ("torus:4x4x2", "ep"),
        ("torus:4x4x2", "nep"),
        ("mesh:8x4", "nep:identify=first"),
        ("tpu:4x2x3,cube=1", "slice"),
        ("tofu:3x2x2", "slice"),
        ("bgq:6x4x2x2x2,midplane=2x2x2x2x2", "slice"),
        ("hypercube:5", "buddy"),
        ("hypercube:5", "gray_code"),
        ("hypercube:5", "free_list"),
        ("hypercube:5", "afl"),
        ("hypercube:5", "afl:recognition=lists,pieces=as_is"),
        ("slurm-block:" + str(Path(__file__).resolve().parents[1] / "topoalloc" / "data" / "topology-block-uneven.conf"), "block"),  # (the example counts)
    ],
    ids=lambda v: v.rsplit("/", 1)[-1],
)
@pytest.mark.parametrize("reference", ["snapshots", "snapshots, Python search", pytest.param("full replay", marks=pytest.mark.slow)])
def test_state_plan_answers_as_the_replay_plan(monkeypatch, machine, allocator, reference):
    """StatePlan (on free bit sets for the 2-D allocators that place by them, on immutable forests for
    EP and NEP, on free units for the static slice allocators, on free nodes per base block for Slurm's
    topology/block, on free positions for the hypercube's buddy and Gray code, on the lists' states for the free
    list and the AFL) answers every question of a conservative run as ReplayPlan on snapshots does:
    feasibility, each earliest start, and whether a job with its reservation in place would move earlier
    (ReplayPlan: taken out, searched, put back).

    The default tier asks ReplayPlan's own search (one walk through the events before the job, a replay
    of the rest per candidate; equal to the definition by the test above) on the bundled trace's first 40 jobs;
    the slow tier asks the definition itself, the whole plan replayed at each candidate time, on 60.  StatePlan's
    searches run compiled where the extension is built, and in Python (the reference) in the second case."""
    import numpy as np

    import topoalloc
    from topoalloc.sched import plan
    from topoalloc.sched.plan import ReplayPlan, StatePlan

    if reference == "snapshots, Python search":
        monkeypatch.setattr(plan, "USE_COMPILED", False)
    from topoalloc.topology import parse_machine
    from topoalloc.workload import read_swf
    from topoalloc.workload.swf import default_trace_path

    init, add, add_many, remove = StatePlan.__init__, StatePlan.add, StatePlan.add_many, StatePlan.remove
    earliest, moves_earlier, feasible, update = StatePlan.earliest, StatePlan.moves_earlier, StatePlan.feasible, StatePlan._update
    asked = {"earliest": 0, "moves": 0, "moved": 0, "updates": 0, "many": 0}

    def init2(self, now, model, releases, request, priority):
        init(self, now, model, releases, request, priority)
        self.ref = ReplayPlan(now, model.allocator, releases, request, priority)
        self.durs = {}

    def add2(self, job, t, size, dur):
        add(self, job, t, size, dur)
        self.ref.add(job, t, size, dur)
        self.durs[job] = (t, size, dur)

    def add_many2(self, reservations):
        add_many(self, reservations)
        for job, t, dur, size in reservations:
            self.ref.add(job, t, size, dur)
            self.durs[job] = (t, size, dur)
        asked["many"] += 1

    def remove2(self, job):
        remove(self, job)
        self.ref.remove(job)

    def kept_is_fresh(self):
        # the kept replay, brought up to date after each change, is the whole plan replayed afresh
        events, states, tokens, fail = self._replay()
        events2, states2, tokens2, fail2 = self._full_replay()
        assert (events, states, fail) == (events2, states2, fail2)
        assert all(tokens[j] == tokens2[j] for j in tokens2)
        assert self._keys == [ev[:4] for ev in events2]

    def feasible2(self):
        got = feasible(self)
        assert got == self.ref.feasible()
        kept_is_fresh(self)
        return got

    def ref_earliest(self, job, size, dur, not_after):
        search = self.ref.earliest_by_full_replay if reference == "full replay" else self.ref.earliest
        return search(job, size, dur, not_after)

    def earliest2(self, job, size, dur, not_after=None):
        got = earliest(self, job, size, dur, not_after)
        assert got == ref_earliest(self, job, size, dur, not_after), (job, size, dur, not_after)
        kept_is_fresh(self)
        asked["earliest"] += 1
        return got

    def moves_earlier2(self, job):
        got = moves_earlier(self, job)
        kept_is_fresh(self)
        t, size, dur = self.durs[job]
        self.ref.remove(job)
        want = ref_earliest(self, job, size, dur, t) < t
        self.ref.add(job, t, size, dur)
        assert got == want, (job, t)
        asked["moves"] += 1
        asked["moved"] += got
        return got

    def update2(self):
        asked["updates"] += 1
        return update(self)

    for name, fn in (("__init__", init2), ("add", add2), ("add_many", add_many2), ("remove", remove2), ("feasible", feasible2), ("earliest", earliest2), ("moves_earlier", moves_earlier2), ("_update", update2)):
        monkeypatch.setattr(StatePlan, name, fn)
    w = read_swf(default_trace_path())
    w = w.take(np.arange(60 if reference == "full replay" else 40))  # 40 jobs ask each case 1,000-1,600 questions
    # sizes scaled to the largest job the machine can ever hold (the uneven blocks' is 15 of their 18 nodes)
    from topoalloc.api import make_allocator

    probe = make_allocator(allocator, machine)
    most = max(k for k in range(1, probe.n_nodes + 1) if probe._fits_empty(Request(k)))
    factor = most / w.max_procs
    topoalloc.simulate(w, machine=machine, allocator=allocator, scheduler="conservative", clean=True, scale_sizes=factor, work_multiple=4.0, engine="python")
    assert asked["earliest"] > 10 and asked["moves"] > 10 and asked["moved"] > 0 and asked["updates"] > 10 and asked["many"] > 10, asked


class _LyingCounter(FlatAllocator):
    """Declares counting (any request of at most free_count processors fits) but refuses jobs of 2."""

    def _allocate(self, request):
        return None if request.size == 2 else super()._allocate(request)


def test_easy_names_a_counting_allocator_that_refuses_what_it_promised():
    """Both backfill cases (ending by the shadow time, or fitting the extra nodes) raise the
    conformance error naming the allocator, the size refused and the free count."""
    import pytest

    from topoalloc.errors import ConformanceError

    for estimates in ([10, 10, 5], [10, 10, 20]):  # job 2 ends by the shadow (10) / after it, inside the extra 4
        alloc = _LyingCounter(FlatTopology(8))
        ctx = SchedulingContext(alloc, estimate=estimates, size=[6, 4, 2], requests=[Request(s, job_id=i) for i, s in enumerate([6, 4, 2])].__getitem__)
        ctx.set_queue([0])
        FCFS().schedule(ctx)
        ctx.set_queue([1, 2])
        ctx.now = 1.0
        with pytest.raises(ConformanceError, match=r"^counting: flat declares counting but refused 2 processors with 2 free$"):
            EASY().schedule(ctx)


def test_conservative_records_a_reservation_when_made_and_when_it_moves_only():
    """Job 0 (6 of 8 processors) is expected to run 10 s but ends at 3: job 1's reservation at 10
    moves to 3, and is recorded again then; job 2 starts at once in the two processors left.  An
    unchanged reservation is not recorded again, on a counting allocator (which skips jobs that
    cannot move earlier) and on one that is not (which asks again and gets the same time)."""
    import topoalloc

    w = workload([0, 1, 2], [3, 5, 1], [6, 4, 2], [10, 5, 20], 8)
    want = [(0, 0.0, 0.0), (1, 1.0, 10.0), (2, 2.0, 2.0), (1, 3.0, 3.0)]
    for machine, allocator in (("flat:8", "flat"), ("flat:8", "flat:probe=replay")):
        r = topoalloc.simulate(w, machine=machine, allocator=allocator, scheduler="conservative", record_reservations=True)
        assert [(x.job, x.made_at, x.time) for x in r.reservations] == want, machine
        assert r.start.tolist() == [0.0, 3.0, 2.0]
        assert r.reservation_changes == len(want)


def test_conservative_overrun_at_the_reservation_instant_moves_it_once():
    """Job 0 (the whole machine) is expected to end at 10 but runs to 20; job 1 is reserved at 10.
    At 10 job 0 overruns: the reservation moves to the next instant and is recorded once; the
    scheduler does not wake at that instant only to move it again by one more ulp (while a job
    overruns, its real end is the event that remakes the plan)."""
    import math

    import topoalloc

    w = workload([0, 1], [20, 5], [8, 8], [10, 5], 8)
    want = [(0, 0.0, 0.0), (1, 1.0, 10.0), (1, 10.0, math.nextafter(10.0, math.inf)), (1, 20.0, 20.0)]
    for allocator in ("flat", "flat:probe=replay"):
        r = topoalloc.simulate(w, machine="flat:8", allocator=allocator, scheduler="conservative", record_reservations=True)
        assert [(x.job, x.made_at, x.time) for x in r.reservations] == want, allocator
        assert r.start.tolist() == [0.0, 20.0]
        assert r.reservation_changes == len(want)


def test_reservation_changes_on_a_hand_checked_log():
    """``early_end.swf`` (8 processors): job 0 takes them all at 0 (reserved at 0, started), job 1 (6 for
    10 s) is reserved at 20 when job 0 is expected to end, job 2 (4 for 10 s) at 30, job 3 (2 for 30 s) at
    20 beside job 1.  Job 0 ends at 5: compression moves job 1 to 5, job 2 to 15 and job 3 to 5.  Four
    reservations made and three moves: 7, on every engine; EASY and FCFS keep no such plan (None, and no
    entry in the summary)."""
    import topoalloc
    from topoalloc.sched import fastpath

    path = "tests/golden/early_end.swf"
    engines = ["python"] + (["compiled"] if fastpath.compiled_available() else [])
    for engine in engines:
        r = topoalloc.simulate(path, scheduler="conservative", engine=engine)
        assert r.start.tolist() == [0.0, 5.0, 15.0, 5.0]
        assert r.reservation_changes == 7 and r.summary()["reservation_changes"] == 7, engine
        for other in ("easy", "fcfs"):
            q = topoalloc.simulate(path, scheduler=other, engine=engine)
            assert q.reservation_changes is None and "reservation_changes" not in q.summary()


@pytest.mark.parametrize(("machine", "allocator"), [("flat:8", "flat"), ("flat:8", "flat:probe=replay"), ("hypercube:3", "buddy"), ("hypercube:3", "free_list"), ("mesh:4x2", "best_fit")])
@pytest.mark.parametrize("sched", ["conservative", "conservative:order=sjf"])
def test_reservation_changes_are_the_reservations_recorded(machine, allocator, sched):
    """On 150 random jobs with early ends and overruns, the count of reservations made or moved is the
    number the plan records, and the same without recording (the compiled kernel, where it runs these)."""
    import topoalloc

    rng = np.random.default_rng(7)
    n = 150
    submit = np.sort(rng.integers(0, 2500, n)).astype(float)
    run = rng.integers(1, 60, n).astype(float)
    requested = np.where(rng.random(n) < 0.15, run // 2 + 1, run * rng.integers(1, 4, n)).astype(float)
    size = (1 << rng.integers(0, 4, n)) if machine.startswith("hypercube") else rng.integers(1, 9, n)
    w = workload(submit.tolist(), run.tolist(), size.tolist(), requested.tolist(), 8)
    recorded = topoalloc.simulate(w, machine=machine, allocator=allocator, scheduler=sched, record_reservations=True)
    plain = topoalloc.simulate(w, machine=machine, allocator=allocator, scheduler=sched)
    assert recorded.reservation_changes == len(recorded.reservations) > n
    assert plain.reservation_changes == recorded.reservation_changes
    assert plain.start.tolist() == recorded.start.tolist()


def test_easy_names_a_head_that_never_fits():
    from topoalloc.errors import SimulationError

    ctx = context([9], [10])
    ctx.set_queue([0])
    with pytest.raises(SimulationError, match=r"^queue head \(job position 0\) cannot fit even after every running job ends$"):
        EASY()._reserve(ctx, 0)


def test_easy_key_index_names_a_job_it_does_not_hold():
    """Removing a job that was never added, or removing one twice, is topoalloc's own bug: named, not a crash elsewhere."""
    from topoalloc.errors import InternalError
    from topoalloc.sched.easy import _KeyIndex

    ctx = context([2, 3], [10, 10])
    index = _KeyIndex(ctx, 2)
    index.add(0)
    with pytest.raises(InternalError, match=r"job position 1 is not in the EASY key index$"):
        index.remove(1)
    index.remove(0)
    with pytest.raises(InternalError, match=r"job position 0 is not in the EASY key index$"):
        index.remove(0)


def test_easy_key_class_grows_by_doubling():
    """A key's estimates array doubles when full: appending n jobs keeps at most about 2n slots."""
    from topoalloc.sched.easy import _KeyClass

    cl = _KeyClass()
    for j in range(1000):
        cl.insert(j, j + 1, float(j))
    assert cl.n == cl.alive_count == 1000
    assert len(cl.est) == 1024
    assert cl.est[:1000].tolist() == [float(j) for j in range(1000)]


def test_easy_key_class_takes_a_job_ranked_before_queued_ones_at_its_place():
    """In a keyed queue order (SJF) a job arriving later can rank before queued jobs: its key's list takes it in
    the middle, after the dead jobs ranked before it, with its estimate beside it; the first live job's index
    moves onto it when it comes first."""
    from topoalloc.sched.easy import _KeyClass

    cl = _KeyClass()
    for job, rank in ((0, 10), (1, 20), (2, 30)):
        cl.insert(job, rank, float(rank))
    cl.alive[0] = False  # job 0 gone: the first live job is at index 1
    cl.est[0] = np.nan
    cl.alive_count -= 1
    cl.lo = 1
    cl.insert(3, 25, 25.0)  # after the first live job: it stays first
    assert (cl.jobs, cl.ranks, cl.lo) == ([0, 1, 3, 2], [10, 20, 25, 30], 1)
    cl.insert(4, 15, 15.0)  # before it: the new job is the first live one
    assert (cl.jobs, cl.ranks, cl.lo) == ([0, 4, 1, 3, 2], [10, 15, 20, 25, 30], 1)
    cl.insert(5, 5, 5.0)  # before even the dead job
    assert (cl.jobs, cl.ranks, cl.lo, cl.n, cl.alive_count) == ([5, 0, 4, 1, 3, 2], [5, 10, 15, 20, 25, 30], 0, 6, 5)
    assert cl.alive == [True, False, True, True, True, True]
    assert np.array_equal(cl.est[:6], [5.0, np.nan, 15.0, 20.0, 25.0, 30.0], equal_nan=True)


def test_easy_key_index_ranks_jobs_by_the_queue_key():
    """With the context's queue key (SJF here) each job's rank is its place among all the jobs by that key, fixed
    before any arrives, and jobs are found again by rank when they leave, in any order."""
    from topoalloc.sched.easy import _KeyIndex

    est = [40.0, 10.0, 30.0, 10.0, 20.0]
    ctx = context([1] * 5, est)
    ctx.queue_key = lambda j: (est[j], j)
    index = _KeyIndex(ctx, 5)
    assert index.rank == [5, 1, 4, 2, 3]
    for j in (0, 2, 4, 1, 3):  # arrival order: later jobs rank first
        index.add(j)
    (cl,) = index.classes  # (flat: one key)
    assert cl.jobs == [1, 3, 4, 2, 0]
    assert index.last_rank == 5
    for j in (4, 1, 0, 3, 2):
        index.remove(j)
    assert not index.live and cl.n == 0


def test_easy_remove_started_names_a_job_the_index_misplaces():
    """With the key index's ranks, a started job is found by bisection; one not where its rank
    puts it is an internal error, named (past the queue's end, or another job there)."""
    from topoalloc.errors import InternalError

    ctx = context([1, 1, 1, 1], [10, 10, 10, 10])
    for rank in ([1, 2, 3, 4], [1, 2, 3, 2]):  # job 3 ranked past the queue / where job 1 is
        ctx.set_queue([0, 1, 2])
        with pytest.raises(InternalError, match=r"^job position 3 is not where the EASY key index ranks it in the queue$"):
            EASY._remove_started(ctx, [3], rank)
        assert ctx.queue == [0, 1, 2]
    EASY._remove_started(ctx, [1], [1, 2, 3, 4])
    assert ctx.queue == [0, 2]


class _Keyless(FlatByReplay):
    """Declares fit keys (so FCFS EASY walks its key index) but gives every request None: no key."""

    def fit_key(self, request):
        return None


def test_easy_keyless_jobs_are_classes_of_their_own():
    """Jobs with no fit key are never grouped: job 2 (5 processors, too wide for the 4 free) does
    not hide job 3 (2 processors, ending by the shadow time), which backfills at once."""
    import topoalloc

    w = workload([0, 0, 0, 0], [100, 10, 10, 10], [6, 8, 5, 2], [100, 10, 10, 10], 10)
    for scheduler in ("easy", "easy:incremental=false"):  # (FCFS: the key index's walk)
        r = topoalloc.simulate(w, machine="flat:10", allocator=_Keyless(FlatTopology(10)), scheduler=scheduler)
        assert r.start.tolist() == [0.0, 100.0, 110.0, 0.0], scheduler


class _KeyedBySize(FlatByReplay):
    """The flat allocator with the general probes, declaring requests of one size interchangeable."""

    def fit_key(self, request):
        return request.size


class _ThreesNeedAnIdleMachine(_KeyedBySize):
    """A request for 3 processors fits only the idle machine (as a shape may not fit a busy one)."""

    def _allocate(self, request):
        return None if request.size == 3 and self.free_count < self.n_nodes else super()._allocate(request)


def test_easy_refusal_of_one_key_ending_by_the_shadow_hides_no_other_key():
    """SJF order remembers refusals per (key, ends by the shadow time): job 2 (3 processors, ending
    by the shadow) is refused, and that must not be taken for a refusal of job 3's key (2
    processors, running past the shadow but inside the 2 extra nodes), which backfills at once."""
    import topoalloc

    w = workload([0, 1, 1, 1], [100, 1, 5, 200], [6, 8, 3, 2], [100, 1, 5, 200], 10)
    r = topoalloc.simulate(w, machine="flat:10", allocator=_ThreesNeedAnIdleMachine(FlatTopology(10)), scheduler="easy:order=sjf")
    assert r.start.tolist() == [0.0, 100.0, 201.0, 1.0]


def test_easy_schedules_negative_submit_times_as_any_other():
    """Logs may start before time 0 (the SWF reader keeps negative submit times, with a warning):
    EASY's first pass is a full pass there too, not one that reuses a reservation it never made."""
    import topoalloc

    w = workload([-10, -5, -5], [20, 1, 3], [8, 4, 1], [20, 1, 3], 8)
    for allocator in ("flat", "flat:probe=replay"):
        r = topoalloc.simulate(w, machine="flat:8", allocator=allocator, scheduler="easy", record_reservations=True)
        assert [(x.job, x.made_at, x.time) for x in r.reservations] == [(1, -5.0, 10.0)], allocator
        assert r.start.tolist() == [-10.0, 10.0, 10.0], allocator


class _ContiguousLine(_KeyedBySize):
    """Processors on a line; a job takes the lowest run of free ones (contiguous first fit), keyed by
    size, with the replay guard declared reusable.  It is: the state is the busy set, so a guard kept
    after admissions answers as a fresh one would, and a refusal depends on the state only.  Whether a
    job delays the head depends on where it lands, which a start elsewhere changes, so a refusal
    can be lifted by a start: the walk's remembered, forgotten and jumped-over refusals all matter."""

    def reservation_guard(self, head, releases):
        return _KeptReplayGuard(self, head, releases)

    def _allocate(self, request):
        s = request.size
        free = ~self._busy
        for i in range(self.n_nodes - s + 1):
            if free[i : i + s].all():
                return np.arange(i, i + s)
        return None


class _KeptReplayGuard(ReplayGuard):
    reusable = True


@pytest.mark.parametrize("n", [6, 10, 16])
def test_easy_keyed_walk_and_kept_guards_on_a_contiguous_line(n):
    """The toy line allocator meets the allocator contract (the conformance checks of its probes
    and a random state machine); then, on 80 bursty workloads, EASY's keyed walk with kept guards
    gives every job the start (and records the reservations) that full passes and replay give."""
    from topoalloc.testing import CHECKS
    from topoalloc.testing.conformance import check_schedules_equal_replay

    def factory():
        return _ContiguousLine(FlatTopology(n))

    for check in ("can_allocate", "max_request_now", "reservation_guard", "fit_keys", "stateful"):
        CHECKS[check](factory)
    check_schedules_equal_replay(factory, seeds=range(1, 81), jobs=60, schedulers=("easy",))
    check_schedules_equal_replay(factory, seeds=range(1, 11), jobs=60, schedulers=("easy:order=sjf",))


def test_reservation_end_is_two_float_steps_past_its_start_at_least():
    """plan._end (the kernel's end_at): t + span where that is two float steps past t or more, as it always
    is below 2**32 s with span >= ZERO_LENGTH; beyond, a zero-length reservation still holds its processors
    past the next instant instead of rounding to an empty window."""
    import math

    from topoalloc.sched.plan import ZERO_LENGTH, _end

    for t in (0.0, 1.0, 86_400.0, 1.7e9, 2.0**32 - 1):
        assert _end(t, ZERO_LENGTH) == t + ZERO_LENGTH
        assert _end(t, 3600.0) == t + 3600.0
    for t in (2.0**32, 2e10, 1e12, 1e15, -2.0**32, -2e10):
        two_steps = math.nextafter(math.nextafter(t, math.inf), math.inf)
        assert t + ZERO_LENGTH <= two_steps and _end(t, ZERO_LENGTH) == two_steps
        assert _end(t, 3600.0) == t + 3600.0
    assert _end(1e9, 1e-9) == math.nextafter(math.nextafter(1e9, math.inf), math.inf)  # a span under ZERO_LENGTH


@pytest.mark.parametrize("machine,allocator", [("flat:16", "flat"), ("hypercube:4", "buddy"), ("hypercube:4", "free_list"), ("mesh:4x4", "best_fit")])
def test_schedules_do_not_depend_on_where_the_clock_starts(machine, allocator):
    """Every time shifted by a constant (integer seconds stay exact to 2**53), the schedule is the same, shifted,
    under EASY and conservative, on the compiled kernel and the general engine.  Zero-length jobs and jobs
    past their estimates are where it broke: from 2**32 s on, t + ZERO_LENGTH rounded to t (a zero-length
    reservation held nothing) and the two engines disagreed."""
    import topoalloc

    rng = np.random.default_rng(7)
    n = 150
    submit = np.sort(rng.integers(0, 1200, n)).astype(float)
    run = rng.integers(0, 50, n).astype(float)
    run[rng.random(n) < 0.3] = 0
    requested = np.where(rng.random(n) < 0.3, 0, run + rng.integers(-5, 20, n)).clip(0).astype(float)
    size = rng.integers(1, 9, n)
    kw = {"round_pow2": True} if machine.startswith("hypercube") else {}
    for scheduler in ("easy", "conservative"):
        ref = None
        for base in (0.0, 1.7e9, 2e10, 1e12, -2e10):
            w = workload((base + submit).tolist(), run.tolist(), size.tolist(), requested.tolist(), 16)
            for engine in ("compiled", "python"):
                r = topoalloc.simulate(w, machine=machine, allocator=allocator, scheduler=scheduler, engine=engine, locality=False, **kw)
                got = (r.start - base).tolist()
                if ref is None:
                    ref = got
                assert got == ref, (scheduler, base, engine, sum(a != b for a, b in zip(got, ref)))


@pytest.mark.parametrize("machine,allocator", [("flat:4", "flat"), ("hypercube:2", "buddy"), ("hypercube:2", "free_list")])
@pytest.mark.parametrize("base,estimate", [(1e9, 1e-7), (5e9, 1e-6), (1e12, 1e-4), (1e3, 1e-9)])
def test_a_job_whose_estimate_rounds_away_frees_its_processors_at_its_expected_end(machine, allocator, base, estimate):
    """A started job is expected to end at start + estimate; its reservation held it to _end(start, estimate), two
    float steps on when the estimate is under that.  The kernel keeps its profile from pass to pass and must give
    the difference back (and count it as growth) as it does for a zero-length job; the general engine rebuilds its
    plan.  Both start the next machine-wide job at the first job's expected end."""
    import topoalloc

    w = workload([base, base, base + 1], [estimate, 10.0, 5.0], [4, 4, 2], [estimate, 10.0, 5.0], 4)
    starts = {}
    for engine in ("compiled", "python"):
        r = topoalloc.simulate(w, machine=machine, allocator=allocator, scheduler="conservative", engine=engine, locality=False)
        starts[engine] = r.start.tolist()
    assert starts["compiled"] == starts["python"]
    assert starts["python"][1] == base + estimate > base


def test_easy_remakes_the_guard_where_fit_is_not_monotone():
    """Frame Sliding's fit is not monotone in free cells (its lattice moves with the lowest free cell): a job
    EASY admits can let the head fit earlier, so a kept guard would judge by a stale shadow time.  Its guard
    is not reusable; this workload (found by the conformance check on more seeds) starts jobs differently
    when it is, against replay probes."""
    from topoalloc.api import make_allocator
    from topoalloc.testing.conformance import check_schedules_equal_replay
    from topoalloc.topology import parse_machine

    check_schedules_equal_replay(lambda: make_allocator("frame_sliding", parse_machine("mesh:4x4")), seeds=(67,), jobs=60, schedulers=("easy",))


def test_placement_memo_outlives_a_plan_is_bounded_and_shared_by_copies(monkeypatch):
    """An allocator keeps one memo of placements for all its plans; past its bound it starts again, empty; a deep
    copy (the reference replays') shares it, as it shares the other memos of pure functions."""
    import copy

    from topoalloc.api import make_allocator
    from topoalloc.sched import plan as P

    a = make_allocator("block", "slurm-block:" + str(Path(__file__).resolve().parents[1] / "topoalloc" / "data" / "topology-block-uneven.conf"))
    first = a.future_plan(0.0, [], lambda j: Request(1), lambda j: j)
    memo = first._memo
    first.add(0, 0.0, 4, 10.0)
    assert first.feasible() and len(memo) == 1  # the reservation's placement, remembered
    assert a.future_plan(5.0, [], lambda j: Request(1), lambda j: j)._memo is memo
    assert copy.deepcopy(a)._placement_memo is memo
    memo.update({(i, 0): None for i in range(1500)})  # over 1,024 entries, within the bound at this state size
    assert P.placement_memo(a, 64) is memo
    monkeypatch.setattr(P, "PLACEMENT_MEMO_BYTES", 2 * 64 * 1200)
    fresh = P.placement_memo(a, 64)
    assert fresh is not memo and not fresh and a.future_plan(0.0, [], lambda j: Request(1), lambda j: j)._memo is fresh


@needs_cplan
@pytest.mark.parametrize(
    ("machine", "allocator", "jobs", "kind"),
    [
        ("mesh:4x8", "mesh_first_fit", 40, 1),  # free bit sets: a release is int.__or__
        ("mesh:64x64", "buddy_2d", 60, 1),  # 4,096 bits: the compiled plan keeps the states' hashes (check_hashes)
        ("torus:4x4x2", "nep", 40, 3),  # partition forests: the model's memo of releases, then its function
        ("hypercube:5", "afl", 60, 3),  # the lists' states, numbered: the same
        ("slurm-block:" + str(Path(__file__).resolve().parents[1] / "topoalloc" / "data" / "topology-block-uneven.conf"), "block", 400, 2),  # packed counts: int.__add__
    ],
    ids=lambda v: v.rsplit("/", 1)[-1] if isinstance(v, str) else str(v),
)
def test_compiled_search_answers_as_the_python_search(monkeypatch, machine, allocator, jobs, kind):
    """Every search for a start of a conservative run on the bundled trace's first jobs, asked of the compiled
    search and of the Python one (the reference) with the same arguments: the same answer, for the four kinds of
    release, for jobs in the plan (moves) and not (new reservations); and every replay of the plan (whole, or
    brought up to date), the same states, tokens and answer."""
    import numpy as np

    import topoalloc
    from topoalloc.api import make_allocator
    from topoalloc.sched import plan
    from topoalloc.workload import read_swf
    from topoalloc.workload.swf import default_trace_path

    compiled, compiled_replay, compiled_hashes = plan._cplan.first, plan._cplan.replay, plan._cplan.check_hashes
    compiled_hashes(clear=True)
    asked: dict[tuple, int] = {}
    replays: dict[int, int] = {}

    class Both:
        moves_earlier = staticmethod(plan._cplan.moves_earlier)  # (compared on its own below)

        @staticmethod
        def first(*args):
            want = plan._first_loop(*args)
            got = compiled(*args)
            assert got == want, args[5:9] + args[19:]
            key = (args[17], args[22] >= 0, got is not None and got != args[2])
            asked[key] = asked.get(key, 0) + 1
            return got

        @staticmethod
        def replay(events, states, bits, new_bits, new_states, *rest):
            bits2, states2 = dict(new_bits), list(new_states)  # (the replay fills these in)
            want = plan._replay_from(events, states, bits, bits2, states2, *rest)
            got = compiled_replay(events, states, bits, new_bits, new_states, *rest)
            assert (got, new_states, new_bits) == (want, states2, bits2)
            replays[got[0]] = replays.get(got[0], 0) + 1
            return got

    monkeypatch.setattr(plan, "_cplan", Both)
    w = read_swf(default_trace_path()).take(np.arange(jobs))
    probe = make_allocator(allocator, machine)
    most = max(k for k in range(1, probe.n_nodes + 1) if probe._fits_empty(Request(k)))
    topoalloc.simulate(w, machine=machine, allocator=allocator, scheduler="conservative", clean=True, scale_sizes=most / w.max_procs, work_multiple=4.0, engine="python")
    assert {k[0] for k in asked} == {kind}, asked
    assert replays.get(0) and replays.get(1), replays  # updates that met the old replay, and whole replays
    kept, wrong = compiled_hashes(clear=True)
    assert wrong == 0 and (kept > 0) == (probe.n_nodes >= 1024), (kept, wrong)
    # moves found (a start before the reservation) and not (its own time given back); new reservations placed
    assert {(own, found) for _, own, found in asked} >= {(True, True), (True, False), (False, True)}, asked


def _search_args(**change):
    """The arguments of a search for job 7 (1 cell for 1 s) on a plan of 4 cells with one reservation, job 5's at 0.5
    (frame "f", token 2, which the place below gives it once job 7 holds bit 1)."""
    import math

    args = {"times": [0.0, 0.5, 1.0], "c": 0, "not_after": None, "counts_times": [0.0, 0.5], "counts_free": [4, 3], "size": 1,
            "span": 1.0, "t0": math.inf, "end0": math.inf, "keys": [(0.5, 1, 0, 5)], "events": [(0.5, 1, 0, 5, None)],
            "states": [0b1111, 0b1110], "bits": {5: 1}, "memo": {}, "frames": {5: "f", 7: "f"}, "frame": "f",
            "rel": int.__or__, "rel_kind": 1, "place": lambda s, j: (s & -s, s & (s - 1)), "fail": 1, "prio": 1, "job": 7,
            "own": -1, "old_end": -1}
    args.update(change)
    return tuple(args.values())


@needs_cplan
def test_compiled_search_refuses_malformed_input_with_an_error():
    """The compiled search answers well-formed questions as the Python one, and raises (never crashes) on an event
    that is not a 5-tuple, a key that is not a 4-tuple, keys and events of different lengths, a reservation with no
    kept token, or a placement that is not (token, state) or None."""
    from topoalloc.sched import plan

    first = plan._cplan.first
    for change in ({}, {"counts_free": [0, 3]}, {"counts_free": [0, 0]}, {"place": lambda s, j: None}, {"not_after": 0.5, "times": [0.0, 0.5]}):
        assert first(*_search_args(**change)) == plan._first_loop(*_search_args(**change)), change
    assert first(*_search_args()) == 0.0 and first(*_search_args(counts_free=[0, 3])) == 0.5
    assert first(*_search_args(counts_free=[0, 0])) is None
    # a token given back by the model's function (kind 0), or by its memo of releases first (kind 3: (memo, function)):
    # job 7, for 0.25 s from 0, is given back before job 5's turn
    calls = []

    def give_back(state, token):
        calls.append((state, token))
        return state | token

    for rel, kind in ((give_back, 0), (({}, give_back), 3), (({(0b1110, 0b0001): 0b1111}, give_back), 3)):
        calls.clear()
        assert first(*_search_args(rel=rel, rel_kind=kind, span=0.25)) == 0.0
        compiled_calls = list(calls)
        calls.clear()
        assert plan._first_loop(*_search_args(rel=rel, rel_kind=kind, span=0.25)) == 0.0
        # the compiled search asks the function only where the memo has no answer; the Python one always asks it
        assert len(compiled_calls) == (0 if kind == 3 and rel[0] else 1) and len(calls) == 1, (kind, compiled_calls, calls)
    with pytest.raises(TypeError, match="pair"):
        first(*_search_args(rel=give_back, rel_kind=3))
    with pytest.raises(ValueError, match="rel_kind 7"):
        first(*_search_args(rel_kind=7))
    with pytest.raises(TypeError, match="5-tuple"):
        first(*_search_args(events=[(0.5, 1, 0, 5)]))
    with pytest.raises(TypeError, match="4-tuple"):
        first(*_search_args(keys=[(0.5, 1)]))
    with pytest.raises(ValueError, match="differ in length"):
        first(*_search_args(keys=[]))
    with pytest.raises(KeyError):
        first(*_search_args(keys=[(0.5, 0, -1, 5)], events=[(0.5, 0, -1, 5, None)], bits={}))
    with pytest.raises(TypeError, match="placement"):
        first(*_search_args(place=lambda s, j: "bad"))
    # the replay: (how, k) as the Python one, and errors, never a crash
    replay = plan._cplan.replay

    def replay_args(events, bits=None, place=lambda s, j: (s & -s, s & (s - 1))):
        return (events, [], {}, {} if bits is None else bits, [0b1111], {}, {5: "f"}, int.__or__, 1, place, 0b1111, 0, 99, 0, 99)

    two = [(0.5, 1, 0, 5, None), (1.5, 0, -1, 5, None)]
    assert replay(*replay_args(two)) == plan._replay_from(*replay_args(two)) == (1, 2)
    full = replay_args([(0.5, 1, 0, 5, None)], place=lambda s, j: None)
    assert replay(*full) == plan._replay_from(*full) == (2, 0)
    with pytest.raises(TypeError, match="5-tuple"):
        replay(*replay_args([(0.5, 1, 0, 5)]))
    with pytest.raises(KeyError):
        replay(*replay_args([(1.5, 0, -1, 5, None)]))
    with pytest.raises(TypeError, match="placement"):
        replay(*replay_args(two, place=lambda s, j: "bad"))


def test_state_plan_add_many_makes_the_plan_add_makes():
    """Reservations added at once (a pass remaking its plan) give the plan adding them one by one gives: the same
    counts (breakpoints and free cells), candidate times, reservations and replay; on a plan with reservations
    already, or one at a time before now, add_many adds one by one."""
    import random

    from topoalloc.api import make_allocator
    from topoalloc.sched.base import SortedCounts

    a = make_allocator("mesh_first_fit", "mesh:4x8")
    held = [a.allocate(Request(s, job_id=i)) for i, s in enumerate((4, 6))]
    rng = random.Random(5)
    for _ in range(40):
        res = [(j, float(rng.choice((0, 2, 3, 5, 5, 8))), float(rng.choice((0, 1, 2, 4))), rng.randint(1, 8)) for j in range(rng.randint(1, 9))]

        now = 1.0 if rng.random() < 0.5 else 0.0

        def plan():
            return a.future_plan(now, [(3.0, held[0]), (6.0, held[1])], lambda j: Request(res[j][3]), lambda j: j)

        one, many = plan(), plan()
        first = rng.random() < 0.3  # one reservation there already: add_many adds the rest one by one
        for job, t, dur, size in res:
            one.add(job, t, size, dur)
        if first:
            many.add(res[0][0], res[0][1], res[0][3], res[0][2])
        many.add_many(res[1:] if first else res)  # (some before now when now is 1: added one by one)
        assert (many.counts.times, many.counts.free, many.counts._res) == (one.counts.times, one.counts.free, one.counts._res)
        assert (many._every_time.values, many._every_time._count, many._res) == (one._every_time.values, one._every_time._count, one._res)
        assert many._full_replay()[1:] == one._full_replay()[1:] and many.feasible() == one.feasible()
    s = SortedCounts()
    s.add_all([3, 1, 3])
    s.add(2)
    s.add_all([])
    assert s.values == [1, 2, 3] and s._count == {1: 1, 2: 1, 3: 2}


@needs_cplan
def test_compiled_moves_earlier_answers_as_the_counting_profile(monkeypatch):
    """CountingProfile.moves_earlier's scan in C gives the Python scan's answer (the reference) for every job of
    random profiles: reservations at and between breakpoints, zero-length ones, a job's own window counted free."""
    import random

    from topoalloc.sched import plan
    from topoalloc.sched.plan import CountingProfile

    rng = random.Random(11)
    answers = {True: 0, False: 0}
    for _ in range(300):
        res = [(j, float(rng.choice((0, 1, 2, 2.5, 4, 7))), float(rng.choice((0, 0.5, 1, 3, 6))), rng.randint(1, 6)) for j in range(rng.randint(1, 8))]
        p = CountingProfile(0.0, rng.randint(0, 8), [(float(rng.choice((1, 3, 5))), rng.randint(1, 4)) for _ in range(rng.randint(0, 3))], res)
        for job, *_ in res:
            monkeypatch.setattr(plan, "USE_COMPILED", False)
            want = p.moves_earlier(job)
            monkeypatch.setattr(plan, "USE_COMPILED", True)
            assert p.moves_earlier(job) == want, (res, job)
            answers[want] += 1
    assert min(answers.values()) > 50, answers


@needs_cplan
@pytest.mark.parametrize(("shift", "short"), [(2.0**33, 1e-6), (2.0**52, 1.0)])
def test_compiled_search_far_from_time_zero(monkeypatch, shift, short):
    """Times past 2**32 s, where a window shorter than two float steps ends two steps on (``_end``; ``end_of`` in C):
    every third job asks ``short`` seconds, under two steps at ``shift`` (a step is about 2e-6 s at 2**33 s and a
    second at 2**52 s).  The compiled search and replay give the Python ones' schedule, job for job."""
    import numpy as np

    import topoalloc
    from topoalloc.sched import plan
    from topoalloc.workload import read_swf
    from topoalloc.workload.swf import default_trace_path

    base = read_swf(default_trace_path()).take(np.arange(120))
    asked = np.where(np.arange(len(base)) % 3 == 0, short, base.requested_time)
    w = base.replace(submit=base.submit + shift, requested_time=asked)
    got = []
    for compiled in (True, False):
        monkeypatch.setattr(plan, "USE_COMPILED", compiled)
        r = topoalloc.simulate(w, machine="mesh:16x16", allocator="buddy_2d", scheduler="conservative", clean=True, scale_sizes=2.0, engine="python")
        got.append((r.to_csv(), r.reservation_changes))
    assert got[0] == got[1] and got[0][1] > 100


@needs_cplan
@pytest.mark.parametrize(
    ("machine", "allocator", "scale"),
    [("mesh:48x48", "mesh_first_fit", 18.0), ("mesh:48x48", "anca_ff", 18.0), ("mesh:64x64", "buddy_2d", 32.0), ("hypercube:11", "buddy", 16.0), ("hypercube:11", "gray_code", 16.0)],
)
def test_compiled_plan_keeps_pythons_hashes_of_large_states(monkeypatch, machine, allocator, scale):
    """On machines of 1,024 nodes and more the compiled plan keeps the hashes of its states and tokens by object, and
    derives a placement's and a release's from the state's and the token's (an int's hash is its value modulo a
    Mersenne prime, and a placement takes bits a release gives back): every hash it keeps after a conservative run is
    Python's own hash of its object, it kept some, and the run's schedule is the Python search's, job for job."""
    import numpy as np

    import topoalloc
    from topoalloc.sched import plan
    from topoalloc.workload import read_swf
    from topoalloc.workload.swf import default_trace_path

    assert plan._cplan.KNOWN_HASHES == 1  # (CPython's tuple hash, checked when the extension is imported)
    plan._cplan.check_hashes(clear=True)
    w = read_swf(default_trace_path()).take(np.arange(300))
    got = []
    for compiled in (True, False):
        monkeypatch.setattr(plan, "USE_COMPILED", compiled)
        r = topoalloc.simulate(w, machine=machine, allocator=allocator, scheduler="conservative", clean=True, scale_sizes=scale, work_multiple=4.0, engine="python")
        got.append((r.to_csv(), r.reservation_changes))
        if compiled:
            kept, wrong = plan._cplan.check_hashes(clear=True)
            assert kept > 100 and wrong == 0, (kept, wrong)
    assert got[0] == got[1] and got[0][1] > 250


@needs_cplan
def test_compiled_search_edge_cases_and_bad_times():
    """No candidate (not_after before now) answers None in both searches, never reads past the list; the candidate
    returned is the list's own object, as in Python; a time that is not a number raises a TypeError naming it."""
    from topoalloc.sched import plan

    first = plan._cplan.first
    none = _search_args(times=[], not_after=-1.0)
    assert first(*none) is None and plan._first_loop(*none) is None
    ints = _search_args(times=[0, 1])
    assert first(*ints) == plan._first_loop(*ints) == 0 and type(first(*ints)) is type(plan._first_loop(*ints)) is int
    with pytest.raises(TypeError, match="'x', not a number"):
        first(*_search_args(counts_times=[0.0, "x"]))
    with pytest.raises(TypeError, match="not a number"):
        plan._cplan.moves_earlier([0.0, "x", 9.0], [1, 1, 1], 5.0, 6.0, 1, 1.0)
    assert plan._cplan.moves_earlier([0.0, 2.0, 9.0], [1, 0, 1], 5.0, 6.0, 1, 1.0) is True


def test_state_plan_update_that_raises_leaves_a_plan_replayed_afresh(monkeypatch):
    """A model's placement that raises while the kept replay is brought up to date (whose lists change in place)
    leaves no half-changed replay: the next question replays the plan afresh and answers as a fresh plan."""
    from topoalloc.api import make_allocator
    from topoalloc.sched import plan

    for compiled in (True, False):
        monkeypatch.setattr(plan, "USE_COMPILED", compiled)
        a = make_allocator("mesh_first_fit", "mesh:4x8")
        sizes = {0: 2, 1: 3, 2: 5}
        p = a.future_plan(0.0, [], lambda j: Request(sizes[j]), lambda j: j)
        p.add(0, 0.0, 2, 5.0)
        assert p.feasible()
        p.add(1, 1.0, 3, 5.0)
        real = p._place

        def broken(state, job):
            raise RuntimeError("placement failed")

        monkeypatch.setattr(p, "_place", broken)
        with pytest.raises(RuntimeError, match="placement failed"):
            p.feasible()
        monkeypatch.setattr(p, "_place", real)
        p.add(2, 2.0, 5, 1.0)
        events, states, tokens, fail = p._replay()
        events2, states2, tokens2, fail2 = p._full_replay()
        assert (events, states, fail, tokens) == (events2, states2, fail2, tokens2) and len(events) == 6
        assert p._keys == [ev[:4] for ev in events2] and p.feasible()


def test_general_engine_spaces_the_garbage_collector_and_puts_it_back(monkeypatch):
    """While a simulation runs on the general engine the collector's thresholds are at least GC_THRESHOLDS; they are
    the caller's again afterwards, after nested and concurrent runs, and after a run that raised."""
    import gc
    import threading

    import topoalloc
    from topoalloc.sched import simulation as S
    from topoalloc.workload import read_swf
    from topoalloc.workload.swf import default_trace_path

    before = gc.get_threshold()
    raised = tuple(max(a, b) for a, b in zip(before, S.GC_THRESHOLDS))
    assert raised != before  # (the test's own premise: CPython's defaults are lower)
    seen = []
    orig = S.Simulation._run_general

    def spy(self):
        seen.append(gc.get_threshold())
        return orig(self)

    monkeypatch.setattr(S.Simulation, "_run_general", spy)
    w = read_swf(default_trace_path()).take(np.arange(30))
    a = topoalloc.simulate(w, scheduler="conservative", engine="python")
    assert seen == [raised] and gc.get_threshold() == before
    b = topoalloc.simulate(w, scheduler="conservative")  # the compiled kernel: the collector is left alone
    assert len(seen) == 1 and np.array_equal(a.start, b.start)
    with S.spaced_collections():
        with S.spaced_collections():
            assert gc.get_threshold() == raised
        assert gc.get_threshold() == raised
    assert gc.get_threshold() == before
    with pytest.raises(RuntimeError), S.spaced_collections():
        raise RuntimeError("a run that failed")
    assert gc.get_threshold() == before
    # two threads, the first leaving while the second is still inside: the thresholds stay raised until the last leaves
    inside, leave = threading.Event(), threading.Event()

    def second():
        with S.spaced_collections():
            inside.set()
            leave.wait(10)

    with S.spaced_collections():
        t = threading.Thread(target=second)
        t.start()
        inside.wait(10)
    assert gc.get_threshold() == raised
    leave.set()
    t.join(10)
    assert gc.get_threshold() == before
