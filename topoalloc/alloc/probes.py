"""The probe contract: the questions reserving schedulers ask an allocator, and how to answer them.

EASY and conservative backfilling never count free nodes themselves; they
ask the allocator (design notes §3: on a topology "fits" means the allocator
can place it):

``can_allocate(request)``
    Would :meth:`~topoalloc.alloc.base.Allocator.allocate` succeed now?  No side effects.
``earliest_fit(request, releases)``
    How many of the running jobs' allocations, released in the given order
    (expected end), must end before the request fits: ``0`` (now), ``k``,
    or ``None`` (not even after all).
``reservation_guard(head, releases)``
    EASY's question: the queue head ``head`` fits once ``releases`` have
    ended (its shadow time); a guard then judges backfill candidates.
    ``may_admit(request, ends_by_shadow)`` is a cheap *necessary*
    condition asked before allocating; ``admit(allocation, ends_by_shadow)``
    is exact, asked once the candidate holds its nodes: True iff the head
    still fits at the shadow time (after ``releases`` and, if
    ``ends_by_shadow``, the candidate itself are released, in that order).
    An admitted candidate that ends by the shadow time joins the releases.
``fit_key(request)``
    Requests with equal keys are interchangeable (same answers to all of
    the above in any state), so a scheduler may remember a refusal per key.
``max_request_now()``
    An upper bound on the size of a request that fits now.
``snapshot()``
    An independent copy of the state (conservative backfilling replays its
    plan on one).

Three ways to answer, all exact:

* :class:`CountingProbes` — a mixin for allocators whose fit depends only on
  counts (a request fits iff ``size <= free``): arithmetic.
* the defaults of :class:`~topoalloc.alloc.base.Allocator` — replay on a
  snapshot (:func:`replay_earliest_fit`, :class:`ReplayGuard`); cheap when
  the allocator copies its state cheaply (``_copy_state``).
* an allocator family's own exact shortcut (the subtorus allocators answer on
  an overlay of their partition forest).

The conformance suite (:mod:`topoalloc.testing`) checks every registered
allocator's answers against brute-force replay on random states.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Hashable, Iterable
from typing import TYPE_CHECKING, ClassVar

if TYPE_CHECKING:
    from .base import Allocation, Allocator, Request

__all__ = ["ReservationGuard", "ReplayGuard", "CountingGuard", "CountingProbes", "counting_earliest_fit", "replay_earliest_fit"]


class ReservationGuard(ABC):
    """The guard protocol (see the module notes); subclasses answer ``may_admit`` and ``admit``.

    Attributes
    ----------
    allocator : Allocator
    head : Request
        The queue head holding the reservation.
    releases : list of Allocation
        Allocations expected to end by the shadow time, in order (admitted
        candidates that end by then are appended).
    """

    #: True if the guard may be kept across EASY passes in which jobs only arrived (no job ended, no
    #: state change since the last pass, the shadow time not reached): (1) after any admissions it
    #: answers exactly as one made afresh in the resulting state for the same head (the shadow time
    #: is then unchanged: only units were taken, and every admitted job keeps the head's fit at it;
    #: the fresh guard's releases are this one's, admitted jobs ending by the shadow included); and
    #: (2) a candidate it refused (``may_admit`` or ``admit`` False, or ``allocate`` None) in a state
    #: is refused again in that state, also once it no longer ends by the shadow time.  EASY then
    #: asks again only the jobs that arrived and those refused before the pass's last start.
    reusable: bool = False

    def __init__(self, allocator: Allocator, head: Request, releases: Iterable[Allocation]):
        self.allocator = allocator
        self.head = head
        self.releases: list[Allocation] = list(releases)

    def may_admit(self, request: Request, ends_by_shadow: bool) -> bool:
        """A necessary condition for :meth:`admit`, checked before allocating (default: no information)."""
        return True

    @abstractmethod
    def admit(self, allocation: Allocation, ends_by_shadow: bool) -> bool:
        """``allocation`` is held by the allocator; True if the head still fits at the shadow time."""


def replay_earliest_fit(allocator: Allocator, request: Request, releases: Iterable[Allocation]) -> int | None:
    """:meth:`Allocator.earliest_fit` by replay: release in order on one snapshot, asking after each."""
    if allocator.can_allocate(request):
        return 0
    scratch = None
    for k, alloc in enumerate(releases, 1):
        if scratch is None:
            scratch = allocator.snapshot()
        scratch.release(alloc)
        if scratch.can_allocate(request):
            return k
    return None


class ReplayGuard(ReservationGuard):
    """The general guard: replay the shadow time on a snapshot for each candidate.

    Exact for any allocator; costs one snapshot and the releases per
    admitted-or-not candidate.  ``may_admit`` says nothing (True).
    """

    def admit(self, allocation: Allocation, ends_by_shadow: bool) -> bool:
        scratch = self.allocator.snapshot()
        for alloc in self.releases:
            scratch.release(alloc)
        if ends_by_shadow:
            scratch.release(allocation)
        if scratch.can_allocate(self.head):
            if ends_by_shadow:
                self.releases.append(allocation)
            return True
        return False


def counting_earliest_fit(free: int, request: Request, releases: Iterable[Allocation]) -> int | None:
    """:meth:`Allocator.earliest_fit` for counting allocators: add up freed processors.

    >>> from topoalloc.alloc.base import Allocation, Request
    >>> counting_earliest_fit(2, Request(5), [Allocation([0, 1], Request(2), 1), Allocation([2], Request(1), 2)])
    2
    """
    need = request.size
    if need <= free:
        return 0
    for k, alloc in enumerate(releases, 1):
        free += alloc.size
        if need <= free:
            return k
    return None


class CountingGuard(ReservationGuard):
    """The guard of counting allocators: EASY's "extra nodes".

    ``extra`` = processors free at the shadow time minus the head's size;
    a candidate that runs past the shadow time may start iff it fits in them.
    """

    def __init__(self, allocator: Allocator, head: Request, releases: Iterable[Allocation]):
        super().__init__(allocator, head, releases)
        self.extra = allocator.free_count - head.size + sum(a.size for a in self.releases)

    def may_admit(self, request: Request, ends_by_shadow: bool) -> bool:
        return ends_by_shadow or request.size <= self.extra

    def admit(self, allocation: Allocation, ends_by_shadow: bool) -> bool:
        if ends_by_shadow:
            return True  # its processors are back by the shadow time
        if allocation.size <= self.extra:
            self.extra -= allocation.size
            return True
        return False


class CountingProbes:
    """Mixin for allocators whose fit depends only on counts: a request fits iff ``size <= free``.

    Put it before :class:`~topoalloc.alloc.base.Allocator` in the bases
    (``class Mine(CountingProbes, Allocator)``).  Every probe is then
    arithmetic, and EASY and conservative use their counting fast paths
    (EASY's extra nodes, conservative's free-processor profile).  The
    conformance suite checks the promise: such an allocator never refuses a
    request of at most ``free_count`` processors.
    """

    counting: ClassVar[bool] = True
    _free_count: int
    n_nodes: int

    def can_allocate(self, request: Request) -> bool:
        return request.size <= self._free_count

    def _fits_empty(self, request: Request) -> bool:
        return request.size <= self.n_nodes

    def max_request_now(self) -> int:
        return self._free_count

    def earliest_fit(self, request: Request, releases: Iterable[Allocation]) -> int | None:
        return counting_earliest_fit(self._free_count, request, releases)

    def reservation_guard(self, head: Request, releases: Iterable[Allocation]) -> ReservationGuard:
        return CountingGuard(self, head, releases)  # type: ignore[arg-type]

    def fit_key(self, request: Request) -> Hashable | None:
        return request.size
