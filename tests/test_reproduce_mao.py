"""The quick reproduction of Mao, Chen & Watson §4 (NASA log, five values of c) runs in CI: `topoalloc reproduce mao --quick`."""

from __future__ import annotations

import pytest

from topoalloc.cli import main

from .conftest import SHARED_TRACES


@pytest.mark.slow
def test_quick_reproduction(tmp_path, capsys):
    """The quick grid (60 runs, ~45 s): slow tier; the default tier runs the other papers' quick grids."""
    pytest.importorskip("matplotlib")
    out = tmp_path / "mao"
    assert main(["reproduce", "mao", "--quick", "--out", str(out), "--workers", "1", "--quiet", "--traces", str(SHARED_TRACES)]) == 0
    assert (out / "report.html").stat().st_size > 0
    assert len(list((out / "figures").glob("*.png"))) == 2
    from topoalloc.experiments import load
    from topoalloc.experiments.claims import claim_rows, mao_saturation

    df = load(out)
    assert len(df) == 60 and set(df["status"]) == {"ok"}
    sat = {(r["log"], r["machine"], r["scheduler"], r["allocator"]): r["max_utilization"] for r in mao_saturation(df)}
    q = lambda s, a: sat[("NASA", "QCDOC", s, a)]  # noqa: E731
    # the paper's ordering (§4.4): fragmentation costs EP more than NEP, and both more than the flat machine
    assert q("fcfs", "ep") < q("fcfs", "nep") < q("fcfs", "flat")
    # backfilling raises the saturation point well above FCFS, NEP close to the flat machine
    assert q("easy", "nep") > q("fcfs", "nep") + 0.1
    assert q("easy", "nep") > 0.9 * q("easy", "flat")
    claims = {c["claim"]: c["holds"] for c in claim_rows("mao", df)}
    assert claims["NASA on QCDOC, FCFS: saturation EP < NEP < flat"] is True
    assert all(v is None for k, v in claims.items() if k.startswith("SDSC"))  # not run in the quick grid
    assert "[holds] NASA on QCDOC, FCFS: saturation EP < NEP < flat" in capsys.readouterr().out
