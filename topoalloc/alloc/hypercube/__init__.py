"""Hypercube allocation (Turner 1997, ch. 3): buddy, Gray code, Free List and the Auxiliary Free List."""

from .allocators import AFLAllocator, BuddyAllocator, FreeListAllocator, GrayCodeAllocator, cube_of, mesh_layout
from .embedding import brgc, cluster_partition, coalesce, embed_mesh, partition_leftover, square_shape

__all__ = [
    "AFLAllocator", "BuddyAllocator", "FreeListAllocator", "GrayCodeAllocator", "cube_of", "mesh_layout",
    "brgc", "cluster_partition", "coalesce", "embed_mesh", "partition_leftover", "square_shape",
]
