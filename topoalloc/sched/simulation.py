"""The event-driven simulation: one clock, owned here.

Events are job arrivals (from the workload, in submit order) and job
completions (a heap keyed by end time and a sequence number, so ties are
broken the same way on every run).  At each distinct instant: first every
completion at that instant is processed (processors released), then every
arrival is enqueued (in trace order), then the scheduler runs once.
"""

from __future__ import annotations

import gc
import heapq
import math
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import numpy as np

from ..alloc.base import Allocation, Allocator, Request
from ..errors import InvalidArgument, RequestNeverFits, SimulationError, WorkloadError
from ..workload.core import Workload
from .base import Scheduler, SchedulingContext
from .result import SimulationResult

if TYPE_CHECKING:
    from ..metrics.locality import LocalityStream
    from ..network.coupling import CommunicatingJobs

__all__ = ["Simulation", "ENGINES"]

#: Values of ``Simulation(engine=...)``: see :class:`Simulation`.
ENGINES = ("auto", "python", "compiled")

#: the cyclic garbage collector's thresholds while a simulation runs on the general engine (see spaced_collections)
GC_THRESHOLDS = (50_000, 20, 100)
_gc_lock = threading.Lock()
_gc_runs = 0  # simulations running now (in any thread)
_gc_saved: tuple[int, int, int] | None = None


@contextmanager
def spaced_collections() -> Iterator[None]:
    """The cyclic garbage collector runs less often inside: its thresholds are raised to at least
    :data:`GC_THRESHOLDS` while any simulation runs, and put back when the last one ends.

    The general engine's plans and memos keep many long-lived containers (states as tuples of frozensets, the
    memos of placements and releases), which CPython's default thresholds (700, 10, 10) make the collector walk
    again and again: on SDSC-SP2's first 1,200 jobs with the AFL under conservative backfilling, the collector took
    about a tenth of the run's time.  Collections still happen (every 50,000 new objects rather than 700), so
    garbage that only the collector frees stays bounded; results do not depend on when it runs."""
    global _gc_runs, _gc_saved
    with _gc_lock:
        if _gc_runs == 0:
            _gc_saved = gc.get_threshold()
            gc.set_threshold(*(max(a, b) for a, b in zip(_gc_saved, GC_THRESHOLDS)))
        _gc_runs += 1
    try:
        yield
    finally:
        with _gc_lock:
            _gc_runs -= 1
            if _gc_runs == 0 and _gc_saved is not None:
                gc.set_threshold(*_gc_saved)
                _gc_saved = None


