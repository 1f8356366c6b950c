"""Subtorus allocation by semitorus partition: the EP and NEP allocators (Mao, Chen & Watson §2.3).

State: a forest of blocks.  The roots are the initial available set
(preprocessing); a block that was partitioned has children (siblings of one
another); the leaves are free (the available set A) or allocated.  Release
marks a leaf free and, while all siblings of a freed block are free leaves,
replaces them by their parent (buddy-style merging, recursively).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable
from typing import Any, Self

import numpy as np

from ...errors import InvalidArgument
from ...registry import ALLOCATORS
from ...topology.base import Topology
from ...topology.torus import Semitorus, Torus
from ..base import Allocation, Allocator, Grant, Memo, Numbering, Request
from ..probes import ReservationGuard
from .conversion import CONVERSIONS, Conversion, convert
from .schemes import NEP_ORDERS, initial_available_set, partition

__all__ = ["PartitionAllocator", "Block", "IDENTIFY_POLICIES"]

#: Semitorus identification (§2.3 leaves the choice open): ``"smallest"`` — the
#: smallest free semitorus with at least m nodes (ties: the lowest first node);
#: ``"first"`` — the first one met scanning the machine in node order (the
#: sufficient semitorus with the lowest first node, whatever its size: first fit
#: by address).  Both depend only on the current available set, not on its
#: history, so allocating and releasing a job leaves later choices unchanged.
IDENTIFY_POLICIES = ("smallest", "first")


def _ADDRESS(b: "Block") -> tuple[int, ...]:
    """Sort key: a block's first node in machine order (last dimension most significant)."""
    return b.st.offset[::-1]


class Block:
    """A node of the partition forest."""

    __slots__ = ("st", "parent", "children", "state", "serial", "nfree", "m1", "m2", "mlow")

    FREE, ALLOCATED, SPLIT = 0, 1, 2

    def __init__(self, st: Semitorus, parent: "Block | None", serial: int):
        self.st = st
        self.parent = parent
        self.children: list[Block] | None = None
        self.state = Block.FREE
        self.serial = serial
        self.nfree = 0  # how many of its children are free leaves (kept by the allocator)
        self.m1 = self.m2 = self.mlow = -1  # the largest, second largest and smallest order among its children (set at a split)

    def __repr__(self) -> str:
        return f"Block({self.st.describe()}, {('free', 'allocated', 'split')[self.state]})"

    def __deepcopy__(self, memo: dict[int, Any]) -> "Block":
        """What ``copy.deepcopy`` gives by default (the parent and children copied through ``memo``, so the
        forest's links stay a forest of the copies; the semitorus and the integers immutable), without its
        generic path through ``__reduce_ex__`` and a state dict per block: the conformance suite's reference
        replays deep-copy whole allocators, forests and all, at every judgement."""
        new = Block.__new__(Block)
        memo[id(self)] = new
        new.st, new.state, new.serial, new.nfree, new.m1, new.m2, new.mlow = self.st, self.state, self.serial, self.nfree, self.m1, self.m2, self.mlow
        new.parent = None if self.parent is None else copy.deepcopy(self.parent, memo)
        new.children = copy.deepcopy(self.children, memo)
        return new


