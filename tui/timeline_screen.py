"""The compiled-timeline screen: the schedule step by step, with memory at the cursor.

The memory curve, the live buffers at the cursor, the execution order, the node at the
cursor and the collectives in flight; under the title, where the compiled graph came from
several artifacts or in several forms, its other timelines (graph_sources). Every read is a thread worker calling
``tlview.store.timeline_queries`` through the :class:`Reader`; results come back as
messages holding frozen snapshots. A key that needs data not read yet (``p`` before the
peak is known) is remembered and carried out when the data arrives.
"""

from __future__ import annotations

import time

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.worker import get_current_worker
from tlview.store import timeline_queries as q
from tlview.store.timeline_queries import (
    Collective,
    CurveSummary,
    LiveAt,
    TimelineInfo,
    TimelinePeak,
)

from . import messages as app_messages
from . import timeline_messages as m
from .collectives_panel import CollectivesPanel
from .execution_list import ExecutionList
from .export import default_name, write_csv
from .glyphs import Glyphs
from .graph_sources import GraphSources
from .keys_footer import KeysFooter
from .live_buffers import LiveBuffers
from .memory_curve import MemoryCurve
from .memory_status import MemoryStatus
from .node_detail import NodeDetailPanel
from .prompts import Prompt
from .reader import Reader
from .title_bar import TitleBar, timeline_heading

KEYS = (
    ("j k  Down Up", "next / previous step (also -> and <-)"),
    ("PgDn PgUp", "a page of steps"),
    ("Home End", "first / last step"),
    ("p", "jump to the peak of memory"),
    ("n N", "next / previous collective"),
    ("g", "go to a step"),
    ("/", "search nodes, kernels, buffers (to the next match)"),
    ("Tab", "focus: steps, live buffers, node (then arrows scroll it)"),
    ("b", "lifetime of the selected buffer; again: alloc <-> last"),
    ("Esc", "clear the lifetime highlight; else back"),
    ("w", "who holds the memory at this step (grouped live buffers)"),
    ("m", "the measured kernels of the node at the cursor (profiler trace)"),
    ("e", "export the memory curve to CSV"),
)

ABOUT = (
    "Memory: live bytes of buffers live at a step (allocated at or before it, last used at "
    "or after it); graph inputs are not counted; buffers of unknown (symbolic) size are "
    "counted apart. The curve shows, per column, the largest value of its steps; its scale "
    "is at the left."
)


