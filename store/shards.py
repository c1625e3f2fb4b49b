"""Shard sets: each source's rows as plain Parquet files, Hive-partitioned by source.

A fleet's traces outgrow one process long before they outgrow a disk. Each input file
becomes a shard of its own, written by whichever process (or Dask worker) parsed it;
then either one writer commits the shards into a database (``tlview ingest -j``), or
DuckDB reads the shard set where it lies (``tlview sql --parquet DIR``); any engine that
reads Hive-partitioned Parquet (Spark, Trino, pyarrow.dataset) reads it too.

Layout of a shard set DIR::

    DIR/tlview_shards.json                   {"layout": 1, "schema_version": N}
    DIR/views.sql                            the views over DIR, for the duckdb CLI
    DIR/<folder>/source_id=<K>/data_0.parquet   one file per table and source

with the folders of ``TABLES`` and ``SOURCES``. Each file holds its table's columns in
the table's order, less ``source_id`` (the path holds it); ``timeline_id`` numbers the
source's timelines from 0 (schemas/shard_set.sql gives them database ids). The caches
are the ones the shard's writer computed (store/caches.py, in its own transaction).
A source's ``sources`` file is written last: a shard is in the set once it exists, so a
shard half-written (a worker killed) is never read.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
import re
import shutil
import tempfile
from collections.abc import Callable, Iterable, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

import attrs
import duckdb
import pyarrow as pa
from tlview.ingest.records import dumps

from . import caches, diff, runs
from .convert import EVENT_SCHEMA, KIND_SCHEMAS
from .db import _QUERIES, SCHEMA_VERSION, Database, _schema_files, apply_threads
from .schema import _template_path, open_database
from .writer import IngestSummary, ingest_transaction

LAYOUT = 1
MANIFEST = "tlview_shards.json"
VIEWS_FILE = "views.sql"
FILE = "data_0.parquet"


@attrs.frozen
class ShardTable:
    """One table of a shard: its name in the database and its folder in the set."""

    table: str
    folder: str
    by_source: bool  # has a source_id column (else its rows are found by timeline_id)


TABLES = (
    ShardTable("events", "events", True),
    ShardTable("timeline_records", "timeline_records", True),
    ShardTable("timeline_notes", "timeline_notes", True),
    ShardTable("frames", "frames", True),
    ShardTable("stacks", "stacks", True),
    ShardTable("_cache_buffers", "cache_buffers", False),
    ShardTable("_cache_memory_curve", "cache_memory_curve", False),
    ShardTable("_cache_peak", "cache_peak", False),
    ShardTable("_cache_allocator_curve", "cache_allocator_curve", False),
    ShardTable("_cache_allocator_blocks", "cache_allocator_blocks", True),
    ShardTable("_cache_fr_dump_stats", "cache_fr_dump_stats", False),
    ShardTable("_cache_fr_calls", "cache_fr_calls", False),
)
SOURCES = ShardTable("sources", "sources", True)  # written last: the shard's commit mark


class ShardError(Exception):
    """A folder that is not a shard set this tlview reads, or a shard missing a file."""


def shard_path(folder: str | Path, table: ShardTable, key: int) -> Path:
    return Path(folder) / table.folder / f"source_id={key}" / FILE


_COLUMNS: dict[str, list[str]] = {}  # tlview's own tables: the same in every database


def _columns(con: Any, table: str) -> list[str]:
    if table in _COLUMNS:
        return _COLUMNS[table]
    rows = con.execute("SELECT column_name FROM duckdb_columns() WHERE table_name = ? "
                       "AND schema_name = 'main' ORDER BY column_index", [table]).fetchall()
    _COLUMNS[table] = [r[0] for r in rows]
    return _COLUMNS[table]


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def export_source(db: Database, source_id: int, folder: str | Path, key: int) -> list[Path]:
    """Write source ``source_id`` of ``db`` as shard ``key`` of the set in ``folder``;
    the files written. Each file appears whole (renamed into place), ``sources`` last."""
    lo, hi = db.con.execute("SELECT COALESCE(min(timeline_id), 0), COALESCE(max(timeline_id), "
                            "-1) FROM timeline_records WHERE source_id = ?", [source_id]
                            ).fetchall()[0]
    written: list[Path] = []
    try:
        for t in (*TABLES, SOURCES):
            cols = []
            for c in _columns(db.con, t.table):
                if c == "source_id":
                    continue
                cols.append("timeline_id - $2 AS timeline_id" if c == "timeline_id"
                            else _quoted(c))
            where = "source_id = $1" if t.by_source else "timeline_id BETWEEN $2 AND $3"
            # table and column names come from the catalog of tlview's own tables
            sql = f"SELECT {', '.join(cols)} FROM {_quoted(t.table)} WHERE {where}"
            path = shard_path(folder, t, key)
            path.parent.mkdir(parents=True, exist_ok=True)
            part = path.with_name(f".{FILE}.part")
            params = {k: v for k, v in (("1", source_id), ("2", lo), ("3", hi))
                      if f"${k}" in sql}
            db.con.sql(sql, params=params).write_parquet(
                str(part), compression="zstd")
            os.replace(part, path)
            written.append(path)
    except BaseException:
        for p in written:
            p.unlink(missing_ok=True)
        raise
    return written


def write_rows(records: Iterable[Any], folder: str | Path, key: int) -> None:
    """Write one source's records as shard ``key`` straight from their Arrow batches:
    no database, so no caches (``commit_shards`` computes them in the database, as an
    ingest does). The lean shard of ``tlview ingest -j``'s workers; a shard set that
    DuckDB reads in place needs ``export_source``'s complete shards."""
    import pyarrow.parquet as pq  # (only where shards are written: not every ingest's start)

    from .writer import SIDE_TABLES, SourceRows, _parsing

    rows = SourceRows(_parsing(records), 0, 0)
    written: list[Path] = []

    def place(table: ShardTable) -> tuple[Path, Path]:
        path = shard_path(folder, table, key)
        path.parent.mkdir(parents=True, exist_ok=True)
        return path.with_name(f".{FILE}.part"), path

    try:
        part, path = place(TABLES[0])
        schema = EVENT_SCHEMA.remove(0)  # source_id: in the path
        with pq.ParquetWriter(part, schema, compression="zstd") as w:
            for batch in rows.batches():
                w.write_batch(pa.RecordBatch.from_arrays(batch.columns[1:], schema=schema))
        os.replace(part, path)
        written.append(path)
        side = {name: (names, types) for name, _, names, types in SIDE_TABLES}
        for table, attr in (("timeline_records", "timelines"), ("timeline_notes", "notes"),
                            ("frames", "frames"), ("stacks", "stacks")):
            names, types = side[attr]
            keep = [i for i, n in enumerate(names) if n != "source_id"]
            data = getattr(rows, attr)
            t = pa.table([pa.array([r[i] for r in data], type=types[i]) for i in keep],
                         names=[names[i] for i in keep])
            part, path = place(next(x for x in TABLES if x.table == table))
            pq.write_table(t, part, compression="zstd")
            os.replace(part, path)
            written.append(path)
        src = rows.source
        attrs = dumps({**src.attrs, "counts": dict(rows.counts)})
        t = pa.table({"path": [src.path], "size": [src.size], "sha256": [src.sha256],
                      "format": [src.format], "tool_version": pa.array([src.tool_version],
                                                                     pa.string()),
                      "ingested_at": [_dt.datetime.now()], "attrs": [attrs]})
        part, path = place(SOURCES)
        pq.write_table(t, part, compression="zstd")
        os.replace(part, path)
        written.append(path)
    except BaseException:
        rows.close()
        for p in written:
            p.unlink(missing_ok=True)
        raise


