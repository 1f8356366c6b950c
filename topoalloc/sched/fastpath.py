"""The compiled path: whole simulations over processor counts, when nothing else is needed.

On a counting allocator (a request fits iff ``size <= free``, see
:class:`~topoalloc.alloc.probes.CountingProbes`) that grants exactly the
size asked for, a schedule depends on processor counts only.  On the
hypercube's buddy and Gray code allocators (:func:`layout_of`) it depends on
the busy mask only: they place a ``2**k``-node window by a pure function of
it, so the kernel keeps the mask (FCFS, EASY, and conservative backfilling,
whose plan it replays on masks as :class:`~.plan.ReplayPlan` replays it on
snapshots).  When nothing
that depends on the placement feeds back into the schedule — no run-time
model or network that reads the nodes, no reservation log — the compiled
kernel (``_ckernel``, built at install time if a C compiler is there) runs
the whole simulation on arrays of counts.  The hypercube's free list (and
the AFL while its meshes fill their cubes) places by its lists, not by the
mask alone; whether a request fits is the mask's question, so the kernel
keeps the lists themselves (:func:`layout_of`), and under conservative
backfilling the lists of every state of the plan beside its mask.  The slice allocator's static rule
places the first all-free box among its volume's candidates, in a fixed order: the kernel keeps the busy
units and a table of the candidates' masks (layout 4), under FCFS and conservative backfilling (EASY's
walk assumes windows that nest, as the hypercube's do and boxes do not).  If the run also wants the
placement (per-job nodes recorded, locality metrics, the allocator's blocks
or slice networks), the kernel logs every start and end in the order it
applied them, and the allocator is then driven through exactly that sequence
of ``allocate`` and ``release`` calls (:func:`_replay`) — the calls the
general engine makes for such an allocator, so the same nodes, without the
scheduler's passes.  For the linear allocators that replay is compiled
(``_clinear``, :func:`_replay_linear`: their rules in C, tested against them
event by event), and the locality stream gets the ended jobs a batch at a time.  It is a
translation of the general engine (:mod:`.simulation`, :mod:`.fcfs`,
:mod:`.easy`, :mod:`.conservative`, :mod:`.plan`), which stays the
reference: the differential tests compare the two job by job, and every
:class:`~.result.SimulationResult` field the general engine fills is filled
the same way.

:func:`why_not` says why a simulation cannot take this path (``None``: it
can); :meth:`Simulation.run <topoalloc.sched.simulation.Simulation.run>`
asks it and otherwise runs the general engine unchanged.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..alloc.base import Request
from ..errors import InternalError, InvalidArgument, SimulationError
from .conservative import Conservative
from .easy import EASY
from .fcfs import FCFS
from .result import SimulationResult

if TYPE_CHECKING:
    from ..workload import Workload
    from .simulation import Simulation

__all__ = ["compiled_available", "why_not", "run", "queue_ranks", "layout_of"]

#: the schedulers the kernel implements, by exact type (a subclass may change the policy)
_KINDS: dict[type, int] = {FCFS: 0, EASY: 1, Conservative: 2}


def layout_of(allocator: object, workload: "Workload | None" = None) -> int:
    """The kernel's layout code for ``allocator``: 1 the buddy (aligned blocks in address order), 2 Gray code
    (windows in the Gray order), 3 the free list with complete recognition, 4 a table of windows (the static
    slice rule), 5 the free list on its lists only, 0 none.  By exact type: a subclass may place differently.

    The free list (:class:`~topoalloc.alloc.hypercube.allocators.FreeListAllocator`) is followed with
    complete recognition up to its largest dimension, when whether a request fits is a function of the
    busy mask (its ``_mask_exact``, with no live partial mesh); the kernel keeps its lists (under
    conservative backfilling, one copy per state of the plan, as :class:`~.plan.ReplayPlan` replays
    snapshots).  So is the AFL on a
    ``workload`` whose every request fills the cube it takes (sizes powers of two): no mesh leaves
    leftover cubes, the auxiliary lists stay empty, and it takes the free list's cubes.  Where the
    allocator looks at its lists only (``recognition="lists"``, what the free list chooses above Q15 and the
    AFL above Q12, where they have no complete recognition), the kernel keeps the same lists without
    recognition (layout 5, up to Q15): whether a request fits is then the lists' question, not the mask's, so only FCFS and conservative backfilling
    run there (:func:`why_not`: EASY's shadow time asks the mask).

    The slice allocator's static rule (:class:`~topoalloc.alloc.slices.SliceAllocator`) places a request as the
    first free box, in a fixed order, among its volume's candidate boxes: a pure function of the busy units.
    The kernel keeps the busy units and the candidates' masks (:func:`_slice_table`), under FCFS and
    conservative backfilling, on a ``workload`` whose volumes' tables are small enough.
    """
    from ..alloc.hypercube.allocators import AFLAllocator, BuddyAllocator, FreeListAllocator, GrayCodeAllocator
    from ..alloc.slices import SliceAllocator

    layouts: dict[type, int] = {BuddyAllocator: 1, GrayCodeAllocator: 2}
    kind = type(allocator)
    if kind in (FreeListAllocator, AFLAllocator):
        return 0 if _lists_why_not(allocator, workload) else 5 if _lists_only(allocator) else 3
    if kind is SliceAllocator:
        return 0 if _table_why_not(allocator, workload) else 4
    return layouts.get(kind, 0)


#: the table layout's bounds (:func:`_slice_table`): units of the machine (the kernel's masks are a bit per unit),
#: and bytes of the candidate windows' masks
TABLE_UNITS = 4096
TABLE_BYTES = 1 << 26


def _table_why_not(allocator: Any, workload: "Workload | None") -> str | None:
    """Why the kernel cannot follow the slice allocator ``allocator`` on ``workload`` (see :func:`layout_of`), or None."""
    name = allocator.describe()
    if allocator.rule != "static":
        return f"allocator {name} grants any free units (OCS): it is not a counting allocator, nor one whose busy units the kernel follows"
    if allocator._free_units != allocator.units.n_units:
        return f"allocator {name} already holds allocations: the kernel starts from a free machine"
    if allocator.units.n_units > TABLE_UNITS:
        return f"allocator {name}: {allocator.units.n_units:,} units, more than the {TABLE_UNITS:,} whose busy mask the kernel keeps for slices"
    if workload is None:
        return f"allocator {name}: the kernel's table of windows is made for a workload's volumes"
    return _table_classes(allocator, workload)[0]


def _table_classes(allocator: Any, w: "Workload") -> tuple[str | None, Any]:
    """The kernel's classes for the static slice rule on ``w`` (see :func:`_slice_table`): ``(reason, None)`` where
    there can be none, else ``(None, (tables, classes, volumes))``: each class's placement table (unit ids, a row
    per candidate box), each job's class, each job's units.  The tables are the allocator's own (kept on it)."""
    name = allocator.describe()
    requests, inverse = _distinct_requests(w)
    vol_of = [allocator.candidates(r.size)[0] for r in requests]
    if 0 in vol_of:
        return f"allocator {name}: some request fits no box of the machine", None
    volumes = sorted(set(vol_of))
    if len(volumes) > 64:
        return f"allocator {name}: the workload needs {len(volumes)} slice volumes, more than the kernel's 64 classes", None
    words = (allocator.units.n_units + 63) // 64
    by_volume = {v: next(r for r, u in zip(requests, vol_of) if u == v) for v in volumes}
    tables = []
    for v in volumes:
        table = allocator._table(by_volume[v].size)
        if table is None:
            return f"allocator {name}: the candidate boxes of {v} units are too many to list (see SliceAllocator.table_entries)", None
        tables.append(table.units)
    rows = sum(len(t) for t in tables)
    if rows * words * 8 > TABLE_BYTES:
        return f"allocator {name}: the workload's candidate boxes take {rows * words * 8:,} bytes as masks, more than {TABLE_BYTES:,}", None
    cls_of = np.array([volumes.index(v) for v in vol_of], dtype=np.int64)[inverse]
    return None, (tables, np.ascontiguousarray(cls_of), np.asarray(vol_of, dtype=np.int64)[inverse])


