"""EASY (aggressive) backfilling.

Lifka, "The ANL/IBM SP scheduling system", JSSPP 1995; Mu'alem & Feitelson,
IEEE TPDS 12(6), 2001.  The queue head is strictly first: heads start while
they fit.  A head that does not fit gets a reservation at its earliest
possible start (the *shadow time*), found by asking the allocator whether it
would fit once running jobs end, in order of expected end.  A later job may
start now only if that does not delay the reservation: it ends (by its
estimate) no later than the shadow time, or the allocator confirms the head
still fits at the shadow time with the job in place (on the flat machine:
the job fits in the "extra" nodes).

Conventions (pinned by the golden traces in ``tests/golden``):

* every running job expected to end at the shadow time counts as ended then;
* a job running past its estimate is expected to end at the next instant;
* ``now + estimate == shadow`` counts as ending by the shadow.
"""

from __future__ import annotations

import heapq
import math
from bisect import bisect_left, bisect_right
from collections.abc import Hashable, Iterable, Iterator, Sequence

import numpy as np

from ..alloc.base import Allocation, Allocator, Request
from ..alloc.probes import ReservationGuard
from ..errors import ConformanceError, InternalError, SimulationError
from ..registry import SCHEDULERS
from .base import _ALLOC, RunningJob, Scheduler, SchedulingContext

__all__ = ["EASY"]


