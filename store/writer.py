"""Appending an ingest's records to the database: one transaction per input file.

Events become Arrow batches in their kind's table's columns (records through generated
row functions, ``convert.kind_row``; the compiled parsers and profiler traces hand whole
columns, split by kind here) and go in as one INSERT per kind's table that DuckDB feeds
by pulling batches from the parser, so the memory of an ingest stays flat whatever the
input's size. The parser runs in a thread while DuckDB appends (which releases the GIL),
and DuckDB's memory is capped during the ingest (``TLVIEW_INGEST_MEMORY_LIMIT``, 256MB).
Any exception (bad input, Ctrl-C) rolls the whole ingest back, so the database is exactly
as it was before.
"""

from __future__ import annotations

import datetime as _dt
import os
import queue
import re
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import attrs
import duckdb
import pyarrow as pa
import pyarrow.compute as pc
from tlview.ingest.records import (
    EVENT_KINDS,
    EventColumns,
    FrameInterned,
    MeasuredBatch,
    Record,
    Source,
    StackInterned,
    Timeline,
    TimelineNote,
    columns_accepted,
    dumps,
)

from . import caches, runs
from .convert import EVENT_SCHEMA, KIND_SCHEMAS, OWNED_COLUMNS, kind_row
from .db import Database, insert_arrow

BATCH = 20_000
# DuckDB's memory while one ingest's transaction is open (it writes the rest to the
# file as it goes), so a 1 GB trace never makes a 1 GB process.
INGEST_MEMORY_LIMIT = os.environ.get("TLVIEW_INGEST_MEMORY_LIMIT", "256MB")
if not re.fullmatch(r"\d+(\.\d+)?\s*[KMGT]i?B", INGEST_MEMORY_LIMIT):
    raise ValueError(f"TLVIEW_INGEST_MEMORY_LIMIT={INGEST_MEMORY_LIMIT!r}: expected e.g. 512MB")
# DuckDB threads while the events INSERT runs (the parse thread has the other core).
INSERT_THREADS = int(os.environ.get("TLVIEW_INGEST_INSERT_THREADS", "1"))
# Events of the kinds not being inserted wait, up to this many rows of one kind (one
# DuckDB row group) or this many bytes, for that kind's own INSERT: each statement
# appends whole row groups where the rows are small, and what is held stays bounded
# whatever the input (an XLA dump's buffers, ~600 bytes a row, held by the row count
# alone, raised the peak RSS). Statements of one transaction continue the same row
# groups, so a smaller byte cap costs only statements, and lowers the peak RSS at the
# same times and row groups (measured: docs/benchmarks.md).
HOLD_ROWS = 122_880
HOLD_BYTES = 4 << 20


@attrs.frozen
class IngestSummary:
    """What one ingest wrote: ids of the new source and timelines, event counts."""

    source_id: int
    timeline_ids: dict[str, int]
    counts: dict[str, int]


def write_records(
    db: Database, records: Iterable[Record], *, batch_size: int = BATCH,
    summary_attrs: dict[str, Any] | None = None, sha256: Callable[[], str] | None = None,
    before_commit: Callable[[], None] | None = None,
) -> IngestSummary:
    """Append one source's records atomically. The first record must be its Source;
    ``sha256``, where given, is called at the end for the source's sha256 in place of the
    record's (a file hashed while it is ingested); ``before_commit``: IngestTransaction's."""
    with ingest_transaction(db, before_commit) as txn:
        return _write(db, txn, records, batch_size, summary_attrs, sha256)


def limit_ingest_memory(db: Database) -> None:
    """Hold this connection to the ingest's memory limit from now on (an ingest command's
    reports after the commit, e.g. the ranks of a new trace, are part of the ingest: at
    DuckDB's default, 80% of RAM, a large trace's rank report alone took about as much
    memory as the trace's size: docs/benchmarks.md)."""
    db.con.execute(f"SET memory_limit = '{INGEST_MEMORY_LIMIT}'")


