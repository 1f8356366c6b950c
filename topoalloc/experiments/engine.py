"""Running a sweep: every cell not yet in the store, on Dask (or in this process), each stored as it finishes.

Where the cells run:

* ``workers=None`` — a ``dask.distributed`` local cluster with one
  single-threaded worker process per core (the simulator is pure Python: one
  process per core is what uses the machine);
* ``workers=1`` — in this process, one cell after another (no Dask at all);
* ``cluster="tcp://HOST:PORT"`` — an existing Dask scheduler (its workers need
  topoalloc, the same version, and the traces at the same paths);
* ``cluster="slurm" | "pbs" | "sge"`` — workers started as batch jobs by
  ``dask-jobqueue`` (``pip install "topoalloc[cluster]"``), with the options
  given (``cores``, ``memory``, ``queue``, ``walltime``, ``account`` ...).

The client writes every result as it arrives (:class:`~topoalloc.experiments.store.Store`),
so whatever happens to the sweep — Ctrl-C, a killed worker (Dask runs its
cell again elsewhere), a killed client — the same command resumes where it
stopped.  A cell that raises is stored as an error record and the sweep goes on.
"""

from __future__ import annotations

import logging
import math
import os
import platform
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import InvalidArgument
from ..outputs import dumps_json
from .cells import run_cell
from .spec import Cell, ExperimentSpec, SpecError, _locate, iter_param_values
from .store import Store

__all__ = ["run_sweep", "SweepResult", "versions"]

_JOBQUEUE = {"slurm": "SLURMCluster", "pbs": "PBSCluster", "sge": "SGECluster"}


@dataclass
class SweepResult:
    """What a sweep did: cells in the grid, already done, run now, failed; wall time."""

    total: int = 0
    skipped: int = 0
    ran: int = 0
    failed: int = 0
    seconds: float = 0.0
    rounds: int = 0
    failures: list[str] = field(default_factory=list)

    def line(self) -> str:
        msg = f"{self.total} cells: {self.skipped} already stored, {self.ran} run ({self.failed} failed) in {self.seconds:.1f} s"
        return msg + (f" over {self.rounds} rounds of replications" if self.rounds > 1 else "")


def versions() -> dict[str, str]:
    """Versions of Python, topoalloc and the libraries a result depends on."""
    from importlib import metadata

    from .. import __version__

    out = {"python": platform.python_version(), "topoalloc": __version__, "platform": f"{platform.system()} {platform.machine()}"}
    for name in ("numpy", "dask", "distributed", "pyarrow", "pandas", "matplotlib"):
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    return out


def check_components(spec: ExperimentSpec, trace_dirs: Sequence[str | os.PathLike[str]] = ()) -> None:
    """Build every (machine, allocator) and scheduler of the grid once, so a bad name fails before any cell runs."""
    from ..api import make_allocator, make_scheduler
    from ..errors import TopoallocError
    from ..topology import parse_machine

    def fail(key: str, value: Any, exc: Exception) -> SpecError:
        line = None
        if isinstance(value, str):
            for i, text in enumerate(spec.text.splitlines(), 1):
                if f'"{value}"' in text or f"'{value}'" in text:
                    line = i
                    break
        return SpecError(spec.source, line or _locate(spec.text, ("grid",)), key, str(exc))

    machines = set(iter_param_values(spec, "machine"))
    for m in machines:
        try:
            parse_machine(m)
        except TopoallocError as exc:
            raise fail("machine", m, exc) from None
    for s in set(iter_param_values(spec, "scheduler")):
        try:
            make_scheduler(s)
        except TopoallocError as exc:
            raise fail("scheduler", s, exc) from None
    # allocators against the machines they meet in the grid
    pairs = {(c.params.get("machine"), c.params.get("allocator", "flat")) for c in spec.cells([1], version="check", trace_dirs=trace_dirs) if c.params.get("machine")} if _cheap(spec) else set()
    for m, a in pairs:
        try:
            make_allocator(str(a), parse_machine(str(m)))
        except TopoallocError as exc:
            raise fail("allocator", a, exc) from None


