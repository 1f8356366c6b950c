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

__all__ = ["run_cell", "EXTRA_METRICS", "WINDOW_METRICS", "check_metric_name", "KNOWN_METRICS", "calibrated_runtime", "window_metrics"]

#: summary keys that are numbers (besides the registered metrics)
_SUMMARY_NUMBERS = ("jobs", "nodes", "first_submit", "last_end", "mean_pairwise_l1")

#: metrics computed here from the result (NAME or NAME:option=value), with what they mean
EXTRA_METRICS = {
    "utilization_unrounded": "utilization with each job's size before round_pow2 (scaled, not rounded)",
    "first_start_to_last_end": "time from the first job's start to the last job's end",
    "mean_wait_of_size": "mean wait of the jobs of one size: mean_wait_of_size:size=30",
}

#: metrics over a measurement window: the jobs ``warmup + 1 .. warmup + measured`` in submission order
#: (cell parameters ``warmup``, default 0, and ``measured``, default all the rest)
WINDOW_METRICS = {
    "window_blocks": "mean blocks per job (the allocator's own blocks)",
    "window_response": "mean response time (end - submit)",
    "window_service": "mean service time (end - start)",
    "window_wait": "mean wait (start - submit)",
    "window_utilization": "time-average of allocated processors / machine, from the window's first to its last arrival",
    "window_packet_blocking": "mean packet blocking time (cycles), weighted by messages, of the window's jobs that sent any",
    "window_packet_latency": "mean packet latency (cycles), weighted by messages, of the window's jobs that sent any",
}
EXTRA_METRICS.update({k: f"{v} over the measurement window" for k, v in WINDOW_METRICS.items()})


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
        from ..topology import parse_machine

        x = parse_size_distribution(p.get("x", "uniform:1,8"))
        y = parse_size_distribution(p["y"]) if "y" in p else None
        nodes = parse_machine(p["machine"]).n_nodes if "machine" in p else None
        if p.get("calibrated_runtime"):
            common["mean_runtime"] = calibrated_runtime(p)
        return mesh_workload(p.get("n_jobs", 1000), x=x, y=y, square=p.get("square", False), machine_nodes=nodes, **common)
    if kind == "cplant-stream":
        return cplant_stream(int(seed))
    raise ValueError(f"unknown synthetic workload {kind!r}")


_CALIBRATED: dict[tuple[Any, ...], float] = {}


def calibrated_runtime(p: dict[str, Any]) -> float:
    """E[W·L·T] / E[W·L]: the size-weighted mean communication time of a job alone, in a submesh at the origin.

    For ``calibrated_runtime = true`` (Bani-Ahmad never defines system load;
    with it, ``load_definition = "machine"`` makes the load λ·E[W·L·T] / N,
    the offered load if every job were contiguous and alone on the network).
    ``calibration_frames`` frames (default 400) are drawn from the cell's X and
    Y distributions with a fixed seed (12345, independent of the replication);
    T is the time of the job's ``calibration_traffic`` (default: its
    ``traffic``) alone on an idle ``network``, its processes row-major in a
    ``W × L`` submesh.  A one-processor job sends nothing (T = 0).  Memoised
    per process.
    """
    from ..network import NetworkConfig
    from ..network.jobs import JobSpec, run_jobs
    from ..topology import parse_machine
    from ..workload.synthetic import parse_size_distribution

    for need in ("machine", "network"):
        if need not in p:
            raise ValueError(f"calibrated_runtime needs {need!r} (the job's time alone on the network)")
    traffic = p.get("calibration_traffic", p.get("traffic"))
    if traffic is None:
        raise ValueError("calibrated_runtime needs 'traffic' or 'calibration_traffic'")
    frames = int(p.get("calibration_frames", 400))
    key = (p["machine"], p["network"], traffic, frames, p.get("x", "uniform:1,8"), p.get("y"), p.get("square", False))
    if key in _CALIBRATED:
        return _CALIBRATED[key]
    top = parse_machine(p["machine"])
    X = int(top.dims[0])  # type: ignore[attr-defined]
    xd = parse_size_distribution(key[4])
    yd = parse_size_distribution(key[5]) if key[5] is not None else xd
    rng = np.random.default_rng(12345)
    ws = xd.sample(rng, frames)
    ls = ws.copy() if key[6] else yd.sample(rng, frames)
    cfg = NetworkConfig.parse(p["network"])
    seen: dict[tuple[int, int], float] = {}
    num = den = 0.0
    for w, l in zip(ws.tolist(), ls.tolist()):
        if (w, l) not in seen:
            nodes = tuple(a + X * b for b in range(l) for a in range(w))
            seen[(w, l)] = 0.0 if len(nodes) < 2 else float(run_jobs(top, [JobSpec(1, 0, nodes, traffic)], cfg, alone=False)[0].comm_time)
        num += w * l * seen[(w, l)]
        den += w * l
    if not num > 0:
        raise ValueError("calibrated_runtime: the jobs send nothing (every calibration frame has one processor)")
    _CALIBRATED[key] = num / den
    return _CALIBRATED[key]


