"""The snapshot screen: a CUDA allocator snapshot (``cuda_snapshot``) scrubbed entry by entry.

The peaks (``allocator_peak``), the allocated and reserved curve over the trace's entries
with the peak and the OOMs marked, the entry at the cursor (action, size, address,
stream, time; at an OOM what was asked, what CUDA had free and the largest free block,
from ``ooms``/``fragmentation``), and the blocks live after it grouped by allocation
site (``blocks_live_at``), largest first; Enter opens a site's stack.

Everything is read through ``tlview.store.snapshot_queries`` in workers: the overview
once, the curve once per width, and per cursor position the point and the sites (range
reads of the curve and block caches the ingest filled), so moving the cursor never
waits on the database; results older than the cursor are dropped.
"""

from __future__ import annotations

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Static
from textual.worker import get_current_worker
from tlview.store import snapshot_queries as sq
from tlview.store.snapshot_queries import OomDetail, SiteRow, SnapshotOverview, SnapshotPoint
from tlview.store.timeline_queries import TimelineInfo

from . import messages as app_messages
from . import snapshot_messages as m
from .allocator_curve import AllocatorCurve
from .cell_text import fit
from .glyphs import Glyphs
from .keys_footer import KeysFooter
from .prompts import Prompt
from .reader import Reader
from .row_list import RowList
from .site_rows import COLUMNS, SiteLine, site_rows
from .snapshot_event import at_event, describe, header
from .title_bar import TitleBar, timeline_heading

SITES_LIMIT = 500  # sites listed at the cursor; the rest are summed in one row

KEYS = (
    ("<- ->  h l", "cursor one trace entry back / on (Shift, H L: ten)"),
    ("PgUp PgDn", "one column of the curve back / on (at least ten entries)"),
    ("Home End", "the window's start (before the first entry) / the last entry"),
    ("p", "the allocated peak (allocator_peak)"),
    ("r", "the reserved peak"),
    ("o O", "next / previous OOM"),
    ("g", "go to an entry by its number"),
    ("j k  Down Up", "the allocation sites live at the cursor"),
    ("Enter", "open / close a site's stack (its largest block's frames)"),
    ("Esc", "back"),
)
ABOUT = (
    "Allocated: the requested bytes of the blocks allocated and not yet free_completed "
    "after each trace entry (allocator_curve); reserved: the segments' bytes (shaded above "
    "the allocated bars). The curve's columns show the largest of the entries they cover; "
    "under it P marks the allocated peak, ! each OOM, the arrow the cursor. Live blocks: "
    "blocks_live_at(timeline, event) grouped by site, the first frame outside torch "
    "internals; their bytes sum to the allocated bytes at the cursor. Times are from the "
    "window's start (the first recorded entry)."
)


def next_oom(ooms: tuple[int, ...], cursor: int, direction: int) -> int | None:
    """The first OOM after ``cursor`` (``direction`` > 0), else the last one before it."""
    if direction > 0:
        return next((i for i in ooms if i > cursor), None)
    return next((i for i in reversed(ooms) if i < cursor), None)


