"""Future plans for conservative backfilling: which reservations are feasible.

Two implementations answer the same questions:

* :class:`CountingProfile` — a step function of free processors over time,
  exact for counting allocators (the flat machine);
* :class:`ReplayPlan` — the general answer for any allocator: replay, on a
  snapshot of the allocator, the expected releases of running jobs and the
  allocations and releases of every reservation, in time order; a plan is
  feasible iff every reserved allocation succeeds.  A job's earliest start
  walks once through the events before it and replays the rest only at the
  candidate times where the job fits then.

The differential tests run conservative backfilling on the flat machine
with both and require identical schedules.
"""

from __future__ import annotations

import math
from bisect import bisect_left
from collections.abc import Callable

from ..alloc.base import Allocation, Allocator, Request
from ..errors import SimulationError

__all__ = ["CountingProfile", "ReplayPlan", "ZERO_LENGTH"]

#: A reservation holds its processors for at least this long, so a job whose
#: estimate is 0 still needs free processors at its start instant.
ZERO_LENGTH = 1e-6


#: Within this time of 0 (2**32 s, 136 years) ``t + ZERO_LENGTH`` is at least two float steps past ``t``.
_FINE = 2.0**32


def _span(dur: float) -> float:
    return dur if dur > 0 else ZERO_LENGTH


def _end(t: float, span: float) -> float:
    """Where a window of ``span`` from ``t`` ends: ``t + span``, and never closer than two float steps past ``t``.

    A time's float step grows with the time, and beyond ``2**32`` s from 0 (or for spans under
    :data:`ZERO_LENGTH`) ``t + span`` can round to ``t`` itself: a reservation would then hold
    nothing, and the schedule would depend on where the trace's clock starts.  Two steps keep
    the window past the next instant (``math.nextafter(now)``, where a job past its estimate is
    expected to end), as ``t + ZERO_LENGTH`` is everywhere within ``2**32`` s of 0; so a schedule
    does not change when every time is shifted by a constant.  The compiled kernel's ``end_at`` is
    the same function.
    """
    end = t + span
    if abs(t) < _FINE and span >= ZERO_LENGTH:
        return end
    floor = math.nextafter(math.nextafter(t, math.inf), math.inf)
    return end if end > floor else floor


def _event_key(event: tuple) -> tuple:
    """A replay event's sort key (its allocation, when it has one, never takes part)."""
    return event[:4]


