"""Placement on indirect networks (dragonfly, fat tree): which free processors a job gets.

The policies the dragonfly job-placement literature compares (Jokanovic et
al., "Quiet neighborhoods: key to protect job performance predictability",
IPDPS 2015; Yang et al., "Watch out for the bully! Job interference study
on dragonfly network", SC 2016; SST's dragonfly allocators):

``contiguous``
    The lowest free node ids: routers in order, groups (or, on a fat tree,
    leaf subtrees) filled one after another.
``random_nodes``
    Free processors drawn uniformly at random (seeded).
``random_routers``
    Routers in a random order (seeded); all free processors of each until
    the job has enough.
``round_robin``
    One free processor from each group in turn (lowest node id first within
    a group), spreading a job over every group.

Any free processors will do, so a request fits iff enough are free: every
probe is arithmetic (:class:`~topoalloc.alloc.probes.CountingProbes`).
"""

from __future__ import annotations

from typing import Self

import numpy as np

from ..errors import InvalidArgument
from ..registry import ALLOCATORS
from ..topology.base import Topology
from ..topology.indirect import RouterNetwork
from .base import Allocator, Grant, Request
from .probes import CountingProbes

__all__ = ["RouterPlacement", "POLICIES"]

POLICIES = ("contiguous", "random_nodes", "random_routers", "round_robin")


class RouterPlacement(CountingProbes, Allocator):
    """A placement policy on a router network (see the module notes)."""

    claims = frozenset({"exact_size"})

    def __init__(self, topology: Topology, policy: str = "contiguous", seed: int = 0):
        super().__init__(topology)
        if policy not in POLICIES:
            raise InvalidArgument("policy", policy, f"one of {', '.join(POLICIES)}")
        top = self.topology
        if not isinstance(top, RouterNetwork):
            raise InvalidArgument("topology", topology, "a dragonfly or fat tree")
        self.net = top
        self.policy = policy
        self.name = policy
        self.seed = seed
        self._rng = np.random.default_rng(seed)
        if policy == "round_robin":
            group_of_node = top.group[top.node_router]
            # rank of each node within its group, then interleave the groups
            order = np.lexsort((np.arange(top.n_nodes), group_of_node))
            rank = np.empty(top.n_nodes, dtype=np.int64)
            starts = np.searchsorted(group_of_node[order], group_of_node[order], "left")
            rank[order] = np.arange(top.n_nodes) - starts
            self._rr = np.lexsort((group_of_node, rank))  # node ids in round-robin order

    @classmethod
    def accepts(cls, topology: Topology) -> bool:
        """Dragonflies and fat trees (router networks)."""
        return isinstance(topology, RouterNetwork)

    def _copy_state(self, clone: Self) -> None:
        clone._rng = np.random.default_rng()
        clone._rng.bit_generator.state = self._rng.bit_generator.state

    def _allocate(self, request: Request) -> Grant:
        k = request.size
        free = ~self._busy
        if self.policy == "contiguous":
            nodes = np.flatnonzero(free)[:k]
        elif self.policy == "random_nodes":
            nodes = self._rng.choice(np.flatnonzero(free), size=k, replace=False)
        elif self.policy == "random_routers":
            routers = self._rng.permutation(self.net.n_routers)
            order = np.concatenate([self.net.nodes_of_router[r] for r in routers.tolist()])
            nodes = order[free[order]][:k]
        else:
            order = self._rr
            nodes = order[free[order]][:k]
        return Grant(np.sort(nodes))


def _register(policy: str, doc: str) -> None:
    if policy.startswith("random"):
        def make(topology: Topology, seed: int = 0) -> RouterPlacement:
            return RouterPlacement(topology, policy, seed)
    else:
        def make(topology: Topology) -> RouterPlacement:  # type: ignore[misc]
            return RouterPlacement(topology, policy)
    make.__doc__ = doc
    ALLOCATORS.register(policy, accepts=RouterPlacement.accepts)(make)


_register("contiguous", "Router networks: the lowest free node ids, filling a group (or leaf subtree) first.")
_register("random_nodes", "Router networks: free processors at random (seed=N).")
_register("random_routers", "Router networks: routers in random order, all their free processors (seed=N).")
_register("round_robin", "Router networks: one free processor from each group in turn.")
