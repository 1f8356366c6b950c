"""Worker processes stop at once on Ctrl-C to the parent alone, and on a failing call."""

from __future__ import annotations

import math
import multiprocessing
import os
import signal
import threading
import time

import pytest

from topoalloc._procs import call_in_processes
from .conftest import finish

#: how long each worker call would run if nothing stopped it
LONG = 60.0


def _sigint_parent_after(seconds: float) -> threading.Timer:
    # os.kill to this process only: the workers do not get the signal, as
    # under `timeout -s INT` or a batch system's time limit
    t = threading.Timer(seconds, os.kill, (os.getpid(), signal.SIGINT))
    t.daemon = True
    t.start()
    return t


def _running(pid: int | None) -> bool:
    """Asked of the OS: ``Process.is_alive()`` can stay True for a child that
    the executor's own thread reaped first."""
    if pid is None:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open(f"/proc/{pid}/status") as fh:
            return not any(line.startswith("State:") and "Z" in line.split()[1] for line in fh)
    except OSError:
        return True


def _children() -> list[int]:
    """Pids of this process's children that still run."""
    return [p.pid for p in multiprocessing.active_children() if _running(p.pid)]


def test_results_in_the_order_of_the_calls() -> None:
    calls = [(float(i),) for i in (9, 1, 4, 16, 25, 0)]
    assert call_in_processes(math.sqrt, calls, 2) == [3.0, 1.0, 2.0, 4.0, 5.0, 0.0]
    assert _children() == []


def test_workers_must_be_positive() -> None:
    with pytest.raises(ValueError, match="workers must be at least 1, got 0"):
        call_in_processes(math.sqrt, [(1.0,)], 0)


@pytest.mark.skipif(os.name != "posix", reason="SIGINT to one process is POSIX")
def test_sigint_to_the_parent_alone_stops_running_calls_at_once() -> None:
    before = set(_children())
    t0 = time.monotonic()
    timer = _sigint_parent_after(3.0)
    try:
        with pytest.raises(KeyboardInterrupt):
            # two calls running, two more queued, each a minute long
            call_in_processes(time.sleep, [(LONG,)] * 4, 2)
    finally:
        timer.cancel()
    elapsed = time.monotonic() - t0
    # the worker start (spawn) plus the 3 s wait, not the minute the calls would take
    assert elapsed < LONG / 3, f"returned {elapsed:.1f} s after the start"
    assert [p for p in _children() if p not in before] == []


def test_a_failing_call_stops_the_others_at_once() -> None:
    t0 = time.monotonic()
    with pytest.raises(ValueError, match="non-negative"):
        # a minute-long call in one worker, a failing one in the other
        call_in_processes(time.sleep, [(LONG,), (-1.0,), (LONG,)], 2)
    assert time.monotonic() - t0 < LONG / 3
    assert _children() == []



_SCRIPT = """
import sys, time
from topoalloc._procs import call_in_processes
if __name__ == "__main__":
    try:
        call_in_processes(time.sleep, [(60.0,), (0.1,), (60.0,), (0.1,)], 3)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        sys.exit(130)
"""


@pytest.mark.skipif(os.name != "posix", reason="process groups are POSIX")
def test_ctrl_c_to_the_whole_group_is_handled_once_by_the_parent(tmp_path) -> None:
    """As in a terminal: SIGINT to the parent and to every worker at once."""
    import subprocess
    import sys

    script = tmp_path / "run.py"
    script.write_text(_SCRIPT)
    proc = subprocess.Popen([sys.executable, str(script)], stderr=subprocess.PIPE, text=True, start_new_session=True)
    time.sleep(3.0)  # two workers sleep, the third finished its short calls and waits
    assert proc.poll() is None
    t0 = time.monotonic()
    os.killpg(proc.pid, signal.SIGINT)
    _, err = finish(proc, 30)
    assert time.monotonic() - t0 < 10
    assert proc.returncode == 130 and err == "interrupted\n", err
    deadline = time.monotonic() + 10
    while True:
        try:
            os.killpg(proc.pid, 0)
        except ProcessLookupError:
            break
        assert time.monotonic() < deadline, "a worker outlived the parent"
        time.sleep(0.05)


@pytest.mark.skipif(not hasattr(signal, "pthread_kill"), reason="needs pthread_kill")
def test_sigint_taken_by_another_thread_still_stops_the_wait() -> None:
    """The kernel may hand a process's SIGINT to any thread that does not block it (numpy's BLAS threads,
    say). Python then runs the handler in the main thread only when it next runs bytecode: a wait with no
    timeout would sit until a call ends. Here the signal goes to an idle helper thread on purpose."""
    idle = threading.Event()
    helper = threading.Thread(target=idle.wait, args=(LONG,), daemon=True)
    helper.start()
    assert helper.ident is not None
    timer = threading.Timer(3.0, signal.pthread_kill, (helper.ident, signal.SIGINT))
    timer.daemon = True
    timer.start()
    t0 = time.monotonic()
    try:
        with pytest.raises(KeyboardInterrupt):
            call_in_processes(time.sleep, [(LONG,)] * 2, 2)
    finally:
        timer.cancel()
        idle.set()
    assert time.monotonic() - t0 < LONG / 3, f"returned {time.monotonic() - t0:.1f} s after the start"
    assert _children() == []


_ORPHAN_SCRIPT = """
import multiprocessing, sys, threading, time
from topoalloc._procs import call_in_processes

def report():
    time.sleep(2.0)
    print(" ".join(str(p.pid) for p in multiprocessing.active_children()), flush=True)

if __name__ == "__main__":
    threading.Thread(target=report, daemon=True).start()
    call_in_processes(time.sleep, [(60.0,), (0.1,), (60.0,)], 2)
"""


@pytest.mark.skipif(os.name != "posix", reason="SIGKILL and parent ids are POSIX")
def test_workers_exit_when_the_parent_is_killed_outright(tmp_path) -> None:
    """SIGKILL (or the OOM killer) gives the parent no chance to stop its workers: they stop themselves."""
    import subprocess
    import sys

    script = tmp_path / "orphans.py"
    script.write_text(_ORPHAN_SCRIPT)
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    pids = [int(p) for p in proc.stdout.readline().split()]
    assert len(pids) == 2, pids  # one worker sleeping a minute, one idle after its short call
    proc.kill()
    proc.wait(timeout=10)
    deadline = time.monotonic() + 10
    while any(_running(p) for p in pids):
        assert time.monotonic() < deadline, [p for p in pids if _running(p)]
        time.sleep(0.1)
