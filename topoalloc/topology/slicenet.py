"""The network a slice of whole units gets: its own torus, mesh, or twisted torus — and its hop distances.

A slice allocator (:mod:`topoalloc.alloc.slices`) wires each job's nodes into
a network of their own: a box of ``sides`` nodes that is a ring in the
dimensions where ``torus`` says so and a line elsewhere, or — on TPU pods with
optical circuit switches — a *twisted torus*.  This module measures that
network: the mean hop distance over distinct pairs of its nodes and its
diameter, which is what the job's communication sees (the pod's physical
grid does not matter once the switches have wired the slice).

Twisted tori
------------
Cloud TPU v4 offers twisted tori for slices whose sides in chips are
``k × k × 2k`` or ``k × 2k × 2k`` (each side a multiple of 4: 4×4×8, 4×8×8,
8×8×16, ...), wired by the optical circuit switches (Jouppi et al., "TPU v4:
An Optically Reconfigurable Supercomputer for Machine Learning with Hardware
Support for Embeddings", ISCA 2023; Cloud TPU v4 documentation, "3D mesh and
3D torus").  We use the twisted tori of Cámara et al. ("Twisted Torus
Topologies for Enhanced Interconnection Networks", IEEE TPDS 21(12), 2010),
the construction Google's twisted-torus patent (US 2022/0173973) describes:

``k × k × 2k`` (prismatic twisted torus)
    the long side is a plain ring; the wrap-around link of each short side
    lands ``k`` further along the long side: ``(k−1, y, z) → (0, y, z + k)``
    and ``(x, k−1, z) → (x, 0, z + k)`` (mod ``2k``).
``k × 2k × 2k`` (prismatic doubly twisted torus)
    the long sides are plain rings; the wrap-around link of the short side
    lands ``k`` further along both long sides:
    ``(k−1, y, z) → (0, y + k, z + k)``.

The sides may come in any order; the twist follows the short and long sides
wherever they are.  Both graphs are Cayley graphs of abelian groups (vertex
transitive), so one breadth-first search from any node gives the mean distance
and the diameter; plain tori and meshes are measured by their per-dimension
formulas (a product graph's distance is the sum of its dimensions').
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import NamedTuple

import numpy as np

from ..errors import InvalidArgument
from ..limits import check_memory

__all__ = ["SliceNet", "twist_kind", "slice_net", "neighbours", "bfs_distances", "BFS_BYTES_PER_NODE"]

#: memory of measuring a twisted slice, per node (the neighbour table, coordinates and the search's arrays;
#: about 145 bytes measured on a 32 x 64 x 64 twisted torus)
BFS_BYTES_PER_NODE = 160


class SliceNet(NamedTuple):
    """A slice's own network: its sides, which are rings, whether twisted, and its hop distances."""

    sides: tuple[int, ...]
    torus: tuple[bool, ...]
    twisted: bool
    #: mean hop distance over the ordered pairs of distinct nodes (0.0 for one node)
    mean_hops: float
    diameter: int


def twist_kind(sides: tuple[int, ...]) -> str | None:
    """``"k,k,2k"``, ``"k,2k,2k"`` or ``None``: whether a 3-D box of these sides can be a twisted torus.

    >>> twist_kind((4, 4, 8)), twist_kind((8, 4, 8)), twist_kind((8, 8, 8)), twist_kind((4, 8, 16))
    ('k,k,2k', 'k,2k,2k', None, None)
    """
    if len(sides) != 3 or min(sides) < 1:
        return None
    k = min(sides)
    short = sum(s == k for s in sides)
    long_ = sum(s == 2 * k for s in sides)
    if short + long_ != 3 or long_ == 0:
        return None
    return "k,k,2k" if short == 2 else "k,2k,2k"


