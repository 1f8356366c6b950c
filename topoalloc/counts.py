"""Flat simulations over processor counts, without numpy: what ``topoalloc simulate`` runs when it can.

On the flat machine with the flat allocator a schedule depends on processor
counts only, and the compiled kernel (:mod:`topoalloc.sched.fastpath`) runs it
from four columns of numbers.  This module gets exactly those columns to the
kernel and sums the result, in the memory of the columns:

* the trace is read a block of lines at a time (gzip decompressed as it is
  read), each block parsed by the compiled SWF tokenizer, and only the fields
  a simulation or a report uses are kept, in :mod:`array` buffers;
* the built-in filters (:mod:`topoalloc.workload.clean`), in
  :data:`~topoalloc.workload.steps.PIPELINE_ORDER`, and the estimate policy
  act on those columns and report as the filters do;
* the kernel runs on the buffers, and the metrics are the correctly rounded
  sums :mod:`topoalloc.metrics.scheduling` takes.

Neither numpy nor the package's allocators, machines and registries are
loaded: a command that takes this path peaks below a plain-Python EASY loop
over the same trace (``benchmarks/bench_naive_easy.py``).

It is a shortcut, never a second opinion.  It takes only runs it can do
exactly as the general path (:func:`topoalloc.api.simulate`) does, giving the
same jobs, reports, schedule and summary, byte for byte (the tests compare the
two commands' output), and :func:`run` returns ``None`` for anything else:

* another machine, allocator, scheduler option, transform or output;
* a plugin (it could add a metric or replace a filter);
* a trace the compiled tokenizer does not take whole (anything but plain
  ASCII lines of 18 numbers after a header), or larger than the reader's
  limit;
* a value the reader would refuse or warn about (ids not whole or not
  increasing, submit times negative or going backwards, times too large to
  add exactly);
* a job the simulation would refuse, or a filter that leaves no job.

The general path then runs, and gives the result or names what is wrong.
"""

from __future__ import annotations

import math
import os
import re
import stat
import zlib
from array import array
from itertools import compress, repeat
from operator import add, gt, le, lt, mul, sub, truediv
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, cast

from . import textfiles
from .workload.header import default_trace_path, header_max_procs, parse_header
from .workload.steps import ESTIMATE_POLICIES, PIPELINE_ORDER, REASONS, STANDARD_CLEAN, FilterReport

if TYPE_CHECKING:
    import argparse

__all__ = ["run", "METRIC_UNITS", "SCHEDULER_SPECS"]

#: the schedulers taken, by the name a user gives, with the canonical spec the summary records
#: and the kernel's code (the general path's ``make_scheduler(name)``; a test checks both)
SCHEDULER_SPECS: dict[str, tuple[str, int]] = {
    "fcfs": ("fcfs:order=fcfs", 0),
    "easy": ("easy:order=fcfs,incremental=true", 1),
    "conservative": ("conservative:order=fcfs", 2),
}

#: the flat allocator's canonical spec
ALLOCATOR_SPEC = "flat:probe=counting"

#: the scheduling metrics' names in the summary's order, with their units (the metric registry's; a test checks it)
METRIC_UNITS: dict[str, str] = {
    "allocated_utilization": "",
    "makespan": "s",
    "max_wait": "s",
    "mean_bounded_slowdown": "",
    "mean_response": "s",
    "mean_wait": "s",
    "offered_load": "",
    "utilization": "",
}

#: bounded slowdown's threshold τ (:attr:`~topoalloc.sched.result.SimulationResult.bsld_threshold`)
BSLD_THRESHOLD = 10.0

#: bytes of text parsed at once
BLOCK = 1 << 16

_MACHINE = re.compile(r"flat:([1-9][0-9]*)")
_EXACT = 2.0**53
#: below this, adding any time to a submit time loses less than 1e-6 of it (the reader's check, in bulk)
_SMALL_TIMES = 2.0**30
_EXAMPLES = 5
#: the start of a line that is not part of an SWF header (not blank, not a ';' comment)
_JOB_LINE = re.compile(rb"^ *[^ ;\n]", re.MULTILINE)


class Jobs:
    """The jobs a flat simulation runs, as the general path prepares them (after the filters), with the
    filters' reports; ``lines`` is how many job lines the trace has."""

    def __init__(self) -> None:
        self.submit = array("d")
        self.run = array("d")
        self.size = array("q")
        self.estimate = array("d")
        self.reports: list[FilterReport] = []
        self.lines = 0
        self.header: dict[str, str] = {}
        self.nodes = 0

    def __len__(self) -> int:
        return len(self.submit)


