"""Experiment specs: a grid of simulations written as data (TOML, or the same structure as a dict).

A spec names the parameters every run shares (``[fixed]``), the axes whose
product is the grid (``[grid]``), the replications, the metrics to keep and
how to report them::

    name = "easy-vs-fcfs"
    metrics = ["utilization", "mean_bounded_slowdown"]

    [fixed]                       # every cell
    trace = "NASA-iPSC-1993-3.1-cln"
    clean = true

    [grid]                        # the cells are the product of these lists
    scheduler = ["fcfs", "easy"]
    work_multiple = {start = 0.5, stop = 2.0, step = 0.5}
    system = [                    # linked values: one axis, several parameters
      {label = "small", machine = "mesh:8x8", allocator = "best_fit"},
      {label = "flat",  machine = "flat:64"},
    ]

    [replications]                # or: replications = 5
    min = 3                       # a sequential stopping rule: runs until the
    max = 20                      # relative CI half-width of `metric` (or of each
    rel_ci = 0.05                 # of a list of metrics) is at most rel_ci at
                                  # `confidence`, or `max` runs
    confidence = 0.95
    metric = "mean_response"

A **cell** is one full parameter set (one simulation).  Its key is a hash of
its parameters (and its axis labels), the package version and the checksum of its trace: a store
(:mod:`topoalloc.experiments.store`) keeps one result per key, so re-running a
spec skips the cells already done and a changed spec adds only the new ones.

Every error names the file, the line and the key (``mao.toml, line 12:
[grid] unknown parameter 'alocator' ...``).
"""

from __future__ import annotations

import copy
import functools
import hashlib
import json
import math
import os
import re
import tomllib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import product
from pathlib import Path
from typing import Any

from ..errors import TopoallocError

__all__ = ["SpecError", "ExperimentSpec", "Cell", "PARAMETERS", "load_spec", "parse_spec", "resolve_trace", "trace_checksum", "cell_key"]

#: parameter -> (accepted Python types, what it is); the keys a cell may set
PARAMETERS: dict[str, tuple[tuple[type, ...], str]] = {
    # what is simulated
    "trace": ((str,), "an SWF file (path, name in the trace folders, or the bundled NASA-iPSC-1993-3.1-cln)"),
    "trace_jobs": ((int,), "use only the first N jobs of the trace"),
    "synthetic": ((str,), "a generated workload instead of a trace: poisson, mesh or cplant-stream"),
    "n_jobs": ((int,), "synthetic: number of jobs"),
    "load": ((int, float), "synthetic: offered load"),
    "sizes": ((str,), "synthetic poisson: size distribution, e.g. uniform:1,32"),
    "x": ((str,), "synthetic mesh: distribution of the X side, e.g. cycle:4,4"),
    "y": ((str,), "synthetic mesh: distribution of the Y side (default: as X)"),
    "square": ((bool,), "synthetic mesh: X = Y"),
    "mean_runtime": ((int, float), "synthetic: mean run time"),
    "calibrated_runtime": ((bool,), "synthetic mesh: mean run time = a job's communication time alone on the network (instead of mean_runtime)"),
    "calibration_traffic": ((str,), "with calibrated_runtime: the traffic timed alone (default: traffic)"),
    "calibration_frames": ((int,), "with calibrated_runtime: frames drawn to estimate it (default 400)"),
    "stop_metrics": ((list,), "the metrics a sequential stopping rule watches for these cells (default: [replications] metric)"),
    "warmup": ((int,), "window metrics: jobs skipped at the start (default 0)"),
    "measured": ((int,), "window metrics: jobs measured after the warm-up (default: all the rest)"),
    "load_definition": ((str,), "synthetic: machine or service"),
    "estimate_factor": ((int, float), "synthetic poisson: requested time = factor x run time"),
    "workload_seed": ((int,), "synthetic: seed of the generator (default: the replication number)"),
    # how
    "machine": ((str,), "a machine, e.g. torus:4x4x4 or flat:128"),
    "allocator": ((str,), "an allocator with options, e.g. best_fit:curve=hilbert"),
    "scheduler": ((str,), "fcfs, easy or conservative, e.g. easy:order=sjf"),
    "clean": ((bool,), "apply the standard filters"),
    "filters": ((list,), "filters by name"),
    "estimate": ((str,), "estimate policy for a missing requested time"),
    "scale_sizes": ((int, float), "multiply sizes"),
    "round_pow2": ((bool,), "round sizes up to a power of two"),
    "work_multiple": ((int, float), "multiply run and requested times"),
    "scale_estimates": ((bool,), "with work_multiple, scale requested times too"),
    "seed": ((int,), "seed of an allocator that makes random choices"),
    "runtime_model": ((str,), "an allocation-dependent run-time model"),
    "network": ((str,), "jobs communicate on a simulated network"),
    "traffic": ((str,), "with network: what each job sends"),
    "cycle": ((int, float), "with network: simulation time of one cycle"),
    "service": ((str,), "with network: communication or add"),
    "contention": ((bool,), "with network: also run each job alone"),
    "locality": ((bool,), "measure locality metrics"),
    "rep": ((int,), "the replication numbers a sub-grid runs (as an axis; default: from [replications])"),
}

