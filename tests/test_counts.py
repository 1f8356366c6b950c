"""The command line's lean path (:mod:`topoalloc.counts`): flat runs over counts, without numpy.

The lean path is a shortcut, so the property is simple: for every command
and every input, ``topoalloc simulate`` prints the same bytes on stdout and
stderr and exits with the same status whether the lean path may run or not.
Where it declines (returns ``None``), the general path runs and that holds
trivially; the tests below also check that it does take the plain runs it
is meant for, and that those runs never load numpy.
"""

from __future__ import annotations

import gzip
import io
import os
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from topoalloc import cli, counts
from topoalloc.workload import default_trace_path

from .conftest import shared_trace


def _main(argv: list[str], lean: bool, monkeypatch: pytest.MonkeyPatch) -> tuple[int, str, str, bool]:
    """Exit status, stdout, stderr of ``topoalloc argv``, and whether the lean path gave the result."""
    took: list[bool] = []
    real = counts.run

    def spy(*args: object, **kwargs: object) -> object:
        got = real(*args, **kwargs) if lean else None  # type: ignore[arg-type]
        took.append(got is not None)
        return got

    out, err = io.StringIO(), io.StringIO()
    with monkeypatch.context() as m:
        m.setattr(counts, "run", spy)
        with redirect_stdout(out), redirect_stderr(err):
            code = cli.main(argv)
    return code, out.getvalue(), err.getvalue(), any(took)


def _same(argv: list[str], monkeypatch: pytest.MonkeyPatch) -> bool:
    """Assert both paths give the same command output; return whether the lean path took the run."""
    lean = _main(argv, True, monkeypatch)
    general = _main(argv, False, monkeypatch)
    assert lean[:3] == general[:3], f"{argv}: the lean path and the general path differ"
    return lean[3]


ARGS = [
    [],
    ["--json"],
    ["--scheduler", "fcfs", "--json"],
    ["--scheduler", "conservative"],
    ["--clean", "--json"],
    ["--machine", "flat:64", "--clean", "--json"],
    ["--machine", "flat:64", "--drop-wider", "--fill-size", "--cap-runtime"],
    ["--machine", "flat:100", "--clean", "--estimate", "exact", "--quiet"],
    ["--machine", "flat:128", "--clean", "--estimate", "exact-all", "--json"],
    ["--drop-nonpositive-runtime", "--drop-no-size", "--scheduler", "fcfs"],
]


@pytest.mark.parametrize("extra", ARGS, ids=[" ".join(a) or "default" for a in ARGS])
def test_lean_path_equals_the_general_path_on_the_bundled_trace(extra: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    assert _same(["simulate", *extra], monkeypatch), "the lean path declined a plain flat run"


@pytest.mark.parametrize("extra", [["--machine", "mesh:16x8"], ["--allocator", "flat:probe=counting"], ["--scheduler", "easy:order=sjf"], ["--round-pow2"], ["--work-multiple", "2"], ["--machine", "flat:0128"]])
def test_lean_path_declines_what_it_does_not_do(extra: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    assert not _same(["simulate", "--json", *extra], monkeypatch)


@pytest.mark.parametrize("name,procs", [("CTC-SP2-1996-3.1-cln.swf.gz", 338), ("SDSC-BLUE-2000-4.2-cln.swf.gz", 1152), ("KTH-SP2-1996-2.1-cln.swf", 100)])
def test_lean_path_equals_the_general_path_on_archive_logs(name: str, procs: int, monkeypatch: pytest.MonkeyPatch) -> None:
    path = str(shared_trace(name))
    assert _same(["simulate", "--trace", path, "--machine", f"flat:{procs}", "--clean", "--json"], monkeypatch)
    assert _same(["simulate", "--trace", path, "--clean", "--scheduler", "conservative"], monkeypatch)


def test_lean_run_loads_no_numpy(tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "from topoalloc.cli import main\n"
        "assert main(['simulate', '--clean', '--json', '--quiet']) == 0\n"
        "assert 'numpy' not in sys.modules, sorted(m for m in sys.modules if m.startswith('numpy'))[:3]\n"
    )
    got = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path)
    assert got.returncode == 0, got.stderr
    assert '"jobs": 18066' in got.stdout


def test_importing_the_package_loads_no_numpy_and_registries_fill_on_first_use(tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "import topoalloc\n"
        "from topoalloc.registry import ALLOCATORS, METRICS\n"
        "assert 'numpy' not in sys.modules\n"
        "assert 'flat' in ALLOCATORS and 'mean_wait' in METRICS.names()\n"
        "assert topoalloc.simulate is topoalloc.api.simulate and 'simulate' in dir(topoalloc)\n"
        "from topoalloc.sched import EASY\n"
        "assert EASY.__name__ == 'EASY'\n"
    )
    got = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path)
    assert got.returncode == 0, got.stderr


