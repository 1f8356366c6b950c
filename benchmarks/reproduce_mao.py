"""Reproduce Mao, Chen & Watson §4: Figures 3-7 and the saturation points.

Set-up (seed 000 §4.2-4.3): QCDOC 2×2×2×4×4×8 (1024 nodes) and JLAB 2×2×2×6×8
(384 nodes); the NASA iPSC/860 and SDSC SP2 logs, sizes scaled ×8 (QCDOC) or
×2 (JLAB) and rounded up to powers of two; every run time (and requested time)
multiplied by c = 0.20, 0.25, ..., 2.00; FCFS and EASY with EP, NEP and the flat
machine of the same size.  Standard cleaning (``--clean``) is applied; missing
requested times are 2 × run time (NASA has none; the paper does not say what it
used).  Utilization is Σ size·run / (N · (last end − first submit)) with sizes
after scaling and rounding (the paper's §4.2 definition).

Outputs (``--out``, default ``benchmarks/results/mao``): ``results.csv`` (one
row per run), ``fig3.png`` .. ``fig6.png`` (mean bounded slowdown against
utilization), ``fig7.png`` (utilization against offered load, SDSC/QCDOC) and
``saturation.csv`` / a printed table beside the paper's numbers.

Saturation is read two ways: the largest utilization any c reaches (the
plateau), and the utilization at the last c before the mean bounded slowdown
exceeds 10 (where the curve turns up).

Usage: python benchmarks/reproduce_mao.py [--quick] [--workers 2] [--out DIR]
"""

from __future__ import annotations

import argparse
import csv
import os
import platform
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

TRACES = Path(os.environ.get("TOPOALLOC_TRACES", Path(__file__).resolve().parents[1].parent / "shared" / "traces"))
LOGS = {"NASA": "NASA-iPSC-1993-3.1-cln.swf", "SDSC": "SDSC-SP2-1998-4.2-cln.swf.gz"}
MACHINES = {"QCDOC": ("torus:2x2x2x4x4x8", 1024, 8), "JLAB": ("torus:2x2x2x6x8", 384, 2)}
COMBOS = [("FCFS", "EP"), ("FCFS", "NEP"), ("EASY", "EP"), ("EASY", "NEP"), ("FCFS", "flat"), ("EASY", "flat")]
FIGURES = {3: ("NASA", "QCDOC"), 4: ("NASA", "JLAB"), 5: ("SDSC", "QCDOC"), 6: ("SDSC", "JLAB")}
#: what the paper says (§4.4), for the comparison table: (log, machine, scheduler, allocator) -> saturation utilization
PAPER = {
    ("NASA", "QCDOC", "FCFS", "EP"): 0.65,
    ("NASA", "QCDOC", "FCFS", "NEP"): 0.70,
    ("NASA", "QCDOC", "FCFS", "flat"): 0.77,
    ("NASA", "QCDOC", "EASY", "NEP"): "> 0.90",
    ("NASA", "JLAB", "EASY", "NEP"): "low slowdown to 0.80",
    ("SDSC", "QCDOC", "FCFS", "EP"): "0.45 (fig. 5), 0.55 (fig. 7)",
    ("SDSC", "QCDOC", "FCFS", "NEP"): "0.55 (fig. 5), ~0.60 (fig. 7)",
    ("SDSC", "QCDOC", "EASY", "EP"): "~0.85 (fig. 7)",
    ("SDSC", "QCDOC", "EASY", "NEP"): "little saturation (fig. 7)",
    ("SDSC", "JLAB", "FCFS", "EP"): 0.45,
    ("SDSC", "JLAB", "FCFS", "NEP"): 0.55,
    ("SDSC", "JLAB", "EASY", "NEP"): "~0.95",
}

_CACHE: dict = {}


def run_one(task: tuple) -> dict:
    log, machine_name, c, sched, alloc = task
    import topoalloc
    from topoalloc.workload import read_swf

    if log not in _CACHE:
        _CACHE[log] = read_swf(TRACES / LOGS[log])
    spec, nodes, scale = MACHINES[machine_name]
    machine = spec if alloc != "flat" else f"flat:{nodes}"
    t0 = time.perf_counter()
    r = topoalloc.simulate(
        _CACHE[log],
        machine=machine,
        allocator="flat" if alloc == "flat" else alloc.lower(),
        scheduler=sched.lower(),
        clean=True,
        scale_sizes=scale,
        round_pow2=True,
        work_multiple=c,
        record_allocations=False,  # the figures need no locality metrics
    )
    s = r.summary()
    # §4.2's U = Σ s_j t_j / (T N) does not say whether s_j is the job's size or the
    # power of two it was rounded to; the CSV carries both (rounded: "utilization")
    w = r.workload
    before = _CACHE[log].size.astype(float) * scale
    unrounded = dict(zip(_CACHE[log].job_id.tolist(), np.ceil(before).tolist()))
    span = s["last_end"] - s["first_submit"]
    work = sum(unrounded[j] * t for j, t in zip(w.job_id.tolist(), (r.end - r.start).tolist()))
    return {
        "log": log,
        "machine": machine_name,
        "c": c,
        "scheduler": sched,
        "allocator": alloc,
        "jobs": s["jobs"],
        "utilization": s["utilization"],
        "utilization_unrounded": work / (nodes * span) if span > 0 else 0.0,
        "offered_load": s["offered_load"],
        "mean_bounded_slowdown": s["mean_bounded_slowdown"],
        "mean_wait": s["mean_wait"],
        "seconds": time.perf_counter() - t0,
    }


