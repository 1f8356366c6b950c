"""Buddy systems of aligned power-of-two squares: the 2-D Buddy (Li & Cheng 1991) and MBS (Lo et al. 1997).

A :class:`BuddySystem` keeps, per level ``k`` (side ``2^k``), the free blocks
that are not part of a larger free block (the free lists), each sorted by
address (the node id of its lower-left cell).  A block of level ``k`` is taken
from its list if one is there, else the smallest larger free block is split
into four buddies repeatedly (keeping the lower-left one) down to level ``k``;
a released block merges with its three buddies as long as all are free and the
merged block stays inside its root.  The lowest address wins every choice, so
the free lists are a function of which cells are busy: two allocators with
the same busy cells decide alike, whatever their histories.

Roots (:func:`square_roots`)
----------------------------
Lo et al. divide the mesh into non-overlapping squares whose sides are powers
of two; here, per layer, each side is cut by its binary digits (20 = 16 + 4),
every piece-by-piece rectangle ``2^a × 2^b`` into squares of side
``2^min(a, b)``.  Each square is aligned to its side, and 20 × 20 gives one
16 × 16 and nine 4 × 4 blocks.  The 2-D Buddy needs
square layers whose side is a power of two: one root per layer.
"""

from __future__ import annotations

from bisect import bisect_left, insort
from collections.abc import Hashable
from typing import Any, ClassVar, Self

import numpy as np

from ...errors import InternalError
from ...registry import ALLOCATORS
from ...topology.base import Topology
from ..base import Allocation, Grant, Request
from ..probes import CountingProbes
from .core import FreeSetProbes, MeshAllocator
from .geometry import Blocks, Layers, Rect, accepts_grid

__all__ = ["BuddySystem", "square_roots", "Buddy2D", "MBS", "base4_digits"]


def _binary_pieces(n: int) -> list[tuple[int, int]]:
    """``(offset, exponent)`` of the binary digits of ``n``, largest first (20 → (0, 4), (16, 2))."""
    out, off = [], 0
    for e in range(n.bit_length() - 1, -1, -1):
        if n >> e & 1:
            out.append((off, e))
            off += 1 << e
    return out


def square_roots(g: Layers) -> list[tuple[int, int, int]]:
    """The initial blocks ``(level, x, r)`` of every layer (see the module notes), in address order.

    >>> sorted({k for k, _, _ in square_roots(Layers((20, 20)))}), len(square_roots(Layers((20, 20))))
    ([2, 4], 10)
    """
    out = []
    for z in range(g.Z):
        for yo, b in _binary_pieces(g.Y):
            for xo, a in _binary_pieces(g.X):
                k = min(a, b)
                s = 1 << k
                for dy in range(0, 1 << b, s):
                    for dx in range(0, 1 << a, s):
                        out.append((k, xo + dx, z * g.Y + yo + dy))
    out.sort(key=lambda t: t[1] + g.X * t[2])
    return out