class PartitionAllocator(Allocator):
    """Allocate a subtorus of 2^k nodes for a request of m <= 2^k processors (EP or NEP).

    Parameters
    ----------
    topology : Torus
        A torus or mesh of any number of dimensions and any sizes.
    scheme : {"ep", "nep"}
        Equal Partition or Non-Equal Partition (§3).
    identify : {"smallest", "first"}
        Semitorus identification policy (see :data:`IDENTIFY_POLICIES`).
    convert : {"collapse", "pair"}
        How the allocated semitorus becomes the job's torus (§2.3); the result
        is in ``allocation.info["conversion"]``.
    nep_order : {"exhaust-largest", "balanced"}
        NEP halving order (see :func:`nep_partition`).

    Notes
    -----
    A request is rounded up to the next power of two (the paper's rule;
    ``allocation.info["rounded"]`` and ``["requested"]`` record the internal
    fragmentation).  Allocation costs O(number of pieces); release O(depth),
    plus the siblings of each merge (every split block counts its free
    children); the EASY probe (:meth:`earliest_fit`) replays releases on an
    overlay of the forest, without copying it, in O(1) per block it frees.
    """

    claims = frozenset({"subtorus", "power_of_two"})
    topology: Torus

    def __init__(
        self,
        topology: Topology,
        *,
        scheme: str = "nep",
        identify: str = "smallest",
        convert: str = "collapse",
        nep_order: str = "exhaust-largest",
        prefer_dims: int = 3,
    ):
        super().__init__(topology)
        if scheme not in ("ep", "nep"):
            raise InvalidArgument("scheme", scheme, "'ep' or 'nep'")
        if identify not in IDENTIFY_POLICIES:
            raise InvalidArgument("identify", identify, f"one of {', '.join(IDENTIFY_POLICIES)}")
        if convert not in CONVERSIONS:
            raise InvalidArgument("convert", convert, f"one of {', '.join(CONVERSIONS)}")
        if nep_order not in NEP_ORDERS:
            raise InvalidArgument("nep_order", nep_order, f"one of {', '.join(NEP_ORDERS)}")
        self.name = scheme
        self.scheme = scheme
        self.identify = identify
        self.convert_mode = convert
        self.nep_order = nep_order
        if not isinstance(prefer_dims, int) or isinstance(prefer_dims, bool) or prefer_dims < 0:
            raise InvalidArgument("prefer_dims", prefer_dims, "a non-negative integer (0 = no preference)")
        self.prefer_dims = prefer_dims
        self._dims_ok: dict[tuple, bool] = {}
        self._blocks = 0
        self.roots = [self._new_block(st, None) for st in initial_available_set(self.topology)]
        self.max_order = max(b.st.order for b in self.roots)
        # the available set A, bucketed by order (log2 size): order -> {serial: block}
        self.free: list[dict[int, Block]] = [{} for _ in range(self.max_order + 1)]
        for b in self.roots:
            self.free[b.st.order][b.serial] = b
        # each grant's token is (its block, the free block identification took)
        # pure functions of a semitorus, memoised (shared by snapshots: they never change)
        self._partitions: Memo[tuple[Semitorus, int], tuple[list[Semitorus], int]] = Memo()  # (st, k) -> pieces, the one allocated
        self._box: Memo[Semitorus, np.ndarray] = Memo()  # semitorus -> its node ids
        self._conversions: Memo[Semitorus, Conversion] = Memo()  # semitorus -> its conversion
        self._tops: Memo[tuple[Semitorus, int], tuple[int, int, int, int]] = Memo()  # (st, k) -> see _top_orders
        #: identification's answers per (bucket order, request order, dims) for the current state
        self._first_memo: dict[tuple[int, int, int], tuple[Block, bool]] = {}
        self._largest: int | None = None  # the largest order of a free block, when known
        #: conservative backfilling's forest model, kept from plan to plan (its tables are pure functions)
        self._forest_model: _ForestModel | None = None

    def _forget(self) -> None:
        """The available set is about to change: drop what was remembered of it."""
        self._first_memo.clear()
        self._largest = None

    @classmethod
    def accepts(cls, topology: Topology) -> bool:
        """Tori and meshes of any dimension (e.g. torus:2x2x2x6x8)."""
        return isinstance(topology, Torus)

    def _new_block(self, st: Semitorus, parent: Block | None) -> Block:
        self._blocks += 1
        return Block(st, parent, self._blocks)

    def _nodes(self, b: Block) -> np.ndarray:
        nodes = self._box.get(b.st)
        if nodes is None:
            nodes = self._box[b.st] = self.topology.box_nodes(b.st.offset, b.st.sides)
            nodes.flags.writeable = False
        return nodes  # read-only and shared: the base copies it into the allocation

    # ------------------------------------------------------------- allocate
    @staticmethod
    def order_of(size: int) -> int:
        return (size - 1).bit_length()

    def _fits_empty(self, request: Request) -> bool:
        return self.order_of(request.size) <= self.max_order

    def _never_fits_why(self, request: Request) -> str:
        """The paper's rounding: the request becomes 2**k processors, past the largest subtorus the machine's
        semitori give (a side that is not a power of two leaves nodes no power-of-two subtorus can take)."""
        if request.size > self.n_nodes:
            return ""
        return (f": {self.name} rounds it up to {1 << self.order_of(request.size)} (a power of two), and the largest"
                f" subtorus it grants on {self.topology.spec()} has {1 << self.max_order} processors"
                " (on a torus whose sides are powers of two it grants the whole machine)")

    def fit_key(self, request: Request) -> int:
        """Requests of the same order (log2 of the rounded size) are placed alike."""
        return (request.size - 1).bit_length()

    def _job_dims_ok(self, st: Semitorus, k: int) -> bool:
        """Would a request of order ``k`` placed in free block ``st`` get a job torus of
        at least ``prefer_dims`` dimensions (sides > 1, after partition and conversion)?"""
        key = (st.sides, st.wrapped, k)  # the job's torus does not depend on where the block is
        ok = self._dims_ok.get(key)
        if ok is None:
            piece = st if st.order == k else (lambda ps: ps[0][ps[1]])(self._partition(st, k))
            shape = self._conversion(piece).shape
            ok = self._dims_ok[key] = sum(1 for x in shape if x > 1) >= self.prefer_dims
        return ok

    def _identify(self, k: int) -> Block | None:
        """Semitorus identification (§2.3, see :data:`IDENTIFY_POLICIES`).

        §2.1: "a reasonable effort will be made to allocate such a subtorus with
        a dimension no less than three".  With ``prefer_dims = d`` (default 3)
        and a request of at least 2^d nodes, ``smallest`` takes, among the free
        semitori of the smallest sufficient order, one whose job torus has at
        least d dimensions (size first, so the preference never costs
        fragmentation); ``first`` takes the first by address among those that
        give d dimensions, else the first by address.  Ties: the lowest first
        node.  ``prefer_dims = 0`` turns the preference off.
        """
        free = self.free
        dims = self.prefer_dims if k >= self.prefer_dims else 0
        if self.identify == "smallest":
            for j in range(k, self.max_order + 1):
                bucket = free[j]
                if bucket:
                    return self._first_in_memo(j, k, dims)[0]
            return None
        found = []
        for j in range(k, self.max_order + 1):
            bucket = free[j]
            if bucket:
                b, good = self._first_in_memo(j, k, dims)
                found.append(((not good, b.st.offset[::-1]), b))
        return min(found, key=lambda f: f[0])[1] if found else None

    def _first_in_memo(self, j: int, k: int, dims: int) -> tuple[Block, bool]:
        """:meth:`_first_in` of the bucket of order ``j``, remembered until the available set changes."""
        key = (j, k, dims)
        got = self._first_memo.get(key)
        if got is None:
            got = self._first_memo[key] = self._first_in(self.free[j], k, dims)
        return got

    def _first_in(self, bucket: dict[int, Block], k: int, dims: int) -> tuple[Block, bool]:
        """The block of ``bucket`` with the lowest first node, among those giving the job
        ``dims`` dimensions if any does; and whether it does."""
        b = min(bucket.values(), key=_ADDRESS)
        if not dims:
            return b, True
        ok = self._job_dims_ok
        if ok(b.st, k):
            return b, True
        # the lowest one does not: look at the other shapes present (few), not at every block
        bad = {(b.st.sides, b.st.wrapped)}
        best = None
        for c in bucket.values():
            st = c.st
            shape = (st.sides, st.wrapped)
            if shape in bad:
                continue
            if ok(st, k):
                if best is None or st.offset[::-1] < best.st.offset[::-1]:
                    best = c
            else:
                bad.add(shape)
        return (b, False) if best is None else (best, True)

    def _allocate(self, request: Request) -> Grant | None:
        k = self.order_of(request.size)
        s = self._identify(k)
        if s is None:
            return None
        self._forget()
        del self.free[s.st.order][s.serial]
        if s.parent is not None:
            s.parent.nfree -= 1
        r = s
        if s.st.order > k:
            pieces, at = self._partition(s.st, k)
            s.state = Block.SPLIT
            s.children = children = [self._new_block(st, s) for st in pieces]
            for i, child in enumerate(children):
                if i != at:
                    self.free[child.st.order][child.serial] = child
            s.nfree = len(children) - 1
            s.m1, s.m2, _, s.mlow = self._top_orders(s.st, k)
            r = children[at]
        r.state = Block.ALLOCATED
        info = {"semitorus": r.st, "requested": request.size, "rounded": 1 << k, "conversion": self._conversion(r.st)}
        return Grant(self._nodes(r), info, token=(r, s))

    def _partition(self, st: Semitorus, k: int) -> tuple[list[Semitorus], int]:
        key = (st, k)
        cached = self._partitions.get(key)
        if cached is None:
            cached = self._partitions[key] = partition(st, k, self.scheme, self.nep_order)
        return cached

    def _top_orders(self, st: Semitorus, k: int) -> tuple[int, int, int, int]:
        """Orders in the partition of ``st`` for order ``k``: the largest and second largest of
        all pieces, the largest of the pieces other than the one allocated (-1: none), the smallest."""
        key = (st, k)
        got = self._tops.get(key)
        if got is None:
            pieces, at = self._partition(st, k)
            orders = sorted((p.order for p in pieces), reverse=True)
            others = max((p.order for i, p in enumerate(pieces) if i != at), default=-1)
            got = self._tops[key] = (orders[0], orders[1] if len(orders) > 1 else -1, others, orders[-1])
        return got

    def _conversion(self, st: Semitorus) -> Conversion:
        conv = self._conversions.get(st)
        if conv is None:
            conv = self._conversions[st] = convert(st, self.topology, self.convert_mode)
        return conv

    # -------------------------------------------------------------- release
    def _release(self, allocation: Allocation, token: Any) -> None:
        b = token[0]
        self._forget()
        b.state = Block.FREE
        self.free[b.st.order][b.serial] = b
        if b.parent is not None:
            b.parent.nfree += 1
        self._merge_up(b)

    def _merge_up(self, b: Block) -> None:
        p = b.parent
        while p is not None and p.children is not None and p.nfree == len(p.children):  # every child a free leaf
            for c in p.children:
                del self.free[c.st.order][c.serial]
            p.children = None
            p.nfree = 0
            p.state = Block.FREE
            self.free[p.st.order][p.serial] = p
            if p.parent is not None:
                p.parent.nfree += 1
            p = p.parent

    # --------------------------------------------------------------- probes
    def can_allocate(self, request: Request) -> bool:
        k = self.order_of(request.size)
        return request.size <= self._free_count and any(self.free[j] for j in range(k, self.max_order + 1))

    def max_request_now(self) -> int:
        j = self._largest_free_order()
        return 1 << j if j >= 0 else 0

    def _largest_free_order(self) -> int:
        got = self._largest
        if got is None:  # (remembered until the available set changes)
            got = -1
            for j in range(self.max_order, -1, -1):
                if self.free[j]:
                    got = j
                    break
            self._largest = got
        return got

    def earliest_fit(self, request: Request, releases: Iterable[Allocation]) -> int | None:
        """Exact, without copying: replay the releases on an overlay of the forest."""
        k = self.order_of(request.size)
        if self._largest_free_order() >= k:
            return 0
        tokens = self._tokens
        extra: dict[int, int] = {}  # per split block: children not free now but free in the overlay
        for n, alloc in enumerate(releases, 1):
            if _overlay_release(tokens[alloc.serial][0], extra)[-1].st.order >= k:
                return n
        return None

    def reservation_guard(self, head: Request, releases: Iterable[Allocation]) -> ReservationGuard:
        return _ProbeGuard(self, head, releases)

    def future_plan(self, now: float, releases: list[tuple[float, Allocation]], request: Callable[[int], Request],
                    priority: Callable[[int], int]) -> Any:
        """Conservative backfilling's plan replayed on immutable forests (:class:`_ForestModel`), not on
        snapshots: :class:`~topoalloc.sched.plan.StatePlan`, ReplayPlan's answers."""
        from ...sched.plan import StatePlan

        model = self._forest_model
        if model is None or len(model._nodes) > _FOREST_MODEL_NODES:
            model = self._forest_model = _ForestModel(self)
        else:
            model.renew()
        return StatePlan(now, model, releases, request, priority)

    def _copy_state(self, clone: Self) -> None:
        """The forest's blocks are cloned; partitions, boxes and conversions (immutable) are shared."""
        mapping: dict[int, Block] = {}

        def dup(b: Block, parent: Block | None) -> Block:
            nb = Block.__new__(Block)
            nb.st, nb.parent, nb.state, nb.serial, nb.nfree, nb.m1, nb.m2, nb.mlow = b.st, parent, b.state, b.serial, b.nfree, b.m1, b.m2, b.mlow
            nb.children = None if b.children is None else [dup(c, nb) for c in b.children]
            mapping[b.serial] = nb
            return nb

        clone.roots = [dup(r, None) for r in self.roots]
        clone._forest_model = None
        clone._first_memo = {}
        clone._largest = None
        clone.free = [{k: mapping[k] for k in bucket} for bucket in self.free]
        # a grant's top block stays split while the grant is held, so it is in the forest
        clone._tokens = {k: (mapping[b.serial], mapping[top.serial]) for k, (b, top) in self._tokens.items()}

    def process_order(self, allocation: Allocation) -> np.ndarray:
        """The job's virtual torus in row-major order (first dimension fastest): process ``i`` on ``embedding[i]``."""
        return np.asarray(allocation.info["conversion"].embedding, dtype=np.int64)

    def available(self) -> list[Semitorus]:
        """The available set A: every free semitorus, largest first."""
        out = []
        for j in range(self.max_order, -1, -1):
            out.extend(sorted((b.st for b in self.free[j].values()), key=lambda st: st.offset[::-1]))
        return out