def _cheap(spec: ExperimentSpec) -> bool:
    return spec.size <= 20_000


def _cost(cell: Cell) -> float:
    """A rough guess of a cell's work, to start the long ones first (the sweep then ends together)."""
    size = 1.0
    if cell.trace_path:
        try:
            size = float(os.path.getsize(cell.trace_path))
        except OSError:
            pass
    else:
        size = float(cell.params.get("n_jobs", 1000))
    return size * float(cell.params.get("work_multiple", 1.0)) * float(cell.params.get("load", 1.0))


class _Bar:
    """done/total, failures and ETA on stderr (rich), only on a terminal."""

    def __init__(self, total: int, label: str, enabled: bool):
        self.enabled = enabled and sys.stderr.isatty()
        self.label = label
        self.total = 0
        self.done = 0
        self.failed = 0
        self._bar: Any = None
        self._task: Any = None
        self.add_total(total)

    def _start(self) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

        self._bar = Progress(
            TextColumn(self.label),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("[red]{task.fields[failed]} failed"),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            console=Console(stderr=True),
            transient=True,
        )
        self._bar.start()
        self._task = self._bar.add_task(self.label, total=self.total, completed=self.done, failed=self.failed)

    def add_total(self, n: int) -> None:
        self.total += n
        if self.enabled and self._bar is None and self.total:
            self._start()
        elif self._bar is not None:
            self._bar.update(self._task, total=self.total)

    def advance(self, failed: bool) -> None:
        self.done += 1
        self.failed += bool(failed)
        if self._bar is not None:
            self._bar.update(self._task, completed=self.done, failed=self.failed)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None


class _Runner:
    """Runs cells somewhere and hands each record to ``sink`` as it finishes."""

    def run(self, cells: Sequence[Cell], sink: Callable[[dict[str, Any]], None]) -> None:  # pragma: no cover - interface
        raise NotImplementedError

    def close(self) -> None:
        pass


class _InProcess(_Runner):
    def run(self, cells: Sequence[Cell], sink: Callable[[dict[str, Any]], None]) -> None:
        for c in cells:
            sink(run_cell(c))


