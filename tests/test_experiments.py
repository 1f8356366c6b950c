"""Experiment specs and the results store (fast, in-process sweeps of small synthetic runs)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

pytest.importorskip("pyarrow")
pytest.importorskip("pandas")

from topoalloc.experiments import SpecError, load, load_spec, parse_spec, run_sweep  # noqa: E402
from topoalloc.experiments.store import Store  # noqa: E402

SMALL = {
    "name": "small",
    "metrics": ["utilization", "mean_wait", "jobs"],
    "fixed": {"synthetic": "poisson", "n_jobs": 150, "sizes": "uniform:1,16", "machine": "flat:32"},
    "grid": {"scheduler": ["fcfs", "easy"], "load": [0.5, 0.9]},
    "replications": 2,
}


def write(tmp_path: Path, text: str, name: str = "spec.toml") -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


# ---------------------------------------------------------------- spec validation: file, line, key


@pytest.mark.parametrize(
    "text, line, key, words",
    [
        ('name = "x"\n[grid]\nscheduler = ["fcfs"]\nalocator = ["flat"]\n', 4, "[grid] alocator", "unknown parameter"),
        ('[fixed]\nmachine = "flat:8"\nclean = "yes"\n', 3, "[fixed] clean", "not a bool"),
        ('[fixed]\nwork_multiple = -1.0\n', 2, "[fixed] work_multiple", "> 0"),
        ('colour = 1\n', 1, "colour", "unknown key"),
        ('[grid]\nscheduler = []\n', 2, "[grid] scheduler", "non-empty list"),
        ('[grid]\nscheduler = ["fcfs", "fcfs"]\n', 2, "[grid] scheduler", "listed twice"),
        ('[fixed]\nmachine = "flat:8"\n[grid]\nmachine = ["flat:4"]\n', 4, "[grid] machine", "fixed or varies"),
        ('[grid]\nsystem = [\n  {label = "a", machine = "flat:8"},\n  {machine = "flat:4"},\n]\n', 2, "[grid] system", "needs a label"),
        ('[grid]\nsystem = [\n  {label = "a", machine = "flat:8"},\n  {label = "b", machnie = "flat:4"},\n]\n', 4, "[grid] system.machnie", "unknown parameter"),
        ('[replications]\nmin = 3\nrel_ci = 1.5\nmetric = "mean_wait"\n', 3, "[replications] rel_ci", "between 0 and 1"),
        ('metrics = ["utilisation"]\n', 1, "metrics", "unknown metric 'utilisation'"),
        ('[grid]\nwork_multiple = {start = 2, stop = 1, step = 0.5}\n', 2, "[grid] work_multiple", "stop >= start"),
        ('[fixed]\nn_jobs = 10\n', 2, "[fixed] n_jobs", "without synthetic"),
        ('[grid\nx = 1\n', 1, "TOML", ""),
        # several sub-grids: the line is the bad key's, in its own [[grid]] block
        ('[[grid]]\nscheduler = ["fcfs"]\nmachine = ["flat:8"]\n[[grid]]\nscheduler = ["easy"]\nmachine = []\n', 6, "[grid] machine", "non-empty list"),
        ('[[grid]]\nscheduler = ["fcfs"]\n\n[[grid]]\nscheduler = ["easy"]\n\n[[grid]]\nscheduler = ["fcfs"]\nalocator = ["flat"]\n', 9, "[grid] alocator", "unknown parameter"),
        ('[fixed]\nmachine = "flat:8"\n[[grid]]\nscheduler = ["fcfs"]\n[[grid]]\nmachine = ["flat:4"]\n', 6, "[grid] machine", "fixed or varies"),
    ],
)
def test_spec_errors_name_file_line_and_key(tmp_path, text, line, key, words):
    with pytest.raises(SpecError) as e:
        load_spec(write(tmp_path, text, "bad.toml"))
    msg = str(e.value)
    assert msg.startswith(f"bad.toml, line {line}: {key}: "), msg
    assert words in msg


def test_missing_trace_and_bad_component_fail_before_running(tmp_path):
    spec = load_spec(write(tmp_path, '[fixed]\ntrace = "no-such-log.swf"\nmachine = "flat:8"\n'))
    with pytest.raises(SpecError, match=r"spec.toml, line 2: trace: trace 'no-such-log.swf' not found"):
        spec.cells()
    spec = load_spec(write(tmp_path, '[grid]\nmachine = ["flat:8", "mesh:4xq"]\n'))
    with pytest.raises(SpecError, match=r"spec.toml, line 2: machine:"):
        run_sweep(spec, tmp_path / "out", workers=1, progress=False)
    assert not (tmp_path / "out").exists()


def test_cells_are_the_product_and_keys_hash_everything():
    spec = parse_spec(SMALL)
    cells = spec.cells()
    assert len(cells) == 2 * 2 * 2 and len({c.key for c in cells}) == 8
    again = parse_spec(SMALL).cells()
    assert [c.key for c in cells] == [c.key for c in again]  # stable
    other = parse_spec(SMALL).cells(version="9.9.9")
    assert not {c.key for c in cells} & {c.key for c in other}  # the package version is in the key
    ints = parse_spec({**SMALL, "grid": {"scheduler": ["fcfs", "easy"], "load": [1, 0.9]}}).cells()
    floats = parse_spec({**SMALL, "grid": {"scheduler": ["fcfs", "easy"], "load": [1.0, 0.9]}}).cells()
    assert [c.key for c in ints] == [c.key for c in floats]  # 1 and 1.0 are one value


def test_trace_checksum_is_in_the_key(tmp_path):
    import gzip

    from topoalloc.workload import default_trace_path

    text = gzip.open(default_trace_path(), "rt").read()
    (tmp_path / "a.swf").write_text(text)
    (tmp_path / "b.swf").write_text(text.replace("\n1 ", "\n1 ", 1) + "\n")
    spec = parse_spec({"fixed": {"machine": "flat:128"}, "grid": {"trace": ["a.swf", "bundled"]}}, base_dir=tmp_path)
    a, bundled = spec.cells()
    assert a.params["trace_sha256"] == bundled.params["trace_sha256"]  # the same log, plain or gzip
    b = parse_spec({"fixed": {"machine": "flat:128", "trace": "b.swf"}}, base_dir=tmp_path).cells()[0]
    assert b.params["trace_sha256"] != a.params["trace_sha256"]


# ---------------------------------------------------------------- the store


def test_sweep_stores_each_cell_once_and_resumes(tmp_path):
    out = tmp_path / "out"
    r = run_sweep(parse_spec(SMALL), out, workers=1, progress=False)
    assert (r.total, r.ran, r.failed) == (8, 8, 0)
    df = load(out)
    assert len(df) == 8 and set(df["status"]) == {"ok"}
    assert {"scheduler", "load", "rep", "utilization", "mean_wait", "jobs", "seconds"} <= set(df.columns)
    assert df.attrs["metrics"] == ["jobs", "mean_wait", "utilization"]
    assert df.attrs["axes"] == ["scheduler", "load"]
    r = run_sweep(parse_spec(SMALL), out, workers=1, progress=False)
    assert (r.skipped, r.ran) == (8, 0)
    # a changed spec adds only the new cells
    bigger = {**SMALL, "grid": {"scheduler": ["fcfs", "easy", "conservative"], "load": [0.5, 0.9]}}
    r = run_sweep(parse_spec(bigger), out, workers=1, progress=False)
    assert (r.total, r.skipped, r.ran) == (12, 8, 4)
    df = load(out)
    assert len(df) == 12 and df["key"].is_unique


def test_error_cells_are_recorded_and_do_not_stop_the_sweep(tmp_path):
    spec = parse_spec({**SMALL, "grid": {"machine": ["flat:32", "flat:8"]}, "fixed": {**SMALL["fixed"], "machine": None} if False else {k: v for k, v in SMALL["fixed"].items() if k != "machine"}})
    out = tmp_path / "out"
    r = run_sweep(spec, out, workers=1, progress=False)
    assert r.ran == 4 and r.failed == 2  # sizes up to 16 never fit 8 processors
    df = load(out)
    bad = df[df["status"] == "error"]
    assert len(bad) == 2 and set(bad["machine"]) == {"flat:8"}
    assert all("16" in e or "fit" in e or "wider" in e for e in bad["error"])
    assert len(load(out, errors=False)) == 2
    # a re-run retries the failed cells only
    r = run_sweep(spec, out, workers=1, progress=False)
    assert (r.skipped, r.ran, r.failed) == (2, 2, 2)
    assert len(load(out)) == 4


def test_no_partial_files_and_stale_temporaries_are_cleared(tmp_path):
    out = tmp_path / "out"
    store = Store(out)
    stale = out / "cells" / ".abc.parquet.x.tmp.parquet"
    stale.write_bytes(b"half a file")
    with store.writing():
        pass
    assert not stale.exists()
    run_sweep(parse_spec(SMALL), out, workers=1, progress=False, compact=False)
    files = sorted(p.name for p in (out / "cells").iterdir())
    assert len(files) == 8 and all(n.endswith(".parquet") and not n.startswith(".") for n in files)


def test_one_writer_at_a_time(tmp_path):
    from topoalloc.errors import InvalidArgument

    store = Store(tmp_path / "out")
    with store.writing():
        with pytest.raises(InvalidArgument, match="another sweep holds its lock"):
            with Store(tmp_path / "out").writing():
                pass


def test_same_spec_same_bytes(tmp_path):
    """Determinism: the same spec (same seeds) gives byte-identical result files."""
    digests = []
    for run in ("a", "b"):
        out = tmp_path / run
        run_sweep(parse_spec(SMALL), out, workers=1, progress=False)
        files = sorted((out / "parts").glob("*.parquet")) + sorted((out / "cells").glob("*.parquet"))
        digests.append([(p.name, hashlib.sha256(p.read_bytes()).hexdigest()) for p in files])
    assert digests[0] == digests[1] and digests[0]


def test_compacted_and_loose_files_load_as_one_table(tmp_path):
    out = tmp_path / "out"
    run_sweep(parse_spec(SMALL), out, workers=1, progress=False, compact=False)
    before = load(out).drop(columns=["seconds"])
    assert Store(out).compact() == 8
    assert not list((out / "cells").glob("*.parquet"))
    after = load(out).drop(columns=["seconds"])
    assert before.equals(after)


def test_sequential_stopping_rule_adds_replications_until_the_interval_is_narrow(tmp_path):
    spec = parse_spec({**SMALL, "grid": {"load": [0.3]}, "replications": {"min": 2, "max": 6, "rel_ci": 0.02, "metric": "mean_wait"}, "metrics": ["mean_wait", "utilization"]})
    r = run_sweep(spec, tmp_path / "out", workers=1, progress=False)
    df = load(tmp_path / "out")
    assert 2 < len(df) <= 6 and r.rounds == len(df) - 1
    assert sorted(df["rep"]) == list(range(1, len(df) + 1))


def test_stopping_rule_watches_every_metric_of_its_list_and_per_cell_lists(tmp_path):
    """A list of metrics settles only when every one does; ``stop_metrics`` narrows it per cell; an unmeasured
    (all-NaN) metric does not hold a group back."""
    rule = {"min": 2, "max": 5, "rel_ci": 0.3}
    metrics = ["mean_wait", "utilization", "jobs", "window_packet_latency"]
    base = {**SMALL, "metrics": metrics}
    # utilization and jobs settle at once (jobs never varies); mean_wait at 1e-9 never does: every cell runs to max
    spec = parse_spec({**base, "grid": {"load": [0.5]}, "replications": {**rule, "rel_ci": 1e-9, "metric": ["utilization", "mean_wait"]}})
    run_sweep(spec, tmp_path / "all", workers=1, progress=False)
    assert len(load(tmp_path / "all")) == 5
    # the same rule, but these cells watch only jobs (and the packet latency a flat run never measures): the minimum
    spec = parse_spec({**base, "grid": {"run": [{"label": "a", "load": 0.5, "stop_metrics": ["jobs", "window_packet_latency"]}]},
                       "replications": {**rule, "rel_ci": 1e-9, "metric": ["utilization", "mean_wait"]}})
    run_sweep(spec, tmp_path / "some", workers=1, progress=False)
    assert len(load(tmp_path / "some")) == 2
    with pytest.raises(SpecError, match="'mean_response' is not among the metrics kept"):
        parse_spec({**base, "grid": {"run": [{"label": "a", "stop_metrics": ["mean_response"]}]}, "replications": {**rule, "metric": "jobs"}})
    with pytest.raises(SpecError, match="a metric name, or a list"):
        parse_spec({**base, "replications": {**rule, "metric": []}})


def test_two_grid_points_running_the_same_simulation_are_two_rows(tmp_path):
    """A labelled point in one sub-grid may run what a point of another runs (a bound of 8 among bounds, the default
    bound of 8 among loads): both get their rows, keyed apart by their labels."""
    spec = parse_spec({**SMALL, "replications": 1, "grid": [
        {"experiment": [{"label": "load"}], "load": [0.5, 0.7]},
        {"experiment": [{"label": "other", "load": 0.7}], "point": [{"label": 8}]},
    ]})
    cells = spec.cells()
    assert len(cells) == 3 and len({c.key for c in cells}) == 3
    assert cells[1].params == cells[2].params  # the same simulation ...
    run_sweep(spec, tmp_path / "out", workers=1, progress=False)
    df = load(tmp_path / "out")
    assert len(df) == 3 and sorted(df["experiment"]) == ["load", "load", "other"]  # ... in both rows
    a, b = df[(df["experiment"] == "load") & (df["load"] == 0.7)], df[df["experiment"] == "other"]
    assert a["mean_wait"].item() == b["mean_wait"].item() and b["point"].item() == 8


def test_job_tables(tmp_path):
    spec = parse_spec({**SMALL, "grid": {"load": [0.5]}, "replications": 1, "job_tables": True})
    run_sweep(spec, tmp_path / "out", workers=1, progress=False)
    import pandas as pd

    (key,) = load(tmp_path / "out")["key"]
    jobs = pd.read_parquet(tmp_path / "out" / "jobs" / f"{key}.parquet")
    assert len(jobs) == 150 and "wait" in jobs


def test_readme_example_spec_is_the_file_and_is_valid():
    from topoalloc.experiments.engine import check_components

    root = Path(__file__).resolve().parent.parent
    path = root / "docs" / "examples" / "backfilling.toml"
    assert path.read_text() in (root / "README.md").read_text()
    spec = load_spec(path)
    check_components(spec)
    assert spec.size == 3 * 2 * 5


def test_progress_bar_appears_once_there_is_work(monkeypatch):
    import sys

    from topoalloc.experiments.engine import _Bar

    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)
    bar = _Bar(0, "x", True)
    assert bar._bar is None
    bar.add_total(3)
    assert bar._bar is not None
    bar.advance(False)
    bar.advance(True)
    assert (bar.done, bar.failed, bar.total) == (2, 1, 3)
    bar.close()
