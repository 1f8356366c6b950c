"""Run a family of proofs and summarise them as rows (what, how many cases, largest, time, verdict)."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from .base import ProofResult

__all__ = ["run_family", "summarise"]


def summarise(prop: str, results: Iterable[ProofResult], largest: Callable[[ProofResult], int] | None = None) -> dict:
    results = list(results)
    failed = [r for r in results if not r.holds]
    big = max(results, key=largest) if largest and results else (results[-1] if results else None)
    return {
        "property": prop,
        "cases": sum(int(r.details.get("cases", 1)) for r in results),
        "largest": big.size if big else "",
        "seconds": round(sum(r.seconds for r in results), 3),
        "holds": not failed,
        "counterexample": None if not failed else {"case": failed[0].size, **(failed[0].counterexample or {})},
    }


def run_family(family: str, *, full: bool = False, max_dims: int = 6, max_order: int = 12, workers: int = 1) -> list[dict]:
    if family == "torus":
        from .torus import torus_rows

        return torus_rows(full=full, max_dims=max_dims, max_order=max_order, workers=workers)
    if family == "hypercube":
        from .hypercube import hypercube_rows

        return hypercube_rows(max_n=max_order)
    if family == "deadlock":
        from .deadlock import deadlock_rows

        return deadlock_rows(max_side={2: 12, 3: 6, 4: 3}, max_cube=10) if full else deadlock_rows()
    raise ValueError(f"unknown proof family {family!r}")
