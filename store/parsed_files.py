"""A parsed file's rows as Arrow IPC streams: what a worker of ``tlview ingest -j`` hands
the one writer.

A worker parses its file into a folder of its own (``write_parsed``): one stream per
event kind (in that kind's table's columns, rows in ``seq`` order) and per side table,
source id 0 and timelines numbered from 0, as a shard's (store/shards.py). The writer
appends the folder inside the transaction it holds (``append_parsed``), giving the rows
their database ids. IPC and not Parquet: nothing is compressed or encoded twice (the
folder lives a few seconds in the page cache), and DuckDB scans the batches as they are
read. No caches here: the writer computes them once for every file of its transaction.
"""

from __future__ import annotations

import datetime as _dt
import os
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import attrs
import pyarrow as pa
import pyarrow.compute as pc
from tlview.ingest.records import dumps

from . import runs
from .convert import KIND_SCHEMAS
from .db import Database, insert_arrow
from .writer import SIDE_TABLES, IngestSummary, SourceRows, _parsing

SOURCE_COLUMNS = ("path", "size", "sha256", "format", "tool_version")


@attrs.frozen
class Parsed:
    """What ``write_parsed`` wrote: the source row (less its ids and time), the
    timelines' keys in id order, the kinds with a stream, the bytes of the streams. Plain
    values, so that it crosses processes (``as_dict``/``from_dict``)."""

    source: tuple[Any, ...]  # SOURCE_COLUMNS, then the attrs JSON (with the counts)
    timelines: tuple[str, ...]
    kinds: tuple[str, ...]
    counts: dict[str, int]
    nbytes: int

    def as_dict(self) -> dict[str, Any]:
        return attrs.asdict(self, recurse=False)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Parsed:
        return cls(tuple(d["source"]), tuple(d["timelines"]), tuple(d["kinds"]),
                   dict(d["counts"]), d["nbytes"])


def _stream(folder: Path, table: str) -> Path:
    return folder / f"{table}.arrow"


def write_parsed(records: Iterable[Any], folder: str | Path) -> Parsed:
    """One source's records (its Source first) as IPC streams in ``folder`` (made here)."""
    root = Path(folder)
    root.mkdir(parents=True, exist_ok=True)
    rows = SourceRows(_parsing(records), 0, 0)
    writers: dict[str, Any] = {}
    try:
        for kind, batch in rows.kind_batches():
            w = writers.get(kind)
            if w is None:
                w = writers[kind] = pa.ipc.new_stream(str(_stream(root, f"events_{kind}")),
                                                      KIND_SCHEMAS[kind])
            w.write_batch(batch)
    finally:
        rows.close()
        for w in writers.values():
            w.close()
    for attr, _, names, types in SIDE_TABLES:
        data = getattr(rows, attr)
        if not data:
            continue
        table = pa.Table.from_arrays(
            [pa.array(col, type=t) for col, t in zip(zip(*data), types)], names=names)
        with pa.ipc.new_stream(str(_stream(root, attr)), table.schema) as w:
            w.write_table(table)
    src = rows.source
    nbytes = sum(p.stat().st_size for p in root.iterdir())
    return Parsed(
        (src.path, src.size, src.sha256, src.format, src.tool_version,
         dumps({**src.attrs, "counts": dict(rows.counts)})),
        tuple(key for _, _, key, *_ in rows.timelines), tuple(sorted(writers)),
        dict(rows.counts), nbytes)


def append_parsed(db: Database, files: Sequence[tuple[str | Path, Parsed]]
                  ) -> list[IngestSummary]:
    """Append the rows ``write_parsed`` wrote in each folder of ``files`` to ``db``, in
    order, with the next source and timeline ids, in the transaction the caller holds:
    one INSERT per table for them all (a statement costs milliseconds, which hundreds
    of small traces would pay each), the sources rows last, as an ingest's. The caller
    refreshes the caches of the new timelines."""
    if not files:
        return []
    con = db.con
    sid = db.scalar("next_source_id")
    base = db.scalar("next_timeline_id")
    placed: list[tuple[Path, int, int]] = []  # folder, source id, first timeline id
    out = []
    for folder, parsed in files:
        placed.append((Path(folder), sid, base))
        out.append(IngestSummary(sid, {k: base + i for i, k in enumerate(parsed.timelines)},
                                 dict(parsed.counts)))
        sid += 1
        base += len(parsed.timelines)
    kinds = sorted({k for _, p in files for k in p.kinds})
    for table, stream in [(f"events_{k}", f"events_{k}") for k in kinds] + [
            (_TABLES[attr], attr) for attr, *_ in SIDE_TABLES]:
        paths = [(f / f"{stream}.arrow", s, b) for f, s, b in placed
                 if (f / f"{stream}.arrow").exists()]
        if paths:
            _insert(con, table, paths)
    now = _dt.datetime.now()
    rows = [(s.source_id, *p.source[:5], now, p.source[5]) for s, (_, p) in zip(out, files)]
    insert_arrow(con, db.queries["append_sources"], "_tlview_rows", pa.table(
        [pa.array(col, type=t) for col, t in zip(zip(*rows), _SOURCE_TYPES)],
        names=["source_id", *SOURCE_COLUMNS, "ingested_at", "attrs"]))
    runs.assign_unassigned(db)  # their runs, where no registered root holds them
    return out


_TABLES = {"timelines": "timeline_records", "notes": "timeline_notes", "frames": "frames",
           "stacks": "stacks"}
_SOURCE_TYPES = [pa.int32(), pa.string(), pa.int64(), pa.string(), pa.string(),
                 pa.string(), pa.timestamp("us"), pa.string()]


def _insert(con: Any, table: str, streams: list[tuple[Path, int, int]]) -> None:
    """``INSERT INTO table`` the ``streams`` (path, source id, first timeline id; each in
    the table's columns and order), in order, their ids placed."""
    schema = _schema(streams[0][0])
    con.register("_tlview_parsed", pa.RecordBatchReader.from_batches(
        schema, _placed(streams)))  # batches let go as read: DuckDB keeps a reader alive
    try:
        # tlview's own table names (schemas/00_tables.sql), never input
        con.execute(f"INSERT INTO {table} SELECT * FROM _tlview_parsed").fetchall()
    finally:
        con.unregister("_tlview_parsed")


def _schema(path: Path) -> pa.Schema:
    with pa.OSFile(str(path)) as f:
        return pa.ipc.open_stream(f).schema


def _placed(streams: list[tuple[Path, int, int]]) -> Iterator[pa.RecordBatch]:
    """The streams' batches with their source ids and timeline ids given."""
    for path, sid, base in streams:
        with pa.OSFile(str(path)) as f:
            reader = pa.ipc.open_stream(f)
            names = reader.schema.names
            i_sid = names.index("source_id") if "source_id" in names else -1
            i_tid = names.index("timeline_id") if "timeline_id" in names else -1
            for batch in reader:
                cols = batch.columns
                if i_sid >= 0:
                    cols[i_sid] = pa.repeat(pa.scalar(sid, pa.int32()), len(batch))
                if i_tid >= 0:
                    cols[i_tid] = pc.add(cols[i_tid], pa.scalar(base, pa.int32()))
                yield pa.RecordBatch.from_arrays(cols, schema=batch.schema)


def remove_parsed(folder: str | Path) -> None:
    """Remove a folder ``write_parsed`` wrote (its streams, then itself)."""
    root = Path(folder)
    if not root.is_dir():
        return
    for p in root.iterdir():
        p.unlink(missing_ok=True)
    try:
        os.rmdir(root)
    except OSError:
        pass
