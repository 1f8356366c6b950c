"""Every registered allocator × every small machine it accepts × every conformance check.

A new allocator is one file plus a registry line; it is picked up here with no
test edits, and gets one test per check (``topoalloc.testing.CHECKS``).
"""

from __future__ import annotations

import numpy as np
import pytest

import topoalloc  # noqa: F401  (registers everything)
from topoalloc.registry import ALLOCATORS
from topoalloc.testing import CHECKS
from topoalloc.testing.conformance import registered_allocator_factories

CASES = registered_allocator_factories()


def _label(top) -> str:
    """The machine's spec, with a file argument shown by its name only (test ids do not carry folders)."""
    spec = top.spec()
    kind, _, arg = spec.partition(":")
    return f"{kind}:{arg.rsplit('/', 1)[-1]}" if "/" in arg else spec


IDS = [f"{n}-{_label(t)}" for n, t, _ in CASES]


def test_every_allocator_is_covered():
    covered = {name for name, _, _ in CASES}
    assert covered == set(ALLOCATORS.names()), f"allocators with no small machine: {set(ALLOCATORS.names()) - covered}"


#: The default tier runs the probe checks the slow tier repeats on fewer random states than the library's default (15) and the state
#: machine on fewer random sequences (40): it is the quick loop, 252 allocator × machine cases today.  The slow
#: tier, which CI runs too, checks the same cases on 150 states and 80 sequences (``test_probes_many_states``).
#: (``reusable_guard`` and ``trial_state`` are not in the slow tier's list, so they keep the library's 15 here.)
DEFAULT_TIER = {check: {"examples": 10} for check in ("can_allocate", "earliest_fit", "max_request_now", "counting_promise",
                                                      "reservation_guard", "fit_keys")}
DEFAULT_TIER["stateful"] = {"examples": 12}


@pytest.mark.parametrize("check", list(CHECKS), ids=list(CHECKS))
@pytest.mark.parametrize("name,top,factory", CASES, ids=IDS)
def test_conformance(name, top, factory, check):
    CHECKS[check](factory, **DEFAULT_TIER.get(check, {}))


#: check -> random states (Hypothesis examples) in the slow tier
MANY_STATES = {"can_allocate": 150, "earliest_fit": 150, "max_request_now": 150, "counting_promise": 150,
               "reservation_guard": 150, "fit_keys": 150, "stateful": 80}


@pytest.mark.slow
@pytest.mark.parametrize("check", list(MANY_STATES))
@pytest.mark.parametrize("name,top,factory", CASES, ids=IDS)
def test_probes_many_states(name, top, factory, check):
    """The probe checks on ten times as many random states as the default run, the state machine on four times as many."""
    CHECKS[check](factory, examples=MANY_STATES[check])


@pytest.mark.slow
@pytest.mark.parametrize("name,top,factory", CASES, ids=IDS)
def test_schedules_many_workloads(name, top, factory):
    """EASY and conservative with the allocator's probes against replay on three more workloads, of 60 jobs."""
    CHECKS["schedules_equal_replay"](factory, seeds=(2, 3, 4), jobs=60)


@pytest.mark.parametrize("name,top,factory", CASES, ids=IDS)
def test_deep_copy_is_independent_and_shares_only_memos(name, top, factory):
    """The reference replays judge on ``copy.deepcopy`` of the allocator.  The copy shares the topology and the
    memos (:class:`~topoalloc.alloc.base.Memo`: pure functions of the configuration) and no other container.
    Operations on the copy and on the original, interleaved, grant what each would grant alone (as two
    allocators built apart, sharing nothing, do): a memo that held state would leak from one to the other."""
    import copy
    import random

    from topoalloc.alloc.base import Memo
    from topoalloc.testing.conformance import _random_ops, check_invariants

    def built():
        x = factory()
        _random_ops(x, random.Random(5), 25)
        return x

    a = built()
    b = copy.deepcopy(a)
    for key, mine in vars(a).items():
        theirs = vars(b)[key]
        if key == "topology" or isinstance(mine, Memo):
            assert theirs is mine, key
        elif isinstance(mine, (dict, list, set, bytearray, np.ndarray)):
            assert theirs is not mine, key
    apart_a, apart_b = built(), built()
    ra, rb, rapart_a, rapart_b = (random.Random(s) for s in (6, 7, 6, 7))
    for _ in range(40):
        assert _random_ops(b, rb, 1) == _random_ops(apart_b, rapart_b, 1)
        assert _random_ops(a, ra, 1) == _random_ops(apart_a, rapart_a, 1)
    check_invariants(a)
    check_invariants(b)


def test_replaying_takes_an_allocator_only():
    from topoalloc.errors import InvalidArgument
    from topoalloc.testing import replaying

    with pytest.raises(InvalidArgument, match=r"argument allocator=3: expected an Allocator instance"):
        replaying(3)
