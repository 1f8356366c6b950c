"""BRGC mesh embeddings and Turner's partitioning algorithms (Turner 1997, §3.2–§3.3).

An X×Y mesh is embedded with dilation 1 in a k-cube, ``k = t + m`` with
``t = ⌈log₂X⌉`` and ``m = ⌈log₂Y⌉``: mesh position ``(x, y)`` goes to the
k-bit address ``g_t(x) · g_m(y)`` — the x component in the high ``t`` bits,
the y component in the low ``m`` bits (the thesis's ``A = A_X ∘ A_Y``), with
``g_i`` the i-bit binary-reflected Gray code (BRGC).

Everything here works in the *local* coordinates of the k-cube (addresses
``0 .. 2**k - 1``) and is memoised per (X, Y); :func:`deposit` maps local
addresses into a subcube of the machine.

Cube sets are lists of ``(free, value)`` masks (see
:class:`topoalloc.topology.hypercube.Subcube`).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache, wraps
from typing import Any, TypeVar

import numpy as np

from ...errors import InvalidArgument
from ...topology.hypercube import _bits

__all__ = [
    "brgc",
    "ceil_log2",
    "mesh_dims",
    "gray_blocks",
    "embed_mesh",
    "partition_leftover",
    "cluster_partition",
    "coalesce",
    "deposit",
    "deposit_cube",
    "square_shape",
]

Cube = tuple[int, int]  # (free mask, value)


def brgc(i: int) -> int:
    """The i-th codeword of the binary-reflected Gray code (any width): ``i ^ (i >> 1)``.

    >>> [format(brgc(i), "03b") for i in range(8)]
    ['000', '001', '011', '010', '110', '111', '101', '100']
    """
    return i ^ (i >> 1)


def ceil_log2(x: int) -> int:
    return (int(x) - 1).bit_length()


def mesh_dims(x: int, y: int) -> tuple[int, int]:
    """``(t, m) = (⌈log₂X⌉, ⌈log₂Y⌉)``: the bits of the x and y components."""
    if x < 1 or y < 1:
        raise InvalidArgument("mesh", f"{x}x{y}", "positive sides X and Y")
    return ceil_log2(x), ceil_log2(y)


def gray_blocks(lo: int, hi: int, bits: int) -> list[Cube]:
    """Cube addresses (over ``bits`` bits) of the codewords ``g(lo) .. g(hi-1)``, largest blocks first in index order.

    The index interval is cut into maximal aligned blocks ``[a, a + 2**i)``;
    by Lemma 2 the codewords of such a block share their high ``bits - i``
    bits, so the block is the cube ``g(a)`` with its ``i`` low bits ``*``.
    """
    out: list[Cube] = []
    a = lo
    while a < hi:
        i = (a & -a).bit_length() - 1 if a else bits
        while a + (1 << i) > hi:
            i -= 1
        free = (1 << i) - 1
        out.append((free, brgc(a) & ~free))
        a += 1 << i
    return out


#: a grant's nodes are kept for the next grant of the same block only for blocks of at most this many nodes
#: (4,096 blocks of each kind: at most 32 MiB each); a larger block is built again, its cost then in the array
_KEEP_NODES = 1 << 10

_T = TypeVar("_T")


def _kept_if_small(nodes_of: Callable[..., int]) -> Callable[[Callable[..., _T]], Callable[..., _T]]:
    """Memoise a block builder (its arrays are read-only, so grants may share them) for blocks of at most
    :data:`_KEEP_NODES` nodes, ``nodes_of(*args)`` saying how many; larger blocks are built on each call."""
    def wrap(build: Callable[..., _T]) -> Callable[..., _T]:
        kept = lru_cache(maxsize=1 << 12)(build)

        @wraps(build)
        def get(*args: Any) -> _T:
            return kept(*args) if nodes_of(*args) <= _KEEP_NODES else build(*args)
        return get
    return wrap


@_kept_if_small(lambda x, y: x * y)
def embed_mesh(x: int, y: int) -> np.ndarray:
    """Local k-cube addresses of the mesh, indexed ``[x_pos, y_pos]`` (shape ``(X, Y)``, read-only)."""
    t, m = mesh_dims(x, y)
    gx = np.arange(x, dtype=np.int64)
    gy = np.arange(y, dtype=np.int64)
    out = ((gx ^ (gx >> 1))[:, None] << m) | (gy ^ (gy >> 1))[None, :]
    out.flags.writeable = False
    return out


def _cat(xc: Cube, yc: Cube, m: int) -> Cube:
    return ((xc[0] << m) | yc[0], (xc[1] << m) | yc[1])


@lru_cache(maxsize=4096)
def partition_leftover(x: int, y: int, case: str = "larger") -> tuple[Cube, ...]:
    """The partitioning algorithm (Figure 3.2): the leftover nodes of the X×Y embedding as disjoint subcubes.

    Parameters
    ----------
    x, y : int
        Mesh sides.
    case : {"larger", "a", "b"}
        Which region is cut out whole first.  Case (a) takes region (1),
        ``L_x × G_m`` (unused x codewords, every y), then ``A_x × L_y``;
        case (b) takes region (2), ``G_t × L_y``, then ``L_x × A_y``.
        ``"larger"`` (default, the thesis's rule) picks the case whose region
        is larger, and case (a) on a tie (the thesis does not say; pinned by
        a test).

    Returns
    -------
    tuple of (free, value)
        Local cube addresses in the k-cube, in the order the algorithm adds
        them to the auxiliary free list.

    Examples
    --------
    The thesis's example (§3.3.1): a 20×30 mesh in a 10-cube leaves an
    8-, a 7-, a 5- and a 3-cube.

    >>> sorted(bin(f).count("1") for f, v in partition_leftover(20, 30))
    [3, 5, 7, 8]
    """
    t, m = mesh_dims(x, y)
    if case == "larger":
        case = "a" if ((1 << t) - x) << m >= ((1 << m) - y) << t else "b"
    if case not in ("a", "b"):
        raise InvalidArgument("case", case, "'larger', 'a' or 'b'")
    ax, lx = gray_blocks(0, x, t), gray_blocks(x, 1 << t, t)
    ay, ly = gray_blocks(0, y, m), gray_blocks(y, 1 << m, m)
    all_x, all_y = ((1 << t) - 1, 0), ((1 << m) - 1, 0)
    if case == "a":
        out = [_cat(c, all_y, m) for c in lx] + [_cat(cx, cy, m) for cx in ax for cy in ly]
    else:
        out = [_cat(all_x, c, m) for c in ly] + [_cat(cx, cy, m) for cx in lx for cy in ay]
    return tuple(out)


@lru_cache(maxsize=4096)
def cluster_partition(x: int, y: int) -> tuple[Cube, ...]:
    """The cluster partitioning algorithm (Figure 3.7): the mesh's own nodes as disjoint subcubes ``A_x × A_y``."""
    t, m = mesh_dims(x, y)
    return tuple(_cat(cx, cy, m) for cx in gray_blocks(0, x, t) for cy in gray_blocks(0, y, m))


def coalesce(cubes: list[Cube]) -> list[Cube]:
    """The coalesce algorithm (Figure 3.8): merge complementary cubes, lowest dimension first, until none are left.

    Two cubes are complementary when they have the same ``*`` positions and
    their fixed bits differ in exactly one place; they merge into the cube
    with that place ``*`` too.  Within a dimension, pairs are taken in
    ascending (value, free) order.
    """
    by_dim: dict[int, set[Cube]] = {}
    for c in cubes:
        by_dim.setdefault(c[0].bit_count(), set()).add(c)
    out: list[Cube] = []
    d = 0
    top = max(by_dim, default=-1)
    while d <= top:
        group = by_dim.get(d)
        if group:
            pending = sorted(group, key=lambda c: (c[1], c[0]))
            used: set[Cube] = set()
            for i, c in enumerate(pending):
                if c in used:
                    continue
                for other in pending[i + 1 :]:
                    if other not in used and other[0] == c[0] and (other[1] ^ c[1]).bit_count() == 1:
                        used.add(c)
                        used.add(other)
                        diff = other[1] ^ c[1]
                        merged = (c[0] | diff, c[1] & ~diff)
                        by_dim.setdefault(d + 1, set()).add(merged)
                        top = max(top, d + 1)
                        break
            out.extend(c for c in pending if c not in used)
        d += 1
    return sorted(out, key=lambda c: (-c[0].bit_count(), c[1], c[0]))


@lru_cache(maxsize=1 << 16)
def _positions(free: int) -> tuple[int, ...]:
    return tuple(_bits(free))


def deposit(local: np.ndarray, host: Cube) -> np.ndarray:
    """Map local k-cube addresses into the host subcube: local bit j goes to the host's j-th ``*`` position."""
    free, value = host
    pos = _positions(free)
    if pos == tuple(range(len(pos))):
        return local | value
    out = np.full_like(local, value)
    for j, p in enumerate(pos):
        out |= ((local >> j) & 1) << p
    return out


def deposit_cube(cube: Cube, host: Cube) -> Cube:
    """Map a local cube ``(free, value)`` of the host's k-cube into machine coordinates."""
    hfree, hvalue = host
    pos = _positions(hfree)
    if pos == tuple(range(len(pos))):
        return cube[0], cube[1] | hvalue
    free = value = 0
    f, v = cube
    for j, p in enumerate(pos):
        if (f >> j) & 1:
            free |= 1 << p
        elif (v >> j) & 1:
            value |= 1 << p
    return free, value | hvalue


@lru_cache(maxsize=1 << 14)
def square_shape(size: int, rule: str = "square") -> tuple[int, int]:
    """The X×Y mesh a 1-D request of ``size`` processors is given (``X ≤ Y``, ``X·Y = size``).

    Rules
    -----
    ``"square"`` (default)
        The factor pair closest to square among those needing the fewest
        cube dimensions ``⌈log₂X⌉ + ⌈log₂Y⌉``: e.g. 15 → 1×15 (a 4-cube),
        not 3×5 (a 5-cube); 600 → 24×25; 24 → 4×6.
    ``"square_strict"``
        The factor pair closest to square, whatever cube it needs (15 → 3×5).

    Turner §3.1 says only that "the closest 2D mesh is assumed to be
    allocated"; both readings are offered, ``"square"`` because a rule that
    turns a request that fits into one that does not would refuse jobs a
    subcube allocator accepts.

    >>> square_shape(15), square_shape(15, rule="square_strict"), square_shape(600)
    ((1, 15), (3, 5), (24, 25))
    """
    if rule not in ("square", "square_strict"):
        raise InvalidArgument("shape_rule", rule, "'square' or 'square_strict'")
    pairs = [(a, size // a) for a in range(1, int(size**0.5) + 1) if size % a == 0]
    if rule == "square_strict":
        return pairs[-1]
    best = min(ceil_log2(a) + ceil_log2(b) for a, b in pairs)
    return [p for p in pairs if ceil_log2(p[0]) + ceil_log2(p[1]) == best][-1]