class EASY(Scheduler):
    """EASY backfilling.

    Parameters
    ----------
    order : {"fcfs", "sjf", "lpt", "cplant"}
        Queue order; the head is the first job in it.
    incremental : bool
        When only arrivals happened since the last pass (no job ended), the
        head's reservation is unchanged and only the new jobs can backfill, so
        only they are examined.  Used for counting allocators in FCFS order,
        where it is exact; and, with a fit-key index, for allocators whose
        guard is :attr:`~topoalloc.alloc.probes.ReservationGuard.reusable`:
        the guard is kept, and the jobs refused after the last pass's last
        start are not asked again (see :meth:`_backfill_indexed`).  The
        differential tests compare both with full passes.

    Notes
    -----
    A pass starts queue heads while they fit, reserves the shadow time for
    the first that does not, then backfills by one of four named paths:

    :meth:`_backfill_arrivals`
        Counting allocators, FCFS order, nothing ended since the last pass:
        only the jobs that just arrived are candidates (the reservation and
        the extra nodes are unchanged).
    :meth:`_backfill_counting`
        Counting allocators (:class:`~topoalloc.alloc.probes.CountingProbes`):
        EASY's "extra nodes" arithmetic, no guard object.
    :meth:`_backfill_indexed`
        Allocators with fit keys, in any queue order the simulation keeps: the
        whole queue in order, but a key refused in the current state is
        skipped through a per-key index.
    :meth:`_backfill_guarded`
        Any allocator: the allocator's reservation guard judges each
        candidate; refusals are remembered per fit key while the state is
        unchanged.

    All four make the same decisions as the last one does for every
    candidate in queue order (the differential tests compare them).
    """

    name = "easy"

    def __init__(self, order: str = "fcfs", incremental: bool = True):
        super().__init__(order)
        self.incremental = incremental
        self.reset()

    def reset(self) -> None:
        self._index: _KeyIndex | None = None
        self._codes: list[int] | None = None  # per job: 2 × its fit-key id, -2 = no key, -1 = not computed
        self._code_ids: dict[Hashable, int] = {}
        self._head: int | None = None
        self._shadow = 0.0
        self._guard: ReservationGuard | None = None
        # the last indexed pass: the allocator's stamp after it, and (lo, hi): every queued job ranked
        # above lo and at most hi was refused in its final state by its guard (None: not known)
        self._stamp: tuple[int, int] | None = None
        self._settled: tuple[int, int] | None = None
        # counting allocators: the head's extra nodes (None until needed), from its base and the releases
        self._reserved = False
        self._extra: int | None = None
        self._extra_base = 0
        self._extra_releases: list[RunningJob] = []

    # ------------------------------------------------------------------ pass
    def schedule(self, ctx: SchedulingContext) -> None:
        if self._arrivals_only(ctx):
            ctx.record(ctx.queue[0], self._shadow)  # the head's reservation kept: the one a full pass would make again
            self._backfill_arrivals(ctx)
            return
        index = self._update_index(ctx)
        q = ctx.queue
        self._start_heads(ctx, index)
        keep = self._guard_kept(ctx, index)
        settled, self._settled = self._settled, None
        self._reserved = False
        if not keep:
            self._guard = None
        if not q:
            return
        head = q[0]
        size = ctx.size
        allocator = ctx.allocator
        # free only shrinks during a pass: jobs wider than it now cannot backfill
        room = ctx.waiting.count_at_most(allocator.max_request_now(), exclude=size[head])
        if not room and ctx.reservations is None:
            self._guard = None
            return  # nothing can backfill: the reservation is not needed now
        if keep:
            guard = self._guard
            assert guard is not None  # (kept: see _guard_kept)
            ctx.record(head, self._shadow)  # (unchanged: see ReservationGuard.reusable)
        else:
            k = self._reserve(ctx, head)
            if allocator.counting:
                self._extra_base = allocator.free_count - size[head]
                self._extra_releases = ctx.running[:k]
                self._extra = None
                self._reserved = True
                if room:
                    self._backfill_counting(ctx, q[1:])
                return
            guard = self._guard = allocator.reservation_guard(ctx.request(head), _Allocations(ctx.running[:k]))
        if room and index is not None:
            self._settled = self._backfill_indexed(ctx, index, head, guard, settled if keep else None)
        elif room:
            self._backfill_guarded(ctx, guard, q[1:], room)
        self._stamp = allocator.state_stamp

    def _guard_kept(self, ctx: SchedulingContext, index: "_KeyIndex | None") -> bool:
        """Whether this pass keeps the last pass's reservation and guard: the queue in arrival order
        (:meth:`_in_arrival_order`) with the key index, a guard that allows it
        (:attr:`ReservationGuard.reusable`), the same head, no job ended and nothing granted or
        released since that pass, and its shadow time not reached."""
        g = self._guard
        q = ctx.queue
        return (
            self.incremental
            and self._in_arrival_order(ctx)
            and index is not None
            and g is not None
            and g.reusable
            and not ctx.released
            and bool(q)
            and q[0] == self._head
            and ctx.now < self._shadow
            and ctx.allocator.state_stamp == self._stamp
        )

    def _arrivals_only(self, ctx: SchedulingContext) -> bool:
        """Whether this pass may look at the new arrivals only (see :meth:`_backfill_arrivals`; the queue
        in arrival order, :meth:`_in_arrival_order`)."""
        q = ctx.queue
        return (
            self.incremental
            and self._in_arrival_order(ctx)
            and self._reserved
            and not ctx.released
            and bool(q)
            and ctx.now < self._shadow
            and q[0] == self._head
            and ctx.allocator.counting
        )

    def _in_arrival_order(self, ctx: SchedulingContext) -> bool:
        """Whether the queue is in arrival order, so that every arrival queues behind every queued job (what the
        kept guard's jump and the arrivals-only pass assume): FCFS, and no queue key of the scheduler's own (a
        subclass may keep the name and sort otherwise)."""
        return self.order == "fcfs" and ctx.queue_key is None

    def _update_index(self, ctx: SchedulingContext) -> "_KeyIndex | None":
        """The per-key queue index (built on the first pass that may use it), with this instant's arrivals added."""
        index = self._index
        if index is None and self._index_ok(ctx):
            index = self._index = _KeyIndex(ctx, len(ctx.size))
        if index is not None:
            for j in ctx.arrived:
                index.add(j)
        return index

    def _start_heads(self, ctx: SchedulingContext, index: "_KeyIndex | None") -> None:
        """Start queue heads, strictly in order, while they fit."""
        q = ctx.queue
        n = 0
        while n < len(q) and ctx.try_start(q[n]):
            if index is not None:
                index.remove(q[n])
            n += 1
        if n:
            del q[:n]

    def _reserve(self, ctx: SchedulingContext, head: int) -> int:
        """Reserve the head's shadow time; return how many running jobs end by then."""
        res = ctx.reservation(head)
        if res is None:  # cannot happen for a request that fits the empty machine
            raise SimulationError(f"queue head (job position {head}) cannot fit even after every running job ends")
        shadow, k = res
        ctx.record(head, shadow)
        self._head, self._shadow = head, shadow
        return k

    def _index_ok(self, ctx: SchedulingContext) -> bool:
        """The per-key queue index serves allocators that declare interchangeable requests
        (:meth:`Allocator.fit_key`), in FCFS order (queue order = arrival order) or in the order
        of the context's queue key (the simulation's; a hand-made context without one is walked
        plainly)."""
        a = ctx.allocator
        return (
            (self.order == "fcfs" or ctx.queue_key is not None)
            and not a.counting
            and type(a).fit_key is not Allocator.fit_key
            and len(ctx.queue) == len(ctx.arrived)
        )

    # -------------------------------------------------------------- backfill
    def _backfill_arrivals(self, ctx: SchedulingContext) -> None:
        """Counting allocators, FCFS order, no job ended since the last pass: only new arrivals can backfill.

        The head, its shadow time and the extra nodes are those of the last
        pass, and every older queued job was refused then in a state with at
        least as many free processors, so it would be refused again.
        """
        self._backfill_counting(ctx, ctx.arrived)

    def _extra_nodes(self) -> int:
        """Processors free at the shadow time beyond the head's need (computed on first use)."""
        if self._extra is None:
            self._extra = self._extra_base + sum(e.allocation.size for e in self._extra_releases)
        return self._extra

    def _backfill_counting(self, ctx: SchedulingContext, candidates: Iterable[int]) -> None:
        """Counting allocators: a candidate starts if it fits now and ends by the shadow time or fits the extra nodes."""
        allocator = ctx.allocator
        free = allocator.free_count
        if not free:
            return
        size = ctx.size
        est = ctx.estimate
        latest_end = latest_end_by(self._shadow, ctx.now)  # a job ends by the shadow iff its estimate <= this
        extra = self._extra
        started = []
        for j in candidates:
            s = size[j]
            if s > free:
                continue
            if est[j] > latest_end:
                if extra is None:
                    extra = self._extra_nodes()
                if s > extra:
                    continue
                alloc = allocator.allocate(ctx.request(j))
                if alloc is None:
                    raise _broken_counting(allocator, s)
                extra -= alloc.size
            else:
                alloc = allocator.allocate(ctx.request(j))
                if alloc is None:
                    raise _broken_counting(allocator, s)
            ctx.start_with(j, alloc)
            started.append(j)
            free = allocator.free_count
            if not free:
                break
        self._extra = extra
        self._remove_started(ctx, started)

    def _backfill_indexed(
        self, ctx: SchedulingContext, index: "_KeyIndex", head: int, guard: ReservationGuard, settled: tuple[int, int] | None = None
    ) -> tuple[int, int]:
        """:meth:`_backfill_guarded` over the whole queue, visiting only jobs whose kind is not refused.

        The same decisions in the same order as the plain scan (the tests compare
        them): the queue is walked in order, but a key refused in the current
        state is skipped by looking up, per key, the next queued job that could
        still be asked (any, only those ending by the shadow time, or only those
        ending after it).  The keys' next jobs sit in a heap by queue rank.
        After a start only the keys whose next job depends on refusals of the
        old state are looked up again: a key whose next job was found asking
        for any job keeps it, and a key that is too wide, or has no job left
        at all, stays so (free processors only shrink during a pass).  A
        guard's refusal is remembered only while the refused job's
        allocate-and-release left :meth:`Allocator.trial_state` unchanged;
        when a later refused job's pair changes it (the free list may merge
        a cube with another mate than its split's), the guard's earlier
        refusals are forgotten and their keys looked up again from there,
        keeping the refusals the plain scan keeps too (``may_admit``, no
        allocation).

        ``settled`` = (lo, hi), with a kept guard (:meth:`_guard_kept`): the
        jobs ranked above lo and at most hi were refused in this very state
        by this guard (:attr:`ReservationGuard.reusable`), so until a job
        starts the walk jumps from lo to hi.  Returns the same pair for the
        next pass: the rank of the last job started (else the head's), and
        the last rank queued.
        """
        allocator = ctx.allocator
        latest_end = latest_end_by(self._shadow, ctx.now)
        est = ctx.estimate
        size = ctx.size
        free = allocator.max_request_now()
        index.threshold = latest_end
        nxt = index.next_after
        classes = index.classes
        # per key (absent: 0): 0 ask any; 1 only jobs ending by the shadow; 2 only the others; 3 none (both refused)
        mode: dict[int, int] = {}
        # per key, the part of its mode the plain scan remembers too (refused by may_admit, or no allocation):
        # a guard's refusal is remembered only while allocating and releasing changed nothing, and once a
        # refused job's allocate-and-release does change the state, it is forgotten (the plain scan asks again)
        hard: dict[int, int] = {}
        # key -> index of its next job to ask (keys whose first job is too wide now never are: as mode 4 below)
        start = index.rank[head]
        if settled is not None and settled[0] <= start:  # nothing to ask before the jump: start after it
            start, settled = max(start, settled[1]), None
        cur = index.firsts_after(start, size, free)
        heap = [(classes[c].ranks[i], c) for c, i in cur.items()]
        heapq.heapify(heap)
        stale: list[int] = []  # keys dropped for a refusal that a start may lift
        started = []
        last = index.rank[head]
        while heap:
            r, c = heap[0]
            if settled is not None and r > settled[0]:
                # nothing started yet: the jobs ranked up to hi are refused (see above); each key's
                # next job after hi, by its mode (the refusals of this pass hold: the state is the same)
                hi = settled[1]
                settled = None
                if r <= hi:
                    for c2 in list(cur):
                        i2 = nxt(classes[c2], hi, mode.get(c2, 0))
                        if i2 >= 0:
                            cur[c2] = i2
                        else:
                            del cur[c2]
                            if mode.get(c2, 0):
                                stale.append(c2)
                    heap = [(classes[c2].ranks[i2], c2) for c2, i2 in cur.items()]
                    heapq.heapify(heap)
                    continue
            cl = classes[c]
            i = cur[c]
            j = cl.jobs[i]
            ends_by = est[j] <= latest_end
            alloc: Allocation | None = None
            refuse = 1 if not ends_by else 2  # the code refused if j is: mode 1 asks only jobs ending by the shadow
            firm = True  # a refusal the plain scan remembers
            changed = False  # a refused job's allocate-and-release changed the state
            if size[j] > free:
                refuse = 3  # too wide now: so is every job of this key
            else:
                req = ctx.request(j)
                if guard.may_admit(req, ends_by):
                    before = allocator.trial_state()
                    alloc = allocator.allocate(req)
                    if alloc is not None and not guard.admit(alloc, ends_by):
                        allocator.release(alloc)
                        alloc = None
                        firm = False
                        # the state may differ in detail (no new refusal), unless the allocator shows it is
                        # the same (Allocator.trial_state): then the refusal stands for this key and kind
                        if before is None or allocator.trial_state() != before:
                            refuse = 0
                            changed = before is not None
            if alloc is not None:
                ctx.start_with(j, alloc)
                started.append(j)
                index.remove(j)
                last = r
                settled = None  # the state changed: every later job is asked
                free = allocator.max_request_now()
                if not free:
                    break
                # the state changed: refusals are forgotten; keys asking for any job keep their next one
                heapq.heappop(heap)
                if not mode.get(c, 0):
                    stale.append(c)  # (a key with a mode is looked up again below)
                for c2, m2 in mode.items():
                    if m2 and m2 != 4 and c2 in cur:
                        stale.append(c2)
                mode.clear()
                hard.clear()
                for c2 in stale:
                    i2 = nxt(classes[c2], r, 0)
                    if i2 >= 0:
                        cur[c2] = i2
                    else:
                        cur.pop(c2, None)
                stale.clear()
                heap = [(classes[c2].ranks[i2], c2) for c2, i2 in cur.items()]
                heapq.heapify(heap)
                continue
            if changed:
                # the guard's refusals were made in the state before: each key holding one asks again from
                # here, as the plain scan does, with only its firm refusals (those stand: see above)
                soft = [c2 for c2, m2 in mode.items() if m2 != 4 and m2 != hard.get(c2, 0)]
                for c2 in soft:
                    m2 = mode[c2] = hard.get(c2, 0)
                    i2 = nxt(classes[c2], r, m2)
                    if i2 >= 0:
                        cur[c2] = i2
                    else:
                        cur.pop(c2, None)
                        if m2:
                            stale.append(c2)
                if soft:
                    heap = [(classes[c2].ranks[i2], c2) for c2, i2 in cur.items()]
                    heapq.heapify(heap)
                    if c not in cur or cur[c] != i:
                        continue  # (this job's key was looked up again: past this job)
            # refused: mode 1 = the jobs ending after the shadow are refused, ask only those ending by it
            m = mode.get(c, 0)
            if refuse == 3:
                m = 4  # too wide: for the rest of the pass
            elif refuse:
                m = refuse if m in (0, refuse) else 3
                if firm:
                    h = hard.get(c, 0)
                    hard[c] = refuse if h in (0, refuse) else 3
            mode[c] = m
            if m >= 3:
                heapq.heappop(heap)
                del cur[c]
                if m == 3:
                    stale.append(c)
                continue
            i2 = nxt(cl, r, m)
            if i2 >= 0:
                cur[c] = i2
                heapq.heapreplace(heap, (cl.ranks[i2], c))
            else:
                heapq.heappop(heap)
                del cur[c]
                if m:
                    stale.append(c)
        self._remove_started(ctx, started, index.rank)
        return last, index.last_rank

    def _backfill_guarded(self, ctx: SchedulingContext, guard: ReservationGuard, candidates: Iterable[int], room: int) -> None:
        """Start every candidate (in order) that fits now and that the reservation guard admits.

        ``room`` is how many candidates are no wider than the free processors
        at the start: once that many have been seen, the rest are too wide
        and the scan stops.  Requests the allocator calls interchangeable
        (``fit_key``) get the same answers while the state is unchanged, so a
        refusal is remembered until a job starts; a job's key and whether it
        ends by the shadow make one int code (cached per job).
        """
        allocator = ctx.allocator
        free = limit = allocator.max_request_now()
        size = ctx.size
        est = ctx.estimate
        latest_end = latest_end_by(self._shadow, ctx.now)
        codes = self._codes
        if codes is None or len(codes) != len(size):
            codes = self._codes = [-1] * len(size)
            self._code_ids = {}
        refused: set[int] = set()
        started = []
        for j in candidates:
            if not room:
                break
            s = size[j]
            if s > limit:
                continue
            room -= 1
            if s > free:  # necessary for every allocator
                continue
            ends_by = est[j] <= latest_end
            code = codes[j]
            if code == -1:
                code = codes[j] = self._code(allocator, ctx.request(j))
            if code >= 0:
                if ends_by:
                    code += 1
                if code in refused:
                    continue
            req = ctx.request(j)
            if not guard.may_admit(req, ends_by):
                if code >= 0:
                    refused.add(code)
                continue
            alloc = allocator.allocate(req)
            if alloc is None:
                if code >= 0:
                    refused.add(code)
                continue
            if not guard.admit(alloc, ends_by):
                # allocate + release may leave the state different in detail: forget nothing new
                allocator.release(alloc)
                continue
            ctx.start_with(j, alloc)
            started.append(j)
            refused.clear()
            free = allocator.max_request_now()
            if not free:
                break
        self._remove_started(ctx, started)

    @staticmethod
    def _remove_started(ctx: SchedulingContext, started: list[int], rank: list[int] | None = None) -> None:
        """Take the started jobs out of the queue (``rank``: the key index's ranks, which order
        the queue, so each job is found by bisection rather than by comparing it with those before it)."""
        if started:
            q = ctx.queue
            if rank is None:
                for j in started:
                    q.remove(j)
                return
            key = rank.__getitem__
            for j in started:
                i = bisect_left(q, rank[j], key=key)
                if i == len(q) or q[i] != j:  # pragma: no cover - the index's ranks follow the queue
                    raise InternalError(f"job position {j} is not where the EASY key index ranks it in the queue")
                del q[i]

    def _code(self, allocator: Allocator, request: Request) -> int:
        key = allocator.fit_key(request)
        if key is None:
            return -2
        ids = self._code_ids
        return 2 * ids.setdefault(key, len(ids))


