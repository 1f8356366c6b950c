"""Synthetic traffic patterns (their own registry, ``TRAFFIC``) and the Bernoulli injection process.

A pattern maps a source node to a destination, deterministically
(permutations) or at random (uniform, hotspot).  Patterns defined on bits of
the node id (``transpose`` outside square 2-D grids, ``bit-complement``,
``bit-reverse``, ``shuffle``) need ``N = 2**b`` nodes; ``tornado`` and
``neighbour`` act on each coordinate of a mesh or torus.  With
``b`` address bits and ``s`` a source:

=============== ==========================================================
uniform         any node but ``s``, uniformly
transpose       ``(x, y) → (y, x)`` on a square 2-D grid; else the two
                halves of the address bits swapped (``b`` even)
bit-complement  every bit of ``s`` flipped
bit-reverse     the bits of ``s`` in reverse order
shuffle         the bits rotated left by one
tornado         every coordinate ``x → (x + ceil(k/2) - 1) mod k``
neighbour       every coordinate ``x → (x + 1) mod k``
hotspot         with probability ``fraction`` the hotspot node (default the
                middle of the machine), else uniform
group-shift     dragonfly: the node of the same index in the next group,
                ``(G + 1) mod g`` — every group's traffic on its one global
                link to the next (Kim et al.'s adversarial pattern, ISCA
                2008 §4.2, as a permutation)
=============== ==========================================================

Permutations may map a node to itself; such a packet goes through its own
router (injection, then ejection: no link).  ``uniform`` never does.
"""

from __future__ import annotations

from collections.abc import Callable

from dataclasses import dataclass

import numpy as np

from ..errors import InvalidArgument
from ..registry import Registry
from ..topology.base import Topology
from ..topology.hypercube import Hypercube
from ..topology.torus import Torus

__all__ = ["TRAFFIC", "TrafficPattern", "make_traffic", "bernoulli_packets"]

TRAFFIC: Registry = Registry("traffic pattern")


