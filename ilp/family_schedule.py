"""Offline optimal schedules where each job takes one allowed *shape of processors*: subcubes of a hypercube, subtori of a torus.

The exact baselines of the subcube and subtorus allocator families, as
:mod:`.mesh_schedule` is for the 2-D mesh family and :mod:`.schedule` for
capacity alone.

Instance: jobs with a release, a duration and a size (integers), a machine
``hypercube:n`` or ``torus:AxBx...``.  A job of size ``s`` needs a piece of
``2^ceil(log2 s)`` processors (the subcube and subtorus allocators round up,
Turner ch. 3; Mao, Chen & Watson §2):

* on ``hypercube:n`` any subcube of that dimension (every choice of free
  address bits and every value of the others: ``C(n, k)·2^(n-k)`` pieces);
* on a torus any box of that volume whose sides are powers of two, at any
  position, wrapping round where the machine's dimension does (the pieces EP
  and NEP can hand out, and more: they start only at the offsets their
  partitions create);
* on a machine of units (``tpu:``, ``tofu:``, ``bgq:``) the slices of the
  ``slice`` allocator's static rule: whole units, ``V`` of them as its shape
  rule rounds the job (power-of-two cube counts on TPU pods, the most cubic
  box elsewhere), in a box of one of the rule's shapes at any position,
  wrapping where the machine does.  The model's processors are then the units
  (a unit is never shared), and the capacity optimum takes ``V`` whole units
  anywhere: the optimum of the optical-circuit-switch rule (``slice:rule=ocs``).

A schedule gives every job a start ``s ≥ release`` and one piece held for its
whole run; two jobs sharing a processor may not overlap in time.  Objective
``makespan`` or ``total_wait``.

Model
-----
One Boolean per (job, piece), exactly one per job; per processor, a
``NoOverlap`` over the optional intervals (start ``S_j``, the job's
duration, present iff its piece covers the processor); a cumulative cut
(demand the piece size, capacity the machine).  Meant for Q4–Q6 and tori of up
to about 64 processors, with up to about 10 jobs.  Solutions are checked
independently (pieces from the instance, processors never shared at once).

Online heuristics (:func:`family_gap_study`) run through the event-driven
simulation with FCFS (or any scheduler), jobs arriving at their releases with
their durations as exact estimates.  An allocator whose grants are always
pieces of the set above (buddy, Gray code, free list; EP, NEP) produces a
feasible schedule, so its ratio is ≥ 1 — checked, an allocator beating the
proven optimum raises.  AFL, which grants meshes of the exact size, is scored
against the optimum too but may fall below 1; every heuristic is also scored
against the capacity optimum (any free processors).
"""

from __future__ import annotations

import itertools
import random
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from ortools.sat.python import cp_model

from topoalloc.errors import InvalidArgument, RequestNeverFits, SolverError

from ._solver import check_solver_args
from .schedule import SCHED_OBJECTIVES, SchedJob, _jobs, minimise_and_solve, optimal_schedule, replay_online, schedule_objective

__all__ = ["pieces", "piece_size", "model_cells", "grants_pieces", "optimal_family_schedule", "check_family_schedule", "family_gap_study", "FamilyScheduleResult", "FamilyGapReport", "random_family_instance"]

#: the size of machine the exact model is meant for (the per-processor constraints grow with it)
MAX_PROCESSORS = 128


def _pow2_at_least(s: int) -> int:
    return 1 << max(0, (s - 1).bit_length())


def _unit_machine(machine: str) -> Any:
    from topoalloc.topology import parse_machine
    from topoalloc.topology.units import UnitTorus

    top = parse_machine(machine)
    return top if isinstance(top, UnitTorus) else None


def _static_slices(top: Any) -> Any:
    from topoalloc.alloc.slices import SliceAllocator

    return SliceAllocator(top, rule="static")


