"""Every linear allocator × every curve × both span variants through the conformance checks.

The registered names run every check on every small machine with their
default curve (``tests/conformance/test_allocators.py``); this adds the curve
and span options, through the checks those options can affect (the probes of a
counting allocator are arithmetic and do not depend on the curve).
"""

from __future__ import annotations

import pytest

from topoalloc.alloc.linear import STRATEGIES, LinearAllocator
from topoalloc.curves import CURVES
from topoalloc.testing import CHECKS
from topoalloc.topology import parse_machine

#: the checks a curve or span option can change
CURVE_CHECKS = ("random_operations", "deterministic", "snapshot", "counting_promise", "stateful", "in_simulation")


def _machine_for(curve: str) -> str:
    return "flat:16" if curve == "gray" else ("mesh:5x3" if curve in ("snake", "hilbert") else "torus:2x3x4")


CASES = [(s, c, sp) for s in STRATEGIES for c in CURVES.names() for sp in ("linear", "ring")]


@pytest.mark.parametrize("check", CURVE_CHECKS)
@pytest.mark.parametrize("strategy,curve,span", CASES, ids=[f"{s}-{c}-{sp}" for s, c, sp in CASES])
def test_curve_options(strategy, curve, span, check):
    top = parse_machine(_machine_for(curve))
    # the state machine on 12 random sequences here, as the registered allocators' in the default tier
    CHECKS[check](lambda: LinearAllocator(top, strategy=strategy, curve=curve, span=span), **({"examples": 12} if check == "stateful" else {}))


@pytest.mark.slow
@pytest.mark.parametrize("strategy,curve,span", CASES, ids=[f"{s}-{c}-{sp}" for s, c, sp in CASES])
def test_curve_options_on_many_sequences(strategy, curve, span):
    """The state machine on the library's 40 random sequences."""
    top = parse_machine(_machine_for(curve))
    CHECKS["stateful"](lambda: LinearAllocator(top, strategy=strategy, curve=curve, span=span), examples=40)
