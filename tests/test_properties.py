"""Properties of every scheduler over random workloads (Hypothesis)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import topoalloc
from topoalloc.testing import check_schedule, workloads

N = 16


def run(w, sched, **kw):
    return topoalloc.simulate(w, machine=f"flat:{N}", scheduler=sched, record_reservations=True, record_allocations=True, **kw)


@settings(max_examples=300)
@given(w=workloads(machine_nodes=N, overrun=True), sched=st.sampled_from(["fcfs", "easy", "conservative", "easy:order=sjf", "fcfs:order=lpt", "conservative:order=sjf"]))
def test_schedule_is_valid(w, sched):
    """No job starts before submit, capacity is never exceeded, every job finishes, nodes never shared."""
    check_schedule(run(w, sched))


@settings(max_examples=300)
@given(w=workloads(machine_nodes=N, overrun=True))
def test_fcfs_starts_in_submit_order(w):
    r = run(w, "fcfs")
    assert (np.diff(r.start) >= 0).all()  # the workload is sorted by submit (ties in trace order)


@settings(max_examples=300)
@given(w=workloads(machine_nodes=N))
def test_easy_never_starts_head_after_its_reservation(w):
    """With run <= requested, the head starts no later than any reservation made for it."""
    r = run(w, "easy")
    for rec in r.reservations:
        assert r.start[rec.job] <= rec.time, f"job {rec.job} reserved for {rec.time} at {rec.made_at}, started {r.start[rec.job]}"


@settings(max_examples=300)
@given(w=workloads(machine_nodes=N), order=st.sampled_from(["fcfs", "sjf", "lpt"]))
def test_conservative_never_delays_a_reservation(w, order):
    """Every reservation is kept or improved: successive reservations of a job never move later,
    and the job starts no later than each of them."""
    r = run(w, f"conservative:order={order}")
    last: dict[int, float] = {}
    for rec in r.reservations:
        if rec.job in last:
            assert rec.time <= last[rec.job], f"job {rec.job} reservation moved from {last[rec.job]} to {rec.time}"
        last[rec.job] = rec.time
        assert r.start[rec.job] <= rec.time


@settings(max_examples=300)
@given(w=workloads(machine_nodes=N, overrun=True), sched=st.sampled_from(["easy", "conservative", "fcfs"]))
def test_counting_equals_replay(w, sched):
    """The flat machine's arithmetic fast paths equal the general replay on snapshots."""
    a = run(w, sched)
    b = run(w, sched, allocator="flat:probe=replay")
    assert np.array_equal(a.start, b.start)


@settings(max_examples=300)
@given(w=workloads(machine_nodes=N, overrun=True), order=st.sampled_from(["fcfs", "sjf"]))
def test_incremental_easy_equals_full_passes(w, order):
    """The incremental passes are a speed option only: the same starts, and the same reservations
    recorded (a pass that keeps the last reservation records it again, as a full pass would)."""
    a = run(w, f"easy:order={order}")
    b = run(w, f"easy:order={order},incremental=false")
    assert np.array_equal(a.start, b.start)
    assert a.reservations == b.reservations


@settings(max_examples=100)
@given(w=workloads(machine_nodes=N, overrun=True))
def test_backfilling_never_worse_than_nothing_for_the_head(w):
    """EASY starts the first job no later than FCFS does (the head is strictly first)."""
    a = run(w, "fcfs")
    b = run(w, "easy")
    assert b.start[0] <= a.start[0]


@settings(max_examples=50)
@given(w=workloads(machine_nodes=N, overrun=True), sched=st.sampled_from(["fcfs", "easy", "conservative"]))
def test_deterministic(w, sched):
    a = run(w, sched)
    b = run(w, sched)
    assert a.to_csv() == b.to_csv()


def _rows(rows):
    from topoalloc.workload import Workload

    return Workload(
        job_id=np.arange(1, len(rows) + 1),
        submit=[r[0] for r in rows],
        run=[r[1] for r in rows],
        size=[r[2] for r in rows],
        requested_time=[r[3] for r in rows],
    )


def test_conservative_overrun_regressions():
    """Found by Hypothesis: a reservation left in the past by an overrunning job must be remade
    (not kept), and a reservation that no job end reaches must still start (wake-up)."""
    w = _rows([(0, 3, 4, 1), (0, 0, 13, 1), (2, 0, 4, 1)])
    for alloc in ("flat", "flat:probe=replay"):
        r = topoalloc.simulate(w, machine="flat:16", scheduler="conservative", allocator=alloc)
        assert r.start.tolist() == [0.0, 3.0, 3.0]
    w = _rows([(0, 8, 12, 1), (0, 48, 5, 1), (0, 0, 12, 5), (50, 0, 5, 1)])
    for alloc in ("flat", "flat:probe=replay"):
        r = topoalloc.simulate(w, machine="flat:16", scheduler="conservative", allocator=alloc)
        check_schedule(r)
        assert r.start.tolist() == [0.0, 8.0, 56.0, 56.0]


def test_zero_length_jobs_share_an_instant():
    """Found by Hypothesis: a zero-length job frees its node within the instant it starts."""
    w = _rows([(0, 0, 1, 1)] * 6 + [(0, 1, 10, 3), (0, 0, 1, 1)])
    r = topoalloc.simulate(w, machine="flat:16", scheduler="easy:order=sjf", record_allocations=True)
    check_schedule(r)
    assert r.start.tolist() == [0.0] * 8
