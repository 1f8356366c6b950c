"""The conformance checks every allocator goes through, one test per check.

Universal properties (design notes §6): allocations are disjoint, of the
right size (exactly, or the allocator's documented rounding), inside the
machine; free + allocated = all; releasing everything restores the fresh
state; the same seed gives the same sequence.  Properties an allocator
*claims* (``Allocator.claims``) are checked when claimed, and an unknown
claim is itself a failure.  The probes schedulers rely on
(:mod:`topoalloc.alloc.probes`) are checked against brute-force replay on
deep copies, on random states drawn by Hypothesis: ``can_allocate``,
``earliest_fit``, the reservation guard's ``may_admit`` / ``admit``,
``fit_key`` and ``max_request_now``; a :meth:`~Allocator.snapshot` must
behave exactly like the original.

Use them as scikit-learn's ``parametrize_with_checks``::

    from topoalloc.testing import parametrize_with_checks

    @parametrize_with_checks([lambda: MyAllocator(parse_machine("mesh:4x4"))])
    def test_my_allocator(factory, check):
        check(factory)

Each check raises :class:`~topoalloc.errors.ConformanceError` (an
``AssertionError``) naming the property that failed.
"""

from __future__ import annotations

import copy
import random
from pathlib import Path
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, NoReturn

import numpy as np

from ..alloc.base import Allocation, Allocator, Request
from ..errors import AllocationError, ConformanceError, InvalidArgument, RequestNeverFits
from ..registry import ALLOCATORS
from ..topology import Grid, Subcubes, Topology, parse_machine
from .mesh2d_claims import MESH2D_CLAIMS

__all__ = [
    "small_topologies",
    "check_allocation_valid",
    "check_invariants",
    "check_allocator",
    "check_schedule",
    "allocator_checks",
    "parametrize_with_checks",
    "registered_allocator_factories",
    "AllocatorStateMachine",
    "CLAIM_CHECKS",
    "CHECKS",
]

Factory = Callable[[], Allocator]

#: Hypothesis examples per probe check (random states); the slow tier runs more
EXAMPLES = 15

#: counting_promise tries every size up to this many free processors, a sample above
PROMISE_ALL_SIZES = 64

#: The fixed set of small machines every registered allocator runs on (those it accepts).
SMALL_MACHINES = (
    "flat:1", "flat:7", "flat:16", "flat:64", "torus:8", "torus:2x3x4", "mesh:4x4", "torus:4x4x2",
    "torus:2x2x2x6x8", "mesh:5x3", "hypercube:3", "hypercube:4", "hypercube:5",
    "tpu:4x2x3,cube=1", "tofu:3x2x2", "dragonfly:p=2,a=2,h=1", "fattree:k=2,n=3", "bgq:6x4x2x2x2,midplane=2x2x2x2x2",
    "slurm-tree:" + str(Path(__file__).resolve().parent.parent / "data" / "topology-example.conf"),
    "slurm-block:" + str(Path(__file__).resolve().parent.parent / "data" / "topology-block-example.conf"),
    # (the example's largest block holds the machine, so its allocator counts: this one replays its plan)
    "slurm-block:" + str(Path(__file__).resolve().parent.parent / "data" / "topology-block-uneven.conf"),
)


def small_topologies(kinds: set[str] | None = None) -> list[Topology]:
    """The small machines of :data:`SMALL_MACHINES` (of the given spec kinds, if any)."""
    return [parse_machine(s) for s in SMALL_MACHINES if kinds is None or s.split(":")[0] in kinds]


def _fail(check: str, message: str) -> NoReturn:
    raise ConformanceError(check, message)


# ------------------------------------------------------------------- claims
def _exact_size(alloc: Allocation, allocator: Allocator) -> str | None:
    if alloc.size != alloc.request.size:
        return f"exact_size claimed, but {alloc.size} nodes were granted for {alloc.request.size}"
    return None


def _power_of_two(alloc: Allocation, allocator: Allocator) -> str | None:
    n = alloc.size
    if n & (n - 1) or n < alloc.request.size or n >= 2 * alloc.request.size:
        return f"power_of_two claimed, but {n} nodes were granted for {alloc.request.size}"
    return None


def _subtorus(alloc: Allocation, allocator: Allocator) -> str | None:
    """The nodes are the claimed semitorus box, and its conversion is a dilation-1 embedding inside it."""
    st = alloc.info.get("semitorus")
    conv = alloc.info.get("conversion")
    if st is None or conv is None:
        return "subtorus claimed, but the allocation has no semitorus or conversion in its info"
    top = allocator.topology
    if not isinstance(top, Grid):
        return f"subtorus claimed on {top.spec()}, which has no coordinates"
    box = top.box_nodes(st.offset, st.sides)
    if not np.array_equal(box, alloc.nodes):
        return f"nodes are not the semitorus {st.describe()}"
    emb = conv.embedding
    if sorted(emb.tolist()) != box.tolist():
        return "conversion embedding is not a bijection onto the allocation"
    for a, b in conv.virtual_edges():
        if not top.adjacent(int(emb[a]), int(emb[b])):  # type: ignore[attr-defined]
            return f"virtual edge ({a}, {b}) maps to non-adjacent nodes {emb[a]}, {emb[b]}"
    if conv.torus and int(np.prod(conv.shape)) != alloc.size:
        return "virtual torus size differs from the allocation"
    return None


