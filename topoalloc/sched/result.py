"""What a simulation produces: the per-job table and everything needed to compute metrics."""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import InvalidArgument
from ..outputs import atomic_output, atomic_write, check_output, dumps_json
from ..topology.base import Topology
from ..workload.core import Workload

__all__ = ["SimulationResult", "JOB_COLUMNS"]

#: Per-job columns added when jobs communicate on a simulated network.
NETWORK_COLUMNS = ("comm_time", "messages", "latency_mean", "blocking_mean", "hops_mean", "contention_slowdown")

#: Columns of the per-job table, in output order.
JOB_COLUMNS = (
    "job_id",
    "line",
    "submit",
    "start",
    "end",
    "wait",
    "response",
    "run",
    "estimate",
    "size",
    "allocated_size",
    "bounded_slowdown",
)


@dataclass(eq=False)
class SimulationResult:
    """The outcome of one simulation.

    Arrays are indexed like the workload's jobs.  ``allocations`` is a CSR
    pair ``(nodes, offsets)``: job ``j`` ran on ``nodes[offsets[j]:offsets[j+1]]``.
    """

    workload: Workload
    estimate: np.ndarray
    start: np.ndarray
    end: np.ndarray
    allocated_size: np.ndarray
    topology: Topology
    allocator: str
    scheduler: str
    allocations: tuple[np.ndarray, np.ndarray] | None = None
    reservations: list | None = None
    #: how many reservations the scheduler made or moved over the run (conservative backfilling: each job's
    #: first reservation, each move at a compression, each made again when the plan is remade), the work
    #: its plan itself defines; None for schedulers that do not keep a reservation for every queued job
    reservation_changes: int | None = None
    reports: list = field(default_factory=list)
    params: dict[str, Any] = field(default_factory=dict)
    bsld_threshold: float = 10.0
    #: run times under an allocation-dependent run-time model (None: the trace's)
    actual_run: np.ndarray | None = None
    #: the allocator's curve ordering, if it has one (spans are measured in it)
    ordering: Any = None
    #: jobs that communicated on a simulated network: {"per_job": arrays, "summary": aggregates, "spec": options}
    network: dict[str, Any] | None = None
    #: locality aggregates streamed while the jobs finished (see :class:`~topoalloc.metrics.locality.LocalityStream`)
    locality: dict[str, Any] | None = None
    #: blocks per job as the allocator counts them (``Allocation.info["blocks"]``: sub-meshes, buddies,
    #: pages), -1 for jobs whose allocation records none; None when no allocation recorded blocks
    blocks: np.ndarray | None = None
    #: per job, the mean hop distance between its nodes on the network its allocator wired for it (the slice
    #: allocators' own torus, twisted torus or mesh: ``Allocation.info["slice_hops"]``), NaN where none was
    #: recorded; None when no allocation recorded one
    slice_hops: np.ndarray | None = None
    #: which engine ran: "compiled" (the kernel, :mod:`~topoalloc.sched.fastpath`) or "general"; neither changes a
    #: result, so neither is in the summary or the per-job table
    engine: str = "general"
    #: with ``engine="auto"``, why the compiled kernel did not take a run the general engine ran (else None)
    engine_note: str | None = None

    def __len__(self) -> int:
        return len(self.workload)

    @property
    def machine(self) -> str:
        """The machine's spec (``topology.spec()``)."""
        return self.topology.spec()

    @property
    def n_nodes(self) -> int:
        return self.topology.n_nodes

    @property
    def submit(self) -> np.ndarray:
        return self.workload.submit

    @property
    def run(self) -> np.ndarray:
        return self.workload.run

    @property
    def size(self) -> np.ndarray:
        return self.workload.size

    @property
    def service(self) -> np.ndarray:
        """Each job's time on its processors: the modelled run time (network, run-time model) if any, else the trace's."""
        return self.workload.run if self.actual_run is None else self.actual_run

    @property
    def wait(self) -> np.ndarray:
        return self.start - self.workload.submit

    @property
    def response(self) -> np.ndarray:
        return self.end - self.workload.submit

    @property
    def bounded_slowdown(self) -> np.ndarray:
        """max(1, (wait + run) / max(run, τ)) with τ = ``bsld_threshold`` (10 s).

        Under a run-time model ``run`` is the modelled run time (``actual_run``).
        """
        run = self.workload.run if self.actual_run is None else self.actual_run
        return np.maximum(1.0, (self.wait + run) / np.maximum(run, self.bsld_threshold))

    def nodes_of(self, j: int) -> np.ndarray:
        if self.allocations is None:
            raise InvalidArgument("allocations", None, "a simulation run with record_allocations=True")
        flat, off = self.allocations
        return flat[off[j] : off[j + 1]]

    # ------------------------------------------------------------ tables
    def jobs_table(self) -> dict[str, np.ndarray]:
        w = self.workload
        table = {
            "job_id": w.job_id,
            "line": w.line,
            "submit": w.submit,
            "start": self.start,
            "end": self.end,
            "wait": self.wait,
            "response": self.response,
            "run": w.run,
            "estimate": self.estimate,
            "size": w.size,
            "allocated_size": self.allocated_size,
            "bounded_slowdown": self.bounded_slowdown,
        }
        if self.network is not None:
            table.update(self.network["per_job"])
        if self.blocks is not None:
            table["blocks"] = self.blocks
        if self.slice_hops is not None:
            table["slice_hops"] = self.slice_hops
        return table

    @property
    def columns(self) -> tuple[str, ...]:
        """Columns of the per-job table, in output order."""
        return (JOB_COLUMNS + (NETWORK_COLUMNS if self.network is not None else ()) + (("blocks",) if self.blocks is not None else ())
                + (("slice_hops",) if self.slice_hops is not None else ()))

    def to_csv(self, path: str | Path | None = None) -> str | None:
        """Write the per-job table as CSV (or return it as text when ``path`` is None)."""
        table = self.jobs_table()
        columns = self.columns
        cols = [table[c] for c in columns]
        out = io.StringIO()
        wr = csv.writer(out, lineterminator="\n")
        wr.writerow(columns)
        ints = {c for c in columns if np.issubdtype(table[c].dtype, np.integer)}
        lists = [c.tolist() for c in cols]
        fmt = [(lambda v: str(v)) if name in ints else _fmt_float for name in columns]
        for row in zip(*lists):
            wr.writerow([f(v) for f, v in zip(fmt, row)])
        text = out.getvalue()
        if path is None:
            return text
        atomic_write(path, text)
        return None

    def to_parquet(self, path: str | Path) -> None:
        """Write the per-job table as Parquet (needs the ``parquet`` extra: pyarrow)."""
        try:
            import pyarrow as pa
            import pyarrow.parquet as pq
        except ImportError:
            raise InvalidArgument("jobs_out", str(path), "a .csv path, or install pyarrow (pip install 'topoalloc[parquet]') for Parquet") from None
        table = self.jobs_table()
        with atomic_output(path) as tmp:
            pq.write_table(pa.table({c: table[c] for c in self.columns}), str(tmp))

    def write_jobs(self, path: str | Path) -> None:
        """Per-job table to ``path``: Parquet if it ends in ``.parquet``, CSV if ``.csv`` (written atomically).

        Raises
        ------
        InvalidArgument
            Another extension, a path in a missing or unwritable folder, or
            Parquet without pyarrow.
        """
        p = check_output(path, "jobs_out", (".csv", ".parquet"))
        if str(p).lower().endswith(".parquet"):
            self.to_parquet(path)
        else:
            self.to_csv(path)

    def summary(self) -> dict[str, Any]:
        """Aggregate metrics (see :mod:`topoalloc.metrics`) plus what was simulated."""
        from ..metrics import summarize

        return summarize(self)

    def to_json(self) -> str:
        """The summary as strict JSON (NaN as null)."""
        return dumps_json(self.summary())


def _fmt_float(v: float) -> str:
    if v != v:
        return ""
    return str(int(v)) if float(v).is_integer() and abs(v) < 2**53 else repr(v)
