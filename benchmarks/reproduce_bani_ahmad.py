"""Reproduce Bani-Ahmad's experiments (bounded ANCA on a 2-D mesh): Figures 1-12 and a claims table.

Set-up (the paper's "Simulation environment", with the choices it leaves open
named here and in benchmarks/README.md):

* mesh:20x20, FCFS (no backfilling); job frames W x L with each side the
  ceiling of an exponential variate of mean 10, redrawn until it is at most 20
  (``Exponential(10, 20)``); Poisson arrivals.
* Communication: every job sends all-to-all (rounds r = 1..n-1, process i to
  i + r mod n), ``messages`` messages of one packet of 8 flits in all, on a
  wormhole network with dimension-order routing, input buffers of one flit
  and one virtual channel (``--network``), cycle-accurate (flit level).  A
  job's processes lie on its blocks in the order granted, row-major within
  each block.  Service time = from allocation to the delivery of the job's
  last message (``service=communication``); jobs of one processor send nothing.
* System load (never defined in the paper) = λ · E[W·L·T] / 400, T the
  communication time of the job alone on an idle network in a W x L submesh:
  the offered load if every job were contiguous and alone.  E[W·L·T] is
  estimated once per message count from frames drawn from the same
  distribution (``calibrate``).
* Each replication: a fresh workload (same seeds for every allocator), the
  first ``warm-up`` jobs discarded, the next ``measured`` jobs measured, a
  tail of jobs after them keeps the machine loaded until they end.  PSU is the
  time-average of busy processors (allocated) over the window from the first
  to the last measured arrival.  Replications are added until the 95 %
  confidence interval's half-width is at most 5 % of the mean for every
  metric of the point (Student t), or ``max-reps`` is reached — reported
  per point (``reached``).

Experiments: Figs. 1-4 against load (messages per job 20, PBV 8); Figs. 5-8
against messages per job (5, 10, 20, 40, 80 at the arrival rate of load
0.5 with 20 messages: heavier communication is heavier load); Figs. 9-12
against the partitioning bound (1, 2, 4, 8, 16, 32, 64) at load 0.7.  Series:
MBS, Paging(0), ANCA-FF and ANCA-BF (the paper's modified ANCA, bounded),
contiguous First Fit and Best Fit as references.  ``--no-network`` runs the
same sweeps without communication (service = an exponential run time of mean
1): the allocation effects alone.

Outputs (``--out``, default ``benchmarks/results/bani_ahmad``): ``points.csv``
(one row per experiment point), ``figNN.csv`` and ``figNN.png`` per figure,
``claims.md`` (each of the paper's claims: holds / does not hold, with the
numbers).

Usage: python benchmarks/reproduce_bani_ahmad.py [--quick] [--workers 2] [--out DIR] [--no-network]
"""

from __future__ import annotations

import argparse
import csv
import math
import os
import platform
import sys
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

#: allocator specs of the series (the paper's modified ANCA is the package's default variant)
SERIES = {
    "MBS": "mbs",
    "Paging(0)": "paging:page_index=0,indexing=row_major",
    "ANCA-FF": "anca_ff:max_blocks={pbv}",
    "ANCA-BF": "anca_bf:max_blocks={pbv}",
    "FF": "mesh_first_fit",
    "BF": "mesh_best_fit",
}
NETWORK = "wormhole:packet=8,buffers=1,vcs=1"
METRICS = ("MBPJ", "MJRT", "MJST", "PSU", "MPBT", "MPL")
#: figure -> (y metric, x variable, series shown)
FIGURES = {
    1: ("MBPJ", "load", ("MBS", "ANCA-FF", "ANCA-BF")),
    2: ("MJRT", "load", ("MBS", "Paging(0)", "ANCA-FF", "ANCA-BF", "FF", "BF")),
    3: ("MJST", "load", ("MBS", "Paging(0)", "ANCA-FF", "ANCA-BF", "FF", "BF")),
    4: ("PSU", "load", ("MBS", "Paging(0)", "ANCA-FF", "ANCA-BF", "FF", "BF")),
    5: ("MJRT", "messages", ("MBS", "Paging(0)", "ANCA-FF", "ANCA-BF", "FF")),
    6: ("MPBT", "messages", ("MBS", "Paging(0)", "ANCA-FF", "ANCA-BF", "FF")),
    7: ("MPL", "messages", ("MBS", "Paging(0)", "ANCA-FF", "ANCA-BF", "FF")),
    8: ("PSU", "messages", ("MBS", "Paging(0)", "ANCA-FF", "ANCA-BF", "FF")),
    9: ("MBPJ", "pbv", ("MBS", "ANCA-FF", "ANCA-BF")),
    10: ("MJRT", "pbv", ("MBS", "ANCA-FF", "ANCA-BF", "FF")),
    11: ("MJST", "pbv", ("MBS", "ANCA-FF", "ANCA-BF", "FF")),
    12: ("PSU", "pbv", ("MBS", "ANCA-FF", "ANCA-BF", "FF")),
}
YLABEL = {"MBPJ": "mean blocks per job", "MJRT": "mean job response time", "MJST": "mean job service time",
          "PSU": "system utilization", "MPBT": "mean packet blocking time (cycles)", "MPL": "mean packet latency (cycles)"}
