"""Streaming line readers: one line at a time, with its number, never the whole file.

Files are read as bytes and decoded line by line, so a byte that is not UTF-8
is reported with its line number instead of somewhere inside a buffer.
``.gz`` files are decompressed on the fly.
"""

from __future__ import annotations

import codecs
import gzip
import os
import sys
import time
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO

from .errors import IngestError

ProgressFn = Callable[[int, int], None]


def open_binary(path: str | os.PathLike[str]) -> BinaryIO:
    """Open ``path`` for reading bytes, transparently un-gzipping ``*.gz``."""
    p = Path(path)
    raw = open(p, "rb")  # noqa: SIM115 - the caller closes it
    head = raw.peek(2)[:2] if hasattr(raw, "peek") else b""
    if head == b"\x1f\x8b":
        return gzip.GzipFile(fileobj=raw, mode="rb")  # type: ignore[return-value]
    return raw


CHUNK = 1 << 20


def read_text(
    path: str | os.PathLike[str], progress: ProgressFn | None = None
) -> Iterator[str]:
    """Yield the lines of ``path`` without their newline, decoded as UTF-8.

    Reads 1 MB at a time and splits in C, so the cost per line is a few hundred ns.
    A byte that is not UTF-8, or a NUL byte, is an IngestError naming its line.
    ``progress(bytes_read, total_bytes)`` is called once per chunk (on-disk bytes).
    """
    for parts in read_chunks(path, progress):
        yield from parts


def read_chunks(
    path: str | os.PathLike[str], progress: ProgressFn | None = None
) -> Iterator[list[str]]:
    """The lines of ``read_text``, a list per chunk read (for compiled parsers of lines)."""
    total = os.path.getsize(path)
    decoder = codecs.getincrementaldecoder("utf-8")("strict")
    lines_before = 0
    tail = ""
    with open(path, "rb") as raw:
        gz = raw.read(2) == b"\x1f\x8b"
        raw.seek(0)
        f: BinaryIO = gzip.GzipFile(fileobj=raw, mode="rb") if gz else raw  # type: ignore[assignment]
        while True:
            try:
                data = f.read(CHUNK)
            except (EOFError, zlib.error, gzip.BadGzipFile) as e:
                line = lines_before + tail.count("\n") + 1
                raise IngestError(str(path), line, f"corrupt gzip data ({e})") from None
            final = not data
            nul = data.find(b"\x00")
            if nul >= 0:
                try:
                    codecs.getincrementaldecoder("utf-8")("strict").decode(data[:nul], False)
                except UnicodeDecodeError:
                    pass  # a bad byte comes first: reported below
                else:
                    line = lines_before + tail.count("\n") + data[:nul].count(b"\n") + 1
                    raise IngestError(str(path), line, "NUL byte in a text dump: binary data?")
            try:
                text = decoder.decode(data, final)
            except UnicodeDecodeError as e:
                # e.object: the decoder's input, a character cut by the last chunk + data
                line = lines_before + tail.count("\n") + e.object[: e.start].count(b"\n") + 1
                raise IngestError(
                    str(path), line,
                    f"not UTF-8 text (byte 0x{e.object[e.start]:02x}): expected a text dump"
                ) from None
            if "\x00" in text:
                line = lines_before + (tail + text)[: (tail + text).index("\x00")].count("\n") + 1
                raise IngestError(str(path), line, "NUL byte in a text dump: binary data?")
            if "\r" in text:
                text = text.replace("\r\n", "\n")
            text = tail + text
            parts = text.split("\n")
            tail = parts.pop()
            lines_before += len(parts)
            if parts:
                yield parts
            if progress is not None:
                progress(raw.tell(), total)
            if final:
                break
    if tail:
        yield [tail]


def read_lines(
    path: str | os.PathLike[str], progress: ProgressFn | None = None
) -> Iterator[tuple[int, str]]:
    """Yield ``(line_number, text)``, 1-based, newline stripped (see ``read_text``)."""
    return enumerate(read_text(path, progress), 1)


_LINE_OPEN = [False]  # a progress line is on stderr without its end (its file not done)


def stderr_progress(label: str) -> ProgressFn | None:
    """A progress printer on stderr, or ``None`` when stderr is not a terminal."""
    if not sys.stderr.isatty():
        return None
    start = time.monotonic()

    def report(done: int, total: int) -> None:
        elapsed = max(time.monotonic() - start, 1e-6)
        pct = 100.0 * done / total if total else 100.0
        sys.stderr.write(
            f"\r{label}: {done / 1e6:,.1f}/{total / 1e6:,.1f} MB ({pct:3.0f}%) "
            f"{done / 1e6 / elapsed:,.1f} MB/s"
        )
        _LINE_OPEN[0] = done < total
        if done >= total:
            sys.stderr.write("\n")
        sys.stderr.flush()

    return report


def end_progress_line() -> None:
    """End a progress line left open (an error or Ctrl-C in the middle of a file), so that
    what is said next starts a line of its own."""
    if _LINE_OPEN[0]:
        _LINE_OPEN[0] = False
        sys.stderr.write("\n")
        sys.stderr.flush()
