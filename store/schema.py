"""A database's schema made current: ``open_database`` creates a database (from the
empty template where it can) or checks and upgrades one; ``migrate`` brings an older
file, or one a newer DuckDB stored, up to date. The caches and runs a new schema needs
are rebuilt here, so that ``db.py`` (the connection and its named queries) imports none
of the modules built on it.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

import attrs
import duckdb

from . import runs, storage
from .db import (
    _QUERIES,
    SCHEMA_VERSION,
    Database,
    SchemaError,
    _connect,
    _connect_waiting,
    _meta_rows,
    _scalar,
    _views_sha,
    schema_ddl,
)
from .locks import lock_error


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
        meta = _meta_rows(con)
        if meta is None:
            raise SchemaError(f"{path} is not a tlview database (no tlview_meta table); "
                              "migrate changes only tlview's own files")
        before = int(meta.get("schema_version") or 0)
        views_current = meta.get("views_sha") == _views_sha()
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
    meta = _meta_rows(con)
    if meta is None:
        raise SchemaError(f"{path} is not a tlview database (no tlview_meta table)")
    version = int(meta.get("schema_version") or 0)
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
    if _views_sha() != meta.get("views_sha"):
        raise SchemaError(
            f"{path} has the views of another tlview version: "
            f"run `tlview migrate --db {path}` once to bring them up to date"
        )


def _ensure_schema(con: duckdb.DuckDBPyConnection, path: str) -> None:
    version = 0
    meta = _meta_rows(con)
    if meta is not None:
        version = int(meta.get("schema_version") or 0)
        if version > SCHEMA_VERSION:
            raise SchemaError(
                f"{path} was written by a newer tlview (schema v{version}); "
                f"this tlview writes v{SCHEMA_VERSION}: upgrade tlview"
            )
        if version == SCHEMA_VERSION and meta.get("views_sha") == _views_sha():
            return
    con.execute("BEGIN TRANSACTION")
    try:
        wide = bool(_scalar(con, "events_is_a_table"))  # v2/v3: moved to events_<kind>
        if wide:
            con.execute(_QUERIES["migrate_events_rename"])
        for (table,) in con.execute(_QUERIES["migrate_rank_cache_tables"]).fetchall():
            con.execute(_QUERIES["cache_drop_" + table.removeprefix("_cache_")])  # made again
        con.execute(schema_ddl())
        if wide:
            _split_events(con, path)
        con.execute(_QUERIES["set_schema_version"], [str(SCHEMA_VERSION), _views_sha()])
        from . import caches  # (pyarrow: only where a schema is written)

        caches.rebuild_all(Database(path, con, read_only=False))
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
