"""The DuckDB storage format of tlview's files: one that the duckdb CLIs people install read.

DuckDB 2.0 writes storage version 69 by default, which every duckdb CLI on PyPI today
refuses (``duckdb-cli`` 1.5.x reads 64 to 68). A file's storage version is fixed when
it is created, so tlview creates every database in ``STORAGE_VERSION`` (DuckDB 1.4.0's
format, the LTS line: read by DuckDB 1.4.0 and later, CLI and Python alike). Files
written earlier in a newer format still open; ``convert`` rewrites one.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import duckdb

STORAGE_VERSION = "v1.4.0"


def version_tuple(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in text.lstrip("v").split("-")[0].split(".")[:3] if x.isdigit())


def creation_config() -> dict[str, Any]:
    """The config that makes ``duckdb.connect`` create a file in STORAGE_VERSION.

    A DuckDB module older than STORAGE_VERSION writes its own (older, readable) format.
    """
    if version_tuple(duckdb.__version__) < version_tuple(STORAGE_VERSION):
        return {}
    return {"storage_compatibility_version": STORAGE_VERSION}


def storage_version(con: duckdb.DuckDBPyConnection, queries: dict[str, str]) -> str | None:
    """The storage version of the connection's file as DuckDB tags it (``v1.4.0+``)."""
    row = con.execute(queries["storage_version"]).fetchone()
    return row[0] if row else None


def is_newer_than_target(tag: str | None) -> bool:
    """Whether a file tagged ``tag`` is in a newer format than STORAGE_VERSION."""
    return tag is not None and version_tuple(tag) > version_tuple(STORAGE_VERSION)


def convert(path: str, queries: dict[str, str]) -> None:
    """Rewrite the database at ``path`` in STORAGE_VERSION (tables, views, macros).

    The original is attached for writing, so no other process can change it meanwhile;
    the copy is written beside it, its row counts checked against the original's, and
    only then moved over it: a failure leaves the original exactly as it was.
    """
    tmp = f"{path}.converting"
    for p in (tmp, f"{tmp}.wal"):
        Path(p).unlink(missing_ok=True)
    con = duckdb.connect(":memory:")
    try:
        con.execute(queries["attach_original"], [path])
        con.execute(queries["checkpoint_original"])  # its WAL into the file: nothing left beside
        con.execute(queries["attach_converted"], [tmp, STORAGE_VERSION])
        con.execute(queries["copy_to_converted"])
        for (table,) in con.execute(queries["original_tables"]).fetchall():
            before, after = con.execute(
                queries["compare_table_counts"],
                [f"tlview_original.{table}", f"tlview_converted.{table}"]).fetchone() or (0, 1)
            if before != after:
                raise RuntimeError(f"{path}: the converted copy of {table} has {after} rows, "
                                   f"not {before}; the original is unchanged")
        con.execute(queries["detach_converted"])
        os.replace(tmp, path)  # while the original's lock is still held
    except BaseException:
        for p in (tmp, f"{tmp}.wal"):
            Path(p).unlink(missing_ok=True)
        raise
    finally:
        con.close()
