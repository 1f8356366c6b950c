"""Reproduce Turner (1997) ch. 4: the AFL against the Free List on a 10-cube, and the NASA log on Q7.

Set-up (seed 004, ch. 4): FCFS; exponential interarrival and service times, service
mean 4.0; the load is the thesis's "system load (service/arrival)", the mean service
time over the mean interarrival time (``load_definition="service"``: the arrival rate
is load / 4.0).  Workloads (``topoalloc.workload.synthetic.mesh_workload``):

* ``constant`` — 4×6, 4×2, 4×6, ... (§4 opening, Figure 4.1) on Q10, and
  ``constant_q6``, the same on Q6, where the thesis's knees (4.0 for AFL, 2.0 for
  FL) are where a 64-node machine would put them (see benchmarks/README.md);
* ``square16``, ``rect16``, ``square32``, ``rect32`` — sides uniform on [1, 16] or
  [1, 32], square (X = Y) or rectangular (X, Y independent) (§4.1);
* ``iv_S_L_A`` — Table 4.1: both sides from the bipartite interval distribution
  P[small] = A, P[large] = 1 − A, small ∈ {[1,8], [1,16]}, large as in the table,
  A ∈ {0.1, 0.3, 0.5, 0.7, 0.9} (§4.2–4.3).

Allocators: ``free_list`` (FL: a mesh gets a whole k-cube) and ``afl`` (AFL + FL).
Each point is ``--reps`` independent replications (seeds 1..reps; both allocators see
the same jobs, as in the thesis); JTT is the mean turnaround (end − submit), utilization
Σ X·Y·run / (1024 · (last end − first submit)) — requested processors, the thesis's
"system utilization" (our ``utilization`` metric).  95 % confidence intervals are
Student-t over replications.

Also: the NASA iPSC/860 log (bundled; a 128-node hypercube) on Q7 with buddy, gray_code,
free_list (and afl) under FCFS, run times multiplied by c ∈ {1, 1.5, 2}.

Outputs (``--out``, default benchmarks/results/turner): ``runs.csv`` (every run),
``summary.csv`` (means and CIs), one PNG per workload (JTT and utilization against
load), ``nasa.csv``, and ``comparison.md`` (our findings beside the thesis's statements).

Usage: python benchmarks/reproduce_turner.py [--quick] [--workers 2] [--reps 5] [--out DIR]
"""

from __future__ import annotations

import argparse
import csv
import math
import os
import platform
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

TABLE_4_1 = [((1, 8), (9, 32)), ((1, 8), (17, 32)), ((1, 8), (20, 32)), ((1, 8), (25, 32)), ((1, 8), (28, 32)), ((1, 8), (30, 32)),
             ((1, 16), (17, 32)), ((1, 16), (20, 32)), ((1, 16), (25, 32)), ((1, 16), (28, 32)), ((1, 16), (30, 32))]
AS = (0.1, 0.3, 0.5, 0.7, 0.9)
ALLOCS = ("free_list", "afl")
#: Student t quantiles t(0.975, df) for the 95 % interval (df = replications − 1)
T975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262, 10: 2.228}


def workloads(quick: bool) -> dict[str, dict]:
    """name -> {"machine", "loads", "kw" (mesh_workload keywords as plain data)}."""
    out: dict[str, dict] = {}
    if quick:
        out["constant_q6"] = {"machine": 6, "loads": [1.0, 2.0, 3.0, 4.0], "kw": ("constant",)}
        out["constant"] = {"machine": 10, "loads": [16, 48, 80], "kw": ("constant",)}
        out["rect32"] = {"machine": 10, "loads": [0.5, 1.0, 2.0], "kw": ("uniform", 1, 32, False)}
        out["iv_1-8_25-32_0.5"] = {"machine": 10, "loads": [0.5, 1.0, 2.0], "kw": ("interval", (1, 8), (25, 32), 0.5)}
        return out
    out["constant"] = {"machine": 10, "loads": [8, 16, 24, 32, 40, 48, 56, 64, 72, 80], "kw": ("constant",)}
    out["constant_q6"] = {"machine": 6, "loads": [0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5], "kw": ("constant",)}
    out["square16"] = {"machine": 10, "loads": [1, 2, 3, 4, 5, 6, 7, 8], "kw": ("uniform", 1, 16, True)}
    out["rect16"] = {"machine": 10, "loads": [1, 2, 4, 6, 8, 10, 12, 14], "kw": ("uniform", 1, 16, False)}
    out["square32"] = {"machine": 10, "loads": [0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 2.5, 3.0], "kw": ("uniform", 1, 32, True)}
    out["rect32"] = {"machine": 10, "loads": [0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 2.5, 3.0], "kw": ("uniform", 1, 32, False)}
    for small, large in TABLE_4_1:
        for a in AS:
            name = f"iv_{small[0]}-{small[1]}_{large[0]}-{large[1]}_{a}"
            out[name] = {"machine": 10, "loads": [0.25, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, 8.0, 12.0, 16.0, 24.0, 32.0], "kw": ("interval", small, large, a)}
    return out


