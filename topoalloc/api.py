"""The Python API: :func:`simulate` does what ``topoalloc simulate`` does."""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from . import spec as _spec
from .alloc import Allocator
from .errors import InvalidArgument, WorkloadError
from .limits import check_header_machine
from .registry import ALLOCATORS, SCHEDULERS
from .sched import Scheduler, Simulation, SimulationResult
from .topology import Topology, parse_machine
from .workload import Workload, default_trace_path, read_swf
from .workload.clean import FILTERS, PendingDrops, apply_filter
from .workload.steps import PIPELINE_ORDER, STANDARD_CLEAN, FilterReport
from .workload.transform import estimates as estimate_fn
from .workload.transform import round_pow2 as round_pow2_fn
from .workload.transform import scale_sizes as scale_sizes_fn
from .workload.transform import work_multiple as work_multiple_fn

__all__ = ["simulate", "prepare_workload", "make_allocator", "make_scheduler", "PIPELINE_ORDER"]

def make_allocator(spec: str | Allocator, topology: Topology | str, seed: int | None = None, *, argument: str = "allocator") -> Allocator:
    """A registered allocator from ``"name:key=value,..."``, bound to ``topology``.

    ``seed`` is given to allocators whose factory takes one, unless the spec
    sets it.  The allocator records its full spec (every option written out,
    the seed included) in ``allocator.spec``, which a run's summary reports.

    Raises
    ------
    InvalidArgument
        An unknown option (the message lists the valid ones), a bad value, or
        a machine the allocator does not accept.
    """
    topology = parse_machine(topology)
    if isinstance(spec, Allocator):
        if spec.topology != topology:
            raise InvalidArgument(argument, spec, f"an allocator bound to {topology.spec()}")
        return spec
    parsed = _spec.parse(spec, argument=argument)
    entry = ALLOCATORS.entry(parsed.name)
    if entry.accepts is not None and not entry.accepts(topology):
        what = (entry.accepts.__doc__ or "other machines").strip().rstrip(".")
        raise InvalidArgument(argument, spec, f"an allocator for {topology.spec()}; {parsed.name!r} takes {what[0].lower() + what[1:]}")
    if seed is not None and "seed" in entry.options(ALLOCATORS.fixed) and "seed" not in parsed.options:
        parsed = _spec.Spec(parsed.name, parsed.args, {**parsed.options, "seed": str(seed)})
    alloc = ALLOCATORS.create(parsed, argument=argument, topology=topology)
    alloc.spec = ALLOCATORS.canonical(parsed, argument=argument, built=alloc, topology=topology)
    return alloc


def make_scheduler(spec: str | Scheduler, *, argument: str = "scheduler") -> Scheduler:
    """A registered scheduler from ``"easy"``, ``"fcfs:order=sjf"``, ...; it records its full spec in ``scheduler.spec``."""
    if isinstance(spec, Scheduler):
        return spec
    sched = SCHEDULERS.create(spec, argument=argument)
    sched.spec = SCHEDULERS.canonical(spec, argument=argument)
    return sched


