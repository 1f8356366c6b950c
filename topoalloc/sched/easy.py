"""EASY (aggressive) backfilling.

Lifka, "The ANL/IBM SP scheduling system", JSSPP 1995; Mu'alem & Feitelson,
IEEE TPDS 12(6), 2001.  The queue head is strictly first: heads start while
they fit.  A head that does not fit gets a reservation at its earliest
possible start (the *shadow time*), found by asking the allocator whether it
would fit once running jobs end, in order of expected end.  A later job may
start now only if that does not delay the reservation: it ends (by its
estimate) no later than the shadow time, or the allocator confirms the head
still fits at the shadow time with the job in place (on the flat machine:
the job fits in the "extra" nodes).

Conventions (pinned by the golden traces in ``tests/golden``):

* every running job expected to end at the shadow time counts as ended then;
* a job running past its estimate is expected to end at the next instant;
* ``now + estimate == shadow`` counts as ending by the shadow.
"""

from __future__ import annotations

from ..alloc.base import ReservationGuard
from ..errors import SimulationError
from ..registry import SCHEDULERS
from .base import Scheduler, SchedulingContext

__all__ = ["EASY"]


class EASY(Scheduler):
    """EASY backfilling.

    Parameters
    ----------
    order : {"fcfs", "sjf", "lpt"}
        Queue order; the head is the first job in it.
    incremental : bool
        When only arrivals happened since the last pass (no job ended), the
        head's reservation is unchanged and only the new jobs can backfill, so
        only they are examined.  Used for counting allocators in FCFS order,
        where it is exact; the differential tests compare it with full passes.
    """

    name = "easy"

    def __init__(self, order: str = "fcfs", incremental: bool = True):
        super().__init__(order)
        self.incremental = incremental
        self.reset()

    def reset(self) -> None:
        self._head: int | None = None
        self._shadow = 0.0
        self._guard: ReservationGuard | None = None

    def schedule(self, ctx: SchedulingContext) -> None:
        q = ctx.queue
        if (
            self._guard is not None
            and not ctx.released
            and q
            and q[0] == self._head
            and ctx.now < self._shadow
            and self.incremental
            and self.order == "fcfs"
            and ctx.allocator.counting
        ):
            started = [j for j in ctx.arrived if self._backfill(ctx, j)]
            if started:
                gone = set(started)
                q[:] = [j for j in q if j not in gone]
            return

        n = 0
        while n < len(q) and ctx.try_start(q[n]):
            n += 1
        if n:
            del q[:n]
        if not q:
            self._guard = None
            return
        head = q[0]
        res = ctx.reservation(head)
        if res is None:  # cannot happen for a request that fits the empty machine
            raise SimulationError(f"queue head (job position {head}) cannot fit even after every running job ends")
        shadow, k = res
        ctx.record(head, shadow)
        releases = [ctx.allocation[j] for _, _, j in ctx.running[:k]]
        self._head, self._shadow = head, shadow
        self._guard = ctx.allocator.reservation_guard(ctx.request(head), releases)
        started = [j for j in q[1:] if self._backfill(ctx, j)]
        if started:
            gone = set(started)
            q[:] = [j for j in q if j not in gone]

    def _backfill(self, ctx: SchedulingContext, job: int) -> bool:
        alloc_ = ctx.allocator
        req = ctx.request(job)
        if req.size > alloc_.free_count:
            return False
        ends_by = ctx.now + ctx.estimate[job] <= self._shadow
        guard = self._guard
        if not guard.may_admit(req, ends_by):
            return False
        alloc = alloc_.allocate(req)
        if alloc is None:
            return False
        if not guard.admit(alloc, ends_by):
            alloc_.release(alloc)
            return False
        ctx.start_with(job, alloc)
        return True


@SCHEDULERS.register("easy")
def _make_easy(order: str = "fcfs", incremental: bool = True) -> EASY:
    """EASY (aggressive) backfilling: one reservation, for the queue head."""
    return EASY(order=order, incremental=incremental)