XLABEL = {"load": "system load", "messages": "messages per job", "pbv": "partitioning bound (blocks per job)"}


@dataclass(frozen=True)
class Setup:
    loads: tuple[float, ...]
    messages: tuple[int, ...]
    pbvs: tuple[int, ...]
    load_messages: int = 20  # messages per job of Figs. 1-4 and 9-12
    messages_load: float = 0.5  # the arrival rate of Figs. 5-8 (load with load_messages)
    pbv_load: float = 0.7
    pbv: int = 8
    warmup: int = 200
    measured: int = 1000
    tail: int = 200
    min_reps: int = 3
    max_reps: int = 10
    rel_ci: float = 0.05
    calib_frames: int = 400


FULL = Setup(loads=(0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8), messages=(5, 10, 20, 40, 80), pbvs=(1, 2, 4, 8, 16, 32, 64))
QUICK = Setup(loads=(0.2, 0.5, 0.8), messages=(10, 40), pbvs=(1, 4, 16), warmup=40, measured=200, tail=40,
              min_reps=1, max_reps=1, calib_frames=40)


@dataclass(frozen=True)
class Point:
    """One experiment point: a series at one x value, all its run parameters."""

    experiment: str  # "load" | "messages" | "pbv"
    series: str
    x: float
    spec: str
    rate_load: float  # load defining the arrival rate
    messages: int
    network: bool
    variant: str = ""  # reconciliation runs: "", "compute", "buffers4", "packet"


@dataclass
class Recorded:
    """An experiment point read back from ``points.csv`` (for ``--replot``): its statistics as written."""

    point: Point
    values: dict[str, tuple[float, float]]
    n: int
    done: bool

    @property
    def reps(self) -> list[dict[str, float]]:
        return [{}] * self.n

    def stats(self, metric: str) -> tuple[float, float]:
        return self.values.get(metric, (float("nan"), float("nan")))

    def reached(self, metrics: Sequence[str], rel: float) -> bool:
        return self.done


def read_points(path: Path) -> list[Any]:
    out: list[Any] = []
    for r in csv.DictReader(open(path)):
        p = Point(r["experiment"], r["series"], float(r["x"]), r["allocator"], float(r["load"]), int(r["messages"]), r["network"] == "True")
        vals = {}
        for m in METRICS + ("wait",):
            mean = float(r[m]) if r[m] else float("nan")
            half = float(r[m + "_ci"]) if r[m + "_ci"] else (float("inf") if r[m] else float("nan"))
            vals[m] = (mean, half)
        out.append(Recorded(p, vals, int(r["reps"]), r["reached"] == "True"))
    return out


@dataclass
class Outcome:
    point: Point
    reps: list[dict[str, float]] = field(default_factory=list)

    def stats(self, metric: str) -> tuple[float, float]:
        v = np.array([r[metric] for r in self.reps if np.isfinite(r[metric])])
        if v.size == 0:
            return float("nan"), float("nan")
        if v.size == 1:
            return float(v[0]), float("inf")
        from scipy import stats

        half = float(stats.t.ppf(0.975, v.size - 1) * v.std(ddof=1) / math.sqrt(v.size))
        return float(v.mean()), half

    def reached(self, metrics: Sequence[str], rel: float) -> bool:
        for m in metrics:
            mean, half = self.stats(m)
            if not np.isfinite(mean):
                continue
            if not (half <= rel * abs(mean) or (half == 0.0)):
                return False
        return True


