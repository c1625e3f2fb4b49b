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
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import attrs
import pyarrow as pa

from .convert import KIND_SCHEMAS, dumps
from .db import Database
from .writer import SIDE_TABLES, IngestSummary, SourceRows, _by_kind, _in_background

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
    rows = SourceRows(_in_background(records), 0, 0)
    writers: dict[str, Any] = {}
    try:
        for kind, batch in _by_kind(rows.batches()):
            w = writers.get(kind)
            if w is None:
                w = writers[kind] = pa.ipc.new_stream(str(_stream(root, f"events_{kind}")),
                                                      KIND_SCHEMAS[kind])
            w.write_batch(batch)
    finally:
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


def append_parsed(db: Database, folder: str | Path, parsed: Parsed) -> IngestSummary:
    """Append the rows ``write_parsed`` wrote in ``folder`` to ``db``, with the next source
    and timeline ids, in the transaction the caller holds; the source row goes in last,
    as an ingest's does. The caller refreshes the caches of the new timelines."""
    root = Path(folder)
    con = db.con
    sid = db.scalar("next_source_id")
    base = db.scalar("next_timeline_id")
    ids = {"sid": sid, "base": base}
    for kind in parsed.kinds:
        _insert(con, f"events_{kind}", _stream(root, f"events_{kind}"), ids)
    for attr, *_ in SIDE_TABLES:
        path = _stream(root, attr)
        if path.exists():
            _insert(con, _TABLES[attr], path, ids)
    path, size, sha, fmt, tool_version, attrs_json = parsed.source
    con.execute(db.queries["insert_source"],
                [sid, path, size, sha, fmt, tool_version, _dt.datetime.now(), attrs_json])
    return IngestSummary(sid, {k: base + i for i, k in enumerate(parsed.timelines)},
                         dict(parsed.counts))


_TABLES = {"timelines": "timeline_records", "notes": "timeline_notes", "frames": "frames",
           "stacks": "stacks"}


def _insert(con: Any, table: str, path: Path, ids: dict[str, int]) -> None:
    """``INSERT INTO table`` the stream at ``path`` (the table's columns, in its order),
    its source id and timeline ids placed."""
    with pa.OSFile(str(path)) as f:
        reader = pa.ipc.open_stream(f)
        names = reader.schema.names
        placed = [n for n in ("source_id", "timeline_id") if n in names]
        repl = ", ".join("CAST($sid AS INTEGER) AS source_id" if n == "source_id"
                         else "CAST(timeline_id + $base AS INTEGER) AS timeline_id"
                         for n in placed)
        # tlview's own table names (schemas/00_tables.sql), never input
        sql = (f"INSERT INTO {table} SELECT * {f'REPLACE ({repl}) ' if repl else ''}"
               "FROM _tlview_parsed")
        # batches let go as they are read: DuckDB keeps a registered reader alive
        con.register("_tlview_parsed",
                     pa.RecordBatchReader.from_batches(reader.schema, _batches(reader)))
        try:
            con.execute(sql, {k: v for k, v in ids.items() if f"${k}" in sql}).fetchall()
        finally:
            con.unregister("_tlview_parsed")


def _batches(reader: Any) -> Iterator[pa.RecordBatch]:
    while True:
        try:
            yield reader.read_next_batch()
        except StopIteration:
            return


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
