"""The compiled ingest core (``tlview.ingest._native``, built from ``native/*.cpp``).

Each compiled parser is the twin of a Python parser, which stays the specification:
both must give the same rows and the same errors (tests/native/test_chrome_trace.py runs both on
every fixture and on mutated inputs). A compiled parser takes the file's bytes in
chunks and hands back, in order, what the Python parser would yield: declarations as
plain values, and events as columns (Arrow buffers), never as Python objects per event.

``TLVIEW_NATIVE=0`` uses the Python parsers; so does a machine where the core could not
be built (no C++ compiler), with one line on stderr saying so.
"""

from __future__ import annotations

import os
import sys
import zlib
from collections.abc import Iterator
from types import ModuleType
from typing import TYPE_CHECKING, Any

from .errors import IngestError
from .lines import ProgressFn, open_binary

CHUNK = 4 << 20
ABI = 6  # the core's ABI constant this Python side expects (native/module.cpp)
_warned = False


def module() -> ModuleType | None:
    """The compiled core, or None (disabled, not built, or built from other sources)."""
    global _warned
    if os.environ.get("TLVIEW_NATIVE", "1") == "0":
        return None
    try:
        from . import _native  # type: ignore[attr-defined]
    except ImportError:
        _native = None
    if _native is not None and getattr(_native, "ABI", None) == ABI:
        return _native
    if not _warned:
        _warned = True
        why = "not built" if _native is None else "out of date (rebuild: pip install -e .)"
        print(f"tlview: the compiled ingest core is {why}; ingesting with the pure-Python "
              "parsers (several times slower)", file=sys.stderr)
    return None


def feed_file(parser: Any, path: str, progress: ProgressFn | None) -> Iterator[list[Any]]:
    """Feed the file's bytes (un-gzipped) to ``parser``; yield the outputs of each call."""
    total = os.path.getsize(path)
    with open(path, "rb") as raw:
        f = open_binary(path) if raw.peek(2)[:2] == b"\x1f\x8b" else raw
        try:
            while True:
                try:
                    data = f.read(CHUNK)
                except (OSError, EOFError, zlib.error) as e:
                    raise IngestError(path, parser.line(),
                                      f"unreadable compressed data ({e}): expected a gzip file"
                                      ) from None
                if not data:
                    break
                yield parser.feed(data)
                if progress is not None:
                    progress(raw.tell() if f is raw else min(raw.tell(), total), total)
            yield parser.finish()
        finally:
            if f is not raw:
                f.close()


if TYPE_CHECKING:
    import pyarrow as pa

# Exported column kinds and their Arrow types' names: pyarrow is loaded where columns are
# made, not where the formats are listed (`tlview --help`, sql; docs/benchmarks.md).
_TYPES = {"i64": "int64", "i32": "int32", "bool": "bool_", "str": "string"}


def arrow_array(spec: tuple[Any, ...]) -> pa.Array:
    """One exported column (kind, length, nulls, validity, buffers...) as an Arrow array."""
    import pyarrow as pa

    kind, n, nulls, validity = spec[:4]
    valid = pa.py_buffer(validity) if validity is not None else None
    if kind in ("i64", "i32", "bool"):
        return pa.Array.from_buffers(getattr(pa, _TYPES[kind])(), n,
                                     [valid, pa.py_buffer(spec[4])], nulls)
    if kind == "str":
        return pa.Array.from_buffers(pa.string(), n, [valid, pa.py_buffer(spec[4]),
                                                      pa.py_buffer(spec[5])], nulls)
    if kind == "list":
        child = arrow_array(spec[5])
        return pa.Array.from_buffers(pa.list_(pa.string()), n,
                                     [valid, pa.py_buffer(spec[4])], nulls, children=[child])
    raise ValueError(f"unknown exported column kind {kind!r}")


def arrow_columns(batch: dict[str, Any]) -> tuple[int, dict[str, pa.Array]]:
    """An exported batch ``{"n": rows, "cols": {name: spec}}`` as Arrow arrays."""
    return batch["n"], {name: arrow_array(spec) for name, spec in batch["cols"].items()}
