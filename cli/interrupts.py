"""Ctrl-C (SIGINT) and SIGTERM during a command: a clean stop, never a traceback.

Python turns SIGINT into KeyboardInterrupt where it next checks for signals; within
``terminate_as_interrupt`` SIGTERM becomes ``Terminated``, a KeyboardInterrupt too, so
that everything that rolls back on Ctrl-C (the ingest's transaction, a statement
interrupted in DuckDB, the worker processes) rolls back on SIGTERM the same way. The exit
code says which: 130 for SIGINT, 143 for SIGTERM (128 + the signal, as a shell reports a
process the signal ended).
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised in the main thread where Ctrl-C would raise KeyboardInterrupt."""


def exit_code(e: KeyboardInterrupt) -> int:
    return 128 + (signal.SIGTERM if isinstance(e, Terminated) else signal.SIGINT)


def signal_name(e: KeyboardInterrupt) -> str:
    return "SIGTERM" if isinstance(e, Terminated) else "SIGINT"


def _raise_terminated(signum: int, frame: FrameType | None) -> None:
    raise Terminated()


@contextmanager
def terminate_as_interrupt() -> Iterator[None]:
    """Within the block SIGTERM raises Terminated (the handler before is put back after);
    only in the main thread, the one Python delivers signals to."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, before)


def quiet_worker() -> None:
    """A worker process's initializer: Ctrl-C, which a terminal sends to its whole process
    group, is the parent's to handle (a worker printed a traceback each), and SIGTERM, the
    parent stopping it, ends it at once and silently (not the parent's handler, which it
    inherits when forked)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
