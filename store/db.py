"""Opening a tlview database: schema creation, versioning, locks, named queries.

The DDL and views live in ``schemas/*.sql`` and are stored in the database file
itself, so the plain duckdb CLI can query the views without tlview installed.
"""

from __future__ import annotations

import hashlib
import re
from importlib import resources
from pathlib import Path
from typing import Any

import duckdb

# Version of the table layout. Views are re-created whenever their SQL changes.
SCHEMA_VERSION = 2
# v2: _cache_* tables behind buffers, memory_curve and peak_memory (rebuilt on migrate).


class SchemaError(Exception):
    """The database was written by a tlview whose schema this one cannot read."""


class DatabaseLocked(Exception):
    """Another process holds the database's write lock."""


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


_LOCK_PID = re.compile(r"PID (\d+)")


def _connect(path: str, read_only: bool) -> duckdb.DuckDBPyConnection:
    try:
        con = duckdb.connect(path, read_only=read_only)
        con.execute("SET enable_progress_bar = false")  # never draw on a user's terminal
        return con
    except duckdb.IOException as e:
        msg = str(e)
        if "lock" in msg.lower():
            pid = _LOCK_PID.search(msg)
            who = f"process {pid.group(1)}" if pid else "another process"
            raise DatabaseLocked(
                f"{path} is locked by {who} (an ingest still running?); "
                "try again when it finishes"
            ) from None
        raise


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

    def scalar(self, name: str, *params: Any) -> Any:
        """The first column of the first row of a named query, or None."""
        rows = self.con.execute(self.queries[name], list(params)).fetchall()  # no open result
        return rows[0][0] if rows else None

    def meta(self, key: str) -> str | None:
        return self.scalar("get_meta", key)


_QUERIES = _load_named_queries()


def _scalar(con: duckdb.DuckDBPyConnection, name: str, *params: Any) -> Any:
    row = con.execute(_QUERIES[name], list(params)).fetchone()
    return row[0] if row else None


def _has_meta(con: duckdb.DuckDBPyConnection) -> bool:
    return bool(_scalar(con, "has_meta_table"))


def open_database(path: str | Path, *, read_only: bool = False, create: bool = True) -> Database:
    """Open (creating if needed and allowed) a tlview database.

    Read-write opens bring the schema up to date. Read-only opens refuse a newer
    schema, and an older one that has not been migrated, with what to do.
    """
    path = str(path)
    exists = Path(path).exists()
    if read_only and not exists:
        raise FileNotFoundError(f"{path}: no such database (create one with `tlview ingest`)")
    if not read_only and not exists and not create:
        raise FileNotFoundError(f"{path}: no such database")
    con = _connect(path, read_only)
    try:
        if read_only:
            _check_version(con, path)
        else:
            _ensure_schema(con, path)
    except Exception:
        con.close()
        raise
    return Database(path, con, read_only)


def schema_version_of(path: str | Path) -> int:
    """The schema version recorded in a database file (0 if none), read without migrating."""
    con = _connect(str(path), True)
    try:
        return int(_meta(con, "schema_version") or 0) if _has_meta(con) else 0
    finally:
        con.close()


def _check_version(con: duckdb.DuckDBPyConnection, path: str) -> None:
    if not _has_meta(con):
        raise SchemaError(f"{path} is not a tlview database (no tlview_meta table)")
    version = int(_meta(con, "schema_version") or 0)
    if version > SCHEMA_VERSION:
        raise SchemaError(
            f"{path} was written by a newer tlview (schema v{version}); "
            f"this tlview reads up to v{SCHEMA_VERSION}: upgrade tlview"
        )
    if version < SCHEMA_VERSION or _views_sha() != _meta(con, "views_sha"):
        raise SchemaError(
            f"{path} has schema v{version}, older than this tlview's v{SCHEMA_VERSION}: "
            f"run `tlview migrate --db {path}` once to bring it up to date"
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
        con.execute(schema_sql())
        con.execute(_QUERIES["set_schema_version"], [str(SCHEMA_VERSION), _views_sha()])
        from . import caches

        caches.rebuild_all(Database(path, con, read_only=False))
        con.execute("COMMIT")
    except Exception:
        con.execute("ROLLBACK")
        raise
