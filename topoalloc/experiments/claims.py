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


# ---------------------------------------------------------------- Turner (1997)

_AS = (0.1, 0.3, 0.5, 0.7, 0.9)


def _turner_points(df: Any) -> dict[tuple[str, str], list[dict[str, float]]]:
    """(workload, allocator) -> [{load, jtt, utilization}] means over replications, by load."""
    out: dict[tuple[str, str], list[dict[str, float]]] = {}
    if df.empty or "load" not in df or "workload" not in df:
        return out
    syn = df[df["load"].notna()]
    for (w, a, load), g in syn.groupby(["workload", "allocator", "load"], sort=True):
        out.setdefault((w, a), []).append({"load": float(load), "jtt": float(g["mean_response"].mean()), "utilization": float(g["utilization"].mean())})
    return out


def _knee(points: list[dict[str, float]], base: float = 4.0, factor: float = 2.0) -> float | None:
    ok = [p["load"] for p in points if p["jtt"] <= factor * base]
    return max(ok) if ok else None


def _maxu(points: list[dict[str, float]]) -> float:
    return max(p["utilization"] for p in points)


def _jtt_at(points: list[dict[str, float]], load: float = 1.0) -> float:
    return next((p["jtt"] for p in points if p["load"] == load), math.nan)


def turner_table(df: Any) -> Rows:
    by = _turner_points(df)
    rows: Rows = []
    for w in sorted({w for w, _ in by}):
        fl, afl = by.get((w, "free_list")), by.get((w, "afl"))
        if not fl or not afl:
            continue
        rows.append({"workload": w, "FL max utilization": round(_maxu(fl), 3), "AFL max utilization": round(_maxu(afl), 3),
                     "FL JTT knee (JTT <= 8)": _knee(fl), "AFL JTT knee (JTT <= 8)": _knee(afl),
                     "FL JTT at load 1": round(_jtt_at(fl), 2), "AFL JTT at load 1": round(_jtt_at(afl), 2)})
    return rows


def turner_nasa(df: Any) -> Rows:
    if df.empty or "workload" not in df:
        return []
    sel = df[df["workload"] == "NASA_Q7"]
    rows: Rows = []
    for (a, c), g in sel.groupby(["allocator", "work_multiple"], sort=True):
        rows.append({"allocator": a, "c": float(c), "mean wait": round(float(g["mean_wait"].mean()), 1), "JTT": round(float(g["mean_response"].mean()), 1),
                     "bounded slowdown": round(float(g["mean_bounded_slowdown"].mean()), 2), "utilization": round(float(g["utilization"].mean()), 3),
                     "allocated utilization": round(float(g["allocated_utilization"].mean()), 3)})
    return rows


