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
from pathlib import Path

import numpy as np

from ..errors import TraceFormatError
from ..outputs import atomic_write
from ..textfiles import decode_text, read_bytes
from .core import F, SWF_FIELDS, Workload
from .header import default_trace_path, parse_header

__all__ = ["read_swf", "write_swf", "parse_header", "default_trace_path", "job_sizes"]

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

    Notes
    -----
    A plain file (ASCII, space-separated numbers, the comments all in the
    header) is parsed from its bytes by a compiled tokenizer when one was
    built at install time: no text, line list or intermediate table is made.
    It gives the same table as the pure-Python reader (numbers converted the
    same way) and hands anything else to it, which reads it or names the
    line that is wrong.
    """
    path = Path(path)
    data = read_bytes(path, encoding="ascii", what="an SWF file")
    fast = _parse_compiled(data, str(path))
    if fast is not None:
        return fast
    text = decode_text(data, path, encoding="ascii", what="an SWF file")
    del data
    return _parse(text, str(path))


def _parse_compiled(data: bytes, name: str) -> Workload | None:
    """The plain case, parsed by the compiled tokenizer (``_cswf``), or None (not built, or not plain)."""
    try:
        from . import _cswf
    except ImportError:
        return None
    got = _cswf.parse(data)
    if got is None:
        return None
    hbytes, h, rows, buf = got
    table = np.frombuffer(buf, dtype=np.float64).reshape(rows, 18)
    head = data[:hbytes].decode("ascii").split("\n")[:h]
    header = parse_header([ln for ln in head if ln.lstrip().startswith(";")])
    line_no = np.arange(h + 1, h + 1 + rows, dtype=np.int64)
    return _to_workload(table, line_no, header, name)


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
            table = np.loadtxt(body, dtype=np.float64, ndmin=2, comments=None)  # (SWF comments are ";" lines: a "#" is a bad line)
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


#: fields read as integers: they must be whole numbers that a float64 holds exactly
_INTEGER_FIELDS = ("job_id", "allocated_procs", "requested_procs")
_EXACT = 2.0**53


def check_values(table: np.ndarray, line_no: np.ndarray, name: str) -> list[str]:
    """Check the values of an SWF table; raise on what cannot be simulated, return warnings for the rest.

    Errors (:class:`TraceFormatError` naming file, line, field and value):
    a job id or processor count that is not a whole number or too large to
    be held exactly (beyond 2**53), and a job whose submit time is so large
    that adding its run time (or requested time) to it loses that time.
    Warnings (reported, the jobs kept): negative submit times, repeated job
    ids, submit times going backwards (the jobs are then taken in submit order).
    """
    for field in _INTEGER_FIELDS:
        col = table[:, F[field]]
        bad = np.flatnonzero((col != np.round(col)) | (np.abs(col) >= _EXACT))
        if bad.size:
            i = int(bad[0])
            what = "too large to hold exactly (beyond 2**53)" if col[i] == np.round(col[i]) else "not a whole number"
            raise TraceFormatError(name, int(line_no[i]), f"field {F[field] + 1} ({field}) is {_show(col[i])}: {what}")
    submit = table[:, F["submit_time"]]
    for field in ("run_time", "requested_time", "wait_time"):
        t = table[:, F[field]]
        pos = t > 0
        with np.errstate(over="ignore", invalid="ignore"):
            lost = pos & (((submit + t) - submit) != t) & (np.abs((submit + t) - submit - t) > 1e-6 * np.maximum(1.0, t))
        bad = np.flatnonzero(lost)
        if bad.size:
            i = int(bad[0])
            raise TraceFormatError(name, int(line_no[i]), f"field 2 (submit_time) is {_show(submit[i])}: so large that adding field {F[field] + 1} ({field}) = {_show(t[i])} loses it")
    warnings = []
    neg = np.flatnonzero(submit < 0)
    if neg.size:
        warnings.append(f"{_jobs(neg.size)} a negative submit time (first: line {int(line_no[neg[0]])}, {_show(submit[neg[0]])}); kept")
    ids = table[:, F["job_id"]]
    uniq, first, counts = np.unique(ids, return_index=True, return_counts=True)
    if (counts > 1).any():
        dup = uniq[counts > 1]
        where = np.flatnonzero(ids == dup[0])
        k = int((counts[counts > 1] - 1).sum())
        warnings.append(f"{k} job{'s repeat' if k != 1 else ' repeats'} a job id (first: id {int(dup[0])} on lines {int(line_no[where[0]])} and {int(line_no[where[1]])}); kept as separate jobs")
    back = np.flatnonzero(np.diff(submit) < 0)
    if back.size:
        i = int(back[0]) + 1
        warnings.append(f"submit times go backwards {back.size} time{'s' if back.size != 1 else ''} (first: line {int(line_no[i])}, {_show(submit[i])} after {_show(submit[i - 1])}); jobs are taken in submit order")
    return warnings


def _jobs(n: int) -> str:
    return f"{n} job{'s have' if n != 1 else ' has'}"


def _show(v: float) -> str:
    return str(int(v)) if float(v).is_integer() and abs(v) < _EXACT else repr(float(v))


def _to_workload(table: np.ndarray, line_no: np.ndarray, header: dict[str, str], name: str) -> Workload:
    warnings = check_values(table, line_no, name)
    # every array is new and this reader's own: the workload takes them without a copy
    return Workload._adopting(
        frozenset({"job_id", "submit", "run", "size", "requested_time", "line", "swf"}),
        job_id=table[:, F["job_id"]].astype(np.int64),
        submit=np.ascontiguousarray(table[:, F["submit_time"]]),
        run=np.ascontiguousarray(table[:, F["run_time"]]),
        size=job_sizes(table),
        requested_time=np.ascontiguousarray(table[:, F["requested_time"]]),
        line=line_no,
        swf=table,
        header=header,
        source=name,
        warnings=warnings,
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
    atomic_write(path, data)