_TOP = {"name", "description", "metrics", "fixed", "grid", "replications", "report", "quick", "job_tables", "claims"}
_REPL = {"runs", "min", "max", "rel_ci", "confidence", "metric"}
_REPORT = {"x", "series", "facets", "figures", "title"}
_FIGURE = {"x", "y", "series", "facets", "logx", "logy", "title", "kind", "where"}
_SYNTHETIC = ("poisson", "mesh", "cplant-stream")
_BUNDLED = "NASA-iPSC-1993-3.1-cln"


class SpecError(TopoallocError, ValueError):
    """A spec that cannot be run; the message names the file, line and key."""

    def __init__(self, source: str, line: int | None, key: str, message: str):
        self.source = source
        self.line = line
        self.key = key
        where = f"{source}, line {line}" if line is not None else source
        super().__init__(f"{where}: {key}: {message}")


@dataclass(frozen=True)
class Replications:
    """Fixed ``runs``, or a sequential stopping rule (``rel_ci`` set)."""

    min: int = 1
    max: int = 1
    rel_ci: float | None = None
    confidence: float = 0.95
    metric: str | tuple[str, ...] | None = None

    @property
    def sequential(self) -> bool:
        return self.rel_ci is not None

    @property
    def watched(self) -> tuple[str, ...]:
        """The metrics whose intervals the stopping rule watches (``metric``: one name or a list)."""
        if self.metric is None:
            return ()
        return (self.metric,) if isinstance(self.metric, str) else tuple(self.metric)


@dataclass(frozen=True)
class Cell:
    """One simulation: ``params`` (what the key hashes), ``labels`` (axis labels), and the resolved trace path."""

    key: str
    params: dict[str, Any]
    labels: dict[str, Any]
    trace_path: str | None = None
    metrics: tuple[str, ...] = ()
    job_tables: bool = False

    def row(self) -> dict[str, Any]:
        """The parameter columns of this cell's row in the store."""
        out: dict[str, Any] = dict(self.labels)
        for k, v in self.params.items():
            if k in ("trace_sha256", "version"):
                continue
            out[k] = json.dumps(v) if isinstance(v, list) else v
        return out


