"""The benchmark scripts stay runnable: each compiles, and the one with a run-time limit refuses a bad one."""

from __future__ import annotations

import os
import py_compile
import subprocess
import sys

import pytest

from .conftest import ROOT

SCRIPTS = sorted((ROOT / "benchmarks").glob("*.py"))


@pytest.mark.parametrize("script", SCRIPTS, ids=[s.name for s in SCRIPTS])
def test_benchmark_script_compiles(script, tmp_path):
    py_compile.compile(str(script), cfile=str(tmp_path / "out.pyc"), doraise=True)


def test_bench_scaling_refuses_a_limit_that_is_not_positive():
    r = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_scaling.py"), "--limit", "0"], capture_output=True, text=True)
    assert r.returncode == 2
    assert "argument --limit: expected a positive number of seconds, got 0.0" in r.stderr


def test_bench_scaling_mean_queue_counts_the_jobs_waiting_at_each_arrival():
    """The queue the jobs sweep fits against: at each arrival, the jobs submitted by then and not started."""
    from .conftest import load_benchmark_script

    bs = load_benchmark_script("bench_scaling")
    # arrivals at 0, 0, 1, 7; starts at 0, 5, 5, 7: at 0 one waits (the second), at 1 two, at 7 none
    assert bs.mean_queue([0, 0, 1, 7], [0, 5, 5, 7]) == (1 + 1 + 2 + 0) / 4
    assert bs.mean_queue([1, 0], [3, 0]) == (0 + 1) / 2  # the order of the jobs does not matter
    assert bs.mean_queue([], []) == 0.0


def test_bench_scaling_fits_the_slope_of_a_power_law():
    from .conftest import load_benchmark_script

    bs = load_benchmark_script("bench_scaling")
    xs = [25_000, 60_000, 120_000, 243_306]
    assert bs.slope(xs, [3e-6 * x**1.25 for x in xs]) == pytest.approx(1.25)


def test_bench_scaling_refuses_a_plot_path_before_the_sweep(tmp_path):
    """--plot is checked before minutes of runs: a missing folder or another format is one line, exit 2."""
    script = str(ROOT / "benchmarks" / "bench_scaling.py")
    for bad, why in [(tmp_path / "no" / "x.png", "does not exist"), (tmp_path / "x.svg", "a file ending in .png"), (tmp_path, "not a folder")]:
        r = subprocess.run([sys.executable, script, "--only", "size", "--plot", str(bad)], capture_output=True, text=True, timeout=60)
        assert r.returncode == 2 and why in r.stderr and "Traceback" not in r.stderr and not r.stdout


def test_bench_scaling_times_every_point_of_the_jobs_sweep_alike():
    """A point under ``repeat_below`` seconds is the best of SHORT_REPEATS runs, one over it a single run, and the
    point says which (the jobs sweep sets the bound so that every point of a counting curve is timed alike)."""
    from .conftest import load_benchmark_script

    bs = load_benchmark_script("bench_scaling")
    spec = {"trace": "default", "jobs": 300, "machine": "flat:128", "scheduler": "easy", "locality": False}
    many = bs.one({**spec, "repeat_below": 1e9})
    once = bs.one({**spec, "repeat_below": 0.0})
    usual = bs.one(dict(spec))
    assert (many["runs"], once["runs"]) == (bs.SHORT_REPEATS, 1)
    assert usual["runs"] == bs.SHORT_REPEATS  # 300 jobs take well under the default bound of a second
    assert many["jobs"] == once["jobs"] == 300 and many["mean_wait"] == once["mean_wait"]
    assert bs.JOBS_REPEAT_BELOW >= 10  # above the counting curves' longest points (about 1.2 s on the whole log)


