"""Machines of units (TPU pods, Tofu-D, Blue Gene/Q) and the slice allocator: known facts, rules, probes."""

from __future__ import annotations

import numpy as np
import pytest

from topoalloc.alloc import Request
from topoalloc.alloc.slices import SliceAllocator, slice_shapes
from topoalloc.api import make_allocator, simulate
from topoalloc.errors import InvalidArgument
from topoalloc.registry import TOPOLOGIES
from topoalloc.testing import parametrize_with_checks
from topoalloc.topology import UnitTorus, parse_machine

SMALL = ["tpu:2x2x2,cube=2", "tpu:4x2x3,cube=1", "tofu:3x2x2", "bgq:6x4x2x2x2,midplane=2x2x2x2x2"]


# ------------------------------------------------------------------ facts
def test_tpu_v4_pod_is_64_cubes_of_64_chips():
    t = parse_machine("tpu:v4")
    assert (t.n_units, t.unit_size, t.n_nodes) == (64, 64, 4096)
    assert t.dims == (16, 16, 16) and t.grid == (4, 4, 4)


def test_tpu_v5p_pod_is_8960_chips():
    t = parse_machine("tpu:v5p")
    assert (t.n_units, t.n_nodes) == (140, 8960)


def test_sequoia_is_96_racks_of_two_midplanes():
    t = parse_machine("bgq:sequoia")
    assert t.dims == (16, 16, 16, 12, 2) and t.unit == (4, 4, 4, 4, 2) and t.unit_size == 512
    assert t.n_units == 192 == 2 * 96 and t.n_nodes == 98_304 and t.grid == (4, 4, 4, 3, 1)


def test_fugaku_is_158976_nodes():
    t = parse_machine("tofu:fugaku")
    assert t.n_nodes == 158_976 and t.n_units == 24 * 23 * 24 and t.unit_size == 12
    assert t.dims == (24, 23, 24, 2, 3, 2) and t.wrap == (True, True, True, False, True, False)


@pytest.mark.parametrize("spec", SMALL + ["tpu:v4", "tpu:v5p", "tofu:fugaku", "bgq:sequoia"])
def test_units_tile_the_machine(spec):
    t = parse_machine(spec)
    assert isinstance(t, UnitTorus) and parse_machine(t.spec()) == t
    un = t.unit_nodes
    assert un.shape == (t.n_units, t.unit_size) and np.unique(un).size == t.n_nodes
    # every unit is a box of the node grid with the unit's sides
    for u in (0, t.n_units - 1):
        c = t.coords[un[u]]
        assert tuple(int(x) for x in c.max(axis=0) - c.min(axis=0) + 1) == t.unit
    assert (t.unit_of[un[3 % t.n_units]] == 3 % t.n_units).all()


def test_bad_machine_specs():
    with pytest.raises(InvalidArgument, match="multiples of the midplane"):
        parse_machine("bgq:6x4x4x4x2")
    with pytest.raises(InvalidArgument):
        parse_machine("tpu:4x4")
    for name in ("tpu", "tofu", "bgq"):
        assert name in TOPOLOGIES


# ------------------------------------------------------------------ shapes
def test_tpu_named_rule_gives_the_documented_slice_shapes():
    t = parse_machine("tpu:v4")
    chips = {1: (4, 4, 4), 2: (4, 4, 8), 4: (4, 8, 8), 8: (8, 8, 8), 16: (8, 8, 16), 32: (8, 16, 16), 64: (16, 16, 16)}
    for cubes, want in chips.items():
        v, shapes = slice_shapes(t, cubes, "pow2")
        assert v == cubes
        assert {tuple(sorted(int(s) * 4 for s in sh)) for sh in shapes} == {want}
    assert slice_shapes(t, 3, "pow2")[0] == 4 and slice_shapes(t, 3, "cubic")[0] == 3


def test_v5p_static_falls_back_to_the_least_box_that_fits():
    v, shapes = slice_shapes(parse_machine("tpu:v5p"), 100, "pow2")
    assert v == 140 and shapes.tolist() == [[4, 5, 7]]


# ------------------------------------------------------------------ rules
def test_static_box_is_contiguous_and_torus_only_when_spanning():
    a = SliceAllocator(parse_machine("tpu:v4"))
    whole_row = a.allocate(Request(4 * 64))  # 4 cubes: a 1x2x2 (in some orientation) box
    assert whole_row is not None and whole_row.size == 256
    assert sorted(whole_row.info["shape"]) == [1, 2, 2] and whole_row.info["torus"] == (False, False, False)
    pod = SliceAllocator(parse_machine("tpu:v4")).allocate(Request(4096))
    assert pod.info["torus"] == (True, True, True)
    mid = SliceAllocator(parse_machine("bgq:sequoia")).allocate(Request(512))
    assert mid.info["torus"] == (True,) * 5  # one midplane loops back in every dimension


def test_ocs_takes_any_free_cubes_static_needs_a_box():
    top = parse_machine("tpu:4x1x1,cube=1")  # a ring of 4 cubes
    static, ocs = SliceAllocator(top, "static"), SliceAllocator(top, "ocs")
    for a in (static, ocs):
        x = [a.allocate(Request(1)) for _ in range(4)]
        a.release(x[0])
        a.release(x[2])  # cubes 0 and 2 free: not adjacent on a ring of 4
    assert not static.can_allocate(Request(2)) and static.allocate(Request(2)) is None
    assert ocs.can_allocate(Request(2)) and ocs.allocate(Request(2)).info["torus"] == (True, True, True)


