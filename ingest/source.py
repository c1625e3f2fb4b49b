"""One input file to one stream of records, beginning with its provenance."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from pathlib import Path

from tlview.store.records import Record, Source

from .errors import IngestError
from .formats import FormatSpec, detect_format, formats
from .lines import ProgressFn


def file_sha256(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def resolve_format(path: str, fmt: str | None) -> FormatSpec:
    if fmt is None:
        return detect_format(path)
    known = formats()
    if fmt not in known:
        raise IngestError(path, None, f"unknown format {fmt!r}: expected one of {', '.join(known)}")
    return known[fmt]


def records_for(
    path: str | os.PathLike[str], fmt: str | None = None, *, sha256: str | None = None,
    progress: ProgressFn | None = None,
) -> Iterator[Record]:
    """The Source record of ``path``, then everything its format's parser yields."""
    p = str(Path(path).resolve())
    if not Path(p).is_file():
        raise IngestError(str(path), None, "no such file")
    spec = resolve_format(p, fmt)
    yield Source(
        path=p, size=os.path.getsize(p), sha256=sha256 or file_sha256(p), format=spec.name,
    )
    yield from spec.parse(p, progress)
