"""Writing results safely: output paths checked before any work, files written atomically, strict JSON.

Every command that writes a file follows the same three rules:

* **check before working** — :func:`check_output` validates a path as soon as
  the command starts: its folder exists and is writable, it is not a folder,
  its extension is one the command writes, and the library a format needs is
  installed (Parquet needs ``pyarrow``: ``pip install 'topoalloc[parquet]'``);
* **write atomically** — :func:`atomic_output` gives the writer a temporary
  file in the same folder and renames it into place only when the writer
  finished: a failure (disk full, a file-size limit, Ctrl-C) leaves the old
  file untouched and no partial file;
* **valid JSON** — :func:`dumps_json` writes RFC 8259 JSON: no ``NaN`` or
  ``Infinity`` (they become ``null``, meaning "not defined for this run", e.g.
  a mean over no jobs), numpy scalars and arrays as plain numbers and lists.
"""

from __future__ import annotations

import json
import math
import os
import signal
import sys
import threading
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from .errors import InvalidArgument

__all__ = ["check_output", "atomic_output", "atomic_write", "dumps_json", "jsonable", "print_json"]

#: what each extension needs, beyond the standard library
_NEEDS = {".parquet": ("pyarrow", "pip install 'topoalloc[parquet]'"), ".png": ("matplotlib", "pip install 'topoalloc[plots]'")}


def check_output(path: str | os.PathLike[str] | None, argument: str, suffixes: Sequence[str] | None = None) -> Path | None:
    """Validate an output path before any work is done; return it as a Path (None passes through).

    Parameters
    ----------
    path : path or None
    argument : str
        The user's name for it (``--jobs-out``), for the message.
    suffixes : sequence of str, optional
        The extensions the command writes (``(".csv", ".parquet")``); any if None.

    Raises
    ------
    InvalidArgument
        A folder, a missing or unwritable folder, an unknown extension, or a
        format whose library is not installed.
    """
    if path is None:
        return None
    p = Path(path)
    text = os.fspath(path)
    if not text or text.endswith(os.sep):
        raise InvalidArgument(argument, text, "a file path, not a folder")
    if p.is_dir():
        raise InvalidArgument(argument, text, "a file path, not a folder")
    suffix = p.suffix.lower()
    if suffixes is not None and suffix not in suffixes:
        raise InvalidArgument(argument, text, "a file ending in " + (", ".join(suffixes[:-1]) + " or " + suffixes[-1] if len(suffixes) > 1 else suffixes[0]))
    need = _NEEDS.get(suffix)
    if need is not None:
        try:
            __import__(need[0])
        except ImportError:
            raise InvalidArgument(argument, text, f"{suffix[1:]} output, which needs {need[0]}: {need[1]}") from None
    parent = p.parent if str(p.parent) else Path(".")
    if not parent.is_dir():
        raise InvalidArgument(argument, text, f"a path in an existing folder ({os.fspath(parent)!r} does not exist)")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise InvalidArgument(argument, text, f"a path in a folder you can write to ({os.fspath(parent)!r} is not writable)")
    if p.exists() and not os.access(p, os.W_OK):
        raise InvalidArgument(argument, text, "a file you can overwrite (it is read-only)")
    return p


@contextmanager
def atomic_output(path: str | os.PathLike[str]) -> Iterator[Path]:
    """A temporary path beside ``path``; renamed onto ``path`` when the block ends without an exception.

    On any exception (``KeyboardInterrupt`` included) the temporary file is
    removed and ``path`` is left as it was.  The temporary name keeps the
    extension, so writers that go by it (matplotlib, pyarrow) write the right format.
    """
    target = Path(path)
    # Ctrl-C between creating the temporary file and entering the block that removes it would
    # leave it behind: SIGINT is held back until the removal is in place (main thread, POSIX)
    hold = hasattr(signal, "pthread_sigmask") and threading.current_thread() is threading.main_thread()
    if hold:
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=f".tmp{target.suffix}", dir=target.parent if str(target.parent) else ".")
        os.close(fd)
        tmp_path = Path(tmp)
    except BaseException:
        if hold:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
        raise
    try:
        if hold:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})  # a pending Ctrl-C is raised here, inside the cleanup
        yield tmp_path
        if target.exists():
            os.chmod(tmp_path, target.stat().st_mode & 0o777)
        else:
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(tmp_path, 0o666 & ~umask)
        os.replace(tmp_path, target)
    except BaseException:
        tmp_path.unlink(missing_ok=True)
        raise


def atomic_write(path: str | os.PathLike[str], data: str | bytes) -> None:
    """Write ``data`` (text as UTF-8) to ``path`` atomically (see :func:`atomic_output`)."""
    raw = data.encode("utf-8") if isinstance(data, str) else data
    with atomic_output(path) as tmp:
        with open(tmp, "wb") as fh:
            fh.write(raw)
            fh.flush()
            os.fsync(fh.fileno())


def jsonable(obj: Any) -> Any:
    """``obj`` with NaN and infinities as None, numpy scalars and arrays as Python numbers and lists, tuples as lists.

    >>> import numpy as np
    >>> jsonable({"a": float("nan"), "b": [1, float("inf")], "c": np.int64(3)})
    {'a': None, 'b': [1, None], 'c': 3}
    """
    np = sys.modules.get("numpy")  # (not imported: then nothing here is a numpy object)
    if isinstance(obj, dict):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [jsonable(v) for v in obj]
    if np is not None and isinstance(obj, np.ndarray):
        return [jsonable(v) for v in obj.tolist()]
    if isinstance(obj, bool) or (np is not None and isinstance(obj, np.bool_)):
        return bool(obj)
    if isinstance(obj, int) or (np is not None and isinstance(obj, np.integer)):
        return int(obj)
    if isinstance(obj, float) or (np is not None and isinstance(obj, np.floating)):
        f = float(obj)
        return f if math.isfinite(f) else None
    return obj


def dumps_json(obj: Any, *, indent: int | None = 2) -> str:
    """Strict JSON text of ``obj`` (see :func:`jsonable`); never ``NaN``."""
    return json.dumps(jsonable(obj), indent=indent, allow_nan=False)


def print_json(obj: Any, stream: IO[str] | None = None, *, indent: int | None = 2) -> None:
    """Write :func:`dumps_json` of ``obj`` and a newline to ``stream`` (stdout)."""
    out = stream or sys.stdout
    out.write(dumps_json(obj, indent=indent))
    out.write("\n")
