"""CP-SAT benchmarks of topoalloc.ilp, each figure beside its target.

Targets (exact optimization with CP-SAT):

* orderings proven optimal (window:3, weights 4/2/1): 3×3 mesh and 3-cube
  ≤ 1 s; 4×4 mesh, 4×4 torus, 4-cube and the Petersen graph ≤ 10 min each;
* 8×8 mesh: best ordering found and proven bound beside the Hilbert, snake
  and row-major costs;
* minimum-span offline (Σ span) proven optimal for 32 processors × 15 jobs
  ≤ 60 s;
* competitive-ratio gaps of the online heuristics (ratio distribution over
  random instances, worst found by adversarial search vs processors).

Sections: ``ablation`` (what made the difference on the small orderings), ``dp``,
``ordering``, ``grid8``, ``minspan``, ``gap``.  Each prints a markdown table;
``--json FILE`` also writes every row.

Usage::

    python benchmarks/bench_ilp.py                      # everything (about an hour)
    python benchmarks/bench_ilp.py --sections ablation ordering --big-limit 600 --workers 2
    python benchmarks/bench_ilp.py --quick              # seconds: small instances only
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time

from topoalloc.ilp.dp import dp_ordering
from topoalloc.ilp.gap import adaptive_adversary, adversarial_search, gap_study, run_online
from topoalloc.ilp.minspan import min_span_allocation, random_fixed_instance
from topoalloc.ilp.ordering import optimal_ordering, ordering_cost


def _row(cells):
    print("| " + " | ".join(str(c) for c in cells) + " |", flush=True)


def _head(cols):
    _row(cols)
    _row(["---"] * len(cols))


def ablation(args, rows):
    print("\n### What made the difference (window:3, linear, 1 worker)\n")
    _head(["machine", "formulation", "symmetry", "warm start", "status", "objective", "bound", "seconds"])
    cases = ["mesh:3x3", "hypercube:3"] + ([] if args.quick else ["petersen"])
    variants = [("position", False, None), ("window", False, None), ("window", False, "auto"), ("window", True, None), ("window", True, "auto")]
    for m in cases:
        for form, sym, warm in variants:
            limit = args.small_limit if m != "petersen" else min(args.big_limit, 120)
            r = optimal_ordering(m, "window:3", time_limit=limit, workers=1, formulation=form, symmetry=sym, warm_start=warm)
            _row([m, form, sym, warm or "none", r.status, r.objective, r.bound, f"{r.seconds:.2f}"])
            rows.append({"section": "ablation", **r.as_dict(), "warm": warm})


def ordering(args, rows):
    print(f"\n### Optimal orderings, window:3, linear rank distance ({args.workers} worker(s))\n")
    _head(["machine", "n", "target s", "status", "objective", "bound", "gap", "seconds", "warm start (cost)", "met"])
    cases = [("mesh:3x3", 1.0, args.small_limit), ("hypercube:3", 1.0, args.small_limit)]
    if not args.quick:
        cases += [(m, 600.0, args.big_limit) for m in ("petersen", "mesh:4x4", "torus:4x4", "hypercube:4")]
    for m, target, limit in cases:
        r = optimal_ordering(m, "window:3", time_limit=limit, workers=args.workers if target > 1 else 1)
        met = r.status == "optimal" and r.seconds <= target
        gap = "" if r.gap is None else f"{100 * r.gap:.1f}%"
        _row([m, r.n, target, r.status, r.objective, r.bound, gap, f"{r.seconds:.1f}", f"{r.warm_start} ({r.warm_start_cost})", "met" if met else "MISSED"])
        rows.append({"section": "ordering", "target_s": target, "met": met, **r.as_dict()})


def dp(args, rows):
    print("\n### Optimal orderings by dynamic programming over subsets (window:3, linear; ilp/dp.py)\n")
    _head(["machine", "n", "target s", "status", "objective", "bound", "seconds", "CP-SAT best (bound) in the section above", "met"])
    cases = [("mesh:3x3", 1.0), ("hypercube:3", 1.0)]
    if not args.quick:
        cases += [(m, 600.0) for m in ("petersen", "mesh:4x4", "torus:4x4", "hypercube:4")]
    cp = {r["machine"]: r for r in rows if r.get("section") == "ordering"}
    for m, target in cases:
        r = dp_ordering(m, "window:3")
        met = r.status == "optimal" and r.seconds <= target
        other = cp.get(r.machine)
        _row([m, r.n, target, r.status, r.objective, r.bound, f"{r.seconds:.1f}", "" if other is None else f"{other['objective']} ({other['bound']})", "met" if met else "MISSED"])
        rows.append({"section": "dp", "target_s": target, "met": met, **r.as_dict()})


def flow(args, rows):
    limit = 30 if args.quick else args.flow_limit
    print(f"\n### Proven bounds with the path-flow linking (window:3, {limit:g} s, {args.workers} worker(s))\n")
    _head(["machine", "status", "objective", "bound", "seconds"])
    for m in (["mesh:3x3"] if args.quick else ["mesh:4x4", "torus:4x4"]):
        r = optimal_ordering(m, "window:3", time_limit=limit, workers=args.workers, flow=True)
        _row([m, r.status, r.objective, r.bound, f"{r.seconds:.1f}"])
        rows.append({"section": "flow", **r.as_dict()})


def grid8(args, rows):
    from topoalloc.curves import make_ordering
    from topoalloc.topology import parse_machine

    limit = 60 if args.quick else args.grid_limit
    print(f"\n### 8×8 mesh, window:3: CP-SAT ({limit:g} s, {args.workers} worker(s)) beside the curves\n")
    top = parse_machine("mesh:8x8")
    _head(["ordering", "cost window:3 linear", "cost window:3 ring"])
    costs = {}
    for name in ("hilbert", "snake", "row_major"):
        order = make_ordering(name, top).node_at_rank.tolist()
        costs[name] = (ordering_cost(top, order, "window:3"), ordering_cost(top, order, "window:3", ring=True))
        _row([name, *costs[name]])
    r = optimal_ordering(top, "window:3", time_limit=limit, workers=args.workers)
    ring_cost = ordering_cost(top, r.order, "window:3", ring=True) if r.order else None
    _row([f"CP-SAT best found ({r.status})", r.objective, ring_cost])
    _row(["CP-SAT proven lower bound", r.bound, ""])
    rows.append({"section": "grid8", "curves": costs, **r.as_dict()})


def minspan(args, rows):
    print("\n### Minimum-span offline, 32 processors × 15 jobs (1 worker; target ≤ 60 s)\n")
    print("Instances: `random_fixed_instance(32, 15, seed)`. 'packed' = solved by the contiguous phase")
    print("(every job on consecutive ranks, so every span equals its size: the trivial bound).\n")
    _head(["seed", "objective", "span", "status", "value", "bound", "greedy", "packed", "seconds", "met"])
    seeds = range(1, 3) if args.quick else range(1, 11)
    for seed in seeds:
        inst = random_fixed_instance(32, 15, seed)
        for objective in ("sum", "max", "sum_per_size"):
            for ring in (False, True):
                r = min_span_allocation(inst, 32, objective=objective, ring=ring, time_limit=60, workers=1)
                met = r.status == "optimal" and r.seconds <= 60
                packed = r.spans is not None and list(r.spans) == [j.size for j in inst]
                _row([seed, objective, "ring" if ring else "linear", r.status, r.objective, r.bound, r.warm_start_objective, "yes" if packed else "no", f"{r.seconds:.2f}", "met" if met else "MISSED"])
                d = r.as_dict()
                d.pop("nodes")
                rows.append({"section": "minspan", "seed": seed, "met": met, **d})


def hard(args, rows):
    """The fragmenting family: the machine full at every instant, proven to admit no contiguous packing."""
    from topoalloc.ilp.minspan import fragmenting_instance

    print("\n### Minimum-span offline on the fragmenting family (1 worker, limit 60 s)\n")
    print("Instances: `fragmenting_instance(N, 10, seed)` — every one proven to admit no contiguous packing, so the")
    print("contiguous phase cannot settle it; 'found' = seconds to draw and prove the instance.\n")
    _head(["N", "seed", "jobs", "found s", "objective", "status", "value", "bound", "greedy", "seconds"])
    seeds = range(2) if args.quick else range(5)
    for n in (16, 32):
        for seed in seeds:
            t0 = time.perf_counter()
            inst = fragmenting_instance(n, 10, seed)
            found = time.perf_counter() - t0
            for objective in ("sum", "max"):
                r = min_span_allocation(inst, n, objective=objective, time_limit=60, workers=1)
                _row([n, seed, len(inst), f"{found:.2f}", objective, r.status, r.objective, r.bound, r.warm_start_objective, f"{r.seconds:.2f}"])
                d = r.as_dict()
                d.pop("nodes")
                rows.append({"section": "hard", "n": n, "seed": seed, **d})


def gap(args, rows):
    heuristics = ["sorted_free_list", "first_fit", "best_fit", "sum_of_squares", "flat"]
    inst = 10 if args.quick else 50
    print(f"\n### Online / optimum, max span, 16 processors, 10 jobs, {inst} random instances (seed 1)\n")
    _head(["heuristic", "compared", "mean", "median", "p90", "worst", "optimal share", "seconds"])
    for h in heuristics:
        rep = gap_study(h, processors=16, jobs=10, instances=inst, seed=1, objective="max")
        d = rep.as_dict()
        _row([h, d["compared"], f"{d['mean']:.3f}", f"{d['median']:.3f}", f"{d['p90']:.3f}", f"{d['worst']:.3f}", f"{d['share_optimal']:.2f}", f"{rep.seconds:.1f}"])
        rows.append({"section": "gap", **d})
    ns = (4, 8, 16) if args.quick else (4, 8, 16, 32, 64)
    print("\n### Adaptive adversary (N unit jobs, release the two placed farthest apart, then a 2-job): max-span ratio online/optimum\n")
    _head(["heuristic", "span"] + [f"N={n}" for n in ns])
    for h in ("sorted_free_list", "first_fit", "best_fit", "sum_of_squares"):
        for ring in (False, True):
            spec = h + (":span=ring" if ring else "")
            cells = []
            for n in ns:
                inst = adaptive_adversary(spec, n, ring=ring)
                on = run_online(spec, inst, n, ring=ring)
                opt = min_span_allocation(inst, n, objective="max", ring=ring, time_limit=60)
                ratio = max(on.spans) / float(opt.objective) if opt.status == "optimal" else None
                cells.append(f"{ratio:.1f}" if ratio is not None else f"({opt.status})")
                rows.append({"section": "adaptive", "heuristic": spec, "processors": n, "online_max_span": max(on.spans), "optimum": float(opt.objective), "status": opt.status})
            _row([h, "ring" if ring else "linear"] + cells)
    sizes = (4, 8) if args.quick else (4, 8, 12, 16, 24)
    steps = 40 if args.quick else args.adv_steps
    print(f"\n### Worst ratio found by a blind hill-climb from random instances (max span; {steps} steps × 2 restarts, jobs = processors/2 + 2)\n")
    _head(["heuristic"] + [f"N={n}" for n in sizes])
    for h in ("sorted_free_list", "first_fit", "best_fit", "sum_of_squares"):
        cells = []
        for n in sizes:
            t0 = time.perf_counter()
            a = adversarial_search(h, processors=n, jobs=n // 2 + 2, objective="max", steps=steps, restarts=2, seed=1, time_limit=20)
            cells.append(f"{a.worst:.2f}")
            rows.append({"section": "adversarial", "seconds": time.perf_counter() - t0, **a.as_dict()})
        _row([h] + cells)


SECTIONS = {"ablation": ablation, "ordering": ordering, "dp": dp, "flow": flow, "grid8": grid8, "minspan": minspan, "hard": hard, "gap": gap}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sections", nargs="+", choices=list(SECTIONS), default=list(SECTIONS))
    p.add_argument("--quick", action="store_true")
    p.add_argument("--workers", type=int, default=2, help="CP-SAT workers for the large orderings (default 2 = the cores)")
    p.add_argument("--small-limit", type=float, default=60.0)
    p.add_argument("--big-limit", type=float, default=600.0)
    p.add_argument("--grid-limit", type=float, default=300.0)
    p.add_argument("--flow-limit", type=float, default=120.0)
    p.add_argument("--adv-steps", type=int, default=150)
    p.add_argument("--json", metavar="FILE")
    args = p.parse_args(argv)
    print(f"# bench_ilp — {time.strftime('%Y-%m-%d')}, {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}")
    rows: list[dict] = []
    for name in args.sections:
        SECTIONS[name](args, rows)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=1, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main())