def latest_end_by(shadow: float, now: float) -> float:
    """The largest estimate ``e`` with ``now + e <= shadow``: a job started now ends by the shadow time iff
    its estimate is at most this.

    Every expected end is the float sum ``start + estimate`` (the running jobs', the shadow time's), so
    "ends by the shadow time" means that sum, not ``estimate <= shadow - now``: the difference can be one
    unit in the last place off either way at large times (1e9 + 0.3 + 1.8 == 1e9 + 5.1, but
    1.8 > (1e9 + 5.1) - (1e9 + 0.3)).  Float addition is monotone, so the estimates that end by the shadow
    time are those up to one largest value: the difference when it is that value, else found by bisection
    between two values a few units either side.  With whole-second times the answer is below the next whole
    second, so whole-second estimates are decided as by the difference.  The compiled kernel computes the
    same (``latest_end_by`` in ``_ckernel.c``).

    >>> now, shadow = 1e9 + 0.3, 1e9 + 0.3 + 1.8
    >>> shadow - now < 1.8 <= latest_end_by(shadow, now)
    True
    >>> e = latest_end_by(50.0, 20.0)  # 30 and the 30.000000000000004 that rounds to 50 too
    >>> 30.0 < e < 31.0 and 20.0 + e == 50.0
    True
    """
    e = shadow - now
    if not math.isfinite(e) or now + e <= shadow < now + math.nextafter(e, math.inf):
        return e
    u = 2 * math.ulp(max(abs(shadow), abs(now)))
    lo, hi = e - u, e + u  # now + lo <= shadow < now + hi: the difference and each sum round by at most half a unit
    while now + lo > shadow:  # (never, by that bound: kept so that a wrong bound costs time, not a wrong answer)
        lo -= u
    while now + hi <= shadow:
        hi += u
    while True:
        mid = lo + (hi - lo) / 2
        if not lo < mid < hi:
            return lo
        if now + mid <= shadow:
            lo = mid
        else:
            hi = mid


