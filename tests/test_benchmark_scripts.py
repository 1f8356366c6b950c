"""The benchmark scripts stay runnable: each compiles, and the one with a run-time limit refuses a bad one."""

from __future__ import annotations

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