class _Dask(_Runner):
    def __init__(self, workers: int | None, cluster: str | None, options: Mapping[str, Any]):
        try:
            import distributed
        except ImportError:
            raise InvalidArgument("--workers", workers, "1 (in this process), or install Dask for parallel sweeps: pip install 'topoalloc[sweep]'") from None
        logging.getLogger("distributed").setLevel(logging.ERROR)
        dist: Any = distributed  # typed loosely: its API is used as documented, not type-checked here
        Client, LocalCluster = dist.Client, dist.LocalCluster
        self.cluster: Any = None
        self.client: Any = None
        if cluster is None:
            n = workers or os.cpu_count() or 1
            self.cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=True, dashboard_address=None, silence_logs=logging.ERROR, **dict(options))
            self.client = Client(self.cluster)
            from ._dask_worker import IgnoreCtrlC

            self.client.register_plugin(IgnoreCtrlC())
        elif cluster.startswith(("tcp://", "tls://", "ws://", "wss://", "inproc://", "ucx://")):
            self.client = Client(cluster, timeout="20s")
            if options:
                raise InvalidArgument("--cluster-option", dict(options), f"no options with an existing scheduler ({cluster})")
        elif cluster in _JOBQUEUE:
            try:
                import dask_jobqueue
            except ImportError:
                raise InvalidArgument("--cluster", cluster, "a batch system through dask-jobqueue, which is not installed: pip install 'topoalloc[cluster]'") from None
            cls = getattr(dask_jobqueue, _JOBQUEUE[cluster])
            try:
                self.cluster = cls(**dict(options))
            except (TypeError, ValueError) as exc:
                raise InvalidArgument("--cluster-option", dict(options), f"options {_JOBQUEUE[cluster]} accepts (cores, memory, queue, walltime, account, ...): {exc}") from None
            self.cluster.scale(jobs=workers or 1)
            self.client = Client(self.cluster)
        else:
            raise InvalidArgument("--cluster", cluster, "tcp://HOST:PORT (a running Dask scheduler) or one of slurm, pbs, sge")
        self._check_versions()

    def _check_versions(self) -> None:
        from .. import __version__

        def ver() -> str:
            import topoalloc

            return str(topoalloc.__version__)

        try:
            seen = self.client.run(ver)
        except Exception:  # no workers yet (a batch cluster still queueing): checked by the keys then
            return
        bad = {w: v for w, v in seen.items() if v != __version__}
        if bad:
            raise InvalidArgument("--cluster", str(self.client.scheduler.address), f"workers running topoalloc {__version__} like this client; {', '.join(f'{w} has {v}' for w, v in bad.items())}")

    def run(self, cells: Sequence[Cell], sink: Callable[[dict[str, Any]], None]) -> None:
        import distributed

        as_completed: Any = getattr(distributed, "as_completed")
        if not cells:
            return
        cells = sorted(cells, key=_cost, reverse=True)
        futures = [self.client.submit(run_cell, c, key=f"cell-{c.key}", pure=False, priority=len(cells) - i, retries=0) for i, c in enumerate(cells)]
        by_key = {f.key: c for f, c in zip(futures, cells)}
        try:
            for fut in as_completed(futures):
                try:
                    rec = fut.result()
                except Exception as exc:  # the cell's worker died too often (KilledWorker), or could not run it
                    c = by_key[fut.key]
                    rec = {"key": c.key, "status": "error", "error": f"{type(exc).__name__}: {exc}", **c.row(), "_seconds": None, "_worker": None}
                fut.release()
                sink(rec)
        except BaseException:
            self.client.cancel(futures)
            raise

    def close(self) -> None:
        try:
            self.client.close(timeout=10)
        except Exception:
            pass
        if self.cluster is not None:
            try:
                self.cluster.close(timeout=10)
            except Exception:
                pass


def make_runner(workers: int | None = None, cluster: str | None = None, options: Mapping[str, Any] | None = None) -> _Runner:
    if workers is not None and workers < 1:
        raise InvalidArgument("--workers", workers, "a positive number of worker processes")
    if cluster is None and workers == 1:
        if options:
            raise InvalidArgument("--cluster-option", dict(options), "no options for an in-process sweep")
        return _InProcess()
    return _Dask(workers, cluster, options or {})


def run_sweep(
    spec: ExperimentSpec,
    out: str | os.PathLike[str],
    *,
    workers: int | None = None,
    cluster: str | None = None,
    cluster_options: Mapping[str, Any] | None = None,
    trace_dirs: Sequence[str | os.PathLike[str]] = (),
    progress: bool = True,
    command: str | None = None,
    compact: bool = True,
    runner: _Runner | None = None,
) -> SweepResult:
    """Run every cell of ``spec`` not yet stored under ``out``; see the module notes for where they run.

    Returns a :class:`SweepResult`.  On Ctrl-C the cells already finished stay
    stored and ``KeyboardInterrupt`` propagates (the CLI then says how many
    cells are stored); running the same sweep again resumes.
    """
    t0 = time.perf_counter()
    check_components(spec, trace_dirs)
    store = Store(out)
    res = SweepResult()
    with store.writing():
        cells = spec.cells(trace_dirs=trace_dirs)
        _write_meta(store, spec, command, cells)
        if compact:
            store.compact()  # what an interrupted run left as loose files: one part, quick to read
        done = store.done()
        own = runner is None
        runner = runner or make_runner(workers, cluster, cluster_options)
        bar = _Bar(0, spec.name, progress)
        try:
            reps_done = spec.replications.min
            batch = cells
            res.total = 0
            while True:
                res.rounds += 1
                todo = [c for c in batch if c.key not in done]
                res.total += len(batch)
                res.skipped += len(batch) - len(todo)
                bar.add_total(len(todo))

                def sink(rec: dict[str, Any]) -> None:
                    store.write(rec)
                    failed = rec["status"] != "ok"
                    res.ran += 1
                    if failed:
                        res.failed += 1
                        if len(res.failures) < 20:
                            res.failures.append(f"{rec['key']}: {str(rec.get('error') or '').splitlines()[0] if rec.get('error') else ''}")
                    else:
                        done.add(rec["key"])
                    bar.advance(failed)

                runner.run(todo, sink)
                if not spec.replications.sequential or reps_done >= spec.replications.max:
                    break
                more = _unsettled(spec, store, reps_done, trace_dirs)
                if not more:
                    break
                reps_done += 1
                batch = [c for c in spec.cells([reps_done], trace_dirs=trace_dirs) if _group(c) in more]
        finally:
            bar.close()
            if own:
                runner.close()
        if compact:
            store.compact()
    res.seconds = time.perf_counter() - t0
    return res


