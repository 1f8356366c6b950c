"""Jobs that communicate: their messages on the simulated network, communication time and contention slowdown.

What a job sends (:class:`JobTraffic`, spec ``all-to-all:messages=20,compute=0``)
--------------------------------------------------------------------------------
A job's processes ``0 .. n-1`` run on its nodes in the order given (process
``i`` on ``nodes[i]``: the allocator's order, e.g. row-major within each block).
A pattern lists (source, destination) process pairs; the job sends
``messages`` messages (one packet each), the ``m``-th on pair ``m mod len(pairs)``.
A process creates its ``k``-th message ``k × compute`` cycles after the job
starts; its network interface sends its messages one after another.

* ``all-to-all`` — rounds ``r = 1 .. n-1``, in each every process ``i`` sends to ``(i + r) mod n``;
* ``one-to-all`` — process ``root`` (default 0) to every other, in order;
* ``ring`` — ``i → (i + 1) mod n``;
* ``stencil`` — 2-D nearest neighbours on the job's logical ``W × L`` grid
  (``shape=WxL``; default the closest-to-square factorisation of ``n``; process
  ``i`` at ``(i mod W, i div W)``), east, west, north, south, no wrap;
* ``random-pairs`` — seeded uniform pairs of distinct processes.

A job's *communication time* is from its start to the cycle its last message
is ejected (0 without messages); its *contention slowdown* divides that by the
same job's communication time alone on an idle network.

Hooking this into the scheduling simulation (planned, not wired yet)
--------------------------------------------------------------------
:class:`NetworkModel` is the network as an event loop sees it, in cycles:

1. when the scheduler starts a job on an allocation: ``model.start_job(job_id,
   allocation.nodes_in_process_order, traffic, at=cycle)``;
2. before handling its next event at time ``t``: ``done =
   model.next_completion(cycle_of(t))`` — the model advances to the first cycle
   before ``t`` in which some job's last message is delivered and returns
   those jobs (:class:`JobCommunication`), or advances to ``t`` and returns
   ``[]``; each returned job ends at ``done[i].end`` (plus its compute, as the
   option chosen), releases its nodes, the scheduler runs a pass at that time,
   and the loop calls ``next_completion`` again before moving on;
3. the service time of a job is thus not known in advance: the simulation's
   "expected end" of a communicating job is its requested time, as EASY
   already assumes.

Scheduler time (seconds) maps to cycles by one factor chosen by the caller.
:func:`run_jobs` is the same loop with fixed start times and node sets, and
also runs each job alone for its slowdown.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import InvalidArgument, SimulationError
from .. import spec as _spec
from ..registry import Registry
from ..topology import Topology, parse_machine
from .config import NetworkConfig
from .engine import Network

__all__ = ["JOB_PATTERNS", "JobTraffic", "JobSpec", "JobCommunication", "NetworkModel", "run_jobs", "process_pairs"]

#: job communication patterns: name -> function(n processes, traffic) -> (K, 2) array of (src, dst) process pairs
JOB_PATTERNS: Registry = Registry("job traffic pattern")


def _pairs(src: Any, dst: Any) -> np.ndarray:
    return np.stack([np.asarray(src, dtype=np.int64).ravel(), np.asarray(dst, dtype=np.int64).ravel()], axis=1).reshape(-1, 2)


@JOB_PATTERNS.register("all-to-all")
def _all_to_all(n: int, traffic: "JobTraffic") -> np.ndarray:
    """all-to-all — rounds r = 1..n-1: every process i sends to (i + r) mod n."""
    r = np.repeat(np.arange(1, n), n)
    i = np.tile(np.arange(n), max(n - 1, 0))
    return _pairs(i, (i + r) % n)


@JOB_PATTERNS.register("one-to-all")
def _one_to_all(n: int, traffic: "JobTraffic") -> np.ndarray:
    """one-to-all[:root=R] — process R (default 0) to every other process."""
    root = traffic.root
    if not 0 <= root < n:
        raise InvalidArgument("root", root, f"a process in 0..{n - 1}")
    others = np.delete(np.arange(n), root)
    return _pairs(np.full(others.size, root), others)


@JOB_PATTERNS.register("ring")
def _ring(n: int, traffic: "JobTraffic") -> np.ndarray:
    """ring — every process i to (i + 1) mod n."""
    i = np.arange(n if n > 1 else 0)
    return _pairs(i, (i + 1) % max(n, 1))


def _square(n: int) -> tuple[int, int]:
    w = int(math.isqrt(n))
    while n % w:
        w -= 1
    return n // w, w


@JOB_PATTERNS.register("stencil")
def _stencil(n: int, traffic: "JobTraffic") -> np.ndarray:
    """stencil[:shape=WxL] — 2-D nearest neighbours on the job's W x L grid (default closest to square)."""
    w, h = traffic.shape if traffic.shape else _square(n)
    if w * h != n:
        raise InvalidArgument("shape", f"{w}x{h}", f"a W x L grid of exactly the job's {n} processes")
    i = np.arange(n)
    x, y = i % w, i // w
    out = []
    for dx, dy in ((1, 0), (-1, 0), (0, 1), (0, -1)):
        ok = (0 <= x + dx) & (x + dx < w) & (0 <= y + dy) & (y + dy < h)
        out.append(_pairs(i[ok], (x + dx)[ok] + (y + dy)[ok] * w))
    return np.concatenate(out)


