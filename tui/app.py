"""The tlview app: layout, keys, and routing between workers and widgets.

Every read is a thread worker calling a ``tlview.store.timeline_queries`` function
through the :class:`Reader`; results come back as messages holding frozen snapshots.
"""

from __future__ import annotations

import time

import duckdb
from rich.text import Text
from textual import on, work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.widgets import Footer, Static
from textual.worker import Worker, WorkerState, get_current_worker
from tlview.store import DatabaseLocked, SchemaError
from tlview.store import timeline_queries as q
from tlview.store.timeline_queries import CurveSummary, LiveAt, TimelineInfo, TimelinePeak

from . import messages as m
from .chooser import TimelineChooser
from .collectives_panel import CollectivesPanel
from .execution_list import ExecutionList
from .glyphs import Glyphs, glyphs
from .help import HelpScreen
from .live_buffers import LiveBuffers
from .memory_curve import MemoryCurve
from .memory_status import MemoryStatus
from .node_detail import NodeDetailPanel
from .prompts import Prompt
from .reader import Reader

OPEN_ERRORS = (FileNotFoundError, DatabaseLocked, SchemaError, duckdb.Error)


def one_sentence(e: BaseException) -> str:
    text = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
    return text if isinstance(e, OPEN_ERRORS[:3]) else f"{type(e).__name__}: {text}"


