"""Every registered allocator × every small machine it accepts × every conformance check.

A new allocator is one file plus a registry line; it is picked up here with no
test edits, and gets one test per check (``topoalloc.testing.CHECKS``).
"""

from __future__ import annotations

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


@pytest.mark.parametrize("check", list(CHECKS.values()), ids=list(CHECKS))
@pytest.mark.parametrize("name,top,factory", CASES, ids=IDS)
def test_conformance(name, top, factory, check):
    check(factory)


PROBE_CHECKS = ("can_allocate", "earliest_fit", "max_request_now", "counting_promise", "reservation_guard", "fit_keys")


@pytest.mark.slow
@pytest.mark.parametrize("check", PROBE_CHECKS)
@pytest.mark.parametrize("name,top,factory", CASES, ids=IDS)
def test_probes_many_states(name, top, factory, check):
    """The probe checks on ten times as many random states as the default run."""
    CHECKS[check](factory, examples=150)
