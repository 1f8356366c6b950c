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

import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

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
    """What a solve ended with: the status name, the solver (values, bound), wall seconds, and whether
    the user interrupted it (Ctrl-C): then the status is what the search had reached, not a time-out."""

    status: str
    solver: cp_model.CpSolver
    seconds: float
    interrupted: bool = False

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


class _Best(cp_model.CpSolverSolutionCallback):
    """Counts solutions and keeps the best objective, for a progress display."""

    def __init__(self, progress: Callable[[float, float | None, float], None] | None) -> None:
        super().__init__()
        self.solutions = 0
        self.objective: float | None = None
        self.progress = progress
        self.t0 = 0.0

    def on_solution_callback(self) -> None:
        self.solutions += 1
        self.objective = self.objective_value
        if self.progress is not None:
            self.progress(time.perf_counter() - self.t0, self.objective, self.best_objective_bound)


def _solve_keeping_sigint(solver: cp_model.CpSolver, model: cp_model.CpModel, best: _Best) -> Any:
    """``solver.solve`` with Python's SIGINT handler put back afterwards.

    CP-SAT installs its own SIGINT handler for the solve (to stop the search) and, when the solve ends, sets
    the disposition to the *default* — not to the handler it replaced.  Python still believes its handler is
    in place, so a Ctrl-C between two solves (an adversary's or a study's loop) killed the process with no
    message and status -2 instead of raising ``KeyboardInterrupt``.  Re-installing the saved handler
    restores the C-level disposition (only the main thread may set handlers; elsewhere nothing is changed).
    """
    in_main = threading.current_thread() is threading.main_thread()
    saved = signal.getsignal(signal.SIGINT) if in_main else None
    try:
        return solver.solve(model, best)
    finally:
        if in_main and saved is not None:
            signal.signal(signal.SIGINT, saved)


def run_solver(
    model: cp_model.CpModel,
    *,
    time_limit: float | None,
    workers: int,
    seed: int,
    what: str,
    progress: Callable[[float, float | None, float], None] | None = None,
) -> SolveOutcome:
    """Validate and solve ``model``; raise :class:`SolverError` on an invalid model.

    Ctrl-C: CP-SAT stops the search on SIGINT and returns what it has; a
    search that returns before its time limit without proving optimality
    or infeasibility can only have been stopped that way, so the outcome is
    marked ``interrupted`` (a time-out is not).  ``progress(seconds, best
    objective or None, bound)`` is called on every solution found.
    """
    check_solver_args(time_limit, workers, seed)
    problem = model.validate()
    if problem:
        raise SolverError(what, "model_invalid", problem)
    solver = cp_model.CpSolver()
    if time_limit is not None:
        solver.parameters.max_time_in_seconds = float(time_limit)
    solver.parameters.num_workers = workers
    solver.parameters.random_seed = seed
    best = _Best(progress)
    t0 = time.perf_counter()
    best.t0 = t0
    code = _solve_keeping_sigint(solver, model, best)
    seconds = time.perf_counter() - t0
    status = STATUS_NAMES.get(code)
    if status is None:  # pragma: no cover - a status CP-SAT may add later
        raise SolverError(what, str(code), "unrecognised CP-SAT status")
    if status == "model_invalid":
        raise SolverError(what, status, model.validate() or "CP-SAT reported MODEL_INVALID")
    # nothing else stops CP-SAT early: no other limit is set
    interrupted = status in ("feasible", "unknown") and (time_limit is None or seconds < float(time_limit) - 0.05)
    return SolveOutcome(status, solver, seconds, interrupted)
