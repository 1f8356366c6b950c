"""Whole real traces: the schedulers' guarantees at full scale (``pytest -m slow``)."""

from __future__ import annotations

import numpy as np
import pytest

import topoalloc
from topoalloc.testing import check_schedule

from .conftest import shared_trace

pytestmark = pytest.mark.slow

TRACES = [("KTH-SP2-1996-2.1-cln.swf", "flat:100"), ("SDSC-SP2-1998-4.2-cln.swf.gz", "flat:128")]


@pytest.mark.parametrize("name,machine", TRACES)
def test_easy_guarantees_on_real_trace(name, machine):
    r = topoalloc.simulate(shared_trace(name), machine=machine, scheduler="easy", clean=True, record_reservations=True, record_allocations=True)
    check_schedule(r)
    late = [rec for rec in r.reservations if r.start[rec.job] > rec.time]
    assert not late, f"{len(late)} heads started after their reservation, e.g. {late[:3]}"
    full = topoalloc.simulate(shared_trace(name), machine=machine, scheduler="easy:incremental=false", clean=True)
    assert np.array_equal(r.start, full.start)


@pytest.mark.parametrize("name,machine", TRACES)
def test_conservative_guarantees_on_real_trace(name, machine):
    r = topoalloc.simulate(shared_trace(name), machine=machine, scheduler="conservative", clean=True, record_reservations=True)
    check_schedule(r)
    last: dict[int, float] = {}
    for rec in r.reservations:
        assert rec.time <= last.get(rec.job, np.inf)
        last[rec.job] = rec.time
        assert r.start[rec.job] <= rec.time


def test_fcfs_order_on_real_trace():
    r = topoalloc.simulate(shared_trace("KTH-SP2-1996-2.1-cln.swf"), machine="flat:100", scheduler="fcfs", clean=True)
    check_schedule(r)
    assert (np.diff(r.start) >= 0).all()