def turner_claims(df: Any) -> Rows:
    by = _turner_points(df)
    rows: Rows = []

    def pair(w: str) -> tuple[list[dict[str, float]], list[dict[str, float]]] | None:
        fl, afl = by.get((w, "free_list")), by.get((w, "afl"))
        return (fl, afl) if fl and afl else None

    p = pair("constant")
    rows.append(_claim("constant 4×6/4×2 on Q10 (Fig. 4.1): AFL utilization ≈ 100 %, FL ≈ 50 % (±10 points)", "AFL ≈ 100 %, FL ≈ 50 %",
                       f"max utilization AFL {_fmt(_maxu(p[1]))}, FL {_fmt(_maxu(p[0]))}" if p else "not run",
                       (abs(_maxu(p[1]) - 1.0) <= 0.1 and abs(_maxu(p[0]) - 0.5) <= 0.1) if p else None))
    p = pair("constant_q6")
    rows.append(_claim("constant 4×6/4×2 on Q6: the JTT knee at load 4.0 for AFL, 2.0 for FL (±0.5)", "knees at 4.0 (AFL) and 2.0 (FL)",
                       f"knee (JTT ≤ 8) AFL {_knee(p[1])}, FL {_knee(p[0])}" if p else "not run",
                       (_knee(p[1]) is not None and _knee(p[0]) is not None and abs(_knee(p[1]) - 4.0) <= 0.5 and abs(_knee(p[0]) - 2.0) <= 0.5) if p else None))  # type: ignore[operator]
    for w, fig in (("square16", "4.2"), ("rect16", "4.3")):
        p = pair(w)
        rows.append(_claim(f"{w} (Fig. {fig}): both methods about the same (max utilization within 0.05)", "both methods about the same",
                           f"max utilization AFL {_fmt(_maxu(p[1]))}, FL {_fmt(_maxu(p[0]))}" if p else "not run",
                           abs(_maxu(p[1]) - _maxu(p[0])) <= 0.05 if p else None))
    for w, fig in (("square32", "4.4"), ("rect32", "4.5")):
        p = pair(w)
        rows.append(_claim(f"{w} (Fig. {fig}): AFL slightly better utilization and JTT", "AFL slightly better",
                           f"max utilization AFL {_fmt(_maxu(p[1]))}, FL {_fmt(_maxu(p[0]))}; JTT at load 1 AFL {_fmt(_jtt_at(p[1]))}, FL {_fmt(_jtt_at(p[0]))}" if p else "not run",
                           (_maxu(p[1]) >= _maxu(p[0]) and _jtt_at(p[1]) <= _jtt_at(p[0]) + 1e-9) if p else None))
    ivs = sorted({w for w, _ in by if w.startswith("iv_") and pair(w)})
    fams = sorted({w.rsplit("_", 1)[0] for w in ivs})
    full = [f for f in fams if all(f"{f}_{a}" in ivs for a in _AS)]
    if full:
        dec_u = sum(1 for f in full if _maxu(by[(f"{f}_{_AS[-1]}", "afl")]) < _maxu(by[(f"{f}_{_AS[0]}", "afl")]))
        dec_j = sum(1 for f in full if _jtt_at(by[(f"{f}_{_AS[-1]}", "afl")]) < _jtt_at(by[(f"{f}_{_AS[0]}", "afl")]))
        rows.append(_claim("intervals (Figs. 4.6-4.27): as A grows, JTT improves and utilization decreases (in most families)", "JTT improves, utilization decreases",
                           f"AFL, A 0.1 → 0.9: utilization lower in {dec_u}/{len(full)} families, JTT at load 1 lower in {dec_j}/{len(full)}",
                           dec_u > len(full) / 2 and dec_j > len(full) / 2))
    else:
        rows.append(_claim("intervals (Figs. 4.6-4.27): as A grows, JTT improves and utilization decreases", "JTT improves, utilization decreases", "not run (needs every A)", None))
    if ivs:
        better = sum(1 for w in ivs if _maxu(by[(w, "afl")]) >= _maxu(by[(w, "free_list")]) - 1e-9)
        jbetter = sum(1 for w in ivs if _jtt_at(by[(w, "afl")]) <= _jtt_at(by[(w, "free_list")]) + 1e-9)
        rows.append(_claim("intervals: AFL generally increases throughput and decreases JTT (§7.1)", "AFL better in general",
                           f"AFL max utilization ≥ FL's in {better}/{len(ivs)} distributions; JTT at load 1 ≤ FL's in {jbetter}/{len(ivs)}",
                           better > len(ivs) / 2 and jbetter > len(ivs) / 2))
    return rows


# ---------------------------------------------------------------- Leung, Phillips, Bunde et al. (Cplant)

#: Table 1: (strategy, curve) -> (average makespan s, standard deviation s)
CPLANT_TABLE1 = {
    ("sorted_free_list", "row_major"): (5 * 3600 + 46 * 60 + 31, 10 * 60 + 10),
    ("best_fit", "row_major"): (5 * 3600 + 27 * 60 + 58, 5 * 60 + 48),
    ("sorted_free_list", "hilbert"): (4 * 3600 + 58 * 60 + 52, 7 * 60 + 37),
    ("sum_of_squares", "hilbert"): (4 * 3600 + 32 * 60 + 9, 3 * 60 + 16),
    ("first_fit", "hilbert"): (4 * 3600 + 30 * 60 + 22, 6 * 60 + 9),
    ("best_fit", "hilbert"): (4 * 3600 + 25 * 60 + 23, 3 * 60 + 0),
}


def _hms(sec: float) -> str:
    if sec != sec:
        return "-"
    sec = int(round(sec))
    return f"{sec // 3600}:{sec % 3600 // 60:02d}:{sec % 60:02d}"


def _split(strategy_label: str) -> tuple[str, str]:
    s, _, c = str(strategy_label).partition("/")
    return s, c


