"""Center-based allocators of SST's scheduler: Gen-Alg (nearest), MC1x1 and MM, on meshes and tori of any dimension.

Each tries a set of candidate *centers*, takes the ``k`` free processors
closest to each center, scores that set, and grants the best set.  The
members differ in three choices:

==========  =================================  =============  ==================================
allocator   centers                            closeness      score (smaller is better)
==========  =================================  =============  ==================================
``nearest`` every free processor               L1             Σ over pairs of the L1 distance
``mc1x1``   every free processor               L∞ (shells)    Σ of the L∞ distance to the center
``mm``      every intersection of coordinate   L1             Σ over pairs of the L1 distance
            values of free processors, one
            per dimension
==========  =================================  =============  ==================================

Sources: MC1x1 is Mache, Lo & Windisch, "Minimizing message-passing
contention in fragmentation-free processor allocation" (PDCS 1997): shells
of growing L∞ radius round a free processor, the cost the sum of the shell
numbers.  Gen-Alg (``nearest``) is the 2-approximation of Bender, Bunde,
Demaine, Fekete, Leung, Meijer & Phillips, "Communication-aware processor
allocation for supercomputers: finding point sets of small average
distance" (Algorithmica 50(2), 2008, §3): the ``k`` L1-nearest free
processors of each free processor, the set of least total pairwise
distance.  MM is from Walker, Bunde & Leung, "Faster high-quality processor
allocation" (LCI 2006): the same, with centers at every intersection of the
free processors' coordinate values (which need not be free).  The table is
the one SST's scheduler element documents for its ``NearestAllocator``.
Note that MM here is that algorithm (centers on intersections, least total
pairwise distance), not a "minimise the maximum distance" rule.

Distances are on the machine: on a wrapped dimension the shorter way round.

Tie-breaking (the papers leave it open; ours, fixed and documented):
processors at equal distance from a center are taken in node-id order (the
center itself first when it is free); centers are tried in node-id order
(MM: intersections in order of their node ids), and a later center replaces
the best only with a strictly smaller score, so ties go to the first.

The allocators are not contiguous: any ``k`` free processors will do, so a
request fits iff ``k ≤`` free processors, and every probe is arithmetic
(:class:`~topoalloc.alloc.probes.CountingProbes`).  Each allocation costs
O(C · F) distance evaluations (C centers, F free processors), as in SST.

The search runs compiled when the extension is built (``_ccenter.c``): per
center, the free processors are counted by distance (a histogram: distances
are small integers), which gives the k-th nearest's distance R without a
partial sort, and the pairwise sum comes from the histograms of the set's
coordinates per dimension.  Where it is cheaper (``CenterAllocator._way``),
the counts come without measuring every free processor: MC1x1's L∞ shells
are boxes, counted on a summed-area table; Gen-Alg's and MM's L1 balls are
counted along the lines of the first side, with prefix counts per line (a
center on the last one's line keeps its lines' distances, and the k-th
nearest's distance is looked for within the step between them).
Every number is an exact integer, so the grant, its center and its score
are those of the numpy path below, which stays the reference (``USE_COMPILED = False``; the tests compare the two on random
busy maps of lines, rings and mixed wraps, and on whole runs).
"""

from __future__ import annotations

from typing import Self

import numpy as np

from ..errors import InvalidArgument
from ..registry import ALLOCATORS
from ..topology.base import Grid, Topology
from .base import Allocator, Grant, Request
from .probes import CountingProbes

try:
    import topoalloc.alloc._ccenter as _ccenter
except ImportError:  # the extension is optional: the numpy path below answers alike
    _ccenter = None

__all__ = ["CenterAllocator", "VARIANTS"]

#: most dimensions for MC1x1's shells on a summed-area table (2**d corners per box)
SHELLS_MAX_DIM = 8

#: most dimensions the compiled shells and lines searches take (``_ccenter.c`` refuses more)
LINES_MAX_DIM = 16

#: whether the compiled search (``_ccenter.c``) answers when it is built; the numpy path is the reference
#: (the tests compare the two, and set this to False to run the reference)
USE_COMPILED = True

VARIANTS = ("nearest", "mc1x1", "mm")

#: centers evaluated at once (bounds the (centers × free) distance arrays)
_CHUNK = 256

#: Bytes a chunk of centers may use: about 32 per (center, free processor) pair (distances,
#: keys, partition); on a large machine the chunk shrinks so memory stays bounded. The
#: chunk size does not change the result (the first least score wins within and across chunks).
_CHUNK_BYTES = 256 << 20

#: Longest dimension whose coordinate-distance table is kept (1024^2 int32 entries: 4 MiB)
_TABLE_MAX = 1024