def _rank_contiguous_when_fit(alloc: Allocation, allocator: Allocator) -> str | None:
    """A linear allocator that says it found a free interval gave consecutive ranks (cyclically on a ring)."""
    if not alloc.info.get("contiguous"):
        return None
    n = allocator.n_nodes
    ranks = np.sort(allocator.ordering.rank_of[alloc.nodes])  # type: ignore[attr-defined]
    gaps = np.diff(ranks)
    if (gaps == 1).all():
        return None
    if getattr(allocator, "ring", False) and (gaps != 1).sum() == 1 and ranks[0] == 0 and ranks[-1] == n - 1:
        return None
    return f"contiguous claimed, but ranks {ranks.tolist()[:12]} are not one interval"


def _subcube(alloc: Allocation, allocator: Allocator) -> str | None:
    """The nodes are exactly one subcube of the hypercube, the one recorded as ``info["cube"]``."""
    from ..alloc.hypercube import cube_of

    cube = cube_of(alloc.nodes)
    if cube is None:
        return f"subcube claimed, but nodes {alloc.nodes.tolist()[:8]} are not a subcube"
    if alloc.info.get("cube") != cube:
        return f"subcube claimed, but info['cube'] {alloc.info.get('cube')} differs from the nodes' cube {cube}"
    return None


def _mesh_embedding(alloc: Allocation, allocator: Allocator) -> str | None:
    """An X×Y mesh embedded with dilation 1 in info["cube"]; mesh and leftover cubes tile the cube."""
    from ..alloc.hypercube import mesh_layout
    from ..topology.hypercube import Subcube

    top = allocator.topology
    if not isinstance(top, Subcubes):
        return f"mesh_embedding claimed on {top.spec()}, which is not a hypercube"
    n = top.n
    x, y = alloc.info["mesh"]
    cube = Subcube(n, *alloc.info["cube"])
    layout = {(i, j): v for i, j, v in mesh_layout(alloc)}
    if sorted(layout.values()) != alloc.nodes.tolist() or len(layout) != x * y:
        return "mesh layout is not a bijection onto the allocation"
    for (i, j), v in layout.items():
        if not cube.contains(v):
            return f"mesh node {v} outside the cube {cube}"
        for nb in ((i + 1, j), (i, j + 1)):
            if nb in layout and (layout[nb] ^ v).bit_count() != 1:
                return f"mesh neighbours {(i, j)} and {nb} map to non-adjacent nodes {v}, {layout[nb]}"
    seen = set(alloc.nodes.tolist())
    for f, val in alloc.info["leftover"]:
        left = Subcube(n, f, val)
        if not cube.contains_cube(left):
            return f"leftover {left} outside the cube {cube}"
        nodes = set(left.nodes().tolist())
        if nodes & seen:
            return f"leftover {left} overlaps the mesh or another leftover"
        seen |= nodes
    if len(seen) != cube.size:
        return f"mesh and leftovers cover {len(seen)} of the cube's {cube.size} nodes"
    return None


def _contention_free(alloc: Allocation, allocator: Allocator) -> str | None:
    """No E-cube channel is usable both inside this allocation and inside any other held one."""
    from ..topology.hypercube import shared_channels

    top = allocator.topology
    if not isinstance(top, Subcubes):
        return f"contention_free claimed on {top.spec()}, which is not a hypercube"
    for other in allocator.allocations:
        if other is alloc:
            continue
        shared = shared_channels(alloc.nodes, other.nodes, top.n)
        if shared:
            return f"allocations #{alloc.serial} and #{other.serial} share E-cube channels, e.g. {shared[0]}"
    return None


