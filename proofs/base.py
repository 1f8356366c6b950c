"""The proof result type and the partition proof every allocator family reuses."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import TopoallocError

__all__ = ["ProofResult", "ProofInconclusive", "prove_partition", "membership", "refuted"]


class ProofInconclusive(TopoallocError, RuntimeError):
    """Z3 answered ``unknown`` to a proof query: nothing was proved either way (the CLI prints it as an error)."""


def refuted(solver: Any) -> bool:
    """Check ``solver``, which holds the negation of a property: True when Z3 finds a counterexample (sat).

    False only on ``unsat``, the one answer that proves the property. Ctrl-C
    during a check stops the check (see :func:`_check`), and Z3 then answers
    ``unknown`` ("canceled" or "interrupted"); that answer is raised
    here as ``KeyboardInterrupt``, so an interrupted query is neither counted
    as proved nor leaves the run going. Any other ``unknown`` raises
    :class:`ProofInconclusive` with Z3's reason: a proof never passes by
    default.
    """
    import z3

    verdict = _check(solver)
    if verdict == z3.sat:
        return True
    if verdict == z3.unsat:
        return False
    reason = solver.reason_unknown()
    # Ctrl-C reads "canceled" (after a push) or "interrupted" (a fresh solver) from the interrupt below, and
    # "interrupted from keyboard" from Z3's own handler (a solver someone checks elsewhere with it on). A timeout
    # or resource limit can also read "canceled", but no proof here sets one: a proof that does must check its own
    # limits before calling this.
    if "interrupted" in reason or "canceled" in reason:
        raise KeyboardInterrupt(f"Z3: {reason}")
    raise ProofInconclusive(f"Z3 answered unknown to a proof query ({reason or 'no reason given'})")


# Z3 (seen in z3-solver 5.4.1) installs its own SIGINT handler around every
# check, under a global mutex that its handler takes too: a Ctrl-C that lands while the handler is being installed
# deadlocks the process for good (the handler waits on the mutex its own thread holds). A Ctrl-C at a random
# moment of `topoalloc prove` hung it about once in twenty tries. So the checks here run with Z3's parameter
# ``ctrl_c`` off, and Ctrl-C reaches Z3 another way: Python's own SIGINT handler writes the signal to a wakeup
# pipe at once (in C, while the main thread is still inside the check), and a watcher thread reading that pipe
# calls ``Z3_interrupt`` on the contexts being checked, which Z3 documents as safe from another thread.
_CHECKING: list[Any] = []  # the contexts of the checks in progress (one, unless a check calls back into Python)
_CHECKING_LOCK = threading.Lock()
_WATCHER: list[threading.Thread | None] = []  # the watcher once started; None once it could not be
_PIPE: list[int] = []  # the watcher's pipe (read end, write end)


def _check(solver: Any) -> Any:
    """``solver.check()`` without Z3's SIGINT handler, stopped by Ctrl-C all the same (the comment above)."""
    if not getattr(solver, "_topoalloc_no_ctrl_c", False):
        solver.set("ctrl_c", False)
        solver._topoalloc_no_ctrl_c = True
    if not _WATCHER:
        _watch_sigint()
    ctx = solver.ctx
    with _CHECKING_LOCK:
        _CHECKING.append(ctx)
    try:
        return solver.check()
    finally:
        with _CHECKING_LOCK:
            _CHECKING.remove(ctx)


def _watch_sigint() -> None:
    """Start, once, the thread that interrupts the checks in progress when SIGINT arrives.

    Only from the main thread (the one Python's signal handlers run in) and only when no one else holds the
    wakeup descriptor (an event loop's stays theirs). Where it cannot start, Ctrl-C still stops the run, once the
    check in progress ends.
    """
    if threading.current_thread() is not threading.main_thread():
        return  # tried again from the main thread's next check
    _WATCHER.append(None)
    r, w = os.pipe()
    os.set_blocking(w, False)
    try:
        previous = signal.set_wakeup_fd(w, warn_on_full_buffer=False)
    except (ValueError, OSError):
        os.close(r)
        os.close(w)
        return
    if previous != -1:
        signal.set_wakeup_fd(previous)
        os.close(r)
        os.close(w)
        return
    watcher = threading.Thread(target=_interrupt_on_sigint, args=(r,), name="topoalloc-z3-sigint", daemon=True)
    _WATCHER[:] = [watcher]
    _PIPE[:] = [r, w]
    watcher.start()


