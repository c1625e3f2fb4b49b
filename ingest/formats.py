"""Which ingester reads which file: format sniffing by content, and the registry.

Each format module exposes a ``SPEC``; detection looks at the first few KB of
text (after stripping log prefixes where the format allows them), never at the
file name alone, because users rename dumps.
"""

from __future__ import annotations

import gzip
import zlib
from collections.abc import Callable, Iterator

import attrs
from tlview.store.records import Record

from .errors import IngestError
from .lines import ProgressFn, open_binary

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


def _registry() -> list[FormatSpec]:
    from . import inductor_ir, kineto, torch_log, xla_buffer_assignment

    return [inductor_ir.SPEC, xla_buffer_assignment.SPEC, torch_log.SPEC, *kineto.SPECS]


def formats() -> dict[str, FormatSpec]:
    return {f.name: f for f in _registry()}


def read_head(path: str, size: int = 64 * 1024) -> str:
    try:
        with open_binary(path) as f:
            data = f.read(size)
    except (EOFError, zlib.error, gzip.BadGzipFile) as e:
        raise IngestError(path, 1, f"corrupt gzip data ({e}): expected a gzip file") from None
    return data.decode("utf-8", errors="replace")


def detect_format(path: str) -> FormatSpec:
    """The format of ``path`` by its content, or an IngestError listing what was expected."""
    head = read_head(path)
    if not head.strip():
        raise IngestError(path, 1, "empty file: expected a dump or trace")
    for spec in _registry():
        if spec.sniff(head, path):
            return spec
    names = ", ".join(f"{f.name} ({f.description})" for f in _registry())
    first = next((ln for ln in head.splitlines() if ln.strip()), "")[:80]
    raise IngestError(path, 1, f"unrecognised input {first!r}: expected one of {names}")
