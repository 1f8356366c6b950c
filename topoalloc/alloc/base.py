"""The Allocator contract, its value types and the probe schedulers use.

An allocator is mutable and bound to one topology.  The public
:meth:`Allocator.allocate` and :meth:`Allocator.release` live here and do the
validation and bookkeeping; subclasses fill :meth:`Allocator._allocate` and
:meth:`Allocator._release`.

Schedulers that reserve (EASY, conservative) ask the allocator itself whether
a request could start once given jobs end (:meth:`Allocator.earliest_fit`,
:meth:`Allocator.reservation_guard`, :meth:`Allocator.snapshot`), never count
free nodes themselves.  Allocators for which "fits" is exactly "enough free
nodes" (the flat machine) declare ``counting = True`` and answer those
questions by arithmetic; every other allocator is answered by replaying
releases and allocations on a private :meth:`snapshot`.
"""

from __future__ import annotations

import copy
from abc import ABC, abstractmethod
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any, ClassVar

import numpy as np

from ..errors import AllocationError, InvalidArgument, RequestNeverFits
from ..topology.base import Topology

_SIZE = attrgetter("size")

__all__ = ["Request", "Allocation", "Allocator", "ReservationGuard", "CountingGuard", "counting_earliest_fit"]


@dataclass(frozen=True, slots=True)
class Request:
    """What a job asks of the machine.

    Parameters
    ----------
    size : int
        Number of processors (>= 1).
    shape : tuple of int, optional
        A requested configuration, e.g. ``(20, 30)`` for an X×Y mesh; its
        product must equal ``size``.
    job_id : int, optional
        The job the request belongs to (for messages only).
    """

    size: int
    shape: tuple[int, ...] | None = None
    job_id: int | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.size, (int, np.integer)) or isinstance(self.size, bool) or self.size < 1:
            raise InvalidArgument("size", self.size, "a positive integer number of processors")
        if self.shape is not None:
            shape = tuple(int(s) for s in self.shape)
            if not shape or any(s < 1 for s in shape) or int(np.prod(shape)) != self.size:
                raise InvalidArgument("shape", self.shape, f"positive sides whose product is size={self.size}")
            object.__setattr__(self, "shape", shape)
        object.__setattr__(self, "size", int(self.size))

    @classmethod
    def _trusted(cls, size: int, shape: tuple[int, ...] | None, job_id: int | None) -> "Request":
        """Build without validation, from values the caller has validated in bulk."""
        self = object.__new__(cls)
        object.__setattr__(self, "size", size)
        object.__setattr__(self, "shape", shape)
        object.__setattr__(self, "job_id", job_id)
        return self


@dataclass(frozen=True, slots=True, eq=False)
class Allocation:
    """Processors granted to one request.

    ``nodes`` is a read-only sorted ``int64`` array (cheaper than a frozenset
    on the simulator's hot path, and immutable all the same); ``node_set``
    gives a frozenset.  ``size`` is the number of nodes granted (>=
    ``request.size`` when the allocator rounds).  ``info`` carries
    allocator-specific facts (the semitorus piece, the job's virtual torus
    and embedding, ...).  Equality is identity: two grants of the same nodes
    at different times differ.
    """

    nodes: np.ndarray
    request: Request
    serial: int
    info: dict[str, Any] = field(default_factory=dict)
    size: int = field(init=False)

    def __post_init__(self) -> None:
        arr = np.array(self.nodes, dtype=np.int64)  # always a private copy
        if arr.ndim != 1:
            raise InvalidArgument("nodes", self.nodes, "a 1-D sequence of node ids")
        if arr.size > 1 and not (arr[1:] > arr[:-1]).all():
            uniq = np.unique(arr)
            if uniq.size != arr.size:
                raise AllocationError(f"allocation #{self.serial} repeats a node")
            arr = uniq
        arr.flags.writeable = False
        object.__setattr__(self, "nodes", arr)
        object.__setattr__(self, "size", int(arr.size))

    @classmethod
    def _trusted(cls, nodes: np.ndarray, request: Request, serial: int, info: dict[str, Any]) -> "Allocation":
        """Build from a sorted, duplicate-free, private int64 array (the base allocator checks that)."""
        self = object.__new__(cls)
        nodes.flags.writeable = False
        setattr_ = object.__setattr__
        setattr_(self, "nodes", nodes)
        setattr_(self, "request", request)
        setattr_(self, "serial", serial)
        setattr_(self, "info", info)
        setattr_(self, "size", int(nodes.size))
        return self

    @property
    def node_set(self) -> frozenset[int]:
        return frozenset(self.nodes.tolist())

    def __deepcopy__(self, memo: dict) -> "Allocation":
        return self  # immutable: snapshots share allocations

    def __repr__(self) -> str:
        shown = self.nodes.tolist()
        text = ",".join(map(str, shown[:8])) + (",…" if len(shown) > 8 else "")
        return f"Allocation(#{self.serial}, size={self.size}, nodes=[{text}])"