# ---------------------------------------------------------------- the runs
def _frames(n: int, seed: int) -> np.ndarray:
    from topoalloc.workload.synthetic import Exponential

    rng = np.random.default_rng(seed)
    d = Exponential(10.0, 20)
    return np.stack([d.sample(rng, n), d.sample(rng, n)], axis=1)


_CALIB: dict[tuple[int, int, str], float] = {}


def calibrate(messages: int, frames: int, network: str) -> float:
    """E[W·L·T] / E[W·L]: the size-weighted mean communication time of a job alone in a contiguous submesh."""
    key = (messages, frames, network)
    if key in _CALIB:
        return _CALIB[key]
    from topoalloc.network import NetworkConfig
    from topoalloc.network.jobs import JobSpec, run_jobs
    from topoalloc.topology import parse_machine

    top = parse_machine("mesh:20x20")
    cfg = NetworkConfig.parse(network) if hasattr(NetworkConfig, "parse") else network
    seen: dict[tuple[int, int], float] = {}
    num = den = 0.0
    for w, l in _frames(frames, 12345).tolist():
        if (w, l) not in seen:
            nodes = tuple((x + 20 * y) for y in range(l) for x in range(w))
            if len(nodes) < 2:
                seen[(w, l)] = 0.0
            else:
                c = run_jobs(top, [JobSpec(1, 0, nodes, f"all-to-all:messages={messages},compute=0")], cfg, alone=False)[0]
                seen[(w, l)] = float(c.comm_time)
        num += w * l * seen[(w, l)]
        den += w * l
    _CALIB[key] = num / den
    return _CALIB[key]


def run_point(point: Point, rep: int, setup: Setup, mode: str) -> dict[str, float]:
    """One replication of one point: simulate and measure the jobs after the warm-up."""
    import topoalloc
    from topoalloc.workload.synthetic import Exponential, mesh_workload

    n = setup.warmup + setup.measured + setup.tail
    network = NETWORK.replace("buffers=1", "buffers=4") if point.variant == "buffers4" else NETWORK
    if point.variant == "packet":
        mode = "packet"
    if point.network:
        nominal = calibrate(setup.load_messages if point.experiment == "messages" else point.messages, setup.calib_frames, network)
    else:
        nominal = 1.0
    # with computation, a job computes for an exponential time of mean `nominal` after it communicates:
    # the arrival rate is set for twice the nominal service
    scale = 2.0 if point.variant == "compute" else 1.0
    w = mesh_workload(n, load=point.rate_load, x=Exponential(10.0, 20), y=Exponential(10.0, 20), mean_runtime=nominal * scale,
                      machine_nodes=400, load_definition="machine", seed=1000 + rep)
    if scale != 1.0:
        from topoalloc.workload.core import Workload

        w = Workload(job_id=w.job_id, submit=w.submit, run=w.run / scale, size=w.size, requested_time=w.requested_time, shape=w.shape)
    kw: dict[str, Any] = {}
    if point.network:
        kw = {"network": f"{network},mode={mode}", "traffic": f"all-to-all:messages={point.messages},compute=0", "contention": False,
              "service": "add" if point.variant == "compute" else "communication"}
    r = topoalloc.simulate(w, machine="mesh:20x20", allocator=point.spec, scheduler="fcfs", **kw)
    sl = slice(setup.warmup, setup.warmup + setup.measured)
    out = {
        "MBPJ": float(np.mean(r.blocks[sl])) if r.blocks is not None else float("nan"),
        "MJRT": float(np.mean(r.end[sl] - w.submit[sl])),
        "MJST": float(np.mean(r.end[sl] - r.start[sl])),
        "wait": float(np.mean(r.start[sl] - w.submit[sl])),
    }
    t0, t1 = float(w.submit[setup.warmup]), float(w.submit[setup.warmup + setup.measured - 1])
    busy = np.clip(np.minimum(r.end, t1) - np.maximum(r.start, t0), 0.0, None)
    out["PSU"] = float(np.dot(busy, r.allocated_size)) / (400.0 * (t1 - t0)) if t1 > t0 else float("nan")
    if point.network and r.network is not None:
        pj = r.network["per_job"]
        msg = np.nan_to_num(pj["messages"][sl])
        ok = msg > 0
        out["MPBT"] = float(np.dot(msg[ok], pj["blocking_mean"][sl][ok]) / msg[ok].sum()) if ok.any() else float("nan")
        out["MPL"] = float(np.dot(msg[ok], pj["latency_mean"][sl][ok]) / msg[ok].sum()) if ok.any() else float("nan")
    else:
        out["MPBT"] = out["MPL"] = float("nan")
    return out