def delete_source(db: Database, source_id: int) -> None:
    """Remove every row of ``source_id`` from ``db`` (a scratch database whose source has
    been exported: tlview's own databases are append-only)."""
    con = db.con
    lo, hi = con.execute("SELECT COALESCE(min(timeline_id), 0), COALESCE(max(timeline_id), "
                         "-1) FROM timeline_records WHERE source_id = ?", [source_id]
                         ).fetchall()[0]
    con.execute("BEGIN TRANSACTION")
    try:
        for t in (*TABLES, SOURCES):
            where = "source_id = $1" if t.by_source else "timeline_id BETWEEN $2 AND $3"
            params = {k: v for k, v in (("1", source_id), ("2", lo), ("3", hi))
                      if f"${k}" in where}
            for table in _stored(t.table, KIND_SCHEMAS):
                con.execute(f"DELETE FROM {_quoted(table)} WHERE {where}", params)
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise


def _stored(table: str, kinds: Iterable[str]) -> list[str]:
    """The tables that hold ``table``'s rows: the events view's are those of ``kinds``."""
    return [f"events_{k}" for k in kinds] if table == "events" else [table]


def init_set(folder: str | Path) -> Path:
    """Make ``folder`` a shard set (or check that it is one); its path, absolute."""
    root = Path(folder).resolve()
    manifest = root / MANIFEST
    if manifest.exists():
        _check_manifest(root)
    else:
        if root.exists() and any(root.iterdir()):
            raise ShardError(f"{folder}: not empty and not a shard set (no {MANIFEST}); "
                             "give a new or empty folder")
        root.mkdir(parents=True, exist_ok=True)
        manifest.write_text(json.dumps({"layout": LAYOUT, "schema_version": SCHEMA_VERSION})
                            + "\n")
    (root / VIEWS_FILE).write_text(views_sql(root))
    return root