def _slice_table(allocator: Any, w: "Workload") -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The static slice rule as the kernel's table (layout 4; :func:`_table_why_not` must have said None):
    ``(table, bounds, classes, volumes)``.

    A class per volume the workload's requests need, in increasing volume (at most 64: the kernel keeps what fits
    where as a bit per class); class ``c``'s windows are the rows ``bounds[c]`` .. ``bounds[c + 1] - 1`` of
    ``table``, each the mask of a candidate box's units (a bit per unit, ``ceil(units / 64)`` words), in the order
    :meth:`~topoalloc.alloc.slices.SliceAllocator._first_box` searches them (its placement table's rows,
    :meth:`~topoalloc.alloc.slices.SliceAllocator._table`: shape by shape, offsets first grid dimension
    fastest), so the first free row is the box the allocator takes.  ``classes``: each job's class;
    ``volumes``: each job's units."""
    why, got = _table_classes(allocator, w)
    if why:
        raise InternalError(f"the kernel's table of windows was asked for where it cannot be made: {why}")
    tables, classes, volumes = got
    words = (allocator.units.n_units + 63) // 64
    bounds = np.zeros(len(tables) + 1, dtype=np.int64)
    np.cumsum([len(t) for t in tables], out=bounds[1:])
    table = np.zeros((int(bounds[-1]), words), dtype=np.uint64)
    for c, units in enumerate(tables):
        u = units.astype(np.int64)
        rows = np.broadcast_to(np.arange(bounds[c], bounds[c + 1])[:, None], u.shape)
        np.bitwise_or.at(table, (rows, u >> 6), np.left_shift(np.uint64(1), (u & 63).astype(np.uint64)))
    return table, bounds, classes, volumes


