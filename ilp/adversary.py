"""Adversaries for the allocator families: hill-climbing over job sequences for the worst ratio online / proven optimum.

:func:`~.gap.adversarial_search` does this for the one-dimensional heuristics
(span); here the same search serves the schedule baselines of the other
families:

* :func:`family_adversary` — subcube (``hypercube:n``), subtorus
  (``torus:AxB...``) and slice (``tpu:``/``tofu:``/``bgq:``) allocators against
  :func:`~.family_schedule.optimal_family_schedule`;
* :func:`mesh_adversary` — the 2-D mesh allocators against
  :func:`~.mesh_schedule.optimal_mesh_schedule` (the rotating optimum for a
  rotating allocator).

Each restart starts from a seeded random instance; each step mutates one job
(its size or sides, its release, its duration, or a fresh draw), keeps the
candidate if its optimum is proven within the time limit, and accepts it when
the ratio does not decrease, so plateaus are crossed.  An instance on which
the optimum waits 0 in total and the heuristic does not has no finite
``total_wait`` ratio and is skipped.  Deterministic for fixed arguments.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from topoalloc.errors import InvalidArgument, RequestNeverFits, SolverError

from .schedule import SCHED_OBJECTIVES, SchedJob, schedule_objective

__all__ = ["FamilyAdversary", "family_adversary", "mesh_adversary", "hill_climb"]


@dataclass
class FamilyAdversary:
    """The worst instance found for one heuristic, its ratio, and when each improvement came (step, ratio)."""

    heuristic: str
    machine: str
    jobs: int
    objective: str
    scheduler: str
    seed: int
    steps: int
    worst: float
    instance: list[tuple[int, ...]]
    history: list[tuple[int, float]] = field(default_factory=list)
    unproven: int = 0
    seconds: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        d = dict(self.__dict__)
        d["worst"] = self.worst if math.isfinite(self.worst) else None  # None: no instance with a proven optimum
        return d


def hill_climb(score: Callable[[list[Any]], float | None], starts: list[list[Any]], mutate: Callable[[random.Random, list[Any]], list[Any]],
               steps: int, seed: int) -> tuple[float, list[Any], list[tuple[int, float]], int]:
    """(best ratio, its instance, improvements, candidates whose score was None) over restarts from ``starts``."""
    rng = random.Random(seed)
    best, best_inst, history, skipped, step = -math.inf, starts[0], [], 0, 0
    for start in starts:
        cur, cur_r = start, score(start)
        if cur_r is None:
            skipped += 1
            cur_r = -math.inf
        if cur_r > best:
            best, best_inst = cur_r, cur
            history.append((step, cur_r))
        for _ in range(steps):
            step += 1
            cand = mutate(rng, cur)
            r = score(cand)
            if r is None:
                skipped += 1
                continue
            if r >= cur_r:
                cur, cur_r = cand, r
                if r > best:
                    best, best_inst = r, cand
                    history.append((step, r))
    return best, best_inst, history, skipped


def _check(objective: str, steps: int, restarts: int, jobs: int) -> None:
    if objective not in SCHED_OBJECTIVES:
        raise InvalidArgument("objective", objective, f"one of {', '.join(SCHED_OBJECTIVES)}")
    for name, v in (("steps", steps), ("restarts", restarts), ("jobs", jobs)):
        if not isinstance(v, int) or isinstance(v, bool) or v < (0 if name == "steps" else 1):
            raise InvalidArgument(name, v, "a positive integer" if name != "steps" else "an integer >= 0")


def _ratio(online: float, opt: float) -> float | None:
    if opt == 0:
        return 1.0 if online == 0 else None  # no finite ratio
    return float(online / opt)


def family_adversary(heuristic: str, machine: str, *, jobs: int = 6, objective: str = "makespan", scheduler: str = "fcfs", steps: int = 100,
                     restarts: int = 2, seed: int = 0, time_limit: float = 10.0) -> FamilyAdversary:
    """Hill-climb for the instance that maximises ``heuristic``'s objective / the proven piece optimum on ``machine``.

    Instances are jobs ``(release, duration, size)``; sizes stay in ``1 .. N``.
    A heuristic that grants pieces (:func:`~.family_schedule.grants_pieces`)
    never scores below 1 — if it did, the optimum or the replay would be wrong
    and :class:`SolverError` is raised.
    """
    from topoalloc.api import make_allocator
    from topoalloc.topology import parse_machine

    from .family_schedule import grants_pieces, optimal_family_schedule, random_family_instance, run_online

    _check(objective, steps, restarts, jobs)
    top = parse_machine(machine)
    make_allocator(heuristic, top, argument="heuristic")
    n = top.n_nodes
    pieces_only = grants_pieces(heuristic)
    horizon = 2 * jobs
    unproven = 0

    def score(inst: list[SchedJob]) -> float | None:
        nonlocal unproven
        try:
            opt = optimal_family_schedule(inst, machine, objective=objective, time_limit=time_limit)
        except RequestNeverFits:
            return None
        if opt.status != "optimal":
            unproven += 1
            return None
        val = schedule_objective(inst, [int(s) for s in run_online(heuristic, inst, machine, scheduler=scheduler)], objective)
        if pieces_only and val < (opt.objective or 0):
            raise SolverError(f"adversary of {heuristic}", "invalid solution", f"an allocator granting pieces beat the proven optimum ({val} < {opt.objective})")
        return _ratio(val, opt.objective or 0)

    def mutate(rng: random.Random, inst: list[SchedJob]) -> list[SchedJob]:
        out = list(inst)
        i = rng.randrange(len(out))
        r, d, s = out[i].release, out[i].duration, out[i].size
        op = rng.randrange(4)
        if op == 0:
            s = max(1, min(n, rng.choice((s * 2, s // 2, s + 1, s - 1))))
        elif op == 1:
            r = max(0, r + rng.choice((-2, -1, 1, 2)))
        elif op == 2:
            d = max(1, d + rng.choice((-1, 1, 2)))
        else:
            r, d, s = rng.randint(0, horizon), rng.randint(1, 5), max(1, min(n, int(2 ** rng.uniform(0, math.log2(n)))))
        out[i] = SchedJob(r, d, s)
        return out

    t0 = time.perf_counter()
    starts = [random_family_instance(n, jobs, seed * 7919 + k) for k in range(restarts)]
    best, inst, history, _ = hill_climb(score, starts, mutate, steps, seed)
    return FamilyAdversary(heuristic, machine, jobs, objective, scheduler, seed, steps * restarts, best,
                           [(j.release, j.duration, j.size) for j in inst], history, unproven, time.perf_counter() - t0)


def mesh_adversary(heuristic: str, mesh: tuple[int, int], *, jobs: int = 6, objective: str = "makespan", scheduler: str = "fcfs", steps: int = 100,
                   restarts: int = 2, seed: int = 0, time_limit: float = 10.0) -> FamilyAdversary:
    """Hill-climb for the instance that maximises a 2-D heuristic's objective / the proven contiguous optimum on ``mesh``.

    Instances are jobs ``(release, duration, w, l)`` with ``w ≤ X``, ``l ≤ Y``;
    a rotating heuristic (Adaptive Scan) is scored against the optimum that may
    rotate.  A contiguous heuristic below the proven optimum raises
    :class:`SolverError`.
    """
    from topoalloc.api import make_allocator
    from topoalloc.topology import parse_machine

    from .mesh_schedule import MeshJob, mesh_schedule_objective, optimal_mesh_schedule, random_mesh_instance, run_online_mesh

    _check(objective, steps, restarts, jobs)
    X, Y = mesh
    a = make_allocator(heuristic, parse_machine(f"mesh:{X}x{Y}"), argument="heuristic")
    contiguous, rotates = "contiguous" in a.claims, bool(getattr(a, "rotates", False))
    horizon = 2 * jobs
    unproven = 0

    def score(inst: list[MeshJob]) -> float | None:
        nonlocal unproven
        opt = optimal_mesh_schedule(inst, X, Y, objective=objective, rotate=rotates, time_limit=time_limit)
        if opt.status != "optimal":
            unproven += 1
            return None
        starts, _ = run_online_mesh(heuristic, inst, X, Y, scheduler=scheduler)
        val = mesh_schedule_objective(inst, starts, objective)
        if contiguous and val < (opt.objective or 0) - 1e-9:
            raise SolverError(f"adversary of {heuristic}", "invalid solution", f"a contiguous heuristic beat the proven optimum ({val} < {opt.objective})")
        return _ratio(val, opt.objective or 0)

    def mutate(rng: random.Random, inst: list[MeshJob]) -> list[MeshJob]:
        out = list(inst)
        i = rng.randrange(len(out))
        r, d, w, l = out[i].release, out[i].duration, out[i].w, out[i].l
        op = rng.randrange(4)
        if op == 0:
            if rng.random() < 0.5:
                w = max(1, min(X, w + rng.choice((-1, 1))))
            else:
                l = max(1, min(Y, l + rng.choice((-1, 1))))
        elif op == 1:
            r = max(0, r + rng.choice((-2, -1, 1, 2)))
        elif op == 2:
            d = max(1, d + rng.choice((-1, 1, 2)))
        else:
            r, d, w, l = rng.randint(0, horizon), rng.randint(1, 5), rng.randint(1, X), rng.randint(1, Y)
        out[i] = MeshJob(r, d, w, l)
        return out

    t0 = time.perf_counter()
    starts = [random_mesh_instance(X, Y, jobs, seed * 7919 + k) for k in range(restarts)]
    best, inst, history, _ = hill_climb(score, starts, mutate, steps, seed)
    return FamilyAdversary(heuristic, f"mesh:{X}x{Y}", jobs, objective, scheduler, seed, steps * restarts, best,
                           [(j.release, j.duration, j.w, j.l) for j in inst], history, unproven, time.perf_counter() - t0)