def tasks(quick: bool) -> list[tuple]:
    cs = [0.4, 0.8, 1.2, 1.6, 2.0] if quick else [round(0.2 + 0.05 * i, 2) for i in range(37)]
    logs = ["NASA"] if quick else ["NASA", "SDSC"]
    out = [(log, m, c, s, a) for log in logs for m in MACHINES for c in cs for s, a in COMBOS]
    # longest first (SDSC, EASY, large c) so the pool ends together
    out.sort(key=lambda t: (t[0] != "SDSC", t[3] != "EASY", -t[2]))
    return out


def saturation(rows: list[dict]) -> list[dict]:
    out = []
    keys = sorted({(r["log"], r["machine"], r["scheduler"], r["allocator"]) for r in rows})
    for key in keys:
        pts = sorted((r for r in rows if (r["log"], r["machine"], r["scheduler"], r["allocator"]) == key), key=lambda r: r["c"])
        plateau = max(p["utilization"] for p in pts)
        knee = None
        for p in pts:
            if p["mean_bounded_slowdown"] > 10:
                break
            knee = p["utilization"]
        out.append({
            "log": key[0], "machine": key[1], "scheduler": key[2], "allocator": key[3],
            "max_utilization": round(plateau, 3),
            "max_utilization_unrounded": round(max(p.get("utilization_unrounded", float("nan")) for p in pts), 3),
            "utilization_at_bsld_10": None if knee is None else round(knee, 3),
            "paper": PAPER.get(key, ""),
        })
    return out


def plot(rows: list[dict], out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    style = {"EP": "o-", "NEP": "s-", "flat": "^--"}
    colour = {"FCFS": "tab:red", "EASY": "tab:blue"}

    def figure(sel: list[dict], x: str, y: str, title: str, path: Path, logy: bool) -> None:
        plt.figure(figsize=(6.4, 4.8))
        for sched, alloc in COMBOS:
            pts = sorted((r for r in sel if r["scheduler"] == sched and r["allocator"] == alloc), key=lambda r: r["c"])
            if pts:
                plt.plot([p[x] for p in pts], [p[y] for p in pts], style[alloc], color=colour[sched], label=f"{sched}/{alloc}", markersize=3)
        if logy:
            plt.yscale("log")
        plt.xlabel(x.replace("_", " "))
        plt.ylabel(y.replace("_", " "))
        plt.title(title)
        plt.grid(True, alpha=0.3)
        plt.legend()
        plt.tight_layout()
        plt.savefig(path, dpi=110)
        plt.close()

    for fig, (log, mach) in FIGURES.items():
        sel = [r for r in rows if r["log"] == log and r["machine"] == mach]
        if sel:
            figure(sel, "utilization", "mean_bounded_slowdown", f"Figure {fig}: {log} on {mach} ({MACHINES[mach][0]})", out / f"fig{fig}.png", True)
    log = "SDSC" if any(r["log"] == "SDSC" for r in rows) else "NASA"
    sel = [r for r in rows if r["log"] == log and r["machine"] == "QCDOC"]
    figure(sel, "offered_load", "utilization", f"Figure 7: utilization against load, {log} on QCDOC", out / "fig7.png", False)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="NASA only, five values of c (for CI)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results" / "mao")
    args = ap.parse_args(argv)
    for log in (["NASA"] if args.quick else list(LOGS)):
        if not (TRACES / LOGS[log]).exists():
            print(f"trace {TRACES / LOGS[log]} not found", file=sys.stderr)
            return 2
    args.out.mkdir(parents=True, exist_ok=True)
    todo = tasks(args.quick)
    t0 = time.perf_counter()
    rows = []
    with ProcessPoolExecutor(max_workers=args.workers) as pool:
        for r in pool.map(run_one, todo, chunksize=1):
            rows.append(r)
            print(
                f"[{len(rows)}/{len(todo)} {time.perf_counter() - t0:7.1f} s] {r['log']} {r['machine']} c={r['c']:.2f} "
                f"{r['scheduler']}/{r['allocator']}: util {r['utilization']:.3f}, bsld {r['mean_bounded_slowdown']:.1f} ({r['seconds']:.1f} s)",
                file=sys.stderr,
                flush=True,
            )
    wall = time.perf_counter() - t0
    rows.sort(key=lambda r: (r["log"], r["machine"], r["scheduler"], r["allocator"], r["c"]))
    with open(args.out / "results.csv", "w", newline="") as fh:
        wr = csv.DictWriter(fh, fieldnames=list(rows[0]))
        wr.writeheader()
        wr.writerows(rows)
    sat = saturation(rows)
    with open(args.out / "saturation.csv", "w", newline="") as fh:
        wr = csv.DictWriter(fh, fieldnames=list(sat[0]))
        wr.writeheader()
        wr.writerows(sat)
    plot(rows, args.out)
    print(f"machine: {platform.machine()} {os.cpu_count()} cores, Python {platform.python_version()}; {len(rows)} runs, {args.workers} workers")
    print(f"wall time {wall:.1f} s (target: full sweep <= 1800 s, --quick <= 120 s); slowest run {max(r['seconds'] for r in rows):.1f} s")
    print(f"{'log':5s} {'machine':6s} {'sched':5s} {'alloc':5s} {'max util':>9s} {'unrounded':>9s} {'util@bsld10':>12s}  paper")
    for s in sat:
        knee = "-" if s["utilization_at_bsld_10"] is None else f"{s['utilization_at_bsld_10']:.3f}"
        print(f"{s['log']:5s} {s['machine']:6s} {s['scheduler']:5s} {s['allocator']:5s} {s['max_utilization']:9.3f} {s['max_utilization_unrounded']:9.3f} {knee:>12s}  {s['paper']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