def piece_size(machine: str, size: int) -> int:
    """Processors a job of ``size`` holds on ``machine``: the next power of two, or whole units of a slice.

    >>> piece_size("hypercube:4", 5), piece_size("tpu:2x2x2,cube=2", 9)   # 9 chips: 2 cubes of 8
    (8, 16)
    """
    top = _unit_machine(machine)
    if top is None:
        return _pow2_at_least(size)
    return int(_static_slices(top).candidates(size)[0]) * top.unit_size


def model_cells(machine: str) -> tuple[int, Any]:
    """(cells of the exact model, pieces in cells for a size): processors, or the units of a machine of units."""
    top = _unit_machine(machine)
    if top is None:
        from topoalloc.topology import parse_machine

        return parse_machine(machine).n_nodes, lambda size: pieces(machine, size)
    a = _static_slices(top)

    def unit_pieces(size: int) -> list[tuple[int, ...]]:
        table = a._table(size)
        if table is None:
            raise InvalidArgument("machine", machine, "a machine of units small enough to list every slice placement")
        return sorted({tuple(sorted(int(u) for u in row)) for row in table.units.tolist()})

    return top.n_units, unit_pieces


def pieces(machine: str, size: int) -> list[tuple[int, ...]]:
    """Every piece (sorted node ids) a job of ``size`` may take on ``machine`` (see the module notes).

    >>> len(pieces("hypercube:3", 2))  # 3 choices of the free bit x 4 values of the others
    12
    >>> pieces("torus:4", 2)           # boxes of 2 on a ring of 4, one of them wrapping round
    [(0, 1), (0, 3), (1, 2), (2, 3)]
    >>> len(pieces("tpu:2x2x2,cube=2", 9))   # 2 cubes of 8 chips side by side: 4 positions x 3 axes
    12
    """
    from topoalloc.topology import Hypercube, Torus, parse_machine

    top = parse_machine(machine)
    ut = _unit_machine(machine)
    if ut is not None:  # (a machine of units is a Torus too: first)
        _, unit_pieces = model_cells(machine)
        return sorted({tuple(sorted(ut.unit_nodes[list(units)].ravel().tolist())) for units in unit_pieces(size)})
    need = _pow2_at_least(size)
    if isinstance(top, Hypercube):
        n = top.n
        k = need.bit_length() - 1
        if k > n:
            return []
        out = set()
        for free in itertools.combinations(range(n), k):
            fixed = [b for b in range(n) if b not in free]
            for value in range(1 << len(fixed)):
                base = sum(((value >> i) & 1) << b for i, b in enumerate(fixed))
                nodes = sorted(base | sum(((m >> i) & 1) << b for i, b in enumerate(free)) for m in range(1 << k))
                out.add(tuple(nodes))
        return sorted(out)
    if isinstance(top, Torus):
        dims, wrap = tuple(top.dims), tuple(top.wrap)
        sides_options = [[1 << e for e in range(0, d.bit_length()) if (1 << e) <= d] for d in dims]
        strides = np.cumprod((1,) + dims[:-1])
        out = set()
        for sides in itertools.product(*sides_options):
            if int(np.prod(sides)) != need:
                continue
            starts = [range(d) if (w and s < d) else range(d - s + 1) for d, s, w in zip(dims, sides, wrap)]
            for origin in itertools.product(*starts):
                axes = [[(o + t) % d for t in range(s)] for o, s, d in zip(origin, sides, dims)]
                nodes = sorted(int(sum(c * st for c, st in zip(coord, strides))) for coord in itertools.product(*axes))
                out.add(tuple(nodes))
        return sorted(out)
    raise InvalidArgument("machine", machine, "a hypercube:n, torus:AxB... or tpu:/tofu:/bgq: machine (the subcube, subtorus and slice families)")


@dataclass(frozen=True)
class FamilyScheduleResult:
    """A solve: status, the schedule (starts and pieces), objective and proven bound."""

    status: str
    objective_name: str
    machine: str
    starts: tuple[int, ...] | None
    placements: tuple[tuple[int, ...], ...] | None
    objective: int | None
    bound: int
    seconds: float


