"""Conservative backfilling: every queued job holds a reservation.

Mu'alem & Feitelson, IEEE TPDS 12(6), 2001.  Each queued job, in queue
order, is given the earliest start at which it fits for its whole estimated
run, given the running jobs and every other reservation.  At every
scheduling point the reservations are compressed: each job in queue order
gives up its reservation and takes the earliest feasible one with all the
others in place — never later than before, so no reservation is ever
delayed (while jobs end no later than their estimates).  Jobs whose
reservation is now start now.

If a job has run past its estimate, the existing reservations may no longer
fit; they are then all remade from scratch in queue order (the only case in
which a reservation can move later).
"""

from __future__ import annotations

from ..registry import SCHEDULERS
from .base import Scheduler, SchedulingContext
from .plan import CountingProfile, ReplayPlan, StatePlan

__all__ = ["Conservative"]


class Conservative(Scheduler):
    """Conservative backfilling (order = fcfs|sjf|lpt|cplant; the order reservations are made and compressed in).

    Notes
    -----
    For counting allocators the plan is a free-processor profile built in
    one sweep from the running jobs' expected ends and the reservations, and
    compression first asks whether a job can start before its reservation
    at all, counting its own processors free (the scan the search would
    make): most cannot, and keep their reservation without the plan being
    touched (the general step — remove, search, put back — gives the same).
    Other allocators answer by replay on snapshots (:class:`ReplayPlan`), or
    with a plan of their own that gives the same answers
    (:meth:`~topoalloc.alloc.base.Allocator.future_plan`; the 2-D submesh
    searches and the 2-D Buddy replay on free bit sets, EP and NEP on immutable
    forests, the slice allocators on free units, the hypercube's buddy and
    Gray code on free positions: :class:`~.plan.StatePlan`,
    which also asks ``moves_earlier`` with the job's reservation in place).
    ``reservation_changes`` counts the reservations made or moved over a run.
    """

    name = "conservative"

    def __init__(self, order: str = "fcfs"):
        super().__init__(order)
        self.reset()

    def reset(self) -> None:
        self._res: dict[int, float] = {}
        self.reservation_changes = 0

    def _plan(self, ctx: SchedulingContext, reservations: list[tuple[int, float, float, int]] | None = None) -> "CountingProfile | ReplayPlan | StatePlan":
        if ctx.allocator.counting:
            releases = [(ctx.expected_end(e), e.allocation.size) for e in ctx.running]
            return CountingProfile(ctx.now, ctx.allocator.free_count, releases, reservations)
        rank = {j: i for i, j in enumerate(ctx.queue)}
        plan = ctx.allocator.future_plan(ctx.now, [(ctx.expected_end(e), e.allocation) for e in ctx.running], ctx.request, rank.__getitem__)
        if reservations and hasattr(plan, "add_many"):  # (a plan that adds them at once, as one by one)
            plan.add_many(reservations)
        else:
            for job, t, dur, size in reservations or ():
                plan.add(job, t, size, dur)
        return plan

    def schedule(self, ctx: SchedulingContext) -> None:
        q = ctx.queue
        if not q:
            return
        res = self._res
        est = ctx.estimate
        request = ctx.request
        now = ctx.now
        # a reservation whose time passed without a start: a job overran its estimate
        stale = any(res[j] < now for j in q if j in res)
        plan = None
        if not stale:
            plan = self._plan(ctx, [(j, res[j], est[j], request(j).size) for j in q if j in res])
            if not plan.feasible():
                plan = None
        if plan is None:
            plan = self._plan(ctx)  # remake every reservation from scratch, in queue order
            res.clear()
        in_place = hasattr(plan, "moves_earlier")  # a plan that answers it with the job's reservation in place
        changes = 0
        for j in q:
            size = request(j).size
            old = res.get(j)
            if old is not None:
                if in_place and not plan.moves_earlier(j):  # type: ignore[union-attr]
                    continue  # it cannot start before its reservation: it keeps it
                plan.remove(j)
            t = plan.earliest(j, size, est[j], not_after=old)
            plan.add(j, t, size, est[j])
            res[j] = t
            if old is None or t != old:
                changes += 1
                ctx.record(j, t)
        self.reservation_changes = (self.reservation_changes or 0) + changes
        started = []
        for j in q:
            if res[j] <= now:
                if ctx.try_start(j):
                    started.append(j)
                else:  # only for allocators that are not monotone in free space
                    del res[j]
        if started:
            gone = set(started)
            for j in started:
                del res[j]
            q[:] = [j for j in q if j not in gone]
        overrunning = bool(ctx.running) and ctx.running[0].expected_end <= now
        future = [res[j] for j in q if j in res and res[j] > now]
        if future and not overrunning:
            # Without overruns every reservation falls on a job's end or is moved earlier, so this
            # is a safety net.  While a job overruns, its real end is the event that remakes the
            # plan; waking at the guessed "next instant" would only step time by one ulp.
            ctx.wake_at(min(future))


@SCHEDULERS.register("conservative")
def _make_conservative(order: str = "fcfs") -> Conservative:
    """Conservative backfilling: every queued job keeps a reservation."""
    return Conservative(order=order)
