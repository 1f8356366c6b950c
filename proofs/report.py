"""Run a family of proofs and summarise them as rows (what, how proved, how many cases, largest, time, verdict).

Every row names its **method**, one of :data:`METHODS`:

``symbolic``
    Z3 decides the property over *all values* of its variables — every
    point of the box, every offset of the semitorus, every n-bit address —
    not over a list of them.  The cases a row covers (shapes, sizes) may
    still be enumerated; scalar facts of a case (a piece count, a size) are
    computed exactly beside it.
``exhaustive``
    Every case is enumerated and checked exactly: integer comparisons,
    graph searches, or Z3 handed only constants (which is the same thing).
    Nothing is sampled, but nothing beyond the enumerated cases is claimed.
``model``
    A lemma about a formula written in the proof module (the definition of
    the binary-reflected Gray code, of E-cube routing), proved symbolically;
    the row also checks, exhaustively, that the code agrees with the
    formula on the cases it names.

A row whose cases were decided by different methods reports the weakest
(``exhaustive`` below ``symbolic``) and the count of each in
``method_counts``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from ..errors import InvalidArgument
from .base import ProofResult

__all__ = ["run_family", "summarise", "METHODS"]

#: the methods a proof row may name, strongest first
METHODS = ("symbolic", "exhaustive", "model")


def _method_of(r: ProofResult) -> str:
    m = r.details.get("method", "exhaustive")
    return m if m in METHODS else "exhaustive"


#: called with every row as soon as it is summarised (the command's progress display); see :func:`on_row`
_row_listeners: list[Callable[[dict], None]] = []


class on_row:
    """``with on_row(callback): run_family(...)`` calls ``callback(row)`` as each row is proved."""

    def __init__(self, callback: Callable[[dict], None]):
        self.callback = callback

    def __enter__(self) -> "on_row":
        _row_listeners.append(self.callback)
        return self

    def __exit__(self, *exc: object) -> None:
        _row_listeners.remove(self.callback)


def summarise(prop: str, results: Iterable[ProofResult], largest: Callable[[ProofResult], Any] | None = None, *, method: str | None = None) -> dict:
    """One row of the proof table.

    Parameters
    ----------
    prop : str
        What the row proves (and how the cases were chosen).
    results : iterable of ProofResult
        One per case or batch of cases; ``details["cases"]`` counts a batch
        and ``details["method"]`` says how it was decided (default
        ``exhaustive``).
    largest : callable, optional
        Key picking the result shown as the largest case (default: the last).
    method : str, optional
        Force the row's method (``"model"`` for lemmas about a formula).

    Returns
    -------
    dict
        ``property``, ``method``, ``method_counts``, ``cases``, ``largest``,
        ``seconds``, ``holds``, ``counterexample``.
    """
    results = list(results)
    failed = [r for r in results if not r.holds]
    big = max(results, key=largest) if largest and results else (results[-1] if results else None)
    counts: dict[str, int] = {}
    for r in results:
        m = _method_of(r)
        counts[m] = counts.get(m, 0) + int(r.details.get("cases", 1))
    if method is None:
        method = "symbolic" if counts and set(counts) == {"symbolic"} else ("model" if set(counts) == {"model"} else "exhaustive")
    if method not in METHODS:
        raise InvalidArgument("method", method, f"one of {', '.join(METHODS)}")
    row = {
        "property": prop,
        "method": method,
        "method_counts": counts,
        "cases": sum(int(r.details.get("cases", 1)) for r in results),
        "largest": big.size if big else "",
        "seconds": round(sum(r.seconds for r in results), 3),
        "holds": not failed,
        "counterexample": None if not failed else {"case": failed[0].size, **(failed[0].counterexample or {})},
    }
    for listener in _row_listeners:
        listener(row)
    return row


def method_label(row: dict) -> str:
    """The method column of the text table: the method, and the split when cases were decided differently."""
    counts = row.get("method_counts") or {}
    if len(counts) <= 1:
        return row["method"]
    parts = ", ".join(f"{n:,} {m}" for m, n in sorted(counts.items(), key=lambda kv: METHODS.index(kv[0])))
    return f"{row['method']} ({parts})"


def run_family(family: str, *, full: bool = False, max_dims: int = 6, max_order: int = 12, workers: int = 1) -> list[dict]:
    """Every row of one proof family (``torus``, ``hypercube`` or ``deadlock``)."""
    if family == "torus":
        from .torus import torus_rows

        return torus_rows(full=full, max_dims=max_dims, max_order=max_order, workers=workers)
    if family == "hypercube":
        from .hypercube import hypercube_rows

        return hypercube_rows(max_n=max_order)
    if family == "deadlock":
        from .deadlock import deadlock_rows

        return deadlock_rows(max_side={2: 12, 3: 6, 4: 3}, max_cube=10, mixed_side={2: 8, 3: 4, 4: 3}, max_dragonfly=(6, 3), max_fattree=(5, 5)) if full else deadlock_rows()
    raise InvalidArgument("family", family, "one of torus, hypercube, deadlock")
