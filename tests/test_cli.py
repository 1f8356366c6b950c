"""The command line: main job, JSON keys, per-job tables, one-line errors, determinism."""

from __future__ import annotations

import csv
import json
import subprocess
import tempfile
import sys

import pytest

from topoalloc.cli import main

from .test_swf import LINE

KEYS = {"jobs", "mean_wait", "mean_response", "mean_bounded_slowdown", "utilization", "makespan"}


_OUTSIDE = tempfile.mkdtemp(prefix="topoalloc-cli-")


def run_cli(*args):
    # run outside the checkout: with cwd on sys.path, ``python -m`` would import the source
    # tree's ``topoalloc`` (which lacks the installed ``topoalloc.ilp`` / ``topoalloc.proofs``)
    # instead of the installed package the tests are meant to exercise
    return subprocess.run([sys.executable, "-m", "topoalloc", *args], capture_output=True, text=True, cwd=_OUTSIDE)


def test_default_run_json(capsys):
    assert main(["simulate", "--json", "--quiet"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert KEYS <= set(out)
    assert out["jobs"] == 18239 and out["machine"] == "flat:128"
    assert 0 < out["utilization"] <= 1


@pytest.mark.parametrize("sched", ["fcfs", "easy", "conservative", "easy:order=sjf", "fcfs:order=lpt"])
def test_schedulers(sched, capsys, tmp_path):
    trace = tmp_path / "t.swf"
    trace.write_text("; MaxProcs: 8\n" + "\n".join(LINE.replace("1 0 -1", f"{i} {i} -1", 1) for i in range(1, 6)) + "\n")
    assert main(["simulate", "--trace", str(trace), "--scheduler", sched, "--json", "--quiet"]) == 0
    assert json.loads(capsys.readouterr().out)["jobs"] == 5


def test_conservative_summary_shows_its_plan_changes_on_both_paths(tmp_path, capsys):
    """Conservative's text summary ends its metrics with the reservations its plan made or moved, the same on the
    lean flat path and the general one (``--jobs-out`` takes the general path); EASY's has no such line."""
    lines = {}
    for label, extra in (("lean", []), ("general", ["--jobs-out", str(tmp_path / "j.csv")])):
        assert main(["simulate", "--quiet", "--scheduler", "conservative", *extra]) == 0
        out = capsys.readouterr().out
        lines[label] = [line for line in out.splitlines() if "reservation_changes" in line]
    assert lines["lean"] == lines["general"] == ["  reservation_changes          18250"]
    assert main(["simulate", "--quiet", "--scheduler", "easy"]) == 0
    assert "reservation_changes" not in capsys.readouterr().out


def test_simulate_says_why_the_general_engine_ran(tmp_path, capsys):
    """Under --engine auto (the default) a run the compiled kernel does not take says so on stderr, with the
    kernel's reason (here the AFL's 3-node meshes, which leave leftover cubes); --quiet keeps that line off.
    --engine python gives the same summary without the line; --engine compiled is one line and exit 2 where the
    kernel cannot run, and the same summary as auto where it can (the AFL on 4-node meshes)."""
    trace = tmp_path / "t.swf"
    for size, where in ((3, "general"), (4, "compiled")):
        trace.write_text("; MaxProcs: 16\n" + "\n".join(LINE.replace("1 0 -1 10 4", f"{i} {i} -1 {10 + i} {size}", 1).replace(" 4 20 ", f" {size} 20 ", 1)
                                                      for i in range(1, 7)) + "\n")
        base = ["simulate", "--trace", str(trace), "--machine", "hypercube:4", "--allocator", "afl", "--scheduler", "conservative"]
        outs = {}
        for engine in ("auto", "python", "compiled"):
            code = main([*base, "--engine", engine])
            out, err = capsys.readouterr()
            noted = [line for line in err.splitlines() if "the general engine ran this" in line]
            if where == "general" and engine == "compiled":
                assert code == 2 and "does not fill its cube" in err, err
                continue
            assert code == 0
            outs[engine] = out
            if where == "general" and engine == "auto":
                assert len(noted) == 1 and "the compiled kernel does not take it" in noted[0] and "does not fill its cube" in noted[0], err
            else:
                assert not noted, err
        assert len(set(outs.values())) == 1 and "6 jobs on hypercube:4" in outs["auto"]
        assert main([*base, "--quiet"]) == 0
        assert capsys.readouterr().err == ""


def test_the_result_says_which_engine_ran():
    import topoalloc

    assert topoalloc.simulate(machine="hypercube:7", allocator="buddy", scheduler="easy").engine == "compiled"
    r = topoalloc.simulate(machine="hypercube:7", allocator="free_list", scheduler="easy", engine="python")
    assert (r.engine, r.engine_note) == ("general", None)
    r = topoalloc.simulate(scheduler="conservative", record_reservations=True)
    assert r.engine == "general" and r.engine_note == "the compiled kernel does not take it (the run asks for record_reservations)"


def test_jobs_out_csv_and_parquet(tmp_path, capsys):
    out = tmp_path / "jobs.csv"
    assert main(["simulate", "--quiet", "--jobs-out", str(out), "--json"]) == 0
    rows = list(csv.DictReader(out.open()))
    assert len(rows) == 18239
    r = rows[0]
    assert set(r) >= {"job_id", "submit", "start", "end", "wait", "response", "bounded_slowdown", "size", "allocated_size"}
    assert float(r["wait"]) == float(r["start"]) - float(r["submit"])
    pq = pytest.importorskip("pyarrow.parquet")
    outp = tmp_path / "jobs.parquet"
    assert main(["simulate", "--quiet", "--jobs-out", str(outp)]) == 0
    table = pq.read_table(outp)
    assert table.num_rows == 18239 and "bounded_slowdown" in table.column_names


def test_clean_reports_on_stderr(tmp_path):
    trace = tmp_path / "t.swf"
    lines = [LINE, LINE.replace("1 0 -1 10 4", "2 1 -1 0 4", 1), LINE.replace("1 0 -1 10 4 -1 -1 4", "3 2 -1 10 64 -1 -1 64", 1)]
    trace.write_text("; MaxProcs: 8\n" + "\n".join(lines) + "\n")
    p = run_cli("simulate", "--trace", str(trace), "--clean", "--json")
    assert p.returncode == 0, p.stderr
    assert "drop-wider: removed 1 job " in p.stderr and "drop-nonpositive-runtime: removed 1 job " in p.stderr
    out = json.loads(p.stdout)
    assert out["jobs"] == 1
    assert {f["name"]: f["removed"] for f in out["filters"]}["drop-wider"] == 1


@pytest.mark.parametrize(
    "content,pattern",
    [
        ("; MaxProcs: 8\n" + " ".join(LINE.split()[:17]) + "\n", r"line 2 of .*: expected 18 fields, got 17"),
        (LINE.replace(" 10 4 ", " x 4 ", 1) + "\n", r"line 1 of .*field 4 \(run_time\) is 'x'"),
        ("", r"line 1 of .*empty"),
        ("; MaxProcs: 8\n", r"line 2 of .*header only"),
    ],
)
def test_bad_trace_one_line_error(tmp_path, content, pattern):
    import re

    trace = tmp_path / "bad.swf"
    trace.write_text(content)
    p = run_cli("simulate", "--trace", str(trace), "--machine", "flat:8")
    assert p.returncode == 2
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in p.stderr, p.stderr
    assert re.search(pattern, lines[0]) and "bad.swf" in lines[0]


def test_truncated_gzip_cli(tmp_path):
    import gzip

    data = gzip.compress(("; MaxProcs: 8\n" + (LINE + "\n") * 3000).encode())
    trace = tmp_path / "cut.swf.gz"
    trace.write_bytes(data[: len(data) // 3])
    p = run_cli("simulate", "--trace", str(trace))
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1
    assert "cut.swf.gz" in p.stderr and "truncated" in p.stderr


@pytest.mark.parametrize(
    "args,pattern",
    [
        (["--allocator", "nope"], r"unknown allocator 'nope'; known: .*\bep, .*\bflat, .*\bnep\b"),
        (["--scheduler", "lifo"], "unknown scheduler 'lifo'; known: conservative, easy, fcfs"),
        (["--scheduler", "easy:order=random"], "order='random'"),
        (["--machine", "flat:abc"], "flat:N"),
        (["--machine", "torus"], "torus:ARG"),
        (["--machine", "cube:3"], "unknown machine 'cube'"),
        (["--machine", "torus:2x2x2x6x8", "--allocator", "nep", "--scale-sizes", "4"], r"job \d+ \(line \d+ .*can never fit torus:2x2x2x6x8 with allocator .nep."),
        (["--machine", "flat:64"], r"job \d+ \(line \d+ of .*\): .*128 processors.*drop-wider"),
        (["--allocator", "flat:colour=red"], "unknown 'colour', valid: probe"),
        (["--machine", "mesh:16x8", "--allocator", "best_fit:curve=peano"], "curve a curve name .* \\(got curve='peano'\\)"),
        (["--machine", "mesh:16x8", "--allocator", "first_fit:span=circle"], "span='circle'"),
        (["--machine", "mesh:16x8", "--runtime-model", "locality:alpha=-1"], "alpha=-1"),
        (["--machine", "mesh:16x8", "--runtime-model", "speedy"], "unknown runtime model 'speedy'"),
    ],
)
def test_bad_arguments_one_line(args, pattern):
    import re

    p = run_cli("simulate", *args)
    assert p.returncode == 2, p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and re.search(pattern, lines[0]), p.stderr


def test_bad_number_argument():
    p = run_cli("simulate", "--work-multiple", "-2")
    assert p.returncode == 2 and "expected a positive number, got '-2'" in p.stderr


def test_missing_size_without_clean(tmp_path):
    trace = tmp_path / "t.swf"
    trace.write_text("; MaxProcs: 8\n" + LINE.replace("10 4 -1 -1 4", "10 -1 -1 -1 -1", 1) + "\n")
    p = run_cli("simulate", "--trace", str(trace))
    assert p.returncode == 2 and "job 1 (line 2" in p.stderr and "drop-no-size" in p.stderr
    p = run_cli("simulate", "--trace", str(trace), "--clean", "--json")  # nothing left to simulate is an error, not zeros
    assert p.returncode == 2 and "filter drop-no-size removed the last 1 jobs" in p.stderr and not p.stdout


def test_json_byte_identical(tmp_path):
    a = run_cli("simulate", "--json", "--quiet", "--scheduler", "conservative")
    b = run_cli("simulate", "--json", "--quiet", "--scheduler", "conservative")
    assert a.returncode == 0 and a.stdout == b.stdout


def test_list(capsys):
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert "flat" in out and "easy" in out and "utilization" in out


def test_console_script_installed():
    import shutil

    exe = shutil.which("topoalloc")
    assert exe, "the topoalloc console script is not on PATH"
    p = subprocess.run([exe, "--version"], capture_output=True, text=True)
    assert p.returncode == 0 and p.stdout.startswith("topoalloc ")


def test_work_multiple_and_keep_estimates(tmp_path, capsys):
    trace = tmp_path / "t.swf"
    trace.write_text("; MaxProcs: 8\n" + LINE + "\n")
    out = tmp_path / "a.csv"
    assert main(["simulate", "--trace", str(trace), "--work-multiple", "2", "--jobs-out", str(out), "--quiet"]) == 0
    row = next(csv.DictReader(out.open()))
    assert (float(row["run"]), float(row["estimate"])) == (20.0, 40.0)
    assert main(["simulate", "--trace", str(trace), "--work-multiple", "2", "--keep-estimates", "--jobs-out", str(out), "--quiet"]) == 0
    row = next(csv.DictReader(out.open()))
    assert (float(row["run"]), float(row["estimate"])) == (20.0, 20.0)


def test_curve_command_writes_an_ordering_file(tmp_path):
    out = tmp_path / "h.txt"
    p = run_cli("curve", "hilbert", "--machine", "mesh:9x8", "--out", str(out))
    assert p.returncode == 0, p.stderr
    assert "1 of 71 consecutive ranks are not neighbours" in p.stderr
    q = run_cli("simulate", "--machine", "mesh:16x8", "--allocator", f"best_fit:curve={out}", "--quiet")
    assert q.returncode == 2 and "ranks 72 nodes, but the machine has 128" in q.stderr
    bad = tmp_path / "bad.txt"
    bad.write_text("0 0\n1 one\n")
    r = run_cli("simulate", "--machine", "mesh:2", "--allocator", f"first_fit:curve={bad}", "--quiet")
    assert r.returncode == 2 and "line 2 of" in r.stderr and "bad.txt" in r.stderr


def test_simulate_json_has_locality_on_a_mesh():
    import json

    p = run_cli("simulate", "--machine", "mesh:16x8", "--allocator", "sorted_free_list:curve=snake", "--json", "--quiet")
    assert p.returncode == 0, p.stderr
    s = json.loads(p.stdout)
    assert s["mean_pairwise_l1"] == pytest.approx(4.2795155686115445)
    assert set(s["locality"]) >= {"linear_span", "ring_span", "bbox_cube_ratio", "components", "hop_bytes"}


def test_jobs_out_does_not_keep_every_jobs_nodes(tmp_path, monkeypatch):
    """The per-job table needs no node lists, so ``--jobs-out`` does not record them: memory stays bounded
    by the machine, not by the nodes the whole trace allocated (hypercube:24 with sizes ×4096 peaked at
    23 GB and was killed while it did)."""
    import topoalloc.api

    seen = []
    real = topoalloc.api.simulate

    def spy(*args, **kwargs):
        result = real(*args, **kwargs)
        seen.append(result.allocations)
        return result

    monkeypatch.setattr(topoalloc.api, "simulate", spy)
    out = tmp_path / "jobs.csv"
    assert main(["simulate", "--quiet", "--machine", "hypercube:8", "--allocator", "buddy", "--jobs-out", str(out)]) == 0
    assert seen == [None] and out.read_text().count("\n") == 18240
