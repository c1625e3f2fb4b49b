"""Many files on all cores (or a Dask cluster), one writer: ``tlview ingest -j N``.

Worker processes each turn one file into a shard (cli/shard_task.py: the serial ingest
into a scratch database, exported as Parquet); this process alone writes the database,
committing the shards in the order of the files, so that every source and timeline id,
every row and every message is the serial ingest's. Shards that are ready together go
in as one transaction (each is a whole parsed file: a bad file fails in its worker and
never reaches the database); a commit that fails is retried file by file.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from contextlib import contextmanager
from multiprocessing import get_context
from pathlib import Path
from typing import Any

import attrs
import duckdb
from tlview.ingest import IngestError
from tlview.store import Database
from tlview.store.shards import ShardError, commit_shards, init_set

from .output import say
from .shard_task import error_of, shard_file


def default_jobs() -> int:
    """Every core this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


@attrs.define
class Outcome:
    ingested: int = 0
    failed: list[IngestError] = attrs.Factory(list)
    new_ids: list[int] = attrs.Factory(list)
    results: list[dict[str, Any]] = attrs.Factory(list)  # every task's own report


@contextmanager
def local_pool(jobs: int) -> Iterator[Callable[..., Future[Any]]]:
    """``submit(fn, *args)`` on ``jobs`` worker processes (spawned: a fresh interpreter
    shares no DuckDB state or threads with this one)."""
    with ProcessPoolExecutor(max_workers=jobs, mp_context=get_context("spawn")) as ex:
        try:
            yield ex.submit
        except BaseException:
            ex.shutdown(wait=False, cancel_futures=True)
            raise


def known_files(db: Database) -> dict[str, list[str]]:
    """Resolved path -> sha256s of the sources already in ``db``."""
    out: dict[str, list[str]] = {}
    for path, sha in db.con.execute("SELECT path, sha256 FROM sources").fetchall():
        out.setdefault(path, []).append(sha)
    return out


def ingest_files(db: Database, files: Sequence[tuple[str, str | None]],
                 submit: Callable[..., Any], *, force: bool, shards: str | None,
                 check: Callable[[Database, str, str], tuple[bool, str | None]],
                 report: Callable[[Database, str, Any], list[int]],
                 report_error: Callable[[IngestError], None]) -> Outcome:
    """Shard every file through ``submit`` (a pool's or a Dask client's), commit them
    into ``db`` in order.

    ``check(db, path, sha)``: whether to write the file, and what to say first (the
    serial ingest's re-ingest checks); ``report(db, path, summary)`` prints a file's
    summary and returns its new timeline ids; ``shards`` keeps the shard set there
    (default: a temporary folder, removed)."""
    keep = shards is not None
    folder = init_set(shards if keep else tempfile.mkdtemp(prefix="tlview-ingest-"))
    first = _next_key(folder)
    known = known_files(db)
    out = Outcome()
    try:
        # shards kept are complete (caches too: DuckDB reads them in place); temporary
        # ones carry rows only and the caches are computed here, as an ingest does
        futures = [submit(shard_file, path, fmt, str(folder), first + i, known, force,
                          not keep) for i, (path, fmt) in enumerate(files)]
        i = 0
        while i < len(futures):
            # the next result, and every later one already done: one commit for them all
            ready = [futures[i].result()]
            i += 1
            while i < len(futures) and futures[i].done():
                ready.append(futures[i].result())
                i += 1
            out.results.extend(ready)
            _commit_ready(db, folder, ready, out, check, report, report_error)
            if not keep:
                for r in ready:
                    _remove_shard(folder, r["key"])
    finally:
        if not keep:
            shutil.rmtree(folder, ignore_errors=True)
    return out


def _commit_ready(db: Database, folder: Path, ready: list[dict[str, Any]], out: Outcome,
                  check: Callable[[Database, str, str], tuple[bool, str | None]],
                  report: Callable[[Database, str, Any], list[int]],
                  report_error: Callable[[IngestError], None]) -> None:
    """Commit ``ready`` (in order) in as few transactions as keep the serial ingest's
    checks exact: a file with the bytes of one not yet committed waits for it."""
    batch: list[tuple[dict[str, Any], str | None]] = []
    for r in ready:
        if r["status"] == "failed":
            _flush(db, folder, batch, out, report, report_error)
            batch = []
            err = error_of(r)
            report_error(err)
            out.failed.append(err)
            continue
        if any(b["sha256"] == r["sha256"] for b, _ in batch):
            _flush(db, folder, batch, out, report, report_error)
            batch = []
        go, note = check(db, r["path"], r["sha256"])
        if not go or r["status"] == "skipped":
            _flush(db, folder, batch, out, report, report_error)
            batch = []
            if note:
                say(note)
            continue
        batch.append((r, note))
    _flush(db, folder, batch, out, report, report_error)


def _flush(db: Database, folder: Path, batch: list[tuple[dict[str, Any], str | None]],
           out: Outcome, report: Callable[[Database, str, Any], list[int]],
           report_error: Callable[[IngestError], None]) -> None:
    if not batch:
        return
    try:
        summaries = commit_shards(db, folder, [r["key"] for r, _ in batch])
    except (duckdb.Error, ShardError, OSError) as e:
        if len(batch) == 1:
            err = IngestError(batch[0][0]["path"], None, f"not written: {_first_line(e)}")
            report_error(err)
            out.failed.append(err)
            return
        for one in batch:  # find the one that fails; the others go in
            _flush(db, folder, [one], out, report, report_error)
        return
    for (r, note), s in zip(batch, summaries):
        if note:
            say(note)
        out.new_ids += report(db, r["path"], s)
        out.ingested += 1


def _first_line(e: BaseException) -> str:
    return str(e).splitlines()[0] if str(e) else type(e).__name__


def _next_key(folder: Path) -> int:
    from tlview.store.shards import shard_keys

    keys = shard_keys(folder)
    return (keys[-1] + 1) if keys else 1


def _remove_shard(folder: Path, key: int) -> None:
    for d in folder.iterdir():
        if d.is_dir():
            shutil.rmtree(d / f"source_id={key}", ignore_errors=True)


def say_err(e: IngestError) -> None:
    print(f"tlview: {e}", file=sys.stderr)