def check_family_schedule(jobs: Sequence[Any], machine: str, starts: Sequence[int], placements: Sequence[Sequence[int]]) -> None:
    """Raise :class:`SolverError` unless every job starts at or after its release on one of its pieces and no processor is shared at once."""
    js = _jobs(jobs)
    busy: dict[int, list[tuple[int, int, int]]] = {}
    for i, (j, s, p) in enumerate(zip(js, starts, placements)):
        if s < j.release:
            raise SolverError("family schedule", "invalid", f"job {i} starts at {s} before its release {j.release}")
        if j.duration == 0:
            continue
        if tuple(sorted(p)) not in set(pieces(machine, j.size)):
            raise SolverError("family schedule", "invalid", f"job {i} holds {tuple(p)}, not an allowed piece of {machine}")
        for v in p:
            busy.setdefault(int(v), []).append((s, s + j.duration, i))
    for v, spans in busy.items():
        spans.sort()
        for (a0, a1, ia), (b0, b1, ib) in zip(spans, spans[1:]):
            if b0 < a1:
                raise SolverError("family schedule", "invalid", f"jobs {ia} and {ib} both hold processor {v} at time {b0}")


def optimal_family_schedule(jobs: Sequence[Any], machine: str, *, objective: str = "makespan", time_limit: float | None = 60.0, workers: int = 1, seed: int = 0) -> FamilyScheduleResult:
    """The optimal offline schedule of ``jobs`` on ``machine`` with subcube / subtorus pieces (see the module notes).

    Examples
    --------
    >>> r = optimal_family_schedule([(0, 2, 4), (0, 2, 4), (0, 1, 8)], "hypercube:3")
    >>> r.status, r.objective     # two 2-cubes side by side, then the whole cube
    ('optimal', 3)
    """
    from topoalloc.topology import parse_machine

    js = _jobs(jobs)
    if objective not in SCHED_OBJECTIVES:
        raise InvalidArgument("objective", objective, f"one of {', '.join(SCHED_OBJECTIVES)}")
    check_solver_args(time_limit, workers, seed)
    n_nodes, cell_pieces = model_cells(machine)  # processors, or units on a machine of units
    if n_nodes > MAX_PROCESSORS:
        raise InvalidArgument("machine", machine, f"at most {MAX_PROCESSORS} processors (units) for the exact model (one constraint per processor and piece)")
    units = _unit_machine(machine)
    cands: dict[int, list[tuple[int, ...]]] = {}
    for i, j in enumerate(js):
        if j.size not in cands:
            cands[j.size] = cell_pieces(j.size) if j.size <= parse_machine(machine).n_nodes else []
        if not cands[j.size]:
            raise RequestNeverFits(f"jobs[{i}] asks for {j.size} processors; {machine} has no piece of {piece_size(machine, j.size) if j.size <= parse_machine(machine).n_nodes else j.size}")
    live = [i for i, j in enumerate(js) if j.duration > 0]
    horizon = max((j.release for j in js), default=0) + sum(j.duration for j in js)
    m = cp_model.CpModel()
    S: dict[int, Any] = {}
    X: dict[int, list[Any]] = {}
    per_node: dict[int, list[Any]] = {v: [] for v in range(n_nodes)}
    whole = []
    for i in live:
        j = js[i]
        S[i] = m.new_int_var(j.release, horizon - j.duration, f"s{i}")
        whole.append(m.new_fixed_size_interval_var(S[i], j.duration, f"t{i}"))
        X[i] = []
        for c, piece in enumerate(cands[j.size]):
            x = m.new_bool_var(f"x{i}_{c}")
            X[i].append(x)
            iv = m.new_optional_fixed_size_interval_var(S[i], j.duration, x, f"t{i}_{c}")
            for v in piece:
                per_node[v].append(iv)
        m.add_exactly_one(X[i])
    for ivs in per_node.values():
        if len(ivs) > 1:
            m.add_no_overlap(ivs)
    if live:
        m.add_cumulative(whole, [len(cands[js[i].size][0]) for i in live], n_nodes)
    what = f"offline piece schedule ({len(js)} jobs on {machine})"
    out, bound = minimise_and_solve(m, js, live, S, horizon, objective, what, time_limit=time_limit, workers=workers, seed=seed)
    if not out.has_solution:
        return FamilyScheduleResult(out.status, objective, machine, None, None, None, bound, out.seconds)
    val = out.solver.value
    starts = tuple(int(val(S[i])) if i in S else js[i].release for i in range(len(js)))
    placements = tuple(
        next(cands[js[i].size][c] for c, x in enumerate(X[i]) if val(x)) if i in S else cands[js[i].size][0]
        for i in range(len(js))
    )
    if units is not None:  # units -> their nodes
        placements = tuple(tuple(sorted(units.unit_nodes[list(p)].ravel().tolist())) for p in placements)
    try:
        check_family_schedule(js, machine, starts, placements)
    except SolverError as exc:
        raise SolverError(what, out.status, f"solution fails validation: {exc.detail}") from None
    value = int(schedule_objective(js, starts, objective))
    if live and (value > round(out.solver.objective_value) or (out.status == "optimal" and value != round(out.solver.objective_value))):
        raise SolverError(what, out.status, f"independent evaluation gives {value}, the model {out.solver.objective_value}")
    if out.status == "optimal":
        bound = value
    return FamilyScheduleResult(out.status, objective, machine, starts, placements, value, min(bound, value), out.seconds)


