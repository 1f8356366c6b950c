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

from ..alloc.base import CountingGuard, ReservationGuard
from ..errors import SimulationError
from ..registry import SCHEDULERS
from .base import _ALLOC, Scheduler, SchedulingContext

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
        self._incremental_ok = incremental and order == "fcfs"
        self.reset()

    def reset(self) -> None:
        self._head: int | None = None
        self._shadow = 0.0
        self._guard: ReservationGuard | None = None

    def schedule(self, ctx: SchedulingContext) -> None:
        q = ctx.queue
        if (
            not ctx.released
            and self._guard is not None
            and q
            and ctx.now < self._shadow
            and q[0] == self._head
            and self._incremental_ok
            and ctx.allocator.counting
        ):
            self._backfill(ctx, ctx.arrived)
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
        free = ctx.allocator.max_request_now()
        size = ctx.size
        # free only shrinks during a pass: jobs wider than it now cannot backfill
        cands = [j for j in q[1:] if size[j] <= free] if len(q) > 1 else []
        if not cands and ctx.reservations is None:
            self._guard = None  # nothing can backfill: the reservation is not needed now
            return
        res = ctx.reservation(head)
        if res is None:  # cannot happen for a request that fits the empty machine
            raise SimulationError(f"queue head (job position {head}) cannot fit even after every running job ends")
        shadow, k = res
        if ctx.reservations is not None:
            ctx.record(head, shadow)
        self._head, self._shadow = head, shadow
        self._guard = ctx.allocator.reservation_guard(ctx.request(head), _Allocations(ctx.running[:k]))
        if cands:
            self._backfill(ctx, cands)

    def _backfill(self, ctx: SchedulingContext, candidates) -> None:
        """Start every candidate (in order) that fits now and keeps the head's reservation."""
        allocator = ctx.allocator
        free = allocator.max_request_now()
        size = ctx.size
        est = ctx.estimate
        latest_end = self._shadow - ctx.now  # a job ends by the shadow iff its estimate <= this
        guard = self._guard
        started = []
        if isinstance(guard, CountingGuard):
            # the flat machine: EASY's extra-nodes arithmetic, inline (hot path)
            extra = None
            for j in candidates:
                s = size[j]
                if s > free:
                    continue
                if est[j] > latest_end:
                    if extra is None:
                        extra = guard.extra
                    if s > extra:
                        continue
                    alloc = allocator.allocate(ctx.request(j))
                    extra -= alloc.size
                else:
                    alloc = allocator.allocate(ctx.request(j))
                ctx.start_with(j, alloc)
                started.append(j)
                free = allocator.free_count
                if not free:
                    break
            if extra is not None:
                guard.extra = extra
        else:
            # Requests the allocator calls interchangeable (``fit_key``) get the same
            # answers while the state is unchanged: remember refusals until a job starts.
            fit_key = allocator.fit_key
            refused: set = set()
            for j in candidates:
                if size[j] > free:  # necessary for every allocator
                    continue
                ends_by = est[j] <= latest_end
                req = ctx.request(j)
                key = fit_key(req)
                if key is not None:
                    key = (key, ends_by)
                    if key in refused:
                        continue
                if not guard.may_admit(req, ends_by):
                    if key is not None:
                        refused.add(key)
                    continue
                alloc = allocator.allocate(req)
                if alloc is None:
                    if key is not None:
                        refused.add(key)
                    continue
                if not guard.admit(alloc, ends_by):
                    # allocate + release may leave the state different in detail: forget nothing new
                    allocator.release(alloc)
                    continue
                ctx.start_with(j, alloc)
                started.append(j)
                refused.clear()
                free = allocator.max_request_now()
                if not free:
                    break
        if started:
            q = ctx.queue
            for j in started:
                q.remove(j)


class _Allocations:
    """The allocations of a slice of running entries, produced on demand."""

    __slots__ = ("_entries",)

    def __init__(self, entries: list):
        self._entries = entries

    def __iter__(self):
        return map(_ALLOC, self._entries)

    def __len__(self) -> int:
        return len(self._entries)


@SCHEDULERS.register("easy")
def _make_easy(order: str = "fcfs", incremental: bool = True) -> EASY:
    """EASY (aggressive) backfilling: one reservation, for the queue head."""
    return EASY(order=order, incremental=incremental)
