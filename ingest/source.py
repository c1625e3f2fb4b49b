"""One input file to one stream of records, beginning with its provenance."""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Callable, Generator
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


class Records:
    """The records of one file (``records_for``), read one by one, and, once the first (its
    Source) is out, whether a compiled twin parses the rest (``compiled_twin``): where the
    core is built it releases the GIL while it reads, so a reader may run it in a thread
    beside its own work. A Python parser holds the GIL throughout."""

    def __init__(self, path: str | os.PathLike[str], fmt: str | None, sha256: str | None,
                 progress: ProgressFn | None) -> None:
        self._spec: FormatSpec | None = None
        self._it = self._records(path, fmt, sha256, progress)

    def _records(self, path: str | os.PathLike[str], fmt: str | None, sha256: str | None,
                 progress: ProgressFn | None) -> Generator[Record, None, None]:
        p = str(Path(path).resolve())
        if not Path(p).is_file():
            raise IngestError(str(path), None, "no such file")
        spec = self._spec = resolve_format(p, fmt)
        yield Source(
            path=p, size=os.path.getsize(p),
            sha256=file_sha256(p) if sha256 is None else sha256, format=spec.name,
        )
        yield from spec.parse(p, progress)

    def __iter__(self) -> Records:
        return self

    def __next__(self) -> Record:
        return next(self._it)

    def close(self) -> None:
        self._it.close()

    @property
    def compiled_twin(self) -> bool:
        """The format has a compiled twin (FormatSpec.compiled); False until the Source
        is out (the format is known then)."""
        return self._spec is not None and self._spec.compiled


def records_for(
    path: str | os.PathLike[str], fmt: str | None = None, *, sha256: str | None = None,
    progress: ProgressFn | None = None,
) -> Records:
    """The Source record of ``path``, then everything its format's parser yields
    (``sha256``: the file's where the caller has it; ``SHA256_LATER`` where the caller
    hashes it meanwhile and gives the writer the digest). Nothing is read before the
    first record is asked for."""
    return Records(path, fmt, sha256, progress)
