"""The quick reproduction of Turner (1997) ch. 4 runs in CI: `topoalloc reproduce turner --quick`."""

from __future__ import annotations

import pytest

from topoalloc.cli import main


def test_quick_reproduction(tmp_path):
    pytest.importorskip("matplotlib")
    out = tmp_path / "turner"
    assert main(["reproduce", "turner", "--quick", "--out", str(out), "--workers", "1", "--quiet"]) == 0
    assert (out / "report.html").stat().st_size > 0
    from topoalloc.experiments import load

    df = load(out)
    assert len(df) == 52 + 4 and set(df["status"]) == {"ok"}  # the NASA log runs once per allocator
    syn = df[df["workload"] != "NASA_Q7"]
    assert set(syn["allocator"]) == {"free_list", "afl"} and set(syn["rep"]) == {1, 2}
    util = syn.groupby(["workload", "allocator", "load"])["utilization"].mean()
    # on Q6 the AFL fits a 4×6 and a 4×2 in one 5-cube where the FL cannot: higher utilization at full load
    assert util[("constant_q6", "afl", 4.0)] > util[("constant_q6", "free_list", 4.0)] + 0.05
    waits = df[df["workload"] == "NASA_Q7"].groupby("allocator")["mean_wait"].mean()
    # complete subcube recognition waits least; Gray code recognises more subcubes than buddy
    assert waits["free_list"] < waits["gray_code"] < waits["buddy"]


def test_confidence_interval():
    from topoalloc.experiments.stats import mean_ci, t_quantile

    m, ci = mean_ci([1.0, 2.0, 3.0])
    assert m == 2.0 and abs(ci - 4.303 * 1.0 / 3**0.5) < 1e-3
    for df, t in {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 9: 2.262, 30: 2.042}.items():
        assert abs(t_quantile(0.975, df) - t) < 2e-3 * t