def test_bench_scaling_probes_take_the_median_of_interleaved_pairs(monkeypatch, capsys):
    """The probes' EASY verdicts are the median of per-pair ratios (flat EASY, then the allocator), and a
    conservative verdict divides by the median flat EASY run: one slow flat run cannot flip either."""
    from .conftest import load_benchmark_script

    bs = load_benchmark_script("bench_scaling")
    flat_times = iter([0.2, 0.2, 9.0, 0.2, 0.2] * 4)  # one flat run in five caught at a bad moment
    order = []

    def fake_run(spec):
        kind = "python" if spec.get("engine") == "python" else spec["allocator"] if spec["machine"].startswith("hypercube") else "flat"
        order.append((kind, spec["scheduler"]))
        cons = spec["scheduler"] == "conservative"
        if kind == "python":
            seconds = 2.0
        elif kind == "flat":
            seconds = 1.0 if cons else next(flat_times)
        else:
            seconds = 1.5 if cons else 0.5
        return {"seconds": seconds, "sim_seconds": seconds / 2, "changes": 1_000_000 if cons else None, "mb": 70.0, "jobs": 10, "mean_wait": 1.0}

    monkeypatch.setattr(bs, "run", fake_run)
    monkeypatch.setattr(bs, "EASY_ONLY", False)
    bs.probes()
    out = capsys.readouterr().out
    # EASY: per pair 0.5 / 0.2 = 2.5 four times in five (0.06 once): median 2.5, met; conservative 1.5 / 0.2 = 7.5, met
    assert out.count("2.5 x flat (kernel; median of 5 interleaved pairs, 0.06 .. 2.50)") == 4
    assert out.count("7.5 x flat (kernel, its median run)") == 4
    assert "MISSED" not in out.split("general engine")[0]
    assert out.count(": met / met") == 8
    # flat conservative, a reference: 1.0 / 0.2; each conservative run's plan changes and time per change
    assert "-> 5.0 x flat EASY; reservations made or moved 1,000,000, 0.50 us of simulate per change" in out
    assert out.count("reservations made or moved 1,000,000, 0.75 us of simulate per change") == 4
    assert order.count(("flat", "conservative")) == 1
    # pairs interleaved: flat, allocator, flat, allocator ...
    buddy = [k for k in order if k != ("python", "easy")][: 2 * bs.PAIRS]
    assert buddy == [("flat", "easy"), ("buddy", "easy")] * bs.PAIRS
    # the AFL on the sizes as logged, against flat EASY on the general engine, with no bar: 0.5 / 2.0
    assert "hypercube:7 afl easy, sizes as logged (general engine)" in out
    assert "-> 0.2 x flat EASY (general engine); no bar" in out