def _group(cell: Cell) -> str:
    """The key of a cell without its replication number (labels included, as in the cell's own key)."""
    p = {k: v for k, v in cell.params.items() if k not in ("rep", "workload_seed")}
    from .spec import cell_key

    return cell_key(p, cell.labels)


def _unsettled(spec: ExperimentSpec, store: Store, reps: int, trace_dirs: Sequence[str | os.PathLike[str]]) -> set[str]:
    """Groups (a cell without its replication number) whose interval of a watched metric is still too wide.

    A metric that a group's runs did not measure at all (every value NaN, e.g.
    packet latency in a run without a network) does not hold the group back;
    a group with no stored runs yet is unsettled.
    """
    from .stats import mean_ci

    r = spec.replications
    cells = spec.cells(list(range(1, reps + 1)), trace_dirs=trace_dirs)
    group_of = {c.key: _group(c) for c in cells}
    watched_of = {_group(c): tuple(c.params.get("stop_metrics") or r.watched) for c in cells}
    df = store.load(errors=False)
    groups = [group_of.get(key) for key in df["key"]] if "key" in df.columns else []  # each stored row's group (None: not this spec's)
    seen = {g for g in groups if g is not None}
    values: dict[tuple[str, str], list[float]] = {}
    for metric in {m for w in watched_of.values() for m in w}:
        if metric in df.columns:
            for g, v in zip(groups, df[metric]):
                if g is not None:
                    values.setdefault((g, metric), []).append(float(v))
    out = set()
    for g in set(group_of.values()):
        if g not in seen:
            out.add(g)
            continue
        for metric in watched_of[g]:
            vals = [v for v in values.get((g, metric), []) if v == v]
            if not vals:
                continue  # not measured in this group
            m, half = mean_ci(vals, r.confidence)
            if not (half == half and m == m) or (m != 0 and half / abs(m) > (r.rel_ci or 0)) or (m == 0 and half > 0):
                out.add(g)
                break
    return out


def _write_meta(store: Store, spec: ExperimentSpec, command: str | None, cells: Sequence[Cell]) -> None:
    import json

    meta = {
        "name": spec.name,
        "description": spec.description,
        "source": spec.source,
        "command": command or " ".join(["topoalloc", *sys.argv[1:]]),
        "versions": versions(),
        "axes": spec.axis_names,
        "metrics": list(spec.metrics),
        "claims": spec.claims,
        "report": spec.report,
        "replications": spec.replications.__dict__,
        "cells": len(cells),
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    store.write_meta("sweep.json", dumps_json(meta))
    if spec.text:
        store.write_meta("spec.toml", spec.text)
    else:
        store.write_meta("spec.json", json.dumps(spec.raw, indent=2, default=str))