def prepare_workload(
    workload: Workload,
    machine_nodes: int,
    *,
    clean: bool = False,
    filters: Iterable[str] = (),
    estimate: str = "double-runtime",
    scale_sizes: float | None = None,
    round_pow2: bool = False,
    work_multiple: float | None = None,
    scale_estimates: bool = True,
) -> tuple[Workload, np.ndarray, list[FilterReport]]:
    """Apply filters and transforms in :data:`PIPELINE_ORDER`; return (workload, estimates, reports).

    The reports begin with the warnings the trace reader noticed (kept jobs).

    Raises
    ------
    InvalidArgument
        Unknown filter names, ``filters`` given as one string, a transform
        factor that is not a finite positive number.
    WorkloadError
        If the filters leave no job to simulate (naming the filter that
        removed the last ones).
    """
    if isinstance(filters, str) or not isinstance(filters, Iterable):
        raise InvalidArgument("filters", filters, f"a list of filter names (e.g. [{filters!r}]), among {', '.join(FILTERS)}")
    wanted = set(filters)
    unknown = {f for f in wanted if f not in FILTERS}
    if unknown:
        raise InvalidArgument("filters", sorted(map(str, unknown)), f"names among {', '.join(FILTERS)}")
    for name, value in (("scale_sizes", scale_sizes), ("work_multiple", work_multiple)):
        if value is not None and not (isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value > 0):
            raise InvalidArgument(name, value, "a finite number > 0")
    if clean:
        wanted |= set(STANDARD_CLEAN)
    reports: list[FilterReport] = [FilterReport("check-trace", msg, source=workload.source, warning=True) for msg in workload.warnings]
    if not len(workload):
        raise WorkloadError(f"{workload.source!r} has no jobs to simulate")
    w = workload
    drops: PendingDrops | None = None  # consecutive dropping filters, applied with one copy
    for step in PIPELINE_ORDER:
        if step in wanted and PendingDrops.handles(step):
            if drops is None:
                drops = PendingDrops(w, machine_nodes)
            before = drops.left
            rep = drops.add(step)
            if before and not drops.left:
                raise WorkloadError(f"nothing to simulate: filter {step} removed the last {before} jobs of {workload.source!r} ({rep.reason})")
            reports.append(rep)
            continue
        if drops is not None:
            w = drops.workload()
            drops = None
        if step == "scale-sizes" and scale_sizes is not None and scale_sizes != 1:
            w, rep = scale_sizes_fn(w, scale_sizes)
        elif step == "round-pow2" and round_pow2:
            w, rep = round_pow2_fn(w)
        elif step == "work-multiple" and work_multiple is not None and work_multiple != 1:
            w, rep = work_multiple_fn(w, work_multiple, scale_estimates=scale_estimates)
        elif step in wanted:
            before = len(w)
            w, rep = apply_filter(step, w, machine_nodes)
            if before and not len(w):
                raise WorkloadError(f"nothing to simulate: filter {step} removed the last {before} jobs of {workload.source!r} ({rep.reason})")
        elif step == "estimate":
            est, rep = estimate_fn(w, estimate)
        else:
            continue
        reports.append(rep)
    return w, est, reports


