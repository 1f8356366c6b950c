"""The whole exception family of topoalloc.

Every error is also the natural built-in (``ValueError``, ``KeyError`` ...), so
callers that do not know topoalloc can still catch it.  Messages name the
argument or the file and line, show the offending value and say what was
expected.
"""

from __future__ import annotations

__all__ = [
    "TopoallocError",
    "InvalidArgument",
    "UnknownName",
    "TraceFormatError",
    "WorkloadError",
    "AllocationError",
    "RequestNeverFits",
    "SimulationError",
    "NetworkDeadlock",
    "SolverError",
    "ConformanceError",
    "InternalError",
]


class TopoallocError(Exception):
    """Base class of every error raised on purpose by topoalloc."""


class InvalidArgument(TopoallocError, ValueError):
    """An argument has a value outside what the function accepts."""

    def __init__(self, name: str, value: object, expected: str):
        self.name = name
        self.value = value
        self.expected = expected
        super().__init__(f"argument {name}={value!r}: expected {expected}")


class UnknownName(TopoallocError, KeyError):
    """A registry lookup for a name that is not registered."""

    def __init__(self, kind: str, name: str, known: list[str]):
        self.kind = kind
        self.name = name
        self.known = list(known)
        super().__init__(name)

    def __str__(self) -> str:  # KeyError would quote the repr only
        return f"unknown {self.kind} {self.name!r}; known: {', '.join(self.known) or '(none)'}"


class TraceFormatError(TopoallocError, ValueError):
    """A workload file cannot be parsed.  Carries the file and (1-based) line."""

    def __init__(self, path: str, line: int | None, message: str):
        self.path = str(path)
        self.line = line
        self.message = message
        where = f"line {line} of {self.path!r}" if line is not None else repr(self.path)
        super().__init__(f"{where}: {message}")


class WorkloadError(TopoallocError, ValueError):
    """A workload that parsed but cannot be simulated as asked (e.g. a job with no size)."""


class AllocationError(TopoallocError, RuntimeError):
    """Misuse of an allocator: releasing an allocation it does not hold, and so on."""


class RequestNeverFits(TopoallocError, ValueError):
    """A request that no state of the machine could ever satisfy."""


class SimulationError(TopoallocError, RuntimeError):
    """The simulation cannot proceed (e.g. a queued job that can never start)."""


class NetworkDeadlock(SimulationError):
    """The simulated network stopped: flits are in it and none moved for the configured number of cycles.

    Carries the cycle it was detected at and the cycle of waiting channels
    (each a description such as ``"3->4 (dim 0+) vc 0"``), each waiting for
    the next and the last for the first.
    """

    def __init__(self, cycle: int, idle: int, channels: list[str]):
        self.cycle = cycle
        self.idle = idle
        self.channels = list(channels)
        ring = " -> ".join(self.channels + self.channels[:1]) if self.channels else "(none found)"
        super().__init__(f"network deadlock at cycle {cycle}: nothing moved for {idle} cycles; waiting channels: {ring}")


class SolverError(TopoallocError, RuntimeError):
    """An exact solver (CP-SAT) returned a status the caller cannot turn into an answer.

    Raised for an invalid model, for ``infeasible`` where the problem always
    has a solution (a modelling bug), and when a solution fails its independent
    validation.  Carries the problem, the status and the detail.
    """

    def __init__(self, problem: str, status: str, detail: str):
        self.problem = problem
        self.status = status
        self.detail = detail
        super().__init__(f"{problem}: solver status {status}: {detail}")


class ConformanceError(TopoallocError, AssertionError):
    """An allocator (or a schedule) breaks a property of the contract (:mod:`topoalloc.testing`).

    An ``AssertionError`` so test runners report it as a failed check, but
    raised explicitly: it does not vanish under ``python -O``.  Carries the
    name of the check that failed.
    """

    def __init__(self, check: str, message: str):
        self.check = check
        super().__init__(f"{check}: {message}")


class InternalError(TopoallocError, RuntimeError):
    """An invariant of topoalloc's own code failed: a bug in topoalloc, not in the input.

    Raised explicitly where the code checks what must hold by construction
    (so the check does not vanish under ``python -O``); please report it.
    """
