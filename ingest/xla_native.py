"""XLA buffer-assignment dumps through the compiled core (native/xla_buffer_assignment.cpp).

The same records as ``xla_buffer_assignment.parse_buffer_assignment`` (the specification):
a Timeline, the events as ``EventColumns`` batches, the closing TimelineNote. The
compiled parser reads ASCII text byte by byte; it first scans the files and hands a dump
it could read differently from Python (odd characters, CR line ends, bad UTF-8, a number
of 17 digits or more outside the stack trace and the memory report; an unreadable gzip
file) back to the Python parser, which then reads it whole, errors included.

What the parser holds between the dump's sections lives in a spill file, its resident
pages capped by ``TLVIEW_XLA_SPILL_MB`` (default 32; 0 keeps it on the heap).
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

from . import native
from .lines import ProgressFn, open_binary
from .records import EventColumns, Record, Timeline, TimelineNote

FORMAT = "xla_buffer_assignment"


def _chunks(path: str, progress: ProgressFn | None = None) -> Iterator[bytes]:
    """The file's bytes (un-gzipped) in chunks of ``native.CHUNK``."""
    import os

    total = os.path.getsize(path)
    with open(path, "rb") as raw:
        f = open_binary(path) if raw.peek(2)[:2] == b"\x1f\x8b" else raw
        try:
            while data := f.read(native.CHUNK):
                yield data
                if progress is not None:
                    progress(raw.tell() if f is raw else min(raw.tell(), total), total)
        finally:
            if f is not raw:
                f.close()


def plain(core: ModuleType, paths: list[str], live_first: list[int]) -> Any | None:
    """A compiled parser that has read the live ranges, or None where Python must read
    the dump (the scan found what it could read differently, or a file is unreadable).

    One read of each file, in pass 1's order: the scan, with pass 1 inside it (its error
    is raised once the scan has found the whole dump plain).
    """
    parser = core.XlaBufferAssignment(list(paths), [Path(p).name for p in paths])
    try:
        for i in live_first:
            parser.begin(paths[i], i, 1)
            for chunk in _chunks(paths[i]):
                if not parser.feed1(chunk):
                    return None
            if not parser.end1():
                return None
    except (OSError, EOFError, zlib.error):
        return None  # the Python parser says what is wrong with the file
    return parser if parser.verdict() is None else None


def records(parser: Any, paths: list[str], *, name: str, attrs_: dict[str, Any] | None,
            progress: ProgressFn | None) -> Iterator[Record]:
    """Pass 2 of a parser from ``plain``: the records."""
    yield Timeline(key=name, name=name, format=FORMAT, attrs=attrs_ or {})
    parser.start2()
    for i, path in enumerate(paths):
        parser.begin(path, i, 2)
        for chunk in _chunks(path, progress):
            batches, more = parser.feed2(chunk)
            yield from _columns(batches, name)
            if not more:
                break
        yield from _columns(parser.end2(), name)
    while True:  # the unmatched rest, a few batches at a time, then the note
        batches, note = parser.finish()
        yield from _columns(batches, name)
        if note is not None:
            break
    yield TimelineNote(timeline=name, attrs=json.loads(note))


def _columns(batches: list[Any], name: str) -> Iterator[EventColumns]:
    for b in batches:
        n, columns = native.arrow_columns(b)
        yield EventColumns(timelines=(name,), n=n, columns=columns)
