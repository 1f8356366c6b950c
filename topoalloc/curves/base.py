"""The :class:`Ordering` value: a bijection between node ids and ranks.

An ordering of a machine with ``n`` processors maps every node id ``0..n-1``
to a distinct rank ``0..n-1`` (Leung, Phillips, Bunde et al. §2.2 write ranks
``1..|P|``; here ranks start at 0, and ordering files may use either base,
see :mod:`topoalloc.curves.io`).  One-dimensional allocators
(:mod:`topoalloc.alloc.linear`) work in rank space and hand node ids back.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import InvalidArgument
from ..topology.base import Grid, Topology

__all__ = ["Ordering"]


class Ordering:
    """An immutable node ↔ rank bijection.

    Parameters
    ----------
    node_at_rank : sequence of int
        ``node_at_rank[r]`` is the node with rank ``r``; must be a permutation
        of ``0..n-1``.
    name : str
        What produced it (``"hilbert"``, ``"snake"``, a file name ...).

    Attributes
    ----------
    node_at_rank, rank_of : read-only int64 arrays
        The permutation and its inverse (``rank_of[node]``).

    Raises
    ------
    InvalidArgument
        If ``node_at_rank`` is not a permutation of ``0..n-1``.

    Examples
    --------
    >>> o = Ordering([2, 0, 1], "example")
    >>> o.rank(2), o.node(2), len(o)
    (0, 1, 3)
    """

    __slots__ = ("node_at_rank", "rank_of", "name")

    node_at_rank: np.ndarray
    rank_of: np.ndarray
    name: str

    def __init__(self, node_at_rank: Any, name: str = "custom"):
        arr = np.array(node_at_rank, dtype=np.int64).ravel()
        n = arr.size
        if n == 0:
            raise InvalidArgument("ordering", name, "an ordering of at least one node")
        seen = np.zeros(n, dtype=bool)
        if arr.min() < 0 or arr.max() >= n:
            raise InvalidArgument("ordering", name, f"node ids in 0..{n - 1} (got {int(arr.min())}..{int(arr.max())})")
        seen[arr] = True
        if not seen.all():
            missing = np.flatnonzero(~seen)[:5].tolist()
            raise InvalidArgument("ordering", name, f"a permutation of 0..{n - 1} (nodes {missing} have no rank)")
        inv = np.empty(n, dtype=np.int64)
        inv[arr] = np.arange(n, dtype=np.int64)
        arr.flags.writeable = False
        inv.flags.writeable = False
        object.__setattr__(self, "node_at_rank", arr)
        object.__setattr__(self, "rank_of", inv)
        object.__setattr__(self, "name", str(name))

    def __setattr__(self, key: str, value: Any) -> None:
        raise AttributeError("Ordering is immutable")

    def __len__(self) -> int:
        return int(self.node_at_rank.size)

    @property
    def n_nodes(self) -> int:
        return int(self.node_at_rank.size)

    def rank(self, node: int) -> int:
        """Rank of ``node``."""
        return int(self.rank_of[node])

    def node(self, rank: int) -> int:
        """Node with rank ``rank``."""
        return int(self.node_at_rank[rank])

    def steps(self, topology: Topology) -> np.ndarray:
        """Hop distances (under ``topology``) between nodes of consecutive ranks, ``n - 1`` values."""
        nodes = self.node_at_rank.tolist()
        if isinstance(topology, Grid):
            c = topology.coords[self.node_at_rank]
            d = np.abs(np.diff(c, axis=0))
            dims = np.array(topology.dims)
            wrap = np.array(topology.wrap)
            d = np.where(wrap, np.minimum(d, dims - d), d)
            return d.sum(axis=1)
        return np.array([topology.distance(a, b) for a, b in zip(nodes, nodes[1:])], dtype=np.int64)

    def non_unit_step_fraction(self, topology: Topology) -> float:
        """Fraction of consecutive-rank pairs that are not neighbours in ``topology``."""
        if len(self) < 2:
            return 0.0
        return float(np.mean(self.steps(topology) != 1))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Ordering) and np.array_equal(self.node_at_rank, other.node_at_rank)

    def __hash__(self) -> int:
        return hash(self.node_at_rank.tobytes())

    def __repr__(self) -> str:
        return f"Ordering({self.name!r}, n={len(self)})"

    def __deepcopy__(self, memo: dict[int, Any]) -> "Ordering":
        return self  # immutable

    def __reduce__(self) -> tuple[Any, ...]:
        return (Ordering, (self.node_at_rank.tolist(), self.name))
