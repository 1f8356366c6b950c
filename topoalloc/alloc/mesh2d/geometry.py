"""The 2-D view of a grid machine: layers, rectangles, free masks and request frames.

Layers
------
A mesh or torus ``X × Y × D_2 × ...`` is seen as ``Z = D_2 · D_3 ···`` layers,
each an ``X × Y`` mesh (a 2-D machine is one layer).  Node ids put the first
dimension fastest, so node ``x + X·(y + Y·z)`` is cell ``(x, y)`` of layer
``z``; the allocators of this package write rows across layers: *row*
``r = y + Y·z`` (``0 ≤ r < Y·Z``), and node ``x + X·r``.  A rectangle
``(x, r, w, l)`` is the ``w × l`` submesh with lower-left cell ``(x, r)``; it
always lies inside one layer (``r mod Y + l ≤ Y``).  Wrap links of a torus
are not used: every rectangle is a submesh of the underlying mesh.

Free masks
----------
Which cells are free is one Python integer (a bit set), laid out with one
padding column after each row and one padding row after each layer, both
always 0.  Bit ``x + S·p`` (``S = X + 1``) is cell ``x`` of padded row
``p = r + ⌊r / Y⌋``.  A rectangle ``w × l`` is free at base ``b`` iff bits
``b + i + S·j`` are set for ``i < w, j < l``: the set of all such bases is a
few shifts and ANDs of the whole mask (:func:`free_bases`), one machine word
testing 64 bases at once — the complete submesh recognition of Zhu's First
Fit and Best Fit, O(XY/64 · log(wl)) per search.  The padding stops runs at
the end of a row and at the top of a layer.  :func:`reference_free_bases` is
the same set by 2-D prefix sums of the busy grid (one O(1) box sum per
candidate base), the plain reference the tests compare with.

Frames
------
A request names its frame ``W × L`` (``Request(size, shape=(W, L))``, W along
x).  A plain size gets one by a named *shape rule* (:func:`frame_for`).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from functools import lru_cache
from typing import Any, overload

import numpy as np

from ...errors import InvalidArgument
from ...topology.base import Topology
from ...topology.torus import Torus
from ..base import Request

__all__ = [
    "Layers",
    "layers_of",
    "Rect",
    "Blocks",
    "SHAPE_RULES",
    "frame_for",
    "request_frame",
    "free_bases",
    "reference_free_bases",
    "accepts_grid",
    "factor_pairs",
    "squareness",
]

#: ``(x, r, w, l)``: lower-left cell ``(x, r)`` (r counts rows across layers), width w, height l
Rect = tuple[int, int, int, int]

#: How a request without a shape becomes a frame (see :func:`frame_for`).
SHAPE_RULES = ("square", "square_strict")


def accepts_grid(topology: Topology) -> bool:
    """Meshes and tori of two or more dimensions (2-D layers: the first two sides; wrap links unused)."""
    return isinstance(topology, Torus) and topology.ndim >= 2


class Layers:
    """The layered 2-D geometry of a grid machine (see the module notes); cached per topology.

    Parameters
    ----------
    dims : tuple of int
        The machine's sides (at least two); ``X = dims[0]``, ``Y = dims[1]``,
        ``Z`` = the product of the rest.

    Examples
    --------
    >>> g = Layers((4, 3, 2))
    >>> g.X, g.Y, g.Z, g.rows
    (4, 3, 2, 6)
    >>> g.rect_nodes((1, 3, 2, 2)).tolist()    # layer 1, cells (1..2, 0..1)
    [13, 14, 17, 18]
    >>> bin(g.all_free).count("1") == g.n
    True
    """

    def __init__(self, dims: tuple[int, ...]):
        if len(dims) < 2:
            raise InvalidArgument("dims", dims, "two or more sides")
        self.dims = dims
        self.X = int(dims[0])
        self.Y = int(dims[1])
        self.Z = int(np.prod(dims[2:], dtype=np.int64)) if len(dims) > 2 else 1
        self.rows = self.Y * self.Z
        self.n = self.X * self.rows
        self.S = self.X + 1  # bits per padded row
        self.LS = self.Y + 1  # padded rows per layer
        self.nbits = self.S * self.LS * self.Z
        self.nbytes = (self.nbits + 7) // 8
        row = (1 << self.X) - 1
        self.all_free = sum(row << (self.S * self._prow(r)) for r in range(self.rows))
        # bit index -> node id (-1 on padding), node id -> bit index
        bits = np.full(self.nbits, -1, dtype=np.int64)
        nodes = np.arange(self.n, dtype=np.int64)
        x, r = nodes % self.X, nodes // self.X
        self.bit_of_node = x + self.S * (r + r // self.Y)
        bits[self.bit_of_node] = nodes
        self.node_of_bit = bits
        self._colrep: dict[int, int] = {}
        self._shape_mask: dict[tuple[int, int], int] = {}
        self._lattice_rows: dict[tuple[int, int], int] = {}  # (w, x0) -> the bits of columns x0, x0 + w, ... of a row
        self._ar = np.arange(max(self.X, self.rows) + 2, dtype=np.int64)
        self._offsets: dict[tuple[int, int], np.ndarray] = {}

    def __deepcopy__(self, memo: dict[int, Any]) -> "Layers":
        return self  # immutable (its memos are pure functions of the dims), cached per dims: copies share it

    def _prow(self, r: int) -> int:
        """Padded row of row ``r``."""
        return r + r // self.Y

    def layer_mask(self, z: int) -> int:
        """The free mask of layer ``z`` with every cell free."""
        per = self.S * self.LS
        full = self.all_free & ((1 << per) - 1)
        return full << (per * z)

    def lattice(self, z: int, x0: int, r0: int, w: int, l: int) -> int:
        """The cells ``(x, r)`` of layer ``z`` with ``x ≡ x0 (mod w)`` and ``r ≡ r0 (mod l)`` (``r`` the row
        over all layers), as bits: the columns' bits of one row (memoised) on each of those rows."""
        row = self._lattice_rows.get((w, x0))
        if row is None:
            row = self._lattice_rows[(w, x0)] = sum(1 << x for x in range(x0, self.X, w))
        out = 0
        lo = z * self.Y
        for r in range(lo + (r0 - lo) % l, lo + self.Y, l):
            out |= row << (self.S * self._prow(r))
        return out

    # ------------------------------------------------------------ rectangles
    def shape_mask(self, w: int, l: int) -> int:
        """Bits of a ``w × l`` rectangle based at bit 0 (memoised)."""
        key = (w, l)
        m = self._shape_mask.get(key)
        if m is None:
            rep = self._colrep.get(l)
            if rep is None:
                rep = self._colrep[l] = sum(1 << (self.S * j) for j in range(l))
            m = self._shape_mask[key] = ((1 << w) - 1) * rep
        return m

    def ring_mask(self, w: int, l: int) -> int:
        """The cells just outside a ``w × l`` rectangle, as bits relative to the cell below-left of its base.

        Bottom row at bits ``1..w``, top row at ``(l+1)·S + 1 ..``, left
        column at ``j·S``, right column at ``j·S + w + 1`` (``j = 1..l``);
        corners excluded (they are not edge neighbours).
        """
        key = (-w, l)  # shares the memo with shape masks; negative width: rings
        m = self._shape_mask.get(key)
        if m is None:
            S = self.S
            row = ((1 << w) - 1) << 1
            m = row | (row << ((l + 1) * S))
            for j in range(1, l + 1):
                m |= (1 << (j * S)) | (1 << (j * S + w + 1))
            self._shape_mask[key] = m
        return m

    def rect_mask(self, rect: Rect) -> int:
        """Bits of ``rect`` in the free-mask layout."""
        x, r, w, l = rect
        return self.shape_mask(w, l) << (x + self.S * (r + r // self.Y))

    def rect_nodes(self, rect: Rect) -> np.ndarray:
        """Node ids of ``rect``, ascending (row by row)."""
        x, r, w, l = rect
        off = self._offsets.get((w, l))
        if off is None:
            ar = self._ar
            off = ((self.X * ar[:l])[:, None] + ar[:w]).ravel()
            if w * l <= 4096 and len(self._offsets) < 4096:  # memo of the usual frames, bounded
                off.flags.writeable = False
                self._offsets[(w, l)] = off
        return off + (x + self.X * r)

    def rects_nodes(self, rects: Sequence[Rect]) -> np.ndarray:
        """Node ids of several rectangles, in order: each row-major, one after the other."""
        if len(rects) == 1:
            return self.rect_nodes(rects[0])
        return np.concatenate([self.rect_nodes(r) for r in rects])

    def base_of_bit(self, b: int) -> tuple[int, int]:
        """``(x, r)`` of bit ``b`` (a real cell)."""
        p, x = divmod(b, self.S)
        return x, p - p // self.LS

    def set_bits(self, v: int) -> np.ndarray:
        """Indices of the set bits of ``v``, ascending (row-major order of the cells)."""
        raw = np.frombuffer(v.to_bytes(self.nbytes, "little"), dtype=np.uint8)
        return np.flatnonzero(np.unpackbits(raw, bitorder="little").view(bool))  # bool: numpy's fast path

    def mask_of_nodes(self, nodes: np.ndarray) -> int:
        """The bit set of ``nodes``."""
        bits = np.zeros(self.nbytes * 8, dtype=np.uint8)
        bits[self.bit_of_node[nodes]] = 1
        return int.from_bytes(np.packbits(bits, bitorder="little").tobytes(), "little")

    def busy_grid(self, free: int) -> np.ndarray:
        """The busy cells as a ``(rows, X)`` boolean array (row ``r``, column ``x``)."""
        raw = np.frombuffer(free.to_bytes(self.nbytes, "little"), dtype=np.uint8)
        bits = np.unpackbits(raw, bitorder="little")[: self.nbits].astype(bool)
        return ~bits[self.bit_of_node].reshape(self.rows, self.X)


@lru_cache(maxsize=64)
def _layers(dims: tuple[int, ...]) -> Layers:
    return Layers(dims)


def layers_of(topology: Topology) -> Layers:
    """The (cached, immutable) :class:`Layers` of a mesh or torus of two or more dimensions."""
    if not accepts_grid(topology):
        raise InvalidArgument("topology", topology.spec(), "a mesh or torus of two or more dimensions")
    return _layers(tuple(topology.dims))  # type: ignore[attr-defined]


# --------------------------------------------------------------- searching
def _runs(v: int, k: int, step: int) -> int:
    """Bits ``b`` of ``v`` such that ``b, b + step, ..., b + (k-1)·step`` are all set."""
    out = -1
    cur, curlen, pos = v, 1, 0
    while k:
        if k & 1:
            out = cur if out == -1 else out & (cur >> (pos * step))
            pos += curlen
        k >>= 1
        if k:
            cur &= cur >> (curlen * step)
            curlen *= 2
    return out


def free_bases(g: Layers, free: int, w: int, l: int) -> int:
    """The bit set of every base where a free ``w × l`` rectangle lies (0 if none).

    Examples
    --------
    >>> g = Layers((4, 4))
    >>> busy = g.rect_mask((1, 1, 2, 2))         # a 2 × 2 block in the middle
    >>> v = free_bases(g, g.all_free & ~busy, 4, 1)
    >>> [g.base_of_bit(b) for b in range(g.nbits) if v >> b & 1]   # whole free rows
    [(0, 0), (0, 3)]
    """
    if w > g.X or l > g.Y or w < 1 or l < 1:
        return 0
    h = _runs(free, w, 1) if w > 1 else free
    return _runs(h, l, g.S) if l > 1 else h


def reference_free_bases(busy: np.ndarray, Y: int, w: int, l: int) -> list[tuple[int, int]]:
    """Bases ``(x, r)`` of free ``w × l`` rectangles by 2-D prefix sums (the plain reference).

    ``busy`` is the ``(rows, X)`` busy grid, ``Y`` the rows per layer.  The box
    sum of every candidate base is four look-ups in the prefix-sum table; a
    base is free iff its box sum is 0 and the rectangle stays in its layer.

    >>> reference_free_bases(np.array([[0, 1, 0], [0, 0, 0]], bool), 2, 1, 2)
    [(0, 0), (2, 0)]
    """
    rows, X = busy.shape
    if w > X or l > Y:
        return []
    P = np.zeros((rows + 1, X + 1), dtype=np.int64)
    P[1:, 1:] = busy.astype(np.int64).cumsum(axis=0).cumsum(axis=1)
    box = P[l:, w:] - P[:-l, w:] - P[l:, :-w] + P[:-l, :-w]
    r, x = np.nonzero(box == 0)
    ok = (r % Y) + l <= Y
    return [(int(a), int(b)) for a, b in zip(x[ok], r[ok])]


# ------------------------------------------------------------------ frames
def factor_pairs(size: int) -> list[tuple[int, int]]:
    """Factor pairs ``(w, l)``, ``w·l = size``, both orientations."""
    out = []
    a = 1
    while a * a <= size:
        if size % a == 0:
            out.append((size // a, a))
            if a * a != size:
                out.append((a, size // a))
        a += 1
    return out


def squareness(f: tuple[int, int]) -> tuple[int, int]:
    """Sort key: closest to square first, then the wider orientation (W ≥ L) first."""
    return abs(f[0] - f[1]), -f[0]


@lru_cache(maxsize=4096)
def frame_for(size: int, X: int, Y: int, rule: str = "square", pad: bool = True) -> tuple[int, int]:
    """The frame ``(W, L)`` a request of ``size`` processors without a shape is given on ``X × Y`` layers.

    Rules
    -----
    ``"square"`` (default)
        The factor pair ``W·L = size`` closest to square that fits a layer
        (``W ≤ X``, ``L ≤ Y``), the wider orientation first on a tie.  If no
        factor pair fits (a prime larger than both sides), allocators that
        need one rectangle (``pad=True``) get the smallest frame of at least
        ``size`` cells that fits, closest to square — its extra cells are
        internal fragmentation (``granted − requested``); allocators that
        split requests (``pad=False``) get the factor pair closest to square,
        which they split.
    ``"square_strict"``
        The factor pair closest to square that fits, else the factor pair
        closest to square (which a one-rectangle allocator can never place):
        never rounds.

    Bani-Ahmad ("Simulation environment") draws the two sides of every
    job; this rule serves workloads that give only a size (the traces).

    Examples
    --------
    >>> frame_for(12, 20, 20), frame_for(7, 4, 4), frame_for(7, 4, 4, pad=False), frame_for(7, 4, 4, "square_strict")
    ((4, 3), (4, 2), (7, 1), (7, 1))
    """
    if rule not in SHAPE_RULES:
        raise InvalidArgument("shape_rule", rule, f"one of {', '.join(SHAPE_RULES)}")
    pairs = factor_pairs(size)
    fit = [f for f in pairs if f[0] <= X and f[1] <= Y]
    if fit:
        return min(fit, key=squareness)
    if rule == "square_strict" or not pad or size > X * Y:
        return min(pairs, key=squareness)
    l = -(-size // X)
    best = (X * l, abs(X - l), -X, X)  # size <= X*Y: the frame X × ceil(size/X) fits
    for w in range(1, X):
        l = -(-size // w)
        if l <= Y:
            best = min(best, (w * l, abs(w - l), -w, w))
    return best[3], -(-size // best[3])


def request_frame(request: Request) -> tuple[int, int] | None:
    """A request's own 2-D frame ``(W, L)``, or ``None`` if it gives no shape.

    A 1-D shape ``(s,)`` is ``s × 1``; longer shapes are accepted when at most
    two sides exceed 1 (``(4, 1, 3)`` is ``4 × 3``).

    Raises
    ------
    InvalidArgument
        A shape with three or more sides larger than 1.

    >>> request_frame(Request(6, (3, 2))), request_frame(Request(6, (1, 2, 3))), request_frame(Request(6))
    ((3, 2), (2, 3), None)
    """
    shape = request.shape
    if shape is None:
        return None
    if len(shape) == 2:
        return shape[0], shape[1]
    if len(shape) == 1:
        return shape[0], 1
    big = [s for s in shape if s > 1]
    if len(big) > 2:
        raise InvalidArgument("shape", shape, "a 2-D frame W x L (at most two sides larger than 1)")
    big += [1] * (2 - len(big))
    return big[0], big[1]


# ------------------------------------------------------------------ blocks
class Blocks(Sequence[Rect]):
    """The blocks an allocation is made of: a read-only sequence of ``(x, r, w, l)`` rectangles.

    Held as a tuple of tuples (allocators that grant a few rectangles) or as a
    read-only ``(k, 4)`` integer array (allocators that grant hundreds of
    pages build it in one step); either way items are plain tuples and
    :attr:`array` is the array.  Rows ``r`` count across layers (see
    :mod:`topoalloc.alloc.mesh2d.geometry`).

    Examples
    --------
    >>> b = Blocks.of([(0, 0, 2, 2), (3, 1, 1, 1)])
    >>> len(b), b[1], list(b) == [(0, 0, 2, 2), (3, 1, 1, 1)], b.area, b == Blocks.wrap(b.array.copy())
    (2, (3, 1, 1, 1), True, 5, True)
    """

    __slots__ = ("_data",)
    _data: "tuple[Rect, ...] | np.ndarray"

    def __init__(self, data: "tuple[Rect, ...] | np.ndarray"):
        object.__setattr__(self, "_data", data)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("Blocks is immutable")

    @classmethod
    def of(cls, rects: Sequence[Rect]) -> "Blocks":
        """From rectangles (tuples of four ints), kept as a tuple."""
        return cls(tuple(rects))

    @classmethod
    def wrap(cls, array: np.ndarray) -> "Blocks":
        """Take a private ``(k, 4)`` int64 array as is (made read-only; no copy)."""
        array.flags.writeable = False
        return cls(array)

    @property
    def array(self) -> np.ndarray:
        """The rectangles as a read-only ``(k, 4)`` int64 array."""
        d = self._data
        if isinstance(d, np.ndarray):
            return d
        a = np.array(d, dtype=np.int64).reshape(-1, 4)
        a.flags.writeable = False
        return a

    def __len__(self) -> int:
        d = self._data
        return int(d.shape[0]) if isinstance(d, np.ndarray) else len(d)

    @overload
    def __getitem__(self, i: int) -> Rect: ...
    @overload
    def __getitem__(self, i: slice) -> "Blocks": ...
    def __getitem__(self, i: int | slice) -> "Rect | Blocks":
        d = self._data
        if isinstance(i, slice):
            return Blocks(d[i])
        if isinstance(d, np.ndarray):
            x, r, w, l = d[i].tolist()
            return (x, r, w, l)
        return d[i]

    def __iter__(self) -> Iterator[Rect]:
        d = self._data
        if isinstance(d, np.ndarray):
            for x, r, w, l in d.tolist():
                yield (x, r, w, l)
        else:
            yield from d

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Blocks):
            return list(self) == list(other)
        if isinstance(other, Sequence):
            return list(self) == [tuple(o) for o in other]
        return NotImplemented

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __repr__(self) -> str:
        shown = list(self)[:6]
        return f"Blocks({shown}{'...' if len(self) > 6 else ''})"

    @property
    def area(self) -> int:
        """Cells covered (the blocks are disjoint)."""
        return sum(w * l for _, _, w, l in self)

    def __deepcopy__(self, memo: dict[int, Any]) -> "Blocks":
        return self  # immutable

    def __reduce__(self) -> tuple[Any, ...]:
        return (Blocks, (self._data,))
