"""Ctrl-C (SIGINT) and SIGTERM during a command: a clean stop, never a traceback.

Python turns SIGINT into KeyboardInterrupt where it next checks for signals; within
``terminate_as_interrupt`` SIGTERM becomes ``Terminated``, a KeyboardInterrupt too, so
that everything that rolls back on Ctrl-C (the ingest's transaction, a statement
interrupted in DuckDB, the worker processes) rolls back on SIGTERM the same way. The exit
code says which: 130 for SIGINT, 143 for SIGTERM (128 + the signal, as a shell reports a
process the signal ended).

DuckDB's Python client runs the signal handlers itself while a statement runs in the
main thread and, where one raises, may end the statement with ``RuntimeError("Query
interrupted")`` in place of the handler's exception (duckdb 2.0.1): ``as_interrupt`` gives
that error back as the interrupt it was. Where the handler runs in Python code that DuckDB
calls back (an Arrow source's schema, while ``register`` runs: duckdb 2.0.1), DuckDB
drops its exception and the signal would be ignored (16 files ingested with two workers,
Ctrl-C after the first committed: 1 or 2 of each 20-30 runs under load committed every
file and ended 0); ``raise_dropped`` raises it again where the ingest may stop.
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


# The signals this process's handlers raised on, the last one last; how many of them a
# caller took (``as_interrupt``), the others dropped on the way (``raise_dropped``).
_received: list[int] = []
_taken = 0
_INTERRUPTED = "Query interrupted"  # duckdb's message where a handler raised


def _raise_terminated(signum: int, frame: FrameType | None) -> None:
    _received.append(signum)
    raise Terminated()


def _raise_interrupt(signum: int, frame: FrameType | None) -> None:
    _received.append(signum)
    raise KeyboardInterrupt()


def raise_dropped() -> None:
    """Raise the interrupt of a signal whose handler raised but whose exception no caller
    took (DuckDB dropped it, see above), as if the signal came now."""
    if len(_received) > _taken:
        raise Terminated() if _received[-1] == signal.SIGTERM else KeyboardInterrupt()


def as_interrupt(e: BaseException) -> KeyboardInterrupt | None:
    """``e`` as the interrupt it is: itself if a KeyboardInterrupt, the signal's for
    duckdb's "Query interrupted" (SIGINT unless the last signal seen was SIGTERM: outside
    ``terminate_as_interrupt`` SIGTERM ends the process at once), else None."""
    global _taken
    if isinstance(e, KeyboardInterrupt):
        _taken = len(_received)
        return e
    if isinstance(e, RuntimeError) and str(e).startswith(_INTERRUPTED):
        _taken = len(_received)
        return Terminated() if _received[-1:] == [signal.SIGTERM] else KeyboardInterrupt()
    return None


@contextmanager
def terminate_as_interrupt() -> Iterator[None]:
    """Within the block SIGTERM raises Terminated and SIGINT, where Python's own handler
    raises KeyboardInterrupt, does so noting the signal (the handlers before are put back
    after); only in the main thread, the one Python delivers signals to."""
    global _taken
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    _taken = len(_received)  # what an earlier command left is not this one's
    before = signal.signal(signal.SIGTERM, _raise_terminated)
    before_int = signal.getsignal(signal.SIGINT)
    if before_int is signal.default_int_handler:
        signal.signal(signal.SIGINT, _raise_interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, before)
        if before_int is signal.default_int_handler:
            signal.signal(signal.SIGINT, before_int)


def quiet_worker() -> None:
    """A worker process's initializer: Ctrl-C, which a terminal sends to its whole process
    group, is the parent's to handle (a worker printed a traceback each), and SIGTERM, the
    parent stopping it, ends it at once and silently (not the parent's handler, which it
    inherits when forked)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
