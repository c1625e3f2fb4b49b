"""What the terminal UI asks of a timeline: plain functions returning frozen snapshots.

Every function takes a :class:`Database` and returns immutable values, so the UI can
hand them across threads inside messages. SQL is in ``schemas/queries_tui.sql``.

Memory figures read the core views, which the store caches per timeline at ingest
(``tlview.store.caches``), so a cursor step is a range read, never a recomputation.
"""

from __future__ import annotations

import json
from typing import Any

import attrs
from attrs import frozen

from .db import Database


@frozen
class TimelineInfo:
    timeline_id: int
    name: str
    format: str
    device: str | None
    n_steps: int
    source_path: str


@frozen
class TimelinePeak:
    timeline_id: int
    peak_step: int
    peak_bytes: int


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
    origin: str | None  # ATen/source origin where the dump says it
    code: tuple[tuple[str, str], ...]  # (title, text): loop bodies, generated code


@frozen
class UnderNode:
    step: int
    node: str
    kernel: str | None


@frozen
class CollectiveInFlight:
    node: str
    op: str | None
    bytes: int | None
    issue_step: int
    wait_node: str | None
    wait_step: int | None
    under: tuple[UnderNode, ...]  # compute between issue and wait (first few)
    n_under: int


@frozen
class SearchHit:
    step: int
    what: str  # node | kernel | buffer
    name: str


# -- timelines -----------------------------------------------------------------------


def list_timelines(db: Database) -> tuple[TimelineInfo, ...]:
    return tuple(TimelineInfo(*r) for r in db.query("tui_timelines"))


def timeline_peaks(db: Database) -> dict[int, TimelinePeak]:
    """Peaks of every timeline (computes the curves: slow on huge timelines)."""
    return {r[0]: TimelinePeak(*r) for r in db.query("tui_peaks") if r[2] is not None}


def timeline_notes(db: Database, timeline_id: int) -> tuple[str, ...]:
    """What the ingest noted of a timeline (``timeline_notes.attrs.warnings``), in order."""
    return tuple(str(r[0]) for r in db.query("timeline_warnings", timeline_id))


def has_node_times(db: Database) -> bool:
    """Whether a profile view ``node_times(timeline_id, step, total_ns, ...)`` exists."""
    return bool(db.query("tui_has_node_times")[0][0])


# -- memory ----------------------------------------------------------------------------


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

    ``durations``: add measured time from the ``node_times`` view (profiles).
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


def with_memory(db: Database, window: StepWindow) -> StepWindow:
    """The window with bytes allocated/freed at each step (from memory_curve)."""
    if not window.rows:
        return attrs.evolve(window, has_memory=True)
    mem = {s: (a, f) for s, a, f in db.query(
        "tui_curve_window", window.timeline_id, window.rows[0].step, window.rows[-1].step)}
    rows = tuple(attrs.evolve(r, alloc_bytes=mem.get(r.step, (0, 0))[0],
                              freed_bytes=mem.get(r.step, (0, 0))[1]) for r in window.rows)
    return attrs.evolve(window, rows=rows, has_memory=True)


_ORIGIN_KEYS = ("origins", "origin", "aten_origin", "stack_trace", "source")


def node_at(db: Database, timeline_id: int, step: int) -> NodeDetail | None:
    rows = db.query("tui_node_at", timeline_id, step)
    if not rows:
        return None
    node, cls, ir, kernel, device, reads, writes, line, attrs_text = rows[0]
    attrs: dict[str, Any] = json.loads(attrs_text) if attrs_text else {}
    reads, writes = tuple(reads or ()), tuple(writes or ())
    facts = {r[0]: BufferFact(r[0], r[1], r[2], r[3], bool(r[4]))
             for r in db.query("tui_buffer_facts", timeline_id, list({*reads, *writes}))}

    def fact(name: str) -> BufferFact:
        return facts.get(name, BufferFact(name, None, None, None, False))

    fields = attrs.get("fields") or {}
    origin = next((str(src[k]) for src in (attrs, fields) for k in _ORIGIN_KEYS if k in src),
                  None)
    code = tuple((k.replace("_", " "), str(v)) for k, v in attrs.items()
                 if k == "loop_body" or k.endswith("_code"))
    return NodeDetail(
        timeline_id, step, node, cls, ir, kernel, device, line,
        tuple(fact(n) for n in reads), tuple(fact(n) for n in writes),
        tuple(attrs.get("snodes") or ()), origin, code,
    )


def _ensure_collectives(db: Database, timeline_id: int) -> None:
    """Copy the timeline's collectives into this connection's cache, once."""
    db.query("tui_create_collectives_cache")
    db.query("tui_create_collectives_prepared")
    if not db.query("tui_collectives_prepared", timeline_id)[0][0]:
        db.query("tui_fill_collectives_cache", timeline_id)
        db.query("tui_mark_collectives_prepared", timeline_id)


def collectives_at(db: Database, timeline_id: int, step: int,
                   under_limit: int = 6) -> tuple[CollectiveInFlight, ...]:
    """Collectives issued at or before ``step`` and waited after it, with the compute
    scheduled between their issue and wait (the first ``under_limit`` nodes)."""
    _ensure_collectives(db, timeline_id)
    out = []
    for node, op, nbytes, issue, wait_node, wait in db.query("tui_collectives_at",
                                                             timeline_id, step):
        end = wait if wait is not None else 2**62
        under = db.query("tui_nodes_between", timeline_id, issue, end, under_limit + 1)
        n_under = (end - issue - 1) if wait is not None else len(under)
        out.append(CollectiveInFlight(
            node, op, nbytes, issue, wait_node, wait,
            tuple(UnderNode(*u) for u in under[:under_limit]), n_under))
    return tuple(out)


def adjacent_collective(db: Database, timeline_id: int, step: int, forward: bool) -> int | None:
    """Issue step of the next (or previous) collective from ``step``."""
    _ensure_collectives(db, timeline_id)
    name = "tui_next_collective" if forward else "tui_prev_collective"
    return db.query(name, timeline_id, step)[0][0]


def search(db: Database, timeline_id: int, text: str, after_step: int) -> SearchHit | None:
    """First node, kernel or buffer containing ``text`` after ``after_step`` (wrapping)."""
    if not text:
        return None
    rows = db.query("tui_search", timeline_id, text, after_step)
    return SearchHit(*rows[0]) if rows else None
