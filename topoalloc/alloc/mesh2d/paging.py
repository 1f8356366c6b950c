"""Paging(i) (Liu, Huang, Lombardi & Bhuyan 1995) and the seeded Random allocator.

Paging
------
Each layer is cut into pages of ``2^i × 2^i`` processors (``page_index`` =
i; both sides of a layer must be multiples of ``2^i``), numbered by an
*indexing* (:data:`INDEXINGS`, :func:`page_order`), layers one after the
other.  A request for ``p`` processors gets the first ``⌈p / 4^i⌉`` free
pages in index order; ``⌈p / 4^i⌉ · 4^i − p`` of them are internal
fragmentation (Bani-Ahmad, "Previous allocation strategies": "this may produce
internal processor fragmentation for large index sizes").  Pages are whole
and every grant is whole pages, so a request fits exactly when enough
processors are free: a counting allocator.  Each page is one block.

Random
------
``p`` free processors drawn uniformly without replacement from a seeded
generator; each processor is a block of its own.  Counting.
"""

from __future__ import annotations

import copy
from typing import Any, ClassVar, Self

import numpy as np

from ...errors import InvalidArgument
from ...registry import ALLOCATORS
from ...topology.base import Topology
from ..base import Allocation, Grant, Request
from ..probes import CountingProbes
from .core import MeshAllocator
from .geometry import Blocks, accepts_grid

__all__ = ["INDEXINGS", "page_order", "Paging", "RandomAllocator"]

#: Page indexings (Liu et al. 1995, as listed by Bani-Ahmad):
#: ``row_major`` — rows of pages bottom to top, each left to right;
#: ``shuffled_row_major`` — Morton (Z) order: the bits of the page row and
#: column interleaved, the row's bit above the column's at each level, so each
#: 2 × 2 group is taken row-major, then the groups row-major, recursively;
#: ``snake`` — rows alternate direction (boustrophedon);
#: ``shuffled_snake`` — the same recursion with each 2 × 2 group taken as a
#: snake, (0, 0), (1, 0), (1, 1), (0, 1) (base-4 digit ``2·y + (x XOR y)``).
#: On page grids whose sides are not powers of two the shuffled orders rank the
#: pages that exist by their key.  Bani-Ahmad names the four but does not define
#: them; these are the usual readings.
INDEXINGS = ("row_major", "shuffled_row_major", "snake", "shuffled_snake")


def page_order(px: int, py: int, indexing: str) -> np.ndarray:
    """Page ids ``i + px·j`` (column ``i``, row ``j``) in index order: a permutation of ``0 .. px·py − 1``.

    Examples
    --------
    >>> page_order(4, 2, "snake").tolist()
    [0, 1, 2, 3, 7, 6, 5, 4]
    >>> page_order(4, 4, "shuffled_row_major").reshape(4, 4).tolist()
    [[0, 1, 4, 5], [2, 3, 6, 7], [8, 9, 12, 13], [10, 11, 14, 15]]
    >>> page_order(2, 2, "shuffled_snake").tolist()
    [0, 1, 3, 2]
    """
    if indexing not in INDEXINGS:
        raise InvalidArgument("indexing", indexing, f"one of {', '.join(INDEXINGS)}")
    ids = np.arange(px * py, dtype=np.int64)
    i, j = ids % px, ids // px
    if indexing == "row_major":
        return ids
    if indexing == "snake":
        key = j * px + np.where(j % 2 == 0, i, px - 1 - i)
        return np.argsort(key, kind="stable")
    key = np.zeros_like(ids)
    for b in range(max(px, py).bit_length()):
        xb, yb = (i >> b) & 1, (j >> b) & 1
        digit = 2 * yb + (xb if indexing == "shuffled_row_major" else xb ^ yb)
        key |= digit << (2 * b)
    return np.argsort(key, kind="stable")