def cplant_table1(df: Any) -> Rows:
    if df.empty or "experiment" not in df:
        return []
    sel = df[df["experiment"] == "table1"]
    rows: Rows = []
    for label, g in sel.groupby("strategy", sort=True):
        key = _split(label)
        ms = [float(v) for v in g["first_start_to_last_end"]]
        mean, sd = (sum(ms) / len(ms), (sum((x - sum(ms) / len(ms)) ** 2 for x in ms) / (len(ms) - 1)) ** 0.5 if len(ms) > 1 else 0.0)
        pm, ps = CPLANT_TABLE1.get(key, (math.nan, math.nan))
        rows.append({"strategy": key[0], "curve": key[1], "runs": len(ms), "makespan": _hms(mean), "std": _hms(sd), "paper makespan": _hms(pm), "paper std": _hms(ps),
                     "_mean": mean, "_paper": pm,
                     "mean wait of 30-processor jobs": round(float(g["mean_wait_of_size:size=30"].mean()), 1) if "mean_wait_of_size:size=30" in g else None,
                     "mean pairwise L1": round(float(g["mean_pairwise_l1"].mean()), 3) if "mean_pairwise_l1" in g else None})
    ours = sorted(rows, key=lambda r: -r["_mean"])
    paper = sorted(rows, key=lambda r: -r["_paper"])
    for r in rows:
        r["rank"] = 1 + ours.index(r)
        r["paper rank"] = 1 + paper.index(r)
    for r in rows:
        r.pop("_paper")
    return sorted(rows, key=lambda r: r["paper rank"])


def cplant_claims(df: Any) -> Rows:
    rows: Rows = []
    fig = cplant_figure1(df)
    if fig:
        by = {(r["c"], r["strategy"], r["curve"]): r for r in fig}
        cs = sorted({r["c"] for r in fig})
        strategies = sorted({r["strategy"] for r in fig})
        n = ok = 0
        for c in cs:
            for st in strategies:
                cube = [by.get((c, st, o), {}).get("avg cube ratio") for o in ("hilbert", "snake", "row_major")]
                if None not in cube:
                    n += 1
                    ok += cube[0] < cube[1] < cube[2]  # type: ignore[operator]
        rows.append(_claim("Figure 1 (§3): in 3-D the Hilbert curve gives the most compact allocations, row-major the least", "bounding cube ratio Hilbert < snake < row-major",
                           f"Hilbert < snake < row-major in {ok}/{n} (work multiple, strategy) pairs", ok == n if n else None))
        n = ok = 0
        for c in cs:
            fl = by.get((c, "sorted_free_list", "hilbert"), {}).get("avg span (ring)")
            for st in ("first_fit", "best_fit", "sum_of_squares"):
                v = by.get((c, st, "hilbert"), {}).get("avg span (ring)")
                if fl is not None and v is not None:
                    n += 1
                    ok += v < fl
        rows.append(_claim("Figure 1 (§2.3): the interval strategies (First Fit, Best Fit, Sum of Squares) give a smaller span than the sorted free list", "interval strategies beat the free list on span",
                           f"smaller span in {ok}/{n} (work multiple, strategy) pairs (Hilbert curve)", ok == n if n else None))
    t = cplant_table1(df)
    if not t:
        return rows + [_claim("Table 1: curve orderings shorten the makespan", "every Hilbert strategy beats every row-major one", "not run", None)]
    hil = [r["_mean"] for r in t if r["curve"] == "hilbert"]
    row = [r["_mean"] for r in t if r["curve"] == "row_major"]
    rows.append(_claim("Table 1: every Hilbert-curve strategy has a shorter makespan than every row-major one", "Hilbert 4:25-4:59 against row-major 5:28-5:47",
                       f"Hilbert {_hms(min(hil))}-{_hms(max(hil))}, row-major {_hms(min(row))}-{_hms(max(row))}", max(hil) < min(row)))
    best = min(t, key=lambda r: r["_mean"])
    rows.append(_claim("Table 1: Best Fit with the Hilbert curve is the best strategy", "Best Fit (Hilbert) 4:25:23, the shortest",
                       f"shortest: {best['strategy']} ({best['curve']}) {best['makespan']}", (best["strategy"], best["curve"]) == ("best_fit", "hilbert")))
    same = sum(1 for r in t if r["rank"] == r["paper rank"])
    rows.append(_claim("Table 1: the ranking of the six strategies", "ranks 1-6 as in the paper",
                       f"{same}/{len(t)} strategies at the paper's rank (ours: " + ", ".join(f"{r['strategy']}/{r['curve']} {r['rank']}" for r in t) + ")", same == len(t)))
    for r in t:
        r.pop("_mean", None)
    return rows


