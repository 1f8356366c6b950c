"""Golden traces: hand-computed start times (see tests/golden/README.md and each file's `; Why:` lines)."""

from __future__ import annotations

import pytest

import topoalloc
from topoalloc.workload import read_swf

from .conftest import GOLDEN

FILES = sorted(GOLDEN.glob("*.swf"))
SCHEDULERS = {"FCFS": "fcfs", "EASY": "easy", "Conservative": "conservative"}


def expected(path, label):
    w = read_swf(path)
    text = w.header[f"Expected-{label}"]
    return {int(a): float(b) for a, b in (pair.split(":") for pair in text.split())}


def test_golden_files_exist():
    assert len(FILES) >= 5


@pytest.mark.parametrize("label", list(SCHEDULERS))
@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_golden_start_times(path, label):
    result = topoalloc.simulate(path, scheduler=SCHEDULERS[label], record_reservations=True)
    got = dict(zip(result.workload.job_id.tolist(), result.start.tolist()))
    assert got == expected(path, label)


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
@pytest.mark.parametrize("variant", ["easy:incremental=false", "replay"])
def test_golden_fast_paths_agree(path, variant):
    """The incremental EASY pass and the counting probes give the same answers as the general ones."""
    if variant == "replay":
        for label, sched in SCHEDULERS.items():
            r = topoalloc.simulate(path, scheduler=sched, allocator="flat:probe=replay")
            assert dict(zip(r.workload.job_id.tolist(), r.start.tolist())) == expected(path, label)
    else:
        r = topoalloc.simulate(path, scheduler=variant)
        assert dict(zip(r.workload.job_id.tolist(), r.start.tolist())) == expected(path, "EASY")
