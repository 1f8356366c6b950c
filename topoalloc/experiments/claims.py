"""The papers' claims, checked against a results table: each a row (claim, paper, ours, holds).

``holds`` is True, False, or None when the results do not contain what the
claim needs (e.g. a quick run without the SDSC log).  ``TABLES`` gives each
paper's comparison tables (saturation points, makespans, ...) for the report.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

__all__ = ["CLAIMS", "TABLES", "claim_rows", "claim_tables"]

Rows = list[dict[str, Any]]


def _fmt(v: Any) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    return f"{v:.3f}" if isinstance(v, float) else str(v)


def _claim(claim: str, paper: str, ours: str, holds: bool | None) -> dict[str, Any]:
    return {"claim": claim, "paper": paper, "ours": ours, "holds": holds}


# ---------------------------------------------------------------- Mao, Chen & Watson

#: §4.4's saturation points: (log, machine, scheduler, allocator) -> what the paper says
MAO_PAPER = {
    ("NASA", "QCDOC", "fcfs", "ep"): "0.65",
    ("NASA", "QCDOC", "fcfs", "nep"): "0.70",
    ("NASA", "QCDOC", "fcfs", "flat"): "0.77",
    ("NASA", "QCDOC", "easy", "nep"): "> 0.90",
    ("NASA", "JLAB", "easy", "nep"): "low slowdown to 0.80",
    ("SDSC", "QCDOC", "fcfs", "ep"): "0.45 (fig. 5), 0.55 (fig. 7)",
    ("SDSC", "QCDOC", "fcfs", "nep"): "0.55 (fig. 5), ~0.60 (fig. 7)",
    ("SDSC", "QCDOC", "easy", "ep"): "~0.85 (fig. 7)",
    ("SDSC", "QCDOC", "easy", "nep"): "little saturation (fig. 7)",
    ("SDSC", "JLAB", "fcfs", "ep"): "0.45",
    ("SDSC", "JLAB", "fcfs", "nep"): "0.55",
    ("SDSC", "JLAB", "easy", "nep"): "~0.95",
}


def _log(trace: str) -> str:
    return "NASA" if "NASA" in trace else "SDSC" if "SDSC" in trace else trace


def mao_saturation(df: Any) -> Rows:
    """Per (log, machine, scheduler, allocator): the largest utilization reached and the utilization where bsld passes 10."""
    out: Rows = []
    if df.empty or "utilization" not in df:
        return out
    for (trace, system, sched, alloc), g in df.groupby(["trace", "system", "scheduler", "allocator"], sort=True):
        g = g.sort_values("work_multiple")
        knee = None
        for u, b in zip(g["utilization"], g["mean_bounded_slowdown"]):
            if b > 10:
                break
            knee = float(u)
        out.append({
            "log": _log(trace), "machine": system, "scheduler": sched, "allocator": alloc,
            "max_utilization": round(float(g["utilization"].max()), 3),
            "max_utilization_unrounded": round(float(g["utilization_unrounded"].max()), 3) if "utilization_unrounded" in g else None,
            "utilization_at_bsld_10": None if knee is None else round(knee, 3),
            "paper": MAO_PAPER.get((_log(trace), system, sched, alloc), ""),
        })
    return out


def mao_claims(df: Any) -> Rows:
    """The statements of §4.4, each checked on our saturation points (max utilization; util at bsld 10)."""
    sat = {(r["log"], r["machine"], r["scheduler"], r["allocator"]): r for r in mao_saturation(df)}

    def u(log: str, mach: str, s: str, a: str, col: str = "max_utilization") -> float | None:
        r = sat.get((log, mach, s, a))
        return None if r is None or r[col] is None else float(r[col])

    rows: Rows = []

    def order(log: str, mach: str, names: tuple[str, ...], paper: str) -> None:
        vals = [u(log, mach, "fcfs", a) for a in names]
        have = None not in vals
        ok = have and all(a < b for a, b in zip(vals, vals[1:]))  # type: ignore[operator]
        rows.append(_claim(f"{log} on {mach}, FCFS: saturation {' < '.join(n.upper() if n != 'flat' else 'flat' for n in names)}", paper,
                           ", ".join(f"{n} {_fmt(v)}" for n, v in zip(names, vals)), ok if have else None))

    def near(log: str, mach: str, s: str, a: str, target: float, paper: str, col: str = "max_utilization", tol: float = 0.05, at_least: bool = False) -> None:
        v = u(log, mach, s, a, col)
        what = "max utilization" if col == "max_utilization" else "utilization at bsld 10"
        holds = None if v is None else (v >= target - tol if at_least else abs(v - target) <= tol)
        rows.append(_claim(f"{log} on {mach}, {s.upper()}/{a.upper()}: {what} {'≥' if at_least else '≈'} {target:.2f} (±{tol:.2f})", paper, f"{what} {_fmt(v)}", holds))

    order("NASA", "QCDOC", ("ep", "nep", "flat"), "EP 0.65 < NEP 0.70 < flat 0.77")
    near("NASA", "QCDOC", "easy", "nep", 0.90, "EASY/NEP saturates above 0.90", at_least=True, tol=0.0)
    near("NASA", "JLAB", "easy", "nep", 0.80, "EASY/NEP: low slowdown up to utilization 0.80", col="utilization_at_bsld_10", at_least=True)
    order("SDSC", "QCDOC", ("ep", "nep"), "EP 0.45 < NEP 0.55 (fig. 5)")
    near("SDSC", "QCDOC", "easy", "ep", 0.85, "EASY/EP saturates near 0.85 (fig. 7)")
    order("SDSC", "JLAB", ("ep", "nep"), "EP 0.45 < NEP 0.55")
    near("SDSC", "JLAB", "easy", "nep", 0.95, "EASY/NEP saturates near 0.95")
    for log in ("NASA", "SDSC"):
        for mach in ("QCDOC", "JLAB"):
            e, f = u(log, mach, "easy", "nep"), u(log, mach, "fcfs", "nep")
            rows.append(_claim(f"{log} on {mach}: EASY raises NEP's saturation above FCFS (by > 0.01)", "backfilling improves the saturation point (§4.4)",
                               f"EASY/NEP {_fmt(e)}, FCFS/NEP {_fmt(f)}", None if e is None or f is None else e > f + 0.01))
    return rows


# ---------------------------------------------------------------- registry

CLAIMS: dict[str, Callable[[Any], Rows]] = {"mao": mao_claims}
TABLES: dict[str, Callable[[Any], list[tuple[str, Rows]]]] = {
    "mao": lambda df: [("Saturation points (§4.4): largest utilization reached, and utilization at the last c before bsld > 10", mao_saturation(df))],
}


def claim_rows(name: str | None, df: Any) -> Rows:
    """The claim checks of ``name`` on ``df`` (cells with status ok)."""
    if not name or name not in CLAIMS:
        return []
    ok = df[df["status"] == "ok"] if "status" in df else df
    return CLAIMS[name](ok)


def claim_tables(name: str | None, df: Any) -> list[tuple[str, Rows]]:
    if not name or name not in TABLES:
        return []
    ok = df[df["status"] == "ok"] if "status" in df else df
    return TABLES[name](ok)
