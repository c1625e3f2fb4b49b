"""Records to rows: the one cattrs converter, and the Arrow layout of the events table."""

from __future__ import annotations

from functools import cache
from typing import Any

import attrs
import cattrs
import pyarrow as pa
from tlview.ingest.records import EVENT_KINDS, Event, dumps

# Column order of the events table (schemas/00_tables.sql), with Arrow types.
EVENT_SCHEMA = pa.schema([
    ("source_id", pa.int32()), ("timeline_id", pa.int32()), ("seq", pa.int64()),
    ("kind", pa.string()), ("step", pa.int64()), ("node", pa.string()),
    ("buffer", pa.string()), ("target", pa.string()), ("relation", pa.string()),
    ("reason", pa.string()), ("node_class", pa.string()), ("ir_type", pa.string()),
    ("kernel", pa.string()), ("device", pa.string()), ("reads", pa.list_(pa.string())),
    ("writes", pa.list_(pa.string())), ("bytes", pa.int64()), ("layout", pa.string()),
    ("dtype", pa.string()), ("shape", pa.string()), ("stride", pa.string()),
    ("size_expr", pa.string()), ("is_input", pa.bool_()), ("allocation", pa.int64()),
    ("offset", pa.int64()), ("op", pa.string()), ("buffers", pa.list_(pa.string())),
    ("collective", pa.string()), ("name", pa.string()), ("category", pa.string()),
    ("ts_ns", pa.int64()), ("dur_ns", pa.int64()), ("stream", pa.int64()),
    ("correlation", pa.int64()), ("line", pa.int64()), ("attrs", pa.string()),
    # Schema v3 (allocator snapshots), appended: NULL for every other kind.
    ("address", pa.int64()), ("stack_id", pa.int32()), ("block_bytes", pa.int64()),
    # Flight Recorder dumps and Python stack dumps, appended: NULL for every other kind.
    ("process_group", pa.string()), ("pg_desc", pa.string()), ("pg_id", pa.int64()),
    ("seq_id", pa.int64()), ("p2p_seq_id", pa.int64()), ("op_id", pa.int64()),
    ("is_p2p", pa.bool_()), ("state", pa.string()), ("started_ns", pa.int64()),
    ("completed_ns", pa.int64()), ("in_sizes", pa.string()), ("out_sizes", pa.string()),
    ("in_dtypes", pa.string()), ("out_dtypes", pa.string()), ("timeout_ms", pa.int64()),
    ("retired", pa.bool_()), ("ranks", pa.list_(pa.int64())), ("last_enqueued", pa.int64()),
    ("last_started", pa.int64()), ("last_completed", pa.int64()), ("thread", pa.string()),
])
EVENT_COLUMNS = tuple(EVENT_SCHEMA.names)
# The writer's own columns, first in the events view and in every kind's table.
OWNED_COLUMNS = ("source_id", "timeline_id", "seq")


def _kind_schema(cls: type) -> pa.Schema:
    names = {f.name for f in attrs.fields(cls)}
    return pa.schema([f for f in EVENT_SCHEMA if f.name in OWNED_COLUMNS or f.name in names])


# The columns of each kind's table (events_<kind>, schemas/00_tables.sql): the writer's
# three, then the record's fields, in the events view's order. No kind column: a table
# holds one kind.
KIND_SCHEMAS: dict[str, pa.Schema] = {kind: _kind_schema(cls) for cls, kind in EVENT_KINDS.items()}


@cache
def converter() -> cattrs.Converter:
    """The converter: each event class unstructures to its row of the events table
    (after the three columns the writer owns: source_id, timeline_id, seq)."""
    c = cattrs.Converter()
    c.register_unstructure_hook(tuple, list)
    for cls in EVENT_KINDS:
        c.register_unstructure_hook(cls, _row_function(cls))
    return c



def _row_function(cls: type) -> Any:
    """Generate ``row(event) -> tuple`` in events-column order for one event class.

    Generated once per class, so turning a record into a row is one tuple display:
    the hot path of every ingest. ``attrs`` becomes JSON text; absent columns NULL.
    """
    names = {f.name for f in attrs.fields(cls)}
    parts = []
    for col in EVENT_COLUMNS:
        if col in OWNED_COLUMNS:
            continue
        if col == "kind":
            parts.append(repr(EVENT_KINDS[cls]))
        elif col == "attrs":
            parts.append("(_dumps(e.attrs) if e.attrs else None)")
        elif col in names:
            parts.append(f"e.{col}")
        else:
            parts.append("None")
    src = f"def row(e):\n    return ({', '.join(parts)},)\n"
    scope: dict[str, Any] = {"_dumps": dumps}
    exec(compile(src, f"<tlview row of {cls.__name__}>", "exec"), scope)  # noqa: S102
    return scope["row"]


@cache
def kind_row(cls: type) -> Any:
    """Generate ``row(event) -> tuple`` in the columns of the class's own table
    (``KIND_SCHEMAS``, after the writer's three): what the writer appends."""
    names = KIND_SCHEMAS[EVENT_KINDS[cls]].names[len(OWNED_COLUMNS):]
    parts = ["(_dumps(e.attrs) if e.attrs else None)" if n == "attrs" else f"e.{n}"
             for n in names]
    src = f"def row(e):\n    return ({', '.join(parts)},)\n"
    scope: dict[str, Any] = {"_dumps": dumps}
    exec(compile(src, f"<tlview table row of {cls.__name__}>", "exec"), scope)  # noqa: S102
    return scope["row"]


def event_tuple(event: Event) -> tuple[Any, ...]:
    """The row of ``event`` without the writer-owned leading columns."""
    return converter().unstructure(event)
