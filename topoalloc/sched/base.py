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
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from operator import attrgetter
from typing import Any, NamedTuple

from ..alloc.base import Allocation, Allocator, Request
from ..errors import InvalidArgument

__all__ = ["Scheduler", "SchedulingContext", "QUEUE_ORDERS", "ReservationRecord", "RunningJob"]

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


class RunningJob(NamedTuple):
    """A running job as schedulers see it.

    Running jobs are kept sorted by ``(expected_end, serial)``: the order in
    which they are expected to free their processors (``serial`` counts
    starts, so jobs expected to end at the same time keep their start order
    and two records never compare their allocations).
    """

    expected_end: float  #: start + estimate (a job may run past it: see SchedulingContext.expected_end)
    serial: int  #: the job's start number in this simulation
    job: int  #: position of the job in the workload
    allocation: Allocation


_ALLOC = attrgetter("allocation")


@dataclass(frozen=True, slots=True)
class ReservationRecord:
    """A reservation a scheduler made: ``job`` (position) may start no later than ``time``, decided at ``made_at``."""

    job: int
    made_at: float
    time: float


class SortedCounts:
    """A multiset of ordered values: how many of each, and the distinct values present, ascending (``values``)."""

    __slots__ = ("_count", "values")

    def __init__(self) -> None:
        self._count: dict = {}
        self.values: list = []

    def add(self, value: Any) -> None:
        c = self._count.get(value, 0)
        if not c:
            insort(self.values, value)
        self._count[value] = c + 1

    def add_all(self, values: Iterable[Any]) -> None:
        """Each of ``values`` added, as :meth:`add` adds one (the distinct values sorted once at the end)."""
        count = self._count
        fresh = False
        for v in values:
            c = count.get(v, 0)
            fresh = fresh or not c
            count[v] = c + 1
        if fresh:
            self.values = sorted(count)

    def remove(self, value: Any) -> None:
        c = self._count[value] - 1
        if c:
            self._count[value] = c
        else:
            del self._count[value]
            del self.values[bisect_left(self.values, value)]


class WaitingSizes(SortedCounts):
    """Counts of the sizes of queued jobs, kept in step with the queue.

    The simulation adds a job's size when it joins the queue and
    :meth:`SchedulingContext._run` removes it when it starts, so a scheduler can
    ask "could any queued job fit in ``free`` processors?" without scanning a
    queue of tens of thousands of jobs.
    """

    __slots__ = ()

    def count_at_most(self, limit: int, exclude: int | None = None) -> int:
        """Queued jobs of at most ``limit`` processors, not counting one job of size ``exclude``."""
        n = 0
        for s in self.values:
            if s > limit:
                break
            n += self._count[s]
        if exclude is not None and exclude <= limit:
            n -= 1
        return n

    def __len__(self) -> int:
        return sum(self._count.values())


class SchedulingContext:
    """What a scheduler sees and the one way it acts (:meth:`try_start`).

    Attributes
    ----------
    now : float
    queue : list[int]
        Waiting job positions, in queue order.
    running : list[RunningJob]
        Sorted: the order in which jobs are expected to free their processors.
    allocator : Allocator
    size, estimate : sequences indexed by job position
    queue_key : callable or None
        The key the queue is kept in order by (:meth:`Scheduler.queue_key`;
        ``None``: arrival order).  A scheduler may rank jobs by it.
    """

    def __init__(
        self,
        allocator: Allocator,
        *,
        estimate: Sequence[float],
        size: Sequence[int],
        requests: Callable[[int], Request],
        record_reservations: bool = False,
        queue_key: Callable[[int], tuple] | None = None,
    ):
        self.allocator = allocator
        self.estimate = estimate
        self.size = size
        self.request = requests
        self.queue_key = queue_key
        self.now = 0.0
        self.queue: list[int] = []
        self.running: list[RunningJob] = []
        self.allocation: dict[int, Allocation] = {}
        self.started: list[int] = []
        self.arrived: list[int] = []
        self.released = False
        self._serial = 0
        self._entry: dict[int, RunningJob] = {}
        self.reservations: list[ReservationRecord] | None = [] if record_reservations else None
        self.wakeups: list[float] = []
        self.waiting = WaitingSizes()

    # --------------------------------------------------------------- queue
    def enqueue(self, job: int, key: Callable[[int], tuple] | None = None) -> None:
        """Add ``job`` to the wait queue: at the end, or in ``key`` order.  The
        only way jobs join the queue (it keeps :attr:`waiting` in step)."""
        if key is None:
            self.queue.append(job)
        else:
            insort(self.queue, job, key=key)
        self.waiting.add(self.size[job])

    def set_queue(self, jobs: Sequence[int]) -> None:
        """Replace the wait queue by ``jobs`` (in that order), e.g. for a hand-made scenario."""
        self.queue[:] = jobs
        self.waiting = WaitingSizes()
        for j in jobs:
            self.waiting.add(self.size[j])

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
        self.waiting.remove(self.size[job])
        self._serial += 1
        entry = RunningJob(self.now + self.estimate[job], self._serial, job, alloc)
        insort(self.running, entry)
        self._entry[job] = entry
        self.allocation[job] = alloc
        self.started.append(job)

    def finish(self, job: int) -> Allocation:
        """Called by the simulation when ``job`` ends: release its processors."""
        entry = self._entry.pop(job)
        del self.running[bisect_left(self.running, entry)]
        alloc = self.allocation.pop(job)
        self.allocator.release(alloc)
        self.released = True
        return alloc

    # ------------------------------------------------------------ queries
    def expected_end(self, entry: RunningJob) -> float:
        """A running job's expected end.

        A job that has reached its estimate but not ended is expected to end
        at the next instant (the next float after ``now``): any moment, but
        not in time for a decision taken now.
        """
        t = entry.expected_end
        return t if t > self.now else math.nextafter(self.now, math.inf)

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
    #: the full registry spec the scheduler was built from (set by :func:`topoalloc.api.make_scheduler`)
    spec: str | None = None
    #: reservations made or moved since :meth:`reset`, for schedulers that keep one for every queued job
    #: (conservative backfilling); None for the others (see ``SimulationResult.reservation_changes``)
    reservation_changes: int | None = None

    def __init__(self, order: str = "fcfs"):
        if order not in QUEUE_ORDERS:
            raise InvalidArgument("order", order, f"one of {', '.join(QUEUE_ORDERS)}")
        self.order = order

    def describe(self) -> str:
        """The scheduler as a spec (registry-built schedulers record the full spec)."""
        return self.spec or (self.name + (f":order={self.order}" if self.order != "fcfs" else ""))

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
