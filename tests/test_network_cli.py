"""``topoalloc network``: the command line, its JSON keys, sweeps and figures, one-line errors."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from topoalloc.cli import main

from .test_cli import _OUTSIDE, run_cli

KEYS = {"offered", "accepted", "latency_mean", "latency_p99", "hops_mean", "blocking_mean", "cycles", "warmup"}


def test_standard_command_json(capsys):
    args = ["network", "--topology", "mesh:8x8", "--traffic", "uniform", "--rate", "0.2", "--packet", "8", "--buffers", "16", "--vcs", "1", "--cycles", "3000", "--json"]
    assert main(args) == 0
    first = capsys.readouterr().out
    out = json.loads(first)
    assert KEYS <= set(out)
    assert out["warmup"] == 300 and out["cycles"] == 3000
    assert abs(out["accepted"] - 0.2) < 0.02 and not out["saturated"]
    assert out["bisection_bound"] == 0.5
    assert main(args) == 0
    assert capsys.readouterr().out == first  # same seed, same bytes


def test_every_pattern_runs(capsys):
    for pattern in ("uniform", "transpose", "bit-complement", "bit-reverse", "shuffle", "tornado", "neighbour", "hotspot:fraction=0.2"):
        assert main(["network", "--topology", "mesh:4x4", "--traffic", pattern, "--rate", "0.1", "--cycles", "500", "--json"]) == 0
        assert json.loads(capsys.readouterr().out)["packets"] > 0


def test_sweep_draws_curve_and_heatmap(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    png, heat = tmp_path / "curve.png", tmp_path / "heat.png"
    args = ["network", "--topology", "mesh:4x4", "--sweep", "0.1:0.9:0.2", "--cycles", "800", "--drain", "300", "--plot", str(png), "--heatmap", str(heat), "--json"]
    assert main(args) == 0
    out = json.loads(capsys.readouterr().out)
    assert png.stat().st_size > 1000 and heat.stat().st_size > 1000
    assert out["saturation_rate"] is not None and out["bisection_bound"] == 1.0
    assert out["max_accepted"] <= 1.0
    rates = [p["rate"] for p in out["points"]]
    assert rates[0] == 0.1 and rates == sorted(rates)


def test_heatmap_on_a_hypercube(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    heat = tmp_path / "q.png"
    assert main(["network", "--topology", "hypercube:4", "--traffic", "bit-reverse", "--rate", "0.2", "--cycles", "500", "--heatmap", str(heat)]) == 0
    assert heat.stat().st_size > 1000
    assert "accepted" in capsys.readouterr().out


@pytest.mark.parametrize(
    "args,needle",
    [
        (["--topology", "flat:16"], "argument topology='flat:16'"),
        (["--topology", "mesh:3x3", "--traffic", "bit-reverse"], "2**b nodes"),
        (["--topology", "mesh:4x4", "--rate", "2"], "argument rate=2.0"),
        (["--topology", "mesh:4x4", "--switching", "saf", "--buffers", "4"], "argument buffers=4"),
        (["--topology", "mesh:4x4", "--sweep", "0.5:0.1:0.1"], "argument sweep='0.5:0.1:0.1'"),
        (["--topology", "torus:4x4", "--vcs", "0"], "argument --vcs=0"),
        (["--topology", "fattree:k=2,n=3", "--routing", "valiant", "--vcs", "3"], "argument routing='valiant': expected a dragonfly"),
        (["--topology", "dragonfly:p=1,a=2,h=1", "--routing", "valiant", "--vcs", "2"], "argument vcs=2: expected vcs >= 3"),
        (["--topology", "mesh:4x4", "--traffic", "group-shift"], "expected a dragonfly of two or more groups"),
        (["--topology", "dragonfly:p=1,a=2,h=1", "--valiant-seed", "-1"], "argument valiant_seed=-1"),
    ],
)
def test_bad_input_one_line(args, needle):
    r = run_cli("network", "--cycles", "200", *args)
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0], r.stderr


def test_other_commands_do_not_import_the_network_package():
    code = "import sys; from topoalloc.cli import main; main(['list']); print('topoalloc.network' in sys.modules)"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=_OUTSIDE)
    assert r.stdout.strip().splitlines()[-1] == "False"
