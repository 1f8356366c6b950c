"""Timing of the experiments engine (topoalloc sweep / reproduce) against the targets of its issue.

Each part prints what it measured, the target and the load average before and after
(the numbers mean little on a busy machine: say so beside them).

* ``mao``      — the full Mao, Chen & Watson sweep (both logs, 37 values of c, 888 runs) on a
                 local Dask cluster of one worker per core; target <= 600 s on 2 cores.
* ``overhead`` — Dask's overhead per cell: the same cells in this process and on a local
                 cluster of one worker (cluster start-up excluded, reported apart); target <= 5 %.
* ``scaling``  — 50 cells on 2 workers against 1 worker; target >= 1.8x.
* ``store``    — a 10,000-cell synthetic sweep of small runs: store size (target <= 100 MB)
                 and load time (target <= 2 s).

Usage: python benchmarks/bench_experiments.py [mao] [overhead] [scaling] [store] [--traces DIR] [--keep DIR]
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path

TRACES = Path(os.environ.get("TOPOALLOC_TRACES", Path(__file__).resolve().parents[1].parent / "shared" / "traces"))


def load_avg() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def dir_size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def bench_mao(root: Path, traces: Path) -> None:
    from topoalloc.experiments import load, run_sweep
    from topoalloc.experiments.reproduce import builtin_spec

    spec = builtin_spec("mao")
    out = root / "mao"
    before = load_avg()
    t0 = time.perf_counter()
    res = run_sweep(spec, out, trace_dirs=[traces], progress=False)
    wall = time.perf_counter() - t0
    df = load(out)
    print(f"mao full sweep: {res.ran} cells ({res.failed} failed), {wall:.1f} s wall = {wall / 60:.1f} min on {os.cpu_count()} cores "
          f"(target <= 600 s); simulation time summed over cells {df['seconds'].sum():.0f} s, longest cell {df['seconds'].max():.1f} s; "
          f"load average before {before}, after {load_avg()}")


def small_spec(n_cells: int, jobs: int, name: str, reps: int = 1):
    from topoalloc.experiments import parse_spec

    n = n_cells // reps
    loads = [round(0.30 + 0.6 * i / max(1, n - 1), 6) for i in range(n)]
    return parse_spec({
        "name": name,
        "metrics": ["utilization", "mean_wait", "mean_bounded_slowdown"],
        # a 2-D mesh allocator: the general engine (a flat machine now takes the compiled kernel, and its
        # cells of 0.01 s would time Dask's per-task cost, not a sweep)
        "fixed": {"synthetic": "poisson", "n_jobs": jobs, "sizes": "uniform:1,16", "machine": "mesh:8x4", "allocator": "mesh_first_fit",
                  "scheduler": "easy", "locality": False},
        "grid": {"load": loads},
        "replications": reps,
    })


def _overhead_of(out: Path, wall: float) -> tuple[float, float]:
    """(seconds per cell not spent simulating, mean simulating seconds per cell) of a one-worker run."""
    from topoalloc.experiments import load

    sec = load(out)["seconds"]
    return (wall - float(sec.sum())) / len(sec), float(sec.mean())


def bench_overhead(root: Path) -> None:
    """Two measures, each over the same 20 cells: (1) wall time minus the cells' own simulating time,
    per cell, on a local cluster of one worker (what Dask and the store add; robust to load);
    (2) wall time against the same cells in this process (best of two each, interleaved)."""
    from topoalloc.experiments.engine import _Dask, _InProcess, run_sweep

    spec = small_spec(20, 15000, "overhead")
    before = load_avg()
    t0 = time.perf_counter()
    runner = _Dask(1, None, {})
    startup = time.perf_counter() - t0
    walls: dict[str, list[float]] = {"in": [], "dask": []}
    per_cell: list[float] = []
    sim: list[float] = []
    try:
        for i in range(2):
            for kind in ("in", "dask"):
                out = root / f"overhead-{kind}-{i}"
                t0 = time.perf_counter()
                run_sweep(spec, out, runner=runner if kind == "dask" else _InProcess(), progress=False, compact=False)
                walls[kind].append(time.perf_counter() - t0)
                if kind == "dask":
                    o, s = _overhead_of(out, walls[kind][-1])
                    per_cell.append(o)
                    sim.append(s)
    finally:
        runner.close()
    t_in, t_dask = min(walls["in"]), min(walls["dask"])
    o, s = min(per_cell), sim[per_cell.index(min(per_cell))]
    print(f"dask overhead: 20 cells of about {s:.2f} s; on a local cluster of 1 worker, wall minus simulating time = "
          f"{o * 1000:.0f} ms per cell = {100 * o / s:.1f} % of a cell (target <= 5 %); "
          f"wall time best of 2: in process {t_in:.2f} s, on the cluster {t_dask:.2f} s ({100 * (t_dask - t_in) / t_in:+.1f} %); "
          f"cluster start-up {startup:.1f} s (once per sweep); load average before {before}, after {load_avg()}")


def bench_scaling(root: Path) -> None:
    from topoalloc.experiments.engine import _Dask, run_sweep

    spec = small_spec(50, 12000, "scaling")
    before = load_avg()
    walls = {}
    for n in (1, 2):
        runner = _Dask(n, None, {})
        try:
            t0 = time.perf_counter()
            run_sweep(spec, root / f"scale{n}", runner=runner, progress=False, compact=False)
            walls[n] = time.perf_counter() - t0
        finally:
            runner.close()
    print(f"scaling: 50 cells, 1 worker {walls[1]:.1f} s, 2 workers {walls[2]:.1f} s: speed-up {walls[1] / walls[2]:.2f}x "
          f"(target >= 1.8x); load average before {before}, after {load_avg()}")


def bench_store(root: Path) -> None:
    from topoalloc.experiments import load, run_sweep

    spec = small_spec(10_000, 40, "store", reps=100)
    out = root / "store"
    before = load_avg()
    t0 = time.perf_counter()
    res = run_sweep(spec, out, progress=False)
    wall = time.perf_counter() - t0
    size = dir_size(out)
    t0 = time.perf_counter()
    df = load(out)
    t_load = time.perf_counter() - t0
    print(f"store: {res.ran} cells in {wall:.0f} s; store {size / 2**20:.2f} MiB (target <= 100 MB); "
          f"load {t_load:.2f} s for {len(df)} rows x {len(df.columns)} columns (target <= 2 s); load average before {before}, after {load_avg()}")
    bench_loose(root, df)


def bench_loose(root: Path, df) -> None:
    """The same 10,000 results as one file per cell (a sweep stopped before its compaction): write cost, size, load time."""
    from topoalloc.experiments import Store, load

    loose = Store(root / "loose")
    metrics = df.attrs["metrics"]
    before = load_avg()
    t0 = time.perf_counter()
    with loose.writing():
        for rec in df.drop(columns=["seconds"]).to_dict("records"):
            m = {k: rec.pop(k) for k in metrics}
            loose.write({**rec, "_metrics": m, "_seconds": 0.0, "_worker": "bench"})
    t_write = time.perf_counter() - t0
    size = dir_size(root / "loose")
    t0 = time.perf_counter()
    n = len(load(root / "loose"))
    t_load = time.perf_counter() - t0
    print(f"store, one file per cell: writing {t_write / len(df) * 1000:.1f} ms per cell (by the client, atomically); {size / 2**20:.1f} MiB; "
          f"load {t_load:.2f} s for {n} rows (compaction at the end of a sweep, or at the start of the next, makes it one file); "
          f"load average before {before}, after {load_avg()}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("parts", nargs="*", default=["overhead", "scaling", "store", "mao"], choices=["mao", "overhead", "scaling", "store"])
    ap.add_argument("--traces", type=Path, default=TRACES)
    ap.add_argument("--keep", type=Path, default=None, help="keep the results folders here")
    args = ap.parse_args(argv)
    print(f"machine: {platform.machine()} {os.cpu_count()} cores, Python {platform.python_version()}; load average {load_avg()}")
    root = args.keep or Path(tempfile.mkdtemp(prefix="bench-experiments-"))
    root.mkdir(parents=True, exist_ok=True)
    try:
        for part in args.parts:
            {"mao": lambda: bench_mao(root, args.traces), "overhead": lambda: bench_overhead(root), "scaling": lambda: bench_scaling(root), "store": lambda: bench_store(root)}[part]()
            sys.stdout.flush()
    finally:
        if args.keep is None:
            shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