class TlviewApp(App[int]):
    CSS_PATH = "tlview.tcss"
    TITLE = "tlview"
    ENABLE_COMMAND_PALETTE = False
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
        Binding("escape", "clear_lifetime", show=False),
        Binding("t", "timelines", "timelines"),
        Binding("question_mark", "help", "help", key_display="?"),
        Binding("q", "quit", "quit"),
    ]

    def __init__(self, db_path: str, *, ascii_only: bool | None = None) -> None:
        super().__init__()
        self.db_path = db_path
        self.glyphs: Glyphs = glyphs(ascii_only)
        self.reader: Reader | None = None
        self.timelines: tuple[TimelineInfo, ...] = ()
        self.peaks: dict[int, TimelinePeak] | None = None
        self.has_durations = False
        self.timeline: TimelineInfo | None = None
        self.curve: CurveSummary | None = None
        self.step = 0
        self.life: tuple[str, int, int] | None = None
        self.last_search = ""
        self.select_after_load: str | None = None
        self.prepare_pending: int | None = None
        self.opened_at = time.perf_counter()

    # -- layout -------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        g = self.glyphs
        yield Static("tlview", id="title")
        with Vertical(id="main"):
            yield MemoryCurve(g, id="curve")
            yield MemoryStatus("", id="status")
            with Horizontal(id="upper"):
                yield ExecutionList(g, id="steps")
                yield LiveBuffers(g, id="live")
            with Horizontal(id="lower"):
                yield NodeDetailPanel(id="node")
                yield CollectivesPanel(g, id="collectives")
        yield Static("", id="message")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self.query_one("#steps").border_title = " execution order "
        self.query_one("#live").border_title = " live buffers "
        self.query_one("#node").border_title = " node "
        self.query_one("#collectives").border_title = " collectives in flight "
        self.query_one("#main").display = False
        self.show_message(f"opening {self.db_path}{self.glyphs.ellipsis}")
        self.open_database()

    def show_message(self, text: str) -> None:
        msg = self.query_one("#message", Static)
        msg.update(Text(text))  # plain text: a path with [brackets] is not markup
        msg.display = bool(text)

    def on_unmount(self) -> None:
        if self.reader is not None:
            self.reader.close()

    # -- opening ------------------------------------------------------------------------

    @work(thread=True, exclusive=True, group="open", exit_on_error=False)
    def open_database(self) -> None:
        try:
            self.reader = Reader(self.db_path)
            timelines = self.reader.schedule(q.list_timelines) or ()
            durations = bool(self.reader.schedule(q.has_node_times))
        except OPEN_ERRORS as e:
            self.post_message(m.Failed(one_sentence(e), fatal=True))
            return
        self.post_message(m.Opened(timelines, durations))

    @on(m.Failed)
    def on_failed(self, event: m.Failed) -> None:
        if event.fatal:
            self.query_one("#main").display = False
            self.show_message(event.text + "\n\nq quits.")
        else:
            self.notify(event.text, severity="error", timeout=6)

    @on(m.Opened)
    def on_opened(self, event: m.Opened) -> None:
        self.timelines = event.timelines
        self.has_durations = event.has_durations
        if not self.timelines:
            self.show_message(
                f"{self.db_path} holds no timelines yet: add one with "
                f"`tlview ingest DUMP --db {self.db_path}`.\n\nq quits.")
            return
        if len(self.timelines) == 1:
            self.select_timeline(self.timelines[0].timeline_id)
        else:
            self.load_peaks()
            self.action_timelines()

    @work(thread=True, exclusive=True, group="peaks", exit_on_error=False)
    def load_peaks(self) -> None:
        assert self.reader is not None
        self.post_message(m.PeaksLoaded(self.reader.separate(q.timeline_peaks)))

    @on(m.PeaksLoaded)
    def on_peaks_loaded(self, event: m.PeaksLoaded) -> None:
        self.peaks = event.peaks
        if isinstance(self.screen, TimelineChooser):
            self.screen.show_peaks(event.peaks)

    def select_timeline(self, timeline_id: int | None) -> None:
        info = next((t for t in self.timelines if t.timeline_id == timeline_id), None)
        if info is None and self.timeline is None:
            self.show_message(f"{len(self.timelines)} timelines: t chooses one, q quits.")
        if info is None or (self.timeline and info.timeline_id == self.timeline.timeline_id):
            return
        self.timeline = info
        self.curve = None
        self.life = None
        self.show_message("")
        self.query_one("#main").display = True
        self.query_one(ExecutionList).reset(info.timeline_id, info.n_steps, self.has_durations)
        curve = self.query_one(MemoryCurve)
        curve.show_life(None)
        self.query_one(LiveBuffers).show(None)
        if info.n_steps == 0:
            curve.show(None, "this timeline has no steps")
            self.query_one(MemoryStatus).show_text("")
        else:
            curve.show(None, f"computing the memory curve of {info.n_steps:,} steps"
                             f"{self.glyphs.ellipsis}")
            self.query_one(MemoryStatus).show_text("")
            self.prepare_pending = info.timeline_id  # once the first rows are on screen
        self.query_one(ExecutionList).focus()
        self.go(0)

    # -- memory -------------------------------------------------------------------------

    @work(thread=True, exclusive=True, group="prepare", exit_on_error=False)
    def prepare_memory(self, timeline_id: int) -> None:
        assert self.reader is not None
        t0 = time.perf_counter()
        self.reader.prepare(timeline_id)
        notes = self.reader.memory(q.timeline_notes, timeline_id) or ()
        self.post_message(m.MemoryReady(timeline_id, time.perf_counter() - t0, notes))

    def _current(self, timeline_id: int, step: int | None = None) -> bool:
        return (self.timeline is not None and self.timeline.timeline_id == timeline_id
                and (step is None or step == self.step))

    @on(m.MemoryReady)
    def on_memory_ready(self, event: m.MemoryReady) -> None:
        if not self._current(event.timeline_id):
            return
        for note in event.notes:  # said plainly, as `tlview ingest` said it
            self.notify(note, title="note", timeout=12)
        self.load_curve(event.timeline_id, self.query_one(MemoryCurve).size.width)
        self.query_one(ExecutionList).forget_rows()
        self.load_live(event.timeline_id, self.step)

    @on(MemoryCurve.Resized)
    def on_curve_resized(self, event: MemoryCurve.Resized) -> None:
        if self.timeline and self.reader and self.timeline.timeline_id in self.reader.prepared:
            self.load_curve(self.timeline.timeline_id, event.width)

    @work(thread=True, exclusive=True, group="curve", exit_on_error=False)
    def load_curve(self, timeline_id: int, width: int) -> None:
        assert self.reader is not None
        curve = self.reader.memory(q.curve_summary, timeline_id, max(1, width))
        self.post_message(m.CurveLoaded(curve, width))

    @on(m.CurveLoaded)
    def on_curve_loaded(self, event: m.CurveLoaded) -> None:
        curve = event.curve
        if not self._current(curve.timeline_id):
            return
        width = self.query_one(MemoryCurve).size.width
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
        assert self.reader is not None
        worker = get_current_worker()
        live = self.reader.memory(q.live_at, timeline_id, step,
                                  cancelled=lambda: worker.is_cancelled)
        if live is not None and not worker.is_cancelled:
            self.post_message(m.LiveLoaded(live))

    @on(m.LiveLoaded)
    def on_live_loaded(self, event: m.LiveLoaded) -> None:
        live = event.live
        if not self._current(live.timeline_id, live.step):
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
        if self.timeline:
            self.load_rows(self.timeline.timeline_id, event.first, event.count)

    @work(thread=True, exclusive=True, group="rows", exit_on_error=False)
    def load_rows(self, timeline_id: int, first: int, count: int) -> None:
        assert self.reader is not None
        window = self.reader.schedule(q.step_window, timeline_id, first, count,
                                      durations=self.has_durations)
        if timeline_id in self.reader.prepared:
            window = self.reader.memory(q.with_memory, window)
        self.post_message(m.WindowLoaded(window))

    @on(m.WindowLoaded)
    def on_window_loaded(self, event: m.WindowLoaded) -> None:
        self.query_one(ExecutionList).add_window(event.window)
        if self.prepare_pending is not None and self._current(self.prepare_pending):
            self.prepare_memory(self.prepare_pending)
            self.prepare_pending = None

    @work(thread=True, exclusive=True, group="node", exit_on_error=False)
    def load_node(self, timeline_id: int, step: int) -> None:
        assert self.reader is not None
        worker = get_current_worker()

        def both(db):
            return q.node_at(db, timeline_id, step), q.collectives_at(db, timeline_id, step)

        got = self.reader.detail(both, cancelled=lambda: worker.is_cancelled)
        if got is not None and not worker.is_cancelled:
            self.post_message(m.NodeLoaded(timeline_id, step, *got))

    @on(m.NodeLoaded)
    def on_node_loaded(self, event: m.NodeLoaded) -> None:
        if not self._current(event.timeline_id, event.step):
            return
        self.query_one(NodeDetailPanel).show(event.detail, f"no node at step {event.step}")
        self.query_one(CollectivesPanel).show(event.step, event.collectives)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.state == WorkerState.ERROR and event.worker.error is not None:
            self.post_message(m.Failed(one_sentence(event.worker.error),
                                       fatal=event.worker.group == "open"))

    # -- the cursor ---------------------------------------------------------------------

    def go(self, step: int) -> None:
        info = self.timeline
        if info is None:
            return
        step = max(0, min(step, info.n_steps - 1)) if info.n_steps else 0
        self.step = step
        self.query_one(ExecutionList).cursor = step
        self.query_one(MemoryCurve).cursor = step
        self.query_one("#title", Static).update(Text(
            f"tlview  {info.name}  [{info.format}{', ' + info.device if info.device else ''}]"
            f"  step {step:,} of {info.n_steps:,}"), layout=False)
        if info.n_steps:
            # Draw the cursor first; then read what is at it (skipped if it moved on).
            self.call_after_refresh(self._read_at_cursor, info.timeline_id, step)

    def _read_at_cursor(self, timeline_id: int, step: int) -> None:
        if not self._current(timeline_id, step):
            return
        self.load_node(timeline_id, step)
        if self.reader and timeline_id in self.reader.prepared:
            self.load_live(timeline_id, step)

    def action_step(self, delta: int) -> None:
        self.go(self.step + delta)

    def action_page(self, direction: int) -> None:
        self.go(self.step + direction * self.query_one(ExecutionList).body_height)

    def action_jump(self, where: str) -> None:
        if self.timeline:
            self.go(0 if where == "home" else self.timeline.n_steps - 1)

    @on(ExecutionList.Clicked)
    @on(MemoryCurve.Clicked)
    def on_clicked(self, event: ExecutionList.Clicked | MemoryCurve.Clicked) -> None:
        self.go(event.step)

    @on(ExecutionList.Scrolled)
    def on_scrolled(self, event: ExecutionList.Scrolled) -> None:
        self.go(self.step + event.delta)

    def action_peak(self) -> None:
        if self.timeline is None:
            return
        if self.curve is None:
            self.notify("the memory curve is still being computed")
        elif self.curve.peak_step is None or not self.curve.has_liveness:
            self.notify("no buffer lifetimes in this timeline: no peak")
        else:
            self.go(self.curve.peak_step)

    def action_collective(self, direction: int) -> None:
        if self.timeline:
            self.find_collective(self.timeline.timeline_id, self.step, direction > 0)

    @work(thread=True, exclusive=True, group="jump", exit_on_error=False)
    def find_collective(self, timeline_id: int, step: int, forward: bool) -> None:
        assert self.reader is not None
        at = self.reader.detail(q.adjacent_collective, timeline_id, step, forward)
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
        if self.timeline and self.timeline.n_steps:
            self.push_screen(Prompt("Go to step", f"0 to {self.timeline.n_steps - 1}",
                                    max_step=self.timeline.n_steps - 1),
                             self._goto)

    def _goto(self, value: str | None) -> None:
        if value is not None:
            self.go(int(value))

    def action_search(self) -> None:
        if self.timeline:
            self.push_screen(Prompt("Search nodes, kernels and buffers", "a name or part of one",
                                    value=self.last_search), self._search)

    def _search(self, text: str | None) -> None:
        if text and self.timeline:
            self.last_search = text
            self.search(self.timeline.timeline_id, text, self.step)

    @work(thread=True, exclusive=True, group="jump", exit_on_error=False)
    def search(self, timeline_id: int, text: str, step: int) -> None:
        assert self.reader is not None
        hit = self.reader.detail(q.search, timeline_id, text, step)
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

    def action_clear_lifetime(self) -> None:
        self.life = None
        self.query_one(MemoryCurve).show_life(None)
        steps = self.query_one(ExecutionList)
        steps.life = None
        steps.refresh()

    def action_timelines(self) -> None:
        if not self.timelines or isinstance(self.screen, TimelineChooser):
            return
        current = self.timeline.timeline_id if self.timeline else None
        self.push_screen(TimelineChooser(self.timelines, self.peaks, current),
                         self.select_timeline)
        if self.peaks is None and len(self.timelines) == 1:
            self.load_peaks()

    def action_help(self) -> None:
        self.push_screen(HelpScreen())


def run_app(db_path: str, ascii_only: bool | None = None) -> int:
    app = TlviewApp(db_path, ascii_only=ascii_only)
    app.run()
    return app.return_code or 0