def cplant_figure1(df: Any) -> Rows:
    if df.empty or "experiment" not in df:
        return []
    sel = df[df["experiment"] == "figure1"]
    rows: Rows = []
    for (label, c), g in sel.groupby(["strategy", "work_multiple"], sort=True):
        s, curve = _split(label)
        rows.append({"strategy": s, "curve": curve, "c": float(c), "offered load": round(float(g["offered_load"].mean()), 3),
                     "avg cube ratio": round(float(g["locality.bbox_cube_ratio.mean"].mean()), 3), "avg span (ring)": round(float(g["locality.ring_span.mean"].mean()), 1)})
    return rows


# ---------------------------------------------------------------- Bani-Ahmad

#: the seed's metric names -> our window metrics
BANI_METRICS = {"MBPJ": "window_blocks", "MJRT": "window_response", "MJST": "window_service", "wait": "window_wait",
                "PSU": "window_utilization", "MPBT": "window_packet_blocking", "MPL": "window_packet_latency"}
BANI_ANCA = ("ANCA-FF", "ANCA-BF")


def _bani_x(experiment: str, row: Any) -> float:
    col = {"load": "load", "messages": "messages", "pbv": "pbv"}[experiment]
    return float(row[col])


def bani_points(df: Any) -> dict[tuple[str, str, str, float], dict[str, tuple[float, float]]]:
    """(communication, experiment, series, x) -> {MBPJ, MJRT, ...: (mean, 95 % half-width)} over replications, plus runs."""
    from .stats import mean_ci

    out: dict[tuple[str, str, str, float], dict[str, Any]] = {}
    need = {"communication", "experiment", "series"}
    if df.empty or not need <= set(df.columns):
        return out
    groups: dict[tuple[str, str, str, float], list[Any]] = {}
    for _, row in df.iterrows():
        exp = str(row["experiment"])
        key = (str(row["communication"]), exp, str(row["series"]), _bani_x(exp, row))
        groups.setdefault(key, []).append(row)
    for key, rows in groups.items():
        stats: dict[str, Any] = {}
        for m, col in BANI_METRICS.items():
            vals = [float(r[col]) for r in rows if col in r and r[col] == r[col]]
            stats[m] = mean_ci(vals) if vals else (math.nan, math.nan)
        stats["runs"] = len(rows)
        out[key] = stats
    return out


def bani_table(df: Any) -> Rows:
    """Every point with its means, 95 % half-widths and runs."""
    rows: Rows = []
    for (comm, exp, series, x), st in sorted(bani_points(df).items(), key=lambda kv: (kv[0][0], kv[0][1], kv[0][2], kv[0][3])):
        r: dict[str, Any] = {"communication": comm, "experiment": exp, "series": series, "x": x, "runs": st["runs"]}
        for m in BANI_METRICS:
            mean, half = st[m]
            r[m] = None if mean != mean else (f"{mean:.4g}" + (f" ± {half:.2g}" if half == half else ""))
        rows.append(r)
    return rows


def bani_claims(df: Any) -> Rows:
    """The seed's claims (Figs. 1-12), checked on the means over replications.

    A verdict compares point estimates; "within the CIs" is added to the
    numbers when the difference that decides it is smaller than the two 95 %
    half-widths combined (not significant).  Claims without communication
    (runs with an exponential service time and no network) are checked where
    they make sense and marked as such.
    """
    pts = bani_points(df)
    out: Rows = []
    for comm in sorted({k[0] for k in pts}, key=lambda c: (c == "none", c)):
        out += _bani_claims_of(pts, comm)
    return out


