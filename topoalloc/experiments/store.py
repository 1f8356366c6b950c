"""The results store: a Parquet dataset under one folder, one file per finished cell, written atomically.

Layout of ``DIR``::

    cells/KEY.parquet          one row: a finished cell (parameters + metrics)
    cells/KEY.error.parquet    one row: a cell that raised (parameters + error text)
    parts/part-HASH.parquet    many rows: finished cells merged by compact()
    jobs/KEY.parquet           the per-job table of a cell (when the spec asks)
    timings.jsonl              wall time and worker of each run (kept apart: results stay byte-identical)
    sweep.json, spec.toml      what was run: the spec, the command, the versions

A file appears under its final name only once complete (written to a
temporary name in the same folder, then renamed), so a crash, a kill or
Ctrl-C never leaves a partial result; the temporary files a killed process
leaves behind are removed when the store is next opened for writing.  The key
is the hash of the cell's full parameters (:func:`~topoalloc.experiments.spec.cell_key`),
so a cell is never stored twice: re-running a spec skips what is done.

:func:`load` returns a **pandas** DataFrame: pandas is what the plotting,
statistics and notebook tools our users already have take directly (matplotlib,
seaborn, scipy, statsmodels), it is already installed wherever pyarrow and
matplotlib are, and a sweep's table (one row per run, at most some 10^5 rows)
is far below the size where polars' speed matters.  ``load(DIR).pipe(polars.from_pandas)``
gives a polars frame for those who prefer it.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..errors import InvalidArgument
from ..outputs import atomic_output, atomic_write

__all__ = ["Store", "load"]

_META_KEY = b"topoalloc"


class Store:
    """A results folder (created if missing)."""

    def __init__(self, root: str | os.PathLike[str], *, create: bool = True):
        self.root = Path(root)
        if create:
            try:
                (self.root / "cells").mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise InvalidArgument("--out", str(root), f"a folder that can be created and written ({exc.strerror or exc})") from None
            if not os.access(self.root, os.W_OK | os.X_OK):
                raise InvalidArgument("--out", str(root), "a folder you can write to")
        elif not (self.root / "cells").is_dir():
            raise InvalidArgument("DIR", str(root), "a results folder written by topoalloc sweep (it has no cells/ folder)")
        self.cells_dir = self.root / "cells"
        self.parts_dir = self.root / "parts"
        self.jobs_dir = self.root / "jobs"
        self._lock_fh: Any = None

    # ------------------------------------------------------------ writing

    @contextmanager
    def writing(self) -> Iterator["Store"]:
        """Hold the store's lock (one sweep writes a folder at a time) and clear what killed writers left."""
        fh = open(self.root / ".lock", "w")
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fh.close()
            raise InvalidArgument("--out", str(self.root), "a results folder no other sweep is writing (another sweep holds its lock)") from None
        try:
            for d in (self.cells_dir, self.parts_dir, self.jobs_dir, self.root):
                if d.is_dir():
                    for p in d.glob(".*.tmp*"):
                        p.unlink(missing_ok=True)
            self._lock_fh = fh
            yield self
        finally:
            self._lock_fh = None
            fcntl.flock(fh, fcntl.LOCK_UN)
            fh.close()

    def write(self, record: dict[str, Any]) -> None:
        """Store one cell's record (from :func:`~topoalloc.experiments.cells.run_cell`) atomically."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        key = record["key"]
        metrics = record.get("_metrics") or {}
        row = {k: v for k, v in record.items() if not k.startswith("_")}
        row.update(metrics)
        meta = {"metrics": sorted(metrics), "columns": [k for k in row if k not in metrics]}
        table = pa.Table.from_pylist([row]).replace_schema_metadata({_META_KEY: json.dumps(meta).encode()})
        jobs = record.get("_jobs")
        if jobs is not None:
            self.jobs_dir.mkdir(exist_ok=True)
            atomic_write(self.jobs_dir / f"{key}.parquet", jobs)
        ok = record["status"] == "ok"
        target = self.cells_dir / (f"{key}.parquet" if ok else f"{key}.error.parquet")
        with atomic_output(target) as tmp:
            pq.write_table(table, tmp, compression="zstd")
        if ok:
            (self.cells_dir / f"{key}.error.parquet").unlink(missing_ok=True)
        with open(self.root / "timings.jsonl", "a") as fh:
            fh.write(json.dumps({"key": key, "seconds": record.get("_seconds"), "worker": record.get("_worker"), "status": record["status"]}) + "\n")

    def write_meta(self, name: str, text: str) -> None:
        atomic_write(self.root / name, text)

    # ------------------------------------------------------------ reading

    def done(self) -> set[str]:
        """Keys of the cells finished without error."""
        keys = {p.name[: -len(".parquet")] for p in self.cells_dir.glob("*.parquet") if not p.name.startswith(".") and not p.name.endswith(".error.parquet")}
        for part in self._parts():
            import pyarrow.parquet as pq

            keys.update(pq.read_table(part, columns=["key"]).column("key").to_pylist())
        return keys

    def errors(self) -> set[str]:
        return {p.name[: -len(".error.parquet")] for p in self.cells_dir.glob("*.error.parquet") if not p.name.startswith(".")}

    def _parts(self) -> list[Path]:
        return sorted(p for p in self.parts_dir.glob("part-*.parquet") if not p.name.startswith(".")) if self.parts_dir.is_dir() else []

    def _cell_files(self) -> list[Path]:
        return sorted(p for p in self.cells_dir.glob("*.parquet") if not p.name.startswith("."))

    def compact(self) -> int:
        """Merge the finished cells' files into one part file (then remove them); the number merged.

        Loading 10,000 one-row files costs a file open each; one part file
        reads in milliseconds.  The part is written atomically before any cell
        file is removed, so a crash in between leaves each cell twice (which
        :func:`load` reads once), never zero times.
        """
        import pyarrow as pa
        import pyarrow.parquet as pq

        files = [p for p in self._cell_files() if not p.name.endswith(".error.parquet")]
        if len(files) < 2:
            return 0
        tables = [_read(p) for p in files]
        metrics = sorted({m for t in tables for m in _meta(t).get("metrics", [])})
        table = pa.concat_tables([t.replace_schema_metadata(None) for t in tables], promote_options="permissive")
        table = table.sort_by("key")
        meta = {"metrics": metrics}
        table = table.replace_schema_metadata({_META_KEY: json.dumps(meta).encode()})
        digest = hashlib.sha256("\n".join(table.column("key").to_pylist()).encode()).hexdigest()[:16]
        self.parts_dir.mkdir(exist_ok=True)
        with atomic_output(self.parts_dir / f"part-{digest}.parquet") as tmp:
            pq.write_table(table, tmp, compression="zstd")
        for p in files:
            p.unlink(missing_ok=True)
        return len(files)

    def load(self, *, errors: bool = True) -> Any:
        """Every stored cell as a pandas DataFrame (see :func:`load`)."""
        import pandas as pd
        import pyarrow as pa
        import pyarrow.parquet as pq

        tables = []
        metrics: set[str] = set()
        files = self._parts() + [p for p in self._cell_files() if errors or not p.name.endswith(".error.parquet")]
        for p in files:
            t = _read(p)
            metrics.update(_meta(t).get("metrics", []))
            tables.append(t.replace_schema_metadata(None))
        if not tables:
            df = pd.DataFrame(columns=["key", "status", "error"])
        else:
            df = pa.concat_tables(tables, promote_options="permissive").to_pandas()
            df = df.drop_duplicates("key", keep="first").sort_values("key", kind="stable").reset_index(drop=True)
            # a cell that failed and later succeeded: the success wins
            ok = set(df.loc[df["status"] == "ok", "key"])
            df = df[~((df["status"] == "error") & df["key"].isin(ok))].reset_index(drop=True)
        timings = self.timings()
        if timings:
            df["seconds"] = df["key"].map({k: v["seconds"] for k, v in timings.items()})
        df.attrs["metrics"] = sorted(m for m in metrics if m in df.columns)
        meta = self.meta()
        df.attrs["axes"] = [a for a in meta.get("axes", []) if a in df.columns]
        return df

    def timings(self) -> dict[str, dict[str, Any]]:
        """key -> {seconds, worker} of the last run of each cell (a torn last line is ignored)."""
        path = self.root / "timings.jsonl"
        out: dict[str, dict[str, Any]] = {}
        if path.exists():
            with open(path) as fh:
                for line in fh:
                    try:
                        d = json.loads(line)
                    except json.JSONDecodeError:
                        continue
                    out[d["key"]] = d
        return out

    def meta(self) -> dict[str, Any]:
        path = self.root / "sweep.json"
        if not path.exists():
            return {}
        try:
            data = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError):
            return {}
        return data if isinstance(data, dict) else {}


def _read(path: Path) -> Any:
    """One Parquet file as an Arrow table (ParquetFile: a fraction of read_table's per-file cost)."""
    import pyarrow.parquet as pq

    return pq.ParquetFile(path).read()


def _meta(table: Any) -> dict[str, Any]:
    md = table.schema.metadata or {}
    raw = md.get(_META_KEY)
    if not raw:
        return {}
    try:
        data = json.loads(raw)
    except json.JSONDecodeError:
        return {}
    return data if isinstance(data, dict) else {}


def load(root: str | os.PathLike[str], *, errors: bool = True) -> Any:
    """Load a results folder as a pandas DataFrame: one row per cell.

    Columns: ``key`` (the cell's hash), ``status`` (``ok`` or ``error``),
    ``error`` (the error text of a cell that raised), the grid's axes and
    every parameter, one column per metric, and ``seconds`` (wall time of the
    run).  ``df.attrs["metrics"]`` lists the metric columns and
    ``df.attrs["axes"]`` the axes of the grid.  ``errors=False`` leaves out the
    cells that raised.

    >>> df = load("results")                       # doctest: +SKIP
    >>> df.groupby(["allocator", "work_multiple"])["utilization"].mean()  # doctest: +SKIP
    """
    return Store(root, create=False).load(errors=errors)