def _check_manifest(root: Path) -> None:
    try:
        m = json.loads((root / MANIFEST).read_text())
    except (OSError, ValueError) as e:
        raise ShardError(f"{root}: not a tlview shard set ({MANIFEST}: {e})") from None
    # v4 split the database's events table by kind; a shard's files are as in v3.
    if m.get("layout") != LAYOUT or m.get("schema_version") not in (3, SCHEMA_VERSION):
        raise ShardError(f"{root}: shard layout {m.get('layout')}, schema "
                         f"v{m.get('schema_version')}; this tlview reads layout {LAYOUT}, "
                         f"schema v{SCHEMA_VERSION}")


def shard_keys(folder: str | Path) -> list[int]:
    """The keys (source_id) of the shards in the set, in order: those whose sources
    file is in place."""
    out = []
    base = Path(folder) / SOURCES.folder
    if not base.is_dir():
        return []
    for d in base.iterdir():
        if d.name.startswith("source_id=") and (d / FILE).exists():
            try:
                out.append(int(d.name.split("=", 1)[1]))
            except ValueError:
                continue
    return sorted(out)


def known_sources(folder: str | Path) -> dict[str, list[str]]:
    """Resolved path -> sha256s of the sources already in the shard set at ``folder``."""
    out: dict[str, list[str]] = {}
    con = duckdb.connect()
    try:
        files = str(Path(folder) / SOURCES.folder / "*" / "*.parquet")
        for path, sha in con.execute(_QUERIES["shard_set_sources"], [files]).fetchall():
            out.setdefault(path, []).append(sha)
    finally:
        con.close()
    return out


def shard_bytes(folder: str | Path) -> int:
    """Bytes of the shard set's Parquet files."""
    return sum(p.stat().st_size for p in Path(folder).rglob("*.parquet"))


def _sql(name: str) -> str:
    return resources.files("tlview.schemas").joinpath(name).read_text("utf-8")


_LEAF = re.compile(r"^CREATE OR REPLACE VIEW (\w+) AS$", re.M)


def _view_files() -> list[str]:
    """The SQL that makes every view over a shard set, after shard_set.sql's tables.

    A view is bound when it is made, every view below it with it: ~200 views made over
    shard_views.sql's views of the Parquet files took 12 CPU-s (the 2-rank coll folder's
    set, DuckDB 2.0.1), made over tables 6. So each view of shard_views.sql is copied as an
    empty table of its name and columns, the other views are made over those, and the
    tables are replaced by the views of the files again. A view is bound again when it is
    queried, over what its names then are: the same columns, so the same types (DuckDB
    refuses a view whose types changed), and the same rows as made over the files."""
    leaves = _sql("shard_views.sql")
    names = _LEAF.findall(leaves)
    # the names come from tlview's own shard_views.sql
    return [leaves,
            *(f"CREATE TABLE {_quoted('_bind_' + n)} AS FROM {_quoted(n)} LIMIT 0;"
              for n in names),
            *(f"DROP VIEW {_quoted(n)};" for n in reversed(names)),
            *(f"ALTER TABLE {_quoted('_bind_' + n)} RENAME TO {_quoted(n)};" for n in names),
            *(text for name, text in _schema_files() if name != "00_tables.sql"),
            *(f"DROP TABLE {_quoted(n)};" for n in names),
            leaves]


def views_sql(root: Path) -> str:
    """A script the duckdb CLI runs (``.read DIR/views.sql``) to get every view of tlview
    over the shard set in ``root``."""
    path = str(root).replace("'", "''")
    return (f"-- tlview's views over the shard set {root} (written by tlview).\n"
            f"-- In the duckdb CLI: .read {root / VIEWS_FILE}\n"
            f"SET VARIABLE tlview_shards = '{path}';\n{_sql('shard_set.sql')}\n"
            + "\n".join(_view_files()) + "\n")