def _bani_claims_of(pts: dict[tuple[str, str, str, float], dict[str, Any]], comm: str) -> Rows:
    network = comm != "none"
    tag = "" if network else " [no communication]"
    nan = (math.nan, math.nan)

    def xs(exp: str) -> list[float]:
        return sorted({k[3] for k in pts if k[0] == comm and k[1] == exp and k[2] in BANI_ANCA})

    def v(exp: str, s: str, x: float, m: str) -> tuple[float, float]:
        return pts.get((comm, exp, s, float(x)), {}).get(m, nan)

    def f(t: tuple[float, float]) -> str:
        m, h = t
        if m != m:
            return "n/a"
        return f"{m:.3g}" + (f" ± {h:.2g}" if h == h and h > 0 else "")

    def less(a: tuple[float, float], b: tuple[float, float]) -> tuple[bool, bool]:
        """(a < b, significantly)"""
        d = b[0] - a[0]
        ci = math.hypot(a[1], b[1]) if a[1] == a[1] and b[1] == b[1] else math.inf
        return bool(d > 0), bool(abs(d) > ci)

    def row(claim: str, items: list[tuple[bool, bool]], numbers: str, paper: str) -> dict[str, Any]:
        if not items or any(t[0] is None for t in items):
            return _claim(claim + tag, paper, numbers, None)
        held = all(i[0] for i in items)
        sure = all(i[1] for i in items) if held else any(i[1] for i in items if not i[0])
        return _claim(claim + tag, paper, numbers + ("" if sure else " (within the CIs)"), held)

    def rise(exp: str, series: tuple[str, ...], x0: float, x1: float, metric: str) -> tuple[list[tuple[bool, bool]], str]:
        """Whether ``metric`` rises from ``x0`` to ``x1`` for each series, and the numbers."""
        pairs = [(v(exp, s, x0, metric), v(exp, s, x1, metric)) for s in series]
        return [less(a, b) for a, b in pairs], "; ".join(f"{s} {f(a)} → {f(b)}" for s, (a, b) in zip(series, pairs))

    rows: Rows = []
    loads = xs("load")
    if len(loads) >= 2:
        lo, hi = loads[0], loads[-1]
        items, nums = rise("load", ("MBS",) + BANI_ANCA, lo, hi, "MBPJ")
        rows.append(row("Fig. 1: MBPJ rises with system load", items, f"load {lo:g} → {hi:g}: " + nums, "rises for MBS and ANCA"))
        items, parts = [], []
        for x in loads:
            a = {s: v("load", s, x, "MJRT") for s in BANI_ANCA + ("MBS", "Paging(0)")}
            items += [less(a[s], a[o]) for s in BANI_ANCA for o in ("MBS", "Paging(0)")]
            parts.append(f"{x:g}: " + ", ".join(f"{s} {f(t)}" for s, t in a.items()))
        below = {o: sum(1 for x in loads if all(v("load", s, x, "MJRT")[0] < v("load", o, x, "MJRT")[0] for s in BANI_ANCA)) for o in ("MBS", "Paging(0)")}
        rows.append(row("Fig. 2: bounded ANCA has lower MJRT than MBS and Paging", items,
                        f"both ANCA below MBS at {below['MBS']} and below Paging at {below['Paging(0)']} of {len(loads)} loads; " + "; ".join(parts),
                        "ANCA lowest at every load"))
        if network:
            items, nums = rise("load", BANI_ANCA, lo, hi, "MJST")
            rows.append(row("Fig. 3: MJST rises with system load (ANCA)", items, f"load {lo:g} → {hi:g}: " + nums, "rises"))
            items, parts = [], []
            for x in loads:
                ff_w, ff_s = v("load", "FF", x, "wait")[0], v("load", "FF", x, "MJST")[0]
                for s in BANI_ANCA:
                    items.append((bool(v("load", s, x, "MJST")[0] - ff_s < ff_w - v("load", s, x, "wait")[0]), True))
                parts.append(f"{x:g}: FF wait {ff_w:.3g}, service {ff_s:.3g}; " + "; ".join(f"{s} {v('load', s, x, 'wait')[0]:.3g}, {v('load', s, x, 'MJST')[0]:.3g}" for s in BANI_ANCA))
            rows.append(row("Fig. 3: ANCA's extra service time is smaller than the queueing time it saves (against contiguous FF)", items, "; ".join(parts),
                            "non-contiguity costs service time but saves more waiting"))
        a = {s: v("load", s, hi, "PSU") for s in BANI_ANCA + ("MBS", "Paging(0)", "FF", "BF")}
        items = [less(a[o], a[s]) for s in BANI_ANCA for o in ("MBS", "Paging(0)")]
        rows.append(row(f"Fig. 4: ANCA reaches higher PSU than MBS and Paging (load {hi:g})", items, ", ".join(f"{s} {f(t)}" for s, t in a.items()), "ANCA highest"))
    ms = xs("messages")
    if network and len(ms) >= 2:
        for fig, metric in ((5, "MJRT"), (6, "MPBT"), (7, "MPL")):
            items, rises = [], {}
            for s in ("MBS", "Paging(0)") + BANI_ANCA:
                a0, a1 = v("messages", s, ms[0], metric), v("messages", s, ms[-1], metric)
                items.append(less(a0, a1))
                rises[s] = (a0, a1)
            rows.append(row(f"Fig. {fig}: {metric} rises with messages per job", items,
                            f"{ms[0]:g} → {ms[-1]:g} messages: " + "; ".join(f"{s} {f(a0)} → {f(a1)}" for s, (a0, a1) in rises.items()), "rises for every allocator"))
            inc = {s: a1[0] - a0[0] for s, (a0, a1) in rises.items()}
            least = min(inc, key=lambda k: inc[k] if inc[k] == inc[k] else math.inf)
            rows.append(_claim(f"Fig. {fig}: ... and rises least for ANCA", "ANCA least", "rise: " + ", ".join(f"{s} {d:.3g}" for s, d in inc.items()), least in BANI_ANCA))
        a = {s: v("messages", s, ms[-1], "PSU") for s in ("MBS", "Paging(0)") + BANI_ANCA}
        items = [less(a[o], a[s]) for s in BANI_ANCA for o in ("MBS", "Paging(0)")]
        rows.append(row(f"Fig. 8: ANCA reaches higher PSU under high communication load ({ms[-1]:g} messages)", items, ", ".join(f"{s} {f(t)}" for s, t in a.items()), "ANCA highest"))
    bounds = [b for b in xs("pbv") if b > 0]
    if len(bounds) >= 2:
        for fig, metric in ((9, "MBPJ"), (10, "MJRT"), (11, "MJST")):
            if metric == "MJST" and not network:
                continue
            items, nums = rise("pbv", BANI_ANCA, bounds[0], bounds[-1], metric)
            rows.append(row(f"Fig. {fig}: {metric} rises with the partitioning bound", items, f"PBV {bounds[0]:g} → {bounds[-1]:g}: " + nums, "rises"))
        items, parts = [], []
        for s in BANI_ANCA:
            vals = [(b, v("pbv", s, b, "PSU")) for b in bounds]
            best = max(vals, key=lambda t: t[1][0] if t[1][0] == t[1][0] else -1)
            at4 = dict(vals).get(4.0, nan)
            items.append((best[0] == 4, all(less(t, at4)[1] for b, t in vals if b != 4)))
            parts.append(f"{s}: peak at PBV {best[0]:g}; " + ", ".join(f"{b:g}: {f(t)}" for b, t in vals))
        rows.append(row("Fig. 12: PSU peaks at PBV = 4", items, " | ".join(parts), "peak at 4"))
    return rows


# ---------------------------------------------------------------- registry

CLAIMS: dict[str, Callable[[Any], Rows]] = {"mao": mao_claims, "turner": turner_claims, "cplant": cplant_claims, "bani-ahmad": bani_claims}
TABLES: dict[str, Callable[[Any], list[tuple[str, Rows]]]] = {
    "mao": lambda df: [("Saturation points (§4.4): largest utilization reached, and utilization at the last c before bsld > 10", mao_saturation(df))],
    "turner": lambda df: [("AFL against FL per workload (means over replications)", turner_table(df)), ("The NASA iPSC/860 log on Q7, FCFS", turner_nasa(df))],
    "cplant": lambda df: [("Table 1: the §4 stream on mesh:16x8 under the locality run-time model (a model, not a measurement)", [{k: v for k, v in r.items() if not k.startswith("_")} for r in cplant_table1(df)]),
                          ("Figure 1: the Ross log on mesh:8x8x5, Cplant queue", cplant_figure1(df))],
    "bani-ahmad": lambda df: [("Every point: means over replications ± 95 % half-widths (runs: replications made; the stopping rule allows 10)", bani_table(df))],
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