#: the largest cube the kernel follows the free list on without recognition (layout 5: a cube's key,
#: ``free << dim | value``, is an int32 there)
LISTS_MAX_DIM = 15


def _lists_only(allocator: Any) -> bool:
    """Whether the free list or the AFL ``allocator`` looks at its lists only (``recognition="lists"``, which
    is what the free list chooses above Q15 and the AFL above Q12, where they have no complete recognition)."""
    return allocator.recognition != "complete"


def _lists_only_under_easy(allocator: Any) -> str:
    """Why the kernel does not run EASY on the free list or the AFL ``allocator`` looking at its lists only."""
    return (f"allocator {allocator.describe()} looks at its lists only under EASY: the kernel's EASY asks the busy mask "
            "whether a cube fits, which holds with complete recognition (FCFS and conservative run on its lists)")


def _lists_why_not(allocator: Any, workload: "Workload | None") -> str | None:
    """Why the kernel cannot follow the free list or the AFL ``allocator`` on ``workload`` (see :func:`layout_of`), or None."""
    from ..alloc.hypercube.allocators import AFLAllocator

    name = allocator.describe()
    if allocator.dim > LISTS_MAX_DIM:
        return f"allocator {name} on Q{allocator.dim}: the kernel follows the free list's lists up to Q{LISTS_MAX_DIM}"
    if allocator._held:
        return f"allocator {name} already holds allocations: the kernel starts from the fresh lists"
    if type(allocator) is AFLAllocator and (workload is None or not _fills_cubes(allocator, workload)):
        return f"allocator {name}: some request's mesh does not fill its cube (a size that is not a power of two), and its leftover cubes go on the auxiliary lists, which the kernel does not keep"
    return None


def _fills_cubes(allocator: Any, w: "Workload") -> bool:
    """Whether the AFL places every request of ``w`` as a mesh filling its whole cube (no leftovers)."""
    from ..alloc.hypercube.embedding import mesh_dims

    for req in _distinct_requests(w)[0]:
        try:
            x, y = allocator._shape(req)
        except InvalidArgument:
            return False
        t, m = mesh_dims(x, y)
        if x * y != 1 << (t + m):
            return False
    return True


def compiled_available() -> bool:
    """True when the compiled kernel was built at install time."""
    try:
        from . import _ckernel  # noqa: F401
    except ImportError:
        return False
    return True


