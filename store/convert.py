"""Records to rows: the one cattrs converter, and the Arrow layout of the events table."""

from __future__ import annotations

import json
from functools import cache
from typing import Any

import cattrs
import pyarrow as pa

from .records import EVENT_KINDS, Event

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
])
EVENT_COLUMNS = tuple(EVENT_SCHEMA.names)


@cache
def converter() -> cattrs.Converter:
    """The converter: tuples become lists (Arrow lists), the rest as attrs says."""
    c = cattrs.Converter()
    c.register_unstructure_hook(tuple, list)
    return c


@cache
def _hook(cls: type) -> Any:
    return converter().get_unstructure_hook(cls)


def event_row(event: Event) -> dict[str, Any]:
    """One event as a dict keyed by events-table column (timeline still the local key)."""
    cls: Any = type(event)
    row = _hook(cls)(event)
    row["kind"] = EVENT_KINDS[cls]
    extra = row.pop("attrs", None)
    row["attrs"] = json.dumps(extra, default=str, separators=(",", ":")) if extra else None
    return row


def dumps(value: Any) -> str | None:
    """JSON for an attrs column (None stays NULL)."""
    if value is None:
        return None
    return json.dumps(value, default=str, separators=(",", ":"))
