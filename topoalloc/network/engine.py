"""The network engines behind one incremental interface, :class:`Network`.

The flit-level model (``mode="flit"``)
--------------------------------------
Every node has a router and a network interface (NI).  A packet of ``P``
flits follows the channels injection → links of ``Topology.route`` →
ejection.  Every channel but ejection ends in an input buffer of ``B`` flits
per virtual channel (VC); ejection delivers one flit per cycle to the node.

All decisions in cycle ``c`` are taken on the state at the start of ``c``;
their effects (flits moved, buffer space freed) are seen from ``c + 1``.  So
the result does not depend on the order routers are visited in, and a slot
freed in cycle ``c`` can be refilled by a flit sent in ``c + 1`` (credit
round trip: a link keeps one flit per cycle flowing when ``B >= R + 2``;
with fewer it carries ``B / (R + 2)`` flits per cycle).

1. Packets created in cycle ``c`` join their NI's queue (oldest first).  The
   NI takes the next packet once the previous one's tail has left, takes a
   free VC of the injection channel, and sends one flit per cycle while the
   buffer has room.
2. Routing and VC allocation, at every router: a header flit at the front of
   an input VC and *ready* (a flit sent in cycle ``c`` is ready at
   ``c + R + 1``) asks for the channel ``Topology.route`` takes next and
   gets the lowest free VC among those it may use (all ``V``; on a torus
   with dateline classes the lower ``V // 2`` before crossing the current
   dimension's wrap-around link, the others from that link on).  A VC is
   free when no packet holds it; it is held from the header's allocation
   until the tail has been sent into it.  Virtual cut-through also needs room
   for ``P`` flits in that buffer; store-and-forward also needs the packet's
   tail to be ready in the current buffer.  Requests at one router are
   granted oldest packet first (creation cycle, then packet id).
3. Switch allocation, at every router: a ready front flit whose packet holds
   an output VC with room for a flit (ejection always has room) may cross;
   each input channel sends and each output channel carries at most one flit
   per cycle; conflicts go to the oldest packet.  This is the arbitration the
   golden tests pin: two packets that need the same channel cross it one
   after the other, oldest first; with one VC the younger one's header waits
   until the older one's tail has crossed.
4. The moves are applied; a tail releases the VC it entered.

Latency is counted from the cycle a packet is created to the cycle its
tail is ejected.  On an idle network a packet over ``h`` links takes
``(h + 1)(R + 1) + P - 1`` cycles under wormhole or virtual cut-through
(``h + 1`` channels each costing one cycle on the wire and ``R`` in the next
router, ejection included, then ``P - 1`` cycles for the body; this is the
``hops·(R + 1) + P - 1`` of the literature with the injection channel
counted as a hop), and ``(h + 1)(R + P) + P - 1`` under store-and-forward.
*Blocking* is the time a header waits at routers beyond its ready cycle.

Deadlock: if flits are in the network and none moves for
``deadlock_cycles`` cycles, the state can never change again; the run stops
with :class:`~topoalloc.errors.NetworkDeadlock` naming a cycle of VCs each
waiting for the next (a buffer waits for the VC its front flit needs; a VC
held by a packet waits for the buffer holding that packet's next flit).

The packet-level model (``mode="packet"``)
------------------------------------------
A model, not a simulation of flits: the packet is a worm that holds every
channel from its header back to its tail.  Event-driven, one event per
channel request and per release, so its cost grows with packets × hops, not
flits × cycles.  The header asks for channel ``i`` at ``a_i`` (``a_0`` =
creation, ``a_i = T_{i-1} + R + 1``; store-and-forward ``T_{i-1} + P + R``)
and takes it at ``T_i >= a_i`` once a VC is free (oldest first, the same
dateline classes; an injection channel carries one worm at a time).  The tail
passes channel ``i`` at ``tau_i = max(T_i + P - 1, tau_{i-1} + R + 1,
T_{min(i+L, last)})`` with ``L = ceil(P/B) - 1`` under wormhole (a blocked worm
fills ``ceil(P/B)`` buffers) and ``L = 0`` under cut-through and
store-and-forward, and the channel is free again at ``tau_i + 1``.  On an
idle network it gives the flit level's latencies exactly.  It ignores flits
of worms sharing a link through different VCs (each worm gets full
bandwidth), the credit round trip (small buffers) and the one-flit-per-cycle
limits of router ports except through channel holding; its error against the
flit level is measured in ``benchmarks/bench_network.py``.  A deadlock is
reported when worms wait and nothing is granted for ``deadlock_cycles``
cycles (or nothing is left to happen).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import InvalidArgument, NetworkDeadlock
from ..topology import Topology, parse_machine
from ..topology.indirect import Dragonfly
from ..topology.torus import Torus
from .config import NetworkConfig
from .tables import NetworkTables, network_tables

__all__ = ["Network", "compiled_available", "deadlock_error", "uses_dateline", "vc_classes", "hop_classes", "valiant_vias", "MAX_CYCLE"]

#: creation cycles and packet counts stay below 2**31 (the engines pack both into one arbitration key)
MAX_CYCLE = 1 << 31


def compiled_available() -> bool:
    """True when the compiled engine was built at install time."""
    try:
        from . import _cengine  # type: ignore[attr-defined]  # noqa: F401
    except ImportError:
        return False
    return True


def vc_classes(topology: Topology, config: NetworkConfig) -> int:
    """How many VC classes the engines split the VCs into on ``topology`` under ``config`` (1: none).

    Tori with a wrapped side of at least 3 have wrap-around links a route can
    chain through: two dateline classes.  A dragonfly changes class at each
    global hop (see :func:`topoalloc.network.tables._router_links`): two
    classes under minimal routing, three under Valiant's (a route has at most
    two global hops).  ``dateline=None`` means "where needed and ``V`` has
    enough VCs"; ``True`` insists (and needs them); ``False`` refuses.
    """
    top = parse_machine(topology)
    if isinstance(top, Dragonfly):
        if top.groups < 2:  # no global hop
            return 1
        need = 3 if config.routing == "valiant" else 2
    elif isinstance(top, Torus) and any(w and k >= 3 for w, k in zip(top.wrap, top.dims)):
        need = 2
    else:
        return 1
    if config.dateline is None:
        if need == 3 and config.vcs < 3:
            raise InvalidArgument("vcs", config.vcs, "vcs >= 3 for Valiant's routing on a dragonfly (a VC class per global hop crossed: 0, 1, 2), or dateline=false to run without classes (it may deadlock)")
        return need if config.vcs >= need else 1
    if config.dateline and config.vcs < need:
        raise InvalidArgument("dateline", True, f"vcs >= {need} for the {need} VC classes of {top.spec()}" + (" under Valiant's routing" if need == 3 else "") + f" (got vcs={config.vcs})")
    return need if config.dateline else 1


def uses_dateline(topology: Topology, config: NetworkConfig) -> bool:
    """Whether the engines split VCs into classes (dateline classes on tori) on ``topology`` under ``config``."""
    return vc_classes(topology, config) > 1


def hop_classes(tables: NetworkTables, channels: Sequence[int], classes: int | bool) -> list[int]:
    """The VC class of each link of a route, as the engines choose VCs (``classes``: 1, 2 or 3; ``True`` is 2).

    A hop continuing the dimension of the hop before it (the same dimension;
    every dragonfly link is dimension 0) takes that hop's class, one more if it
    is a wrap-around (dragonfly: global) link; a hop starting a dimension takes
    class 1 if it is a wrap-around link, else 0; capped at ``classes - 1``
    (``_reference._Base._allowed``).
    """
    n = 2 if classes is True else max(int(classes), 1)
    out = []
    cls, dim = 0, -1
    for c in channels:
        d = int(tables.chan_dim[c])
        w = int(tables.chan_wrap[c])
        cls = 0 if n == 1 else min(cls + w if d == dim else w, n - 1)
        dim = d
        out.append(cls)
    return out


def valiant_vias(tables: NetworkTables, seed: int, ids: np.ndarray, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """Valiant's intermediate router of each packet (-1: minimal), see :class:`NetworkConfig`'s ``routing``.

    The group is ``choices[h mod len(choices)]`` with ``choices`` the groups
    other than the source's and the destination's, in increasing order, and
    ``h`` SplitMix64 of ``seed · 2^32 + packet id``; the router is where the
    source group's global link lands in it (:meth:`Dragonfly.valiant_router`).
    """
    top = tables.topology
    assert isinstance(top, Dragonfly)
    a, g = top.a, top.groups
    rs = tables.node_router[src].astype(np.int64)
    rd = tables.node_router[dst].astype(np.int64)
    gs, gd = rs // a, rd // a
    x = (np.uint64(seed) << np.uint64(32)) + ids.astype(np.uint64)
    with np.errstate(over="ignore"):  # SplitMix64 (Steele, Lea & Flood 2014), wrapping arithmetic
        x = x + np.uint64(0x9E3779B97F4A7C15)
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        x = x ^ (x >> np.uint64(31))
    lo, hi = np.minimum(gs, gd), np.maximum(gs, gd)
    count = g - 1 - (gs != gd)
    ok = (rs != rd) & (count > 0)
    k = (x % np.maximum(count, 1).astype(np.uint64)).astype(np.int64)
    k = k + (k >= lo)  # skip the lower excluded group, then the higher
    k = k + ((k >= hi) & (gs != gd))
    return np.where(ok, top.valiant_routers(rs, k), -1).astype(np.int64)


class Network:
    """One machine's network, simulated incrementally.

    Parameters
    ----------
    topology : Topology or str
        A mesh, torus, hypercube or router network (dragonfly, fat tree, a
        Slurm tree), or its machine spec.
    config : NetworkConfig, optional
        Default ``NetworkConfig()`` (wormhole, P = 8, B = 16, V = 1, R = 1, flit level).

    Notes
    -----
    Add packets with :meth:`add_packets` (creation cycles not before
    :attr:`now`), advance with :meth:`run`.  Packet ids are given in the order
    packets are added.  Jobs (``job >= 0``) are counted: :meth:`run` can stop
    at the end of the cycle in which a job's last packet is delivered.

    Examples
    --------
    >>> net = Network("mesh:4x4")
    >>> ids = net.add_packets([0], [0], [15])
    >>> net.run(100)
    100
    >>> int(net.results()["latency"][0])  # 6 links: (6 + 1)(1 + 1) + 8 - 1
    21
    """

    def __init__(self, topology: Topology | str, config: NetworkConfig | None = None):
        top = parse_machine(topology)
        cfg = NetworkConfig() if config is None else config
        if not isinstance(cfg, NetworkConfig):
            raise InvalidArgument("config", config, "a NetworkConfig")
        self.topology = top
        self.config = cfg
        self.tables: NetworkTables = network_tables(top)
        if cfg.routing == "valiant" and not isinstance(top, Dragonfly):
            raise InvalidArgument("routing", "valiant", f"a dragonfly machine (Valiant's routing goes through an intermediate group; {top.spec()} is not one)")
        self.classes = vc_classes(top, cfg)
        self.dateline = self.classes > 1
        backend = cfg.engine
        if backend == "auto":
            backend = "c" if compiled_available() else "python"
        if backend == "c":
            if not compiled_available():
                raise InvalidArgument("engine", "c", "'auto' or 'python': the compiled engine was not built when this copy was installed")
            from ._compiled import CFlitEngine, CPacketEngine

            cls: type[Any] = CFlitEngine if cfg.mode == "flit" else CPacketEngine
        else:
            from ._reference import PyFlitEngine, PyPacketEngine

            cls = PyFlitEngine if cfg.mode == "flit" else PyPacketEngine
        self.backend = backend
        self._engine = cls(self.tables, cfg, self.classes)
        self._n_jobs = 0
        self._n_packets = 0
        # create, src, dst, job and Valiant's intermediate router (-1: minimal) of every packet (grown by doubling)
        self._meta = np.zeros((5, 1024), dtype=np.int64)

    @property
    def now(self) -> int:
        """The first cycle not yet simulated."""
        return self._engine.now

    def new_job(self) -> int:
        """A fresh job number for :meth:`add_packets`."""
        self._n_jobs += 1
        return self._n_jobs - 1

    def add_packets(self, create: Any, src: Any, dst: Any, job: Any = None) -> np.ndarray:
        """Add packets; returns their ids.

        Parameters
        ----------
        create, src, dst : array_like of int
            Creation cycle (``>= now``), source and destination node of each packet.
        job : array_like of int or int, optional
            A job number from :meth:`new_job` per packet (or one for all);
            -1 (default) for packets of no job.
        """
        create = np.asarray(create, dtype=np.int64).ravel()
        src = np.asarray(src, dtype=np.int64).ravel()
        dst = np.asarray(dst, dtype=np.int64).ravel()
        k = create.size
        if src.size != k or dst.size != k:
            raise InvalidArgument("src", (src.size, dst.size), f"as many sources and destinations as creation cycles ({k})")
        if job is None:
            job = np.full(k, -1, dtype=np.int64)
        elif np.ndim(job) == 0:
            job = np.full(k, int(job), dtype=np.int64)
        else:
            job = np.asarray(job, dtype=np.int64).ravel()
        if job.size != k:
            raise InvalidArgument("job", job, f"one job number per packet ({k})")
        n = self.tables.n_nodes
        if k:
            if create.min() < self.now:
                raise InvalidArgument("create", int(create.min()), f"creation cycles >= now = {self.now}")
            if create.max() >= MAX_CYCLE or self._n_packets + k > MAX_CYCLE:
                # arbitration packs (creation cycle, packet id) into one 64-bit key
                raise InvalidArgument("create", int(create.max()), f"creation cycles below {MAX_CYCLE} and fewer than {MAX_CYCLE} packets")
            for name, a in (("src", src), ("dst", dst)):
                if a.min() < 0 or a.max() >= n:
                    bad = int(a[(a < 0) | (a >= n)][0])
                    raise InvalidArgument(name, bad, f"node ids in 0..{n - 1}")
            if job.min() < -1 or job.max() >= self._n_jobs:
                bad = int(job[(job < -1) | (job >= self._n_jobs)][0])
                raise InvalidArgument("job", bad, "-1 or a number from new_job()")
        via = None
        if self.config.routing == "valiant":
            via = valiant_vias(self.tables, self.config.valiant_seed, np.arange(self._n_packets, self._n_packets + k), src, dst)
        self._engine.add_packets(create, src, dst, job, via)
        end = self._n_packets + k
        if end > self._meta.shape[1]:
            grown = np.zeros((5, max(end, 2 * self._meta.shape[1])), dtype=np.int64)
            grown[:, : self._n_packets] = self._meta[:, : self._n_packets]
            self._meta = grown
        self._meta[:4, self._n_packets : end] = (create, src, dst, job)
        self._meta[4, self._n_packets : end] = -1 if via is None else via
        ids = np.arange(self._n_packets, end)
        self._n_packets += k
        return ids

    def add_job_packets(self, create: Any, src: Any, dst: Any) -> tuple[int, np.ndarray]:
        """Add the packets of a new job; returns ``(job, ids)``."""
        j = self.new_job()
        return j, self.add_packets(create, src, dst, np.full(np.size(create), j))

    def set_window(self, lo: int, hi: int) -> None:
        """Count link flits and ejected flits only in cycles ``lo .. hi-1`` (the measurement window)."""
        self._engine.set_window(int(lo), int(hi))

    def run(self, until: int, *, stop_on_job: bool = False) -> int:
        """Simulate cycles up to ``until - 1``; returns :attr:`now`.

        With ``stop_on_job``, stop after the first cycle in which some job's
        last packet is delivered (see :meth:`pop_completed`).
        """
        until = int(until)
        if until < self.now:
            raise InvalidArgument("until", until, f"a cycle >= now = {self.now}")
        return self._engine.run(until, stop_on_job)

    def pop_completed(self) -> list[tuple[int, int]]:
        """``(job, cycle)`` of jobs whose last packet was delivered since the last call, in order."""
        out = list(self._engine.completed)
        self._engine.completed.clear()
        return out

    @property
    def link_flits(self) -> np.ndarray:
        """Flits that crossed each channel in the window (length ``tables.n_channels``)."""
        return np.asarray(self._engine.link_flits, dtype=np.int64)

    @property
    def ejected_window(self) -> int:
        """Flits ejected in the window."""
        return int(self._engine.ejected_window)

    def results(self, ids: Any = None) -> dict[str, np.ndarray]:
        """Per packet (all, or those in ``ids``): ``create``, ``src``, ``dst``, ``job``, ``t_inject`` (head sent
        by the NI), ``t_done`` (tail ejected, -1 if not yet), ``latency`` (``t_done - create``, -1 if not
        delivered), ``blocking``, ``hops``; under Valiant's routing also ``via``, the intermediate router (-1: minimal)."""
        m = self._n_packets
        sel = slice(0, m) if ids is None else np.asarray(ids, dtype=np.int64)
        out = self._engine.results(sel)
        meta = self._meta[:, :m][:, sel]
        out = {"create": meta[0], "src": meta[1], "dst": meta[2], "job": meta[3], **out}
        if self.config.routing == "valiant":
            out["via"] = meta[4]
        out["latency"] = np.where(out["t_done"] >= 0, out["t_done"] - out["create"], -1)
        return out


def _describe_vc(tables: NetworkTables, V: int, q: int) -> str:
    return f"{tables.channel(q // V)} vc {q % V}"


def deadlock_error(engine: Any, now: int) -> NetworkDeadlock:
    """Build the :class:`NetworkDeadlock` of a frozen engine: find a cycle in its wait graph."""
    import networkx as nx

    g = nx.DiGraph()
    for a, bs in engine.wait_graph().items():
        for b in bs:
            g.add_edge(a, b)
    try:
        cycle = [u for u, _ in nx.find_cycle(g)]
    except nx.NetworkXNoCycle:
        cycle = sorted(g.nodes)[:8]
    ring = [_describe_vc(engine.tables, engine.V, q) for q in cycle]
    return NetworkDeadlock(now, now - engine.last_move, ring)
