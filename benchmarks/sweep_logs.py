"""Every allocator on every archive log, each on machines of the log's own size: seconds, or both engines compared.

The performance issue's title asks for "every scheduler x every allocator x every trace"; the targets of
``bench_scaling.py`` read a few of those cells closely, this script reads them all, one process a run (a limit
stops a run that takes too long, and its cell says so):

* by default: ``topoalloc.simulate(log, clean=True)`` with every metric, as ``topoalloc simulate
  --clean`` runs it; a cell is the run's seconds (reading the log included), ``refused`` where the allocator can
  never place one of the log's jobs (the message is printed below the table), ``> LIMIT`` where the limit
  stopped it.
* ``--compare``: the first ``--jobs`` jobs of each log (default 600) under both engines (``engine="auto"``: the
  compiled kernel where it applies; ``engine="python"``: the general engine, the reference), each job's start
  and nodes hashed (SHA-256); a cell is ``=`` where the two are identical (``= (refused)``: both refuse the same
  job with the same message), ``DIFFERENT`` where they are not, and the exit status is 1 if any cell is; each
  run's line gives both engines' seconds (the simulation alone).

Each log runs on a mesh, a torus and a hypercube of about its processor count (``MACHINES``); an allocator runs on
the one its family is written for (``FAMILY``), the 2-D Buddy on the smallest power-of-two square that holds the
log, the flat machine without a topology.  Allocators for machines of other kinds (TPU slices, Slurm's block and
tree plugins, indirect networks) are not swept here: ``bench_scaling.py --only slices`` and ``--only large``
time them.

Usage: python benchmarks/sweep_logs.py [--compare] [--scheduler S] [--jobs N] [--limit SECONDS] [--workers N]
       [--log NAME ...] [--allocator NAME ...]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
TRACES = Path(os.environ.get("TOPOALLOC_TRACES", HERE.parents[0].parent / "shared" / "traces"))

#: log -> (mesh, torus, hypercube, power-of-two square): machines of about the log's processor count
MACHINES = {
    "KTH-SP2-1996-2.1-cln.swf": ("mesh:10x10", "torus:5x5x4", "hypercube:7", "mesh:16x16"),
    "NASA-iPSC-1993-3.1-cln.swf": ("mesh:16x8", "torus:4x4x8", "hypercube:7", "mesh:16x16"),
    "SDSC-SP2-1998-4.2-cln.swf.gz": ("mesh:16x8", "torus:4x4x8", "hypercube:7", "mesh:16x16"),
    "CTC-SP2-1996-3.1-cln.swf.gz": ("mesh:26x13", "torus:7x7x7", "hypercube:9", "mesh:32x32"),
    "Sandia-Ross-2001-1.1-cln.swf.gz": ("mesh:39x40", "torus:12x12x11", "hypercube:11", "mesh:64x64"),
    "LANL-CM5-1994-4.1-cln.swf.gz": ("mesh:32x32", "torus:8x8x16", "hypercube:10", "mesh:32x32"),
    "SDSC-BLUE-2000-4.2-cln.swf.gz": ("mesh:48x24", "torus:8x12x12", "hypercube:11", "mesh:64x64"),
    "HPC2N-2002-2.2-cln.swf.gz": ("mesh:16x15", "torus:6x8x5", "hypercube:8", "mesh:16x16"),
    "LLNL-Atlas-2006-2.1-cln.swf": ("mesh:96x96", "torus:16x24x24", "hypercube:14", "mesh:128x128"),
}

#: allocator -> the machine of MACHINES it runs on (index: 0 mesh, 1 torus, 2 hypercube, 3 square; None: flat)
FAMILY: dict[str, int | None] = {"flat": None}
FAMILY.update(dict.fromkeys(["buddy", "gray_code", "free_list", "afl"], 2))
FAMILY.update(dict.fromkeys(["ep", "nep", "first_fit", "best_fit", "sum_of_squares", "sorted_free_list", "mc1x1", "nearest", "mm"], 1))
FAMILY.update(dict.fromkeys(["adaptive_scan", "anca_bf", "anca_ff", "frame_sliding", "mesh_best_fit", "mesh_first_fit",
                             "mesh_random", "mbs", "paging", "pald"], 0))
FAMILY["buddy_2d"] = 3

#: registered allocators for machines of other kinds, not swept here (see the module notes)
OTHER_MACHINES = frozenset({"slice", "block", "tree", "contiguous", "random_nodes", "random_routers", "round_robin"})


def log_path(log: str) -> Path:
    """Where a log is: in TRACES as named, or gzipped beside that name."""
    path = TRACES / log
    return path if path.exists() or not (TRACES / f"{log}.gz").exists() else TRACES / f"{log}.gz"


def one(spec: dict) -> dict:
    """One cell, in this process: spec keys log, machine, allocator, scheduler, jobs (None: all), compare."""
    import numpy as np

    import topoalloc
    from topoalloc.errors import RequestNeverFits
    from topoalloc.workload import read_swf

    t0 = time.perf_counter()
    w = read_swf(log_path(spec["log"]))
    if spec.get("jobs") is not None:
        w = w.take(np.arange(min(len(w), spec["jobs"])))
    out: dict = {}
    for engine in ("auto", "python") if spec["compare"] else ("auto",):
        t1 = time.perf_counter()
        try:
            r = topoalloc.simulate(w, machine=spec["machine"], allocator=spec["allocator"], scheduler=spec["scheduler"],
                                   clean=True, engine=engine, record_allocations=spec["compare"])
        except RequestNeverFits as e:  # (a refusal: the same message from both engines is the same answer)
            out[engine] = {"refused": str(e)}
            continue
        if spec["compare"]:
            h = hashlib.sha256(np.asarray(r.start, dtype=np.float64).tobytes())
            for j in range(len(r.start)):
                h.update(np.asarray(r.nodes_of(j), dtype=np.int64).tobytes())
            out[engine] = {"sha256": h.hexdigest(), "mean_wait": r.summary()["mean_wait"]}
        else:
            out[engine] = {"jobs": r.summary()["jobs"], "mean_wait": r.summary()["mean_wait"]}
        out[f"{engine}_seconds"] = time.perf_counter() - t1
    out["seconds"] = time.perf_counter() - t0
    return out


def machine_of(log: str, allocator: str) -> str | None:
    """The machine of ``log``'s size that ``allocator``'s family runs on (None: the flat machine)."""
    k = FAMILY[allocator]
    return None if k is None else MACHINES[log][k]


def cells(logs: list[str], allocators: list[str]) -> list[tuple[str, str, str | None]]:
    """(log, allocator, machine) for every log and allocator."""
    return [(log, a, machine_of(log, a)) for log in logs for a in allocators]


#: the runs under way (each its own process group), so that Ctrl-C stops them all
RUNNING: set[subprocess.Popen] = set()
_RUNNING_LOCK = threading.Lock()
#: set at Ctrl-C: the runs it stops are not reported as failed
_STOPPING = threading.Event()


def _kill(p: subprocess.Popen) -> None:
    """Stop a run and its children (its process group; gone already: nothing to do)."""
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def run(spec: dict, limit: float) -> dict:
    """One cell in a new process, stopped (with its children) after ``limit`` seconds."""
    p = subprocess.Popen([sys.executable, __file__, "--one", json.dumps(spec)], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, start_new_session=True)
    with _RUNNING_LOCK:
        RUNNING.add(p)
    try:
        out, err = p.communicate(timeout=limit)
    except subprocess.TimeoutExpired:
        _kill(p)
        p.communicate()
        return {"stopped": True}
    finally:
        with _RUNNING_LOCK:
            RUNNING.discard(p)
    if p.returncode:
        lines = err.strip().splitlines()
        return {"failed": lines[-1] if lines else f"exit status {p.returncode}"}
    return json.loads(out)


def seconds(t: float) -> str:
    """A time as the table prints it: tenths of a second, hundredths under one (a whole small log on the flat
    machine takes a few hundredths, which tenths would print as 0.0)."""
    return f"{t:.2f}" if t < 1 else f"{t:.1f}"


def verdict(res: dict, compare: bool, limit: float) -> str:
    """A cell of the table."""
    if res.get("stopped"):
        return f"> {limit:.0f} s"
    if "failed" in res:
        return "FAILED"
    if not compare:
        return "refused" if "refused" in res["auto"] else seconds(res["seconds"])
    a, b = res["auto"], res["python"]
    return "DIFFERENT" if a != b else "= (refused)" if "refused" in a else "="


def main() -> int:
    if len(sys.argv) == 3 and sys.argv[1] == "--one":
        print(json.dumps(one(json.loads(sys.argv[2]))))
        return 0
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--compare", action="store_true", help="both engines on the first --jobs jobs, per-job starts and nodes compared")
    ap.add_argument("--scheduler", default="easy", help="scheduler spec (default easy)")
    ap.add_argument("--jobs", type=int, default=None, metavar="N", help="the first N jobs of each log (--compare: default 600; else all)")
    ap.add_argument("--limit", type=float, default=240.0, metavar="SECONDS", help="stop a run after this long (default 240)")
    ap.add_argument("--workers", type=int, default=2, metavar="N", help="runs at a time (default 2)")
    ap.add_argument("--log", action="append", choices=sorted(MACHINES), metavar="LOG", help="only these logs (default: all nine)")
    ap.add_argument("--allocator", action="append", choices=sorted(FAMILY), metavar="NAME", help="only these allocators (default: all)")
    args = ap.parse_args()
    if not args.limit > 0:
        ap.error(f"argument --limit: expected a positive number of seconds, got {args.limit}")
    if args.workers < 1:
        ap.error(f"argument --workers: expected at least 1, got {args.workers}")
    if args.jobs is not None and args.jobs < 1:
        ap.error(f"argument --jobs: expected at least 1, got {args.jobs}")
    import topoalloc  # noqa: F401  (registers everything)
    from topoalloc.errors import TopoallocError
    from topoalloc.registry import SCHEDULERS

    try:
        SCHEDULERS.create(args.scheduler, argument="scheduler")
    except TopoallocError as e:
        ap.error(f"argument --scheduler: {e}")
    jobs = args.jobs if args.jobs is not None or not args.compare else 600
    logs = args.log or list(MACHINES)
    missing = [log for log in logs if not log_path(log).exists()]
    if missing:
        ap.error(f"no such log in {TRACES} (set TOPOALLOC_TRACES): {', '.join(missing)}")
    allocators = args.allocator or list(FAMILY)
    todo = cells(logs, allocators)
    what = f"both engines, first {jobs} jobs" if args.compare else ("whole logs" if jobs is None else f"first {jobs} jobs")
    print(f"{len(todo)} runs, {args.scheduler}, {what}, {args.workers} at a time, limit {args.limit:.0f} s", flush=True)

    def cell(c: tuple[str, str, str | None]) -> tuple[tuple[str, str, str | None], dict]:
        log, a, machine = c
        spec = {"log": log, "allocator": a, "machine": machine, "scheduler": args.scheduler, "jobs": jobs, "compare": args.compare}
        res = run(spec, args.limit)
        if _STOPPING.is_set():
            return c, res
        took = " ".join(f"{e} {res[f'{e}_seconds']:.2f} s" for e in ("auto", "python") if f"{e}_seconds" in res) if args.compare else ""
        print(f"  {log.split('-')[0]:<12} {a:<17} {machine or 'flat':<15} {verdict(res, args.compare, args.limit):<12} {took}".rstrip(), flush=True)
        return c, res

    ex = ThreadPoolExecutor(args.workers)
    try:
        results = dict(ex.map(cell, todo))
    except KeyboardInterrupt:  # (the runs not started are dropped, those under way stopped: nothing left behind)
        _STOPPING.set()
        ex.shutdown(wait=False, cancel_futures=True)
        with _RUNNING_LOCK:
            for p in RUNNING:
                _kill(p)
        print("sweep_logs: interrupted", file=sys.stderr)
        return 130
    ex.shutdown()
    short = {log: "-".join(log.split("-")[:2]) for log in logs}
    print("\n| allocator | " + " | ".join(short[log] for log in logs) + " |")
    print("|---|" + "---:|" * len(logs))
    notes = {}
    for a in allocators:
        row = []
        for log in logs:
            res = results[(log, a, machine_of(log, a))]
            row.append(verdict(res, args.compare, args.limit))
            if "failed" in res:
                notes[f"{a} on {short[log]}"] = res["failed"]
            for engine in ("auto", "python"):
                if "refused" in res.get(engine, {}):
                    notes.setdefault(f"{a} on {short[log]}", res[engine]["refused"])
        print(f"| `{a}` | " + " | ".join(row) + " |")
    for where, why in notes.items():
        print(f"* {where}: {why}")
    bad = sum(verdict(r, args.compare, args.limit) in ("DIFFERENT", "FAILED") for r in results.values())
    print(f"\n{len(results)} runs: {bad} different or failed")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
