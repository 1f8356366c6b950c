"""Synthetic-traffic runs: one load point (:func:`run_traffic`) and a load sweep with its saturation point (:func:`sweep`).

Conventions: rates are flits per node per cycle.  A run injects for
``cycles`` cycles; packets created in the first ``warmup`` cycles are not
measured; the measured window is ``warmup .. cycles-1``.  After ``cycles``
the nodes keep injecting (unmeasured) until every measured packet is
delivered or ``drain`` more cycles pass.  ``offered`` counts the measured
packets' flits, ``accepted`` the flits ejected during the window (of any
packet), both per node per cycle of the window.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import InvalidArgument
from ..topology import Topology, parse_machine
from .config import NetworkConfig
from .engine import Network
from .traffic import bernoulli_packets, make_traffic

__all__ = ["TrafficResult", "SweepResult", "run_traffic", "sweep", "parse_sweep", "zero_load_latency"]

#: most cycles of traffic generated at a time while draining
_DRAIN_CHUNK = 1024


@dataclass(frozen=True, slots=True)
class TrafficResult:
    """One load point.

    Attributes
    ----------
    offered, accepted : float
        Flits per node per cycle of the measured window.
    latency_mean, latency_p99 : float
        Creation to tail ejection, over measured packets delivered (cycles).
    network_latency_mean : float
        Head leaving the NI to tail ejection (latency without source queueing).
    hops_mean : float
        Links per measured packet.
    blocking_mean, blocking_per_hop : float
        Header waiting at routers beyond its ready cycle, per packet and per link.
    packets, undelivered : int
        Measured packets, and those not delivered when the drain limit was reached.
    saturated : bool
        ``undelivered > 0`` or ``accepted < 0.95 * offered``.
    link_utilization : ndarray
        Flits per cycle of the window on every link (``tables.n_links``).
    simulated_cycles : int
        Cycles simulated, drain included.
    """

    machine: str
    traffic: str
    rate: float
    config: NetworkConfig
    cycles: int
    warmup: int
    seed: int
    offered: float
    accepted: float
    latency_mean: float
    latency_p99: float
    network_latency_mean: float
    hops_mean: float
    blocking_mean: float
    blocking_per_hop: float
    packets: int
    undelivered: int
    saturated: bool
    simulated_cycles: int
    link_utilization: np.ndarray = field(repr=False)

    def summary(self) -> dict:
        """JSON-ready figures (no timings: one seed gives byte-identical output)."""
        c = self.config
        return {
            "machine": self.machine,
            "traffic": self.traffic,
            "rate": self.rate,
            "offered": _r(self.offered),
            "accepted": _r(self.accepted),
            "latency_mean": _r(self.latency_mean),
            "latency_p99": _r(self.latency_p99),
            "network_latency_mean": _r(self.network_latency_mean),
            "hops_mean": _r(self.hops_mean),
            "blocking_mean": _r(self.blocking_mean),
            "blocking_per_hop": _r(self.blocking_per_hop),
            "cycles": self.cycles,
            "warmup": self.warmup,
            "simulated_cycles": self.simulated_cycles,
            "packets": self.packets,
            "undelivered": self.undelivered,
            "saturated": self.saturated,
            "link_utilization_max": _r(float(self.link_utilization.max()) if self.link_utilization.size else 0.0),
            "link_utilization_mean": _r(float(self.link_utilization.mean()) if self.link_utilization.size else 0.0),
            "mode": c.mode,
            "switching": c.switching,
            "packet": c.packet,
            "buffers": c.buffers,
            "vcs": c.vcs,
            "router_delay": c.router_delay,
            "seed": self.seed,
            **({"routing": c.routing, "valiant_seed": c.valiant_seed} if c.routing != "minimal" else {}),
        }


def _r(x: float) -> float | None:
    return None if x != x else round(float(x), 6)


def zero_load_latency(hops: float, config: NetworkConfig) -> float:
    """Idle-network latency of a packet over ``hops`` links under ``config`` (see :mod:`topoalloc.network.engine`)."""
    R, P = config.router_delay, config.packet
    if config.switching == "saf":
        return (hops + 1) * (R + P) + P - 1
    return (hops + 1) * (R + 1) + P - 1


def run_traffic(
    topology: Topology | str,
    traffic: str = "uniform",
    rate: float = 0.1,
    *,
    config: NetworkConfig | None = None,
    cycles: int = 20000,
    warmup: int | None = None,
    drain: int | None = None,
    seed: int = 0,
) -> TrafficResult:
    """Simulate a synthetic traffic pattern at one injection rate.

    Parameters
    ----------
    topology : Topology or str
        ``mesh:8x8``, ``torus:4x4x4``, ``hypercube:6`` ...
    traffic : str
        A registered pattern with options, e.g. ``uniform`` or ``hotspot:fraction=0.2``.
    rate : float
        Offered load in flits per node per cycle, in (0, 1].
    config : NetworkConfig, optional
    cycles : int
        Cycles of injection, warm-up included.
    warmup : int, optional
        Unmeasured first cycles (default ``cycles // 10``).
    drain : int, optional
        Most cycles simulated after ``cycles`` to deliver the measured packets (default ``cycles``).
    seed : int
        Seed of the injection process and of random destinations.

    Returns
    -------
    TrafficResult

    Examples
    --------
    >>> r = run_traffic("mesh:4x4", "uniform", 0.05, cycles=2000, seed=1)
    >>> r.saturated, abs(r.accepted - r.offered) < 0.01
    (False, True)
    """
    top = parse_machine(topology)
    cfg = NetworkConfig() if config is None else config
    if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not 0 < rate <= 1:
        raise InvalidArgument("rate", rate, "flits per node per cycle in (0, 1]")
    if isinstance(cycles, bool) or not isinstance(cycles, (int, np.integer)) or cycles < 2:
        raise InvalidArgument("cycles", cycles, "an integer >= 2")
    cycles = int(cycles)
    warmup = cycles // 10 if warmup is None else warmup
    if isinstance(warmup, bool) or not isinstance(warmup, (int, np.integer)) or not 0 <= warmup < cycles:
        raise InvalidArgument("warmup", warmup, f"an integer in 0..{cycles - 1}")
    drain = cycles if drain is None else drain
    if isinstance(drain, bool) or not isinstance(drain, (int, np.integer)) or drain < 0:
        raise InvalidArgument("drain", drain, "an integer >= 0")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise InvalidArgument("seed", seed, "an integer")
    pattern = make_traffic(traffic, top)
    rng = np.random.default_rng(int(seed))
    net = Network(top, cfg)
    P = cfg.packet
    create, src, dst = bernoulli_packets(pattern, rate, P, 0, cycles, rng)
    measured = create >= warmup
    job = net.new_job()
    ids = net.add_packets(create, src, dst, np.where(measured, job, -1))
    net.set_window(warmup, cycles)
    net.run(cycles)
    n_measured = int(measured.sum())
    done = False
    if n_measured:
        res = net.results()
        done = bool((res["t_done"][ids[measured]] >= 0).all())
    t, limit = cycles, cycles + int(drain)
    step = 64
    while n_measured and not done and t < limit:
        chunk = min(step, limit - t)
        step = min(2 * step, _DRAIN_CHUNK)  # fixed sizes 64, 128, ... (the random stream must not depend on anything else)
        c, s, d = bernoulli_packets(pattern, rate, P, t, t + chunk, rng)
        net.add_packets(c, s, d)
        net.run(t + chunk, stop_on_job=True)
        done = bool(net.pop_completed())
        t += chunk
    res = net.results()
    sel = ids[measured]
    t_done = res["t_done"][sel]
    ok = t_done >= 0
    lat = (t_done - res["create"][sel])[ok]
    window = cycles - warmup
    n = top.n_nodes
    hops = net.tables.hops[src[measured], dst[measured]]
    blocking = res["blocking"][sel][ok]
    nan = float("nan")
    offered = n_measured * P / (n * window)
    accepted = net.ejected_window / (n * window)
    undelivered = int((~ok).sum())
    util = net.link_flits[: net.tables.n_links] / window
    return TrafficResult(
        machine=top.spec(),
        traffic=pattern.name if isinstance(traffic, str) and ":" not in traffic else str(traffic),
        rate=float(rate),
        config=cfg,
        cycles=cycles,
        warmup=int(warmup),
        seed=int(seed),
        offered=offered,
        accepted=accepted,
        latency_mean=float(lat.mean()) if lat.size else nan,
        latency_p99=float(np.percentile(lat, 99)) if lat.size else nan,
        network_latency_mean=float((t_done - res["t_inject"][sel])[ok].mean()) if lat.size else nan,
        hops_mean=float(hops.mean()) if hops.size else nan,
        blocking_mean=float(blocking.mean()) if blocking.size else nan,
        blocking_per_hop=float(blocking.sum() / max(1, int(hops[ok].sum()))) if blocking.size else nan,
        packets=n_measured,
        undelivered=undelivered,
        saturated=bool(undelivered > 0 or accepted < 0.95 * offered),
        simulated_cycles=int(net.now),
        link_utilization=util,
    )


@dataclass(frozen=True, slots=True)
class SweepResult:
    """A latency–throughput curve: one :class:`TrafficResult` per rate, and where it saturates.

    ``saturation_rate`` is the lowest rate whose run saturated (accepted below
    95 % of offered, or measured packets still undelivered after the drain:
    the network no longer keeps up); ``max_accepted`` the largest accepted
    throughput seen (the saturation throughput); ``latency_knee`` the lowest
    rate whose mean latency exceeds three times ``zero_load_latency`` (the
    idle-network latency at the mean hop count).  None where not reached.
    """

    points: tuple[TrafficResult, ...]
    saturation_rate: float | None
    max_accepted: float
    zero_load_latency: float
    latency_knee: float | None = None

    def summary(self) -> dict:
        first = self.points[0].summary() if self.points else {}
        keys = ("rate", "offered", "accepted", "latency_mean", "latency_p99", "hops_mean", "blocking_mean", "undelivered", "saturated")
        return {
            "machine": first.get("machine"),
            "traffic": first.get("traffic"),
            "saturation_rate": self.saturation_rate,
            "max_accepted": _r(self.max_accepted),
            "zero_load_latency": _r(self.zero_load_latency),
            "latency_knee": self.latency_knee,
            "points": [{k: p.summary()[k] for k in keys} for p in self.points],
        }


def parse_sweep(text: str) -> list[float]:
    """``"0.02:0.5:0.02"`` → ``[0.02, 0.04, ..., 0.5]`` (start:stop:step, stop included)."""
    try:
        a, b, s = (float(x) for x in text.split(":"))
    except ValueError:
        raise InvalidArgument("sweep", text, "START:STOP:STEP, e.g. 0.02:0.5:0.02") from None
    if not (0 < a <= b <= 1 and s > 0):
        raise InvalidArgument("sweep", text, "0 < START <= STOP <= 1 and STEP > 0")
    n = int(np.floor((b - a) / s + 1e-9)) + 1
    return [round(a + i * s, 10) for i in range(n)]


def sweep(topology: Topology | str, traffic: str = "uniform", rates: Sequence[float] | None = None, *, stop_after_saturation: int = 2, **kwargs: Any) -> SweepResult:
    """Run :func:`run_traffic` at each rate (ascending) and find the saturation point.

    ``stop_after_saturation`` further rates are run after the first saturated
    one (to draw the curve's knee), then the sweep stops: beyond saturation the
    source queues only grow.  Other keywords go to :func:`run_traffic`.
    """
    rates = parse_sweep("0.02:0.5:0.02") if rates is None else sorted(float(r) for r in rates)
    points = []
    sat = None
    after = 0
    for rate in rates:
        p = run_traffic(topology, traffic, rate, **kwargs)
        points.append(p)
        if p.saturated:
            if sat is None:
                sat = rate
            else:
                after += 1
            if after >= stop_after_saturation:
                break
    cfg = kwargs.get("config") or NetworkConfig()
    hops = points[0].hops_mean if points else 0.0
    zero = zero_load_latency(hops, cfg)
    knee = next((p.rate for p in points if p.latency_mean == p.latency_mean and p.latency_mean > 3 * zero), None)
    return SweepResult(tuple(points), sat, max((p.accepted for p in points), default=0.0), zero, knee)
