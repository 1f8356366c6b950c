"""The compiled SWF tokenizer against the pure-Python reader: same workload, or the same error."""

from __future__ import annotations

import gzip

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from topoalloc.errors import TraceFormatError
from topoalloc.workload import default_trace_path, read_swf, swf

from .conftest import GOLDEN, SHARED_TRACES

try:
    from topoalloc.workload import _cswf  # type: ignore[attr-defined]  # noqa: F401

    BUILT = True
except ImportError:
    BUILT = False

needs_parser = pytest.mark.skipif(not BUILT, reason="the compiled SWF parser was not built")


def read_both(path):
    """read_swf as installed, and with the compiled path switched off: (workload or error) each."""

    def attempt():
        try:
            return read_swf(path)
        except TraceFormatError as exc:
            return str(exc)

    fast = attempt()
    with pytest.MonkeyPatch.context() as m:
        m.setattr(swf, "_parse_compiled", lambda data, name: None)
        slow = attempt()
    return fast, slow


def assert_same(a, b) -> None:
    if isinstance(a, str) or isinstance(b, str):
        assert a == b
        return
    for col in ("job_id", "submit", "run", "size", "requested_time", "line"):
        assert getattr(a, col).dtype == getattr(b, col).dtype
        assert getattr(a, col).tobytes() == getattr(b, col).tobytes(), col
    assert a.swf.tobytes() == b.swf.tobytes()
    assert a.header == b.header and a.warnings == b.warnings and a.source == b.source


def test_golden_files_and_small_traces_read_the_same():
    paths = sorted(GOLDEN.glob("*.swf")) + [default_trace_path()]
    paths += [p for p in (SHARED_TRACES / "KTH-SP2-1996-2.1-cln.swf", SHARED_TRACES / "SDSC-SP2-1998-4.2-cln.swf.gz") if p.exists()]
    for path in paths:
        assert_same(*read_both(path))


@pytest.mark.slow
def test_every_trace_reads_the_same():
    for path in sorted(SHARED_TRACES.glob("*.swf*")):
        assert_same(*read_both(path))


@needs_parser
def test_the_compiled_path_takes_the_plain_case():
    data = b"; MaxProcs: 4\n;\n  \n" + b" ".join([b"1"] * 18) + b"\n" + b"2 -0 1.5 +3 1e2 .5 -7.25 0 1 2 3 4 5 6 7 8 9 10\n"
    got = _cswf.parse(data)
    assert got is not None
    hbytes, h, rows, buf = got
    assert (data[:hbytes], h, rows) == (b"; MaxProcs: 4\n;\n  \n", 3, 2)
    table = np.frombuffer(buf).reshape(rows, 18)
    assert table[1, :7].tolist() == [2.0, 0.0, 1.5, 3.0, 100.0, 0.5, -7.25] and np.signbit(table[1, 1])
    for odd in (b"1\t2", b"1 2\r", b"; body comment", b"nan", b"1e", b"0x10", b"1_000", b"\xe9"):
        assert _cswf.parse(b"; h\n" + b" ".join([b"1"] * 18) + b"\n" + odd + b"\n") is None


valid_token = st.one_of(
    st.integers(-(2**40), 2**40).map(str),
    st.integers(-(10**20), 10**20).map(str),  # beyond 2**53: correctly rounded
    st.floats(allow_nan=False, allow_infinity=False, width=64).map(repr),
    st.decimals(allow_nan=False, allow_infinity=False, places=3).map(str),
    st.sampled_from(["-0", "+5", "1.", ".5", "-.25", "1e3", "2E-2", "007", "-1"]),
)
token = st.one_of(valid_token, st.sampled_from(["1e400", "nan", "x", "1_0", "1e", "--1", ""]))
plain_line = st.lists(valid_token, min_size=18, max_size=18).map(" ".join)
odd_line = st.lists(token, min_size=17, max_size=19).flatmap(
    lambda toks: st.sampled_from([" ", "  ", "\t"]).map(lambda sep: (" " if len(toks) % 2 else "") + sep.join(toks))
)
line = st.one_of(plain_line, plain_line, odd_line)
comment = st.sampled_from(["; MaxProcs: 8", ";", "", "   ", "; Note: a\t tab", "  ; indented"])


@settings(max_examples=150)
@given(
    head=st.lists(comment, max_size=4),
    body=st.one_of(st.lists(plain_line, min_size=1, max_size=6), st.lists(st.one_of(line, comment), max_size=6)),
    end=st.sampled_from(["\n", "\n", "", "\n\n", "\r\n"]),
    gz=st.booleans(),
)
def test_random_text_reads_the_same(tmp_path_factory, head, body, end, gz):
    text = "\n".join(head + body) + end
    path = tmp_path_factory.mktemp("swf") / ("t.swf.gz" if gz else "t.swf")
    data = text.encode("ascii")
    path.write_bytes(gzip.compress(data, mtime=0) if gz else data)
    assert_same(*read_both(path))
