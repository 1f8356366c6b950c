"""Shared CP-SAT plumbing: parameters, status names and the status contract.

Every CP-SAT status maps to one of five names and is *handled*, never passed
over in silence:

``optimal``
    a solution proven optimal (objective == bound);
``feasible``
    a solution, with a proven bound that may be below it (the gap is reported);
``unknown``
    the time limit passed before any solution: no ordering, only the bound;
``infeasible``
    the model has no solution — for the problems here that is either the
    user's instance (a job that can never fit) or a modelling bug, and the
    caller raises :class:`~topoalloc.errors.SolverError` or reports it;
``model_invalid``
    CP-SAT rejected the model: always :class:`~topoalloc.errors.SolverError`,
    with CP-SAT's own validation message.

Determinism: CP-SAT is run with a fixed ``random_seed``.  With ``workers=1``
a run that finishes before its time limit is reproducible to the byte; with
several workers the portfolio's interleaving depends on timing, so only the
*proven optimal objective* is reproducible (equal-cost optima may differ).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from ortools.sat.python import cp_model

from topoalloc.errors import InvalidArgument, SolverError

__all__ = ["STATUS_NAMES", "SolveOutcome", "run_solver", "check_solver_args"]

STATUS_NAMES = {
    cp_model.OPTIMAL: "optimal",
    cp_model.FEASIBLE: "feasible",
    cp_model.INFEASIBLE: "infeasible",
    cp_model.UNKNOWN: "unknown",
    cp_model.MODEL_INVALID: "model_invalid",
}


@dataclass
class SolveOutcome:
    status: str
    solver: cp_model.CpSolver
    seconds: float

    @property
    def has_solution(self) -> bool:
        return self.status in ("optimal", "feasible")


def check_solver_args(time_limit: float | None, workers: int, seed: int) -> None:
    if time_limit is not None and not (isinstance(time_limit, (int, float)) and time_limit > 0):
        raise InvalidArgument("time_limit", time_limit, "a positive number of seconds or None")
    if not isinstance(workers, int) or isinstance(workers, bool) or workers < 1:
        raise InvalidArgument("workers", workers, "a positive integer number of CP-SAT workers")
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        raise InvalidArgument("seed", seed, "a non-negative integer")


def run_solver(model: cp_model.CpModel, *, time_limit: float | None, workers: int, seed: int, what: str) -> SolveOutcome:
    """Validate and solve ``model``; raise :class:`SolverError` on an invalid model."""
    check_solver_args(time_limit, workers, seed)
    problem = model.validate()
    if problem:
        raise SolverError(what, "model_invalid", problem)
    solver = cp_model.CpSolver()
    if time_limit is not None:
        solver.parameters.max_time_in_seconds = float(time_limit)
    solver.parameters.num_workers = workers
    solver.parameters.random_seed = seed
    t0 = time.perf_counter()
    code = solver.solve(model)
    seconds = time.perf_counter() - t0
    status = STATUS_NAMES.get(code)
    if status is None:  # pragma: no cover - a status CP-SAT may add later
        raise SolverError(what, str(code), "unrecognised CP-SAT status")
    if status == "model_invalid":
        raise SolverError(what, status, model.validate() or "CP-SAT reported MODEL_INVALID")
    return SolveOutcome(status, solver, seconds)
