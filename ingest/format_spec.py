"""What a format module says about itself (``FormatSpec``), and the head of a file its
sniffer reads. Each format module builds its ``SPEC`` from this; the registry
(``formats.py``) imports the formats, never the other way round.
"""

from __future__ import annotations

import gzip
import zlib
from collections.abc import Callable, Iterator

import attrs

from .errors import IngestError
from .lines import ProgressFn, open_binary
from .records import Record

Parse = Callable[[str, "ProgressFn | None"], Iterator[Record]]


@attrs.frozen
class FormatSpec:
    """An input format: its name, a content sniffer and the parser."""

    name: str
    description: str
    sniff: Callable[[str, str], bool]  # (head text, path) -> is it mine?
    parse: Parse
    # For dumps split over sibling files: path -> the one file that stands for its group,
    # so that a folder ingests each group once. None: every file stands alone.
    group: Callable[[str], str] | None = None
    # The parser has a compiled twin (native/), which it asks for (native.module()): the
    # writer then parses in a thread beside the database's work (store/writer.py).
    compiled: bool = False


def read_head_bytes(path: str, size: int = 64 * 1024) -> bytes:
    """The first ``size`` bytes of ``path``, un-gzipped."""
    try:
        with open_binary(path) as f:
            return f.read(size)
    except (EOFError, zlib.error, gzip.BadGzipFile) as e:
        raise IngestError(path, 1, f"corrupt gzip data ({e}): expected a gzip file") from None


def read_head(path: str, size: int = 64 * 1024) -> str:
    return read_head_bytes(path, size).decode("utf-8", errors="replace")
