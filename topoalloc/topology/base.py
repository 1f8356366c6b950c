"""The Topology contract and the capabilities a topology can declare.

Nodes are the integers ``0 .. n_nodes-1``.  Every topology answers
``distance``, ``neighbors`` and ``route`` under its own routing, and is
immutable, hashable and equal by value.

What a topology offers beyond that is declared once, by subclassing a
capability class, and checked by type (``isinstance(top, Grid)``), never by
probing attributes:

==================  ==========================================================
:class:`Grid`       coordinates: ``dims``, ``wrap``, ``strides``, ``coords``,
                    ``coord``/``node_at``, ``box_nodes`` (meshes and tori)
:class:`Subcubes`   binary addresses and subcubes over {0, 1, *} (hypercubes)
:class:`Routers`    an indirect network: nodes attach to routers, and routing
                    runs over the router graph (dragonfly, fat tree, ...)
==================  ==========================================================

``has_locality`` says whether placement matters at all: it is False only for
the fully connected flat machine, on which locality metrics mean nothing.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from ..errors import InvalidArgument

__all__ = ["Topology", "Grid", "Subcubes", "Routers", "capabilities"]


class Topology(ABC):
    """Abstract base of every machine topology.

    Subclasses are immutable: equality and hashing go by :meth:`key`, a tuple
    whose first item names the family of machines (``"grid"`` for meshes and
    tori alike, so a torus without wrap links equals the mesh of the same
    sides) followed by the canonical constructor arguments.
    """

    __slots__ = ()

    #: the spec name of the machine family (``"flat"``, ``"torus"``, ...), for messages and specs
    kind: ClassVar[str] = ""
    #: False only where every placement is as good as any other (the flat machine)
    has_locality: ClassVar[bool] = True

    @property
    @abstractmethod
    def n_nodes(self) -> int:
        """Number of processors."""

    @abstractmethod
    def key(self) -> tuple[Any, ...]:
        """Canonical value identity of the topology (family first)."""

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
        if not isinstance(node, (int, np.integer)) or isinstance(node, bool) or not 0 <= node < self.n_nodes:
            raise InvalidArgument(argument, node, f"a node id in 0..{self.n_nodes - 1}")
        return int(node)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Topology) and self.key() == other.key()

    def __hash__(self) -> int:
        return hash(self.key())

    def __repr__(self) -> str:
        return f"{type(self).__name__}{self.key()[1:]!r}"

    def __len__(self) -> int:
        return self.n_nodes

    def __deepcopy__(self, memo: dict[int, Any]) -> "Topology":
        return self  # immutable: allocator snapshots share their topology

    def __reduce__(self) -> tuple[Any, ...]:
        from . import parse_machine

        return (parse_machine, (self.spec(),))


class Grid(Topology):
    """Capability: nodes have integer coordinates in a box (meshes and tori of any dimension).

    Node ids put the first dimension fastest: ``node = Σ c_i · strides[i]``.
    """

    __slots__ = ()

    dims: tuple[int, ...]
    wrap: tuple[bool, ...]
    strides: tuple[int, ...]
    ndim: int

    @property
    @abstractmethod
    def coords(self) -> np.ndarray:
        """(n, d) array of every node's coordinates."""

    @abstractmethod
    def coord(self, node: int) -> tuple[int, ...]:
        """Coordinates of ``node``."""

    @abstractmethod
    def node_at(self, coord: Sequence[int]) -> int:
        """The node at ``coord``."""

    @abstractmethod
    def box_nodes(self, offset: Sequence[int], sides: Sequence[int]) -> np.ndarray:
        """Sorted node ids of the axis-aligned box ``offset .. offset + sides - 1``."""


class Subcubes(Topology):
    """Capability: nodes are n-bit addresses and subcubes are addresses over {0, 1, *} (hypercubes)."""

    __slots__ = ()

    n: int


class Routers(Topology):
    """Capability: an indirect network, where nodes attach to routers and routes run over the router graph."""

    __slots__ = ()

    @abstractmethod
    def router_of(self, node: int) -> int:
        """The router ``node`` is attached to."""

    @abstractmethod
    def router_route(self, a: int, b: int) -> list[int]:
        """Routers a message from node ``a`` to node ``b`` passes, in order."""


def capabilities(topology: Topology) -> tuple[str, ...]:
    """Names of the capabilities ``topology`` declares (for listings and messages).

    >>> from topoalloc.topology import parse_machine
    >>> capabilities(parse_machine("mesh:4x4")), capabilities(parse_machine("hypercube:3"))
    (('grid',), ('subcubes',))
    """
    return tuple(name for name, cls in (("grid", Grid), ("subcubes", Subcubes), ("routers", Routers)) if isinstance(topology, cls))
