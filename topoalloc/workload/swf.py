"""Reader and writer for the Parallel Workloads Archive's Standard Workload Format.

Reference: D. Feitelson et al., "Experience with using the Parallel Workloads
Archive", JPDC 74(10), 2014, and the archive's SWF definition: 18
whitespace-separated numeric fields per job, ``;`` header comments of the form
``; Key: value``, ``-1`` for a missing value.
"""

from __future__ import annotations

import gzip
import io
import os
import zlib
from pathlib import Path

import numpy as np

from ..errors import TraceFormatError
from .core import F, SWF_FIELDS, Workload

__all__ = ["read_swf", "write_swf", "parse_header", "default_trace_path", "job_sizes"]

_GZIP_MAGIC = b"\x1f\x8b"


def default_trace_path() -> Path:
    """The bundled default trace: NASA Ames iPSC/860, 1993 (PWA, cleaned, 18,239 jobs, 128 nodes)."""
    return Path(__file__).resolve().parent.parent / "data" / "NASA-iPSC-1993-3.1-cln.swf.gz"


def _read_bytes(path: Path) -> bytes:
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except FileNotFoundError:
        raise TraceFormatError(str(path), None, "no such file") from None
    except IsADirectoryError:
        raise TraceFormatError(str(path), None, "is a directory, expected an SWF file") from None
    except OSError as exc:
        raise TraceFormatError(str(path), None, f"cannot be read: {exc.strerror or exc}") from None
    if data[:2] == _GZIP_MAGIC:
        try:
            data = gzip.decompress(data)
        except (EOFError, OSError, zlib.error) as exc:
            # find how far the stream is readable, so the message can say where it broke
            good = _readable_prefix(data)
            line = good.count(b"\n") + 1
            raise TraceFormatError(
                str(path), line, f"gzip stream is truncated or corrupt ({exc}); {len(good)} bytes of text could be read"
            ) from None
    return data


def _readable_prefix(data: bytes) -> bytes:
    """The text a truncated or corrupt gzip stream still yields (its first member)."""
    d = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        return d.decompress(data)
    except zlib.error:
        return b""


def parse_header(lines: list[str]) -> dict[str, str]:
    """``; Key: value`` comment lines to a dict; repeated keys and continuation lines are joined by newlines.

    >>> parse_header(["; MaxProcs: 128", "; Note: a", ";       b"])
    {'MaxProcs': '128', 'Note': 'a\\nb'}
    """
    header: dict[str, str] = {}
    last: str | None = None
    for raw in lines:
        text = raw.lstrip().lstrip(";").rstrip()
        stripped = text.strip()
        if not stripped:
            last = None
            continue
        indent = len(text) - len(text.lstrip())
        key, sep, value = stripped.partition(":")
        # "; Key: value" has at most one space after ';' and a one-word key;
        # deeper-indented lines continue the previous entry.
        if sep and indent <= 1 and key and not any(c.isspace() for c in key):
            header[key] = f"{header[key]}\n{value.strip()}" if key in header else value.strip()
            last = key
        elif last is not None:
            header[last] = f"{header[last]}\n{stripped}"
    return header


def read_swf(path: str | os.PathLike) -> Workload:
    """Read an SWF file (plain or gzip, detected by content) into a :class:`Workload`.

    Size is the requested number of processors, else the allocated number;
    ``-1`` is kept as missing in every column.  No job is dropped or changed:
    cleaning is :mod:`topoalloc.workload.clean`'s job.

    Raises
    ------
    TraceFormatError
        Naming the file and line: a missing or unreadable file, a truncated
        gzip stream, an empty or header-only file, a line without 18 fields,
        a non-numeric field.
    """
    path = Path(path)
    data = _read_bytes(path)
    try:
        text = data.decode("ascii")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise TraceFormatError(str(path), line, f"non-ASCII byte {data[exc.start]:#04x}; is this an SWF text file?") from None
    return _parse(text, str(path))


