"""Sweeps on Dask for real: a scheduler and two worker processes on localhost, killed workers, killed sweeps."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("distributed")
pytest.importorskip("pyarrow")

from topoalloc.cli import main  # noqa: E402
from topoalloc.experiments import load  # noqa: E402
from .conftest import finish  # noqa: E402

SPEC = """
name = "small"
metrics = ["utilization", "mean_wait", "mean_bounded_slowdown"]

[fixed]
synthetic = "poisson"
n_jobs = {jobs}
sizes = "uniform:1,16"
machine = "flat:32"

[grid]
scheduler = ["fcfs", "easy", "conservative"]
load = [0.4, 0.5, 0.6, 0.7]
"""


def spec_file(tmp_path: Path, jobs: int = 400) -> Path:
    p = tmp_path / "small.toml"
    p.write_text(SPEC.format(jobs=jobs))
    return p


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def results(out: Path):
    df = load(out)
    return df.drop(columns=["seconds"]).sort_values("key").reset_index(drop=True)


@pytest.fixture
def cluster(tmp_path):
    """A `dask scheduler` and two `dask worker` processes (no nanny: a killed worker stays dead)."""
    port = free_port()
    address = f"tcp://127.0.0.1:{port}"
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    log = open(tmp_path / "cluster.log", "w")
    procs = [subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1", "--port", str(port), "--no-dashboard"], stdout=log, stderr=log, env=env)]
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline or procs[0].poll() is not None:
                    pytest.fail(f"the dask scheduler did not start: {(tmp_path / 'cluster.log').read_text()[-2000:]}")
                time.sleep(0.2)
        for i in range(2):
            procs.append(subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_worker", address, "--nthreads", "1", "--no-nanny", "--no-dashboard", "--name", f"w{i}"], stdout=log, stderr=log, env=env))
        from distributed import Client

        with Client(address, timeout="30s") as c:
            c.wait_for_workers(2, timeout=60)
        yield address, procs
    finally:
        # the workers first, while the scheduler they say goodbye to still answers (a worker whose scheduler
        # is gone waits out its connect timeout before it exits), then the scheduler
        for group in (procs[1:], procs[:1]):
            for p in group:
                if p.poll() is None:
                    p.terminate()
            for p in group:
                try:
                    p.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
        log.close()


def test_sweep_cli_in_process_and_resume(tmp_path, capsys):
    spec = spec_file(tmp_path)
    out = tmp_path / "out"
    assert main(["sweep", str(spec), "--out", str(out), "--workers", "1", "--quiet"]) == 0
    err = capsys.readouterr().err
    assert "12 cells: 0 already stored, 12 run (0 failed)" in err
    assert main(["sweep", str(spec), "--out", str(out), "--workers", "1", "--quiet"]) == 0
    assert "12 cells: 12 already stored, 0 run" in capsys.readouterr().err


def test_sweep_cli_errors_are_one_line(tmp_path, capsys):
    spec = spec_file(tmp_path)
    assert main(["sweep", str(spec), "--out", str(tmp_path / "o"), "--workers", "0"]) == 2
    assert "argument --workers=0" in capsys.readouterr().err
    assert main(["sweep", str(spec), "--out", str(tmp_path / "o"), "--cluster", "lsf"]) == 2
    assert "tcp://HOST:PORT" in capsys.readouterr().err
    try:
        import dask_jobqueue  # noqa: F401
    except ImportError:
        assert main(["sweep", str(spec), "--out", str(tmp_path / "o"), "--cluster", "slurm", "--cluster-option", "cores=2"]) == 2
        assert "pip install 'topoalloc[cluster]'" in capsys.readouterr().err
    bad = tmp_path / "bad.toml"
    bad.write_text("[grid]\nshceduler = ['easy']\n")
    assert main(["sweep", str(bad), "--out", str(tmp_path / "o"), "--workers", "1"]) == 2
    assert "topoalloc: error: bad.toml, line 2: [grid] shceduler: unknown parameter" in capsys.readouterr().err


def test_local_cluster_equals_in_process(tmp_path):
    spec = spec_file(tmp_path)
    assert main(["sweep", str(spec), "--out", str(tmp_path / "a"), "--workers", "1", "--quiet"]) == 0
    assert main(["sweep", str(spec), "--out", str(tmp_path / "b"), "--workers", "2", "--quiet"]) == 0
    assert results(tmp_path / "a").equals(results(tmp_path / "b"))


def test_existing_scheduler_and_two_workers_give_the_local_results(tmp_path, cluster):
    address, _ = cluster
    spec = spec_file(tmp_path)
    assert main(["sweep", str(spec), "--out", str(tmp_path / "remote"), "--cluster", address, "--quiet"]) == 0
    assert main(["sweep", str(spec), "--out", str(tmp_path / "local"), "--workers", "1", "--quiet"]) == 0
    remote, local = results(tmp_path / "remote"), results(tmp_path / "local")
    assert len(remote) == 12 and remote.equals(local)
    workers = {v["worker"].split(":")[1] for v in __import__("topoalloc.experiments.store", fromlist=["Store"]).Store(tmp_path / "remote").timings().values()}
    assert len(workers) == 2  # both worker processes ran cells


def _stored(out: Path) -> int:
    cells = out / "cells"
    return len([p for p in cells.glob("*.parquet") if not p.name.startswith(".")]) if cells.is_dir() else 0


def _no_partial_files(out: Path) -> None:
    leftovers = [p for d in (out / "cells", out / "parts") if d.is_dir() for p in d.iterdir() if p.name.startswith(".")]
    assert not leftovers, leftovers


def test_sigkill_of_a_worker_mid_sweep(tmp_path, cluster):
    address, procs = cluster
    spec = spec_file(tmp_path, jobs=8000)
    out = tmp_path / "out"
    sweep = subprocess.Popen([sys.executable, "-m", "topoalloc", "sweep", str(spec), "--out", str(out), "--cluster", address, "--quiet"], stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while _stored(out) < 3:
        assert sweep.poll() is None, sweep.stderr.read() if sweep.stderr else ""
        assert time.monotonic() < deadline
        time.sleep(0.05)
    os.kill(procs[1].pid, signal.SIGKILL)  # a worker dies with a cell in hand
    _, err = finish(sweep, 300)
    assert sweep.returncode == 0, err
    assert procs[1].wait(timeout=10) == -signal.SIGKILL
    df = load(out)
    assert len(df) == 12 and df["key"].is_unique and set(df["status"]) == {"ok"}
    _no_partial_files(out)
    # and the same command again: nothing left to do
    again = subprocess.run([sys.executable, "-m", "topoalloc", "sweep", str(spec), "--out", str(out), "--cluster", address, "--quiet"], capture_output=True, text=True, timeout=120)
    assert again.returncode == 0 and "12 already stored, 0 run" in again.stderr
    assert results(out).equals(results(out))


def test_sigkill_of_the_sweep_then_rerun(tmp_path):
    spec = spec_file(tmp_path, jobs=8000)
    out = tmp_path / "out"
    sweep = subprocess.Popen([sys.executable, "-m", "topoalloc", "sweep", str(spec), "--out", str(out), "--workers", "1", "--quiet"], stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while _stored(out) < 4:
        assert sweep.poll() is None and time.monotonic() < deadline
        time.sleep(0.02)
    sweep.send_signal(signal.SIGKILL)
    sweep.wait(timeout=10)
    partial = load(out)
    assert 4 <= len(partial) < 12 and partial["key"].is_unique
    again = subprocess.run([sys.executable, "-m", "topoalloc", "sweep", str(spec), "--out", str(out), "--workers", "1", "--quiet"], capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr
    assert f"{len(partial)} already stored, {12 - len(partial)} run" in again.stderr
    df = load(out)
    assert len(df) == 12 and df["key"].is_unique
    _no_partial_files(out)


def test_ctrl_c_stops_cleanly_and_resumes(tmp_path):
    spec = spec_file(tmp_path, jobs=8000)
    out = tmp_path / "out"
    sweep = subprocess.Popen([sys.executable, "-m", "topoalloc", "sweep", str(spec), "--out", str(out), "--workers", "1", "--quiet"], stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while _stored(out) < 2:
        assert sweep.poll() is None and time.monotonic() < deadline
        time.sleep(0.02)
    sweep.send_signal(signal.SIGINT)
    _, err = finish(sweep, 60)
    assert sweep.returncode == 130
    assert "interrupted after" in err and "run the same command again to resume" in err and "Traceback" not in err
    _no_partial_files(out)
    assert main(["sweep", str(spec), "--out", str(out), "--workers", "1", "--quiet"]) == 0
    assert len(load(out)) == 12


def _group_gone(pgid: int, within: float) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    return False


@pytest.mark.skipif(os.name != "posix", reason="process groups are POSIX")
def test_ctrl_c_in_a_terminal_with_the_local_cluster_is_one_line(tmp_path):
    """Ctrl-C in a terminal reaches the whole foreground group: the sweep and its local Dask workers.

    The workers ignore it (the sweep closes the cluster), so the user reads one
    line, not a traceback from each worker; no process of the group outlives
    the sweep, and the same command resumes.
    """
    spec = spec_file(tmp_path, jobs=8000)
    out = tmp_path / "out"
    # a group of its own, as a shell's job: killpg reaches the sweep and every worker it started
    sweep = subprocess.Popen([sys.executable, "-m", "topoalloc", "sweep", str(spec), "--out", str(out), "--workers", "2", "--quiet"], stderr=subprocess.PIPE, text=True, start_new_session=True)
    deadline = time.monotonic() + 180
    while _stored(out) < 2:
        assert sweep.poll() is None and time.monotonic() < deadline
        time.sleep(0.02)
    t0 = time.monotonic()
    os.killpg(sweep.pid, signal.SIGINT)
    _, err = finish(sweep, 60)
    assert sweep.returncode == 130, err
    assert time.monotonic() - t0 < 30
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    assert "interrupted after" in err and "run the same command again to resume" in err
    assert _group_gone(sweep.pid, 15), "a worker of the local cluster outlived the sweep"
    _no_partial_files(out)
    assert main(["sweep", str(spec), "--out", str(out), "--workers", "1", "--quiet"]) == 0
    assert len(load(out)) == 12


@pytest.mark.skipif(os.name != "posix", reason="signals are POSIX")
def test_a_local_worker_quiets_dask_on_ctrl_c_and_on_close():
    """What a worker logs once Ctrl-C reached it, or once it closes, is the cluster's shutdown: nothing reaches the terminal.

    CI once showed a heartbeat caught in flight as the scheduler went down,
    logged at ERROR with a traceback, after the sweep's one line.
    """
    code = """
import logging, os, signal, sys
logging.basicConfig(stream=sys.stderr)
from topoalloc.experiments._dask_worker import IgnoreCtrlC
log = logging.getLogger("distributed.worker")
logging.getLogger("distributed.nanny").setLevel(logging.INFO)
log.error("before: %s", "seen")
p = IgnoreCtrlC()
p.setup(None)
os.kill(os.getpid(), signal.SIGINT)
log.error("after ctrl-c: %s", "not seen")
logging.getLogger("distributed.nanny").error("a child with a level of its own: not seen")
logging.getLogger("topoalloc").error("another library: seen")
print("alive", flush=True)
"""
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout == "alive\n", r.stderr
    assert "before: seen" in r.stderr and "another library: seen" in r.stderr
    assert "not seen" not in r.stderr and "KeyboardInterrupt" not in r.stderr
    # a worker's close quiets it too
    code2 = """
import logging, sys
logging.basicConfig(stream=sys.stderr)
from topoalloc.experiments._dask_worker import IgnoreCtrlC
IgnoreCtrlC().teardown(None)
logging.getLogger("distributed.worker").error("after close: not seen")
"""
    r = subprocess.run([sys.executable, "-c", code2], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and "not seen" not in r.stderr, r.stderr
