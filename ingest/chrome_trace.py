"""Streaming reader of Chrome-trace JSON (PyTorch profiler / Kineto, jax.profiler).

A trace is one JSON object whose ``traceEvents`` array holds every event
(or, in the oldest form, a bare array of events). Traces reach gigabytes, so
the file is never loaded whole: it is decoded in 1 MB chunks and each
top-level value (a metadata value, or one event of ``traceEvents``) is parsed
on its own with the C JSON scanner (``JSONDecoder.raw_decode``). Memory stays
at about one chunk plus one event, whatever the file size.

Numbers with a fraction are kept as their text (``FloatText``), so that
microsecond timestamps such as ``4449116405799.195`` convert to integer
nanoseconds exactly (``us_to_ns``) instead of through a binary float.
"""

from __future__ import annotations

import codecs
import gzip
import json
import os
import re
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

from .errors import IngestError
from .lines import ProgressFn

CHUNK = 1 << 20
# One event larger than this is refused rather than read on without end.
MAX_VALUE = 256 << 20
EVENTS_KEY = "traceEvents"
_WS = re.compile(r"[ \t\n\r]*")


class FloatText(str):
    """A JSON number with a fraction or an exponent, as written in the file."""

    __slots__ = ()


def us_to_ns(value: Any) -> int:
    """Microseconds (int, ``FloatText`` or float) to integer nanoseconds.

    Up to three decimals convert exactly; more are rounded half-even.
    """
    if type(value) is int:
        return value * 1000
    text = str(value)
    whole, _, frac = text.partition(".")
    if len(frac) <= 3 and frac.isdigit() and "e" not in whole.lower():
        ns = int(whole) * 1000
        part = int(frac.ljust(3, "0")) if frac else 0
        return ns - part if whole.startswith("-") else ns + part
    return int((Decimal(text) * 1000).to_integral_value())


def plain(value: Any) -> Any:
    """``value`` with every ``FloatText`` inside turned back into a float (for attrs)."""
    if type(value) is FloatText:
        return float(value)
    if type(value) is list:
        return [plain(v) for v in value]
    if type(value) is dict:
        return {k: plain(v) for k, v in value.items()}
    return value


class _Reader:
    """A window of decoded text over the file, refilled as values are consumed."""

    def __init__(self, path: str, progress: ProgressFn | None) -> None:
        self.path = path
        self.progress = progress
        self.total = os.path.getsize(path)
        self.raw = open(path, "rb")  # noqa: SIM115 - closed by close()
        self.f: Any = self.raw
        if self.raw.peek(2)[:2] == b"\x1f\x8b":
            self.f = gzip.GzipFile(fileobj=self.raw, mode="rb")
        self.decoder = codecs.getincrementaldecoder("utf-8")()
        self.json = json.JSONDecoder(parse_float=FloatText)
        self.text = ""
        self.pos = 0
        self.eof = False
        self.line_base = 1  # line number of text[0]
        self.next_report = 4 << 20

    def close(self) -> None:
        self.f.close()
        self.raw.close()

    def line(self) -> int:
        return self.line_base + self.text.count("\n", 0, self.pos)

    def fail(self, message: str) -> IngestError:
        return IngestError(self.path, self.line(), message)

    def fill(self) -> bool:
        """Append the next chunk; False at the end of the file."""
        if self.eof:
            return False
        try:
            data = self.f.read(CHUNK)
        except (OSError, EOFError) as e:
            raise self.fail(f"unreadable compressed data ({e}): expected a gzip trace") from None
        if self.pos:
            self.line_base += self.text.count("\n", 0, self.pos)
            self.text = self.text[self.pos:]
            self.pos = 0
        try:
            self.text += self.decoder.decode(data, final=not data)
        except UnicodeDecodeError as e:
            raise self.fail(f"not UTF-8 (byte {e.start} of a chunk): expected JSON text") from None
        if self.progress is not None and self.raw.tell() >= self.next_report:
            self.progress(self.raw.tell(), self.total)
            self.next_report = self.raw.tell() + (4 << 20)
        if not data:
            self.eof = True
            if self.progress is not None:
                self.progress(self.total, self.total)
        return bool(data)

    def peek(self) -> str:
        """The next non-blank character ('' at the end of the file), not consumed."""
        while True:
            self.pos = _WS.match(self.text, self.pos).end()
            if self.pos < len(self.text):
                return self.text[self.pos]
            if not self.fill():
                return ""

    def expect(self, chars: str, what: str) -> str:
        c = self.peek()
        if c == "" or c not in chars:
            found = repr(c) if c else "end of file"
            raise self.fail(f"expected {what}, found {found}")
        self.pos += 1
        return c

    def value(self, what: str) -> Any:
        """Parse the one JSON value that starts at the next non-blank character."""
        self.peek()
        while True:
            try:
                obj, end = self.json.raw_decode(self.text, self.pos)
            except json.JSONDecodeError as e:
                # An error near the window's end (or an open string) may be a value
                # cut by the chunk boundary: read on. Anywhere else it is bad input.
                cut = e.pos >= len(self.text) - 16 or e.msg.startswith("Unterminated")
                if not cut or self.eof or len(self.text) - self.pos > MAX_VALUE:
                    where = self.line_base + self.text.count("\n", 0, e.pos)
                    reason = "the file ends" if self.eof and cut else e.msg
                    raise IngestError(self.path, where, f"{reason}: expected {what}") from None
                self.fill()
                continue
            if end >= len(self.text) and not self.eof and not isinstance(obj, dict | list | str):
                self.fill()  # a number at the window's end may go on in the next chunk
                continue
            self.pos = end
            return obj


def read_trace(path: str, progress: ProgressFn | None = None) -> Iterator[tuple[str, Any]]:
    """Yield ``(key, value)`` for each top-level entry of the trace, in file order.

    Each event of ``traceEvents`` is yielded on its own as ``("traceEvents", event)``;
    any other key (``distributedInfo``, ``deviceProperties``, ...) once, with its value.
    A bare top-level array is read as ``traceEvents``.
    """
    r = _Reader(path, progress)
    try:
        first = r.expect("{[", "a JSON object with traceEvents (a Chrome trace)")
        if first == "[":
            r.pos -= 1
            yield from _events(r)
        else:
            yield from _object(r)
        if r.peek() != "":
            raise r.fail("expected the end of the trace after its closing brace")
    finally:
        r.close()


def _object(r: _Reader) -> Iterator[tuple[str, Any]]:
    if r.peek() == "}":
        r.pos += 1
        return
    while True:
        key = r.value("a key string")
        if not isinstance(key, str):
            raise r.fail(f"expected a key string, found {key!r}")
        r.expect(":", "':' after a key")
        if key == EVENTS_KEY:
            yield from _events(r)
        else:
            yield key, r.value(f"the value of {key!r}")
        if r.expect(",}", "',' or '}' between top-level entries") == "}":
            return


def _events(r: _Reader) -> Iterator[tuple[str, Any]]:
    r.expect("[", "'[' opening traceEvents")
    if r.peek() == "]":
        r.pos += 1
        return
    while True:
        event = r.value("an event object")
        if not isinstance(event, dict):
            raise r.fail(f"expected an event object in traceEvents, found {type(event).__name__}")
        yield EVENTS_KEY, event
        if r.expect(",]", "',' or ']' between events (truncated trace?)") == "]":
            return