def test_lean_constants_are_the_general_paths() -> None:
    from topoalloc.api import make_scheduler
    from topoalloc.registry import METRICS, SCHEDULERS
    from topoalloc.sched.fastpath import _KINDS
    from topoalloc.workload.clean import DROPS, FILTERS
    from topoalloc.workload.core import Workload
    from topoalloc.workload.steps import FILTER_HELP, REASONS

    for name, (spec, kind) in counts.SCHEDULER_SPECS.items():
        sched = make_scheduler(name)
        assert SCHEDULERS.canonical(name) == spec
        assert _KINDS[type(sched)] == kind
    assert counts.METRIC_UNITS == {name: METRICS.create(name).unit for name in METRICS.names()}
    assert FILTER_HELP == {name: (fn.__doc__ or "").strip().splitlines()[0] for name, fn in FILTERS.items()}
    w = Workload(job_id=[1], submit=[0], run=[1], size=[1], requested_time=[-1])
    assert {name: fn(w, 7)[1] for name, fn in DROPS.items()} == {name: REASONS[name].format(nodes=7) for name in DROPS}


# ------------------------------------------------------------------ any input

_FIELD = st.one_of(
    st.integers(-2, 40).map(str),
    st.sampled_from(["-1", "0", "1.5", "3.0", "1e3", "9007199254740993", "1e300", "x", "-0"]),
)
_LINE = st.one_of(
    st.lists(_FIELD, min_size=18, max_size=18).map(" ".join),
    st.builds(lambda s, r, p, q: f"{s} {s} 0 {r} {p} -1 -1 {p} {q} -1 1 1 1 1 1 -1 -1 -1", st.integers(0, 50), st.integers(-1, 30), st.integers(-1, 12), st.integers(-1, 40)),
    st.sampled_from(["; a comment", "", "1 2 3", "  ", "1\t2"]),
)


