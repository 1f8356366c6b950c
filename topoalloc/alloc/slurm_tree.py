"""Slurm's ``topology/tree`` placement: best fit on the lowest switch level that holds the job.

From Slurm's topology documentation (``topology/tree``): a job is placed
under the lowest-level switch that can hold it, choosing by best fit, so
that its nodes share as few upper-level links as possible.  Our reading, the
details Slurm's documentation leaves to its code and which are ours:

1. Among the switches whose subtree has at least ``k`` free nodes, take those
   of the lowest level; among them the one with the fewest free nodes (best
   fit); ties to the first in the file.
2. Under it, fill the switches with nodes (leaves): while nodes are still
   needed, if some leaf has enough free nodes for the rest, take the rest from
   the one with the fewest free nodes (best fit, ties to the first);
   otherwise take every free node of the leaf with the most free (ties to the
   first).  Within a leaf, the lowest node ids.

The root holds every node, so a request fits iff ``k ≤`` free nodes: the
probes are arithmetic (:class:`~topoalloc.alloc.probes.CountingProbes`).
``topology/block`` is :mod:`topoalloc.alloc.slurm_block`.
"""

from __future__ import annotations

from typing import Self

import numpy as np

from ..errors import InvalidArgument
from ..registry import ALLOCATORS
from ..topology.base import Topology
from ..topology.slurm import SlurmTree
from .base import Allocator, Grant, Request
from .probes import CountingProbes

__all__ = ["SlurmTreeAllocator"]


class SlurmTreeAllocator(CountingProbes, Allocator):
    """Slurm topology/tree placement on a :class:`~topoalloc.topology.SlurmTree` (see the module notes)."""

    name = "tree"
    claims = frozenset({"exact_size"})

    def __init__(self, topology: Topology):
        super().__init__(topology)
        top = self.topology
        if not isinstance(top, SlurmTree):
            raise InvalidArgument("topology", topology, "a slurm-tree: machine")
        self.tree = top
        self._leaf_nodes = top.nodes_of_router

    @classmethod
    def accepts(cls, topology: Topology) -> bool:
        """Switch trees read from a topology.conf (slurm-tree:PATH)."""
        return isinstance(topology, SlurmTree)

    def _copy_state(self, clone: Self) -> None:
        pass  # the base's busy mask is all the state

    def _allocate(self, request: Request) -> Grant:
        k = request.size
        top = self.tree
        free_leaf = np.array([int((~self._busy[n]).sum()) for n in self._leaf_nodes], dtype=np.int64)
        best = None
        for s in range(top.n_routers):
            below = top.leaves_below[s]
            f = int(free_leaf[below].sum())
            if f < k:
                continue
            cand = (int(top.level[s]), f, s)
            if best is None or cand < best:
                best = cand
        if best is None:  # cannot happen: the root holds every free node
            raise InvalidArgument("request", request, "at most the free nodes")
        switch = best[2]
        leaves = [int(x) for x in top.leaves_below[switch]]
        need = k
        taken: list[np.ndarray] = []
        avail = {leaf: int(free_leaf[leaf]) for leaf in leaves}
        while need:
            enough = [leaf for leaf in leaves if avail[leaf] >= need]
            if enough:
                leaf = min(enough, key=lambda x: (avail[x], leaves.index(x)))
                take = need
            else:
                leaf = max(leaves, key=lambda x: (avail[x], -leaves.index(x)))
                take = avail[leaf]
            nodes = self._leaf_nodes[leaf]
            taken.append(nodes[~self._busy[nodes]][:take])
            avail[leaf] -= take
            need -= take
        return Grant(np.sort(np.concatenate(taken)), {"switch": top.switch_names[switch], "level": best[0]})


@ALLOCATORS.register("tree", accepts=SlurmTreeAllocator.accepts)
def _make_tree(topology: Topology) -> SlurmTreeAllocator:
    """Slurm topology/tree: best fit on the lowest switch level that holds the job (slurm-tree: machines)."""
    return SlurmTreeAllocator(topology)
