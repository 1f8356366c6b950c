"""The HTML report: self-contained, figures beside it, and checked in headless Chromium."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

pytest.importorskip("matplotlib")
pytest.importorskip("pyarrow")

from topoalloc.cli import main  # noqa: E402
from topoalloc.experiments import parse_spec, run_sweep, write_report  # noqa: E402

SPEC = {
    "name": "bands",
    "description": "EASY against FCFS on a small synthetic stream",
    "metrics": ["utilization", "mean_wait", "mean_bounded_slowdown"],
    "fixed": {"synthetic": "poisson", "n_jobs": 300, "sizes": "uniform:1,16", "machine": "flat:32"},
    "grid": {"scheduler": ["fcfs", "easy"], "load": [0.3, 0.5, 0.7, 0.9]},
    "replications": 3,
}


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("rep") / "out"
    bad = {**SPEC, "grid": {**SPEC["grid"], "machine": ["flat:32", "flat:8"]}, "fixed": {k: v for k, v in SPEC["fixed"].items() if k != "machine"}}
    run_sweep(parse_spec(bad), out, workers=1, progress=False, command="topoalloc sweep bands.toml --out out")
    return write_report(out)


def test_report_is_self_contained_with_figures_beside_it(report):
    text = report.read_text()
    assert text.startswith("<!DOCTYPE html>")
    assert not re.search(r"""(src|href)\s*=\s*['"]?(https?:|//)""", text)  # nothing fetched from anywhere
    assert "<link" not in text
    imgs = re.findall(r"<img [^>]*src='data:image/png;base64,", text)
    figs = sorted((report.parent / "figures").iterdir())
    assert imgs and len([p for p in figs if p.suffix == ".png"]) == len(imgs) == len([p for p in figs if p.suffix == ".svg"])
    assert all(p.stat().st_size > 1000 for p in figs)
    assert "95 % confidence interval" in text
    assert "Failed cells" in text and "flat:8" in text
    assert "topoalloc sweep bands.toml --out out" in text  # the exact command
    assert "topoalloc</th>" in text and "distributed</th>" in text  # versions


def test_report_command(tmp_path, report, capsys):
    target = tmp_path / "elsewhere.html"
    assert main(["report", str(report.parent), "--out", str(target)]) == 0
    assert target.stat().st_size > 10_000
    assert main(["report", str(tmp_path)]) == 2
    assert "a results folder written by topoalloc sweep" in capsys.readouterr().err


def _chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    pytest.skip("headless Chromium not installed (Debian: apt-get install -y chromium); CI installs it")


def _run_chromium(args: list[str], url: str) -> tuple[str, str]:
    exe = _chromium()
    cmd = [exe, "--headless", "--no-sandbox", "--disable-gpu", "--enable-logging=stderr", "--v=0", "--virtual-time-budget=5000", *args, url]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    return p.stdout, p.stderr


def _console(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if ":CONSOLE" in line or "Uncaught" in line]


def test_console_capture_works(tmp_path):
    """The check below would see a console error (a negative control)."""
    page = tmp_path / "bad.html"
    page.write_text("<html><body><script>console.error('broken figure')</script></body></html>")
    _, err = _run_chromium(["--dump-dom"], page.as_uri())
    assert any("broken figure" in line for line in _console(err))


def test_report_in_headless_chromium(report, tmp_path):
    dom, err = _run_chromium(["--dump-dom"], report.as_uri())
    assert _console(err) == []
    m = re.search(r'data-figures="(\d+)/(\d+)"', dom)
    assert m, "the page's load handler did not run"
    assert m.group(1) == m.group(2) and int(m.group(2)) >= 2  # every figure decoded and displayed
    shot = tmp_path / "shot.png"
    _run_chromium([f"--screenshot={shot}", "--window-size=1200,1800", "--hide-scrollbars"], report.as_uri())
    from PIL import Image

    img = Image.open(shot).convert("L")
    hist = img.histogram()
    assert img.size == (1200, 1800)
    assert max(hist) < 0.97 * sum(hist)  # not one flat colour
    assert sum(1 for h in hist if h) > 20  # text and lines: many grey levels


def test_sweep_with_report(tmp_path):
    spec = tmp_path / "s.toml"
    spec.write_text('metrics = ["utilization"]\n[fixed]\nsynthetic = "poisson"\nn_jobs = 100\nsizes = "uniform:1,8"\nmachine = "flat:16"\n[grid]\nload = [0.3, 0.6]\n')
    assert main(["sweep", str(spec), "--out", str(tmp_path / "o"), "--workers", "1", "--quiet", "--report"]) == 0
    text = (tmp_path / "o" / "report.html").read_text()
    assert "utilization against load" in text and "--report" in text  # the figure and the exact command
    assert (tmp_path / "o" / "figures").is_dir()