def _forget_the_watcher_in_a_child() -> None:
    """After a fork: the child has the pipe and the wakeup setting but not the thread, and its signals would reach
    the parent's watcher. Drop both; the child's first check starts its own."""
    global _CHECKING_LOCK
    if not _PIPE:
        return
    _CHECKING_LOCK = threading.Lock()  # the parent's watcher may have held it at the fork
    try:
        previous = signal.set_wakeup_fd(-1)
        if previous not in _PIPE:
            signal.set_wakeup_fd(previous)  # another's since: theirs stays
    except ValueError:  # forked from another thread: Python allows the wakeup descriptor only in the main one
        pass
    for fd in _PIPE:
        try:
            os.close(fd)
        except OSError:
            pass
    _PIPE.clear()
    _WATCHER.clear()
    _CHECKING.clear()


os.register_at_fork(after_in_child=_forget_the_watcher_in_a_child)


def _interrupt_on_sigint(fd: int) -> None:
    while True:
        try:
            got = os.read(fd, 64)
        except OSError:
            return
        if not got:
            return
        if signal.SIGINT in got:
            with _CHECKING_LOCK:
                for ctx in _CHECKING:
                    ctx.interrupt()


@dataclass(frozen=True)
class ProofResult:
    """Outcome of one proof.

    ``holds`` is True when the property was established (for the Z3
    proofs: the negation is unsat); otherwise ``counterexample`` says what
    failed in the problem's terms (Z3's model translated, or the failing
    case).  ``size`` says what was proved about (e.g. the shape);
    ``details["method"]`` how (see :data:`topoalloc.proofs.report.METHODS`).
    """

    name: str
    holds: bool
    seconds: float
    size: str = ""
    counterexample: dict[str, Any] | None = None
    details: dict[str, Any] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return self.holds

    def __str__(self) -> str:
        verdict = "holds" if self.holds else f"FAILS: {self.counterexample}"
        return f"{self.name} [{self.size}] {verdict} ({self.seconds:.3f} s)"


def membership(x, nodes: Sequence[int]):
    """Z3 formula: integer ``x`` is one of ``nodes``, written as unions of runs ``lo <= x <= hi``."""
    import z3

    arr = np.unique(np.asarray(nodes, dtype=np.int64))
    if arr.size == 0:
        return z3.BoolVal(False)
    breaks = np.flatnonzero(np.diff(arr) != 1)
    starts = np.concatenate([[0], breaks + 1])
    ends = np.concatenate([breaks, [arr.size - 1]])
    terms = [z3.And(x >= int(arr[s]), x <= int(arr[e])) if e > s else x == int(arr[s]) for s, e in zip(starts, ends)]
    return terms[0] if len(terms) == 1 else z3.Or(terms)


def prove_partition(pieces: Sequence[Sequence[int]], universe: Sequence[int], *, name: str = "partition", size: str = "") -> ProofResult:
    """Prove that ``pieces`` are pairwise disjoint and that their union is exactly ``universe``.

    Two queries, each asking Z3 for a node that breaks the property:
    a node in two pieces, or a node in the universe and no piece (or in a
    piece and not in the universe).  Unsat means the property holds.
    """
    import z3

    t0 = time.perf_counter()
    x = z3.Int("node")
    members = [membership(x, p) for p in pieces]
    in_universe = membership(x, universe)
    s = z3.Solver()
    # disjointness: some node in two different pieces (pairwise, via a piece index)
    i, j = z3.Ints("i j")
    s.push()
    s.add(i >= 0, j >= 0, i < len(pieces), j < len(pieces), i < j)
    for k, m in enumerate(members):
        s.add(z3.Implies(i == k, m))
        s.add(z3.Implies(j == k, m))
    if refuted(s):
        model = s.model()
        ce = {"property": "disjoint", "node": model[x].as_long(), "pieces": [model[i].as_long(), model[j].as_long()]}
        return ProofResult(name, False, time.perf_counter() - t0, size, ce)
    s.pop()
    covered = z3.Or(members) if members else z3.BoolVal(False)
    s.add(in_universe != covered)
    if refuted(s):
        node = s.model()[x].as_long()
        where = "in the universe but in no piece" if node in set(np.asarray(universe).tolist()) else "in a piece but outside the universe"
        return ProofResult(name, False, time.perf_counter() - t0, size, {"property": "cover", "node": node, "where": where})
    return ProofResult(name, True, time.perf_counter() - t0, size, None, {"pieces": len(pieces)})
