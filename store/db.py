"""Opening a tlview database: schema creation, versioning, locks, named queries.

The DDL and views live in ``schemas/*.sql`` and are stored in the database file
itself, so the plain duckdb CLI can query the views without tlview installed.
"""

from __future__ import annotations

import collections
import hashlib
import os
import re
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from importlib import resources
from pathlib import Path
from typing import Any

import attrs
import duckdb
import pyarrow as pa

from . import storage
from .locks import DatabaseLocked, lock_error

# Version of the table layout. Views are re-created whenever their SQL changes.
SCHEMA_VERSION = 5
# v2: _cache_* tables behind buffers, memory_curve and peak_memory (rebuilt on migrate).
# v3: events.address, stack_id, block_bytes appended (ALTER TABLE in 00_tables.sql);
#     frames and stacks tables; allocator caches (schemas/50_allocator.sql).
# v4: one table per event kind (events_<kind>, only its columns); `events` is their
#     union, a view with v3's columns (schemas/00_tables.sql, queries_migrate.sql).
# v5: the many-ranks matching cached, once a run holds several traces (_cache_rank_traces,
#     _cache_pg_ranks, _cache_arrivals: store/caches.py, schemas/45_ranks.sql).


class SchemaError(Exception):
    """The database was written by a tlview whose schema this one cannot read."""


def _schema_files() -> list[tuple[str, str]]:
    root = resources.files("tlview.schemas")
    files = sorted(
        (p.name, p.read_text(encoding="utf-8"))
        for p in root.iterdir()
        if re.match(r"\d\d_.*\.sql\Z", p.name)
    )
    return files


def schema_sql() -> str:
    """All DDL, in file order."""
    return "\n".join(text for _, text in _schema_files())


def _load_named_queries() -> dict[str, str]:
    """Every ``-- name: X`` block of ``schemas/queries*.sql`` (one file per domain)."""
    out: dict[str, str] = {}
    root = resources.files("tlview.schemas")
    for p in sorted(root.iterdir(), key=lambda p: p.name):
        if not re.match(r"queries\w*\.sql\Z", p.name):
            continue
        for block in re.split(r"^-- name: ", p.read_text("utf-8"), flags=re.M)[1:]:
            name, _, body = block.partition("\n")
            if name.strip() in out:
                raise ValueError(f"query {name.strip()!r} defined twice ({p.name})")
            out[name.strip()] = body.strip().rstrip(";")
    return out


def _connect(path: str, read_only: bool) -> duckdb.DuckDBPyConnection:
    config = {} if read_only or Path(path).exists() else storage.creation_config()
    try:
        con = duckdb.connect(path, read_only=read_only, config=config)
        con.execute("SET enable_progress_bar = false")  # never draw on a user's terminal
        return con
    except duckdb.IOException as e:
        locked = lock_error(path, str(e))
        if locked is not None:
            raise locked from None
        raise


LOCK_POLL_S = 0.1  # between tries to open a file another process holds


def _connect_waiting(path: str, read_only: bool, wait_s: float,
                     on_wait: Callable[[str], None] | None) -> duckdb.DuckDBPyConnection:
    """``_connect``, retrying for up to ``wait_s`` seconds while another process holds
    the lock; ``on_wait`` hears once who it is waiting for."""
    deadline = time.monotonic() + wait_s
    told = False
    while True:
        try:
            return _connect(path, read_only)
        except DatabaseLocked as e:
            if time.monotonic() >= deadline:
                raise e.waited(wait_s) if wait_s > 0 else e from None
            if on_wait is not None and not told:
                who = f"process {e.pid} ({e.holder})" if e.pid is not None else "another process"
                on_wait(f"{path} is open in {who}; waiting up to {wait_s:g} s for it")
                told = True
            time.sleep(min(LOCK_POLL_S, max(0.0, deadline - time.monotonic())))


class Database:
    """A connection to one tlview database plus its named queries."""

    def __init__(self, path: str, con: duckdb.DuckDBPyConnection, read_only: bool) -> None:
        self.path = path
        self.con = con
        self.read_only = read_only
        self.queries = _QUERIES

    def close(self) -> None:
        self.con.close()

    def __enter__(self) -> Database:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def sql(self, query: str, params: list[Any] | tuple[Any, ...] | None = None):
        """Run raw SQL with ``?`` parameters; returns the DuckDB relation/result."""
        return self.con.execute(query, params or [])

    def query(self, name: str, *params: Any) -> list[tuple[Any, ...]]:
        """Run a named query from ``schemas/queries.sql``; rows as tuples."""
        return self.con.execute(self.queries[name], list(params)).fetchall()

    def query_dicts(self, name: str, *params: Any) -> list[dict[str, Any]]:
        cur = self.con.execute(self.queries[name], list(params))
        cols = [d[0] for d in cur.description]
        return [dict(zip(cols, row)) for row in cur.fetchall()]

    @contextmanager
    def one_thread(self) -> Iterator[None]:
        """DuckDB on one thread for the block: under a memory cap, each thread's hash
        tables and sorts take their share at once, so a query that fits (spilling) on one
        thread can fail on two (the rank report of 256 ranks at 256MB did)."""
        threads = self.scalar("current_threads")
        self.con.execute("SET threads = 1")
        try:
            yield
        finally:
            self.con.execute(f"SET threads = {int(threads)}")

    def scalar(self, name: str, *params: Any) -> Any:
        """The first column of the first row of a named query, or None."""
        rows = self.con.execute(self.queries[name], list(params)).fetchall()  # no open result
        return rows[0][0] if rows else None

    def meta(self, key: str) -> str | None:
        return self.scalar("get_meta", key)