class BuddySystem:
    """Free lists of aligned power-of-two squares inside fixed roots (see the module notes).

    Examples
    --------
    >>> b = BuddySystem(Layers((4, 4)), [(2, 0, 0)])
    >>> b.take(0), b.take(1), b.free_blocks()
    ((0, 0), (2, 0), [(0, 1, 0), (0, 0, 1), (0, 1, 1), (1, 0, 2), (1, 2, 2)])
    >>> b.give(0, 0, 0); b.give(1, 2, 0); b.free_blocks()
    [(2, 0, 0)]
    """

    __slots__ = ("g", "K", "free", "_root_level", "zorder", "zpos")
    K: int
    free: list[list[int]]
    _root_level: np.ndarray
    zorder: np.ndarray
    zpos: np.ndarray

    def __init__(self, g: Layers, roots: list[tuple[int, int, int]], _copy: "BuddySystem | None" = None):
        self.g = g
        if _copy is not None:
            self.K = _copy.K
            self.free = [list(lst) for lst in _copy.free]
            self._root_level = _copy._root_level
            self.zorder, self.zpos = _copy.zorder, _copy.zpos
            return
        self.K = max(k for k, _, _ in roots)
        self.free = [[] for _ in range(self.K + 1)]
        level = np.zeros(g.n, dtype=np.int8)
        zorder = []
        for k, x, r in roots:
            s = 1 << k
            level[g.rect_nodes((x, r, s, s))] = k
            insort(self.free[k], x + g.X * r)
            i = np.arange(s * s, dtype=np.int64)
            dx = sum(((i >> (2 * b)) & 1) << b for b in range(k)) if k else i * 0
            dy = sum(((i >> (2 * b + 1)) & 1) << b for b in range(k)) if k else i * 0
            zorder.append((x + dx) + g.X * (r + dy))
        level.flags.writeable = False
        self._root_level = level  # the level of the root holding each node (shared by copies)
        # every root's nodes in Morton (Z) order: an aligned block is one contiguous slice
        self.zorder = np.concatenate(zorder)
        self.zpos = np.empty(g.n, dtype=np.int64)
        self.zpos[self.zorder] = np.arange(g.n)
        self.zorder.flags.writeable = False
        self.zpos.flags.writeable = False

    def block_nodes(self, k: int, x: int, r: int) -> np.ndarray:
        """The nodes of block ``(k, x, r)`` (in Morton order: a read-only view)."""
        p = int(self.zpos[x + self.g.X * r])
        return self.zorder[p : p + (1 << (2 * k))]

    def copy(self) -> "BuddySystem":
        return BuddySystem(self.g, [], _copy=self)

    def largest(self) -> int:
        """The highest level with a free block (-1 if none)."""
        for k in range(self.K, -1, -1):
            if self.free[k]:
                return k
        return -1

    def available(self, k: int) -> bool:
        """Whether a block of level ``k`` can be taken (one of level >= k is free)."""
        return any(self.free[j] for j in range(k, self.K + 1))

    def take(self, k: int) -> tuple[int, int] | None:
        """Take a block of level ``k`` (splitting a larger one if needed); its ``(x, r)``, or None."""
        free = self.free
        j = k
        while j <= self.K and not free[j]:
            j += 1
        if j > self.K:
            return None
        X = self.g.X
        key = free[j].pop(0)
        r, x = divmod(key, X)
        while j > k:
            j -= 1
            h = 1 << j
            lst = free[j]
            insort(lst, key + h)
            insort(lst, key + h * X)
            insort(lst, key + h + h * X)
        return x, r

    def give(self, k: int, x: int, r: int) -> None:
        """Return the block ``(k, x, r)`` and merge it with its buddies while they are free."""
        g = self.g
        X, Y = g.X, g.Y
        free = self.free
        top = int(self._root_level[x + X * r])
        while k < top:
            h = 1 << k
            px = x - (x % (2 * h))
            pr = r - ((r % Y) % (2 * h))
            keys = (px + X * pr, px + h + X * pr, px + X * (pr + h), px + h + X * (pr + h))
            me = x + X * r
            lst = free[k]
            idx = []
            for key in keys:
                if key == me:
                    continue
                i = bisect_left(lst, key)
                if i == len(lst) or lst[i] != key:
                    break
                idx.append(key)
            else:
                for key in idx:
                    del lst[bisect_left(lst, key)]
                k, x, r = k + 1, px, pr
                continue
            break
        insort(free[k], x + X * r)

    def free_blocks(self) -> list[tuple[int, int, int]]:
        """Every free block ``(level, x, r)``, by level then address."""
        X = self.g.X
        return [(k, key % X, key // X) for k, lst in enumerate(self.free) for key in lst]


class Buddy2D(FreeSetProbes):
    """The 2-D Buddy System (Li & Cheng 1991): one aligned ``2^k × 2^k`` square per job.

    A ``W × L`` frame is rounded up to the square of side ``2^k ≥ max(W, L)``
    (``granted_size``); the waste ``4^k − W·L`` is internal fragmentation
    (``info["frame"]`` is the square, the simulation records the allocated
    size).  The machine's layers must be squares whose side is a power of two.

    The free lists are a function of the busy cells (see the module notes): a
    list of level ``j`` holds the aligned ``2^j`` squares that are wholly free
    and whose parent square is not.  So the block :meth:`BuddySystem.take`
    would give is also found from the free bit set alone
    (:meth:`_placement`: whole-free squares level by level with shifts and
    ANDs), and the schedulers' probes answer on free sets
    (:class:`~topoalloc.alloc.mesh2d.core.FreeSetProbes`), not on snapshots.
    A request fits iff some aligned square of its level is wholly free, which
    more free cells never undo (:attr:`fit_monotone`).

    Examples
    --------
    >>> from topoalloc.topology import parse_machine
    >>> a = Buddy2D(parse_machine("mesh:8x8"))
    >>> x = a.allocate(Request(6, (3, 2)))
    >>> x.size, x.info["blocks"][0], a.allocate(Request(1)).info["blocks"][0]
    (16, (0, 0, 4, 4), (4, 0, 1, 1))
    """

    name = "buddy_2d"
    claims: ClassVar[frozenset[str]] = frozenset({"blocks", "rounded_size", "contiguous", "aligned_squares"})

    def __init__(self, topology: Topology, *, shape_rule: str = "square"):
        super().__init__(topology, shape_rule=shape_rule)
        g = self.geom
        self.buddies = BuddySystem(g, [(g.X.bit_length() - 1, 0, z * g.Y) for z in range(g.Z)])
        # the free-mask bits of the lower-left cells of the aligned squares of each level (shared by copies)
        self._corners = [sum(g.lattice(z, 0, z * g.Y, 1 << j, 1 << j) for z in range(g.Z)) for j in range(self.buddies.K + 1)]

    @classmethod
    def accepts(cls, topology: Topology) -> bool:
        """Meshes and tori of two or more dimensions whose first two sides are one power of two."""
        if not accepts_grid(topology):
            return False
        x, y = topology.dims[:2]  # type: ignore[attr-defined]
        return bool(x == y and x & (x - 1) == 0)

    def level_of(self, request: Request) -> int:
        """The level ``k`` of the square a request gets (``2^k ≥`` its longer side)."""
        w, l = MeshAllocator.frame_for(self, request)
        return (max(w, l) - 1).bit_length()

    def frame_for(self, request: Request) -> tuple[int, int]:
        s = 1 << self.level_of(request)
        return s, s

    def _allocate(self, request: Request) -> Grant | None:
        k = self.level_of(request)
        got = self.buddies.take(k)
        if got is None:
            return None
        s = 1 << k
        rect = (got[0], got[1], s, s)
        self._take((rect,))
        return self._grant((rect,), {"frame": (s, s)})

    def _release(self, allocation: Allocation, token: Any) -> None:
        x, r, s, _ = token[0]
        self.buddies.give(s.bit_length() - 1, x, r)
        self._give(token)

    def _copy_state(self, clone: Self) -> None:
        clone.buddies = self.buddies.copy()

    fit_monotone: ClassVar[bool] = True

    def _placement(self, request: Request) -> tuple[Rect, ...] | None:
        """The square :meth:`BuddySystem.take` gives, found from the free set (no list is read or changed).

        ``whole[j]`` has the corner bit of every wholly free aligned square of level ``j`` (a level-``j+1``
        square is whole iff its four quarters are); a square is on its level's free list iff it is whole and
        its parent is not (or it is a root).  ``take(k)`` pops the lowest address of the lowest level
        ``j ≥ k`` with a list entry and keeps the lower-left quarter down to ``k``: the same corner.
        """
        k = self.level_of(request)
        K = self.buddies.K
        if k > K:
            return None
        S = self.geom.S
        corners = self._corners
        whole = [self._free]
        for j in range(K):
            a, h = whole[j], 1 << j
            a = a & (a >> h) & (a >> (h * S)) & (a >> (h + h * S)) & corners[j + 1]
            if not a:
                break  # no whole square of this level, nor above: the lists above are empty
            whole.append(a)
        if len(whole) <= k or not whole[k]:
            return None
        top = len(whole) - 1
        for j in range(k, top + 1):
            listed = whole[j]
            if j < top:
                p, h = whole[j + 1], 1 << j
                listed &= ~(p | (p << h) | (p << (h * S)) | (p << (h + h * S)))
            if listed:
                bit = (listed & -listed).bit_length() - 1
                node = int(self.geom.node_of_bit[bit])
                s = 1 << k
                return ((node % self.geom.X, node // self.geom.X, s, s),)
        raise InternalError(f"buddy_2d: a whole square of level {k} but no free-list entry at level {k} or above")

    def _fits_empty(self, request: Request) -> bool:
        return self.level_of(request) <= self.buddies.K

    def can_allocate(self, request: Request) -> bool:
        return request.size <= self._free_count and self.buddies.available(self.level_of(request))

    def fit_key(self, request: Request) -> Hashable:
        return self.level_of(request)

    def max_request_now(self) -> int:
        k = self.buddies.largest()
        return 0 if k < 0 else 1 << (2 * k)


def base4_digits(p: int) -> list[int]:
    """Base-4 digits of ``p``, least significant first (MBS's factorisation of a request).

    >>> base4_digits(300)     # 300 = 1·256 + 0·64 + 2·16 + 3·4 + 0
    [0, 3, 2, 0, 1]
    """
    out = []
    while p:
        p, d = divmod(p, 4)
        out.append(d)
    return out


class MBS(CountingProbes, MeshAllocator):
    """The Multiple Buddy System (Lo, Windisch, Liu & Nitzberg 1997).

    A request for ``p`` processors is written in base 4, ``p = Σ d_k 4^k``;
    from the largest ``k`` down, ``d_k`` blocks of side ``2^k`` are taken
    (splitting a larger free block if none of that size is free).  When not
    even a larger block is free, each missing block becomes four requests of
    the next smaller size.  Every free processor lies in some free block, so a
    request fits exactly when enough processors are free: MBS is a counting
    allocator (its probes are arithmetic).  The shape is ignored.

    Examples
    --------
    >>> from topoalloc.topology import parse_machine
    >>> a = MBS(parse_machine("mesh:20x20"))
    >>> [b[2] for b in a.allocate(Request(300)).info["blocks"]]    # 300 = 256 + 2·16 + 3·4
    [16, 4, 4, 2, 2, 2]
    """

    name = "mbs"
    claims: ClassVar[frozenset[str]] = frozenset({"blocks", "rounded_size", "exact_size", "aligned_squares"})

    def __init__(self, topology: Topology):
        super().__init__(topology)
        self.buddies = BuddySystem(self.geom, square_roots(self.geom))
        self._block_nodes: dict[int, np.ndarray] = {}  # (address << 6 | level) -> the block's nodes (shared by snapshots)

    def granted_size(self, request: Request) -> int:
        return request.size

    def _allocate(self, request: Request) -> Grant | None:
        bs = self.buddies
        K = bs.K
        p = request.size
        take = bs.take
        taken: list[tuple[int, int, int]] = []
        carry = 0
        for k in range(K, -1, -1):
            # digit k of p in base 4 (digits above the largest root's level fold into it), plus what
            # a larger level could not take, broken into four blocks of this size each
            n = (p >> (2 * k) if k == K else (p >> (2 * k)) & 3) + carry
            carry = 0
            while n:
                got = take(k)
                if got is None:
                    if k == 0:  # every free processor lies in a free block: cannot happen when size <= free
                        raise InternalError(f"mbs: no free processor left for a request of {p} with {self._free_count} free")
                    carry = 4 * n
                    break
                taken.append((k, got[0], got[1]))
                n -= 1
        X = self.geom.X
        memo = self._block_nodes
        parts = []
        for k, x, r in taken:
            key = (x + X * r) << 6 | k
            part = memo.get(key)
            if part is None:
                part = memo[key] = bs.block_nodes(k, x, r)  # a read-only view; blocks are fixed by the roots
            parts.append(part)
        # unsorted (Morton order within each block): the base class sorts the grant it checks anyway
        nodes = parts[0] if len(parts) == 1 else np.concatenate(parts)
        return Grant(nodes, {"blocks": Blocks(tuple([(x, r, 1 << k, 1 << k) for k, x, r in taken]))}, taken)

    def _release(self, allocation: Allocation, token: Any) -> None:
        give = self.buddies.give
        for k, x, r in token:
            give(k, x, r)

    def _copy_state(self, clone: Self) -> None:
        clone.buddies = self.buddies.copy()


@ALLOCATORS.register("buddy_2d", accepts=Buddy2D.accepts)
def make_buddy_2d(topology: Topology, shape_rule: str = "square") -> Buddy2D:
    """2-D Buddy (Li & Cheng) on square power-of-two meshes: one aligned 2^k square, requests rounded up."""
    return Buddy2D(topology, shape_rule=shape_rule)


@ALLOCATORS.register("mbs", accepts=accepts_grid)
def make_mbs(topology: Topology) -> MBS:
    """Multiple Buddy System (Lo et al.) on 2-D meshes: base-4 digits of the size as aligned squares."""
    return MBS(topology)
