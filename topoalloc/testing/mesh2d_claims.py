"""Claims of the 2-D mesh allocators, checked from the allocation and the machine's sides only.

A mesh or torus ``X × Y × ...`` is seen as layers of ``X × Y``; rows count
across layers (row ``r`` of layer ``r // Y``), node ``x + X·r``.  Blocks are
``(x, r, w, l)`` rectangles (:mod:`topoalloc.alloc.mesh2d.geometry`).

``blocks``
    ``info["blocks"]`` are rectangles inside one layer each, pairwise
    disjoint, whose cells are exactly the allocation's nodes.
``contiguous``
    One block, ``W × L`` or ``L × W`` for the frame the allocator gives the
    request (``allocator.frame_for``), holding at least the request.
``max_blocks``
    At most ``allocator.max_blocks`` blocks (the partitioning bound; ``None``: no bound).
``aligned_squares``
    Every block is a square whose side is a power of two, its lower-left
    cell at a multiple of the side within its layer (buddies, MBS, pages).
``rounded_size``
    The allocation's size is ``allocator.granted_size(request)``: the request
    itself or the allocator's documented rounding.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["MESH2D_CLAIMS"]


def _sides(allocator: Any) -> tuple[int, int, int] | None:
    dims = getattr(allocator.topology, "dims", None)
    if dims is None or len(dims) < 2:
        return None
    X, Y = int(dims[0]), int(dims[1])
    return X, Y, allocator.n_nodes // X


def _blocks(alloc: Any, allocator: Any) -> str | None:
    sides = _sides(allocator)
    if sides is None:
        return f"blocks claimed on {allocator.topology.spec()}, which has no 2-D layers"
    X, Y, rows = sides
    blocks = alloc.info.get("blocks")
    if blocks is None:
        return "blocks claimed, but the allocation has no info['blocks']"
    seen = np.zeros(allocator.n_nodes, dtype=np.int64)
    for b in blocks:
        x, r, w, l = (int(v) for v in b)
        if w < 1 or l < 1 or x < 0 or x + w > X or r < 0 or r + l > rows or r % Y + l > Y:
            return f"block {(x, r, w, l)} is not a rectangle inside one {X}x{Y} layer"
        cells = (x + X * (r + np.arange(l)))[:, None] + np.arange(w)
        seen[cells.ravel()] += 1
    if (seen > 1).any():
        return f"blocks overlap at nodes {np.flatnonzero(seen > 1).tolist()[:8]}"
    if not np.array_equal(np.flatnonzero(seen), alloc.nodes):
        return f"the blocks cover {int((seen > 0).sum())} nodes, not exactly the allocation's {alloc.size}"
    return None


def _contiguous(alloc: Any, allocator: Any) -> str | None:
    blocks = alloc.info.get("blocks")
    if blocks is None or len(blocks) != 1:
        return f"contiguous claimed, but the allocation has {None if blocks is None else len(blocks)} blocks"
    msg = _blocks(alloc, allocator)
    if msg is not None:
        return msg
    _, _, w, l = (int(v) for v in blocks[0])
    fw, fl = allocator.frame_for(alloc.request)
    if (w, l) not in ((fw, fl), (fl, fw)):
        return f"contiguous claimed, but the submesh is {w}x{l} for the frame {fw}x{fl}"
    if w * l < alloc.request.size:
        return f"a {w}x{l} submesh for a request of {alloc.request.size}"
    return None


def _max_blocks(alloc: Any, allocator: Any) -> str | None:
    bound = getattr(allocator, "max_blocks", None)
    k = len(alloc.info.get("blocks", ()))
    if bound is not None and k > bound:
        return f"{k} blocks, above the partitioning bound {bound}"
    return None


def _aligned_squares(alloc: Any, allocator: Any) -> str | None:
    sides = _sides(allocator)
    if sides is None:
        return f"aligned_squares claimed on {allocator.topology.spec()}, which has no 2-D layers"
    _, Y, _ = sides
    for b in alloc.info.get("blocks", ()):
        x, r, w, l = (int(v) for v in b)
        if w != l or w & (w - 1) or x % w or (r % Y) % w:
            return f"block {(x, r, w, l)} is not an aligned power-of-two square"
    return None


def _rounded_size(alloc: Any, allocator: Any) -> str | None:
    want = allocator.granted_size(alloc.request)
    if alloc.size != want or want < alloc.request.size:
        return f"{alloc.size} nodes granted for {alloc.request.size}; the documented rounding gives {want}"
    return None


#: claim name -> check(allocation, allocator) returning an error message or None
MESH2D_CLAIMS = {
    "blocks": _blocks,
    "contiguous": _contiguous,
    "max_blocks": _max_blocks,
    "aligned_squares": _aligned_squares,
    "rounded_size": _rounded_size,
}