def _broken_counting(allocator: Allocator, size: int) -> ConformanceError:
    return ConformanceError("counting", f"{allocator.name} declares counting but refused {size} processors with {allocator.free_count} free")


class _KeyClass:
    """The queued jobs of one fit key, in queue order (removed ones stay, marked dead).

    ``ranks`` and ``alive`` are Python lists (bisection and ``list.index`` find a
    key's next live job at C speed); ``est`` is a numpy array for the scans by
    estimate, with NaN for dead jobs (no comparison holds for them).  ``lo`` is
    the index of the first live job (``n`` if none): removals only move it
    forward and an insertion before it moves it onto the new job, so finding a
    key's first queued job costs no search.
    """

    __slots__ = ("jobs", "ranks", "est", "alive", "n", "alive_count", "lo")

    def __init__(self) -> None:
        self.jobs: list[int] = []
        self.ranks: list[int] = []
        self.est = np.zeros(16)
        self.alive: list[bool] = []
        self.n = 0
        self.alive_count = 0
        self.lo = 0

    def insert(self, job: int, rank: int, est: float) -> None:
        """Add a queued job at its rank's place (at the end in arrival order; within the list where the
        queue is ordered otherwise, after the dead jobs ranked before it)."""
        n = self.n
        if n == len(self.est):
            self.est = np.concatenate([self.est, np.zeros(n)])
        ranks = self.ranks
        if not n or ranks[-1] < rank:
            self.jobs.append(job)
            ranks.append(rank)
            self.alive.append(True)
            self.est[n] = est
        else:
            i = bisect_left(ranks, rank)
            self.jobs.insert(i, job)
            ranks.insert(i, rank)
            self.alive.insert(i, True)
            self.est[i + 1 : n + 1] = self.est[i:n]
            self.est[i] = est
            if i < self.lo:
                self.lo = i
        self.n = n + 1
        self.alive_count += 1