def stopping_metrics(p: Point) -> tuple[str, ...]:
    """The metrics whose confidence intervals the stopping rule watches: those the point's figures show."""
    if p.experiment == "messages":
        return ("MJRT", "MPBT", "MPL", "PSU")
    return ("MBPJ", "MJRT", "PSU") + (("MJST",) if p.network else ())


def _task(args: tuple[Point, int, Setup, str]) -> tuple[Point, int, dict[str, float]]:
    point, rep, setup, mode = args
    return point, rep, run_point(point, rep, setup, mode)


def points(setup: Setup, network: bool) -> list[Point]:
    out = []
    for s in SERIES:
        spec = SERIES[s].format(pbv=setup.pbv)
        for load in setup.loads:
            out.append(Point("load", s, load, spec, load, setup.load_messages, network))
        if network and s != "BF":
            for m in setup.messages:
                out.append(Point("messages", s, float(m), spec, setup.messages_load, m, network))
        if s in ("ANCA-FF", "ANCA-BF"):
            for b in setup.pbvs:
                out.append(Point("pbv", s, float(b), SERIES[s].format(pbv=b), setup.pbv_load, setup.load_messages, network))
        elif s in ("MBS", "FF"):  # no bound: one point (x = 0), drawn flat across the bounds
            out.append(Point("pbv", s, 0.0, spec, setup.pbv_load, setup.load_messages, network))
    return out


def run_all(setup: Setup, network: bool, workers: int, mode: str, log: Any) -> list[Outcome]:
    outcomes = {p: Outcome(p) for p in points(setup, network)}
    pending = [(p, r) for p in outcomes for r in range(setup.min_reps)]
    pool = ProcessPoolExecutor(workers) if workers > 1 else None
    try:
        while pending:
            tasks = [(p, r, setup, mode) for p, r in pending]
            results = pool.map(_task, tasks, chunksize=1) if pool else map(_task, tasks)
            for p, r, res in results:
                outcomes[p].reps.append(res)
            pending = []
            for p, o in outcomes.items():
                if len(o.reps) < setup.max_reps and not o.reached(stopping_metrics(p), setup.rel_ci):
                    pending += [(p, len(o.reps) + k) for k in range(min(2, setup.max_reps - len(o.reps)))]
            print(f"  {sum(len(o.reps) for o in outcomes.values())} runs done, {len(pending)} more", file=log, flush=True)
    finally:
        if pool:
            pool.shutdown()
    return list(outcomes.values())


# ---------------------------------------------------------------- outputs
def write_points(outcomes: list[Outcome], path: Path, setup: Setup) -> None:
    with open(path, "w", newline="") as fh:
        wr = csv.writer(fh)
        wr.writerow(["experiment", "series", "x", "allocator", "load", "messages", "network", "reps", "reached"]
                    + [f"{m}{suffix}" for m in METRICS + ("wait",) for suffix in ("", "_ci")])
        for o in sorted(outcomes, key=lambda o: (o.point.experiment, o.point.series, o.point.x)):
            p = o.point
            row = [p.experiment, p.series, _fmt(p.x), p.spec, p.rate_load, p.messages, p.network, len(o.reps), o.reached(stopping_metrics(p), setup.rel_ci)]
            for m in METRICS + ("wait",):
                mean, half = o.stats(m)
                row += [_fmt(mean), _fmt(half)]
            wr.writerow(row)


def _fmt(v: float) -> str:
    return "" if not np.isfinite(v) else f"{v:.6g}"


