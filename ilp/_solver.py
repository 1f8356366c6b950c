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


def _start_holding_sigint(worker: threading.Thread) -> None:
    """``worker.start()`` with SIGINT held back until the thread runs (POSIX; plain ``start`` elsewhere).

    ``Thread.start`` launches the thread and then waits for it to say it is running.  A Ctrl-C in that
    wait used to escape before the caller could stop the search, the process then exited while CP-SAT's
    threads still ran, and the C++ runtime aborted it ("terminate called without an active exception",
    exit -6 instead of 130).  Held back here, a pending Ctrl-C is raised when the mask is lifted: after
    ``start`` has returned, where the caller stops the search and waits for it.  The worker inherits the
    mask, so the signal always reaches the main thread.
    """
    if not hasattr(signal, "pthread_sigmask"):  # pragma: no cover - not POSIX
        worker.start()
        return
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        worker.start()
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def _solve_interruptibly(solver: cp_model.CpSolver, model: cp_model.CpModel, best: _Best) -> tuple[Any, bool]:
    """``solver.solve`` in a worker thread, the main thread waiting for it and for Ctrl-C: ``(status code, interrupted)``.

    CP-SAT's own SIGINT handling (``catch_sigint_signal``) is turned off.  It had two flaws for us: when
    a solve ended it set SIGINT to the *default* disposition, not back to Python's handler (a Ctrl-C
    between two solves killed the process silently), and a Ctrl-C that came as a short solve was
    finishing was swallowed (the solve returned ``optimal``, so nothing said it had been interrupted,
    and an adversary's loop of short solves went on).  Here Python keeps its handler; the main thread
    waits on an event with a timeout, so a KeyboardInterrupt reaches it at once, and then asks CP-SAT to
    stop (``stop_search``) and waits for the worker: ``interrupted`` is exactly "Ctrl-C arrived during
    the solve".  Further Ctrl-Cs while the search winds down are absorbed (it stops within
    milliseconds).  Outside the main thread (signals go to the main thread only) the solve runs inline.
    """
    solver.parameters.catch_sigint_signal = False
    if threading.current_thread() is not threading.main_thread():
        return solver.solve(model, best), False
    done = threading.Event()
    out: dict[str, Any] = {}

    def work() -> None:
        try:
            out["code"] = solver.solve(model, best)
        except BaseException as exc:  # pragma: no cover - re-raised in the main thread below
            out["error"] = exc
        finally:
            done.set()

    worker = threading.Thread(target=work, name="cp-sat", daemon=True)
    interrupted = False
    try:
        _start_holding_sigint(worker)
        while not done.wait(0.05):
            pass
    except KeyboardInterrupt:
        interrupted = True
        while True:
            # asked until the worker ends: ``CpSolver.stop_search`` is a no-op until ``solve`` has made its search
            solver.stop_search()
            try:
                if done.wait(0.05):
                    break
            except KeyboardInterrupt:
                continue
    if "error" in out:
        raise out["error"]
    return out["code"], interrupted


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

    Ctrl-C during the solve stops the search, which returns what it has, and
    marks the outcome ``interrupted`` (a time-out is not); see
    :func:`_solve_interruptibly`.  ``progress(seconds, best
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
    code, interrupted = _solve_interruptibly(solver, model, best)
    seconds = time.perf_counter() - t0
    status = STATUS_NAMES.get(code)
    if status is None:  # pragma: no cover - a status CP-SAT may add later
        raise SolverError(what, str(code), "unrecognised CP-SAT status")
    if status == "model_invalid":
        raise SolverError(what, status, model.validate() or "CP-SAT reported MODEL_INVALID")
    return SolveOutcome(status, solver, seconds, interrupted)
