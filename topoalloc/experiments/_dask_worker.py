"""A plugin for the workers of the local Dask cluster (imported only when Dask is used)."""

from __future__ import annotations

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
    """

    name = "topoalloc-ignore-ctrl-c"
    idempotent = True

    def setup(self, worker: Any) -> None:
        # the worker's event loop runs in its process's main thread; signal
        # handlers can only be set there
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGINT, signal.SIG_IGN)