def test_bench_scaling_plot_draws_the_plan_changes_in_a_third_panel(tmp_path, monkeypatch):
    """The jobs sweep's conservative plan changes go to their own panel with a slope-1 guide; time curves and the
    size sweep keep theirs; a sweep without changes leaves that panel empty (no legend), and still writes the PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from .conftest import load_benchmark_script

    bs = load_benchmark_script("bench_scaling")
    drawn = {}
    real = plt.subplots

    def spy(*a, **kw):
        fig, axes = real(*a, **kw)
        drawn["axes"] = axes
        return fig, axes

    monkeypatch.setattr(plt, "subplots", spy)
    xs = [25_000, 60_000, 120_000, 243_306]
    curves = {"flat:1152 easy": (xs, [0.01, 0.02, 0.04, 0.08]), "flat:1152 conservative": (xs, [0.03, 0.07, 0.16, 0.5]),
              "changes flat:1152 conservative": (xs, [82_346, 193_393, 423_149, 1_279_728]), "NASA, mesh size": ([1024, 4096], [0.1, 0.2])}
    bs.plot(curves, str(tmp_path / "s.png"))
    assert (tmp_path / "s.png").stat().st_size > 10_000
    labels = [[line.get_label() for line in ax.get_lines()] for ax in drawn["axes"]]
    assert labels[0] == ["flat:1152 easy", "flat:1152 conservative", "slope 1"]
    assert labels[1] == ["NASA, mesh size"]
    assert labels[2] == ["flat:1152 conservative", "slope 1"]
    bs.plot({k: v for k, v in curves.items() if not k.startswith("changes")}, str(tmp_path / "t.png"))
    assert [line.get_label() for line in drawn["axes"][2].get_lines()] == [] and drawn["axes"][2].get_legend() is None


def test_bench_scaling_orders_reads_each_order_against_flat_easy_and_fcfs(monkeypatch, capsys):
    """The orders group runs each keyed case in FCFS, SJF and LPT order, each beside flat EASY on as many nodes in the
    same order (the compiled kernel, PAIRS runs), and reads it against both; a failed run is shown, not divided."""
    from .conftest import load_benchmark_script

    bs = load_benchmark_script("bench_scaling")
    specs = []

    def fake_run(spec):
        specs.append(spec)
        if spec["allocator"] == "ep" and spec["scheduler"] == "easy:order=lpt":
            return {"error": "not finished within 900 s (--limit): stopped", "mb": 50.0}
        seconds = 0.2 if spec["allocator"] == "flat" else {"easy": 0.4, "easy:order=sjf": 0.5, "easy:order=lpt": 1.0}[spec["scheduler"]]
        return {"seconds": seconds, "sim_seconds": seconds, "mb": 70.0, "jobs": 10, "mean_wait": 1.0}

    monkeypatch.setattr(bs, "run", fake_run)
    bs.orders()
    out = capsys.readouterr().out
    assert len(specs) == 3 * (bs.PAIRS + 1) * len(bs.ORDERS)
    flats = [s for s in specs if s["allocator"] == "flat"]
    assert {s["engine"] for s in flats} == {"compiled"} and {s["scheduler"] for s in flats} == {"easy", "easy:order=sjf", "easy:order=lpt"}
    assert {s["scale_sizes"] for s in specs if s["machine"] in ("tpu:v4", "flat:4096")} == {4096 / 128}
    assert all(s.get("engine") == "python" for s in specs if s["allocator"] == "free_list")
    assert out.count("2.0 x flat EASY in the same order (0.20 s, median of 5; bar 3: met)\n") == len(bs.ORDERS)  # (FCFS: no own ratio)
    assert out.count("2.5 x flat EASY in the same order (0.20 s, median of 5; bar 3: met), 1.25 x its FCFS run") == len(bs.ORDERS)
    assert out.count("5.0 x flat EASY in the same order (0.20 s, median of 5; bar 3: MISSED), 2.50 x its FCFS run") == len(bs.ORDERS) - 1
    assert "torus:4x4x8 ep easy:order=lpt" in out and "FAILED: not finished within 900 s" in out


def test_bench_scaling_center_pairs_the_numpy_path_with_the_compiled_search(monkeypatch, capsys):
    """The center group runs each center allocator with every metric, numpy path then compiled search, in interleaved
    pairs on the same jobs, and reads the median ratio and whether every run gave the same mean wait."""
    from .conftest import load_benchmark_script

    bs = load_benchmark_script("bench_scaling")
    specs = []

    def fake_run(spec):
        specs.append(spec)
        numpy_path = spec.get("center_compiled") is False
        l1 = 2.5 if spec["allocator"] == "mm" and not numpy_path else 2.25  # (a planted difference: mm's placements differ)
        return {"seconds": 4.0 if numpy_path else 1.0, "sim_seconds": 1.0, "mb": 70.0, "jobs": 10, "mean_wait": 1.0, "pairwise_l1": l1}

    monkeypatch.setattr(bs, "run", fake_run)
    bs.center()
    out = capsys.readouterr().out
    n = bs.PAIRS // 2 + 1
    assert len(specs) == 3 * 2 * n and [s.get("center_compiled", True) for s in specs[:4]] == [False, True, False, True]
    assert all(s["jobs"] == bs.CENTER_JOBS and s["machine"] == "mesh:48x24" and "locality" not in s for s in specs)
    assert out.count("compiled / numpy 0.25") == 3
    assert out.count("the same mean wait and mean pairwise L1 (2.25) in every run: True") == 2
    assert out.count("the same mean wait and mean pairwise L1 (2.5) in every run: False") == 1


def test_bench_scaling_one_runs_the_center_allocators_numpy_path_when_asked(monkeypatch):
    import topoalloc.alloc.center as center

    from .conftest import load_benchmark_script

    bs = load_benchmark_script("bench_scaling")
    monkeypatch.setattr(center, "USE_COMPILED", True)
    spec = {"trace": "default", "jobs": 50, "machine": "mesh:8x4", "allocator": "mc1x1", "scheduler": "easy", "clean": True}
    compiled = bs.one(dict(spec))
    assert compiled["jobs"] > 0 and center.USE_COMPILED
    reference = bs.one({**spec, "center_compiled": False})
    assert not center.USE_COMPILED and reference["pairwise_l1"] == compiled["pairwise_l1"] > 0


def test_bench_scaling_subcube_pairs_the_numpy_recognition_with_the_compiled_one(monkeypatch, capsys):
    """The subcube group runs the AFL on the sizes as logged on two logs, numpy recognition then compiled, in
    interleaved pairs on the same jobs, and says whether every run gave the same schedule."""
    from .conftest import load_benchmark_script

    bs = load_benchmark_script("bench_scaling")
    specs = []

    def fake_run(spec):
        specs.append(spec)
        numpy_path = spec.get("subcube_compiled") is False
        wait = 7.0 if spec["machine"] == "hypercube:11" and not numpy_path else 6.0  # (a planted difference)
        return {"seconds": 4.0 if numpy_path else 1.0, "sim_seconds": 1.0, "mb": 70.0, "jobs": 10, "mean_wait": wait, "pairwise_l1": 2.0}

    monkeypatch.setattr(bs, "run", fake_run)
    bs.subcube()
    out = capsys.readouterr().out
    n = bs.PAIRS // 2 + 1
    assert len(specs) == 2 * 2 * n and [s.get("subcube_compiled", True) for s in specs[:4]] == [False, True, False, True]
    assert all(s["jobs"] == bs.SUBCUBE_JOBS and s["allocator"] == "afl" and "engine" not in s for s in specs)
    assert out.count("compiled / numpy 0.25") == 2
    assert "CTC-SP2 hypercube:9 afl" in out and "in every run: True" in out and "in every run: False" in out


def test_bench_scaling_one_runs_the_numpy_recognition_when_asked(monkeypatch):
    import topoalloc.alloc.hypercube.allocators as subcubes

    from .conftest import load_benchmark_script

    bs = load_benchmark_script("bench_scaling")
    monkeypatch.setattr(subcubes, "USE_COMPILED", True)
    spec = {"trace": "default", "jobs": 300, "machine": "hypercube:7", "allocator": "afl", "scheduler": "easy", "clean": True,
            "scale_sizes": 0.75}
    compiled = bs.one(dict(spec))
    assert compiled["jobs"] > 0 and subcubes.USE_COMPILED
    reference = bs.one({**spec, "subcube_compiled": False})
    assert not subcubes.USE_COMPILED and reference["mean_wait"] == compiled["mean_wait"]


def test_bench_scaling_slices_compares_with_flat_runs_on_as_many_nodes(monkeypatch, capsys):
    """The slices group runs each case and flat EASY and conservative on a flat machine of the machine's nodes,
    the same jobs scaled from SDSC-SP2's 128 processors, and reads the case against flat EASY."""
    from .conftest import load_benchmark_script

    bs = load_benchmark_script("bench_scaling")
    specs = []

    def fake_run(spec):
        specs.append(spec)
        cons = spec["scheduler"] == "conservative"
        seconds = (4.0 if cons else 0.5) if spec["allocator"] != "flat" else (1.0 if cons else 0.2)
        return {"seconds": seconds, "sim_seconds": seconds / 2, "changes": 1_000_000 if cons else None, "mb": 70.0, "jobs": 10, "mean_wait": 1.0}

    monkeypatch.setattr(bs, "run", fake_run)
    bs.slices()
    out = capsys.readouterr().out
    assert len(specs) == 4 * len(bs.SLICES)
    tpu = [s for s in specs if s["machine"] in ("tpu:v4", "flat:4096")]
    assert {s["scale_sizes"] for s in tpu} == {4096 / 128} and {s["jobs"] for s in specs} == {bs.SLICES_JOBS}
    assert out.count("EASY 2.5 x flat EASY (bar 3: met), conservative 20.0 x (bar 10: MISSED)") == len(bs.SLICES)
    assert out.count("flat conservative: reservations made or moved 1,000,000, 0.50 us of simulate per change") == len(bs.SLICES)


