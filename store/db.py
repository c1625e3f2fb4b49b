"""Opening a tlview database: schema creation, versioning, locks, named queries.

The DDL and views live in ``schemas/*.sql`` and are stored in the database file
itself, so the plain duckdb CLI can query the views without tlview installed.
"""

from __future__ import annotations

import collections
import functools
import hashlib
import os
import re
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from importlib import resources
from pathlib import Path
from typing import Any

import duckdb

from . import storage
from .locks import DatabaseLocked, lock_error

# Version of the table layout. Views are re-created whenever their SQL changes.
SCHEMA_VERSION = 7
# v2: _cache_* tables behind buffers, memory_curve and peak_memory (rebuilt on migrate).
# v3: events.address, stack_id, block_bytes appended (ALTER TABLE in 00_tables.sql);
#     frames and stacks tables; allocator caches (schemas/50_allocator_events.sql).
# v4: one table per event kind (events_<kind>, only its columns); `events` is their
#     union, a view with v3's columns (schemas/00_tables.sql, queries_schema.sql).
# v5: the many-ranks matching cached, once a run holds several traces (_cache_rank_traces,
#     _cache_pg_ranks, _cache_arrivals: store/caches.py, schemas/45_ranks_traces.sql to
#     47_ranks_skew.sql).
# v6: the Flight Recorder dumps' caches, per dump (_cache_fr_dump_stats, _cache_fr_calls:
#     schemas/55_flight_recorder.sql, store/caches.py CACHES); dropped and refilled by
#     migrate (queries_schema.sql migrate_rank_cache_tables).
# v7: the attribution of profiler traces to output code cached (_cache_output_nodes,
#     _cache_call_candidates, _cache_call_graphs, _cache_extern_ops,
#     _cache_triton_attachments, _cache_kernel_attachments: schemas/43_profile_calls.sql,
#     44_profile_attachments.sql, store/caches.py ATTACHMENT_CACHES); dropped and made again
#     by migrate.


class SchemaError(Exception):
    """The database was written by a tlview whose schema this one cannot read."""


@functools.cache
def _schema_files() -> tuple[tuple[str, str], ...]:
    """(name, text) of each schema file, in order: read once per process (a tuple: shared)."""
    root = resources.files("tlview.schemas")
    return tuple(sorted(
        (p.name, p.read_text(encoding="utf-8"))
        for p in root.iterdir()
        if re.match(r"\d\d_.*\.sql\Z", p.name)
    ))


def schema_sql() -> str:
    """All DDL, in file order."""
    return "\n".join(text for _, text in _schema_files())


_VIEW_HEAD = re.compile(r"(CREATE (?:OR REPLACE )?VIEW (?:IF NOT EXISTS )?\w+) AS\b")
DEFERS_BINDING = storage.version_tuple(duckdb.__version__) >= (2, 0)


def schema_ddl() -> str:
    """``schema_sql`` as a schema is made: each view bound at its first query, not when
    made, where the DuckDB module can (``WITH (DEFER_BINDING)``, DuckDB 2.0). Made bound,
    each view binds every view below it again: the ~200 views took 7.1 CPU-s to make,
    deferred 1.1 (DuckDB 2.0.1). The option is not stored (a view's SQL reads the same
    either way: the duckdb CLI, 1.5, reads the file as before), and the views' hash
    (``views_sha``) is ``schema_sql``'s."""
    sql = schema_sql()
    return _VIEW_HEAD.sub(r"\1 WITH (DEFER_BINDING) AS", sql) if DEFERS_BINDING else sql


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


SLOW_OPTIMIZERS = ("projection_pullup",)  # off on every connection tlview opens (_connect)


def threads_setting() -> int | None:
    """DuckDB's threads for every connection tlview opens: ``TLVIEW_THREADS`` (a count of 1
    or more), or None for DuckDB's own default, one per core. On a box where training
    or other tools hold the cores, fewer threads leave them be; and where several tlview
    processes share the cores, one thread each spends less CPU for the same rows than
    several threads that wait on each other (figures: docs/benchmarks.md)."""
    raw = os.environ.get("TLVIEW_THREADS", "").strip()
    if not raw:
        return None
    try:
        n = int(raw)
    except ValueError:
        n = 0
    if n < 1:
        raise ValueError(f"TLVIEW_THREADS={raw!r}: expected a count of threads, 1 or more")
    return n