class Paging(CountingProbes, MeshAllocator):
    """Paging(i): the first free pages of ``2^i × 2^i`` in index order (see the module notes).

    Parameters
    ----------
    topology : Torus
    page_index : int
        ``i`` (pages of side ``2^i``); the sides of a layer must be multiples of ``2^i``.
    indexing : str
        One of :data:`INDEXINGS`.

    Examples
    --------
    >>> from topoalloc.topology import parse_machine
    >>> a = Paging(parse_machine("mesh:4x4"), page_index=1, indexing="snake")
    >>> x = a.allocate(Request(5))
    >>> x.size, list(x.info["blocks"])
    (8, [(0, 0, 2, 2), (2, 0, 2, 2)])
    """

    name = "paging"
    claims: ClassVar[frozenset[str]] = frozenset({"blocks", "rounded_size", "aligned_squares"})

    def __init__(self, topology: Topology, *, page_index: int = 0, indexing: str = "row_major"):
        super().__init__(topology)
        g = self.geom
        if not isinstance(page_index, int) or isinstance(page_index, bool) or page_index < 0:
            raise InvalidArgument("page_index", page_index, "a non-negative integer i (pages of 2**i x 2**i)")
        side = 1 << page_index
        if g.X % side or g.Y % side:
            raise InvalidArgument("page_index", page_index, f"pages of side 2**i dividing both sides {g.X}x{g.Y} of the mesh")
        self.page_index = page_index
        self.indexing = indexing
        self.page_side = side
        self.page_size = side * side
        self.name = f"paging:page_index={page_index},indexing={indexing}"
        px, py = g.X // side, g.Y // side
        per_layer = page_order(px, py, indexing)
        cols = np.tile(per_layer % px, g.Z)
        rows = np.concatenate([per_layer // px + z * py for z in range(g.Z)])
        # page k of the index order: its rectangle and its nodes (read-only, shared by snapshots)
        rects = np.stack([cols * side, rows * side, np.full_like(cols, side), np.full_like(cols, side)], axis=1)
        rects.flags.writeable = False
        self._page_rects = rects
        nodes = np.stack([g.rect_nodes((int(x), int(r), side, side)) for x, r, _, _ in rects.tolist()])
        nodes.flags.writeable = False
        self._page_nodes = nodes
        self._free_pages = np.ones(len(rects), dtype=bool)
        self._identity = page_index == 0 and indexing == "row_major"

    def pages_for(self, request: Request) -> int:
        """Pages a request needs: ``⌈p / 4^i⌉``."""
        return -(-request.size // self.page_size)

    def granted_size(self, request: Request) -> int:
        return self.pages_for(request) * self.page_size

    def _allocate(self, request: Request) -> Grant | None:
        k = self.pages_for(request)
        pages = np.flatnonzero(self._free_pages)[:k]
        self._free_pages[pages] = False
        if self._identity:  # Paging(0), row-major: page k is node k
            nodes = pages
        else:
            nodes = np.sort(self._page_nodes[pages].ravel())
        return Grant(nodes, {"blocks": Blocks.wrap(self._page_rects[pages])}, pages)

    def _release(self, allocation: Allocation, token: Any) -> None:
        self._free_pages[token] = True

    def _copy_state(self, clone: Self) -> None:
        clone._free_pages = self._free_pages.copy()


class RandomAllocator(CountingProbes, MeshAllocator):
    """Random (Lo et al. 1997's baseline): ``p`` free processors uniformly at random, seeded.

    Examples
    --------
    >>> from topoalloc.topology import parse_machine
    >>> a, b = RandomAllocator(parse_machine("mesh:4x4"), seed=3), RandomAllocator(parse_machine("mesh:4x4"), seed=3)
    >>> a.allocate(Request(5)).nodes.tolist() == b.allocate(Request(5)).nodes.tolist()
    True
    """

    name = "mesh_random"
    claims: ClassVar[frozenset[str]] = frozenset({"blocks", "rounded_size", "exact_size"})

    def __init__(self, topology: Topology, *, seed: int = 0):
        super().__init__(topology)
        if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
            raise InvalidArgument("seed", seed, "a non-negative integer")
        self.seed = seed
        self._rng = np.random.default_rng(seed)

    def granted_size(self, request: Request) -> int:
        return request.size

    def _allocate(self, request: Request) -> Grant | None:
        free = np.flatnonzero(~self._busy)
        nodes = np.sort(self._rng.choice(free, size=request.size, replace=False))
        X = self.geom.X
        ones = np.ones_like(nodes)
        rects = np.stack([nodes % X, nodes // X, ones, ones], axis=1)
        return Grant(nodes, {"blocks": Blocks.wrap(rects)})

    def _release(self, allocation: Allocation, token: Any) -> None:
        return None

    def _copy_state(self, clone: Self) -> None:
        clone._rng = copy.deepcopy(self._rng)


@ALLOCATORS.register("paging", accepts=accepts_grid)
def make_paging(topology: Topology, page_index: int = 0, indexing: str = "row_major") -> Paging:
    """Paging(i) on 2-D meshes (Liu et al.): first free 2^i x 2^i pages in index order; indexing=row_major|shuffled_row_major|snake|shuffled_snake."""
    return Paging(topology, page_index=page_index, indexing=indexing)


@ALLOCATORS.register("mesh_random", accepts=accepts_grid)
def make_mesh_random(topology: Topology, seed: int = 0) -> RandomAllocator:
    """Random on 2-D meshes: p free processors drawn uniformly (seeded), one block each."""
    return RandomAllocator(topology, seed=seed)
