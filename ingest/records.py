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

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
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
class CompileEvent:
    """A fact from a compiler's own log (TORCH_TRACE) that is no schedule step.

    ``category``: ``chromium`` (a compile phase event: ``ts_ns``, ``attrs.ph``),
    ``metrics`` (compilation_metrics and the like), ``estimate`` (Inductor's estimated
    runtime of a scheduler node, on the wrapper timeline of its graph, ``step`` the
    launch it was aligned to), ``provenance`` (kernel to FX nodes), ``string`` (an
    interned string), ``envelope`` (any other record of the log: kind in ``name``).
    """

    timeline: str
    category: str
    name: str | None = None
    step: int | None = None
    node: str | None = None
    kernel: str | None = None
    ts_ns: int | None = None
    dur_ns: int | None = None
    line: int | None = None
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


@frozen
class EventColumns:
    """Many events as Arrow columns: what the compiled ingest core yields.

    ``columns`` maps events-table column names to equal-length Arrow arrays (a column
    left out is NULL); ``_tl`` (int32), where present, is each row's timeline as an index
    into ``timelines``, else every row belongs to ``timelines[0]``. ``records()`` gives
    the same events as attrs records (tests, small inputs).
    """

    timelines: tuple[str, ...]
    n: int
    columns: dict[str, Any]

    def __len__(self) -> int:
        return self.n

    def records(self) -> list[Event]:
        import json

        classes = {kind: cls for cls, kind in EVENT_KINDS.items()}
        cols = {k: v.to_pylist() for k, v in self.columns.items()}
        tl = cols.pop("_tl", None)
        out: list[Event] = []
        for i in range(self.n):
            cls = classes[cols["kind"][i]]
            names = {f.name for f in cls.__attrs_attrs__}  # type: ignore[attr-defined]
            row = {k: v[i] for k, v in cols.items() if k in names}
            for k in ("reads", "writes", "buffers", "ranks"):
                if row.get(k) is not None:
                    row[k] = tuple(row[k])
                elif k in row:
                    del row[k]
            attrs = row.pop("attrs", None)
            out.append(cls(timeline=self.timelines[tl[i] if tl else 0], **row,
                           attrs=json.loads(attrs) if attrs else {}))
        return out


@frozen
class AllocatorAction:
    """One entry of a device's allocator trace, as the allocator recorded it.

    ``step`` is the entry's index in its device's trace (0-based, file order); ``op`` the
    action (alloc, free_requested, free_completed, segment_alloc, segment_free,
    segment_map, segment_unmap, oom, snapshot, or any other the dump names); ``bytes`` the
    size the entry states (the requested size for alloc and frees, the segment size for
    segment actions, the failed request for oom); ``block_bytes`` the whole block the
    allocator handed out for it (see ``ingest/cuda_snapshot.py``); ``correlation`` on a
    free: the step of the alloc it frees (NULL: allocated before the window);
    ``stack_id``: the interned frames (``stacks``/``frames`` tables, same source).
    """

    timeline: str
    step: int
    op: str
    address: int | None = None
    bytes: int | None = None
    block_bytes: int | None = None
    stream: int | None = None
    ts_ns: int | None = None
    stack_id: int | None = None
    correlation: int | None = None
    device: str | None = None
    attrs: dict[str, Any] = field(factory=_attrs_dict)


@frozen
class AllocatorSegment:
    """A segment (one cudaMalloc) of the allocator's state when the snapshot was taken;
    ``correlation``: the trace step of the segment_alloc that made it (NULL: before)."""

    timeline: str
    address: int
    bytes: int
    stream: int | None = None
    stack_id: int | None = None
    correlation: int | None = None
    device: str | None = None
    attrs: dict[str, Any] = field(factory=_attrs_dict)


@frozen
class AllocatorBlock:
    """A block of a segment when the snapshot was taken: ``op`` is its state
    (active_allocated, active_pending_free, inactive), ``bytes`` its requested size,
    ``block_bytes`` its size; ``correlation`` the trace step of the alloc that made it
    (NULL: made before the recorded window, or free)."""

    timeline: str
    address: int
    op: str
    bytes: int | None
    block_bytes: int
    stream: int | None = None
    stack_id: int | None = None
    correlation: int | None = None
    device: str | None = None
    attrs: dict[str, Any] = field(factory=_attrs_dict)


@frozen
class AllocatorAnnotation:
    """An external annotation the allocator recorded (``record_function`` ranges with
    ``global_record_annotations``): ``name`` and time; ``attrs`` the rest (stage...)."""

    timeline: str
    name: str | None
    ts_ns: int | None
    device: str | None = None
    attrs: dict[str, Any] = field(factory=_attrs_dict)


@frozen
class FrameInterned:
    """One distinct stack frame of a source (``frames`` table), numbered from 1."""

    frame_id: int
    filename: str | None
    line: int | None
    name: str | None
    attrs: dict[str, Any] = field(factory=_attrs_dict)


@frozen
class StackInterned:
    """One distinct stack of a source (``stacks`` table): its frames, innermost first."""

    stack_id: int
    frame_ids: tuple[int, ...]


