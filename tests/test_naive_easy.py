"""The naive EASY loop of ``benchmarks/naive_easy.py`` gives every job the start time topoalloc gives it.

The benchmark that compares topoalloc's flat EASY with that loop is only
meaningful if both compute the same schedule; this pins it on the bundled
trace and on a 5,000-job prefix of CTC-SP2 (when the shared traces are
present), under both engines (the compiled kernel when it is built, and the
general engine).
"""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest

from topoalloc import simulate
from topoalloc.workload import default_trace_path, read_swf

from .conftest import load_benchmark_script, shared_trace


def _prefix(src: Path, dst: Path, jobs: int) -> Path:
    """The header and the first ``jobs`` job lines of ``src``, as a plain SWF file."""
    opener = gzip.open if src.suffix == ".gz" else open
    out, n = [], 0
    with opener(src, "rt") as fh:
        for line in fh:
            if line.lstrip().startswith(";") or not line.strip():
                out.append(line)
                continue
            if n == jobs:
                break
            out.append(line)
            n += 1
    dst.write_text("".join(out))
    return dst


def _check_same(path: Path, processors: int) -> None:
    naive = load_benchmark_script("naive_easy")
    jobs, _ = naive.read(str(path), clean=True, n=processors)
    want = np.array(naive.easy(jobs, processors), dtype=np.float64)
    submits = np.array([j[0] for j in jobs])
    for engine in ("auto", "python"):
        r = simulate(read_swf(path), machine=f"flat:{processors}", allocator="flat", scheduler="easy", clean=True, locality=False, engine=engine)
        assert len(r.start) == len(want), f"{engine}: {len(r.start)} jobs simulated, the naive loop has {len(want)}"
        order = np.argsort(np.asarray(r.workload.submit), kind="stable")
        assert np.array_equal(np.asarray(r.workload.submit)[order], submits)
        got = np.asarray(r.start)[order]
        bad = np.flatnonzero(got != want)
        assert bad.size == 0, f"{engine}: {bad.size} jobs start at other times, first job #{bad[0]}: {got[bad[0]]} vs naive {want[bad[0]]}"


def test_naive_easy_equals_topoalloc_on_bundled_trace() -> None:
    path = Path(default_trace_path())
    _check_same(path, 128)


def test_naive_easy_equals_topoalloc_on_ctc_prefix(tmp_path: Path) -> None:
    path = _prefix(shared_trace("CTC-SP2-1996-3.1-cln.swf.gz"), tmp_path / "ctc5000.swf", 5000)
    _check_same(path, 338)


@pytest.mark.slow
def test_naive_easy_equals_topoalloc_on_sdsc_blue_prefix(tmp_path: Path) -> None:
    path = _prefix(shared_trace("SDSC-BLUE-2000-4.2-cln.swf.gz"), tmp_path / "blue20000.swf", 20000)
    _check_same(path, 1152)