def build(kw: tuple, n_jobs: int, load: float, seed: int):
    from topoalloc.workload.synthetic import Cycle, Interval, Uniform, mesh_workload

    common = dict(load=load, mean_runtime=4.0, load_definition="service", seed=seed)
    if kw[0] == "constant":
        return mesh_workload(n_jobs, x=Cycle((4, 4)), y=Cycle((6, 2)), **common)
    if kw[0] == "uniform":
        _, lo, hi, square = kw
        return mesh_workload(n_jobs, x=Uniform(lo, hi), y=None if square else Uniform(lo, hi), square=square, **common)
    _, small, large, a = kw
    dist = Interval.bipartite(small, large, a)
    return mesh_workload(n_jobs, x=dist, y=dist, **common)


def run_one(task: tuple) -> list[dict]:
    """One (workload, load, replication): both allocators on the same jobs."""
    name, machine, kw, load, rep, n_jobs = task
    import topoalloc

    wl = build(kw, n_jobs, load, rep)
    rows = []
    for alloc in ALLOCS:
        t0 = time.perf_counter()
        s = topoalloc.simulate(wl, machine=f"hypercube:{machine}", allocator=alloc, scheduler="fcfs").summary()
        rows.append({
            "workload": name, "machine": f"hypercube:{machine}", "allocator": alloc, "load": load, "rep": rep,
            "jobs": s["jobs"], "jtt": s["mean_response"], "utilization": s["utilization"],
            "allocated_utilization": s["allocated_utilization"], "seconds": time.perf_counter() - t0,
        })
    return rows


def run_nasa(task: tuple) -> dict:
    alloc, c = task
    import topoalloc

    t0 = time.perf_counter()
    s = topoalloc.simulate(None, machine="hypercube:7", allocator=alloc, scheduler="fcfs", work_multiple=c).summary()
    return {"allocator": alloc, "c": c, "jobs": s["jobs"], "mean_wait": s["mean_wait"], "jtt": s["mean_response"],
            "mean_bounded_slowdown": s["mean_bounded_slowdown"], "utilization": s["utilization"],
            "allocated_utilization": s["allocated_utilization"], "seconds": time.perf_counter() - t0}


def mean_ci(values: list[float]) -> tuple[float, float]:
    n = len(values)
    m = sum(values) / n
    if n < 2:
        return m, float("nan")
    sd = math.sqrt(sum((v - m) ** 2 for v in values) / (n - 1))
    return m, T975.get(n - 1, 1.96) * sd / math.sqrt(n)


def summarise(rows: list[dict]) -> list[dict]:
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        groups.setdefault((r["workload"], r["machine"], r["allocator"], r["load"]), []).append(r)
    out = []
    for (w, m, a, load), rs in sorted(groups.items()):
        jtt, jci = mean_ci([r["jtt"] for r in rs])
        ut, uci = mean_ci([r["utilization"] for r in rs])
        out.append({"workload": w, "machine": m, "allocator": a, "load": load, "reps": len(rs),
                    "jtt": round(jtt, 4), "jtt_ci95": round(jci, 4), "utilization": round(ut, 4), "utilization_ci95": round(uci, 4)})
    return out


def knee(points: list[dict], base: float = 4.0, factor: float = 2.0) -> float | None:
    """The largest load whose mean JTT is at most ``factor`` × the service mean (where the JTT curve turns up)."""
    ok = [p["load"] for p in sorted(points, key=lambda p: p["load"]) if p["jtt"] <= factor * base]
    return max(ok) if ok else None


def saturation(points: list[dict]) -> float:
    return max(p["utilization"] for p in points)


