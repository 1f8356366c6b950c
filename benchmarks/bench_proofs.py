"""Wall and CPU time of the proofs (``topoalloc prove torus|hypercube|deadlock [--full]``).

Target (task on the torus proofs): EP/NEP proved in every orientation of every
shape (<= 6 dimensions, <= 2^12 nodes, every power-of-two m) within about
2 minutes on 2 cores, in the default test tier; the slow tier (conversions in
every orientation too) within about 10 minutes.

Prints one line per proof row (seconds, cases, verdict, method, property) and the totals.
CPU time (process time) is printed beside wall time because the machine may be
shared: on a busy machine wall time is an upper bound.

Usage: python benchmarks/bench_proofs.py [--family torus|hypercube|deadlock] [--full] [--workers N]
"""

from __future__ import annotations

import argparse
import platform
import sys
import time

from topoalloc.proofs.report import method_label, run_family


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--family", choices=["torus", "hypercube", "deadlock"], default="torus")
    ap.add_argument("--full", action="store_true", help="torus: conversions in every orientation too (the slow tier); deadlock: larger machines")
    ap.add_argument("--workers", type=int, default=1, help="processes for the conversion proofs")
    args = ap.parse_args(argv)
    print(f"python {platform.python_version()} on {platform.machine()} {platform.system()}")
    w0, c0 = time.perf_counter(), time.process_time()
    rows = run_family(args.family, full=args.full, workers=args.workers)
    wall, cpu = time.perf_counter() - w0, time.process_time() - c0
    for r in rows:
        print(f"{r['seconds']:8.1f} s  {r['cases']:6d} cases  {'holds' if r['holds'] else 'FAILS'}  [{method_label(r)}]  {r['property']}")
    target = (600 if args.full else 120) if args.family == "torus" else None
    aim = f"; target <= {target} s wall on 2 cores" if target else ""
    print(f"total: {wall:.1f} s wall, {cpu:.1f} s CPU of this process (workers' CPU not included{aim})")
    return 0 if all(r["holds"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
