"""Streaming line readers: one line at a time, with its number, never the whole file.

Files are read as bytes and decoded line by line, so a byte that is not UTF-8
is reported with its line number instead of somewhere inside a buffer.
``.gz`` files are decompressed on the fly.
"""

from __future__ import annotations

import gzip
import os
import sys
import time
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


def read_lines(
    path: str | os.PathLike[str], progress: ProgressFn | None = None
) -> Iterator[tuple[int, str]]:
    """Yield ``(line_number, text)`` with the newline stripped, 1-based.

    ``progress(bytes_read, total_bytes)`` is called every few MB.
    """
    total = os.path.getsize(path)
    done = 0
    next_report = 4 << 20
    with open_binary(path) as f:
        for number, raw in enumerate(f, 1):
            done += len(raw)
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as e:
                raise IngestError(
                    str(path), number, f"not UTF-8 text (byte {e.start}): expected a text dump"
                ) from None
            if text.endswith("\n"):
                text = text[:-1]
                if text.endswith("\r"):
                    text = text[:-1]
            if "\x00" in text:
                raise IngestError(str(path), number, "NUL byte in a text dump: binary data?")
            yield number, text
            if progress is not None and done >= next_report:
                progress(done, total)
                next_report = done + (4 << 20)
    if progress is not None:
        progress(done, total)


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
        if done >= total:
            sys.stderr.write("\n")
        sys.stderr.flush()

    return report
