"""The event vocabulary: what an ingester may say about a timeline.

Parsers yield these frozen records; the store turns them into rows of the
append-only ``events`` table (one converter, ``tlview.store.convert``).
A record never changes after it is made; a correction is a new record.

Steps are positions in the schedule (0-based). ``BufferFreed.step`` is the
*last* step at which the buffer is live: memory is released after that step.
``bytes`` is ``None`` where the size is symbolic (``s0*128``); the expression is
kept in ``size_expr`` and the buffer is reported, never counted as zero.
"""

from __future__ import annotations

from typing import Any

from attrs import field, frozen


def _attrs_dict() -> dict[str, Any]:
    return {}


@frozen
class Source:
    """One input file: provenance for every timeline and event it produced."""

    path: str
    size: int
    sha256: str
    format: str
    tool_version: str | None = None
    attrs: dict[str, Any] = field(factory=_attrs_dict)


@frozen
class Timeline:
    """One schedule of one program on one device.

    ``key`` is local to the ingest (events name their timeline by it); the store
    assigns the global ``timeline_id``.
    """

    key: str
    name: str
    format: str
    device: str | None = None
    attrs: dict[str, Any] = field(factory=_attrs_dict)


@frozen
class TimelineNote:
    """A fact learned about a timeline after it began (e.g. its step count)."""

    timeline: str
    attrs: dict[str, Any] = field(factory=_attrs_dict)


@frozen
class NodeScheduled:
    """A node (kernel launch, IR node, HLO instruction) runs at ``step``."""

    timeline: str
    step: int
    node: str
    node_class: str | None = None
    ir_type: str | None = None
    kernel: str | None = None
    device: str | None = None
    reads: tuple[str, ...] = ()
    writes: tuple[str, ...] = ()
    line: int | None = None
    attrs: dict[str, Any] = field(factory=_attrs_dict)


@frozen
class BufferAllocated:
    """A buffer comes to life at ``step``, produced by ``node``.

    Graph inputs are recorded with ``is_input=True`` and are not counted in
    graph memory. ``allocation``/``offset`` place the buffer inside a larger
    allocation (XLA), where buffers sharing bytes must not be counted twice.
    """

    timeline: str
    step: int | None
    buffer: str
    bytes: int | None
    node: str | None = None
    layout: str | None = None
    dtype: str | None = None
    shape: str | None = None
    stride: str | None = None
    device: str | None = None
    size_expr: str | None = None
    is_input: bool = False
    allocation: int | None = None
    offset: int | None = None
    line: int | None = None
    attrs: dict[str, Any] = field(factory=_attrs_dict)


@frozen
class BufferFreed:
    """``buffer`` is live for the last time at ``step``."""

    timeline: str
    step: int
    buffer: str
    reason: str | None = None
    attrs: dict[str, Any] = field(factory=_attrs_dict)


@frozen
class BufferAliased:
    """``buffer`` shares or writes the storage of ``target``.

    ``relation`` is one of: ``mutation`` (writes target in place), ``alias``
    (is a view of target), ``reuse`` (takes over target's storage).
    """

    timeline: str
    step: int | None
    buffer: str
    target: str
    relation: str
    node: str | None = None
    attrs: dict[str, Any] = field(factory=_attrs_dict)


@frozen
class CollectiveIssued:
    """A collective (all_gather, reduce_scatter, ...) is launched at ``step``."""

    timeline: str
    step: int
    node: str
    op: str
    bytes: int | None = None
    buffers: tuple[str, ...] = ()
    attrs: dict[str, Any] = field(factory=_attrs_dict)


@frozen
class CollectiveWaited:
    """``node`` waits at ``step`` for the collective issued by ``collective``."""

    timeline: str
    step: int
    node: str
    collective: str | None
    attrs: dict[str, Any] = field(factory=_attrs_dict)


@frozen
class KernelMeasured:
    """A measured GPU (or CPU) activity from a profiler trace, in ns."""

    timeline: str
    name: str
    ts_ns: int
    dur_ns: int
    category: str | None = None
    device: str | None = None
    stream: int | None = None
    correlation: int | None = None
    step: int | None = None
    node: str | None = None
    bytes: int | None = None
    attrs: dict[str, Any] = field(factory=_attrs_dict)


@frozen
class MeasuredBatch:
    """Many ``KernelMeasured`` events of one timeline, column by column.

    The fast path for profiler traces of millions of events: ``columns`` maps
    events-table column names (name, category, device, stream, ts_ns, dur_ns,
    correlation, bytes, attrs) to equal-length lists; ``attrs`` holds JSON text.
    ``records()`` gives the same events as ``KernelMeasured`` values.
    """

    timeline: str
    columns: dict[str, list[Any]]

    def __len__(self) -> int:
        return len(self.columns["name"])

    def records(self) -> list[KernelMeasured]:
        import json

        keys = list(self.columns)
        out = []
        for values in zip(*(self.columns[k] for k in keys)):
            row = dict(zip(keys, values))
            attrs = row.pop("attrs", None)
            out.append(KernelMeasured(timeline=self.timeline, **row,
                                      attrs=json.loads(attrs) if attrs else {}))
        return out


EVENT_KINDS: dict[type, str] = {
    NodeScheduled: "node_scheduled",
    BufferAllocated: "buffer_allocated",
    BufferFreed: "buffer_freed",
    BufferAliased: "buffer_aliased",
    CollectiveIssued: "collective_issued",
    CollectiveWaited: "collective_waited",
    KernelMeasured: "kernel_measured",
}

Event = (
    NodeScheduled
    | BufferAllocated
    | BufferFreed
    | BufferAliased
    | CollectiveIssued
    | CollectiveWaited
    | KernelMeasured
)
Record = Source | Timeline | TimelineNote | Event | MeasuredBatch
