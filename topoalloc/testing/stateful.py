"""The conformance suite's Hypothesis state machine (random allocate / release / probe steps).

It is a module of its own, and a short one, for speed: Hypothesis reads the source of a state machine's
class (``inspect.getsource``) twice per test to key its example database, and on Python 3.11 that parses
the whole module the class is defined in.  From the 1,000-line :mod:`~topoalloc.testing.conformance`
that cost 25-35 ms per reading, about a fifth of a default-tier state machine test.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..alloc.base import Allocation, Allocator, Request
from ..errors import RequestNeverFits

__all__ = ["AllocatorStateMachine"]


class AllocatorStateMachine:
    """Factory of a Hypothesis stateful test for one allocator factory.

    Usage::

        TestFlat = AllocatorStateMachine.for_factory(lambda: FlatAllocator(FlatTopology(8))).TestCase
    """

    @staticmethod
    def for_factory(factory: Callable[[], Allocator]) -> Any:
        from hypothesis import strategies as st
        from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

        from .conformance import _fail, check_allocation_valid, check_invariants

        class Machine(RuleBasedStateMachine):
            def __init__(self) -> None:
                super().__init__()
                self.allocator = factory()
                self.model_held: list[Allocation] = []

            @rule(frac=st.floats(min_value=0.0, max_value=1.0))
            def allocate(self, frac: float) -> None:
                size = max(1, int(round(frac * self.allocator.n_nodes)))
                try:
                    a = self.allocator.allocate(Request(size))
                except RequestNeverFits:
                    return
                if a is not None:
                    check_allocation_valid(a, self.allocator)
                    self.model_held.append(a)
                elif self.allocator.counting and size <= self.allocator.free_count:
                    _fail("stateful", "counting allocator refused a request that fits")

            @precondition(lambda self: self.model_held)
            @rule(data=st.data())
            def release(self, data: Any) -> None:
                i = data.draw(st.integers(0, len(self.model_held) - 1))
                a = self.model_held.pop(i)
                self.allocator.release(a)

            @rule()
            def probe_is_side_effect_free(self) -> None:
                before = self.allocator.busy_mask.copy()
                self.allocator.can_allocate(Request(1))
                self.allocator.earliest_fit(Request(self.allocator.n_nodes), list(self.allocator.allocations))
                if not np.array_equal(before, self.allocator.busy_mask):
                    _fail("stateful", "a probe changed the allocator")

            @invariant()
            def consistent(self) -> None:
                check_invariants(self.allocator)
                if {a.serial for a in self.model_held} != {a.serial for a in self.allocator.allocations}:
                    _fail("stateful", "the allocator's held allocations differ from those granted and not released")

        return Machine