#: a forest model interning more nodes than this is dropped for a new one (a node costs a few hundred bytes
#: with its share of the memo tables)
_FOREST_MODEL_NODES = 50_000


class _ForestModel:
    """The forest as an immutable value, for the conservative plan (:class:`~topoalloc.sched.plan.StateModel`).

    A block is a node ``(semitorus, state, children)``, interned: equal subtrees get one id, so a forest
    (the tuple of its roots' ids) is compared and hashed in O(roots), and a state the plan meets again
    is recognised.  ``place`` and ``release`` are the allocator's :meth:`~PartitionAllocator._allocate` and
    :meth:`~PartitionAllocator._release` as pure functions of the forest, built by path copying:

    * identification (:meth:`~PartitionAllocator._identify`) takes, among the free leaves of order at
      least ``k``, the least of (order, not giving ``prefer_dims`` dimensions, first node) under
      ``smallest``, of (not giving them, first node) under ``first`` (the same choice as its buckets:
      the lowest first node of the first bucket that has one, the preferred shapes first);
      :meth:`_best` keeps that least leaf per subtree and order;
    * the leaf taken is split by the allocator's own partition (shared memo), the piece allocated;
    * a release frees the leaf and, on the way back up, turns every split block all of whose
      children are free leaves into a free leaf (the allocator's ``_merge_up``).

    A grant's token is its semitorus: a forest's leaves are disjoint, so it names one leaf.  Its tables
    are pure functions of the forests they name, so one model serves plan after plan (:meth:`renew` takes
    the allocator's forest of the moment); the allocator starts a new one past
    :data:`_FOREST_MODEL_NODES` interned nodes, which bounds their memory.
    """

    def __init__(self, allocator: PartitionAllocator):
        a = self.allocator = allocator
        self._numbering: Numbering[tuple[Semitorus, int, tuple[int, ...]]] = Numbering()
        self._nodes = self._numbering.values
        self._best_memo: dict[tuple[int, int], tuple | None] = {}
        self._take_memo: dict[tuple[int, Semitorus, int], int] = {}
        self._free_memo: dict[tuple[int, Semitorus], int] = {}
        #: the releases' memo, {(state, token): next state}, which StatePlan's compiled loops read before they call
        #: :meth:`release`
        self.release_memo: dict[tuple[tuple[int, ...], Semitorus], tuple[int, ...]] = {}
        self.renew()

    def renew(self) -> None:
        """The allocator's forest now, and its free count, for the next plan."""
        a = self.allocator
        self.state = tuple(self._intern_block(b) for b in a.roots)
        self.free_count = a._free_count

    def _intern(self, st: Semitorus, kind: int, kids: tuple[int, ...]) -> int:
        return self._numbering.number((st, kind, kids))

    def _intern_block(self, b: Block) -> int:
        kids = tuple(self._intern_block(c) for c in b.children) if b.children is not None else ()
        return self._intern(b.st, b.state, kids)

    def frame(self, request: Request) -> int:
        return self.allocator.order_of(request.size)

    def cells(self, request: Request) -> int:
        return 1 << self.allocator.order_of(request.size)

    def token_of(self, allocation: Allocation) -> Semitorus:
        return self.allocator.token_of(allocation)[0].st

    def cells_of(self, allocation: Allocation) -> int:
        return allocation.size

    def _best(self, node: int, k: int) -> tuple | None:
        """The free leaf under ``node`` identification prefers for order ``k``: ``(key, semitorus)``, or None."""
        mk = (node, k)
        if mk in self._best_memo:
            return self._best_memo[mk]
        st, kind, kids = self._nodes[node]
        out = None
        if kind == Block.FREE:
            if st.order >= k:
                a = self.allocator
                dims = a.prefer_dims if k >= a.prefer_dims else 0
                bad = bool(dims) and not a._job_dims_ok(st, k)
                out = ((st.order, bad, st.offset[::-1]) if a.identify == "smallest" else (bad, st.offset[::-1]), st)
        elif kind == Block.SPLIT and st.order > k:  # (its pieces are smaller than it)
            for c in kids:
                got = self._best(c, k)
                if got is not None and (out is None or got[0] < out[0]):
                    out = got
        self._best_memo[mk] = out
        return out

    @staticmethod
    def _holds(st: Semitorus, inner: Semitorus) -> bool:
        """Whether ``st`` holds ``inner`` (boxes of a forest are nested or disjoint: its first node decides)."""
        for o, s, p in zip(st.offset, st.sides, inner.offset):
            if p < o or p >= o + s:
                return False
        return True

    def _take(self, node: int, target: Semitorus, k: int) -> int:
        """``node`` with the free leaf ``target`` allocated for order ``k`` (split first if larger)."""
        mk = (node, target, k)
        got = self._take_memo.get(mk)
        if got is not None:
            return got
        st, kind, kids = self._nodes[node]
        if st == target:
            if st.order > k:
                pieces, at = self.allocator._partition(st, k)
                got = self._intern(st, Block.SPLIT, tuple(self._intern(p, Block.ALLOCATED if i == at else Block.FREE, ()) for i, p in enumerate(pieces)))
            else:
                got = self._intern(st, Block.ALLOCATED, ())
        else:
            got = self._intern(st, kind, tuple(self._take(c, target, k) if self._holds(self._nodes[c][0], target) else c for c in kids))
        self._take_memo[mk] = got
        return got

    def place(self, state: tuple[int, ...], request: Request) -> tuple[Semitorus, tuple[int, ...]] | None:
        k = self.allocator.order_of(request.size)
        best = None
        for root in state:
            got = self._best(root, k)
            if got is not None and (best is None or got[0] < best[0]):
                best = got
        if best is None:
            return None
        target = token = best[1]
        if target.order > k:
            pieces, at = self.allocator._partition(target, k)
            token = pieces[at]
        return token, tuple(self._take(r, target, k) if self._holds(self._nodes[r][0], target) else r for r in state)

    def _free(self, node: int, leaf: Semitorus) -> int:
        """``node`` with the allocated leaf ``leaf`` freed, merged upwards where every sibling is a free leaf."""
        mk = (node, leaf)
        got = self._free_memo.get(mk)
        if got is not None:
            return got
        st, kind, kids = self._nodes[node]
        if st == leaf:
            got = self._intern(st, Block.FREE, ())
        else:
            new = tuple(self._free(c, leaf) if self._holds(self._nodes[c][0], leaf) else c for c in kids)
            nodes = self._nodes
            if all(nodes[c][1] == Block.FREE for c in new):
                got = self._intern(st, Block.FREE, ())
            else:
                got = self._intern(st, kind, new)
        self._free_memo[mk] = got
        return got

    def release(self, state: tuple[int, ...], token: Semitorus) -> tuple[int, ...]:
        key = (state, token)
        got = self.release_memo.get(key)
        if got is None:
            got = self.release_memo[key] = tuple(self._free(r, token) if self._holds(self._nodes[r][0], token) else r for r in state)
        return got