class CountingProfile:
    """Free processors over time: ``free[i]`` holds on ``[times[i], times[i+1])``.

    Parameters
    ----------
    now : float
    free_now : int
        Processors free at ``now``.
    releases : iterable of (time, size)
        Running jobs' expected ends (all > now).
    reservations : iterable of (job, start, duration, size), optional
        Reservations to place at once (as :meth:`add` would, one by one).

    Notes
    -----
    Python lists: the queries scan a few breakpoints and stop, which beats
    vectorised numpy for the short profiles a scheduling pass sees.  A
    profile built with ``reservations`` is made in one sweep over their
    sorted start and end points instead of one insertion each.  Breakpoints
    are never merged: a time where a reservation once started or ended stays
    a candidate start for the rest of the pass (the semantics the schedules
    are pinned to).
    """

    def __init__(self, now: float, free_now: int, releases: list[tuple[float, int]], reservations: list[tuple[int, float, float, int]] | None = None):
        delta: dict[float, int] = {}
        for t, s in releases:
            delta[t] = delta.get(t, 0) + s
        res: dict[int, tuple[float, float, int, float]] = {}
        for job, t, dur, size in reservations or ():
            span = _span(dur)
            end = _end(t, span)
            res[job] = (t, end, size, span)
            delta[t] = delta.get(t, 0) - size
            delta[end] = delta.get(end, 0) + size
        start = delta.pop(now, 0)
        times = [now]
        free = [free_now + start]
        value = free[0]
        for t in sorted(delta):
            value += delta[t]
            times.append(t)
            free.append(value)
        self.times = times
        self.free = free
        self._res = res

    def _split(self, t: float) -> int:
        times = self.times
        i = bisect_left(times, t)
        if i < len(times) and times[i] == t:
            return i
        times.insert(i, t)
        self.free.insert(i, self.free[i - 1])
        return i

    def _change(self, t: float, end: float, delta: int) -> None:
        i = self._split(t)
        j = self._split(end)
        free = self.free
        free[i:j] = [x + delta for x in free[i:j]]

    def add(self, job: int, t: float, size: int, dur: float) -> None:
        span = _span(dur)
        end = _end(t, span)
        self._res[job] = (t, end, size, span)
        self._change(t, end, -size)

    def remove(self, job: int) -> None:
        t, end, size, _ = self._res.pop(job)
        self._change(t, end, size)

    def feasible(self) -> bool:
        return min(self.free) >= 0

    def moves_earlier(self, job: int) -> bool:
        """Whether ``job``, taken out of the plan, would find a start before its reservation.

        The same scan as :meth:`earliest`, but with the job's own processors
        counted free inside its reservation instead of taking it out and
        putting it back: a job that stays (most of them) costs no update.
        """
        # the job's own duration, not end0 - t0: the difference of two floats can exceed it by a rounding step,
        # and a window that long reaches a breakpoint the duration itself stops short of (as `earliest` sees it)
        t0, end0, size, span = self._res[job]
        times, free = self.times, self.free
        i = 0
        n = bisect_left(times, t0)  # candidate starts before the reservation
        m = len(times)
        while i < n:
            if free[i] < size:
                i += 1
                continue
            end = _end(times[i], span)
            j = i + 1
            while j < m and times[j] < end:
                if free[j] + (size if t0 <= times[j] < end0 else 0) < size:
                    break
                j += 1
            else:
                return True
            i = j + 1
        return False

    def earliest(self, job: int, size: int, dur: float, not_after: float | None = None) -> float:
        """Earliest start >= now at which ``size`` processors are free for ``dur``.

        ``not_after`` (a reservation being compressed) needs no special care here:
        free processors are monotone, so the old time is always still feasible."""
        times, free = self.times, self.free
        n = len(times)
        span = _span(dur)
        i = 0
        while i < n:
            if free[i] < size:
                i += 1
                continue
            end = _end(times[i], span)
            j = i + 1
            while j < n and times[j] < end:
                if free[j] < size:
                    break
                j += 1
            else:
                return times[i]
            i = j + 1
        raise SimulationError(f"job position {job} (size {size}) never fits the profile")


