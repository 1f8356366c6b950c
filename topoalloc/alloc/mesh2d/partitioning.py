"""Request-partitioning allocators: ANCA (Chang & Mohapatra 1998), Bani-Ahmad's modified ANCA, and PALD.

All three first try the whole frame with a contiguous search (First Fit or
Best Fit, option ``base``), and split it only when that fails (Bani-Ahmad,
"The ANCA and BGP approaches").  Each piece is one block; a *partitioning
bound* ``max_blocks`` (Bani-Ahmad's partitioning-bound value, PBV) caps the blocks a job may get, all or
nothing: a job that would need more is not allocated now.

ANCA — level by level
    Level 0 is the frame; level ``k + 1`` splits every piece of level ``k`` in
    two at its longest side (``A × B``, ``A ≥ B``).  The pieces of one level
    are searched one after another (option ``piece_order``), each marked busy
    for the next; if one is not found, the level is abandoned (nothing is
    kept) and the next level is tried, until the bound is passed or no piece
    can be split.

    ``variant="modified"`` (Bani-Ahmad's, default): ``A × B`` becomes
    ``⌈A/2⌉ × B`` and ``⌊A/2⌋ × B`` — no internal fragmentation.

    ``variant="original"`` (Chang & Mohapatra, as Bani-Ahmad describes it):
    both halves are searched as ``⌈A/2⌉ × B`` — for odd ``A`` one row more
    than the smaller half needs; "bookkeeping of idle nodes" hands that row
    back, so the job holds exactly ``A × B`` processors, but the search asked
    for more.  (Bani-Ahmad gives this in one sentence; here each piece is
    placed in the lower-left corner of the submesh found for it and the rest
    of that submesh is freed once the level succeeds.)

PALD — one row at a time
    A frame ``α × β`` that does not fit becomes ``α × (β − 1)`` and ``α × 1``
    (one removed from the longest side); the larger part is tried (and split
    again) first, then the strip.  Without a bound PALD always succeeds when
    enough processors are free (pieces go down to single processors), so
    unbounded PALD is a counting allocator, and so is unbounded ANCA.

Choices the paper leaves open, as options: ``tie`` — which side is "longest"
for a square piece (``"x"``: the width is halved; ``"y"``); ``piece_order``
— ``"largest"`` (default: the pieces of a level by decreasing area, ties in
split order) or ``"split"`` (split order, depth first).
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any, ClassVar

from ...errors import InvalidArgument
from ...registry import ALLOCATORS
from ...topology.base import Topology
from ..base import Grant, Memo, Request
from ..probes import CountingProbes
from .core import CRITERIA, FreeSetProbes
from .geometry import Rect, accepts_grid, factor_pairs, frame_for, request_frame, squareness

__all__ = ["ANCA", "PALD", "anca_levels", "BASES", "VARIANTS", "PIECE_ORDERS", "TIES"]

BASES = ("ff", "bf")
VARIANTS = ("modified", "original")
PIECE_ORDERS = ("largest", "split")
TIES = ("x", "y")

#: a piece: (container width, container height, width, height) — equal for the modified variant
Piece = tuple[int, int, int, int]


def _split_x(cw: int, cl: int, tie: str) -> bool:
    return cw > cl or (cw == cl and tie == "x")


def _next_level(pieces: list[Piece], variant: str, tie: str) -> list[Piece]:
    out: list[Piece] = []
    for cw, cl, pw, pl in pieces:
        if cw == 1 and cl == 1:
            out.append((cw, cl, pw, pl))
            continue
        if _split_x(cw, cl, tie):
            c1, c2 = (cw + 1) // 2, (cw + 1) // 2 if variant == "original" else cw // 2
            halves = [(c1, cl, (pw + 1) // 2, pl), (c2, cl, pw // 2, pl)]
        else:
            c1, c2 = (cl + 1) // 2, (cl + 1) // 2 if variant == "original" else cl // 2
            halves = [(cw, c1, pw, (pl + 1) // 2), (cw, c2, pw, pl // 2)]
        out.extend(h for h in halves if h[2] > 0 and h[3] > 0)
    return out


def anca_levels(w: int, l: int, *, variant: str = "modified", tie: str = "x", bound: int | None = None) -> list[list[Piece]]:
    """The pieces ``(container w, container l, w, l)`` of every ANCA level of a ``w × l`` frame, up to ``bound`` pieces.

    Examples
    --------
    >>> [[p[2:] for p in lv] for lv in anca_levels(5, 3, bound=4)]
    [[(5, 3)], [(3, 3), (2, 3)], [(2, 3), (1, 3), (2, 2), (2, 1)]]
    >>> [p for p in anca_levels(5, 3, variant="original", bound=2)[1]]   # both searched as 3 x 3
    [(3, 3, 3, 3), (3, 3, 2, 3)]
    """
    levels = [[(w, l, w, l)]]
    while True:
        nxt = _next_level(levels[-1], variant, tie)
        if nxt == levels[-1] or (bound is not None and len(nxt) > bound):
            return levels
        levels.append(nxt)


#: memos of pure functions of (configuration, request) shared by every allocator of one configuration
_SIZE_FRAME: dict[tuple[Any, ...], tuple[int, int]] = {}
_FITS_EMPTY: dict[tuple[Any, ...], bool] = {}


class _Partitioning(FreeSetProbes):
    """Shared by ANCA and PALD: options, the contiguous base search and the probes."""

    pads: ClassVar[bool] = False
    claims: ClassVar[frozenset[str]] = frozenset({"blocks", "rounded_size", "max_blocks"})

    def __init__(self, topology: Topology, *, base: str = "ff", max_blocks: int | None = 8, tie: str = "x",
                 criterion: str = "perimeter", shape_rule: str = "square"):
        super().__init__(topology, shape_rule=shape_rule)
        if base not in BASES:
            raise InvalidArgument("base", base, f"one of {', '.join(BASES)}")
        if max_blocks is not None and (not isinstance(max_blocks, int) or isinstance(max_blocks, bool) or max_blocks < 1):
            raise InvalidArgument("max_blocks", max_blocks, "a positive number of blocks per job, or None (no bound)")
        if tie not in TIES:
            raise InvalidArgument("tie", tie, f"one of {', '.join(TIES)}")
        self.base = base
        self.max_blocks = max_blocks
        self.tie = tie
        if criterion not in CRITERIA:
            raise InvalidArgument("criterion", criterion, f"one of {', '.join(CRITERIA)}")
        self.criterion = criterion
        if base == "bf":
            self._enable_best_fit(criterion)
        #: (free set, frame) -> the blocks placed, or None (see :meth:`_placed`)
        self._placements: Memo[tuple[int, int, int], tuple[Rect, ...] | None] = Memo()
        self._placements_kept = self._kept_by_free_set(512)  # (an entry's blocks take more than a submesh)

    def _placed(self, w: int, l: int) -> tuple[Rect, ...] | None:
        """The blocks :meth:`_plan` places a ``w × l`` frame in with the free set as it is, taking nothing; remembered
        by (free set, frame).  The placement is a function of both (the searches read the free set alone: the best
        fit's perimeter sums follow it), and EASY's probes ask the same frames of the same free sets pass after pass
        (ANCA tries level after level of pieces, each a search, before it answers)."""
        key = (self._free, w, l)
        memo = self._placements
        if key in memo:
            return memo[key]
        rects = self._plan(w, l)
        if rects is not None:
            self._give(rects)
        if len(memo) >= self._placements_kept:
            memo.clear()
        got = memo[key] = None if rects is None else tuple(rects)
        return got

    def _search(self, w: int, l: int) -> Rect | None:
        if self.base == "ff":
            return self._first_fit(w, l)
        return self._best_fit(w, l)

    def _plan(self, w: int, l: int) -> list[Rect] | None:  # pragma: no cover - abstract
        """Find and take the blocks of a ``w × l`` frame (all of them), or take nothing and return None."""
        raise NotImplementedError

    def frame_for(self, request: Request) -> tuple[int, int]:
        """The request's shape; for a plain size, a frame chosen by the shape rule.

        ``"square"``: the factor pair closest to square that fits a layer; if
        none does, the factor pair (either orientation) that the empty
        machine places in the fewest blocks within the bound (ties closest to
        square: a prime longer than both sides becomes a row or a column,
        whichever splits into fewer pieces); if no factor pair can ever be
        placed within the bound (on layers of a few processors), the
        smallest larger frame that can — the extra processors are internal
        fragmentation.  ``"square_strict"``: the factor pair closest to
        square, never padded.
        """
        key = (request.size, request.shape)
        f = self._frames.get(key)
        if f is None:
            f = request_frame(request) or self._size_frame(request.size)
            self._frames[key] = f
        return f

    def _config(self) -> tuple[Any, ...]:
        """Everything that decides placements on a given busy set (the key of the shared memos)."""
        return (type(self).__name__, self.geom.dims, self.base, self.max_blocks, self.tie, self.criterion, self.shape_rule,
                getattr(self, "variant", None), getattr(self, "piece_order", None))

    def _fits_empty(self, request: Request) -> bool:
        key = (self._config(), request.size, request.shape)
        ok = _FITS_EMPTY.get(key)
        if ok is None:
            empty = self.fresh()
            ok = _FITS_EMPTY[key] = empty._plan(*self.frame_for(request)) is not None
        return ok

    def _size_frame(self, size: int) -> tuple[int, int]:
        """The frame of a plain size (see :meth:`frame_for` and the module notes), memoised per configuration."""
        key = (self._config(), size)
        f = _SIZE_FRAME.get(key)
        if f is None:
            f = _SIZE_FRAME[key] = self._choose_size_frame(size)
        return f

    def _choose_size_frame(self, size: int) -> tuple[int, int]:
        g = self.geom
        f = frame_for(size, g.X, g.Y, self.shape_rule, False)
        if self.shape_rule == "square_strict" or (f[0] <= g.X and f[1] <= g.Y):
            return f
        most = g.n if self.max_blocks is None else min(g.n, self.max_blocks * g.X * g.Y)
        if size > most:
            return f  # more processors than the bound's blocks can hold: never fits
        empty = self.fresh()
        for area in range(size, most + 1):
            best: tuple[int, tuple[int, int], tuple[int, int]] | None = None
            for cand in factor_pairs(area):
                rects = empty._plan(*cand)
                if rects is not None:
                    empty._give(rects)
                    key = (len(rects), squareness(cand), cand)
                    if best is None or key < best:
                        best = key
            if best is not None:
                return best[2]
        return f

    def _allocate(self, request: Request) -> Grant | None:
        f = self.frame_for(request)
        rects = self._placed(*f)
        if rects is None:
            return None
        self._take(rects)
        return self._grant(rects, {"frame": f})

    def can_allocate(self, request: Request) -> bool:
        if request.size > self._free_count:
            return False
        return self._placement(request) is not None

    def _placement(self, request: Request) -> tuple[Rect, ...] | None:
        return self._placed(*self.frame_for(request))

    def fit_key(self, request: Request) -> Hashable:
        return self.frame_for(request)


class ANCA(_Partitioning):
    """Adaptive Non-Contiguous Allocation, bounded (Chang & Mohapatra 1998; Bani-Ahmad's modification).

    Parameters
    ----------
    topology : Torus
    base : {"ff", "bf"}
        The contiguous search for the frame and every piece.
    variant : {"modified", "original"}
        How an odd side is halved (see the module notes).
    max_blocks : int or None
        The partitioning bound (blocks per job); ``None``: unbounded.
    piece_order : {"largest", "split"}
    tie : {"x", "y"}
    criterion : {"perimeter", "busy"}
        Best Fit's score (``base="bf"``).
    shape_rule : {"square", "square_strict"}

    Examples
    --------
    >>> from topoalloc.topology import parse_machine
    >>> a = ANCA(parse_machine("mesh:4x4"), max_blocks=4)
    >>> x, y, z = (a.allocate(Request(4, (2, 2))) for _ in range(3))
    >>> a.release(x)                                  # free: the 2 x 2 squares at (0, 0) and (2, 2)
    >>> list(a.allocate(Request(8, (4, 2))).info["blocks"])    # no free 4 x 2: two 2 x 2 halves
    [(0, 0, 2, 2), (2, 2, 2, 2)]
    """

    name = "anca"

    def __init__(self, topology: Topology, *, base: str = "ff", variant: str = "modified", max_blocks: int | None = 8,
                 piece_order: str = "largest", tie: str = "x", criterion: str = "perimeter", shape_rule: str = "square"):
        super().__init__(topology, base=base, max_blocks=max_blocks, tie=tie, criterion=criterion, shape_rule=shape_rule)
        if variant not in VARIANTS:
            raise InvalidArgument("variant", variant, f"one of {', '.join(VARIANTS)}")
        if piece_order not in PIECE_ORDERS:
            raise InvalidArgument("piece_order", piece_order, f"one of {', '.join(PIECE_ORDERS)}")
        self.variant = variant
        self.piece_order = piece_order
        self.name = f"anca_{base}"
        self._levels: Memo[tuple[int, int], list[list[Piece]]] = Memo()  # (w, l) -> each level's pieces, in search order

    def levels(self, w: int, l: int) -> list[list[Piece]]:
        """The pieces of each level this allocator tries for a ``w × l`` frame, in search order (memoised)."""
        lv = self._levels.get((w, l))
        if lv is None:
            lv = anca_levels(w, l, variant=self.variant, tie=self.tie, bound=self.max_blocks)
            if self.piece_order == "largest":
                lv = [sorted(p, key=lambda q: -q[0] * q[1]) for p in lv]
            self._levels[(w, l)] = lv
        return lv

    def _plan(self, w: int, l: int) -> list[Rect] | None:
        for pieces in self.levels(w, l):
            got = self._place_level(pieces)
            if got is not None:
                return got
        return None

    def _place_level(self, pieces: list[Piece]) -> list[Rect] | None:
        taken: list[Rect] = []
        for cw, cl, _, _ in pieces:
            r = self._search(cw, cl)
            if r is None:
                if taken:
                    self._give(taken)
                return None
            self._take((r,))
            taken.append(r)
        rects: list[Rect] = []
        idle: list[Rect] = []
        for (x, y, cw, cl), (_, _, pw, pl) in zip(taken, pieces):
            rects.append((x, y, pw, pl))
            if cw > pw:
                idle.append((x + pw, y, cw - pw, cl))
            if cl > pl:
                idle.append((x, y + pl, pw, cl - pl))
        if idle:  # the original variant's bookkeeping: the extra rows go back
            self._give(idle)
        return rects


class PALD(_Partitioning):
    """PArtitioning at the Longest Dimension (Bani-Ahmad 2010; described in "The ANCA and BGP approaches").

    Examples
    --------
    >>> from topoalloc.topology import parse_machine
    >>> a = PALD(parse_machine("mesh:4x4"), max_blocks=None)
    >>> x = a.allocate(Request(2, (1, 2)))
    >>> list(a.allocate(Request(12, (4, 3))).info["blocks"])    # 4 x 3 -> 3 x 3 + 1 x 3 -> ...
    [(1, 0, 3, 3), (0, 2, 1, 2), (1, 3, 1, 1)]
    """

    name = "pald"

    def _plan(self, w: int, l: int) -> list[Rect] | None:
        bound = self.max_blocks
        stack = [(w, l)]
        taken: list[Rect] = []
        while stack:
            w, l = stack.pop()
            r = self._search(w, l)
            if r is not None and (bound is None or len(taken) < bound):
                self._take((r,))
                taken.append(r)
                continue
            if r is not None or (w == 1 and l == 1):
                if taken:
                    self._give(taken)
                return None
            if _split_x(w, l, self.tie):
                stack += [(1, l), (w - 1, l)]
            else:
                stack += [(w, 1), (w, l - 1)]
        return taken


class UnboundedANCA(CountingProbes, ANCA):
    """ANCA without a bound: it fits whenever enough processors are free (counting probes)."""


class UnboundedPALD(CountingProbes, PALD):
    """PALD without a bound: it fits whenever enough processors are free (counting probes)."""


def _anca(topology: Topology, base: str, variant: str, max_blocks: int | None, piece_order: str, tie: str, criterion: str, shape_rule: str) -> ANCA:
    cls = ANCA if max_blocks is not None else UnboundedANCA
    return cls(topology, base=base, variant=variant, max_blocks=max_blocks, piece_order=piece_order, tie=tie, criterion=criterion, shape_rule=shape_rule)


@ALLOCATORS.register("anca_ff", accepts=accepts_grid)
def make_anca_ff(topology: Topology, variant: str = "modified", max_blocks: int | None = 8, piece_order: str = "largest",
                 tie: str = "x", shape_rule: str = "square") -> ANCA:
    """Bounded ANCA with First Fit (Bani-Ahmad; variant=modified|original (Chang & Mohapatra)), max_blocks=8 (PBV)."""
    return _anca(topology, "ff", variant, max_blocks, piece_order, tie, "perimeter", shape_rule)


@ALLOCATORS.register("anca_bf", accepts=accepts_grid)
def make_anca_bf(topology: Topology, variant: str = "modified", max_blocks: int | None = 8, piece_order: str = "largest",
                 tie: str = "x", criterion: str = "perimeter", shape_rule: str = "square") -> ANCA:
    """Bounded ANCA with Best Fit (Bani-Ahmad; variant=modified|original (Chang & Mohapatra)), max_blocks=8 (PBV)."""
    return _anca(topology, "bf", variant, max_blocks, piece_order, tie, criterion, shape_rule)


@ALLOCATORS.register("pald", accepts=accepts_grid)
def make_pald(topology: Topology, base: str = "ff", max_blocks: int | None = None, tie: str = "x", criterion: str = "perimeter",
              shape_rule: str = "square") -> PALD:
    """PALD (Bani-Ahmad): split one row off the longest side until the pieces fit; base=ff|bf, max_blocks=none."""
    cls = PALD if max_blocks is not None else UnboundedPALD
    return cls(topology, base=base, max_blocks=max_blocks, tie=tie, criterion=criterion, shape_rule=shape_rule)