class Allocator(ABC):
    """Base class of every allocator.

    Parameters
    ----------
    topology : Topology
        The machine the allocator is bound to.

    Attributes
    ----------
    counting : bool
        True iff a request fits exactly when ``request.size <= free_count``
        (the flat machine).  Schedulers then use arithmetic fast paths that
        are proved equal to the general replay on the flat machine by the
        differential tests.
    claims : frozenset of str
        Properties the conformance suite checks beyond the universal ones
        (e.g. ``"exact_size"``, ``"contiguous"``, ``"subcube"``).

    Notes
    -----
    ``allocate`` returns ``None`` for "not now"; a request that no state of
    the machine could satisfy raises :class:`RequestNeverFits`.
    """

    name: ClassVar[str] = "allocator"
    counting: ClassVar[bool] = False
    #: True if ``_allocate`` always returns a fresh, sorted, duplicate-free
    #: int64 array of free nodes in range (the flat allocator picks from the
    #: free mask itself); the base then trusts it instead of re-checking on
    #: the hot path.  The conformance suite verifies the claim independently.
    canonical_output: ClassVar[bool] = False
    claims: ClassVar[frozenset[str]] = frozenset()

    def __init__(self, topology: Topology):
        if not isinstance(topology, Topology):
            raise InvalidArgument("topology", topology, "a Topology instance")
        self.topology = topology
        self.n_nodes = topology.n_nodes
        self._busy = np.zeros(self.n_nodes, dtype=bool)
        self._free_count = self.n_nodes
        self._held: dict[int, Allocation] = {}
        self._serial = 0
        self._never_cache: dict[tuple, bool] = {}

    # ------------------------------------------------------------------ state
    @property
    def free_count(self) -> int:
        return self._free_count

    @property
    def busy_mask(self) -> np.ndarray:
        view = self._busy.view()
        view.flags.writeable = False
        return view

    def max_request_now(self) -> int:
        """An upper bound on the size of a request that could be allocated now.

        The base answers with the free node count; allocators that know better
        (the largest free subtorus, subcube ...) override it, so schedulers can
        skip hopeless candidates without asking.
        """
        return self._free_count

    def free_nodes(self) -> np.ndarray:
        return np.flatnonzero(~self._busy)

    @property
    def allocations(self) -> list[Allocation]:
        """Allocations currently held, in the order they were granted."""
        return list(self._held.values())

    def holds(self, allocation: Allocation) -> bool:
        return self._held.get(allocation.serial) is allocation

    # ------------------------------------------------------------- public API
    def allocate(self, request: Request) -> Allocation | None:
        """Grant processors for ``request`` now, or return ``None`` if it cannot start now.

        Raises
        ------
        RequestNeverFits
            If even the empty machine could not hold the request.
        """
        if not isinstance(request, Request):
            raise InvalidArgument("request", request, "a Request")
        if request.size > self._free_count:
            self.check_request(request)
            return None
        nodes = self._allocate(request)
        if nodes is None:
            self.check_request(request)
            return None
        busy = self._busy
        if self.canonical_output:
            idx = nodes
            n = idx.size
        else:
            idx = np.array(nodes, dtype=np.int64)  # private copy: the subclass may reuse its buffer
            n = idx.size
            if idx.ndim != 1 or n < request.size:
                raise AllocationError(f"{self.name}: granted {n} nodes for a request of {request.size}")
            if n > 1 and not (idx[1:] > idx[:-1]).all():
                idx = np.unique(idx)
                if idx.size != n:
                    raise AllocationError(f"{self.name}: granted a node twice")
            if idx[0] < 0 or idx[-1] >= self.n_nodes:
                raise AllocationError(f"{self.name}: granted nodes outside 0..{self.n_nodes - 1}")
            if busy[idx].any():
                raise AllocationError(f"{self.name}: granted busy nodes {idx[busy[idx]].tolist()[:8]}")
        busy[idx] = True
        self._free_count -= n
        self._serial += 1
        alloc = Allocation._trusted(idx, request, self._serial, self._take_info())
        self._held[alloc.serial] = alloc
        return alloc

    def release(self, allocation: Allocation) -> None:
        """Give back every processor of ``allocation``."""
        if self._held.get(getattr(allocation, "serial", None)) is not allocation:
            raise AllocationError(f"{self.name}: release of {allocation!r}, which this allocator does not hold")
        del self._held[allocation.serial]
        self._release(allocation)
        self._busy[allocation.nodes] = False
        self._free_count += allocation.size

    def can_allocate(self, request: Request) -> bool:
        """Whether :meth:`allocate` would succeed now (the state is not changed)."""
        if request.size > self._free_count:
            return False
        return self.snapshot()._allocate(request) is not None

    def check_request(self, request: Request) -> None:
        """Raise :class:`RequestNeverFits` if no state of the machine could satisfy ``request``."""
        key = (request.size, request.shape)
        ok = self._never_cache.get(key)
        if ok is None:
            ok = request.size <= self.n_nodes and self._fits_empty(request)
            self._never_cache[key] = ok
        if not ok:
            who = f"job {request.job_id}: " if request.job_id is not None else ""
            raise RequestNeverFits(
                f"{who}request for {request.size} processors"
                + (f" shaped {'x'.join(map(str, request.shape))}" if request.shape else "")
                + f" can never fit {self.topology.spec()} with allocator {self.name!r}"
            )

    def _fits_empty(self, request: Request) -> bool:
        fresh = self.fresh()
        return fresh._allocate(request) is not None

    # ----------------------------------------------------------------- probes
    def snapshot(self) -> "Allocator":
        """An independent copy of the current state, for hypothetical questions."""
        return copy.deepcopy(self)

    def fresh(self) -> "Allocator":
        """A copy of this allocator (same options) with every node free."""
        clone = self.snapshot()
        for alloc in list(clone._held.values()):
            clone.release(alloc)
        return clone

    def earliest_fit(self, request: Request, releases: Iterable[Allocation]) -> int | None:
        """How many of ``releases`` (in order) must end before ``request`` fits.

        Returns 0 if it fits now, ``k`` if it fits once ``releases[:k]`` have
        been released, ``None`` if it does not fit even after all of them.
        """
        if self.can_allocate(request):
            return 0
        scratch = self.snapshot()
        for k, alloc in enumerate(releases, 1):
            scratch.release(alloc)
            if scratch.can_allocate(request):
                return k
        return None

    def fit_key(self, request: Request) -> Hashable | None:
        """A key under which requests are interchangeable for this allocator, or ``None``.

        Two requests with equal keys must get the same answer from
        :meth:`allocate` (success or not, and an equivalent placement) and from
        a reservation guard's ``may_admit`` / ``admit`` in the same state.
        Schedulers use it to remember, within one pass and while the state is
        unchanged, that a key was refused, instead of asking again for every
        queued job of the same kind.  ``None`` (the default) disables that.
        """
        return None

    def reservation_guard(self, head: Request, releases: Iterable[Allocation]) -> "ReservationGuard":
        """A guard for EASY backfilling: may a job start now without delaying ``head``?

        ``releases`` are the allocations expected to end by the head's
        reservation (shadow) time.
        """
        return ReservationGuard(self, head, releases)

    # ------------------------------------------------------- for subclasses
    @abstractmethod
    def _allocate(self, request: Request) -> Sequence[int] | np.ndarray | None:
        """Choose nodes for ``request`` and update the subclass's own state.

        Only called when ``request.size <= free_count``.  Return the node ids,
        or ``None`` if the request cannot be placed now.  Facts worth keeping
        go in ``self._info`` (a dict) and end up in ``Allocation.info``.
        """

    def _release(self, allocation: Allocation) -> None:
        """Undo the subclass's own state for ``allocation`` (the base clears the busy mask)."""

    _info: dict[str, Any] | None = None

    def _take_info(self) -> dict[str, Any]:
        info, self._info = self._info, None
        return info or {}

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.topology.spec()}, free={self._free_count}/{self.n_nodes})"


