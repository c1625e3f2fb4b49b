"""What the terminal UI asks of a timeline: plain functions returning frozen snapshots.

Every function takes a :class:`Database` and returns immutable values, so the UI can
hand them across threads inside messages. SQL is in ``schemas/queries_timeline.sql``.

Memory figures read the core views, which the store caches per timeline at ingest
(``tlview.store.caches``), so a cursor step is a range read, never a recomputation.
Nothing here keeps state in the connection (no temporary tables): the UI opens the
file only for the length of a read, so that an ingest can write in between.
"""

from __future__ import annotations

import bisect
import json
from typing import Any

import attrs
from attrs import frozen

from .db import Database

MEASURED_FORMATS = ("kineto", "jax_trace")  # timelines of measured events, not of steps


@frozen
class TimelineInfo:
    timeline_id: int
    name: str
    format: str
    device: str | None
    n_steps: int
    source_path: str
    source_id: int = 0
    run_id: int | None = None  # its run (timelines.run_id), its name, its unique title
    run_name: str = ""
    title: str = ""
    copy_of: int | None = None  # a compiled graph's repeat from another artifact

    @property
    def is_measured(self) -> bool:
        """A profiler trace: kernels over time rather than a schedule of steps."""
        return self.format in MEASURED_FORMATS


@frozen
class TimelinePeak:
    timeline_id: int
    peak_step: int
    peak_bytes: int


@frozen
class DataVersion:
    """What changes when an ingest lands: the newest source and the timeline count."""

    max_source_id: int
    n_timelines: int


@frozen
class CurveSummary:
    """The memory curve of one timeline, squeezed to ``len(buckets)`` columns.

    ``buckets[i]`` is the largest live_bytes of the steps falling in column i;
    ``unknown[i]`` the largest count of live buffers of unknown size there.
    """

    timeline_id: int
    n_steps: int
    peak_step: int | None
    peak_bytes: int | None
    n_counted: int  # buffers with a known lifetime; 0 = no liveness
    buckets: tuple[int, ...]
    unknown: tuple[int, ...]

    @property
    def has_liveness(self) -> bool:
        return self.n_counted > 0


@frozen
class StepRow:
    step: int
    node: str
    node_class: str | None
    ir_type: str | None
    kernel: str | None
    alloc_bytes: int | None  # None: not known yet (cache not ready)
    freed_bytes: int | None
    duration_ns: int | None


@frozen
class StepWindow:
    timeline_id: int
    first: int
    rows: tuple[StepRow, ...]
    has_memory: bool
    has_durations: bool


@frozen
class LiveBuffer:
    buffer: str
    bytes: int | None
    dtype: str | None
    shape: str | None
    producer: str | None
    alloc_step: int
    last_step: int
    size_expr: str | None


@frozen
class LiveAt:
    """Memory at one step: the curve's figures and the live buffers, largest first."""

    timeline_id: int
    step: int
    live_bytes: int
    alloc_bytes: int
    freed_bytes: int
    unknown_live: int
    n_live: int
    n_unknown: int
    buffers: tuple[LiveBuffer, ...]  # the first ``limit`` of them


@frozen
class BufferFact:
    buffer: str
    bytes: int | None
    dtype: str | None
    shape: str | None
    is_input: bool


@frozen
class NodeDetail:
    timeline_id: int
    step: int
    node: str
    node_class: str | None
    ir_type: str | None
    kernel: str | None
    device: str | None
    line: int | None
    reads: tuple[BufferFact, ...]
    writes: tuple[BufferFact, ...]
    snodes: tuple[str, ...]
    origin: str | None  # ATen/framework origin where the dump says it
    code: tuple[tuple[str, str], ...]  # (title, text): loop bodies, generated code
    operands: tuple[str, ...] = ()  # XLA: the instructions it reads, in operand order
    source: str | None = None  # the model's file:line where the dump says it
    extra: tuple[tuple[str, str], ...] = ()  # (label, value): op_type, fusion kind, ...