def _series(outcomes: Sequence[Any], experiment: str, series: str, metric: str) -> tuple[list[float], list[float], list[float]]:
    pts = sorted((o for o in outcomes if o.point.experiment == experiment and o.point.series == series), key=lambda o: o.point.x)
    xs, ys, hs = [], [], []
    for o in pts:
        mean, half = o.stats(metric)
        xs.append(o.point.x)
        ys.append(mean)
        hs.append(half)
    return xs, ys, hs


def write_figures(outcomes: Sequence[Any], out: Path, prefix: str, setup: Setup, network: bool) -> list[str]:
    written = []
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        plt = None
    for fig, (metric, exp, shown) in FIGURES.items():
        if not network and (metric in ("MPBT", "MPL") or exp == "messages"):
            continue
        rows = []
        for s in shown:
            xs, ys, hs = _series(outcomes, exp, s, metric)
            if exp == "pbv" and len(xs) == 1:  # an unbounded reference: flat across the bounds
                xs, ys, hs = list(setup.pbvs), ys * len(setup.pbvs), hs * len(setup.pbvs)
            rows += [(s, x, y, h) for x, y, h in zip(xs, ys, hs)]
        name = f"{prefix}fig{fig:02d}"
        with open(out / f"{name}.csv", "w", newline="") as fh:
            wr = csv.writer(fh)
            wr.writerow(["series", XLABEL[exp], metric, "ci95_half_width"])
            wr.writerows([(s, _fmt(x), _fmt(y), _fmt(h)) for s, x, y, h in rows])
        written.append(f"{name}.csv")
        if plt is None:
            continue
        f, ax = plt.subplots(figsize=(5.2, 3.6))
        for s in shown:
            pts = [(x, y, h) for ss, x, y, h in rows if ss == s and np.isfinite(y)]
            if not pts:
                continue
            x, y, h = zip(*pts)
            ax.errorbar(x, y, yerr=[v if np.isfinite(v) else 0 for v in h], marker="o", ms=3, capsize=2, label=s,
                        ls="--" if s in ("FF", "BF") else "-")
        if exp == "pbv":
            ax.set_xscale("log", base=2)
        if metric == "MJRT":
            ax.set_yscale("log")
        ax.set_xlabel(XLABEL[exp])
        ax.set_ylabel(YLABEL[metric])
        cond = "all-to-all, wormhole" if network else "no communication"
        ax.set_title(f"Fig. {fig}: {metric} vs {XLABEL[exp].split(' (')[0]} ({cond})", fontsize=9)
        ax.legend(fontsize=7)
        f.tight_layout()
        f.savefig(out / f"{name}.png", dpi=110)
        plt.close(f)
        written.append(f"{name}.png")
    return written


# ---------------------------------------------------------------- claims
def _val(outcomes: Sequence[Any], exp: str, series: str, x: float, metric: str) -> tuple[float, float]:
    for o in outcomes:
        p = o.point
        if p.experiment == exp and p.series == series and p.x == x:
            return o.stats(metric)
    return float("nan"), float("nan")


