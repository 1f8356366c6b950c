"""The conformance checks every registered allocator goes through.

Universal properties (design notes §6): allocations are disjoint, of the
right size (exactly, or the allocator's documented rounding), inside the
machine; free + allocated = all; releasing everything restores the fresh
state; the same seed gives the same sequence.  Properties an allocator
*claims* (``Allocator.claims``) are checked when claimed.
"""

from __future__ import annotations

import random
from collections.abc import Callable

import numpy as np

from ..alloc.base import Allocation, Allocator, Request
from ..errors import AllocationError, RequestNeverFits
from ..registry import ALLOCATORS
from ..topology import Topology, parse_machine

__all__ = [
    "small_topologies",
    "check_allocation_valid",
    "check_invariants",
    "check_allocator",
    "check_schedule",
    "AllocatorStateMachine",
    "CLAIM_CHECKS",
]


def small_topologies(kinds: set[str] | None = None) -> list[Topology]:
    """The fixed set of small machines every allocator is run on (those registered so far)."""
    specs = ["flat:1", "flat:7", "flat:16", "flat:64", "torus:8", "torus:2x3x4", "mesh:4x4", "torus:4x4x2", "torus:2x2x2x6x8", "mesh:5x3"]
    tops = []
    for spec in specs:
        kind = spec.split(":")[0]
        if kinds is not None and kind not in kinds:
            continue
        tops.append(parse_machine(spec))
    return tops


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
    box = top.box_nodes(st.offset, st.sides)
    if not np.array_equal(box, alloc.nodes):
        return f"nodes are not the semitorus {st.describe()}"
    emb = conv.embedding
    if sorted(emb.tolist()) != box.tolist():
        return "conversion embedding is not a bijection onto the allocation"
    for a, b in conv.virtual_edges():
        if not top.adjacent(int(emb[a]), int(emb[b])):
            return f"virtual edge ({a}, {b}) maps to non-adjacent nodes {emb[a]}, {emb[b]}"
    if conv.torus and int(np.prod(conv.shape)) != alloc.size:
        return "virtual torus size differs from the allocation"
    return None


def _rank_contiguous_when_fit(alloc: Allocation, allocator: Allocator) -> str | None:
    """A linear allocator that says it found a free interval gave consecutive ranks (cyclically on a ring)."""
    if not alloc.info.get("contiguous"):
        return None
    n = allocator.n_nodes
    ranks = np.sort(allocator.ordering.rank_of[alloc.nodes])
    gaps = np.diff(ranks)
    if (gaps == 1).all():
        return None
    if getattr(allocator, "ring", False) and (gaps != 1).sum() == 1 and ranks[0] == 0 and ranks[-1] == n - 1:
        return None
    return f"contiguous claimed, but ranks {ranks.tolist()[:12]} are not one interval"


#: claim name -> check(allocation, allocator) returning an error message or None
CLAIM_CHECKS: dict[str, Callable[[Allocation, Allocator], str | None]] = {
    "exact_size": _exact_size,
    "power_of_two": _power_of_two,
    "subtorus": _subtorus,
    "rank_contiguous_when_fit": _rank_contiguous_when_fit,
}


def check_allocation_valid(alloc: Allocation, allocator: Allocator) -> None:
    """One allocation: in range, sorted, no duplicates, at least the size asked, and every claim."""
    nodes = alloc.nodes
    n = allocator.n_nodes
    assert nodes.dtype == np.int64 and nodes.ndim == 1, f"nodes must be a 1-D int64 array, got {nodes.dtype} {nodes.shape}"
    assert not nodes.flags.writeable, "allocation nodes must be read-only"
    assert nodes.size >= alloc.request.size, f"{nodes.size} nodes for a request of {alloc.request.size}"
    assert nodes.size == alloc.size
    if nodes.size:
        assert 0 <= nodes[0] and nodes[-1] < n, f"nodes outside 0..{n - 1}: {nodes.tolist()}"
        assert (np.diff(nodes) > 0).all(), f"nodes not sorted and distinct: {nodes.tolist()}"
    for claim in allocator.claims:
        check = CLAIM_CHECKS.get(claim)
        if check is not None:
            msg = check(alloc, allocator)
            assert msg is None, msg


def check_invariants(allocator: Allocator) -> None:
    """Held allocations are pairwise disjoint, and free + allocated = all nodes."""
    seen = np.zeros(allocator.n_nodes, dtype=np.int64)
    for a in allocator.allocations:
        seen[a.nodes] += 1
    assert (seen <= 1).all(), f"nodes held twice: {np.flatnonzero(seen > 1).tolist()}"
    busy = seen.astype(bool)
    assert np.array_equal(busy, allocator.busy_mask), "busy mask differs from the union of held allocations"
    assert allocator.free_count == allocator.n_nodes - int(seen.sum()), (
        f"free_count {allocator.free_count} != {allocator.n_nodes} - {int(seen.sum())}"
    )
    assert np.array_equal(allocator.free_nodes(), np.flatnonzero(~busy))


def _random_ops(allocator: Allocator, rng: random.Random, steps: int) -> list[tuple]:
    """Random allocate/release sequence; returns a log of (op, size, nodes) for determinism checks."""
    log: list[tuple] = []
    n = allocator.n_nodes
    for _ in range(steps):
        held = allocator.allocations
        if held and rng.random() < 0.4:
            a = held[rng.randrange(len(held))]
            allocator.release(a)
            log.append(("release", a.request.size, tuple(a.nodes.tolist())))
        else:
            size = rng.randint(1, n)
            try:
                a = allocator.allocate(Request(size))
            except RequestNeverFits:
                log.append(("never", size, ()))
                continue
            if a is not None:
                check_allocation_valid(a, allocator)
                log.append(("alloc", size, tuple(a.nodes.tolist())))
            else:
                log.append(("none", size, ()))
        check_invariants(allocator)
    return log


