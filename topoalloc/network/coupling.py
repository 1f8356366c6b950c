"""Jobs that communicate inside a scheduling simulation: service time emerges from the traffic.

``topoalloc.simulate(..., network="wormhole:packet=8,buffers=4",
traffic="all-to-all:messages=20,compute=0")`` (``--network`` / ``--traffic``
on the command line) couples the event-driven simulation to the message-level
network (:class:`~topoalloc.network.jobs.NetworkModel`):

* when a job starts, its processes are placed on its nodes in the
  allocator's process order (:meth:`Allocator.process_order`: row-major
  within each block for block allocators, the virtual torus or mesh for the
  subtorus and AFL allocators, node ids otherwise) and its messages enter the
  network at the start cycle;
* the simulation clock and the network clock are tied by ``cycle``, the
  simulation time one network cycle takes (default 1: the workload's time
  unit *is* the cycle, as in synthetic studies; with a trace in seconds,
  ``cycle=1`` is a model of a slow network, say so when you use it);
* a job ends (its processors are released and a scheduling pass runs) at the
  end of the cycle its last message is delivered — with ``service=
  communication`` (default) its trace run time is ignored; with ``service=add``
  the trace run time is its computation, done after its communication: it ends
  that much later.  A job with no messages ends at its start (plus its run
  time under ``add``);
* jobs' messages share the links: contention between jobs lengthens their
  service.  Each job's *contention slowdown* divides its communication time by
  the same job's alone on an idle network (``contention=False`` skips that
  second simulation).

Schedulers keep using the requested time as the estimate; a job whose
communication outlasts it is handled as any job running past its estimate.
This is a model: the coupling of cycles to seconds and the serial
communication-then-computation of ``service=add`` are assumptions.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import InvalidArgument
from ..topology.base import Topology
from .config import NetworkConfig
from .engine import MAX_CYCLE
from .jobs import JobCommunication, JobTraffic, NetworkModel

__all__ = ["CommunicatingJobs", "SERVICE_MODES", "network_summary"]

#: how a communicating job's service time is made (see the module notes)
SERVICE_MODES = ("communication", "add")


@dataclass(frozen=True)
class _Started:
    start: float  # simulation time
    nodes: tuple[int, ...]


class CommunicatingJobs:
    """The network a :class:`~topoalloc.sched.Simulation` couples to (see the module notes).

    Parameters
    ----------
    topology : Topology
    config : NetworkConfig or str
        ``"wormhole:packet=8,buffers=4"``; see :class:`NetworkConfig`.
    traffic : JobTraffic or str
        What every job sends, ``"all-to-all:messages=20,compute=0"``.
    cycle : float
        Simulation time of one network cycle (> 0).
    service : {"communication", "add"}
    contention : bool
        Also run each job alone on an idle network for its contention slowdown.

    Examples
    --------
    >>> from topoalloc.topology import parse_machine
    >>> net = CommunicatingJobs(parse_machine("mesh:4x4"), "wormhole", "all-to-all:messages=12")
    >>> net.start(0, [0, 1, 4, 5], 0.0)
    >>> net.poll(1e9)
    (32.0, [0])
    """

    def __init__(
        self,
        topology: Topology,
        config: NetworkConfig | str = "wormhole",
        traffic: JobTraffic | str = "all-to-all:messages=20,compute=0",
        *,
        cycle: float = 1.0,
        service: str = "communication",
        contention: bool = True,
    ):
        if not (isinstance(cycle, (int, float)) and not isinstance(cycle, bool) and math.isfinite(cycle) and cycle > 0):
            raise InvalidArgument("cycle", cycle, "the simulation time of one network cycle, a finite number > 0")
        if service not in SERVICE_MODES:
            raise InvalidArgument("service", service, f"one of {', '.join(SERVICE_MODES)}")
        self.config = config if isinstance(config, NetworkConfig) else NetworkConfig.parse(config)
        self.traffic = JobTraffic.parse(traffic)
        self.cycle = float(cycle)
        self.service = service
        self.contention = bool(contention)
        self.topology = topology
        self.model = NetworkModel(topology, self.config)
        self.model.net.set_window(0, MAX_CYCLE)  # count link flits over the whole run
        self._running: dict[int, _Started] = {}
        self._nodes: dict[int, tuple[int, ...]] = {}
        self.done: dict[int, JobCommunication] = {}
        self._alone: dict[tuple[int, ...], int] = {}

    @property
    def active(self) -> bool:
        """Whether some started job has not finished communicating."""
        return bool(self._running)

    def _cycle_at(self, t: float) -> int:
        return max(self.model.now, math.ceil(t / self.cycle - 1e-9))

    def start(self, job: int, nodes: Sequence[int] | np.ndarray, now: float) -> None:
        """Job ``job`` starts at simulation time ``now`` with its processes on ``nodes`` (in process order)."""
        nodes_t = tuple(int(v) for v in nodes)
        self.model.start_job(job, nodes_t, self.traffic, at=self._cycle_at(now))
        self._running[job] = _Started(now, nodes_t)
        self._nodes[job] = nodes_t

    def poll(self, until: float) -> tuple[float, list[int]] | None:
        """Advance the network up to simulation time ``until``.

        If some jobs finish communicating by then, stop there and return
        ``(time, jobs)``: the simulation time they finish (the end of the
        cycle their last message is delivered, so ``time <= until``; their
        start for jobs with no messages) and their ids; else return ``None``
        with the network simulated up to ``until``.
        """
        if not self._running:
            return None
        if math.isfinite(until):
            # a job whose last delivery is in cycle c ends at (c + 1) * cycle <= until
            limit = max(self.model.now, math.floor(until / self.cycle + 1e-9))
        else:
            limit = self.model.now + (1 << 30)
        done = self.model.next_completion(limit)
        if not done:
            return None
        jobs = []
        for c in done:
            self.done[c.job_id] = c
            jobs.append(c.job_id)
        c = done[0]
        started = self._running[c.job_id]
        t = started.start if c.messages == 0 else (c.end + 1) * self.cycle
        for j in jobs:
            del self._running[j]
        return t, jobs

    def alone(self, job: int) -> int:
        """Communication time (cycles) of ``job``'s traffic on its nodes on an idle network (memoised by node tuple)."""
        nodes = self._nodes[job]
        t = self._alone.get(nodes)
        if t is None:
            solo = NetworkModel(self.topology, self.config)
            solo.start_job(job, nodes, self.traffic, at=0)
            t = self._alone[nodes] = solo.finish()[0].comm_time
        return t

    def per_job(self, n_jobs: int) -> dict[str, np.ndarray]:
        """Per-job arrays (NaN for jobs that did not communicate): communication time (simulation time,
        to the end of the last delivery cycle), messages, mean packet latency and blocking (cycles), mean
        hops, contention slowdown (communication time / the same alone, both in cycles)."""
        out = {name: np.full(n_jobs, np.nan) for name in ("comm_time", "messages", "latency_mean", "blocking_mean", "hops_mean", "contention_slowdown")}
        for j, c in self.done.items():
            out["messages"][j] = c.messages
            if not c.messages:
                out["comm_time"][j] = 0.0
                continue
            out["comm_time"][j] = (c.end + 1 - c.start) * self.cycle
            out["latency_mean"][j] = c.latency_mean
            out["blocking_mean"][j] = c.blocking_mean
            out["hops_mean"][j] = c.hops_mean
            if self.contention:
                alone = self.alone(j)
                out["contention_slowdown"][j] = c.comm_time / alone if alone else 1.0
        return out

    def summary(self, per_job: dict[str, np.ndarray]) -> dict[str, Any]:
        """Aggregates over the whole run (see :func:`network_summary`)."""
        return network_summary(per_job, self.model.net.results(), self.model.net.link_flits, self.model.now)


def network_summary(per_job: dict[str, np.ndarray], packets: dict[str, np.ndarray], link_flits: np.ndarray, cycles: int) -> dict[str, Any]:
    """Aggregates of a coupled run (None where nothing was measured)."""

    def mean(x: np.ndarray) -> float | None:
        x = x[np.isfinite(x)]
        return float(x.mean()) if x.size else None

    delivered = packets["latency"] >= 0 if packets["latency"].size else np.zeros(0, bool)
    hops = packets["hops"][delivered].astype(float)
    blocking = packets["blocking"][delivered].astype(float)
    return {
        "mean_packet_latency": mean(packets["latency"][delivered].astype(float)),
        "mean_packet_blocking": mean(blocking),
        "mean_packet_blocking_per_hop": float(blocking.sum() / hops.sum()) if hops.sum() > 0 else None,
        "mean_comm_time": mean(per_job["comm_time"]),
        "mean_messages_per_job": mean(per_job["messages"]),
        "mean_contention_slowdown": mean(per_job["contention_slowdown"]),
        "link_utilisation_mean": float(link_flits.mean() / cycles) if cycles > 0 and link_flits.size else None,
        "link_utilisation_max": float(link_flits.max() / cycles) if cycles > 0 and link_flits.size else None,
    }