class Simulation:
    # per-run state, made by _setup
    _n: int
    _submit: list[float]
    _run: list[float]
    _size: list[int]
    _ctx: SchedulingContext
    _qkey: Callable[[int], tuple[Any, ...]] | None
    _start: list[float]
    _end: list[float]
    _alloc_size: list[int]
    _grants: "GrantRecords"
    _heap: list[tuple[float, int, int]]
    _pending_wakeups: set[float]
    _seq: int
    _next: int
    _done: int
    _tick: int
    _next_tick: int
    _actual: list[float]

    """Run ``workload`` through ``scheduler`` on ``allocator``.

    Parameters
    ----------
    workload : Workload
        Every job must have a size >= 1 and a run time >= 0 (clean the
        workload first; nothing is dropped here).
    allocator : Allocator
        Fresh (no allocation held).
    scheduler : Scheduler
    estimates : array of float
        The scheduler's estimate of each job's run time (see
        :func:`topoalloc.workload.transform.estimates`).
    record_reservations : bool
        Keep every reservation the scheduler makes (for tests and analysis).
    progress : callable(done_jobs, total_jobs), optional
        Called now and then while the simulation runs.
    engine : {"auto", "python", "compiled"}
        ``"auto"`` runs the compiled kernel when it applies (a counting
        allocator, the buddy or Gray code allocator under every built-in
        scheduler, the free list and the AFL as ``layout_of`` says;
        a built-in scheduler; nothing fed back from the nodes: see
        :func:`topoalloc.sched.fastpath.why_not`) and the general engine
        otherwise; ``"python"`` always runs the general engine (the
        reference); ``"compiled"`` requires the kernel and raises if it
        does not apply.  Results are the same either way.
    """

    def __init__(
        self,
        workload: Workload,
        allocator: Allocator,
        scheduler: Scheduler,
        estimates: np.ndarray,
        *,
        record_reservations: bool = False,
        record_allocations: bool = True,
        progress: Callable[[int, int], None] | None = None,
        runtime_model: Callable | None = None,
        network: "CommunicatingJobs | None" = None,
        locality: "LocalityStream | None" = None,
        engine: str = "auto",
    ):
        if engine not in ENGINES:
            raise InvalidArgument("engine", engine, f"one of {', '.join(ENGINES)}")
        if allocator.allocations:
            raise InvalidArgument("allocator", allocator, "a fresh allocator holding no allocation")
        n = len(workload)
        est = np.asarray(estimates, dtype=np.float64)
        if est.shape != (n,):
            raise InvalidArgument("estimates", f"array of shape {est.shape}", f"{n} estimates")
        self.workload = workload
        self.allocator = allocator
        self.scheduler = scheduler
        self.estimates = est
        self.record_reservations = record_reservations
        self.record_allocations = record_allocations
        self.progress = progress
        self.runtime_model = runtime_model  # (job, run, allocation) -> run time on that allocation
        self.network = network  # jobs that communicate: service time from the network (see topoalloc.network.coupling)
        self.locality = locality  # locality metrics of jobs as they finish (streamed: memory bounded by a batch)
        self.engine = engine
        if network is not None and runtime_model is not None:
            raise InvalidArgument("runtime_model", runtime_model, "no run-time model when jobs communicate on a network (the network sets service times)")
        if network is not None and network.topology != allocator.topology:
            raise InvalidArgument("network", network.topology.spec(), f"a network of the allocator's machine {allocator.topology.spec()}")
        self._validate()

    def _validate(self) -> None:
        w = self.workload
        bad = np.flatnonzero(w.size <= 0)
        if bad.size:
            raise WorkloadError(
                f"{w.describe_job(bad[0])} has no size (requested and allocated processors missing); "
                f"{bad.size} such jobs — drop them with the drop-no-size filter (--clean)"
            )
        bad = np.flatnonzero(~(w.run >= 0))
        if bad.size:
            raise WorkloadError(
                f"{w.describe_job(bad[0])} has run time {w.run[bad[0]]:g}; {bad.size} jobs have a missing or "
                f"negative run time — drop them with the drop-nonpositive-runtime filter (--clean)"
            )
        bad = np.flatnonzero(~np.isfinite(w.submit))
        if bad.size:
            raise WorkloadError(f"{w.describe_job(bad[0])} has submit time {w.submit[bad[0]]}")
        bad = np.flatnonzero(~(self.estimates >= 0))
        if bad.size:
            raise WorkloadError(f"{w.describe_job(bad[0])} has estimate {self.estimates[bad[0]]}")
        # every distinct request must fit the empty machine
        keys = w.size if w.shape is None else np.column_stack([w.size, w.shape])
        _, first = np.unique(keys, axis=0, return_index=True) if keys.ndim == 2 else np.unique(keys, return_index=True)
        wider = 0
        for i in sorted(first.tolist()):
            req = self._make_request(i)
            try:
                self.allocator.check_request(Request(req.size, req.shape, None))  # (the message names the job once, below)
            except RequestNeverFits as exc:
                wider = int((w.size > self.allocator.n_nodes).sum())
                are, them = ("s are", "them") if wider != 1 else (" is", "it")
                hint = f"; {wider} job{are} wider than the machine — drop {them} with drop-wider (--clean)" if wider else ""
                raise RequestNeverFits(f"{w.describe_job(i)}: {exc}{hint}") from None

    def _make_request(self, i: int) -> Request:
        w = self.workload
        shape = None if w.shape is None else tuple(int(s) for s in w.shape[i])
        return Request(int(w.size[i]), shape, int(w.job_id[i]))

    def run(self) -> SimulationResult:
        """Simulate to the end and return the result.

        The clock jumps from instant to instant (the next completion,
        wake-up or arrival).  At each instant, in this order:
        :meth:`_complete` (every job ending then releases its processors),
        :meth:`_arrive` (every job submitted by then joins the queue, in trace
        order), :meth:`_pass` (the scheduler runs once and the jobs it started
        are timed) and :meth:`_schedule_wakeups` (instants the scheduler asked
        to be woken at).  With a network, jobs that finish communicating
        before the next of those instants end first (:meth:`_network_ends`).

        With ``engine="auto"`` or ``"compiled"`` the compiled kernel runs the
        same steps instead when it applies (:mod:`topoalloc.sched.fastpath`).

        Raises
        ------
        InvalidArgument
            ``engine="compiled"`` for a run the kernel cannot do (saying why).
        SimulationError
            Jobs that never started.
        """
        why = None
        if self.engine != "python":
            from . import fastpath

            why = fastpath.why_not(self)
            if why is None:
                return fastpath.run(self)
            if self.engine == "compiled":
                raise InvalidArgument("engine", "compiled", f"a run the compiled kernel can do: {why}")
        with spaced_collections():
            result = self._run_general()
        if self.engine == "auto":
            result.engine_note = f"the compiled kernel does not take it ({why})"
        return result

    def _run_general(self) -> SimulationResult:
        """:meth:`run` on the general engine."""
        self._setup()
        ctx = self._ctx
        submit = self._submit
        heap = self._heap
        n = self._n
        inf = math.inf
        complete, arrive, run_pass, wake = self._complete, self._arrive, self._pass, self._schedule_wakeups
        progress = self.progress
        network = self.network
        while True:
            t_end = heap[0][0] if heap else inf
            i = self._next
            t_arr = submit[i] if i < n else inf
            now = t_end if t_end <= t_arr else t_arr
            ended: list[int] | None = None
            if network is not None and network.active:
                got = network.poll(now)
                if got is not None:  # jobs finish communicating by the next event
                    ended = got[1]
                    if got[0] < now:  # strictly before it: an instant of their own
                        now = got[0]
                        ctx.now = now
                        ctx.released = False
                        self._network_ends(now, ended)
                        ctx.arrived = []
                        run_pass(now)
                        if ctx.wakeups:
                            wake()
                        continue
            if now == inf:
                if network is not None and network.active:
                    continue  # only communication is left: keep simulating the network
                break
            ctx.now = now
            ctx.released = False
            if ended is not None:  # at the same instant as the next event: completions first, together
                self._network_ends(now, ended)
            if t_end <= now:
                complete(now)
            ctx.arrived = arrive(now) if t_arr <= now else []
            run_pass(now)
            if ctx.wakeups:
                wake()
            if progress is not None and self._done >= self._next_tick:
                progress(self._done, n)
                self._next_tick = self._done + self._tick
        return self._result()

    # ------------------------------------------------------------- the steps
    def _setup(self) -> None:
        """Per-run state: the context the scheduler sees, the event heap and the per-job outputs."""
        w = self.workload
        n = self._n = len(w)
        self._submit = w.submit.tolist()
        self._run = w.run.tolist()
        est = self.estimates.tolist()
        requests: list[Request | None] = [None] * n
        sizes = w.size.tolist()
        ids = w.job_id.tolist()
        shapes = None if w.shape is None else [tuple(s) for s in w.shape.tolist()]

        def request(j: int) -> Request:
            r = requests[j]
            if r is None:  # sizes and shapes were validated in bulk by _validate
                r = requests[j] = Request._trusted(sizes[j], None if shapes is None else shapes[j], ids[j])
            return r

        sched = self.scheduler
        sched.reset()
        self._qkey = sched.queue_key(self._submit, est, sizes)
        self._ctx = SchedulingContext(self.allocator, estimate=est, size=sizes, requests=request, record_reservations=self.record_reservations, queue_key=self._qkey)
        self._start = [math.nan] * n
        self._end = [math.nan] * n
        self._alloc_size = [0] * n
        self._grants = GrantRecords(n, self.record_allocations, self.locality)
        #: (time, sequence, job) for a completion, (time, sequence, -1) for a wake-up
        self._heap: list[tuple[float, int, int]] = []
        self._pending_wakeups: set[float] = set()
        self._seq = 0
        self._next = 0  # the next job to arrive
        self._done = 0
        self._tick = max(1, n // 200)
        self._next_tick = self._tick
        self._actual = self._run if self.runtime_model is None and self.network is None else list(self._run)
        self._size = sizes

    def _complete(self, now: float) -> None:
        """Release the processors of every job that ends at ``now`` (and drop wake-ups due now)."""
        heap = self._heap
        finish = self._ctx.finish
        ended = self._grants.ended
        heappop = heapq.heappop
        while heap and heap[0][0] <= now:
            j = heappop(heap)[2]
            if j < 0:  # a wake-up the scheduler asked for
                self._pending_wakeups.discard(now)
                continue
            ended(j, finish(j), self._actual[j])
            self._done += 1

    def _network_ends(self, now: float, jobs: list[int]) -> None:
        """Jobs whose last message was delivered by ``now``: they end now (``service=communication``),
        or start their computation, ending a run time later (``service=add``)."""
        network = self.network
        if network is None:
            return
        for j in jobs:
            if network.service == "add":
                e = self._end[j] = now + self._run[j]
                self._seq += 1
                heapq.heappush(self._heap, (e, self._seq, j))
            else:
                self._end[j] = now
                self._actual[j] = now - self._start[j]
                self._grants.ended(j, self._ctx.finish(j), self._actual[j])
                self._done += 1
                continue
            self._actual[j] = self._end[j] - self._start[j]

    def _arrive(self, now: float) -> list[int]:
        """Enqueue every job submitted by ``now``, in trace order; return them."""
        submit = self._submit
        n = self._n
        i = self._next
        enqueue, qkey = self._ctx.enqueue, self._qkey
        arrived = []
        while i < n and submit[i] <= now:
            enqueue(i, qkey)
            arrived.append(i)
            i += 1
        self._next = i
        return arrived

    def _pass(self, now: float) -> None:
        """Run the scheduler once and time the jobs it started (their completions join the heap)."""
        ctx = self._ctx
        started = ctx.started = []
        self.scheduler.schedule(ctx)
        if not started:
            return
        allocation = ctx.allocation
        run, start, end, alloc_size = self._run, self._start, self._end, self._alloc_size
        model = self.runtime_model
        heap = self._heap
        seq = self._seq
        network = self.network
        started_with = self._grants.started
        for j in started:
            start[j] = now
            started_with(j, allocation[j])
            if network is not None:
                alloc = allocation[j]
                alloc_size[j] = alloc.size
                network.start(j, self.allocator.process_order(alloc)[: self._size[j]], now)
                continue  # it ends when its messages are delivered (_network_ends)
            if model is None:
                e = end[j] = now + run[j]
            else:
                e = end[j] = now + model(j, run[j], allocation[j])
                self._actual[j] = e - now
            alloc_size[j] = allocation[j].size
            seq += 1
            heapq.heappush(heap, (e, seq, j))
        self._seq = seq

    def _schedule_wakeups(self) -> None:
        """Put the wake-ups the scheduler asked for on the heap (once per instant)."""
        ctx = self._ctx
        for t in sorted(set(ctx.wakeups)):
            if t not in self._pending_wakeups:
                self._pending_wakeups.add(t)
                self._seq += 1
                heapq.heappush(self._heap, (t, self._seq, -1))
        ctx.wakeups.clear()

    def _result(self) -> SimulationResult:
        """Check every job ran and package the outputs."""
        w = self.workload
        q = self._ctx.queue
        if q:
            raise SimulationError(f"{len(q)} jobs never started (first: {w.describe_job(q[0])})")
        if self.progress is not None:
            self.progress(self._n, self._n)
        sched = self.scheduler
        return SimulationResult(
            workload=w,
            estimate=self.estimates,
            start=np.array(self._start),
            end=np.array(self._end),
            allocated_size=np.array(self._alloc_size, dtype=np.int64),
            topology=self.allocator.topology,
            allocator=self.allocator.describe(),
            scheduler=sched.describe(),
            reservations=self._ctx.reservations,
            reservation_changes=sched.reservation_changes,
            actual_run=None if self.runtime_model is None and self.network is None else np.array(self._actual, dtype=np.float64),
            network=None if self.network is None else self._network_result(),
            **self._grants.fields(),
        )

    def _network_result(self) -> dict[str, Any]:
        """Per-job communication arrays and the run's network aggregates."""
        network = self.network
        if network is None:
            return {}
        per_job = network.per_job(self._n)
        return {"per_job": per_job, "summary": network.summary(per_job), "spec": {
            "network": network.config.spec(), "traffic": network.traffic.spec(),
            "cycle": network.cycle, "service": network.service}}


class GrantRecords:
    """What a run keeps from its grants, job by job — the same for the general engine and for the compiled
    kernel's replay of its starts and ends (:mod:`.fastpath`).

    At a job's start: the allocator's block count (``Allocation.info["blocks"]``) and its slice network's
    mean hops (``info["slice_hops"]``); at its end: its nodes (if recorded) and its locality metrics (if
    streamed).  :meth:`fields` gives the :class:`SimulationResult` fields they fill.
    """

    __slots__ = ("nodes_of", "locality", "blocks", "slice_hops", "n")

    def __init__(self, n: int, record_allocations: bool, locality: "LocalityStream | None"):
        self.n = n
        self.nodes_of: list[np.ndarray | None] | None = [None] * n if record_allocations else None
        self.locality = locality
        self.blocks = [-1] * n  # -1: the grant recorded no blocks
        self.slice_hops: list[float] | None = None  # NaN: the grant recorded no slice network

    def started(self, j: int, alloc: Allocation) -> None:
        info = alloc.info
        b = info.get("blocks")
        if b is not None:
            self.blocks[j] = len(b)
        h = info.get("slice_hops")
        if h is not None:
            if self.slice_hops is None:
                self.slice_hops = [math.nan] * self.n
            self.slice_hops[j] = h

    def ended(self, j: int, alloc: Allocation, run: float) -> None:
        if self.nodes_of is not None:
            self.nodes_of[j] = alloc.nodes
        if self.locality is not None:
            self.locality.add(alloc.nodes, run)

    def fields(self) -> dict[str, Any]:
        return {
            "allocations": None if self.nodes_of is None else _csr(self.nodes_of),
            "locality": None if self.locality is None else self.locality.summary(),
            "blocks": np.array(self.blocks, dtype=np.int64) if max(self.blocks, default=-1) >= 0 else None,
            "slice_hops": None if self.slice_hops is None else np.array(self.slice_hops, dtype=np.float64),
        }


def _csr(nodes_of: list[np.ndarray | None]) -> tuple[np.ndarray, np.ndarray]:
    sizes = np.fromiter((0 if a is None else a.size for a in nodes_of), dtype=np.int64, count=len(nodes_of))
    offsets = np.zeros(len(nodes_of) + 1, dtype=np.int64)
    np.cumsum(sizes, out=offsets[1:])
    flat = np.concatenate([a for a in nodes_of if a is not None]).astype(np.int32) if offsets[-1] else np.zeros(0, np.int32)
    return flat, offsets
