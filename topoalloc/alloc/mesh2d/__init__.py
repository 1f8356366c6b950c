"""2-D mesh allocation (Bani-Ahmad, "Processor allocation with reduced internal and external fragmentation in 2D mesh-based multicomputers"): contiguous and non-contiguous allocators.

Contiguous: :class:`FirstFit`, :class:`BestFit`, :class:`FrameSliding`,
:class:`AdaptiveScan`.  Every allocator here works on meshes and tori of two
or more dimensions, seen as 2-D layers (:mod:`.geometry`), and records the
rectangles it granted as ``Allocation.info["blocks"]``.
"""

from .buddy import MBS, Buddy2D, BuddySystem, base4_digits, square_roots
from .contiguous import AdaptiveScan, BestFit, FirstFit, FrameSliding
from .core import CRITERIA, ContiguousAllocator, MeshAllocator
from .partitioning import ANCA, PALD, anca_levels
from .paging import INDEXINGS, Paging, RandomAllocator, page_order
from .geometry import SHAPE_RULES, Blocks, Layers, frame_for, free_bases, layers_of, reference_free_bases

__all__ = [
    "MeshAllocator",
    "ContiguousAllocator",
    "FirstFit",
    "BestFit",
    "FrameSliding",
    "AdaptiveScan",
    "Buddy2D",
    "MBS",
    "BuddySystem",
    "square_roots",
    "base4_digits",
    "ANCA",
    "PALD",
    "anca_levels",
    "Paging",
    "RandomAllocator",
    "page_order",
    "INDEXINGS",
    "Blocks",
    "Layers",
    "layers_of",
    "frame_for",
    "free_bases",
    "reference_free_bases",
    "SHAPE_RULES",
    "CRITERIA",
]