class _KeyIndex:
    """Queued jobs grouped by the allocator's fit key, for EASY.

    Within a pass, refusals are remembered per (key, ends by the shadow or
    not) until a job starts; this index finds, for each key, the next queued
    job that may still be asked, with numpy scans over that key's jobs
    instead of a Python walk over the whole queue.

    Ranks order the queue.  In arrival order a job's rank is its arrival
    count; in a keyed order (``ctx.queue_key``: SJF, LPT, Cplant) it is the
    job's place among all the run's jobs by that key, fixed once, so a job
    arriving later can rank before jobs already queued (its key's list then
    takes it in the middle).
    """

    def __init__(self, ctx: SchedulingContext, n_jobs: int):
        self._ctx = ctx
        self.classes: list[_KeyClass] = []
        self._ids: dict = {}
        #: the keys with queued jobs (a set in insertion order; keys whose jobs all left are dropped
        #: until one comes again, so a pass's first lookup does not visit every key ever seen)
        self.live: dict[int, None] = {}
        key = ctx.queue_key
        self._keyed = key is not None
        self.rank = [0] * n_jobs
        if key is not None:
            for r, j in enumerate(sorted(range(n_jobs), key=key), 1):
                self.rank[j] = r
        self._where: list[int | None] = [None] * n_jobs  # the class of each queued job
        self._next_rank = 0
        self.threshold = 0.0

    @property
    def last_rank(self) -> int:
        """The greatest rank of a job added (ranks grow with queue position)."""
        return self._next_rank

    def add(self, job: int) -> None:
        ctx = self._ctx
        key = ctx.allocator.fit_key(ctx.request(job))
        if key is None:
            key = ("job", job)  # no key: a class of its own
        c = self._ids.get(key)
        if c is None:
            c = self._ids[key] = len(self.classes)
            self.classes.append(_KeyClass())
        if self._keyed:
            r = self.rank[job]
            if r > self._next_rank:
                self._next_rank = r
        else:
            r = self._next_rank = self._next_rank + 1
            self.rank[job] = r
        cl = self.classes[c]
        if not cl.alive_count:
            self.live[c] = None
        cl.insert(job, r, ctx.estimate[job])
        self._where[job] = c

    def remove(self, job: int) -> None:
        c = self._where[job]
        if c is None:
            raise InternalError(f"job position {job} is not in the EASY key index")
        cl = self.classes[c]
        i = bisect_left(cl.ranks, self.rank[job], cl.lo, cl.n)
        if i == cl.n or cl.jobs[i] != job:  # pragma: no cover - a queued job is where its rank puts it
            raise InternalError(f"job position {job} is not where the EASY key index ranks it")
        cl.alive[i] = False
        cl.est[i] = np.nan
        cl.alive_count -= 1
        if not cl.alive_count:  # reclaim: nothing alive, start afresh
            del self.live[c]
            cl.jobs.clear()
            cl.ranks.clear()
            cl.alive.clear()
            cl.n = cl.lo = 0
        elif i == cl.lo:
            cl.lo = cl.alive.index(True, i + 1)  # a live job follows: alive_count > 0
        self._where[job] = None

    def firsts_after(self, rank: int, size: Sequence[int] | None = None, limit: int = 0) -> dict[int, int]:
        """For every key with queued jobs after ``rank``: the index of the first (with ``size``:
        only keys whose first such job is at most ``limit`` wide)."""
        out = {}
        ranks = self.rank
        classes = self.classes
        for c in self.live:  # (keys with live jobs; the order does not matter: the walk orders keys by rank)
            cl = classes[c]
            i = cl.lo
            if ranks[cl.jobs[i]] <= rank:  # (the first live job is at or before rank: look further)
                i = self.next_after(cl, rank, 0)
            if i >= 0 and (size is None or size[cl.jobs[i]] <= limit):
                out[c] = i
        return out

    def next_after(self, cl: _KeyClass, rank: int, mode: int) -> int:
        """Index in ``cl`` of the first live job with rank > ``rank`` that mode admits, or -1."""
        n = cl.n
        lo = bisect_right(cl.ranks, rank, cl.lo, n)  # (the jobs before lo are dead)
        if lo >= n:
            return -1
        if mode == 0:
            try:
                return cl.alive.index(True, lo, n)
            except ValueError:
                return -1
        if mode == 1:
            m = cl.est[lo:n] <= self.threshold  # (dead jobs have est = NaN: neither test holds)
        else:
            m = cl.est[lo:n] > self.threshold
        k = int(m.argmax())
        return lo + k if m[k] else -1


class _Allocations:
    """The allocations of a slice of running entries, produced on demand."""

    __slots__ = ("_entries",)

    def __init__(self, entries: list[RunningJob]):
        self._entries = entries

    def __iter__(self) -> Iterator[Allocation]:
        return map(_ALLOC, self._entries)

    def __len__(self) -> int:
        return len(self._entries)


@SCHEDULERS.register("easy")
def _make_easy(order: str = "fcfs", incremental: bool = True) -> EASY:
    """EASY (aggressive) backfilling: one reservation, for the queue head."""
    return EASY(order=order, incremental=incremental)
