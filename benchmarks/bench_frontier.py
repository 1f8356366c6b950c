"""Push the exactness frontier of window-3 orderings (issue: proofs that catch real bugs, item 6).

Target: the 5×5 mesh, the 4×4×2 and 3×3×3 meshes and the 5-cube proven optimal
or bracketed within 2 % (window:3 weights 4/2/1, linear rank distance), with
the table of those orderings beside the Hilbert, snake and row-major costs.

For every machine it runs the local search and the certified Lagrangian bound
(``topoalloc.ilp.lagrange``; the exact DP for 16-node machines), checks the
entry from first principles (``topoalloc.ilp.frontier.check_entry``) and prints
the row, the seconds it took and, for the four named machines, met/missed.

Usage::

    python benchmarks/bench_frontier.py                      # every machine of the table (about 2 h: the 8x8 mesh alone took 65 min with 200 steps)
    python benchmarks/bench_frontier.py --machines mesh:5x5  # one row
    python benchmarks/bench_frontier.py --write              # also rewrite the committed table
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time

from topoalloc.ilp.frontier import FRONTIER_FILE, FRONTIER_MACHINES, build_entry, frontier_markdown

TARGETS = {"mesh:5x5", "mesh:4x4x2", "mesh:3x3x3", "hypercube:5"}
WITHIN = 0.02


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--machines", nargs="+", default=list(FRONTIER_MACHINES))
    ap.add_argument("--iterations", type=int, default=600, help="subgradient steps per machine (default 600)")
    ap.add_argument("--search-iterations", type=int, default=300_000, help="annealing moves per restart (default 300000)")
    ap.add_argument("--restarts", type=int, default=8)
    ap.add_argument("--write", action="store_true", help=f"write the entries to {FRONTIER_FILE.name} (replacing the machines given)")
    args = ap.parse_args(argv)
    print(f"# bench_frontier, {time.strftime('%Y-%m-%d %H:%M')}, {platform.machine()}, Python {platform.python_version()}")
    entries = []
    for m in args.machines:
        e = build_entry(m, iterations=args.iterations, search_iterations=args.search_iterations, restarts=args.restarts)
        entries.append(e)
        verdict = ""
        if e["machine"] in TARGETS:
            ok = e["status"] == "optimal" or e["gap"] <= WITHIN
            verdict = f"   target proven or within {100 * WITHIN:.0f} %: {'met' if ok else 'MISSED'}"
        print(f"{e['machine']:<12} n={e['n']:<3} {e['status']:<9} best {e['objective']:<5} bound {e['bound']:<5} gap {100 * e['gap']:.2f} %  {e['seconds']:.1f} s{verdict}", flush=True)
    print()
    print(frontier_markdown(entries))
    if args.write:
        old = json.loads(FRONTIER_FILE.read_text())["entries"] if FRONTIER_FILE.exists() else []
        keep = {e["machine"]: e for e in old}
        keep.update({e["machine"]: e for e in entries})
        order = [m for m in FRONTIER_MACHINES if m in keep] + [m for m in keep if m not in FRONTIER_MACHINES]
        out = {"weights": "window:3", "rank_distance": "linear", "entries": [keep[m] for m in order]}
        FRONTIER_FILE.write_text(json.dumps(out, indent=1) + "\n")
        print(f"wrote {FRONTIER_FILE.name} ({len(out['entries'])} entries)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
