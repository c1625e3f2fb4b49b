"""Who holds the memory at a step: the live buffers grouped by who made them.

Above, the groups (producer op, ATen/framework origin, source line, dtype, allocation
site: ``o`` cycles) with their bytes and share of the step's live bytes; the first row
stands for all of them. Below, the live buffers of the group at the cursor, sorted
(``s``) and filtered (``/``), largest first by default, so at the peak the largest
buffers are at the top. ``e`` writes the table that has the focus to CSV. One read per
step (``tlview.store.memory_holders``); grouping, sorting and filtering are done on
that snapshot without reading again.
"""

from __future__ import annotations

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Static
from tlview.store import memory_holders as mh
from tlview.store import timeline_queries as q
from tlview.store.fmt import exact_bytes, short_bytes
from tlview.store.memory_holders import Holder, HolderGroup, LiveHolders
from tlview.store.timeline_queries import TimelineInfo, TimelinePeak

from . import messages as app_messages
from .cell_text import short_path
from .export import default_name, write_csv
from .glyphs import Glyphs
from .keys_footer import KeysFooter
from .prompts import Prompt
from .reader import Reader
from .row_list import Column, RowList
from .timeline_messages import Exported, PeakKnown
from .title_bar import TitleBar, timeline_heading

KEYS = (
    ("[ ]  <- ->", "previous / next step"),
    ("p", "the peak step"),
    ("o O", "next / previous grouping: buffer, producer op, origin, source line, dtype, "
            "allocation site"),
    ("s", "next sort of the buffers: bytes, allocation step, last step, name"),
    ("/", "filter the buffers (words of name, producer, origin, source, dtype, shape)"),
    ("Tab", "groups <-> buffers; Up/Down/PgUp/PgDn/Home/End move in them"),
    ("e", "export the focused table (groups, or the buffers shown) to CSV"),
    ("Esc", "back to the timeline"),
)
ABOUT = ("Share: a group's bytes over the live bytes at the step (the memory curve's figure). "
         "XLA values that share an allocation's bytes are each counted whole here, so shares "
         "can add up to more than 100%.")

GROUP_COLUMNS = (Column("group", least=10, flex=True), Column("buffers", right=True),
                 Column("bytes", right=True), Column("share", right=True))
BUFFER_COLUMNS = (Column("buffer", most=24), Column("bytes", right=True), Column("dtype"),
                  Column("shape", most=22), Column("alloc", right=True),
                  Column("last", right=True), Column("producer", most=28),
                  Column("origin", least=8, flex=True), Column("source", least=8, flex=True),
                  Column("site"))


def group_cells(g: HolderGroup, by: str) -> tuple[str, ...]:
    label = g.label(by)
    if by == "source":
        label = short_path(label)
    nbytes = short_bytes(g.bytes) + (f" +{g.n_unknown}?" if g.n_unknown else "")
    share = f"{g.share:.1f}%" if g.share is not None else ""
    return (label, f"{g.n_buffers:,}", nbytes, share)


def buffer_cells(b: Holder) -> tuple[str, ...]:
    size = short_bytes(b.bytes) if b.bytes is not None else (b.size_expr or "?")
    return (b.buffer, size, b.dtype or "", b.shape or "", str(b.alloc_step), str(b.last_step),
            b.producer or "", b.origin or "", short_path(b.source), b.alloc_site or "")


