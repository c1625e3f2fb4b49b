"""One input file to one stream of records, beginning with its provenance."""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

from .errors import IngestError
from .format_spec import FormatSpec
from .formats import detect_format, formats
from .lines import ProgressFn
from .records import Record, Source


def file_sha256(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


SHA256_LATER = ""  # records_for's sha256 when the writer gets it from sha256_beside


def sha256_beside(path: str) -> Callable[[], str]:
    """Start hashing ``path`` in a thread; the returned function waits for the hex digest
    (or raises what the thread met). hashlib and file reads release the GIL, so a 1 GB
    file's hashing runs beside the ingest on the core DuckDB leaves idle."""
    out: list[str | BaseException] = []

    def run() -> None:
        try:
            out.append(file_sha256(path))
        except BaseException as e:  # handed to whoever waits
            out.append(e)

    thread = threading.Thread(target=run, name="tlview-sha256", daemon=True)
    thread.start()

    def result() -> str:
        thread.join()
        if isinstance(out[0], BaseException):
            raise out[0]
        return out[0]

    return result


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
    """The Source record of ``path``, then everything its format's parser yields
    (``sha256``: the file's where the caller has it; ``SHA256_LATER`` where the caller
    hashes it meanwhile and gives the writer the digest)."""
    p = str(Path(path).resolve())
    if not Path(p).is_file():
        raise IngestError(str(path), None, "no such file")
    spec = resolve_format(p, fmt)
    yield Source(
        path=p, size=os.path.getsize(p), sha256=file_sha256(p) if sha256 is None else sha256,
        format=spec.name,
    )
    yield from spec.parse(p, progress)