_QUERIES = _load_named_queries()


def insert_arrow(con: duckdb.DuckDBPyConnection, query: str, name: str, table: Any) -> None:
    """Run ``query`` (an INSERT ... FROM ``name``) with the Arrow ``table`` as ``name``.

    DuckDB (2.0) keeps a registered Arrow object alive after ``unregister``, for as long
    as the connection lives: a table registered as such stays in memory (the allocator
    curve's ranges of a large snapshot grew the process by their size). It is handed over as a
    stream whose batches are let go as they are read, so only the spent stream stays.
    """
    batches = collections.deque(table.to_batches())
    schema = table.schema
    del table

    def drained() -> Iterator[Any]:
        while batches:
            yield batches.popleft()

    con.register(name, pa.RecordBatchReader.from_batches(schema, drained()))
    try:
        con.execute(query).fetchall()
    finally:
        con.unregister(name)


def _scalar(con: duckdb.DuckDBPyConnection, name: str, *params: Any) -> Any:
    row = con.execute(_QUERIES[name], list(params)).fetchone()
    return row[0] if row else None


def _has_meta(con: duckdb.DuckDBPyConnection) -> bool:
    return bool(_scalar(con, "has_meta_table"))


def open_database(path: str | Path, *, read_only: bool = False, create: bool = True,
                  wait_s: float = 0.0,
                  on_wait: Callable[[str], None] | None = None) -> Database:
    """Open (creating if needed and allowed) a tlview database.

    Read-write opens bring the schema up to date. Read-only opens refuse a newer
    schema, and an older one that has not been migrated, with what to do. While
    another process holds the file's lock, retry for up to ``wait_s`` seconds
    (``on_wait`` is told once), then raise DatabaseLocked naming that process.
    """
    path = str(path)
    exists = Path(path).exists()
    if read_only and not exists:
        raise FileNotFoundError(f"{path}: no such database (create one with `tlview ingest`)")
    if not read_only and not exists and not create:
        raise FileNotFoundError(f"{path}: no such database")
    if not exists and not read_only:
        _create_from_template(path)
    con = _connect_waiting(path, read_only, wait_s, on_wait)
    try:
        if read_only:
            _check_version(con, path)
        else:
            _ensure_schema(con, path)
    except Exception:
        con.close()
        raise
    return Database(path, con, read_only)


def _template_path() -> Path | None:
    """Where the empty database of this schema and DuckDB version is kept, or None.

    Creating the schema binds ~200 views (about a second); copying a file made once
    takes milliseconds, which every new database (each ingest's, each test's) gains.
    ``TLVIEW_CACHE_DIR`` (default ``$XDG_CACHE_HOME/tlview``, ``~/.cache/tlview``);
    an empty value turns the template off.
    """
    root = os.environ.get("TLVIEW_CACHE_DIR")
    if root == "":
        return None
    if root is None:
        xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join(Path.home(), ".cache")
        root = os.path.join(xdg, "tlview")
    tag = f"{SCHEMA_VERSION}-{_views_sha()}-{duckdb.__version__}-{storage.STORAGE_VERSION}"
    return Path(root) / f"empty-{tag}.duckdb"


def _create_from_template(path: str) -> None:
    """Create ``path`` as a copy of the empty template database (built on first use).

    Any failure (no cache folder, a full disk) leaves ``path`` absent: the caller then
    creates the schema in place, as without a template.
    """
    tpl = _template_path()
    if tpl is None:
        return
    try:
        if not tpl.exists():
            tpl.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=tpl.name, suffix=".tmp", dir=tpl.parent)
            os.close(fd)
            os.unlink(tmp)  # duckdb creates the file itself
            try:
                con = _connect(tmp, False)
                try:
                    _ensure_schema(con, tmp)
                    con.execute("CHECKPOINT")
                finally:
                    con.close()
                os.replace(tmp, tpl)  # atomic: a racing process sees all of it or none
            finally:
                for p in (tmp, f"{tmp}.wal"):
                    Path(p).unlink(missing_ok=True)
        part = f"{path}.tlview-new"
        shutil.copyfile(tpl, part)
        try:
            os.link(part, path)  # fails if another process created path meanwhile
        finally:
            os.unlink(part)
    except (OSError, duckdb.Error):
        return