class ShardDatabase(Database):
    """A shard set opened for reading: a private copy of the views template, removed
    when closed."""

    def __init__(self, path: str, con: duckdb.DuckDBPyConnection, scratch: Path) -> None:
        super().__init__(path, con, read_only=True)
        self._scratch = scratch

    def close(self) -> None:
        super().close()
        shutil.rmtree(self._scratch, ignore_errors=True)


def open_shards(folder: str | Path) -> ShardDatabase:
    """The shard set in ``folder`` as a read-only Database: every view of tlview over
    its Parquet files. Creating ~200 views takes seconds, so they are made once into a
    template database (beside the empty-database template) and copied; only the small
    tables are read from the set at each open."""
    root = Path(folder)
    if not (root / MANIFEST).exists():
        raise ShardError(f"{folder}: not a tlview shard set (no {MANIFEST}; "
                         "`tlview shard FILES... -o DIR` writes one)")
    _check_manifest(root)
    if not shard_keys(root):
        raise ShardError(f"{folder}: the shard set holds no shard yet")
    scratch = Path(tempfile.mkdtemp(prefix="tlview-shards-"))
    try:
        path = scratch / "views.duckdb"
        tpl = _views_template()
        if tpl is not None:
            shutil.copyfile(tpl, path)
        con = duckdb.connect(str(path))
    except BaseException:
        shutil.rmtree(scratch, ignore_errors=True)
        raise
    try:
        con.execute("SET enable_progress_bar = false")
        apply_threads(con)
        con.execute("SET VARIABLE tlview_shards = ?", [str(root.resolve())])
        con.execute(_sql("shard_set.sql"))
        if tpl is None:
            for text in _view_files():
                con.execute(text)
    except BaseException:
        con.close()
        shutil.rmtree(scratch, ignore_errors=True)
        raise
    return ShardDatabase(str(root), con, scratch)


def _views_template() -> Path | None:
    """The database holding every view over a shard set (bound to an empty set when made),
    made once per schema and DuckDB version; None where no cache folder can be had."""
    empty = _template_path()
    if empty is None:
        return None
    sha = hashlib.sha256("\n".join(_view_files()).encode()).hexdigest()[:16]
    tpl = empty.with_name(f"shardviews-{sha}-" + empty.name.split("-", 1)[1])
    if tpl.exists():
        return tpl
    try:
        with tempfile.TemporaryDirectory(prefix="tlview-shardviews-") as tmp:
            # an empty shard set to bind the views against: every file, no rows
            with open_database(os.path.join(tmp, "empty.duckdb")) as db:
                export_source(db, 0, Path(tmp) / "set", 0)
            part = Path(tmp) / "views.duckdb"
            con = duckdb.connect(str(part))
            try:
                con.execute("SET VARIABLE tlview_shards = ?", [str(Path(tmp) / "set")])
                con.execute(_sql("shard_set.sql"))
                for text in _view_files():
                    con.execute(text)
                con.execute("CHECKPOINT")
            finally:
                con.close()
            tpl.parent.mkdir(parents=True, exist_ok=True)
            staged = tpl.with_name(tpl.name + f".{os.getpid()}.tmp")
            shutil.copyfile(part, staged)
            os.replace(staged, tpl)  # atomic: a racing process sees all of it or none
        return tpl
    except (OSError, duckdb.Error):
        return None


def commit_shards(db: Database, folder: str | Path, keys: Sequence[int],
                  before_commit: Callable[[], None] | None = None) -> list[IngestSummary]:
    """Append shards ``keys`` (in that order) to ``db`` in ONE transaction, with the
    next source and timeline ids: a shard is already a whole, parsed source, so several
    go in at once with the rows and ids of as many single commits, one INSERT per table
    for them all (the files read in order: the rows keep the order of a serial ingest).
    ``before_commit``: IngestTransaction's."""
    if not keys:
        return []
    with ingest_transaction(db, before_commit):
        return _commit(db, Path(folder), list(keys))