def random_family_instance(n_nodes: int, jobs: int, seed: int, *, max_run: int = 5, spread: int | None = None) -> list[SchedJob]:
    """Seeded random jobs: releases uniform in ``0..spread`` (default: the job count), durations ``1..max_run``,
    sizes ``2^u`` rounded down to a whole number with ``u`` uniform in ``[0, log2 N]`` (small jobs as often as large)."""
    rng = random.Random(seed)
    spread = jobs if spread is None else spread
    top = n_nodes.bit_length() - 1
    return [SchedJob(rng.randint(0, spread), rng.randint(1, max_run), max(1, min(n_nodes, int(2 ** rng.uniform(0, top))))) for _ in range(jobs)]


def run_online(spec: str, jobs: Sequence[Any], machine: str, *, scheduler: str = "fcfs") -> list[float]:
    """Start times of ``jobs`` run through allocator ``spec`` and ``scheduler`` on ``machine`` (instance order kept)."""
    js = _jobs(jobs)
    return replay_online(spec, js, machine, scheduler=scheduler, sizes=[j.size for j in js], locality=False)[0]


@dataclass
class FamilyGapReport:
    """Ratios online / optimum over the instances, per heuristic."""

    machine: str
    jobs: int
    objective: str
    scheduler: str
    seed: int
    instances: int = 0
    unproven: int = 0
    ratios: dict[str, list[float]] = field(default_factory=dict)
    capacity_ratios: dict[str, list[float]] = field(default_factory=dict)
    pieces_only: dict[str, bool] = field(default_factory=dict)
    seconds: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        def stats(v: list[float]) -> dict[str, Any]:
            # an instance the optimum finishes with no wait at all and the heuristic does not has no finite
            # ratio (total_wait): it is counted apart, as "infinite", and left out of the other figures
            a = np.array(v, dtype=float)
            inf = int(np.isinf(a).sum())
            a = a[np.isfinite(a)]
            if not a.size:
                return {"mean": None, "median": None, "worst": None, "best": None, "share_optimal": None, "infinite": inf}
            return {"mean": float(a.mean()), "median": float(np.median(a)), "worst": float(a.max()), "best": float(a.min()),
                    "share_optimal": float(np.mean(np.abs(a - 1.0) < 1e-12)), "infinite": inf}

        return {
            "machine": self.machine, "jobs": self.jobs, "objective": self.objective, "scheduler": self.scheduler, "seed": self.seed,
            "instances": self.instances, "unproven": self.unproven, "seconds": self.seconds,
            "heuristics": {h: {"pieces_only": self.pieces_only[h], "compared": len(self.ratios[h]),
                               "vs_piece_optimum": stats(self.ratios[h]), "vs_capacity_optimum": stats(self.capacity_ratios[h])}
                           for h in self.ratios},
        }


