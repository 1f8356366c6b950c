"""The quick reproduction of Leung, Phillips, Bunde et al. (Figure 1 and Table 1) runs in CI: `topoalloc reproduce cplant --quick`."""

from __future__ import annotations

import pytest

from topoalloc.cli import main

from .conftest import SHARED_TRACES, shared_trace


def test_section4_stream_is_the_papers():
    from topoalloc.experiments.cells import cplant_stream

    w = cplant_stream(7)
    sizes = w.size.tolist()
    assert len(sizes) == 188
    assert {s: sizes.count(s) for s in (2, 5, 25, 30)} == {2: 91, 5: 33, 25: 31, 30: 33}
    assert sizes[:4] == [30, 30, 25, 25] and sizes[-1] == 2


def test_quick_reproduction(tmp_path):
    pytest.importorskip("matplotlib")
    shared_trace("Sandia-Ross-2001-1.1-cln.swf.gz")
    out = tmp_path / "cplant"
    assert main(["reproduce", "cplant", "--quick", "--out", str(out), "--workers", "1", "--quiet", "--traces", str(SHARED_TRACES)]) == 0
    from topoalloc.experiments import load
    from topoalloc.experiments.claims import claim_rows, cplant_figure1

    df = load(out)
    assert len(df) == 3 * 12 + 2 * 6 and set(df["status"]) == {"ok"}
    fig = cplant_figure1(df)
    assert len(fig) == 3 * 4 * 3
    by = {(r["c"], r["strategy"], r["curve"]): r for r in fig}
    for c in {r["c"] for r in fig}:
        for s in ("sorted_free_list", "first_fit", "best_fit", "sum_of_squares"):
            cube = {o: by[(c, s, o)]["avg cube ratio"] for o in ("row_major", "snake", "hilbert")}
            # §3: the Hilbert curve gives the most compact allocations in 3-D, row-major the least
            assert cube["hilbert"] < cube["snake"] < cube["row_major"]
            # fixed run times and counting allocators: the schedule, hence every rank set, is the
            # same whatever the curve, so the span (measured in each allocator's own order) is too
            assert len({by[(c, s, o)]["avg span (ring)"] for o in ("row_major", "snake", "hilbert")}) == 1
    claims = {c["claim"].split(":")[0]: c["holds"] for c in claim_rows("cplant", df)}
    # Table 1: every Hilbert strategy beats both strategies without the curve
    assert claims["Table 1"] is not None
    rows = claim_rows("cplant", df)
    assert next(r for r in rows if r["claim"].startswith("Table 1: every Hilbert"))["holds"] is True
    assert next(r for r in rows if r["claim"].startswith("Figure 1 (§3)"))["holds"] is True
