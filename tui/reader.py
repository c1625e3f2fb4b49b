"""The UI's access to the database: short read-only sessions, so that an ingest can write.

DuckDB lets a process write a file only while no other process has it open, so the UI
never keeps it open while it is idle: a read opens the file read-only (or reuses the
connection of a read less than ``idle_close_s`` ago), and a background thread closes it
once no read has run for that long. A read that finds the file locked (an ingest is
writing) waits and tries again, and says so through ``on_wait``, until it can open.

Reads run in *lanes* (``memory``, ``schedule``, ``detail``, ...): each lane is one cursor
of the shared connection behind a lock, so a slow read in one lane never holds up
another, and a worker cancelled while it waited is never run.
"""

from __future__ import annotations

import os
import re
import threading
import time
from collections.abc import Callable
from typing import TypeVar

from tlview.store import Database, DatabaseLocked, open_database

T = TypeVar("T")

# Close the file this long after the last read ends. Opening it costs ~75 ms of CPU
# (DuckDB loads the catalog, ~200 views): at 0.3 s a person stepping through a
# timeline at a key or two a second reopened it on nearly every key; an ingest
# started meanwhile waits this long at most (it waits up to DEFAULT_WAIT_S for a lock).
IDLE_CLOSE_S = 2.0
RETRY_S = 0.25  # wait between attempts while an ingest holds the file

_HOLDER = re.compile(r"process \d+")


def file_stamp(path: str) -> tuple[int, int] | None:
    """(mtime_ns, size) of the database file, None when missing: a change means an
    ingest wrote to it. A stat, never an open, so polling it locks nothing."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size)


def waiting_text(error: DatabaseLocked) -> str:
    """The title line's notice while an ingest holds the file (short: it shares the line)."""
    holder = _HOLDER.search(str(error))
    who = f" ({holder.group(0)})" if holder else ""
    return f"ingest in progress{who}, waiting"


class Reader:
    """Read-only sessions on one database file; see the module docstring."""

    def __init__(self, path: str, *, on_wait: Callable[[str | None], None] | None = None,
                 idle_close_s: float = IDLE_CLOSE_S) -> None:
        self.path = path
        self.on_wait = on_wait or (lambda text: None)
        self.idle_close_s = idle_close_s
        self._pool = threading.Lock()  # guards the fields below
        self._base: Database | None = None
        self._cursors: dict[str, Database] = {}
        self._lanes: dict[str, threading.Lock] = {}
        self._busy = 0
        self._last_used = 0.0
        self._waiting = False
        self._closed = False
        self.opens = 0  # how many times the file was opened (tests, benchmarks)
        self._closer = threading.Thread(target=self._close_when_idle, daemon=True,
                                        name="tlview-reader-closer")
        self._closer.start()

    @property
    def is_open(self) -> bool:
        return self._base is not None

    def run(self, lane: str, fn: Callable[..., T], *args: object,
            cancelled: Callable[[], bool] | None = None, **kw: object) -> T | None:
        """``fn(db, *args, **kw)`` on the lane's cursor; None if ``cancelled()`` first.

        Waits while the file is locked by a writer, checking ``cancelled`` between tries.
        """
        with self._pool:
            lock = self._lanes.setdefault(lane, threading.Lock())
        with lock:
            while True:
                if self._closed or (cancelled is not None and cancelled()):
                    return None
                try:
                    db = self._acquire(lane)
                except DatabaseLocked as e:
                    self._set_waiting(waiting_text(e))
                    time.sleep(RETRY_S)
                    continue
                self._set_waiting(None)
                try:
                    return fn(db, *args, **kw)
                finally:
                    self._release()

    def _set_waiting(self, text: str | None) -> None:
        if (text is not None) != self._waiting:
            self._waiting = text is not None
            self.on_wait(text)

    def _acquire(self, lane: str) -> Database:
        with self._pool:
            if self._base is None:
                self._base = open_database(self.path, read_only=True)
                self._base.query("tui_quiet")
                self.opens += 1
            db = self._cursors.get(lane)
            if db is None:
                db = Database(self.path, self._base.con.cursor(), read_only=True)
                db.query("tui_quiet")
                self._cursors[lane] = db
            self._busy += 1
            return db

    def _release(self) -> None:
        with self._pool:
            self._busy -= 1
            self._last_used = time.monotonic()

    def _close_now(self) -> None:
        """Close every cursor and the connection (the caller holds ``_pool``)."""
        for db in self._cursors.values():
            db.close()
        self._cursors.clear()
        if self._base is not None:
            self._base.close()
            self._base = None

    def _close_when_idle(self) -> None:
        while not self._closed:
            time.sleep(min(0.05, self.idle_close_s / 2))
            with self._pool:
                if (self._base is not None and self._busy == 0
                        and time.monotonic() - self._last_used >= self.idle_close_s):
                    self._close_now()

    def close(self) -> None:
        """Stop running queries and close; a query that will not stop is left to exit."""
        self._closed = True
        with self._pool:
            base = self._base
        if base is not None:
            base.con.interrupt()
            for db in list(self._cursors.values()):
                db.con.interrupt()
        deadline = time.monotonic() + 2
        while time.monotonic() < deadline:
            with self._pool:
                if self._busy == 0:
                    self._close_now()
                    return
            time.sleep(0.01)
