"""Subcube allocators for hypercubes and Turner's Auxiliary Free List (Turner 1997, ch. 3).

* :class:`BuddyAllocator` (``buddy``) — aligned blocks of ``2**k`` nodes in binary order.
* :class:`GrayCodeAllocator` (``gray_code``) — blocks of ``2**k`` consecutive
  nodes of the binary-reflected Gray code starting at multiples of ``2**(k-1)``
  (Chen and Shin's GC strategy, cyclic).
* :class:`FreeListAllocator` (``free_list``) — free lists of disjoint subcubes
  per dimension, split on demand, complementary cubes merged on release
  (Kim and Das), with complete subcube recognition.
* :class:`AFLAllocator` (``afl``) — the Free List augmented with the
  Auxiliary Free List: an X×Y mesh is embedded by BRGC in a k-cube and the
  leftover nodes become subcubes other meshes may use (§3.3).

Requests: a request with a 2-D ``shape`` ``(X, Y)`` is an X×Y mesh needing a
k-cube, ``k = ⌈log₂X⌉ + ⌈log₂Y⌉``; a request without a shape needs a
``⌈log₂ size⌉``-cube from the subcube allocators, and an X×Y mesh derived by
:func:`~topoalloc.alloc.hypercube.embedding.square_shape` from the AFL.

``Allocation.info`` holds ``"cube"`` — the ``(free, value)`` masks of the
k-cube (see :class:`~topoalloc.topology.hypercube.Subcube`) — and, for AFL
meshes, ``"mesh"`` ``(X, Y)`` and ``"leftover"``, the ownership list of
leftover cubes the mesh's partition produced.
"""

from __future__ import annotations

import copy
import operator
from collections.abc import Callable, Hashable, Iterable
from functools import lru_cache
from typing import Any, Self, cast
from itertools import combinations, compress
from math import comb

import numpy as np

from ...errors import InternalError, InvalidArgument
from ...registry import ALLOCATORS
from ...topology.hypercube import Hypercube, Subcube, _spread
from ..base import Allocation, Allocator, Grant, Numbering, Request
from ..probes import ReservationGuard
from .embedding import _kept_if_small, ceil_log2, cluster_partition, coalesce, deposit, deposit_cube, embed_mesh, mesh_dims, partition_leftover, square_shape

__all__ = ["BuddyAllocator", "GrayCodeAllocator", "FreeListAllocator", "AFLAllocator", "mesh_layout", "cube_of"]

Cube = tuple[int, int]

#: the free list's complete subcube recognition is available up to this dimension (the compiled search's, and the
#: kernel's, cubes are int32 keys ``free << n | value``); above it only the lists are used
MAX_COMPLETE_DIM = 15

#: without a ``recognition`` option the free list and the AFL take complete recognition up to this dimension (and
#: their own limit) and the lists above: the free list as Turner describes it wherever it can.  Its search (depth
#: first over the free masks) is asked wherever the lists fail, in every trial of conservative backfilling's plan;
#: the compiled kernel remembers its answers by mask.  LLNL-Atlas's whole log on Q14 (2026-12-05, simulation
#: alone): conservative 26.8 s against 6.4 s on the lists (305 s before the answers were remembered and the search
#: skipped the words of no free cube); EASY 0.14 s, on the kernel, against 2.3 s on the general engine; FCFS 0.42 s
#: against 0.01 s.  The worst case is a plan of states never seen, where most searches fail: 1,000 jobs at one
#: instant on Q15 under conservative 35 s against 11 s on the lists
DEFAULT_COMPLETE_DIM = 15

#: the AFL's complete recognition judges contention safety on a flag per k-subcube (3**n subcubes in all, kept per
#: live mesh: at Q15 megabytes a mesh), so it stops lower
AFL_MAX_COMPLETE_DIM = 12

#: the numpy reference reads every k-subcube's nodes from a table up to this dimension (its memory grows as 3**n
#: times the cube's nodes); above it, a depth-first search over the free masks as the compiled one makes
TABLE_MAX_DIM = 12

#: a release number no release reaches (a node or subcube never freed)
_NEVER = np.iinfo(np.int64).max

try:  # complete recognition's search, compiled (optional: without it, the numpy reference below answers the same)
    import topoalloc.alloc.hypercube._csubcube as _csubcube
except ImportError:  # pragma: no cover - built wherever a C compiler is
    _csubcube = None

#: whether complete recognition uses the compiled search where it is built (tests set it False to run the
#: numpy reference, :func:`_free_safe_rows` or above :data:`TABLE_MAX_DIM` :func:`_first_free_py`, and compare)
USE_COMPILED = True


def _request_dim(request: Request) -> int:
    """Cube dimension a subcube allocator gives ``request`` (mesh shapes: ⌈log₂X⌉ + ⌈log₂Y⌉)."""
    shape = request.shape
    if shape is None or len(shape) == 1:
        return ceil_log2(request.size)
    if len(shape) == 2:
        t, m = mesh_dims(*shape)
        return t + m
    raise InvalidArgument("shape", shape, "an X×Y mesh (two sides) on a hypercube")


def cube_of(nodes: np.ndarray) -> Cube | None:
    """The ``(free, value)`` of the subcube whose nodes are exactly ``nodes``, or None if they are not a subcube."""
    arr = np.asarray(nodes, dtype=np.int64)
    if arr.size == 0 or arr.size & (arr.size - 1):
        return None
    free = int(np.bitwise_or.reduce(arr ^ arr[0]))
    if free.bit_count() != arr.size.bit_length() - 1:
        return None
    return free, int(arr[0]) & ~free


