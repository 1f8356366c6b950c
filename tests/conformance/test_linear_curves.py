"""Every linear allocator × every curve × both span variants through the conformance checks.

The registered names run on every small topology with their default curve
(``tests/conformance/test_allocators.py``); this adds the curve and span options.
"""

from __future__ import annotations

import pytest
from hypothesis import settings

import topoalloc
from topoalloc.alloc.linear import STRATEGIES, LinearAllocator
from topoalloc.curves import CURVES
from topoalloc.testing import AllocatorStateMachine, check_allocator, check_schedule
from topoalloc.topology import parse_machine
from topoalloc.workload.synthetic import Uniform, poisson_workload


def _machine_for(curve: str) -> str:
    return "flat:16" if curve == "gray" else ("mesh:5x3" if curve in ("snake", "hilbert") else "torus:2x3x4")


CASES = [(s, c, sp) for s in STRATEGIES for c in CURVES.names() for sp in ("linear", "ring")]
IDS = [f"{s}-{c}-{sp}" for s, c, sp in CASES]


@pytest.mark.parametrize("strategy,curve,span", CASES, ids=IDS)
def test_universal(strategy, curve, span):
    top = parse_machine(_machine_for(curve))
    factory = lambda: LinearAllocator(top, strategy=strategy, curve=curve, span=span)  # noqa: E731
    for seed in (0, 1):
        check_allocator(factory, seed=seed, steps=120)
    machine = AllocatorStateMachine.for_factory(factory)
    machine.TestCase.settings = settings(max_examples=10, stateful_step_count=25, deadline=None)
    machine.TestCase().runTest()


@pytest.mark.parametrize("strategy,curve,span", CASES, ids=IDS)
def test_in_easy_simulation(strategy, curve, span):
    top = parse_machine(_machine_for(curve))
    w = poisson_workload(50, load=0.9, sizes=Uniform(1, top.n_nodes), machine_nodes=top.n_nodes, mean_runtime=50, estimate_factor=1.5, seed=3)
    r = topoalloc.simulate(w, machine=top, allocator=LinearAllocator(top, strategy=strategy, curve=curve, span=span), scheduler="easy", record_allocations=True)
    check_schedule(r)
