"""The Scheduler contract and the context it decides in.

A scheduler is a policy with no clock.  At each scheduling point the
simulation hands it a :class:`SchedulingContext`: the time, the wait queue
(job positions, in the scheduler's queue order), the running jobs ordered by
expected end, and the allocator.  The scheduler starts jobs through
:meth:`SchedulingContext.try_start`, which allocates on the spot, so later
decisions in the same pass see the processors already taken.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from bisect import bisect_left, insort
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from operator import itemgetter

from ..alloc.base import Allocation, Allocator, Request
from ..errors import InvalidArgument

__all__ = ["Scheduler", "SchedulingContext", "QUEUE_ORDERS", "ReservationRecord"]

_ALLOC = itemgetter(3)  # the allocation in a running entry

#: Queue orders (Mao/Chen/Watson §1: FCFS; LPT, longest processing time first,
#: for utilization; SJF, shortest job first, for slowdown).  Processing time
#: is the *estimate*: schedulers never know real run times.  Ties go to the
#: earlier submit, then the earlier position in the trace.
#: ``cplant``: the Cplant queue of Leung, Phillips, Bunde et al. §3, "sorted
#: first by number of requested processors and then by requested processing
#: time" — both ascending (the paper does not say which way; smallest first is
#: what a size-sorted queue that fills the machine with small jobs means), then
#: submit time and trace position.
QUEUE_ORDERS = ("fcfs", "sjf", "lpt", "cplant")


@dataclass(frozen=True, slots=True)
class ReservationRecord:
    """A reservation a scheduler made: ``job`` (position) may start no later than ``time``, decided at ``made_at``."""

    job: int
    made_at: float
    time: float


class SchedulingContext:
    """What a scheduler sees and the one way it acts (:meth:`try_start`).

    Attributes
    ----------
    now : float
    queue : list[int]
        Waiting job positions, in queue order.
    running : list[tuple[float, int, int, Allocation]]
        ``(expected_end, start_serial, job, allocation)``, sorted: the order
        in which jobs are expected to free their processors.
    allocator : Allocator
    size, estimate : sequences indexed by job position
    """

    def __init__(
        self,
        allocator: Allocator,
        *,
        estimate: Sequence[float],
        size: Sequence[int],
        requests: Callable[[int], Request],
        record_reservations: bool = False,
    ):
        self.allocator = allocator
        self.estimate = estimate
        self.size = size
        self.request = requests
        self.now = 0.0
        self.queue: list[int] = []
        self.running: list[tuple[float, int, int, Allocation]] = []
        self.allocation: dict[int, Allocation] = {}
        self.started: list[int] = []
        self.arrived: list[int] = []
        self.released = False
        self._serial = 0
        self._end_key: dict[int, tuple[float, int, int, Allocation]] = {}
        self.reservations: list[ReservationRecord] | None = [] if record_reservations else None
        self.wakeups: list[float] = []

    # ----------------------------------------------------------- decisions
    def try_start(self, job: int) -> bool:
        """Allocate for ``job`` now; True if it started (the caller removes it from the queue)."""
        if self.size[job] > self.allocator.max_request_now():  # necessary for every allocator
            return False
        alloc = self.allocator.allocate(self.request(job))
        if alloc is None:
            return False
        self._run(job, alloc)
        return True

    def start_with(self, job: int, alloc: Allocation) -> None:
        """Run ``job`` on an allocation the scheduler already obtained (EASY's guarded backfill)."""
        self._run(job, alloc)

    def _run(self, job: int, alloc: Allocation) -> None:
        self._serial += 1
        key = (self.now + self.estimate[job], self._serial, job, alloc)
        insort(self.running, key)
        self._end_key[job] = key
        self.allocation[job] = alloc
        self.started.append(job)

    def finish(self, job: int) -> Allocation:
        """Called by the simulation when ``job`` ends: release its processors."""
        key = self._end_key.pop(job)
        i = bisect_left(self.running, key[:2])
        del self.running[i]
        alloc = self.allocation.pop(job)
        self.allocator.release(alloc)
        self.released = True
        return alloc

    # ------------------------------------------------------------ queries
    def expected_end(self, key: tuple) -> float:
        """A running job's expected end.

        A job that has reached its estimate but not ended is expected to end
        at the next instant (the next float after ``now``): any moment, but
        not in time for a decision taken now.
        """
        return key[0] if key[0] > self.now else math.nextafter(self.now, math.inf)

    def releases_in_order(self) -> Iterator[Allocation]:
        """Allocations of the running jobs, in order of expected end (lazily)."""
        return map(_ALLOC, self.running)

    def reservation(self, job: int) -> tuple[float, int] | None:
        """Earliest expected time ``job`` fits, asking the allocator, and how many running jobs end by then.

        Walks the running jobs in order of expected end and asks the
        allocator whether the job would fit once they have ended.  All jobs
        expected to end at that same instant are counted as ended.  Returns
        ``None`` if the job would not fit even on the machine emptied of
        every running job.
        """
        req = self.request(job)
        k = self.allocator.earliest_fit(req, self.releases_in_order())
        if k is None:
            return None
        if k == 0:
            return self.now, 0
        t = self.expected_end(self.running[k - 1])
        while k < len(self.running) and self.expected_end(self.running[k]) <= t:
            k += 1
        return t, k

    def wake_at(self, time: float) -> None:
        """Ask the simulation to run the scheduler at ``time`` even if no job arrives or ends then."""
        if time > self.now:
            self.wakeups.append(time)

    def record(self, job: int, time: float) -> None:
        if self.reservations is not None:
            self.reservations.append(ReservationRecord(job, self.now, time))


class Scheduler(ABC):
    """Base class of schedulers.

    Parameters
    ----------
    order : {"fcfs", "sjf", "lpt"}
        The queue order (see :data:`QUEUE_ORDERS`).
    """

    name = "scheduler"

    def __init__(self, order: str = "fcfs"):
        if order not in QUEUE_ORDERS:
            raise InvalidArgument("order", order, f"one of {', '.join(QUEUE_ORDERS)}")
        self.order = order

    def queue_key(self, submit: Sequence[float], estimate: Sequence[float], size: Sequence[int] | None = None) -> Callable[[int], tuple] | None:
        """Sort key for the queue, or ``None`` for arrival order (the simulation then appends)."""
        if self.order == "fcfs":
            return None
        if self.order == "cplant":
            if size is None:
                raise InvalidArgument("size", None, "job sizes for the cplant queue order")
            return lambda j: (size[j], estimate[j], submit[j], j)
        if self.order == "sjf":
            return lambda j: (estimate[j], submit[j], j)
        return lambda j: (-estimate[j], submit[j], j)

    @abstractmethod
    def schedule(self, ctx: SchedulingContext) -> None:
        """Start whatever the policy starts now, through ``ctx.try_start``.

        ``ctx.arrived`` lists the jobs that joined the queue at this instant
        and ``ctx.released`` says whether any job ended; a scheduler may use
        them to skip work that cannot change its decisions.  It must remove
        the jobs it starts from ``ctx.queue``.
        """

    def reset(self) -> None:
        """Forget any state kept between calls (called before each simulation)."""
