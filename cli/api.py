"""The scripting API for postmortems: open a database, list timelines, query with parameters.

    import tlview.api as tl
    with tl.open("run.duckdb") as db:
        for t in db.timelines():
            print(t["name"], t["peak_bytes"], t["peak_step"])
        rows = db.rows("SELECT * FROM live_at(?, ?)", [1, 158])
        table = db.arrow("SELECT * FROM memory_curve WHERE timeline_id = ?", [1])

Databases open read-only unless ``write=True``, so a script cannot alter the evidence.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tlview.ingest import records_for
from tlview.store import Database, open_database, runs, write_records
from tlview.store.writer import limit_ingest_memory


class Session:
    """A tlview database opened for scripting."""

    def __init__(self, db: Database) -> None:
        self.db = db

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.db.close()

    def timelines(self) -> list[dict[str, Any]]:
        """Every timeline with its format, device, step count and peak."""
        return self.db.query_dicts("list_timelines")

    def rows(self, sql: str, params: list[Any] | None = None) -> list[dict[str, Any]]:
        """Run SQL with ``?`` parameters; rows as dicts."""
        cur = self.db.sql(sql, params)
        cols = [d[0] for d in cur.description]
        return [dict(zip(cols, r)) for r in cur.fetchall()]

    def arrow(self, sql: str, params: list[Any] | None = None) -> Any:
        """Run SQL with ``?`` parameters; the result as a pyarrow Table."""
        return self.db.con.sql(sql, params=params or None).to_arrow_table()

    def ingest(self, path: str | Path, fmt: str | None = None) -> list[int]:
        """Ingest one file (one transaction); the new timeline ids. Needs ``write=True``.
        The session keeps the ingest's memory limit from then on, as `tlview ingest` does
        (its close writes what the ingest appended)."""
        limit_ingest_memory(self.db)
        runs.register(self.db, runs.roots_of([str(path)], runs.known_roots(self.db)))
        summary = write_records(self.db, records_for(path, fmt))
        return list(summary.timeline_ids.values())


def open(path: str | Path, *, write: bool = False) -> Session:  # noqa: A001 - mirrors builtins
    """Open a tlview database (read-only unless ``write``)."""
    return Session(open_database(path, read_only=not write))
