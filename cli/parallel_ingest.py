"""Many files on all cores (or a Dask cluster), one writer: ``tlview ingest -j N``.

Worker processes each parse one file into Arrow streams (cli/shard_task.py,
store/parsed_files.py); this process alone writes the database, appending the files in
their order, so that every source and timeline id, every row and every message is the
serial ingest's. A file reaches the writer whole (a bad file fails in its worker and
never reaches the database), so many files share one transaction: the writer appends
them, a few MB at a time, while the workers parse the next ones, and computes the caches, commits
and queries the summaries once for them all (``GroupWriter``). A transaction that fails
is retried file by file.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from contextlib import contextmanager
from multiprocessing import get_all_start_methods, get_context
from pathlib import Path
from typing import Any

import attrs
import duckdb
import pyarrow as pa
from tlview.ingest import IngestError
from tlview.store import Database, IngestSummary, caches
from tlview.store.parsed_files import Parsed, append_parsed, remove_parsed
from tlview.store.shards import ShardError, commit_shards, init_set, shard_keys
from tlview.store.writer import IngestTransaction

from .interrupts import quiet_worker, raise_dropped
from .output import say
from .shard_task import error_of, parse_file, shard_file


@attrs.define
class Outcome:
    ingested: int = 0
    failed: list[IngestError] = attrs.Factory(list)
    new_ids: list[int] = attrs.Factory(list)
    results: list[dict[str, Any]] = attrs.Factory(list)  # every task's own report
    # the writer's seconds by phase (wait, append, caches, commit, report)
    phases: dict[str, float] = attrs.Factory(dict)
    transactions: int = 0


def can_fork() -> bool:
    """Whether ``local_pool(fork=True)`` forks its workers (Linux)."""
    return sys.platform == "linux" and "fork" in get_all_start_methods()


@contextmanager
def local_pool(jobs: int, *, fork: bool = False) -> Iterator[Callable[..., Future[Any]]]:
    """``submit(fn, *args)`` on ``jobs`` worker processes, started now.

    Spawned (a fresh interpreter shares no DuckDB state or threads with this one), or
    with ``fork`` forked where the system allows it (Linux), for tasks that use no
    DuckDB: a forked worker starts in milliseconds with tlview imported, a spawned one
    spends ~1 s of CPU on its imports, as much as parsing a 25 MB trace. Start a fork
    pool before opening a database, so that no DuckDB thread is running. The workers
    leave Ctrl-C to this process (cli/interrupts.py); on the way out of an exception
    (Ctrl-C, SIGTERM) they are ended, not waited for (``stop_workers``)."""
    method = "fork" if fork and can_fork() else "spawn"
    with ProcessPoolExecutor(max_workers=jobs, mp_context=get_context(method),
                             initializer=quiet_worker) as ex:
        try:
            if method == "fork":
                ex.submit(os.getpid).result()  # forks every worker, now
            yield ex.submit
        except BaseException:
            stop_workers(ex.submit)
            raise


def stop_workers(submit: Callable[..., Any]) -> None:
    """End the workers of a local pool's ``submit`` now, its queued files cancelled: after
    an interrupt the files they parse are unfinished, and waiting for them would not stop
    the ingest. (A Dask client's ``submit``: nothing to do here.)"""
    ex = getattr(submit, "__self__", None)
    if not isinstance(ex, ProcessPoolExecutor):
        return
    workers = list((ex._processes or {}).values())  # no public way before Python 3.14
    ex.shutdown(wait=False, cancel_futures=True)
    for p in workers:
        if p.is_alive():
            p.terminate()
    for p in workers:
        p.join(5)


def known_files(db: Database) -> dict[str, list[str]]:
    """Resolved path -> sha256s of the sources already in ``db``."""
    out: dict[str, list[str]] = {}
    for path, sha in db.query("source_sha256s"):
        out.setdefault(path, []).append(sha)
    return out


Check = Callable[[Database, str, str], tuple[bool, "str | None"]]
Report = Callable[[Database, list[tuple[str, IngestSummary, "str | None"]]], list[int]]


def ingest_files(db: Database, files: Sequence[tuple[str, str | None]],
                 submit: Callable[..., Any], *, force: bool, shards: str | None,
                 check: Check, report: Report,
                 report_error: Callable[[IngestError], None]) -> Outcome:
    """Parse every file through ``submit`` (a pool's or a Dask client's), write them into
    ``db`` in order.

    ``check(db, path, sha)``: whether to write the file, and what to say first (the
    serial ingest's re-ingest checks); ``report(db, [(path, summary, note)])`` prints
    files' notes and summaries, in order, and returns their new timeline ids; ``shards``
    keeps complete Parquet shards there (store/shards.py), committed from there."""
    if shards is not None:
        return _ingest_via_shards(db, files, submit, force=force, folder=shards,
                                  check=check, report=report, report_error=report_error)
    known = known_files(db)
    folder = Path(tempfile.mkdtemp(prefix="tlview-ingest-"))
    out = Outcome()
    writer = GroupWriter(db, out, check, report, report_error,
                         {sha for shas in known.values() for sha in shas})
    try:
        futures = [submit(parse_file, path, fmt, str(folder / str(i)), known, force)
                   for i, (path, fmt) in enumerate(files)]
        i = 0
        while i < len(futures):
            # the next result, and every later one already done: appended together
            t = time.perf_counter()
            ready = [(futures[i].result(), folder / str(i))]
            writer.tick("wait", t)
            i += 1
            while i < len(futures) and futures[i].done():
                ready.append((futures[i].result(), folder / str(i)))
                i += 1
            out.results += [r for r, _ in ready]
            writer.add(ready)
        writer.close()
    except BaseException:
        stop_workers(submit)  # before the folder goes: a worker may still write there
        raise
    finally:
        writer.abandon()
        shutil.rmtree(folder, ignore_errors=True)
    return out


# Parsed bytes (the workers' Arrow streams) per transaction. They stay on disk until
# it commits: a transaction that fails is written again, file by file. An interrupt loses
# the open transaction's files; TLVIEW_INGEST_GROUP_MB sets it (0: a file per transaction).
GROUP_BYTES = int(float(os.environ.get("TLVIEW_INGEST_GROUP_MB", "256")) * (1 << 20))
# Parsed files wait for the writer's next append until they hold this many bytes (or the
# group closes): an append costs ~0.1 s of statements whatever it holds (an INSERT per
# table, the runs' assignment), which a thousand small dumps paid each
# (docs/benchmarks.md); the files wait on disk, not in memory.
APPEND_BYTES = 16 << 20
WRITE_ERRORS = (duckdb.Error, OSError, pa.ArrowException, ShardError)


@attrs.define
class _File:
    """A parsed file in a group, and what became of it: written (its summary and the
    note to print first), or only a note (skipped), or an error (not written)."""

    result: dict[str, Any]
    folder: Path
    summary: IngestSummary | None = None
    note: str | None = None
    error: IngestError | None = None


class GroupWriter:
    """The one writer: parsed files appended in file order, many to a transaction.

    Each file is checked (the serial ingest's re-ingest checks, inside the transaction:
    they see the files before it) as it comes, and appended with the next ones once they
    hold ``APPEND_BYTES`` (one statement per table for them all); at ``close`` (the group's
    streams reach ``GROUP_BYTES``, or the last file came) the caches of all its new
    timelines are computed, the transaction commits, and what the serial ingest would
    have printed comes out in its order, the summaries from one query. A transaction that
    fails is rolled back, and its files are written again one transaction each: the one
    that fails is reported, the others go in."""

    def __init__(self, db: Database, out: Outcome, check: Check, report: Report,
                 report_error: Callable[[IngestError], None], shas: set[str]) -> None:
        self.db, self.out, self.check = db, out, check
        self.report, self.report_error = report, report_error
        self.items: list[_File | IngestError] = []  # in file order
        self.nbytes = 0
        self.pending: list[_File] = []  # checked, not yet appended (APPEND_BYTES)
        self.pending_bytes = 0
        self.txn: IngestTransaction | None = None
        self.broken = False  # the group's transaction failed: rewrite file by file
        # The sha256s of every source in the database (``shas``) and of every file checked
        # since: a file whose bytes are none of them is not checked (its answer is known:
        # go, nothing to say). A statement per file was 11% of the writer's samples for
        # bench hang's 1,024 JSON dumps (py-spy, load ~10).
        self.shas = shas
        self.removers: list[threading.Thread] = []

    def tick(self, phase: str, since: float) -> None:
        self.out.phases[phase] = self.out.phases.get(phase, 0.0) + time.perf_counter() - since

    def add(self, ready: list[tuple[dict[str, Any], Path]]) -> None:
        """Tasks' results (``parse_file``'s) with their folders, in file order: checked
        one by one, appended together once they hold ``APPEND_BYTES`` (``flush``)."""
        for r, folder in ready:
            if r["status"] == "failed":
                self.items.append(error_of(r))
                remove_parsed(folder)
                continue
            f = _File(r, folder)
            self.items.append(f)
            if self.broken:
                continue
            if r["sha256"] not in self.shas:
                go = True
            else:
                if any(p.result["sha256"] == r["sha256"] for p in self.pending):
                    self.flush()  # the check must see the file of the same bytes
                go, f.note = self.check(self.db, r["path"], r["sha256"])
            self.shas.add(r["sha256"])
            if go and r["status"] != "skipped":
                self.pending.append(f)
                self.pending_bytes += r["parsed"]["nbytes"]
                self.nbytes += r["parsed"]["nbytes"]
                if self.nbytes >= GROUP_BYTES:
                    self.close()
                elif self.pending_bytes >= APPEND_BYTES:
                    self.flush()

    def flush(self) -> None:
        """Append the files checked and not yet appended."""
        pending, self.pending, self.pending_bytes = self.pending, [], 0
        self._append(pending)

    def _append(self, files: list[_File]) -> None:
        """Append ``files`` in the open transaction (begun here if none); if it fails,
        it is rolled back and the group will be written file by file."""
        if not files or self.broken:
            return
        t = time.perf_counter()
        try:
            if self.txn is None:  # raise_dropped: a Ctrl-C DuckDB dropped is not committed
                self.txn = IngestTransaction(self.db, raise_dropped)
                # one thread: the workers have the other cores (a second thread only
                # contends with them; the transaction's end restores the setting)
                self.txn.insert_threads()
            summaries = append_parsed(self.db, [(f.folder, Parsed.from_dict(f.result["parsed"]))
                                                for f in files])
            for f, summary in zip(files, summaries):
                f.summary = summary
        except WRITE_ERRORS:
            self._rollback()
            raise_dropped()  # a Ctrl-C whose exception DuckDB dropped: not a write error
            self.broken = True
        self.tick("append", t)

    def _commit(self, files: list[_File]) -> None:
        """The caches of ``files``' new timelines, then COMMIT."""
        if self.txn is None:
            return
        t = time.perf_counter()
        self.txn.restore_threads()  # the workers may be done
        written = [f.summary for f in files if f.summary]
        # only the caches of the kinds written (the timelines are new, as a serial ingest's)
        caches.refresh(self.db, [tid for s in written for tid in s.timeline_ids.values()],
                       {k for s in written for k, n in s.counts.items() if n})
        self.tick("caches", t)
        t = time.perf_counter()
        txn, self.txn = self.txn, None
        txn.commit()
        self.out.transactions += 1
        self.tick("commit", t)

    def _rollback(self) -> None:
        txn, self.txn = self.txn, None
        if txn is not None:
            txn.rollback()

    def close(self) -> None:
        """Commit the group (or write its files again one by one), print its report."""
        self.flush()
        files = [f for f in self.items if isinstance(f, _File)]
        if not self.broken:
            try:
                self._commit(files)
            except WRITE_ERRORS:
                self._rollback()
                raise_dropped()
                self.broken = True
        if self.broken:
            self._one_by_one(files)
        t = time.perf_counter()
        run: list[tuple[str, IngestSummary, str | None]] = []
        for item in self.items:
            if isinstance(item, _File) and item.summary is not None:
                run.append((item.result["path"], item.summary, item.note))
                continue
            self._report(run)
            run = []
            if isinstance(item, IngestError):
                self.out.failed.append(item)
                self.report_error(item)
            elif item.error is not None:
                self.out.failed.append(item.error)
                self.report_error(item.error)
            elif item.note:
                say(item.note)
        self._report(run)
        self.tick("report", t)
        # the group's streams removed in a thread, beside the next group's work (their
        # unlinks, ~7 per dump, were 8% of the writer's samples in bench hang, JSON)
        remover = threading.Thread(target=_remove_all, args=([f.folder for f in files],),
                                   name="tlview-remove", daemon=True)
        remover.start()
        self.removers.append(remover)
        self.items, self.nbytes, self.broken = [], 0, False

    def _one_by_one(self, files: list[_File]) -> None:
        for f in files:
            f.summary = f.note = None
            try:
                r = f.result
                go, f.note = self.check(self.db, r["path"], r["sha256"])
                if not go or r["status"] == "skipped":
                    continue
                self.txn = IngestTransaction(self.db, raise_dropped)
                (f.summary,) = append_parsed(self.db, [(f.folder, Parsed.from_dict(r["parsed"]))])
                self._commit([f])
            except WRITE_ERRORS as e:
                self._rollback()
                raise_dropped()  # else each file after it would be tried again
                f.summary = None
                f.error = IngestError(f.result["path"], None, f"not written: {_first_line(e)}")

    def _report(self, run: list[tuple[str, IngestSummary, str | None]]) -> None:
        if run:
            self.out.new_ids += self.report(self.db, run)
            self.out.ingested += len(run)

    def abandon(self) -> None:
        """Roll back a transaction left open (an exception, Ctrl-C); wait for the
        removals of the groups' streams."""
        self._rollback()
        for remover in self.removers:
            remover.join()


def _ingest_via_shards(db: Database, files: Sequence[tuple[str, str | None]],
                       submit: Callable[..., Any], *, force: bool, folder: str,
                       check: Check, report: Report,
                       report_error: Callable[[IngestError], None]) -> Outcome:
    """``ingest -j --shards DIR``: complete Parquet shards kept in DIR, each committed
    from there in its own transaction."""
    root = init_set(folder)
    keys = shard_keys(root)
    first = (keys[-1] + 1) if keys else 1
    known = known_files(db)
    out = Outcome()
    futures = [submit(shard_file, path, fmt, str(root), first + i, known, force)
               for i, (path, fmt) in enumerate(files)]
    for fut in futures:
        r = fut.result()
        out.results.append(r)
        if r["status"] == "failed":
            err = error_of(r)
            report_error(err)
            out.failed.append(err)
            continue
        go, note = check(db, r["path"], r["sha256"])
        if not go or r["status"] == "skipped":
            if note:
                say(note)
            continue
        try:
            (summary,) = commit_shards(db, root, [r["key"]], raise_dropped)
        except WRITE_ERRORS as e:
            err = IngestError(r["path"], None, f"not written: {_first_line(e)}")
            report_error(err)
            out.failed.append(err)
            continue
        out.new_ids += report(db, [(r["path"], summary, note)])
        out.ingested += 1
    return out


def _remove_all(folders: list[Path]) -> None:
    for folder in folders:
        remove_parsed(folder)


def _first_line(e: BaseException) -> str:
    return str(e).splitlines()[0] if str(e) else type(e).__name__


def say_err(e: IngestError) -> None:
    print(f"tlview: {e}", file=sys.stderr)