class IngestTransaction:
    """An ingest's transaction, begun here and ended by ``commit`` or ``rollback``, for a
    writer whose transaction spans several calls (many files in one, cli/parallel_ingest.py);
    ``ingest_transaction`` is the block form. DuckDB's memory is held to the ingest's
    limit while it is open; the memory limit and the thread count (lowered for the events
    INSERTs, ``insert_threads``) are as before once it ends, either way. ``before_commit``,
    where given, is called last before the COMMIT: what it raises rolls back (the CLI's
    check for a Ctrl-C that DuckDB dropped, cli/interrupts.py)."""

    def __init__(self, db: Database, before_commit: Callable[[], None] | None = None) -> None:
        self.con = db.con
        self.before_commit = before_commit
        ((self.limit, self.threads),) = db.query("ingest_settings")
        self.con.execute(f"SET memory_limit = '{INGEST_MEMORY_LIMIT}'")
        self.con.execute("BEGIN TRANSACTION")
        self.open = True
        self.lowered = False  # the threads, by insert_threads

    def insert_threads(self) -> None:
        """DuckDB on ``INSERT_THREADS`` for the events INSERTs: the parse (or the workers)
        has the other cores. A no-op where it runs on that many already (TLVIEW_THREADS)."""
        if self.threads != INSERT_THREADS and not self.lowered:
            self.con.execute(f"SET threads = {INSERT_THREADS}")
            self.lowered = True

    def restore_threads(self) -> None:
        """DuckDB's threads as before the transaction (for its caches and summaries); a
        no-op where they are (a SET relaunches DuckDB's threads)."""
        if self.lowered:
            self.con.execute(f"SET threads = {self.threads}")
            self.lowered = False

    def commit(self) -> None:
        """COMMIT (after ``before_commit``); if either fails, roll back and raise."""
        try:
            if self.before_commit is not None:
                self.before_commit()
            self.con.execute("COMMIT")
        except BaseException:
            self.rollback()
            raise
        self.open = False
        self._restore()

    def rollback(self) -> None:
        """ROLLBACK (a no-op once ended). A failed statement may have aborted the
        transaction already; the rollback clears it either way."""
        if not self.open:
            return
        self.open = False
        try:
            self.con.execute("ROLLBACK")
        except Exception:
            pass
        self.lowered = True  # and where a failed block left them lowered (db.one_thread)
        self._restore()

    def _restore(self) -> None:
        self.con.execute(f"SET memory_limit = '{self.limit}'")
        self.restore_threads()


@contextmanager
def ingest_transaction(db: Database, before_commit: Callable[[], None] | None = None
                       ) -> Iterator[IngestTransaction]:
    """One transaction under the ingest's memory limit: committed when the block ends,
    rolled back if it raises (IngestTransaction, ``before_commit`` its)."""
    txn = IngestTransaction(db, before_commit)
    try:
        yield txn
        txn.commit()
    except BaseException:
        txn.rollback()
        raise


def _write(db: Database, txn: IngestTransaction, records: Iterable[Record], batch_size: int,
           summary_attrs: dict[str, Any] | None,
           sha256: Callable[[], str] | None) -> IngestSummary:
    con = db.con
    rows = SourceRows(_parsing(records), db.scalar("next_source_id"),
                      db.scalar("next_timeline_id"), batch_size)
    source = rows.source
    source_id = rows.source_id
    # An INSERT per kind's stream (one for an input of one kind), fed by DuckDB pulling
    # batches from the parser: the process holds a few batches, whatever the input's size.
    kinds = _KindStreams(rows.kind_batches(), rows.failed)
    try:
        # An INSERT appends from one stream in one thread whatever the setting; more
        # threads only add CPU (and workers contending with the parse thread for this
        # machine's two cores; measured: docs/benchmarks.md).
        txn.insert_threads()
        while (kind := kinds.next_kind()) is not None:
            reader = pa.RecordBatchReader.from_batches(KIND_SCHEMAS[kind], kinds.stream(kind))
            con.register("_tlview_batch", reader)
            _interruptible(con, db.queries["append_events"].format(kind=kind), rows.stop)
            con.unregister("_tlview_batch")
    except BaseException:
        try:
            con.unregister("_tlview_batch")
        except duckdb.Error:
            pass  # an aborted transaction refuses it; the rollback clears it anyway
        rows.close()
        if rows.failed and not isinstance(rows.failed[0], KeyboardInterrupt):
            raise rows.failed[0] from None
        raise
    txn.restore_threads()  # (not on the way out of an error: the rollback restores them)
    append_side_tables(db, rows)
    # The source row goes in last of the rows, so that it can carry the ingest's own summary.
    con.execute(
        db.queries["insert_source"],
        [source_id, source.path, source.size, sha256() if sha256 else source.sha256,
         source.format,
         source.tool_version, _dt.datetime.now(),
         dumps({**source.attrs, **(summary_attrs or {}), "counts": dict(rows.counts)})],
    )
    # After the source row: the ranks' caches read it. Only the caches of the kinds written.
    caches.refresh(db, rows.tids.values(), {k for k, n in rows.counts.items() if n})
    runs.assign_unassigned(db)  # the source's run, where no registered root holds it
    return IngestSummary(source_id, rows.tids, dict(rows.counts))