#: the heuristics whose grants are always pieces of :func:`pieces` (their schedules are feasible for the model)
PIECE_ALLOCATORS = ("buddy", "gray_code", "free_list", "ep", "nep")


def grants_pieces(heuristic: str) -> bool:
    """Whether ``heuristic``'s grants are always pieces of the model: the subcube and subtorus allocators,
    and ``slice`` with the static rule and its default shape rule."""
    from topoalloc import spec as grammar

    s = grammar.parse(heuristic, argument="heuristic")
    if s.name == "slice":
        return s.options.get("rule", "static") == "static" and "shapes" not in s.options
    return s.name in PIECE_ALLOCATORS


def family_gap_study(heuristics: Sequence[str], *, machine: str = "hypercube:4", jobs: int = 6, instances: int = 20, seed: int = 1,
                     objective: str = "makespan", scheduler: str = "fcfs", time_limit: float = 30.0) -> FamilyGapReport:
    """Each heuristic's ratio to the proven piece optimum and to the capacity optimum (instance ``i``: seed ``seed·1_000_003 + i``).

    Raises
    ------
    SolverError
        A heuristic whose grants are pieces beat the proven optimum (the optimum or the replay would be wrong).
    """
    from topoalloc.api import make_allocator
    from topoalloc.topology import parse_machine

    if objective not in SCHED_OBJECTIVES:
        raise InvalidArgument("objective", objective, f"one of {', '.join(SCHED_OBJECTIVES)}")
    for name, v in (("jobs", jobs), ("instances", instances)):
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise InvalidArgument(name, v, "a positive integer")
    top = parse_machine(machine)
    for h in heuristics:
        make_allocator(h, top, argument="heuristic")  # a clear error now, not after the first solve
    t0 = time.perf_counter()
    rep = FamilyGapReport(machine, jobs, objective, scheduler, seed)
    rep.ratios = {h: [] for h in heuristics}
    rep.capacity_ratios = {h: [] for h in heuristics}
    rep.pieces_only = {h: grants_pieces(h) for h in heuristics}
    # the capacity optimum: any free processors; on a machine of units, V whole units anywhere (the OCS rule's optimum)
    units = _unit_machine(machine) is not None
    for i in range(instances):
        inst = random_family_instance(top.n_nodes, jobs, seed * 1_000_003 + i)
        rep.instances += 1
        opt = optimal_family_schedule(inst, machine, objective=objective, time_limit=time_limit)
        cap = optimal_schedule([SchedJob(j.release, j.duration, piece_size(machine, j.size) if units else j.size) for j in inst], top.n_nodes,
                               mode="flat", objective=objective, time_limit=time_limit)
        if opt.status != "optimal" or cap.status != "optimal":
            rep.unproven += 1
            continue
        for h in heuristics:
            val = schedule_objective(inst, [int(s) for s in run_online(h, inst, machine, scheduler=scheduler)], objective)
            if rep.pieces_only[h] and val < (opt.objective or 0):
                raise SolverError(f"gap of {h}", "invalid solution", f"an allocator granting pieces beat the proven optimum ({val} < {opt.objective})")
            rep.ratios[h].append(_ratio(val, opt.objective or 0))
            rep.capacity_ratios[h].append(_ratio(val, cap.objective or 0))
    rep.seconds = time.perf_counter() - t0
    return rep


def _ratio(online: float, opt: float) -> float:
    if opt == 0:
        return 1.0 if online == 0 else float("inf")
    return float(online / opt)
