"""Run calls in worker processes and stop them at once on Ctrl-C or a failure.

``concurrent.futures.ProcessPoolExecutor`` used as a context manager waits,
on the way out, for every call already running -- also when the way out is a
``KeyboardInterrupt``. A user who presses Ctrl-C on a long proof then waits
for the slowest running chunk, and a tool that sends SIGINT to the parent
process alone (``timeout -s INT``, a batch system's time limit) sees the same
lag. :func:`call_in_processes` waits for results in short slices, so that
Ctrl-C is seen within a tenth of a second, and on any exception -- Ctrl-C in
the parent, or a call that raised in a worker -- cancels what has not
started, terminates the workers and re-raises without waiting for them.

The standard library's executor is kept (rather than ``multiprocessing.Pool``)
because a worker that dies is reported as ``BrokenProcessPool`` instead of
hanging the wait.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_EXCEPTION, Future, ProcessPoolExecutor, wait
from typing import Any, TypeVar

__all__ = ["call_in_processes"]

T = TypeVar("T")

#: seconds between two looks for Ctrl-C while waiting for the workers
_SLICE = 0.1
#: seconds between a worker's two looks whether its parent is still there
_ORPHAN_CHECK = 1.0


def call_in_processes(fn: Callable[..., T], calls: Sequence[tuple[Any, ...]], workers: int, *, start_method: str = "spawn") -> list[T]:
    """``[fn(*args) for args in calls]``, run in ``workers`` processes; results in the order of ``calls``.

    ``start_method`` defaults to ``"spawn"``: a forked child would inherit the
    parent's state (a Z3 context, open solvers, threads), which is not safe to
    share. ``fn`` and the arguments must therefore pickle.

    On any exception while waiting -- ``KeyboardInterrupt`` in the parent, or
    the first call to raise -- the calls not yet started are cancelled and
    the workers are terminated before the exception propagates; nothing waits
    for a running call to finish. The workers ignore SIGINT, so Ctrl-C in a
    terminal (which reaches every process of the group) is handled once, by
    the parent; and they exit within about a second if the parent is killed
    outright.
    """
    if workers < 1:
        raise ValueError(f"call_in_processes: workers must be at least 1, got {workers!r}")
    # the workers ignore SIGINT and exit if the parent dies (_worker_start)
    pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context(start_method), initializer=_worker_start, initargs=(os.getpid(),))
    # SIGINT is held back while the calls are submitted (submit starts the
    # workers): a Ctrl-C between a worker's start and the pool recording it
    # would leave that worker out of _stop_now's reach. The children start
    # with it held too, until the initializer ignores it. A held signal is
    # delivered on unblocking, inside the try below.
    hold = hasattr(signal, "pthread_sigmask") and threading.current_thread() is threading.main_thread()
    try:
        mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT}) if hold else None
        try:
            futures: list[Future[T]] = [pool.submit(fn, *args) for args in calls]
        finally:
            if mask is not None:
                signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        # wait for all or for the first failure, whichever comes first: waiting
        # on each future in turn would sit behind a long call while a later one
        # has already failed. In short slices: SIGINT sent to the process may
        # be taken by another thread (numpy's BLAS threads do not block it),
        # and then nothing wakes a wait without a timeout until a call ends;
        # Python runs the handler (KeyboardInterrupt) between two slices.
        pending = set(futures)
        while pending:
            done, pending = wait(pending, timeout=_SLICE, return_when=FIRST_EXCEPTION)
            if any(f.exception() is not None for f in done):
                break
        failed = [f for f in futures if f.done() and f.exception() is not None]
        if failed:
            raise failed[0].exception()  # type: ignore[misc]
        results = [f.result() for f in futures]
    except BaseException:
        _stop_now(pool)
        raise
    pool.shutdown(wait=True)
    return results


def _worker_start(parent: int) -> None:
    """In each worker: ignore SIGINT, and exit when the parent process is gone.

    Ctrl-C in a terminal reaches the whole group, and a worker interrupted
    while idle would print a traceback of its own; the parent handles it and
    terminates the workers. A parent killed outright (SIGKILL, the OOM killer)
    cannot: its workers would wait on the call queue for ever, since each
    holds that queue's write end itself. A daemon thread looks once a second
    whether the worker has been handed to another parent, and then exits.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(_ORPHAN_CHECK)
        os._exit(1)

    threading.Thread(target=watch, name="topoalloc-parent-watch", daemon=True).start()


def _stop_now(pool: ProcessPoolExecutor) -> None:
    """Cancel what has not started, terminate the workers, do not wait for running calls."""
    # the executor keeps its worker processes in a private dict; there is no
    # public way to terminate them (shutdown(wait=False) leaves running calls
    # running to the end)
    procs = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for p in procs:
        if p.is_alive():
            p.terminate()
    for p in procs:
        p.join(timeout=5)
        if p.is_alive():
            p.kill()
            p.join(timeout=5)