def counting_earliest_fit(free: int, request: Request, releases: Iterable[Allocation]) -> int | None:
    """:meth:`Allocator.earliest_fit` for counting allocators: add up freed processors."""
    need = request.size
    if need <= free:
        return 0
    for k, alloc in enumerate(releases, 1):
        free += alloc.size
        if need <= free:
            return k
    return None


class ReservationGuard:
    """Decides whether a backfill candidate keeps the head's reservation.

    Used by EASY: the head has a reservation at the shadow time, reached once
    ``releases`` have ended.  A candidate that was just allocated may stay iff
    the head would still fit at the shadow time, i.e. after ``releases``, and
    the admitted backfills that end by the shadow, are released.

    The general guard answers by replay on a snapshot; counting allocators
    return a subclass that keeps the "extra nodes" arithmetic.
    """

    def __init__(self, allocator: Allocator, head: Request, releases: Iterable[Allocation]):
        self.allocator = allocator
        self.head = head
        self.releases = list(releases)

    def may_admit(self, request: Request, ends_by_shadow: bool) -> bool:
        """Cheap necessary condition checked before allocating the candidate."""
        return True

    def admit(self, allocation: Allocation, ends_by_shadow: bool) -> bool:
        """``allocation`` is held by the allocator; True if it may keep it."""
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


class CountingGuard(ReservationGuard):
    """The guard of counting allocators: EASY's "extra nodes" (free at the shadow time minus the head's size).

    ``extra`` is computed on first use: most scheduling passes never need it.
    """

    def __init__(self, allocator: Allocator, head: Request, releases: Iterable[Allocation]):
        self.allocator = allocator
        self.head = head
        self._pending: Iterable[Allocation] | None = releases
        self._extra = allocator.free_count - head.size  # free now: admitted jobs do not change it

    @property
    def extra(self) -> int:
        if self._pending is not None:
            self._extra += sum(map(_SIZE, self._pending))
            self._pending = None
        return self._extra

    @extra.setter
    def extra(self, value: int) -> None:
        self._pending = None
        self._extra = value

    def may_admit(self, request: Request, ends_by_shadow: bool) -> bool:
        return ends_by_shadow or request.size <= self.extra

    def admit(self, allocation: Allocation, ends_by_shadow: bool) -> bool:
        if ends_by_shadow:
            return True
        if allocation.size <= self.extra:
            self.extra -= allocation.size
            return True
        return False
