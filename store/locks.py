"""Who holds a database's lock, in words a person can act on.

DuckDB lets one process write a file, or any number read it. Its error names only the
holder's PID and executable ("Conflicting lock is held in .../python3.11 (PID 1234)"),
so a TUI left open read like a stuck ingest; the holder's command line tells them apart.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

_HELD = re.compile(r"Conflicting lock is held in (?P<exe>.*?) \(PID (?P<pid>\d+)\)")
# DuckDB adds this when the holder only reads: a reader could still open the file.
_HOLDER_READS = "would be able to open this database in read-only mode"
MAX_COMMAND = 100  # characters of the holder's command line quoted


class DatabaseLocked(Exception):
    """Another process holds the database's lock (``pid``, ``holder``: its command)."""

    def __init__(self, path: str, pid: int | None, holder: str, holder_writes: bool,
                 message: str) -> None:
        super().__init__(message)
        self.path = path
        self.pid = pid
        self.holder = holder
        self.holder_writes = holder_writes

    def waited(self, seconds: float) -> DatabaseLocked:
        """The same error, saying how long we waited for the holder."""
        return DatabaseLocked(self.path, self.pid, self.holder, self.holder_writes,
                              f"{self} (waited {seconds:g} s)")


def lock_error(path: str, duckdb_message: str) -> DatabaseLocked | None:
    """The DatabaseLocked that ``duckdb_message`` reports, or None if it is no lock error."""
    if "lock" not in duckdb_message.lower():
        return None
    m = _HELD.search(duckdb_message)
    pid = int(m["pid"]) if m else None
    holder = describe_process(pid, m["exe"] if m else None)
    who = f"process {pid} ({holder})" if pid is not None else "another process"
    if _HOLDER_READS in duckdb_message:
        return DatabaseLocked(path, pid, holder, False,
                              f"{path} is locked by {who}, which has it open for reading; "
                              "close it there (or let it finish) and try again")
    return DatabaseLocked(path, pid, holder, True,
                          f"{path} is locked by {who}, which has it open for writing; "
                          "try again when it finishes")


def describe_process(pid: int | None, exe: str | None = None) -> str:
    """The command a process runs, shortened (``tlview tui run.duckdb``).

    Read from /proc/PID/cmdline where this system has it and lets us; else the
    executable DuckDB named. A Python interpreter running a script is left out.
    """
    args: list[str] = []
    if pid is not None:
        try:
            raw = Path(f"/proc/{pid}/cmdline").read_bytes()
            args = [a.decode("utf-8", "replace") for a in raw.split(b"\0") if a]
        except OSError:
            args = []
    if not args:
        return os.path.basename(exe) if exe else "unknown command"
    if re.match(r"python[\d.]*\Z", os.path.basename(args[0])) and len(args) > 1 \
            and not args[1].startswith("-"):
        args = args[1:]  # python SCRIPT ...: the script says what it is
    args[0] = os.path.basename(args[0])
    text = " ".join(args)
    return text if len(text) <= MAX_COMMAND else text[: MAX_COMMAND - 3] + "..."
