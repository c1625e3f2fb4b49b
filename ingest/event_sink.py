"""Event records to columns in the compiled core, where the reader takes columns.

The torch-log and TORCH_TRACE parsers yield one record per event (their wrapper parser
is Python), and the writer would turn each into a row and then into Arrow, value by
value. Where the writer reads (``ingest.records.columns_accepted``), :func:`columnar`
hands each event record to the core's ``EventSink`` instead, which writes it as a row of
Arrow-layout columns (attrs as the writer's JSON text), and the compiled FX reader
writes its graphs' rows there directly (no record objects at all); every
``BATCH`` rows go out as one ``EventColumns``. Records the sink does not take
(timelines, notes, a value it cannot write) pass through, after the rows before them
for an event, so every event keeps its place. The rows are the writer's own rows of the
same records: tests/native/test_torch_log.py and tests/ingest/test_events_digest.py.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator
from typing import Any

from .records import (
    EVENT_KINDS,
    BufferAliased,
    BufferAllocated,
    BufferFreed,
    CompileEvent,
    EventColumns,
    NodeScheduled,
    Record,
)

BATCH = 20_000  # rows per EventColumns (the writer's batch size)
# The garbage collector's first threshold while a columnar parse runs. The parse makes and
# drops a few short-lived container objects per line (LogLines, lists of a record's
# lines), which would start a collection every 700: a large share of a torch log's parse
# CPU went to collections that find no cycles (measured: docs/benchmarks.md). The default
# comes back when the parse ends.
GC_THRESHOLD = 100_000
MAX_TEXT = 256 << 20  # bytes of string data per EventColumns (int32 offsets)
SINK_CLASSES = (NodeScheduled, BufferAllocated, BufferFreed, BufferAliased, CompileEvent)


def columnar(core: Any, parse: Callable[[Any], Iterator[Record]]) -> Iterator[Record]:
    """The records of ``parse(sink)``, their events as EventColumns, in order."""
    before = gc.get_threshold()
    gc.set_threshold(max(before[0], GC_THRESHOLD), *before[1:])
    try:
        yield from _columnar(core, parse)
    finally:
        gc.set_threshold(*before)


def _columnar(core: Any, parse: Callable[[Any], Iterator[Record]]) -> Iterator[Record]:
    from .native import arrow_columns

    sink = core.EventSink(SINK_CLASSES)

    def take() -> Iterator[EventColumns]:
        got = sink.take()
        if got is not None:
            timelines, batch = got
            n, cols = arrow_columns(batch)
            yield EventColumns(timelines, n, cols)

    for rec in parse(sink):
        if not sink.add(rec):
            if type(rec) in EVENT_KINDS or isinstance(rec, EventColumns):
                yield from take()  # the events before it go first
            yield rec
        if sink.rows() >= BATCH or sink.text_bytes() >= MAX_TEXT:
            yield from take()
    yield from take()
