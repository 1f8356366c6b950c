"""Run ``topoalloc`` as a user would, under limits, and report the peak memory (for tests/test_bad_input.py).

Environment: ``TOPOALLOC_PEAK_FILE`` (where to write the peak resident set size in bytes),
``TOPOALLOC_FSIZE_LIMIT`` (a file-size limit in bytes, as ``ulimit -f``), ``TOPOALLOC_HIDE_MODULES``
(comma-separated modules made unimportable, e.g. ``pyarrow``), ``TOPOALLOC_READY_FILE`` (created when
CP-SAT starts a search).  Address space is capped at 8 GiB
so a regression fails the test instead of taking the machine.
"""

import atexit
import os
import resource
import signal
import sys

resource.setrlimit(resource.RLIMIT_AS, (8 << 30, 8 << 30))
limit = os.environ.get("TOPOALLOC_FSIZE_LIMIT")
if limit:
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # writes past the limit fail with EFBIG instead of killing us
    resource.setrlimit(resource.RLIMIT_FSIZE, (int(limit), int(limit)))
for name in filter(None, os.environ.get("TOPOALLOC_HIDE_MODULES", "").split(",")):
    sys.modules[name] = None  # type: ignore[assignment]  # import raises ImportError
peak_file = os.environ.get("TOPOALLOC_PEAK_FILE")
if peak_file:
    atexit.register(lambda: open(peak_file, "w").write(str(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)))

ready_file = os.environ.get("TOPOALLOC_READY_FILE")
if ready_file:  # say when CP-SAT starts searching (a test interrupts the search, not the start-up)
    from ortools.sat.python import cp_model

    _solve = cp_model.CpSolver.solve

    def _solve_and_tell(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        open(ready_file, "w").close()
        return _solve(self, *args, **kwargs)

    cp_model.CpSolver.solve = _solve_and_tell  # type: ignore[method-assign]

from topoalloc.cli import main  # noqa: E402

sys.exit(main(sys.argv[1:]))