@JOB_PATTERNS.register("random-pairs")
def _random_pairs(n: int, traffic: "JobTraffic") -> np.ndarray:
    """random-pairs[:seed=S] — `messages` uniform pairs of distinct processes."""
    if n < 2:
        return _pairs([], [])
    rng = np.random.default_rng(traffic.seed)
    src = rng.integers(0, n, traffic.messages)
    dst = rng.integers(0, n - 1, traffic.messages)
    return _pairs(src, dst + (dst >= src))


@dataclass(frozen=True, slots=True)
class JobTraffic:
    """What one job sends (see the module notes).

    Parameters
    ----------
    pattern : str
        A name in ``JOB_PATTERNS``.
    messages : int
        Messages per job (>= 0), cycling through the pattern's pairs.
    compute : int
        Cycles between a process's consecutive messages (>= 0).
    shape : tuple of int, optional
        ``stencil``: the job's logical grid.
    root : int
        ``one-to-all``: the sending process.
    seed : int
        ``random-pairs``: the seed of the pairs.

    Examples
    --------
    >>> JobTraffic.parse("all-to-all:messages=20,compute=0")
    JobTraffic(pattern='all-to-all', messages=20, compute=0, shape=None, root=0, seed=0)
    """

    pattern: str = "all-to-all"
    messages: int = 20
    compute: int = 0
    shape: tuple[int, int] | None = None
    root: int = 0
    seed: int = 0

    def __post_init__(self) -> None:
        JOB_PATTERNS.get(self.pattern)  # unknown names list the known ones
        for name in ("messages", "compute", "root", "seed"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 0:
                raise InvalidArgument(name, v, "a non-negative integer")
        if self.shape is not None:
            shape = tuple(int(x) for x in self.shape)
            if len(shape) != 2 or min(shape) < 1:
                raise InvalidArgument("shape", self.shape, "two positive sides W x L")
            object.__setattr__(self, "shape", shape)

    @classmethod
    def parse(cls, spec: "str | JobTraffic") -> "JobTraffic":
        """``NAME[:messages=M,compute=C,shape=WxL,root=R,seed=S]``."""
        if isinstance(spec, JobTraffic):
            return spec
        parsed = _spec.parse(spec, argument="traffic")
        options = dict(parsed.options)
        shape = None
        if "shape" in options:
            text = options.pop("shape")
            try:
                w, h = (int(t) for t in text.lower().split("x"))
            except ValueError:
                raise InvalidArgument("shape", text, "WxL, e.g. 4x8") from None
            shape = (w, h)
        _, kwargs = _spec.bind(cls, _spec.Spec(parsed.name, parsed.args, options), kind="traffic", argument="traffic", fixed=("pattern", "shape"))
        return cls(pattern=parsed.name, shape=shape, **kwargs)

    def spec(self) -> str:
        parts = [f"messages={self.messages}", f"compute={self.compute}"]
        if self.shape:
            parts.append(f"shape={self.shape[0]}x{self.shape[1]}")
        if self.pattern == "one-to-all" and self.root:
            parts.append(f"root={self.root}")
        if self.pattern == "random-pairs" and self.seed:
            parts.append(f"seed={self.seed}")
        return f"{self.pattern}:" + ",".join(parts)


def process_pairs(n: int, traffic: JobTraffic) -> list[tuple[int, int]]:
    """The (source, destination) process pairs of ``traffic`` for a job of ``n`` processes, in order."""
    return [tuple(p) for p in _pair_array(n, traffic).tolist()]


def _pair_array(n: int, traffic: JobTraffic) -> np.ndarray:
    return JOB_PATTERNS.get(traffic.pattern)(n, traffic)


def job_messages(nodes: Sequence[int] | np.ndarray, traffic: JobTraffic, start: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(create, src node, dst node)`` of a job's messages, in message order."""
    arr = np.asarray(nodes, dtype=np.int64)
    pairs = _pair_array(int(arr.size), traffic)
    if not len(pairs) or traffic.messages == 0:
        e = np.zeros(0, np.int64)
        return e, e, e
    m = traffic.messages
    p = pairs[np.arange(m) % len(pairs)]
    # k-th message of a process: created k * compute after the start
    order = np.argsort(p[:, 0], kind="stable")
    rank = np.empty(m, np.int64)
    src_sorted = p[order, 0]
    first = np.searchsorted(src_sorted, src_sorted, side="left")
    rank[order] = np.arange(m) - first
    create = start + rank * traffic.compute
    return create, arr[p[:, 0]], arr[p[:, 1]]


@dataclass(frozen=True, slots=True)
class JobSpec:
    """A job for :func:`run_jobs`: id, start cycle, nodes (process order) and traffic."""

    job_id: int
    start: int
    nodes: tuple[int, ...]
    traffic: JobTraffic

    def __post_init__(self) -> None:
        object.__setattr__(self, "nodes", tuple(int(x) for x in self.nodes))
        object.__setattr__(self, "traffic", JobTraffic.parse(self.traffic))
        if isinstance(self.start, bool) or not isinstance(self.start, (int, np.integer)) or self.start < 0:
            raise InvalidArgument("start", self.start, "a cycle >= 0")
        if not self.nodes or len(set(self.nodes)) != len(self.nodes):
            raise InvalidArgument("nodes", self.nodes, "one or more distinct node ids")


@dataclass(frozen=True, slots=True)
class JobCommunication:
    """One job's communication on the network (cycles).

    ``end`` is the cycle its last message was ejected (``start`` if it sent
    none); ``comm_time = end - start``; ``latency_mean`` and
    ``blocking_mean`` are per message (blocking: header waiting at routers);
    ``alone`` and ``slowdown`` are filled by :func:`run_jobs` (communication
    time on an idle network and ``comm_time / alone``, 1 when both are 0).
    """

    job_id: int
    start: int
    end: int
    messages: int
    latency_mean: float
    blocking_mean: float
    hops_mean: float
    alone: int | None = None
    slowdown: float | None = None
    latencies: np.ndarray | None = field(default=None, repr=False, compare=False)

    @property
    def comm_time(self) -> int:
        return self.end - self.start

    def as_dict(self) -> dict:
        out = {k: getattr(self, k) for k in ("job_id", "start", "end", "messages", "latency_mean", "blocking_mean", "hops_mean", "alone", "slowdown")}
        out["comm_time"] = self.comm_time
        return out


class NetworkModel:
    """The network as a scheduling simulation sees it: jobs start, their messages flow, the model says when each is done.

    Parameters
    ----------
    topology : Topology or str
    config : NetworkConfig, optional
    on_complete : callable, optional
        Called with each :class:`JobCommunication` as the model reaches it.

    Notes
    -----
    Time is in network cycles.  See the module notes for the intended hook
    into :mod:`topoalloc.sched`.

    Examples
    --------
    >>> m = NetworkModel("mesh:4x4")
    >>> m.start_job(7, [0, 1, 4, 5], "all-to-all:messages=12", at=0)
    >>> [(c.job_id, c.comm_time) for c in m.next_completion(10**6)]
    [(7, 31)]
    """

    def __init__(self, topology: Topology | str, config: NetworkConfig | None = None, *, on_complete: Callable[[JobCommunication], None] | None = None):
        self.topology = parse_machine(topology)
        self.net = Network(self.topology, config)
        self.on_complete = on_complete
        self._jobs: dict[int, tuple[int, int, np.ndarray]] = {}  # engine job -> (job id, start, packet ids)
        self._by_id: dict[int, int] = {}
        self._instant: list[JobCommunication] = []  # jobs with nothing to send: done when they start

    @property
    def now(self) -> int:
        """The first cycle not yet simulated."""
        return self.net.now

    @property
    def running(self) -> list[int]:
        """Ids of jobs started and not yet reported complete."""
        return sorted(self._by_id)

    def start_job(self, job_id: int, nodes: Sequence[int] | np.ndarray, traffic: "JobTraffic | str", *, at: int | None = None) -> None:
        """Start a job's communication at cycle ``at`` (default :attr:`now`; not earlier)."""
        traffic = JobTraffic.parse(traffic)
        at = self.now if at is None else int(at)
        if at < self.now:
            raise InvalidArgument("at", at, f"a cycle >= now = {self.now}")
        if job_id in self._by_id:
            raise InvalidArgument("job_id", job_id, "a job not already running on the network")
        arr = np.asarray(nodes, dtype=np.int64)
        if arr.size == 0 or np.unique(arr).size != arr.size or arr.min() < 0 or arr.max() >= self.topology.n_nodes:
            raise InvalidArgument("nodes", arr.tolist(), f"distinct node ids in 0..{self.topology.n_nodes - 1}")
        create, src, dst = job_messages(arr, traffic, at)
        if create.size == 0:
            self._instant.append(JobCommunication(job_id, at, at, 0, float("nan"), float("nan"), float("nan"), latencies=np.zeros(0, np.int64)))
            return
        j, ids = self.net.add_job_packets(create, src, dst)
        self._jobs[j] = (job_id, at, ids)
        self._by_id[job_id] = j

    def _finish(self, j: int) -> JobCommunication:
        job_id, start, ids = self._jobs.pop(j)
        del self._by_id[job_id]
        r = self.net.results(ids)
        lat = r["latency"]
        return JobCommunication(
            job_id, start, int(r["t_done"].max()), int(ids.size),
            float(lat.mean()), float(r["blocking"].mean()), float(r["hops"].mean()), latencies=lat,
        )

    def _emit(self, done: list[JobCommunication]) -> list[JobCommunication]:
        if self.on_complete is not None:
            for c in done:
                self.on_complete(c)
        return done

    def next_completion(self, limit: int) -> list[JobCommunication]:
        """Advance to the first cycle before ``limit`` in which jobs finish and return them; else advance to ``limit`` and return ``[]``."""
        first = min((c.end for c in self._instant if c.end < limit), default=None)
        if first is not None:
            # network completions in cycles before `first` come first; then the jobs with nothing to send
            if self.now < first:
                self.net.run(first, stop_on_job=True)
                done = [self._finish(j) for j, _ in self.net.pop_completed()]
                if done:
                    return self._emit(done)
            out = [c for c in self._instant if c.end == first]
            self._instant = [c for c in self._instant if c.end != first]
            return self._emit(out)
        if limit <= self.now:
            return []
        self.net.run(limit, stop_on_job=True)
        return self._emit([self._finish(j) for j, _ in self.net.pop_completed()])

    def advance_to(self, cycle: int) -> list[JobCommunication]:
        """Advance to ``cycle``; every job finished before it, in order of completion."""
        out: list[JobCommunication] = []
        while True:
            done = self.next_completion(cycle)
            if not done:
                return out
            out.extend(done)

    def finish(self, *, limit: int | None = None) -> list[JobCommunication]:
        """Run until every started job is done (or ``limit``); the completions in order."""
        out: list[JobCommunication] = []
        step = 1 << 16
        while self._by_id or self._instant:
            if limit is not None and self.now >= limit:
                break
            target = self.now + step if limit is None else min(limit, self.now + step)
            out.extend(self.advance_to(target))
        return out


def run_jobs(topology: Topology | str, jobs: Sequence[JobSpec], config: NetworkConfig | None = None, *, alone: bool = True) -> list[JobCommunication]:
    """Run jobs with fixed start cycles and node sets together, and (``alone``) each by itself on an idle network.

    Returns one :class:`JobCommunication` per job, in the order given, with
    ``alone`` and ``slowdown`` (contention slowdown) filled when asked.

    Examples
    --------
    >>> a = JobSpec(1, 0, (0, 1, 2, 3), "all-to-all:messages=12")
    >>> b = JobSpec(2, 0, (4, 5, 6, 7), "all-to-all:messages=12")
    >>> [r.slowdown for r in run_jobs("mesh:8x1", [a, b])]  # disjoint routes: no contention
    [1.0, 1.0]
    """
    jobs = list(jobs)
    ids = [j.job_id for j in jobs]
    if len(set(ids)) != len(ids):
        raise InvalidArgument("jobs", ids, "distinct job ids")
    model = NetworkModel(topology, config)
    got: dict[int, JobCommunication] = {}
    for spec in (jobs[i] for i in sorted(range(len(jobs)), key=lambda i: (jobs[i].start, i))):
        for c in model.advance_to(spec.start):
            got[c.job_id] = c
        model.start_job(spec.job_id, spec.nodes, spec.traffic, at=spec.start)
    for c in model.finish():
        got[c.job_id] = c
    if len(got) != len(jobs):  # pragma: no cover - finish() runs until every job is done
        raise SimulationError(f"jobs never finished communicating: {sorted(set(ids) - set(got))}")
    out = []
    for spec in jobs:
        c = got[spec.job_id]
        if alone:
            solo = NetworkModel(topology, config)
            solo.start_job(spec.job_id, spec.nodes, spec.traffic, at=0)
            t = solo.finish()[0].comm_time
            slow = c.comm_time / t if t else 1.0
            c = JobCommunication(c.job_id, c.start, c.end, c.messages, c.latency_mean, c.blocking_mean, c.hops_mean, t, slow, c.latencies)
        out.append(c)
    return out
