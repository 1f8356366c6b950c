"""Indirect networks as router graphs (built with networkx): dragonfly and fat tree (k-ary n-tree).

Processors attach to routers; messages go node → router → ... → router →
node, so the hop count of a route is its number of links: 2 plus the router
hops (0 for two nodes of one router).

``dragonfly:p=P,a=A,h=H[,g=G]``
    Kim, Dally, Scott & Abts, "Technology-Driven, Highly-Scalable Dragonfly
    Topology" (ISCA 2008), §3: ``p`` terminals per router, ``a`` routers
    per group joined all to all, ``h`` global links per router, ``g``
    groups (at most, and by default, ``a·h + 1``: one global link between
    every pair of groups).  Global links are arranged consecutively: channel
    ``c`` (0 ≤ c < a·h, owned by router ``c // h`` of its group) of group
    ``G`` leads to group ``(G + c + 1) mod g``; with fewer than ``a·h + 1``
    groups the channels that would repeat a group pair are left unused.
    Routing is minimal (local, global, local: at most three router hops);
    :meth:`Dragonfly.valiant_route` goes through an intermediate group
    (Valiant's randomised routing, §4.2 of the paper) as an option.
``fattree:k=K,n=N``
    The k-ary n-tree of Petrini & Vanneschi ("k-ary n-trees: High
    Performance Networks for Massively Parallel Architectures", IPPS 1997),
    a folded Clos network (Leiserson's fat tree with constant-arity
    switches): ``k^n`` processors, ``n`` levels of ``k^(n-1)`` switches of
    ``2k`` ports.  Switch ``(w, l)`` (``w`` an (n−1)-digit base-k word, level
    ``l`` = 0 at the leaves) joins ``(w', l+1)`` iff ``w`` and ``w'``
    differ at most in digit ``l``; processor ``x`` hangs off leaf ``x // k``.
    Its bisection is ``k^n / 2`` links (full bisection bandwidth).  Routing
    is minimal: up to a nearest common ancestor, then down.

Node ids go router by router (and, on a dragonfly, group by group), so the
lowest node ids fill a group first.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np

from ..errors import InvalidArgument
from ..registry import TOPOLOGIES
from .base import Routers

if TYPE_CHECKING:
    import networkx as nx

__all__ = ["RouterNetwork", "Dragonfly", "FatTree"]


#: bytes a router or a link of the router graph takes in networkx, with its attributes (measured: 330-1,850)
GRAPH_BYTES = 2048


def _check_graph(spec: str, routers: int, links: int, nodes: int) -> None:
    """Refuse, before building it, a router network that would not fit in memory (one line naming it)."""
    from ..limits import NODE_BYTES, check_memory

    check_memory((routers + links) * GRAPH_BYTES + nodes * NODE_BYTES, "machine", spec, f"a router network of {routers:,} routers, {links:,} links and {nodes:,} nodes")


class RouterNetwork(Routers):
    """Processors attached to the routers of a graph; equality by :meth:`key`.

    Attributes
    ----------
    graph : networkx.Graph
        The router graph (routers ``0 .. n_routers-1``); treat it as read-only.
    node_router : ndarray
        The router of every processor.
    group : ndarray
        The group (dragonfly) or pod-free index (fat tree: the leaf's
        subtree at the top level) of every router.
    """

    def __init__(self, graph: "nx.Graph", node_router: "Sequence[int] | np.ndarray", group: "Sequence[int] | np.ndarray"):
        self.graph = graph
        self.node_router = np.asarray(node_router, dtype=np.int64)
        self.node_router.flags.writeable = False
        self.group = np.asarray(group, dtype=np.int64)
        self.group.flags.writeable = False
        self.n_routers = graph.number_of_nodes()
        self._n = int(self.node_router.size)

    @property
    def n_nodes(self) -> int:
        return self._n

    @cached_property
    def router_hops(self) -> np.ndarray:
        """All-pairs router hop counts (BFS)."""
        import networkx as nx

        d = np.zeros((self.n_routers, self.n_routers), dtype=np.int32)
        for src, lengths in nx.all_pairs_shortest_path_length(self.graph):
            for dst, ln in lengths.items():
                d[src, dst] = ln
        d.flags.writeable = False
        return d

    @cached_property
    def nodes_of_router(self) -> list[np.ndarray]:
        order = np.argsort(self.node_router, kind="stable")
        bounds = np.searchsorted(self.node_router[order], np.arange(self.n_routers + 1))
        return [order[bounds[r] : bounds[r + 1]] for r in range(self.n_routers)]

    def router_of(self, node: int) -> int:
        return int(self.node_router[self.check_node(node)])

    def neighbors(self, node: int) -> list[int]:
        """The processors of the same router (one router, two links away)."""
        r = self.router_of(node)
        return [int(v) for v in self.nodes_of_router[r] if v != node]

    def distance(self, a: int, b: int) -> int:
        ra, rb = self.router_of(a), self.router_of(b)
        if a == b:
            return 0
        return 2 + int(self.router_hops[ra, rb])

    def router_route(self, a: int, b: int) -> list[int]:
        """A shortest route, destination-based: from each router, the lowest-numbered neighbour one hop nearer ``b``'s router.

        Destination-based (the route from any router of a route onwards is the
        rest of that route), so the network simulator's route table can hold it;
        on a tree (``topology/tree``, ``topology/block``) it is the only path.
        """
        return self._toward(self.router_of(a), self.router_of(b))

    def _toward(self, ra: int, rb: int) -> list[int]:
        dist = self.router_hops[:, rb]
        path = [ra]
        while path[-1] != rb:
            r = path[-1]
            path.append(min(v for v in self._adjacent[r] if dist[v] == dist[r] - 1))
        return path

    @cached_property
    def _adjacent(self) -> list[list[int]]:
        return [sorted(int(v) for v in self.graph.neighbors(r)) for r in range(self.n_routers)]

    def route(self, a: int, b: int) -> list[int]:
        """The processors a message visits: just the two ends (the routers between are in :meth:`router_route`)."""
        self.check_node(a, "a")
        self.check_node(b, "b")
        return [a] if a == b else [a, b]

    def bisection(self) -> int:
        """Links cut between the lower and upper half of the processors (max flow, unit capacity per router link).

        Every link counts once, a processor's link to its router too (so a
        router serving both halves is not an infinite bridge).
        """
        import networkx as nx

        g = nx.DiGraph()
        for u, v in self.graph.edges():
            g.add_edge(u, v, capacity=1)
            g.add_edge(v, u, capacity=1)
        half = self._n // 2
        for x in range(self._n):
            r = int(self.node_router[x])
            u, v = ("s", r) if x < half else (r, "t")
            cap = g.edges[u, v]["capacity"] + 1 if g.has_edge(u, v) else 1
            g.add_edge(u, v, capacity=cap)  # one link per processor
        return int(nx.maximum_flow_value(g, "s", "t"))


class Dragonfly(RouterNetwork):
    """A dragonfly (see the module notes).

    >>> d = Dragonfly(2, 4, 2)
    >>> d.n_nodes, d.n_routers, d.groups
    (72, 36, 9)
    >>> d.distance(0, 1), d.distance(0, 2), max(len(d.router_route(0, x)) - 1 for x in range(72))
    (2, 3, 3)
    """

    kind = "dragonfly"

    def __init__(self, p: int, a: int, h: int, g: int | None = None):
        for name, v in (("p", p), ("a", a), ("h", h)):
            if not isinstance(v, int) or v < 1:
                raise InvalidArgument(name, v, "a positive integer")
        gmax = a * h + 1
        g = gmax if g is None else g
        if not isinstance(g, int) or not 1 <= g <= gmax:
            raise InvalidArgument("g", g, f"a number of groups in 1..a·h+1 = {gmax}")
        _check_graph(f"dragonfly:p={p},a={a},h={h}" + ("" if g == gmax else f",g={g}"), g * a, g * a * (a - 1) // 2 + g * a * h // 2, g * a * p)
        import networkx as nx

        self.p, self.a, self.h, self.groups = p, a, h, g
        graph = nx.Graph()
        graph.add_nodes_from(range(g * a))
        for G in range(g):
            for i in range(a):
                for j in range(i + 1, a):
                    graph.add_edge(G * a + i, G * a + j, kind="local")
        for G in range(g):
            for c in range(a * h):
                H = (G + c + 1) % gmax
                if H >= g or H == G:
                    continue
                back = (G - H - 1) % gmax  # the channel of group H that leads back to G
                u, v = G * a + c // h, H * a + back // h
                graph.add_edge(u, v, kind="global")
        super().__init__(graph, np.repeat(np.arange(g * a), p), np.arange(g * a) // a)

    def key(self) -> tuple:
        return ("dragonfly", self.p, self.a, self.h, self.groups)

    def spec(self) -> str:
        return f"dragonfly:p={self.p},a={self.a},h={self.h}" + ("" if self.groups == self.a * self.h + 1 else f",g={self.groups}")

    def router_route(self, a: int, b: int) -> list[int]:
        """Minimal routing: a local hop to the router holding the global link to the destination group, the global hop, a local hop."""
        ra, rb = self.router_of(a), self.router_of(b)
        return self.minimal_router_path(ra, rb)

    def minimal_router_path(self, ra: int, rb: int) -> list[int]:
        """The minimal route between two routers (as :meth:`router_route` between their nodes)."""
        if ra == rb:
            return [ra]
        ga, gb = ra // self.a, rb // self.a
        if ga == gb:
            return [ra, rb]
        gmax = self.a * self.h + 1
        c = (gb - ga - 1) % gmax  # group ga's channel to gb
        back = (ga - gb - 1) % gmax
        out_r, in_r = ga * self.a + c // self.h, gb * self.a + back // self.h
        path = [ra]
        if out_r != ra:
            path.append(out_r)
        path.append(in_r)
        if rb != in_r:
            path.append(rb)
        return path

    def distance(self, a: int, b: int) -> int:
        """Links on the minimal route (which a shortest path through a third group could undercut)."""
        if a == b:
            self.check_node(a)
            return 0
        return 1 + len(self.router_route(a, b))

    def valiant_route(self, a: int, b: int, via: int) -> list[int]:
        """Valiant's routing (Kim et al. §4.2): minimally to group ``via``, then minimally to the destination.

        The first leg ends where it enters group ``via``: on the router its
        global link from the source's group lands on (:meth:`valiant_router`),
        so a route is local, global, local, global, local at most (one local
        hop in the intermediate group).  ``via`` equal to the source's group
        gives the minimal route.
        """
        ra, rb = self.router_of(a), self.router_of(b)
        t = self.valiant_router(ra, via)
        first = self.minimal_router_path(ra, t)
        return first + self.minimal_router_path(t, rb)[1:]

    def valiant_router(self, ra: int, via: int) -> int:
        """Where a packet from router ``ra`` enters group ``via`` (``ra`` itself if it is in that group)."""
        if not 0 <= via < self.groups:
            raise InvalidArgument("via", via, f"a group in 0..{self.groups - 1}")
        return int(self.valiant_routers(np.array([ra]), np.array([via]))[0])

    def valiant_routers(self, ra: np.ndarray, via: np.ndarray) -> np.ndarray:
        """:meth:`valiant_router` for arrays of routers and groups (elementwise, not checked)."""
        ra = np.asarray(ra, dtype=np.int64)
        via = np.asarray(via, dtype=np.int64)
        ga = ra // self.a
        back = (ga - via - 1) % (self.a * self.h + 1)  # group via's channel to ga
        return np.where(via == ga, ra, via * self.a + back // self.h)


class FatTree(RouterNetwork):
    """A k-ary n-tree (see the module notes).

    >>> t = FatTree(2, 3)
    >>> t.n_nodes, t.n_routers, t.bisection()
    (8, 12, 4)
    >>> t.distance(0, 1), t.distance(0, 2), t.distance(0, 7)
    (2, 4, 6)
    """

    kind = "fattree"

    def __init__(self, k: int, n: int):
        if not isinstance(k, int) or k < 2 or not isinstance(n, int) or n < 1:
            raise InvalidArgument("k", (k, n), "k >= 2 and n >= 1")
        _check_graph(f"fattree:k={k},n={n}", n * k ** (n - 1), (n - 1) * k**n, k**n)
        self.k, self.n = k, n
        import networkx as nx

        per = k ** (n - 1)
        graph = nx.Graph()
        graph.add_nodes_from(range(n * per))
        for level in range(n - 1):
            step = k**level
            for w in range(per):
                digit = (w // step) % k
                base = w - digit * step
                for d in range(k):
                    graph.add_edge(level * per + w, (level + 1) * per + base + d * step)
        top_digit = k ** max(n - 2, 0)
        super().__init__(graph, np.arange(k**n) // k, [(r % per) // top_digit if n > 1 else 0 for r in range(n * per)])

    def key(self) -> tuple:
        return ("fattree", self.k, self.n)

    def router_route(self, a: int, b: int) -> list[int]:
        """Minimal up*/down* routing with the up ports chosen by the destination's digits.

        From switch ``(w, l)``: if ``b``'s leaf ``v`` lies below it (``w`` and
        ``v`` agree from digit ``l`` up), go down to ``(w', l-1)`` with digit
        ``l-1`` of ``w`` set to ``v``'s; else go up to ``(w', l+1)`` with digit
        ``l`` set to ``v``'s.  So a route climbs to the lowest common level and
        comes down through ``(v, l)``; every route to one leaf ends on the same
        switches (destination-based, the deterministic fat-tree routing of
        Gómez et al., "Deterministic versus Adaptive Routing in Fat-Trees",
        IPDPS workshops 2007, which spreads destinations over the up ports).
        Deadlock-free with one virtual channel: no route goes down then up.
        """
        k, per = self.k, self.k ** (self.n - 1)
        v = self.router_of(b)
        r = self.router_of(a)
        path = [r]
        while r != v:
            level, w = divmod(r, per)
            step = k**level
            if w // step == v // step:  # v lies below (w, level): go down, fixing digit level-1
                low = step // k
                w += ((v // low) % k - (w // low) % k) * low
                level -= 1
            else:  # go up, fixing digit level
                w += ((v // step) % k - (w // step) % k) * step
                level += 1
            r = level * per + w
            path.append(r)
        return path

    def spec(self) -> str:
        return f"fattree:k={self.k},n={self.n}"


@TOPOLOGIES.register("dragonfly")
def _dragonfly_from_spec(p: int = 2, a: int = 4, h: int = 2, g: int | None = None) -> Dragonfly:
    """dragonfly:p=P,a=A,h=H[,g=G] — P nodes per router, A routers per group (all to all), H global links per router, G groups (default A·H+1)."""
    return Dragonfly(p, a, h, g)


@TOPOLOGIES.register("fattree")
def _fattree_from_spec(k: int = 4, n: int = 3) -> FatTree:
    """fattree:k=K,n=N — the k-ary n-tree: K^N nodes, N levels of K^(N-1) switches (a folded Clos)."""
    return FatTree(k, n)

