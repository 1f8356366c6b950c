"""CLI: topoalloc order / minspan / gap — JSON keys, statuses, one-line errors."""

from __future__ import annotations

import json

from topoalloc.cli import main


def test_order_json(capsys):
    assert main(["order", "--topology", "mesh:3x3", "--weights", "window:3", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert {"status", "objective", "bound", "order"} <= set(out)
    assert out["status"] == "optimal" and out["objective"] == out["bound"] == 73
    assert sorted(out["order"]) == list(range(9))


def test_order_ring_hypercube_and_file(capsys, tmp_path):
    path = tmp_path / "q3.txt"
    assert main(["order", "--topology", "hypercube:3", "--ring", "--output", str(path)]) == 0
    text = capsys.readouterr().out
    assert "status optimal" in text and "objective 78" in text
    lines = [ln for ln in path.read_text().splitlines() if ln and not ln.startswith("#")]
    assert len(lines) == 8


def test_order_edge_list_file(capsys, tmp_path):
    f = tmp_path / "g.edges"
    f.write_text("# a 5-cycle\n0 1\n1 2\n2 3\n3 4\n4 0\n")
    assert main(["order", "--topology", f"edges:{f}", "--weights", "hamiltonian", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["objective"] == 4


def test_order_unknown_status_exits_3(capsys):
    rc = main(["order", "--topology", "mesh:7x7", "--time-limit", "0.001", "--json"])
    out = json.loads(capsys.readouterr().out)
    if out["order"] is None:
        assert rc == 3 and out["status"] == "unknown"
    else:
        assert rc == 0 and out["status"] in ("feasible", "optimal")


def test_order_errors(capsys):
    assert main(["order", "--topology", "mesh:3x3", "--weights", "window:zero"]) == 2
    err = capsys.readouterr().err
    assert "weights" in err and "window:zero" in err and len(err.strip().splitlines()) == 1
    assert main(["order", "--topology", "blob:3"]) == 2
    assert "blob" in capsys.readouterr().err


def test_minspan_cli(capsys):
    assert main(["minspan", "--processors", "8", "--jobs", "5", "--seed", "2", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["status"] == "optimal" and out["objective"] == out["bound"]


def test_gap_cli(capsys):
    assert main(["gap", "--heuristic", "best_fit", "--processors", "8", "--jobs", "5", "--instances", "4", "--seed", "1", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["compared"] == 4 and out["worst"] >= 1.0
    assert main(["gap", "--heuristic", "best_fit", "--processors", "8", "--jobs", "5", "--instances", "3", "--seed", "1"]) == 0
    assert "ratio mean" in capsys.readouterr().out
    assert main(["gap", "--heuristic", "nope", "--instances", "1"]) == 2
    assert "nope" in capsys.readouterr().err
