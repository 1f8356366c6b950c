"""Preprocessing, Equal Partition and Non-Equal Partition (Mao, Chen & Watson, §2.3 and §3).

All functions are pure: they take semitori and return lists of semitori.
"""

from __future__ import annotations

import itertools

from ...errors import InvalidArgument
from ...topology.torus import Semitorus, Torus

__all__ = ["partition", "initial_available_set", "split_dimension", "ep_piece_exponents", "ep_partition", "nep_partition", "NEP_ORDERS"]


def split_dimension(n: int) -> list[int]:
    """Segments of a dimension of size ``n = 2^a · p`` (p odd): ``2^a · 2^b`` for each bit b of p, largest first.

    >>> split_dimension(6), split_dimension(8), split_dimension(7), split_dimension(12)
    ([4, 2], [8], [4, 2, 1], [8, 4])
    """
    if n < 1:
        raise InvalidArgument("n", n, "a positive dimension size")
    a = (n & -n).bit_length() - 1
    p = n >> a
    return [(1 << a) << b for b in reversed(range(p.bit_length())) if p >> b & 1]


def initial_available_set(machine: Torus) -> list[Semitorus]:
    """The paper's preprocessing (§2.3), generalised to several non-power-of-two dimensions.

    Every dimension of size ``2^a · p`` (p odd) is cut into segments of sizes
    ``2^a · 2^b``, one per bit of ``p`` (largest first, from coordinate 0); the
    initial available set is the product of the segments of all dimensions.
    A segment keeps its dimension's wrap only if it spans the whole dimension.
    2×2×2×6×8 gives 2×2×2×4×8 (no wrap in the fourth dimension) and 2×2×2×2×8.

    What is lost: the links that join two segments (and the wrap of a cut
    dimension) belong to no piece, so no job ever spans two pieces; the largest
    job that can run is the largest piece; and, with several cut dimensions,
    the number of pieces is the product of the numbers of segments.  With one
    cut dimension this is exactly the paper's scheme.
    """
    per_dim: list[list[tuple[int, int, bool]]] = []
    for n, w in zip(machine.dims, machine.wrap):
        segs = split_dimension(n)
        offs, pos = [], 0
        for s in segs:
            offs.append((pos, s, w and s == n))
            pos += s
        per_dim.append(offs)
    pieces: list[Semitorus] = []

    def rec(i: int, off: list[int], sides: list[int], wraps: list[bool]) -> None:
        if i == len(per_dim):
            pieces.append(Semitorus(tuple(off), tuple(sides), tuple(wraps)))
            return
        for o, s, w in per_dim[i]:
            rec(i + 1, off + [o], sides + [s], wraps + [w])

    rec(0, [], [], [])
    # largest pieces first, then by position: a stable, documented order
    pieces.sort(key=lambda p: (-p.size, p.offset[::-1]))
    return pieces


def _halve(s: Semitorus, dim: int) -> tuple[Semitorus, Semitorus]:
    """Cut ``s`` in two along ``dim``; the halves lose that dimension's wrap (sides <= 2 excepted)."""
    half = s.sides[dim] // 2
    sides = s.sides[:dim] + (half,) + s.sides[dim + 1 :]
    wraps = s.wrapped[:dim] + (False,) + s.wrapped[dim + 1 :]
    order = s.order - 1
    lo = Semitorus._unchecked(s.offset, sides, wraps, order)
    hi_off = s.offset[:dim] + (s.offset[dim] + half,) + s.offset[dim + 1 :]
    return lo, Semitorus._unchecked(hi_off, sides, wraps, order)


def _check(s: Semitorus, k: int) -> None:
    if not 0 <= k <= s.order:
        raise InvalidArgument("k", k, f"0 <= k <= {s.order} (the semitorus has {s.size} nodes)")


