"""The chooser: every timeline of the database, grouped by run, filtered as you type.

Figures first (id, steps, peak and its step, device), then the run (where the database
holds several), the name (the timeline's title: `0_forward · output code`), then
the source: the end of the ingested file's path that tells ``0_forward`` of one folder
from the ``0_forward`` of another (cut at its end: its start is what differs). A compiled
graph read from several artifacts (output_code.py, a torch log, a TORCH_TRACE log) is
listed once, saying from how many; a TORCH_TRACE log's own timeline is a source, not a
schedule: `a` lists them too. The rows are one snapshot drawn line by line, so the
screen is ready at once with thousands of timelines; new timelines appear when an
ingest lands (the app hands them over).
"""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Input
from tlview.store.fmt import short_bytes
from tlview.store.timeline_queries import TimelineInfo, TimelinePeak

from . import messages as m
from .chooser_rows import ChooserRow, chooser_rows, filter_rows
from .keys_footer import KeysFooter
from .row_list import Column, RowList
from .runs_messages import OpenRuns
from .title_bar import TitleBar

# The name is the timeline's title, which says what it is (output code, scheduler IR,
# profiler trace...): the format is left to the filter.
COLUMNS = (Column("id", right=True), Column("steps", right=True), Column("peak", right=True),
           Column("at", right=True), Column("device"),
           Column("name", least=12, flex=True, first=True), Column("source", least=12, flex=True))
WITH_RUN = COLUMNS[:5] + (Column("run", most=16),) + COLUMNS[5:]  # several runs

KEYS = (
    ("j k  Down Up", "next / previous timeline"),
    ("PgDn PgUp Home End", "a page / the first / the last"),
    ("Enter", "open the timeline"),
    ("c", "compare: on a first timeline marks it, on a second compares the two"),
    ("/", "filter: type words of the name, format, device or source (/ again: a new "
          "filter)"),
    ("r", "the ranks: collectives across the ranks' profiler traces, stragglers"),
    ("s", "the runs and what each says (peak, OOMs, straggler), Enter: the evidence"),
    ("a", "all timelines: also a compiled graph's repeats in other artifacts and the "
          "TORCH_TRACE logs' own (listed once / as sources by default)"),
    ("Esc", "(in the filter) clear it"),
)


def cells(row: ChooserRow, with_run: bool = False) -> tuple[str, ...]:
    t, p = row.info, row.peak
    steps = ("trace" if t.is_measured else "snapshot" if t.format == "cuda_snapshot"
             else "dump" if t.format in ("flight_recorder", "stack_dump")
             else f"{t.n_steps:,}")
    peak, at = (short_bytes(p.peak_bytes), str(p.peak_step)) if p else ("", "")
    name = row.name or t.name
    if row.copies:
        name += f" ({row.copies + 1} sources)"
    head = (str(t.timeline_id), steps, peak, at, t.device or "")
    return head + ((t.run_name,) if with_run else ()) + (name, row.source)