class HoldersScreen(Screen[None]):
    class Loaded(Message):
        def __init__(self, holders: LiveHolders) -> None:
            super().__init__()
            self.holders = holders

    KEYS = KEYS
    ABOUT = ABOUT
    BINDINGS = [
        Binding("right,right_square_bracket", "step(1)", "step", key_display="[ ]",
                priority=True),
        Binding("left,left_square_bracket", "step(-1)", show=False, priority=True),
        Binding("p", "peak", "peak"),
        Binding("o", "grouping(1)", "group by"),
        Binding("O", "grouping(-1)", show=False),
        Binding("s", "sort", "sort"),
        Binding("slash", "filter", "filter", key_display="/"),
        Binding("e", "export", "csv"),
        Binding("escape", "back", "back"),
    ]

    def __init__(self, reader: Reader, info: TimelineInfo, glyphs: Glyphs, step: int) -> None:
        super().__init__()
        self.reader = reader
        self.timeline = info
        self.glyphs = glyphs
        self.step = step
        self.by = "producer"
        self.sort = "bytes"
        self.text = ""
        self.holders: LiveHolders | None = None
        self.peak: TimelinePeak | None = None
        self.peak_read = False
        self.pending: list[str] = []
        self.filtered: tuple[Holder, ...] = ()
        self.groups: tuple[HolderGroup, ...] = ()
        self.shown: tuple[Holder, ...] = ()

    def compose(self) -> ComposeResult:
        yield TitleBar(id="title")
        yield Static("", id="holders-status")
        yield RowList(GROUP_COLUMNS, id="holder-groups", ellipsis=self.glyphs.ellipsis)
        yield RowList(BUFFER_COLUMNS, id="holder-buffers", ellipsis=self.glyphs.ellipsis,
                      empty="no live buffer matches")
        yield KeysFooter()

    def on_mount(self) -> None:
        self._title()
        self.query_one("#holder-buffers").focus()
        self.load(self.timeline.timeline_id, self.step)
        self.load_peak(self.timeline.timeline_id)

    def _title(self) -> None:
        info = self.timeline
        self.query_one(TitleBar).show(
            timeline_heading(info),
            keep=f"who holds the memory at step {self.step:,} of {info.n_steps:,}")

    # -- reads ----------------------------------------------------------------------------

    @work(thread=True, exclusive=True, group="holders", exit_on_error=False)
    def load(self, timeline_id: int, step: int) -> None:
        got = self.reader.run("holders", mh.live_holders, timeline_id, step)
        if got is not None:
            self.post_message(self.Loaded(got))

    @work(thread=True, exclusive=True, group="peak", exit_on_error=False)
    def load_peak(self, timeline_id: int) -> None:
        self.post_message(PeakKnown(timeline_id,
                                    self.reader.run("memory", q.peak_of, timeline_id)))

    @on(PeakKnown)
    def _peak_known(self, event: PeakKnown) -> None:
        self.peak = event.peak
        self.peak_read = True
        self._status()  # "the peak" when the holders came first
        pending, self.pending = self.pending, []
        if "peak" in pending:
            self.action_peak()

    @on(Loaded)
    def _loaded(self, event: Loaded) -> None:
        if event.holders.step != self.step:
            return
        self.holders = event.holders
        self.regroup()

    # -- the view -------------------------------------------------------------------------

    def regroup(self, keep_group: bool = True) -> None:
        """Filter, group and sort the snapshot; keep the selected group where it still is."""
        if self.holders is None:
            return
        groups_list = self.query_one("#holder-groups", RowList)
        old = self._selected_group() if keep_group else None
        self.filtered = mh.filter_holders(self.holders.buffers, self.text)
        grouped = self.by != "buffer"
        self.groups = (mh.group_holders(self.filtered, self.by, self.holders.live_bytes)
                       if grouped else ())
        groups_list.display = grouped
        total = sum(b.bytes or 0 for b in self.filtered)
        everything = HolderGroup("(all shown)", len(self.filtered), total,
                                 sum(1 for b in self.filtered if b.bytes is None),
                                 100.0 * total / self.holders.live_bytes
                                 if self.holders.live_bytes else None)
        rows = [group_cells(everything, self.by)] + [group_cells(g, self.by) for g in self.groups]
        cursor = 0
        if old is not None:
            cursor = next((i + 1 for i, g in enumerate(self.groups) if g.key == old.key), 0)
        groups_list.border_title = f" grouped by {dict(mh.GROUPINGS)[self.by]}: " \
                                   f"{len(self.groups):,} groups "
        groups_list.set_rows(rows, cursor=cursor)
        self._show_buffers()

    def _selected_group(self) -> HolderGroup | None:
        index = self.query_one("#holder-groups", RowList).cursor
        return self.groups[index - 1] if self.by != "buffer" and 0 < index <= len(
            self.groups) else None

    def _show_buffers(self) -> None:
        group = self._selected_group()
        members = (mh.in_group(self.filtered, self.by, group.key) if group is not None
                   else self.filtered)
        self.shown = mh.sort_holders(members, self.sort)
        table = self.query_one("#holder-buffers", RowList)
        table.set_rows([buffer_cells(b) for b in self.shown], cursor=0)
        which = f"of {group.label(self.by)}" if group is not None else "live"
        table.border_title = (f" buffers {which}: {len(self.shown):,}, by "
                              f"{dict(mh.SORTS)[self.sort]} ")
        self._status()

    def _status(self) -> None:
        h = self.holders
        if h is None:
            return
        parts = [f"live {exact_bytes(h.live_bytes)}", f"{len(h.buffers):,} buffers"]
        if self.text:
            parts.append(f"filter {self.text!r}: {len(self.filtered):,} match")
        if self.peak is not None and self.peak.peak_step == self.step:
            parts.append("the peak")
        self.query_one("#holders-status", Static).update(" · ".join(parts))

    @on(RowList.Highlighted, "#holder-groups")
    def _group_moved(self) -> None:
        self._show_buffers()

    # -- keys -----------------------------------------------------------------------------

    def go(self, step: int) -> None:
        n = self.timeline.n_steps
        self.step = max(0, min(step, n - 1))
        self._title()
        self.load(self.timeline.timeline_id, self.step)

    def action_step(self, delta: int) -> None:
        self.go(self.step + delta)

    def action_peak(self) -> None:
        if self.peak is not None:
            self.go(self.peak.peak_step)
        elif not self.peak_read:
            self.pending.append("peak")
        else:
            self.notify("no buffer lifetimes in this timeline: no peak")

    def action_grouping(self, direction: int) -> None:
        keys = [k for k, _ in mh.GROUPINGS]
        self.by = keys[(keys.index(self.by) + direction) % len(keys)]
        self.regroup(keep_group=False)

    def action_sort(self) -> None:
        keys = [k for k, _ in mh.SORTS]
        self.sort = keys[(keys.index(self.sort) + 1) % len(keys)]
        self._show_buffers()

    def action_filter(self) -> None:
        self.app.push_screen(Prompt("Filter the live buffers", "words of a name, producer, "
                                    "origin, source, dtype or shape (empty: all)",
                                    value=self.text, allow_empty=True), self._filtered)

    def _filtered(self, text: str | None) -> None:
        if text is not None:
            self.text = text
            self.regroup()

    def action_back(self) -> None:
        self.app.post_message(app_messages.GoBack())

    def action_export(self) -> None:
        tid = self.timeline.timeline_id
        if self.focused is self.query_one("#holder-groups") and self.by != "buffer":
            what = f"groups-by-{self.by}"
        else:
            group = self._selected_group()
            what = "buffers" if group is None else f"buffers-{self.by}"
        self.app.push_screen(Prompt("Export to CSV", "a file name",
                                    value=default_name(tid, what, self.step)),
                             lambda path: self._export(path, what))

    def _export(self, path: str | None, what: str) -> None:
        if not path:
            return
        if what.startswith("groups"):
            header: tuple[str, ...] = (self.by, "buffers", "bytes", "unknown_size_buffers",
                                       "share_pct")
            rows: list[tuple[object, ...]] = [
                (g.key, g.n_buffers, g.bytes, g.n_unknown,
                 None if g.share is None else round(g.share, 3)) for g in self.groups]
        else:
            header = ("buffer", "bytes", "dtype", "shape", "alloc_step", "last_step",
                      "producer", "origin", "source", "alloc_site")
            rows = [(b.buffer, b.bytes, b.dtype, b.shape, b.alloc_step, b.last_step,
                     b.producer, b.origin, b.source, b.alloc_site) for b in self.shown]
        self.write(path, what.split("-")[0], header, rows)

    @work(thread=True, exclusive=True, group="export", exit_on_error=False)
    def write(self, path: str, what: str, header: tuple[str, ...],
              rows: list[tuple[object, ...]]) -> None:
        try:
            n = write_csv(path, header, rows)
        except OSError as e:
            self.post_message(Exported(what, path, 0, str(e)))
            return
        self.post_message(Exported(what, path, n))

    @on(Exported)
    def _exported(self, event: Exported) -> None:
        if event.error:
            self.notify(f"could not write {event.path}: {event.error}", severity="error")
        else:
            self.notify(f"{event.what}: {event.rows:,} rows written to {event.path}")
