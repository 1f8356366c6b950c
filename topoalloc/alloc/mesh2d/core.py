"""The common base of the 2-D mesh allocators and the contiguous submesh searches they share.

Every allocator of this package keeps which cells are free as one bit set
(:mod:`~topoalloc.alloc.mesh2d.geometry`), records the rectangles it granted
as ``Allocation.info["blocks"]`` (a :class:`~topoalloc.alloc.mesh2d.geometry.Blocks`)
and gives them back on release.  The searches — First Fit, Best Fit, Frame
Sliding — are methods here, so the request-partitioning allocators (ANCA,
PALD) use the same code for each sub-frame.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import Any, ClassVar, Self, TypeVar

import numpy as np

from ...errors import InternalError, InvalidArgument
from ...topology.base import Topology
from ..base import Allocation, Allocator, Grant, Memo, Request
from ..probes import ReservationGuard
from .geometry import SHAPE_RULES, Blocks, Layers, Rect, _runs, accepts_grid, frame_for, free_bases, layers_of, request_frame

try:  # the compiled Best Fit search (an optional extension: without a C compiler the Python search runs, same results)
    import topoalloc.alloc.mesh2d._cmesh as _cmesh
except ImportError:  # pragma: no cover - built without a C compiler
    _cmesh = None

__all__ = ["MeshAllocator", "FreeSetProbes", "ContiguousAllocator", "CRITERIA", "Perimeter", "compiled_search"]

_T = TypeVar("_T")

#: Best Fit uses the compiled search when it is built and this is true (tests turn it off to check the
#: Python search, which is the reference, against brute force and against the compiled one)
USE_COMPILED = True


def compiled_search() -> bool:
    """Whether Best Fit searches with the compiled extension (built, and not turned off)."""
    return USE_COMPILED and _cmesh is not None


#: The Python Best Fit search keeps row and column prefix sums (:class:`Perimeter`) on machines with more
#: bits than this (about 45 x 45): there a search often has hundreds of candidates; below, each candidate
#: is scored by one AND on the busy bit set, with nothing to keep up to date on allocate and release.
#: (The compiled search scores each candidate from the free bit set and keeps nothing.)
PREFIX_SUMS_ABOVE = 2048

#: Best Fit criteria (Bani-Ahmad uses Best Fit without defining its criterion):
#: ``"perimeter"`` — most cells along the frame's outside perimeter that are busy
#: or beyond the mesh boundary; ``"busy"`` — most busy cells only.
CRITERIA = ("perimeter", "busy")


#: what a memo holds for a key it does not hold
_NOT_KEPT = object()

#: the masks :meth:`FreeSetProbes._mask_of` remembers take at most about this many bytes (then it starts again)
MASK_MEMO_BYTES = 1 << 24


class Perimeter:
    """Row and column prefix sums of the busy grid, in the free mask's padded layout.

    The layout of :mod:`~topoalloc.alloc.mesh2d.geometry` (bit ``b = x + S·p``)
    is shifted by one padded row and one column (index ``e = b + S + 1``),
    so every cell has its four neighbours in the array; padding cells (mesh
    boundaries, layer boundaries) count as busy under the ``"perimeter"``
    criterion and as free under ``"busy"``.  ``Q`` holds, per row, the busy
    cells up to and including each position; ``R`` the same per column.  A
    rectangle taken or given back changes ``l`` rows of ``Q`` and ``w``
    columns of ``R`` (two slice updates), and the busy count along each side
    of any candidate is one difference: a candidate costs eight look-ups,
    done for all candidates at once.
    """

    __slots__ = ("g", "QR", "Q2", "R2", "rowsE", "_ramps", "_offsets")
    QR: np.ndarray
    rowsE: int
    _ramps: dict[int, tuple[np.ndarray, np.ndarray]]
    _offsets: dict[tuple[int, int], tuple[np.ndarray, np.ndarray]]

    def __init__(self, g: Layers, criterion: str = "perimeter", _copy: "Perimeter | None" = None):
        self.g = g
        S = g.S
        if _copy is not None:
            self.QR = _copy.QR.copy()
            self.rowsE = _copy.rowsE
            self._ramps = _copy._ramps  # read-only memos, shared
            self._offsets = _copy._offsets
        else:
            self.rowsE = -(-(g.nbits + S + 1) // S) + 1
            G = np.full(self.rowsE * S, 1 if criterion == "perimeter" else 0, dtype=np.int32)
            G[g.bit_of_node + S + 1] = 0
            G2 = G.reshape(self.rowsE, S)
            # Q then R, one flat buffer, so one gather serves both
            self.QR = np.concatenate([G2.cumsum(axis=1).ravel(), G2.cumsum(axis=0).ravel()]).astype(np.int32)
            self._ramps = {}
            self._offsets = {}
        E = self.rowsE
        self.Q2 = self.QR[: E * S].reshape(E, S)
        self.R2 = self.QR[E * S :].reshape(E, S)

    def copy(self) -> "Perimeter":
        return Perimeter(self.g, _copy=self)

    def _ramp(self, k: int) -> tuple[np.ndarray, np.ndarray]:
        """``min(1.., k)`` as a row and as a column (read-only, memoised)."""
        r = self._ramps.get(k)
        if r is None:
            row = np.minimum(np.arange(1, max(self.g.S, self.rowsE) + 1, dtype=np.int32), k)
            row.flags.writeable = False
            r = self._ramps[k] = (row, row[:, None])
        return r

    def add(self, rect: Rect, sign: int) -> None:
        """Mark ``rect`` busy (``sign`` 1) or free (``sign`` -1)."""
        x, r, w, l = rect
        q0, c0 = r + r // self.g.Y + 1, x + 1
        qv = self.Q2[q0 : q0 + l, c0:]
        rv = self.R2[q0:, c0 : c0 + w]
        rq = self._ramp(w)[0][: qv.shape[1]]
        rr = self._ramp(l)[1][: rv.shape[0]]
        if sign > 0:
            qv += rq
            rv += rr
        else:
            qv -= rq
            rv -= rr

    def scores(self, bits: np.ndarray, w: int, l: int) -> np.ndarray:
        """The busy (or busy and boundary) cells along the outside of a ``w × l`` rectangle at each base bit."""
        off = self._offsets.get((w, l))
        if off is None:
            S = self.g.S
            n = self.rowsE * S  # R starts here in the buffer
            sh = S + 1
            o = np.array([
                -S + w - 1, -S - 1, l * S + w - 1, l * S - 1,  # bottom row, top row (Q)
                n + (l - 1) * S - 1, n - 1 - S, n + w + (l - 1) * S, n + w - S,  # left column, right column (R)
            ], dtype=np.int64) + sh
            sg = np.array([1, -1, 1, -1, 1, -1, 1, -1], dtype=np.int32)
            off = self._offsets[(w, l)] = (o, sg)
        o, sg = off
        return self.QR.take(bits[:, None] + o) @ sg


class MeshAllocator(Allocator):
    """Base of the 2-D mesh allocators (see the module notes).

    Parameters
    ----------
    topology : Torus
        A mesh or torus of two or more dimensions; its first two sides make
        the 2-D layers (wrap links unused).
    shape_rule : {"square", "square_strict"}
        How a request without a shape gets a frame (:func:`~topoalloc.alloc.mesh2d.geometry.frame_for`).

    Notes
    -----
    Subclasses choose rectangles and call :meth:`_take` / :meth:`_grant`;
    release gives the grant's rectangles (its token) back.  All the state is
    the free bit set (an immutable int, shared by snapshots until changed),
    plus, for allocators that score perimeters, a :class:`Perimeter`.
    """

    claims: ClassVar[frozenset[str]] = frozenset({"blocks", "rounded_size"})
    #: whether a size with no fitting factor pair gets a padded frame (one-rectangle allocators)
    pads: ClassVar[bool] = True

    def __init__(self, topology: Topology, *, shape_rule: str = "square"):
        super().__init__(topology)
        if shape_rule not in SHAPE_RULES:
            raise InvalidArgument("shape_rule", shape_rule, f"one of {', '.join(SHAPE_RULES)}")
        self.shape_rule = shape_rule
        self.geom = layers_of(topology)
        self._free = self.geom.all_free
        self._perim: Perimeter | None = None
        self.criterion = "perimeter"
        self._version = 0
        self._cache: tuple[int, int] = (-1, 0)
        self._ring_src: tuple[int, int] = (-1, 0)
        self._frames: Memo[tuple[int, tuple[int, ...] | None], tuple[int, int]] = Memo()  # (size, shape) -> its frame
        self._mask_memo: Memo[tuple[Rect, ...], int] = Memo()  # a grant's rectangles -> its bits (see _mask_of)
        self._cbest: Any = None

    @classmethod
    def accepts(cls, topology: Topology) -> bool:
        """Meshes and tori of two or more dimensions (2-D layers: the first two sides; wrap links unused)."""
        return accepts_grid(topology)

    def _enable_best_fit(self, criterion: str) -> None:
        """Score Best Fit candidates by ``criterion``; keep prefix sums on machines where many candidates are usual."""
        if criterion not in CRITERIA:
            raise InvalidArgument("criterion", criterion, f"one of {', '.join(CRITERIA)}")
        self.criterion = criterion
        self._cbest = _cmesh.best_fit if compiled_search() else None
        if self._cbest is None and self.geom.nbits > PREFIX_SUMS_ABOVE:
            self._perim = Perimeter(self.geom, criterion)

    # ----------------------------------------------------------------- frames
    def frame_for(self, request: Request) -> tuple[int, int]:
        """The frame ``(W, L)`` of ``request``: its shape, else the shape rule's."""
        key = (request.size, request.shape)
        f = self._frames.get(key)
        if f is None:
            g = self.geom
            f = request_frame(request) or frame_for(request.size, g.X, g.Y, self.shape_rule, self.pads)
            self._frames[key] = f
        return f

    def granted_size(self, request: Request) -> int:
        """Processors granted for ``request`` when it is placed (the documented rounding, if any)."""
        w, l = self.frame_for(request)
        return w * l

    # ------------------------------------------------------------------ state
    def _take(self, rects: Sequence[Rect]) -> None:
        g = self.geom
        m = 0
        for rect in rects:
            m |= g.rect_mask(rect)
        self._free &= ~m
        if self._perim is not None:
            for rect in rects:
                self._perim.add(rect, 1)
        self._version += 1

    def _give(self, rects: Sequence[Rect]) -> None:
        g = self.geom
        m = 0
        for rect in rects:
            m |= g.rect_mask(rect)
        self._free |= m
        if self._perim is not None:
            for rect in rects:
                self._perim.add(rect, -1)
        self._version += 1

    def _grant(self, rects: Sequence[Rect], info: dict[str, Any]) -> Grant:
        rects = tuple(rects)
        info["blocks"] = Blocks(rects)
        nodes = self.geom.rects_nodes(rects)
        return Grant(nodes if len(rects) == 1 else np.sort(nodes), info, rects)

    def _release(self, allocation: Allocation, token: Any) -> None:
        self._give(token)

    def process_order(self, allocation: Allocation) -> np.ndarray:
        """The job's processes on its nodes: block by block in the order granted, row-major within each block.

        (Bani-Ahmad does not say how processes map; this keeps each block's
        part of the job's logical order in one piece.)
        """
        blocks = allocation.info.get("blocks")
        if blocks is None or len(blocks) <= 1:
            return allocation.nodes
        g = self.geom
        a = blocks.array if isinstance(blocks, Blocks) else np.array(list(blocks), dtype=np.int64).reshape(-1, 4)
        w, l = int(a[0, 2]), int(a[0, 3])
        if (a[:, 2] == w).all() and (a[:, 3] == l).all():  # pages, single processors: all at once
            return ((a[:, 0] + g.X * a[:, 1])[:, None] + g.rect_nodes((0, 0, w, l))).ravel()
        return g.rects_nodes([(int(x), int(r), int(ww), int(ll)) for x, r, ww, ll in a.tolist()])

    def _copy_state(self, clone: Self) -> None:
        # the free set is an int (immutable) and the frame memo is a pure function: shared
        if self._perim is not None:
            clone._perim = self._perim.copy()

    def _layer_free_max(self) -> int:
        """The most free cells in one layer (the free count on a 2-D machine)."""
        g = self.geom
        if g.Z == 1:
            return self._free_count
        v, val = self._cache
        if v != self._version:
            per = g.S * g.LS
            low = (1 << per) - 1
            f = self._free
            val = max(((f >> (per * z)) & low).bit_count() for z in range(g.Z))
            self._cache = (self._version, val)
        return val

    # --------------------------------------------------------------- searches
    def _first_fit(self, w: int, l: int) -> Rect | None:
        """Zhu's First Fit: the free ``w × l`` submesh whose base comes first in row-major order."""
        v = free_bases(self.geom, self._free, w, l)
        if not v:
            return None
        x, r = self.geom.base_of_bit((v & -v).bit_length() - 1)
        return (x, r, w, l)

    def _best_fit(self, w: int, l: int) -> Rect | None:
        """Best Fit: the free ``w × l`` submesh with the highest perimeter score (ties: row-major first).

        Only candidates with some busy or padding cell along their outside
        can score above 0; they are found bit-parallel (the runs of free
        cells beside each side), and only they are scored: each by one AND
        of the busy bit set with the ring of cells around it, or, on large
        machines with many such candidates, all at once from the prefix sums
        of :class:`Perimeter`.  If none scores above 0, every candidate ties
        at 0 and the first one wins.  With the compiled extension the same
        search runs word by word in C (``_cmesh.c``; same answers, tested).
        """
        g = self.geom
        f = self._free
        if w > g.X or l > g.Y:
            return None
        if self._cbest is not None:
            b = self._cbest(f.to_bytes(g.nbytes, "little"), g.S, g.LS, g.X, g.Y, g.nbits, w, l, self.criterion == "perimeter")
            if b < 0:
                return None
            x, r = g.base_of_bit(b)
            return (x, r, w, l)
        S = g.S
        rh = _runs(f, w, 1) if w > 1 else f
        v = _runs(rh, l, S) if l > 1 else rh
        if not v:
            return None
        if v & (v - 1):  # more than one candidate
            rv = _runs(f, l, S) if l > 1 else f
            touch = v & ~((rv << 1) & (rv >> w) & (rh << S) & (rh >> (l * S)))
            if touch:
                bits = g.set_bits(touch)
                if self._perim is not None and bits.size > 32:
                    sc = self._perim.scores(bits, w, l)
                    i = int(np.argmax(sc))
                    best, b = int(sc[i]), int(bits[i])
                else:
                    src = self._busy_shifted()
                    ring = g.ring_mask(w, l)
                    best, b = -1, -1
                    for c in bits.tolist():
                        sc_c = ((src >> c) & ring).bit_count()
                        if sc_c > best:
                            best, b = sc_c, c
                if best > 0:
                    x, r = g.base_of_bit(b)
                    return (x, r, w, l)
        x, r = g.base_of_bit((v & -v).bit_length() - 1)
        return (x, r, w, l)

    def _busy_shifted(self) -> int:
        """The cells that count for Best Fit (busy; and padding, under ``"perimeter"``), shifted up by one
        padded row and one column so the ring of a candidate at bit ``b`` starts at bit ``b``."""
        v, src = self._ring_src
        if v != self._version:
            g = self.geom
            sh = g.S + 1
            if self.criterion == "perimeter":
                src = ((~self._free & ((1 << g.nbits) - 1)) << sh) | ((1 << sh) - 1)
            else:
                src = (~self._free & g.all_free) << sh
            self._ring_src = (self._version, src)
        return src

    def _frame_slide(self, w: int, l: int) -> Rect | None:
        """Frame Sliding (Chuang & Tzeng 1994): candidate bases on the lattice of strides ``w`` and ``l``
        anchored at the lowest leftmost free cell of each layer, in row-major order.

        On the bit sets: the free bases of each layer that has any, in layer order, kept where they are on
        that layer's lattice (:meth:`Layers.lattice`); the lowest bit left is the first in row-major order."""
        g = self.geom
        v = free_bases(g, self._free, w, l)
        f = self._free
        per = g.S * g.LS  # bits per layer
        while v:
            z = ((v & -v).bit_length() - 1) // per  # the next layer with a free base
            layer = g.layer_mask(z)
            lay = f & layer  # not empty: its free bases are free cells
            ax, ar = g.base_of_bit((lay & -lay).bit_length() - 1)
            hit = v & layer & g.lattice(z, ax % w, ar % l, w, l)
            if hit:
                x, r = g.base_of_bit((hit & -hit).bit_length() - 1)
                return (x, r, w, l)
            v &= ~layer
        return None


