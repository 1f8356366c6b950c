"""Every registered allocator × every small topology it accepts × the same properties.

A new allocator is one file plus a registry line; it is picked up here with no test edits.
"""

from __future__ import annotations

import pytest
from hypothesis import settings

import topoalloc  # noqa: F401  (registers everything)
from topoalloc.alloc import Request
from topoalloc.registry import ALLOCATORS
from topoalloc.testing import AllocatorStateMachine, check_allocator, check_schedule
from topoalloc.testing.conformance import registered_allocator_factories
from topoalloc.workload.synthetic import Uniform, poisson_workload

CASES = registered_allocator_factories()
IDS = [f"{name}-{top.spec()}" for name, top, _ in CASES]


def test_every_allocator_is_covered():
    covered = {name for name, _, _ in CASES}
    assert covered == set(ALLOCATORS.names()), f"allocators with no small topology: {set(ALLOCATORS.names()) - covered}"


@pytest.mark.parametrize("name,top,factory", CASES, ids=IDS)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_universal_properties(name, top, factory, seed):
    check_allocator(factory, seed=seed, steps=150)


@pytest.mark.parametrize("name,top,factory", CASES, ids=IDS)
def test_stateful(name, top, factory):
    machine = AllocatorStateMachine.for_factory(factory)
    machine.TestCase.settings = settings(max_examples=40, stateful_step_count=30, deadline=None)
    machine.TestCase().runTest()


def _fits(allocator, size):
    from topoalloc.errors import RequestNeverFits

    try:
        allocator.check_request(Request(size))
        return True
    except RequestNeverFits:
        return False


@pytest.mark.parametrize("name,top,factory", CASES, ids=IDS)
@pytest.mark.parametrize("seed", [0, 1])
def test_probe_matches_replay(name, top, factory, seed):
    """An allocator's own earliest_fit / can_allocate agree with the general answer by replay on snapshots."""
    import random

    from topoalloc.alloc.base import Allocator

    rng = random.Random(seed)
    a = factory()
    for _ in range(60):
        held = a.allocations
        if held and rng.random() < 0.35:
            a.release(rng.choice(held))
        else:
            try:
                a.allocate(Request(rng.randint(1, max(1, top.n_nodes // 3))))
            except Exception:
                pass
        held = a.allocations
        rng.shuffle(held)
        for size in (1, rng.randint(1, top.n_nodes), top.n_nodes // 2 or 1):
            req = Request(size)
            if not _fits(a, size):
                continue
            assert a.earliest_fit(req, held) == Allocator.earliest_fit(a, req, held)
            assert a.can_allocate(req) == (a.snapshot()._allocate(req) is not None if size <= a.free_count else False)


@pytest.mark.parametrize("name,top,factory", CASES, ids=IDS)
def test_request_too_big_raises(name, top, factory):
    from topoalloc.errors import RequestNeverFits

    with pytest.raises(RequestNeverFits, match="can never fit"):
        factory().allocate(Request(top.n_nodes + 1))


@pytest.mark.parametrize("name,top,factory", CASES, ids=IDS)
@pytest.mark.parametrize("sched", ["fcfs", "easy", "conservative"])
def test_in_simulation(name, top, factory, sched):
    """Every allocator plugs into every scheduler through the probe, and the schedule is valid."""
    probe = factory()
    largest = max(s for s in range(1, top.n_nodes + 1) if _fits(probe, s))
    w = poisson_workload(60, load=0.9, sizes=Uniform(1, largest), machine_nodes=top.n_nodes, mean_runtime=50, estimate_factor=1.5, seed=5)
    r = topoalloc.simulate(w, machine=top, allocator=factory(), scheduler=sched, record_allocations=True)
    check_schedule(r)
