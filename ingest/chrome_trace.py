"""Streaming reader of Chrome-trace JSON (PyTorch profiler / Kineto, jax.profiler).

A trace is one JSON object whose ``traceEvents`` array holds every event
(or, in the oldest form, a bare array of events). Traces reach gigabytes, so
the file is never loaded whole: it is decoded in 1 MB chunks and each
top-level value (a metadata value, or one event of ``traceEvents``) is parsed
on its own with the C JSON scanner (``JSONDecoder.raw_decode``). Memory stays
at about one chunk plus one event, whatever the file size.

Each event comes with its own text (``raw``), verbatim. Timestamps are
microseconds with up to three decimals; ``exact_ns`` turns them into integer
nanoseconds exactly: from the parsed float where a double holds every 1 ns step
(below 2**43 us, about 101 days: whole part plus the rounded fraction), else from
the number as written in the event's text.
"""

from __future__ import annotations

import codecs
import gzip
import json
import os
import re
import zlib
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
# Arrays and objects within one another in one value, at most: the level past it is
# refused ("nested too deeply", at the value's first line), by this reader and by the
# compiled one (native/json_dom.hpp, the core's JSON_MAX_DEPTH; a test holds them equal).
# Python's json has no bound of its own, only the interpreter's recursion limit, which it
# meets somewhere between about 900 and 1000 levels depending on how deep the caller's
# stack is; this bound lies well below it. Events nest a few levels.
MAX_DEPTH = 512
_DEPTH_TOKENS = re.compile(r'\\.|["\[\]{}]', re.DOTALL)
_SEP = re.compile(r"[ \t\n\r]*([,\]])[ \t\n\r]*")


class BadEvent(ValueError):
    """An event whose content breaks its meaning; the reader adds file and line."""


_EXACT_FLOAT_US = float(2**43)  # below this a double tells apart every 0.001 us


def too_deep(text: str, start: int, end: int) -> bool:
    """Does ``text[start:end]`` (one JSON value, or what was read of it before an error)
    open more than MAX_DEPTH arrays and objects within one another? Brackets inside
    strings are text. Cheap unless the text holds more than MAX_DEPTH brackets."""
    if end - start <= MAX_DEPTH or \
            text.count("[", start, end) + text.count("{", start, end) <= MAX_DEPTH:
        return False
    depth = 0
    in_string = False
    for m in _DEPTH_TOKENS.finditer(text, start, end):
        c = m.group()
        if c == '"':
            in_string = not in_string
        elif in_string or len(c) == 2:  # text, or an escape
            continue
        elif c in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                return True
        else:
            depth -= 1
    return False


def us_to_ns(value: Any) -> int:
    """Microseconds written as decimal text (or int) to integer nanoseconds.

    Up to three decimals convert exactly; more are rounded half-even.
    """
    if type(value) is int:
        return value * 1000
    text = str(value)
    whole, _, frac = text.partition(".")
    if len(frac) <= 3 and frac.isdigit() and whole.lstrip("-").isdigit():
        ns = int(whole) * 1000
        part = int(frac.ljust(3, "0"))
        return ns - part if whole.startswith("-") else ns + part
    return int((Decimal(text) * 1000).to_integral_value())