class SourceRows:
    """One source's records as events-table Arrow batches (``batches()``), with what
    they declare beside the events (timelines, notes, frames, stacks) set aside as rows.

    ``source_id`` and the first timeline id are given: the database's next ones for a
    direct ingest, 0 for a shard (store/shards.py), whose ids are placed at commit.
    The lists are complete once ``batches()`` is exhausted.
    """

    def __init__(self, records: Iterator[Record], source_id: int, first_tid: int,
                 batch_size: int = BATCH) -> None:
        source = next(records, None)
        if not isinstance(source, Source):
            raise TypeError("an ingest must begin with its Source record")
        self.source = source
        self.source_id = source_id
        self.next_tid = first_tid
        self.batch_size = batch_size
        self._it = records
        self.tids: dict[str, int] = {}
        self.counts: Counter[str] = Counter()
        self.timelines: list[tuple[Any, ...]] = []
        self.notes: list[tuple[Any, ...]] = []
        self.frames: list[tuple[Any, ...]] = []  # interned frames and stacks (allocator)
        self.stacks: list[tuple[Any, ...]] = []
        self.failed: list[BaseException] = []
        self.stop = threading.Event()  # set on Ctrl-C: the batch generator stops

    def close(self) -> None:
        """Stop reading the records; a parse thread is told to stop and joined. Called
        where an ingest ends early (an error, an interrupt): otherwise the records' end
        waits for the garbage collector (the exception kept in ``failed`` holds this
        object in a cycle), which may run in the parse thread itself."""
        close = getattr(self._it, "close", None)
        if close is not None:
            close()

    def batches(self) -> Iterator[pa.RecordBatch]:
        """Every event of the source as batches of the events view's columns (a shard
        set's one events file); timelines and notes set aside."""
        for kind, batch in self.kind_batches():
            yield _widen(kind, batch)

    def kind_batches(self) -> Iterator[tuple[str, pa.RecordBatch]]:
        """Every event of the source as (kind, batch in that kind's table's columns), each
        kind's rows in order; timelines and notes set aside."""
        source_id = self.source_id
        tids = self.tids
        counts = self.counts
        batch_size = self.batch_size
        rows: dict[str, list[tuple[Any, ...]]] = {}  # each kind's rows not yet sent
        of_class: dict[type, tuple[str, Any, list[tuple[Any, ...]]]] = {}
        seq = 0

        def flush(kind: str) -> tuple[str, pa.RecordBatch]:
            schema = KIND_SCHEMAS[kind]
            mine = rows[kind]
            batch = pa.RecordBatch.from_arrays(
                [pa.array(col, type=f.type) for col, f in zip(zip(*mine), schema)],
                schema=schema)
            mine.clear()
            return kind, batch

        def flush_all() -> Iterator[tuple[str, pa.RecordBatch]]:
            for kind, mine in rows.items():
                if mine:
                    yield flush(kind)

        try:
            for rec in self._it:
                if self.stop.is_set():
                    raise KeyboardInterrupt
                cls = type(rec)
                known = of_class.get(cls)
                if known is None and cls in EVENT_KINDS:
                    kind = EVENT_KINDS[cls]  # type: ignore[index]
                    known = of_class[cls] = (kind, kind_row(cls),  # type: ignore[arg-type]
                                      rows.setdefault(kind, []))
                if known is not None:
                    kind, row, mine = known
                    tid = tids.get(rec.timeline)  # type: ignore[union-attr]
                    if tid is None:
                        raise ValueError(f"event names timeline {rec.timeline!r} "  # type: ignore[union-attr]
                                         "before it was declared")
                    mine.append((source_id, tid, seq, *row(rec)))
                    seq += 1
                    counts[kind] += 1
                    if len(mine) >= batch_size:
                        yield flush(kind)
                elif cls is MeasuredBatch:
                    yield from flush_all()
                    tid = tids.get(rec.timeline)  # type: ignore[union-attr]
                    if tid is None:
                        raise ValueError(f"events name timeline {rec.timeline!r} "  # type: ignore[union-attr]
                                         "before it was declared")
                    yield "kernel_measured", _measured_arrow(rec, source_id, tid, seq)  # type: ignore[arg-type]
                    seq += len(rec)  # type: ignore[arg-type]
                    counts["kernel_measured"] += len(rec)  # type: ignore[arg-type]
                elif cls is EventColumns:
                    yield from flush_all()
                    try:
                        ids = [tids[k] for k in rec.timelines]  # type: ignore[union-attr]
                    except KeyError as e:
                        raise ValueError(f"events name timeline {e.args[0]!r} "
                                         "before it was declared") from None
                    for kind, batch in _columns_by_kind(rec, source_id, ids, seq):  # type: ignore[arg-type]
                        counts[kind] += len(batch)
                        yield kind, batch
                    seq += len(rec)  # type: ignore[arg-type]
                elif cls is Timeline:
                    if rec.key in tids:  # type: ignore[union-attr]
                        raise ValueError(f"timeline {rec.key!r} declared twice")  # type: ignore[union-attr]
                    tids[rec.key] = self.next_tid  # type: ignore[union-attr]
                    self.timelines.append((self.next_tid, source_id, rec.key, rec.name,  # type: ignore[union-attr]
                                           rec.format, rec.device,  # type: ignore[union-attr]
                                           dumps(rec.attrs or None)))  # type: ignore[union-attr]
                    self.next_tid += 1
                elif cls is TimelineNote:
                    self.notes.append((tids[rec.timeline], source_id, dumps(rec.attrs)))  # type: ignore[union-attr]
                elif cls is StackInterned:
                    self.stacks.append((source_id, rec.stack_id, list(rec.frame_ids)))  # type: ignore[union-attr]
                elif cls is FrameInterned:
                    self.frames.append((source_id, rec.frame_id, rec.filename, rec.line,  # type: ignore[union-attr]
                                        rec.name, dumps(rec.attrs or None)))  # type: ignore[union-attr]
                else:
                    raise TypeError(f"unexpected record {cls.__name__}")
            yield from flush_all()
        except BaseException as e:  # DuckDB would re-raise it as its own error type
            self.failed.append(e)
            raise