def _ring_mean(n: int) -> float:
    """Mean distance on a ring of n over all ordered pairs (self-pairs included)."""
    return (n * n // 4) / n


def _line_mean(n: int) -> float:
    """Mean distance on a path of n nodes over all ordered pairs (self-pairs included)."""
    return (n * n - 1) / (3 * n)


def neighbours(sides: tuple[int, ...], torus: tuple[bool, ...], twisted: bool = False) -> np.ndarray:
    """``(N, 2·d)`` neighbour ids of every node (first side fastest), -1 where a mesh side ends.

    Column ``2i`` is the step +1 along side ``i``, column ``2i+1`` the step −1.
    With ``twisted``, the sides must be those of :func:`twist_kind` and every
    side a ring; the short sides' wrap-around links are shifted by ``k`` along
    the long side(s) (see the module notes).
    """
    d = len(sides)
    n = math.prod(sides)
    ids = np.arange(n, dtype=np.int64)
    strides = [math.prod(sides[:i]) for i in range(d)]
    coord = [(ids // strides[i]) % sides[i] for i in range(d)]
    out = np.empty((n, 2 * d), dtype=np.int64)
    k = min(sides) if twisted else 0
    short = [i for i in range(d) if twisted and sides[i] == k]
    long_ = [i for i in range(d) if twisted and sides[i] == 2 * k]
    for i in range(d):
        for col, step in ((2 * i, 1), (2 * i + 1, -1)):
            c = coord[i] + step
            wraps = (c < 0) | (c >= sides[i])
            nb = ids + step * strides[i]
            if torus[i]:
                nb = np.where(wraps, ids + (sides[i] - 1) * strides[i] * (-step), nb)
                if i in short:  # the twist: a wrap along a short side moves k along the long side(s)
                    for j in long_:
                        shifted = (coord[j] + step * k) % sides[j]
                        nb = np.where(wraps, nb + (shifted - coord[j]) * strides[j], nb)
            else:
                nb = np.where(wraps, -1, nb)
            out[:, col] = nb
    return out


def bfs_distances(nbr: np.ndarray, source: int = 0) -> np.ndarray:
    """Hop distance from ``source`` to every node (-1 if unreachable), level by level with numpy."""
    n = nbr.shape[0]
    dist = np.full(n, -1, dtype=np.int64)
    dist[source] = 0
    frontier = np.array([source], dtype=np.int64)
    level = 0
    while frontier.size:
        level += 1
        cand = nbr[frontier].ravel()
        cand = cand[cand >= 0]
        cand = np.unique(cand[dist[cand] < 0])
        dist[cand] = level
        frontier = cand
    return dist


@lru_cache(maxsize=4096)
def slice_net(sides: tuple[int, ...], torus: tuple[bool, ...], twisted: bool = False) -> SliceNet:
    """The hop distances of a slice's own network (memoised; see the module notes).

    >>> plain = slice_net((4, 4, 8), (True, True, True))        # 1 + 1 + 2 hops per pair, self included
    >>> round(plain.mean_hops * 127 / 128, 6), plain.diameter
    (4.0, 8)
    >>> s = slice_net((4, 4, 8), (True, True, True), twisted=True)
    >>> round(s.mean_hops, 3), s.diameter
    (3.465, 6)
    """
    sides = tuple(int(s) for s in sides)
    torus = tuple(bool(t) for t in torus)
    if len(torus) != len(sides) or not sides or min(sides) < 1:
        raise InvalidArgument("sides", sides, "positive sides, one torus flag each")
    n = math.prod(sides)
    if twisted:
        if twist_kind(sides) is None or not all(torus):
            raise InvalidArgument("twisted", sides, "sides k x k x 2k or k x 2k x 2k (any order), a ring in every dimension")
        check_memory(n * BFS_BYTES_PER_NODE, "twisted", "x".join(map(str, sides)), f"measuring a twisted slice of {n:,} nodes")
        dist = bfs_distances(neighbours(sides, torus, True))
        if (dist < 0).any():  # pragma: no cover - the twisted torus is connected
            raise InvalidArgument("twisted", sides, "a connected twisted torus")
        total = float(dist.sum())  # vertex transitive: every node sees the same distances
        diameter = int(dist.max())
    else:
        per = [_ring_mean(s) if t else _line_mean(s) for s, t in zip(sides, torus)]
        total = sum(per) * n  # the sum of distances from a node, averaged over nodes
        diameter = sum(s // 2 if t else s - 1 for s, t in zip(sides, torus))
    mean = total / (n - 1) if n > 1 else 0.0
    return SliceNet(sides, torus, bool(twisted), mean, diameter)