def check_allocator(factory: Callable[[], Allocator], *, seed: int = 0, steps: int = 200) -> None:
    """Run the universal conformance properties on allocators made by ``factory``.

    Raises AssertionError with a message naming the property that failed.
    """
    a = factory()
    assert a.free_count == a.n_nodes and not a.allocations, "a new allocator must be empty"
    fresh_free = a.free_nodes().copy()
    log1 = _random_ops(a, random.Random(seed), steps)
    # releasing everything restores the fresh state
    for alloc in a.allocations:
        a.release(alloc)
    check_invariants(a)
    assert a.free_count == a.n_nodes and np.array_equal(a.free_nodes(), fresh_free), "release-all did not restore the fresh state"
    # the same seed gives the same sequence
    log2 = _random_ops(factory(), random.Random(seed), steps)
    assert log1 == log2, "same seed, different allocation sequence"
    # a fresh allocator takes the whole machine at once (requests of every size fit the empty machine
    # unless the allocator declares otherwise by raising RequestNeverFits)
    b = factory()
    try:
        whole = b.allocate(Request(b.n_nodes))
    except RequestNeverFits:
        whole = None
    if whole is not None:
        check_allocation_valid(whole, b)
        assert whole.size == b.n_nodes
    # releasing what is not held is an error, and does not corrupt the state
    c = factory()
    x = c.allocate(Request(1))
    assert x is not None, "a request for one node must fit an empty machine"
    c.release(x)
    try:
        c.release(x)
    except AllocationError:
        pass
    else:
        raise AssertionError("double release was accepted")
    check_invariants(c)
    # snapshots are independent
    d = factory()
    y = d.allocate(Request(1))
    snap = d.snapshot()
    snap.release(y)
    assert d.holds(y) and d.free_count == d.n_nodes - y.size, "releasing in a snapshot changed the original"
    check_invariants(d)
    check_invariants(snap)


def check_schedule(result) -> None:
    """Properties of any simulation result: starts after submit, capacity respected, all jobs done."""
    w = result.workload
    assert np.isfinite(result.start).all(), "some job never started"
    assert (result.start >= w.submit).all(), "a job started before it was submitted"
    run = w.run if getattr(result, "actual_run", None) is None else result.actual_run
    assert np.allclose(result.end, result.start + run), "end != start + run"
    assert (result.allocated_size >= w.size).all()
    # capacity: sweep starts and ends (ends first at equal times)
    events = sorted([(e, 0, -s) for e, s in zip(result.end.tolist(), result.allocated_size.tolist())] + [(st, 1, s) for st, s in zip(result.start.tolist(), result.allocated_size.tolist())])
    used = 0
    for _, _, delta in events:
        used += delta
        assert used <= result.n_nodes, f"{used} processors in use on a machine of {result.n_nodes}"
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
            assert len(nodes) == result.allocated_size[j]
            if result.end[j] == t:
                continue  # zero length: its nodes are free again within the same instant
            for k in active:
                clash = nodes.intersection(flat[off[k] : off[k + 1]].tolist())
                assert not clash, f"jobs {k} and {j} overlap in time on nodes {sorted(clash)[:5]}"
            active.append(j)


class AllocatorStateMachine:
    """Factory of a Hypothesis stateful test for one allocator factory.

    Usage::

        TestFlat = AllocatorStateMachine.for_factory(lambda: FlatAllocator(FlatTopology(8))).TestCase
    """

    @staticmethod
    def for_factory(factory: Callable[[], Allocator]):
        from hypothesis import strategies as st
        from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

        class Machine(RuleBasedStateMachine):
            def __init__(self):
                super().__init__()
                self.allocator = factory()
                self.model_held: list[Allocation] = []

            @rule(frac=st.floats(min_value=0.0, max_value=1.0))
            def allocate(self, frac):
                size = max(1, int(round(frac * self.allocator.n_nodes)))
                try:
                    a = self.allocator.allocate(Request(size))
                except RequestNeverFits:
                    return
                if a is not None:
                    check_allocation_valid(a, self.allocator)
                    self.model_held.append(a)
                elif self.allocator.counting:
                    assert size > self.allocator.free_count, "counting allocator refused a request that fits"

            @precondition(lambda self: self.model_held)
            @rule(data=st.data())
            def release(self, data):
                i = data.draw(st.integers(0, len(self.model_held) - 1))
                a = self.model_held.pop(i)
                self.allocator.release(a)

            @rule()
            def probe_is_side_effect_free(self):
                before = self.allocator.busy_mask.copy()
                self.allocator.can_allocate(Request(1))
                self.allocator.earliest_fit(Request(self.allocator.n_nodes), list(self.allocator.allocations))
                assert np.array_equal(before, self.allocator.busy_mask), "a probe changed the allocator"

            @invariant()
            def consistent(self):
                check_invariants(self.allocator)
                assert {a.serial for a in self.model_held} == {a.serial for a in self.allocator.allocations}

        return Machine


def registered_allocator_factories(topologies: list[Topology] | None = None) -> list[tuple[str, Topology, Callable[[], Allocator]]]:
    """(name, topology, factory) for every registered allocator on every small topology it accepts."""
    out = []
    for top in topologies or small_topologies():
        for name in ALLOCATORS.names():
            def factory(name=name, top=top):
                return ALLOCATORS.create(name, topology=top)

            try:
                factory()
            except (ValueError, TypeError):
                continue  # the allocator does not accept this topology
            out.append((name, top, factory))
    return out