@frozen
class Collective:
    node: str
    op: str | None
    bytes: int | None
    issue_step: int
    wait_node: str | None
    wait_step: int | None


@frozen
class UnderNode:
    step: int
    node: str
    kernel: str | None


@frozen
class CollectiveInFlight(Collective):
    """A collective in flight at a step, with the compute scheduled under it."""

    under: tuple[UnderNode, ...]  # compute between issue and wait (first few)
    n_under: int


@frozen
class SearchHit:
    step: int
    what: str  # node | kernel | buffer
    name: str


@frozen
class CurveRow:
    step: int
    node: str
    live_bytes: int
    alloc_bytes: int
    freed_bytes: int
    unknown_live: int


@frozen
class NodeKernel:
    """A measured GPU event attached to a compiled node (``kernel_attachments``)."""

    measured_timeline_id: int
    seq: int
    kernel: str
    ts_ns: int
    dur_ns: int
    method: str
    confidence: float


# -- timelines -----------------------------------------------------------------------


def list_timelines(db: Database) -> tuple[TimelineInfo, ...]:
    return tuple(TimelineInfo(*r) for r in db.query("tui_timelines"))


def timeline_peaks(db: Database) -> dict[int, TimelinePeak]:
    """Peaks of every timeline (from the peak cache: one read, whatever the count)."""
    return {r[0]: TimelinePeak(*r) for r in db.query("tui_peaks") if r[2] is not None}


def data_version(db: Database) -> DataVersion:
    return DataVersion(*db.query("tui_data_version")[0])


@frozen
class GraphSource:
    """A timeline of a compiled graph (graphs.forms): where it comes from and what it is."""

    timeline_id: int
    label: str  # output code in torch log, scheduler IR, FX graph in TORCH_TRACE...
    form: str  # output code | scheduler IR | scheduler IR pre-fusion | FX graph
    source_kind: str  # output_code.py | torch log | TORCH_TRACE | scheduler IR
    copy_of: int | None  # the timeline it repeats (an output code read again elsewhere)


def graph_sources(db: Database, timeline_id: int) -> tuple[GraphSource, ...]:
    """Every timeline of the compiled graph that ``timeline_id`` shows, itself included
    (none when it shows no compiled graph)."""
    return tuple(GraphSource(*r) for r in db.query("tui_graph_sources", timeline_id))


def timeline_notes(db: Database, timeline_id: int) -> tuple[str, ...]:
    """What the ingest noted of a timeline (``timeline_notes.attrs.warnings``), in order."""
    return tuple(str(r[0]) for r in db.query("timeline_warnings", timeline_id))


def has_node_times(db: Database) -> bool:
    """Whether a profile view ``node_times(timeline_id, step, total_ns, ...)`` exists and
    the database holds a measured kernel it could attach (else every time is NULL)."""
    return bool(db.query("tui_has_node_times")[0][0])


# -- memory ----------------------------------------------------------------------------


def peak_of(db: Database, timeline_id: int) -> TimelinePeak | None:
    """The timeline's peak from the cache, before its curve is read."""
    rows = db.query("tui_peak_of", timeline_id)
    return TimelinePeak(*rows[0]) if rows and rows[0][2] is not None else None


def curve_summary(db: Database, timeline_id: int, width: int) -> CurveSummary:
    """The timeline's curve in at most ``width`` columns, with its peak."""
    peak_step, peak_bytes, n_counted, n_steps = db.query("tui_curve_stats", timeline_id)[0]
    cols = max(1, min(width, n_steps))
    buckets = [0] * cols
    unknown = [0] * cols
    if n_steps:
        for col, live, unk in db.query("tui_curve_buckets", timeline_id, cols, n_steps):
            buckets[col] = live
            unknown[col] = unk
    return CurveSummary(timeline_id, n_steps, peak_step, peak_bytes, n_counted,
                        tuple(buckets), tuple(unknown))


def curve_rows(db: Database, timeline_id: int) -> tuple[CurveRow, ...]:
    """Every step of ``memory_curve`` (for export)."""
    return tuple(CurveRow(*r) for r in db.query("tui_curve_rows", timeline_id))