@attrs.frozen
class Migration:
    """What ``migrate`` found and did; nothing changed when ``changed`` is False."""

    schema_before: int
    schema_after: int
    views_rewritten: bool  # same schema version, views from another tlview
    storage_before: str | None  # DuckDB's tag, e.g. v2.0.0+
    storage_after: str | None

    @property
    def changed(self) -> bool:
        return (self.schema_before != self.schema_after or self.views_rewritten
                or self.storage_before != self.storage_after)


def migrate(path: str | Path, *, wait_s: float = 0.0,
            on_wait: Callable[[str], None] | None = None) -> Migration:
    """Bring a tlview database up to date: its schema and views, and its storage format
    where a newer DuckDB wrote one the duckdb CLIs cannot read (``storage.convert``).

    Refuses a file that is not a tlview database: migrate changes only tlview's own files.
    """
    path = str(path)
    if not Path(path).exists():
        raise FileNotFoundError(f"{path}: no such database")
    con = _connect_waiting(path, True, wait_s, on_wait)
    try:
        if not _has_meta(con):
            raise SchemaError(f"{path} is not a tlview database (no tlview_meta table); "
                              "migrate changes only tlview's own files")
        before = int(_meta(con, "schema_version") or 0)
        views_current = _meta(con, "views_sha") == _views_sha()
        storage_before = storage.storage_version(con, _QUERIES)
    finally:
        con.close()
    if storage.is_newer_than_target(storage_before):
        try:
            storage.convert(path, _QUERIES)
        except duckdb.IOException as e:
            locked = lock_error(path, str(e))
            if locked is not None:
                raise locked from None
            raise
    with open_database(path, create=False, wait_s=wait_s, on_wait=on_wait) as db:
        after = int(db.meta("schema_version") or 0)
        storage_after = storage.storage_version(db.con, _QUERIES)
    return Migration(before, after, before == after and not views_current,
                     storage_before, storage_after)


def _check_version(con: duckdb.DuckDBPyConnection, path: str) -> None:
    if not _has_meta(con):
        raise SchemaError(f"{path} is not a tlview database (no tlview_meta table)")
    version = int(_meta(con, "schema_version") or 0)
    if version > SCHEMA_VERSION:
        raise SchemaError(
            f"{path} was written by a newer tlview (schema v{version}); "
            f"this tlview reads up to v{SCHEMA_VERSION}: upgrade tlview"
        )
    if version < SCHEMA_VERSION:
        raise SchemaError(
            f"{path} has schema v{version}, older than this tlview's v{SCHEMA_VERSION}: "
            f"run `tlview migrate --db {path}` once to bring it up to date"
        )
    if _views_sha() != _meta(con, "views_sha"):
        raise SchemaError(
            f"{path} has the views of another tlview version: "
            f"run `tlview migrate --db {path}` once to bring them up to date"
        )


def _meta(con: duckdb.DuckDBPyConnection, key: str) -> str | None:
    return _scalar(con, "get_meta", key)


def _views_sha() -> str:
    return hashlib.sha256(schema_sql().encode()).hexdigest()[:16]


def _ensure_schema(con: duckdb.DuckDBPyConnection, path: str) -> None:
    version = 0
    if _has_meta(con):
        version = int(_meta(con, "schema_version") or 0)
        if version > SCHEMA_VERSION:
            raise SchemaError(
                f"{path} was written by a newer tlview (schema v{version}); "
                f"this tlview writes v{SCHEMA_VERSION}: upgrade tlview"
            )
        if version == SCHEMA_VERSION and _meta(con, "views_sha") == _views_sha():
            return
    con.execute("BEGIN TRANSACTION")
    try:
        wide = bool(_scalar(con, "events_is_a_table"))  # v2/v3: moved to events_<kind>
        if wide:
            con.execute(_QUERIES["migrate_events_rename"])
        con.execute(_QUERIES["migrate_drop_rank_caches"])  # made again below (rebuild_all)
        con.execute(schema_sql())
        if wide:
            _split_events(con, path)
        con.execute(_QUERIES["set_schema_version"], [str(SCHEMA_VERSION), _views_sha()])
        from . import caches

        caches.rebuild_all(Database(path, con, read_only=False))
        from . import runs

        runs.assign_unassigned(Database(path, con, read_only=False))  # a database before runs
        con.execute("COMMIT")
    except Exception:
        con.execute("ROLLBACK")
        raise


def _split_events(con: duckdb.DuckDBPyConnection, path: str) -> None:
    """Move the rows of a v2/v3 database's one events table to the per-kind tables."""
    con.execute(_QUERIES["migrate_events_split"])
    left = con.execute(_QUERIES["migrate_events_left"]).fetchall()
    if left:
        kinds = ", ".join(f"{k} ({n:,} rows)" for k, n in left)
        raise SchemaError(f"{path}: events of kinds this tlview has no table for: {kinds}; "
                          "nothing was changed")
    con.execute(_QUERIES["migrate_events_drop"])
