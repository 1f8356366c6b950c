"""Schedulers as policies with no clock: decisions on a hand-made context."""

from __future__ import annotations

from topoalloc.alloc import FlatAllocator, Request
from topoalloc.sched import EASY, FCFS, Conservative, SchedulingContext
from topoalloc.topology import FlatTopology


def context(sizes, estimates, n=8):
    alloc = FlatAllocator(FlatTopology(n))
    reqs = [Request(s, job_id=i) for i, s in enumerate(sizes)]
    return SchedulingContext(alloc, estimate=estimates, size=sizes, requests=reqs.__getitem__, record_reservations=True)


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


import pytest  # noqa: E402


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
    w = read_swf(default_trace_path())
    w = w.take(np.arange(30))
    factor = parse_machine(machine).n_nodes / w.max_procs
    topoalloc.simulate(w, machine=machine, allocator=allocator, scheduler="conservative", clean=True, scale_sizes=factor, work_multiple=4.0, engine="python")
    assert len(calls) > 10 and any(calls)  # reservations in the future were made and compared


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
    from topoalloc.workload import Workload

    w = Workload(job_id=[1, 2, 3], submit=[0, 1, 2], run=[3, 5, 1], size=[6, 4, 2], requested_time=[10, 5, 20], header={"MaxProcs": "8"}, source="<test>")
    want = [(0, 0.0, 0.0), (1, 1.0, 10.0), (2, 2.0, 2.0), (1, 3.0, 3.0)]
    for machine, allocator in (("flat:8", "flat"), ("flat:8", "flat:probe=replay")):
        r = topoalloc.simulate(w, machine=machine, allocator=allocator, scheduler="conservative", record_reservations=True)
        assert [(x.job, x.made_at, x.time) for x in r.reservations] == want, machine
        assert r.start.tolist() == [0.0, 3.0, 2.0]