@dataclass
class ExperimentSpec:
    """A validated spec; :meth:`cells` expands it."""

    name: str
    source: str
    fixed: dict[str, Any]
    grids: list[list[tuple[str, list[Any]]]]
    replications: Replications
    metrics: tuple[str, ...]
    report: dict[str, Any] = field(default_factory=dict)
    description: str = ""
    job_tables: bool = False
    claims: str | None = None
    base_dir: Path = field(default_factory=Path.cwd)
    text: str = ""
    raw: dict[str, Any] = field(default_factory=dict)

    @property
    def axes(self) -> list[tuple[str, list[Any]]]:
        """Every axis of every sub-grid (an axis in several sub-grids appears once per sub-grid)."""
        return [a for g in self.grids for a in g]

    @property
    def axis_names(self) -> list[str]:
        return list(dict.fromkeys(name for name, _ in self.axes))

    @property
    def size(self) -> int:
        """Cells in the first round of replications."""
        return sum(math.prod(len(v) for _, v in g) for g in self.grids) * self.replications.min

    def cells(self, reps: Sequence[int] | None = None, *, trace_dirs: Sequence[str | os.PathLike[str]] = (), version: str | None = None) -> list[Cell]:
        """Every cell of the grid for replications ``reps`` (default 1..min), in grid order."""
        from .. import __version__

        version = version or __version__
        reps = list(range(1, self.replications.min + 1)) if reps is None else list(reps)
        checksums: dict[str, tuple[str, str]] = {}
        out: list[Cell] = []
        combos = [(g, combo) for g in self.grids for combo in product(*[vals for _, vals in g])]
        for grid, combo in combos:
            params = dict(self.fixed)
            labels: dict[str, Any] = {}
            for (axis, _), v in zip(grid, combo):
                if isinstance(v, dict):
                    labels[axis] = v["label"]
                    params.update({k: x for k, x in v.items() if k != "label"})
                else:
                    params[axis] = v
            own = "rep" in params  # the grid names its replications itself: emitted with the first round only
            for rep in ([params["rep"]] if reps[:1] == [1] else []) if own else reps:
                p = dict(params)
                p["rep"] = rep
                for k, v in list(p.items()):  # 1 and 1.0 are the same value: one key, one column type
                    if k in PARAMETERS and float in PARAMETERS[k][0] and isinstance(v, int) and not isinstance(v, bool):
                        p[k] = float(v)
                if "synthetic" in p and "workload_seed" not in p:
                    p["workload_seed"] = rep
                path = None
                if "trace" in p or "synthetic" not in p:
                    name = p.get("trace", _BUNDLED)
                    p["trace"] = name
                    if name not in checksums:
                        resolved = resolve_trace(name, self.base_dir, trace_dirs, source=self.source, line=_locate(self.text, ("fixed", "trace")) or _locate(self.text, ("grid",)))
                        checksums[name] = (str(resolved), trace_checksum(resolved))
                    path, sha = checksums[name]
                    p["trace_sha256"] = sha
                p["version"] = version
                out.append(Cell(cell_key(p, labels), p, labels, path, self.metrics, self.job_tables))
        return out


def cell_key(params: Mapping[str, Any], labels: Mapping[str, Any] | None = None) -> str:
    """The hash of a cell's full parameters (package version and trace checksum included) and its axis labels: 20 hex digits.

    The labels are part of the key: two grid points that run the same simulation (e.g. a bound of 8 in a sweep
    over bounds and the default bound of 8 in a sweep over loads) are two cells, each with its own row; without
    labels the key is the parameters' alone.
    """
    keyed = {**params, "_labels": dict(labels)} if labels else params
    text = json.dumps(keyed, sort_keys=True, separators=(",", ":"), allow_nan=False)
    return hashlib.sha256(text.encode()).hexdigest()[:20]


_SHA_CACHE: dict[tuple[str, int, int], str] = {}


