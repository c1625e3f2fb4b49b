"""The per-file work of a parallel or distributed ingest: one input file to one shard.

A task parses its file with the very ingest a serial ``tlview ingest`` runs, into a
private scratch database (so rows, sequence numbers and caches are exactly a serial
ingest's), and exports that source as shard ``key`` of a shard set (store/shards.py).
It runs in a worker process (``tlview ingest -j``) or on a Dask worker (``--dask``):
its arguments and result are plain values, and it never raises for bad input: the
error comes back as data, for the writer to report as a serial ingest would.
"""

from __future__ import annotations

import atexit
import os
import resource
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import attrs
from tlview.ingest import IngestError, records_for
from tlview.ingest.source import SHA256_LATER, file_sha256, sha256_beside
from tlview.store import Database, open_database, write_records
from tlview.store.parsed_files import write_parsed
from tlview.store.shards import delete_source, export_source, write_rows


@contextmanager
def _outcome(out: dict[str, Any], path: str) -> Iterator[None]:
    """The task's work in the block: bad input becomes ``out``'s status and error (data
    for the writer to report as a serial ingest would), never an exception; its seconds
    and CPU seconds are added."""
    start = time.perf_counter()
    cpu0 = _cpu_s()
    try:
        yield
    except IngestError as e:
        out.update(status="failed", error=(e.path, e.line, e.message))
    except OSError as e:
        out.update(status="failed", error=(path, None, f"cannot read it ({e.strerror or e})"))
    out["seconds"] = time.perf_counter() - start
    out["cpu_s"] = _cpu_s() - cpu0


def shard_file(path: str, fmt: str | None, folder: str, key: int,
               known: dict[str, list[str]] | None = None, force: bool = False,
               lean: bool = False) -> dict[str, Any]:
    """Parse ``path`` into shard ``key`` of the set in ``folder``.

    ``known``: resolved path -> sha256s already in the target database; a file found
    there (same path, same bytes) is not parsed unless ``force``. ``lean``: rows only,
    no caches and no scratch database (store.shards.write_rows), for shards that go
    straight into a database. The result:
    ``{"key", "path", "status": ok | skipped | failed, "sha256", "error": (path, line,
    message) | None, "seconds", "cpu_s", "bytes"}``.
    """
    out: dict[str, Any] = {"key": key, "path": path, "status": "ok", "sha256": None,
                           "error": None, "bytes": 0}
    with _outcome(out, path):
        out["bytes"] = os.path.getsize(path)
        sha = out["sha256"] = file_sha256(path)
        if not force and known and sha in known.get(str(Path(path).resolve()), ()):
            out["status"] = "skipped"
        elif lean:
            write_rows(records_for(path, fmt, sha256=sha), folder, key)
        else:
            db = _scratch()
            summary = write_records(db, records_for(path, fmt, sha256=sha))
            try:
                export_source(db, summary.source_id, folder, key)
            finally:
                delete_source(db, summary.source_id)
    return out


def parse_file(path: str, fmt: str | None, folder: str,
               known: dict[str, list[str]] | None = None, force: bool = False
               ) -> dict[str, Any]:
    """Parse ``path`` into ``folder`` as Arrow streams for the writer of ``tlview ingest
    -j`` (store/parsed_files.py). ``known``: resolved path -> sha256s already in the
    target database; a file found there (same path, same bytes) is not parsed unless
    ``force``; a path not there is hashed beside its parse. The result: ``{"path",
    "status": ok | skipped | failed, "sha256", "error": (path, line, message) | None,
    "parsed": Parsed.as_dict() | None, "bytes", "phases": {name: seconds}, "cpu_s",
    "rss_mb"}``."""
    start = time.perf_counter()
    out: dict[str, Any] = {"path": path, "status": "ok", "sha256": None, "error": None,
                           "parsed": None, "bytes": 0, "phases": {}}
    with _outcome(out, path):
        out["bytes"] = os.path.getsize(path)
        resolved = str(Path(path).resolve())
        if known and resolved in known:
            sha = out["sha256"] = file_sha256(path)
            out["phases"]["sha256"] = time.perf_counter() - start
            if not force and sha in known[resolved]:
                out["status"] = "skipped"
        if out["status"] == "ok":
            later = None if out["sha256"] else sha256_beside(path)
            t = time.perf_counter()
            parsed = write_parsed(records_for(path, fmt, sha256=out["sha256"] or SHA256_LATER),
                                  folder)
            out["phases"]["parse"] = time.perf_counter() - t
            if later is not None:
                out["sha256"] = later()
                parsed = attrs.evolve(parsed, source=(*parsed.source[:2], out["sha256"],
                                                      *parsed.source[3:]))
            out["parsed"] = parsed.as_dict()
    out["rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return out


_SCRATCH: list[Any] = []  # this process's scratch database and its folder


def _scratch() -> Database:
    """This process's scratch database, made once (opening a database costs more than
    ingesting a small trace); each task's rows are deleted once exported."""
    if not _SCRATCH:
        tmp = tempfile.TemporaryDirectory(prefix="tlview-shard-")  # removed at exit
        _SCRATCH.extend([open_database(os.path.join(tmp.name, "scratch.duckdb")), tmp])
        atexit.register(_close_scratch)
    return _SCRATCH[0]


def _close_scratch() -> None:
    if _SCRATCH:
        db, tmp = _SCRATCH
        _SCRATCH.clear()
        db.close()
        tmp.cleanup()


def _cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def error_of(result: dict[str, Any]) -> IngestError:
    """The IngestError a failed task reported."""
    path, line, message = result["error"]
    return IngestError(path, line, message)
