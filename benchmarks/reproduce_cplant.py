"""Reproduce Leung, Phillips, Bunde et al. (CLUSTER 2002): Figure 1 (§3) and Table 1 (§4).

Figure 1 (§3).  The Sandia Ross log (a real Cplant machine, 2001-2005; the
paper used Cplant traces of Oct-Dec 2000, which the Parallel Workloads Archive
does not have) on an 8×8×5 mesh of 320 processors (``mesh:8x8x5``), the
standard cleaning (``--clean``; the jobs the width filter removes are printed),
missing requested times = 2 × run time, and the Cplant queue: strict FCFS on
a queue sorted by requested processors, then requested time
(``fcfs:order=cplant``).  Work multiples (run and requested times × c) are
swept; the Ross log offers about 2.4 × the capacity of 320 processors at c = 1,
so the sweep covers c = 0.05 .. 0.4 (offered load about 0.12 .. 0.98).
Strategies {sorted free list, First Fit, Best Fit, Sum of Squares} ×
orderings {row-major, snake, Hilbert (Skilling's 3-D curve, cut to size from
8×8×8)}, ring span (the paper's "span").  Plotted: the average over jobs of
bounding cube / smallest possible cube for the job's size, and the average
span, against c.  Run times are held fixed (the paper's §3 choice).

Table 1 (§4).  The §4 job stream: 91 jobs of 2 processors, 33 of 5, 31 of 25,
33 of 30 (188), four large jobs first to fill the machine, the rest shuffled
(seeded), the last one small; one job submitted every 30 s; EASY, requested
time 2 × base run time.  The machine is approximated by ``mesh:16x8`` (128
processors; the real one was 4 populated rows of an 8×8 switch torus with 4
processors per switch).  Run times come from the *locality run-time model*
``locality:alpha=0.1,metric=pairwise_l1`` — base run time 30 s × size (an
all-to-all suite's work per process grows with the job), stretched by 10 %
per hop of average pairwise distance beyond 1.  This is a model, not a
measurement: the ranking it produces is what the model implies.  Each strategy
runs the same 5 seeded streams; the table gives mean and standard deviation
of the makespan (first start to last end) and ranks the strategies as Table 1
does.

Outputs (``--out``, default ``benchmarks/results/cplant``): ``figure1.csv``,
``figure1.png``, ``table1.csv``, and the comparison printed.

Usage: python benchmarks/reproduce_cplant.py [--quick] [--workers 2] [--out DIR]
"""

from __future__ import annotations

import argparse
import csv
import os
import platform
import random
import statistics
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

TRACES = Path(os.environ.get("TOPOALLOC_TRACES", Path(__file__).resolve().parents[1].parent / "shared" / "traces"))
ROSS = "Sandia-Ross-2001-1.1-cln.swf.gz"
STRATEGIES = ("sorted_free_list", "first_fit", "best_fit", "sum_of_squares")
ORDERINGS = ("row_major", "snake", "hilbert")
LABEL = {"sorted_free_list": "Free List", "first_fit": "First Fit", "best_fit": "Best Fit", "sum_of_squares": "Sum of Squares"}
#: Table 1 of the paper: (strategy, curve) -> average makespan in seconds, standard deviation
PAPER_TABLE1 = {
    ("sorted_free_list", "row_major"): (5 * 3600 + 46 * 60 + 31, 10 * 60 + 10),
    ("best_fit", "row_major"): (5 * 3600 + 27 * 60 + 58, 5 * 60 + 48),
    ("sorted_free_list", "hilbert"): (4 * 3600 + 58 * 60 + 52, 7 * 60 + 37),
    ("sum_of_squares", "hilbert"): (4 * 3600 + 32 * 60 + 9, 3 * 60 + 16),
    ("first_fit", "hilbert"): (4 * 3600 + 30 * 60 + 22, 6 * 60 + 9),
    ("best_fit", "hilbert"): (4 * 3600 + 25 * 60 + 23, 3 * 60 + 0),
}
MODEL = "locality:alpha=0.1,metric=pairwise_l1"

_CACHE: dict = {}


def _ross(quick: bool):
    from topoalloc.workload import read_swf

    if quick not in _CACHE:
        w = read_swf(TRACES / ROSS)
        if quick:
            import numpy as np

            w = w.take(np.arange(3000))
        _CACHE[quick] = w
    return _CACHE[quick]