def _parse(text: str, name: str) -> Workload:
    if not text.strip():
        raise TraceFormatError(name, 1, "file is empty: expected SWF header comments and job lines")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    # header = the leading run of comment/blank lines
    h = 0
    while h < len(lines) and (not lines[h].strip() or lines[h].lstrip().startswith(";")):
        h += 1
    header = parse_header([ln for ln in lines[:h] if ln.lstrip().startswith(";")])
    body = lines[h:]
    if not body:
        raise TraceFormatError(name, h + 1, f"header only: expected a job line after the {h} comment lines, found the end of the file")
    simple = all(ln.strip() and not ln.lstrip().startswith(";") for ln in body)
    if simple:
        try:
            table = np.loadtxt(body, dtype=np.float64, ndmin=2)
        except ValueError:
            table = None  # the careful pass below finds and names the bad line
        if table is not None and table.shape[1] == 18 and np.isfinite(table).all():
            line_no = np.arange(h + 1, h + 1 + len(body), dtype=np.int64)
            return _to_workload(table, line_no, header, name)
    table, line_no = _parse_careful(lines, h, name)
    return _to_workload(table, line_no, header, name)


def _parse_careful(lines: list[str], start: int, name: str) -> tuple[np.ndarray, np.ndarray]:
    rows: list[list[float]] = []
    numbers: list[int] = []
    for i in range(start, len(lines)):
        ln = lines[i]
        s = ln.strip()
        if not s or s.startswith(";"):
            continue
        parts = s.split()
        if len(parts) != 18:
            raise TraceFormatError(name, i + 1, f"expected 18 fields, got {len(parts)}")
        row = []
        for k, tok in enumerate(parts):
            try:
                v = float(tok)
            except ValueError:
                raise TraceFormatError(
                    name, i + 1, f"field {k + 1} ({SWF_FIELDS[k]}) is {tok!r}, expected a number"
                ) from None
            if v != v or v in (float("inf"), float("-inf")):
                raise TraceFormatError(name, i + 1, f"field {k + 1} ({SWF_FIELDS[k]}) is {tok!r}, expected a finite number")
            row.append(v)
        rows.append(row)
        numbers.append(i + 1)
    if not rows:
        raise TraceFormatError(name, len(lines) + 1, "no job lines, only comments")
    return np.array(rows, dtype=np.float64), np.array(numbers, dtype=np.int64)


def job_sizes(table: np.ndarray) -> np.ndarray:
    """SWF size rule: requested processors if present (> 0), else allocated processors (may be -1)."""
    req = table[:, F["requested_procs"]]
    alloc = table[:, F["allocated_procs"]]
    size = np.where(req > 0, req, alloc)
    return np.where(size > 0, size, -1).astype(np.int64)


def _to_workload(table: np.ndarray, line_no: np.ndarray, header: dict[str, str], name: str) -> Workload:
    return Workload(
        job_id=table[:, F["job_id"]].astype(np.int64),
        submit=table[:, F["submit_time"]],
        run=table[:, F["run_time"]],
        size=job_sizes(table),
        requested_time=table[:, F["requested_time"]],
        line=line_no,
        swf=table,
        header=header,
        source=name,
    )


def _fmt(v: float) -> str:
    return str(int(v)) if float(v).is_integer() else repr(float(v))


def write_swf(workload: Workload, path: str | os.PathLike, *, header: dict[str, str] | None = None) -> None:
    """Write ``workload`` as SWF (gzip if ``path`` ends in ``.gz``).

    The header is the workload's (or ``header``), one ``; Key: value`` line per
    entry; every job is one line of 18 fields; integral values are written
    without a decimal point, so ``read_swf(write_swf(w))`` gives ``w`` back.
    """
    path = Path(path)
    hdr = workload.header if header is None else header
    out = io.StringIO()
    if "Version" not in hdr:
        out.write("; Version: 2.2\n")
    for key, value in hdr.items():
        first, *rest = str(value).split("\n")
        out.write(f"; {key}: {first}\n")
        for more in rest:
            out.write(f";       {more}\n")
    raw = workload.to_swf_array()
    for row in raw:
        out.write(" ".join(_fmt(v) for v in row))
        out.write("\n")
    data = out.getvalue().encode("ascii")
    if path.suffix == ".gz":
        data = gzip.compress(data, mtime=0)  # mtime=0: byte-identical output for identical input
    path.write_bytes(data)