def trace_checksum(path: str | os.PathLike[str]) -> str:
    """SHA-256 of the SWF text (after gunzip), so a log stored plain or compressed is the same trace."""
    import gzip

    p = Path(path)
    st = p.stat()
    ident = (str(p.resolve()), st.st_size, st.st_mtime_ns)
    if ident not in _SHA_CACHE:
        h = hashlib.sha256()
        with open(p, "rb") as raw:
            magic = raw.read(2)
        opener: Any = gzip.open if magic == b"\x1f\x8b" else open
        with opener(p, "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
        _SHA_CACHE[ident] = h.hexdigest()
    return _SHA_CACHE[ident]


def trace_dirs_default() -> list[Path]:
    """Folders searched for a trace given by name: ``$TOPOALLOC_TRACES`` (``os.pathsep``-separated), then the working folder."""
    env = os.environ.get("TOPOALLOC_TRACES", "")
    return [Path(d) for d in env.split(os.pathsep) if d] + [Path.cwd()]


def resolve_trace(name: str, base_dir: Path, trace_dirs: Sequence[str | os.PathLike[str]] = (), *, source: str = "spec", line: int | None = None) -> Path:
    """The file a trace name means: a path (relative to the spec's folder), a file in the trace folders, or the bundled log.

    ``NAME`` also finds ``NAME.swf`` and ``NAME.swf.gz``.
    """
    from ..workload import default_trace_path

    bundled = default_trace_path()
    if name in (_BUNDLED, "bundled", bundled.name, bundled.name.removesuffix(".gz")):
        # a copy in the trace folders is the same log (same checksum); the bundled one always exists
        return bundled
    p = Path(name).expanduser()
    candidates: list[Path] = []
    if p.is_absolute():
        candidates.append(p)
    else:
        for d in [base_dir, *map(Path, trace_dirs), *trace_dirs_default()]:
            candidates.append(d / p)
    for c in candidates:
        for cand in (c, c.with_name(c.name + ".swf"), c.with_name(c.name + ".swf.gz")):
            if cand.is_file():
                return cand.resolve()
    looked = ", ".join(dict.fromkeys(str(c.parent) for c in candidates))
    raise SpecError(
        source,
        line,
        "trace",
        f"trace {name!r} not found (looked in {looked}); download it from the Parallel Workloads Archive "
        "(https://www.cs.huji.ac.il/labs/parallel/workload/logs.html) and give its folder with --traces DIR or TOPOALLOC_TRACES",
    )


# ---------------------------------------------------------------- parsing and validation


def load_spec(path: str | os.PathLike[str], *, quick: bool = False) -> ExperimentSpec:
    """Read and validate a TOML spec (``quick``: apply its ``[quick]`` overrides)."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SpecError(str(path), None, "SPEC", "no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise SpecError(str(path), None, "SPEC", f"cannot be read as UTF-8 text ({exc})") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        m = re.search(r"\(at line (\d+), column (\d+)\)", str(exc))
        msg = re.sub(r"\s*\(at line \d+, column \d+\)", "", str(exc))
        raise SpecError(p.name, int(m.group(1)) if m else None, "TOML", f"{msg} (column {m.group(2)})" if m else msg) from None
    return parse_spec(data, source=p.name, text=text, base_dir=p.resolve().parent, quick=quick, default_name=p.stem)


def parse_spec(data: Mapping[str, Any], *, source: str = "<dict>", text: str = "", base_dir: str | os.PathLike[str] | None = None, quick: bool = False, default_name: str = "experiment") -> ExperimentSpec:
    """Validate a spec given as a dict (the structure of the TOML file)."""
    if not isinstance(data, Mapping):
        raise SpecError(source, None, "spec", f"a table of keys, not {type(data).__name__}")
    raw = copy.deepcopy(dict(data))

    def err(path: tuple[str, ...], message: str, block: int | None = None) -> SpecError:
        """The error for ``path``; ``block``: it is in that element of a ``[[grid]]`` array."""
        return SpecError(source, _locate(text, path, block=block if path[:1] == ("grid",) else None), _keyname(path), message)

    for k in raw:
        if k not in _TOP:
            raise err((k,), f"unknown key; expected one of {', '.join(sorted(_TOP))}")
    if quick and "quick" in raw:
        q = raw["quick"]
        if not isinstance(q, Mapping):
            raise err(("quick",), "a table of overrides, e.g. [quick.grid]")
        for k, v in q.items():
            if k not in ("grid", "fixed", "replications"):
                raise err(("quick", k), "[quick] may override grid, fixed or replications")
            if k == "replications" or not isinstance(v, Mapping) or not isinstance(raw.get(k, {}), Mapping):
                raw[k] = v
            else:
                raw.setdefault(k, {})
                raw[k] = {**raw[k], **v}
    fixed = raw.get("fixed", {})
    if not isinstance(fixed, Mapping):
        raise err(("fixed",), "a table of parameters")
    fixed = dict(fixed)
    for k, v in fixed.items():
        _check_param(k, v, ("fixed", k), err)
    grid = raw.get("grid", {})
    subgrids = grid if isinstance(grid, list) and grid and all(isinstance(g, Mapping) for g in grid) else [grid]
    grids = []
    for gi, g in enumerate(subgrids):
        if not isinstance(g, Mapping):
            raise err(("grid",), "a table of axes (each a list of values), or several: [[grid]]")
        gerr = functools.partial(err, block=gi) if isinstance(grid, list) else err
        axes = _parse_axes(g, fixed, gerr)
        _check_synthetic(fixed, axes, gerr)
        grids.append(axes)
    reps = _replications(raw.get("replications", 1), err)
    metrics = raw.get("metrics", [])
    if not isinstance(metrics, list) or not all(isinstance(m, str) and m for m in metrics):
        raise err(("metrics",), "a list of metric names, e.g. [\"utilization\", \"mean_bounded_slowdown\"]")
    from .cells import check_metric_name

    for m in metrics:
        problem = check_metric_name(m)
        if problem:
            raise err(("metrics",), problem)
    for m in reps.watched:
        if metrics and m not in metrics:
            raise err(("replications", "metric"), f"{m!r} is not among the metrics kept ({', '.join(metrics)})")
    for gi, axes in enumerate(grids):
        for axis, vals in axes:
            for v in vals:
                for m in (v.get("stop_metrics") or []) if isinstance(v, dict) else []:
                    if metrics and m not in metrics:
                        raise err(("grid", axis, "stop_metrics"), f"{m!r} is not among the metrics kept ({', '.join(metrics)})", block=gi if isinstance(grid, list) else None)
    for m in fixed.get("stop_metrics") or []:
        if metrics and m not in metrics:
            raise err(("fixed", "stop_metrics"), f"{m!r} is not among the metrics kept ({', '.join(metrics)})")
    report = raw.get("report", {})
    if not isinstance(report, Mapping):
        raise err(("report",), "a table")
    for k in report:
        if k not in _REPORT:
            raise err(("report", k), f"unknown key; expected one of {', '.join(sorted(_REPORT))}")
    for i, f in enumerate(report.get("figures", [])):
        if not isinstance(f, Mapping) or "y" not in f:
            raise err(("report", "figures"), f"figure {i + 1}: a table with at least y (the metric)")
        for k in f:
            if k not in _FIGURE:
                raise err(("report", "figures", k), f"figure {i + 1}: unknown key; expected one of {', '.join(sorted(_FIGURE))}")
    name = raw.get("name", default_name)
    if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z0-9_.-]+", name):
        raise err(("name",), "letters, digits, '-', '_' or '.'")
    claims = raw.get("claims")
    if claims is not None:
        from .claims import CLAIMS

        if claims not in CLAIMS:
            raise err(("claims",), f"one of {', '.join(CLAIMS)}")
    jt = raw.get("job_tables", False)
    if not isinstance(jt, bool):
        raise err(("job_tables",), "true or false")
    return ExperimentSpec(
        name=name,
        source=source,
        fixed=fixed,
        grids=grids,
        replications=reps,
        metrics=tuple(metrics),
        report=dict(report),
        description=str(raw.get("description", "")),
        job_tables=jt,
        claims=claims,
        base_dir=Path(base_dir) if base_dir is not None else Path.cwd(),
        text=text,
        raw=dict(data),
    )


def _parse_axes(grid: Mapping[str, Any], fixed: Mapping[str, Any], err: Any) -> list[tuple[str, list[Any]]]:
    axes: list[tuple[str, list[Any]]] = []
    for axis, vals in grid.items():
        path = ("grid", axis)
        if isinstance(vals, Mapping) and set(vals) <= {"start", "stop", "step"}:
            vals = _range(vals, path, err)
        if not isinstance(vals, list) or not vals:
            raise err(path, "a non-empty list of values (or {start, stop, step})")
        if all(isinstance(v, Mapping) for v in vals):
            if axis in PARAMETERS:
                raise err(path, f"an axis of linked values needs a name that is not a parameter (e.g. 'system'), since each value sets several parameters")
            labels = set()
            for i, v in enumerate(vals):
                if "label" not in v:
                    raise err(path, f"value {i + 1} needs a label (the name shown in results and figures)")
                if not isinstance(v["label"], (str, int, float)) or isinstance(v["label"], bool):
                    raise err((*path, "label"), "a text or number label")
                if v["label"] in labels:
                    raise err(path, f"label {v['label']!r} twice")
                labels.add(v["label"])
                for k, x in v.items():
                    if k == "label":
                        continue
                    if k in fixed:
                        raise err((*path, k), "set in [fixed] too; a parameter is fixed or varies, not both")
                    _check_param(k, x, (*path, k), err)
            vals = [dict(v) for v in vals]
        elif any(isinstance(v, Mapping) for v in vals):
            raise err(path, "all values tables (linked values with labels) or none")
        else:
            if axis not in PARAMETERS:
                raise err(path, f"unknown parameter; expected one of {', '.join(PARAMETERS)} (or a list of tables with labels for linked values)")
            if axis in fixed:
                raise err(path, "set in [fixed] too; a parameter is fixed or varies, not both")
            for v in vals:
                _check_param(axis, v, path, err)
            if len(set(map(_hashable, vals))) != len(vals):
                raise err(path, "a value is listed twice")
        axes.append((axis, list(vals)))
    # a parameter set by two linked axes
    seen: dict[str, str] = {}
    for axis, vals in axes:
        keys = {k for v in vals for k in (v if isinstance(v, dict) else {axis: 0}) if k != "label"}
        for k in keys:
            if k in seen:
                raise err(("grid", axis), f"parameter {k!r} is also set by axis {seen[k]!r}")
            seen[k] = axis
    return axes


def _range(vals: Mapping[str, Any], path: tuple[str, ...], err: Any) -> list[float]:
    try:
        start, stop, step = (float(vals[k]) for k in ("start", "stop", "step"))
    except (KeyError, TypeError, ValueError):
        raise err(path, "a range needs numbers start, stop and step") from None
    if not step > 0 or stop < start:
        raise err(path, "a range with step > 0 and stop >= start")
    n = int(math.floor((stop - start) / step + 1e-9)) + 1
    if n > 100_000:
        raise err(path, f"at most 100,000 values (this range has {n:,})")
    digits = max(0, -math.floor(math.log10(step)) + 2)
    return [round(start + i * step, digits) for i in range(n)]


def _hashable(v: Any) -> Any:
    return json.dumps(v, sort_keys=True)


def _check_param(key: str, value: Any, path: tuple[str, ...], err: Any) -> None:
    if key not in PARAMETERS:
        raise err(path, f"unknown parameter; expected one of {', '.join(PARAMETERS)}")
    types, what = PARAMETERS[key]
    ok = isinstance(value, types) and not (isinstance(value, bool) and bool not in types)
    if not ok:
        raise err(path, f"{value!r} is not {('a ' + ' or '.join(t.__name__ for t in types))} ({what})")
    if isinstance(value, float) and not math.isfinite(value):
        raise err(path, f"{value!r}: a finite number")
    if key in ("scale_sizes", "work_multiple", "load", "mean_runtime", "cycle", "estimate_factor") and not value > 0:
        raise err(path, f"{value!r}: a number > 0")
    if key in ("n_jobs", "trace_jobs", "measured", "calibration_frames") and value < 1:
        raise err(path, f"{value!r}: a positive number")
    if key == "stop_metrics" and not (value and all(isinstance(m, str) for m in value)):
        raise err(path, f"{value!r}: a list of metric names")
    if key == "warmup" and value < 0:
        raise err(path, f"{value!r}: a number of jobs >= 0")
    if key in ("n_jobs", "trace_jobs") and value < 1:
        raise err(path, f"{value!r}: a positive number of jobs")
    if key == "synthetic" and value not in _SYNTHETIC:
        raise err(path, f"{value!r}: one of {', '.join(_SYNTHETIC)}")
    if key in ("machine", "allocator", "scheduler", "runtime_model", "network", "traffic", "calibration_traffic", "sizes", "x", "y"):
        from .. import spec as grammar
        from ..errors import InvalidArgument

        try:
            grammar.parse(value, argument=key)
        except InvalidArgument as exc:
            raise err(path, exc.expected) from None


def _check_synthetic(fixed: Mapping[str, Any], axes: list[tuple[str, list[Any]]], err: Any) -> None:
    keys = set(fixed) | {k for axis, vals in axes for v in vals for k in (v if isinstance(v, dict) else {axis: 0})}
    if "synthetic" in keys and "trace" in keys:
        where = ("fixed", "trace") if "trace" in fixed else ("grid",)
        raise err(where, "a cell has a trace or a synthetic workload, not both")
    if "synthetic" not in keys:
        for k in ("n_jobs", "load", "sizes", "x", "y", "square", "mean_runtime", "load_definition", "estimate_factor", "workload_seed", "calibrated_runtime", "calibration_traffic", "calibration_frames"):
            if k in keys:
                where = ("fixed", k) if k in fixed else ("grid",)
                raise err(where, "a synthetic-workload parameter without synthetic = \"poisson\"|\"mesh\"|\"cplant-stream\"")


def _replications(value: Any, err: Any) -> Replications:
    if isinstance(value, int) and not isinstance(value, bool):
        if value < 1:
            raise err(("replications",), "a positive number of runs per cell")
        return Replications(value, value)
    if not isinstance(value, Mapping):
        raise err(("replications",), "a number of runs, or a table {runs} or {min, max, rel_ci, confidence, metric}")
    for k in value:
        if k not in _REPL:
            raise err(("replications", k), f"unknown key; expected one of {', '.join(sorted(_REPL))}")
    for k, v in value.items():
        if k == "metric":
            if not (isinstance(v, str) or (isinstance(v, list) and v and all(isinstance(m, str) for m in v))):
                raise err(("replications", k), "a metric name, or a list of them (every one must settle)")
        elif k in ("runs", "min", "max"):
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise err(("replications", k), f"{v!r}: a positive whole number")
        elif not isinstance(v, (int, float)) or isinstance(v, bool) or not 0 < v < 1:
            raise err(("replications", k), f"{v!r}: a number between 0 and 1")
    if "runs" in value:
        if set(value) - {"runs"}:
            raise err(("replications", "runs"), "runs (fixed) or min/max/rel_ci (sequential), not both")
        return Replications(value["runs"], value["runs"])
    if "rel_ci" not in value:
        raise err(("replications",), "a sequential rule needs rel_ci (and metric)")
    if "metric" not in value:
        raise err(("replications",), "a sequential rule needs the metric whose interval it watches")
    lo, hi = value.get("min", 3), value.get("max", 30)
    if lo < 2 or hi < lo:
        raise err(("replications", "min"), "min >= 2 (an interval needs two runs) and max >= min")
    metric = value["metric"] if isinstance(value["metric"], str) else tuple(value["metric"])
    return Replications(lo, hi, float(value["rel_ci"]), float(value.get("confidence", 0.95)), metric)


# ---------------------------------------------------------------- where a key is in the TOML text


def _keyname(path: tuple[str, ...]) -> str:
    if len(path) == 1:
        return path[0]
    return f"[{'.'.join(path[:-1])}] {path[-1]}" if len(path) == 2 else f"[{path[0]}] {'.'.join(path[1:])}"


_HEADER = re.compile(r"^\s*\[\[?\s*([A-Za-z0-9_.\-\" ]+?)\s*\]\]?\s*(#.*)?$")
_KEY = re.compile(r"^\s*([A-Za-z0-9_\-]+|\"[^\"]*\")\s*(\.\s*[A-Za-z0-9_\-]+\s*)*=")


def _locate(text: str, path: tuple[str, ...], *, block: int | None = None) -> int | None:
    """The 1-based line of ``path`` (table headers, keys, dotted keys; keys inside inline tables) in TOML text.

    ``block``: ``path[0]`` is an array of tables (``[[grid]]``) and the key is in
    its ``block``-th element (0-based); lines of the other elements are not
    considered.
    """
    if not text:
        return None
    lines = text.splitlines()
    table: tuple[str, ...] = ()
    best: tuple[int, int] | None = None  # (matched depth, line)
    element = -1  # which element of the array of tables ``path[0]`` the lines are in
    for i, line in enumerate(lines, 1):
        h = _HEADER.match(line)
        if h is not None and _KEY.match(line):
            h = None  # a key, not a table header
        if h is not None:
            table = tuple(s.strip().strip('"') for s in h.group(1).split("."))
            if block is not None and table == path[:1] and line.lstrip().startswith("[["):
                element += 1
        if block is not None and table[:1] == path[:1] and element != block:
            continue  # a line of another element of the array
        if h is not None:
            depth = _prefix(table, path)
            if depth == len(table) and (best is None or depth > best[0]):
                best = (depth, i)
            continue
        k = _KEY.match(line)
        if k:
            lhs = line.split("=", 1)[0]
            full = table + tuple(s.strip().strip('"') for s in lhs.split("."))
            depth = _prefix(full, path)
            if depth == len(full) and (best is None or depth > best[0]):
                best = (depth, i)
    if best is None:
        return None
    depth, line_no = best
    if depth < len(path):  # a key inside an inline table or array below that line
        pat = re.compile(rf"(^|[{{,\s]){re.escape(path[-1])}\s*=")
        for j in range(line_no - 1, len(lines)):
            if j > line_no - 1 and (_HEADER.match(lines[j]) and not _KEY.match(lines[j])):
                break
            if pat.search(lines[j]):
                return j + 1
    return line_no


def _prefix(a: tuple[str, ...], b: tuple[str, ...]) -> int:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


def iter_param_values(spec: ExperimentSpec, key: str) -> Iterator[Any]:
    """Every value ``key`` takes in the grid (used to check machines and allocators before running)."""
    if key in spec.fixed:
        yield spec.fixed[key]
    for axis, vals in spec.axes:
        for v in vals:
            if isinstance(v, dict):
                if key in v:
                    yield v[key]
            elif axis == key:
                yield v
