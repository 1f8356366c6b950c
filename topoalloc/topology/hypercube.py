"""The binary hypercube Qn, its subcubes and E-cube routing (Turner 1997, §3.2).

Conventions
-----------
* Nodes are the n-bit addresses ``a = a_{n-1} ... a_0`` read as integers;
  bit ``i`` is dimension ``i``.  Node ``v``'s neighbours are ``v ^ (1 << i)``.
* A subcube is an address over {0, 1, *}, written highest bit first
  (``"10**"`` is the 2-cube {1000, 1001, 1010, 1011}).  Internally it is a
  pair ``(free, value)``: the bit mask of its ``*`` positions and the values
  of its fixed bits (``value & free == 0``).
* E-cube routing corrects the differing bits lowest-order first (the
  thesis's Lemma 1 and Theorem 1 rest on this order).
* A channel is the directed link a message takes when it corrects one bit:
  ``Channel(node, dimension, direction)`` with ``node`` the sender of the hop
  and ``direction`` ``+1`` for a bit changing 0 → 1 (the thesis's ↑) and
  ``-1`` for 1 → 0 (↓).  Both directions of a cable are separate channels.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import NamedTuple

import numpy as np

from ..errors import InvalidArgument
from ..registry import TOPOLOGIES
from .base import Subcubes

__all__ = ["Hypercube", "Subcube", "Channel", "ecube_route", "ecube_channels", "channels_within", "shared_channels"]

#: largest dimension accepted (2^24 nodes): node tables are built with numpy
MAX_DIM = 24


class Channel(NamedTuple):
    """A directed hypercube link: ``node`` sends across ``dimension``; ``direction`` +1 is 0→1, −1 is 1→0."""

    node: int
    dimension: int
    direction: int


@dataclass(frozen=True, slots=True)
class Subcube:
    """A subcube of Qn: an address over {0, 1, *}.

    Parameters
    ----------
    n : int
        Dimension of the host hypercube.
    free : int
        Bit mask of the ``*`` positions.
    value : int
        The fixed bits (zero at the ``*`` positions).

    Examples
    --------
    >>> c = Subcube.parse("1*0*")
    >>> c.dim, c.nodes().tolist(), str(c)
    (2, [8, 9, 12, 13], '1*0*')
    >>> Subcube.parse("1*0*").contains(13), Subcube.parse("10**").adjacent(Subcube.parse("11**"))
    (True, True)
    """

    n: int
    free: int
    value: int

    def __post_init__(self) -> None:
        full = (1 << self.n) - 1
        if not 0 <= self.free <= full or not 0 <= self.value <= full or self.value & self.free:
            raise InvalidArgument("subcube", (self.n, self.free, self.value), f"free and value masks of {self.n} bits, value zero where free")

    @classmethod
    def parse(cls, address: str) -> "Subcube":
        """Build from an address string over 0/1/* (highest bit first)."""
        text = address.strip()
        if not text or set(text) - {"0", "1", "*"}:
            raise InvalidArgument("subcube", address, "an address over 0, 1 and * (highest bit first), e.g. 10**")
        n = len(text)
        free = value = 0
        for i, ch in enumerate(reversed(text)):
            if ch == "*":
                free |= 1 << i
            elif ch == "1":
                value |= 1 << i
        return cls(n, free, value)

    @property
    def dim(self) -> int:
        return self.free.bit_count()

    @property
    def size(self) -> int:
        return 1 << self.dim

    @property
    def fixed(self) -> int:
        return ((1 << self.n) - 1) ^ self.free

    def contains(self, node: int) -> bool:
        return node & ~self.free == self.value

    def contains_cube(self, other: "Subcube") -> bool:
        return other.free & ~self.free == 0 and other.value & ~self.free == self.value

    def intersects(self, other: "Subcube") -> bool:
        both = self.fixed & other.fixed
        return (self.value ^ other.value) & both == 0

    def adjacent(self, other: "Subcube") -> bool:
        """Complementary cubes (Turner §3.2): same ``*`` positions, fixed bits differing in exactly one place."""
        return self.free == other.free and (self.value ^ other.value).bit_count() == 1

    def nodes(self) -> np.ndarray:
        """The member nodes, ascending."""
        return self.value | _spread(self.free)

    def channels(self) -> list[Channel]:
        """Every channel between two nodes of the subcube (the links E-cube routes inside it use)."""
        out = []
        for v in self.nodes().tolist():
            for d in _bits(self.free):
                out.append(Channel(v, d, 1 if not (v >> d) & 1 else -1))
        return out

    def __str__(self) -> str:
        return "".join("*" if (self.free >> i) & 1 else str((self.value >> i) & 1) for i in range(self.n - 1, -1, -1))

    def __repr__(self) -> str:
        return f"Subcube('{self}')"


def _bits(mask: int) -> list[int]:
    out = []
    i = 0
    while mask:
        if mask & 1:
            out.append(i)
        mask >>= 1
        i += 1
    return out


@lru_cache(maxsize=4096)
def _spread_cached(free: int) -> np.ndarray:
    positions = _bits(free)
    local = np.arange(1 << len(positions), dtype=np.int64)
    out = np.zeros_like(local)
    for j, p in enumerate(positions):
        out |= ((local >> j) & 1) << p
    out.flags.writeable = False
    return out


def _spread(free: int) -> np.ndarray:
    """All sub-masks of ``free`` in ascending order (the offsets of a subcube's nodes)."""
    return _spread_cached(free)


class Hypercube(Subcubes):
    """The n-dimensional binary hypercube Qn with E-cube routing.

    Parameters
    ----------
    n : int
        Dimension (0 ≤ n ≤ 24); the machine has ``2**n`` nodes.

    Examples
    --------
    >>> q = Hypercube(4)
    >>> q.n_nodes, sorted(q.neighbors(5)), q.distance(0b0100, 0b1010)
    (16, [1, 4, 7, 13], 3)
    >>> q.route(0b0100, 0b1010)  # lowest differing bit first
    [4, 6, 2, 10]
    >>> q.address(10)
    '1010'
    """

    __slots__ = ("n",)
    kind = "hypercube"

    def __init__(self, n: int):
        if not isinstance(n, (int, np.integer)) or isinstance(n, bool) or not 0 <= n <= MAX_DIM:
            raise InvalidArgument("n", n, f"a hypercube dimension in 0..{MAX_DIM}")
        self.n = int(n)

    @property
    def n_nodes(self) -> int:
        return 1 << self.n

    def key(self) -> tuple:
        return ("hypercube", self.n)

    def spec(self) -> str:
        return f"hypercube:{self.n}"

    def address(self, node: int) -> str:
        """The n-bit address of ``node``, highest bit first."""
        self.check_node(node)
        return format(node, f"0{self.n}b") if self.n else ""

    def neighbors(self, node: int) -> list[int]:
        self.check_node(node)
        return [node ^ (1 << i) for i in range(self.n)]

    def adjacent(self, a: int, b: int) -> bool:
        return (a ^ b).bit_count() == 1

    def distance(self, a: int, b: int) -> int:
        self.check_node(a, "a")
        self.check_node(b, "b")
        return (a ^ b).bit_count()

    def route(self, a: int, b: int) -> list[int]:
        self.check_node(a, "a")
        self.check_node(b, "b")
        return ecube_route(a, b)

    def subcube(self, address: str) -> Subcube:
        """Parse a subcube address of this machine (``n`` symbols over 0/1/*)."""
        cube = Subcube.parse(address)
        if cube.n != self.n:
            raise InvalidArgument("subcube", address, f"{self.n} symbols over 0, 1 and *")
        return cube

    def whole(self) -> Subcube:
        return Subcube(self.n, (1 << self.n) - 1, 0)


def ecube_route(a: int, b: int) -> list[int]:
    """Nodes visited from ``a`` to ``b`` correcting differing bits lowest-order first."""
    path = [a]
    diff = a ^ b
    v = a
    while diff:
        low = diff & -diff
        v ^= low
        diff ^= low
        path.append(v)
    return path


def ecube_channels(a: int, b: int) -> list[Channel]:
    """The channels of the E-cube route from ``a`` to ``b``, in order."""
    out = []
    path = ecube_route(a, b)
    for u, v in zip(path, path[1:]):
        d = (u ^ v).bit_length() - 1
        out.append(Channel(u, d, 1 if v > u else -1))
    return out


def _channel_sets(nodes: np.ndarray, n: int) -> list[tuple[set[int], set[int], set[int], set[int]]]:
    """Per dimension d, for the node set A: the high parts ``s >> d`` of possible senders split by bit d,
    and the low parts ``t & (2**d - 1)`` of possible receivers split by bit d.

    By Lemma 1, the route S → D uses channel (c, d, ↑) iff ``S >> d == c >> d`` with bit d of S 0,
    bit d of D 1, and ``D & (2**d-1) == c & (2**d-1)``.
    """
    out = []
    for d in range(n):
        bit = (nodes >> d) & 1
        hi = nodes >> d
        lo = nodes & ((1 << d) - 1)
        out.append((set(hi[bit == 0].tolist()), set(hi[bit == 1].tolist()), set(lo[bit == 0].tolist()), set(lo[bit == 1].tolist())))
    return out


def channels_within(nodes: Iterable[int], n: int) -> set[Channel]:
    """Every channel used by E-cube routes between two nodes of ``nodes`` (any pair, both ways) in Qn.

    Computed per dimension from Lemma 1 (Turner §3.2) instead of over all
    pairs: O(n·|nodes| + output).  :func:`ecube_channels` over all pairs is
    the reference it is tested against.
    """
    arr = np.unique(np.asarray(list(nodes) if not isinstance(nodes, np.ndarray) else nodes, dtype=np.int64))
    out: set[Channel] = set()
    for d, (hi0, hi1, lo0, lo1) in enumerate(_channel_sets(arr, n)):
        # 0 -> 1 at d: sender high part (bit d = 0), receiver low part (any receiver with bit d = 1)
        for h in hi0:
            for lo in lo1:
                out.add(Channel((h << d) | lo, d, 1))
        for h in hi1:
            for lo in lo0:
                out.add(Channel((h << d) | lo, d, -1))
    return out


def shared_channels(a: Iterable[int], b: Iterable[int], n: int) -> list[Channel]:
    """Channels that a message between two nodes of ``a`` and one between two nodes of ``b`` can both use.

    This is the intercluster contention of Turner §3.1 under E-cube routing:
    an empty list means the two allocations can never interfere.  Sorted by
    (dimension, node).

    Parameters
    ----------
    a, b : iterables of int
        Node sets (e.g. ``Allocation.nodes``) of two allocations in Qn.
    n : int
        Dimension of the hypercube.

    Examples
    --------
    Figure 3.1 of the thesis: a 2×5 mesh and a 2×3 mesh packed in Q4 share channels.

    >>> from topoalloc.topology.hypercube import shared_channels
    >>> shared_channels([0b0000, 0b0001], [0b0010, 0b0011], 4)
    []
    >>> shared_channels([0b0100, 0b1010], [0b0110, 0b0010], 4)[0]
    Channel(node=6, dimension=2, direction=-1)
    """
    sa = _channel_sets(np.unique(np.asarray(list(a) if not isinstance(a, np.ndarray) else a, dtype=np.int64)), n)
    sb = _channel_sets(np.unique(np.asarray(list(b) if not isinstance(b, np.ndarray) else b, dtype=np.int64)), n)
    out: list[Channel] = []
    for d in range(n):
        a0, a1, al0, al1 = sa[d]
        b0, b1, bl0, bl1 = sb[d]
        for his, los, direction in ((a0 & b0, al1 & bl1, 1), (a1 & b1, al0 & bl0, -1)):
            for h in his:
                for lo in los:
                    out.append(Channel((h << d) | lo, d, direction))
    out.sort(key=lambda c: (c.dimension, c.node, c.direction))
    return out


@TOPOLOGIES.register("hypercube")
def _hypercube_from_spec(n: int) -> Hypercube:
    """hypercube:n — the n-cube Qn (2**n nodes, E-cube routing)."""
    return Hypercube(n)
