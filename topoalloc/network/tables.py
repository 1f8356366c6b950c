"""Channels of a machine and its destination-based route table, taken from ``Topology.route``.

Channel numbering (``C`` network channels, ``N`` nodes):

* ``0 .. C-1`` — the directed links, node by node, each node's links by
  (dimension, direction).  On a torus a channel is ``(node, dimension,
  direction)`` exactly as :meth:`Torus.links` lists them (a wrapped dimension
  of size 2 has two cables between the same two nodes, one per direction);
  on a hypercube it is :class:`~topoalloc.topology.hypercube.Channel`.
* ``C + u`` — the injection channel of node ``u`` (its network interface into
  its router);
* ``C + N + u`` — the ejection channel of node ``u`` (its router into the node).

The route table ``next_channel[r, d]`` is the channel a packet for ``d``
takes at router ``r``; it is filled from :meth:`Topology.route` itself (each
route fills the table for every node it passes, so far fewer calls than
pairs are needed), never from a second implementation of the routing.  That
needs the routing to be destination-based (the route from any node of a route
onwards is the rest of that route): true of dimension order and E-cube, and
checked while filling.  A hop between nodes joined by two cables (a wrapped
dimension of size 2) takes the positive one: the torus routes "the positive
way on a tie".
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from ..errors import InvalidArgument, SimulationError
from ..topology.base import Grid, Topology
from ..topology.hypercube import Hypercube
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
    src: int
    dst: int
    dimension: int = -1
    direction: int = 0
    wrap: bool = False

    def __str__(self) -> str:
        if self.kind == "injection":
            return f"injection into router {self.src}"
        if self.kind == "ejection":
            return f"ejection at router {self.dst}"
        sign = "+" if self.direction > 0 else "-"
        return f"{self.src}->{self.dst} (dim {self.dimension}{sign}{', wrap' if self.wrap else ''})"


class NetworkTables:
    """Channels, route table and per-router input ports of one topology (immutable; build with :func:`network_tables`).

    Attributes
    ----------
    n_nodes, n_links : int
        ``N`` and ``C``.
    n_channels : int
        ``C + 2N`` (links, injection, ejection).
    chan_src, chan_dst : ndarray of int32
        Upstream node and downstream router of every channel.
    chan_dim : ndarray of int32
        Dimension of a link, -1 for injection and ejection channels.
    chan_wrap : ndarray of uint8
        1 for wrap-around links.
    next_channel : ndarray of int32, shape (N, N)
        The channel a packet for ``d`` takes at router ``r`` (the ejection
        channel of ``d`` when ``r == d``).
    in_ptr, in_chan : ndarray of int32
        Router ``r``'s input channels are ``in_chan[in_ptr[r]:in_ptr[r+1]]``:
        its incoming links (ascending), then its injection channel.
    hops : ndarray of int32, shape (N, N)
        Links on the route from ``s`` to ``d``.
    """

    def __init__(self, topology: Topology):
        if not isinstance(topology, (Torus, Hypercube)):
            raise InvalidArgument("topology", topology.spec() if isinstance(topology, Topology) else topology, "a mesh, torus or hypercube (message routing is dimension order or E-cube)")
        n = topology.n_nodes
        if n > MAX_NODES:
            raise InvalidArgument("topology", topology.spec(), f"at most {MAX_NODES} nodes for the network simulator")
        self.topology = topology
        links = _links(topology)
        self.n_nodes = n
        self.n_links = len(links)
        C = self.n_links
        self.n_channels = C + 2 * n
        src = np.empty(self.n_channels, np.int32)
        dst = np.empty(self.n_channels, np.int32)
        dim = np.full(self.n_channels, -1, np.int32)
        direction = np.zeros(self.n_channels, np.int32)
        wrap = np.zeros(self.n_channels, np.uint8)
        self._key: dict[tuple[int, int, int], int] = {}
        for i, (u, v, d, s, w) in enumerate(links):
            src[i], dst[i], dim[i], direction[i], wrap[i] = u, v, d, s, w
            self._key[(u, d, s)] = i
        nodes = np.arange(n, dtype=np.int32)
        src[C : C + n] = nodes
        dst[C : C + n] = nodes
        src[C + n :] = nodes
        dst[C + n :] = nodes
        self.chan_src, self.chan_dst, self.chan_dim, self.chan_dir, self.chan_wrap = src, dst, dim, direction, wrap
        # per-router input ports: incoming links, then the injection channel
        order = np.argsort(dst[:C], kind="stable")
        counts = np.bincount(dst[:C], minlength=n) + 1
        self.in_ptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int32)
        in_chan = np.empty(int(self.in_ptr[-1]), np.int32)
        pos = self.in_ptr[:-1].copy()
        for c in order.tolist():
            r = int(dst[c])
            in_chan[pos[r]] = c
            pos[r] += 1
        in_chan[pos] = C + nodes
        self.in_chan = in_chan
        self._pair = self._pairs()
        self.next_channel, self.hops = self._route_table()
        for a in (self.chan_src, self.chan_dst, self.chan_dim, self.chan_dir, self.chan_wrap, self.in_ptr, self.in_chan, self.next_channel, self.hops):
            a.flags.writeable = False
        self.diameter = int(self.hops.max()) if n else 0

    # ----------------------------------------------------------------- routing
    def hop_channel(self, a: int, b: int) -> int:
        """The channel of one routing hop ``a → b`` (adjacent nodes).

        Where two cables join ``a`` and ``b`` (a wrapped dimension of size 2)
        it is the positive one: the torus routes the positive way on a tie.
        """
        try:
            return self._pair[(a, b)]
        except KeyError:
            raise InvalidArgument("hop", (a, b), f"two adjacent nodes of {self.topology.spec()}") from None

    def _pairs(self) -> dict[tuple[int, int], int]:
        pair: dict[tuple[int, int], int] = {}
        for (u, _d, s), c in self._key.items():
            v = int(self.chan_dst[c])
            if (u, v) not in pair or s > 0:
                pair[(u, v)] = c
        return pair

    def _route_table(self) -> tuple[np.ndarray, np.ndarray]:
        n, C = self.n_nodes, self.n_links
        nxt = np.full((n, n), -1, np.int32)
        hops = np.zeros((n, n), np.int32)
        route = self.topology.route
        hop_channel = self.hop_channel
        far = _far_first(self.topology)
        for d in range(n):
            col = [-1] * n
            dist = [0] * n
            col[d] = C + n + d
            for s in far(d):
                if col[s] >= 0:
                    continue
                path = route(s, d)
                if path[0] != s or path[-1] != d:
                    raise SimulationError(f"route({s}, {d}) of {self.topology.spec()} does not join {s} to {d}: {path}")
                for j in range(len(path) - 1):
                    a = path[j]
                    c = hop_channel(a, path[j + 1])
                    if col[a] >= 0:
                        if col[a] != c or dist[a] != len(path) - 1 - j:
                            raise SimulationError(f"the routing of {self.topology.spec()} is not destination-based at node {a} for destination {d}")
                        break
                    col[a] = c
                    dist[a] = len(path) - 1 - j
            nxt[:, d] = col
            hops[:, d] = dist
        return nxt, hops

    def route_channels(self, s: int, d: int) -> list[int]:
        """Every channel a packet from ``s`` to ``d`` takes: injection, the links, ejection."""
        self.topology.check_node(s, "s")
        self.topology.check_node(d, "d")
        out = [self.n_links + s]
        r = s
        while True:
            c = int(self.next_channel[r, d])
            out.append(c)
            if c >= self.n_links:
                return out
            r = int(self.chan_dst[c])

    def route_nodes(self, s: int, d: int) -> list[int]:
        """The routers a packet visits from ``s`` to ``d`` (both included): equals ``topology.route(s, d)``."""
        return [s] + [int(self.chan_dst[c]) for c in self.route_channels(s, d)[1:-1]]

    # --------------------------------------------------------------- channels
    def channel(self, index: int) -> ChannelInfo:
        """Description of channel ``index``."""
        C, n = self.n_links, self.n_nodes
        if not 0 <= index < self.n_channels:
            raise InvalidArgument("index", index, f"a channel in 0..{self.n_channels - 1}")
        if index < C:
            return ChannelInfo(index, "link", int(self.chan_src[index]), int(self.chan_dst[index]), int(self.chan_dim[index]), int(self.chan_dir[index]), bool(self.chan_wrap[index]))
        if index < C + n:
            return ChannelInfo(index, "injection", index - C, index - C)
        return ChannelInfo(index, "ejection", index - C - n, index - C - n)

    def link_index(self, node: int, dimension: int, direction: int) -> int:
        """The channel leaving ``node`` across ``dimension`` in ``direction`` (+1 / -1)."""
        try:
            return self._key[(node, dimension, direction)]
        except KeyError:
            raise InvalidArgument("channel", (node, dimension, direction), f"a link of {self.topology.spec()}") from None

    def bisection_links(self) -> int:
        """Links crossing the middle of the largest dimension, one way (for the bisection bound)."""
        top = self.topology
        if isinstance(top, Hypercube):
            return top.n_nodes // 2 if top.n else 0
        i = max(range(top.ndim), key=lambda k: top.dims[k])
        k = top.dims[i]
        cross = top.n_nodes // k  # links per cut of dimension i, one direction
        return cross * (2 if top.wrap[i] and k > 2 else 1)


def _links(top: Topology) -> list[tuple[int, int, int, int, int]]:
    """``(src, dst, dimension, direction, wrap)`` of every link, node by node, by (dimension, direction)."""
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
