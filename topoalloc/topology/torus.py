"""Multi-dimensional tori and meshes, and the semitorus (a box with power-of-two sides).

Conventions
-----------
* Node ids: the first dimension is the fastest, ``node = Σ c_i · stride_i`` with
  ``stride_0 = 1``; ``mesh:16x8`` has 16 columns (x) and 8 rows (y).
* Wrap links: a wrapped dimension of size ``n >= 3`` has the link ``(n-1) → 0``.
  A dimension of size 2 has one neighbour each way round, and both ways
  lead to the same node: ``neighbors`` lists it once, ``links`` lists the two
  directions (QCDOC and Tofu build both cables; NetworkX collapses them into one
  edge).  A dimension of size 1 has no links.
* Routing is dimension order (dimension 0 first); in a wrapped dimension a
  message goes the shorter way round, the positive way on a tie.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import reduce

import numpy as np

from ..errors import InvalidArgument
from ..registry import TOPOLOGIES
from .base import Grid

__all__ = ["Torus", "Mesh", "Semitorus", "parse_dims", "is_pow2"]


def is_pow2(n: int) -> bool:
    return n >= 1 and n & (n - 1) == 0


def parse_dims(text: str, *, argument: str = "shape") -> tuple[int, ...]:
    """``"2x2x2x6x8"`` → ``(2, 2, 2, 6, 8)``."""
    try:
        dims = tuple(int(t) for t in text.lower().split("x"))
    except ValueError:
        raise InvalidArgument(argument, text, "sides joined by 'x', e.g. 2x2x2x6x8") from None
    if not dims or any(d < 1 for d in dims):
        raise InvalidArgument(argument, text, "positive sides joined by 'x', e.g. 2x2x2x6x8")
    return dims


class Torus(Grid):
    """A torus (or, with ``wrap`` False in some dimensions, a mesh) of any number of dimensions.

    Parameters
    ----------
    dims : sequence of int
        Side lengths, first dimension fastest.
    wrap : sequence of bool, optional
        Whether each dimension has its wrap-around links (default: all).

    Examples
    --------
    >>> t = Torus((2, 2, 2, 6, 8))
    >>> t.n_nodes, t.coord(5), t.node_at((1, 0, 1, 0, 0))
    (384, (1, 0, 1, 0, 0), 5)
    >>> Torus((8,)).distance(0, 7), Mesh((8,)).distance(0, 7)
    (1, 7)
    """

    kind = "torus"

    def __init__(self, dims: Sequence[int], wrap: Sequence[bool] | None = None):
        dims = tuple(int(d) for d in dims)
        if not dims or any(d < 1 for d in dims):
            raise InvalidArgument("dims", dims, "one or more positive side lengths")
        wrap = (True,) * len(dims) if wrap is None else tuple(bool(w) for w in wrap)
        if len(wrap) != len(dims):
            raise InvalidArgument("wrap", wrap, f"{len(dims)} flags, one per dimension")
        self.dims = dims
        self.wrap = wrap
        self.ndim = len(dims)
        self.strides = tuple(int(math.prod(dims[:i])) for i in range(len(dims)))
        self._n = int(math.prod(dims))
        self._coords: np.ndarray | None = None

    @property
    def n_nodes(self) -> int:
        return self._n

    def key(self) -> tuple:
        return ("grid", self.dims, self.wrap)

    def spec(self) -> str:
        sides = "x".join(map(str, self.dims))
        if all(self.wrap):
            return f"torus:{sides}"
        if not any(self.wrap):
            return f"mesh:{sides}"
        return f"torus:{sides},wrap=" + "".join("1" if w else "0" for w in self.wrap)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.dims!r}" + ("" if all(self.wrap) or type(self) is Mesh else f", wrap={self.wrap!r}") + ")"

    # ------------------------------------------------------------ coordinates
    @property
    def coords(self) -> np.ndarray:
        """(n, d) array of every node's coordinates (cached on the immutable topology)."""
        if self._coords is None:
            idx = np.arange(self._n)
            c = np.stack([(idx // s) % d for s, d in zip(self.strides, self.dims)], axis=1)
            c.flags.writeable = False
            self._coords = c
        return self._coords

    def coord(self, node: int) -> tuple[int, ...]:
        self.check_node(node)
        return tuple((node // s) % d for s, d in zip(self.strides, self.dims))

    def node_at(self, coord: Sequence[int]) -> int:
        if len(coord) != self.ndim or any(not 0 <= c < d for c, d in zip(coord, self.dims)):
            raise InvalidArgument("coord", tuple(coord), f"{self.ndim} coordinates within {self.dims}")
        return int(sum(c * s for c, s in zip(coord, self.strides)))

    # ------------------------------------------------------------------ links
    def links(self, node: int) -> list[tuple[int, int, int]]:
        """Outgoing channels ``(neighbour, dimension, direction ±1)``; see the module notes on sizes 1 and 2."""
        c = self.coord(node)
        out = []
        for i, (x, d) in enumerate(zip(c, self.dims)):
            if d == 1:
                continue
            for step in (1, -1):
                y = x + step
                if 0 <= y < d:
                    out.append((node + step * self.strides[i], i, step))
                elif self.wrap[i] and d >= 2:
                    if d == 2:
                        continue  # both directions already reach the one neighbour through 0 <= y < 2
                    out.append((node + (y % d - x) * self.strides[i], i, step))
        if any(d == 2 and w for d, w in zip(self.dims, self.wrap)):
            # a wrapped size-2 dimension: the second cable, in the other direction
            for i, (x, d) in enumerate(zip(c, self.dims)):
                if d == 2 and self.wrap[i]:
                    other = node + (1 - 2 * x) * self.strides[i]
                    out.append((other, i, -1 if x == 0 else 1))  # the wrap cable: 0 → 1 going down
        return out

    def neighbors(self, node: int) -> list[int]:
        return sorted({v for v, _, _ in self.links(node)})

    def adjacent(self, a: int, b: int) -> bool:
        """True iff a link joins ``a`` and ``b``."""
        ca, cb = self.coord(a), self.coord(b)
        diff = [i for i in range(self.ndim) if ca[i] != cb[i]]
        if len(diff) != 1:
            return False
        i = diff[0]
        delta = abs(ca[i] - cb[i])
        return delta == 1 or (self.wrap[i] and delta == self.dims[i] - 1)

    def _delta(self, i: int, x: int, y: int) -> int:
        """Signed number of hops from x to y in dimension i (shorter way round; + on a tie)."""
        d = y - x
        if not self.wrap[i]:
            return d
        n = self.dims[i]
        d %= n
        return d if d <= n - d else d - n

    def distance(self, a: int, b: int) -> int:
        ca, cb = self.coord(a), self.coord(b)
        return sum(abs(self._delta(i, x, y)) for i, (x, y) in enumerate(zip(ca, cb)))

    def route(self, a: int, b: int) -> list[int]:
        """Dimension-order route: dimension 0 first, shorter way round."""
        self.check_node(b, "b")
        path = [a]
        cur = list(self.coord(a))
        cb = self.coord(b)
        for i in range(self.ndim):
            d = self._delta(i, cur[i], cb[i])
            step = 1 if d > 0 else -1
            for _ in range(abs(d)):
                cur[i] = (cur[i] + step) % self.dims[i]
                path.append(self.node_at(cur))
        return path

    def box_nodes(self, offset: Sequence[int], sides: Sequence[int]) -> np.ndarray:
        """Sorted node ids of the axis-aligned box ``offset .. offset + sides - 1`` (no wrapping)."""
        ids = np.zeros(1, dtype=np.int64)
        for o, s, st in zip(offset, sides, self.strides):
            ids = (ids[None, :] + ((o + np.arange(s)) * st)[:, None]).ravel()
        ids.sort()
        return ids


class Mesh(Torus):
    """A mesh: a torus without wrap-around links.

    >>> Mesh((16, 8)).spec()
    'mesh:16x8'
    """

    kind = "mesh"

    def __init__(self, dims: Sequence[int]):
        super().__init__(dims, wrap=(False,) * len(tuple(dims)))


@dataclass(frozen=True, slots=True)
class Semitorus:
    """An axis-aligned box of a torus whose sides are powers of two, each side flagged wrapped.

    ``offset`` and ``sides`` are in the machine's coordinates (one entry per
    machine dimension; a side of 1 means the box is one node thick there).
    ``wrapped[i]`` says whether the box owns a wrap link in dimension ``i``: true
    when the side spans a wrapped machine dimension, and, by convention, for
    sides of 1 or 2, whose ring needs no link other than the one between its
    nodes.  A dimension with a side of at least 4 and no wrap is a path.

    Examples
    --------
    >>> s = Semitorus((0, 0), (4, 2), (False, True))
    >>> s.size, s.exponents, s.shape
    (8, (2, 1), (4, 2))
    """

    offset: tuple[int, ...]
    sides: tuple[int, ...]
    wrapped: tuple[bool, ...]
    size: int = field(init=False, compare=False, repr=False)
    order: int = field(init=False, compare=False, repr=False)  # log2 of the size
    _hash: int | None = field(init=False, compare=False, repr=False)  # semitori key the allocators' memos: hashed once

    def __hash__(self) -> int:
        h = self._hash
        if h is None:  # (on first use: the proofs build semitori with symbolic offsets, never hashed)
            h = hash((self.offset, self.sides, self.wrapped))
            object.__setattr__(self, "_hash", h)
        return h

    def __post_init__(self) -> None:
        if not (len(self.offset) == len(self.sides) == len(self.wrapped)):
            raise InvalidArgument("sides", self.sides, "offset, sides and wrapped of one length")
        if any(not is_pow2(s) for s in self.sides):
            raise InvalidArgument("sides", self.sides, "powers of two")
        object.__setattr__(self, "wrapped", Semitorus.ring_flags(self.sides, self.wrapped))
        size = int(reduce(lambda a, b: a * b, self.sides, 1))
        object.__setattr__(self, "size", size)
        object.__setattr__(self, "order", size.bit_length() - 1)
        object.__setattr__(self, "_hash", None)

    @classmethod
    def _unchecked(cls, offset: tuple[int, ...], sides: tuple[int, ...], wrapped: tuple[bool, ...], order: int, *, normal: bool = False) -> "Semitorus":
        """For the partition schemes, whose arguments are valid by construction (and tested so); ``normal``:
        ``wrapped`` already counts every side of 1 or 2 a ring (as :meth:`ring_flags` gives it), and is kept as is."""
        self = object.__new__(cls)
        setattr_ = object.__setattr__
        setattr_(self, "offset", offset)
        setattr_(self, "sides", sides)
        setattr_(self, "wrapped", wrapped if normal else Semitorus.ring_flags(sides, wrapped))
        setattr_(self, "size", 1 << order)
        setattr_(self, "order", order)
        setattr_(self, "_hash", None)
        return self

    @classmethod
    def _unchecked_many(cls, offsets: Iterable[tuple[int, ...]], sides: tuple[int, ...], wrapped: tuple[bool, ...], order: int) -> list["Semitorus"]:
        """:meth:`_unchecked` for many semitori of one shape (``wrapped`` as :meth:`ring_flags` gives it), one per
        offset: EP's thousands of pieces.  The fields are set through their slots' own descriptors, which the
        frozen dataclass's ``__setattr__`` would refuse and ``object.__setattr__`` looks up by name each time."""
        new = object.__new__
        slot = Semitorus.__dict__  # (the slots' member descriptors)
        set_offset, set_sides, set_wrapped = slot["offset"].__set__, slot["sides"].__set__, slot["wrapped"].__set__
        set_size, set_order, set_hash = slot["size"].__set__, slot["order"].__set__, slot["_hash"].__set__
        size = 1 << order
        out: list[Semitorus] = []
        append = out.append
        for offset in offsets:
            self = new(cls)
            set_offset(self, offset)
            set_sides(self, sides)
            set_wrapped(self, wrapped)
            set_size(self, size)
            set_order(self, order)
            set_hash(self, None)
            append(self)
        return out

    @staticmethod
    def ring_flags(sides: tuple[int, ...], wrapped: tuple[bool, ...]) -> tuple[bool, ...]:
        """The wrap flags as a semitorus keeps them: a side of 1 or 2 is always a ring."""
        return tuple(bool(w) or s <= 2 for w, s in zip(wrapped, sides))

    @property
    def exponents(self) -> tuple[int, ...]:
        return tuple(s.bit_length() - 1 for s in self.sides)

    @property
    def shape(self) -> tuple[int, ...]:
        """The sides larger than 1 (the semitorus's own dimensions)."""
        return tuple(s for s in self.sides if s > 1)

    def __deepcopy__(self, memo: dict) -> "Semitorus":
        return self  # immutable

    def contains(self, other: "Semitorus") -> bool:
        return all(o <= p and p + t <= o + s for o, s, p, t in zip(self.offset, self.sides, other.offset, other.sides))

    def describe(self) -> str:
        parts = [f"{s}{'' if w else '*'}" for s, w in zip(self.sides, self.wrapped)]
        return "x".join(parts) + f" @ {self.offset}"

    def as_dict(self) -> dict:
        return {"offset": list(self.offset), "sides": list(self.sides), "wrapped": list(self.wrapped)}


@TOPOLOGIES.register("torus")
def _torus_from_spec(sides: str, wrap: str | None = None) -> Torus:
    """torus:AxBx...[,wrap=FLAGS] — a torus, first side fastest (torus:2x2x2x6x8); wrap=101 keeps the links of dimensions 0 and 2 only."""
    dims = parse_dims(sides, argument="machine")
    if wrap is None:
        return Torus(dims)
    if len(wrap) != len(dims) or set(wrap) - {"0", "1"}:
        raise InvalidArgument("machine", f"torus:{sides},wrap={wrap}", f"wrap=FLAGS with {len(dims)} flags of 0/1, one per side")
    return Torus(dims, tuple(f == "1" for f in wrap))


@TOPOLOGIES.register("mesh")
def _mesh_from_spec(sides: str) -> Torus:
    """mesh:AxBx... — a mesh, first side fastest (mesh:16x8 has 16 columns)."""
    return Mesh(parse_dims(sides, argument="machine"))
