"""The Allocator contract and its value types.

An allocator is mutable and bound to one topology.  The public
:meth:`Allocator.allocate` and :meth:`Allocator.release` live here and do the
validation and bookkeeping; a subclass fills :meth:`Allocator._allocate`
(returning a :class:`Grant`, or ``None`` for "not now") and
:meth:`Allocator._release`.  Every grant of every allocator passes the same
check here: a private sorted array of distinct node ids, in range, none of
them busy (a bitset test), at least as many as asked.

Schedulers that reserve (EASY, conservative) ask the allocator itself whether
a request could start once given jobs end; the questions and the ways to
answer them cheaply and exactly are the probe contract of
:mod:`topoalloc.alloc.probes`.  The base class answers them in general, by
replay on a :meth:`Allocator.snapshot`; allocators whose fit depends only on
the free count mix in :class:`~topoalloc.alloc.probes.CountingProbes`.
"""

from __future__ import annotations

import copy
from abc import ABC, abstractmethod
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Generic, Self, TypeVar

import numpy as np

from ..errors import AllocationError, InvalidArgument, RequestNeverFits
from ..limits import check_allocator_machine
from ..topology.base import Topology
from .probes import ReplayGuard, ReservationGuard, replay_earliest_fit

__all__ = ["Request", "Allocation", "Grant", "Allocator", "Memo", "Numbering"]

_count_nonzero = np.count_nonzero

try:  # the grant check compiled (an optional extension: without a C compiler numpy does it, same checks)
    import topoalloc.alloc._cgrant as _cgrant
except ImportError:  # pragma: no cover - built without a C compiler
    _cgrant = None


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


_K = TypeVar("_K")
_V = TypeVar("_V")


class Memo(dict[_K, _V]):
    """A memo of a pure function of an allocator's configuration (never of its state): copies share it.

    ``copy.deepcopy`` of an allocator, as the conformance suite's reference
    replays make it, shares a memo as it shares the topology, rather than
    copying every entry: what a memo holds for a key is the same in every
    copy, so sharing changes no answer, only what the copy costs (ANCA's
    memo of the levels it tries per frame made nine tenths of its deep
    copy).  :meth:`Allocator.snapshot` shares memos too.
    """

    __slots__ = ()

    def __deepcopy__(self, memo: dict[int, Any]) -> "Memo[_K, _V]":
        return self


class Numbering(Generic[_K]):
    """Values numbered 0, 1, 2, ... in the order first met: :meth:`number` gives a value's number (giving it one the
    first time), ``values[i]`` the value numbered ``i``.  A plan's model that numbers its states hashes and compares
    them as small ints; the walk through a state's parts is made once, when it is first numbered."""

    __slots__ = ("ids", "values")

    def __init__(self) -> None:
        self.ids: dict[_K, int] = {}
        self.values: list[_K] = []

    def __len__(self) -> int:
        return len(self.values)

    def number(self, value: _K) -> int:
        """``value``'s number."""
        i = self.ids.get(value)
        if i is None:
            i = self.ids[value] = len(self.values)
            self.values.append(value)
        return i


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