def _distance_table(n: int, ring: bool) -> np.ndarray:
    """(n, n) int32: the distance between two coordinates of a dimension of ``n``, the shorter way round on a ring."""
    a = np.arange(n)
    d = np.abs(a[:, None] - a[None, :])
    return (np.minimum(d, n - d) if ring else d).astype(np.int32)


class CenterAllocator(CountingProbes, Allocator):
    """Center-based allocation on a mesh or torus (see the module notes).

    Parameters
    ----------
    topology : Grid
    variant : {"nearest", "mc1x1", "mm"}

    Examples
    --------
    >>> from topoalloc.topology import parse_machine
    >>> a = CenterAllocator(parse_machine("mesh:4x4"), "mc1x1")
    >>> a.allocate(Request(4)).nodes.tolist()   # the first center whose 4 nearest are one shell away: a 2x2 square
    [0, 1, 4, 5]
    """

    claims = frozenset({"exact_size"})

    def __init__(self, topology: Topology, variant: str = "nearest"):
        super().__init__(topology)
        if variant not in VARIANTS:
            raise InvalidArgument("variant", variant, f"one of {', '.join(VARIANTS)}")
        top = self.topology
        if not isinstance(top, Grid):
            raise InvalidArgument("topology", topology, "a mesh or torus")
        self.grid = top
        self.variant = variant
        self.name = variant
        self._dims = np.asarray(top.dims, dtype=np.int64)
        self._wrap = np.asarray(top.wrap, dtype=bool)
        self._strides = np.asarray(top.strides, dtype=np.int64)
        # per dimension, the distance between every two coordinates (the shorter way round on a ring);
        # None for a dimension longer than _TABLE_MAX (n^2 entries), measured by arithmetic instead
        self._tables = [_distance_table(n, w) if n <= _TABLE_MAX else None for n, w in zip(top.dims, top.wrap)]

    @classmethod
    def accepts(cls, topology: Topology) -> bool:
        """Meshes and tori of any dimension (not machines allocated in whole units: tpu, tofu, bgq)."""
        from ..topology.units import UnitTorus

        return isinstance(topology, Grid) and not isinstance(topology, UnitTorus)

    def _copy_state(self, clone: Self) -> None:
        pass  # all the state is the base's busy mask

    def _coords(self, nodes: np.ndarray) -> np.ndarray:
        return (nodes[:, None] // self._strides[None, :]) % self._dims[None, :]

    def _distances(self, c: np.ndarray, fc: np.ndarray) -> np.ndarray:
        """(C, F) L∞ (mc1x1) or L1 distance from each center to each free processor, one table gather per dimension."""
        out = self._dim_distances(0, c, fc)
        for i in range(1, len(self._tables)):
            per = self._dim_distances(i, c, fc)
            if self.variant == "mc1x1":
                np.maximum(out, per, out=out)
            else:
                out += per
        return out.astype(np.int64)

    def _dim_distances(self, i: int, c: np.ndarray, fc: np.ndarray) -> np.ndarray:
        """(C, F) distance in dimension ``i`` (int32): a table gather, or arithmetic on a long dimension."""
        table = self._tables[i]
        if table is not None:
            return table[c[:, i]][:, fc[:, i]]
        d = np.abs(c[:, i, None] - fc[None, :, i]).astype(np.int32)
        if self._wrap[i]:
            np.minimum(d, int(self._dims[i]) - d, out=d)
        return d

    def _centers(self, free: np.ndarray, fc: np.ndarray) -> np.ndarray:
        if self.variant != "mm":
            return fc
        values = [np.unique(fc[:, i]) for i in range(fc.shape[1])]
        grid = np.stack([g.ravel() for g in np.meshgrid(*values, indexing="ij")], axis=1)
        ids = grid @ self._strides
        return grid[np.argsort(ids, kind="stable")]

    def _pair_sum(self, sel: np.ndarray) -> np.ndarray:
        """Σ over unordered pairs of the L1 distance, per row of ``sel`` ((C, k, d) coordinates)."""
        C, k = sel.shape[0], sel.shape[1]
        total = np.zeros(C, dtype=np.int64)
        rows: np.ndarray | None = None
        for i in range(sel.shape[2]):
            x = sel[:, :, i]
            if not self._wrap[i]:  # on a line, from the sorted coordinates: Σ_j (2j - k + 1) x_(j)
                w = 2 * np.arange(k) - k + 1
                total += (np.sort(x, axis=1) * w[None, :]).sum(axis=1)
            else:  # on a ring, from each row's histogram h of coordinates: h·dist·h / 2 (no sort needed)
                D = int(self._dims[i])
                if rows is None:
                    rows = np.repeat(np.arange(C), k)
                h = np.bincount(rows * D + x.ravel(), minlength=C * D).reshape(C, D)
                table = self._tables[i]
                dist = _distance_table(D, True) if table is None else table
                total += ((h @ dist) * h).sum(axis=1) // 2
        return total

    def _way(self, centers: int, free: int, k: int) -> str:
        """Which compiled search answers: ``"every"`` measures every free processor from every center
        (``_ccenter.best``); MC1x1's ``"shells"`` counts each center's shells on a summed-area table of the
        free processors (one cell per node, two per node of a ring, then 2**d corners per shell);
        Gen-Alg's and MM's ``"lines"`` counts along the machine's lines of its first side (per center, each
        line's distance, a bisection for the k-th nearest's distance, and the set's own processors).  All
        give the same grant; this picks the cheapest by an estimate of the steps each takes."""
        d = len(self._dims)
        if d > LINES_MAX_DIM:
            return "every"
        every = centers * free * (d + 2)
        side = np.where(self._wrap, self._dims // 2, self._dims - 1)
        if self.variant == "mc1x1":
            if d > SHELLS_MAX_DIM:
                return "every"
            # (the table: 8 bytes a cell, at most _CHUNK_BYTES, and about 3d steps a cell to build)
            cells = int(np.prod(np.where(self._wrap, 2 * self._dims, self._dims) + 1))
            if 8 * cells > _CHUNK_BYTES:
                return "every"
            return "shells" if 3 * d * cells + (centers * (int(side.max()) + 1) << d) < every else "every"
        lines = self.n_nodes // int(self._dims[0])
        table = lines * (2 * int(self._dims[0]) + 1)
        per_center = lines * (d + int(side.sum()).bit_length()) + k + int(self._dims.sum())
        return "lines" if table + centers * per_center < every else "every"

    def _allocate(self, request: Request) -> Grant:
        k = request.size
        idle = ~self._busy
        free = np.flatnonzero(idle)
        fc = self._coords(free)
        centers = self._centers(free, fc)
        if USE_COMPILED and _ccenter is not None and len(centers) and 0 < k <= free.size:
            sel = np.empty(k, dtype=np.int64)
            cs = np.ascontiguousarray(centers, dtype=np.int64)
            way = self._way(len(cs), free.size, k)
            if way != "every":
                search = _ccenter.shells if way == "shells" else _ccenter.lines
                i, score = search(idle.view(np.uint8), self._strides, cs, self._dims, self._wrap.view(np.uint8), k, sel)
            else:
                i, score = _ccenter.best(cs, np.ascontiguousarray(fc, dtype=np.int64), self._dims, self._wrap.view(np.uint8), self.variant == "mc1x1", k, sel)
            return Grant(free[sel], {"center": tuple(int(x) for x in centers[i]), "score": int(score)})
        n = self.n_nodes
        best_score: int | None = None
        best: np.ndarray | None = None
        best_center = None
        chunk = max(1, min(_CHUNK, _CHUNK_BYTES // (32 * max(1, free.size))))
        for lo in range(0, len(centers), chunk):
            c = centers[lo : lo + chunk]
            dist = self._distances(c, fc)
            key = dist * n + free[None, :]  # distance, then node id
            if k < free.size:
                part = np.argpartition(key, k - 1, axis=1)[:, :k]
            else:
                part = np.broadcast_to(np.arange(free.size), (len(c), free.size))
            if self.variant == "mc1x1":
                score = np.take_along_axis(dist, part, axis=1).sum(axis=1)
            else:
                score = self._pair_sum(fc[part])
            i = int(np.argmin(score))  # first of the least in this chunk
            if best_score is None or int(score[i]) < best_score:
                best_score = int(score[i])
                best = free[part[i]]
                best_center = tuple(int(x) for x in c[i])
        if best is None:  # size <= free_count is guaranteed by the base, so there is a center
            raise InvalidArgument("request", request, "a request on a machine with free processors")
        return Grant(np.sort(best), {"center": best_center, "score": best_score})


@ALLOCATORS.register("nearest", accepts=CenterAllocator.accepts)
def _make_nearest(topology: Topology) -> CenterAllocator:
    """Gen-Alg (SST's nearest): L1-nearest free processors of each free processor, least total pairwise L1 (Bender et al. 2008)."""
    return CenterAllocator(topology, "nearest")


@ALLOCATORS.register("mc1x1", accepts=CenterAllocator.accepts)
def _make_mc1x1(topology: Topology) -> CenterAllocator:
    """MC1x1: L∞ shells round each free processor, least sum of shell numbers (Mache, Lo & Windisch 1997)."""
    return CenterAllocator(topology, "mc1x1")


@ALLOCATORS.register("mm", accepts=CenterAllocator.accepts)
def _make_mm(topology: Topology) -> CenterAllocator:
    """MM: centers on intersections of free coordinates, L1-nearest, least total pairwise L1 (Walker, Bunde & Leung 2006)."""
    return CenterAllocator(topology, "mm")