class SnapshotScreen(Screen[None]):
    KEYS = KEYS
    ABOUT = ABOUT
    BINDINGS = [
        Binding("right,l", "move(1)", "entry", key_display="<-/->", priority=True),
        Binding("left,h", "move(-1)", show=False, priority=True),
        Binding("shift+right,L", "move(10)", show=False, priority=True),
        Binding("shift+left,H", "move(-10)", show=False, priority=True),
        Binding("pagedown", "page(1)", show=False, priority=True),
        Binding("pageup", "page(-1)", show=False, priority=True),
        Binding("home", "edge(0)", show=False, priority=True),
        Binding("end", "edge(1)", show=False, priority=True),
        Binding("p", "peak", "peak"),
        Binding("r", "reserved_peak", show=False),
        Binding("o", "oom(1)", "OOM", key_display="o/O"),
        Binding("O", "oom(-1)", show=False),
        Binding("g", "go", "go to"),
        Binding("escape", "back", show=False),
    ]

    def __init__(self, reader: Reader, info: TimelineInfo, glyphs: Glyphs, *,
                 event_index: int | None = None) -> None:
        super().__init__()
        self.reader = reader
        self.timeline = info
        self.glyphs = glyphs
        self.start_event = event_index
        self.overview: SnapshotOverview | None = None
        self.cursor = -1
        self.point: SnapshotPoint | None = None
        self.sites: tuple[SiteRow, ...] = ()
        self.sites_point: SnapshotPoint | None = None  # the point the sites are of
        self.lines: list[SiteLine] = []
        self.oom_details: dict[int, OomDetail] | None = None
        self.stacks: dict[int, tuple[str, ...]] = {}
        self.expanded: frozenset[str] = frozenset()
        self.curve_width = 0

    # -- layout -------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield TitleBar(id="title")
        yield Static("", id="snap-header")
        yield AllocatorCurve(self.glyphs, id="snap-curve")
        yield Static("", id="snap-event")
        yield RowList(COLUMNS, id="snap-sites", ellipsis=self.glyphs.ellipsis,
                      empty="no block is live here")
        yield Static("", id="snap-where")
        yield KeysFooter()

    def on_mount(self) -> None:
        self.query_one("#snap-sites").border_title = " blocks live at the cursor, by site "
        self._title()
        self.query_one(AllocatorCurve).show(None, message=f"reading the snapshot"
                                                          f"{self.glyphs.ellipsis}")
        self.query_one("#snap-sites").focus()
        self.load_overview(self.timeline.timeline_id)

    def _title(self) -> None:
        info = self.timeline
        where = ""
        if self.overview is not None:
            where = f"  {at_event(self.cursor)} of {self.overview.n_events:,}"
        self.query_one(TitleBar).show(timeline_heading(info) + where)

    # -- reads ----------------------------------------------------------------------------

    @work(thread=True, exclusive=True, group="snap-overview", exit_on_error=False)
    def load_overview(self, tid: int) -> None:
        got = self.reader.run("snap-overview", sq.overview, tid)
        self.post_message(m.OverviewLoaded(got))
        if got is not None and got.ooms:
            ooms = self.reader.run("snap-ooms", sq.oom_details, tid)
            if ooms is not None:
                self.post_message(m.OomsLoaded(ooms))

    @work(thread=True, exclusive=True, group="snap-curve", exit_on_error=False)
    def load_curve(self, tid: int, columns: int, n_events: int) -> None:
        worker = get_current_worker()
        got = self.reader.run("snap-curve", sq.curve, tid, columns, n_events,
                              cancelled=lambda: worker.is_cancelled)
        if got is not None and not worker.is_cancelled:
            self.post_message(m.CurveLoaded(got))

    @work(thread=True, exclusive=True, group="snap-cursor", exit_on_error=False)
    def load_cursor(self, tid: int, event_index: int) -> None:
        """The point first (the entry line is drawn at once), then its sites."""
        worker = get_current_worker()
        point = self.reader.run("snap-cursor", sq.point, tid, event_index,
                                cancelled=lambda: worker.is_cancelled)
        if worker.is_cancelled:
            return
        self.post_message(m.PointLoaded(event_index, point))
        sites = self.reader.run("snap-cursor", sq.sites_at, tid, event_index, SITES_LIMIT,
                                cancelled=lambda: worker.is_cancelled)
        if sites is not None and not worker.is_cancelled:
            self.post_message(m.SitesLoaded(event_index, sites))

    @work(thread=True, exclusive=False, group="snap-stack", exit_on_error=False)
    def load_stack(self, tid: int, stack_id: int) -> None:
        got = self.reader.run("snap-stack", sq.stack, tid, stack_id)
        if got is not None:
            self.post_message(m.StackLoaded(stack_id, got))

    # -- results --------------------------------------------------------------------------

    @on(m.OverviewLoaded)
    def on_overview_loaded(self, event: m.OverviewLoaded) -> None:
        o = self.overview = event.overview
        curve = self.query_one(AllocatorCurve)
        if o is None:
            curve.show(None, message="no allocator state in this timeline")
            return
        self._show_header()
        start = self.start_event if self.start_event is not None else o.peak_event
        self.cursor = max(-1, min(o.n_events - 1, start))
        self._request_curve()
        self._cursor_changed()

    @on(m.CurveLoaded)
    def on_curve_loaded(self, event: m.CurveLoaded) -> None:
        o = self.overview
        if o is None:
            return
        top = max(o.peak_reserved, o.peak_allocated)
        self.query_one(AllocatorCurve).show(event.curve, o.n_events, top, o.peak_event, o.ooms)
        self.query_one(AllocatorCurve).set_cursor(self.cursor)

    @on(m.OomsLoaded)
    def on_ooms_loaded(self, event: m.OomsLoaded) -> None:
        self.oom_details = {d.event_index: d for d in event.ooms}
        self._show_event()

    @on(m.PointLoaded)
    def on_point_loaded(self, event: m.PointLoaded) -> None:
        if event.event_index == self.cursor:
            self.point = event.point
            self._show_event()

    @on(m.SitesLoaded)
    def on_sites_loaded(self, event: m.SitesLoaded) -> None:
        if event.event_index == self.cursor and self.point is not None \
                and self.point.event_index == event.event_index:
            self.sites = event.sites
            self.sites_point = self.point
            self._show_sites()

    @on(m.StackLoaded)
    def on_stack_loaded(self, event: m.StackLoaded) -> None:
        self.stacks[event.stack_id] = event.frames
        self._show_sites()

    # -- drawing --------------------------------------------------------------------------

    def _show_header(self) -> None:
        if self.overview is None:
            return
        panel = self.query_one("#snap-header", Static)
        lines = header(self.overview)
        for line in lines:
            line.truncate(max(1, panel.size.width), overflow="ellipsis")
        panel.update(Text("\n").join(lines))

    def on_resize(self) -> None:
        self._show_header()
        self._show_event()

    def _show_event(self) -> None:
        o, p = self.overview, self.point
        if o is None or p is None:
            return
        oom = None
        if p.action == "oom" and self.oom_details is not None:
            oom = self.oom_details.get(p.event_index)
        panel = self.query_one("#snap-event", Static)
        width = max(1, panel.size.width)
        lines = describe(p, o, oom)
        for line in lines:
            line.truncate(width, overflow="ellipsis")
        panel.update(Text("\n").join(lines))

    def _show_sites(self) -> None:
        p = self.sites_point
        if p is None:
            return
        table = self.query_one("#snap-sites", RowList)
        keep = self.lines[table.cursor] if self.lines and table.cursor < len(self.lines) else None
        keep_site = self.sites_key(keep)
        rest = None
        if len(self.sites) >= SITES_LIMIT:
            rest = (p.active_blocks - sum(s.blocks for s in self.sites),
                    p.allocated - sum(s.bytes for s in self.sites))
        rows, self.lines = site_rows(self.sites, p.allocated, self.stacks, self.expanded,
                                     rest, self.glyphs.ellipsis)
        cursor = 0
        if keep_site is not None:
            cursor = next((i for i, ln in enumerate(self.lines)
                           if self.sites_key(ln) == keep_site), 0)
        marks = frozenset(i for i, ln in enumerate(self.lines)
                          if ln.frame is not None and ln.frame >= 0
                          and ln.text == self.sites[ln.site].site)
        table.set_rows(rows, cursor=cursor, marks=marks)
        n = sum(s.blocks for s in self.sites) + (rest[0] if rest else 0)
        table.border_title = (f" {n:,} block{'s' if n != 1 else ''} live after "
                              f"{at_event(p.event_index)}, "
                              f"{len(self.sites):,} site{'s' if len(self.sites) != 1 else ''} ")
        self._where()

    def sites_key(self, line: SiteLine | None) -> tuple[str, int | None] | None:
        """A row's identity across reads: its site's text and the frame number."""
        if line is None or line.site < 0 or line.site >= len(self.sites):
            return None
        return (self.sites[line.site].site, line.frame)

    def _where(self) -> None:
        """The highlighted row's full site or frame text, its folders kept."""
        table = self.query_one("#snap-sites", RowList)
        line = self.lines[table.cursor] if table.cursor < len(self.lines) else None
        text = line.text if line is not None else ""
        width = max(1, self.query_one("#snap-where").size.width)
        self.query_one("#snap-where", Static).update(
            Text(fit(text, width, self.glyphs.ellipsis, left=True), style="dim"))

    @on(RowList.Highlighted, "#snap-sites")
    def _site_highlighted(self) -> None:
        self._where()

    @on(RowList.Chosen, "#snap-sites")
    def _site_chosen(self, event: RowList.Chosen) -> None:
        """Enter: open or close the site's stack."""
        if event.index >= len(self.lines):
            return
        line = self.lines[event.index]
        if line.site < 0:
            return
        site = self.sites[line.site]
        if site.stack_id is None:
            self.notify(f"{site.site}: torch recorded no frames for these blocks",
                        severity="warning")
            return
        if site.site in self.expanded:
            self.expanded = self.expanded - {site.site}
        else:
            self.expanded = self.expanded | {site.site}
            if site.stack_id not in self.stacks:
                self.load_stack(self.timeline.timeline_id, site.stack_id)
        table = self.query_one("#snap-sites", RowList)
        table.cursor = next(i for i, ln in enumerate(self.lines) if ln.site == line.site)
        self._show_sites()

    # -- the cursor ---------------------------------------------------------------------

    def _request_curve(self) -> None:
        o = self.overview
        if o is None:
            return
        width = self.query_one(AllocatorCurve).bar_width
        self.curve_width = width
        self.load_curve(self.timeline.timeline_id, max(1, min(width, o.n_events + 1)),
                        o.n_events)

    @on(AllocatorCurve.Resized)
    def _curve_resized(self, event: AllocatorCurve.Resized) -> None:
        if self.overview is not None and event.width != self.curve_width:
            self._request_curve()

    @on(AllocatorCurve.Clicked)
    def _curve_clicked(self, event: AllocatorCurve.Clicked) -> None:
        self.go(event.event_index)

    def go(self, event_index: int) -> None:
        o = self.overview
        if o is None:
            return
        self.cursor = max(-1, min(o.n_events - 1, event_index))
        self._cursor_changed()

    def _cursor_changed(self) -> None:
        self.query_one(AllocatorCurve).set_cursor(self.cursor)
        self._title()
        self.load_cursor(self.timeline.timeline_id, self.cursor)

    def action_move(self, delta: int) -> None:
        self.go(self.cursor + delta)

    def action_page(self, direction: int) -> None:
        """One curve column of entries (at least ten)."""
        o = self.overview
        if o is not None:
            per_col = -(-(o.n_events + 1) // self.query_one(AllocatorCurve).bar_width)
            self.go(self.cursor + direction * max(10, per_col))

    def action_edge(self, end: int) -> None:
        if self.overview is not None:
            self.go(self.overview.n_events - 1 if end else -1)

    def action_peak(self) -> None:
        if self.overview is not None:
            self.go(self.overview.peak_event)

    def action_reserved_peak(self) -> None:
        if self.overview is not None:
            self.go(self.overview.reserved_event)

    def action_oom(self, direction: int) -> None:
        o = self.overview
        if o is None:
            return
        if not o.ooms:
            self.notify("no OOM in this snapshot", severity="warning")
            return
        target = next_oom(o.ooms, self.cursor, direction)
        if target is None:
            self.notify(f"no {'later' if direction > 0 else 'earlier'} OOM", severity="warning")
            return
        self.go(target)

    def action_go(self) -> None:
        o = self.overview
        if o is None:
            return
        self.app.push_screen(Prompt("Go to entry", f"0 to {o.n_events - 1}",
                                    max_step=max(0, o.n_events - 1)), self._go_answered)

    def _go_answered(self, text: str | None) -> None:
        if text:
            self.go(int(text))

    def action_back(self) -> None:
        self.app.post_message(app_messages.GoBack())