def _whole_units(alloc: Allocation, allocator: Allocator) -> str | None:
    """The nodes are whole units of a machine of units (``info["units"]`` of them); a static slice is the box in its info."""
    from ..topology.units import UnitTorus

    top = allocator.topology
    if not isinstance(top, UnitTorus):
        return f"whole_units claimed on {top.spec()}, which is not a machine of units"
    units = np.unique(top.unit_of[alloc.nodes])
    got = np.sort(top.unit_nodes[units].ravel())
    if not np.array_equal(got, alloc.nodes) or units.size != alloc.info.get("units"):
        return f"whole_units claimed, but {alloc.size} nodes are not {alloc.info.get('units')} whole units"
    if "offset" in alloc.info:
        grid = np.array(top.grid)
        coords = (units[:, None] // np.array(top.unit_strides)[None, :]) % grid[None, :]
        rel = (coords - np.array(alloc.info["offset"])[None, :]) % grid[None, :]
        sides = tuple(alloc.info["shape"])
        shape = np.array(sides + (1,) * (len(grid) - len(sides)))
        if (rel >= shape[None, :]).any() or units.size != int(shape.prod()):
            return f"the units {units.tolist()[:8]} are not the box {alloc.info['shape']} at {alloc.info['offset']}"
    return None


#: claim name -> check(allocation, allocator) returning an error message or None
CLAIM_CHECKS: dict[str, Callable[[Allocation, Allocator], str | None]] = {
    "exact_size": _exact_size,
    "power_of_two": _power_of_two,
    "subtorus": _subtorus,
    "rank_contiguous_when_fit": _rank_contiguous_when_fit,
    "subcube": _subcube,
    "mesh_embedding": _mesh_embedding,
    "contention_free": _contention_free,
    "whole_units": _whole_units,
}
CLAIM_CHECKS.update(MESH2D_CLAIMS)  # blocks, contiguous, max_blocks, aligned_squares, rounded_size (2-D meshes)


# ------------------------------------------------------------ basic checks
def check_allocation_valid(alloc: Allocation, allocator: Allocator) -> None:
    """One allocation: in range, sorted, no duplicates, at least the size asked, and every claim."""
    nodes = alloc.nodes
    n = allocator.n_nodes
    if nodes.dtype != np.int64 or nodes.ndim != 1:
        _fail("allocation", f"nodes must be a 1-D int64 array, got {nodes.dtype} {nodes.shape}")
    if nodes.flags.writeable:
        _fail("allocation", "allocation nodes must be read-only")
    if nodes.size < alloc.request.size or nodes.size != alloc.size:
        _fail("allocation", f"{nodes.size} nodes (size field {alloc.size}) for a request of {alloc.request.size}")
    if nodes.size:
        if not (0 <= nodes[0] and nodes[-1] < n):
            _fail("allocation", f"nodes outside 0..{n - 1}: {nodes.tolist()}")
        if not (np.diff(nodes) > 0).all():
            _fail("allocation", f"nodes not sorted and distinct: {nodes.tolist()}")
    for claim in allocator.claims:
        check = CLAIM_CHECKS.get(claim)
        if check is None:
            _fail("claims", f"{allocator.name} claims {claim!r}, which is not a known claim ({', '.join(sorted(CLAIM_CHECKS))})")
        msg = check(alloc, allocator)
        if msg is not None:
            _fail(f"claim {claim}", msg)


def check_invariants(allocator: Allocator) -> None:
    """Held allocations are pairwise disjoint, and free + allocated = all nodes."""
    seen = np.zeros(allocator.n_nodes, dtype=np.int64)
    for a in allocator.allocations:
        seen[a.nodes] += 1
    if (seen > 1).any():
        _fail("invariants", f"nodes held twice: {np.flatnonzero(seen > 1).tolist()}")
    busy = seen.astype(bool)
    if not np.array_equal(busy, allocator.busy_mask):
        _fail("invariants", "busy mask differs from the union of held allocations")
    if allocator.free_count != allocator.n_nodes - int(seen.sum()):
        _fail("invariants", f"free_count {allocator.free_count} != {allocator.n_nodes} - {int(seen.sum())}")
    if not np.array_equal(allocator.free_nodes(), np.flatnonzero(~busy)):
        _fail("invariants", "free_nodes() differs from the complement of the busy mask")


def _fits_empty_machine(allocator: Allocator, size: int) -> bool:
    try:
        allocator.check_request(Request(size))
        return True
    except RequestNeverFits:
        return False


def _step(allocator: Allocator, release: bool, frac: float, log: list[tuple[Any, ...]] | None = None) -> None:
    """One random operation: release the held allocation ``frac`` picks, or allocate ``frac`` of the machine."""
    held = allocator.allocations
    if release and held:
        gone = held[min(len(held) - 1, int(frac * len(held)))]
        allocator.release(gone)
        if log is not None:
            log.append(("release", gone.request.size, tuple(gone.nodes.tolist())))
        return
    size = max(1, min(allocator.n_nodes, int(round(frac * frac * allocator.n_nodes)) + 1))
    try:
        a = allocator.allocate(Request(size))
    except RequestNeverFits:
        if log is not None:
            log.append(("never", size, ()))
        return
    if a is not None:
        check_allocation_valid(a, allocator)
    if log is not None:
        log.append(("alloc", size, () if a is None else tuple(a.nodes.tolist())))


def _random_ops(allocator: Allocator, rng: random.Random, steps: int) -> list[tuple[Any, ...]]:
    """A random allocate/release sequence; returns its log (for determinism checks)."""
    log: list[tuple[Any, ...]] = []
    for _ in range(steps):
        _step(allocator, rng.random() < 0.4, rng.random(), log)
        check_invariants(allocator)
    return log


def check_fresh(factory: Factory) -> None:
    """A new allocator holds nothing and every node is free."""
    a = factory()
    if a.free_count != a.n_nodes or a.allocations or a.busy_mask.any():
        _fail("fresh", "a new allocator must hold nothing, with every node free")


def check_claims_known(factory: Factory) -> None:
    """Every claim the allocator makes is one the suite knows how to check."""
    unknown = sorted(set(factory().claims) - set(CLAIM_CHECKS))
    if unknown:
        _fail("claims", f"unknown claim(s) {unknown}; known: {', '.join(sorted(CLAIM_CHECKS))}")


def check_random_operations(factory: Factory, *, seed: int = 0, steps: int = 150) -> None:
    """Random allocate/release: every grant valid (claims included), invariants after every step, and
    releasing everything restores the fresh state."""
    a = factory()
    fresh_free = a.free_nodes().copy()
    _random_ops(a, random.Random(seed), steps)
    for alloc in a.allocations:
        a.release(alloc)
    check_invariants(a)
    if a.free_count != a.n_nodes or not np.array_equal(a.free_nodes(), fresh_free):
        _fail("release-all", "releasing every allocation did not restore the fresh state")


def check_deterministic(factory: Factory, *, seed: int = 0, steps: int = 100) -> None:
    """The same operations on two new allocators give the same allocations."""
    if _random_ops(factory(), random.Random(seed), steps) != _random_ops(factory(), random.Random(seed), steps):
        _fail("deterministic", "the same operations gave different allocations")


def check_whole_machine(factory: Factory) -> None:
    """A new allocator grants the whole machine at once, unless it says it never can (RequestNeverFits)."""
    b = factory()
    try:
        whole = b.allocate(Request(b.n_nodes))
    except RequestNeverFits:
        return
    if whole is None:
        _fail("whole-machine", "an empty machine refused a request for every node ('not now' is wrong: say never)")
    check_allocation_valid(whole, b)
    if whole.size != b.n_nodes:
        _fail("whole-machine", f"granted {whole.size} of {b.n_nodes} nodes for the whole machine")


def check_one_node(factory: Factory) -> None:
    """A request for one node fits an empty machine."""
    if factory().allocate(Request(1)) is None:
        _fail("one-node", "a request for one node must fit an empty machine")


def check_too_big_raises(factory: Factory) -> None:
    """A request larger than the machine raises RequestNeverFits."""
    a = factory()
    try:
        a.allocate(Request(a.n_nodes + 1))
    except RequestNeverFits:
        return
    _fail("too-big", f"a request for {a.n_nodes + 1} nodes did not raise RequestNeverFits")


def check_double_release(factory: Factory) -> None:
    """Releasing what is not held raises AllocationError and leaves the state intact."""
    c = factory()
    x = c.allocate(Request(1))
    if x is None:
        _fail("double-release", "a request for one node must fit an empty machine")
    c.release(x)
    try:
        c.release(x)
    except AllocationError:
        check_invariants(c)
        return
    _fail("double-release", "a second release of the same allocation was accepted")


def check_snapshot(factory: Factory, *, seed: int = 0, steps: int = 60) -> None:
    """A snapshot is independent of the original and behaves exactly like it under the same operations."""
    rng = random.Random(seed)
    a = factory()
    _random_ops(a, rng, steps // 2)
    s = a.snapshot()
    check_invariants(s)
    # the same operations on both, in lock step: allocations held by both are shared objects,
    # new ones are matched by position
    for _ in range(steps):
        release, frac = rng.random() < 0.4, rng.random()
        la: list[tuple[Any, ...]] = []
        ls: list[tuple[Any, ...]] = []
        _step(a, release, frac, la)
        _step(s, release, frac, ls)
        if la != ls:
            _fail("snapshot", f"a snapshot and its original answered the same operation differently: {la} vs {ls}")
        check_invariants(s)
    t = factory()
    y = t.allocate(Request(1))
    if y is None:
        _fail("one-node", "a request for one node must fit an empty machine")
    snap = t.snapshot()
    snap.release(y)
    if not t.holds(y) or t.free_count != t.n_nodes - y.size:
        _fail("snapshot", "releasing in a snapshot changed the original")


# ------------------------------------------------------------- probe checks
def _truth_fits(allocator: Allocator, request: Request) -> bool:
    """Would allocate succeed now?  Answered on a deep copy, independent of the allocator's probes and snapshots."""
    if request.size > allocator.free_count:
        return False
    return copy.deepcopy(allocator)._allocate(request) is not None


def _truth_after(allocator: Allocator, releases: Sequence[Allocation], request: Request) -> bool:
    scratch = copy.deepcopy(allocator)
    for a in releases:
        scratch.release(a)
    return _truth_fits(scratch, request)


def _truth_earliest(allocator: Allocator, request: Request, releases: Sequence[Allocation]) -> int | None:
    scratch = copy.deepcopy(allocator)
    if _truth_fits(scratch, request):
        return 0
    for k, a in enumerate(releases, 1):
        scratch.release(a)
        if _truth_fits(scratch, request):
            return k
    return None


def _state_strategy(max_steps: int = 40) -> Any:
    from hypothesis import strategies as st

    return st.lists(st.tuples(st.booleans(), st.floats(0.0, 1.0, allow_nan=False)), max_size=max_steps)


def _build(factory: Factory, ops: list[tuple[bool, float]]) -> Allocator:
    a = factory()
    for release, frac in ops:
        _step(a, release, frac)
    return a


def _sizes(a: Allocator, rng: random.Random, k: int) -> list[int]:
    n = a.n_nodes
    out = {1, n, max(1, n // 2), max(1, a.free_count)}
    out.update(rng.randint(1, n) for _ in range(k))
    return sorted(s for s in out if _fits_empty_machine(a, s))


def _hypothesis_run(body: Callable[..., None], examples: int, **strategies: Any) -> None:
    from hypothesis import HealthCheck, given, settings

    settings(max_examples=examples, deadline=None, database=None, suppress_health_check=list(HealthCheck))(given(**strategies)(body))()


def check_can_allocate(factory: Factory, *, examples: int = EXAMPLES) -> None:
    """``can_allocate`` equals a trial allocation on a deep copy, and changes nothing."""
    from hypothesis import strategies as st

    def body(ops: list[tuple[bool, float]], seed: int) -> None:
        a = _build(factory, ops)
        before = a.busy_mask.copy()
        for size in _sizes(a, random.Random(seed), 6):
            req = Request(size)
            got, want = a.can_allocate(req), _truth_fits(a, req)
            if got != want:
                _fail("can_allocate", f"can_allocate({size}) = {got}, a trial allocation says {want} (free {a.free_count})")
        if not np.array_equal(before, a.busy_mask):
            _fail("can_allocate", "a probe changed the allocator")

    _hypothesis_run(body, examples, ops=_state_strategy(), seed=st.integers(0, 2**16))


def check_earliest_fit(factory: Factory, *, examples: int = EXAMPLES) -> None:
    """``earliest_fit`` equals brute-force replay of the releases (in a random order) on a deep copy."""
    from hypothesis import strategies as st

    def body(ops: list[tuple[bool, float]], seed: int) -> None:
        a = _build(factory, ops)
        rng = random.Random(seed)
        held = a.allocations
        rng.shuffle(held)
        before = a.busy_mask.copy()
        for size in _sizes(a, rng, 4):
            req = Request(size)
            got, want = a.earliest_fit(req, list(held)), _truth_earliest(a, req, held)
            if got != want:
                _fail("earliest_fit", f"earliest_fit({size}) = {got}, replay says {want} ({len(held)} held, free {a.free_count})")
        if not np.array_equal(before, a.busy_mask):
            _fail("earliest_fit", "a probe changed the allocator")

    _hypothesis_run(body, examples, ops=_state_strategy(), seed=st.integers(0, 2**16))


def check_max_request_now(factory: Factory, *, examples: int = EXAMPLES) -> None:
    """``max_request_now`` is an upper bound on every request that fits now."""

    from hypothesis import strategies as st

    def body(ops: list[tuple[bool, float]], seed: int) -> None:
        a = _build(factory, ops)
        bound = a.max_request_now()
        above = range(bound + 1, a.free_count + 1)
        rng = random.Random(seed)
        for size in sorted({*above[:2], *rng.sample(above, min(4, len(above)))}):
            if _truth_fits(a, Request(size)):
                _fail("max_request_now", f"max_request_now() = {bound}, but a request of {size} fits now")

    _hypothesis_run(body, examples, ops=_state_strategy(), seed=st.integers(0, 2**16))


def check_counting_promise(factory: Factory, *, examples: int = EXAMPLES) -> None:
    """An allocator that declares ``counting`` never refuses a request of at most ``free_count`` processors.

    Every size up to :data:`PROMISE_ALL_SIZES` free processors; above, the
    smallest and largest sizes and a seeded sample of the rest (each
    allocation may cost O(n²) on allocators that search centers).
    """
    if not factory().counting:
        return

    def body(ops: list[tuple[bool, float]]) -> None:
        a = _build(factory, ops)
        free = a.free_count
        sizes = range(1, free + 1)
        if free > PROMISE_ALL_SIZES:
            rng = random.Random(free)
            sizes = sorted({1, 2, free - 1, free, *rng.sample(range(3, free - 1), PROMISE_ALL_SIZES // 2)})  # type: ignore[assignment]
        for size in sizes:
            if not _truth_fits(a, Request(size)):
                _fail("counting", f"counting allocator refused {size} processors with {a.free_count} free")

    _hypothesis_run(body, examples, ops=_state_strategy())


def check_reservation_guard(factory: Factory, *, examples: int = EXAMPLES) -> None:
    """The reservation guard judges backfill candidates exactly as brute-force replay does.

    A head that does not fit now gets its releases (the fewest, in a random
    order, after which it fits) and, in half the examples, some more: jobs
    expected to end at the shadow time too, which EASY counts as ended then
    (then several blocks can be made free at once, and a candidate can take
    one of them while the head keeps another); candidates then come one by one, as EASY
    sends them: ``may_admit`` first (it may only refuse candidates that
    would break the reservation), then, for those it lets through and that
    fit, ``admit`` once allocated — which must equal "the head still fits
    once the releases (and the candidate, if it ends by the shadow time)
    have ended".  ``may_admit`` is optional for a caller, so half the
    candidates go straight to ``admit``, which must be exact on its own.
    """
    from hypothesis import strategies as st

    def body(ops: list[tuple[bool, float]], seed: int) -> None:
        a = _build(factory, ops)
        rng = random.Random(seed)
        held = a.allocations
        rng.shuffle(held)
        heads = [s for s in _sizes(a, rng, 4) if not _truth_fits(a, Request(s))]
        if not heads:
            return
        head = Request(rng.choice(heads))
        releases = shadow_releases(a, head, held, rng, ties=rng.random() < 0.5)
        if releases is None:
            return
        judge_candidates(a, head, releases, (Request(rng.randint(1, max(1, a.free_count))) for _ in range(6)), rng)

    _hypothesis_run(body, examples, ops=_state_strategy(), seed=st.integers(0, 2**16))


def shadow_releases(allocator: Allocator, head: Request, held: Sequence[Allocation], rng: random.Random, *, ties: bool) -> list[Allocation] | None:
    """The releases EASY's guard for ``head`` gets, with the running jobs ending in the order of ``held``:
    the fewest after which the head fits (by replay) and, with ``ties``, a random number of the next
    ones too (jobs expected to end at the shadow time, which EASY counts as ended then).  None if the
    head never fits, or (an allocator whose fit is not monotone in releases) does not fit after them."""
    k = _truth_earliest(allocator, head, held)
    if k is None:
        return None
    if ties:
        k = rng.randint(k, len(held))
    releases = list(held[:k])
    return releases if _truth_after(allocator, releases, head) else None


def judge_candidates(allocator: Allocator, head: Request, releases: list[Allocation], requests: Iterable[Request],
                     rng: random.Random, *, ends_by_rate: float = 0.5, exact_may_admit: bool = False) -> None:
    """Backfill candidates judged by the allocator's guard for ``head`` and ``releases``, against replay.

    Each request that fits now comes as EASY sends it: ending by the shadow time with probability
    ``ends_by_rate``; ``may_admit`` asked for half of them (a refusal must be right; with
    ``exact_may_admit`` a yes must be too), then, once allocated, ``admit``, which must equal "the
    head still fits once the releases (and the candidate, if it ends by the shadow time) have ended".
    An admitted candidate stays (and joins the releases if it ends by then); a refused one is released.
    """
    guard = allocator.reservation_guard(head, list(releases))
    releases = list(releases)
    for req in requests:
        if not _fits_empty_machine(allocator, req.size) or not _truth_fits(allocator, req):
            continue
        ends_by = rng.random() < ends_by_rate
        may = guard.may_admit(req, ends_by) if rng.random() < 0.5 else None  # (may_admit is optional)
        if may is False:
            trial = copy.deepcopy(allocator)
            got = trial.allocate(req)
            if got is not None and _truth_after(trial, releases + ([got] if ends_by else []), head):
                _fail("guard", f"may_admit refused a candidate of {req.size} (ends by shadow: {ends_by}) that keeps the head's reservation")
            continue
        alloc = allocator.allocate(req)
        if alloc is None:
            _fail("guard", f"a request of {req.size} that fits was refused by allocate")
        want = _truth_after(allocator, releases + ([alloc] if ends_by else []), head)
        if exact_may_admit and may is not None and may != want:
            _fail("guard", f"may_admit({req.size}, ends by shadow: {ends_by}) = {may}, replay says {want}")
        verdict = guard.admit(alloc, ends_by)
        if verdict != want:
            _fail("guard", f"admit({req.size}, ends by shadow: {ends_by}) = {verdict}, replay says {want}")
        if verdict:
            if ends_by:
                releases.append(alloc)
        else:
            allocator.release(alloc)


def check_reusable_guard(factory: Factory, *, examples: int = EXAMPLES) -> None:
    """A reusable guard (:attr:`~topoalloc.alloc.probes.ReservationGuard.reusable`) needs fit to be monotone in
    what is free: a request that fits a state fits it with any of its allocations released too.

    EASY keeps a reusable guard across passes in which jobs only arrived and candidates were admitted, as if
    a fresh pass had found the same shadow time; a fresh pass looks for it in the state with the admitted jobs
    holding nodes.  Were fit not monotone, a job admitted could let the head fit earlier (Frame Sliding's
    lattice moves with the lowest free cell), and the kept guard would judge by a stale shadow time.  Checked
    on random states for every allocator whose guard says it is reusable (a guard for a head that fits the
    empty machine, with no releases); the others pass at once.
    """
    from hypothesis import strategies as st

    def body(ops: list[tuple[bool, float]], seed: int) -> None:
        a = _build(factory, ops)
        if a.counting or not getattr(a.reservation_guard(Request(1), []), "reusable", False):
            return
        rng = random.Random(seed)
        held = a.allocations
        if not held:
            return
        fit = [Request(s) for s in _sizes(a, rng, 6) if _truth_fits(a, Request(s))]
        more = copy.deepcopy(a)
        for i in rng.sample(range(len(held)), rng.randint(1, len(held))):
            more.release(_held_like(more, held[i]))
        for req in fit:
            if not _truth_fits(more, req):
                _fail("reusable_guard", f"a request of {req.size} fits, but not once {len(held) - len(more.allocations)} of the "
                      f"{len(held)} allocations are released: fit is not monotone, and the guard must not be reusable")

    _hypothesis_run(body, examples, ops=_state_strategy(), seed=st.integers(0, 2**16))


def _held_like(copy_: Allocator, original: Allocation) -> Allocation:
    """The allocation of a deep copy that is ``original``'s (same serial number)."""
    for alloc in copy_.allocations:
        if alloc.serial == original.serial:
            return alloc
    raise AssertionError(f"no allocation #{original.serial} in the copy")


def check_fit_keys(factory: Factory, *, examples: int = EXAMPLES) -> None:
    """Requests with equal ``fit_key`` get the same answers: fit now, and keep a reservation or not."""
    from hypothesis import strategies as st

    a0 = factory()
    if type(a0).fit_key is Allocator.fit_key:
        return  # no keys declared

    def body(ops: list[tuple[bool, float]], seed: int) -> None:
        a = _build(factory, ops)
        rng = random.Random(seed)
        by_key: dict[Any, list[int]] = {}
        for s in range(1, a.n_nodes + 1):
            if _fits_empty_machine(a, s):
                key = a.fit_key(Request(s))
                if key is not None:
                    by_key.setdefault(key, []).append(s)
        held = a.allocations
        rng.shuffle(held)
        for key, sizes in by_key.items():
            if len(sizes) < 2:
                continue
            x, y = rng.sample(sizes, 2)
            fx, fy = _truth_fits(a, Request(x)), _truth_fits(a, Request(y))
            if fx != fy:
                _fail("fit_key", f"requests of {x} and {y} share the key {key!r} but only one fits now")
            if held:
                k = rng.randint(0, len(held))
                if _truth_after(a, held[:k], Request(x)) != _truth_after(a, held[:k], Request(y)):
                    _fail("fit_key", f"requests of {x} and {y} share the key {key!r} but differ once {k} allocations end")

    _hypothesis_run(body, examples, ops=_state_strategy(), seed=st.integers(0, 2**16))


def check_trial_state(factory: Factory, *, examples: int = EXAMPLES) -> None:
    """When ``trial_state`` is the same before an allocate and after its release, the allocator behaves
    as a snapshot taken before the pair: the same grants through a run of allocations and releases
    after it (what EASY relies on to remember a refusal, see :meth:`Allocator.trial_state`)."""
    from hypothesis import strategies as st

    a0 = factory()
    if a0.trial_state() is None:
        return  # not declared

    def nodes(x: Allocation | None) -> list[int] | None:
        return None if x is None else sorted(int(v) for v in x.nodes)

    def body(ops: list[tuple[bool, float]], seed: int) -> None:
        a = _build(factory, ops)
        rng = random.Random(seed)
        sizes = [s for s in range(1, a.n_nodes + 1) if _fits_empty_machine(a, s)]
        for s in sizes:
            before, snap = a.trial_state(), a.snapshot()
            x = a.allocate(Request(s))
            if x is None:
                continue
            a.release(x)
            if a.trial_state() != before:
                continue  # (said changed: nothing is promised)
            # the same run of operations on both: allocations of random sizes, and releases of what
            # both hold (the allocations from before the pair are the same objects in both)
            pairs = list(zip(a.allocations, snap.allocations))
            for step in range(12):
                if pairs and rng.random() < 0.35:
                    mine, theirs = pairs.pop(rng.randrange(len(pairs)))
                    a.release(mine)
                    snap.release(theirs)
                    continue
                t = rng.choice(sizes)
                got, ref = a.allocate(Request(t)), snap.allocate(Request(t))
                if nodes(got) != nodes(ref):
                    _fail("trial_state", f"allocating and releasing {s} node(s) left trial_state unchanged, but {step} operation(s) "
                                         f"later a request of {t} gets {nodes(got)}, not {nodes(ref)} as without the pair")
                if got is not None and ref is not None:
                    pairs.append((got, ref))

    _hypothesis_run(body, examples, ops=_state_strategy(), seed=st.integers(0, 2**16))


def check_in_simulation(factory: Factory, *, schedulers: Sequence[str] = ("fcfs", "easy", "conservative"), jobs: int = 40) -> None:
    """The allocator plugs into every scheduler through its probes, and the schedules are valid.

    Runs the general engine (``engine="python"``): the compiled kernel, which follows some
    allocators without asking them (see :mod:`topoalloc.sched.fastpath`), would skip the probes."""
    from ..api import simulate
    from ..workload.synthetic import Uniform, poisson_workload

    probe = factory()
    n = probe.n_nodes
    largest = max(s for s in range(1, n + 1) if _fits_empty_machine(probe, s))
    w = poisson_workload(jobs, load=0.9, sizes=Uniform(1, largest), machine_nodes=n, mean_runtime=50, estimate_factor=1.5, seed=5)
    for sched in schedulers:
        r = simulate(w, machine=probe.topology, allocator=factory(), scheduler=sched, record_allocations=True, engine="python")
        check_schedule(r)


#: the probes an allocator may answer itself; :func:`replaying` answers them as :class:`Allocator` does (by replay)
PROBES = ("can_allocate", "max_request_now", "earliest_fit", "reservation_guard", "fit_key", "trial_state", "future_plan")
_REPLAYING: dict[type, type] = {}


def replaying(allocator: Allocator) -> Allocator:
    """``allocator`` answering the schedulers' probes the general way, by replay on snapshots.

    Its class is swapped for a subclass that takes :data:`PROBES` from
    :class:`Allocator`: ``can_allocate`` and the reservation guard replay on a
    snapshot, ``earliest_fit`` replays the releases, ``max_request_now`` is the
    free count and ``fit_key`` and ``trial_state`` are ``None`` (so EASY asks every
    candidate, in queue order, remembering nothing); conservative backfilling's plan
    (``future_plan``) is :class:`~topoalloc.sched.plan.ReplayPlan`.  Allocation itself is unchanged.
    """
    if not isinstance(allocator, Allocator):
        raise InvalidArgument("allocator", allocator, "an Allocator instance")
    cls = type(allocator)
    sub = _REPLAYING.get(cls)
    if sub is None:
        sub = _REPLAYING[cls] = type(f"Replaying{cls.__name__}", (cls,), {"__slots__": (), **{p: getattr(Allocator, p) for p in PROBES}})
    allocator.__class__ = sub
    return allocator


def _schedule_workload(n: int, largest: int, seed: int, jobs: int) -> Any:
    """Bursty arrivals of integer times (many jobs at one instant, ends and arrivals together),
    sizes up to the largest request that fits, estimates both above and below the run time."""
    from ..workload import Workload

    rng = random.Random(seed)
    t = 0
    rows = []
    for _ in range(jobs):
        t += rng.choice((0, 0, 1, 2, 3))
        run = rng.randint(0, 12)
        rows.append((t, run, rng.randint(1, largest), max(1, run + rng.randint(-3, 10))))
    return Workload(job_id=np.arange(1, jobs + 1), submit=[r[0] for r in rows], run=[r[1] for r in rows], size=[r[2] for r in rows],
                    requested_time=[r[3] for r in rows], header={"MaxProcs": str(n)}, source=f"<conformance seed {seed}>")


def check_schedules_equal_replay(factory: Factory, *, seeds: Sequence[int] = (1,), jobs: int = 40,
                                 schedulers: Sequence[str] = ("easy", "easy:order=sjf", "conservative")) -> None:
    """EASY and conservative backfilling decide the same with the allocator's probes as with replay.

    On overloaded bursty workloads (queues of tens of jobs, estimates that
    overrun): every job starts at the same time and the same reservations are
    recorded with the allocator's own probes (EASY's keyed walk, in FCFS and in
    SJF order, kept guards, counting shortcuts), with EASY's full passes
    (``incremental=false``), and with :func:`replaying` probes.  This checks the probes where the
    schedulers use them, and the schedulers' shortcuts against their plain
    definition.
    """
    from ..api import simulate

    probe = factory()
    n = probe.n_nodes
    largest = max(s for s in range(1, n + 1) if _fits_empty_machine(probe, s))
    for seed in seeds:
        w = _schedule_workload(n, largest, seed, jobs)
        for sched in schedulers:
            variants = (sched + (",incremental=false" if ":" in sched else ":incremental=false"),) if sched.startswith("easy") else ()
            ref = simulate(w, machine=probe.topology, allocator=factory(), scheduler=sched, record_reservations=True)
            others = [(v, v, factory()) for v in variants] + [(f"{sched} with replay probes", sched, replaying(factory()))]
            for label, scheduler, alloc in others:
                got = simulate(w, machine=probe.topology, allocator=alloc, scheduler=scheduler, record_reservations=True)
                if not np.array_equal(ref.start, got.start):
                    j = int(np.flatnonzero(ref.start != got.start)[0])
                    _fail("schedules_equal_replay", f"seed {seed}: job {j} starts at {ref.start[j]} under {sched}, at {got.start[j]} under {label}")
                mine, theirs = ref.reservations, got.reservations
                assert mine is not None and theirs is not None  # (record_reservations=True)
                if mine != theirs:
                    k = next((i for i, (x, y) in enumerate(zip(mine, theirs)) if x != y), min(len(mine), len(theirs)))
                    _fail("schedules_equal_replay", f"seed {seed}: reservation {k} differs between {sched} and {label} "
                          f"({mine[k] if k < len(mine) else 'none'} vs {theirs[k] if k < len(theirs) else 'none'})")


def check_stateful(factory: Factory, *, examples: int = 40, steps: int = 30) -> None:
    """A Hypothesis state machine of random allocate / release / probe steps (see :class:`AllocatorStateMachine`)."""
    from hypothesis import HealthCheck, settings

    machine = AllocatorStateMachine.for_factory(factory)
    machine.TestCase.settings = settings(max_examples=examples, stateful_step_count=steps, deadline=None, database=None,
                                         suppress_health_check=list(HealthCheck))
    machine.TestCase().runTest()


#: Every check, by name, in the order they run.
CHECKS: dict[str, Callable[..., None]] = {
    "fresh": check_fresh,
    "claims_known": check_claims_known,
    "random_operations": check_random_operations,
    "deterministic": check_deterministic,
    "whole_machine": check_whole_machine,
    "one_node": check_one_node,
    "too_big_raises": check_too_big_raises,
    "double_release": check_double_release,
    "snapshot": check_snapshot,
    "can_allocate": check_can_allocate,
    "earliest_fit": check_earliest_fit,
    "max_request_now": check_max_request_now,
    "counting_promise": check_counting_promise,
    "reservation_guard": check_reservation_guard,
    "reusable_guard": check_reusable_guard,
    "fit_keys": check_fit_keys,
    "trial_state": check_trial_state,
    "stateful": check_stateful,
    "in_simulation": check_in_simulation,
    "schedules_equal_replay": check_schedules_equal_replay,
}


def allocator_checks(factory: Factory) -> Iterator[tuple[str, Callable[[Factory], None]]]:
    """``(name, check)`` for every conformance check; call ``check(factory)``."""
    return iter(CHECKS.items())


def check_allocator(factory: Factory, *, seed: int = 0, steps: int = 150) -> None:
    """Run every conformance check on allocators made by ``factory`` (raises ConformanceError)."""
    for name, check in CHECKS.items():
        if name in ("random_operations",):
            check(factory, seed=seed, steps=steps)
        elif name in ("deterministic", "snapshot"):
            check(factory, seed=seed)
        else:
            check(factory)


def parametrize_with_checks(factories: Sequence[Factory], ids: Sequence[str] | None = None) -> Any:
    """A ``pytest.mark.parametrize`` over ``(factory, check)``: one test per allocator and check.

    ``ids`` names the factories (default: the allocator's name and machine).
    """
    import pytest

    params = []
    for i, factory in enumerate(factories):
        label = ids[i] if ids is not None else _label(factory)
        for name, check in CHECKS.items():
            params.append(pytest.param(factory, check, id=f"{label}-{name}"))
    return pytest.mark.parametrize("factory,check", params)


def _label(factory: Factory) -> str:
    a = factory()
    return f"{a.name}-{a.topology.spec()}"


def registered_allocator_factories(topologies: Sequence[Topology] | None = None) -> list[tuple[str, Topology, Factory]]:
    """(name, topology, factory) for every registered allocator on every small machine it accepts.

    Which machines an allocator takes is what its registry entry's
    ``accepts`` says (the class's ``accepts``); building it there must work —
    an allocator that raises while being constructed on a machine it accepts
    is not skipped: the factory raises, and the checks fail.
    """
    out: list[tuple[str, Topology, Factory]] = []
    for top in topologies or small_topologies():
        for name in ALLOCATORS.names():
            entry = ALLOCATORS.entry(name)
            if entry.accepts is not None and not entry.accepts(top):
                continue

            def factory(name: str = name, top: Topology = top) -> Allocator:
                return ALLOCATORS.create(name, topology=top)

            out.append((name, top, factory))
    return out


def check_schedule(result: Any) -> None:
    """Properties of any simulation result: starts after submit, capacity respected, all jobs done, nodes never shared."""
    w = result.workload
    if not np.isfinite(result.start).all():
        _fail("schedule", "some job never started")
    if not (result.start >= w.submit).all():
        _fail("schedule", "a job started before it was submitted")
    run = w.run if getattr(result, "actual_run", None) is None else result.actual_run
    if not np.allclose(result.end, result.start + run):
        _fail("schedule", "end != start + run")
    if not (result.allocated_size >= w.size).all():
        _fail("schedule", "a job got fewer processors than it asked for")
    # capacity: sweep starts and ends (ends first at equal times)
    events = sorted([(e, 0, -s) for e, s in zip(result.end.tolist(), result.allocated_size.tolist())] + [(st, 1, s) for st, s in zip(result.start.tolist(), result.allocated_size.tolist())])
    used = 0
    for _, _, delta in events:
        used += delta
        if used > result.n_nodes:
            _fail("schedule", f"{used} processors in use on a machine of {result.n_nodes}")
    if result.allocations is not None:
        # jobs overlapping in time use disjoint nodes (a job of zero length holds its nodes
        # only within its start instant, so it is left out of the overlap test)
        flat, off = result.allocations
        order = np.argsort(result.start, kind="stable").tolist()
        active: list[int] = []
        for j in order:
            t = result.start[j]
            active = [k for k in active if result.end[k] > t]
            nodes = set(flat[off[j] : off[j + 1]].tolist())
            if len(nodes) != result.allocated_size[j]:
                _fail("schedule", f"job {j} holds {len(nodes)} distinct nodes, allocated size {result.allocated_size[j]}")
            if result.end[j] == t:
                continue  # zero length: its nodes are free again within the same instant
            for k in active:
                clash = nodes.intersection(flat[off[k] : off[k + 1]].tolist())
                if clash:
                    _fail("schedule", f"jobs {k} and {j} overlap in time on nodes {sorted(clash)[:5]}")
            active.append(j)


# the state machine lives in a module of its own (see there why); re-exported here
from .stateful import AllocatorStateMachine  # noqa: E402