@dataclass(frozen=True, slots=True)
class Grant:
    """What :meth:`Allocator._allocate` returns when it places a request.

    Parameters
    ----------
    nodes : array-like of int
        The processors granted (any order; the base sorts and checks them).
        The base keeps a private copy, except of a read-only one-dimensional
        ``int64`` array that owns its data: that one it checks and keeps as
        it is, so an allocator may hand out the same immutable array for
        every grant of the same nodes (the slice allocator does, per box;
        the locality metrics then measure it once).  Such an array must
        never be made writable again.
    info : mapping, optional
        Public facts about the placement (the semitorus piece, the subcube,
        whether a curve interval was found ...); they become
        ``Allocation.info``.
    token : object, optional
        Private bookkeeping the allocator needs to undo the grant (a block of
        its partition forest, say).  The base keeps it and hands it back to
        :meth:`Allocator._release`; :meth:`Allocator.token_of` looks it up.

    Examples
    --------
    >>> Grant([2, 0, 1], info={"contiguous": True}).info
    {'contiguous': True}
    """

    nodes: Any
    info: Mapping[str, Any] | None = None
    token: Any = None


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
        (see :class:`~topoalloc.alloc.probes.CountingProbes`); schedulers may
        then answer their questions by arithmetic.
    claims : frozenset of str
        Properties the conformance suite checks beyond the universal ones
        (:data:`topoalloc.testing.CLAIM_CHECKS`: ``"exact_size"``,
        ``"contiguous"``, ``"subcube"`` ...).  An unknown claim fails the suite.

    Notes
    -----
    ``allocate`` returns ``None`` for "not now"; a request that no state of
    the machine could satisfy raises :class:`RequestNeverFits`.

    Subclass hooks: :meth:`_allocate` (required), :meth:`_release`,
    :meth:`_copy_state` (a cheap private copy of the subclass's own state, for
    snapshots; the default deep-copies it), :meth:`accepts` (which machines),
    and the probes (:meth:`can_allocate`, :meth:`earliest_fit`,
    :meth:`reservation_guard`, :meth:`fit_key`, :meth:`max_request_now`),
    whose defaults are exact but answer by replay.
    """

    name: str = "allocator"
    #: the full registry spec the allocator was built from (set by :func:`topoalloc.api.make_allocator`)
    spec: str | None = None
    counting: ClassVar[bool] = False
    claims: ClassVar[frozenset[str]] = frozenset()

    #: attributes managed by the base class (copied by :meth:`snapshot` itself)
    _BASE_STATE: ClassVar[frozenset[str]] = frozenset({"topology", "n_nodes", "_busy", "_free_count", "_held", "_tokens", "_serial", "_never_cache"})

    def __init__(self, topology: Topology):
        if not isinstance(topology, Topology):
            raise InvalidArgument("topology", topology, "a Topology instance")
        if not self.accepts(topology):
            what = (type(self).accepts.__doc__ or "see its documentation").strip().rstrip(".")
            raise InvalidArgument("topology", topology.spec(), f"a machine {type(self).__name__} accepts: {what[0].lower()}{what[1:]}")
        check_allocator_machine(topology.n_nodes, topology.spec())
        self.topology = topology
        self.n_nodes = topology.n_nodes
        self._busy = np.zeros(self.n_nodes, dtype=bool)
        self._free_count = self.n_nodes
        self._held: dict[int, Allocation] = {}
        self._tokens: dict[int, Any] = {}
        self._serial = 0
        self._never_cache: Memo[tuple[int, tuple[int, ...] | None], bool] = Memo()  # (size, shape) -> fits the empty machine

    @classmethod
    def accepts(cls, topology: Topology) -> bool:
        """Whether this allocator can be bound to ``topology`` (default: any machine)."""
        return True

    # ------------------------------------------------------------------ state
    @property
    def free_count(self) -> int:
        return self._free_count

    @property
    def busy_mask(self) -> np.ndarray:
        view = self._busy.view()
        view.flags.writeable = False
        return view

    def free_nodes(self) -> np.ndarray:
        return np.flatnonzero(~self._busy)

    @property
    def allocations(self) -> list[Allocation]:
        """Allocations currently held, in the order they were granted."""
        return list(self._held.values())

    @property
    def state_stamp(self) -> tuple[int, int]:
        """A stamp of the grants and releases so far: equal stamps mean that neither happened in between
        (every grant numbers a new allocation; a release alone shrinks the set held)."""
        return self._serial, len(self._held)

    def holds(self, allocation: Allocation) -> bool:
        return self._held.get(allocation.serial) is allocation

    def token_of(self, allocation: Allocation) -> Any:
        """The private token :meth:`_allocate` returned with ``allocation``'s grant."""
        return self._tokens[allocation.serial]

    # ------------------------------------------------------------- public API
    def allocate(self, request: Request) -> Allocation | None:
        """Grant processors for ``request`` now, or return ``None`` if it cannot start now.

        Raises
        ------
        RequestNeverFits
            If even the empty machine could not hold the request.
        AllocationError
            If the subclass granted an invalid set of nodes (busy, repeated,
            out of range or too few): a bug in the allocator, caught at once.
        """
        if not isinstance(request, Request):
            raise InvalidArgument("request", request, "a Request")
        if request.size > self._free_count:
            self.check_request(request)
            return None
        got = self._allocate(request)
        if got is None:
            self.check_request(request)
            return None
        if type(got) is Grant:
            idx = self._take_checked(got.nodes, request)
            info = got.info if type(got.info) is dict else dict(got.info or {})
            token = got.token
        else:
            idx = self._take_checked(got, request)
            info, token = {}, None
        self._free_count -= idx.size
        self._serial += 1
        alloc = Allocation._trusted(idx, request, self._serial, info)
        self._held[alloc.serial] = alloc
        if token is not None:
            self._tokens[alloc.serial] = token
        return alloc

    def _take_checked(self, nodes: Any, request: Request) -> np.ndarray:
        """The one grant check, then the grant's nodes marked busy: a private, sorted, duplicate-free int64
        array of free nodes in range.  The compiled check (``_cgrant.c``) does both in one pass and marks
        nothing unless all holds; on any failure, or without it, :meth:`_checked` checks and names the fault."""
        if _cgrant is not None:
            if type(nodes) is np.ndarray and nodes.dtype == np.int64 and nodes.ndim == 1 and not nodes.flags.writeable and nodes.flags.owndata:
                idx = nodes  # immutable, and the allocator's own: kept as it is (see Grant)
            else:
                idx = np.array(nodes, dtype=np.int64)  # a private copy: the subclass may reuse its buffer
            if idx.ndim == 1:
                st = _cgrant.take(idx, self._busy, request.size)
                if st == 5:  # long and unsorted (numpy sorts far faster than C's qsort), or read-only and unsorted
                    if idx is nodes:
                        idx = np.sort(idx)  # (the allocator's own array stays as it is)
                    else:
                        idx.sort()  # (the private copy, in place)
                    st = _cgrant.take(idx, self._busy, request.size)
                if st == 0:
                    return idx
        idx = self._checked(nodes, request)
        self._busy[idx] = True
        return idx

    def _checked(self, nodes: Any, request: Request) -> np.ndarray:
        """The one grant check: a private, sorted, duplicate-free int64 array of free nodes in range."""
        idx = np.array(nodes, dtype=np.int64)  # a private copy: the subclass may reuse its buffer
        n = idx.size
        if idx.ndim != 1 or n < request.size:
            raise AllocationError(f"{self.name}: granted {n} nodes for a request of {request.size}")
        # (np.count_nonzero rather than .any()/.all(): no ufunc reduction machinery, 2-3x faster on grants of tens of nodes)
        if n > 1 and _count_nonzero(idx[1:] <= idx[:-1]):
            idx.sort()  # (np.unique hashes first: many times slower on large grants)
            if _count_nonzero(idx[1:] == idx[:-1]):
                raise AllocationError(f"{self.name}: granted a node twice")
        if int(idx[0]) < 0 or int(idx[-1]) >= self.n_nodes:
            raise AllocationError(f"{self.name}: granted nodes outside 0..{self.n_nodes - 1}")
        busy = self._busy[idx]
        if _count_nonzero(busy):
            owners = sorted({a.serial for a in self._held.values() if self._busy_in(a, idx[busy])})
            raise AllocationError(f"{self.name}: granted busy nodes {idx[busy].tolist()[:8]} (held by allocation(s) {owners[:4]})")
        return idx

    @staticmethod
    def _busy_in(alloc: Allocation, nodes: np.ndarray) -> bool:
        return bool(np.isin(nodes, alloc.nodes, assume_unique=True).any())

    def release(self, allocation: Allocation) -> None:
        """Give back every processor of ``allocation``."""
        if self._held.get(getattr(allocation, "serial", None)) is not allocation:  # type: ignore[arg-type]
            raise AllocationError(f"{self.name}: release of {allocation!r}, which this allocator does not hold")
        del self._held[allocation.serial]
        self._release(allocation, self._tokens.pop(allocation.serial, None))
        if _cgrant is not None:
            _cgrant.clear(allocation.nodes, self._busy)
        else:
            self._busy[allocation.nodes] = False
        self._free_count += allocation.size

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
                + self._never_fits_why(request)
            )

    def _never_fits_why(self, request: Request) -> str:
        """What :class:`RequestNeverFits`' message adds to say why ``request`` fits no state (default: nothing),
        e.g. a rounding rule of the allocator that takes the request past the largest grant the machine allows."""
        return ""

    def _fits_empty(self, request: Request) -> bool:
        """Whether ``request`` fits the empty machine (default: ask a fresh copy)."""
        return self.fresh()._allocate(request) is not None

    # ----------------------------------------------------------------- probes
    def snapshot(self) -> Self:
        """An independent copy of the current state, for hypothetical questions.

        Immutable parts (topology, configuration, memoised pure functions)
        are shared; the base's own state is copied here and the subclass's by
        :meth:`_copy_state`.
        """
        clone = copy.copy(self)
        clone._busy = self._busy.copy()
        clone._held = dict(self._held)
        clone._tokens = dict(self._tokens)
        self._copy_state(clone)
        return clone

    def _copy_state(self, clone: Self) -> None:
        """Give ``clone`` (a shallow copy) private copies of this subclass's mutable state.

        The default deep-copies every attribute the base class does not
        manage, together with the tokens (one memo, so tokens that point into
        that state keep pointing at the copy).  Correct for any subclass;
        override it with cheap copies of exactly what changes.
        """
        memo: dict[int, Any] = {}
        for key, value in vars(self).items():
            if key not in self._BASE_STATE:
                setattr(clone, key, copy.deepcopy(value, memo))
        clone._tokens = copy.deepcopy(self._tokens, memo)

    def fresh(self) -> Self:
        """A copy of this allocator (same options) with every node free."""
        clone = self.snapshot()
        for alloc in list(clone._held.values()):
            clone.release(alloc)
        return clone

    def max_request_now(self) -> int:
        """An upper bound on the size of a request that could be allocated now.

        The base answers with the free node count; allocators that know better
        (the largest free subtorus, subcube ...) override it, so schedulers can
        skip hopeless candidates without asking.
        """
        return self._free_count

    def can_allocate(self, request: Request) -> bool:
        """Whether :meth:`allocate` would succeed now (the state is not changed).

        Default: try on a snapshot.  Override with an exact, cheaper test.
        """
        if request.size > self._free_count:
            return False
        return self.snapshot()._allocate(request) is not None

    def earliest_fit(self, request: Request, releases: Iterable[Allocation]) -> int | None:
        """How many of ``releases`` (in order) must end before ``request`` fits.

        Returns 0 if it fits now, ``k`` if it fits once ``releases[:k]`` have
        been released, ``None`` if it does not fit even after all of them.
        Default: replay the releases on one snapshot.
        """
        return replay_earliest_fit(self, request, releases)

    def fit_key(self, request: Request) -> Hashable | None:
        """A key under which requests are interchangeable for this allocator, or ``None``.

        Two requests with equal keys must get the same answer from
        :meth:`can_allocate` / :meth:`allocate` (success or not) and from a
        reservation guard's ``may_admit`` / ``admit`` in the same state.
        Schedulers use it to remember, within one pass and while the state is
        unchanged, that a key was refused, instead of asking again for every
        queued job of the same kind.  ``None`` (the default) disables that.
        """
        return None

    def trial_state(self) -> Hashable | None:
        """What this allocator's answers depend on besides the nodes it holds, as a value compared with
        ``==``; or ``None`` (the default): not known.

        EASY asks a candidate by allocating it and, if the reservation guard refuses it, releasing it
        again. For most allocators that pair leaves the state as it was; for some (the free list) the
        release may merge free cubes differently, and the next candidate of the same :meth:`fit_key` may
        be placed elsewhere, so it is asked again. When this value is the same before the allocation and
        after the release, the state is the same (the nodes held are, by :meth:`release`), so by the fit
        key's contract every later candidate of that key and kind would be refused alike until a job
        starts: EASY then remembers the refusal instead of asking each of them.
        """
        return None

    def future_plan(self, now: float, releases: list[tuple[float, Allocation]], request: Callable[[int], Request],
                    priority: Callable[[int], int]) -> Any:
        """Conservative backfilling's plan of the future for this allocator (not a counting one): the running
        jobs' ``releases`` as (expected end, allocation), reservations added by the scheduler.  Default:
        :class:`~topoalloc.sched.plan.ReplayPlan`, replay on snapshots; an allocator may give a plan that
        answers the same questions the same way, cheaper."""
        from ..sched.plan import ReplayPlan

        return ReplayPlan(now, self, releases, request, priority)

    def reservation_guard(self, head: Request, releases: Iterable[Allocation]) -> ReservationGuard:
        """A guard for EASY backfilling: may a job start now without delaying ``head``?

        ``releases`` are the allocations expected to end by the head's
        reservation (shadow) time.  Default: :class:`~topoalloc.alloc.probes.ReplayGuard`.
        """
        return ReplayGuard(self, head, releases)

    # ------------------------------------------------------- for subclasses
    @abstractmethod
    def _allocate(self, request: Request) -> Grant | np.ndarray | Sequence[int] | None:
        """Choose nodes for ``request`` and update the subclass's own state.

        Only called when ``request.size <= free_count``.  Return a
        :class:`Grant` (or just the node ids), or ``None`` if the request
        cannot be placed now (then leave the state unchanged).
        """

    def _release(self, allocation: Allocation, token: Any) -> None:
        """Undo the subclass's own state for ``allocation`` (the base clears the busy mask).

        ``token`` is the grant's token (``None`` if it had none).
        """

    def process_order(self, allocation: Allocation) -> np.ndarray:
        """The job's nodes in the order its processes 0, 1, 2, ... run on them.

        Used by the network coupling to place a job's processes.  Default: node
        ids in increasing order; allocators that lay a job out (blocks, a
        virtual torus, an embedded mesh) override it.
        """
        return allocation.nodes

    def describe(self) -> str:
        """The allocator's name and options as a spec (registry-built allocators record the full spec)."""
        return self.spec or self.name

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.topology.spec()}, free={self._free_count}/{self.n_nodes})"