@frozen
class CollectiveRecorded:
    """One entry of a rank's Flight Recorder dump (torch.distributed, the NCCL/gloo trace
    ring buffer): a collective or point-to-point op as its rank enqueued it.

    ``step`` is the entry's ``record_id`` (its place in the ring, counted from the first
    op the recorder saw); ``op`` the profiling name (``nccl:all_reduce``, ``nccl:send
    0->1``); ``process_group`` / ``pg_desc`` the group's name (torch's pg uid) and
    description, ``pg_id`` the backend's group number; ``seq_id`` the
    ``collective_seq_id`` (the same for the same collective on every rank of its group),
    ``p2p_seq_id``, ``op_id``; ``state`` scheduled | started | completed, as the recorder
    last saw it; ``ts_ns`` when it was enqueued, ``started_ns`` / ``completed_ns`` when
    the watchdog found it started / completed (NULL: not seen), ``dur_ns`` the measured
    duration where timing was on; ``in_sizes`` / ``out_sizes`` (lists of shapes) and
    ``in_dtypes`` / ``out_dtypes`` as JSON text; ``stack_id`` the interned Python frames
    of the call (``stacks`` / ``frames``, same source). ``attrs``: thread name and id, and
    any key this reader does not know."""

    timeline: str
    step: int | None
    op: str | None
    process_group: str | None = None
    pg_desc: str | None = None
    pg_id: int | None = None
    seq_id: int | None = None
    p2p_seq_id: int | None = None
    op_id: int | None = None
    is_p2p: bool | None = None
    state: str | None = None
    ts_ns: int | None = None
    started_ns: int | None = None
    completed_ns: int | None = None
    dur_ns: int | None = None
    in_sizes: str | None = None
    out_sizes: str | None = None
    in_dtypes: str | None = None
    out_dtypes: str | None = None
    timeout_ms: int | None = None
    retired: bool | None = None
    stack_id: int | None = None
    attrs: dict[str, Any] = field(factory=_attrs_dict)


@frozen
class ProcessGroupRecorded:
    """A process group as a rank's Flight Recorder dump configures it (``pg_config``):
    ``process_group`` its name, ``pg_desc``, ``ranks`` its global ranks (None where the
    dump's text is not a list of numbers: kept in ``attrs.ranks_text``)."""

    timeline: str
    process_group: str | None
    pg_desc: str | None = None
    ranks: tuple[int, ...] | None = None
    attrs: dict[str, Any] = field(factory=_attrs_dict)


@frozen
class ProcessGroupProgress:
    """A process group's progress on a rank when its Flight Recorder dump was taken
    (``pg_status``): the sequence ids of the last collective enqueued, started and
    completed (-1: none yet), by the backend's group number ``pg_id``."""

    timeline: str
    pg_id: int | None
    last_enqueued: int | None = None
    last_started: int | None = None
    last_completed: int | None = None
    attrs: dict[str, Any] = field(factory=_attrs_dict)


@frozen
class ThreadStack:
    """One thread of a Python stack dump (faulthandler's ``dump_traceback``, py-spy's
    ``dump``): ``step`` its place in the dump (0: first listed), ``thread`` its id as
    printed, ``name`` its name where the dump gives one, ``state`` current | active | idle
    | (empty) as printed, ``stack_id`` its frames, innermost first (``stacks`` /
    ``frames``, same source)."""

    timeline: str
    step: int
    thread: str | None
    name: str | None = None
    state: str | None = None
    stack_id: int | None = None
    attrs: dict[str, Any] = field(factory=_attrs_dict)


EVENT_KINDS: dict[type, str] = {
    NodeScheduled: "node_scheduled",
    BufferAllocated: "buffer_allocated",
    BufferFreed: "buffer_freed",
    BufferAliased: "buffer_aliased",
    CollectiveIssued: "collective_issued",
    CollectiveWaited: "collective_waited",
    KernelMeasured: "kernel_measured",
    CompileEvent: "compile_event",
    AllocatorAction: "allocator_action",
    AllocatorSegment: "allocator_segment",
    AllocatorBlock: "allocator_block",
    AllocatorAnnotation: "allocator_annotation",
    CollectiveRecorded: "collective_recorded",
    ProcessGroupRecorded: "process_group",
    ProcessGroupProgress: "process_group_status",
    ThreadStack: "thread_stack",
}

Event = (
    NodeScheduled
    | BufferAllocated
    | BufferFreed
    | BufferAliased
    | CollectiveIssued
    | CollectiveWaited
    | KernelMeasured
    | CompileEvent
    | AllocatorAction
    | AllocatorSegment
    | AllocatorBlock
    | AllocatorAnnotation
    | CollectiveRecorded
    | ProcessGroupRecorded
    | ProcessGroupProgress
    | ThreadStack
)
Interned = FrameInterned | StackInterned
Record = Source | Timeline | TimelineNote | Event | MeasuredBatch | EventColumns | Interned


_COLUMNS = threading.local()


@contextmanager
def columns_accepted() -> Iterator[None]:
    """Within this block, in this thread, a parser may yield ``EventColumns`` in place of
    event records it would otherwise yield one by one (the writer sets it: it takes
    both). Outside it (tests and tools reading a parser's records) those parsers keep
    yielding records, so their readers never see columns they did not ask for."""
    before = getattr(_COLUMNS, "on", False)
    _COLUMNS.on = True
    try:
        yield
    finally:
        _COLUMNS.on = before


def columns_wanted() -> bool:
    """Is this thread inside :func:`columns_accepted`?"""
    return getattr(_COLUMNS, "on", False)


# json.dumps(value, default=str, separators=(",", ":")) without making an encoder per
# call (a fifth of the rows' cost): the same text, byte for byte.
_ENCODER = json.JSONEncoder(default=str, separators=(",", ":"))


def dumps(value: Any) -> str | None:
    """JSON for an attrs column (None stays NULL)."""
    if value is None:
        return None
    return _ENCODER.encode(value)
