"""The profiler screen: a measured timeline (Kineto or JAX trace) as GPU lanes over time.

The lanes of the window, the allocator's memory curve below them on the same columns,
the kernel at the cursor (duration, launching runtime call and CPU op, the compiled
node it is attached to: Enter opens that node) and the ProfilerSteps with their GPU
totals and the trace's communication/compute overlap. The cursor scrubs by time
(arrows: a column) or by kernel (``n``/``N``); ``+``/``-`` zoom around it.

Only the window is read: the lanes' busy time per column, the kernel at the cursor, the
memory of the window's columns (``tlview.store.profile_queries``), each in its own
worker and connection lane so a slow read never holds up the cursor. The per-trace
summaries (steps, overlap, attachments) are read once, off the first draw's path; a key
that needs one before it arrives (Enter, ``[``) is carried out when it does.
"""

from __future__ import annotations

import bisect

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.screen import Screen
from textual.widgets import Static
from textual.worker import get_current_worker
from tlview.store import profile_queries as pq
from tlview.store.fmt import offset_ms, short_bytes, short_ns
from tlview.store.profile_queries import (
    KernelAttachment,
    KernelLaunch,
    LaneWindow,
    MeasuredKernel,
    StepTotal,
    TraceOverview,
    TraceSummary,
)
from tlview.store.timeline_queries import TimelineInfo

from . import messages as app_messages
from . import profiler_messages as m
from .glyphs import Glyphs
from .kernel_lanes import KernelLanes
from .kernel_panel import KernelPanel, describe
from .keys_footer import KeysFooter
from .measured_curve import MeasuredCurve
from .prompts import Prompt
from .reader import Reader
from .row_list import Column, RowList
from .title_bar import TitleBar, timeline_heading

KEYS = (
    ("<- ->  h l", "cursor one column back / on in time (Shift, H L: ten)"),
    ("n N", "next / previous kernel on the lane (of the node, after m)"),
    ("j k  Down Up", "next / previous lane (stream)"),
    ("+ -", "zoom in / out around the cursor; 0: the whole trace; z: the kernel"),
    ("[ ]", "previous / next ProfilerStep (its GPU work fills the window)"),
    ("Home End", "start / end of the trace"),
    ("/", "search kernels by name (to the next match)"),
    ("Enter", "open the compiled node the kernel is attached to"),
    ("r", "the ranks: this trace's collectives across the run's ranks"),
    ("Tab", "to the steps list (Enter there: that step)"),
    ("Esc", "leave the node's kernels; else back"),
)
ABOUT = (
    "Lanes: one per GPU stream; a cell is shaded by how much of its column the stream was "
    "busy, colored by what ran most (compute, communication, copies). Times are from the "
    "trace's first event. Overlap: time during which a communication kernel runs while a "
    "compute kernel runs on the same device (comm_overlap_summary); exposed = the rest. "
    "Memory: the allocator's total allocated from the trace's [memory] events, highest "
    "per column."
)
STEP_COLUMNS = (Column("step", most=18), Column("cpu", right=True), Column("kernels", right=True),
                Column("comm", right=True), Column("copy", right=True),
                Column("events", right=True))


def step_cells(s: StepTotal) -> tuple[str, ...]:
    return (s.name, short_ns(s.cpu_dur_ns), short_ns(s.kernel_ns), short_ns(s.comm_ns),
            short_ns(s.memcpy_ns + s.memset_ns), f"{s.n_gpu_events:,}")


def step_at(steps: tuple[StepTotal, ...], t: int) -> int | None:
    """Index of the step whose GPU work is under way at ``t`` (else the last begun)."""
    firsts = [s.gpu_first_ns if s.gpu_first_ns is not None else s.ts_ns for s in steps]
    i = bisect.bisect_right(firsts, t) - 1
    return i if i >= 0 else None