def _widen(kind: str, batch: pa.RecordBatch) -> pa.RecordBatch:
    """A kind's batch in every column of the events view (NULL where the kind has none)."""
    n = len(batch)
    arrays = []
    for field in EVENT_SCHEMA:
        if field.name == "kind":
            arrays.append(pa.repeat(pa.scalar(kind, pa.string()), n))
        elif (i := batch.schema.get_field_index(field.name)) >= 0:
            arrays.append(batch.column(i))
        else:
            arrays.append(pa.nulls(n, type=field.type))
    return pa.RecordBatch.from_arrays(arrays, schema=EVENT_SCHEMA)


class _KindStreams:
    """The batches of ``SourceRows.kind_batches`` as a stream per kind, each for one
    INSERT: the stream of one kind goes on while the next batches are of that kind;
    batches of other kinds wait until one of those kinds holds ``HOLD_ROWS`` rows or
    ``HOLD_BYTES``, which ends the stream so that the full kind goes in next. An input of one kind is one INSERT; a mix goes in as
    statements of whole row groups. An exception is kept in ``failed`` (DuckDB raises
    its own error type when a stream it pulls from fails)."""

    def __init__(self, pieces: Iterator[tuple[str, pa.RecordBatch]],
                 failed: list[BaseException]) -> None:
        self._pieces = pieces
        self._failed = failed
        self._held: dict[str, list[pa.RecordBatch]] = {}
        self._rows: Counter[str] = Counter()
        self._bytes: Counter[str] = Counter()
        self._done = False

    def _pull(self) -> tuple[str, pa.RecordBatch] | None:
        if self._done:
            return None
        try:
            piece = next(self._pieces, None)
        except BaseException as e:
            if not self._failed:
                self._failed.append(e)
            raise
        if piece is None:
            self._done = True
        return piece

    def _hold(self, kind: str, batch: pa.RecordBatch) -> None:
        self._held.setdefault(kind, []).append(batch)
        self._rows[kind] += len(batch)
        self._bytes[kind] += batch.nbytes

    def _full(self, kind: str) -> bool:
        return self._rows[kind] >= HOLD_ROWS or self._bytes[kind] >= HOLD_BYTES

    def next_kind(self) -> str | None:
        """The kind to insert next (a full one first, else the next batch's), or None
        when every batch has gone in."""
        full = next((k for k in self._rows if self._full(k)), None)
        if full is not None:
            return full
        piece = self._pull()
        if piece is not None:
            self._hold(*piece)
            return piece[0]
        return next((k for k, n in self._rows.items() if n), None)

    def stream(self, kind: str) -> Iterator[pa.RecordBatch]:
        yield from self._held.pop(kind, [])
        self._rows[kind] = self._bytes[kind] = 0
        while (piece := self._pull()) is not None:
            if piece[0] == kind:
                yield piece[1]
                continue
            self._hold(*piece)
            if self._full(piece[0]):
                return