class TimelineScreen(Screen[None]):
    KEYS = KEYS
    ABOUT = ABOUT
    BINDINGS = [
        Binding("j,down", "step(1)", "step", key_display="j/k"),
        Binding("k,up", "step(-1)", "step", show=False),
        Binding("right", "step(1)", show=False, priority=True),
        Binding("left", "step(-1)", show=False, priority=True),
        Binding("pagedown", "page(1)", show=False),
        Binding("pageup", "page(-1)", show=False),
        Binding("home", "jump('home')", show=False),
        Binding("end", "jump('end')", show=False),
        Binding("p", "peak", "peak"),
        Binding("n", "collective(1)", "coll", key_display="n/N"),
        Binding("N", "collective(-1)", show=False),
        Binding("g", "goto", "go to"),
        Binding("slash", "search", "search", key_display="/"),
        Binding("b", "lifetime", "lifetime"),
        Binding("w", "holders", "who holds"),
        Binding("m", "measured", "kernels"),
        Binding("e", "export", "csv"),
        Binding("escape", "escape", show=False),
    ]

    def __init__(self, reader: Reader, info: TimelineInfo, glyphs: Glyphs, *,
                 has_durations: bool, step: int = 0) -> None:
        super().__init__()
        self.reader = reader
        self.timeline = info
        self.glyphs = glyphs
        self.has_durations = has_durations
        self.step = max(0, min(step, info.n_steps - 1)) if info.n_steps else 0
        self.curve: CurveSummary | None = None
        self.peak: TimelinePeak | None = None
        self.peak_read = False
        self.pending: list[str] = []  # keys waiting for data (p before the peak is known)
        self.memory_ready = False
        self.collectives: tuple[Collective, ...] | None = None
        self.life: tuple[str, int, int] | None = None
        self.last_search = ""
        self.select_after_load: str | None = None
        self.prepare_pending = info.n_steps > 0

    # -- layout -------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        g = self.glyphs
        yield TitleBar(id="title")
        yield GraphSources(id="sources")
        with Vertical(id="main"):
            yield MemoryCurve(g, id="curve")
            yield MemoryStatus("", id="status")
            with Horizontal(id="upper"):
                yield ExecutionList(g, id="steps")
                yield LiveBuffers(g, id="live")
            with Horizontal(id="lower"):
                yield NodeDetailPanel(id="node")
                yield CollectivesPanel(g, id="collectives")
        yield KeysFooter()

    def on_mount(self) -> None:
        self.query_one("#steps").border_title = " execution order "
        self.query_one("#live").border_title = " live buffers "
        self.query_one("#node").border_title = " node "
        self.query_one("#collectives").border_title = " collectives in flight "
        info = self.timeline
        self.query_one(ExecutionList).reset(info.timeline_id, info.n_steps, self.has_durations)
        curve = self.query_one(MemoryCurve)
        if info.n_steps == 0:
            curve.show(None, "this timeline has no steps")
        else:
            curve.show(None, f"computing the memory curve of {info.n_steps:,} steps"
                             f"{self.glyphs.ellipsis}")
            self.load_peak(info.timeline_id)
            if self.has_durations:
                self.load_durations(info.timeline_id)
        self.query_one(ExecutionList).focus()
        self.go(self.step)
        self.load_sources(info.timeline_id)

    @work(thread=True, exclusive=True, group="sources", exit_on_error=False)
    def load_sources(self, timeline_id: int) -> None:
        got = self.reader.run("detail", q.graph_sources, timeline_id)
        if got is not None:
            self.post_message(m.SourcesLoaded(timeline_id, got))

    @on(m.SourcesLoaded)
    def on_sources_loaded(self, event: m.SourcesLoaded) -> None:
        self.query_one(GraphSources).show(event.timeline_id, event.sources)

    # -- memory -------------------------------------------------------------------------

    @work(thread=True, exclusive=True, group="peak", exit_on_error=False)
    def load_peak(self, timeline_id: int) -> None:
        self.post_message(m.PeakKnown(timeline_id,
                                      self.reader.run("memory", q.peak_of, timeline_id)))

    @on(m.PeakKnown)
    def on_peak_known(self, event: m.PeakKnown) -> None:
        self.peak = event.peak
        self.peak_read = True
        self._carry_out_pending()

    def _carry_out_pending(self) -> None:
        pending, self.pending = self.pending, []
        for action in pending:
            if action == "peak":
                self.action_peak()

    @work(thread=True, exclusive=True, group="prepare", exit_on_error=False)
    def prepare_memory(self, timeline_id: int) -> None:
        t0 = time.perf_counter()
        notes = self.reader.run("memory", q.timeline_notes, timeline_id) or ()
        self.post_message(m.MemoryReady(timeline_id, time.perf_counter() - t0, notes))

    @on(m.MemoryReady)
    def on_memory_ready(self, event: m.MemoryReady) -> None:
        self.memory_ready = True
        for note in event.notes:  # said plainly, as `tlview ingest` said it
            self.notify(note, title="note", timeout=12)
        self.load_curve(event.timeline_id, self.query_one(MemoryCurve).bar_width)
        self.query_one(ExecutionList).forget_rows()
        self.load_live(event.timeline_id, self.step)

    @on(MemoryCurve.Resized)
    def on_curve_resized(self, event: MemoryCurve.Resized) -> None:
        if self.memory_ready:
            self.load_curve(self.timeline.timeline_id, event.width)

    @work(thread=True, exclusive=True, group="curve", exit_on_error=False)
    def load_curve(self, timeline_id: int, width: int) -> None:
        curve = self.reader.run("memory", q.curve_summary, timeline_id, max(1, width))
        if curve is not None:
            self.post_message(m.CurveLoaded(curve, width))

    @on(m.CurveLoaded)
    def on_curve_loaded(self, event: m.CurveLoaded) -> None:
        curve = event.curve
        width = self.query_one(MemoryCurve).bar_width
        if event.width != width:  # resized meanwhile: ask again for this width
            self.load_curve(curve.timeline_id, width)
        self.curve = curve
        if not curve.has_liveness:
            self.query_one(MemoryCurve).show(
                None, "no buffer lifetimes in this timeline: memory is unknown")
        else:
            self.query_one(MemoryCurve).show(curve)
        steps = self.query_one(ExecutionList)
        steps.peak_step = curve.peak_step
        steps.refresh()
        live = self.query_one(LiveBuffers).live
        if live is not None and live.step == self.step:
            self.show_status(live)

    @work(thread=True, exclusive=True, group="live", exit_on_error=False)
    def load_live(self, timeline_id: int, step: int) -> None:
        worker = get_current_worker()
        live = self.reader.run("memory", q.live_at, timeline_id, step,
                               cancelled=lambda: worker.is_cancelled)
        if live is not None and not worker.is_cancelled:
            self.post_message(m.LiveLoaded(live))

    @on(m.LiveLoaded)
    def on_live_loaded(self, event: m.LiveLoaded) -> None:
        live = event.live
        if live.step != self.step:
            return
        table = self.query_one(LiveBuffers)
        table.show(live)
        table.border_title = (f" live buffers: {live.n_live:,}"
                              + (f" (largest {len(live.buffers)})"
                                 if live.n_live > len(live.buffers) else "") + " ")
        if self.select_after_load and table.select_buffer(self.select_after_load):
            self.select_after_load = None
        self.show_status(live)

    def show_status(self, live: LiveAt) -> None:
        if self.curve is not None and not self.curve.has_liveness:
            self.query_one(MemoryStatus).show_text("no buffer lifetimes: nothing to count")
        else:
            self.query_one(MemoryStatus).show(live, self.curve, self.size.width >= 120)

    # -- schedule -----------------------------------------------------------------------

    @on(ExecutionList.NeedRows)
    def on_need_rows(self, event: ExecutionList.NeedRows) -> None:
        self.load_rows(self.timeline.timeline_id, event.first, event.count)

    @work(thread=True, exclusive=True, group="rows", exit_on_error=False)
    def load_rows(self, timeline_id: int, first: int, count: int) -> None:
        def rows(db):
            window = q.step_window(db, timeline_id, first, count, durations=False)
            return q.with_memory(db, window) if self.memory_ready else window

        window = self.reader.run("schedule", rows)
        if window is not None:
            self.post_message(m.WindowLoaded(window))

    @work(thread=True, exclusive=True, group="durations", exit_on_error=False)
    def load_durations(self, timeline_id: int) -> None:
        durations = self.reader.run("durations", q.step_durations, timeline_id)
        if durations is not None:
            self.post_message(m.DurationsLoaded(timeline_id, durations))

    @on(m.DurationsLoaded)
    def on_durations_loaded(self, event: m.DurationsLoaded) -> None:
        self.query_one(ExecutionList).set_durations(event.timeline_id, event.durations)

    @on(m.WindowLoaded)
    def on_window_loaded(self, event: m.WindowLoaded) -> None:
        self.query_one(ExecutionList).add_window(event.window)
        if self.prepare_pending:  # once the first rows are on screen
            self.prepare_pending = False
            self.prepare_memory(self.timeline.timeline_id)

    @work(thread=True, exclusive=True, group="node", exit_on_error=False)
    def load_node(self, timeline_id: int, step: int,
                  known: tuple[Collective, ...] | None) -> None:
        worker = get_current_worker()

        def both(db):
            collectives = known if known is not None else q.timeline_collectives(db, timeline_id)
            return (q.node_at(db, timeline_id, step),
                    q.collectives_at(db, timeline_id, collectives, step), collectives)

        got = self.reader.run("detail", both, cancelled=lambda: worker.is_cancelled)
        if got is not None and not worker.is_cancelled:
            self.post_message(m.NodeLoaded(timeline_id, step, *got))

    @on(m.NodeLoaded)
    def on_node_loaded(self, event: m.NodeLoaded) -> None:
        self.collectives = event.all_collectives
        if event.step != self.step:
            return
        self.query_one(NodeDetailPanel).show(event.detail, f"no node at step {event.step}")
        self.query_one(CollectivesPanel).show(event.step, event.collectives)

    # -- the cursor ---------------------------------------------------------------------

    def go(self, step: int) -> None:
        info = self.timeline
        step = max(0, min(step, info.n_steps - 1)) if info.n_steps else 0
        self.step = step
        self.query_one(ExecutionList).cursor = step
        self.query_one(MemoryCurve).cursor = step
        self.query_one(TitleBar).show(
            timeline_heading(info),
            keep=f"step {step:,} of {info.n_steps:,}")
        if info.n_steps:
            # Draw the cursor first; then read what is at it (skipped if it moved on).
            self.call_after_refresh(self._read_at_cursor, info.timeline_id, step)

    def _read_at_cursor(self, timeline_id: int, step: int) -> None:
        if step != self.step or not self.is_mounted:
            return
        self.load_node(timeline_id, step, self.collectives)
        if self.memory_ready:
            self.load_live(timeline_id, step)

    def action_step(self, delta: int) -> None:
        self.go(self.step + delta)

    def action_page(self, direction: int) -> None:
        self.go(self.step + direction * self.query_one(ExecutionList).body_height)

    def action_jump(self, where: str) -> None:
        self.go(0 if where == "home" else self.timeline.n_steps - 1)

    @on(ExecutionList.Clicked)
    @on(MemoryCurve.Clicked)
    def on_clicked(self, event: ExecutionList.Clicked | MemoryCurve.Clicked) -> None:
        self.go(event.step)

    @on(ExecutionList.Scrolled)
    def on_scrolled(self, event: ExecutionList.Scrolled) -> None:
        self.go(self.step + event.delta)

    def action_peak(self) -> None:
        if not self.timeline.n_steps:
            self.notify("this timeline has no steps: no peak")
            return
        peak = self.peak if self.peak is not None else (
            TimelinePeak(self.timeline.timeline_id, self.curve.peak_step, self.curve.peak_bytes)
            if self.curve is not None and self.curve.peak_step is not None
            and self.curve.has_liveness else None)
        if peak is not None:
            self.query_one(LiveBuffers).from_top_at(peak.peak_step)
            self.go(peak.peak_step)
        elif not self.peak_read and self.curve is None:
            if "peak" not in self.pending:  # carried out when the peak arrives
                self.pending.append("peak")
        else:
            self.notify("no buffer lifetimes in this timeline: no peak")

    def action_collective(self, direction: int) -> None:
        self.find_collective(self.timeline.timeline_id, self.step, direction > 0,
                             self.collectives)

    @work(thread=True, exclusive=True, group="jump", exit_on_error=False)
    def find_collective(self, timeline_id: int, step: int, forward: bool,
                        known: tuple[Collective, ...] | None) -> None:
        collectives = known if known is not None else (
            self.reader.run("detail", q.timeline_collectives, timeline_id) or ())
        at = q.adjacent_collective(collectives, step, forward)
        self.post_message(m.JumpFound(at, "next collective" if forward else
                                      "previous collective"))

    @on(m.JumpFound)
    def on_jump_found(self, event: m.JumpFound) -> None:
        if event.step is None:
            self.notify(f"no {event.what}", severity="warning")
            return
        if event.hit is not None:
            self.notify(f"{event.hit.what} {event.hit.name} at step {event.hit.step}")
            self.select_after_load = event.hit.name if event.hit.what == "buffer" else None
        self.go(event.step)

    def action_goto(self) -> None:
        if self.timeline.n_steps:
            self.app.push_screen(Prompt("Go to step", f"0 to {self.timeline.n_steps - 1}",
                                        max_step=self.timeline.n_steps - 1), self._goto)

    def _goto(self, value: str | None) -> None:
        if value is not None:
            self.go(int(value))

    def action_search(self) -> None:
        self.app.push_screen(Prompt("Search nodes, kernels and buffers", "a name or part of one",
                                    value=self.last_search), self._search)

    def _search(self, text: str | None) -> None:
        if text:
            self.last_search = text
            self.search(self.timeline.timeline_id, text, self.step)

    @work(thread=True, exclusive=True, group="jump", exit_on_error=False)
    def search(self, timeline_id: int, text: str, step: int) -> None:
        hit = self.reader.run("detail", q.search, timeline_id, text, step)
        self.post_message(m.JumpFound(hit.step if hit else None,
                                      f"node, kernel or buffer matches {text!r}", hit))

    def action_lifetime(self) -> None:
        buf = self.query_one(LiveBuffers).selected
        if buf is None:
            self.notify("no live buffer selected (Tab to the live buffers)", severity="warning")
            return
        self.life = (buf.buffer, buf.alloc_step, buf.last_step)
        self.query_one(MemoryCurve).show_life((buf.alloc_step, buf.last_step))
        steps = self.query_one(ExecutionList)
        steps.life = (buf.alloc_step, buf.last_step)
        self.select_after_load = buf.buffer
        size = f"{buf.bytes:,} B" if buf.bytes is not None else (buf.size_expr or "unknown size")
        self.notify(f"{buf.buffer}: {size}, live steps {buf.alloc_step} to {buf.last_step}")
        self.go(buf.last_step if self.step == buf.alloc_step else buf.alloc_step)

    def action_escape(self) -> None:
        if self.life is not None:
            self.life = None
            self.query_one(MemoryCurve).show_life(None)
            steps = self.query_one(ExecutionList)
            steps.life = None
            steps.refresh()
        else:
            self.app.post_message(app_messages.GoBack())

    # -- other screens ------------------------------------------------------------------

    def action_holders(self) -> None:
        from .holders_screen import HoldersScreen

        if not self.timeline.n_steps:
            self.notify("this timeline has no steps", severity="warning")
            return
        self.app.push_screen(HoldersScreen(self.reader, self.timeline, self.glyphs, self.step))

    def action_measured(self) -> None:
        if self.timeline.n_steps:
            self.notify(f"finding the measured kernels of step {self.step}{self.glyphs.ellipsis}",
                        timeout=3)
            self.find_kernels(self.timeline.timeline_id, self.step)

    @work(thread=True, exclusive=True, group="kernels", exit_on_error=False)
    def find_kernels(self, timeline_id: int, step: int) -> None:
        def both(db):
            detail = q.node_at(db, timeline_id, step)
            return (detail.node if detail else "?"), q.node_kernels(db, timeline_id, step)

        got = self.reader.run("detail", both)
        if got is not None:
            self.post_message(m.KernelsFound(step, *got))

    @on(m.KernelsFound)
    def on_kernels_found(self, event: m.KernelsFound) -> None:
        if not event.kernels:
            self.notify(f"no measured kernel is attached to {event.node} (step {event.step}): "
                        "ingest the run's profiler trace beside its output code",
                        severity="warning", timeout=8)
            return
        first = event.kernels[0]
        seqs = tuple(k.seq for k in event.kernels
                     if k.measured_timeline_id == first.measured_timeline_id)
        self.app.post_message(app_messages.OpenTimeline(
            first.measured_timeline_id, seq=first.seq, kernels=seqs,
            why=f"{len(seqs)} measured kernel{'s' if len(seqs) != 1 else ''} of {event.node}"))

    def action_export(self) -> None:
        name = default_name(self.timeline.timeline_id, "memory-curve")
        self.app.push_screen(Prompt("Export the memory curve to CSV", "a file name", value=name),
                             self._export)

    def _export(self, path: str | None) -> None:
        if path:
            self.export_curve(self.timeline.timeline_id, path)

    @work(thread=True, exclusive=True, group="export", exit_on_error=False)
    def export_curve(self, timeline_id: int, path: str) -> None:
        rows = self.reader.run("export", q.curve_rows, timeline_id) or ()
        try:
            n = write_csv(path, ("step", "node", "live_bytes", "alloc_bytes", "freed_bytes",
                                 "unknown_live"),
                          ((r.step, r.node, r.live_bytes, r.alloc_bytes, r.freed_bytes,
                            r.unknown_live) for r in rows))
        except OSError as e:
            self.post_message(m.Exported("memory curve", path, 0, str(e)))
            return
        self.post_message(m.Exported("memory curve", path, n))

    @on(m.Exported)
    def on_exported(self, event: m.Exported) -> None:
        if event.error:
            self.notify(f"could not write {event.path}: {event.error}", severity="error")
        else:
            self.notify(f"{event.what}: {event.rows:,} rows written to {event.path}")
