"""Jobs and workloads.

A :class:`Workload` is columnar (numpy arrays, one entry per job) so that
traces of hundreds of thousands of jobs stay small and every transform is a
vectorised expression; :class:`Job` is the frozen per-job view handed to users.
Missing values follow the SWF convention: ``-1``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import InvalidArgument

__all__ = ["Job", "Workload", "SWF_FIELDS"]

#: The 18 fields of the Standard Workload Format, in file order.
SWF_FIELDS: tuple[str, ...] = (
    "job_id",
    "submit_time",
    "wait_time",
    "run_time",
    "allocated_procs",
    "avg_cpu_time",
    "used_memory",
    "requested_procs",
    "requested_time",
    "requested_memory",
    "status",
    "user_id",
    "group_id",
    "executable_id",
    "queue_id",
    "partition_id",
    "preceding_job_id",
    "think_time",
)
F = {name: i for i, name in enumerate(SWF_FIELDS)}

#: the array fields of a Workload (see Workload._adopting)
_ALL_ARRAYS = frozenset({"job_id", "submit", "run", "size", "requested_time", "shape", "line", "swf"})


@dataclass(frozen=True, slots=True)
class Job:
    """One job as the simulator sees it.

    ``size`` is the number of processors asked for (SWF: requested, else
    allocated); ``requested_time`` is ``-1`` when the trace has none (the
    simulation's estimate policy then supplies one); ``shape`` is a requested
    configuration such as an X×Y mesh; ``line`` is the source line (0 for
    generated jobs).
    """

    id: int
    submit: float
    run: float
    size: int
    requested_time: float = -1.0
    shape: tuple[int, ...] | None = None
    line: int = 0


class Workload:
    """An immutable, columnar collection of jobs sorted by submit time.

    Parameters
    ----------
    job_id, submit, run, size, requested_time : array-like
        One entry per job; ``-1`` marks a missing value.
    shape : array (n, d), optional
        Requested shapes (all jobs, same number of dimensions); ``size`` must
        equal the product of each row.
    line : array, optional
        Source line of each job (0 when generated).
    swf : array (n, 18), optional
        The raw SWF record of each job, kept so writing a trace back loses
        nothing.  Columns above take precedence when the two disagree.
    header : mapping
        Header facts (``MaxProcs``, ``UnixStartTime`` ...) as strings.
    source : str
        Where the jobs came from (a path, or a generator description).
    warnings : sequence of str
        What the reader noticed and kept (negative submit times, repeated
        ids, submit times going backwards); reported with the filters.
    """

    __slots__ = ("job_id", "submit", "run", "size", "requested_time", "shape", "line", "_swf", "header", "source", "warnings")

    job_id: np.ndarray
    submit: np.ndarray
    run: np.ndarray
    size: np.ndarray
    requested_time: np.ndarray
    shape: np.ndarray | None
    line: np.ndarray
    _swf: np.ndarray | None
    header: dict[str, str]
    source: str
    warnings: tuple[str, ...]

    def __init__(
        self,
        job_id: Any,
        submit: Any,
        run: Any,
        size: Any,
        requested_time: Any,
        shape: Any = None,
        line: Any = None,
        swf: Any = None,
        header: Mapping[str, str] | None = None,
        source: str = "<memory>",
        warnings: Sequence[str] = (),
    ):
        self._init(job_id, submit, run, size, requested_time, shape, line, swf, header, source, warnings, adopt=frozenset())

    @classmethod
    def _adopting(cls, adopt: frozenset[str], **fields: Any) -> "Workload":
        """A workload that takes the arrays named in ``adopt`` as they are, without a copy.

        For arrays nobody else holds (freshly computed) or that are already
        another workload's (read-only): they are frozen and shared.  Every
        check of the constructor still runs.
        """
        self = object.__new__(cls)
        self._init(
            fields["job_id"], fields["submit"], fields["run"], fields["size"], fields["requested_time"],
            fields.get("shape"), fields.get("line"), fields.get("swf"), fields.get("header"),
            fields.get("source", "<memory>"), fields.get("warnings", ()), adopt=adopt,
        )
        return self

    def _init(
        self, job_id: Any, submit: Any, run: Any, size: Any, requested_time: Any, shape: Any, line: Any, swf: Any,
        header: Mapping[str, str] | None, source: str, warnings: Sequence[str], *, adopt: frozenset[str],
    ) -> None:
        def column(name: str, value: Any, dtype: type) -> np.ndarray:
            if name in adopt and isinstance(value, np.ndarray) and value.dtype == dtype:
                return value
            return np.array(value, dtype=dtype)

        n = len(np.asarray(submit))
        cols = {
            "job_id": (job_id, np.int64),
            "submit": (submit, np.float64),
            "run": (run, np.float64),
            "size": (size, np.int64),
            "requested_time": (requested_time, np.float64),
        }
        for name, (value, dtype) in cols.items():
            arr = column(name, value, dtype)
            if arr.shape != (n,):
                raise InvalidArgument(name, f"array of shape {arr.shape}", f"a 1-D array of {n} entries")
            arr.flags.writeable = False
            object.__setattr__(self, name, arr)
        line = np.zeros(n, np.int64) if line is None else column("line", line, np.int64)
        if line.shape != (n,):
            raise InvalidArgument("line", f"array of shape {line.shape}", f"{n} entries")
        line.flags.writeable = False
        object.__setattr__(self, "line", line)
        if shape is not None:
            shp = column("shape", shape, np.int64)
            if shp.ndim != 2 or shp.shape[0] != n:
                raise InvalidArgument("shape", f"array of shape {shp.shape}", f"an array of shape ({n}, d)")
            if n and not np.array_equal(np.prod(shp, axis=1), self.size):
                bad = int(np.flatnonzero(np.prod(shp, axis=1) != self.size)[0])
                raise InvalidArgument("shape", shp[bad].tolist(), f"sides whose product is the size {self.size[bad]} (job {self.job_id[bad]})")
            shp.flags.writeable = False
            shape = shp
        object.__setattr__(self, "shape", shape)
        if swf is not None:
            raw = column("swf", swf, np.float64)
            if raw.shape != (n, 18):
                raise InvalidArgument("swf", f"array of shape {raw.shape}", f"an array of shape ({n}, 18)")
            raw.flags.writeable = False
            swf = raw
        object.__setattr__(self, "_swf", swf)
        object.__setattr__(self, "header", dict(header or {}))
        object.__setattr__(self, "source", source)
        object.__setattr__(self, "warnings", tuple(warnings))
        if n > 1 and (np.diff(self.submit) < 0).any():
            order = np.argsort(self.submit, kind="stable")
            sorted_wl = self.take(order)
            for name in ("job_id", "submit", "run", "size", "requested_time", "shape", "line", "_swf"):
                object.__setattr__(self, name, getattr(sorted_wl, name))

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"Workload is immutable; use replace() or take() (tried to set {name!r})")

    @property
    def swf(self) -> np.ndarray | None:
        """The (n, 18) SWF records, or None for a generated workload."""
        return self._swf

    # ------------------------------------------------------------- access
    def __len__(self) -> int:
        return int(self.submit.shape[0])

    def __getitem__(self, i: int) -> Job:
        i = int(i)
        if not -len(self) <= i < len(self):
            raise IndexError(f"job index {i} out of range for {len(self)} jobs")
        return Job(
            id=int(self.job_id[i]),
            submit=float(self.submit[i]),
            run=float(self.run[i]),
            size=int(self.size[i]),
            requested_time=float(self.requested_time[i]),
            shape=None if self.shape is None else tuple(int(s) for s in self.shape[i]),
            line=int(self.line[i]),
        )

    def __iter__(self) -> Iterator[Job]:
        for i in range(len(self)):
            yield self[i]

    def __repr__(self) -> str:
        return f"Workload({len(self)} jobs from {self.source!r})"

    @property
    def max_procs(self) -> int | None:
        """The machine size the header states (MaxProcs, else MaxNodes), if any."""
        from .header import header_max_procs

        return header_max_procs(self.header)

    @property
    def requested_procs(self) -> np.ndarray:
        return self._raw_or_missing("requested_procs")

    @property
    def allocated_procs(self) -> np.ndarray:
        return self._raw_or_missing("allocated_procs")

    def _raw_or_missing(self, name: str) -> np.ndarray:
        if self._swf is None:
            return np.full(len(self), -1.0)
        return self._swf[:, F[name]]

    def describe_job(self, i: int) -> str:
        """``"job 42 (line 1042 of 'trace.swf')"`` — for messages."""
        line = int(self.line[i])
        where = f" (line {line} of {self.source!r})" if line > 0 else ""
        return f"job {int(self.job_id[i])}{where}"

    # --------------------------------------------------------- derivation
    def take(self, index: np.ndarray) -> "Workload":
        """A workload of the jobs at ``index`` (a boolean mask or integer positions)."""
        idx = np.asarray(index)
        return Workload._adopting(
            _ALL_ARRAYS,
            job_id=self.job_id[idx],
            submit=self.submit[idx],
            run=self.run[idx],
            size=self.size[idx],
            requested_time=self.requested_time[idx],
            shape=None if self.shape is None else self.shape[idx],
            line=self.line[idx],
            swf=None if self._swf is None else self._swf[idx],
            header=self.header,
            source=self.source,
            warnings=self.warnings,
        )

    def replace(self, **changes: Any) -> "Workload":
        """A copy with some columns replaced (the others are shared: they are read-only)."""
        fields = {
            name: getattr(self, name)
            for name in ("job_id", "submit", "run", "size", "requested_time", "shape", "line", "header", "source", "warnings")
        }
        fields["swf"] = self._swf
        fields.update(changes)
        return Workload._adopting(_ALL_ARRAYS - set(changes), **fields)

    def to_swf_array(self) -> np.ndarray:
        """The (n, 18) SWF records, with this workload's columns written in."""
        n = len(self)
        raw = np.full((n, 18), -1.0) if self.swf is None else self.swf.copy()
        raw[:, F["job_id"]] = self.job_id
        raw[:, F["submit_time"]] = self.submit
        raw[:, F["run_time"]] = self.run
        raw[:, F["requested_time"]] = self.requested_time
        req = raw[:, F["requested_procs"]]
        # size is "requested, else allocated": write it where it came from
        use_req = (req > 0) | (raw[:, F["allocated_procs"]] <= 0) | (self.size != raw[:, F["allocated_procs"]])
        raw[use_req, F["requested_procs"]] = self.size[use_req]
        return raw

    @classmethod
    def from_jobs(cls, jobs: list[Job], *, header: Mapping[str, str] | None = None, source: str = "<jobs>") -> "Workload":
        """Build a workload from :class:`Job` objects (shapes must all be set or all unset)."""
        shapes = [j.shape for j in jobs]
        has = [s is not None for s in shapes]
        if any(has) and not all(has):
            raise InvalidArgument("jobs", "mixed shapes", "every job with a shape, or none")
        return cls(
            job_id=[j.id for j in jobs],
            submit=[j.submit for j in jobs],
            run=[j.run for j in jobs],
            size=[j.size for j in jobs],
            requested_time=[j.requested_time for j in jobs],
            shape=np.array(shapes, dtype=np.int64) if jobs and all(has) else None,
            line=[j.line for j in jobs],
            header=header or {},
            source=source,
        )