class ReplayPlan:
    """The general plan: feasibility by replaying allocations on an allocator snapshot."""

    def __init__(
        self,
        now: float,
        allocator: Allocator,
        releases: list[tuple[float, Allocation]],
        request: Callable[[int], Request],
        priority: Callable[[int], int],
    ):
        self.now = now
        self.allocator = allocator
        self.releases = sorted(releases, key=lambda r: (r[0], r[1].serial))
        self.request = request
        self.priority = priority
        self._res: dict[int, tuple[float, float]] = {}

    def add(self, job: int, t: float, size: int, dur: float) -> None:
        self._res[job] = (t, _end(t, _span(dur)))

    def remove(self, job: int) -> None:
        del self._res[job]

    def _events(self) -> list[tuple]:
        """The plan's events in the order the replay applies them: ``(time, kind, order, job, allocation)``,
        kind 0 = a release (before kind 1 = an allocation at the same time); each key is distinct."""
        events: list[tuple] = [(t, 0, a.serial, 0, a) for t, a in self.releases]
        for job, (t, end) in self._res.items():
            events.append((t, 1, self.priority(job), job, None))
            events.append((end, 0, -1, job, None))
        events.sort(key=_event_key)
        return events

    def _apply(self, scratch: Allocator, granted: dict[int, Allocation], event: tuple) -> bool:
        """Apply one event to ``scratch``; False if a reservation's allocation fails."""
        _, kind, _, job, alloc = event
        if kind == 0:
            if alloc is not None:
                scratch.release(alloc)
            elif job in granted:
                scratch.release(granted.pop(job))
            return True
        got = scratch.allocate(self.request(job))
        if got is None:
            return False
        granted[job] = got
        return True

    def feasible(self) -> bool:
        scratch = self.allocator.snapshot()
        granted: dict[int, Allocation] = {}
        return all(self._apply(scratch, granted, ev) for ev in self._events())

    def _times(self, not_after: float | None) -> list[float]:
        times = {self.now}
        times.update(t for t, _ in self.releases)
        for t, end in self._res.values():
            times.add(t)
            times.add(end)
        if not_after is not None:
            times = {x for x in times if x <= not_after}
            times.add(not_after)
        return sorted(x for x in times if x >= self.now)

    def earliest(self, job: int, size: int, dur: float, not_after: float | None = None) -> float:
        """Earliest start >= now at which the plan with ``job`` added stays feasible.

        Candidate times are now, the expected releases and the other
        reservations' starts and ends.  ``not_after`` is the job's current
        reservation when it is being compressed: it is a candidate too (the
        plan with the job there is the feasible plan we started from), and no
        later time is tried.  This matters for allocators whose success is not
        monotone in what is free (e.g. subtorus allocators, where taking a job
        out of the plan can change where later ones land and make the rest
        infeasible): the job then keeps its reservation.

        The answer is that of replaying the whole plan with the job added at
        each candidate time in turn (:meth:`earliest_by_full_replay`, the
        reference the tests compare with), found with less work: the events
        before the job's allocation at ``t`` do not depend on ``t``, so one
        snapshot walks through them once, in time order; at each ``t`` the job
        must fit that snapshot's state (``can_allocate``, no copy), and only
        then does a copy replay the rest of the plan with the job in it.  At
        ``not_after`` nothing is replayed: the plan with the job there is the
        one every earlier answer kept feasible (the full replay finds it so).
        """
        req = self.request(job)
        prio = self.priority(job)
        base = self._events()
        span = _span(dur)
        scratch = self.allocator.snapshot()
        granted: dict[int, Allocation] = {}
        i = 0
        for t in self._times(not_after):
            if t == not_after:
                return t  # the job back where it was: the plan this pass has kept feasible (see above)
            key = (t, 1, prio, job)
            while i < len(base) and _event_key(base[i]) < key:
                if not self._apply(scratch, granted, base[i]):
                    i = -1  # the plan fails before the job's turn at t: so it does at every later t
                    break
                i += 1
            if i < 0:
                break
            if not scratch.can_allocate(req):
                continue
            trial = scratch.snapshot()
            tg = dict(granted)
            got = trial.allocate(req)
            if got is None:  # pragma: no cover - can_allocate is exact (the conformance suite checks it)
                continue
            tg[job] = got
            end = (_end(t, span), 0, -1, job, None)
            end_key = _event_key(end)
            ok = True
            pending = True
            for ev in base[i:]:
                if pending and end_key < _event_key(ev):
                    self._apply(trial, tg, end)
                    pending = False
                if not self._apply(trial, tg, ev):
                    ok = False
                    break
            if ok:
                return t
        raise SimulationError(f"job position {job} (size {size}) never fits the plan")

    def earliest_by_full_replay(self, job: int, size: int, dur: float, not_after: float | None = None) -> float:
        """:meth:`earliest` by the definition: the whole plan replayed with the job at each candidate time."""
        for t in self._times(not_after):
            self.add(job, t, size, dur)
            ok = self.feasible()
            self.remove(job)
            if ok:
                return t
        raise SimulationError(f"job position {job} (size {size}) never fits the plan")
