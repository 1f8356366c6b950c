"""Minimum-span allocation offline (Leung et al., seed 003 §2.3 and §5).

Instance
--------
Jobs with fixed start and end times and sizes (e.g. the schedule a
simulation produced), a machine of ``N`` processors and an ordering of them
(rank ``r`` is processor ``ordering[r]``).  Two jobs conflict when their
lifetimes overlap: ``[s_i, e_i)`` and ``[s_j, e_j)`` intersect, a job of zero
length occupying its instant (``s_i == s_j`` always conflicts).  Every time
point's running jobs must fit: Σ sizes ≤ N, else the instance is rejected.

Problem
-------
Give each job ``p_j`` ranks, disjoint from those of every conflicting job,
minimising one of the §2.3 metrics of the spans:

``sum``        Σ_j s_j
``max``        max_j s_j
``sum_per_size``  Σ_j s_j / p_j  (solved exactly, scaled by lcm of the sizes)

with linear span ``s = max rank − min rank + 1`` or ring span (``ring=True``)
``s = N − (largest circular run of ranks not used by the job)``, the paper's
formula ``|P| − max(max_i r_{i+1} − r_i − 1, |P| − 1 − r_last + r_first)``.

Model
-----
Booleans ``x[j, r]`` (job j uses rank r) with ``Σ_r x[j, r] = p_j`` and, at
every job start time (the maximal cliques of the interval graph), at most one
running job per rank.  Linear: ``x[j, r] → lo_j ≤ r ≤ hi_j``, span
``hi_j − lo_j + 1 ≥ p_j``.  Ring: an arc start ``b_j`` (one-hot) and length
``L_j``, ``x[j, r] ∧ [b_j = b] → L_j ≥ ((r − b) mod N) + 1``.  Mirror symmetry
is broken (linear: job 0's window lies in the left half, ``lo_0 + hi_0 ≤
N − 1``; ring: job 0's arc starts at rank 0 — any solution can be reflected /
rotated into that form).  A warm start comes from :func:`greedy_min_span`
(jobs by start time, each taking the free window of least span — the
non-contiguous rule of §2.3).

Before the full model, a small disjunctive model looks for an allocation in
which every job has consecutive ranks (``contiguous_first``): if it exists,
every span equals the job's size, the trivial lower bound of all three
objectives, so it is optimal (for linear and ring span alike).

Every solution is replayed through an :class:`~topoalloc.alloc.base.Allocator`
(so it passes the same validators as the online allocators) and its spans
recomputed independently by :func:`span_of`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
from ortools.sat.python import cp_model

from topoalloc.errors import InternalError, InvalidArgument, RequestNeverFits, SolverError

from ._solver import check_solver_args, run_solver

__all__ = [
    "SpanJob",
    "MinSpanResult",
    "span_of",
    "objective_of",
    "conflicts",
    "check_instance",
    "greedy_min_span",
    "min_span_allocation",
    "random_fixed_instance",
    "fragmenting_instance",
    "full_machine_instance",
    "has_contiguous_packing",
    "OBJECTIVES",
]

OBJECTIVES = ("sum", "max", "sum_per_size")


@dataclass(frozen=True, slots=True)
class SpanJob:
    """A job with a fixed lifetime ``[start, end)`` and a size."""

    start: float
    end: float
    size: int

    def __post_init__(self) -> None:
        if not isinstance(self.size, (int, np.integer)) or isinstance(self.size, bool) or self.size < 1:
            raise InvalidArgument("size", self.size, "a positive integer number of processors")
        if not (math.isfinite(self.start) and math.isfinite(self.end)) or self.end < self.start:
            raise InvalidArgument("end", (self.start, self.end), "finite times with end >= start")


def _jobs(jobs: Sequence) -> list[SpanJob]:
    out = []
    for i, j in enumerate(jobs):
        if isinstance(j, SpanJob):
            out.append(j)
            continue
        try:
            if isinstance(j, dict):
                out.append(SpanJob(float(j["start"]), float(j["end"]), int(j["size"])))
            else:
                s, e, p = j
                out.append(SpanJob(float(s), float(e), int(p)))
        except InvalidArgument as exc:
            raise InvalidArgument(f"jobs[{i}].{exc.name}", exc.value, exc.expected) from None
        except (TypeError, ValueError, KeyError):
            raise InvalidArgument(f"jobs[{i}]", j, "(start, end, size) or a dict with those keys") from None
    return out


def conflicts(a: SpanJob, b: SpanJob) -> bool:
    """Lifetimes overlap (a zero-length job occupies its instant)."""
    return a.start == b.start or a.start < b.start < a.end or b.start < a.start < b.end


def _cliques(jobs: list[SpanJob]) -> list[list[int]]:
    """Jobs running at each distinct start time: every conflicting pair shares one of these."""
    out = []
    for t in sorted({j.start for j in jobs}):
        out.append([i for i, j in enumerate(jobs) if j.start == t or j.start < t < j.end])
    return out


def check_instance(jobs: Sequence, processors: int) -> list[SpanJob]:
    """Validate and normalise; raise :class:`RequestNeverFits` if some instant needs more than ``processors``."""
    if not isinstance(processors, int) or isinstance(processors, bool) or processors < 1:
        raise InvalidArgument("processors", processors, "a positive integer")
    js = _jobs(jobs)
    for i, j in enumerate(js):
        if j.size > processors:
            raise RequestNeverFits(f"jobs[{i}] asks for {j.size} processors; the machine has {processors}")
    for c in _cliques(js):
        need = sum(js[i].size for i in c)
        if need > processors:
            t = min(js[i].start for i in c if js[i].start == max(js[k].start for k in c))
            raise RequestNeverFits(f"at time {t} the running jobs {c} need {need} processors; the machine has {processors}")
    return js


def span_of(ranks: Sequence[int], processors: int, *, ring: bool = False) -> int:
    """Linear or ring span (§2.3) of a set of ranks.

    >>> span_of([0, 1, 7], 8), span_of([0, 1, 7], 8, ring=True)
    (8, 3)
    """
    r = sorted(int(x) for x in ranks)
    if not r:
        raise InvalidArgument("ranks", ranks, "a non-empty set of ranks")
    if not ring:
        return r[-1] - r[0] + 1
    gaps = [r[i + 1] - r[i] - 1 for i in range(len(r) - 1)]
    gaps.append(processors - 1 - r[-1] + r[0])
    return processors - max(gaps)


def objective_of(spans: Sequence[int], sizes: Sequence[int], objective: str) -> Fraction:
    if objective == "sum":
        return Fraction(sum(spans))
    if objective == "max":
        return Fraction(max(spans))
    if objective == "sum_per_size":
        return sum((Fraction(s, p) for s, p in zip(spans, sizes)), Fraction(0))
    raise InvalidArgument("objective", objective, f"one of {', '.join(OBJECTIVES)}")


def greedy_min_span(jobs: Sequence, processors: int, *, ring: bool = False) -> list[tuple[int, ...]]:
    """Online-style rule: by start time, each job takes the ``p`` free ranks of least span (ties: lowest start).

    Always succeeds on a checked instance: the ranks busy during a job's
    lifetime are those of jobs running at its start.
    """
    js = check_instance(jobs, processors)
    order = sorted(range(len(js)), key=lambda i: (js[i].start, i))
    assigned: dict[int, tuple[int, ...]] = {}
    N = processors
    for i in order:
        busy = np.zeros(N, dtype=bool)
        for k, r in assigned.items():
            if conflicts(js[i], js[k]):
                busy[list(r)] = True
        free = np.flatnonzero(~busy)
        p = js[i].size
        best = None
        if ring:
            ext = np.concatenate([free, free + N])
            for a in range(len(free)):
                window = ext[a : a + p]
                s = int(window[-1] - window[0] + 1)
                if best is None or s < best[0]:
                    best = (s, tuple(sorted(int(x) % N for x in window)))
        else:
            for a in range(len(free) - p + 1):
                s = int(free[a + p - 1] - free[a] + 1)
                if best is None or s < best[0]:
                    best = (s, tuple(int(x) for x in free[a : a + p]))
        if best is None:
            raise InternalError(f"greedy min-span placement found no window for job {i}")
        assigned[i] = best[1]
    return [assigned[i] for i in range(len(js))]


@dataclass(frozen=True)
class MinSpanResult:
    """``ranks[j]`` are job j's ranks and ``nodes[j]`` its processors (through the ordering)."""

    status: str
    objective_name: str
    ring: bool
    processors: int
    ranks: tuple[tuple[int, ...], ...] | None
    nodes: tuple[tuple[int, ...], ...] | None
    spans: tuple[int, ...] | None
    objective: Fraction | None
    bound: Fraction
    seconds: float
    warm_start_objective: Fraction
    #: the user stopped the search (Ctrl-C): the best found by then, not a time-out
    interrupted: bool = False

    def as_dict(self) -> dict:
        return {
            "status": self.status,
            "objective_name": self.objective_name,
            "ring": self.ring,
            "processors": self.processors,
            "objective": None if self.objective is None else float(self.objective),
            "objective_exact": None if self.objective is None else str(self.objective),
            "bound": float(self.bound),
            "seconds": self.seconds,
            "spans": None if self.spans is None else list(self.spans),
            "nodes": None if self.nodes is None else [list(n) for n in self.nodes],
            "warm_start_objective": float(self.warm_start_objective),
        }