class FreeSetProbes(MeshAllocator):
    """Base of the 2-D allocators that place a request by a pure function of their free bit set
    (:meth:`_placement`; a release gives back exactly the cells taken): the contiguous searches and the
    request-partitioning allocators built on them.  The schedulers' probes answer on free sets, never on
    snapshots: ``earliest_fit`` adds each release's rectangles, EASY's guard keeps the free set at the
    shadow time (:class:`_FreeSetGuard`), and conservative backfilling replays its plan on free sets
    (:class:`~topoalloc.sched.plan.FreeSetPlan`)."""

    #: a memo keyed by free sets (ANCA's and PALD's placements, the contiguous searches' submeshes) keeps its answers
    #: while their free sets take about this many bytes, then starts again
    PLACEMENTS_BYTES: ClassVar[int] = 1 << 25

    def _kept_by_free_set(self, besides: int, budget: int | None = None) -> int:
        """How many entries a memo whose entries each hold a free set keeps: ``budget`` bytes (default
        :attr:`PLACEMENTS_BYTES`) over a free set's bytes (a bit per cell, padding included) and ``besides`` bytes for
        the rest of an entry (its key, its answer, the dict's slot)."""
        return max(1024, (self.PLACEMENTS_BYTES if budget is None else budget) // (self.geom.nbytes + besides))

    #: True where whether a request fits is monotone in the free set (more free cells never make it not fit):
    #: First Fit, Best Fit and Adaptive Scan (a free W × L submesh, in either orientation for Adaptive Scan,
    #: exists).  Not Frame Sliding (its lattice moves with the lowest free cell) nor the partitioning
    #: allocators (their greedy pieces); EASY keeps a guard across passes only where it holds
    #: (:class:`_FreeSetGuard`)
    fit_monotone: ClassVar[bool] = False

    @abstractmethod
    def _placement(self, request: Request) -> tuple[Rect, ...] | None:
        """The rectangles :meth:`allocate` would grant ``request`` now, none taken; None if it does not fit."""

    def _free_set_probes(self) -> bool:
        """Whether the probes may answer on free sets: the placement is a function of the free set alone
        (no Python prefix sums kept beside it, :class:`Perimeter`, which follow the real free set only)."""
        return self._perim is None

    def _rects_mask(self, rects: Iterable[Rect]) -> int:
        m = 0
        for rect in rects:
            m |= self.geom.rect_mask(rect)
        return m

    def _on_free(self, free: int, fn: Callable[..., _T], *args: Any) -> _T:
        """``fn(*args)`` with ``free`` in place of the free set (the searches' caches kept apart), then the
        state as it was.  Only for the searches, which read the free set and nothing else of the state
        (:meth:`_free_set_probes`); what ``fn`` takes and gives back there is undone with the rest."""
        saved = self._free, self._version, self._cache, self._ring_src
        # the caches are keyed by version: versions counted from -1 here meet none of the real state's
        self._free, self._version, self._cache, self._ring_src = free, -1, (-2, 0), (-2, 0)
        try:
            return fn(*args)
        finally:
            self._free, self._version, self._cache, self._ring_src = saved

    def _fits_on(self, free: int, request: Request) -> bool:
        """Whether ``request`` would be placed if the free set were ``free``."""
        return self._on_free(free, self._placement, request) is not None

    def earliest_fit(self, request: Request, releases: Iterable[Allocation]) -> int | None:
        """As :meth:`Allocator.earliest_fit` (replay on a snapshot); on free sets where the placement is a
        function of the free set (:meth:`_free_set_probes`): each release adds its rectangles to it."""
        if not self._free_set_probes():
            return super().earliest_fit(request, releases)
        if self._placement(request) is not None:
            return 0
        free = self._free
        for k, alloc in enumerate(releases, 1):
            free |= self._mask_of(alloc)
            if self._fits_on(free, request):
                return k
        return None

    def _placement_on(self, free: int, request: Request) -> int | None:
        """The bits :meth:`allocate` would take with the free set ``free``, or None (the state unchanged)."""
        rects = self._on_free(free, self._placement, request)
        return None if rects is None else self._rects_mask(rects)

    def _mask_of(self, allocation: Allocation) -> int:
        """The bits an allocation held here took: remembered by its rectangles (a pure function of the mesh), so that
        a plan made at every scheduling pass gets the same int for a running job each time.  The compiled plan keeps
        the hash of a large state or token by object (an int does not keep its own), so on a large mesh a release
        costs no O(nodes) hash where its token is the one it saw before (``_cplan``)."""
        rects = self.token_of(allocation)
        memo = self._mask_memo
        got = memo.get(rects)
        if got is None:
            if len(memo) >= self._kept_by_free_set(64, MASK_MEMO_BYTES):
                memo.clear()
            got = memo[rects] = self._rects_mask(rects)
        return got

    def future_plan(self, now: float, releases: list[tuple[float, Allocation]], request: Callable[[int], Request],
                    priority: Callable[[int], int]) -> Any:
        """:class:`~topoalloc.sched.plan.FreeSetPlan` where the placement is a function of the free set
        (the same answers as replay on snapshots, on free sets), else :meth:`Allocator.future_plan`."""
        if self._free_set_probes():
            from ...sched.plan import FreeSetPlan

            return FreeSetPlan(now, self, releases, request, priority)
        return super().future_plan(now, releases, request, priority)

    def reservation_guard(self, head: Request, releases: Iterable[Allocation]) -> ReservationGuard:
        """:class:`_FreeSetGuard` where the placement is a function of the free set, else replay."""
        if self._free_set_probes():
            return _FreeSetGuard(self, head, releases)
        return super().reservation_guard(head, releases)


class ContiguousAllocator(FreeSetProbes):
    """An allocator that grants one free ``W × L`` (or, if it rotates, ``L × W``) submesh.

    Probes are exact and copy nothing: ``can_allocate`` runs the search
    without taking the submesh; a request's ``fit_key`` is its frame.
    """

    claims: ClassVar[frozenset[str]] = frozenset({"blocks", "rounded_size", "contiguous"})
    #: whether the search also tries the rotated frame
    rotates: ClassVar[bool] = False
    #: set (True) in a class's own body where its ``_search`` reads the free set alone: :meth:`_locate` then
    #: remembers its answers by (free set, frame).  A subclass does not inherit it: it may search otherwise.
    pure_search: ClassVar[bool] = False

    def __init__(self, topology: Topology, *, shape_rule: str = "square"):
        super().__init__(topology, shape_rule=shape_rule)
        self._located: Memo[tuple[int, int, int], Rect | None] | None = Memo() if type(self).__dict__.get("pure_search") else None
        self._located_kept = self._kept_by_free_set(256)

    def _search(self, w: int, l: int) -> Rect | None:  # pragma: no cover - abstract
        raise NotImplementedError

    def _locate(self, request: Request) -> Rect | None:
        """The submesh a request gets with the free set as it is (None: none), taking nothing.  With
        :attr:`pure_search`, remembered by (free set, frame): EASY's probes ask the same frames of the same free
        sets pass after pass (three answers in four, SDSC-SP2 on ``mesh:16x8`` with ``frame_sliding``)."""
        w, l = self.frame_for(request)
        memo = self._located
        if memo is not None:
            key = (self._free, w, l)
            got = memo.get(key, _NOT_KEPT)
            if got is not _NOT_KEPT:
                return got  # type: ignore[return-value]
        rect = self._search(w, l)
        if rect is None and self.rotates and w != l:
            rect = self._search(l, w)
        if memo is not None:
            if len(memo) >= self._located_kept:
                memo.clear()
            memo[key] = rect
        return rect

    def _allocate(self, request: Request) -> Grant | None:
        rect = self._locate(request)
        if rect is None:
            return None
        self._take((rect,))
        return self._grant((rect,), {"frame": (rect[2], rect[3])})

    def can_allocate(self, request: Request) -> bool:
        return request.size <= self._free_count and self._locate(request) is not None

    def _placement(self, request: Request) -> tuple[Rect, ...] | None:
        rect = self._locate(request)
        return None if rect is None else (rect,)

    def _fits_empty(self, request: Request) -> bool:
        w, l = self.frame_for(request)
        X, Y = self.geom.X, self.geom.Y
        return (w <= X and l <= Y) or (self.rotates and l <= X and w <= Y)

    def fit_key(self, request: Request) -> Hashable:
        w, l = self.frame_for(request)
        return (min(w, l), max(w, l)) if self.rotates else (w, l)

    def max_request_now(self) -> int:
        return self._layer_free_max()


class _FreeSetGuard(ReservationGuard):
    """EASY's guard for an allocator that places by its free set (:meth:`FreeSetProbes._free_set_probes`).

    The free set at the shadow time is the free set now with the releases' rectangles added; a
    candidate that ends by the shadow time leaves it as it is (its cells, free now, are free then
    again: a release gives back exactly the cells taken), one that runs past it takes its rectangles
    out, and is admitted iff the head is still placed in the result.  ``may_admit`` asks the same
    about where the candidate would go now, before it is allocated.  The answers are those of
    :class:`~topoalloc.alloc.probes.ReplayGuard` (the conformance suite checks them against replay),
    without a snapshot or a replayed release.

    Reusable (:attr:`ReservationGuard.reusable`) where fit is monotone in the free set
    (:attr:`FreeSetProbes.fit_monotone`): admitted jobs hold cells, and with fewer free cells the head
    fits no earlier, so a fresh pass finds the same shadow time; its guard's shadow set is the free set
    with the releases added, admitted jobs ending by the shadow time among them, which is the kept set
    with the rectangles of the admitted jobs running past it taken out; refusals come from ``allocate``
    or from the head's placement in a free set, both functions of the state.  Where fit is not monotone
    (Frame Sliding, the partitioning allocators), a job admitted can let the head fit earlier: a fresh
    pass would then find another shadow time, so the guard is made again every pass.
    """

    allocator: FreeSetProbes

    def __init__(self, allocator: FreeSetProbes, head: Request, releases: Iterable[Allocation]):
        super().__init__(allocator, head, releases)
        self.reusable = allocator.fit_monotone
        shadow = allocator._free
        for alloc in self.releases:
            shadow |= allocator._mask_of(alloc)
        self.shadow = shadow

    def may_admit(self, request: Request, ends_by_shadow: bool) -> bool:
        if ends_by_shadow:
            return True
        a = self.allocator
        rects = a._placement(request)
        return rects is None or a._fits_on(self.shadow & ~a._rects_mask(rects), self.head)  # None: allocate refuses it

    def admit(self, allocation: Allocation, ends_by_shadow: bool) -> bool:
        if ends_by_shadow:
            self.releases.append(allocation)
            return True
        a = self.allocator
        shadow = self.shadow & ~a._mask_of(allocation)
        if not a._fits_on(shadow, self.head):
            return False
        self.shadow = shadow
        return True
