"""Running one cell: build its workload, simulate, keep the metrics asked for.

:func:`run_cell` is what a Dask worker (or the in-process loop) executes.  It
never raises for a problem of the cell itself: an exception becomes a record
with ``status = "error"`` and the error text, so one bad cell does not stop a
sweep.  Traces are read once per process and kept (a worker runs many cells
of the same trace).
"""

from __future__ import annotations

import math
import os
import socket
import time
import traceback
from typing import Any

import numpy as np

from .spec import Cell

__all__ = ["run_cell", "EXTRA_METRICS", "check_metric_name", "KNOWN_METRICS"]

#: summary keys that are numbers (besides the registered metrics)
_SUMMARY_NUMBERS = ("jobs", "nodes", "first_submit", "last_end", "mean_pairwise_l1")

#: metrics computed here from the result (NAME or NAME:option=value), with what they mean
EXTRA_METRICS = {
    "utilization_unrounded": "utilization with each job's size before round_pow2 (scaled, not rounded)",
    "first_start_to_last_end": "time from the first job's start to the last job's end",
    "mean_wait_of_size": "mean wait of the jobs of one size: mean_wait_of_size:size=30",
}


def _known() -> list[str]:
    from ..registry import METRICS

    return sorted(set(METRICS.names()) | set(_SUMMARY_NUMBERS))


KNOWN_METRICS = _known


def check_metric_name(name: str) -> str | None:
    """None if ``name`` can be a metric column, else what is wrong with it."""
    base = name.split(":", 1)[0]
    if base in EXTRA_METRICS:
        if base == "mean_wait_of_size":
            from .. import spec as grammar

            try:
                s = grammar.parse(name)
                int(s.options["size"])
            except Exception:
                return f"{name!r}: write mean_wait_of_size:size=N"
        return None
    if ":" in name:
        return f"{name!r}: options are only for {', '.join(EXTRA_METRICS)}"
    if name in _known() or name.startswith(("locality.", "network.")):
        return None
    return f"unknown metric {name!r}; known: {', '.join(_known() + list(EXTRA_METRICS))}, locality.NAME.STAT, network.NAME"


_TRACES: dict[tuple[str, int | None], Any] = {}


def _trace(path: str, first: int | None) -> Any:
    from ..workload import read_swf

    key = (path, first)
    if key not in _TRACES:
        if (path, None) not in _TRACES:
            _TRACES[(path, None)] = read_swf(path)
        w = _TRACES[(path, None)]
        if first is not None:
            w = w.take(np.arange(min(first, len(w))))
        _TRACES[key] = w
    return _TRACES[key]


def build_workload(cell: Cell) -> Any:
    """The workload of a cell: its trace (read once per process), or the synthetic generator's output."""
    p = cell.params
    kind = p.get("synthetic")
    if kind is None:
        if cell.trace_path is None:
            raise ValueError("cell has neither a trace nor a synthetic workload")
        return _trace(cell.trace_path, p.get("trace_jobs"))
    from ..workload.synthetic import mesh_workload, parse_size_distribution, poisson_workload

    seed = p.get("workload_seed", p.get("rep", 1))
    common: dict[str, Any] = {"load": p.get("load", 0.5), "seed": seed}
    if "mean_runtime" in p:
        common["mean_runtime"] = p["mean_runtime"]
    if "load_definition" in p:
        common["load_definition"] = p["load_definition"]
    if kind == "poisson":
        from ..topology import parse_machine

        nodes = parse_machine(p["machine"]).n_nodes if "machine" in p else None
        return poisson_workload(
            p.get("n_jobs", 1000), sizes=parse_size_distribution(p.get("sizes", "uniform:1,8")), machine_nodes=nodes, estimate_factor=p.get("estimate_factor"), **common
        )
    if kind == "mesh":
        x = parse_size_distribution(p.get("x", "uniform:1,8"))
        y = parse_size_distribution(p["y"]) if "y" in p else None
        return mesh_workload(p.get("n_jobs", 1000), x=x, y=y, square=p.get("square", False), **common)
    if kind == "cplant-stream":
        return cplant_stream(int(seed))
    raise ValueError(f"unknown synthetic workload {kind!r}")


def cplant_stream(seed: int) -> Any:
    """Leung et al. §4's job stream: 91 jobs of 2 processors, 33 of 5, 31 of 25, 33 of 30, one every 30 s.

    The four large jobs come first (they fill the machine), the rest is
    shuffled with ``seed``, the last job is small; base run time 30 s × size,
    requested time twice that.
    """
    import random

    from ..workload.core import Workload

    rng = random.Random(seed)
    sizes = [2] * 91 + [5] * 33 + [25] * 31 + [30] * 33
    first = [30, 30, 25, 25]
    for s in first:
        sizes.remove(s)
    sizes.remove(2)
    rng.shuffle(sizes)
    order = first + sizes + [2]
    n = len(order)
    base = [30.0 * s for s in order]
    return Workload(job_id=list(range(1, n + 1)), submit=[30.0 * i for i in range(n)], run=base, size=order, requested_time=[2 * b for b in base], source=f"<cplant §4 stream, seed {seed}>")


