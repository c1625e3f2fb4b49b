"""Writing to stdout when the reader may go away (``tlview ... | head``).

A closed pipe ends a query's output quietly (exit code 141, as a shell shows for
``yes | head``). An ingest does not stop for it: its files are still ingested, only
their summaries go nowhere.
"""

from __future__ import annotations

import os
import sys

SIGPIPE_EXIT = 141  # 128 + SIGPIPE


def silence_stdout() -> None:
    """Send the rest of stdout to /dev/null, so that Python's flush at exit cannot fail
    again on the closed pipe."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


def say(text: str) -> None:
    """Print a line now; once the reader has gone, print nothing more."""
    try:
        print(text, flush=True)
    except BrokenPipeError:
        silence_stdout()