def _commit(db: Database, folder: Path, keys: list[int]) -> list[IngestSummary]:
    con = db.con
    lean = [k for k in keys if not shard_path(folder, TABLES[-1], k).exists()]
    for k in keys:
        for t in (*TABLES, SOURCES):
            if t.table.startswith("_cache_") and k in lean:
                continue  # a lean shard (write_rows): its caches are computed below
            if not shard_path(folder, t, k).exists():
                raise ShardError(f"{folder}: shard {k} is not complete or is damaged (no "
                                 f"{shard_path(folder, t, k)})")
    first_sid = db.scalar("next_source_id")
    first_tid = db.scalar("next_timeline_id")
    # per shard: its source id and the id its timeline 0 takes, looked up by key
    tls = con.execute("SELECT source_id, timeline_id, key FROM read_parquet($1, "
                      "hive_partitioning = true) ORDER BY source_id, timeline_id",
                      {"1": [str(shard_path(folder, TABLES[1], k)) for k in keys]}).fetchall()
    n_tl: dict[int, list[str]] = {}
    for k, _, name in tls:
        n_tl.setdefault(k, []).append(name)
    k0 = min(keys)
    sids: list[int | None] = [None] * (max(keys) - k0 + 1)
    bases: list[int | None] = [None] * len(sids)
    tid = first_tid
    for i, k in enumerate(keys):
        sids[k - k0], bases[k - k0] = first_sid + i, tid
        tid += len(n_tl.get(k, ()))
    params = {"sids": sids, "bases": bases, "k0": k0}
    for t in TABLES:
        files = [str(shard_path(folder, t, k)) for k in keys
                 if not (t.table.startswith("_cache_") and k in lean)]
        if not files:
            continue
        kinds: list[str] = []
        if t.table == "events":  # each kind to its own table (schemas/00_tables.sql)
            kinds = [r[0] for r in con.execute(
                "SELECT DISTINCT kind FROM read_parquet($files, hive_partitioning = true) "
                "ORDER BY kind", {"files": files}).fetchall()]
            unknown = sorted(set(kinds) - KIND_SCHEMAS.keys())
            if unknown:
                raise ShardError(f"{folder}: events of kinds this tlview has no table for: "
                                 f"{', '.join(map(str, unknown))}")
        for table in _stored(t.table, kinds):
            cols = []
            for c in _columns(con, table):
                if c == "source_id":
                    cols.append("CAST($sids[source_id - $k0 + 1] AS INTEGER) AS source_id")
                elif c == "timeline_id":
                    cols.append("CAST(timeline_id + $bases[source_id - $k0 + 1] AS INTEGER) "
                                "AS timeline_id")
                else:
                    cols.append(_quoted(c))
            where = f" WHERE kind = '{table[len('events_'):]}'" if kinds else ""
            sql = (f"INSERT INTO {_quoted(table)} SELECT {', '.join(cols)} "
                   f"FROM read_parquet($files, hive_partitioning = true){where}")
            con.execute(sql, {**{k: v for k, v in params.items() if f"${k}" in sql},
                              "files": files})
    rows = {r[0]: r[1:] for r in con.execute(
        "SELECT source_id, path, size, sha256, format, tool_version, attrs FROM "
        "read_parquet($1, hive_partitioning = true)",
        {"1": [str(shard_path(folder, SOURCES, k)) for k in keys]}).fetchall()}
    now = _dt.datetime.now()
    out = []
    for i, k in enumerate(keys):
        row = rows.get(k)
        if row is None:
            raise ShardError(f"{shard_path(folder, SOURCES, k)}: empty; shard {k} of {folder} "
                             "is damaged")
        sid = first_sid + i
        con.execute(db.queries["insert_source"], [sid, *row[:5], now, row[5]])
        base = bases[k - k0]
        assert base is not None
        counts = json.loads(row[5]).get("counts", {}) if row[5] else {}
        out.append(IngestSummary(sid, {name: base + j for j, name in enumerate(n_tl.get(k, []))},
                                 counts))
    # The caches after the sources rows (the ranks' caches read them): the lean shards'
    # computed here; the complete shards' were read, all but the ranks' and the attribution's,
    # which span them.
    if lean:
        caches.refresh(db, [bases[k - k0] + j for k in lean  # type: ignore[operator]
                            for j in range(len(n_tl.get(k, ())))])
    elif tid > first_tid:
        diff.refresh_pairs(db, first_tid, tid - 1)
    if len(lean) < len(keys):
        complete = [bases[k - k0] + j for k in keys if k not in lean  # type: ignore[operator]
                    for j in range(len(n_tl.get(k, ())))]
        caches.refresh_attachments(db, complete)  # across sources, as the ranks'
        caches.refresh_ranks(db, complete)
    runs.assign_unassigned(db)  # their runs, where no registered root holds them
    return out


def export_database(db: Database, folder: str | Path,
                    source_ids: Iterable[int] | None = None) -> list[int]:
    """Every source of ``db`` (or ``source_ids``) as a shard of the set in ``folder``,
    keyed by its source id; the keys written."""
    root = init_set(folder)
    ids = list(source_ids) if source_ids is not None else [
        r[0] for r in db.con.execute("SELECT source_id FROM sources ORDER BY 1").fetchall()]
    for sid in ids:
        export_source(db, sid, root, sid)
    return ids
