"""Channels of a machine and its destination-based route table, taken from the topology's routing.

Channel numbering (``C`` network channels, ``N`` nodes, ``R`` routers):

* ``0 .. C-1`` — the directed links, router by router, each router's links by
  (dimension, direction).  On a direct network (mesh, torus, hypercube) every
  node is a router (``R = N``, router ``u`` is node ``u``'s).  On a torus a
  channel is ``(node, dimension, direction)`` exactly as :meth:`Torus.links`
  lists them (a wrapped dimension of size 2 has two cables between the same two
  nodes, one per direction); on a hypercube it is
  :class:`~topoalloc.topology.hypercube.Channel`.  On a router network
  (dragonfly, fat tree, a Slurm tree; :class:`RouterNetwork`) the links join
  routers, each router's by neighbour; see :func:`_router_links` for the
  dimension, direction and wrap flags they carry.
* ``C + u`` — the injection channel of node ``u`` (its network interface into
  its router; on a router network, the cable from the node to its switch);
* ``C + N + u`` — the ejection channel of node ``u`` (its router into the node).

The route table ``next_channel[r, d]`` is the channel a packet for ``d``
takes at router ``r``; it is filled from :meth:`Topology.route` (direct
networks) or :meth:`RouterNetwork.router_route` itself (each route fills the
table for every router it passes, so far fewer calls than pairs are needed),
never from a second implementation of the routing.  That needs the routing to
be destination-based (the route from any router of a route onwards is the rest
of that route): true of dimension order, E-cube, the dragonfly's minimal
routing and the fat tree's up*/down* routing, and checked while filling.  A hop
between nodes joined by two cables (a wrapped dimension of size 2) takes the
positive one: the torus routes "the positive way on a tie".
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property, lru_cache

import numpy as np

from ..errors import InvalidArgument, SimulationError
from ..topology.base import Grid, Topology
from ..topology.hypercube import Hypercube
from ..topology.indirect import Dragonfly, FatTree, RouterNetwork
from ..topology.torus import Torus

__all__ = ["NetworkTables", "ChannelInfo", "network_tables", "MAX_NODES"]

#: largest machine the route table is built for (an N x N table of int32)
MAX_NODES = 4096


@dataclass(frozen=True, slots=True)
class ChannelInfo:
    """One channel: ``kind`` is ``link``, ``injection`` or ``ejection``; ``src`` → ``dst`` are nodes.

    For links, ``dimension`` and ``direction`` (+1 / -1) name it as the
    topology does, and ``wrap`` says whether it is a wrap-around link (a torus
    dimension's ``k-1 → 0`` going up or ``0 → k-1`` going down).
    """

    index: int
    kind: str
    src: int  # a router (a node for injection)
    dst: int  # a router (a node for ejection)
    dimension: int = -1
    direction: int = 0
    wrap: bool = False
    label: str = ""  # a router network's name for the link (dragonfly: local / global; fat tree: up / down)

    def __str__(self) -> str:
        if self.kind == "injection":
            return f"injection into router {self.dst}" + ("" if self.src == self.dst else f" from node {self.src}")
        if self.kind == "ejection":
            return f"ejection at router {self.src}" + ("" if self.src == self.dst else f" to node {self.dst}")
        if self.label:
            return f"router {self.src}->{self.dst} ({self.label})"
        sign = "+" if self.direction > 0 else "-"
        return f"{self.src}->{self.dst} (dim {self.dimension}{sign}{', wrap' if self.wrap else ''})"


class NetworkTables:
    """Channels, route table and per-router input ports of one topology (immutable; build with :func:`network_tables`).

    Attributes
    ----------
    n_nodes, n_links, n_routers : int
        ``N``, ``C`` and ``R`` (``R = N`` on a direct network).
    node_router : ndarray of int32
        The router of every node (``arange(N)`` on a direct network).
    n_channels : int
        ``C + 2N`` (links, injection, ejection).
    chan_src, chan_dst : ndarray of int32
        Upstream router (node, for injection) and downstream router (node, for
        ejection) of every channel.
    chan_dim : ndarray of int32
        Dimension of a link, -1 for injection and ejection channels.
    chan_wrap : ndarray of uint8
        1 for wrap-around links.
    next_channel : ndarray of int32, shape (R, N)
        The channel a packet for ``d`` takes at router ``r`` (the ejection
        channel of ``d`` at ``d``'s router; -1 where no route to ``d`` passes).
    in_ptr, in_chan : ndarray of int32
        Router ``r``'s input channels are ``in_chan[in_ptr[r]:in_ptr[r+1]]``:
        its incoming links (ascending), then the injection channels of its nodes.
    hops : ndarray of int32, shape (N, N)
        Links on the route from ``s`` to ``d`` (router-to-router links on a
        router network: the two node cables are the injection and ejection
        channels, so :meth:`RouterNetwork.distance` is this plus 2).
    """

    def __init__(self, topology: Topology):
        if not isinstance(topology, (Torus, Hypercube, RouterNetwork)):
            raise InvalidArgument("topology", topology.spec() if isinstance(topology, Topology) else topology, "a mesh, torus, hypercube or router network (message routing is dimension order, E-cube or the router network's own)")
        n = topology.n_nodes
        routers = topology.n_routers if isinstance(topology, RouterNetwork) else n
        if n > MAX_NODES or routers > MAX_NODES:
            raise InvalidArgument("topology", topology.spec(), f"at most {MAX_NODES} nodes and {MAX_NODES} routers for the network simulator")
        self.topology = topology
        links = _links(topology)
        self.n_nodes = n
        self.n_routers = routers
        self.n_links = len(links)
        C = self.n_links
        self.n_channels = C + 2 * n
        nodes = np.arange(n, dtype=np.int32)
        node_router = np.asarray(topology.node_router, dtype=np.int32) if isinstance(topology, RouterNetwork) else nodes.copy()
        self.node_router = node_router
        src = np.empty(self.n_channels, np.int32)
        dst = np.empty(self.n_channels, np.int32)
        dim = np.full(self.n_channels, -1, np.int32)
        direction = np.zeros(self.n_channels, np.int32)
        wrap = np.zeros(self.n_channels, np.uint8)
        self._key: dict[tuple[int, int, int], int] = {}
        for i, (u, v, d, s, w) in enumerate(links):
            src[i], dst[i], dim[i], direction[i], wrap[i] = u, v, d, s, w
            self._key.setdefault((u, d, s), i)  # unique on direct networks (what link_index serves)
        src[C : C + n] = nodes
        dst[C : C + n] = node_router
        src[C + n :] = node_router
        dst[C + n :] = nodes
        self.chan_src, self.chan_dst, self.chan_dim, self.chan_dir, self.chan_wrap = src, dst, dim, direction, wrap
        # per-router input ports: incoming links, then the injection channels of its nodes
        order = np.argsort(dst[:C], kind="stable")
        counts = np.bincount(dst[:C], minlength=routers) + np.bincount(node_router, minlength=routers)
        self.in_ptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int32)
        in_chan = np.empty(int(self.in_ptr[-1]), np.int32)
        pos = self.in_ptr[:-1].copy()
        for c in order.tolist():
            r = int(dst[c])
            in_chan[pos[r]] = c
            pos[r] += 1
        for u in range(n):
            r = int(node_router[u])
            in_chan[pos[r]] = C + u
            pos[r] += 1
        self.in_chan = in_chan
        self._pair = self._pairs(links)
        self.next_channel, self.hops = self._route_table()
        for a in (self.chan_src, self.chan_dst, self.chan_dim, self.chan_dir, self.chan_wrap, self.in_ptr, self.in_chan, self.next_channel, self.hops, self.node_router):
            a.flags.writeable = False
        self.diameter = int(self.hops.max()) if n else 0

    # ----------------------------------------------------------------- routing
    def hop_channel(self, a: int, b: int) -> int:
        """The channel of one routing hop ``a → b`` (adjacent routers; on a direct network, nodes).

        Where two cables join ``a`` and ``b`` (a wrapped dimension of size 2)
        it is the positive one: the torus routes the positive way on a tie.
        """
        try:
            return self._pair[(a, b)]
        except KeyError:
            raise InvalidArgument("hop", (a, b), f"two adjacent nodes of {self.topology.spec()}") from None

    @staticmethod
    def _pairs(links: list[tuple[int, int, int, int, int]]) -> dict[tuple[int, int], int]:
        pair: dict[tuple[int, int], int] = {}
        for c, (u, v, _d, s, _w) in enumerate(links):
            if (u, v) not in pair or s > 0:
                pair[(u, v)] = c
        return pair

    def _route_table(self) -> tuple[np.ndarray, np.ndarray]:
        n, C, R = self.n_nodes, self.n_links, self.n_routers
        nxt = np.full((R, n), -1, np.int32)
        hops = np.zeros((n, n), np.int32)
        top = self.topology
        route = top.router_route if isinstance(top, RouterNetwork) else top.route
        where = self.node_router.tolist()
        hop_channel = self.hop_channel
        far = _far_first(top)
        for d in range(n):
            col = [-1] * R
            dist = [0] * R
            col[where[d]] = C + n + d
            for s in far(d):
                if col[where[s]] >= 0:
                    continue
                path = route(s, d)
                if path[0] != where[s] or path[-1] != where[d]:
                    raise SimulationError(f"route({s}, {d}) of {top.spec()} does not join router {where[s]} to router {where[d]}: {path}")
                for j in range(len(path) - 1):
                    a = path[j]
                    c = hop_channel(a, path[j + 1])
                    if col[a] >= 0:
                        if col[a] != c or dist[a] != len(path) - 1 - j:
                            raise SimulationError(f"the routing of {top.spec()} is not destination-based at router {a} for destination {d}")
                        break
                    col[a] = c
                    dist[a] = len(path) - 1 - j
            nxt[:, d] = col
            hops[:, d] = [dist[r] for r in where]
        return nxt, hops

    @cached_property
    def router_next(self) -> np.ndarray:
        """Dragonfly only: ``router_next[r, t]``, the link a packet bound for router ``t`` takes at router ``r``
        (-1 at ``t``), from :meth:`Dragonfly.minimal_router_path` — the first leg of Valiant's routing."""
        top = self.topology
        if not isinstance(top, Dragonfly):
            raise InvalidArgument("topology", top.spec(), "a dragonfly (router-to-router routes serve Valiant's routing)")
        R = self.n_routers
        out = np.full((R, R), -1, np.int32)
        for r in range(R):
            for t in range(R):
                if r != t:
                    path = top.minimal_router_path(r, t)
                    out[r, t] = self.hop_channel(path[0], path[1])
        out.flags.writeable = False
        return out

    def route_channels(self, s: int, d: int) -> list[int]:
        """Every channel a packet from ``s`` to ``d`` takes: injection, the links, ejection."""
        self.topology.check_node(s, "s")
        self.topology.check_node(d, "d")
        out = [self.n_links + s]
        r = int(self.node_router[s])
        while True:
            c = int(self.next_channel[r, d])
            out.append(c)
            if c >= self.n_links:
                return out
            r = int(self.chan_dst[c])

    def route_nodes(self, s: int, d: int) -> list[int]:
        """The routers a packet visits from ``s`` to ``d`` (both included): equals ``topology.route(s, d)``
        on a direct network, ``topology.router_route(s, d)`` on a router network."""
        chans = self.route_channels(s, d)
        return [int(self.chan_dst[chans[0]])] + [int(self.chan_dst[c]) for c in chans[1:-1]]

    # --------------------------------------------------------------- channels
    def channel(self, index: int) -> ChannelInfo:
        """Description of channel ``index``."""
        C, n = self.n_links, self.n_nodes
        if not 0 <= index < self.n_channels:
            raise InvalidArgument("index", index, f"a channel in 0..{self.n_channels - 1}")
        if index < C:
            top = self.topology
            label = ""
            if isinstance(top, Dragonfly):
                label = "global" if self.chan_wrap[index] else "local"
            elif isinstance(top, FatTree):
                label = "up" if self.chan_dir[index] > 0 else "down"
            elif isinstance(top, RouterNetwork):
                label = "link"
            return ChannelInfo(index, "link", int(self.chan_src[index]), int(self.chan_dst[index]), int(self.chan_dim[index]), int(self.chan_dir[index]), bool(self.chan_wrap[index]), label)
        if index < C + n:
            return ChannelInfo(index, "injection", index - C, int(self.node_router[index - C]))
        return ChannelInfo(index, "ejection", int(self.node_router[index - C - n]), index - C - n)

    def link_index(self, node: int, dimension: int, direction: int) -> int:
        """The channel leaving ``node`` across ``dimension`` in ``direction`` (+1 / -1)."""
        if isinstance(self.topology, RouterNetwork):
            raise InvalidArgument("channel", (node, dimension, direction), f"a link of a mesh, torus or hypercube; {self.topology.spec()} is a router network (use hop_channel)")
        try:
            return self._key[(node, dimension, direction)]
        except KeyError:
            raise InvalidArgument("channel", (node, dimension, direction), f"a link of {self.topology.spec()}") from None

    def bisection_links(self) -> int:
        """Links crossing the middle of the largest dimension, one way (for the bisection bound)."""
        top = self.topology
        if isinstance(top, RouterNetwork):
            return top.bisection()
        if isinstance(top, Hypercube):
            return top.n_nodes // 2 if top.n else 0
        i = max(range(top.ndim), key=lambda k: top.dims[k])
        k = top.dims[i]
        cross = top.n_nodes // k  # links per cut of dimension i, one direction
        return cross * (2 if top.wrap[i] and k > 2 else 1)


def _router_links(top: RouterNetwork) -> list[tuple[int, int, int, int, int]]:
    """``(src, dst, dimension, direction, wrap)`` of every router link, router by router, by neighbour.

    What the flags mean on each network (they only serve the VC classes and
    the descriptions; routing comes from :meth:`RouterNetwork.router_route`):

    * dragonfly: every link is dimension 0; a *global* link is flagged ``wrap``,
      so with two or more VCs and dateline classes a packet moves to the upper
      class on its global hop and keeps it on the local hop after it — the
      VC change at the global hop that makes minimal routing deadlock-free
      (Kim et al., ISCA 2008, §4: local, global, local in classes 0, 1, 1);
    * fat tree: the link between levels ``l`` and ``l + 1`` is dimension ``l``,
      direction +1 up and -1 down; no wrap (up*/down* needs no classes);
    * any other router graph: dimension 0, direction +1 towards the higher
      router number, no wrap.
    """
    out = []
    per = top.k ** (top.n - 1) if isinstance(top, FatTree) else 0
    for u in range(top.n_routers):
        for v in sorted(int(x) for x in top.graph.neighbors(u)):
            if isinstance(top, FatTree):
                lu, lv = u // per, v // per
                out.append((u, v, min(lu, lv), 1 if lv > lu else -1, 0))
            elif isinstance(top, Dragonfly):
                out.append((u, v, 0, 1 if v > u else -1, int(top.graph.edges[u, v].get("kind") == "global")))
            else:
                out.append((u, v, 0, 1 if v > u else -1, 0))
    return out


def _links(top: Topology) -> list[tuple[int, int, int, int, int]]:
    """``(src, dst, dimension, direction, wrap)`` of every link, node by node, by (dimension, direction)."""
    if isinstance(top, RouterNetwork):
        return _router_links(top)
    out = []
    if isinstance(top, Hypercube):
        for u in range(top.n_nodes):
            for d in range(top.n):
                out.append((u, u ^ (1 << d), d, 1 if not (u >> d) & 1 else -1, 0))
        return out
    if not isinstance(top, Torus):
        raise InvalidArgument("topology", top.spec(), "a mesh, torus or hypercube")
    for u in range(top.n_nodes):
        c = top.coord(u)
        for v, d, s in sorted(top.links(u), key=lambda t: (t[1], t[2])):
            k = top.dims[d]
            wrap = int((s > 0 and c[d] == k - 1) or (s < 0 and c[d] == 0))
            out.append((u, v, d, s, wrap))
    return out


def _far_first(top: Topology) -> Callable[[int], list[int]]:
    """Sources ordered farthest from ``d`` first, so most routes end on nodes already filled.

    Only an ordering: the table is right whatever the order (every entry
    comes from ``Topology.route`` and the filling checks that routes agree).
    """
    n = top.n_nodes
    if isinstance(top, RouterNetwork):
        where = np.asarray(top.node_router)
        hops = top.router_hops
        return lambda d: np.argsort(-hops[where, where[d]], kind="stable").tolist()
    if isinstance(top, Hypercube):
        ids = np.arange(n)
        bits = np.array([bin(i).count("1") for i in range(n)])
        return lambda d: ids[np.argsort(-bits[ids ^ d], kind="stable")].tolist()
    if not isinstance(top, Grid):
        raise InvalidArgument("topology", top.spec(), "a mesh, torus or hypercube")
    coords = top.coords
    dims = np.asarray(top.dims)
    wrap = np.asarray(top.wrap)

    def order(d: int) -> list[int]:
        delta = np.abs(coords - coords[d])
        delta = np.where(wrap, np.minimum(delta, dims - delta), delta)
        return np.argsort(-delta.sum(axis=1), kind="stable").tolist()

    return order


@lru_cache(maxsize=16)
def network_tables(topology: Topology) -> NetworkTables:
    """The (cached) :class:`NetworkTables` of a topology; topologies are immutable and hashable."""
    return NetworkTables(topology)