def compare(summary: list[dict]) -> list[tuple[str, str, str]]:
    """(experiment, thesis statement, our finding) rows."""
    by: dict[tuple[str, str], list[dict]] = {}
    for s in summary:
        by.setdefault((s["workload"], s["allocator"]), []).append(s)

    def stat(w: str) -> str:
        if (w, "afl") not in by:
            return "not run"
        fl, afl = by[(w, "free_list")], by[(w, "afl")]
        return (f"max util FL {saturation(fl):.2f} / AFL {saturation(afl):.2f}; JTT knee (JTT ≤ 8 s) FL {knee(fl)} / AFL {knee(afl)}")

    rows = [
        ("constant 4×6/4×2, Q10 (Fig. 4.1)", "AFL ≈ 100 % utilization, FL ≈ 50 %; JTT knee at load 4.0 (AFL) vs 2.0 (FL)", stat("constant")),
        ("constant 4×6/4×2, Q6", "(same statement; Q6 is where a knee at 4.0 vs 2.0 is possible)", stat("constant_q6")),
        ("square [1,16] (Fig. 4.2)", "both methods about the same", stat("square16")),
        ("rectangular [1,16] (Fig. 4.3)", "both methods about the same", stat("rect16")),
        ("square [1,32] (Fig. 4.4)", "AFL slightly better utilization and JTT", stat("square32")),
        ("rectangular [1,32] (Fig. 4.5)", "AFL slightly better utilization and JTT", stat("rect32")),
    ]
    ivs = sorted({w for w, _ in by if w.startswith("iv_")})
    if ivs:
        def util(w):
            return saturation(by[(w, "afl")])

        def jtt_at(w, load=1.0):
            pts = [p for p in by[(w, "afl")] if p["load"] == load]
            return pts[0]["jtt"] if pts else float("nan")

        fams = sorted({w.rsplit("_", 1)[0] for w in ivs})
        full = [f for f in fams if all(f"{f}_{a}" in set(ivs) for a in AS)]
        dec_u = sum(1 for f in full if util(f"{f}_{AS[-1]}") < util(f"{f}_{AS[0]}"))
        dec_j = sum(1 for f in full if jtt_at(f"{f}_{AS[-1]}") < jtt_at(f"{f}_{AS[0]}"))
        rows.append(("intervals (Figs. 4.6–4.27)", "as A grows, JTT improves and utilization decreases",
                     f"AFL, A 0.1 → 0.9: utilization lower in {dec_u}/{len(full)} families, JTT at load 1.0 lower in {dec_j}/{len(full)}"
                     if full else "not run (needs every A)"))
        better = sum(1 for w in ivs if saturation(by[(w, "afl")]) >= saturation(by[(w, "free_list")]) - 1e-9)
        jbetter = sum(1 for w in ivs if jtt_at(w) <= [p for p in by[(w, "free_list")] if p["load"] == 1.0][0]["jtt"] + 1e-9) if all(any(p["load"] == 1.0 for p in by[(w, "free_list")]) for w in ivs) else 0
        rows.append(("intervals, AFL vs FL", "AFL generally increases throughput and decreases JTT (§7.1)",
                     f"AFL max utilization ≥ FL's in {better}/{len(ivs)} distributions; AFL JTT at load 1.0 ≤ FL's in {jbetter}/{len(ivs)}"))
        for small in ("1-8", "1-16"):
            fam = sorted((f for f in fams if f.startswith(f"iv_{small}_")), key=lambda f: int(f.split("_")[2].split("-")[0]))
            if len(fam) >= 2:
                us = [round(util(f"{f}_0.5"), 3) for f in fam]
                rows.append((f"intervals small [{small.replace('-', ',')}], A = 0.5", "higher lower limit of the large interval → better utilization and JTT",
                             "AFL max utilization by large interval " + ", ".join(f"{f.split('_')[2]}: {u}" for f, u in zip(fam, us))))
        pairs = [(f"iv_1-8_{lg}", f"iv_1-16_{lg}") for lg in ("17-32", "20-32", "25-32", "28-32", "30-32")]
        pairs = [(a8, a16) for a8, a16 in pairs if f"{a8}_0.5" in set(ivs) and f"{a16}_0.5" in set(ivs)]
        if pairs:
            up_u = sum(1 for a8, a16 in pairs for a in AS if util(f"{a16}_{a}") > util(f"{a8}_{a}"))
            up_j = sum(1 for a8, a16 in pairs for a in AS if jtt_at(f"{a16}_{a}") > jtt_at(f"{a8}_{a}"))
            n = len(pairs) * len(AS)
            rows.append(("small [1,16] against small [1,8] (§4.3)", "higher JTT, higher utilization",
                         f"AFL: utilization higher in {up_u}/{n} (large interval, A) pairs, JTT at load 1.0 higher in {up_j}/{n}"))
    return rows


