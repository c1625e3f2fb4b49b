"""Who holds the memory at a step: the live buffers with their provenance, grouped.

``live_holders`` reads every buffer live at a step from the ``buffer_provenance`` view
(one read); grouping, sorting and filtering are plain functions over that snapshot, so
the screen regroups without touching the database.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from attrs import frozen

from .db import Database

# (key, what a person calls it): the groupings, in the order a key cycles them.
GROUPINGS: tuple[tuple[str, str], ...] = (
    ("buffer", "buffer (no grouping)"),
    ("producer", "producer op"),
    ("origin", "ATen / framework origin"),
    ("source", "source line"),
    ("dtype", "dtype"),
    ("alloc_site", "allocation site"),
)
SORTS: tuple[tuple[str, str], ...] = (
    ("bytes", "bytes, largest first"),
    ("alloc_step", "allocation step"),
    ("last_step", "last live step"),
    ("buffer", "name"),
)


@frozen
class Holder:
    """A buffer live at the step, with what it is grouped by (``buffer_provenance``)."""

    buffer: str
    bytes: int | None
    dtype: str | None
    shape: str | None
    alloc_step: int
    last_step: int
    size_expr: str | None
    producer: str | None
    origin: str | None
    source: str | None
    alloc_site: str | None

    def key(self, by: str) -> str | None:
        value: Any = getattr(self, by)
        return None if value is None else str(value)


@frozen
class LiveHolders:
    """Every buffer live at one step, largest first, and the curve's live bytes there."""

    timeline_id: int
    step: int
    live_bytes: int  # memory_curve.live_bytes: the share's denominator
    buffers: tuple[Holder, ...]


@frozen
class HolderGroup:
    key: str | None  # None: the dump says nothing for these buffers
    n_buffers: int
    bytes: int  # of the buffers of known size
    n_unknown: int  # buffers of unknown (symbolic) size
    share: float | None  # bytes / live bytes at the step, in percent

    def label(self, by: str) -> str:
        return self.key if self.key is not None else f"(no {dict(GROUPINGS)[by]} in the dump)"


def live_holders(db: Database, timeline_id: int, step: int) -> LiveHolders:
    curve = db.query("tui_curve_at", timeline_id, step)
    live = curve[0][0] if curve else 0
    rows = tuple(Holder(*r) for r in db.query("tui_live_provenance", timeline_id, step))
    return LiveHolders(timeline_id, step, live, rows)


def group_holders(buffers: Iterable[Holder], by: str, live_bytes: int) -> tuple[HolderGroup, ...]:
    """Buffers grouped by ``by`` (a GROUPINGS key), the most bytes first.

    ``share`` is of the step's live bytes (memory_curve), so groups of a timeline whose
    values share allocation bytes (XLA) can add up to more than 100%.
    """
    sums: dict[str | None, list[int]] = {}
    for b in buffers:
        s = sums.setdefault(b.key(by), [0, 0, 0])
        s[0] += 1
        if b.bytes is None:
            s[2] += 1
        else:
            s[1] += b.bytes
    groups = [HolderGroup(k, n, nbytes, unknown,
                          100.0 * nbytes / live_bytes if live_bytes else None)
              for k, (n, nbytes, unknown) in sums.items()]
    groups.sort(key=lambda g: (-g.bytes, -g.n_buffers, g.key is None, g.key or ""))
    return tuple(groups)


def in_group(buffers: Iterable[Holder], by: str, key: str | None) -> tuple[Holder, ...]:
    return tuple(b for b in buffers if b.key(by) == key)


def filter_holders(buffers: Iterable[Holder], text: str) -> tuple[Holder, ...]:
    """Buffers whose name, producer, origin, source, dtype, shape or allocation site
    contain every word of ``text`` (case-insensitive)."""
    words = text.lower().split()
    if not words:
        return tuple(buffers)

    def hay(b: Holder) -> str:
        return " ".join(x for x in (b.buffer, b.producer, b.origin, b.source, b.dtype, b.shape,
                                    b.alloc_site) if x).lower()

    return tuple(b for b in buffers if all(w in hay(b) for w in words))


_SORT_KEYS: dict[str, Callable[[Holder], Any]] = {
    "bytes": lambda b: (b.bytes is None, -(b.bytes or 0), b.buffer),
    "alloc_step": lambda b: (b.alloc_step, b.buffer),
    "last_step": lambda b: (b.last_step, b.buffer),
    "buffer": lambda b: b.buffer,
}


def sort_holders(buffers: Iterable[Holder], by: str) -> tuple[Holder, ...]:
    return tuple(sorted(buffers, key=_SORT_KEYS[by]))
