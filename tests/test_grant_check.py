"""The one grant check every allocation passes (``Allocator._take_checked``): compiled and numpy alike.

A deliberately wrong allocator grants whatever the test tells it to; each fault must raise
:class:`AllocationError` naming it, mark nothing busy and leave the allocator usable, with the
compiled check (``_cgrant.c``) and without it.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from topoalloc.alloc import Request, base
from topoalloc.alloc.base import Allocator
from topoalloc.errors import AllocationError
from topoalloc.topology import parse_machine


class Scripted(Allocator):
    """Grants the next array of ``script`` whatever the state (a faulty allocator on purpose)."""

    name = "scripted"

    def __init__(self, topology, script):
        super().__init__(topology)
        self.script = list(script)

    def _allocate(self, request):
        return np.asarray(self.script.pop(0))

    def _release(self, allocation, token):
        pass


@pytest.fixture(params=["compiled", "numpy"])
def check(request, monkeypatch):
    if request.param == "compiled" and base._cgrant is None:
        pytest.skip("the compiled grant check is not built")
    if request.param == "numpy":
        monkeypatch.setattr(base, "_cgrant", None)
    return request.param


FAULTS = [
    ([3, 4], 3, "granted 2 nodes for a request of 3"),
    ([2, 5, 2], 3, "granted a node twice"),
    ([5, 2, 5, 7], 4, "granted a node twice"),
    ([-1, 2], 2, "outside 0..9"),
    ([9, 10], 2, "outside 0..9"),
    ([1, 6], 2, r"granted busy nodes \[6\]"),
    ([7, 6, 0], 3, r"granted busy nodes \[6\]"),
]


@pytest.mark.parametrize("nodes, size, message", FAULTS)
def test_every_fault_is_named_and_marks_nothing(check, nodes, size, message):
    a = Scripted(parse_machine("flat:10"), [[6], nodes, [0, 1]])
    held = a.allocate(Request(1))
    before = a.busy_mask.copy()
    with pytest.raises(AllocationError, match=message):
        a.allocate(Request(size))
    assert (a.busy_mask == before).all() and a.free_count == 9
    x = a.allocate(Request(2))  # still usable
    assert x.nodes.tolist() == [0, 1] and a.free_count == 7
    a.release(x)
    a.release(held)
    assert not a.busy_mask.any() and a.free_count == 10


def test_an_unsorted_grant_is_sorted_and_the_subclass_buffer_is_not_touched(check):
    buf = np.array([8, 3, 5, 0], dtype=np.int64)
    a = Scripted(parse_machine("flat:10"), [buf])
    x = a.allocate(Request(4))
    assert x.nodes.tolist() == [0, 3, 5, 8] and buf.tolist() == [8, 3, 5, 0]
    assert a.busy_mask.tolist() == [i in (0, 3, 5, 8) for i in range(10)]
    with pytest.raises(ValueError):
        x.nodes[0] = 1  # read-only, as ever


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(-3, 40), min_size=0, max_size=60), st.sets(st.integers(0, 35), max_size=10), st.integers(1, 36))
def test_compiled_and_numpy_checks_agree(nodes, busy, size):
    """On any grant and any busy set both checks accept or refuse alike, and mark the same nodes."""
    if base._cgrant is None:
        pytest.skip("the compiled grant check is not built")
    outcomes = []
    for cg in (base._cgrant, None):
        saved = base._cgrant
        base._cgrant = cg
        try:
            a = Scripted(parse_machine("flat:36"), [list(busy), nodes])
            if busy:
                a.allocate(Request(len(busy)))
            try:
                x = a.allocate(Request(size))
                got = ("ok", x.nodes.tolist()) if x is not None else ("not now", None)
            except AllocationError as e:
                got = ("error", str(e))
            outcomes.append((got, a.busy_mask.tolist(), a.free_count))
        finally:
            base._cgrant = saved
    assert outcomes[0] == outcomes[1]


@pytest.mark.parametrize("fault", [None, "repeat", "busy", "range"])
def test_a_long_unsorted_grant_is_sorted_by_numpy_and_checked(check, fault):
    """Grants longer than the compiled check sorts itself come back to be sorted by numpy, then checked alike."""
    rng = np.random.default_rng(5)
    nodes = rng.permutation(np.arange(1, 1001))[:700]
    if fault == "repeat":
        nodes[-1] = nodes[0]
    elif fault == "busy":
        nodes[-1] = 0
    elif fault == "range":
        nodes[-1] = 5000
    a = Scripted(parse_machine("flat:1001"), [[0], nodes.copy()])
    a.allocate(Request(1))
    if fault is None:
        x = a.allocate(Request(700))
        assert x.nodes.tolist() == sorted(nodes.tolist()) and a.free_count == 300
    else:
        with pytest.raises(AllocationError, match={"repeat": "twice", "busy": "busy", "range": "outside"}[fault]):
            a.allocate(Request(699))
        assert a.free_count == 1000 and int(a.busy_mask.sum()) == 1


def _read_only(values):
    a = np.array(values, dtype=np.int64)
    a.flags.writeable = False
    return a


def test_a_read_only_grant_of_its_own_is_kept_as_it_is(check):
    """An immutable int64 array that owns its data is kept, not copied (an allocator may hand the same
    array out for every grant of those nodes); unsorted, it is sorted in a copy and left as it was; a
    read-only view of another array is copied (its base may change); faults are still named."""
    top = parse_machine("mesh:4x4")
    same = _read_only([1, 2, 3])
    a = Scripted(top, [same])
    got = a.allocate(Request(3))
    assert got.nodes is same or check == "numpy"
    a.release(got)
    unsorted = _read_only([5, 4, 6])
    got = Scripted(top, [unsorted]).allocate(Request(3))
    assert got.nodes.tolist() == [4, 5, 6] and unsorted.tolist() == [5, 4, 6] and got.nodes is not unsorted
    base_array = np.array([7, 8, 9, 10], dtype=np.int64)
    view = base_array[:3]
    view.flags.writeable = False
    got = Scripted(top, [view]).allocate(Request(3))
    assert got.nodes is not view and got.nodes.tolist() == [7, 8, 9]
    base_array[0] = 15  # the allocator changes its buffer: the grant does not
    assert got.nodes.tolist() == [7, 8, 9]
    b = Scripted(top, [_read_only([1, 1, 2])])
    with pytest.raises(AllocationError, match="twice"):
        b.allocate(Request(3))
    assert not b._busy.any()