def test_bench_families_slurm_conservative_reads_every_placement_under_both_schedulers(monkeypatch, capsys):
    """The Slurm group under conservative runs topology/block (twice: blocks to the whole machine and to half of it),
    topology/tree and any free nodes under EASY and conservative on a real log.  With a block of the whole machine a
    job fits whenever enough nodes are free under all three (the block allocator is then a counting one), so their
    three conservative schedules are the same, mean waits and plan changes; the half-machine blocks' plan (on free
    nodes per base block) runs too."""
    from .conftest import load_benchmark_script, shared_trace

    shared_trace("SDSC-SP2-1998-4.2-cln.swf.gz")
    bf = load_benchmark_script("bench_families")
    monkeypatch.setattr(bf, "LOGS", [("SDSC-SP2", "SDSC-SP2-1998-4.2-cln.swf.gz")])
    bf.slurm_conservative(400)
    rows = [line.split("|")[1:-1] for line in capsys.readouterr().out.splitlines() if line.startswith("| SDSC-SP2")]
    assert [r[1].strip() for r in rows] == ["topology/block", "topology/block, blocks to 144", "topology/tree", "any free nodes"]
    whole = [rows[0], *rows[2:]]
    assert len({(r[6], r[7]) for r in whole}) == 1 and int(rows[0][7].replace(",", "")) > 400  # mean wait, plan changes
    assert int(rows[1][7].replace(",", "")) > 400