LIVE_LIMIT = 300  # live buffers listed by live_at (the LIMIT of tui_live_top)


def live_at(db: Database, timeline_id: int, step: int) -> LiveAt:
    """Memory at ``step``: the curve's figures, the count of live
    buffers, and the first LIVE_LIMIT of them as the ``live_at`` macro lists them."""
    curve = db.query("tui_curve_at", timeline_id, step)
    live, alloc, freed, unknown = curve[0] if curve else (0, 0, 0, 0)
    n_live, n_unknown = db.query("tui_live_totals", timeline_id, step)[0]
    rows = tuple(LiveBuffer(*r) for r in db.query("tui_live_top", timeline_id, step))
    return LiveAt(timeline_id, step, live, alloc, freed, unknown, n_live, n_unknown, rows)


# -- schedule ----------------------------------------------------------------------------


def step_window(db: Database, timeline_id: int, first: int, count: int, *,
                durations: bool) -> StepWindow:
    """Rows ``first .. first+count-1`` of the execution order, without memory figures.

    ``durations``: add measured time from the ``node_times`` view (profiles). That view
    attaches kernels to nodes as it is read (seconds on a database with traces), so the
    TUI asks for it once per timeline through ``step_durations`` instead.
    """
    last = first + count - 1
    dur: dict[int, int] = {}
    if durations:
        dur = {s: d for s, d in db.query("tui_step_durations", timeline_id, first, last)}
    rows = tuple(
        StepRow(step, node, cls, ir, kernel, None, None, dur.get(step))
        for step, node, cls, ir, kernel in db.query("tui_step_rows", timeline_id, first, last)
    )
    return StepWindow(timeline_id, first, rows, False, durations)


def step_durations(db: Database, timeline_id: int) -> dict[int, int]:
    """Measured time per step of the whole timeline (``node_times``), in one read."""
    return {s: d for s, d in db.query("tui_timeline_durations", timeline_id) if d is not None}


def with_memory(db: Database, window: StepWindow) -> StepWindow:
    """The window with bytes allocated/freed at each step (from memory_curve)."""
    if not window.rows:
        return attrs.evolve(window, has_memory=True)
    mem = {s: (a, f) for s, a, f in db.query(
        "tui_curve_window", window.timeline_id, window.rows[0].step, window.rows[-1].step)}
    rows = tuple(attrs.evolve(r, alloc_bytes=mem.get(r.step, (0, 0))[0],
                              freed_bytes=mem.get(r.step, (0, 0))[1]) for r in window.rows)
    return attrs.evolve(window, rows=rows, has_memory=True)


_ORIGIN_KEYS = ("origins", "origin", "aten_origin", "stack_trace")
_XLA_EXTRA = (("op type", "op_type"), ("fusion", "fusion_kind"), ("calls", "calls"),
              ("frame", "stack_frame_id"))


def _facts(rows: list[tuple[Any, ...]]) -> list[BufferFact]:
    return [BufferFact(r[0], r[1], r[2], r[3], bool(r[4])) for r in rows]