def _overlay_release(b: Block, extra: dict[int, int]) -> list[Block]:
    """Release leaf ``b`` on an overlay of the forest: the blocks it makes free, ``b`` first, then the
    parents all of whose children are now free (``extra`` counts, per split block, the children the
    overlay has made free, beside the ``nfree`` the allocator keeps; each block is made free once)."""
    made = [b]
    p = b.parent
    while p is not None:
        e = extra[p.serial] = extra.get(p.serial, 0) + 1
        if p.nfree + e < len(p.children or ()):
            break
        made.append(p)
        p = p.parent
    return made


class _ProbeGuard(ReservationGuard):
    """EASY's guard for subtorus allocators: does the head still fit at the shadow time?

    At creation the releases expected by the shadow time are replayed once on an
    overlay of the forest, giving the *shadow state*: which blocks not free now
    will be free then (``freed``, merges included) and how many maximal free
    blocks of each order there will be.  A candidate is then judged in O(depth):

    * if it ends by the shadow time it is admitted without a probe: its block
      came from a block ``top`` that is free now and stays free until then, and
      its release merges ``top`` back exactly as it was, so the shadow state —
      where the head fits, by the guard's invariant — is unchanged;
    * otherwise ``top`` stays split at the shadow time: the maximal free block
      ``F`` that contained ``top`` is lost, and in its place the siblings along
      the path from ``top`` up to ``F`` and the other pieces of ``top`` are free.
      The head fits iff some free block of the result has its order.

    Both cases update the shadow state for the next candidate.  Hypothesis checks
    the whole against the general answer (replaying on snapshots).
    """

    allocator: "PartitionAllocator"

    def __init__(self, allocator: "PartitionAllocator", head: Request, releases: Iterable[Allocation]):
        super().__init__(allocator, head, releases)
        self.k = allocator.order_of(head.size)
        tokens = allocator._tokens
        extra: dict[int, int] = {}  # as in earliest_fit: children made free by the releases, per split block
        made: list[Block] = []  # blocks not free now that are free at the shadow time
        for alloc in self.releases:
            made += _overlay_release(tokens[alloc.serial][0], extra)
        freed = self.freed = {b.serial for b in made}

        def shadow_free(c: Block) -> bool:
            # free at the shadow time, on its own or as part of a merged parent
            return c.serial in freed or c.state == Block.FREE

        self.shadow_free = shadow_free
        # orders of the maximal shadow-free blocks: the free blocks, less those inside a block made
        # free (its free children), plus the blocks made free whose parent is not (a block with
        # children is split, so it is shadow-free only through ``freed``)
        count = self.count = [len(blocks) for blocks in allocator.free]
        for b in made:
            if b.nfree:  # (a split block: a leaf has none)
                if b.m1 == b.mlow:  # its children all have one order (EP)
                    count[b.m1] -= b.nfree
                else:
                    for c in b.children or ():
                        if c.state == Block.FREE:
                            count[c.st.order] -= 1
            p = b.parent
            if p is None or p.serial not in freed:
                count[b.st.order] += 1

    def admit(self, allocation: Allocation, ends_by_shadow: bool) -> bool:
        b, top = self.allocator.token_of(allocation)
        if ends_by_shadow:
            # at the shadow time the block is released and top re-forms: record that in the overlay
            self.freed.add(b.serial)
            if top is not b:
                self.freed.add(top.serial)
            self.releases.append(allocation)
            return True
        if not self._judge(top, (top.m2 if b.st.order == top.m1 else top.m1) if top is not b else -1):
            return False
        path, gained = self._change(top, [c.st.order for c in top.children if c is not b] if top is not b else [])
        # commit: the path is no longer free at the shadow time, the gained pieces are maximal
        self.count[path[-1].st.order] -= 1
        for g in gained:
            self.count[g] += 1
        for x in path:
            self.freed.discard(x.serial)
        return True

    def may_admit(self, request: Request, ends_by_shadow: bool) -> bool:
        """The same judgement before allocating (no allocate/release churn for refused candidates)."""
        if ends_by_shadow:
            return True
        a = self.allocator
        k = a.order_of(request.size)
        top = a._identify(k)
        if top is None:
            return False
        return self._judge(top, a._top_orders(top.st, k)[2] if top.st.order > k else -1)

    def _judge(self, top: Block, best: int) -> bool:
        """Does the head still fit at the shadow time if ``top`` stays split until then, leaving free
        pieces of at most order ``best`` inside it?  The maximal shadow-free block F holding ``top`` is
        lost; the siblings along the path from ``top`` up to F become maximal instead: only the largest
        order among all those pieces matters, or else another maximal block of the head's order."""
        head = self.k
        freed = self.freed
        F = top
        p = F.parent
        while p is not None and p.serial in freed:  # (a parent is split: shadow-free only through freed)
            if best < head:
                o = p.m2 if F.st.order == p.m1 else p.m1  # the largest sibling of F
                if o > best:
                    best = o
            F = p
            p = F.parent
        if best >= head:
            return True
        count = self.count
        f = F.st.order
        return any(count[j] - (j == f) > 0 for j in range(head, len(count)))

    def _change(self, top: Block, pieces: list[int]) -> tuple[list[Block], list[int]]:
        """If ``top`` stays split until the shadow time: the lost path (ending at the maximal
        shadow-free block F) and the orders of the blocks that become maximal instead."""
        path = [top]
        while path[-1].parent is not None and self.shadow_free(path[-1].parent):
            path.append(path[-1].parent)
        gained = list(pieces)
        for x, parent in zip(path, path[1:]):
            gained.extend(c.st.order for c in parent.children or () if c is not x)
        return path, gained


def _factory(scheme: str) -> Callable[..., PartitionAllocator]:
    def make(topology: Topology, identify: str = "smallest", convert: str = "collapse", nep_order: str = "exhaust-largest", prefer_dims: int = 3) -> PartitionAllocator:
        return PartitionAllocator(topology, scheme=scheme, identify=identify, convert=convert, nep_order=nep_order, prefer_dims=prefer_dims)

    make.__doc__ = (
        f"{'Equal' if scheme == 'ep' else 'Non-Equal'} Partition subtorus allocation on tori "
        "(identify=smallest|first, convert=collapse|pair, nep_order=exhaust-largest|balanced, prefer_dims=3)"
    )
    return make


ALLOCATORS.register("ep", accepts=PartitionAllocator.accepts)(_factory("ep"))
ALLOCATORS.register("nep", accepts=PartitionAllocator.accepts)(_factory("nep"))