def why_not(sim: "Simulation") -> str | None:
    """Why ``sim`` cannot run on the compiled kernel, or ``None`` if it can.

    The kernel needs: a built-in scheduler (FCFS, EASY or conservative, any
    queue order); a counting allocator that grants exactly the requested
    size, or the buddy or Gray code allocator, or the free
    list and the AFL as :func:`layout_of` says (looking at their lists only: FCFS and conservative), or the static slice rule
    under FCFS and conservative (:func:`layout_of`); and nothing
    that feeds the nodes back into the schedule or needs the scheduler's
    inner decisions (recorded reservations, a run-time model, a network).  Recorded allocations and locality metrics are served by
    replaying the kernel's log through the allocator.
    """
    allocator = sim.allocator
    if type(sim.scheduler) not in _KINDS:
        return f"scheduler {type(sim.scheduler).__name__} is not one of the built-in FCFS, EASY, conservative"
    from ..alloc.hypercube.allocators import AFLAllocator, FreeListAllocator

    from ..alloc.slices import SliceAllocator

    if type(allocator) in (FreeListAllocator, AFLAllocator):  # (layout_of's question, with its reason)
        why = _lists_why_not(allocator, sim.workload)
        if why:
            return why
        if isinstance(sim.scheduler, EASY) and _lists_only(allocator):
            return _lists_only_under_easy(allocator)
    elif type(allocator) is SliceAllocator:
        why = _table_why_not(allocator, sim.workload)
        if why:
            return why
        if isinstance(sim.scheduler, EASY):
            return f"allocator {allocator.describe()} under EASY: the kernel's EASY walk assumes windows that nest, which boxes do not"
    elif not layout_of(allocator):  # (the kernel follows the buddy's and Gray code's busy masks under every scheduler)
        if not allocator.counting:
            return f"allocator {allocator.describe()} is not a counting allocator, nor one whose busy mask the kernel follows"
        if "exact_size" not in allocator.claims:
            return f"allocator {allocator.describe()} does not grant exactly the requested size"
    needs = [
        ("record_reservations", sim.record_reservations),
        ("a run-time model", sim.runtime_model is not None),
        ("a network", sim.network is not None),
    ]
    wanted = [name for name, on in needs if on]
    if wanted:
        return f"the run asks for {', '.join(wanted)}"
    if not compiled_available():
        return "the compiled kernel was not built when this copy was installed"
    return None


def queue_ranks(order: str, submit: np.ndarray, estimate: np.ndarray, size: np.ndarray) -> np.ndarray | None:
    """Each job's place in the queue order (a permutation), or ``None`` for FCFS order.

    The same total order as :meth:`Scheduler.queue_key <topoalloc.sched.base.Scheduler.queue_key>`:
    ``sjf`` by (estimate, submit, position), ``lpt`` by (−estimate, submit,
    position), ``cplant`` by (size, estimate, submit, position).

    >>> queue_ranks("sjf", np.array([0.0, 0.0, 1.0]), np.array([5.0, 2.0, 2.0]), np.array([1, 1, 1])).tolist()
    [2, 0, 1]
    """
    if order == "fcfs":
        return None
    pos = np.arange(len(submit))
    if order == "sjf":
        keys: tuple[np.ndarray, ...] = (pos, submit, estimate)
    elif order == "lpt":
        keys = (pos, submit, -estimate)
    elif order == "cplant":
        keys = (pos, submit, estimate, size)
    else:
        raise InternalError(f"queue order {order!r} has no rank rule")
    by_rank = np.lexsort(keys)
    rank = np.empty(len(submit), dtype=np.int64)
    rank[by_rank] = pos
    return rank