def node_at(db: Database, timeline_id: int, step: int) -> NodeDetail | None:
    """The node at ``step`` with what it reads and writes.

    Where the node names no buffers (XLA instructions), its reads are the values of its
    operand instructions and its writes the values it defines (``xla_instructions``).
    """
    rows = db.query("tui_node_at", timeline_id, step)
    if not rows:
        return None
    node, cls, ir, kernel, device, reads, writes, line, attrs_text = rows[0]
    attrs_: dict[str, Any] = json.loads(attrs_text) if attrs_text else {}
    reads, writes = tuple(reads or ()), tuple(writes or ())
    facts = {f.buffer: f for f in _facts(
        db.query("tui_buffer_facts", timeline_id, list({*reads, *writes})))}

    def fact(name: str) -> BufferFact:
        return facts.get(name, BufferFact(name, None, None, None, False))

    read_facts = [fact(n) for n in reads]
    write_facts = [fact(n) for n in writes]
    operands: tuple[str, ...] = ()
    extra: list[tuple[str, str]] = []
    fields = attrs_.get("fields") or {}
    origin = next((str(src[k]) for src in (attrs_, fields) for k in _ORIGIN_KEYS if k in src),
                  None)
    source = attrs_.get("source")
    if aten := attrs_.get("original_aten"):
        origin = origin or ", ".join(map(str, aten))
    xla = db.query("tui_xla_instruction", timeline_id, step)
    if xla:
        ops, op_type, op_name, xla_source, frame, fusion, calls = xla[0]
        operands = tuple(ops or ())
        origin = origin or op_name
        source = xla_source or source
        extra = [(label, str(v)) for (label, _), v in zip(_XLA_EXTRA, (op_type, fusion, calls,
                                                                         frame)) if v]
        if not read_facts and operands:
            read_facts = _facts(db.query("tui_values_of", timeline_id, list(operands)))
        if not write_facts:
            write_facts = _facts(db.query("tui_values_of", timeline_id, [node]))
    code = tuple((k.replace("_", " "), str(v)) for k, v in attrs_.items()
                 if k in ("loop_body", "instruction") or k.endswith("_code"))
    return NodeDetail(
        timeline_id, step, node, cls, ir, kernel, device, line,
        tuple(read_facts), tuple(write_facts),
        tuple(attrs_.get("snodes") or ()), origin, code, operands,
        str(source) if source else None, tuple(extra),
    )


def timeline_collectives(db: Database, timeline_id: int) -> tuple[Collective, ...]:
    """Every collective of the timeline, by issue step (read once per timeline)."""
    return tuple(Collective(*r) for r in db.query("tui_collectives", timeline_id))


def in_flight(collectives: tuple[Collective, ...], step: int) -> tuple[Collective, ...]:
    """Collectives issued at or before ``step`` and waited after it (or never waited)."""
    return tuple(c for c in collectives if c.issue_step <= step
                 and (c.wait_step is None or step < c.wait_step))


def collectives_at(db: Database, timeline_id: int, collectives: tuple[Collective, ...],
                   step: int, under_limit: int = 6) -> tuple[CollectiveInFlight, ...]:
    """Collectives in flight at ``step`` with the compute scheduled between their issue
    and wait (the first ``under_limit`` nodes)."""
    out = []
    for c in in_flight(collectives, step):
        end = c.wait_step if c.wait_step is not None else 2**62
        under = db.query("tui_nodes_between", timeline_id, c.issue_step, end, under_limit + 1)
        n_under = (end - c.issue_step - 1) if c.wait_step is not None else len(under)
        out.append(CollectiveInFlight(
            c.node, c.op, c.bytes, c.issue_step, c.wait_node, c.wait_step,
            tuple(UnderNode(*u) for u in under[:under_limit]), n_under))
    return tuple(out)


def adjacent_collective(collectives: tuple[Collective, ...], step: int,
                        forward: bool) -> int | None:
    """Issue step of the next (or previous) collective from ``step``."""
    issues = sorted({c.issue_step for c in collectives})
    if forward:
        i = bisect.bisect_right(issues, step)
        return issues[i] if i < len(issues) else None
    i = bisect.bisect_left(issues, step)
    return issues[i - 1] if i > 0 else None


def search(db: Database, timeline_id: int, text: str, after_step: int) -> SearchHit | None:
    """First node, kernel or buffer containing ``text`` after ``after_step`` (wrapping)."""
    if not text:
        return None
    rows = db.query("tui_search", timeline_id, text, after_step)
    return SearchHit(*rows[0]) if rows else None


def node_kernels(db: Database, timeline_id: int, step: int) -> tuple[NodeKernel, ...]:
    """The measured GPU events of the node at ``step``, in time order: attached to this
    output-code node, or for a scheduler-IR node to the output-code node it became."""
    return tuple(NodeKernel(*r) for r in db.query("tui_node_kernels", timeline_id, step))