def run_fig1(task: tuple) -> dict:
    quick, c, strategy, curve = task
    import topoalloc

    t0 = time.perf_counter()
    r = topoalloc.simulate(_ross(quick), machine="mesh:8x8x5", allocator=f"{strategy}:curve={curve},span=ring", scheduler="fcfs:order=cplant", clean=True, work_multiple=c)
    s = r.summary()
    loc = s["locality"]
    wider = next((f for f in s["filters"] if f["name"] == "drop-wider"), None)
    return {
        "c": c,
        "strategy": strategy,
        "curve": curve,
        "jobs": s["jobs"],
        "offered_load": round(s["offered_load"], 4),
        "utilization": round(s["utilization"], 4),
        "mean_wait": round(s["mean_wait"], 2),
        "avg_cube_ratio": loc["bbox_cube_ratio"]["mean"],
        "avg_span": loc["ring_span"]["mean"],
        "avg_stretch_span": loc["stretch_span"]["mean"],
        "avg_bbox_sides": loc["bbox_sides"]["mean"],
        "avg_components": loc["components"]["mean"],
        "mean_pairwise_l1": s["mean_pairwise_l1"],
        "removed_wider": wider["removed"] if wider else 0,
        "seconds": round(time.perf_counter() - t0, 2),
    }


def section4_stream(seed: int):
    """The §4 stream (see the module notes) as a Workload."""
    from topoalloc.workload.core import Workload

    rng = random.Random(seed)
    sizes = [2] * 91 + [5] * 33 + [25] * 31 + [30] * 33
    first = [30, 30, 25, 25]  # 110 of 128 processors: the large jobs that fill the machine
    for s in first:
        sizes.remove(s)
    last = 2
    sizes.remove(last)
    rng.shuffle(sizes)
    order = first + sizes + [last]
    n = len(order)
    base = [30.0 * s for s in order]
    return Workload(job_id=list(range(1, n + 1)), submit=[30.0 * i for i in range(n)], run=base, size=order, requested_time=[2 * b for b in base], source=f"<cplant §4 stream, seed {seed}>")


def run_table1(task: tuple) -> dict:
    seed, strategy, curve = task
    import topoalloc

    r = topoalloc.simulate(section4_stream(seed), machine="mesh:16x8", allocator=f"{strategy}:curve={curve},span=ring", scheduler="easy", runtime_model=MODEL)
    s = r.summary()
    import numpy as np

    thirty = r.size == 30
    return {
        "seed": seed,
        "strategy": strategy,
        "curve": curve,
        "makespan": float(np.max(r.end) - np.min(r.start)),
        "mean_wait_30": float(np.mean(r.wait[thirty])),
        "mean_pairwise_l1": s["mean_pairwise_l1"],
        "avg_span": s["locality"]["ring_span"]["mean"],
    }