def run(args: "argparse.Namespace", plugins: Sequence[str], progress: Callable[[int, int], None] | None = None) -> tuple[dict[str, Any], list[FilterReport]] | None:
    """The summary and the filters' reports of the ``topoalloc simulate`` command ``args``, or ``None``
    if this path does not take the run (see the module's notes; then the general path runs it).

    Raises
    ------
    TopoallocError
        Only what the general path raises for the same run once the trace is read: a machine (given, or
        the header's MaxProcs) that does not fit in memory.
    """
    name = _taken(args, plugins)
    if name is None:
        return None
    try:
        from .sched import _ckernel
    except ImportError:
        return None
    path = default_trace_path() if args.trace is None else Path(args.trace)
    nodes = None if args.machine is None else int(args.machine[5:])
    w = read_jobs(path, nodes, clean=args.clean, filters=args.filters or (), estimate=args.estimate)
    if w is None:
        return None
    n = w.nodes
    from .limits import check_allocator_machine, check_header_machine

    if args.machine is None:  # (the general path's checks, in its order, once the trace is read)
        check_header_machine(n, str(path))
    check_allocator_machine(n, f"flat:{n}")
    jobs = len(w)
    spec, kind = SCHEDULER_SPECS[name]
    start = array("d", [math.nan]) * jobs
    end = array("d", [math.nan]) * jobs
    status, _, _, changes = _ckernel.run(kind, n, w.submit, w.run, w.estimate, w.size, None, kind == 1, start, end, None, 0)
    if status:
        return None  # (the general path raises what the kernel found)
    if progress is not None:
        progress(jobs, jobs)
    summary: dict[str, Any] = {"jobs": jobs, "machine": f"flat:{n}", "nodes": n, "allocator": ALLOCATOR_SPEC, "scheduler": spec}
    summary.update(metrics(n, w.submit, w.run, w.size, start, end))
    if kind == 2:  # (conservative: as the general path's summary has it)
        summary["reservation_changes"] = changes
    summary["params"] = {"trace": str(path), "estimate": args.estimate, "clean": bool(args.clean), "seed": None, "jobs_in_trace": w.lines}
    summary["filters"] = [rep.as_dict() for rep in w.reports]
    return summary, w.reports


def _taken(args: "argparse.Namespace", plugins: Sequence[str]) -> str | None:
    """The scheduler's name if this path takes the command ``args``, else ``None``."""
    plain = (
        not plugins
        and args.allocator == "flat"
        and args.scheduler in SCHEDULER_SPECS
        and (args.machine is None or _MACHINE.fullmatch(args.machine) is not None)
        and args.seed is None
        and args.runtime_model is None
        and args.network is None
        and args.jobs_out is None
        and args.scale_sizes is None
        and not args.round_pow2
        and args.work_multiple is None
        and args.engine != "python"  # (this path runs the compiled kernel)
    )
    return args.scheduler if plain else None


