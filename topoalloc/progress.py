"""Progress display for long commands: a rich progress bar on stderr, only on a terminal.

Quiet when stderr is not a terminal (pipes, files, CI logs) or when the user
asks (``--quiet``); shown only once a command has run for half a second, so
quick runs print nothing extra.
"""

from __future__ import annotations

import sys
import time
from types import TracebackType
from typing import Any

__all__ = ["Progress"]


class Progress:
    """``with Progress("simulating", enabled=not quiet) as p: p.update(done, total)``.

    ``total=None`` shows a spinner with the elapsed time and ``note`` (e.g.
    the best objective found so far) instead of a bar.
    """

    def __init__(self, label: str, *, enabled: bool = True, delay: float = 0.5):
        self.label = label
        self.enabled = enabled and sys.stderr.isatty()
        self.delay = delay
        self._bar: Any = None
        self._task: Any = None
        self._t0 = time.perf_counter()

    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    @property
    def elapsed(self) -> float:
        return time.perf_counter() - self._t0

    def __call__(self, done: float, total: float | None = None) -> None:
        self.update(done, total)

    def update(self, done: float, total: float | None = None, note: str = "") -> None:
        if not self.enabled:
            return
        if self._bar is None:
            if self.elapsed < self.delay:
                return
            from rich.progress import BarColumn, Progress as Bar, SpinnerColumn, TaskProgressColumn, TextColumn, TimeElapsedColumn, TimeRemainingColumn

            if total is None:
                cols: tuple[Any, ...] = (SpinnerColumn(), TextColumn(self.label), TimeElapsedColumn(), TextColumn("{task.fields[note]}"))
            else:
                cols = (TextColumn(self.label), BarColumn(), TaskProgressColumn(), TimeRemainingColumn(), TextColumn("{task.fields[note]}"))
            self._bar = Bar(*cols, transient=True, console=_stderr_console())
            self._bar.start()
            self._task = self._bar.add_task(self.label, total=total, note=note)
        self._bar.update(self._task, completed=done, total=total, note=note)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None


def _stderr_console() -> Any:
    from rich.console import Console

    return Console(stderr=True)