def window_metrics(cell: Cell, result: Any) -> dict[str, float]:
    """The :data:`WINDOW_METRICS` of a run (see there); NaN where the run has nothing to measure."""
    n = len(result)
    warm = int(cell.params.get("warmup", 0))
    meas = int(cell.params.get("measured", max(0, n - warm)))
    if warm + meas > n or meas < 1:
        raise ValueError(f"the measurement window (warmup {warm} + measured {meas} jobs) needs {warm + meas} jobs; the run has {n}")
    sl = slice(warm, warm + meas)
    submit = np.asarray(result.workload.submit, dtype=float)
    start, end = np.asarray(result.start, dtype=float), np.asarray(result.end, dtype=float)
    out = {
        "window_blocks": float(np.mean(result.blocks[sl])) if result.blocks is not None else math.nan,
        "window_response": float(np.mean(end[sl] - submit[sl])),
        "window_service": float(np.mean(end[sl] - start[sl])),
        "window_wait": float(np.mean(start[sl] - submit[sl])),
    }
    t0, t1 = float(submit[warm]), float(submit[warm + meas - 1])
    busy = np.clip(np.minimum(end, t1) - np.maximum(start, t0), 0.0, None)
    nodes = int(result.topology.n_nodes)
    out["window_utilization"] = float(np.dot(busy, result.allocated_size)) / (nodes * (t1 - t0)) if t1 > t0 else math.nan
    out["window_packet_blocking"] = out["window_packet_latency"] = math.nan
    if result.network is not None:
        pj = result.network["per_job"]
        msg = np.nan_to_num(np.asarray(pj["messages"], dtype=float)[sl])
        ok = msg > 0
        if ok.any():
            out["window_packet_blocking"] = float(np.dot(msg[ok], np.asarray(pj["blocking_mean"])[sl][ok]) / msg[ok].sum())
            out["window_packet_latency"] = float(np.dot(msg[ok], np.asarray(pj["latency_mean"])[sl][ok]) / msg[ok].sum())
    return out


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
    if "window_blocks" in cell.metrics:
        kw["engine"] = "python"  # the compiled counting kernel records no allocations, hence no blocks
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


def _extra(name: str, cell: Cell, workload: Any, result: Any, summary: dict[str, Any], memo: dict[str, Any]) -> float:
    base = name.split(":", 1)[0]
    if base in WINDOW_METRICS:
        if "window" not in memo:
            memo["window"] = window_metrics(cell, result)
        return memo["window"][base]
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
            memo: dict[str, Any] = {}
            for m in cell.metrics:
                if m.split(":", 1)[0] in EXTRA_METRICS:
                    metrics[m] = _extra(m, cell, workload, result, summary, memo)
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
