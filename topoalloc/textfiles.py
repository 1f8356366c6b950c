"""Reading the text files users give (traces, ordering files, edge lists) safely.

One function, :func:`read_text`, for every input text file: plain or gzip
(detected by content), refused with one line naming the file (and the line,
where there is one) when it is missing, a folder, unreadable, binary (a NUL
byte, or not the expected encoding), a truncated or corrupt gzip stream, or
larger than this machine can parse — checked before the file is read whole,
so a device that never ends (``/dev/zero``) or a gzip bomb costs at most the
parse budget (:mod:`topoalloc.limits`).  :func:`read_bytes` and
:func:`decode_text` are its two halves, for a reader that can parse the
bytes without decoding them (the SWF reader's compiled path).
"""

from __future__ import annotations

import os
import re
import stat
import zlib
from pathlib import Path

from .errors import TraceFormatError
from .limits import format_bytes, memory_budget

__all__ = ["read_text", "read_bytes", "decode_text", "PARSE_BYTES_PER_BYTE"]

#: parsing holds about this many bytes per byte of text (the text, its lines, the table)
PARSE_BYTES_PER_BYTE = 24

_GZIP_MAGIC = b"\x1f\x8b"
_HEAD = 1 << 16
_NOT_ASCII = re.compile(rb"[\x00\x80-\xff]")
_NUL = re.compile(rb"\x00")


def _text_limit() -> int:
    """Most bytes of text this machine can parse."""
    return max(1 << 20, memory_budget() // PARSE_BYTES_PER_BYTE)


def _too_big(path: Path, what: str) -> TraceFormatError:
    limit = _text_limit()
    return TraceFormatError(
        str(path), None, f"{what} more than {format_bytes(limit)} of text, more than this machine can parse "
        f"(about {PARSE_BYTES_PER_BYTE} bytes of memory per byte; TOPOALLOC_MEMORY_LIMIT sets the budget)"
    )


def _check_head(chunk: bytes, path: Path, encoding: str, what: str) -> None:
    """Refuse binary data from its first bytes (a NUL, or a non-ASCII byte for ASCII files), naming the line."""
    m = (_NOT_ASCII if encoding == "ascii" else _NUL).search(chunk)
    if m is not None:
        i = m.start()
        line = chunk[:i].count(b"\n") + 1
        raise TraceFormatError(str(path), line, f"byte {chunk[i]:#04x} at offset {i}: not {what} (is this a binary file?)")


def _read_bytes(path: Path, encoding: str, what: str) -> bytes:
    limit = _text_limit()
    try:
        with open(path, "rb") as fh:
            st = os.fstat(fh.fileno())
            if stat.S_ISREG(st.st_mode) and st.st_size > limit:
                raise _too_big(path, f"the file has {format_bytes(st.st_size)}:")
            # a device or pipe may never end: look at the start first, then read no more than can be parsed
            head = fh.read(_HEAD)
            if head[:2] != _GZIP_MAGIC:
                _check_head(head, path, encoding, what)
            data = head + fh.read(limit + 1 - len(head))
            if len(data) > limit:
                raise _too_big(path, "it holds")
    except FileNotFoundError:
        raise TraceFormatError(str(path), None, "no such file") from None
    except IsADirectoryError:
        raise TraceFormatError(str(path), None, f"is a directory, expected {what}") from None
    except OSError as exc:
        raise TraceFormatError(str(path), None, f"cannot be read: {exc.strerror or exc}") from None
    if data[:2] != _GZIP_MAGIC:
        return data
    d = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        _check_head(d.copy().decompress(data, _HEAD), path, encoding, what)
        text = d.decompress(data, limit + 1)
        if len(text) > limit or d.unconsumed_tail:
            raise _too_big(path, "decompressed, it holds")
        text += d.flush()
        if not d.eof:
            raise EOFError("compressed file ended before the end-of-stream marker was reached")
    except (EOFError, OSError, zlib.error) as exc:
        # how far the stream is readable, so the message can say where it broke
        good = _readable_prefix(data)
        raise TraceFormatError(str(path), good.count(b"\n") + 1, f"gzip stream is truncated or corrupt ({exc}); {len(good)} bytes of text could be read") from None
    return text


def _readable_prefix(data: bytes) -> bytes:
    """The text a truncated or corrupt gzip stream still yields (its first member, at most the parse limit)."""
    d = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        return d.decompress(data, _text_limit())
    except zlib.error:
        return b""


def read_text(path: str | os.PathLike[str], *, encoding: str = "utf-8", what: str = "a text file") -> str:
    """The text of ``path`` (plain or gzip), or :class:`TraceFormatError` with one line saying what is wrong.

    ``encoding`` is ``"ascii"`` (SWF) or ``"utf-8"``; ``what`` names the
    expected kind of file in messages ("an SWF file").
    """
    return decode_text(read_bytes(path, encoding=encoding, what=what), path, encoding=encoding, what=what)


def read_bytes(path: str | os.PathLike[str], *, encoding: str = "utf-8", what: str = "a text file") -> bytes:
    """The bytes of ``path`` (gzip decompressed), with every check of :func:`read_text` but the decoding.

    Raises
    ------
    TraceFormatError
        As :func:`read_text`, except for an encoding error after the first
        64 KiB (that is :func:`decode_text`'s).
    """
    return _read_bytes(Path(path), encoding, what)


def decode_text(data: bytes, path: str | os.PathLike[str], *, encoding: str = "utf-8", what: str = "a text file") -> str:
    """``data`` (the bytes :func:`read_bytes` returned for ``path``) decoded, or :class:`TraceFormatError` naming the line."""
    try:
        return data.decode(encoding)
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise TraceFormatError(str(path), line, f"byte {data[exc.start]:#04x} is not {encoding.upper()}: not {what} (is this a binary file?)") from None
