"""Ordering files: one ``node rank`` pair per line (the format PReMAS reads).

Blank lines and ``#`` comments (whole-line or trailing) are ignored.  Ranks
may start at 0 or at 1 (Leung et al. §2.3 number ranks ``1..|P|``): a file
whose ranks are exactly ``1..n`` is read as 1-based and shifted; any other
set of ranks must be exactly ``0..n-1``.  Files are written 0-based with a
comment header naming the ordering.
"""

from __future__ import annotations

import os

import numpy as np

from ..errors import InvalidArgument, TraceFormatError
from ..outputs import atomic_write
from ..textfiles import read_text
from .base import Ordering

__all__ = ["read_ordering", "write_ordering", "format_ordering"]


def read_ordering(path: str | os.PathLike, n_nodes: int | None = None) -> Ordering:
    """Read an ordering file.

    Parameters
    ----------
    path : path
    n_nodes : int, optional
        The machine's size; if given the file must rank exactly that many nodes.

    Raises
    ------
    TraceFormatError
        Naming the file and line: a line that is not two integers, a node or
        rank out of range or given twice, ranks that are neither ``0..n-1``
        nor ``1..n``.
    """
    text = read_text(path, what="an ordering file of 'node rank' lines")
    pairs: list[tuple[int, int, int]] = []
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        fields = line.split()
        if len(fields) != 2:
            raise TraceFormatError(str(path), lineno, f"expected 2 fields 'node rank', got {len(fields)}: {raw.strip()!r}")
        try:
            node, rank = int(fields[0]), int(fields[1])
        except ValueError:
            raise TraceFormatError(str(path), lineno, f"expected two integers 'node rank', got {raw.strip()!r}") from None
        if node < 0 or rank < 0:
            raise TraceFormatError(str(path), lineno, f"negative node or rank in {raw.strip()!r}")
        pairs.append((node, rank, lineno))
    if not pairs:
        raise TraceFormatError(str(path), None, "no 'node rank' lines")
    n = len(pairs)
    if n_nodes is not None and n != n_nodes:
        raise TraceFormatError(str(path), None, f"ranks {n} nodes, but the machine has {n_nodes}")
    ranks = [r for _, r, _ in pairs]
    base = 1 if min(ranks) == 1 and max(ranks) == n else 0
    node_at_rank = np.full(n, -1, dtype=np.int64)
    seen_node: dict[int, int] = {}
    for node, rank, lineno in pairs:
        if node >= n:
            raise TraceFormatError(str(path), lineno, f"node {node} outside 0..{n - 1} (the file ranks {n} nodes)")
        if node in seen_node:
            raise TraceFormatError(str(path), lineno, f"node {node} already ranked on line {seen_node[node]}")
        seen_node[node] = lineno
        r = rank - base
        if not 0 <= r < n:
            raise TraceFormatError(str(path), lineno, f"rank {rank} outside {base}..{n - 1 + base}")
        if node_at_rank[r] >= 0:
            raise TraceFormatError(str(path), lineno, f"rank {rank} given to node {node_at_rank[r]} already")
        node_at_rank[r] = node
    return Ordering(node_at_rank, os.path.basename(os.fspath(path)))


def format_ordering(ordering: Ordering, comment: str | None = None) -> str:
    """The file text of ``ordering``: ``node rank`` lines in node order, 0-based ranks."""
    head = [f"# topoalloc ordering {ordering.name!r}: {len(ordering)} nodes, 'node rank' per line, ranks from 0"]
    if comment:
        head += [f"# {c}" for c in comment.splitlines()]
    body = [f"{node} {rank}" for node, rank in enumerate(ordering.rank_of.tolist())]
    return "\n".join(head + body) + "\n"


def write_ordering(ordering: Ordering, path: str | os.PathLike, comment: str | None = None) -> None:
    """Write ``ordering`` as ``node rank`` lines (readable by :func:`read_ordering` and PReMAS)."""
    atomic_write(path, format_ordering(ordering, comment))
