"""Conversion of a semitorus into a torus for the job (Mao, Chen & Watson §2.3, Figure 1).

A semitorus with dimensions missing their wrap links is turned into a torus
with fewer dimensions by merging dimensions into rings: a group of dimensions
forms a mesh, and a mesh with at least two sides of length >= 2 and an even
number of nodes has a Hamiltonian cycle, which becomes one ring of the job's
torus.  Every edge of the job's virtual torus is then a physical link inside
the allocation (dilation 1).

Two ways, as the paper describes:

* ``"collapse"`` — every dimension missing its wrap goes into one ring (more
  dimensions remain).  If only one dimension misses its wrap it is merged with
  the shortest wrapped dimension (a lone path is not a ring).
* ``"pair"`` — each dimension missing its wrap is paired with a wrapped one
  (longest unwrapped with shortest wrapped, for a more cube-like torus); left
  over unwrapped dimensions are paired among themselves, longest first; a last
  one left alone joins the group of fewest nodes made so far.

Dimensions of side 1 take no part.  Ties (equal sides, equal group sizes) go to
the earlier dimension or group; the job's dimensions are the groups in the order
of their first machine dimension.

A semitorus whose only dimension is an unwrapped path (a 1-D mesh of 4 or more
nodes) cannot become a torus; its conversion says so (``torus=False``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from ...errors import InvalidArgument
from ...topology.torus import Semitorus, Torus

__all__ = ["Conversion", "convert", "CONVERSIONS", "grid_cycle", "snake_path"]

CONVERSIONS = ("collapse", "pair")


def snake_path(sides: Sequence[int]) -> list[tuple[int, ...]]:
    """A Hamiltonian path of the mesh ``sides`` (first coordinate fastest, boustrophedon)."""
    if not sides:
        return [()]
    first, rest = sides[0], sides[1:]
    out: list[tuple[int, ...]] = []
    for j, tail in enumerate(snake_path(rest)):
        xs = range(first) if j % 2 == 0 else range(first - 1, -1, -1)
        out.extend((x,) + tail for x in xs)
    return out


def grid_cycle(rows: int, cols: int) -> list[tuple[int, int]]:
    """A Hamiltonian cycle of the rows×cols grid graph (rows even, cols >= 2), as (row, col) pairs.

    Row 0 left to right, then rows 1..rows-1 snaking over columns 1..cols-1,
    then back up column 0.
    """
    if rows % 2 or rows < 2 or cols < 2:
        raise InvalidArgument("rows", (rows, cols), "an even number of rows and at least two columns")
    cyc = [(0, c) for c in range(cols)]
    for r in range(1, rows):
        cs = range(cols - 1, 0, -1) if r % 2 == 1 else range(1, cols)
        cyc.extend((r, c) for c in cs)
    cyc.extend((r, 0) for r in range(rows - 1, 0, -1))
    return cyc


def _ring_of(sides: Sequence[int]) -> list[tuple[int, ...]]:
    """The order of a group's nodes along its virtual ring.

    One dimension: its own order (a ring when the dimension is wrapped, a path
    otherwise).  Several: a Hamiltonian cycle of their mesh.
    """
    if len(sides) == 1:
        return [(x,) for x in range(sides[0])]
    # rows = the first side (even: a power of two >= 2); columns = a snake through the others
    tail = snake_path(list(sides[1:]))
    return [(r,) + tail[c] for r, c in grid_cycle(sides[0], len(tail))]


@dataclass(frozen=True)
class Conversion:
    """The job's virtual torus and where each of its nodes lies.

    ``shape`` is the virtual torus (first dimension fastest), ``groups[j]`` the
    semitorus dimensions merged into virtual dimension ``j``, ``torus`` whether
    every virtual dimension is a ring (False only for a lone path).
    ``embedding[v]`` is the physical node of virtual node ``v`` (virtual ids,
    first dimension fastest), computed on first use.
    """

    semitorus: Semitorus
    shape: tuple[int, ...]
    groups: tuple[tuple[int, ...], ...]
    torus: bool
    machine: Torus = field(repr=False)
    _cache: dict = field(default_factory=dict, repr=False, compare=False)

    @property
    def embedding(self) -> np.ndarray:
        emb = self._cache.get("embedding")
        if emb is None:
            emb = self._build()
            emb.flags.writeable = False
            self._cache["embedding"] = emb
        return emb

    def _build(self) -> np.ndarray:
        """Virtual node ``v`` (first virtual dimension fastest) -> machine node id, for all ``v`` at once."""
        s = self.semitorus
        strides = self.machine.strides
        M = 1
        for n in self.shape:
            M *= n
        v = np.arange(M, dtype=np.int64)
        emb = np.full(M, sum(int(o) * int(st) for o, st in zip(s.offset, strides)), dtype=np.int64)
        stride = 1
        for grp, n in zip(self.groups, self.shape):
            # the ring of the group's local coordinates, in order, and each position's id offset
            ring = np.asarray(_ring_of([s.sides[i] for i in grp]), dtype=np.int64).reshape(n, len(grp))
            emb += (ring @ np.asarray([strides[i] for i in grp], dtype=np.int64))[(v // stride) % n]
            stride *= n
        return emb

    def __deepcopy__(self, memo: dict) -> "Conversion":
        return self  # immutable (its embedding cache only ever fills in the same value)

    def virtual_edges(self) -> list[tuple[int, int]]:
        """Every edge of the virtual torus (each ring edge once; a ring of 2 has one edge)."""
        return [(u, w) for u, w in self.virtual_edge_array().tolist()]

    def virtual_edge_array(self) -> np.ndarray:
        """:meth:`virtual_edges` as an ``(E, 2)`` array, in the same order."""
        M = len(self.embedding)
        v = np.arange(M, dtype=np.int64)
        parts = []
        stride = 1
        for j, n in enumerate(self.shape):
            x = (v // stride) % n
            forward = x + 1 < n
            # every virtual dimension is a ring when the conversion made a torus (a group of several
            # dimensions is a Hamiltonian cycle, a single one is wrapped); otherwise the only one is the
            # lone unwrapped path.  A ring of 2 is its one edge.
            ring = self.torus and n > 2
            keep = v if ring else v[forward]
            partner = np.where(forward, v + stride, v - (n - 1) * stride) if ring else keep + stride
            parts.append(np.stack([keep, partner], axis=1))
            stride *= n
        return np.concatenate(parts)  # never empty: convert gives a single node the shape (1,)

    def as_dict(self) -> dict:
        return {"shape": list(self.shape), "groups": [list(g) for g in self.groups], "torus": self.torus}


def convert(s: Semitorus, machine: Torus, mode: str = "collapse") -> Conversion:
    """Turn semitorus ``s`` into the job's torus (see the module notes for the two modes)."""
    if mode not in CONVERSIONS:
        raise InvalidArgument("convert", mode, f"one of {', '.join(CONVERSIONS)}")
    dims = [i for i, side in enumerate(s.sides) if side > 1]
    unwrapped = [i for i in dims if not s.wrapped[i]]
    wrapped = [i for i in dims if s.wrapped[i]]
    groups: list[tuple[int, ...]]
    torus = True
    if not unwrapped:
        groups = [(i,) for i in dims]
    elif len(dims) == 1:
        groups = [(dims[0],)]
        torus = False
    elif mode == "collapse":
        merged = list(unwrapped)
        if len(merged) == 1:
            partner = min(wrapped, key=lambda i: (s.sides[i], i))
            merged.append(partner)
            wrapped.remove(partner)
        merged.sort()
        groups = [(i,) for i in wrapped] + [tuple(merged)]
    else:  # pair
        groups = []
        un = sorted(unwrapped, key=lambda i: (-s.sides[i], i))
        wr = sorted(wrapped, key=lambda i: (s.sides[i], i))
        while un and wr:
            a, b = un.pop(0), wr.pop(0)
            groups.append(tuple(sorted((a, b))))
        while len(un) >= 2:
            a, b = un.pop(0), un.pop(0)
            groups.append(tuple(sorted((a, b))))
        if un:  # one unwrapped dimension left: join it to the smallest group made so far
            a = un.pop()
            j = min(range(len(groups)), key=lambda g: (np.prod([s.sides[i] for i in groups[g]]), g))
            groups[j] = tuple(sorted(groups[j] + (a,)))
        groups += [(i,) for i in wr]
    groups.sort(key=lambda g: g[0])
    shape = tuple(int(np.prod([s.sides[i] for i in g])) for g in groups)
    if not shape:
        shape, groups = (1,), [(0,)]
    return Conversion(s, shape, tuple(groups), torus, machine)