def plot(summary: list[dict], out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    for w in sorted({s["workload"] for s in summary}):
        fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4))
        for alloc, style in (("free_list", "o-"), ("afl", "s--")):
            pts = sorted((s for s in summary if s["workload"] == w and s["allocator"] == alloc), key=lambda s: s["load"])
            if not pts:
                continue
            x = [p["load"] for p in pts]
            label = "FL" if alloc == "free_list" else "AFL"
            ax1.errorbar(x, [p["jtt"] for p in pts], yerr=[0 if math.isnan(p["jtt_ci95"]) else p["jtt_ci95"] for p in pts], fmt=style, capsize=3, label=label, markersize=4)
            ax2.errorbar(x, [100 * p["utilization"] for p in pts], yerr=[0 if math.isnan(p["utilization_ci95"]) else 100 * p["utilization_ci95"] for p in pts], fmt=style, capsize=3, label=label, markersize=4)
        ax1.set_yscale("log")
        ax1.set_xlabel("system load (service/arrival)")
        ax1.set_ylabel("JTT (s)")
        ax2.set_xlabel("system load (service/arrival)")
        ax2.set_ylabel("system utilization (%)")
        for ax in (ax1, ax2):
            ax.grid(True, alpha=0.3)
            ax.legend()
        fig.suptitle(f"{w} ({pts[0]['machine'] if pts else ''}), FCFS, 95 % CI")
        fig.tight_layout()
        fig.savefig(out / f"{w}.png", dpi=90)
        plt.close(fig)


def _write(path: Path, rows: list[dict]) -> None:
    with open(path, "w", newline="") as fh:
        wr = csv.DictWriter(fh, fieldnames=list(rows[0]))
        wr.writeheader()
        wr.writerows(rows)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="Reproduce Turner (1997) ch. 4.")
    ap.add_argument("--quick", action="store_true", help="four workloads, few loads, 2 replications of 300 jobs (for CI)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--reps", type=int, default=None, help="replications per point (default 5, quick 2)")
    ap.add_argument("--jobs", type=int, default=None, help="jobs per run (default 1000, quick 300)")
    ap.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results" / "turner")
    args = ap.parse_args(argv)
    reps = args.reps or (2 if args.quick else 5)
    n_jobs = args.jobs or (300 if args.quick else 1000)
    if reps < 2 or reps - 1 not in T975:
        print(f"topoalloc: error: argument --reps={reps}: expected 2..11 replications", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    wls = workloads(args.quick)
    todo = [(name, w["machine"], w["kw"], load, rep, n_jobs) for name, w in wls.items() for load in w["loads"] for rep in range(1, reps + 1)]
    # heaviest first (constant on Q10 at high load) so the pool ends together
    todo.sort(key=lambda t: (t[0] != "constant", -t[3]))
    nasa_todo = [(a, c) for a in ("buddy", "gray_code", "free_list", "afl") for c in ((1.0,) if args.quick else (1.0, 1.5, 2.0))]
    t0 = time.perf_counter()
    rows: list[dict] = []
    with ProcessPoolExecutor(max_workers=args.workers) as pool:
        for i, rs in enumerate(pool.map(run_one, todo, chunksize=4), 1):
            rows.extend(rs)
            if i % 50 == 0 or i == len(todo):
                print(f"[{i}/{len(todo)} {time.perf_counter() - t0:7.1f} s]", file=sys.stderr, flush=True)
        nasa = list(pool.map(run_nasa, nasa_todo))
    wall = time.perf_counter() - t0
    rows.sort(key=lambda r: (r["workload"], r["allocator"], r["load"], r["rep"]))
    summary = summarise(rows)
    _write(args.out / "runs.csv", rows)
    _write(args.out / "summary.csv", summary)
    _write(args.out / "nasa.csv", nasa)
    plot(summary, args.out)
    comp = compare(summary)
    with open(args.out / "comparison.md", "w") as fh:
        fh.write("| experiment | thesis | ours |\n|---|---|---|\n")
        for e, t, o in comp:
            fh.write(f"| {e} | {t} | {o} |\n")
    print(f"machine: {platform.machine()} {os.cpu_count()} cores, Python {platform.python_version()}; {len(rows)} runs "
          f"({len(todo)} points × {len(ALLOCS)} allocators), {reps} replications of {n_jobs} jobs, {args.workers} workers")
    print(f"wall time {wall:.1f} s (target: full sweep <= 1800 s)")
    for e, t, o in comp:
        print(f"- {e}\n    thesis: {t}\n    ours:   {o}")
    print("NASA iPSC/860 on hypercube:7, FCFS:")
    print(f"  {'allocator':10s} {'c':>4s} {'mean wait s':>12s} {'JTT s':>9s} {'bsld':>7s} {'util':>6s} {'alloc util':>10s}")
    for r in nasa:
        print(f"  {r['allocator']:10s} {r['c']:4.1f} {r['mean_wait']:12.1f} {r['jtt']:9.1f} {r['mean_bounded_slowdown']:7.2f} {r['utilization']:6.3f} {r['allocated_utilization']:10.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