@st.composite
def swf_files(draw: st.DrawFn) -> tuple[bytes, bool]:
    """An SWF file (and whether to gzip it): mostly plain traces in submit order, with missing and odd
    values; sometimes also a bad or unusual line, shuffled lines or carriage returns."""
    header = draw(st.sampled_from(["; MaxProcs: 8\n", "; MaxProcs: 8\n; MaxNodes: 4\n", "; Note: none\n", "", "; MaxProcs: 0\n; MaxNodes: 6\n", "\n; MaxProcs: 7\n  \n"]))
    rows = draw(st.lists(st.tuples(st.integers(0, 9), st.integers(-1, 30), st.integers(-1, 10), st.integers(-1, 10), st.integers(-1, 40)), max_size=25))
    lines, t = [], 0
    for k, (gap, run, alloc, req, est) in enumerate(rows):
        t += gap
        lines.append(f"{k + 1} {t} 0 {run} {alloc} -1 -1 {req} {est} -1 1 1 1 1 1 -1 -1 -1")
    if draw(st.integers(0, 3)) == 0:  # something a plain reader may refuse or warn about
        for _ in range(draw(st.integers(1, 3))):
            lines.insert(draw(st.integers(0, len(lines))), draw(_LINE))
    if draw(st.integers(0, 5)) == 0:  # submit times backwards, ids repeated
        lines = draw(st.permutations(lines))
    text = header + "\n".join(lines) + ("\n" if draw(st.booleans()) else "")
    if draw(st.integers(0, 5)) == 0:
        text = text.replace("\n", "\r\n", draw(st.integers(0, 1)))
    return text.encode("ascii"), draw(st.booleans())


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(f=swf_files(), extra=st.sampled_from([["--clean"], [], ["--machine", "flat:6", "--clean"], ["--machine", "flat:9", "--fill-size", "--drop-wider"], ["--clean", "--scheduler", "conservative", "--estimate", "exact"]]), block=st.sampled_from([16, 64, 1 << 16]))
def test_lean_path_equals_the_general_path_on_any_trace(f: tuple[bytes, bool], extra: list[str], block: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data, zipped = f
    path = tmp_path / ("t.swf.gz" if zipped else "t.swf")
    path.write_bytes(gzip.compress(data, mtime=0) if zipped else data)
    monkeypatch.setattr(counts, "BLOCK", block)  # blocks of a few lines: their seams are tested too
    _same(["simulate", "--trace", str(path), "--json", *extra], monkeypatch)


def test_lean_path_takes_plain_traces_across_block_seams(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lines = [f"{k + 1} {3 * k} 0 {k % 17 + 1} 4 -1 -1 {k % 9 + 1} {k % 5 * 7 - 1} -1 1 1 1 1 1 -1 -1 -1" for k in range(300)]
    text = "; MaxProcs: 12\n;\n" + "\n".join(lines) + "\n"
    for name, data in (("p.swf", text.encode()), ("g.swf.gz", gzip.compress(text.encode(), mtime=0))):
        path = tmp_path / name
        path.write_bytes(data)
        for block in (7, 100, 1 << 16):
            monkeypatch.setattr(counts, "BLOCK", block)
            assert _same(["simulate", "--trace", str(path), "--clean", "--json"], monkeypatch), (name, block)
            assert _same(["simulate", "--trace", str(path), "--machine", "flat:8", "--clean"], monkeypatch), (name, block)


def test_lean_path_declines_truncated_and_unusual_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    raw = default_trace_path().read_bytes()
    cut = tmp_path / "cut.swf.gz"
    cut.write_bytes(raw[: len(raw) // 2])
    code, _, err, took = _main(["simulate", "--trace", str(cut)], True, monkeypatch)
    assert (code, took) == (2, False) and "truncated" in err
    two = tmp_path / "two.swf.gz"  # a second gzip member: the general reader reads the first one only, and so does the lean path
    two.write_bytes(raw + gzip.compress(b"1 2 3\n"))
    assert _same(["simulate", "--trace", str(two), "--json"], monkeypatch)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    assert counts.read_jobs(fifo, 8, clean=False, filters=(), estimate="double-runtime") is None


def test_lean_path_declines_without_the_compiled_extensions(monkeypatch: pytest.MonkeyPatch) -> None:
    import builtins

    real_import = builtins.__import__
    for missing in ("_cswf", "_ckernel"):

        def no_extension(name: str, *args: object, _missing: str = missing, **kwargs: object) -> object:
            fromlist = args[2] if len(args) > 2 else kwargs.get("fromlist")
            if name == _missing or (fromlist and _missing in fromlist):  # type: ignore[operator]
                raise ImportError(f"no {_missing} here")
            return real_import(name, *args, **kwargs)  # type: ignore[arg-type]

        with monkeypatch.context() as m:
            m.setattr(builtins, "__import__", no_extension)
            code, out, err, took = _main(["simulate", "--json", "--quiet"], True, monkeypatch)
        assert (code, took) == (0, False), err
        assert '"jobs": 18239' in out
