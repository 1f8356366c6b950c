"""Competitive-ratio gaps: online allocators against the offline minimum span.

For a registered allocator (``topoalloc.registry.ALLOCATORS``, by spec such
as ``"best_fit"`` or ``"first_fit:span=ring"``) and fixed-time instances
(:func:`~topoalloc.ilp.minspan.random_fixed_instance`), the allocator is
replayed *online* — jobs arrive at their start times, in start order, and it
decides without knowing the future — and its span metric is divided by the
proven optimum of :func:`~topoalloc.ilp.minspan.min_span_allocation`.

Replay conventions (pinned in tests): at time ``t`` first the jobs ending at
``t`` release, then the jobs starting at ``t`` allocate in instance order,
then the zero-length jobs starting at ``t`` release (the conflict rule of
:mod:`~topoalloc.ilp.minspan`).  The machine is a line of ``N`` processors:
``mesh:N`` if the allocator accepts it, else ``torus:N``, else ``flat:N``;
spans are taken in the allocator's own ordering when it has one
(``allocator.ordering``, the curve allocators), else in node-id order.  An
allocator that refuses a job at its start time ("not now") or grants more
nodes than asked (rounding) makes the instance *not comparable*: it is
counted and left out of the ratios, never silently scored.

Ratios are computed only against proven optima; an instance whose optimum is
not proven within the time limit is counted as ``unproven`` and left out.

:func:`adversarial_search` hill-climbs over instances (sizes, start times,
durations) to maximise the ratio, with a seeded RNG and single-worker CP-SAT,
so the same arguments give the same result.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

from topoalloc.errors import InvalidArgument, RequestNeverFits, SolverError

from .minspan import OBJECTIVES, SpanJob, check_instance, min_span_allocation, objective_of, random_fixed_instance, span_of

__all__ = ["OnlineOutcome", "run_online", "GapReport", "gap_study", "adversarial_search", "AdversarialResult", "adaptive_adversary"]


@dataclass(frozen=True)
class OnlineOutcome:
    """What the online allocator did on one instance (``comparable`` False: refused or rounded)."""

    comparable: bool
    reason: str
    ranks: tuple[tuple[int, ...], ...] | None
    spans: tuple[int, ...] | None


def _machine_for(spec: str, processors: int):
    """The allocator ``spec`` bound to the first line of ``processors`` it accepts: a mesh, a ring, a flat machine."""
    from topoalloc.api import make_allocator
    from topoalloc.registry import ALLOCATORS
    from topoalloc.spec import parse
    from topoalloc.topology import parse_machine

    entry = ALLOCATORS.entry(parse(spec, argument="heuristic").name)
    for machine in (f"mesh:{processors}", f"torus:{processors}", f"flat:{processors}"):
        top = parse_machine(machine)
        if entry.accepts is None or entry.accepts(top):
            return make_allocator(spec, top, argument="heuristic")
    raise InvalidArgument("heuristic", spec, f"an allocator that accepts a line of {processors} processors (mesh, ring or flat machine)")


def run_online(spec: str, jobs: Sequence, processors: int, *, ring: bool = False) -> OnlineOutcome:
    """Replay ``jobs`` online through the allocator ``spec``; see the module docstring."""
    from topoalloc.alloc import Request

    js = check_instance(jobs, processors)
    alloc = _machine_for(spec, processors)
    ordering = getattr(alloc, "ordering", None)
    rank_of = np.asarray(ordering.rank_of) if ordering is not None else np.arange(processors)
    times = sorted({j.start for j in js} | {j.end for j in js})
    held: dict[int, object] = {}
    ranks: dict[int, tuple[int, ...]] = {}
    for t in times:
        for i, j in enumerate(js):
            if j.end == t and j.start < t and i in held:
                alloc.release(held.pop(i))
        starting = [i for i, j in enumerate(js) if j.start == t]
        for i in starting:
            try:
                a = alloc.allocate(Request(js[i].size, job_id=i))
            except RequestNeverFits as exc:
                return OnlineOutcome(False, f"job {i} can never fit: {exc}", None, None)
            if a is None:
                return OnlineOutcome(False, f"job {i} refused at its start time {t}", None, None)
            if a.size != js[i].size:
                return OnlineOutcome(False, f"job {i} granted {a.size} nodes for {js[i].size}", None, None)
            held[i] = a
            ranks[i] = tuple(sorted(int(rank_of[v]) for v in a.nodes.tolist()))
        for i in starting:
            if js[i].end == js[i].start:
                alloc.release(held.pop(i))
    rk = tuple(ranks[i] for i in range(len(js)))
    return OnlineOutcome(True, "", rk, tuple(span_of(r, processors, ring=ring) for r in rk))


@dataclass
class GapReport:
    heuristic: str
    processors: int
    jobs: int
    objective: str
    ring: bool
    seed: int
    ratios: list[float] = field(default_factory=list)
    worst: float | None = None
    worst_instance: list[tuple[float, float, int]] | None = None
    not_comparable: int = 0
    unproven: int = 0
    instances: int = 0
    seconds: float = 0.0
    #: the user stopped the study (Ctrl-C): the instances done by then
    interrupted: bool = False

    def as_dict(self) -> dict:
        r = np.array(self.ratios) if self.ratios else np.array([1.0])
        return {
            "heuristic": self.heuristic,
            "processors": self.processors,
            "jobs": self.jobs,
            "objective": self.objective,
            "ring": self.ring,
            "seed": self.seed,
            "instances": self.instances,
            "compared": len(self.ratios),
            "not_comparable": self.not_comparable,
            "unproven": self.unproven,
            "mean": float(r.mean()) if self.ratios else None,
            "median": float(np.median(r)) if self.ratios else None,
            "p90": float(np.quantile(r, 0.9)) if self.ratios else None,
            "worst": self.worst,
            "share_optimal": float(np.mean(r <= 1.0 + 1e-12)) if self.ratios else None,
            "worst_instance": self.worst_instance,
            "interrupted": self.interrupted,
        }


def _ratio(online: Fraction, opt: Fraction) -> float:
    if opt == 0:
        return 1.0 if online == 0 else float("inf")
    return float(online / opt)


def _score(spec: str, jobs: list[SpanJob], processors: int, objective: str, ring: bool, time_limit: float) -> tuple[str, float | None]:
    on = run_online(spec, jobs, processors, ring=ring)
    if not on.comparable:
        return "not_comparable", None
    opt = min_span_allocation(jobs, processors, objective=objective, ring=ring, time_limit=time_limit, workers=1, seed=0)
    if opt.interrupted:
        return "interrupted", None
    if opt.status != "optimal":
        return "unproven", None
    online_val = objective_of(on.spans, [j.size for j in jobs], objective)
    if online_val < opt.objective:
        raise SolverError(f"gap of {spec}", "invalid solution", f"the online allocator beat the proven optimum ({online_val} < {opt.objective}): the optimum is wrong")
    return "ok", _ratio(online_val, opt.objective)


def gap_study(
    heuristic: str,
    *,
    processors: int = 16,
    jobs: int = 10,
    instances: int = 50,
    seed: int = 1,
    objective: str = "max",
    ring: bool = False,
    time_limit: float = 30.0,
    progress: Callable[[int, int], None] | None = None,
) -> GapReport:
    """Ratio online/optimum over ``instances`` seeded random instances (instance ``i`` uses seed ``seed*1_000_003 + i``).

    ``progress(done, instances)`` is called after each instance.  Ctrl-C
    during an instance's solve ends the study: the report then holds the
    instances done before it and ``interrupted`` is set.
    """
    import time

    if objective not in OBJECTIVES:
        raise InvalidArgument("objective", objective, f"one of {', '.join(OBJECTIVES)}")
    for name, v in (("processors", processors), ("jobs", jobs), ("instances", instances)):
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise InvalidArgument(name, v, "a positive integer")
    t0 = time.perf_counter()
    rep = GapReport(heuristic, processors, jobs, objective, ring, seed)
    for i in range(instances):
        inst = random_fixed_instance(processors, jobs, seed * 1_000_003 + i)
        kind, r = _score(heuristic, inst, processors, objective, ring, time_limit)
        if kind == "interrupted":
            rep.interrupted = True
            break
        rep.instances += 1
        if progress is not None:
            progress(rep.instances, instances)
        if kind == "not_comparable":
            rep.not_comparable += 1
        elif kind == "unproven":
            rep.unproven += 1
        else:
            rep.ratios.append(r)
            if rep.worst is None or r > rep.worst:
                rep.worst = r
                rep.worst_instance = [(j.start, j.end, j.size) for j in inst]
    rep.seconds = time.perf_counter() - t0
    return rep


@dataclass
class AdversarialResult:
    heuristic: str
    processors: int
    jobs: int
    objective: str
    ring: bool
    seed: int
    steps: int
    worst: float
    instance: list[tuple[float, float, int]]
    history: list[tuple[int, float]]

    def as_dict(self) -> dict:
        return dict(self.__dict__)


def _mutate(rng: random.Random, inst: list[SpanJob], processors: int, horizon: int) -> list[SpanJob]:
    out = list(inst)
    i = rng.randrange(len(out))
    j = out[i]
    op = rng.randrange(4)
    s, e, p = int(j.start), int(j.end), j.size
    if op == 0:
        p = min(processors, max(1, p + rng.choice((-2, -1, 1, 2))))
    elif op == 1:
        d = rng.choice((-2, -1, 1, 2))
        s, e = max(0, s + d), max(0, s + d) + (e - s)
    elif op == 2:
        e = max(s + 1, e + rng.choice((-2, -1, 1, 2)))
    else:
        s = rng.randrange(horizon)
        e = s + rng.randint(1, max(1, horizon // 2))
        p = rng.randint(1, processors)
    out[i] = SpanJob(float(s), float(min(e, horizon + 8)), p)
    return out


def adversarial_search(
    heuristic: str,
    *,
    processors: int = 8,
    jobs: int = 8,
    objective: str = "max",
    ring: bool = False,
    steps: int = 200,
    restarts: int = 2,
    seed: int = 0,
    time_limit: float = 10.0,
    start_adaptive: bool = False,
) -> AdversarialResult:
    """Hill-climb over fixed-time instances to maximise online/optimum.

    Starts from seeded random instances (the first restart from
    :func:`adaptive_adversary` when ``start_adaptive``); each step mutates one job (size ±1/2,
    shift, stretch, or redraw), keeps the instance if it still fits, the
    allocator places every job exactly and the optimum is proven, and accepts
    it when the ratio does not decrease (plateaus are crossed).  Deterministic
    for fixed arguments.
    """
    if objective not in OBJECTIVES:
        raise InvalidArgument("objective", objective, f"one of {', '.join(OBJECTIVES)}")
    rng = random.Random(seed)
    horizon = 2 * jobs
    best_ratio, best_inst = 0.0, None
    history: list[tuple[int, float]] = []
    step_no = 0
    for rs in range(restarts):
        if rs == 0 and start_adaptive:
            cur = adaptive_adversary(heuristic, processors, ring=ring)
        else:
            cur = random_fixed_instance(processors, jobs, seed * 7919 + rs)
        cur = [SpanJob(j.start, j.end, j.size) for j in cur]
        kind, r = _score(heuristic, cur, processors, objective, ring, time_limit)
        cur_ratio = r if kind == "ok" else 0.0
        for _ in range(steps):
            step_no += 1
            cand = _mutate(rng, cur, processors, horizon)
            try:
                check_instance(cand, processors)
            except RequestNeverFits:
                continue
            kind, r = _score(heuristic, cand, processors, objective, ring, time_limit)
            if kind != "ok":
                continue
            if r >= cur_ratio:
                cur, cur_ratio = cand, r
                if r > best_ratio:
                    best_ratio, best_inst = r, cand
                    history.append((step_no, r))
        if cur_ratio > best_ratio:
            best_ratio, best_inst = cur_ratio, cur
    inst = [(j.start, j.end, j.size) for j in (best_inst or [])]
    return AdversarialResult(heuristic, processors, jobs, objective, ring, seed, restarts * steps, best_ratio, inst, history)


def adaptive_adversary(heuristic: str, processors: int, *, ring: bool = False) -> list[SpanJob]:
    """The classic adaptive construction behind an Ω(n) max-span ratio, built against ``heuristic``.

    ``N`` unit jobs start at time 0 and fill the machine.  The adversary
    replays the (deterministic) heuristic, finds the two unit jobs placed
    farthest apart — at ranks 0 and N-1 on a line, at ranks 0 and N/2 on a
    ring — and ends exactly those at time 1; the others run to time 3.  A job
    of size 2 then starts at time 1: online it can only take the two far
    ranks (span N, or N/2 + 1 on a ring), while the offline optimum puts the
    two released units side by side and gives it span 2.  So the max-span
    ratio is N/2 (about N/4 on a ring): it grows linearly with the number of
    processors, the shape of the Ω(n) lower bound of §5 (which the paper
    states for every online algorithm, randomised ones included; this is only
    the deterministic case, as an instance the tests and the benchmark can
    check).
    """
    if not isinstance(processors, int) or processors < 3:
        raise InvalidArgument("processors", processors, "an integer >= 3")
    units = [SpanJob(0.0, 3.0, 1) for _ in range(processors)]
    out = run_online(heuristic, units, processors, ring=ring)
    if not out.comparable:
        raise InvalidArgument("heuristic", heuristic, f"an allocator that places unit jobs exactly ({out.reason})")
    far = (0, processors // 2) if ring else (0, processors - 1)
    holder = {out.ranks[i][0]: i for i in range(processors)}
    jobs = [SpanJob(0.0, 1.0 if i in (holder[far[0]], holder[far[1]]) else 3.0, 1) for i in range(processors)]
    jobs.append(SpanJob(1.0, 2.0, 2))
    return jobs
