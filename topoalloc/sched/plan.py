"""Future plans for conservative backfilling: which reservations are feasible.

Three implementations answer the same questions:

* :class:`CountingProfile` — a step function of free processors over time,
  exact for counting allocators (the flat machine);
* :class:`ReplayPlan` — the general answer for any allocator: replay, on a
  snapshot of the allocator, the expected releases of running jobs and the
  allocations and releases of every reservation, in time order; a plan is
  feasible iff every reserved allocation succeeds.  A job's earliest start
  walks once through the events before it and replays the rest only at the
  candidate times where the job fits then;
* :class:`StatePlan` — ReplayPlan's answers for allocators whose choices are
  a pure function of a hashable state (:class:`StateModel`), replayed on those
  states with the plan's replay kept between questions: :class:`FreeSetPlan`
  on the free bit sets of the 2-D mesh allocators that search for submeshes
  (and the 2-D Buddy), and the EP and NEP subtorus allocators on immutable
  partition forests.  An allocator chooses its plan
  (:meth:`~topoalloc.alloc.base.Allocator.future_plan`).

The differential tests run conservative backfilling on the flat machine
with the first two and require identical schedules; the conformance suite
runs every allocator with its own plan and with ReplayPlan, and a unit test
compares every answer StatePlan gives in a run with ReplayPlan's.
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Hashable
from typing import Any, Protocol

from ..alloc.base import Allocation, Allocator, Memo, Request
from ..errors import SimulationError
from .base import SortedCounts

try:  # the compiled search (an optional extension: without a C compiler the Python search runs, same answers)
    import topoalloc.sched._cplan as _cplan
except ImportError:  # pragma: no cover - built without a C compiler
    _cplan = None

#: StatePlan searches for starts with the compiled extension when it is built and this is true (tests turn it off
#: to compare the Python search, the reference, with the compiled one)
USE_COMPILED = True


def compiled_search() -> bool:
    """Whether :class:`StatePlan` searches for starts with the compiled extension (built, and not turned off)."""
    return USE_COMPILED and _cplan is not None

__all__ = ["CountingProfile", "ReplayPlan", "StateModel", "StatePlan", "FreeSetPlan", "ZERO_LENGTH", "placement_memo"]

#: A reservation holds its processors for at least this long, so a job whose
#: estimate is 0 still needs free processors at its start instant.
ZERO_LENGTH = 1e-6


#: A placement memo kept for an allocator's plans (:func:`placement_memo`) is started again once its entries'
#: states would take about this many bytes.
PLACEMENT_MEMO_BYTES = 1 << 26


def placement_memo(owner: Any, state_bytes: int, attr: str = "_placement_memo") -> Memo:
    """The memo of placements ``(state, frame) -> (token, next state) or None`` that ``owner`` (an
    allocator) keeps for every plan it makes, not for one: a :class:`StateModel`'s placement is a pure
    function of the state and the frame, so an answer stays true from one scheduling pass to the next,
    where most of the plan's states come back (a job's reservations move, the running jobs stay).

    Bounded: once it holds more entries than :data:`PLACEMENT_MEMO_BYTES` allows at ``state_bytes`` a
    state (each entry holds two states), it is started again, empty.  A clone of the allocator shares
    it, which is sound for the same reason (a :class:`~topoalloc.alloc.base.Memo`: deep copies share it too).
    ``attr``: the owner's attribute that holds it (a model may keep another pure function's answers alike, such
    as its releases)."""
    memo = getattr(owner, attr, None)
    if memo is None or len(memo) > max(1024, PLACEMENT_MEMO_BYTES // (2 * max(64, state_bytes))):
        memo = Memo()
        setattr(owner, attr, memo)
    return memo


#: A plan keeps each job's frame and cells for the plans after it (:class:`StatePlan`) for at most this many jobs.
JOB_FACTS = 1 << 17


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
        if compiled_search():  # (the same scan in C)
            return _cplan.moves_earlier(times, free, t0, end0, size, span)
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
        t = self.first_fit(size, _span(dur))
        if t == math.inf:
            raise SimulationError(f"job position {job} (size {size}) never fits the profile")
        return t

    def first_fit(self, size: int, span: float) -> float:
        """The first breakpoint from which ``size`` processors stay free for ``span``; ``inf`` if none."""
        times, free = self.times, self.free
        n = len(times)
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
        return math.inf


class _CountedWindow:
    """Where a plan's counted free processors (a :class:`CountingProfile`) first hold ``size`` of them for ``span``,
    from starts asked in increasing order: :meth:`StatePlan._first`'s check before a trial.

    A trial places every reservation, so wherever the job would hold its processors the counts must hold them
    beside what the plan holds, or some allocation of the trial fails.  With the job's own reservation
    ``[t0, end0)`` in the plan, its processors are counted free inside it, as
    :meth:`CountingProfile.moves_earlier` counts them.  The scan is :meth:`CountingProfile.first_fit`'s (a short
    segment rules out every start whose window meets it); the segments last found to hold are kept, so that a
    run of questions reads each segment about once."""

    __slots__ = ("times", "free", "size", "span", "t0", "end0", "i", "good_lo", "good_hi")

    def __init__(self, times: list[float], free: list[int], size: int, span: float, t0: float, end0: float):
        self.times = times  # (a CountingProfile's breakpoints and free processors)
        self.free = free
        self.size = size
        self.span = span
        self.t0, self.end0 = t0, end0  # (inf, inf: no reservation of its own)
        self.i = 0  # the segment of the last answer
        self.good_lo = self.good_hi = 0  # segments good_lo .. good_hi-1 hold the job

    def next_fit(self, t: float) -> float:
        """The first start from ``t`` on (``t`` itself, then the profile's breakpoints) from which the counts hold
        the job for its span; ``inf`` if none.  ``t`` is never before the last question's."""
        times, free, size, span = self.times, self.free, self.size, self.span
        t0, end0 = self.t0, self.end0
        n = len(times)
        i = bisect_left(times, t, self.i)
        if i == n or times[i] != t:
            i -= 1  # (t inside segment i: never for the plan's candidates, every one of which is a breakpoint)
        if i < 0:
            i = 0  # (before the first breakpoint, now: never asked)
        start = t
        while i < n:
            if self.good_lo <= i < self.good_hi:
                j = self.good_hi  # (segments before it hold the job)
            else:
                v = free[i]
                if v < size and (v < 0 or not t0 <= times[i] < end0):  # (inside its own reservation: v + size)
                    i += 1
                    start = times[i] if i < n else math.inf
                    continue
                j = i + 1
            stop = _end(start, span)
            while j < n and times[j] < stop:
                v = free[j]
                if v < size and (v < 0 or not t0 <= times[j] < end0):
                    break
                j += 1
            else:
                self.i, self.good_lo, self.good_hi = i, i, j
                return start
            # segment j is short: every window from start to times[j] meets it
            self.good_lo, self.good_hi = i, j
            i = j + 1
            start = times[i] if i < n else math.inf
        self.i = n
        return math.inf


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


class StateModel(Protocol):
    """What :class:`StatePlan` needs of an allocator whose choices are a pure function of a hashable state.

    ``state`` is the state now; ``place(state, request)`` gives ``(token, next state)`` for what
    :meth:`~topoalloc.alloc.base.Allocator.allocate` would grant with that state (``token`` names it,
    comparable with ``==``), or None if it would refuse; ``release(state, token)`` gives the state
    after that grant is released; ``token_of(allocation)`` names a grant the allocator holds.  Both
    functions must be pure: the plan remembers their answers (a model may offer ``memo``, a dict the
    placements are remembered in beyond one plan: :func:`placement_memo`; and ``release_memo``, a dict
    ``{(state, token): next state}`` that its ``release`` fills, which the compiled loops read before they call
    ``release``).  ``frame(request)`` is a key that decides
    the placement (requests with equal frames are placed alike); ``free_count``, ``cells(request)`` and
    ``cells_of(allocation)`` count processors for the plan's counting pre-check.  ``allocator`` is the
    allocator modelled.
    """

    @property
    def allocator(self) -> Allocator: ...

    @property
    def state(self) -> Hashable: ...

    @property
    def free_count(self) -> int: ...

    def place(self, state: Any, request: Request) -> tuple[Any, Any] | None:
        ...

    def release(self, state: Any, token: Any) -> Any:
        ...

    def token_of(self, allocation: Allocation) -> Any:
        ...

    def frame(self, request: Request) -> Hashable:
        ...

    def cells(self, request: Request) -> int:
        ...

    def cells_of(self, allocation: Allocation) -> int:
        ...


class _BitsModel:
    """A free bit set as a :class:`StateModel` (the 2-D allocators' cells, the slice allocator's units): a grant's
    token is its bits, and a release gives back exactly the bits taken (``release`` is ``int.__or__`` itself).
    ``cells`` counts the bits a request takes (one per node unless given)."""

    def __init__(self, allocator: Any, cells: Callable[[Request], int] | None = None):
        self.allocator = allocator
        self.state = allocator._free
        self.free_count = allocator._free.bit_count()
        self._placement_on = allocator._placement_on
        self._mask_of = allocator._mask_of
        #: placements remembered from plan to plan (a state has at most a bit per node)
        self.memo = placement_memo(allocator, allocator.n_nodes // 8 + 32)
        #: bits a request takes (default: the allocator's granted size, one bit per node)
        self._cells = allocator.granted_size if cells is None else cells

    def place(self, state: int, request: Request) -> tuple[int, int] | None:
        got = self._placement_on(state, request)
        return None if got is None else (got, state & ~got)

    #: a release gives back exactly the bits taken (a C function: the plan calls it at every release)
    release = staticmethod(int.__or__)

    def token_of(self, allocation: Allocation) -> int:
        return self._mask_of(allocation)

    def frame(self, request: Request) -> Hashable:
        return self.allocator.frame_for(request)

    def cells(self, request: Request) -> int:
        return self._cells(request)

    def cells_of(self, allocation: Allocation) -> int:
        return self._mask_of(allocation).bit_count()


#: ``rel_kind`` of a model with a memo of releases: ``rel`` is the pair ``(memo, release)``; the compiled loops read
#: the memo before they call ``release``, the Python ones call ``release`` (which reads the same memo)
REL_MEMO = 3


def _release_function(rel: Any, rel_kind: int) -> Callable[[Any, Any], Any]:
    """The function that gives a token back, for the loops' ``rel`` and ``rel_kind``."""
    return rel[1] if rel_kind == REL_MEMO else rel


def _trial(events: list[tuple], states: list[Any], bits: dict[int, Any], memo: dict, frames: dict[int, Hashable],
           rel: Callable[[Any, Any], Any], rel_kind: int, place: Callable[[Any, int], Any], i: int, n: int,
           iend: int, old_end: int, fail: int, own: int, mine: Any, free: Any) -> bool:
    """:meth:`StatePlan._first`'s trial: the kept replay's events ``i`` .. ``n-1`` replayed with a job placed at its
    turn (event ``i``, its token ``mine``, the state after it ``free``) and released before event ``iend``; the
    reservation of job ``own`` (-1: none) left out.  True iff every allocation still succeeds.

    It stops early once the job has ended, the state is the kept replay's before the same event (``k`` past
    ``old_end``, the left-out reservation's end, and not past ``fail``), and every reservation the trial placed and
    still holds holds what it holds in the kept replay: the rest is then the kept replay's, feasible iff that is.
    The reference for the compiled trial (in ``_cplan.first``: the same loop on the same objects; ``rel_kind`` lets
    it call int's own operator where ``rel`` is ``int.__or__`` or ``int.__add__``)."""
    live = True
    moved: dict[int, Any] = {}  # reservations placed in the trial: their tokens
    displaced = 0  # of those, holding other processors than in the kept replay
    for k in range(i, n):
        if live and k >= iend:
            free = rel(free, mine)
            live = False
        if not live and displaced == 0 and k > old_end and k <= fail and free == states[k]:
            return fail == n  # from here on the kept replay's own events and states
        _, kind, _, who, m = events[k]
        if who == own and m is None:
            continue  # its own reservation: taken out
        if kind == 0:
            if m is None:
                if who in moved:
                    m = moved.pop(who)
                    displaced -= m != bits.get(who)
                else:
                    m = bits[who]
            free = rel(free, m)
        else:
            placed = memo.get((free, frames[who]), -1)
            if placed == -1:
                placed = place(free, who)
            if placed is None:
                return False
            got, free = placed
            moved[who] = got
            displaced += got != bits.get(who)
    return True


def _replay_from(events: list[tuple], states: list[Any], bits: dict[int, Any], new_bits: dict[int, Any], new_states: list[Any],
                 memo: dict, frames: dict[int, Hashable], rel: Callable[[Any, Any], Any], rel_kind: int,
                 place: Callable[[Any, int], Any], free: Any, i0: int, khi: int, shift: int, fail: int) -> tuple[int, int]:
    """:meth:`StatePlan._update`'s replay (and :meth:`StatePlan._full_replay`'s): events ``i0`` on from state ``free``,
    each state after an event appended to ``new_states``, each reservation's token put in ``new_bits`` (a release
    of one not placed here gives back its token there).  ``(0, k)``: stopped before event ``k`` (from ``khi`` on,
    past every changed event), where the state is the old replay's before its event ``k - shift`` (``states``; not
    past ``fail``, its first failure) and every reservation placed here and still held holds what it holds in the old
    replay (``bits``): the rest is the old replay's.  ``(1, n)``: every event replayed.  ``(2, k)``: the allocation
    of event ``k`` fails.  The reference for the compiled replay (``_cplan.replay``: the same loop on the same
    objects)."""
    rel = _release_function(rel, rel_kind)
    held: dict[int, Any] = {}  # reservations placed here and not yet released: their tokens
    displaced = 0  # of those, holding other processors than in the old replay
    n = len(events)
    for k in range(i0, n):
        if displaced == 0 and k >= khi:
            j = k - shift
            if j <= fail and free == states[j]:
                return 0, k
        _, kind, _, who, m = events[k]
        if kind == 0:
            if m is None:
                if who in held:
                    m = held.pop(who)
                    displaced -= m != bits.get(who)
                else:
                    m = new_bits[who]  # placed before the replay started
            free = rel(free, m)
        else:
            got = memo.get((free, frames[who]), -1)
            if got == -1:
                got = place(free, who)
            if got is None:
                return 2, k
            tok, free = got
            new_bits[who] = held[who] = tok
            displaced += tok != bits.get(who)
        new_states.append(free)
    return 1, n


def _first_loop(times: list[float], c: int, not_after: float | None, counts_times: list[float], counts_free: list[int],
                size: int, span: float, t0: float, end0: float, keys: list[tuple], events: list[tuple], states: list[Any],
                bits: dict[int, Any], memo: dict, frames: dict[int, Hashable], frame: Hashable, rel: Callable[[Any, Any], Any],
                rel_kind: int, place: Callable[[Any, int], Any], fail: int, prio: int, job: int, own: int, old_end: int) -> float | None:
    """:meth:`StatePlan._first`'s search over the candidate starts ``times`` from index ``c`` on (``not_after``, if
    given, the last): the first at which the job is placed at its turn and :func:`_trial` succeeds, else None.

    A candidate gets a trial only where the counts (``counts_times``, ``counts_free``) hold ``size`` cells from it for
    ``span``, with the job's own reservation ``[t0, end0)`` counted free (:class:`_CountedWindow`).  The reference
    for the compiled search (``_cplan.first``: the same loop on the same objects)."""
    if not times:
        return None  # (no candidate: not_after before now)
    rel = _release_function(rel, rel_kind)
    window = _CountedWindow(counts_times, counts_free, size, span, t0, end0)
    n = len(events)
    last = len(times) - 1 if not_after is not None else len(times)  # (not_after, if given, is the last)
    if c > last:
        c = last
    i = 0
    while c < len(times):
        t = times[c]
        if t == not_after:
            return t  # the plan with the job back where it was: see ReplayPlan.earliest
        fit = window.next_fit(t)
        if fit > t:
            # no start from t up to `fit` holds the job on the counts: on to the first candidate from there (not
            # past not_after); a skipped one whose turn is past the plan's failure would have answered None
            skip = bisect_left(times, fit, c + 1)
            if skip > last:
                skip = last
            if fail < n and keys[fail] < (times[skip - 1], 1, prio, job):
                return None
            c = skip
            continue
        c += 1
        i = bisect_left(keys, (t, 1, prio, job), i)
        if i > fail:
            return None  # the plan fails before the job's turn at t: so it does at every later t
        placed = memo.get((states[i], frame), -1)  # (place's memo, read here: most candidates are known)
        if placed == -1:
            placed = place(states[i], job)
        if placed is None:
            continue
        mine, free = placed
        iend = bisect_right(keys, (_end(t, span), 0, -1, job), i)  # its release: before event iend
        if _trial(events, states, bits, memo, frames, rel, rel_kind, place, i, n, iend, old_end, fail, own, mine, free):
            return t
    return None


class StatePlan:
    """:class:`ReplayPlan` for an allocator whose choices are a pure function of a hashable state
    (a :class:`StateModel`): the replay runs on states, not on snapshots.

    Every question is ReplayPlan's, answered the same (the conformance suite runs conservative
    backfilling with both and requires the same schedules; a unit test compares every answer):

    * the plan's replay is kept (the state before each event, where each reservation was placed,
      the first allocation that fails); once reservations are added or removed it is brought up to
      date from the first event they change, and the old replay's rest is kept where the states meet
      again (:meth:`_update`); placements are remembered for the plan's life by state and frame;
    * a trial (the job placed at a candidate time, the rest of the plan replayed with it) stops as
      soon as its state is the kept replay's at the same event: the job has ended, the states are
      equal and every reservation holding processors holds what it holds in the kept replay.  The
      rest is then the kept replay's, feasible iff that is.  The search over candidates is
      :func:`_first_loop` with :func:`_trial`, compiled where the extension is built (``_cplan``: the
      same loops on the same objects);
    * a candidate gets a trial only where the plan's counted free processors hold the job from it
      for its span (:class:`_CountedWindow`): every allocation of a trial takes its cells, so where
      the counts fall short some allocation fails.  A short segment rules out every candidate up to
      it at once;
    * :meth:`moves_earlier` answers for a job whose reservation is in the plan without taking it out:
      before its reservation the plan's events are the same with it or without it, so the kept replay
      serves; a trial compares states only past the job's old end.  A job that keeps its reservation
      (most do) changes nothing, and the kept replay serves the next job too.
    """

    def __init__(self, now: float, model: StateModel, releases: list[tuple[float, Allocation]],
                 request: Callable[[int], Request], priority: Callable[[int], int]):
        self.now = now
        self.free0: Any = model.state
        self._placement: Callable[[Any, Request], tuple[Any, Any] | None] = model.place
        self._rel: Any = model.release
        # (how the loops give a token back: int's own operator for these two, else the function; where the model
        # keeps a memo of releases, the compiled loops read it themselves and call the function only where it has no
        # answer, as a call from C costs more than most releases)
        self._rel_kind = 1 if self._rel is int.__or__ else 2 if self._rel is int.__add__ else 0
        rmemo = getattr(model, "release_memo", None)
        if rmemo is not None and self._rel_kind == 0:
            self._rel, self._rel_kind = (rmemo, model.release), REL_MEMO
        self._frame: Callable[[Request], Hashable] = model.frame
        memo = getattr(model, "memo", None)
        self._memo: dict[tuple[Any, Hashable], tuple[Any, Any] | None] = {} if memo is None else memo
        # each job's frame and cells, kept from plan to plan while the plans ask of the same jobs (one run: the same
        # `request`; a job's request never changes there), started again past JOB_FACTS jobs
        kept = getattr(model.allocator, "_plan_jobs", None)
        if kept is None or kept[0] is not request or len(kept[1]) > JOB_FACTS:
            kept = (request, Memo(), Memo())
            model.allocator._plan_jobs = kept  # type: ignore[attr-defined]
        self._frames: dict[int, Hashable] = kept[1]
        self._job_cells: dict[int, int] = kept[2]
        self.releases = [(t, model.token_of(alloc), alloc.serial) for t, alloc in releases]
        self.request = request
        self.priority = priority
        self._res: dict[int, tuple[float, float, float]] = {}  # job -> (start, end, span)
        self._kept: tuple[list[tuple], list[Any], dict[int, Any], int] | None = None
        self._pending: list[tuple[int, tuple, tuple]] = []  # reservations added (1) or removed (-1) since the replay
        self._keys: list[tuple] = []
        # ReplayPlan's candidate times, kept sorted with how many events fall on each
        self._every_time = SortedCounts()
        for t in [now, *(t for t, _, _ in self.releases)]:
            self._every_time.add(t)
        # the plan's free processors counted over time: a trial can succeed only where they hold the job
        self._cells: Callable[[Request], int] = model.cells
        self._free_count = model.free_count
        self._release_cells = [(t, model.cells_of(alloc)) for t, alloc in releases]
        self.counts = CountingProfile(now, self._free_count, self._release_cells)

    def add_many(self, reservations: list[tuple[int, float, float, int]]) -> None:
        """Reservations ``(job, start, duration, size)`` added at once, as :meth:`add` adds them one by one: a fresh
        plan's counts are then made in one sweep (:class:`CountingProfile`'s ``reservations``) rather than one
        insertion each (a pass that remakes its plan adds every reservation of the queue)."""
        if self._res or self._kept is not None or any(t < self.now for _, t, _, _ in reservations):
            for job, t, dur, size in reservations:
                self.add(job, t, size, dur)
            return
        cells_of, frame_of = self._cells_of, self._frame_of
        res = self._res
        times: list[float] = []
        counted = []
        for job, t, dur, _ in reservations:
            span = _span(dur)
            end = _end(t, span)
            res[job] = (t, end, span)
            frame_of(job)
            times += (t, end)
            counted.append((job, t, dur, cells_of(job)))
        self._every_time.add_all(times)
        self.counts = CountingProfile(self.now, self._free_count, self._release_cells, counted)

    def add(self, job: int, t: float, size: int, dur: float) -> None:
        span = _span(dur)
        end = _end(t, span)
        self._res[job] = (t, end, span)
        self._frame_of(job)
        self._changed(job, t, end, 1)
        self.counts.add(job, t, self._cells_of(job), dur)

    def remove(self, job: int) -> None:
        t, end, _ = self._res.pop(job)
        self._changed(job, t, end, -1)
        self.counts.remove(job)

    def _changed(self, job: int, t: float, end: float, sign: int) -> None:
        """A reservation added (``sign`` 1) or removed (-1): its times, and its two events for :meth:`_replay`."""
        change = self._every_time.add if sign > 0 else self._every_time.remove
        change(t)
        change(end)
        if self._kept is not None:
            self._pending.append((sign, (t, 1, self.priority(job), job), (end, 0, -1, job)))

    def _events(self) -> list[tuple]:
        """ReplayPlan's events and order: ``(time, kind, order, job, token)``, kind 0 a release, 1 an allocation."""
        events: list[tuple] = [(t, 0, serial, 0, m) for t, m, serial in self.releases]
        for job, (t, end, _) in self._res.items():
            events.append((t, 1, self.priority(job), job, None))
            events.append((end, 0, -1, job, None))
        events.sort(key=_event_key)
        return events

    def _frame_of(self, job: int) -> Hashable:
        frame = self._frames.get(job)
        if frame is None:
            frame = self._frames[job] = self._frame(self.request(job))
        return frame

    def _cells_of(self, job: int) -> int:
        cells = self._job_cells.get(job)
        if cells is None:
            cells = self._job_cells[job] = self._cells(self.request(job))
        return cells

    def _place(self, state: Any, job: int) -> tuple[Any, Any] | None:
        """The allocator's placement of ``job`` in ``state`` (its token and the next state), remembered for
        the plan's life by state and frame (the frame decides the placement: :meth:`StateModel.frame`)."""
        key = (state, self._frame_of(job))
        got = self._memo.get(key, -1)
        if got == -1:
            got = self._memo[key] = self._placement(state, self.request(job))
        return got  # type: ignore[return-value]

    def _replay(self) -> tuple[list[tuple], list[Any], dict[int, Any], int]:
        """The kept replay: events, the state before each (and after the last), each reservation's token,
        and the index of the first allocation that fails (the number of events if none does).

        Made in full once (:meth:`_full_replay`); after reservations are added or removed it is brought up to
        date from their first event (:meth:`_update`).  ``tokens`` holds every reservation placed before the
        first failure (after one, it may also hold tokens of later ones, which no question reads)."""
        if self._kept is None:
            self._kept = self._full_replay()
            self._keys = [_event_key(ev) for ev in self._kept[0]]
            self._pending = []
        elif self._pending:
            self._kept = self._update()
            self._pending = []
        return self._kept

    def _full_replay(self) -> tuple[list[tuple], list[Any], dict[int, Any], int]:
        """The whole plan replayed from now: what :meth:`_replay` keeps (the tests compare it with the updates)."""
        events = self._events()
        states = [self.free0]
        bits: dict[int, Any] = {}
        _, k = self._replay_loop()(events, [], {}, bits, states, self._memo, self._frames, self._rel, self._rel_kind, self._place,
                                   self.free0, 0, len(events) + 1, 0, len(events))  # (never compared with an old replay)
        return events, states, bits, k

    def _update(self) -> tuple[list[tuple], list[Any], dict[int, Any], int]:
        """The kept replay brought up to date with the reservations added and removed since (``_pending``).

        The events before the first changed one are the same, and so are the states before them: the replay
        starts there.  Once past every changed event, with the state the old replay had at the same event and
        every reservation still held holding what it held there, the rest is the old replay's (its events,
        states and tokens, shifted by the events added and removed), as a trial's early stop in :meth:`_first`."""
        events, states, bits, fail = self._kept  # type: ignore[misc]
        n_old = len(events)
        keys = self._keys  # (both changed in place: no question holds the old lists past an update)
        lo: tuple | None = None
        hi: tuple | None = None
        shift = 0
        gone: list[int] = []
        for sign, start, end in self._pending:
            for key in (start, end):
                i = bisect_left(keys, key)
                if sign > 0:
                    keys.insert(i, key)
                    events.insert(i, (*key, None))
                else:
                    del keys[i], events[i]
                if lo is None or key < lo:
                    lo = key
                if hi is None or key > hi:
                    hi = key
            shift += 2 * sign
            if sign < 0:
                gone.append(start[3])
        self._keys = keys
        assert lo is not None and hi is not None  # (there were changes)
        i0 = bisect_left(keys, lo)
        new_bits = dict(bits)
        for job in gone:
            if job not in self._res:
                new_bits.pop(job, None)
        if i0 > fail:
            return events, states, new_bits, fail  # the same prefix fails at the same event
        n = len(events)
        new_states = states[: i0 + 1]
        try:
            how, k = self._replay_loop()(events, states, bits, new_bits, new_states, self._memo, self._frames, self._rel,
                                         self._rel_kind, self._place, states[i0], i0, bisect_right(keys, hi), shift, fail)
        except BaseException:
            self._kept = None  # (the kept lists were changed in place: the next question replays the plan afresh)
            self._pending = []
            raise
        if how == 0:  # the rest is the old replay's
            new_states.extend(states[k - shift + 1 :])
            return events, new_states, new_bits, (fail + shift if fail < n_old else n)
        return events, new_states, new_bits, k

    @staticmethod
    def _replay_loop() -> Callable[..., tuple[int, int]]:
        """The replay of :meth:`_update` and :meth:`_full_replay`: compiled where the extension is built."""
        return _cplan.replay if compiled_search() else _replay_from

    def feasible(self) -> bool:
        events, _, _, fail = self._replay()
        return fail == len(events)

    def _times(self, not_after: float | None) -> list[float]:
        """ReplayPlan's candidate times: now, the releases' times and the reservations' starts and ends, from
        now on; with ``not_after``, those before it and then it (none if it is before now)."""
        times = self._every_time.values
        lo = bisect_left(times, self.now)
        if not_after is None:
            return times[lo:]
        return times[lo : bisect_left(times, not_after)] + [not_after] if not_after >= self.now else []

    def _first(self, job: int, span: float, not_after: float | None, own: bool) -> float | None:
        """The earliest start (ReplayPlan.earliest's candidates and answer) on the kept replay; with ``own``,
        the job's own reservation is in the plan (``not_after``) and is left out of the trials.  None: never fits."""
        events, states, bits, fail = self._replay()
        keys = self._keys
        old_end = -1  # with `own`: the index of the job's own end event (compared states must be past it)
        t0 = end0 = math.inf  # with `own`: its reservation, whose processors the counts take as free
        if own:
            t0, end0, _ = self._res[job]
            old_end = bisect_left(keys, (end0, 0, -1, job))
        # no start before the first time the plan's counted free processors hold the job for its span (the job
        # not in the plan; a trial places every reservation, so the counts of each are held throughout), and no
        # trial where they do not hold it from t for its span, its own reservation counted free (_first_loop)
        cells = self._cells_of(job)
        lb = -math.inf if own else self.counts.first_fit(cells, span)
        times = self._times(not_after)
        c = bisect_left(times, lb) if lb > -math.inf else 0
        first = _cplan.first if compiled_search() else _first_loop
        return first(times, c, not_after, self.counts.times, self.counts.free, cells, span, t0, end0, keys, events, states, bits,
                     self._memo, self._frames, self._frame_of(job), self._rel, self._rel_kind, self._place, fail,
                     self.priority(job), job, job if own else -1, old_end)

    def earliest(self, job: int, size: int, dur: float, not_after: float | None = None) -> float:
        """As :meth:`ReplayPlan.earliest` (the job not in the plan)."""
        t = self._first(job, _span(dur), not_after, False)
        if t is None:
            raise SimulationError(f"job position {job} (size {size}) never fits the plan")
        return t

    def moves_earlier(self, job: int) -> bool:
        """Whether ``job``, taken out of the plan, would find a start before its reservation (its
        :meth:`earliest` with ``not_after`` its reservation), answered with it in place (see the class notes)."""
        t0, _, span = self._res[job]
        if not self.counts.moves_earlier(job):
            return False  # no start before its reservation holds its bits counted: no trial can succeed there
        events, _, _, fail = self._replay()
        if fail < len(events):
            return True  # (not after a feasible pass) the general step answers: take it out and search
        t = self._first(job, span, t0, True)
        return t is not None and t < t0


class FreeSetPlan(StatePlan):
    """:class:`StatePlan` on the free bit set of a 2-D allocator that places by a pure function of it
    (:class:`~topoalloc.alloc.mesh2d.core.FreeSetProbes`): ``_free`` the set now,
    ``_placement_on(free, request)`` the bits :meth:`~topoalloc.alloc.base.Allocator.allocate` would take
    with that set, ``_mask_of(allocation)`` the bits a grant took; a release gives back exactly those."""

    def __init__(self, now: float, allocator: Allocator, releases: list[tuple[float, Allocation]],
                 request: Callable[[int], Request], priority: Callable[[int], int]):
        super().__init__(now, _BitsModel(allocator), releases, request, priority)