class _SubcubeBase(Allocator):
    claims = frozenset({"subcube", "contention_free"})

    def __init__(self, topology: Hypercube):
        super().__init__(topology)
        self.dim = topology.n
        self._levels: tuple[tuple[int, int], list[int]] | None = None
        self._tree: _BlockTree | None = None

    @classmethod
    def accepts(cls, topology: Any) -> bool:
        """Hypercubes (hypercube:n)."""
        return isinstance(topology, Hypercube)

    def _copy_state(self, clone: Self) -> None:
        clone._levels = None  # the busy mask is the whole state; the search levels and the tree are recomputed
        clone._tree = None

    def _fits_empty(self, request: Request) -> bool:
        return _request_dim(request) <= self.dim

    # Buddy and Gray code place a request by a pure function of the busy mask (``_place``),
    # so every probe is exact and cheap: a mask, no snapshot.  The search is bit-parallel on
    # one Python integer of free positions (in address order for the buddy, in Gray order for
    # Gray code): ``runs[l]`` has bit p set iff the 2**l positions from p are all free, and
    # ``runs[l + 1] = runs[l] & (runs[l] >> 2**l)``; a level costs one shift and one AND.
    # The levels of the allocator's own mask are kept until its state changes; the pair
    # (allocation serial, free count) names a state (a grant raises the serial, and between
    # grants every release raises the free count).
    def _place(self, busy: np.ndarray, k: int) -> tuple[np.ndarray, Cube] | None:
        """The block a k-cube request gets with ``busy``: its nodes (sorted, read-only, shared by every grant of
        the block: grants are immutable) and its cube; None if there is none.  The allocator's own mask is
        searched through its block tree when it has one, any other by the bit-parallel search."""
        if busy is self._busy and (tree := self._own_tree()) is not None:
            start = tree.first_fit(k)
        else:
            start = self._first_start(busy, k)
        return None if start is None else self._block(start, k)

    def _first_start(self, busy: np.ndarray, k: int) -> int | None:  # pragma: no cover - both subclasses define it
        """The bit-parallel search: the first position of the block a k-cube request gets with ``busy``, or None."""
        raise InternalError(f"{type(self).__name__} does not define _first_start")

    def _free_bits(self, busy: np.ndarray) -> int:  # pragma: no cover - both subclasses define it
        raise InternalError(f"{type(self).__name__} does not define _free_bits")

    def _start_of_runs(self, runs: int, k: int) -> int | None:  # pragma: no cover - both subclasses define it
        """The first allowed start among the set bits of ``runs`` (bit p: the 2**k positions from p are free)."""
        raise InternalError(f"{type(self).__name__} does not define _start_of_runs")

    def _runs(self, busy: np.ndarray, k: int) -> int:
        """Bit p set iff the 2**k positions from p are free (positions as ``_free_bits`` orders them)."""
        if busy is self._busy:
            stamp = (self._serial, self._free_count)
            cached = getattr(self, "_levels", None)
            if cached is None or cached[0] != stamp:
                cached = (stamp, [self._free_bits(busy)])
                self._levels = cached
            levels = cached[1]
        else:
            levels = [self._free_bits(busy)]
        while len(levels) <= k:
            z = levels[-1]
            levels.append(z & (z >> (1 << (len(levels) - 1))))
        return levels[k]

    # The bit-parallel search costs O(2**n / 64) per grant, as every grant changes the mask.  From Q15 up
    # (TREE_MIN_DIM: where the two cost alike in ``bench_hypercube.py --sizes``) the allocator's own mask is
    # also summarised by a _BlockTree, updated in O(2**k + n) per grant and release and searched in O(n).
    # Any other mask (a probe's) and every smaller machine use the bit-parallel search; the two give the
    # same block (tested).  The grant's token is its (first position, k), for the release.
    #: smallest cube dimension at which the allocator's own searches go through a _BlockTree
    TREE_MIN_DIM: int = 15
    _gray: bool = False

    def _own_tree(self) -> "_BlockTree | None":
        """The tree of the allocator's own mask, rebuilt if a grant or release did not keep it (None below TREE_MIN_DIM)."""
        if self.dim < self.TREE_MIN_DIM:
            return None
        stamp = (self._serial, self._free_count)
        tree = self._tree
        if tree is None or tree.stamp != stamp:
            free = ~self._busy[_gray_order(self.dim)] if self._gray else ~self._busy
            tree = self._tree = _BlockTree(free, self._gray, stamp)
        return tree

    def _block(self, start: int, k: int) -> tuple[np.ndarray, Cube]:  # pragma: no cover - both subclasses define it
        """The block of 2**k positions from position ``start``: nodes (sorted, read-only) and cube."""
        raise InternalError(f"{type(self).__name__} does not define _block")

    def _allocate(self, request: Request) -> Grant | None:
        k = _request_dim(request)
        if k > self.dim or (1 << k) > self._free_count:
            return None
        tree = self._own_tree()
        if tree is None:
            block = self._place(self._busy, k)
            return None if block is None else Grant(block[0], {"cube": block[1]})
        start = tree.first_fit(k)
        if start is None:
            return None
        nodes, cube = self._block(start, k)
        tree.set_window(start, k, False)
        tree.stamp = (self._serial + 1, self._free_count - (1 << k))  # the state once the base has taken the grant
        return Grant(nodes, {"cube": cube}, token=(start, k))

    def _release(self, allocation: Allocation, token: Any) -> None:
        tree = self._tree
        if tree is None:
            return
        if token is None or tree.stamp != (self._serial, self._free_count):
            self._tree = None  # not the tree's state, or a grant it did not see: rebuilt when next needed
            return
        start, k = token
        tree.set_window(start, k, True)
        tree.stamp = (self._serial, self._free_count + allocation.size)

    def can_allocate(self, request: Request) -> bool:
        k = _request_dim(request)
        return k <= self.dim and (1 << k) <= self._free_count and self._place(self._busy, k) is not None

    def earliest_fit(self, request: Request, releases: Iterable[Allocation]) -> int | None:
        """One pass, no replay: each node gets the number of the release that frees it
        (0: free now; never: busy and not released); a block is free after the largest
        number among its nodes, and the answer is the smallest such number over the blocks."""
        k = _request_dim(request)
        if k > self.dim:
            return None
        return _first_free_after(self._busy, releases, lambda rank: self._block_ranks(rank, k))

    def _block_ranks(self, rank: np.ndarray, k: int) -> np.ndarray:  # pragma: no cover - both subclasses define it
        raise InternalError(f"{type(self).__name__} does not define _block_ranks")

    def fit_key(self, request: Request) -> int:
        """Requests needing a cube of the same dimension are placed alike."""
        return _request_dim(request)

    def reservation_guard(self, head: Request, releases: Iterable[Allocation]) -> ReservationGuard:
        return _MaskGuard(self, head, releases)

    def future_plan(self, now: float, releases: list[tuple[float, Allocation]], request: Callable[[int], Request],
                    priority: Callable[[int], int]) -> Any:
        """Conservative backfilling's plan on free positions, not on snapshots: the buddy and Gray code place a
        request by a pure function of the busy mask (:meth:`_place`), so the plan is a
        :class:`~topoalloc.sched.plan.StatePlan` whose state is the free positions as an int (:class:`_PositionsModel`),
        ReplayPlan's answers (a unit test compares them answer by answer; the conformance suite, schedules).  The
        general engine's plan; the compiled kernel replays the same plan on busy masks.  A subclass may place
        otherwise, so it keeps the default, replay on snapshots."""
        if type(self) not in (BuddyAllocator, GrayCodeAllocator):
            return super().future_plan(now, releases, request, priority)
        from ...sched.plan import StatePlan

        return StatePlan(now, _PositionsModel(self), releases, request, priority)


class BuddyAllocator(_SubcubeBase):
    """The buddy strategy: a k-cube is an aligned block of ``2**k`` consecutive addresses; first fit in address order.

    Recognises the ``2**(n-k)`` subcubes whose ``*`` bits are the k lowest.

    Examples
    --------
    >>> from topoalloc.topology import Hypercube
    >>> a = BuddyAllocator(Hypercube(3))
    >>> a.allocate(Request(1)).nodes.tolist(), a.allocate(Request(3)).nodes.tolist()
    ([0], [4, 5, 6, 7])
    """

    name = "buddy"

    def _free_bits(self, busy: np.ndarray) -> int:
        return _bits(~busy)

    def _first_start(self, busy: np.ndarray, k: int) -> int | None:
        return self._start_of_runs(self._runs(busy, k), k)

    def _start_of_runs(self, runs: int, k: int) -> int | None:
        # aligned blocks of 2**k addresses: a free run of 2**k starting at a multiple of 2**k
        hit = runs & _multiples(1 << self.dim, 1 << k)
        return (hit & -hit).bit_length() - 1 if hit else None

    def _block(self, start: int, k: int) -> tuple[np.ndarray, Cube]:
        return _buddy_block(start, k)

    def _block_ranks(self, rank: np.ndarray, k: int) -> np.ndarray:
        return rank.reshape(-1, 1 << k).max(axis=1)