# The side tables' rows as SourceRows keeps them: (name, query, columns, Arrow types).
SIDE_TABLES: tuple[tuple[str, str, list[str], list[Any]], ...] = (
    ("timelines", "append_timelines",
     ["timeline_id", "source_id", "key", "name", "format", "device", "attrs"],
     [pa.int32(), pa.int32()] + [pa.string()] * 5),
    ("notes", "append_timeline_notes", ["timeline_id", "source_id", "attrs"],
     [pa.int32(), pa.int32(), pa.string()]),
    ("frames", "append_frames", ["source_id", "frame_id", "filename", "line", "name", "attrs"],
     [pa.int32(), pa.int32(), pa.string(), pa.int64(), pa.string(), pa.string()]),
    ("stacks", "append_stacks", ["source_id", "stack_id", "frame_ids"],
     [pa.int32(), pa.int32(), pa.list_(pa.int32())]),
)


def append_side_tables(db: Database, rows: SourceRows) -> None:
    """Timelines, their notes, frames and stacks in one batch each (an ingest may
    declare thousands of timelines)."""
    for attr, query, names, types in SIDE_TABLES:
        _append(db.con, db.queries[query], getattr(rows, attr), names, types)


def _interruptible(con: Any, sql: str, stop: threading.Event) -> None:
    """Run a long statement in a thread so that Ctrl-C reaches us meanwhile.

    While DuckDB runs a statement the main thread executes no Python, so a
    KeyboardInterrupt would wait for the end of the whole ingest. Waiting here in
    short joins lets it through; then the statement is interrupted and the caller
    rolls the transaction back.
    """
    errors: list[BaseException] = []

    def run() -> None:
        try:
            con.execute(sql).fetchall()
        except BaseException as e:
            errors.append(e)

    worker = threading.Thread(target=run, name="tlview-insert", daemon=True)
    worker.start()
    try:
        while worker.is_alive():
            worker.join(0.05)
    except KeyboardInterrupt:
        stop.set()
        con.interrupt()
        worker.join()
        _wait_until_free(con)
        raise
    if errors:
        raise errors[0]


