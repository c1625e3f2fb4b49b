"""Appending an ingest's records to the database: one transaction per input file.

Events are buffered into Arrow batches and appended with one INSERT ... SELECT
per batch. Any exception (bad input, Ctrl-C) rolls the whole ingest back, so the
database is exactly as it was before.
"""

from __future__ import annotations

import datetime as _dt
from collections import Counter
from collections.abc import Iterable
from typing import Any

import attrs
import pyarrow as pa

from . import caches
from .convert import EVENT_COLUMNS, EVENT_SCHEMA, dumps, event_row
from .db import Database
from .records import EVENT_KINDS, Record, Source, Timeline, TimelineNote

BATCH = 20_000


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
    return result


def _write(db: Database, records: Iterable[Record], batch_size: int,
           summary_attrs: dict[str, Any] | None) -> IngestSummary:
    con = db.con
    it = iter(records)
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

    for rec in it:
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