_SIM_KEYS = ("machine", "allocator", "scheduler", "clean", "filters", "estimate", "scale_sizes", "round_pow2", "work_multiple", "scale_estimates", "seed", "runtime_model", "network", "traffic", "cycle", "service", "contention", "locality")


def simulate_cell(cell: Cell) -> tuple[Any, Any]:
    """(workload before transforms, SimulationResult) of a cell."""
    from ..api import simulate

    w = build_workload(cell)
    kw = {k: cell.params[k] for k in _SIM_KEYS if k in cell.params}
    wants_locality = not cell.metrics or any(m.startswith("locality.") or m == "mean_pairwise_l1" for m in cell.metrics)
    if not wants_locality and "locality" not in kw:
        kw["locality"] = False  # no locality metric kept: skip the work
    return w, simulate(w, **kw)


def _flatten(summary: dict[str, Any]) -> dict[str, float]:
    from ..registry import METRICS

    out: dict[str, float] = {}
    for k in (*METRICS.names(), *_SUMMARY_NUMBERS):
        if k in summary and isinstance(summary[k], (int, float)):
            out[k] = float(summary[k])
    for name, stats in (summary.get("locality") or {}).items():
        if isinstance(stats, dict):
            for stat, v in stats.items():
                if isinstance(v, (int, float)):
                    out[f"locality.{name}.{stat}"] = float(v)
    for k, v in (summary.get("network") or {}).items():
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            out[f"network.{k}"] = float(v)
    return out


def _extra(name: str, cell: Cell, workload: Any, result: Any, summary: dict[str, Any]) -> float:
    base = name.split(":", 1)[0]
    if base == "first_start_to_last_end":
        return float(np.max(result.end) - np.min(result.start)) if len(result) else math.nan
    if base == "mean_wait_of_size":
        from .. import spec as grammar

        size = int(grammar.parse(name).options["size"])
        sel = result.size == size
        return float(np.mean(result.wait[sel])) if sel.any() else math.nan
    if base == "utilization_unrounded":
        scale = float(cell.params.get("scale_sizes", 1) or 1)
        before = dict(zip(workload.job_id.tolist(), np.ceil(workload.size.astype(float) * scale).tolist()))
        span = summary["last_end"] - summary["first_submit"]
        ids = result.workload.job_id.tolist()
        work = float(sum(before[j] * t for j, t in zip(ids, (result.end - result.start).tolist())))
        return work / (summary["nodes"] * span) if span > 0 else math.nan
    raise KeyError(name)


def run_cell(cell: Cell) -> dict[str, Any]:
    """Simulate one cell; a record for the store (an error record if the cell raises).

    The record has ``key``, ``status`` (``ok``/``error``), ``error``, the cell's
    parameter columns, one column per metric, ``_seconds`` and ``_worker``
    (timing, kept apart from the results), and ``_jobs`` (the per-job table,
    as Parquet bytes) when the spec asks for job tables.
    """
    t0 = time.perf_counter()
    rec: dict[str, Any] = {"key": cell.key, "status": "ok", "error": None}
    rec.update(cell.row())
    try:
        workload, result = simulate_cell(cell)
        summary = result.summary()
        flat = _flatten(summary)
        if cell.metrics:
            metrics: dict[str, float] = {}
            for m in cell.metrics:
                if m.split(":", 1)[0] in EXTRA_METRICS:
                    metrics[m] = _extra(m, cell, workload, result, summary)
                elif m in flat:
                    metrics[m] = flat[m]
                else:
                    raise KeyError(f"metric {m!r} is not in this run's summary (it has {', '.join(sorted(flat))})")
        else:
            metrics = flat
        rec["_metrics"] = metrics
        if cell.job_tables:
            rec["_jobs"] = _jobs_bytes(result)
    except Exception as exc:  # a cell's own failure is data, not a crash of the sweep
        rec["status"] = "error"
        tb = traceback.format_exception(exc)
        rec["error"] = f"{type(exc).__name__}: {exc}\n" + "".join(tb[-3:])[-2000:]
    rec["_seconds"] = time.perf_counter() - t0
    rec["_worker"] = f"{socket.gethostname()}:{os.getpid()}"
    return rec


def _jobs_bytes(result: Any) -> bytes:
    import pyarrow as pa
    import pyarrow.parquet as pq

    buf = pa.BufferOutputStream()
    pq.write_table(pa.table(result.jobs_table()), buf, compression="zstd")
    return bytes(buf.getvalue().to_pybytes())
