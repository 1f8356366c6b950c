"""The flat (fully connected) machine: any set of free nodes is as good as any other."""

from __future__ import annotations

from ..errors import InvalidArgument
from ..registry import TOPOLOGIES
from .base import Topology

__all__ = ["FlatTopology"]


class FlatTopology(Topology):
    """``n`` processors, every pair joined by a link (distance 1).

    This is the "hypothetical fully connected machine" of Mao/Chen/Watson §4.3,
    the baseline every topology-aware allocator is compared against.

    Examples
    --------
    >>> FlatTopology(4).distance(0, 3)
    1
    >>> FlatTopology(4) == FlatTopology(4)
    True
    """

    __slots__ = ("_n",)
    kind = "flat"
    has_locality = False

    def __init__(self, n: int):
        if not isinstance(n, int) or isinstance(n, bool) or n < 1:
            raise InvalidArgument("n", n, "a positive number of processors")
        self._n = n

    @property
    def n_nodes(self) -> int:
        return self._n

    def key(self) -> tuple:
        return ("flat", self._n)

    def spec(self) -> str:
        return f"flat:{self._n}"

    def neighbors(self, node: int) -> list[int]:
        self.check_node(node)
        return [v for v in range(self._n) if v != node]

    def distance(self, a: int, b: int) -> int:
        self.check_node(a, "a")
        self.check_node(b, "b")
        return 0 if a == b else 1

    def route(self, a: int, b: int) -> list[int]:
        self.check_node(a, "a")
        self.check_node(b, "b")
        return [a] if a == b else [a, b]


@TOPOLOGIES.register("flat")
def _flat_from_spec(n: int) -> FlatTopology:
    """flat:N — N fully connected processors."""
    return FlatTopology(n)
