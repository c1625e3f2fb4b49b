"""How long a command waits for another process to let go of the database.

DuckDB lets one process write a file or many read it. A TUI holds it only while it
reads and a `tlview sql` only while its query runs, so a command that finds the file
locked retries for a while (``TLVIEW_LOCK_WAIT`` seconds, default 30), saying once on
stderr whom it waits for, before it gives up naming that process.
"""

from __future__ import annotations

import os
import sys

DEFAULT_WAIT_S = 30.0


def lock_wait_s() -> float:
    raw = os.environ.get("TLVIEW_LOCK_WAIT", "")
    try:
        return max(0.0, float(raw)) if raw else DEFAULT_WAIT_S
    except ValueError:
        print(f"tlview: TLVIEW_LOCK_WAIT={raw!r}: expected seconds, e.g. 30", file=sys.stderr)
        raise SystemExit(2) from None


def say_waiting(message: str) -> None:
    print(f"tlview: {message}", file=sys.stderr, flush=True)