class GrayCodeAllocator(_SubcubeBase):
    """The Gray code strategy (Chen and Shin): ``2**k`` consecutive nodes of the cyclic BRGC order, starting at a multiple of ``2**(k-1)``.

    Recognises twice the buddy's subcubes for ``1 <= k < n``.  First fit in
    Gray order of the starting position.

    Examples
    --------
    >>> from topoalloc.topology import Hypercube
    >>> a = GrayCodeAllocator(Hypercube(3))
    >>> a.allocate(Request(2)).nodes.tolist(), a.allocate(Request(2)).nodes.tolist()
    ([0, 1], [2, 3])
    """

    name = "gray_code"

    def _free_bits(self, busy: np.ndarray) -> int:
        free = _bits(~busy[_gray_order(self.dim)])  # free, in Gray order
        return free | (free << (1 << self.dim))  # twice round: windows are cyclic

    _gray = True

    def _first_start(self, busy: np.ndarray, k: int) -> int | None:
        return self._start_of_runs(self._runs(busy, k), k)

    def _start_of_runs(self, runs: int, k: int) -> int | None:
        size, n_pos = 1 << k, 1 << self.dim
        # windows of 2**k positions starting at multiples of 2**(k-1) (the whole cube: at 0), cyclic
        step = n_pos if k == self.dim else max(1, size // 2)
        hit = runs & _multiples(n_pos, step)
        return (hit & -hit).bit_length() - 1 if hit else None

    def _block(self, start: int, k: int) -> tuple[np.ndarray, Cube]:
        return _gray_block(self.dim, start, k)

    def _block_ranks(self, rank: np.ndarray, k: int) -> np.ndarray:
        g = rank[_gray_order(self.dim)]
        if k == self.dim:
            return g.max(keepdims=True)
        if k == 0:
            return g
        half = g.reshape(-1, 1 << (k - 1)).max(axis=1)  # windows are two consecutive halves, cyclically
        return np.maximum(half, np.roll(half, -1))


class _PositionsModel:
    """The buddy's or Gray code's placement as a :class:`~topoalloc.sched.plan.StateModel`: the state is the free
    positions as an int (bit p: position p, in address order for the buddy, in Gray order for Gray code), a grant's
    token the bits of its window, a release ``int.__or__``; a request's frame is its cube dimension (the allocators'
    fit key).  The search is :meth:`_SubcubeBase._first_start`'s on the same bits: levels of runs by shift and AND,
    then the first allowed start."""

    release = staticmethod(int.__or__)

    def __init__(self, allocator: _SubcubeBase):
        self.allocator = allocator
        n = allocator.dim
        self._n_pos = 1 << n
        self._gray = allocator._gray
        busy = allocator._busy[_gray_order(n)] if self._gray else allocator._busy
        self.state = _bits(~busy)
        self.free_count = allocator._free_count
        self._start = allocator._start_of_runs
        #: placements remembered from plan to plan (a state has a bit per node)
        from ...sched.plan import placement_memo

        self.memo = placement_memo(allocator, self._n_pos // 8 + 32)

    def place(self, state: int, request: Request) -> tuple[int, int] | None:
        k = _request_dim(request)
        if k > self.allocator.dim:
            return None
        n_pos = self._n_pos
        z = state | state << n_pos if self._gray else state  # (Gray code's windows are cyclic: twice round)
        for level in range(k):
            z &= z >> (1 << level)
        start = self._start(z, k)
        if start is None:
            return None
        window = ((1 << (1 << k)) - 1) << start
        if self._gray:
            window = (window | window >> n_pos) & ((1 << n_pos) - 1)
        return window, state & ~window

    def token_of(self, allocation: Allocation) -> int:
        cube = allocation.info.get("cube") or cube_of(allocation.nodes)
        if cube is None:  # pragma: no cover - every grant of these allocators is a subcube
            raise InternalError(f"allocation #{allocation.serial} is not a subcube")
        return _position_bits(self.allocator.dim, self._gray, *cube)

    def frame(self, request: Request) -> int:
        return _request_dim(request)

    def cells(self, request: Request) -> int:
        return 1 << _request_dim(request)

    def cells_of(self, allocation: Allocation) -> int:
        return allocation.size


@lru_cache(maxsize=4096)
def _position_bits(n: int, gray: bool, free: int, value: int) -> int:
    """The positions (address order, or Gray order with ``gray``) of the nodes of Q_n's subcube ``(free, value)``, as bits."""
    nodes = value | _spread(free)
    return _node_bits(1 << n, _gray_rank(n)[nodes] if gray else nodes)


@lru_cache(maxsize=4)
def _gray_rank(n: int) -> np.ndarray:
    """The position of each node of Q_n in the binary-reflected Gray code (the inverse of :func:`_gray_order`)."""
    rank = np.empty(1 << n, dtype=np.int64)
    rank[_gray_order(n)] = np.arange(1 << n, dtype=np.int64)
    rank.flags.writeable = False
    return rank


class _MaskGuard(ReservationGuard):
    """EASY's guard for buddy and Gray code: the busy mask at the shadow time, kept up to date.

    The shadow mask is the busy mask less the releases; a candidate that ends
    by the shadow time leaves it as it is (its nodes are free then again); one
    that runs past it adds its nodes, and is admitted iff the head still has a
    place in the result.  ``may_admit`` asks the same about where the
    candidate would go now, before it is allocated.

    Reusable (:attr:`ReservationGuard.reusable`): a fresh guard's shadow mask
    is the busy mask less the releases, admitted jobs ending by the shadow
    time among them, which is the kept mask with the nodes of the admitted
    jobs running past it added; refusals come from ``allocate`` or from the
    head's place in the mask, both functions of the state.
    """

    reusable = True

    allocator: "_SubcubeBase"

    def __init__(self, allocator: "_SubcubeBase", head: Request, releases: Iterable[Allocation]):
        super().__init__(allocator, head, releases)
        self.k = _request_dim(head)
        shadow = allocator._busy.copy()
        for alloc in self.releases:
            shadow[alloc.nodes] = False
        self.shadow = shadow

    def _head_fits_with(self, nodes: np.ndarray) -> bool:
        trial = self.shadow.copy()
        trial[nodes] = True
        return self.allocator._place(trial, self.k) is not None

    def may_admit(self, request: Request, ends_by_shadow: bool) -> bool:
        if ends_by_shadow:
            return True
        a = self.allocator
        k = _request_dim(request)
        block = a._place(a._busy, k) if k <= a.dim else None
        return block is None or self._head_fits_with(block[0])  # None: allocate will refuse it anyway

    def admit(self, allocation: Allocation, ends_by_shadow: bool) -> bool:
        if ends_by_shadow:
            self.releases.append(allocation)
            return True
        if not self._head_fits_with(allocation.nodes):
            return False
        self.shadow[allocation.nodes] = True
        return True


class _FreeSubcubeGuard(ReservationGuard):
    """EASY's guard for the free list and the AFL with complete recognition (see
    :meth:`FreeListAllocator._mask_exact`): the head fits at the shadow time iff the shadow mask
    has a free subcube of the head's dimension that is safe against the meshes live then.

    It answers ``admit`` exactly as :class:`~topoalloc.alloc.probes.ReplayGuard` does (that
    guard's snapshot, after the releases, has this busy mask and these live meshes) without
    copying the lists.  ``may_admit`` says nothing and the guard is not reusable, like the replay
    guard, so EASY makes the same ``allocate`` and ``release`` calls as before: the lists, which a
    refused candidate's allocate-and-release may rearrange, and so every later placement, are
    unchanged.
    """

    allocator: "FreeListAllocator"

    def __init__(self, allocator: "FreeListAllocator", head: Request, releases: Iterable[Allocation]):
        super().__init__(allocator, head, releases)
        self.k = allocator._cube_dim(head)
        shadow = allocator._busy.copy()
        for alloc in self.releases:
            shadow[alloc.nodes] = False
        self.shadow = shadow
        gone = _live_after(allocator._live, self.releases)
        live = [(cube, lefts) for cube, lefts in allocator._live.items() if gone[cube] == _NEVER]  # at the shadow time
        #: the head's subcubes unsafe against the partial meshes live at the shadow time (None: none; a head wider
        #: than the machine has no subcube to be unsafe, and fits at no time)
        self.unsafe = None if self.k > allocator.dim else _unsafe_for(allocator.dim, self.k, live)

    def admit(self, allocation: Allocation, ends_by_shadow: bool) -> bool:
        if ends_by_shadow:
            # its nodes were free in the shadow mask (it was placed after the guard was made), and as
            # a mesh it is no longer live by then: the shadow state is as it was, where the head fits
            # (the earliest fit found it so, and every admission since kept it so)
            self.releases.append(allocation)
            return True
        n = self.allocator.dim
        if self.k > n:
            return False  # (a head wider than the machine: replay's answer too)
        trial = self.shadow.copy()
        trial[allocation.nodes] = True
        unsafe = self.unsafe
        info = allocation.info
        if info.get("leftover"):  # a partial mesh, live at the shadow time
            rows = _unsafe_rows(n, self.k, info["cube"], info["leftover"])
            unsafe = rows if unsafe is None else unsafe | rows
        if _first_free_safe(trial, n, self.k, unsafe) < 0:
            return False
        self.shadow, self.unsafe = trial, unsafe
        return True


class _BlockTree:
    """Summaries of a mask of free positions over its aligned blocks of every size: first fit in O(n), a
    window's grant or release in O(2**k + n).  Positions are Q_n's addresses for the buddy, its BRGC
    positions for Gray code.

    For the block of 2**l positions at index i of level l, with -1 for "none": ``top[l][i]`` (the buddy's)
    is the largest j such that one of its aligned 2**j blocks is free.  Gray code's are ``pre`` and ``suf``,
    the largest j such that its first / last aligned 2**j block is free, and ``win``, the largest k such that
    a window of 2**k positions from a multiple of 2**(k-1) lies free inside it (k = 0: a free position).
    A block is free iff its top (pre) is l.  A window of 2**k (k >= 1) inside a parent lies inside one
    child or is the one from ``mid - 2**(k-1)``, free iff the left child's suf and the right's pre are
    both at least k - 1; windows round the end of the cyclic order are the root's suf and pre.
    """

    __slots__ = ("n", "gray", "stamp", "arrays", "views")

    def __init__(self, free: np.ndarray, gray: bool, stamp: tuple[int, int]):
        self.n = n = free.size.bit_length() - 1
        self.gray = gray
        self.stamp = stamp
        leaf = free.astype(np.int8) - np.int8(1)  # (int8 throughout: no wider temporaries on large machines)
        if not gray:
            top = [leaf]
            for l in range(1, n + 1):
                a, b = top[-1][0::2], top[-1][1::2]
                top.append(np.where((a == l - 1) & (b == l - 1), np.int8(l), np.maximum(a, b)))
            self.arrays: tuple[list[np.ndarray], ...] = (top,)
        else:
            pre, suf, win = [leaf], [leaf.copy()], [leaf.copy()]
            for l in range(1, n + 1):
                pa, pb, sa, sb = pre[-1][0::2], pre[-1][1::2], suf[-1][0::2], suf[-1][1::2]
                full = (pa == l - 1) & (pb == l - 1)
                pre.append(np.where(full, np.int8(l), pa))
                suf.append(np.where(full, np.int8(l), sb))
                m = np.minimum(sa, pb)
                cross = np.where(m >= 0, m + np.int8(1), np.int8(-1))
                win.append(np.maximum(np.maximum(win[-1][0::2], win[-1][1::2]), cross))
            self.arrays = (pre, suf, win)
        self.views = tuple([a.data for a in levels] for levels in self.arrays)

    def __reduce__(self) -> tuple[Any, ...]:  # (memoryviews neither pickle nor deep-copy: rebuilt from the arrays)
        return _restore_tree, (self.n, self.gray, self.stamp, self.arrays)

    def first_fit(self, k: int) -> int | None:
        """The first position from which the 2**k positions of a block (buddy: aligned; Gray code: from a
        multiple of 2**(k-1), cyclic; the whole cube from 0) are free, or None."""
        n = self.n
        if not self.gray:
            (top,) = self.views
            if top[n][0] < k:
                return None
            i = 0
            for l in range(n, k, -1):
                c = 2 * i
                i = c if top[l - 1][c] >= k else c + 1
            return i << k
        pre, suf, win = self.views
        if k == n:
            return 0 if pre[n][0] == n else None
        if win[n][0] >= k:
            i = 0
            for l in range(n, k, -1):
                c = 2 * i
                if win[l - 1][c] >= k:
                    i = c
                elif k and suf[l - 1][c] >= k - 1 and pre[l - 1][c + 1] >= k - 1:
                    return ((c + 1) << (l - 1)) - (1 << (k - 1))
                else:
                    i = c + 1
            return i << k
        if k and suf[n][0] >= k - 1 and pre[n][0] >= k - 1:
            return (1 << n) - (1 << (k - 1))
        return None

    def set_window(self, start: int, k: int, free: bool) -> None:
        """Mark the 2**k positions from ``start`` (a block :meth:`first_fit` gives) free or busy."""
        if start % (1 << k) == 0:
            self._fill(k, start >> k, free)
        else:  # a Gray code window from an odd multiple of 2**(k-1): two halves, the second maybe round the end
            i = start >> (k - 1)
            self._fill(k - 1, i, free)
            self._fill(k - 1, (i + 1) % (1 << (self.n - k + 1)), free)

    def _fill(self, j: int, i: int, free: bool) -> None:
        for l in range(j + 1):
            lo = i << (j - l)
            value = l if free else -1
            for levels in self.arrays:
                levels[l][lo:lo + (1 << (j - l))] = value
        if not self.gray:
            (top,) = self.views
            for l in range(j + 1, self.n + 1):
                i >>= 1
                a, b = top[l - 1][2 * i], top[l - 1][2 * i + 1]
                v = l if a == b == l - 1 else max(a, b)
                if top[l][i] == v:
                    return  # unchanged here, so above too
                top[l][i] = v
            return
        pre, suf, win = self.views
        for l in range(j + 1, self.n + 1):
            i >>= 1
            c = 2 * i
            pa, pb, sa, sb = pre[l - 1][c], pre[l - 1][c + 1], suf[l - 1][c], suf[l - 1][c + 1]
            full = pa == pb == l - 1
            p, s = (l, l) if full else (pa, sb)
            m = min(sa, pb)
            w = max(win[l - 1][c], win[l - 1][c + 1], m + 1 if m >= 0 else -1)
            if pre[l][i] == p and suf[l][i] == s and win[l][i] == w:
                return
            pre[l][i], suf[l][i], win[l][i] = p, s, w


def _restore_tree(n: int, gray: bool, stamp: tuple[int, int], arrays: tuple[list[np.ndarray], ...]) -> _BlockTree:
    tree = _BlockTree.__new__(_BlockTree)
    tree.n, tree.gray, tree.stamp, tree.arrays = n, gray, stamp, arrays
    tree.views = tuple([a.data for a in levels] for levels in arrays)
    return tree


def _free_safe_rows(busy: np.ndarray, n: int, k: int, unsafe: np.ndarray | None) -> np.ndarray:
    """For each k-subcube of Q_n (in :func:`_all_subcubes`' order), whether its nodes are free in ``busy`` and it is
    not marked in ``unsafe`` (see :func:`_unsafe_rows`)."""
    ok = ~busy[_all_subcubes(n, k)[2]].any(axis=1)
    if unsafe is not None:
        ok &= ~unsafe
    return ok


def _first_free_safe(busy: np.ndarray, n: int, k: int, unsafe: np.ndarray | None) -> int:
    """The index (in :func:`_all_subcubes`' order) of the first k-subcube of Q_n free in ``busy`` and not marked in
    ``unsafe``, or -1.  Compiled (``_csubcube.c``: a depth-first search over the free masks on the free nodes as
    bits, about 2**n / 64 word operations per mask it visits) where built; else :func:`_free_safe_rows` over the
    node table up to :data:`TABLE_MAX_DIM`, and :func:`_first_free_py` above, which the tests compare it with."""
    if _csubcube is not None and USE_COMPILED:
        return int(_csubcube.first_free(busy, n, k, unsafe, 0))
    if n > TABLE_MAX_DIM:
        return _first_free_py(busy, n, k, unsafe, 0)
    ok = _free_safe_rows(busy, n, k, unsafe)
    i = int(ok.argmax())
    return i if ok[i] else -1


def _first_free_py(nodes: np.ndarray, n: int, k: int, rows: np.ndarray | None, r: int) -> int:
    """``_csubcube.first_free`` in numpy, without the node table (the reference above :data:`TABLE_MAX_DIM`): the
    index (in :func:`_all_subcubes`' order) of the first k-subcube of Q_n whose nodes are all free and which
    ``rows`` does not exclude, or -1.  ``nodes``: a busy mask (free where 0) or int64 release numbers (free where
    <= r); ``rows``: None, a flag per subcube (excluded where set) or int64 (excluded where > r).

    The same depth-first search over the free masks F, each new bit above the last (so in the order of
    combinations): a level holds, for each value v with F's bits clear, whether the cube (F, v) is free; adding
    bit p keeps v iff v and v | 2**p both were; a mask with no free cube ends its branch, since no larger mask
    has one.  At depth k the free cubes are tried by ascending v."""
    if k > n:
        return -1
    free = (nodes <= r) if nodes.dtype == np.int64 else ~nodes.astype(bool)
    if int(free.sum()) < (1 << k):
        return -1
    excluded = None if rows is None else (rows > r) if rows.dtype == np.int64 else rows.astype(bool)

    def search(level: np.ndarray, depth: int, start: int, F: int, rank: int) -> int:
        if depth == k:
            fixed_bits = [b for b in range(n) if not (F >> b) & 1]
            base = rank << (n - k)
            for v in np.flatnonzero(level).tolist():
                row = base + sum(1 << j for j, b in enumerate(fixed_bits) if (v >> b) & 1)
                if excluded is None or not excluded[row]:
                    return row
            return -1
        for p in range(start, n - (k - depth) + 1):
            pairs = level.reshape(-1, 2, 1 << p)  # (the middle index is bit p of v)
            nxt = np.zeros_like(level)
            nxt.reshape(-1, 2, 1 << p)[:, 0, :] = pairs[:, 0, :] & pairs[:, 1, :]
            if nxt.any():
                got = search(nxt, depth + 1, p + 1, F | (1 << p), rank)
                if got >= 0:
                    return got
            rank += comb(n - 1 - p, k - depth - 1)  # the combinations whose next element is p
        return -1

    return search(free, 0, 0, 0, 0)


def _subcube_at(n: int, k: int, i: int) -> Cube:
    """The k-subcube of Q_n at index ``i`` of :func:`_all_subcubes`' order, as ``(free, value)``, without a table: the
    free mask is the combination of rank ``i >> (n - k)`` (lexicographic), the value the rest of ``i``'s bits
    deposited on the fixed bits from the lowest up."""
    rank, j = i >> (n - k), i & ((1 << (n - k)) - 1)
    free, left = 0, k
    for p in range(n):
        if not left:
            break
        c = comb(n - 1 - p, left - 1)
        if rank < c:
            free |= 1 << p
            left -= 1
        else:
            rank -= c
    value = 0
    for b in (b for b in range(n) if not (free >> b) & 1):
        if j & 1:
            value |= 1 << b
        j >>= 1
    return free, value


def _live_after(live: dict[Cube, tuple[Cube, ...]], releases: Iterable[Allocation]) -> dict[Cube, int]:
    """For each partial mesh of ``live``, how many of ``releases`` (in order) must end before it is no longer live
    (the one releasing it: its number; none: :data:`_NEVER`).  An allocation not held is the caller's to refuse, as
    replay would; here it is not a live mesh and changes nothing."""
    after = dict.fromkeys(live, _NEVER)
    for n, alloc in enumerate(releases, 1):
        if alloc.info.get("leftover") and after.get(cube := alloc.info["cube"]) == _NEVER:
            after[cube] = n
    return after


#: (at Q12 a row of flags takes up to 127 kB: 256 of them, 32 MB at most)
@lru_cache(maxsize=256)
def _unsafe_rows(n: int, k: int, cube: Cube, lefts: tuple[Cube, ...]) -> np.ndarray:
    """For each k-subcube of Q_n (in :func:`_all_subcubes`' order), whether it is unsafe against the
    partial mesh in ``cube`` with leftovers ``lefts``, as :meth:`FreeListAllocator._safe` judges one
    cube: it meets the mesh's cube, and its part inside it lies inside none of the leftovers.  Meshes
    recur (a cube and its shape's leftovers), so the answers are kept (read only)."""
    frees, values, _ = _all_subcubes(n, k)
    qf, qv = cube
    meets = ((values ^ qv) & ~(frees | qf)) == 0
    inf, inv = frees & qf, values | qv
    inside = np.zeros(frees.size, dtype=bool)
    for lf, lv in lefts:
        inside |= ((inf & ~lf) == 0) & ((inv & ~lf) == lv)
    out = meets & ~inside
    out.flags.writeable = False
    return out


def _unsafe_for(n: int, k: int, live: Iterable[tuple[Cube, tuple[Cube, ...]]]) -> np.ndarray | None:
    """The k-subcubes of Q_n unsafe against any of the partial meshes ``live`` (None: no mesh)."""
    out = None
    for cube, lefts in live:
        rows = _unsafe_rows(n, k, cube, lefts)
        out = rows.copy() if out is None else np.logical_or(out, rows, out=out)
    return out


def _first_free_after(busy: np.ndarray, releases: Iterable[Allocation], block_ranks: Callable[[np.ndarray], np.ndarray]) -> int | None:
    """How many of ``releases`` (in order) must end before some block is free: each node gets the
    number of the release that frees it (0: free now; never: busy and not released), ``block_ranks``
    gives each block the largest number among its nodes, and the answer is the smallest (None: never)."""
    best = int(block_ranks(_release_numbers(busy, releases)).min())
    return None if best == _NEVER else best


def _release_numbers(busy: np.ndarray, releases: Iterable[Allocation]) -> np.ndarray:
    """Each node's number of the release (of ``releases``, in order, from 1) that frees it: 0 if free now,
    :data:`_NEVER` if busy and not released."""
    rank = np.where(busy, _NEVER, 0)
    for n, alloc in enumerate(releases, 1):
        rank[alloc.nodes] = n
    return rank


def _first_fit_after(busy: np.ndarray, releases: list[Allocation], n: int, k: int, safe_after: np.ndarray | None,
                     first_free: Callable[..., int] | None = None) -> int | None:
    """:func:`_first_free_after` for k-subcubes, by the compiled search (or ``first_free``, its signature: the
    reference :func:`_first_free_py`): a subcube fits after release r iff each of its nodes' numbers
    (:func:`_first_free_after`'s) and its ``safe_after`` are <= r, which holds from some r on (nodes and safety,
    once gained, stay), so the least such r over the subcubes is found by bisection on r."""
    search = first_free or _csubcube.first_free
    rank = _release_numbers(busy, releases)
    lo, hi = 0, len(releases)
    if search(rank, n, k, safe_after, hi) < 0:
        return None
    while lo < hi:
        mid = (lo + hi) // 2
        if search(rank, n, k, safe_after, mid) >= 0:
            hi = mid
        else:
            lo = mid + 1
    return lo


def _bits(mask: np.ndarray) -> int:
    """A boolean mask as one integer: bit i is ``mask[i]``."""
    return int.from_bytes(np.packbits(mask, bitorder="little").tobytes(), "little")


@_kept_if_small(lambda start, k: 1 << k)
def _buddy_block(start: int, k: int) -> tuple[np.ndarray, Cube]:
    """The buddy's aligned block of ``2**k`` addresses from ``start``: nodes (read-only) and cube."""
    nodes = np.arange(start, start + (1 << k), dtype=np.int64)
    nodes.flags.writeable = False
    return nodes, ((1 << k) - 1, start)


@_kept_if_small(lambda n, start, k: 1 << k)
def _gray_block(n: int, start: int, k: int) -> tuple[np.ndarray, Cube]:
    """Gray code's window of ``2**k`` positions of Q_n's cyclic BRGC order from ``start``: nodes (sorted, read-only) and cube."""
    nodes = np.sort(_gray_order(n)[(start + np.arange(1 << k)) % (1 << n)])
    nodes.flags.writeable = False
    cube = cube_of(nodes)
    if cube is None:  # pragma: no cover - a window of 2**k from a multiple of 2**(k-1) is a subcube (Chen and Shin)
        raise InternalError(f"Gray code window of Q{n} from {start} of 2^{k} positions is not a subcube")
    return nodes, cube


@lru_cache(maxsize=256)
def _multiples(n: int, step: int) -> int:
    """Bits 0, step, 2·step, … below n set (step a power of two dividing n): the allowed starts."""
    return ((1 << n) - 1) // ((1 << step) - 1)


@lru_cache(maxsize=4)
def _gray_order(n: int) -> np.ndarray:
    """Node at each position of the binary-reflected Gray code of Q_n: ``i ^ (i >> 1)``."""
    idx = np.arange(1 << n, dtype=np.int64)
    out = idx ^ (idx >> 1)
    out.flags.writeable = False
    return out


@lru_cache(maxsize=64)
def _all_subcubes(n: int, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every k-subcube of Qn: (free masks, values, node table), ordered by free mask (combinations in order) then value."""
    frees, values = _subcube_keys(n, k)
    rows = [values[frees == free][:, None] | _spread(free)[None, :] for free in _combination_masks(n, k)]
    return frees, values, np.concatenate(rows)


def _combination_masks(n: int, k: int) -> list[int]:
    """The free masks of Qn's k-subcubes, in the order of ``combinations(range(n), k)``."""
    return [sum(1 << p for p in comb) for comb in combinations(range(n), k)]


@lru_cache(maxsize=64)
def _subcube_keys(n: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_all_subcubes`' free masks and values without the node table (read only: what the compiled search's
    index names, in a fraction of the table's memory)."""
    frees, values = [], []
    for free in _combination_masks(n, k):
        vals = _spread(((1 << n) - 1) ^ free)
        frees.append(np.full(vals.size, free, dtype=np.int64))
        values.append(vals)
    out = np.concatenate(frees), np.concatenate(values)
    for a in out:
        a.flags.writeable = False
    return out


class FreeListAllocator(Allocator):
    """The Free List strategy (Kim and Das, as used by Turner §3.3): free lists of disjoint subcubes per dimension.

    Parameters
    ----------
    topology : Hypercube
    recognition : {"complete", "lists"} or None
        ``"lists"`` looks only at the lists: a k-cube comes from the k-list,
        or by splitting the lowest-dimension larger cube (Figure 3.6).
        ``"complete"`` then, if that fails, searches every free k-subcube of
        the machine (complete subcube recognition, the property Turner
        credits the free list with), carving it out of the listed cubes; the
        lists alone miss subcubes that straddle listed cubes.  Complete
        recognition is available up to n = 15 (``MAX_COMPLETE_DIM``; the
        AFL's up to n = 12, ``AFL_MAX_COMPLETE_DIM``, since it judges
        contention safety on a flag per k-subcube, 3^n in all); asking for
        it on a larger cube is an error.  ``None`` (default) chooses
        ``"complete"`` where it is available and ``"lists"`` above, and the
        attribute ``recognition`` (so a run's spec and summary) says which.
    shape_rule : {"square", "square_strict"}
        Only used by the AFL for 1-D requests (see :func:`square_shape`).

    Notes
    -----
    Deliberate choices (the thesis leaves them open):

    * a list yields its lowest ``(value, free)`` cube; a cube is split at its
      highest ``*`` bit and the half with that bit 0 is used;
    * on release a cube merges with a complementary listed cube, repeatedly
      (free-list deallocation);
    * an empty machine is always one free n-cube (the lists are reset when
      the last allocation is released, so releasing everything restores
      the fresh state exactly).

    A mesh request ``(X, Y)`` gets a whole k-cube here (the baseline of
    Turner ch. 4); :class:`AFLAllocator` gives it exactly X·Y nodes.
    """

    name = "free_list"
    claims = frozenset({"subcube", "contention_free"})
    auxiliary = False
    #: the largest cube with complete recognition (above: the lists only)
    max_complete_dim = MAX_COMPLETE_DIM

    def __init__(self, topology: Hypercube, *, recognition: str | None = None, shape_rule: str = "square"):
        super().__init__(topology)
        top = self.max_complete_dim
        if recognition is None:
            recognition = "complete" if topology.n <= min(top, DEFAULT_COMPLETE_DIM) else "lists"
        elif recognition not in ("complete", "lists"):
            raise InvalidArgument("recognition", recognition, "'complete' or 'lists'")
        elif recognition == "complete" and topology.n > top:
            raise InvalidArgument("recognition", recognition,
                                  f"'lists' on hypercube:{topology.n}: the {self.name}'s complete recognition is available up to "
                                  f"hypercube:{top} (leave it out to choose by the cube)")
        square_shape(1, shape_rule)  # validates the rule
        self.recognition = recognition
        self.shape_rule = shape_rule
        self.dim = topology.n
        self._reset_lists()

    @classmethod
    def accepts(cls, topology: Any) -> bool:
        """Hypercubes (hypercube:n)."""
        return isinstance(topology, Hypercube)

    def _copy_state(self, clone: Self) -> None:
        clone._fl = [dict(d) for d in self._fl]
        clone._aux = [dict(d) for d in self._aux]
        clone._live = dict(self._live)
        clone._owned = set(self._owned)

    def _reset_lists(self) -> None:
        n = self.dim
        self._fl: list[dict[Cube, None]] = [{} for _ in range(n + 1)]
        self._aux: list[dict[Cube, None]] = [{} for _ in range(n + 1)]
        self._fl[n][((1 << n) - 1, 0)] = None
        #: live partial meshes: host k-cube -> its leftover cubes (what contention-safety is judged against)
        self._live: dict[Cube, tuple[Cube, ...]] = {}
        #: every cube on some live mesh's ownership list
        self._owned: set[Cube] = set()

    # ------------------------------------------------------------ lists
    def free_cubes(self, which: str = "fl") -> list[Subcube]:
        """The cubes on the free list (``"fl"``) or the auxiliary free list (``"afl"``), largest first."""
        lists = self._fl if which == "fl" else self._aux
        return [Subcube(self.dim, f, v) for d in range(self.dim, -1, -1) for f, v in sorted(lists[d], key=lambda c: (c[1], c[0]))]

    @staticmethod
    def _take_list(lists: list[dict[Cube, None]], k: int) -> Cube | None:
        for i in range(k, len(lists)):
            if lists[i]:
                break
        else:
            return None
        group = lists[i]
        cube = min(group, key=_order) if len(group) > 1 else next(iter(group))
        del group[cube]
        free, value = cube
        while i > k:
            b = 1 << (free.bit_length() - 1)
            free ^= b
            i -= 1
            lists[i][(free, value | b)] = None
        return free, value

    def _safe(self, cube: Cube) -> bool:
        """A free cube may be handed out or formed by a merge only if, for every live mesh, its part
        inside the mesh's k-cube lies inside one leftover cube (then Theorem 1 keeps it contention-free)."""
        bf, bv = cube
        for (qf, qv), lefts in self._live.items():
            if (bv ^ qv) & ~(bf | qf):
                continue  # disjoint
            inf = bf & qf
            inv = bv | qv
            if not any(inf & ~lf == 0 and inv & ~lf == lv for lf, lv in lefts):
                return False
        return True

    def _merge_into_fl(self, cube: Cube) -> None:
        """Free-list deallocation: add ``cube``, merging with complementary cubes (also unowned AFL cubes) while safe."""
        free, value = cube
        fl, aux = self._fl, self._aux
        owned = self._owned
        while True:
            d = free.bit_count()
            fixed = ((1 << self.dim) - 1) ^ free
            merged = False
            fl_d, aux_d = fl[d], aux[d]  # (looked up once a dimension, not once a bit)
            while fixed:
                b = fixed & -fixed
                fixed ^= b
                mate = (free, value ^ b)
                where = fl_d if mate in fl_d else (aux_d if mate in aux_d and mate not in owned else None)
                if where is None:
                    continue
                bigger = (free | b, value & ~b)
                if self._live and not self._safe(bigger):
                    continue
                del where[mate]
                free, value = bigger
                merged = True
                break
            if not merged:
                break
        fl[free.bit_count()][(free, value)] = None

    def _recognisable(self, k: int) -> Cube | None:
        """The first free, safe k-subcube of the machine that complete recognition would take (read only)."""
        if self.recognition != "complete":
            return None
        i = _first_free_safe(self._busy, self.dim, k, _unsafe_for(self.dim, k, self._live.items()))
        if i < 0:
            return None
        return _subcube_at(self.dim, k, i)

    def _recognise(self, k: int) -> Cube | None:
        """Complete recognition: the first free, safe k-subcube of the machine (then carved out of the lists)."""
        cube = self._recognisable(k)
        if cube is not None:
            for lists in (self._fl, self._aux):
                for d in range(self.dim + 1):
                    group = lists[d]
                    hit = [c for c in group if not (c[1] ^ cube[1]) & ~(c[0] | cube[0])]
                    for c in hit:
                        del group[c]
                        for piece in _difference(c, cube):
                            lists[piece[0].bit_count()][piece] = None
        return cube

    def trial_state(self) -> Hashable:
        """The free lists, the auxiliary lists and the live meshes' ownership (what placement reads)."""
        return tuple(map(frozenset, self._fl)), tuple(map(frozenset, self._aux)), frozenset(self._live.items()), frozenset(self._owned)

    def _cube_dim(self, request: Request) -> int:
        """Dimension of the cube a request takes."""
        return _request_dim(request)

    def can_allocate(self, request: Request) -> bool:
        """Read only: a cube of at least the dimension on the AFL (if used) or the FL, else a recognisable one."""
        k = self._cube_dim(request)
        if k > self.dim or (1 << k) > self._free_count:
            return False
        lists = (self._aux, self._fl) if self.auxiliary else (self._fl,)
        if any(group for ls in lists for group in ls[k:]):
            return True
        return self._recognisable(k) is not None

    def fit_key(self, request: Request) -> Hashable:
        """Requests taking a cube of the same dimension are placed alike."""
        return self._cube_dim(request)

    # With complete recognition, whether a k-cube fits is a function of the busy mask and the live partial
    # meshes (their cubes and leftovers), not of the lists.  A lemma: every listed cube (free or auxiliary
    # list) is free and safe (:meth:`_safe`) against every live mesh.  Each step keeps it: a cube taken from
    # a list, split or carved leaves subcubes of listed cubes, and a subcube of a safe cube is safe; a new
    # mesh's cube is disjoint from every listed cube (it was carved out of them), and its leftovers lie in
    # it, each inside itself; a merge is checked (:meth:`_safe`); a released cube or piece lies in a cube
    # that was safe when handed out, and every mesh placed since is disjoint from the released nodes or
    # meets the cube only inside a leftover not given back (the pieces avoid it).  So a listed cube of k
    # or more dimensions holds a free, safe k-subcube, which recognition also finds: the request fits iff
    # the machine has a free, safe k-subcube.  EASY's two questions about the future are then answered on the busy mask and
    # the live meshes at the shadow time, with no snapshot replayed.  (tests/test_hypercube.py checks the
    # lemma after every step of random runs, and the conformance suite the probes against replay.)
    def _mask_exact(self) -> bool:
        """Whether fitting is, now and once running jobs end, a function of the busy mask and the live meshes."""
        return self.recognition == "complete"

    def earliest_fit(self, request: Request, releases: Iterable[Allocation]) -> int | None:
        """With :meth:`_mask_exact`: each node gets the number of the release that frees it (0: free
        now), a subcube is free after the largest number among its nodes and safe after the release of
        every live mesh it is unsafe against, and the answer is the smallest over the k-subcubes;
        otherwise the replay of :meth:`Allocator.earliest_fit`."""
        if not self._mask_exact():
            return super().earliest_fit(request, releases)
        k = self._cube_dim(request)
        if k > self.dim:
            return None
        releases = list(releases)
        safe_after = None
        if self._live:
            gone = _live_after(self._live, releases)
            safe_after = np.zeros(comb(self.dim, k) << (self.dim - k), dtype=np.int64)  # the release after which each subcube is safe
            for cube, lefts in self._live.items():
                np.maximum(safe_after, np.where(_unsafe_rows(self.dim, k, cube, lefts), gone[cube], 0), out=safe_after)
        if _csubcube is not None and USE_COMPILED:
            return _first_fit_after(self._busy, releases, self.dim, k, safe_after)
        if self.dim > TABLE_MAX_DIM:
            return _first_fit_after(self._busy, releases, self.dim, k, safe_after, _first_free_py)
        _, _, table = _all_subcubes(self.dim, k)
        if safe_after is None:
            return _first_free_after(self._busy, releases, lambda rank: rank[table].max(axis=1))
        return _first_free_after(self._busy, releases, lambda rank: np.maximum(rank[table].max(axis=1), safe_after))

    def reservation_guard(self, head: Request, releases: Iterable[Allocation]) -> ReservationGuard:
        """With :meth:`_mask_exact`, :class:`_FreeSubcubeGuard` (masks); otherwise the replay guard."""
        if not self._mask_exact():
            return super().reservation_guard(head, releases)
        return _FreeSubcubeGuard(self, head, releases)

    def future_plan(self, now: float, releases: list[tuple[float, Allocation]], request: Callable[[int], Request],
                    priority: Callable[[int], int]) -> Any:
        """Conservative backfilling's plan on the lists' states, not on snapshots: placement reads only the busy
        nodes, the free and auxiliary lists, the live meshes' leftovers (:meth:`trial_state`) and whether any job is
        held, so the plan is a :class:`~topoalloc.sched.plan.StatePlan` on those, each placement and release made
        by this class's own code on a scratch copy (:class:`_ListsModel`); ReplayPlan's answers (a unit test compares
        them answer by answer; the conformance suite, schedules).  A subclass may place otherwise, so it keeps the
        default, replay on snapshots."""
        if type(self) not in (FreeListAllocator, AFLAllocator):
            return super().future_plan(now, releases, request, priority)
        from ...sched.plan import StatePlan

        return StatePlan(now, _ListsModel(self), releases, request, priority)

    def _find_cube(self, k: int) -> Cube | None:
        cube = None
        if self.auxiliary:
            cube = self._take_list(self._aux, k)
        if cube is None:
            cube = self._take_list(self._fl, k)
        if cube is None and (1 << k) <= self._free_count:
            cube = self._recognise(k)
        return cube

    # -------------------------------------------------------- allocator
    def _fits_empty(self, request: Request) -> bool:
        return _request_dim(request) <= self.dim

    def _allocate(self, request: Request) -> Grant | None:
        k = _request_dim(request)
        if k > self.dim or (1 << k) > self._free_count:
            return None
        cube = self._find_cube(k)
        if cube is None:
            return None
        return Grant(_cube_nodes(*cube), {"cube": cube})

    def _release(self, allocation: Allocation, token: Any) -> None:
        if not self._held:
            self._reset_lists()
            return
        self._merge_into_fl(allocation.info["cube"])


class AFLAllocator(FreeListAllocator):
    """The Auxiliary Free List method (Turner §3.3): contention-free X×Y meshes inside k-cubes.

    Allocation (Figure 3.5, then 3.6): the lowest-dimension cube of at least
    k dimensions on the AFL, else on the FL (split down to a k-cube), else
    complete recognition.  The mesh takes the first X and Y BRGC codewords of
    the cube (:func:`embed_mesh`); the partitioning algorithm (Figure 3.2)
    turns the leftover nodes into subcubes placed on the AFL and recorded in
    the mesh's ownership list (``info["leftover"]``).

    Deallocation (Figure 3.9): the mesh is cut into subcubes by cluster
    partitioning (Figure 3.7); every owned leftover still whole on the AFL
    joins them; coalesce (Figure 3.8); if that rebuilds the k-cube, it is
    released to the FL with free-list deallocation, otherwise the pieces are
    added to the FL as they are.

    Requests without a shape get the mesh ``square_shape(size, shape_rule)``
    (closest-to-square factor pair among those needing the fewest cube
    dimensions by default).  Every allocation has exactly the requested
    number of nodes.

    Examples
    --------
    >>> from topoalloc.topology import Hypercube
    >>> a = AFLAllocator(Hypercube(10))
    >>> m = a.allocate(Request(600, (20, 30)))
    >>> sorted(Subcube(10, *c).dim for c in m.info["leftover"])
    [3, 5, 7, 8]
    """

    name = "afl"
    claims = frozenset({"exact_size", "mesh_embedding", "contention_free"})
    auxiliary = True
    max_complete_dim = AFL_MAX_COMPLETE_DIM

    def __init__(self, topology: Hypercube, *, recognition: str | None = None, shape_rule: str = "square", pieces: str = "merge"):
        super().__init__(topology, recognition=recognition, shape_rule=shape_rule)
        if pieces not in ("merge", "as_is"):
            raise InvalidArgument("pieces", pieces, "'merge' or 'as_is'")
        self.pieces = pieces

    def process_order(self, allocation: Allocation) -> np.ndarray:
        """The job's X×Y mesh, x-major (as :func:`mesh_layout`): process ``i`` at mesh position ``(i // Y, i % Y)``."""
        return np.array([v for _, _, v in mesh_layout(allocation)], dtype=np.int64)

    def _shape(self, request: Request) -> tuple[int, int]:
        shape = request.shape
        if shape is None or len(shape) == 1:
            return square_shape(request.size, self.shape_rule)
        if len(shape) == 2:
            return shape[0], shape[1]
        raise InvalidArgument("shape", shape, "an X×Y mesh (two sides) on a hypercube")

    def _fits_empty(self, request: Request) -> bool:
        x, y = self._shape(request)
        t, m = mesh_dims(x, y)
        return t + m <= self.dim

    def _cube_dim(self, request: Request) -> int:
        t, m = mesh_dims(*self._shape(request))
        return t + m

    def fit_key(self, request: Request) -> Hashable:
        """Requests of the same mesh shape are placed alike (the shape, not only its cube, sets the leftovers)."""
        return self._shape(request)

    def _allocate(self, request: Request) -> Grant | None:
        x, y = self._shape(request)
        t, m = mesh_dims(x, y)
        k = t + m
        if k > self.dim:
            return None
        cube = self._find_cube(k)
        if cube is None:
            return None
        if x * y == 1 << k:
            return Grant(_mesh_nodes(x, y, *cube), {"cube": cube, "mesh": (x, y), "leftover": ()})
        lefts = tuple(deposit_cube(c, cube) for c in partition_leftover(x, y))
        aux = self._aux
        for c in lefts:
            aux[c[0].bit_count()][c] = None
        self._live[cube] = lefts
        self._owned.update(lefts)
        return Grant(_mesh_nodes(x, y, *cube), {"cube": cube, "mesh": (x, y), "leftover": lefts})

    def _release(self, allocation: Allocation, token: Any) -> None:
        info = allocation.info
        cube = info["cube"]
        lefts = info["leftover"]
        if not self._held:
            self._reset_lists()
            return
        if not lefts:
            self._merge_into_fl(cube)
            return
        del self._live[cube]
        self._owned.difference_update(lefts)
        aux = self._aux
        back = []
        for c in lefts:
            group = aux[c[0].bit_count()]
            if c in group:
                del group[c]
                back.append(c)
        if len(back) == len(lefts):
            # every leftover is free: the mesh's cubes and its leftovers tile the k-cube (proved for
            # every mesh up to Q10 in proofs/hypercube.py), so coalescing would return the k-cube itself
            pieces = [cube]
        else:
            x, y = info["mesh"]
            pieces = coalesce([deposit_cube(c, cube) for c in cluster_partition(x, y)] + back)
        if (len(pieces) == 1 and pieces[0] == cube) or self.pieces == "merge":
            for c in pieces:
                self._merge_into_fl(c)
        else:
            fl = self._fl
            for c in pieces:
                fl[c[0].bit_count()][c] = None


#: A lists model's table of states (:class:`_ListsTable`) is started again, with its memos, once its states would
#: take about this many bytes when a plan is made.  A state is counted at 1,536 bytes and one a node (measured on
#: hypercube:9: about 2 KiB a state with its memos' entries; the lists of dimensions a step did not change are
#: shared with the state before).  A larger table is restarted less often, and a restarted one meets every state
#: anew: on CTC-SP2's first 600 jobs on hypercube:9 (room for 131,072 states) the AFL's conservative run took
#: 0.44 of the time before the table, against 0.55 with room for 65,536, with 130 MiB more at its peak.
LISTS_TABLE_BYTES = 1 << 28


class _ListsTable:
    """The states and tokens a lists model has met, each numbered once, with the memos keyed by those numbers.

    A state of the lists (a tuple of frozensets per dimension and more) costs a walk of its parts to hash and, where
    two equal states are distinct objects, a walk of their cubes to compare; the plan hashes and compares states at
    every placement, release and early stop.  Numbered, a state hashes and compares as a small int: the walk is
    made once, when a placement or a release first makes it.  An allocator keeps one table for every plan it makes
    (states come back from pass to pass, as the placement memo's did); its copies share it, as they share a
    :class:`~topoalloc.alloc.base.Memo`: numbers are given by value, so they mean the same to every copy."""

    __slots__ = ("states", "tokens", "placements", "releases")

    def __init__(self) -> None:
        self.states: Numbering[tuple] = Numbering()
        self.tokens: Numbering[tuple] = Numbering()
        #: (state, frame) -> (token, next state) or None: :class:`~topoalloc.sched.plan.StatePlan`'s placement memo
        self.placements: dict[tuple[int, Hashable], tuple[int, int] | None] = {}
        #: (state, token) -> next state
        self.releases: dict[tuple[int, int], int] = {}

    def __deepcopy__(self, memo: dict[int, Any]) -> "_ListsTable":
        return self


class _ListsModel:
    """The free list's or the AFL's placement as a :class:`~topoalloc.sched.plan.StateModel`.

    A state is ``(busy, fl, aux, live, held)``: the busy nodes as an int (bit v: node v), the free and auxiliary
    lists as a frozenset of cubes per dimension, the live meshes' leftovers as a frozenset of ``(cube, leftovers)``
    and how many jobs are held (a release of the last one resets the lists).  That is all the allocator's placement
    reads (:meth:`FreeListAllocator.trial_state` and the busy mask); the order of a list is not (a list yields its
    least cube, recognition carves and a release merges whatever the order).  A placement or a release loads the
    state into one scratch copy of the allocator, runs the allocator's own ``_allocate`` or ``_release`` there and
    reads the state back, so the plan follows the allocator's code and not a copy of it.  A grant's token is
    ``(nodes as bits, cube, mesh, leftovers)``; a request's frame is the allocator's fit key.

    The plan sees each state and token by its number in the allocator's :class:`_ListsTable` (:meth:`value` and
    :meth:`token_value` give them back); placements and releases are remembered there by those numbers, and the
    releases' memo is :attr:`release_memo`, which the compiled search reads before it calls :meth:`release`."""

    def __init__(self, allocator: FreeListAllocator):
        self.allocator = allocator
        self._n = allocator.n_nodes
        self._nbytes = (self._n + 7) // 8
        table = getattr(allocator, "_lists_table", None)
        if table is None or len(table.states) > max(1024, LISTS_TABLE_BYTES // (1536 + self._n)):
            table = allocator._lists_table = _ListsTable()  # type: ignore[attr-defined]
        self._table = table
        self.state = table.states.number((_bits(allocator._busy), _frozen(allocator._fl), _frozen(allocator._aux),
                                          frozenset(allocator._live.items()), len(allocator._held)))
        self.free_count = allocator._free_count
        scratch = copy.copy(allocator)  # (shares the configuration; its state is loaded at each call)
        scratch._tokens = {}
        self._scratch = scratch
        self._holds = -1  # the state whose lists, live meshes and owned cubes the scratch holds (-1: none known)
        self.memo = table.placements
        self.release_memo = table.releases

    def value(self, sid: int) -> tuple:
        """The state numbered ``sid``."""
        return self._table.states.values[sid]

    def token_value(self, tid: int) -> tuple:
        """The token numbered ``tid``."""
        return self._table.tokens.values[tid]

    def _load(self, sid: int, state: tuple, busy_nodes: bool = True) -> FreeListAllocator:
        """The scratch allocator in state ``sid`` (``state`` its value; ``busy_nodes=False``: not its busy nodes, which
        a release does not read).  Its lists, live meshes and owned cubes are loaded only if it does not hold them
        already: the state a placement or a release made is often the next one's (a replay's states follow one
        another, each new to the memo), and the allocator's code left them as that state has them."""
        busy, fl, aux, live, held = state
        a = self._scratch
        if busy_nodes:
            a._busy = np.unpackbits(np.frombuffer(busy.to_bytes(self._nbytes, "little"), dtype=np.uint8), count=self._n, bitorder="little").view(bool)
        a._free_count = self._n - busy.bit_count()
        a._held = held  # (_release asks only whether any job is still held)
        if self._holds != sid:
            a._fl = _load_lists(fl)
            a._aux = _load_lists(aux)
            a._live = dict(live)
            a._owned = {c for _, lefts in live for c in lefts}
        self._holds = -1  # (until the operation has made its state)
        return a

    def _read(self, a: FreeListAllocator, state: tuple, busy: int, held: int) -> int:
        """The number of the state the scratch allocator holds after an operation from ``state`` (its lists read
        back), the busy nodes ``busy`` and ``held`` jobs held; the scratch is noted as holding it."""
        live = state[3] if not a._live and not state[3] else frozenset(a._live.items())
        sid = self._table.states.number((busy, _read_lists(a._fl, state[1]), _read_lists(a._aux, state[2]), live, held))
        self._holds = sid
        return sid

    def place(self, sid: int, request: Request) -> tuple[int, int] | None:
        table = self._table
        state = table.states.values[sid]
        a = self._load(sid, state)
        grant = a._allocate(request)
        if grant is None:
            return None
        info = grant.info or {}
        token = (_node_bits(self._n, grant.nodes), info["cube"], info.get("mesh"), info.get("leftover", ()))
        return table.tokens.number(token), self._read(a, state, state[0] | token[0], state[4] + 1)

    def release(self, sid: int, tid: int) -> int:
        key = (sid, tid)
        table = self._table
        got = table.releases.get(key)
        if got is None:
            state = table.states.values[sid]
            a = self._load(sid, state, busy_nodes=False)
            a._held = state[4] - 1
            nodes, cube, mesh, lefts = table.tokens.values[tid]
            a._release(cast(Allocation, _Released({"cube": cube, "mesh": mesh, "leftover": lefts})), None)
            got = table.releases[key] = self._read(a, state, state[0] & ~nodes, state[4] - 1)
        return got

    def token_of(self, allocation: Allocation) -> int:
        info = allocation.info
        return self._table.tokens.number((_node_bits(self._n, allocation.nodes), info["cube"], info.get("mesh"), info.get("leftover", ())))

    def frame(self, request: Request) -> Hashable:
        return self.allocator.fit_key(request)

    def cells(self, request: Request) -> int:
        a = self.allocator
        if isinstance(a, AFLAllocator):
            x, y = a._shape(request)
            return x * y
        return 1 << a._cube_dim(request)

    def cells_of(self, allocation: Allocation) -> int:
        return allocation.size


class _Released:
    """What a list allocator's ``_release`` reads of an allocation: its ``info``."""

    __slots__ = ("info",)

    def __init__(self, info: dict[str, Any]):
        self.info = info


def _frozen(lists: list[dict[Cube, None]]) -> tuple[frozenset[Cube], ...]:
    return tuple(map(frozenset, lists))


def _load_lists(lists: tuple[frozenset[Cube], ...]) -> list[dict[Cube, None]]:
    """A state's lists (a frozenset of cubes per dimension) as the allocator's code holds them: a dict per dimension.
    (Every dimension is loaded, by C code: that costs less than loading each one when the code first asks for it,
    through a list subclass's Python ``__getitem__``, and noting changes through a dict subclass's Python setters.)"""
    return [dict.fromkeys(group) for group in lists]


def _read_lists(lists: list[dict[Cube, None]], before: tuple[frozenset[Cube], ...]) -> tuple[frozenset[Cube], ...]:
    """The lists as a state again, ``before`` the state they were loaded from: a dimension whose cubes are
    ``before``'s is ``before``'s own (the same object), any other is read whole; ``before`` itself if none changed."""
    changed = list(map(operator.ne, map(dict.keys, lists), before))  # (compared in C, dimension by dimension)
    if True not in changed:
        return before
    out = list(before)
    for d in compress(range(len(out)), changed):
        out[d] = frozenset(lists[d])
    return tuple(out)


def _node_bits(n: int, nodes: np.ndarray) -> int:
    """Nodes (or positions) of a machine of ``n`` as one integer: bit v for node v."""
    mask = np.zeros(n, dtype=bool)
    mask[nodes] = True
    return _bits(mask)


def _order(c: Cube) -> tuple[int, int]:
    return c[1], c[0]


def _low(free: int) -> bool:
    return free & (free + 1) == 0


@_kept_if_small(lambda x, y: x * y)
def _mesh_local(x: int, y: int) -> np.ndarray:
    out = np.sort(embed_mesh(x, y).ravel())
    out.flags.writeable = False
    return out


@_kept_if_small(lambda x, y, free, value: x * y)
def _mesh_nodes(x: int, y: int, free: int, value: int) -> np.ndarray:
    """The nodes of the X×Y mesh placed in the cube ``(free, value)``, sorted and read-only (grants are
    immutable, so every grant of the same mesh in the same cube shares them)."""
    local = _mesh_local(x, y)
    nodes = local | value if _low(free) else deposit(local, (free, value))  # (deposit keeps the order)
    nodes.flags.writeable = False
    return nodes


@_kept_if_small(lambda free, value: 1 << free.bit_count())
def _cube_nodes(free: int, value: int) -> np.ndarray:
    """The nodes of the subcube ``(free, value)``, sorted and read-only."""
    nodes = value | _spread(free)
    nodes.flags.writeable = False
    return nodes


def _difference(c: Cube, b: Cube) -> list[Cube]:
    """Disjoint subcubes covering cube ``c`` minus cube ``b`` (they intersect)."""
    cf, cv = c
    inf, inv = cf & b[0], cv | b[1]  # the intersection
    out = []
    split = cf & ~inf  # bits free in c, fixed in the intersection
    free, value = cf, cv
    while split:
        p = split & -split
        split ^= p
        free ^= p
        out.append((free, value | ((inv & p) ^ p)))
        value |= inv & p
    return out


def mesh_layout(allocation: Allocation) -> list[list[int]]:
    """``[[x, y, node], ...]`` of an AFL mesh allocation, x-major."""
    x, y = allocation.info["mesh"]
    local = embed_mesh(x, y)
    nodes = deposit(local.ravel(), allocation.info["cube"]).reshape(x, y)
    return [[i, j, int(nodes[i, j])] for i in range(x) for j in range(y)]


@ALLOCATORS.register("buddy", accepts=BuddyAllocator.accepts)
def _make_buddy(topology: Hypercube) -> BuddyAllocator:
    """Buddy subcube allocation on hypercube:n (aligned 2**k blocks)."""
    return BuddyAllocator(topology)


@ALLOCATORS.register("gray_code", accepts=GrayCodeAllocator.accepts)
def _make_gray(topology: Hypercube) -> GrayCodeAllocator:
    """Gray code subcube allocation on hypercube:n (Chen and Shin)."""
    return GrayCodeAllocator(topology)


@ALLOCATORS.register("free_list", accepts=FreeListAllocator.accepts)
def _make_free_list(topology: Hypercube, recognition: str | None = None) -> FreeListAllocator:
    """Free list subcube allocation on hypercube:n; recognition=complete|lists (default: complete up to Q15, lists above)."""
    return FreeListAllocator(topology, recognition=recognition)


@ALLOCATORS.register("afl", accepts=AFLAllocator.accepts)
def _make_afl(topology: Hypercube, recognition: str | None = None, shape_rule: str = "square", pieces: str = "merge") -> AFLAllocator:
    """Turner's Auxiliary Free List: X×Y meshes in hypercube:n; shape_rule=square|square_strict, pieces=merge|as_is, recognition=complete|lists (default: complete up to Q12, lists above)."""
    return AFLAllocator(topology, recognition=recognition, shape_rule=shape_rule, pieces=pieces)