def run(sim: "Simulation") -> SimulationResult:
    """Simulate ``sim`` on the compiled kernel (:func:`why_not` must have said ``None``).

    Returns the result the general engine returns for the same run: the
    same start and end of every job, allocated sizes equal to the sizes
    (the windows' sizes on a layout), no reservations recorded.

    Raises
    ------
    SimulationError
        As the general engine does: jobs that never start, or a job that
        never fits (neither can happen for requests validated to fit the
        empty machine).
    """
    from . import _ckernel

    w = sim.workload
    sched = sim.scheduler
    n = len(w)
    submit = np.ascontiguousarray(w.submit, dtype=np.float64)
    run_time = np.ascontiguousarray(w.run, dtype=np.float64)
    est = np.ascontiguousarray(sim.estimates, dtype=np.float64)
    size = np.ascontiguousarray(w.size, dtype=np.int64)
    rank = queue_ranks(sched.order, submit, est, size)
    layout = layout_of(sim.allocator, w)
    incremental = isinstance(sched, EASY) and sched.incremental and sched.order == "fcfs" and not layout
    positions = sim.allocator.n_nodes
    table: tuple = ()
    if layout == 4:  # positions are units, a job's window its volume; granted in nodes
        slices: Any = sim.allocator
        tab, bounds, classes, volumes = _slice_table(slices, w)
        table = (tab, bounds, classes)
        positions = slices.units.n_units
        windows = volumes
        granted = volumes * slices.units.unit_size
    else:
        windows = granted = _windows(w) if layout else size
    start = np.full(n, np.nan)
    end = np.full(n, np.nan)
    log = np.empty(2 * n, dtype=np.int64) if _wants_placement(sim) else None
    placed = np.empty(n, dtype=np.int64) if log is not None and layout in (3, 4, 5) else None
    # The progress callback hears the jobs ended while the kernel runs (a conservative plan on a layout can take
    # minutes); where the placements are replayed afterwards (the allocator's grants and their metrics), the
    # schedule is the bar's first half and the replay its second (_replay), so the bar never goes back.
    progress = sim.progress
    ticks = None if progress is None else (lambda done: progress(done // 2, n)) if log is not None else (lambda done: progress(done, n))
    status, job, tried, changes = _ckernel.run(_KINDS[type(sched)], positions, submit, run_time, est, windows, rank, incremental, start, end, log,
                                               layout, placed, *(table or (None, None, None)), ticks)
    if status == 1:
        raise SimulationError(f"{int(np.isnan(start).sum())} jobs never started (first: {w.describe_job(job)})")
    if status == 2:
        raise SimulationError(f"queue head (job position {job}) cannot fit even after every running job ends")
    if status == 3:
        raise SimulationError(f"job position {job} (size {int(size[job])}) never fits the profile")
    if status == 4:
        raise SimulationError(f"job position {job} (size {int(size[job])}) never fits the plan")
    if status:
        raise InternalError(f"the compiled kernel returned status {status}")
    fields = _replay(sim, log, tried, placed, table[0] if table else None) if log is not None else {}
    if sim.progress is not None:
        sim.progress(n, n)
    return SimulationResult(
        workload=w,
        estimate=sim.estimates,
        start=start,
        end=end,
        allocated_size=granted.copy() if granted is size else granted,
        topology=sim.allocator.topology,
        allocator=sim.allocator.describe(),
        scheduler=sched.describe(),
        reservations=None,
        reservation_changes=changes if isinstance(sched, Conservative) else None,
        actual_run=None,
        network=None,
        engine="compiled",
        **fields,
    )


def _windows(w: "Workload") -> np.ndarray:
    """Each job's window on a layout: ``2**k`` nodes for the cube dimension k the subcube allocators give
    its request (:func:`~topoalloc.alloc.hypercube.allocators._request_dim`; mesh shapes included)."""
    from ..alloc.hypercube.allocators import _request_dim

    if not len(w.size):
        return np.empty(0, dtype=np.int64)
    requests, inverse = _distinct_requests(w)
    windows = np.array([1 << _request_dim(r) for r in requests], dtype=np.int64)
    return windows[inverse]


def _distinct_requests(w: "Workload") -> tuple[list[Request], np.ndarray]:
    """Each distinct request of ``w`` (size, and shape if any) once (a log has a few hundred of them), and
    the index of each job's among them."""
    size = np.asarray(w.size, dtype=np.int64)
    if w.shape is None:
        distinct, inverse = np.unique(size, return_inverse=True)
        requests = [Request._trusted(s, None, None) for s in distinct.tolist()]
    else:
        rows, inverse = np.unique(np.column_stack([size, np.asarray(w.shape, dtype=np.int64)]), axis=0, return_inverse=True)
        requests = [Request._trusted(r[0], tuple(r[1:]), None) for r in rows.tolist()]
    return requests, inverse.reshape(-1)


def _wants_placement(sim: "Simulation") -> bool:
    """Whether the result needs the allocator's grants: recorded nodes, locality metrics, the blocks an
    allocator that claims ``blocks`` records in every grant, or the network every slice grant records
    (``slice_hops``; the general engine keeps both per job)."""
    from ..alloc.slices import SliceAllocator

    return sim.record_allocations or sim.locality is not None or "blocks" in sim.allocator.claims or isinstance(sim.allocator, SliceAllocator)


def _replay(sim: "Simulation", log: np.ndarray, tried: bytes | None = None, placed: np.ndarray | None = None, table: np.ndarray | None = None) -> dict:
    """Drive the allocator through the kernel's starts and ends, in the kernel's order; keep what the
    general engine keeps from the grants (:class:`~.simulation.GrantRecords`) and return its result fields.

    On the free list (layout 3; EASY does not run on layout 5) ``tried`` holds the backfill candidates EASY allocated and released
    again, by the log position they came before (their allocate-and-release may rearrange the lists,
    so the replay repeats them), and ``placed`` each job's cube as the kernel kept it: every grant is
    checked against it.  On a table of windows (layout 4, the static slice rule) ``placed`` is each job's row of
    ``table``, and every grant's units are checked against that row's."""
    from .simulation import GrantRecords

    w = sim.workload
    allocator = sim.allocator
    n = len(w)
    if _linear_replayable(allocator):
        return _replay_linear(sim, log)
    sizes = w.size.tolist()
    ids = w.job_id.tolist()
    shapes = None if w.shape is None else [tuple(int(x) for x in s) for s in w.shape.tolist()]
    run_time = w.run.tolist()
    grants = GrantRecords(n, sim.record_allocations, sim.locality)
    held: list = [None] * n
    progress = sim.progress
    tick = max(1, n // 200)
    done = 0
    trials = np.frombuffer(tried, dtype=np.int64).reshape(-1, 2).tolist() if tried else []
    trials.append([-1, -1])  # (a sentinel: no position)
    nt = 0
    dim = getattr(allocator, "dim", 0)
    for i, e in enumerate(log.tolist()):
        while trials[nt][0] == i:
            j = trials[nt][1]
            nt += 1
            alloc = allocator.allocate(Request._trusted(sizes[j], None if shapes is None else shapes[j], ids[j]))
            if alloc is None:
                raise InternalError(f"{allocator.describe()} refused job position {j}, which the kernel's EASY allocated as a candidate")
            allocator.release(alloc)
        if e >= 0:
            alloc = allocator.allocate(Request._trusted(sizes[e], None if shapes is None else shapes[e], ids[e]))
            if alloc is None:
                raise InternalError(f"{allocator.describe()} refused job position {e} when the counting kernel started it: not a counting allocator")
            if table is not None:
                assert placed is not None
                mask = allocator._mask_of(alloc)  # type: ignore[attr-defined]  # (a SliceAllocator)
                if mask != int.from_bytes(table[int(placed[e])].tobytes(), "little"):
                    raise InternalError(f"{allocator.describe()} gave job position {e} the box {alloc.info.get('shape')} at {alloc.info.get('offset')}, not the kernel's window (row {int(placed[e])})")
            elif placed is not None and alloc.info["cube"] != (int(placed[e]) >> dim, int(placed[e]) & ((1 << dim) - 1)):
                raise InternalError(f"{allocator.describe()} gave job position {e} the cube {alloc.info['cube']}, the kernel's lists another ({int(placed[e])})")
            held[e] = alloc
            grants.started(e, alloc)
        else:
            j = -1 - e
            alloc = held[j]
            held[j] = None
            allocator.release(alloc)
            grants.ended(j, alloc, run_time[j])
            done += 1
            if progress is not None and done % tick == 0:
                progress((n + done) // 2, n)  # the schedule is known (the bar's first half); the placements and their metrics take the time
    if trials[nt][0] >= 0:
        raise InternalError(f"the kernel tried {len(trials) - 1 - nt} candidates after its last start or end")
    return grants.fields()


def _linear_replayable(allocator: object) -> bool:
    """Whether the compiled replay follows ``allocator``: a fresh :class:`~topoalloc.alloc.linear.LinearAllocator`
    of the exact type (a subclass may place differently), with the extension built."""
    from ..alloc.linear import LinearAllocator

    if type(allocator) is not LinearAllocator or allocator._free_count != allocator.n_nodes:
        return False
    try:
        from ..alloc.linear import _clinear  # type: ignore[attr-defined]  # noqa: F401
    except ImportError:
        return False
    return True


def _linear_state(allocator: object, jobs: int, memo: int = 0) -> Any:
    """The compiled replay's state for ``allocator`` (see :func:`_linear_replayable`, else ``None``) and
    ``jobs`` jobs, numbering up to ``memo`` placements."""
    if not _linear_replayable(allocator):
        return None
    from ..alloc.linear import LinearAllocator, _clinear  # type: ignore[attr-defined]

    assert isinstance(allocator, LinearAllocator)
    code = {"sorted_free_list": 0, "first_fit": 1, "best_fit": 2, "sum_of_squares": 3}[allocator.strategy]
    nar = None if allocator._identity else np.ascontiguousarray(allocator.ordering.node_at_rank, dtype=np.int64)
    return _clinear.State(allocator.n_nodes, code, allocator.ring, nar, jobs, memo)


#: most placements whose metrics the compiled linear replay remembers (rows of the metrics table)
PLACEMENT_MEMO = 1 << 16


def _replay_linear(sim: "Simulation", log: np.ndarray) -> dict:
    """:func:`_replay` for the linear allocators, compiled (``_clinear.c``, the same rules as
    :class:`~topoalloc.alloc.linear.LinearAllocator`, tested against it).

    The kernel's log is applied in runs of ended jobs that end where the locality stream measures a
    batch (:meth:`~topoalloc.metrics.locality.LocalityStream.room`), and each run is measured and folded
    at once (:meth:`~topoalloc.metrics.locality.LocalityStream.add_rows`): the same batches, so the same
    sums, as job-by-job replay.  A job's metrics are a function of its node set, and on a lightly loaded
    machine the same placements recur (NASA's 18,239 jobs take 739 distinct node sets, whatever the
    machine's size): a job on one run of ranks is measured the first time its run is placed and its row
    remembered (up to :data:`PLACEMENT_MEMO` placements), so later ones cost no work per node.  Recorded
    nodes turn the memo off (every job's nodes are written)."""
    from ..metrics.locality import JOB_METRICS
    from .simulation import GrantRecords

    w = sim.workload
    n = len(w)
    grants = GrantRecords(n, sim.record_allocations, sim.locality)
    stream = sim.locality
    memo = PLACEMENT_MEMO if stream is not None and grants.nodes_of is None else 0
    state = _linear_state(sim.allocator, n, memo)
    if state is None:
        raise InternalError("the compiled linear replay was chosen for an allocator it cannot replay")
    sizes = np.ascontiguousarray(w.size, dtype=np.int64)
    run_time = np.ascontiguousarray(w.run, dtype=np.float64)
    log = np.ascontiguousarray(log, dtype=np.int64)
    nodes = sim.allocator.n_nodes
    chunk_nodes, chunk_jobs = 1 << 20, 1 << 14  # (without a stream: how much is handed over at once)
    if stream is not None:
        chunk_nodes, chunk_jobs = stream.batch_nodes, stream.batch_jobs
    out_nodes = np.empty(chunk_nodes - 1 + nodes, dtype=np.int64)
    out_jobs = np.empty(chunk_jobs, dtype=np.int64)
    out_ids = np.empty(chunk_jobs, dtype=np.int64)
    rows = np.empty((memo, len(JOB_METRICS))) if memo else None  # the memo's rows, by number
    progress = sim.progress
    pos, done, ticked = 0, 0, 0
    tick = max(1, n // 200)
    while pos < log.size:
        node_limit, job_limit = stream.room() if stream is not None else (chunk_nodes, chunk_jobs)
        pos, nj, nn = state.replay(log, pos, sizes, out_nodes, out_jobs, out_ids, node_limit, job_limit)
        if not nj:
            continue
        jobs = out_jobs[:nj]
        ids = out_ids[:nj]
        written = ids < 0
        job_sizes = sizes[jobs]
        offsets = np.zeros(int(written.sum()) + 1, dtype=np.int64)
        np.cumsum(job_sizes[written], out=offsets[1:])
        if offsets[-1] != nn:
            raise InternalError(f"the compiled linear replay wrote {nn} nodes for jobs of {int(offsets[-1])}")
        if grants.nodes_of is not None:
            bounds = offsets.tolist()
            for i, j in enumerate(jobs.tolist()):
                grants.nodes_of[j] = out_nodes[bounds[i] : bounds[i + 1]].copy()
        if stream is not None:
            table = np.empty((nj, len(JOB_METRICS)))
            if nn:
                table[written] = stream.measure_rows(out_nodes[:nn], offsets)
            if rows is not None:
                fresh = ids <= -2
                rows[-2 - ids[fresh]] = table[fresh]
                seen = ids >= 0
                table[seen] = rows[ids[seen]]
            stream.add_rows(table, job_sizes, run_time[jobs], final=pos >= log.size)
        done += nj
        if progress is not None and done - ticked >= tick:
            ticked = done
            progress((n + done) // 2, n)  # the schedule is known (the bar's first half); the placements and their metrics take the time
    return grants.fields()