def exact_ns(value: Any, key: str, raw: str | None) -> int:
    """The number ``value`` (parsed from ``raw`` under ``key``) as integer nanoseconds.

    Below 2**43 us a double is within 0.49 ns of the written three-decimal value,
    so rounding its fraction (``v - int(v)`` is exact) gives the written ns.
    """
    if type(value) is float and -_EXACT_FLOAT_US < value < _EXACT_FLOAT_US:
        whole = int(value)
        return whole * 1000 + round((value - whole) * 1000)
    if type(value) is int:
        return value * 1000
    if type(value) is float:
        if raw is not None:
            m = re.search(rf'"{re.escape(key)}"\s*:\s*(-?[0-9.eE+-]+)', raw)
            if m:
                return us_to_ns(m.group(1))
        return int((Decimal(repr(value)) * 1000).to_integral_value())
    raise BadEvent(f"'{key}' is {type(value).__name__}: expected a number")


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
        self.json = json.JSONDecoder()
        self.text = ""
        self.pos = 0
        self.eof = False
        self.line_base = 1  # line number of text[0]
        self.start = 0  # where the last value() began in text
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
        except (OSError, EOFError, zlib.error) as e:
            raise self.fail(f"unreadable compressed data ({e}): expected a gzip trace") from None
        if self.pos:
            self.line_base += self.text.count("\n", 0, self.pos)
            self.text = self.text[self.pos:]
            self.pos = 0
        try:
            self.text += self.decoder.decode(data, final=not data)
        except UnicodeDecodeError as e:
            bad = data[e.start] if e.start < len(data) else None
            line = self.line_base + self.text.count("\n") + data.count(b"\n", 0, e.start)
            what = f"byte 0x{bad:02x}" if bad is not None else "a cut multi-byte character"
            raise IngestError(self.path, line, f"not UTF-8 text ({what}): expected JSON") from None
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
            self.pos = _WS.match(self.text, self.pos).end()  # type: ignore[union-attr]  # \s* always matches
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
                    if too_deep(self.text, self.pos, e.pos):  # too deep before the error
                        raise self.fail(f"nested too deeply: expected {what}") from None
                    where = self.line_base + self.text.count("\n", 0, e.pos)
                    reason = "the file ends" if self.eof and cut else e.msg
                    raise IngestError(self.path, where, f"{reason}: expected {what}") from None
                self.fill()
                continue
            except (ValueError, RecursionError) as e:  # json's limits: digits, nesting
                reason = ("nested too deeply" if isinstance(e, RecursionError)
                          else "an integer of more than 4300 digits")
                raise IngestError(self.path, self.line(), f"{reason}: expected {what}") from None
            if end >= len(self.text) and not self.eof and not isinstance(obj, dict | list | str):
                self.fill()  # a number at the window's end may go on in the next chunk
                continue
            if too_deep(self.text, self.pos, end):
                raise self.fail(f"nested too deeply: expected {what}")
            self.start = self.pos
            self.pos = end
            return obj


class TraceReader:
    """The entries of one trace, in file order, and the line of the last one read.

    Iterating yields ``(key, value, raw)``: each event of ``traceEvents`` on its own as
    ``("traceEvents", event, raw)`` with ``raw`` its JSON text as written; any other key
    (``distributedInfo``, ``deviceProperties``, ...) once, with its value and
    ``raw=None``. A bare top-level array is read as ``traceEvents``. ``event_line()`` is
    the line where the entry just yielded begins, for errors about its content.
    """

    def __init__(self, path: str, progress: ProgressFn | None = None) -> None:
        self.path = path
        self.progress = progress
        self._r: _Reader | None = None

    def event_line(self) -> int | None:
        r = self._r
        return None if r is None else r.line_base + r.text.count("\n", 0, r.start)

    def __iter__(self) -> Iterator[tuple[str, Any, str | None]]:
        self._r = _Reader(self.path, self.progress)
        return _entries(self._r)


def read_trace(
    path: str, progress: ProgressFn | None = None
) -> Iterator[tuple[str, Any, str | None]]:
    """Yield ``(key, value, raw)`` for each top-level entry of the trace (see TraceReader)."""
    return iter(TraceReader(path, progress))


def _entries(r: _Reader) -> Iterator[tuple[str, Any, str | None]]:
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


def _object(r: _Reader) -> Iterator[tuple[str, Any, str | None]]:
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
            yield key, r.value(f"the value of {key!r}"), None
        if r.expect(",}", "',' or '}' between top-level entries") == "}":
            return


def _events(r: _Reader) -> Iterator[tuple[str, Any, str | None]]:
    r.expect("[", "'[' opening traceEvents")
    if r.peek() == "]":
        r.pos += 1
        return
    decode = r.json.raw_decode
    sep = _SEP.match
    r.pos = _WS.match(r.text, r.pos).end()  # type: ignore[union-attr]
    while True:
        # the common case inline: a whole event inside the window, then ',' or ']'
        start = r.pos
        try:
            event, end = decode(r.text, start)
        except (ValueError, RecursionError):  # bad, cut or over json's limits: slow path
            event, end = None, len(r.text)
        if end >= len(r.text) - 1:  # cut by the window's end (or bad): the slow path
            event = r.value("an event object")
            raw = r.text[r.start:r.pos]
        else:
            if end - start > 2 * MAX_DEPTH and too_deep(r.text, start, end):
                r.pos = start
                raise r.fail("nested too deeply: expected an event object")
            raw = r.text[start:end]
            r.start = start
            r.pos = end
        if type(event) is not dict:
            raise r.fail(f"expected an event object in traceEvents, found {type(event).__name__}")
        yield EVENTS_KEY, event, raw
        m = sep(r.text, r.pos)
        if m is not None and m.end() < len(r.text):
            r.pos = m.end()
            if m.group(1) == "]":
                return
            continue
        if r.expect(",]", "',' or ']' between events (truncated trace?)") == "]":
            return
        r.pos = _WS.match(r.text, r.pos).end()  # type: ignore[union-attr]
