from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = Path(__file__).resolve().parent / "golden"
# the real PWA traces live beside the project (see its README); tests needing them skip if absent
SHARED_TRACES = Path(os.environ.get("TOPOALLOC_TRACES", ROOT.parent / "shared" / "traces"))

settings.register_profile("default", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("ci", deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)
settings.load_profile("ci" if os.environ.get("CI") else "default")

# A test run started where SIGINT is ignored (a script's background job) passes that on to every process it
# starts, and the tests that send Ctrl-C to a command would see it ignored: the test processes take Python's
# own handler, so the commands they start begin with the default disposition, as from a terminal.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


def pytest_collection_modifyitems(session, config, items):
    """Tests marked ``long`` first (stable otherwise): with several workers (``-n auto``, work stealing)
    they start at once and the short tests fill the other workers around them."""
    items.sort(key=lambda item: item.get_closest_marker("long") is None)


def finish(proc, timeout: float):
    """``proc.communicate(timeout=timeout)``, and a process that has not ended by then is killed (its whole process
    group where it leads one: ``start_new_session``) before the timeout is raised: a failing test leaves nothing
    running behind it (``communicate`` alone leaves the child running)."""
    import subprocess

    try:
        return proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        try:
            if os.name == "posix" and os.getpgid(proc.pid) == proc.pid:
                os.killpg(proc.pid, signal.SIGKILL)
            else:
                proc.kill()
        except ProcessLookupError:
            pass
        proc.communicate()
        raise


def shared_trace(name: str) -> Path:
    path = SHARED_TRACES / name
    if not path.exists():
        pytest.skip(f"shared trace {name} not available")
    return path


def load_benchmark_script(name: str):
    """Import ``benchmarks/<name>.py`` as module ``name`` (worker processes unpickle its functions by that name)."""
    import importlib.util
    import sys

    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod
