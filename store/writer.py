"""Appending an ingest's records to the database: one transaction per input file.

Events are buffered into Arrow batches and appended with one INSERT ... SELECT
per batch; profiler traces hand whole columnar batches (``MeasuredBatch``), which
go in as one INSERT that DuckDB feeds by pulling batches from the parser, so the
memory of a huge trace's ingest stays flat. The parser runs in a thread while
DuckDB appends (which releases the GIL), and DuckDB's memory is capped during the
ingest (``TLVIEW_INGEST_MEMORY_LIMIT``, 512MB). Any exception (bad input, Ctrl-C) rolls the whole ingest back, so the
database is exactly as it was before.
"""

from __future__ import annotations

import datetime as _dt
import os
import queue
import re
import threading
from collections import Counter
from collections.abc import Iterable, Iterator
from typing import Any

import attrs
import pyarrow as pa

from . import caches
from .convert import EVENT_COLUMNS, EVENT_SCHEMA, dumps, event_row
from .db import Database
from .records import EVENT_KINDS, MeasuredBatch, Record, Source, Timeline, TimelineNote

BATCH = 20_000
# DuckDB's memory while one ingest's transaction is open (it writes the rest to the
# file as it goes), so a 1 GB trace never makes a 1 GB process.
INGEST_MEMORY_LIMIT = os.environ.get("TLVIEW_INGEST_MEMORY_LIMIT", "512MB")
if not re.fullmatch(r"\d+(\.\d+)?\s*[KMGT]i?B", INGEST_MEMORY_LIMIT):
    raise ValueError(f"TLVIEW_INGEST_MEMORY_LIMIT={INGEST_MEMORY_LIMIT!r}: expected e.g. 512MB")


@attrs.frozen
class IngestSummary:
    """What one ingest wrote: ids of the new source and timelines, event counts."""

    source_id: int
    timeline_ids: dict[str, int]
    counts: dict[str, int]


def write_records(
    db: Database, records: Iterable[Record], *, batch_size: int = BATCH,
    summary_attrs: dict[str, Any] | None = None,
) -> IngestSummary:
    """Append one source's records atomically. The first record must be its Source."""
    con = db.con
    limit = con.execute("SELECT current_setting('memory_limit')").fetchone()[0]
    con.execute(f"SET memory_limit = '{INGEST_MEMORY_LIMIT}'")
    con.execute("BEGIN TRANSACTION")
    try:
        result = _write(db, records, batch_size, summary_attrs)
        con.execute("COMMIT")
    except BaseException:
        try:
            con.execute("ROLLBACK")
        except Exception:
            pass
        raise
    finally:
        con.execute(f"SET memory_limit = '{limit}'")
    return result


def _write(db: Database, records: Iterable[Record], batch_size: int,
           summary_attrs: dict[str, Any] | None) -> IngestSummary:
    con = db.con
    it = _in_background(records)
    source = next(it, None)
    if not isinstance(source, Source):
        raise TypeError("an ingest must begin with its Source record")
    source_id = db.scalar("next_source_id")
    next_tid = db.scalar("next_timeline_id")
    tids: dict[str, int] = {}
    counts: Counter[str] = Counter()
    rows: list[tuple[Any, ...]] = []
    timelines: list[tuple[Any, ...]] = []
    notes: list[tuple[Any, ...]] = []
    seq = 0

    def flush() -> None:
        nonlocal rows
        if not rows:
            return
        table = pa.Table.from_arrays(
            [pa.array(col, type=EVENT_SCHEMA.field(i).type)
             for i, col in enumerate(zip(*rows))] if rows else [],
            schema=EVENT_SCHEMA,
        )
        con.register("_tlview_batch", table)
        try:
            con.execute(db.queries["append_events"]).fetchall()
        finally:
            con.unregister("_tlview_batch")
        rows = []

    pending: list[Record] = []  # records read ahead by a batch stream, not yet written

    def stream_batches(first: MeasuredBatch) -> None:
        """Append ``first`` and every MeasuredBatch right after it in ONE statement.

        DuckDB pulls the batches from the parser as it inserts, so an ingest of
        millions of measured events holds about one batch in memory (separate
        INSERTs per batch would keep all of the transaction's rows in memory).
        """
        nonlocal seq
        failed: list[BaseException] = []

        def arrow_batches() -> Iterator[pa.RecordBatch]:
            nonlocal seq
            batch = first
            try:
                while True:
                    tid = tids.get(batch.timeline)
                    if tid is None:
                        raise ValueError(
                            f"events name timeline {batch.timeline!r} before it was declared")
                    yield _batch_arrow(batch, source_id, tid, seq)
                    seq += len(batch)
                    counts["kernel_measured"] += len(batch)
                    nxt = next(it, None)
                    if not isinstance(nxt, MeasuredBatch):
                        if nxt is not None:
                            pending.append(nxt)
                        return
                    batch = nxt
            except BaseException as e:  # DuckDB would re-raise it as its own error type
                failed.append(e)
                raise

        reader = pa.RecordBatchReader.from_batches(EVENT_SCHEMA, arrow_batches())
        con.register("_tlview_batch", reader)
        try:
            con.execute(db.queries["append_events"]).fetchall()
        except BaseException:
            if failed:
                raise failed[0] from None
            raise
        finally:
            con.unregister("_tlview_batch")

    while True:
        rec = pending.pop() if pending else next(it, None)
        if rec is None:
            break
        if type(rec) in EVENT_KINDS:
            row = event_row(rec)  # type: ignore[arg-type]
            key = row.pop("timeline")
            tid = tids.get(key)
            if tid is None:
                raise ValueError(f"event names timeline {key!r} before it was declared")
            row["timeline_id"] = tid
            row["source_id"] = source_id
            row["seq"] = seq
            seq += 1
            get = row.get
            rows.append(tuple([get(c) for c in EVENT_COLUMNS]))
            counts[row["kind"]] += 1
            if len(rows) >= batch_size:
                flush()
        elif isinstance(rec, MeasuredBatch):
            flush()
            stream_batches(rec)
        elif isinstance(rec, Timeline):
            if rec.key in tids:
                raise ValueError(f"timeline {rec.key!r} declared twice")
            tids[rec.key] = next_tid
            timelines.append((next_tid, source_id, rec.key, rec.name, rec.format, rec.device,
                              dumps(rec.attrs or None)))
            next_tid += 1
        elif isinstance(rec, TimelineNote):
            notes.append((tids[rec.timeline], source_id, dumps(rec.attrs)))
        else:
            raise TypeError(f"unexpected record {type(rec).__name__}")
    flush()
    # Timelines and their notes in one batch each (an ingest may declare thousands).
    _append(con, db.queries["append_timelines"], timelines,
            ["timeline_id", "source_id", "key", "name", "format", "device", "attrs"],
            [pa.int32(), pa.int32()] + [pa.string()] * 5)
    _append(con, db.queries["append_timeline_notes"], notes,
            ["timeline_id", "source_id", "attrs"], [pa.int32(), pa.int32(), pa.string()])
    caches.refresh(db, tids.values())
    # The source row goes in last, so that it can carry the ingest's own summary.
    con.execute(
        db.queries["insert_source"],
        [source_id, source.path, source.size, source.sha256, source.format,
         source.tool_version, _dt.datetime.now(),
         dumps({**source.attrs, **(summary_attrs or {}), "counts": dict(counts)})],
    )
    return IngestSummary(source_id, tids, dict(counts))


def _batch_arrow(batch: MeasuredBatch, source_id: int, tid: int, seq: int) -> pa.RecordBatch:
    """A columnar batch of kernel_measured events as one Arrow record batch."""
    n = len(batch)
    arrays = []
    for field in EVENT_SCHEMA:
        values = batch.columns.get(field.name)
        if values is not None:
            arrays.append(pa.array(values, type=field.type))
        elif field.name == "source_id":
            arrays.append(pa.array([source_id] * n, type=field.type))
        elif field.name == "timeline_id":
            arrays.append(pa.array([tid] * n, type=field.type))
        elif field.name == "seq":
            arrays.append(pa.array(range(seq, seq + n), type=field.type))
        elif field.name == "kind":
            arrays.append(pa.array(["kernel_measured"] * n, type=field.type))
        else:
            arrays.append(pa.nulls(n, type=field.type))
    return pa.RecordBatch.from_arrays(arrays, schema=EVENT_SCHEMA)


_DONE = object()


class _Failed:
    def __init__(self, exc: BaseException) -> None:
        self.exc = exc


def _in_background(records: Iterable[Record], chunk: int = 256) -> Iterator[Record]:
    """``records``, produced by a thread so that parsing overlaps the database's work.

    DuckDB releases the GIL while it appends a batch, so the parser (in the thread)
    runs meanwhile. An exception in the parser is raised here, in the caller's thread;
    when the caller stops early (an error, Ctrl-C) the thread is told to stop and joined.
    """
    q: queue.Queue[Any] = queue.Queue(maxsize=4)
    stop = threading.Event()

    def produce() -> None:
        it = iter(records)
        buf: list[Record] = []
        try:
            for rec in it:
                buf.append(rec)
                if len(buf) >= chunk or isinstance(rec, MeasuredBatch):
                    q.put(buf)
                    buf = []
                if stop.is_set():
                    return
            q.put(buf)
            q.put(_DONE)
        except BaseException as e:  # handed to the caller's thread
            q.put(_Failed(e))
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
        while thread.is_alive():
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
    con.register("_tlview_rows", table)
    try:
        con.execute(query).fetchall()
    finally:
        con.unregister("_tlview_rows")
