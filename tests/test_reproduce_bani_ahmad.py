"""The quick reproduction of Bani-Ahmad's experiments (twelve figures and the claims table) runs in CI."""

from __future__ import annotations

import csv

import pytest

from .conftest import load_benchmark_script


def test_quick_reproduction(tmp_path):
    pytest.importorskip("matplotlib")
    pytest.importorskip("scipy")
    mod = load_benchmark_script("reproduce_bani_ahmad")
    assert mod.main(["--quick", "--workers", "1", "--out", str(tmp_path)]) == 0
    for n in range(1, 13):
        assert (tmp_path / f"fig{n:02d}.csv").stat().st_size > 0
        assert (tmp_path / f"fig{n:02d}.png").stat().st_size > 0
    for n in (1, 2, 3, 4, 9, 10, 11, 12):
        assert (tmp_path / f"nonet_fig{n:02d}.csv").stat().st_size > 0
    rows = list(csv.DictReader(open(tmp_path / "points.csv")))
    by = {(r["experiment"], r["series"], r["x"]): r for r in rows}
    q = mod.QUICK
    assert len(rows) == 6 * len(q.loads) + 5 * len(q.messages) + 2 * len(q.pbvs) + 2
    # contiguous allocators grant one block; MBS several; ANCA never more than its bound
    assert float(by[("load", "FF", "0.5")]["MBPJ"]) == 1.0
    assert float(by[("load", "MBS", "0.5")]["MBPJ"]) > 1.0
    assert all(float(by[("pbv", s, str(b))]["MBPJ"]) <= b for s in ("ANCA-FF", "ANCA-BF") for b in q.pbvs)
    # communication makes packets block and take time
    assert float(by[("messages", "Paging(0)", "40")]["MPL"]) > 0
    claims = (tmp_path / "claims.md").read_text()
    assert "Fig. 12: PSU peaks at PBV = 4" in claims and claims.count("| Fig.") >= 15
