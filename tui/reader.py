"""The UI's access to one database: two read-only connections, each behind a lock.

``memory``: the memory curve and live buffers (cached views); ``schedule``: the rows of
the execution list, so the list scrolls while memory figures load; ``detail``: the node at
the cursor, collectives, search (slower reads that must not hold up the list).
Workers call these from threads; a lock makes each connection serve one at a time.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TypeVar

from tlview.store import Database, open_database
from tlview.store import timeline_queries as q

T = TypeVar("T")


class Reader:
    def __init__(self, path: str) -> None:
        self.memory_db = open_database(path, read_only=True)
        self.schedule_db = Database(path, self.memory_db.con.cursor(), read_only=True)
        self.detail_db = Database(path, self.memory_db.con.cursor(), read_only=True)
        for db in (self.memory_db, self.schedule_db, self.detail_db):
            db.query("tui_quiet")
        self._memory_lock = threading.Lock()
        self._schedule_lock = threading.Lock()
        self._detail_lock = threading.Lock()
        self.prepared: set[int] = set()

    def close(self) -> None:
        """Stop running queries and close; a query that will not stop is left to exit."""
        for db, lock in ((self.schedule_db, self._schedule_lock),
                         (self.detail_db, self._detail_lock),
                         (self.memory_db, self._memory_lock)):
            db.con.interrupt()
            if lock.acquire(timeout=2):
                try:
                    db.close()
                finally:
                    lock.release()

    def memory(self, fn: Callable[..., T], *args: object,
               cancelled: Callable[[], bool] | None = None, **kw: object) -> T | None:
        """``fn(memory_db, ...)``; None without running it if ``cancelled()`` by then."""
        with self._memory_lock:
            if cancelled is not None and cancelled():
                return None
            return fn(self.memory_db, *args, **kw)

    def schedule(self, fn: Callable[..., T], *args: object,
                 cancelled: Callable[[], bool] | None = None, **kw: object) -> T | None:
        with self._schedule_lock:
            if cancelled is not None and cancelled():
                return None
            return fn(self.schedule_db, *args, **kw)

    def detail(self, fn: Callable[..., T], *args: object,
               cancelled: Callable[[], bool] | None = None, **kw: object) -> T | None:
        with self._detail_lock:
            if cancelled is not None and cancelled():
                return None
            return fn(self.detail_db, *args, **kw)

    def separate(self, fn: Callable[..., T], *args: object) -> T:
        """``fn`` on a connection of its own, for a long query that must block nothing."""
        db = Database(self.memory_db.path, self.memory_db.con.cursor(), read_only=True)
        try:
            db.query("tui_quiet")
            return fn(db, *args)
        finally:
            db.close()

    def prepare(self, timeline_id: int) -> None:
        """Read the timeline's curve summary once, so its memory panels can be shown."""
        self.memory(q.curve_summary, timeline_id, 1)
        self.prepared.add(timeline_id)
