"""A plugin for the workers of the local Dask cluster (imported only when Dask is used)."""

from __future__ import annotations

import logging
import signal
import threading
from typing import Any

from distributed.diagnostics.plugin import WorkerPlugin


class IgnoreCtrlC(WorkerPlugin):
    """Local workers ignore SIGINT: Ctrl-C is the sweep's to handle.

    Ctrl-C in a terminal reaches every process of the foreground group, the
    local cluster's workers too; each then printed a traceback of its own
    ``KeyboardInterrupt`` before the sweep could say what it had stored. The
    parent process cancels the cells and closes the cluster, which stops the
    workers. Registered as a plugin so that a worker the nanny restarts
    ignores it as well; only for the local cluster -- a remote or batch
    cluster's workers are not the terminal's to stop.

    Ctrl-C also quiets the worker's Dask logs, as does the worker's own close:
    what follows is the cluster shutting down, and a heartbeat caught in flight
    when the scheduler goes logged "Failed to communicate with scheduler" with
    a traceback of its own (seen once in CI on an interrupted sweep). Errors of
    the cells themselves are not logs: they come back as each cell's record.
    """

    name = "topoalloc-ignore-ctrl-c"
    idempotent = True

    def setup(self, worker: Any) -> None:
        # the worker's event loop runs in its process's main thread; signal
        # handlers can only be set there
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGINT, _quiet_on_ctrl_c)

    def teardown(self, worker: Any) -> None:
        _quiet()


def _quiet() -> None:
    """No log of Dask's in this process from now on: its root logger and any child given a level of its own."""
    names = ["distributed"] + [n for n in list(logging.root.manager.loggerDict) if n.startswith("distributed.")]
    for name in names:
        logging.getLogger(name).setLevel(logging.CRITICAL + 1)


def _quiet_on_ctrl_c(signum: int, frame: Any) -> None:
    """SIGINT in a local worker: no exception, no more logs; the sweep closes the cluster."""
    _quiet()
