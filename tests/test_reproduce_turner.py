"""The quick reproduction of Turner (1997) ch. 4 runs in CI; the full sweep is benchmarks/reproduce_turner.py."""

from __future__ import annotations

import csv

import pytest

from .conftest import load_benchmark_script


def load_script():
    return load_benchmark_script("reproduce_turner")


def test_quick_reproduction(tmp_path):
    pytest.importorskip("matplotlib")
    mod = load_script()
    assert mod.main(["--quick", "--out", str(tmp_path)]) == 0
    for name in ("runs.csv", "summary.csv", "nasa.csv", "comparison.md", "constant.png", "constant_q6.png", "rect32.png"):
        assert (tmp_path / name).stat().st_size > 0
    summary = list(csv.DictReader(open(tmp_path / "summary.csv")))
    assert {r["allocator"] for r in summary} == {"free_list", "afl"}
    assert all(int(r["reps"]) == 2 and float(r["jtt_ci95"]) >= 0 for r in summary)
    pts = {(r["workload"], r["allocator"], float(r["load"])): r for r in summary}
    # on Q6 the AFL fits a 4×6 and a 4×2 in one 5-cube where the FL cannot: higher utilization at full load
    assert float(pts[("constant_q6", "afl", 4.0)]["utilization"]) > float(pts[("constant_q6", "free_list", 4.0)]["utilization"]) + 0.05
    nasa = list(csv.DictReader(open(tmp_path / "nasa.csv")))
    waits = {r["allocator"]: float(r["mean_wait"]) for r in nasa}
    # complete subcube recognition waits least; Gray code recognises more subcubes than buddy
    assert waits["free_list"] < waits["gray_code"] < waits["buddy"]


def test_confidence_interval():
    mod = load_script()
    m, ci = mod.mean_ci([1.0, 2.0, 3.0])
    assert m == 2.0 and abs(ci - 4.303 * 1.0 / 3**0.5) < 1e-9
    assert mod.main(["--quick", "--reps", "1"]) == 2