def simulate(
    trace: str | os.PathLike | Workload | None = None,
    *,
    machine: str | Topology | None = None,
    allocator: str | Allocator = "flat",
    scheduler: str | Scheduler = "easy",
    clean: bool = False,
    filters: Iterable[str] = (),
    estimate: str = "double-runtime",
    scale_sizes: float | None = None,
    round_pow2: bool = False,
    work_multiple: float | None = None,
    scale_estimates: bool = True,
    seed: int | None = None,
    record_reservations: bool = False,
    record_allocations: bool | None = None,
    progress: Callable[[int, int], None] | None = None,
    runtime_model: "str | Callable | None" = None,
    network: Any = None,
    traffic: Any = "all-to-all:messages=20,compute=0",
    cycle: float = 1.0,
    service: str = "communication",
    contention: bool = True,
    locality: bool | None = None,
    engine: str = "auto",
) -> SimulationResult:
    """Simulate a workload on a machine with an allocator and a scheduler.

    Parameters
    ----------
    trace : path, Workload or None
        An SWF file (plain or gzip), a workload, or ``None`` for the bundled
        NASA iPSC/860 trace.
    machine : str or Topology, optional
        ``"flat:128"``, ...; default: a flat machine of the trace's MaxProcs.
    allocator, scheduler : str
        Registered names with options (``"easy:order=sjf"``).
    clean : bool
        Apply the standard filters (see :mod:`topoalloc.workload.clean`).
    filters : iterable of str
        Individual filters by name (``"drop-wider"``, ``"fill-size"``, ...).
    estimate : {"double-runtime", "exact", "exact-all"}
        Estimate policy for a missing requested time.
    scale_sizes, round_pow2, work_multiple
        The papers' transforms (applied before the filters).
    scale_estimates : bool
        With ``work_multiple``, scale requested times too (default), keeping
        each job's estimate accuracy; False keeps the logged requests
        (Mao/Chen/Watson §4.3 do not say which they did).
    seed : int, optional
        Passed to allocators that make random choices.
    record_allocations : bool, optional
        Keep every job's nodes in the result (``result.nodes_of(j)``, for
        :func:`~topoalloc.metrics.locality.locality_summary` afterwards or
        :func:`~topoalloc.metrics.communication.contending_pairs`); default
        off: memory then stays bounded whatever the length of the trace.  The
        per-job table does not need them.
    locality : bool, optional
        Measure locality (spans, bounding boxes, components, hops) as jobs
        finish, in bounded memory; default: on for machines with a topology.
    runtime_model : str or callable, optional
        An allocation-dependent run-time model (off by default), e.g.
        ``"locality:alpha=0.1,metric=pairwise_l1"`` (see
        :mod:`topoalloc.sched.runtime_model`; a model, not a measurement).
    network : str or NetworkConfig, optional
        Jobs communicate on a simulated network (``"wormhole:packet=8,buffers=4"``,
        see :class:`topoalloc.network.NetworkConfig`) and their service time
        emerges from it (:mod:`topoalloc.network.coupling`).  Not on flat machines.
    traffic : str or JobTraffic
        With ``network``: what each job sends (``"all-to-all:messages=20,compute=0"``).
    cycle : float
        With ``network``: the simulation time one network cycle takes (default 1).
    service : {"communication", "add"}
        With ``network``: the job ends when its last message is delivered, or
        that plus its trace run time (computation after communication).
    contention : bool
        With ``network``: also run each job alone for its contention slowdown.
    engine : {"auto", "python", "compiled"}
        Which simulation engine runs (see :class:`topoalloc.sched.Simulation`):
        the compiled kernel when it applies, else the general engine
        (``"auto"``); always the general engine (``"python"``); or the
        kernel, raising if it cannot do this run (``"compiled"``).  The
        results are the same.

    Returns
    -------
    SimulationResult
        ``result.summary()`` has the aggregate metrics and every filter's report.

    Examples
    --------
    >>> r = simulate(machine="flat:128", scheduler="easy")
    >>> r.summary()["jobs"]
    18239
    """
    if trace is None:
        trace = default_trace_path()
    if not isinstance(trace, (Workload, str, os.PathLike)):
        raise InvalidArgument("trace", trace, "the path of an SWF file, a Workload, or None for the bundled trace")
    workload = trace if isinstance(trace, Workload) else read_swf(trace)
    if machine is None:
        n = workload.max_procs
        if n is None:
            raise InvalidArgument("machine", None, f"a machine spec such as flat:128 ({workload.source!r} states no MaxProcs)")
        check_header_machine(n, workload.source)
        machine = f"flat:{n}"
    if not isinstance(machine, (str, Topology)):
        raise InvalidArgument("machine", machine, "a machine spec such as 'mesh:16x8', or a Topology")
    topology = parse_machine(machine)
    alloc = make_allocator(allocator, topology, seed)
    sched = make_scheduler(scheduler)
    w, est, reports = prepare_workload(
        workload,
        topology.n_nodes,
        clean=clean,
        filters=filters,
        estimate=estimate,
        scale_sizes=scale_sizes,
        round_pow2=round_pow2,
        work_multiple=work_multiple,
        scale_estimates=scale_estimates,
    )
    source, jobs_in_trace = workload.source, len(workload)
    del workload  # a trace read here is no longer needed: only the prepared jobs are simulated
    if record_allocations is None:
        record_allocations = False
    if locality is None:
        locality = topology.has_locality
    from .sched.runtime_model import make_runtime_model

    model = make_runtime_model(runtime_model, topology, alloc)
    coupling = None
    if network is not None:
        if not topology.has_locality:
            raise InvalidArgument("network", network, f"a machine with a network topology (mesh, torus, hypercube), not {topology.spec()}: on the flat machine every pair is one hop and nothing contends")
        from .network.coupling import CommunicatingJobs

        coupling = CommunicatingJobs(topology, network, traffic, cycle=cycle, service=service, contention=contention)
    stream = None
    if locality:
        from .metrics.locality import LocalityStream

        stream = LocalityStream(topology, getattr(alloc, "ordering", None))
    sim = Simulation(
        w,
        alloc,
        sched,
        est,
        record_reservations=record_reservations,
        record_allocations=record_allocations,
        progress=progress,
        runtime_model=model,
        network=coupling,
        locality=stream,
        engine=engine,
    )
    result = sim.run()
    result.ordering = getattr(alloc, "ordering", None)
    result.reports = reports
    result.params = {
        "trace": source,
        "estimate": estimate,
        "clean": bool(clean),
        "seed": seed,
        "jobs_in_trace": jobs_in_trace,
    }
    if model is not None:
        result.params["runtime_model"] = repr(model) if not isinstance(runtime_model, str) else runtime_model
    return result