def claims(outcomes: Sequence[Any], setup: Setup, network: bool) -> list[tuple[str, str, str]]:
    """(claim, verdict, numbers) for each of the paper's claims that the runs can check.

    A verdict compares point estimates (means over replications); "(within
    the CIs)" is added when the difference is smaller than the two 95 %
    half-widths combined, i.e. not significant.
    """
    out: list[tuple[str, str, str]] = []
    loads, lo, hi = setup.loads, setup.loads[0], setup.loads[-1]
    anca = ("ANCA-FF", "ANCA-BF")

    def v(exp: str, s: str, x: float, m: str) -> tuple[float, float]:
        return _val(outcomes, exp, s, x, m)

    def f(t: tuple[float, float]) -> str:
        m, h = t
        if not np.isfinite(m):
            return "n/a"
        return f"{m:.3g}" + (f" ± {h:.2g}" if np.isfinite(h) and h > 0 else "")

    def less(a: tuple[float, float], b: tuple[float, float]) -> tuple[bool, bool]:
        """(a < b, significantly)"""
        d = b[0] - a[0]
        ci = math.hypot(a[1], b[1]) if np.isfinite(a[1]) and np.isfinite(b[1]) else math.inf
        return bool(d > 0), bool(abs(d) > ci)

    def verdict(items: list[tuple[bool, bool]]) -> str:
        """Holds if every comparison goes the claimed way; "(within the CIs)" if the verdict rests on a
        difference smaller than the CIs (a holding claim: some comparison; a failing one: every failure)."""
        if all(i[0] for i in items):
            return "holds" + ("" if all(i[1] for i in items) else " (within the CIs)")
        return "does not hold" + ("" if any(i[1] for i in items if not i[0]) else " (within the CIs)")

    def comm_only(claim: str) -> None:
        out.append((claim, "n/a without communication", "service time is the job's own run time, the same for every allocator"))

    # Fig. 1: MBPJ rises with load
    items, parts = [], []
    for s in ("MBS",) + anca:
        a, b = v("load", s, lo, "MBPJ"), v("load", s, hi, "MBPJ")
        items.append(less(a, b))
        parts.append(f"{s} {f(a)} → {f(b)}")
    out.append(("Fig. 1: MBPJ rises with system load", verdict(items), f"load {lo} → {hi}: " + "; ".join(parts)))
    # Fig. 2: bounded ANCA has lower MJRT than MBS and Paging, at every load
    items, parts = [], []
    for x in loads:
        a = {s: v("load", s, x, "MJRT") for s in anca + ("MBS", "Paging(0)")}
        for s in anca:
            for o in ("MBS", "Paging(0)"):
                items.append(less(a[s], a[o]))
        parts.append(f"{x}: " + ", ".join(f"{s} {f(t)}" for s, t in a.items()))
    def below(o: str) -> int:
        return sum(1 for x in loads if all(v("load", s, x, "MJRT")[0] < v("load", o, x, "MJRT")[0] for s in anca))

    out.append(("Fig. 2: bounded ANCA has lower MJRT than MBS and Paging", verdict(items),
                f"both ANCA below MBS at {below('MBS')} and below Paging at {below('Paging(0)')} of {len(loads)} loads; " + "; ".join(parts)))
    # Fig. 3
    if network:
        items, parts = [], []
        for s in anca:
            a, b = v("load", s, lo, "MJST"), v("load", s, hi, "MJST")
            items.append(less(a, b))
            parts.append(f"{s} {f(a)} → {f(b)}")
        out.append(("Fig. 3: MJST rises with system load (ANCA)", verdict(items), f"load {lo} → {hi}: " + "; ".join(parts)))
    else:
        comm_only("Fig. 3: MJST rises with system load (ANCA)")
    items, parts = [], []
    for x in loads:
        ff_w, ff_s = v("load", "FF", x, "wait")[0], v("load", "FF", x, "MJST")[0]
        for s in anca:
            w_, s_ = v("load", s, x, "wait")[0], v("load", s, x, "MJST")[0]
            items.append((bool(s_ - ff_s < ff_w - w_), True))
        parts.append(f"{x}: FF wait {ff_w:.3g}, service {ff_s:.3g}; ANCA-FF {v('load', 'ANCA-FF', x, 'wait')[0]:.3g}, {v('load', 'ANCA-FF', x, 'MJST')[0]:.3g}; "
                     f"ANCA-BF {v('load', 'ANCA-BF', x, 'wait')[0]:.3g}, {v('load', 'ANCA-BF', x, 'MJST')[0]:.3g}")
    out.append(("Fig. 3: ANCA's extra service time is smaller than the queueing time it saves (against contiguous FF)", verdict(items).replace(" (within the CIs)", ""), "; ".join(parts)))
    # Fig. 4: ANCA has higher PSU than MBS and Paging at high load
    a = {s: v("load", s, hi, "PSU") for s in anca + ("MBS", "Paging(0)", "FF", "BF")}
    items = [less(a[o], a[s]) for s in anca for o in ("MBS", "Paging(0)")]
    out.append((f"Fig. 4: ANCA reaches higher PSU than MBS and Paging (load {hi})", verdict(items), ", ".join(f"{s} {f(t)}" for s, t in a.items())))
    if network:
        ms = setup.messages
        for fig, metric in ((5, "MJRT"), (6, "MPBT"), (7, "MPL")):
            items, rises = [], {}
            for s in ("MBS", "Paging(0)") + anca:
                a0, a1 = v("messages", s, float(ms[0]), metric), v("messages", s, float(ms[-1]), metric)
                items.append(less(a0, a1))
                rises[s] = (a0, a1)
            out.append((f"Fig. {fig}: {metric} rises with messages per job", verdict(items),
                        f"{ms[0]} → {ms[-1]} messages: " + "; ".join(f"{s} {f(a0)} → {f(a1)}" for s, (a0, a1) in rises.items())))
            inc = {s: a1[0] - a0[0] for s, (a0, a1) in rises.items()}
            least = min(inc, key=lambda k: inc[k] if np.isfinite(inc[k]) else math.inf)
            out.append((f"Fig. {fig}: ... and rises least for ANCA", "holds" if least in anca else "does not hold",
                        "rise: " + ", ".join(f"{s} {d:.3g}" for s, d in inc.items())))
        a = {s: v("messages", s, float(ms[-1]), "PSU") for s in ("MBS", "Paging(0)") + anca}
        items = [less(a[o], a[s]) for s in anca for o in ("MBS", "Paging(0)")]
        out.append((f"Fig. 8: ANCA reaches higher PSU under high communication load ({ms[-1]} messages)", verdict(items), ", ".join(f"{s} {f(t)}" for s, t in a.items())))
    else:
        for fig in (5, 6, 7, 8):
            comm_only(f"Figs. 5-8: messages per job (Fig. {fig})")
    for fig, metric in ((9, "MBPJ"), (10, "MJRT"), (11, "MJST")):
        if metric == "MJST" and not network:
            comm_only("Fig. 11: MJST rises with the partitioning bound")
            continue
        items, parts = [], []
        for s in anca:
            a0, a1 = v("pbv", s, float(setup.pbvs[0]), metric), v("pbv", s, float(setup.pbvs[-1]), metric)
            items.append(less(a0, a1))
            parts.append(f"{s} {f(a0)} → {f(a1)}")
        out.append((f"Fig. {fig}: {metric} rises with the partitioning bound", verdict(items), f"PBV {setup.pbvs[0]} → {setup.pbvs[-1]} (load {setup.pbv_load}): " + "; ".join(parts)))
    items, parts = [], []
    for s in anca:
        vals = [(b, v("pbv", s, float(b), "PSU")) for b in setup.pbvs]
        best = max(vals, key=lambda t: t[1][0] if np.isfinite(t[1][0]) else -1)
        at4 = dict(vals).get(4, (float("nan"), float("nan")))
        items.append((best[0] == 4, all(less(t, at4)[1] for b, t in vals if b != 4)))
        parts.append(f"{s}: peak at PBV {best[0]}; " + ", ".join(f"{b}: {f(t)}" for b, t in vals))
    out.append(("Fig. 12: PSU peaks at PBV = 4", verdict(items), " | ".join(parts)))
    return out


