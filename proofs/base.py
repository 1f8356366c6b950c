"""The proof result type and the partition proof every allocator family reuses."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import TopoallocError

__all__ = ["ProofResult", "ProofInconclusive", "prove_partition", "membership", "refuted"]


class ProofInconclusive(TopoallocError, RuntimeError):
    """Z3 answered ``unknown`` to a proof query: nothing was proved either way (the CLI prints it as an error)."""


def refuted(solver: Any) -> bool:
    """Check ``solver``, which holds the negation of a property: True when Z3 finds a counterexample (sat).

    False only on ``unsat``, the one answer that proves the property. Z3
    catches Ctrl-C during a check itself and answers ``unknown`` ("interrupted
    from keyboard", or "canceled" in an incremental solver) instead of letting
    Python see it; that answer is raised
    here as ``KeyboardInterrupt``, so an interrupted query is neither counted
    as proved nor leaves the run going. Any other ``unknown`` raises
    :class:`ProofInconclusive` with Z3's reason: a proof never passes by
    default.
    """
    import z3

    verdict = solver.check()
    if verdict == z3.sat:
        return True
    if verdict == z3.unsat:
        return False
    reason = solver.reason_unknown()
    # Ctrl-C reads "interrupted from keyboard" from a fresh solver and "canceled" from an incremental one
    # (after a push). A timeout or resource limit can also read "canceled", but no proof here sets one:
    # a proof that does must check its own limits before calling this.
    if "interrupted" in reason or "canceled" in reason:
        raise KeyboardInterrupt(f"Z3: {reason}")
    raise ProofInconclusive(f"Z3 answered unknown to a proof query ({reason or 'no reason given'})")


@dataclass(frozen=True)
class ProofResult:
    """Outcome of one proof.

    ``holds`` is True when the property was established (for the Z3
    proofs: the negation is unsat); otherwise ``counterexample`` says what
    failed in the problem's terms (Z3's model translated, or the failing
    case).  ``size`` says what was proved about (e.g. the shape);
    ``details["method"]`` how (see :data:`topoalloc.proofs.report.METHODS`).
    """

    name: str
    holds: bool
    seconds: float
    size: str = ""
    counterexample: dict[str, Any] | None = None
    details: dict[str, Any] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return self.holds

    def __str__(self) -> str:
        verdict = "holds" if self.holds else f"FAILS: {self.counterexample}"
        return f"{self.name} [{self.size}] {verdict} ({self.seconds:.3f} s)"


def membership(x, nodes: Sequence[int]):
    """Z3 formula: integer ``x`` is one of ``nodes``, written as unions of runs ``lo <= x <= hi``."""
    import z3

    arr = np.unique(np.asarray(nodes, dtype=np.int64))
    if arr.size == 0:
        return z3.BoolVal(False)
    breaks = np.flatnonzero(np.diff(arr) != 1)
    starts = np.concatenate([[0], breaks + 1])
    ends = np.concatenate([breaks, [arr.size - 1]])
    terms = [z3.And(x >= int(arr[s]), x <= int(arr[e])) if e > s else x == int(arr[s]) for s, e in zip(starts, ends)]
    return terms[0] if len(terms) == 1 else z3.Or(terms)


def prove_partition(pieces: Sequence[Sequence[int]], universe: Sequence[int], *, name: str = "partition", size: str = "") -> ProofResult:
    """Prove that ``pieces`` are pairwise disjoint and that their union is exactly ``universe``.

    Two queries, each asking Z3 for a node that breaks the property:
    a node in two pieces, or a node in the universe and no piece (or in a
    piece and not in the universe).  Unsat means the property holds.
    """
    import z3

    t0 = time.perf_counter()
    x = z3.Int("node")
    members = [membership(x, p) for p in pieces]
    in_universe = membership(x, universe)
    s = z3.Solver()
    # disjointness: some node in two different pieces (pairwise, via a piece index)
    i, j = z3.Ints("i j")
    s.push()
    s.add(i >= 0, j >= 0, i < len(pieces), j < len(pieces), i < j)
    for k, m in enumerate(members):
        s.add(z3.Implies(i == k, m))
        s.add(z3.Implies(j == k, m))
    if refuted(s):
        model = s.model()
        ce = {"property": "disjoint", "node": model[x].as_long(), "pieces": [model[i].as_long(), model[j].as_long()]}
        return ProofResult(name, False, time.perf_counter() - t0, size, ce)
    s.pop()
    covered = z3.Or(members) if members else z3.BoolVal(False)
    s.add(in_universe != covered)
    if refuted(s):
        node = s.model()[x].as_long()
        where = "in the universe but in no piece" if node in set(np.asarray(universe).tolist()) else "in a piece but outside the universe"
        return ProofResult(name, False, time.perf_counter() - t0, size, {"property": "cover", "node": node, "where": where})
    return ProofResult(name, True, time.perf_counter() - t0, size, None, {"pieces": len(pieces)})