@dataclass(frozen=True, slots=True, eq=False)
class TrafficPattern:
    """A traffic pattern bound to a machine.

    ``permutation`` is the destination of every source for deterministic
    patterns (``None`` for random ones); ``hotspot``/``fraction`` describe the
    hotspot pattern.
    """

    name: str
    n_nodes: int
    permutation: np.ndarray | None = None
    hotspot: int = -1
    fraction: float = 0.0

    def destinations(self, sources: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Destinations for an array of sources (draws from ``rng`` only for random patterns)."""
        src = np.asarray(sources, dtype=np.int64)
        if self.permutation is not None:
            return self.permutation[src]
        n = self.n_nodes
        dst = rng.integers(0, n - 1, size=src.size)
        dst = dst + (dst >= src)  # any node but the source, uniformly
        if self.hotspot >= 0:
            hot = (rng.random(src.size) < self.fraction) & (src != self.hotspot)
            dst = np.where(hot, self.hotspot, dst)
        return dst


def make_traffic(spec: str, topology: Topology) -> TrafficPattern:
    """Build a pattern from ``NAME[:key=value,...]`` for ``topology``.

    >>> from topoalloc.topology import Mesh
    >>> int(make_traffic("transpose", Mesh((4, 4))).permutation[1])
    4
    """
    if isinstance(spec, TrafficPattern):
        return spec
    return TRAFFIC.create(spec, topology=topology)


def _bits(top: Topology, name: str) -> int:
    n = top.n_nodes
    if n < 2 or n & (n - 1):
        raise InvalidArgument("traffic", name, f"a machine of 2**b nodes (this one has {n})")
    return n.bit_length() - 1


def _grid(top: Topology, name: str) -> Torus:
    if not isinstance(top, Torus):
        raise InvalidArgument("traffic", name, "a mesh or torus (it acts on coordinates)")
    return top


def _perm(name: str, top: Topology, perm: np.ndarray) -> TrafficPattern:
    perm = np.asarray(perm, dtype=np.int64)
    perm.flags.writeable = False
    return TrafficPattern(name, top.n_nodes, perm)


@TRAFFIC.register("uniform")
def _uniform(topology: Topology) -> TrafficPattern:
    """uniform — any other node, uniformly at random."""
    if topology.n_nodes < 2:
        raise InvalidArgument("traffic", "uniform", "a machine of at least 2 nodes")
    return TrafficPattern("uniform", topology.n_nodes)


@TRAFFIC.register("transpose")
def _transpose(topology: Topology) -> TrafficPattern:
    """transpose — (x, y) → (y, x) on square 2-D grids; else the address halves swapped."""
    if isinstance(topology, Torus) and topology.ndim == 2 and topology.dims[0] == topology.dims[1]:
        c = topology.coords
        return _perm("transpose", topology, c[:, 1] * topology.strides[0] + c[:, 0] * topology.strides[1])
    b = _bits(topology, "transpose")
    if b % 2:
        raise InvalidArgument("traffic", "transpose", f"a square 2-D grid or 2**b nodes with b even (b = {b})")
    h = b // 2
    ids = np.arange(topology.n_nodes)
    low = ids & ((1 << h) - 1)
    return _perm("transpose", topology, (low << h) | (ids >> h))


@TRAFFIC.register("bit-complement")
def _bitcomp(topology: Topology) -> TrafficPattern:
    """bit-complement — every address bit flipped (2**b nodes)."""
    b = _bits(topology, "bit-complement")
    return _perm("bit-complement", topology, np.arange(topology.n_nodes) ^ ((1 << b) - 1))


@TRAFFIC.register("bit-reverse")
def _bitrev(topology: Topology) -> TrafficPattern:
    """bit-reverse — the address bits in reverse order (2**b nodes)."""
    b = _bits(topology, "bit-reverse")
    ids = np.arange(topology.n_nodes)
    out = np.zeros_like(ids)
    for i in range(b):
        out |= ((ids >> i) & 1) << (b - 1 - i)
    return _perm("bit-reverse", topology, out)


@TRAFFIC.register("shuffle")
def _shuffle(topology: Topology) -> TrafficPattern:
    """shuffle — the address bits rotated left by one (2**b nodes)."""
    b = _bits(topology, "shuffle")
    ids = np.arange(topology.n_nodes)
    return _perm("shuffle", topology, ((ids << 1) | (ids >> (b - 1))) & ((1 << b) - 1))


def _coordinate_shift(top: Torus, name: str, shift: Callable[[int], int]) -> TrafficPattern:
    c = top.coords
    out = np.zeros(top.n_nodes, dtype=np.int64)
    for i, (k, s) in enumerate(zip(top.dims, top.strides)):
        out += ((c[:, i] + shift(k)) % k) * s
    return _perm(name, top, out)


@TRAFFIC.register("tornado")
def _tornado(topology: Topology) -> TrafficPattern:
    """tornado — every coordinate x → (x + ceil(k/2) - 1) mod k (meshes and tori)."""
    return _coordinate_shift(_grid(topology, "tornado"), "tornado", lambda k: -(-k // 2) - 1)


@TRAFFIC.register("neighbour")
def _neighbour(topology: Topology) -> TrafficPattern:
    """neighbour — every coordinate x → (x + 1) mod k (meshes and tori)."""
    return _coordinate_shift(_grid(topology, "neighbour"), "neighbour", lambda k: 1)


TRAFFIC.register("neighbor", doc="neighbor — the same as neighbour")(_neighbour)


@TRAFFIC.register("hotspot")
def _hotspot(topology: Topology, node: int | None = None, fraction: float = 0.1) -> TrafficPattern:
    """hotspot[:node=N,fraction=F] — F of the packets (default 0.1) to node N (default: the middle), the rest uniform."""
    n = topology.n_nodes
    if n < 2:
        raise InvalidArgument("traffic", "hotspot", "a machine of at least 2 nodes")
    if node is None:
        if isinstance(topology, Torus):
            node = topology.node_at(tuple(k // 2 for k in topology.dims))
        else:
            node = n // 2
    if isinstance(node, bool) or not isinstance(node, (int, np.integer)) or not 0 <= node < n:
        raise InvalidArgument("node", node, f"a node id in 0..{n - 1}")
    if isinstance(fraction, bool) or not isinstance(fraction, (int, float)) or not 0 <= fraction <= 1:
        raise InvalidArgument("fraction", fraction, "a probability in [0, 1]")
    return TrafficPattern("hotspot", n, None, int(node), float(fraction))


@TRAFFIC.register("group-shift")
def _group_shift(topology: Topology) -> TrafficPattern:
    """group-shift — dragonfly: to the node of the same index in the next group (adversarial for minimal routing)."""
    from ..topology.indirect import Dragonfly

    if not isinstance(topology, Dragonfly) or topology.groups < 2:
        raise InvalidArgument("traffic", "group-shift", "a dragonfly of two or more groups")
    per = topology.a * topology.p  # nodes per group (node ids go group by group)
    ids = np.arange(topology.n_nodes)
    return _perm("group-shift", topology, (ids + per) % topology.n_nodes)


def bernoulli_packets(pattern: TrafficPattern, rate: float, packet: int, start: int, stop: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Packets created by every node in cycles ``start .. stop-1``.

    Each node creates a packet in a cycle with probability ``p = rate / packet``
    (so it offers ``rate`` flits per cycle), independently: a Bernoulli
    process, drawn as geometric gaps between a node's packets (the same
    distribution as one coin per node and cycle, with far fewer draws).

    Returns
    -------
    (cycle, source, destination) : three int64 arrays
        Sorted by cycle, then source.
    """
    n = pattern.n_nodes
    p = rate / packet
    span = stop - start
    if span <= 0 or n == 0:
        e = np.zeros(0, dtype=np.int64)
        return e, e, e
    expect = span * p
    k = int(expect + 6 * np.sqrt(expect) + 8)
    times = np.cumsum(rng.geometric(p, size=(n, k)), axis=1) - 1  # cycle offsets of each node's packets
    short = np.flatnonzero(times[:, -1] < span)
    while short.size:  # rare: a node needs more draws
        more = times[short, -1:] + np.cumsum(rng.geometric(p, size=(short.size, k)), axis=1)
        grown = np.full((n, times.shape[1] + k), span, dtype=times.dtype)
        grown[:, : times.shape[1]] = times
        grown[short, times.shape[1] :] = more
        times = grown
        short = np.flatnonzero(times[:, -1] < span)
    src, col = np.nonzero(times < span)
    cyc = times[src, col]
    order = np.lexsort((src, cyc))
    cyc, src = cyc[order], src[order]
    dst = pattern.destinations(src, rng)
    return (cyc + start).astype(np.int64), src.astype(np.int64), dst.astype(np.int64)