def plot(rows: list[dict], out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    colour = {"sorted_free_list": "tab:red", "first_fit": "tab:blue", "best_fit": "tab:green", "sum_of_squares": "tab:purple"}
    style = {"row_major": ":", "snake": "--", "hilbert": "-"}
    fig, axes = plt.subplots(2, 1, figsize=(7, 8), sharex=True)
    for strategy in STRATEGIES:
        for curve in ORDERINGS:
            pts = sorted((r for r in rows if r["strategy"] == strategy and r["curve"] == curve), key=lambda r: r["c"])
            xs = [p["c"] for p in pts]
            lab = f"{LABEL[strategy]} ({curve})"
            axes[0].plot(xs, [p["avg_cube_ratio"] for p in pts], style[curve], color=colour[strategy], marker="o", markersize=3, label=lab)
            axes[1].plot(xs, [p["avg_span"] for p in pts], style[curve], color=colour[strategy], marker="o", markersize=3, label=lab)
    axes[0].set_ylabel("avg bounding cube / smallest cube")
    axes[1].set_ylabel("avg span (ring)")
    axes[1].set_xlabel("work multiple")
    axes[0].set_title("Figure 1: Ross log on mesh:8x8x5, Cplant queue")
    for ax in axes:
        ax.grid(True, alpha=0.3)
    axes[0].legend(fontsize=6, ncol=2)
    fig.tight_layout()
    fig.savefig(out / "figure1.png", dpi=110)
    plt.close(fig)


def _hms(sec: float) -> str:
    sec = int(round(sec))
    return f"{sec // 3600}:{sec % 3600 // 60:02d}:{sec % 60:02d}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="first 3000 jobs of the log, three work multiples, 2 streams (for CI)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results" / "cplant")
    args = ap.parse_args(argv)
    if not (TRACES / ROSS).exists():
        print(f"trace {ROSS} not found in the shared traces folder", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    cs = [0.1, 0.2, 0.4] if args.quick else [0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4]
    seeds = [1, 2] if args.quick else [1, 2, 3, 4, 5]
    fig_tasks = [(args.quick, c, s, o) for c in cs for s in STRATEGIES for o in ORDERINGS]
    fig_tasks.sort(key=lambda t: -t[1])
    t0 = time.perf_counter()
    rows: list[dict] = []
    with ProcessPoolExecutor(max_workers=args.workers) as pool:
        for r in pool.map(run_fig1, fig_tasks, chunksize=1):
            rows.append(r)
            print(f"[{len(rows)}/{len(fig_tasks)} {time.perf_counter() - t0:6.1f} s] c={r['c']:.2f} {r['strategy']}/{r['curve']}: cube ratio {r['avg_cube_ratio']:.3f}, span {r['avg_span']:.1f} ({r['seconds']:.1f} s)", file=sys.stderr, flush=True)
        t_tasks = [(seed, s, o) for seed in seeds for s, o in PAPER_TABLE1]
        trows = list(pool.map(run_table1, t_tasks, chunksize=1))
    wall = time.perf_counter() - t0
    rows.sort(key=lambda r: (r["strategy"], r["curve"], r["c"]))
    with open(args.out / "figure1.csv", "w", newline="") as fh:
        wr = csv.DictWriter(fh, fieldnames=list(rows[0]))
        wr.writeheader()
        wr.writerows(rows)
    plot(rows, args.out)
    table = []
    for key, (pm, ps) in PAPER_TABLE1.items():
        ms = [r["makespan"] for r in trows if (r["strategy"], r["curve"]) == key]
        w30 = [r["mean_wait_30"] for r in trows if (r["strategy"], r["curve"]) == key]
        l1 = [r["mean_pairwise_l1"] for r in trows if (r["strategy"], r["curve"]) == key]
        table.append({
            "strategy": key[0], "curve": key[1], "runs": len(ms),
            "makespan_mean": statistics.mean(ms), "makespan_std": statistics.stdev(ms) if len(ms) > 1 else 0.0,
            "mean_wait_30": statistics.mean(w30), "mean_pairwise_l1": statistics.mean(l1),
            "paper_makespan": pm, "paper_std": ps,
        })
    ours = sorted(table, key=lambda t: -t["makespan_mean"])
    paper = sorted(table, key=lambda t: -t["paper_makespan"])
    for t in table:
        t["rank"] = 1 + ours.index(t)
        t["paper_rank"] = 1 + paper.index(t)
    with open(args.out / "table1.csv", "w", newline="") as fh:
        wr = csv.DictWriter(fh, fieldnames=list(table[0]))
        wr.writeheader()
        wr.writerows(table)
    wider = rows[0]["removed_wider"]
    print(f"machine: {platform.machine()} {os.cpu_count()} cores, Python {platform.python_version()}; {len(rows)} + {len(trows)} runs, {args.workers} workers, wall {wall:.1f} s")
    print(f"\nFigure 1 — Ross log on mesh:8x8x5 ({rows[0]['jobs']} jobs simulated; the width filter removed {wider} jobs wider than 320 processors)")
    print(f"{'c':>5s} {'load':>6s}  " + "  ".join(f"{LABEL[s][:9]:>9s}/{o[:3]}" for s in STRATEGIES for o in ORDERINGS))
    for c in cs:
        sel = {(r["strategy"], r["curve"]): r for r in rows if r["c"] == c}
        load = next(iter(sel.values()))["offered_load"]
        print(f"{c:5.2f} {load:6.3f}  " + "  ".join(f"{sel[(s, o)]['avg_cube_ratio']:13.3f}" for s in STRATEGIES for o in ORDERINGS) + "   (cube ratio)")
        print(f"{'':5s} {'':6s}  " + "  ".join(f"{sel[(s, o)]['avg_span']:13.1f}" for s in STRATEGIES for o in ORDERINGS) + "   (span)")
    print(f"\nTable 1 — §4 stream on mesh:16x8 under the run-time model {MODEL} ({len(seeds)} streams each)")
    print(f"{'strategy':28s} {'makespan':>9s} {'std':>8s} {'rank':>4s}   {'paper':>8s} {'std':>8s} {'rank':>4s}  {'wait(30)':>9s} {'L1':>5s}")
    for t in sorted(table, key=lambda t: t["paper_rank"]):
        name = f"{LABEL[t['strategy']]} ({'no curve' if t['curve'] == 'row_major' else 'Hilbert'})"
        print(f"{name:28s} {_hms(t['makespan_mean']):>9s} {_hms(t['makespan_std']):>8s} {t['rank']:4d}   {_hms(t['paper_makespan']):>8s} {_hms(t['paper_std']):>8s} {t['paper_rank']:4d}  {t['mean_wait_30']:9.0f} {t['mean_pairwise_l1']:5.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
