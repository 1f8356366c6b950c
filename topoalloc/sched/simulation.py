"""The event-driven simulation: one clock, owned here.

Events are job arrivals (from the workload, in submit order) and job
completions (a heap keyed by end time and a sequence number, so ties are
broken the same way on every run).  At each distinct instant: first every
completion at that instant is processed (processors released), then every
arrival is enqueued (in trace order), then the scheduler runs once.
"""

from __future__ import annotations

import heapq
import math
from bisect import insort
from collections.abc import Callable

import numpy as np

from ..alloc.base import Allocator, Request
from ..errors import InvalidArgument, RequestNeverFits, SimulationError, WorkloadError
from ..workload.core import Workload
from .base import Scheduler, SchedulingContext
from .result import SimulationResult

__all__ = ["Simulation"]


class Simulation:
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
    ):
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
            try:
                self.allocator.check_request(self._make_request(i))
            except RequestNeverFits as exc:
                wider = int((w.size > self.allocator.n_nodes).sum())
                hint = f"; {wider} jobs are wider than the machine — drop them with drop-wider (--clean)" if wider else ""
                raise RequestNeverFits(f"{w.describe_job(i)}: {exc}{hint}") from None

    def _make_request(self, i: int) -> Request:
        w = self.workload
        shape = None if w.shape is None else tuple(int(s) for s in w.shape[i])
        return Request(int(w.size[i]), shape, int(w.job_id[i]))

    def run(self) -> SimulationResult:
        """Simulate to the end and return the result."""
        w = self.workload
        n = len(w)
        submit = w.submit.tolist()
        run = w.run.tolist()
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
        ctx = SchedulingContext(self.allocator, estimate=est, size=sizes, requests=request, record_reservations=self.record_reservations)
        qkey = sched.queue_key(submit, est, sizes)
        q = ctx.queue
        start = [math.nan] * n
        end = [math.nan] * n
        alloc_size = [0] * n
        nodes_of: list[np.ndarray | None] = [None] * n if self.record_allocations else []
        heap: list[tuple[float, int, int]] = []  # (end time, sequence, job) or (time, sequence, -1) for a wake-up
        pending_wakeups: set[float] = set()
        seq = 0
        i = 0
        done = 0
        inf = math.inf
        progress = self.progress
        tick = max(1, n // 200)
        next_tick = tick
        heappop, heappush = heapq.heappop, heapq.heappush
        finish, schedule = ctx.finish, sched.schedule
        allocation = ctx.allocation
        record = self.record_allocations
        model = self.runtime_model
        actual = run if model is None else list(run)
        while True:
            t_end = heap[0][0] if heap else inf
            t_arr = submit[i] if i < n else inf
            now = t_end if t_end <= t_arr else t_arr
            if now == inf:
                break
            ctx.now = now
            ctx.released = False
            while heap and heap[0][0] <= now:
                j = heappop(heap)[2]
                if j < 0:  # a wake-up the scheduler asked for
                    pending_wakeups.discard(now)
                    continue
                alloc = finish(j)
                if record:
                    nodes_of[j] = alloc.nodes
                done += 1
            arrived = []
            while i < n and submit[i] <= now:
                if qkey is None:
                    q.append(i)
                else:
                    insort(q, i, key=qkey)
                arrived.append(i)
                i += 1
            ctx.arrived = arrived
            started = ctx.started = []
            schedule(ctx)
            for j in started:
                start[j] = now
                e = end[j] = now + run[j]
                alloc_size[j] = allocation[j].size
                if model is not None:
                    e = end[j] = now + model(j, run[j], allocation[j])
                    actual[j] = e - now
                seq += 1
                heappush(heap, (e, seq, j))
            if ctx.wakeups:
                for t in sorted(set(ctx.wakeups)):
                    if t not in pending_wakeups:
                        pending_wakeups.add(t)
                        seq += 1
                        heappush(heap, (t, seq, -1))
                ctx.wakeups.clear()
            if progress is not None and done >= next_tick:
                progress(done, n)
                next_tick = done + tick
        if q:
            raise SimulationError(f"{len(q)} jobs never started (first: {w.describe_job(q[0])})")
        if progress is not None:
            progress(n, n)
        return SimulationResult(
            workload=w,
            estimate=self.estimates,
            start=np.array(start),
            end=np.array(end),
            allocated_size=np.array(alloc_size, dtype=np.int64),
            n_nodes=self.allocator.n_nodes,
            machine=self.allocator.topology.spec(),
            allocator=self.allocator.name,
            scheduler=f"{sched.name}" + (f":order={sched.order}" if sched.order != "fcfs" else ""),
            allocations=_csr(nodes_of) if self.record_allocations else None,
            reservations=ctx.reservations,
            actual_run=None if model is None else np.array(actual, dtype=np.float64),
        )


def _csr(nodes_of: list[np.ndarray | None]) -> tuple[np.ndarray, np.ndarray]:
    sizes = np.fromiter((0 if a is None else a.size for a in nodes_of), dtype=np.int64, count=len(nodes_of))
    offsets = np.zeros(len(nodes_of) + 1, dtype=np.int64)
    np.cumsum(sizes, out=offsets[1:])
    flat = np.concatenate([a for a in nodes_of if a is not None]).astype(np.int32) if offsets[-1] else np.zeros(0, np.int32)
    return flat, offsets