class ChooserScreen(Screen[None]):
    """Enter posts ``OpenTimeline``; the app opens it."""

    KEYS = KEYS
    # priority: in the filter box too, `/` starts a new filter (a name never needs '/')
    BINDINGS = [Binding("slash", "filter", "filter", key_display="/", priority=True),
                Binding("r", "ranks", show=False),
                Binding("s", "runs", show=False),
                Binding("a", "everything", show=False),
                Binding("c", "compare", show=False),  # in ?'s list: the footer stays short
                Binding("escape", "clear_filter", show=False)]

    def __init__(self, timelines: tuple[TimelineInfo, ...],
                 peaks: dict[int, TimelinePeak] | None, current: int | None = None) -> None:
        super().__init__()
        self.all_rows: tuple[ChooserRow, ...] = chooser_rows(timelines, peaks)
        self.everything = False  # `a`: also the hidden rows (chooser_rows.ChooserRow.hidden)
        self.shown: tuple[ChooserRow, ...] = filter_rows(self.all_rows, "")
        self.current = current
        self.compare_from: int | None = None  # marked by ``c``

    def compose(self) -> ComposeResult:
        yield TitleBar(id="title")
        yield Input(placeholder="/ filters: words of the name, format, device or source",
                    id="chooser-filter")
        yield RowList(COLUMNS, empty="no timeline matches the filter", id="chooser-table")
        yield KeysFooter()

    def on_mount(self) -> None:
        table = self.query_one(RowList)
        self._show(select=self.current)
        table.focus()

    def _show(self, select: int | None = None) -> None:
        table = self.query_one(RowList)
        keep = select if select is not None else self.selected_id
        cursor = next((i for i, r in enumerate(self.shown) if r.info.timeline_id == keep), 0)
        marks = frozenset(i for i, r in enumerate(self.shown)
                          if r.info.timeline_id in (self.current, self.compare_from))
        with_run = len({r.info.run_id for r in self.all_rows}) > 1
        table.columns = WITH_RUN if with_run else COLUMNS
        table.set_rows([cells(r, with_run) for r in self.shown], cursor=cursor, marks=marks)
        n = len(self.shown)
        total = len(self.all_rows) if self.everything else sum(not r.hidden for r in self.all_rows)
        what = f"{total:,} timelines" if n == total else f"{n:,} of {total:,} timelines"
        ranks = ", r: ranks" if sum(r.info.is_measured for r in self.all_rows) > 1 else ""
        if self.compare_from is not None:
            self.query_one(TitleBar).show(
                f"tlview  {what}: compare {self.compare_from} with: c on another "
                "(c on it again: unmark)")
        else:
            self.query_one(TitleBar).show(f"tlview  {what}: Enter opens one, / filters{ranks}"
                                          ", s: runs")

    @property
    def selected_id(self) -> int | None:
        table = self.query_one(RowList)
        if not self.shown:
            return None
        return self.shown[min(table.cursor, len(self.shown) - 1)].info.timeline_id

    def update_timelines(self, timelines: tuple[TimelineInfo, ...],
                         peaks: dict[int, TimelinePeak] | None) -> None:
        """New timelines landed (an ingest): same filter, same selection."""
        self.all_rows = chooser_rows(timelines, peaks)
        self.shown = filter_rows(self.all_rows, self.query_one(Input).value, self.everything)
        self._show()

    @on(Input.Changed, "#chooser-filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        self.shown = filter_rows(self.all_rows, event.value, self.everything)
        self._show()

    def show_run(self, name: str) -> None:
        """Only the timelines of run ``name`` (its name as the filter)."""
        self.query_one(Input).value = name  # Input.Changed filters
        self.query_one(RowList).focus()

    def action_everything(self) -> None:
        self.everything = not self.everything
        self.shown = filter_rows(self.all_rows, self.query_one(Input).value, self.everything)
        self._show()
        self.notify("every timeline, repeats and TORCH_TRACE logs too" if self.everything
                    else "each compiled graph once", timeout=3)

    def action_runs(self) -> None:
        self.app.post_message(OpenRuns())

    @on(Input.Submitted, "#chooser-filter")
    def _filter_done(self) -> None:
        self.query_one(RowList).focus()

    @on(RowList.Chosen, "#chooser-table")
    def _chosen(self, event: RowList.Chosen) -> None:
        row = self.shown[event.index]
        self.current = row.info.timeline_id
        self.app.post_message(m.OpenTimeline(row.info.timeline_id))

    def action_ranks(self) -> None:
        self.app.post_message(m.OpenRanks(self.selected_id))

    def action_compare(self) -> None:
        """The first ``c`` marks a timeline (the one the user came back from is only
        shown, never taken as the first: ``c`` compared at once); ``c`` on another asks
        the app to compare the two."""
        chosen = self.selected_id
        if chosen is None:
            return
        first = self.compare_from
        if first is None or first == chosen:
            self.compare_from = None if self.compare_from == chosen else chosen
            self._show()
            return
        self.compare_from = None
        self._show()
        self.app.post_message(m.CompareTimelines(first, chosen))

    def action_filter(self) -> None:
        """Into the filter box, its text selected: what is typed replaces it."""
        box = self.query_one(Input)
        box.focus()
        box.select_all()

    def action_clear_filter(self) -> None:
        box = self.query_one(Input)
        if box.value:
            box.value = ""
        self.query_one(RowList).focus()
