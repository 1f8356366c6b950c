"""Offline optimal schedules of small instances (the exact side of seed 003 §5).

Instance: jobs with a release time, a duration and a size (integers: CP-SAT
works on integers), a machine of ``N`` processors.  Objective ``makespan``
(latest end) or ``total_wait`` (Σ start − release).  Two machine models:

``contiguous``
    every job gets an interval of ``size`` consecutive ranks of the ordering
    for its whole run — a rectangle time × rank; rectangles may not overlap
    (``AddNoOverlap2D``, with a redundant ``AddCumulative``).
``flat``
    any free processors: only capacity counts (``AddCumulative``), the
    flat-machine model the simulator's ``flat`` allocator realises.

A job of duration 0 starts at its release (it needs no processor time); it
is left out of the model.  Solutions are checked independently
(:func:`check_schedule_solution`): starts ≥ releases, capacity at every
start instant, and for ``contiguous`` pairwise disjoint rectangles.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ortools.sat.python import cp_model

from topoalloc.errors import InvalidArgument, RequestNeverFits, SolverError

from ._solver import check_solver_args, run_solver

__all__ = ["SchedJob", "ScheduleResult", "optimal_schedule", "check_schedule_solution", "schedule_objective", "random_release_instance", "MODES", "SCHED_OBJECTIVES"]

MODES = ("contiguous", "flat")
SCHED_OBJECTIVES = ("makespan", "total_wait")


@dataclass(frozen=True, slots=True)
class SchedJob:
    release: int
    duration: int
    size: int

    def __post_init__(self) -> None:
        for name in ("release", "duration", "size"):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or v < (1 if name == "size" else 0):
                raise InvalidArgument(name, v, "a non-negative integer" if name != "size" else "a positive integer")


def minimise_and_solve(m: Any, js: Sequence[Any], live: Sequence[int], S: dict[int, Any], horizon: int, objective: str, what: str, *,
                       time_limit: float | None, workers: int, seed: int) -> tuple[Any, int]:
    """The schedule models' common end: the objective (``makespan`` or ``total_wait``) over start variables ``S``,
    the solve, and its proven bound.  Raises :class:`SolverError` on an infeasible model (the serial schedule
    always fits the horizon), and ``KeyboardInterrupt`` when Ctrl-C stopped the search: CP-SAT takes the signal
    itself, so without this the studies and adversaries that solve one schedule after another would count the
    stopped search as unproven and go on."""
    if objective == "makespan":
        mk = m.new_int_var(max((j.release for j in js), default=0), horizon, "makespan")
        for i in live:
            m.add(mk >= S[i] + js[i].duration)
        m.minimize(mk)
    else:
        m.minimize(sum(S[i] - js[i].release for i in live))
    out = run_solver(m, time_limit=time_limit, workers=workers, seed=seed, what=what)
    if out.interrupted:
        raise KeyboardInterrupt
    if out.status == "infeasible":
        raise SolverError(what, "infeasible", "the serial schedule fits the horizon; the model is wrong")
    bound = int(round(out.solver.best_objective_bound)) if live else 0
    return out, bound


def replay_online(spec: str, jobs: Sequence[Any], machine: str, *, scheduler: str = "fcfs", sizes: Sequence[int], shapes: Sequence[tuple[int, int]] | None = None, locality: bool | None = None) -> tuple[list[float], Any]:
    """Start times of ``jobs`` (release, duration) run through allocator ``spec`` and ``scheduler`` on ``machine``, and the result.

    Jobs arrive at their releases (in instance order at equal times) with ``sizes`` (and ``shapes``, if given)
    and their durations as exact estimates; the start times come back in instance order.
    """
    import numpy as np

    from topoalloc.api import simulate
    from topoalloc.workload.core import Workload

    order = sorted(range(len(jobs)), key=lambda i: (jobs[i].release, i))
    extra = {} if shapes is None else {"shape": np.array([shapes[i] for i in order])}
    w = Workload(
        job_id=np.array([i + 1 for i in order]),
        submit=np.array([float(jobs[i].release) for i in order]),
        run=np.array([float(jobs[i].duration) for i in order]),
        size=np.array([sizes[i] for i in order]),
        requested_time=np.array([float(jobs[i].duration) for i in order]),
        **extra,
    )
    opts = {} if locality is None else {"locality": locality}  # None: simulate's own default
    r = simulate(w, machine=machine, allocator=spec, scheduler=scheduler, estimate="exact", **opts)
    starts = [0.0] * len(jobs)
    for pos, i in enumerate(order):
        starts[i] = float(r.start[pos])
    return starts, r


def coerce_jobs(jobs: Sequence, cls: type, fields: tuple[str, ...]) -> list:
    """``jobs`` as ``cls`` instances: each given as one, as a dict of ``fields`` or as a tuple of them, every value a whole number.

    Errors name the job (``jobs[i]``) and, when ``cls`` rejects a value, the field.
    """
    out = []
    for i, j in enumerate(jobs):
        if isinstance(j, cls):
            out.append(j)
            continue
        try:
            vals = [j[k] for k in fields] if isinstance(j, dict) else list(j)
            if len(vals) != len(fields) or any(float(v) != int(v) for v in vals):
                raise ValueError
            out.append(cls(*(int(v) for v in vals)))
        except InvalidArgument as exc:
            raise InvalidArgument(f"jobs[{i}].{exc.name}", exc.value, exc.expected) from None
        except (TypeError, ValueError, KeyError):
            raise InvalidArgument(f"jobs[{i}]", j, f"({', '.join(fields)}) with integer values") from None
    return out


def _jobs(jobs: Sequence) -> list[SchedJob]:
    return coerce_jobs(jobs, SchedJob, ("release", "duration", "size"))


@dataclass(frozen=True)
class ScheduleResult:
    status: str
    mode: str
    objective_name: str
    processors: int
    starts: tuple[int, ...] | None
    first_rank: tuple[int, ...] | None  # contiguous mode: lowest rank of each job's interval
    objective: int | None
    bound: int
    seconds: float

    def as_dict(self) -> dict:
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in self.__dict__.items()}


def schedule_objective(jobs: Sequence, starts: Sequence[int], objective: str) -> int:
    js = _jobs(jobs)
    if objective == "makespan":
        return max((s + j.duration for s, j in zip(starts, js)), default=0)
    if objective == "total_wait":
        return sum(s - j.release for s, j in zip(starts, js))
    raise InvalidArgument("objective", objective, f"one of {', '.join(SCHED_OBJECTIVES)}")


def check_schedule_solution(jobs: Sequence, processors: int, starts: Sequence[int], first_rank: Sequence[int] | None = None) -> None:
    """Raise :class:`SolverError` unless the schedule is valid (see module docstring)."""
    js = _jobs(jobs)

    def bad(detail: str) -> None:
        raise SolverError("schedule", "invalid solution", detail)

    if len(starts) != len(js):
        bad(f"{len(starts)} start times for {len(js)} jobs")
    for i, (j, s) in enumerate(zip(js, starts)):
        if s < j.release:
            bad(f"job {i} starts at {s} before its release {j.release}")
    live = [i for i, j in enumerate(js) if j.duration > 0]
    for t in {starts[i] for i in live}:
        used = sum(js[i].size for i in live if starts[i] <= t < starts[i] + js[i].duration)
        if used > processors:
            bad(f"{used} processors busy at time {t}; the machine has {processors}")
    if first_rank is not None:
        for a in live:
            x = first_rank[a]
            if not (0 <= x and x + js[a].size <= processors):
                bad(f"job {a} ranks {x}..{x + js[a].size - 1} outside the machine")
            for b in live:
                if b <= a:
                    continue
                t_overlap = starts[a] < starts[b] + js[b].duration and starts[b] < starts[a] + js[a].duration
                r_overlap = first_rank[a] < first_rank[b] + js[b].size and first_rank[b] < first_rank[a] + js[a].size
                if t_overlap and r_overlap:
                    bad(f"jobs {a} and {b} overlap in time and ranks")


def optimal_schedule(
    jobs: Sequence,
    processors: int,
    *,
    mode: str = "flat",
    objective: str = "makespan",
    time_limit: float | None = 60.0,
    workers: int = 1,
    seed: int = 0,
) -> ScheduleResult:
    """Optimal offline schedule; see the module docstring.

    Raises
    ------
    RequestNeverFits
        A job wider than the machine.
    SolverError
        Invalid model, ``infeasible`` (cannot happen: the horizon admits the
        serial schedule) or a solution failing validation.
    """
    js = _jobs(jobs)
    if not isinstance(processors, int) or isinstance(processors, bool) or processors < 1:
        raise InvalidArgument("processors", processors, "a positive integer")
    if mode not in MODES:
        raise InvalidArgument("mode", mode, f"one of {', '.join(MODES)}")
    if objective not in SCHED_OBJECTIVES:
        raise InvalidArgument("objective", objective, f"one of {', '.join(SCHED_OBJECTIVES)}")
    check_solver_args(time_limit, workers, seed)
    for i, j in enumerate(js):
        if j.size > processors:
            raise RequestNeverFits(f"jobs[{i}] asks for {j.size} processors; the machine has {processors}")
    N = processors
    horizon = max((j.release for j in js), default=0) + sum(j.duration for j in js)
    m = cp_model.CpModel()
    S, X, ti, xi = {}, {}, [], []
    live = [i for i, j in enumerate(js) if j.duration > 0]
    for i in live:
        j = js[i]
        S[i] = m.new_int_var(j.release, horizon - j.duration, f"s{i}")
        ti.append(m.new_fixed_size_interval_var(S[i], j.duration, f"t{i}"))
        if mode == "contiguous":
            X[i] = m.new_int_var(0, N - j.size, f"x{i}")
            xi.append(m.new_fixed_size_interval_var(X[i], j.size, f"r{i}"))
    if live:
        m.add_cumulative(ti, [js[i].size for i in live], N)
        if mode == "contiguous":
            m.add_no_overlap_2d(ti, xi)
    what = f"offline {mode} schedule ({len(js)} jobs on {N} processors)"
    out, bound = minimise_and_solve(m, js, live, S, horizon, objective, what, time_limit=time_limit, workers=workers, seed=seed)
    if not out.has_solution:
        return ScheduleResult(out.status, mode, objective, N, None, None, None, bound, out.seconds)
    starts = tuple(out.solver.value(S[i]) if i in S else js[i].release for i in range(len(js)))
    first = tuple(out.solver.value(X[i]) if i in X else 0 for i in range(len(js))) if mode == "contiguous" else None
    try:
        check_schedule_solution(js, N, starts, first)
    except SolverError as exc:
        raise SolverError(what, out.status, f"solution fails validation: {exc.detail}") from None
    value = schedule_objective(js, starts, objective)
    model_value = round(out.solver.objective_value)
    # the makespan variable is only bounded below by the ends: a feasible (not
    # optimal) solution may carry slack, never the other way round
    if live and (value > model_value or (out.status == "optimal" and value != model_value)):
        raise SolverError(what, out.status, f"independent evaluation gives {value}, the model {out.solver.objective_value}")
    if out.status == "optimal":
        bound = value
    return ScheduleResult(out.status, mode, objective, N, starts, first, value, min(bound, value), out.seconds)


def random_release_instance(processors: int, jobs: int, seed: int, *, max_size: int | None = None, max_run: int = 6, spread: int | None = None) -> list[SchedJob]:
    """Seeded random jobs: releases uniform in ``0..spread`` (default: jobs), sizes ``1..max_size``, durations ``1..max_run``."""
    import random

    rng = random.Random(seed)
    max_size = max_size or max(1, processors // 2)
    spread = jobs if spread is None else spread
    return [SchedJob(rng.randint(0, spread), rng.randint(1, max_run), rng.randint(1, max_size)) for _ in range(jobs)]