def min_span_allocation(
    jobs: Sequence,
    processors: int,
    *,
    objective: str = "sum",
    ring: bool = False,
    ordering: Sequence[int] | None = None,
    time_limit: float | None = 60.0,
    workers: int = 1,
    seed: int = 0,
    warm_start: bool = True,
    contiguous_first: bool = True,
) -> MinSpanResult:
    """Exact minimum-span allocation of fixed-time jobs; see the module docstring.

    Parameters
    ----------
    jobs : sequence of SpanJob, (start, end, size) or dicts
    processors : int
    objective : {"sum", "max", "sum_per_size"}
    ring : bool
        Ring span instead of linear span.
    ordering : sequence of int, optional
        Processor of each rank (default: the identity).
    time_limit, workers, seed
        As for :func:`~topoalloc.ilp.ordering.optimal_ordering`.
    contiguous_first : bool
        First look for an allocation giving every job consecutive ranks
        (a small disjunctive model); if one exists every span equals its
        size — the trivial lower bound of all three objectives — so it is
        optimal and the full model is skipped.

    Returns
    -------
    MinSpanResult
        ``status`` optimal / feasible / unknown.

    Raises
    ------
    RequestNeverFits
        Some instant needs more processors than the machine has.
    SolverError
        Invalid model, ``infeasible`` on a checked instance, or a solution that
        fails validation.
    """
    js = check_instance(jobs, processors)
    if objective not in OBJECTIVES:
        raise InvalidArgument("objective", objective, f"one of {', '.join(OBJECTIVES)}")
    check_solver_args(time_limit, workers, seed)
    N = processors
    if ordering is None:
        ordering = tuple(range(N))
    else:
        ordering = tuple(int(v) for v in ordering)
        if sorted(ordering) != list(range(N)):
            raise InvalidArgument("ordering", ordering, f"a permutation of 0..{N - 1}")
    sizes = [j.size for j in js]
    greedy = greedy_min_span(js, N, ring=ring)
    greedy_obj = objective_of([span_of(r, N, ring=ring) for r in greedy], sizes, objective)
    if not js:
        return MinSpanResult("optimal", objective, ring, N, (), (), (), Fraction(0), Fraction(0), 0.0, Fraction(0))

    what = f"min-span allocation ({len(js)} jobs on {N} processors)"
    if contiguous_first:
        packed = _contiguous_packing(js, N, ring=ring, time_limit=time_limit, workers=workers, seed=seed, what=what)
        if packed is not None:
            ranks, seconds = packed
            _validate(js, ranks, N, what)
            spans = tuple(span_of(r, N, ring=ring) for r in ranks)
            value = objective_of(spans, sizes, objective)
            # every span is at least the job's size, and these equal it: the trivial bound is met
            if spans != tuple(sizes):
                raise SolverError(what, "invalid solution", f"contiguous packing spans {spans} differ from the sizes {tuple(sizes)}")
            nodes = tuple(tuple(sorted(ordering[r] for r in rs)) for rs in ranks)
            return MinSpanResult("optimal", objective, ring, N, ranks, nodes, spans, value, value, seconds, greedy_obj)

    m = cp_model.CpModel()
    J = range(len(js))
    x = [[m.new_bool_var(f"x{j}_{r}") for r in range(N)] for j in J]
    for j in J:
        m.add(sum(x[j]) == sizes[j])
    for c in _cliques(js):
        if len(c) > 1:
            for r in range(N):
                m.add_at_most_one(x[j][r] for j in c)
    span = [m.new_int_var(sizes[j], N, f"span{j}") for j in J]
    if not ring:
        lo = [m.new_int_var(0, N - 1, f"lo{j}") for j in J]
        hi = [m.new_int_var(0, N - 1, f"hi{j}") for j in J]
        for j in J:
            for r in range(N):
                m.add(lo[j] <= r).only_enforce_if(x[j][r])
                m.add(hi[j] >= r).only_enforce_if(x[j][r])
            m.add(span[j] == hi[j] - lo[j] + 1)
        m.add(lo[0] + hi[0] <= N - 1)
    else:
        b = [[m.new_bool_var(f"b{j}_{s}") for s in range(N)] for j in J]
        for j in J:
            m.add_exactly_one(b[j])
            for s in range(N):
                for r in range(N):
                    need = (r - s) % N + 1
                    if need > sizes[j]:
                        m.add(span[j] >= need).only_enforce_if([b[j][s], x[j][r]])
        m.add(b[0][0] == 1)
    scale = 1
    if objective == "sum":
        m.minimize(sum(span))
    elif objective == "max":
        top = m.new_int_var(1, N, "maxspan")
        m.add_max_equality(top, span)
        m.minimize(top)
    else:
        scale = math.lcm(*sizes)
        if scale > 10**12:
            raise InvalidArgument("jobs", f"sizes with lcm {scale}", "sizes whose least common multiple is at most 10**12 for sum_per_size")
        m.minimize(sum((scale // sizes[j]) * span[j] for j in J))
    if warm_start:
        # move the greedy solution into the symmetry-broken region
        hint = [tuple(r) for r in greedy]
        if not ring:
            lo0, hi0 = min(hint[0]), max(hint[0])
            if lo0 + hi0 > N - 1:
                hint = [tuple(sorted(N - 1 - v for v in r)) for r in hint]
        else:
            spans0 = span_of(hint[0], N, ring=True)
            start0 = next(s for s in range(N) if all((v - s) % N < spans0 for v in hint[0]))
            hint = [tuple(sorted((v - start0) % N for v in r)) for r in hint]
        for j in J:
            used = set(hint[j])
            for r in range(N):
                m.add_hint(x[j][r], r in used)
    out = run_solver(m, time_limit=time_limit, workers=workers, seed=seed, what=what)
    if out.status == "infeasible":
        raise SolverError(what, "infeasible", "the instance was checked to fit; the model is wrong")
    bound = Fraction(math.ceil(out.solver.best_objective_bound - 1e-6), scale)
    if not out.has_solution:
        return MinSpanResult(out.status, objective, ring, N, None, None, None, None, bound, out.seconds, greedy_obj, out.interrupted)
    ranks = tuple(tuple(r for r in range(N) if out.solver.boolean_value(x[j][r])) for j in J)
    _validate(js, ranks, N, what)
    spans = tuple(span_of(r, N, ring=ring) for r in ranks)
    value = objective_of(spans, sizes, objective)
    model_value = round(out.solver.objective_value)
    # The model's span variables are only bounded below by the ranks (lo/hi, arc
    # length), so a merely feasible solution may carry slack: the allocation's
    # true value can be lower than the model's, never higher, and at a proven
    # optimum the two must agree.
    if value * scale > model_value or (out.status == "optimal" and value * scale != model_value):
        raise SolverError(what, out.status, f"independent evaluation gives {value}, the model {out.solver.objective_value / scale}")
    if out.status == "optimal":
        bound = value
    elif greedy_obj < value:
        # the hint is only a hint: a search stopped by its time limit may hold something worse than the warm start
        # (seen on fragmenting instances, e.g. 335 against the greedy 230); the greedy allocation is valid, return it
        ranks = tuple(tuple(sorted(r)) for r in greedy)
        _validate(js, ranks, N, what)
        spans = tuple(span_of(r, N, ring=ring) for r in ranks)
        value = objective_of(spans, sizes, objective)
    nodes = tuple(tuple(sorted(ordering[r] for r in rs)) for rs in ranks)
    return MinSpanResult(out.status, objective, ring, N, ranks, nodes, spans, value, min(bound, value), out.seconds, greedy_obj, out.interrupted)


def _contiguous_packing(js: list[SpanJob], N: int, *, ring: bool, time_limit, workers: int, seed: int, what: str):
    """Ranks giving every job consecutive ranks (cyclically on a ring), or None if none exists or none was found in time.

    Linear: ``x_a + p_a <= x_b`` or ``x_b + p_b <= x_a`` for conflicting jobs.
    Ring: arcs ``[x, x + p)`` mod N are disjoint iff ``d = (x_b - x_a) mod N``
    satisfies ``d >= p_a`` and ``N - d >= p_b``; job 0's arc starts at 0
    (rotation).
    """
    m, x = _contiguous_model(js, N, ring=ring)
    out = run_solver(m, time_limit=time_limit, workers=workers, seed=seed, what=what + " (contiguous phase)")
    if out.interrupted:
        raise KeyboardInterrupt  # nothing to report from this phase: the caller's Ctrl-C handling takes it
    if not out.has_solution:
        return None
    ranks = tuple(tuple(sorted((out.solver.value(x[i]) + k) % N for k in range(j.size))) for i, j in enumerate(js))
    return ranks, out.seconds


def _contiguous_model(js: list[SpanJob], N: int, *, ring: bool) -> tuple[Any, list[Any]]:
    """The contiguous phase's model (see :func:`_contiguous_packing`) and its start variables."""
    m = cp_model.CpModel()
    if ring:
        x = [m.new_int_var(0, N - 1, f"x{i}") for i in range(len(js))]
        m.add(x[0] == 0)
    else:
        x = [m.new_int_var(0, N - j.size, f"x{i}") for i, j in enumerate(js)]
    for a in range(len(js)):
        for b in range(a + 1, len(js)):
            if not conflicts(js[a], js[b]):
                continue
            if ring:
                d = m.new_int_var(0, N - 1, "")
                m.add_modulo_equality(d, x[b] - x[a] + N, N)
                m.add(d >= js[a].size)
                m.add(N - d >= js[b].size)
            else:
                left = m.new_bool_var("")
                m.add(x[a] + js[a].size <= x[b]).only_enforce_if(left)
                m.add(x[b] + js[b].size <= x[a]).only_enforce_if(left.negated())
    return m, x


def has_contiguous_packing(jobs: Sequence, processors: int, *, ring: bool = False, time_limit: float | None = 30.0) -> bool | None:
    """Whether some allocation gives every job consecutive ranks: True, False (proven impossible), or None (not decided in time)."""
    js = check_instance(jobs, processors)
    m, _ = _contiguous_model(js, processors, ring=ring)
    out = run_solver(m, time_limit=time_limit, workers=1, seed=0, what=f"contiguous packing ({len(js)} jobs on {processors} processors)")
    if out.has_solution:
        return True
    return False if out.status == "infeasible" else None


def full_machine_instance(processors: int, steps: int, seed: int, *, max_run: int = 3) -> list[SpanJob]:
    """A seeded instance that keeps the machine full: at each integer time ``0 .. steps-1`` the free processors
    are filled with new jobs (sizes uniform in ``1 ..`` what is still free, runs ``1 .. max_run``).

    The load is ``processors`` at every instant before ``steps``, so there is no slack to pack around.
    """
    import random

    if not isinstance(steps, int) or steps < 1:
        raise InvalidArgument("steps", steps, "a positive integer")
    rng = random.Random(seed)
    running: list[tuple[int, int]] = []  # (end, size)
    out = []
    for t in range(steps):
        running = [(e, s) for e, s in running if e > t]
        free = processors - sum(s for _, s in running)
        while free > 0:
            size, end = rng.randint(1, free), t + rng.randint(1, max_run)
            running.append((end, size))
            out.append(SpanJob(float(t), float(end), size))
            free -= size
    return out


def fragmenting_instance(processors: int, steps: int, seed: int, *, ring: bool = False, tries: int = 2000, time_limit: float = 10.0) -> list[SpanJob]:
    """A seeded instance that **forces fragmentation**: no allocation gives every job consecutive ranks (proven).

    :func:`random_fixed_instance` draws instances that almost always pack
    contiguously (20 of 20 on 16 processors × 10 jobs): the contiguous phase
    settles them at once and the span objective is trivial.  Here candidates
    come from :func:`full_machine_instance` (the machine full at every
    instant, short runs) and the first whose contiguous packing CP-SAT proves
    impossible is returned — about 1 in 20 to 1 in 100 candidates on 16–32
    processors (candidate ``k`` uses seed ``seed · 10000 + k``).  Every
    instance of the family is a case the full span model must decide.

    Raises
    ------
    SolverError
        No candidate among ``tries`` was proven to fragment.
    """
    for k in range(tries):
        cand = full_machine_instance(processors, steps, seed * 10000 + k)
        if has_contiguous_packing(cand, processors, ring=ring, time_limit=time_limit) is False:
            return cand
    raise SolverError(f"fragmenting instance ({steps} steps on {processors} processors)", "not found", f"none of {tries} candidates was proven to fragment")


def _validate(js: list[SpanJob], ranks: Sequence[Sequence[int]], N: int, what: str) -> None:
    for j, r in enumerate(ranks):
        if len(r) != js[j].size or len(set(r)) != len(r) or any(not 0 <= v < N for v in r):
            raise SolverError(what, "invalid", f"job {j} got ranks {list(r)} for size {js[j].size}")
    for a in range(len(js)):
        for b in range(a + 1, len(js)):
            if conflicts(js[a], js[b]) and set(ranks[a]) & set(ranks[b]):
                raise SolverError(what, "invalid", f"jobs {a} and {b} overlap in time and share ranks {sorted(set(ranks[a]) & set(ranks[b]))}")


def random_fixed_instance(processors: int, jobs: int, seed: int, *, max_size: int | None = None, max_run: int = 10) -> list[SpanJob]:
    """A seeded random instance with fixed times: jobs arrive in a burst and are list-scheduled FCFS on flat capacity.

    Sizes are uniform in ``1..max_size`` (default ``processors // 2``), run
    times uniform in ``1..max_run``, arrivals uniform in ``0..jobs``; each job
    starts at the earliest time at or after its arrival (and not before the
    previous job's start) when enough processors are free — so the instance
    always fits, and the machine is busy enough for spans to matter.
    """
    import random

    if not isinstance(jobs, int) or jobs < 1:
        raise InvalidArgument("jobs", jobs, "a positive integer")
    rng = random.Random(seed)
    max_size = max_size or max(1, processors // 2)
    raw = sorted((rng.randint(0, jobs), rng.randint(1, max_size), rng.randint(1, max_run)) for _ in range(jobs))
    running: list[tuple[int, int]] = []  # (end, size)
    out = []
    t = 0
    for arrive, size, run in raw:
        t = max(t, arrive)
        while True:
            running = [(e, s) for e, s in running if e > t]
            if processors - sum(s for _, s in running) >= size:
                break
            t = min(e for e, _ in running)
        running.append((t + run, size))
        out.append(SpanJob(float(t), float(t + run), size))
    return out