def ep_piece_exponents(exps: tuple[int, ...], k: int) -> tuple[int, ...]:
    """Exponents of the Equal Partition's piece shape, per dimension of S (§3).

    With h = the number of dimensions of S (sides > 1): if ``k <= h`` the piece
    is 2×…×2 in k dimensions, taken from S's longest dimensions (ties: the
    earlier dimension); otherwise every one of the h dimensions gets an exponent
    and they are made as equal as possible, never above S's own exponent
    (water-filling: each unit goes to the smallest exponent that can still grow,
    ties to the dimension with more room, then the earlier).  The paper's
    examples: S = 2×2²×2²×2³ gives 2×2×2 for m = 2³ and 2×2×2²×2² for m = 2⁶.
    """
    dims = [i for i, e in enumerate(exps) if e > 0]
    out = [0] * len(exps)
    if k <= len(dims):
        for i in sorted(dims, key=lambda i: (-exps[i], i))[:k]:
            out[i] = 1
        return tuple(out)
    left = k
    while left:
        grow = [i for i in dims if out[i] < exps[i]]
        i = min(grow, key=lambda i: (out[i], -(exps[i] - out[i]), i))
        out[i] += 1
        left -= 1
    return tuple(out)


def ep_partition(s: Semitorus, k: int) -> list[Semitorus]:
    """Equal Partition of ``s`` into ``|S| / 2^k`` identical semitori (§3); the first holds ``s.offset``.

    A piece keeps S's wrap in a dimension where it spans S's whole side.
    """
    _check(s, k)
    piece = ep_piece_exponents(s.exponents, k)
    psides = tuple(1 << e for e in piece)
    wraps = tuple(w if ps == ss else False for w, ps, ss in zip(s.wrapped, psides, s.sides))
    order = sum(piece)
    # each dimension's block offsets once (the proofs' offsets are symbolic: one addition per value, not per piece);
    # blocks enumerated with the first dimension fastest (node-id order of their first node); the pieces are valid
    # by construction (sides powers of two dividing S's, wraps S's or none), so they are built unchecked
    axes = [[o + i * ps for i in range(ss // ps)] for o, ss, ps in zip(s.offset, s.sides, psides)]
    wraps = Semitorus.ring_flags(psides, wraps)  # (once for every piece: they share it)
    return Semitorus._unchecked_many([off[::-1] for off in itertools.product(*reversed(axes))], psides, wraps, order)


#: NEP halving orders: "exhaust-largest" (the paper's example: halve the longest
#: dimension until it is used up, then the next) and "balanced" (always halve the
#: currently longest dimension, keeping more dimensions).
NEP_ORDERS = ("exhaust-largest", "balanced")


def nep_partition(s: Semitorus, k: int, order: str = "exhaust-largest") -> list[Semitorus]:
    """Non-Equal Partition (§3): 1 + log2(|S|/2^k) semitori by repeated halving; the last one has 2^k nodes.

    Each step cuts the current semitorus in two along one dimension, keeps the
    half with the lower coordinates and puts the other in the partition.  The
    list is returned in the order the pieces were cut (largest first), with
    the kept piece of ``2^k`` nodes — the one to allocate — last.

    ``order="exhaust-largest"`` reproduces the paper's example exactly: for
    S = 2×2²×2²×2³ and m = 2⁴ the pieces are 2×2²×2²×2², 2×2²×2²×2, 2×2²×2²,
    2×2²×2 and 2×2²×2 (ties between equally long dimensions go to the later
    dimension).
    """
    _check(s, k)
    if order not in NEP_ORDERS:
        raise InvalidArgument("order", order, f"one of {', '.join(NEP_ORDERS)}")
    pieces = []
    cur = s
    dim = None
    while cur.order > k:
        exps = cur.exponents
        if order == "balanced" or dim is None or exps[dim] == 0:
            dim = max(range(len(exps)), key=lambda i: (exps[i], i))
        cur, other = _halve(cur, dim)
        pieces.append(other)
    pieces.append(cur)
    return pieces


def partition(s: Semitorus, k: int, scheme: str, nep_order: str = "exhaust-largest") -> tuple[list[Semitorus], int]:
    """The pieces of ``s`` for a request of ``2^k`` nodes and the index of the piece to allocate.

    EP allocates its first piece (the one at ``s.offset``), NEP its last (the kept half).
    """
    if scheme == "ep":
        return ep_partition(s, k), 0
    if scheme == "nep":
        pieces = nep_partition(s, k, nep_order)
        return pieces, len(pieces) - 1
    raise InvalidArgument("scheme", scheme, "'ep' or 'nep'")
