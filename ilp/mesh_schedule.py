"""Offline optimal contiguous schedules on a 2-D mesh, and the online 2-D allocators scored against them.

Instance: jobs with a release time, a duration and a frame ``w × l``
(integers), an ``X × Y`` mesh.  A schedule gives every job a start
``s ≥ release`` and a submesh (lower-left ``(x, y)``) held for its whole run:
a box in time × x × y.  Boxes may not overlap.  Objective ``makespan`` (the
latest end) or ``total_wait`` (Σ start − release).

Model
-----
CP-SAT's ``NoOverlap2D`` does not take a third dimension, so every pair of
jobs gets the disjunction "one ends before the other starts, or they are apart
in x, or apart in y": six literals, at least one true, each enforcing its
inequality.  A cumulative constraint on time (demand ``w·l``, capacity
``X·Y``) is added as a redundant cut.  With ``rotate=True`` a job may also
take ``l × w`` (Adaptive Scan does).  A job of duration 0 starts at its
release and is left out.  Solutions are checked independently
(:func:`check_mesh_schedule`).  Meant for small meshes (up to about 6 × 6) and
short job sequences: the pairwise model grows with the square of the jobs.

Online heuristics (:func:`run_online_mesh`, :func:`mesh_gap_study`)
-------------------------------------------------------------------
A registered allocator (``"mesh_first_fit"``, ``"anca_bf:max_blocks=4"`` ...)
with a scheduler (FCFS by default) runs the instance through the event-driven
simulation, jobs arriving at their releases with their frames as shapes and
their durations as exact estimates.  Its makespan or total wait is divided by
the proven optimum.  A contiguous allocator's schedule is itself a feasible
contiguous schedule, so its ratio is ≥ 1 (checked); a non-contiguous one is
not bound by the contiguous optimum and may score below 1 — it is also
scored against the *capacity* optimum (any free processors, :mod:`.schedule`'s
``flat`` mode), a lower bound for every allocator.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from ortools.sat.python import cp_model

from topoalloc.errors import InvalidArgument, RequestNeverFits, SolverError

from ._solver import check_solver_args
from .schedule import SCHED_OBJECTIVES, SchedJob, coerce_jobs, minimise_and_solve, optimal_schedule, replay_online

__all__ = [
    "MeshJob",
    "MeshScheduleResult",
    "optimal_mesh_schedule",
    "check_mesh_schedule",
    "mesh_schedule_objective",
    "random_mesh_instance",
    "run_online_mesh",
    "MeshGapReport",
    "mesh_gap_study",
    "MESH_HEURISTICS",
]

#: The 2-D heuristics ``topoalloc gap --mesh`` scores when none is named.
MESH_HEURISTICS = ("mesh_first_fit", "mesh_best_fit", "frame_sliding", "adaptive_scan", "anca_ff", "anca_bf", "pald", "mbs", "paging")


@dataclass(frozen=True, slots=True)
class MeshJob:
    """One job: released at ``release``, runs ``duration``, on a ``w × l`` submesh."""

    release: int
    duration: int
    w: int
    l: int

    def __post_init__(self) -> None:
        for name in ("release", "duration", "w", "l"):
            v = getattr(self, name)
            low = 1 if name in ("w", "l") else 0
            if not isinstance(v, int) or isinstance(v, bool) or v < low:
                raise InvalidArgument(name, v, "a positive integer" if low else "a non-negative integer")


def _jobs(jobs: Sequence[Any]) -> list[MeshJob]:
    return coerce_jobs(jobs, MeshJob, ("release", "duration", "w", "l"))


@dataclass(frozen=True)
class MeshScheduleResult:
    """A solve: status, the schedule (starts and submeshes ``(x, y, w, l)``), objective and proven bound."""

    status: str
    objective_name: str
    mesh: tuple[int, int]
    rotate: bool
    starts: tuple[int, ...] | None
    placements: tuple[tuple[int, int, int, int], ...] | None
    objective: int | None
    bound: int
    seconds: float

    def as_dict(self) -> dict[str, Any]:
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in self.__dict__.items()}


def mesh_schedule_objective(jobs: Sequence[Any], starts: Sequence[float], objective: str) -> float:
    """``makespan`` (latest end) or ``total_wait`` (Σ start − release) of a schedule."""
    js = _jobs(jobs)
    if objective == "makespan":
        return max((s + j.duration for s, j in zip(starts, js)), default=0)
    if objective == "total_wait":
        return sum(s - j.release for s, j in zip(starts, js))
    raise InvalidArgument("objective", objective, f"one of {', '.join(SCHED_OBJECTIVES)}")


def check_mesh_schedule(jobs: Sequence[Any], X: int, Y: int, starts: Sequence[int], placements: Sequence[tuple[int, int, int, int]], *, rotate: bool = False) -> None:
    """Raise :class:`SolverError` unless every job starts after its release, its submesh is its frame
    (or, with ``rotate``, the rotated frame) inside the mesh, and jobs overlapping in time are apart in space."""
    js = _jobs(jobs)

    def bad(detail: str) -> None:
        raise SolverError("mesh schedule", "invalid solution", detail)

    if len(starts) != len(js) or len(placements) != len(js):
        bad(f"{len(starts)} starts and {len(placements)} placements for {len(js)} jobs")
    for i, (j, s, (x, y, w, l)) in enumerate(zip(js, starts, placements)):
        if s < j.release:
            bad(f"job {i} starts at {s} before its release {j.release}")
        if (w, l) != (j.w, j.l) and not (rotate and (w, l) == (j.l, j.w)):
            bad(f"job {i} placed as {w}x{l}, its frame is {j.w}x{j.l}")
        if j.duration and not (0 <= x and x + w <= X and 0 <= y and y + l <= Y):
            bad(f"job {i} at ({x}, {y}) {w}x{l} is outside the {X}x{Y} mesh")
    live = [i for i, j in enumerate(js) if j.duration > 0]
    for a in live:
        for b in live:
            if b <= a:
                continue
            (xa, ya, wa, la), (xb, yb, wb, lb) = placements[a], placements[b]
            t = starts[a] < starts[b] + js[b].duration and starts[b] < starts[a] + js[a].duration
            if t and xa < xb + wb and xb < xa + wa and ya < yb + lb and yb < ya + la:
                bad(f"jobs {a} and {b} overlap in time and space")


def optimal_mesh_schedule(
    jobs: Sequence[Any],
    X: int,
    Y: int,
    *,
    objective: str = "makespan",
    rotate: bool = False,
    time_limit: float | None = 60.0,
    workers: int = 1,
    seed: int = 0,
) -> MeshScheduleResult:
    """The optimal contiguous offline schedule of ``jobs`` on an ``X × Y`` mesh (see the module notes).

    Raises
    ------
    RequestNeverFits
        A frame that fits the mesh in no allowed orientation.
    SolverError
        Invalid model, or a solution failing the independent check.

    Examples
    --------
    >>> r = optimal_mesh_schedule([(0, 2, 2, 2), (0, 2, 2, 2), (0, 1, 4, 1)], 4, 2)
    >>> r.status, r.objective     # the two squares side by side, then the row
    ('optimal', 3)
    """
    js = _jobs(jobs)
    for name, v in (("X", X), ("Y", Y)):
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise InvalidArgument(name, v, "a positive mesh side")
    if objective not in SCHED_OBJECTIVES:
        raise InvalidArgument("objective", objective, f"one of {', '.join(SCHED_OBJECTIVES)}")
    check_solver_args(time_limit, workers, seed)
    for i, j in enumerate(js):
        if not (j.w <= X and j.l <= Y) and not (rotate and j.l <= X and j.w <= Y):
            raise RequestNeverFits(f"jobs[{i}] asks for a {j.w}x{j.l} submesh; the mesh is {X}x{Y}")
    live = [i for i, j in enumerate(js) if j.duration > 0]
    horizon = max((j.release for j in js), default=0) + sum(j.duration for j in js)
    m = cp_model.CpModel()
    S: dict[int, Any] = {}
    PX: dict[int, Any] = {}
    PY: dict[int, Any] = {}
    W: dict[int, Any] = {}
    L: dict[int, Any] = {}
    intervals = []
    for i in live:
        j = js[i]
        S[i] = m.new_int_var(j.release, horizon - j.duration, f"s{i}")
        intervals.append(m.new_fixed_size_interval_var(S[i], j.duration, f"t{i}"))
        can_turn = rotate and j.w != j.l and j.l <= X and j.w <= Y
        can_keep = j.w <= X and j.l <= Y
        if can_turn:
            o = m.new_bool_var(f"o{i}")
            if not can_keep:
                m.add(o == 1)
            W[i] = m.new_int_var(min(j.w, j.l), max(j.w, j.l), f"w{i}")
            L[i] = m.new_int_var(min(j.w, j.l), max(j.w, j.l), f"l{i}")
            m.add(W[i] == j.l).only_enforce_if(o)
            m.add(L[i] == j.w).only_enforce_if(o)
            m.add(W[i] == j.w).only_enforce_if(~o)
            m.add(L[i] == j.l).only_enforce_if(~o)
        else:
            W[i], L[i] = j.w, j.l
        PX[i] = m.new_int_var(0, X - 1, f"x{i}")
        PY[i] = m.new_int_var(0, Y - 1, f"y{i}")
        m.add(PX[i] + W[i] <= X)
        m.add(PY[i] + L[i] <= Y)
    for ai, a in enumerate(live):
        for b in live[ai + 1 :]:
            lits = [m.new_bool_var(f"d{a}_{b}_{k}") for k in range(6)]
            m.add(S[a] + js[a].duration <= S[b]).only_enforce_if(lits[0])
            m.add(S[b] + js[b].duration <= S[a]).only_enforce_if(lits[1])
            m.add(PX[a] + W[a] <= PX[b]).only_enforce_if(lits[2])
            m.add(PX[b] + W[b] <= PX[a]).only_enforce_if(lits[3])
            m.add(PY[a] + L[a] <= PY[b]).only_enforce_if(lits[4])
            m.add(PY[b] + L[b] <= PY[a]).only_enforce_if(lits[5])
            m.add_bool_or(lits)
    if live:
        m.add_cumulative(intervals, [js[i].w * js[i].l for i in live], X * Y)
    what = f"offline contiguous schedule ({len(js)} jobs on a {X}x{Y} mesh)"
    out, bound = minimise_and_solve(m, js, live, S, horizon, objective, what, time_limit=time_limit, workers=workers, seed=seed)
    if not out.has_solution:
        return MeshScheduleResult(out.status, objective, (X, Y), rotate, None, None, None, bound, out.seconds)
    val = out.solver.value
    starts = tuple(int(val(S[i])) if i in S else js[i].release for i in range(len(js)))
    placements = tuple(
        (int(val(PX[i])), int(val(PY[i])), int(val(W[i])) if not isinstance(W[i], int) else W[i], int(val(L[i])) if not isinstance(L[i], int) else L[i])
        if i in S else (0, 0, js[i].w, js[i].l)
        for i in range(len(js))
    )
    try:
        check_mesh_schedule(js, X, Y, starts, placements, rotate=rotate)
    except SolverError as exc:
        raise SolverError(what, out.status, f"solution fails validation: {exc.detail}") from None
    value = int(mesh_schedule_objective(js, starts, objective))
    model_value = round(out.solver.objective_value)
    if live and (value > model_value or (out.status == "optimal" and value != model_value)):
        raise SolverError(what, out.status, f"independent evaluation gives {value}, the model {out.solver.objective_value}")
    if out.status == "optimal":
        bound = value
    return MeshScheduleResult(out.status, objective, (X, Y), rotate, starts, placements, value, min(bound, value), out.seconds)


def random_mesh_instance(X: int, Y: int, jobs: int, seed: int, *, max_run: int = 5, spread: int | None = None) -> list[MeshJob]:
    """Seeded random jobs: releases uniform in ``0..spread`` (default: the job count), durations
    ``1..max_run``, sides uniform in ``1..X`` and ``1..Y``.

    >>> random_mesh_instance(4, 4, 2, 1) == random_mesh_instance(4, 4, 2, 1)
    True
    """
    import random

    rng = random.Random(seed)
    spread = jobs if spread is None else spread
    return [MeshJob(rng.randint(0, spread), rng.randint(1, max_run), rng.randint(1, X), rng.randint(1, Y)) for _ in range(jobs)]


def run_online_mesh(spec: str, jobs: Sequence[Any], X: int, Y: int, *, scheduler: str = "fcfs") -> tuple[list[float], Any]:
    """Run ``jobs`` through the allocator ``spec`` and ``scheduler`` on ``mesh:XxY``; return (starts, result).

    Jobs arrive at their releases (in instance order at equal times) with
    their frames as shapes and their durations as exact estimates.
    """
    js = _jobs(jobs)
    return replay_online(spec, js, f"mesh:{X}x{Y}", scheduler=scheduler, sizes=[j.w * j.l for j in js], shapes=[(j.w, j.l) for j in js])


@dataclass
class MeshGapReport:
    """Ratios online / optimum over the instances, per heuristic (see :func:`mesh_gap_study`)."""

    mesh: tuple[int, int]
    jobs: int
    objective: str
    scheduler: str
    seed: int
    instances: int = 0
    unproven: int = 0
    ratios: dict[str, list[float]] = field(default_factory=dict)
    capacity_ratios: dict[str, list[float]] = field(default_factory=dict)
    contiguous: dict[str, bool] = field(default_factory=dict)
    seconds: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        def stats(v: list[float]) -> dict[str, Any]:
            a = np.array(v) if v else np.array([np.nan])
            return {"mean": float(a.mean()) if v else None, "median": float(np.median(a)) if v else None,
                    "worst": float(a.max()) if v else None, "best": float(a.min()) if v else None,
                    "share_optimal": float(np.mean(np.abs(a - 1.0) < 1e-12)) if v else None}

        return {
            "mesh": f"{self.mesh[0]}x{self.mesh[1]}", "jobs": self.jobs, "objective": self.objective, "scheduler": self.scheduler,
            "seed": self.seed, "instances": self.instances, "unproven": self.unproven, "seconds": self.seconds,
            "heuristics": {h: {"contiguous": self.contiguous[h], "compared": len(self.ratios[h]),
                               "vs_contiguous_optimum": stats(self.ratios[h]), "vs_capacity_optimum": stats(self.capacity_ratios[h])}
                           for h in self.ratios},
        }


def mesh_gap_study(
    heuristics: Sequence[str],
    *,
    mesh: tuple[int, int] = (4, 4),
    jobs: int = 6,
    instances: int = 20,
    seed: int = 1,
    objective: str = "makespan",
    scheduler: str = "fcfs",
    time_limit: float = 30.0,
) -> MeshGapReport:
    """Each heuristic's ratio to the proven optima over seeded random instances (instance ``i``: seed ``seed·1_000_003 + i``).

    Rotating allocators (Adaptive Scan) are scored against the optimum that may
    rotate; an instance whose optimum is not proven within ``time_limit`` is
    counted as ``unproven`` and left out.

    Raises
    ------
    SolverError
        A contiguous heuristic beat the proven contiguous optimum (the optimum
        or the replay would be wrong).
    """
    from topoalloc.api import make_allocator
    from topoalloc.topology import parse_machine

    X, Y = mesh
    if objective not in SCHED_OBJECTIVES:
        raise InvalidArgument("objective", objective, f"one of {', '.join(SCHED_OBJECTIVES)}")
    for name, v in (("jobs", jobs), ("instances", instances)):
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise InvalidArgument(name, v, "a positive integer")
    top = parse_machine(f"mesh:{X}x{Y}")
    kinds = {}
    for h in heuristics:
        a = make_allocator(h, top, argument="heuristic")
        kinds[h] = ("contiguous" in a.claims, bool(getattr(a, "rotates", False)))
    t0 = time.perf_counter()
    rep = MeshGapReport((X, Y), jobs, objective, scheduler, seed)
    rep.ratios = {h: [] for h in heuristics}
    rep.capacity_ratios = {h: [] for h in heuristics}
    rep.contiguous = {h: kinds[h][0] for h in heuristics}
    need_rot = any(rot for _, rot in kinds.values())
    for i in range(instances):
        inst = random_mesh_instance(X, Y, jobs, seed * 1_000_003 + i)
        rep.instances += 1
        opt = optimal_mesh_schedule(inst, X, Y, objective=objective, time_limit=time_limit)
        opt_rot = optimal_mesh_schedule(inst, X, Y, objective=objective, rotate=True, time_limit=time_limit) if need_rot else opt
        cap = optimal_schedule([SchedJob(j.release, j.duration, j.w * j.l) for j in inst], X * Y, mode="flat", objective=objective, time_limit=time_limit)
        if "optimal" != opt.status or "optimal" != opt_rot.status or cap.status != "optimal":
            rep.unproven += 1
            continue
        for h in heuristics:
            starts, _ = run_online_mesh(h, inst, X, Y, scheduler=scheduler)
            val = mesh_schedule_objective(inst, starts, objective)
            contiguous, rot = kinds[h]
            ref = opt_rot if rot else opt
            if contiguous and val < (ref.objective or 0) - 1e-9:
                raise SolverError(f"gap of {h}", "invalid solution", f"a contiguous heuristic beat the proven optimum ({val} < {ref.objective})")
            rep.ratios[h].append(_ratio(val, ref.objective or 0))
            rep.capacity_ratios[h].append(_ratio(val, cap.objective or 0))
    rep.seconds = time.perf_counter() - t0
    return rep


def _ratio(online: float, opt: float) -> float:
    if opt == 0:
        return 1.0 if online == 0 else float("inf")
    return float(online / opt)