def test_static_wraps_round_the_torus():
    top = parse_machine("tpu:4x1x1,cube=1")
    a = SliceAllocator(top, "static", "cubic")
    x = [a.allocate(Request(1)) for _ in range(4)]
    a.release(x[0])
    a.release(x[3])
    got = a.allocate(Request(2))
    assert got is not None and got.nodes.tolist() == [0, 3]


def test_earliest_fit_counts_releases_until_a_box_is_free():
    top = parse_machine("tpu:4x1x1,cube=1")
    a = SliceAllocator(top, "static", "cubic")
    x = [a.allocate(Request(1)) for _ in range(4)]
    assert a.earliest_fit(Request(2), [x[0], x[2], x[1]]) == 3
    assert a.earliest_fit(Request(2), [x[0], x[3]]) == 2  # 3 and 0 are neighbours round the wrap
    ocs = SliceAllocator(top, "ocs", "cubic")
    y = [ocs.allocate(Request(1)) for _ in range(4)]
    assert ocs.earliest_fit(Request(2), [y[0], y[2]]) == 2


def test_full_spec_is_recorded():
    a = make_allocator("slice:rule=ocs", "tpu:v4")
    assert a.spec == "slice:rule=ocs,shapes=pow2"
    assert make_allocator("slice", "tofu:2x2x2").spec == "slice:rule=static,shapes=cubic"
    with pytest.raises(InvalidArgument):
        make_allocator("slice", "torus:4x4")


@pytest.mark.parametrize("spec,rule", [("tpu:v4", "static"), ("tpu:v4", "ocs"), ("tofu:4x4x4", "static")])
def test_simulates_the_bundled_trace(spec, rule):
    r = simulate(machine=spec, allocator=f"slice:rule={rule}", scheduler="easy", clean=True)
    s = r.summary()
    assert s["jobs"] > 18_000 and 0 < s["utilization"] <= 1


# ------------------------------------------------------------- conformance
#: the registered default (static) runs on the conformance suite's small machines; these add the other options
_CASES = [("tpu:2x2x2,cube=2", "ocs", "pow2"), ("bgq:6x4x2x2x2,midplane=2x2x2x2x2", "ocs", "cubic"),
          ("tofu:3x2x2", "static", "all"), ("tpu:2x2x2,cube=2", "static", "pow2")]
_FACTORIES = [(lambda spec=spec, rule=rule, shapes=shapes: make_allocator(f"slice:rule={rule},shapes={shapes}", spec)) for spec, rule, shapes in _CASES]


def _windows_only(spec: str, shapes: str) -> SliceAllocator:
    a = make_allocator(f"slice:shapes={shapes}", spec)
    assert isinstance(a, SliceAllocator)
    a.table_entries = 0  # the sliding-window search, which full-size machines use for large slices
    return a


_WINDOW_CASES = [("tpu:4x2x3,cube=1", "cubic"), ("bgq:6x4x2x2x2,midplane=2x2x2x2x2", "all")]
_FACTORIES += [(lambda spec=spec, shapes=shapes: _windows_only(spec, shapes)) for spec, shapes in _WINDOW_CASES]
_IDS = [f"{rule}-{shapes}-{spec}" for spec, rule, shapes in _CASES] + [f"windows-{shapes}-{spec}" for spec, shapes in _WINDOW_CASES]


@pytest.mark.parametrize("spec", ["tpu:v4", "tofu:6x5x4", "bgq:sequoia"])
def test_table_and_window_searches_agree(spec):
    rng = np.random.default_rng(7)
    top = parse_machine(spec)
    a, b = SliceAllocator(top), SliceAllocator(top)
    b.table_entries = 0
    held = []
    for _ in range(120):
        if held and rng.random() < 0.4:
            x, y = held.pop(int(rng.integers(len(held))))
            a.release(x)
            b.release(y)
            continue
        size = int(rng.integers(1, top.n_nodes // 6))
        req = Request(size)
        assert a.can_allocate(req) == b.can_allocate(req)
        ra = [h[0] for h in held]
        rb = [h[1] for h in held]
        assert a.earliest_fit(req, ra) == b.earliest_fit(req, rb)
        x, y = a.allocate(req), b.allocate(req)
        assert (x is None) == (y is None)
        if x is not None:
            assert np.array_equal(x.nodes, y.nodes) and x.info == y.info
            held.append((x, y))


@parametrize_with_checks(_FACTORIES, ids=_IDS)
def test_slice_conformance(factory, check):
    check(factory)


def test_a_failed_static_search_is_remembered_until_a_release():
    """Allocations only take units: a unit count that found no box fails without a search until something is released."""
    from topoalloc.alloc import Request
    from topoalloc.api import make_allocator

    a = make_allocator("slice:rule=static", "tpu:4x1x1,cube=1")  # a ring of 4 units of 1 chip
    units = [a.allocate(Request(1)) for _ in range(4)]
    a.release(units[1])
    a.release(units[3])  # free: units 1 and 3, not neighbours on the ring
    assert a.allocate(Request(2)) is None
    n = a.units_needed(2)
    assert a._failed[n] == a._releases
    calls = []
    real = a._table
    a._table = lambda size: calls.append(size) or real(size)
    assert a.allocate(Request(2)) is None and not calls  # remembered: no search
    a.release(units[2])
    got = a.allocate(Request(2))
    assert got is not None and calls  # a release: searched again, and found
