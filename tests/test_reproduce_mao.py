"""The quick reproduction of Mao, Chen & Watson §4 (NASA log, five values of c) runs in CI."""

from __future__ import annotations

import csv

import pytest

from .conftest import load_benchmark_script, shared_trace


def load_script():
    return load_benchmark_script("reproduce_mao")


def test_quick_reproduction(tmp_path):
    pytest.importorskip("matplotlib")
    shared_trace("NASA-iPSC-1993-3.1-cln.swf")
    mod = load_script()
    assert mod.main(["--quick", "--out", str(tmp_path)]) == 0
    for name in ("results.csv", "saturation.csv", "fig3.png", "fig4.png", "fig7.png"):
        assert (tmp_path / name).stat().st_size > 0
    rows = list(csv.DictReader(open(tmp_path / "results.csv")))
    assert len(rows) == 60
    sat = {(r["log"], r["machine"], r["scheduler"], r["allocator"]): float(r["max_utilization"]) for r in csv.DictReader(open(tmp_path / "saturation.csv"))}
    q = lambda s, a: sat[("NASA", "QCDOC", s, a)]  # noqa: E731
    # the paper's ordering (§4.4): fragmentation costs EP more than NEP, and both more than the flat machine
    assert q("FCFS", "EP") < q("FCFS", "NEP") < q("FCFS", "flat")
    # backfilling raises the saturation point well above FCFS, NEP close to the flat machine
    assert q("EASY", "NEP") > q("FCFS", "NEP") + 0.1
    assert q("EASY", "NEP") > 0.9 * q("EASY", "flat")
