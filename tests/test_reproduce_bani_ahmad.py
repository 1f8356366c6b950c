"""Bani-Ahmad's experiments through the engine: `topoalloc reproduce bani-ahmad --quick` runs in CI.

The built-in spec (``topoalloc/experiments/specs/bani_ahmad.toml``) replaced a
stand-alone script; the pinned numbers below are the values that script gave
for the same seeds (its replication r used workload seed 1000 + r).
"""

from __future__ import annotations

import math

import pytest

from topoalloc.cli import main
from topoalloc.experiments.cells import run_cell, window_metrics
from topoalloc.experiments.spec import parse_spec

WINDOW = ["window_blocks", "window_response", "window_service", "window_wait", "window_utilization", "window_packet_blocking", "window_packet_latency"]
NET = {"network": "wormhole:packet=8,buffers=1,vcs=1,mode=flit", "service": "communication", "contention": False, "calibrated_runtime": True}
QUICK = {"synthetic": "mesh", "machine": "mesh:20x20", "scheduler": "fcfs", "x": "exp:10,20", "y": "exp:10,20", "load_definition": "machine",
         "n_jobs": 280, "warmup": 40, "measured": 200, "calibration_frames": 40}


def one(**params):
    spec = parse_spec({"metrics": WINDOW, "fixed": {**QUICK, **params}})
    rec = run_cell(spec.cells()[0])
    assert rec["status"] == "ok", rec["error"]
    return rec["_metrics"]


def test_quick_reproduction(tmp_path):
    pytest.importorskip("matplotlib")
    out = tmp_path / "bani"
    assert main(["reproduce", "bani-ahmad", "--quick", "--out", str(out), "--workers", "1", "--quiet"]) == 0
    from topoalloc.experiments import load

    df = load(out)
    assert set(df["status"]) == {"ok"}
    # quick: (6 series x 3 loads + 2 ANCA x 3 bounds + 2 unbounded) x 2 (with and without communication) + 5 series x 2 message counts
    assert len(df) == (6 * 3 + 2 * 3 + 2) * 2 + 5 * 2
    comm = df[df["communication"] == "all-to-all"]
    load = comm[comm["experiment"] == "load"].set_index(["series", "load"])
    # contiguous allocators grant one block; MBS several; bounded ANCA never more than its bound
    assert load.loc[("FF", 0.5), "window_blocks"] == 1.0 and load.loc[("BF", 0.8), "window_blocks"] == 1.0
    assert load.loc[("MBS", 0.5), "window_blocks"] > 1.0
    pbv = comm[comm["experiment"] == "pbv"]
    anca = pbv[pbv["series"].isin(["ANCA-FF", "ANCA-BF"])]
    assert (anca["window_blocks"] <= anca["pbv"]).all() and set(anca["pbv"]) == {1, 4, 16}
    # communication makes packets block and take time; without it there is no packet at all
    msgs = comm[comm["experiment"] == "messages"].set_index(["series", "messages"])
    assert msgs.loc[("Paging(0)", 40), "window_packet_latency"] > msgs.loc[("Paging(0)", 10), "window_packet_latency"] > 0
    assert df[df["communication"] == "none"]["window_packet_latency"].isna().all()
    html = (out / "report.html").read_text()
    assert "Fig. 12: PSU peaks at PBV = 4" in html and "Fig. 2: bounded ANCA has lower MJRT than MBS and Paging" in html
    from topoalloc.experiments.claims import claim_rows

    rows = claim_rows("bani-ahmad", df)
    assert len(rows) == 16 + 6 and all(r["holds"] in (True, False) for r in rows)
    assert sum(1 for f in (out / "figures").glob("fig*-*.png")) == 12


def test_the_full_spec_has_one_cell_per_point():
    """The bound of 8 and the unbounded references at load 0.7 run what the load sweep runs at 0.7: still their own cells."""
    from topoalloc.experiments.reproduce import builtin_spec

    cells = builtin_spec("bani-ahmad").cells()
    assert len(cells) == ((6 * 8 + 2 * 7 + 2) * 2 + 5 * 5) * 3 and len({c.key for c in cells}) == len(cells)


@pytest.mark.parametrize(
    "params, pinned",
    [
        # (the values the stand-alone script computed for its replication 0 of these quick points)
        ({"allocator": "mbs", "load": 0.5, "traffic": "all-to-all:messages=20,compute=0", "workload_seed": 1000, **NET},
         {"window_blocks": 4.615, "window_response": 90.0116039237895, "window_utilization": 0.45584216250248427, "window_packet_latency": 42.31909547738694}),
        ({"allocator": "paging:page_index=0,indexing=row_major", "load": 0.5, "traffic": "all-to-all:messages=40,compute=0",
          "calibration_traffic": "all-to-all:messages=20,compute=0", "workload_seed": 1002, **NET},
         {"window_response": 1090.338179608304, "window_packet_latency": 98.05075, "window_utilization": 0.802067249473039}),
    ],
)
def test_same_numbers_as_the_script(params, pinned):
    m = one(**params)
    assert all(math.isfinite(m[k]) for k in WINDOW)
    for k, v in pinned.items():
        assert m[k] == v


def test_calibration_sets_the_arrival_rate():
    """Figs. 5-8: the arrival rate is that of 20 messages whatever the traffic; more messages, longer service."""
    from topoalloc.experiments.cells import build_workload

    base = {**QUICK, **NET, "allocator": "mbs", "load": 0.5, "workload_seed": 3, "calibration_traffic": "all-to-all:messages=20,compute=0"}
    cells = [parse_spec({"metrics": WINDOW, "fixed": {**base, "traffic": f"all-to-all:messages={m},compute=0"}}).cells()[0] for m in (10, 40)]
    w10, w40 = (build_workload(c) for c in cells)
    assert (w10.submit == w40.submit).all()
    assert one(**{**base, "traffic": "all-to-all:messages=40,compute=0"})["window_service"] > one(**{**base, "traffic": "all-to-all:messages=10,compute=0"})["window_service"]


def test_window_errors_and_psu():
    from topoalloc.api import simulate
    from topoalloc.workload.core import Workload

    w = Workload(job_id=[1, 2, 3], submit=[0.0, 10.0, 20.0], run=[10.0, 10.0, 10.0], size=[2, 4, 4], requested_time=[-1.0] * 3)
    r = simulate(w, machine="flat:4", allocator="flat", scheduler="fcfs", engine="python")
    cell = parse_spec({"metrics": ["window_utilization"], "fixed": {"synthetic": "poisson", "warmup": 1, "measured": 2}}).cells()[0]
    m = window_metrics(cell, r)
    # window [10, 20]: job 2 holds 4 of 4 processors the whole time
    assert m["window_utilization"] == 1.0 and m["window_response"] == 10.0 and math.isnan(m["window_blocks"])
    bad = parse_spec({"metrics": ["window_utilization"], "fixed": {"synthetic": "poisson", "warmup": 2, "measured": 5}}).cells()[0]
    with pytest.raises(ValueError, match="needs 7 jobs; the run has 3"):
        window_metrics(bad, r)