def test_sweep_logs_compares_the_engines_cell_by_cell(tmp_path):
    """``sweep_logs.py --compare`` on the bundled NASA log: a cell per allocator, ``=`` where the compiled kernel and
    the general engine give every job the same start and nodes, exit status 0."""
    import shutil

    from topoalloc.workload import default_trace_path

    shutil.copy(default_trace_path(), tmp_path / "NASA-iPSC-1993-3.1-cln.swf.gz")
    r = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "sweep_logs.py"), "--compare", "--log", "NASA-iPSC-1993-3.1-cln.swf",
                        "--allocator", "buddy", "--allocator", "mbs", "--allocator", "flat", "--jobs", "80", "--workers", "1",
                        "--scheduler", "conservative"], capture_output=True, text=True, env={**os.environ, "TOPOALLOC_TRACES": str(tmp_path)})
    assert r.returncode == 0, r.stdout + r.stderr
    assert "| `buddy` | = |" in r.stdout and "| `mbs` | = |" in r.stdout and "| `flat` | = |" in r.stdout, r.stdout
    assert "3 runs: 0 different or failed" in r.stdout
    # without --compare: the whole log timed, a cell its seconds
    r = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "sweep_logs.py"), "--log", "NASA-iPSC-1993-3.1-cln.swf",
                        "--allocator", "flat", "--workers", "1"], capture_output=True, text=True, env={**os.environ, "TOPOALLOC_TRACES": str(tmp_path)})
    assert r.returncode == 0, r.stdout + r.stderr
    cell = r.stdout.split("| `flat` | ")[1].split(" |")[0]
    assert float(cell) > 0, r.stdout


def test_sweep_logs_cells_say_what_happened():
    """A cell: seconds, refused, stopped or failed; with --compare, ``=`` only where both engines answered alike."""
    from .conftest import load_benchmark_script

    sw = load_benchmark_script("sweep_logs")
    same = {"sha256": "ab", "mean_wait": 1.0}
    assert sw.verdict({"auto": same, "python": dict(same), "seconds": 1.0}, True, 60) == "="
    assert sw.verdict({"auto": same, "python": {**same, "sha256": "cd"}, "seconds": 1.0}, True, 60) == "DIFFERENT"
    assert sw.verdict({"auto": {"refused": "x"}, "python": {"refused": "x"}, "seconds": 1.0}, True, 60) == "= (refused)"
    assert sw.verdict({"auto": {"refused": "x"}, "python": {"refused": "y"}, "seconds": 1.0}, True, 60) == "DIFFERENT"
    assert sw.verdict({"auto": {"refused": "x"}, "python": same, "seconds": 1.0}, True, 60) == "DIFFERENT"
    assert sw.verdict({"auto": {}, "seconds": 2.25}, False, 60) == "2.2"
    assert sw.verdict({"auto": {"refused": "x"}, "seconds": 2.0}, False, 60) == "refused"
    assert sw.verdict({"stopped": True}, False, 60) == "> 60 s"
    assert sw.verdict({"failed": "boom"}, True, 60) == "FAILED"
    # every registered allocator is swept or named as one for machines of other kinds
    import topoalloc  # noqa: F401
    from topoalloc.registry import ALLOCATORS

    assert set(ALLOCATORS.names()) == set(sw.FAMILY) | sw.OTHER_MACHINES


def test_sweep_logs_refuses_bad_arguments():
    script = str(ROOT / "benchmarks" / "sweep_logs.py")
    for args, says in ((["--limit", "0"], "--limit"), (["--workers", "0"], "--workers"), (["--jobs", "0"], "--jobs"),
                       (["--scheduler", "easy:order=zz"], "order one of fcfs")):
        r = subprocess.run([sys.executable, script, *args], capture_output=True, text=True)
        assert r.returncode == 2 and says in r.stderr, r.stderr


def test_sweep_logs_stops_at_ctrl_c(tmp_path):
    """Ctrl-C stops the runs under way and drops the rest: one line, exit 130, soon."""
    import shutil
    import signal
    import time

    from topoalloc.workload import default_trace_path

    shutil.copy(default_trace_path(), tmp_path / "NASA-iPSC-1993-3.1-cln.swf.gz")
    p = subprocess.Popen([sys.executable, str(ROOT / "benchmarks" / "sweep_logs.py"), "--log", "NASA-iPSC-1993-3.1-cln.swf",
                          "--workers", "1", "--scheduler", "conservative"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, env={**os.environ, "TOPOALLOC_TRACES": str(tmp_path)})
    assert p.stdout is not None
    p.stdout.readline()  # the sweep's first line: its runs are starting
    time.sleep(1.0)
    p.send_signal(signal.SIGINT)
    t0 = time.monotonic()
    out, err = p.communicate(timeout=60)
    assert time.monotonic() - t0 < 20, "the sweep went on after Ctrl-C"
    assert p.returncode == 130, err
    assert err.strip().splitlines()[-1] == "sweep_logs: interrupted", err
    assert "runs:" not in out  # no table: it stopped
