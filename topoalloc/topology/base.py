"""The Topology contract: an immutable, hashable, value-equal machine graph.

Nodes are the integers ``0 .. n_nodes-1``.  Grid topologies add
``coord(node)`` / ``node_at(coord)``.  Every topology answers ``distance``,
``neighbors`` and ``route`` under its own routing.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence

from ..errors import InvalidArgument

__all__ = ["Topology"]


class Topology(ABC):
    """Abstract base of every machine topology.

    Subclasses are immutable: equality and hashing go by :meth:`key`, a tuple
    of the constructor's canonical arguments.
    """

    __slots__ = ()

    #: short machine-spec name, e.g. ``"flat"`` (the ``--machine`` grammar)
    kind: str = ""

    @property
    @abstractmethod
    def n_nodes(self) -> int:
        """Number of processors."""

    @abstractmethod
    def key(self) -> tuple:
        """Canonical value identity of the topology."""

    @abstractmethod
    def spec(self) -> str:
        """The machine spec that rebuilds this topology, e.g. ``"flat:128"``."""

    @abstractmethod
    def neighbors(self, node: int) -> Sequence[int]:
        """Nodes joined to ``node`` by a physical link."""

    @abstractmethod
    def distance(self, a: int, b: int) -> int:
        """Hop count of the route from ``a`` to ``b``."""

    @abstractmethod
    def route(self, a: int, b: int) -> list[int]:
        """The nodes a message visits from ``a`` to ``b`` (both included) under the routing."""

    def check_node(self, node: int, argument: str = "node") -> int:
        if not isinstance(node, int) or isinstance(node, bool) or not 0 <= node < self.n_nodes:
            raise InvalidArgument(argument, node, f"a node id in 0..{self.n_nodes - 1}")
        return node

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other) and self.key() == other.key()  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash((type(self).__name__, self.key()))

    def __repr__(self) -> str:
        return f"{type(self).__name__}{self.key()!r}"

    def __len__(self) -> int:
        return self.n_nodes

    def __deepcopy__(self, memo: dict) -> "Topology":
        return self  # immutable: allocator snapshots share their topology