class _Tally:
    """What one filter did so far: how many jobs, and the first few by id and line."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.count = 0
        self.examples: list[str] = []

    def add(self, positions: list[int], ids: list[float], line0: int) -> None:
        self.count += len(positions)
        for i in positions[: _EXAMPLES - len(self.examples)]:
            self.examples.append(f"job {int(ids[i])} line {line0 + i}")


def read_jobs(path: Path, nodes: int | None, *, clean: bool, filters: Sequence[str], estimate: str) -> Jobs | None:
    """The jobs of the SWF file at ``path`` (plain or gzip) prepared for a flat machine of ``nodes``
    processors (``None``: the header's MaxProcs) as :func:`topoalloc.api.prepare_workload` prepares them,
    in one pass over the text; or ``None`` where the general path should decide (see the module).

    Each block of lines is parsed by the compiled tokenizer, checked as the general reader checks the
    whole table, filtered, and only the surviving jobs' submit time, run time, size and estimate are kept.
    """
    from .workload.steps import FILTER_HELP

    try:
        from .workload import _cswf
    except ImportError:  # (not built at install time: the general reader parses the text)
        return None

    wanted = set(filters)
    if not wanted <= set(FILTER_HELP) or estimate not in ESTIMATE_POLICIES:
        return None
    if clean:
        wanted |= set(STANDARD_CLEAN)
    source = str(path)  # (as the general reader names it)
    drops = [_Tally(step) for step in PIPELINE_ORDER if step.startswith("drop-") and step in wanted]
    fill = _Tally("fill-size") if "fill-size" in wanted else None
    cap = _Tally("cap-runtime") if "cap-runtime" in wanted else None
    missing = 0  # kept jobs without a requested time
    w = Jobs()
    line0 = 0
    last_id, last_submit = -math.inf, 0.0
    try:
        for block in _blocks(path, textfiles._text_limit()):
            got = _cswf.parse(block)
            if got is None:
                return None
            hbytes, hlines, m, table = got
            if not line0:
                head = block[:hbytes].decode("ascii").split("\n")[:hlines]
                w.header = parse_header([ln for ln in head if ln.lstrip().startswith(";")])
                line0 = hlines + 1
                if nodes is None:
                    nodes = header_max_procs(w.header)
                    if nodes is None:
                        return None
            elif hbytes:
                return None  # a comment or blank line among the jobs: the general reader keeps their line numbers
            if nodes is None:
                return None
            t = memoryview(table).cast("d")
            ids, submit, wait, run_time, alloc, req_procs, req = (cast("list[float]", t[k::18].tolist()) for k in (0, 1, 2, 3, 4, 7, 8))
            del t, table
            for col in (ids, alloc, req_procs):  # whole numbers a float64 holds exactly
                if not all(map(float.is_integer, col)) or max(col) >= _EXACT or min(col) <= -_EXACT:
                    return None
            if (
                ids[0] <= last_id
                or not all(map(lt, ids, ids[1:]))  # (repeated ids: a warning)
                or submit[0] < last_submit
                or not all(map(le, submit, submit[1:]))  # (backwards: a warning)
                or submit[0] < 0  # (negative: a warning)
                or submit[-1] + max(max(run_time), max(req), max(wait)) >= _SMALL_TIMES  # (the check of lost time)
            ):
                return None
            last_id, last_submit = ids[-1], submit[-1]
            # (each column in one pass of C-level iteration; only the exceptions are visited one by one)
            positions = range(m)
            size = list(map(int, req_procs))
            for i in compress(positions, map(le, req_procs, repeat(0.0))):  # no request: the allocated count
                size[i] = int(alloc[i]) if alloc[i] > 0 else -1
            if fill is not None:
                fill.add([i for i, (r, a) in enumerate(zip(req_procs, alloc)) if (r <= 0 < a) or (a <= 0 < r)], ids, line0)
            keep = _drop(drops, size, run_time, nodes, ids, line0)
            if cap is not None:
                over = [i for i in compress(positions, map(gt, run_time, req)) if req[i] > 0 and (keep is None or keep[i])]
                cap.add(over, ids, line0)
                for i in over:
                    run_time[i] = req[i]
            est: list[float]
            if estimate == "exact-all":
                est = [r if r > 0.0 else 0.0 for r in run_time]
            else:
                twice = 2.0 if estimate == "double-runtime" else 1.0
                est = req.copy()
                unknown = list(compress(positions, map(le, req, repeat(0.0))))  # (no NaN here: not q > 0 is q <= 0)
                for i in unknown:
                    est[i] = twice * max(run_time[i], 0.0)
                missing += len(unknown) if keep is None else sum(1 for i in unknown if keep[i])
            for column, values in ((w.submit, submit), (w.run, run_time), (w.estimate, est)):
                column.extend(values if keep is None else compress(values, keep))
            w.size.extend(size if keep is None else compress(size, keep))
            w.lines += m
            line0 += m
    except (OSError, EOFError, zlib.error, UnicodeDecodeError):
        return None
    if not w.lines or nodes is None:
        return None
    left = w.lines
    for tally in drops:
        if left and tally.count == left:
            return None  # (the general path: "nothing to simulate: filter ... removed the last jobs")
        left -= tally.count
    w.nodes = nodes
    reports = []
    if fill is not None:
        reports.append(FilterReport("fill-size", REASONS["fill-size"], 0, fill.count, tuple(fill.examples), source))
    reports += [FilterReport(t.name, REASONS[t.name].format(nodes=nodes), t.count, 0, tuple(t.examples), source) for t in drops]
    if cap is not None:
        reports.append(FilterReport("cap-runtime", REASONS["cap-runtime"], 0, cap.count, tuple(cap.examples), source))
    reports.append(FilterReport(f"estimate:{estimate}", REASONS[f"estimate:{estimate}"], 0, len(w) if estimate == "exact-all" else missing))
    w.reports = reports
    if not len(w) or min(w.size) <= 0 or max(w.size) > nodes or min(w.run) < 0:
        return None  # (the general path names the job the simulation refuses)
    return w


def _drop(drops: list[_Tally], size: list[int], run_time: list[float], nodes: int, ids: list[float], line0: int) -> list[bool] | None:
    """Apply the dropping filters to one block, in order: which jobs are kept (``None``: all), each
    filter counting the jobs it drops of those the ones before it kept.  A bound on the block's column
    (its smallest size, say) skips the test per job where it shows no job is hit."""
    keep: list[bool] | None = None
    for tally in drops:
        if tally.name == "drop-no-size":
            if min(size) > 0:
                continue
            hit = [i for i, k in enumerate(size) if k <= 0]
        elif tally.name == "drop-wider":
            if max(size) <= nodes:
                continue
            hit = [i for i, k in enumerate(size) if k > nodes]
        else:
            if min(run_time) > 0:
                continue
            hit = [i for i, r in enumerate(run_time) if r <= 0]
        if keep is not None:
            hit = [i for i in hit if keep[i]]
        if not hit:
            continue
        if keep is None:
            keep = [True] * len(size)
        for i in hit:
            keep[i] = False
        tally.add(hit, ids, line0)
    return keep


def _blocks(path: str | os.PathLike[str], limit: int) -> Iterator[bytes]:
    """The text of ``path`` in blocks of whole lines (the last one may lack its newline).

    Gzip is decompressed as the general reader does it (the first member only), a block at a time.
    Raises ``EOFError`` for a truncated stream and ``OSError`` for what the general reader refuses: a
    file that is not a regular one, or more than ``limit`` bytes of text.
    """
    if not stat.S_ISREG(os.stat(path).st_mode):  # (before opening: a pipe's open waits for a writer)
        raise OSError("not a regular file")
    with open(path, "rb") as fh:
        gz = zlib.decompressobj(16 + zlib.MAX_WBITS) if fh.read(2) == textfiles._GZIP_MAGIC else None
        fh.seek(0)
        rest = b""
        total = 0
        first = True
        for chunk in _text(fh, gz):
            total += len(chunk)
            if total > limit:
                raise OSError("more text than the general reader takes")
            data = rest + chunk
            cut = data.rfind(b"\n") + 1
            if cut and (not first or _JOB_LINE.search(data, 0, cut)):  # (the first block holds the whole header)
                yield data[:cut]
                data = data[cut:]
                first = False
            rest = data
        if rest:
            yield rest


def _text(fh: BinaryIO, gz: Any) -> Iterator[bytes]:
    """The file's bytes, or with ``gz`` (a zlib decompressor) their decompression, at most :data:`BLOCK` at a time."""
    if gz is None:
        while chunk := fh.read(BLOCK):
            yield chunk
        return
    while not gz.eof:
        data = gz.unconsumed_tail or fh.read(max(1, BLOCK >> 3))
        if not data:
            raise EOFError("the gzip stream ends before its end-of-stream marker")
        yield gz.decompress(data, BLOCK)


def _bounded_slowdowns(wait: array, run_time: array) -> Iterator[float]:
    """max(1, (wait + run) / max(run, τ)) per job, as numpy's ``maximum`` gives it (the same value where
    equal), iterated in C."""
    return map(max, repeat(1.0), map(truediv, map(add, wait, run_time), map(max, run_time, repeat(BSLD_THRESHOLD))))


def metrics(nodes: int, submit: array, run_time: array, size: array, start: array, end: array) -> dict[str, float]:
    """The scheduling metrics (:mod:`topoalloc.metrics.scheduling`) of a flat run, in :data:`METRIC_UNITS`'
    order, then ``first_submit`` and ``last_end``: the same correctly rounded sums of the same values."""
    n = len(submit)
    if not n:
        return {**dict.fromkeys(METRIC_UNITS, 0.0), "first_submit": 0.0, "last_end": 0.0}
    wait = array("d", map(sub, start, submit))
    work = math.fsum(map(mul, map(float, size), run_time))
    first, last_submit, last_end = min(submit), max(submit), max(end)
    span = last_end - first
    busy = work / (nodes * span) if span > 0 else 0.0
    offered_span = last_submit - first
    values = {
        "allocated_utilization": busy,
        "makespan": span,
        "max_wait": max(wait),
        "mean_bounded_slowdown": math.fsum(_bounded_slowdowns(wait, run_time)) / n,
        "mean_response": math.fsum(map(sub, end, submit)) / n,
        "mean_wait": math.fsum(wait) / n,
        "offered_load": work / (nodes * offered_span) if n >= 2 and offered_span > 0 else 0.0,
        "utilization": busy,
    }
    return {**{k: values[k] for k in METRIC_UNITS}, "first_submit": first, "last_end": last_end}
