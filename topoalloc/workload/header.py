"""The SWF header (``; Key: value`` comment lines, and the machine size they state), and the bundled trace.

Without numpy, so that the command line's lean path (:mod:`topoalloc.counts`)
reads a trace's header exactly as :func:`~topoalloc.workload.swf.read_swf` does.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["parse_header", "header_max_procs", "default_trace_path"]


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


def header_max_procs(header: dict[str, str]) -> int | None:
    """The machine size a header states (MaxProcs, else MaxNodes), if any.

    >>> header_max_procs({"MaxProcs": "128"}), header_max_procs({"MaxProcs": "-1", "MaxNodes": "64.0"}), header_max_procs({})
    (128, 64, None)
    """
    for key in ("MaxProcs", "MaxNodes"):
        value = header.get(key, "").split()
        if value:
            try:
                n = int(float(value[0]))
            except ValueError:
                continue
            if n > 0:
                return n
    return None


def default_trace_path() -> Path:
    """The bundled default trace: NASA Ames iPSC/860, 1993 (PWA, cleaned, 18,239 jobs, 128 nodes)."""
    return Path(__file__).resolve().parent.parent / "data" / "NASA-iPSC-1993-3.1-cln.swf.gz"
