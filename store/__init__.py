"""The store: one DuckDB file, an append-only events table, and the views over it.

It knows events and timelines, never dump formats.
"""

from .db import Database, DatabaseLocked, SchemaError
from .schema import open_database
from .writer import IngestSummary, write_records

__all__ = [
    "Database", "DatabaseLocked", "IngestSummary", "SchemaError", "open_database",
    "write_records",
]
