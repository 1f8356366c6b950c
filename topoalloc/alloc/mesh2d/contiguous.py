"""Contiguous 2-D allocation: First Fit, Best Fit, Frame Sliding, Adaptive Scan.

Each grants one free submesh of the request's frame ``W × L`` (Bani-Ahmad,
"Previous allocation strategies — Contiguous allocation strategies"):

First Fit, Best Fit (Zhu 1992)
    Complete submesh recognition: every base whose ``W × L`` rectangle is free
    is found (bit-parallel, :func:`~topoalloc.alloc.mesh2d.geometry.free_bases`).
    First Fit takes the first base in row-major order (lowest row, then
    lowest column; layers in order); Best Fit the base with the highest
    perimeter score (``criterion``, see :data:`~topoalloc.alloc.mesh2d.core.CRITERIA`),
    ties to the first in row-major order.
Frame Sliding (Chuang & Tzeng 1994)
    The frame slides from the lowest leftmost free cell of a layer with
    horizontal stride ``W`` and vertical stride ``L``: only bases
    ``(x0 + iW, y0 + jL)`` are examined (``(x0, y0)`` that cell; i, j of
    any sign), in row-major order — it can miss a free submesh that First Fit
    finds.
Adaptive Scan (Ding & Bhuyan 1993)
    First Fit in the requested orientation, then in the rotated one
    (``L × W``).

None of them rounds a request with a shape; a plain size gets the shape rule's
frame, padded only when no factor pair fits (``granted − requested`` is then
internal fragmentation, recorded by the simulation as allocated size).
"""

from __future__ import annotations

from ...registry import ALLOCATORS
from ...topology.base import Topology
from .core import ContiguousAllocator
from .geometry import Rect, accepts_grid

__all__ = ["FirstFit", "BestFit", "FrameSliding", "AdaptiveScan"]


class FirstFit(ContiguousAllocator):
    """Contiguous First Fit with complete submesh recognition (Zhu 1992).

    Examples
    --------
    >>> from topoalloc.alloc import Request
    >>> from topoalloc.topology import parse_machine
    >>> a = FirstFit(parse_machine("mesh:4x4"))
    >>> a.allocate(Request(4, (2, 2))).info["blocks"][0], a.allocate(Request(6, (3, 2))).info["blocks"][0]
    ((0, 0, 2, 2), (0, 2, 3, 2))
    """

    name = "mesh_first_fit"
    pure_search = True
    fit_monotone = True

    def _search(self, w: int, l: int) -> Rect | None:
        return self._first_fit(w, l)


class BestFit(ContiguousAllocator):
    """Contiguous Best Fit with complete submesh recognition (Zhu 1992); ``criterion`` scores candidates.

    Examples
    --------
    >>> from topoalloc.alloc import Request
    >>> from topoalloc.topology import parse_machine
    >>> a = BestFit(parse_machine("mesh:5x3"))
    >>> x = a.allocate(Request(3, (1, 3)))   # a full column: the left edge scores highest
    >>> x.info["blocks"][0], a.allocate(Request(2, (2, 1))).info["blocks"][0]
    ((0, 0, 1, 3), (1, 0, 2, 1))
    """

    name = "mesh_best_fit"
    pure_search = True
    fit_monotone = True

    def __init__(self, topology: Topology, *, criterion: str = "perimeter", shape_rule: str = "square"):
        super().__init__(topology, shape_rule=shape_rule)
        self._enable_best_fit(criterion)

    def _search(self, w: int, l: int) -> Rect | None:
        return self._best_fit(w, l)


class FrameSliding(ContiguousAllocator):
    """Frame Sliding (Chuang & Tzeng 1994): strides of the frame's width and height from the lowest leftmost free cell.

    Examples
    --------
    >>> from topoalloc.alloc import Request
    >>> from topoalloc.topology import parse_machine
    >>> a = FrameSliding(parse_machine("mesh:4x4"))
    >>> x = a.allocate(Request(1, (1, 1)))
    >>> a.allocate(Request(4, (2, 2))).info["blocks"][0]   # bases x in {1, 3}: (1, 0)
    (1, 0, 2, 2)
    """

    name = "frame_sliding"
    pure_search = True

    def _search(self, w: int, l: int) -> Rect | None:
        return self._frame_slide(w, l)


class AdaptiveScan(ContiguousAllocator):
    """Adaptive Scan (Ding & Bhuyan 1993): First Fit, then First Fit of the rotated frame.

    Examples
    --------
    >>> from topoalloc.alloc import Request
    >>> from topoalloc.topology import parse_machine
    >>> a = AdaptiveScan(parse_machine("mesh:4x2"))
    >>> a.allocate(Request(4, (1, 4))).info["blocks"][0]    # 1 x 4 does not stand in 2 rows: 4 x 1
    (0, 0, 4, 1)
    """

    name = "adaptive_scan"
    pure_search = True
    rotates = True
    fit_monotone = True

    def _search(self, w: int, l: int) -> Rect | None:
        return self._first_fit(w, l)


@ALLOCATORS.register("mesh_first_fit", accepts=accepts_grid)
def make_mesh_first_fit(topology: Topology, shape_rule: str = "square") -> FirstFit:
    """Contiguous First Fit on 2-D meshes (Zhu): first free W×L submesh in row-major order; shape_rule=square|square_strict."""
    return FirstFit(topology, shape_rule=shape_rule)


@ALLOCATORS.register("mesh_best_fit", accepts=accepts_grid)
def make_mesh_best_fit(topology: Topology, criterion: str = "perimeter", shape_rule: str = "square") -> BestFit:
    """Contiguous Best Fit on 2-D meshes (Zhu): free W×L submesh with most busy/boundary neighbours; criterion=perimeter|busy."""
    return BestFit(topology, criterion=criterion, shape_rule=shape_rule)


@ALLOCATORS.register("frame_sliding", accepts=accepts_grid)
def make_frame_sliding(topology: Topology, shape_rule: str = "square") -> FrameSliding:
    """Frame Sliding on 2-D meshes (Chuang & Tzeng): frame strides from the lowest leftmost free node."""
    return FrameSliding(topology, shape_rule=shape_rule)


@ALLOCATORS.register("adaptive_scan", accepts=accepts_grid)
def make_adaptive_scan(topology: Topology, shape_rule: str = "square") -> AdaptiveScan:
    """Adaptive Scan on 2-D meshes (Ding & Bhuyan): First Fit, then the rotated frame."""
    return AdaptiveScan(topology, shape_rule=shape_rule)