def apply_threads(con: duckdb.DuckDBPyConnection) -> None:
    """``threads_setting()`` applied to ``con``'s database (DuckDB's default where unset)."""
    threads = threads_setting()
    if threads is not None:
        con.execute(f"SET threads = {threads}")


def _connect(path: str, read_only: bool) -> duckdb.DuckDBPyConnection:
    config = {} if read_only or Path(path).exists() else storage.creation_config()
    try:
        con = duckdb.connect(path, read_only=read_only, config=config)
        con.execute("SET enable_progress_bar = false")  # never draw on a user's terminal
        apply_threads(con)
        # DuckDB's projection_pullup pass changes no result, only the plan; on the deep
        # stacks of views tlview asks it costs much of the planning for no faster run
        # (figures: docs/postmortem.md). A plain duckdb CLI keeps it (same rows).
        con.execute("SET disabled_optimizers = ?", [",".join(SLOW_OPTIMIZERS)])
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
    def transaction(self) -> Iterator[None]:
        """The block in one transaction: committed at its end, rolled back on any exit by
        an exception (an interrupt too)."""
        self.con.execute("BEGIN TRANSACTION")
        try:
            yield
        except BaseException:
            self.con.execute("ROLLBACK")
            raise
        self.con.execute("COMMIT")

    @contextmanager
    def one_thread(self) -> Iterator[None]:
        """DuckDB on one thread for the block: under a memory cap, each thread's hash
        tables and sorts take their share at once, so a query that fits (spilling) on one
        thread can fail on two (the rank report of 256 ranks at 256MB did)."""
        threads = self.scalar("current_threads")
        self.con.execute("SET threads = 1")
        with restoring(self.con, f"SET threads = {int(threads)}"):
            yield

    def scalar(self, name: str, *params: Any) -> Any:
        """The first column of the first row of a named query, or None."""
        rows = self.con.execute(self.queries[name], list(params)).fetchall()  # no open result
        return rows[0][0] if rows else None

    def meta(self, key: str) -> str | None:
        return self.scalar("get_meta", key)


@contextmanager
def restoring(con: duckdb.DuckDBPyConnection, restore: str) -> Iterator[None]:
    """Run the statement ``restore`` (a SET) after the block. Where the block raised, a
    refusal of it does not hide the block's error: a failed statement aborts the open
    transaction, which refuses even a SET until its rollback (an ingest's rank caches out
    of memory at 10,000 ranks were reported as "Current transaction is aborted")."""
    try:
        yield
    except BaseException:
        try:
            con.execute(restore)
        except duckdb.TransactionException:
            pass
        raise
    con.execute(restore)


_QUERIES = _load_named_queries()


def insert_arrow(con: duckdb.DuckDBPyConnection, query: str, name: str, table: Any) -> None:
    """Run ``query`` (an INSERT ... FROM ``name``) with the Arrow ``table`` as ``name``.

    DuckDB (2.0) keeps a registered Arrow object alive after ``unregister``, for as long
    as the connection lives: a table registered as such stays in memory (the allocator
    curve's ranges of a large snapshot grew the process by their size). It is handed over as a
    stream whose batches are let go as they are read, so only the spent stream stays.
    """
    import pyarrow as pa  # only where rows are written: a reader's start goes without it

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


def _meta_rows(con: duckdb.DuckDBPyConnection) -> dict[str, str] | None:
    """The ``tlview_meta`` table as a dict, or None where the file has none (not a tlview
    database): one statement, where asking the catalog first cost ~5-20 ms at each open."""
    try:
        return dict(con.execute(_QUERIES["meta_rows"]).fetchall())
    except duckdb.CatalogException:
        return None


@functools.cache
def _views_sha() -> str:
    return hashlib.sha256(schema_sql().encode()).hexdigest()[:16]
