"""The store: one DuckDB file, an append-only events table, and the views over it.

It knows events and timelines, never dump formats.

Its names are imported on first use: a command that only reads (``tlview sql``,
``info``) never loads the writer, and with it pyarrow (docs/benchmarks.md, "Figures
behind choices in the code").
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .db import Database, DatabaseLocked, SchemaError
    from .schema import open_database
    from .writer import IngestSummary, write_records

__all__ = [
    "Database", "DatabaseLocked", "IngestSummary", "SchemaError", "open_database",
    "write_records",
]
_HOME = {"Database": "db", "DatabaseLocked": "db", "SchemaError": "db",
         "open_database": "schema", "IngestSummary": "writer", "write_records": "writer"}


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f".{home}", __name__), name)