class ProfilerScreen(Screen[None]):
    KEYS = KEYS
    ABOUT = ABOUT
    BINDINGS = [
        Binding("right,l", "move(1)", "time", key_display="<-/->", priority=True),
        Binding("left,h", "move(-1)", show=False, priority=True),
        Binding("shift+right,L", "move(10)", show=False, priority=True),
        Binding("shift+left,H", "move(-10)", show=False, priority=True),
        Binding("n", "kernel(1)", "kernel", key_display="n/N"),
        Binding("N", "kernel(-1)", show=False),
        Binding("down,j", "lane(1)", "lane", key_display="j/k"),
        Binding("up,k", "lane(-1)", show=False),
        Binding("plus,equals_sign", "zoom(0.5)", "zoom", key_display="+/-"),
        Binding("minus", "zoom(2)", show=False),
        Binding("0", "whole", show=False),
        Binding("z", "zoom_kernel", show=False),
        Binding("right_square_bracket", "profiler_step(1)", "step", key_display="[/]"),
        Binding("left_square_bracket", "profiler_step(-1)", show=False),
        Binding("home", "edge(0)", show=False),
        Binding("end", "edge(1)", show=False),
        Binding("slash", "search", "search", key_display="/"),
        Binding("enter", "open_node", "node"),
        Binding("r", "ranks", show=False),
        Binding("escape", "escape", show=False),
    ]

    def __init__(self, reader: Reader, info: TimelineInfo, glyphs: Glyphs, *,
                 seq: int | None = None, kernels: tuple[int, ...] = (), why: str = "") -> None:
        super().__init__()
        self.reader = reader
        self.timeline = info
        self.glyphs = glyphs
        self.start_seq = seq
        self.why = why
        self.overview: TraceOverview | None = None
        self.window: LaneWindow | None = None
        self.t0 = 0
        self.col_ns = 1
        self.lane = 0
        self.cursor_ns = 0
        self.kernel: MeasuredKernel | None = None
        self.launch: KernelLaunch | None = None
        self.memory_now: int | None = None
        self.summary: TraceSummary | None = None
        self.attachments: dict[int, KernelAttachment] | None = None
        self.node_seqs = kernels
        self.node_kernels: tuple[MeasuredKernel, ...] = ()
        self.node_index = 0
        self.pending: list[str] = []
        self.last_search = ""

    # -- layout -------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        g = self.glyphs
        yield TitleBar(id="title")
        yield Static("", id="profile-status")
        yield KernelLanes(g, id="lanes")
        yield MeasuredCurve(g, id="measured-curve")
        yield Static("", id="profile-overlap")
        with Horizontal(id="profile-lower"):
            yield KernelPanel(id="kernel")
            yield RowList(STEP_COLUMNS, id="steps-table", ellipsis=g.ellipsis,
                          empty="no ProfilerStep in this trace")
        yield KeysFooter()

    def on_mount(self) -> None:
        self.query_one("#kernel").border_title = " kernel at the cursor "
        self.query_one("#steps-table").border_title = " profiler steps "
        info = self.timeline
        self.query_one(TitleBar).show(timeline_heading(info))
        self.query_one(KernelLanes).show(None, None, f"reading the trace{self.glyphs.ellipsis}")
        self.query_one(MeasuredCurve).show(None, "")
        self.load_overview(info.timeline_id, self.start_seq, self.node_seqs)
        if self.why:
            self.notify(self.why + ": n/N steps through them, Esc leaves them")

    @property
    def cols(self) -> int:
        return self.query_one(KernelLanes).cols

    @property
    def cursor_col(self) -> int:
        return (self.cursor_ns - self.t0) // max(1, self.col_ns)

    # -- reads ----------------------------------------------------------------------------

    @work(thread=True, exclusive=True, group="overview", exit_on_error=False)
    def load_overview(self, timeline_id: int, seq: int | None, node_seqs: tuple[int, ...]) -> None:
        def read(db):
            overview = pq.trace_overview(db, timeline_id)
            start = pq.kernel_by_seq(db, timeline_id, seq) if seq is not None else None
            return overview, start

        got = self.reader.run("lanes", read)
        if got is not None:
            self.post_message(m.OverviewLoaded(*got))
            self.load_summary(got[0])
            if node_seqs:
                self.load_node_kernels(timeline_id, node_seqs)

    @work(thread=True, exclusive=True, group="lanes", exit_on_error=False)
    def load_lanes(self, overview: TraceOverview, t0: int, col_ns: int, cols: int) -> None:
        worker = get_current_worker()
        window = self.reader.run("lanes", pq.lane_window, overview, t0, col_ns, cols,
                                 cancelled=lambda: worker.is_cancelled)
        if window is not None and not worker.is_cancelled:
            self.post_message(m.LanesLoaded(window))

    @work(thread=True, exclusive=True, group="memory", exit_on_error=False)
    def load_memory(self, overview: TraceOverview, t0: int, col_ns: int, cols: int) -> None:
        worker = get_current_worker()
        window = self.reader.run("memory", pq.memory_window, overview, t0, col_ns, cols,
                                 cancelled=lambda: worker.is_cancelled)
        if window is not None and not worker.is_cancelled:
            self.post_message(m.MemoryLoaded(window))

    @work(thread=True, exclusive=True, group="kernel", exit_on_error=False)
    def find_kernel(self, overview: TraceOverview, lane: int, t: int, col_ns: int) -> None:
        worker = get_current_worker()
        got = self.reader.run("kernel", pq.kernel_at, overview, overview.lanes[lane], t, col_ns,
                              cancelled=lambda: worker.is_cancelled)
        if not worker.is_cancelled:
            self.post_message(m.KernelFound(lane, t, got))

    @work(thread=True, exclusive=True, group="kernel", exit_on_error=False)
    def step_kernel(self, overview: TraceOverview, lane: int, after: MeasuredKernel | int,
                    forward: bool) -> None:
        got = self.reader.run("kernel", pq.adjacent_kernel, overview, overview.lanes[lane],
                              after, forward)
        what = "" if got else f"no {'next' if forward else 'previous'} kernel on this lane"
        self.post_message(m.KernelFound(lane, 0, got, move=True, what=what))

    @work(thread=True, exclusive=True, group="launch", exit_on_error=False)
    def load_launch(self, overview: TraceOverview, kernel: MeasuredKernel | None, t: int,
                    reach: int) -> None:
        worker = get_current_worker()

        def read(db):
            launch = pq.kernel_launch(db, overview, kernel) if kernel is not None else None
            return launch, pq.memory_at(db, overview, t, reach)

        got = self.reader.run("launch", read, cancelled=lambda: worker.is_cancelled)
        if got is not None and not worker.is_cancelled:
            self.post_message(m.LaunchLoaded(*got))

    @work(thread=True, exclusive=True, group="summary", exit_on_error=False)
    def load_summary(self, overview: TraceOverview) -> None:
        summary = self.reader.run("summary", pq.trace_summary, overview)
        if summary is not None:
            self.post_message(m.SummaryLoaded(summary))
        attachments = self.reader.run("summary", pq.kernel_attachments, overview.timeline_id)
        if attachments is not None:
            self.post_message(m.AttachmentsLoaded(attachments))

    @work(thread=True, exclusive=True, group="node-kernels", exit_on_error=False)
    def load_node_kernels(self, timeline_id: int, seqs: tuple[int, ...]) -> None:
        got = self.reader.run("kernel-set", pq.kernels_by_seq, timeline_id, seqs)
        if got is not None:
            self.post_message(m.NodeKernelsLoaded(got))

    @work(thread=True, exclusive=True, group="kernel", exit_on_error=False)
    def search(self, timeline_id: int, text: str, after: MeasuredKernel | None, t: int) -> None:
        got = self.reader.run("kernel", pq.search_kernel, timeline_id, text,
                              after.ts_ns if after else t, after.seq if after else -1)
        self.post_message(m.KernelFound(self.lane, 0, got, move=True,
                                        what="" if got else f"no kernel matches {text!r}"))

    # -- results --------------------------------------------------------------------------

    @on(m.OverviewLoaded)
    def on_overview_loaded(self, event: m.OverviewLoaded) -> None:
        ov = self.overview = event.overview
        lanes = self.query_one(KernelLanes)
        if not ov.lanes:
            lanes.show(ov, None, "no GPU kernels in this trace (CPU events only)")
        cols = self.cols
        self.col_ns = max(1, -(-ov.span_ns // cols))
        self.t0 = ov.first_ns
        self.cursor_ns = ov.first_ns
        start = event.start
        if start is not None:
            self.lane = self._lane_of(start)
            # Around the kernel: forty times its duration, at least a millisecond.
            self.col_ns = max(1, min(self.col_ns, -(-max(40 * start.dur_ns, 1_000_000) // cols)))
            self.cursor_ns = start.ts_ns
            self.t0 = start.ts_ns - (cols // 2) * self.col_ns
        if ov.memory_device is None:
            self.query_one(MeasuredCurve).show(None, "no [memory] events in this trace "
                                                     "(profile_memory=True records them)")
        self._window_changed()
        if start is None and ov.lanes:  # on the first kernel of the first lane
            self._cursor_changed(find=False)
            self.step_kernel(ov, 0, ov.first_ns - 1, True)
        else:
            self._cursor_changed(find=True)

    def _lane_of(self, kernel: MeasuredKernel) -> int:
        assert self.overview is not None
        return next((i for i, lane in enumerate(self.overview.lanes)
                     if (lane.device, lane.stream) == (kernel.device, kernel.stream)), self.lane)

    @on(m.LanesLoaded)
    def on_lanes_loaded(self, event: m.LanesLoaded) -> None:
        w = event.window
        if (w.t0, w.col_ns) != (self.t0, self.col_ns):
            return
        self.window = w
        self.query_one(KernelLanes).show(self.overview, w)
        self._draw_cursor()

    @on(m.MemoryLoaded)
    def on_memory_loaded(self, event: m.MemoryLoaded) -> None:
        if (event.window.t0, event.window.col_ns) == (self.t0, self.col_ns):
            self.query_one(MeasuredCurve).show(event.window)

    @on(m.KernelFound)
    def on_kernel_found(self, event: m.KernelFound) -> None:
        if self.overview is None:
            return
        if event.move:
            if event.kernel is None:
                self.notify(event.what, severity="warning")
                return
            self.lane = self._lane_of(event.kernel)
            self.cursor_ns = event.kernel.ts_ns
            self._ensure_visible()
            self._draw_cursor()
        elif event.lane != self.lane or event.t != self.cursor_ns:
            return
        self.kernel = event.kernel
        self.launch = None
        self._show_kernel()
        self.load_launch(self.overview, self.kernel, self.cursor_ns,
                         max(1, self.cols * self.col_ns))

    @on(m.LaunchLoaded)
    def on_launch_loaded(self, event: m.LaunchLoaded) -> None:
        if event.launch is not None and (self.kernel is None
                                         or event.launch.seq != self.kernel.seq):
            return
        self.launch = event.launch
        self.memory_now = event.memory
        self._show_kernel()
        self._status()

    @on(m.SummaryLoaded)
    def on_summary_loaded(self, event: m.SummaryLoaded) -> None:
        self.summary = s = event.summary
        table = self.query_one("#steps-table", RowList)
        table.set_rows([step_cells(x) for x in s.steps], cursor=self._step_index() or 0)
        table.border_title = f" {len(s.steps)} profiler steps "
        overlap = Text()
        for o in s.overlap:
            pct = f"{o.overlap_pct:.2f}%" if o.overlap_pct is not None else "-"
            overlap.append(f"{o.device or '?'} comm {short_ns(o.comm_ns)}: ")
            overlap.append(f"{pct} overlapped by compute", style="bold")
            overlap.append(f", exposed {short_ns(o.exposed_ns)}  ")
        if not s.overlap:
            overlap.append("no communication kernels in this trace", style="dim")
        self.query_one("#profile-overlap", Static).update(overlap)
        self._show_kernel()
        self._status()
        self._carry_out("profiler_step")

    @on(m.AttachmentsLoaded)
    def on_attachments_loaded(self, event: m.AttachmentsLoaded) -> None:
        self.attachments = event.attachments
        self._show_kernel()
        self._carry_out("open_node")

    def _carry_out(self, action: str) -> None:
        for pending in [p for p in self.pending if p.startswith(action)]:
            self.pending.remove(pending)
            if pending.startswith("profiler_step:"):
                self.action_profiler_step(int(pending.split(":")[1]))
            elif pending == "open_node":
                self.action_open_node()

    # -- drawing --------------------------------------------------------------------------

    def _window_changed(self) -> None:
        ov = self.overview
        if ov is None:
            return
        cols = self.cols
        self.load_lanes(ov, self.t0, self.col_ns, cols)
        if ov.memory_device is not None:
            self.load_memory(ov, self.t0, self.col_ns, cols)

    def _marks(self) -> frozenset[int]:
        cols = self.cols
        return frozenset((k.ts_ns - self.t0) // self.col_ns for k in self.node_kernels
                         if 0 <= k.ts_ns - self.t0 < cols * self.col_ns)

    def _draw_cursor(self) -> None:
        col = self.cursor_col
        self.query_one(KernelLanes).set_cursor(col, self.lane, self._marks())
        self.query_one(MeasuredCurve).set_cursor(col)
        self._status()
        i = self._step_index()
        table = self.query_one("#steps-table", RowList)
        if i is not None and table.cursor != i and self.focused is not table:
            table.cursor = i  # the step the cursor is in

    def _status(self) -> None:
        ov = self.overview
        if ov is None:
            return
        parts = [f"t {offset_ms(self.cursor_ns - ov.origin_ns)}",
                 f"{short_ns(self.col_ns)}/col"]
        if self.memory_now is not None:
            mem = f"memory {short_bytes(self.memory_now)}"
            if self.summary is not None and self.summary.peak_allocated is not None:
                mem += (f", peak {short_bytes(self.summary.peak_allocated)} at "
                        f"{offset_ms((self.summary.peak_ts_ns or 0) - ov.origin_ns)}")
            parts.append(mem)
        self.query_one("#profile-status", Static).update(Text(" · ".join(parts)))

    def _step_index(self) -> int | None:
        if self.summary is None or not self.summary.steps:
            return None
        return step_at(self.summary.steps, self.cursor_ns)

    def _show_kernel(self) -> None:
        ov = self.overview
        if ov is None:
            return
        panel = self.query_one(KernelPanel)
        k = self.kernel
        if k is None:
            lane = ov.lanes[self.lane] if ov.lanes else None
            where = f" on stream {lane.stream}" if lane else ""
            panel.show(Text(f"idle at {offset_ms(self.cursor_ns - ov.origin_ns)}{where}: "
                            "n/N go to the next/previous kernel", style="dim"))
            return
        i = self._step_index()
        step = self.summary.steps[i] if self.summary is not None and i is not None else None
        attachment = self.attachments.get(k.seq) if self.attachments is not None else None
        comm = self.summary.comm.get(k.seq) if self.summary is not None else None
        panel.show(describe(k, ov.origin_ns, self.launch, attachment,
                            self.attachments is not None, comm, step, self.glyphs))

    # -- the cursor ---------------------------------------------------------------------

    def _clamp_window(self) -> None:
        ov = self.overview
        assert ov is not None
        width = self.cols * self.col_ns
        lo = ov.first_ns
        hi = max(lo, ov.last_ns - width)
        self.t0 = max(lo, min(self.t0, hi)) if width < ov.span_ns else lo

    def _ensure_visible(self) -> None:
        """Pan (same zoom) so the cursor is in the window: centred when it had left it."""
        width = self.cols * self.col_ns
        if not self.t0 <= self.cursor_ns < self.t0 + width:
            self.t0 = self.cursor_ns - (self.cols // 2) * self.col_ns
            self._clamp_window()
            self._window_changed()

    def _cursor_changed(self, find: bool) -> None:
        ov = self.overview
        if ov is None:
            return
        self.cursor_ns = max(ov.first_ns, min(self.cursor_ns, ov.last_ns - 1))
        self._ensure_visible()
        self._draw_cursor()
        if find and ov.lanes:
            self.find_kernel(ov, self.lane, self.cursor_ns, self.col_ns)
        elif find:
            self.load_launch(ov, None, self.cursor_ns, self.cols * self.col_ns)

    def action_move(self, delta: int) -> None:
        if self.overview is None:
            return
        self.cursor_ns = self.t0 + (self.cursor_col + delta) * self.col_ns
        self._cursor_changed(find=True)

    def action_lane(self, delta: int) -> None:
        if self.overview is None or not self.overview.lanes:
            return
        self.lane = max(0, min(len(self.overview.lanes) - 1, self.lane + delta))
        self._cursor_changed(find=True)

    def action_kernel(self, direction: int) -> None:
        ov = self.overview
        if ov is None or not ov.lanes:
            return
        if self.node_kernels:
            self.node_index = (self.node_index + direction) % len(self.node_kernels)
            k = self.node_kernels[self.node_index]
            self.notify(f"kernel {self.node_index + 1} of {len(self.node_kernels)} of the node")
            self.post_message(m.KernelFound(self._lane_of(k), 0, k, move=True))
            return
        after: MeasuredKernel | int = self.kernel if self.kernel is not None else self.cursor_ns
        self.step_kernel(ov, self.lane, after, direction > 0)

    def action_zoom(self, factor: float) -> None:
        ov = self.overview
        if ov is None:
            return
        col = self.cursor_col
        widest = max(1, -(-ov.span_ns // self.cols))
        self.col_ns = max(1, min(widest, int(self.col_ns * factor)))
        self.t0 = self.cursor_ns - col * self.col_ns
        self._clamp_window()
        self._window_changed()
        self._cursor_changed(find=True)

    def action_whole(self) -> None:
        ov = self.overview
        if ov is None:
            return
        self.col_ns = max(1, -(-ov.span_ns // self.cols))
        self.t0 = ov.first_ns
        self._window_changed()
        self._cursor_changed(find=True)

    def action_zoom_kernel(self) -> None:
        if self.kernel is not None:
            self._show_range(self.kernel.ts_ns - self.kernel.dur_ns,
                             self.kernel.end_ns + self.kernel.dur_ns, self.kernel.ts_ns)

    def _show_range(self, lo: int, hi: int, cursor: int) -> None:
        cols = self.cols
        self.col_ns = max(1, -(-(hi - lo) // cols))
        self.t0 = lo
        self.cursor_ns = cursor
        self._clamp_window()
        self._window_changed()
        self._cursor_changed(find=True)

    def action_edge(self, end: int) -> None:
        ov = self.overview
        if ov is not None:
            self.cursor_ns = ov.last_ns - 1 if end else ov.first_ns
            self._cursor_changed(find=True)

    def action_profiler_step(self, direction: int) -> None:
        if self.summary is None:
            if not any(p.startswith("profiler_step") for p in self.pending):
                self.pending.append(f"profiler_step:{direction}")
            return
        steps = self.summary.steps
        if not steps:
            self.notify("no ProfilerStep in this trace", severity="warning")
            return
        i = self._step_index()
        i = (0 if direction > 0 else len(steps) - 1) if i is None else i + direction
        if not 0 <= i < len(steps):
            self.notify(f"no {'next' if direction > 0 else 'previous'} step", severity="warning")
            return
        self._go_step(steps[i])

    def _go_step(self, s: StepTotal) -> None:
        if s.gpu_first_ns is None or s.gpu_last_ns is None:
            self.notify(f"{s.name} launched no GPU work", severity="warning")
            return
        self._show_range(s.gpu_first_ns, s.gpu_last_ns, s.gpu_first_ns)

    @on(RowList.Chosen, "#steps-table")
    def _step_chosen(self, event: RowList.Chosen) -> None:
        if self.summary is not None:
            self._go_step(self.summary.steps[event.index])

    @on(KernelLanes.Resized)
    def _lanes_resized(self) -> None:
        if self.overview is not None:
            self._clamp_window()
            self._window_changed()
            self._draw_cursor()

    @on(KernelLanes.Clicked)
    def _lanes_clicked(self, event: KernelLanes.Clicked) -> None:
        if event.lane is not None:
            self.lane = event.lane
        self.cursor_ns = self.t0 + event.col * self.col_ns
        self._cursor_changed(find=True)

    def action_search(self) -> None:
        self.app.push_screen(Prompt("Search kernels", "a name or part of one",
                                    value=self.last_search), self._search)

    def _search(self, text: str | None) -> None:
        if text:
            self.last_search = text
            self.search(self.timeline.timeline_id, text, self.kernel, self.cursor_ns)

    def action_open_node(self) -> None:
        k = self.kernel
        if k is None:
            self.notify("no kernel at the cursor", severity="warning")
            return
        if self.attachments is None:
            if "open_node" not in self.pending:  # carried out when attachments arrive
                self.pending.append("open_node")
            return
        a = self.attachments.get(k.seq)
        if a is None:
            self.notify(f"{k.name} is not attached to a compiled node (see unattached_kernels)",
                        severity="warning", timeout=8)
            return
        self.app.post_message(app_messages.OpenTimeline(a.graph_timeline_id, step=a.step))

    def action_ranks(self) -> None:
        self.app.post_message(app_messages.OpenRanks(self.timeline.timeline_id))

    def action_escape(self) -> None:
        if self.node_kernels:
            self.node_kernels = ()
            self.node_seqs = ()
            self._draw_cursor()
            self.notify("left the node's kernels: n/N step through the lane")
        else:
            self.app.post_message(app_messages.GoBack())

    @on(m.NodeKernelsLoaded)
    def on_node_kernels(self, event: m.NodeKernelsLoaded) -> None:
        if self.node_seqs:
            self.node_kernels = event.kernels
            self.node_index = next((i for i, k in enumerate(event.kernels)
                                    if k.seq == self.start_seq), 0)
            self._draw_cursor()
