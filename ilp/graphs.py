"""Machine graphs for the exact solvers: any topology, networkx graph or edge list.

The solvers work on a connected simple graph whose nodes are ``0 .. n-1`` and
on its hop-distance matrix (breadth-first search).  For tori and meshes the
hop distance equals the length of the dimension-order route
(``Topology.distance``); a test pins that.

Symmetry breaking needs the graph's automorphisms: :func:`automorphisms`
enumerates them with networkx's VF2 matcher, up to a cap.  Only *sound*
conclusions are drawn from a capped list: orbits are taken under the group the
listed maps generate (union-find over the maps), which is a subgroup of the
full automorphism group, so an orbit representative chosen from it is always
reachable from any solution by a true automorphism.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property

import networkx as nx
import numpy as np

from topoalloc.errors import InvalidArgument

__all__ = ["MachineGraph", "machine_graph", "hypercube_graph", "grid_dims"]


def hypercube_graph(dim: int) -> nx.Graph:
    """Q_dim with node ``i`` joined to ``i ^ (1 << b)`` (node ids are the binary addresses)."""
    if not isinstance(dim, int) or isinstance(dim, bool) or dim < 1:
        raise InvalidArgument("dim", dim, "a positive hypercube dimension")
    g = nx.Graph()
    g.add_nodes_from(range(1 << dim))
    g.add_edges_from((i, i ^ (1 << b)) for i in range(1 << dim) for b in range(dim) if i < i ^ (1 << b))
    return g


@dataclass(frozen=True, eq=False)
class MachineGraph:
    """A connected simple graph on ``0 .. n-1`` with its distance matrix.

    Attributes
    ----------
    name : str
        The spec it came from (``"mesh:4x4"``, ``"hypercube:4"``, ``"graph"``).
    graph : networkx.Graph
    dims : tuple of int or None
        Grid sides (first fastest) when the machine is a mesh or torus — used
        only to offer curve orderings as warm starts.
    wrap : bool
        Whether the grid wraps (torus).
    """

    name: str
    graph: nx.Graph
    dims: tuple[int, ...] | None = None
    wrap: bool = False
    max_automorphisms: int = 20000

    @property
    def n(self) -> int:
        return self.graph.number_of_nodes()

    @cached_property
    def dist(self) -> np.ndarray:
        n = self.n
        d = np.full((n, n), -1, dtype=np.int64)
        for u, row in nx.all_pairs_shortest_path_length(self.graph):
            for v, k in row.items():
                d[u, v] = k
        return d

    @cached_property
    def is_bipartite(self) -> bool:
        return nx.is_bipartite(self.graph)

    @cached_property
    def automorphisms(self) -> list[tuple[int, ...]]:
        """Automorphisms as tuples ``g`` with ``g[v]`` the image of ``v`` (at most ``max_automorphisms``).

        Enumerated by VF2 in a deterministic order; the identity is first.
        """
        gm = nx.algorithms.isomorphism.GraphMatcher(self.graph, self.graph)
        out: list[tuple[int, ...]] = []
        for mapping in gm.isomorphisms_iter():
            out.append(tuple(mapping[v] for v in range(self.n)))
            if len(out) >= self.max_automorphisms:
                break
        return out

    def orbit_reps(self, fixed: Sequence[int] = ()) -> dict[int, int]:
        """Map each node to the smallest node of its orbit under the listed automorphisms fixing ``fixed``."""
        parent = list(range(self.n))

        def find(a: int) -> int:
            while parent[a] != a:
                parent[a] = parent[parent[a]]
                a = parent[a]
            return a

        for g in self.automorphisms:
            if any(g[f] != f for f in fixed):
                continue
            for v in range(self.n):
                a, b = find(v), find(g[v])
                if a != b:
                    parent[max(a, b)] = min(a, b)
        return {v: find(v) for v in range(self.n)}


def _check_graph(g: nx.Graph, name: str, argument: str) -> nx.Graph:
    n = g.number_of_nodes()
    if n < 1:
        raise InvalidArgument(argument, name, "a graph with at least one node")
    if set(g.nodes) != set(range(n)):
        raise InvalidArgument(argument, name, f"nodes numbered 0..{n - 1} (relabel with networkx.convert_node_labels_to_integers)")
    if any(u == v for u, v in g.edges):
        raise InvalidArgument(argument, name, "a graph without self-loops")
    if not nx.is_connected(g):
        raise InvalidArgument(argument, name, "a connected graph (distances must be finite)")
    out = nx.Graph()
    out.add_nodes_from(range(n))
    out.add_edges_from(g.edges)
    return out


def machine_graph(machine: object, *, argument: str = "topology") -> MachineGraph:
    """Turn a machine into a :class:`MachineGraph`.

    Accepts a :class:`~topoalloc.topology.Topology` or a machine spec string
    (``"mesh:4x4"``, ``"torus:4x4"``, any registered kind), ``"hypercube:N"``
    (built here if no hypercube kind is registered), ``"petersen"``, a
    networkx graph on ``0..n-1``, or an edge list of ``(u, v)`` pairs.

    Raises
    ------
    InvalidArgument
        For an unknown spec, nodes not numbered ``0..n-1``, self-loops or a
        disconnected graph.
    """
    from topoalloc.topology import Grid, Topology, parse_machine

    if isinstance(machine, MachineGraph):
        return machine
    if isinstance(machine, nx.Graph):
        if machine.is_directed() or machine.is_multigraph():
            raise InvalidArgument(argument, machine, "a simple undirected networkx Graph")
        return MachineGraph("graph", _check_graph(machine, "graph", argument))
    if isinstance(machine, str):
        spec = machine.strip()
        if spec == "petersen":
            return MachineGraph("petersen", nx.petersen_graph())
        machine = parse_machine(spec)
    if isinstance(machine, Topology):
        top = machine
        g = nx.Graph()
        g.add_nodes_from(range(top.n_nodes))
        for v in range(top.n_nodes):
            for u in top.neighbors(v):
                if u != v:
                    g.add_edge(v, u)
        dims, torus = None, False
        if isinstance(top, Grid) and (all(top.wrap) or not any(top.wrap)):
            dims, torus = tuple(top.dims), all(top.wrap)
        return MachineGraph(top.spec(), _check_graph(g, top.spec(), argument), dims, torus)
    if isinstance(machine, Iterable):
        edges = []
        for i, e in enumerate(machine):
            try:
                u, v = e
                u, v = int(u), int(v)
            except (TypeError, ValueError):
                raise InvalidArgument(f"{argument}[{i}]", e, "an edge (u, v) of two integer node ids") from None
            edges.append((u, v))
        g = nx.Graph()
        g.add_edges_from(edges)
        return MachineGraph("edges", _check_graph(g, "edge list", argument))
    raise InvalidArgument(argument, machine, "a Topology, a machine spec, 'hypercube:N', 'petersen', a networkx Graph or an edge list")


def grid_dims(mg: MachineGraph) -> tuple[int, ...] | None:
    return mg.dims