def write_claims(rows: list[tuple[str, str, str]], path: Path, header: str) -> None:
    lines = [header, "", "| claim | verdict | numbers |", "|---|---|---|"]
    lines += [f"| {c} | {v} | {n} |" for c, v, n in rows]
    path.write_text("\n".join(lines) + "\n")


#: the reconciliation variants: what else the paper might have simulated
VARIANTS = {
    "as run": "",
    "computation + communication (service = compute time, mean = nominal, then the messages)": "compute",
    "input buffers of 4 flits": "buffers4",
    "packet-level network model": "packet",
}


def reconcile(setup: Setup, workers: int, mode: str, out: Path, reps: int) -> list[list[str]]:
    """Fig. 2's comparison (MJRT of ANCA against MBS and Paging) under other plausible settings."""
    loads = (0.3, 0.5, 0.7) if setup is FULL else (0.5,)
    series = {"MBS": "mbs", "Paging(0)": SERIES["Paging(0)"], "ANCA-FF": "anca_ff:max_blocks=8", "ANCA-BF": "anca_bf:max_blocks=8",
              "ANCA-FF original": "anca_ff:max_blocks=8,variant=original", "FF": "mesh_first_fit"}
    pts = [Point("load", s, x, spec, x, setup.load_messages, True, v) for v in VARIANTS.values() for s, spec in series.items() for x in loads]
    tasks = [(p, r, setup, mode) for p in pts for r in range(reps)]
    res: dict[Point, list[dict[str, float]]] = {p: [] for p in pts}
    if workers > 1:
        with ProcessPoolExecutor(workers) as pool:
            for p, _, m in pool.map(_task, tasks, chunksize=1):
                res[p].append(m)
    else:
        for p, _, m in map(_task, tasks):
            res[p].append(m)
    rows = [["variant", "load"] + [f"{s} MJRT" for s in series] + ["ANCA below MBS and Paging"]]
    for name, v in VARIANTS.items():
        for x in loads:
            means = {s: float(np.mean([m["MJRT"] for m in res[Point("load", s, x, series[s], x, setup.load_messages, True, v)]])) for s in series}
            below = max(means["ANCA-FF"], means["ANCA-BF"]) < min(means["MBS"], means["Paging(0)"])
            rows.append([name, f"{x}"] + [f"{means[s]:.4g}" for s in series] + ["yes" if below else "no"])
    with open(out / "reconcile.csv", "w", newline="") as fh:
        csv.writer(fh).writerows(rows)
    lines = [f"Fig. 2 under other settings ({reps} replications each, means)", "", "| " + " | ".join(rows[0]) + " |", "|" + "---|" * len(rows[0])]
    lines += ["| " + " | ".join(r) + " |" for r in rows[1:]]
    (out / "reconcile.md").write_text("\n".join(lines) + "\n")
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--quick", action="store_true", help="3 loads, 2 message counts, 3 bounds, 200 measured jobs, 1 replication (about a minute)")
    ap.add_argument("--workers", type=int, default=min(2, os.cpu_count() or 1))
    ap.add_argument("--out", default=str(Path(__file__).resolve().parent / "results" / "bani_ahmad"))
    ap.add_argument("--no-network", action="store_true", help="only the runs without communication")
    ap.add_argument("--mode", choices=["flit", "packet"], default="flit", help="network engine (default flit: cycle-accurate)")
    ap.add_argument("--replot", action="store_true", help="redraw figures and claims from the points.csv files in --out, simulating nothing")
    ap.add_argument("--reconcile", type=int, default=0, metavar="REPS",
                    help="only Fig. 2's comparison under other settings (computation, buffers, packet model, Chang & Mohapatra's ANCA), REPS runs each")
    args = ap.parse_args(argv)
    setup = QUICK if args.quick else FULL
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.reconcile:
        rows = reconcile(setup, args.workers, args.mode, out, args.reconcile)
        for r in rows:
            print("  ".join(f"{c:>12s}" if i else f"{c:60s}" for i, c in enumerate(r)))
        return 0
    if args.replot:
        for network in (False, True):
            prefix = "" if network else "nonet_"
            if not (out / f"{prefix}points.csv").exists():
                continue
            recorded = read_points(out / f"{prefix}points.csv")
            write_figures(recorded, out, prefix, setup, network)
            label = "with communication" if network else "without communication"
            write_claims(claims(recorded, setup, network), out / f"{prefix}claims.md", f"Claims {label} ({'quick' if args.quick else 'full'} run)")
        return 0
    t0 = time.perf_counter()
    print(f"machine: {platform.machine()} {os.cpu_count()} cores, Python {platform.python_version()}; {'quick' if args.quick else 'full'} run, {args.workers} workers")
    wall = {}
    results: dict[bool, list[Outcome]] = {}
    for network in ([False] if args.no_network else [False, True]):
        label = "with communication" if network else "without communication"
        t = time.perf_counter()
        print(f"{label}:", flush=True)
        results[network] = run_all(setup, network, args.workers, args.mode, sys.stdout)
        wall[network] = time.perf_counter() - t
        prefix = "" if network else "nonet_"
        write_points(results[network], out / f"{prefix}points.csv", setup)
        write_figures(results[network], out, prefix, setup, network)
        rows = claims(results[network], setup, network)
        write_claims(rows, out / f"{prefix}claims.md", f"Claims {label} ({'quick' if args.quick else 'full'} run)")
        n_pts = len(results[network])
        n_ok = sum(o.reached(stopping_metrics(o.point), setup.rel_ci) for o in results[network])
        print(f"  {n_pts} points, {sum(len(o.reps) for o in results[network])} runs, CI target reached at {n_ok}; {wall[network]:.1f} s")
        for c, v, nums in rows:
            print(f"  [{v}] {c}: {nums[:160]}")
    print(f"total {time.perf_counter() - t0:.1f} s; outputs in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
