"""SWF reading and writing, and every parse error naming file and line."""

from __future__ import annotations

import gzip

import numpy as np
import pytest

from topoalloc.errors import TraceFormatError
from topoalloc.workload import SWF_FIELDS, default_trace_path, read_swf, write_swf

from .conftest import shared_trace

LINE = "1 0 -1 10 4 -1 -1 4 20 -1 1 1 1 -1 -1 -1 -1 -1"


def write(tmp_path, text, name="t.swf"):
    p = tmp_path / name
    p.write_text(text)
    return p


def test_bundled_trace():
    w = read_swf(default_trace_path())
    assert len(w) == 18239
    assert w.max_procs == 128
    assert w.header["UnixStartTime"] == "749458803"
    assert w.header["MaxNodes"] == "128"
    assert w.line[0] == 33  # 32 header lines
    j = w[0]
    assert (j.id, j.submit, j.run, j.size, j.requested_time) == (1, 0.0, 1451.0, 128, -1.0)
    assert (w.requested_time == -1).all()  # kept as missing, not invented
    assert (w.requested_procs == -1).all() and (w.size == w.allocated_procs).all()  # size falls back to allocated


def test_all_18_fields_exposed(tmp_path):
    p = write(tmp_path, "; MaxProcs: 8\n" + " ".join(str(i + 1) for i in range(18)) + "\n")
    w = read_swf(p)
    assert len(SWF_FIELDS) == 18
    assert w.swf.shape == (1, 18)
    assert w.swf[0].tolist() == [float(i + 1) for i in range(18)]
    assert w.size[0] == 8  # requested processors (field 8) win over allocated (field 5)


def test_header_continuation_and_repeats(tmp_path):
    p = write(tmp_path, "; Version: 2.2\n; Note: first\n;       second\n; Note: third\n; MaxProcs: 8\n" + LINE + "\n")
    h = read_swf(p).header
    assert h["Note"] == "first\nsecond\nthird"
    assert h["MaxProcs"] == "8"


def test_size_falls_back_to_allocated(tmp_path):
    p = write(tmp_path, "1 0 -1 10 6 -1 -1 -1 20 -1 1 1 1 -1 -1 -1 -1 -1\n2 5 -1 10 -1 -1 -1 -1 20 -1 1 1 1 -1 -1 -1 -1 -1\n")
    w = read_swf(p)
    assert w.size.tolist() == [6, -1]


def test_gzip_and_plain_agree(tmp_path):
    text = "; MaxProcs: 8\n" + LINE + "\n" + LINE.replace("1 0 -1", "2 3 -1", 1) + "\n"
    plain = write(tmp_path, text)
    gz = tmp_path / "t.swf.gz"
    gz.write_bytes(gzip.compress(text.encode()))
    a, b = read_swf(plain), read_swf(gz)
    assert np.array_equal(a.swf, b.swf) and a.header == b.header


def test_round_trip(tmp_path):
    w = read_swf(default_trace_path())
    out = tmp_path / "out.swf.gz"
    write_swf(w, out)
    back = read_swf(out)
    assert np.array_equal(back.swf, w.swf)
    assert back.header == w.header
    out2 = tmp_path / "out2.swf.gz"
    write_swf(back, out2)
    assert out.read_bytes() == out2.read_bytes()  # deterministic bytes


def test_fractional_fields(tmp_path):
    p = write(tmp_path, LINE.replace(" -1 -1 4 20", " 246.00 -1 4 20", 1) + "\n")
    assert read_swf(p).swf[0, 5] == 246.0


def test_comment_lines_inside_body(tmp_path):
    p = write(tmp_path, "; MaxProcs: 8\n" + LINE + "\n; a note\n\n" + LINE.replace("1 0 -1", "2 3 -1", 1) + "\n")
    w = read_swf(p)
    assert w.line.tolist() == [2, 5]


# ---------------------------------------------------------------- errors
def test_short_line(tmp_path):
    p = write(tmp_path, "; MaxProcs: 8\n" + LINE + "\n" + " ".join(LINE.split()[:17]) + "\n")
    with pytest.raises(TraceFormatError, match=r"line 3 of .*t\.swf.*expected 18 fields, got 17") as e:
        read_swf(p)
    assert e.value.line == 3 and e.value.path.endswith("t.swf")


def test_non_numeric_field(tmp_path):
    p = write(tmp_path, LINE + "\n" + LINE.replace(" 10 4 ", " ten 4 ", 1) + "\n")
    with pytest.raises(TraceFormatError, match=r"line 2 .*field 4 \(run_time\) is 'ten', expected a number"):
        read_swf(p)


def test_nan_field(tmp_path):
    p = write(tmp_path, LINE.replace(" 10 4 ", " nan 4 ", 1) + "\n")
    with pytest.raises(TraceFormatError, match=r"line 1 .*finite"):
        read_swf(p)


def test_empty_file(tmp_path):
    p = write(tmp_path, "")
    with pytest.raises(TraceFormatError, match=r"line 1 of .*t\.swf.*empty"):
        read_swf(p)


def test_header_only(tmp_path):
    p = write(tmp_path, "; Version: 2.2\n; MaxProcs: 8\n")
    with pytest.raises(TraceFormatError, match=r"line 3 of .*t\.swf.*header only"):
        read_swf(p)


def test_truncated_gzip(tmp_path):
    data = gzip.compress(("; MaxProcs: 8\n" + (LINE + "\n") * 2000).encode())
    p = tmp_path / "cut.swf.gz"
    p.write_bytes(data[: len(data) // 2])
    with pytest.raises(TraceFormatError, match=r"line \d+ of .*cut\.swf\.gz.*truncated") as e:
        read_swf(p)
    assert e.value.line is not None and e.value.line > 1


def test_missing_file(tmp_path):
    with pytest.raises(TraceFormatError, match="no such file"):
        read_swf(tmp_path / "nope.swf")


def test_binary_file(tmp_path):
    p = tmp_path / "bin.swf"
    p.write_bytes(b"1 2 3\n\xff\xfe")
    with pytest.raises(TraceFormatError, match="line 2 .*byte 0x.. .*not an SWF file"):
        read_swf(p)


def test_real_traces_parse():
    for name, jobs in [("CTC-SP2-1996-3.1-cln.swf.gz", 77222), ("KTH-SP2-1996-2.1-cln.swf", 28476)]:
        w = read_swf(shared_trace(name))
        assert len(w) == jobs


def test_a_hash_line_is_a_bad_line_not_a_comment(tmp_path):
    """SWF's comments are ";" lines; numpy's reader would drop a "#" line silently and the line numbers would
    no longer match the jobs (found by Hypothesis: an InvalidArgument about array shapes instead of the line)."""
    import pytest

    from topoalloc.errors import TraceFormatError
    from topoalloc.workload.swf import read_swf

    p = tmp_path / "hash.swf"
    p.write_bytes(b"#; MaxProcs: 128\n    1 0 -1 1451 128 -1 -1 -1 -1 -1 -1 1 1 -1 -1 -1 -1 -1\n")
    with pytest.raises(TraceFormatError, match="line 1 of"):
        read_swf(p)