def _wait_until_free(con: Any, timeout: float = 5.0) -> None:
    """After an interrupt DuckDB keeps the connection busy for a moment; wait it out."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            con.execute(_PROBE).fetchall()
            return
        except duckdb.ResourceInUseException:
            time.sleep(0.01)
        except duckdb.Error:
            return  # free, with the transaction aborted: the caller rolls back


_PROBE = "SELECT 1"  # the smallest statement: tells a busy connection from a free one


def _owned(n: int, source_id: int, tid: int | pa.Array, seq: int) -> list[pa.Array]:
    """The writer's three columns (``OWNED_COLUMNS``) for ``n`` events: source_id,
    timeline_id (one id, or an array of them), seq from ``seq`` on."""
    tl = tid if isinstance(tid, pa.Array) else pa.repeat(pa.scalar(tid, pa.int32()), n)
    return [pa.repeat(pa.scalar(source_id, pa.int32()), n), tl,
            pc.add(_arange(n), pa.scalar(seq, pa.int64()))]


def _measured_arrow(batch: MeasuredBatch, source_id: int, tid: int, seq: int
                    ) -> pa.RecordBatch:
    """A columnar batch of kernel_measured events in that kind's table's columns."""
    schema = KIND_SCHEMAS["kernel_measured"]
    n = len(batch)
    extra = set(batch.columns) - set(schema.names)
    if extra:
        raise ValueError(f"kernel_measured events with columns {sorted(extra)}, which that "
                         "kind has not")
    arrays = _owned(n, source_id, tid, seq)
    for field in list(schema)[len(OWNED_COLUMNS):]:
        values = batch.columns.get(field.name)
        arrays.append(pa.nulls(n, type=field.type) if values is None
                      else pa.array(values, type=field.type))
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


_ARANGE: list[pa.Array] = [pa.array([], pa.int64())]


def _arange(n: int) -> pa.Array:
    """0, 1, ..., n-1 as int64 (kept, grown on demand: batches reuse it)."""
    if len(_ARANGE[0]) < n:
        _ARANGE[0] = pa.array(range(max(n, 2 * len(_ARANGE[0]))), pa.int64())
    return _ARANGE[0].slice(0, n)


def _columns_by_kind(batch: EventColumns, source_id: int, tids: list[int], seq: int
                     ) -> Iterator[tuple[str, pa.RecordBatch]]:
    """Columnar events (the compiled parsers' output) as one batch per kind they hold, in
    that kind's table's columns, rows in order. A value in a column the kind has not
    would be lost, so it is an error (an ingester's bug)."""
    n = batch.n
    cols = batch.columns
    tl = cols.get("_tl")
    tid: int | pa.Array = (tids[0] if tl is None or len(tids) == 1
                           else pc.take(pa.array(tids, pa.int32()), tl))
    owned = _owned(n, source_id, tid, seq)
    kinds = cols["kind"]
    present = pc.value_counts(kinds)  # one pass: each kind, in order of first row
    values, counts = present.field(0).to_pylist(), present.field(1).to_pylist()
    for kind, count in zip(values, counts):
        schema = KIND_SCHEMAS.get(kind)
        if schema is None:
            raise ValueError(f"event kind {kind!r}: not one of tlview's "
                             f"({', '.join(KIND_SCHEMAS)})")
        mask = None if count == n else pc.equal(kinds, kind)
        for name, col in cols.items():
            if (name in ("kind", "_tl") or col.null_count == n
                    or schema.get_field_index(name) >= 0):
                continue
            if mask is None or pc.filter(col, mask).null_count < count:
                raise ValueError(f"{kind} events with a value in column {name!r}, which "
                                 "that kind has not")
        arrays = owned + [pa.nulls(n, type=f.type) if f.name not in cols else cols[f.name]
                          for f in list(schema)[len(OWNED_COLUMNS):]]
        if mask is not None:
            arrays = [pc.filter(a, mask) for a in arrays]
        yield kind, pa.RecordBatch.from_arrays(arrays, schema=schema)


def _parsing(records: Iterable[Record]) -> Iterator[Record]:
    """``records`` as the writers read them. Where a compiled twin parses them
    (``compiled_twin``: ingest.source.Records, known once the first record, the Source,
    is out), the parse runs in a thread beside the database's work (``_in_background``):
    the core releases the GIL while it reads. A Python parser holds the GIL throughout,
    so in a thread it would only take turns with the writer's own Python: it runs in
    this thread (1-4% less time on 50-100 MB torch logs and TORCH_TRACE logs, medians of
    3-5 runs: docs/benchmarks.md). Whichever thread reads the records closes them: a
    generator closed from another thread while it runs there raises (an interrupted
    ingest's, finalized as it ends)."""
    it = iter(records)
    mine = True  # this thread reads, and closes, ``it``
    try:
        with columns_accepted():
            first = next(it, None)
        if first is None:
            return
        yield first
        if getattr(records, "compiled_twin", False):
            mine = False  # the parse thread's from here on (_in_background closes it)
            yield from _in_background(it)
            return
        while buf := _pull(it):
            yield from buf
    finally:
        close = getattr(it, "close", None)
        if mine and close is not None:
            close()


def _pull(it: Iterator[Record], chunk: int = 256) -> list[Record]:
    """The next ``chunk`` records of ``it`` (fewer at a batch of columns, which is handed
    over at once, or at the end), read where a parser may yield columns: only while it
    reads, so that no other reader in this thread gets columns it did not ask for."""
    buf: list[Record] = []
    with columns_accepted():  # SourceRows takes EventColumns
        for rec in it:
            buf.append(rec)
            if len(buf) >= chunk or isinstance(rec, (MeasuredBatch, EventColumns)):
                break
    return buf


_DONE = object()


class _Failed:
    def __init__(self, exc: BaseException) -> None:
        self.exc = exc


def _in_background(records: Iterable[Record]) -> Iterator[Record]:
    """``records``, produced by a thread so that parsing overlaps the database's work.

    DuckDB releases the GIL while it appends a batch, so the parser (in the thread)
    runs meanwhile. An exception in the parser is raised here, in the caller's thread;
    when the caller stops early (an error, Ctrl-C) the thread is told to stop and joined.
    """
    q: queue.Queue[Any] = queue.Queue(maxsize=4)
    stop = threading.Event()

    def hand(item: Any) -> bool:
        """``item`` to the caller; False once it has stopped taking them (a full queue
        waits only while it may still take them)."""
        while not stop.is_set():
            try:
                q.put(item, timeout=0.05)
                return True
            except queue.Full:
                pass
        return False

    def produce() -> None:
        it = iter(records)
        try:
            while not stop.is_set():
                buf = _pull(it)
                if not buf:
                    hand(_DONE)
                    return
                if not hand(buf):
                    return
        except BaseException as e:  # handed to the caller's thread
            hand(_Failed(e))
        finally:
            close = getattr(it, "close", None)
            if close is not None:
                close()

    thread = threading.Thread(target=produce, name="tlview-parse", daemon=True)
    thread.start()
    try:
        while True:
            item = q.get()
            if item is _DONE:
                return
            if isinstance(item, _Failed):
                raise item.exc
            yield from item
    finally:
        stop.set()
        # Closed by the garbage collector in the parse thread itself (an interrupted
        # ingest's records): it stops at its next chunk, and closes them.
        while thread.is_alive() and thread is not threading.current_thread():
            try:
                q.get_nowait()
            except queue.Empty:
                thread.join(0.01)


def _append(con: Any, query: str, rows: list[tuple[Any, ...]], names: list[str],
            types: list[Any]) -> None:
    """``query`` (an INSERT ... SELECT FROM _tlview_rows) over ``rows`` as one Arrow batch."""
    if not rows:
        return
    table = pa.Table.from_arrays(
        [pa.array(col, type=t) for col, t in zip(zip(*rows), types)], names=names)
    insert_arrow(con, query, "_tlview_rows", table)
