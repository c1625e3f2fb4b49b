"""The ranks screen: one run's collectives across its ranks, who arrived late, who waited.

Per collective a row: its id, ProfilerStep, kind, bytes, arrival skew (also as a bar, full
at the run's largest), the last rank, and a strip of the ranks in rank order whose height
is how late each arrived (the last rank's cell marked). Below, the ranks of the
collective at the cursor (latest first, with their wait), and the stragglers: per rank
the wait its late arrivals caused, and its clock offset. Enter on a collective opens the
last rank's timeline just before its late arrival: the compiled node that ran there
where the trace is attached to one, else its trace at the kernel before.

Reads (``tlview.store.rank_queries``) run in workers: the run at once, the ranks of the
collective at the cursor as it moves, the jump targets once, off the first draw's path
(an Enter pressed before they arrive is carried out when they do).
"""

from __future__ import annotations

import attrs
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.screen import Screen
from textual.widgets import Static
from tlview.store import rank_queries as rq
from tlview.store.fmt import short_bytes, short_ns
from tlview.store.rank_queries import Arrival, CollectiveRow, LateTarget, RunInfo, RunView

from . import messages as app_messages
from . import ranks_messages as m
from .glyphs import Glyphs
from .keys_footer import KeysFooter
from .rank_strips import CollectiveList, skew_bar
from .reader import Reader
from .row_list import Column, RowList
from .title_bar import TitleBar

KEYS = (
    ("j k  Down Up", "next / previous collective (row)"),
    ("PgDn PgUp Home End", "a page / the first / the last"),
    ("Enter", "the last rank's timeline just before it arrived (compiled node, else trace)"),
    ("s", "sort: in time order / largest skew first"),
    ("[ ]", "previous / next run (ranks of another job run in the database)"),
    ("Tab", "to the ranks of the collective, then the stragglers (Enter: that rank's trace)"),
    ("Esc", "back"),
)
ABOUT = (
    "A rank arrives at a collective when its NCCL kernel starts, on clocks aligned from the "
    "collectives themselves (clock_offsets). Skew: last minus first arrival. Strip: one cell "
    "per rank (or bucket of ranks) in rank order, as high as it was late; the last rank's "
    "cell is marked, '·' a rank that took no part. Waited: latest arrival minus its own. "
    "Caused: the others' wait at the collectives it arrived last at (stragglers)."
)
BAR = 8  # the skew bar's cells
COLUMNS = (Column("#", right=True), Column("step", right=True), Column("collective", most=14),
           Column("bytes", right=True), Column("skew", right=True), Column("", least=BAR, most=BAR),
           Column("last", right=True), Column("arrivals by rank", least=2, flex=True))
ARRIVAL_COLUMNS = (Column("rank", right=True), Column("arrived", right=True),
                   Column("", least=10, most=10), Column("waited", right=True),
                   Column("kernel", right=True))
STRAGGLER_COLUMNS = (Column("rank", right=True), Column("caused", right=True),
                     Column("last", right=True), Column("share", right=True),
                     Column("clock", right=True))


def ranks_text(ranks: tuple[int, ...]) -> str:
    """``0-3, 5``: runs of consecutive ranks."""
    out: list[list[int]] = []
    for r in sorted(ranks):
        if out and out[-1][1] == r - 1:
            out[-1][1] = r
        else:
            out.append([r, r])
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in out)


def collective_cells(c: CollectiveRow, max_skew: int, g: Glyphs, buckets: int) -> tuple[str, ...]:
    step = "" if c.profiler_step is None else f"#{c.profiler_step}"
    what = c.kind or c.collective or "?"
    if not c.complete:
        what += f" {c.n_ranks}/{c.group_size}"
    return (str(c.collective_id), step, what, short_bytes(c.bytes) if c.bytes else "",
            short_ns(c.skew_ns), skew_bar(c.skew_ns, max_skew, BAR, g), f"r{c.last_rank}",
            " " * buckets)


def arrival_cells(a: Arrival, skew: int, g: Glyphs) -> tuple[str, ...]:
    return (f"r{a.rank}", "+" + short_ns(a.late_ns) if a.late_ns else "first",
            skew_bar(a.late_ns, skew, 10, g), short_ns(a.wait_ns) if a.wait_ns else "-",
            short_ns(a.dur_ns))


def straggler_cells(s: rq.StragglerRow) -> tuple[str, ...]:
    share = "" if s.wait_share is None else f"{100 * s.wait_share:.1f}%"
    clock = "" if s.offset_ns is None else (f"{'+' if s.offset_ns > 0 else ''}"
                                           f"{short_ns(abs(s.offset_ns)) if s.offset_ns else '0'}")
    if s.offset_ns and s.offset_ns < 0:
        clock = "-" + clock
    return (f"r{s.rank}", short_ns(s.caused_wait_ns) or "0", str(s.times_last), share, clock)


NO_COLLECTIVES = "no collective kernels in this run"
NO_STRAGGLERS = "no collective with two ranks"


class RanksScreen(Screen[None]):
    KEYS = KEYS
    ABOUT = ABOUT
    BINDINGS = [
        Binding("enter", "enter", "go there", priority=True),
        Binding("s", "sort", "sort"),
        Binding("right_square_bracket", "run(1)", "run", key_display="[/]"),
        Binding("left_square_bracket", "run(-1)", show=False),
        Binding("escape", "back", show=False),
    ]

    def __init__(self, reader: Reader, glyphs: Glyphs, *, timeline_id: int | None = None) -> None:
        super().__init__()
        self.reader = reader
        self.glyphs = glyphs
        self.start_timeline = timeline_id
        self.runs: tuple[RunInfo, ...] = ()
        self.run_index = 0
        self.view: RunView | None = None
        self.order: list[int] = []  # row -> index into view.collectives
        self.by_skew = False
        self.arrivals: tuple[Arrival, ...] = ()
        self.targets: dict[int, LateTarget] | None = None
        self.pending_jump = False

    # -- layout -------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        g = self.glyphs
        yield TitleBar(id="title")
        yield Static("", id="ranks-status")
        # the lists say they are empty only once a run is read (at 1,024 ranks the read
        # takes seconds, and "no collective kernels" meanwhile was wrong)
        yield CollectiveList(COLUMNS, g, id="ranks-collectives", empty="")
        with Horizontal(id="ranks-lower"):
            yield RowList(ARRIVAL_COLUMNS, id="ranks-arrivals", ellipsis=g.ellipsis,
                          empty="")
            yield RowList(STRAGGLER_COLUMNS, id="ranks-stragglers", ellipsis=g.ellipsis,
                          empty="")
        yield KeysFooter()

    def on_mount(self) -> None:
        self.query_one("#ranks-arrivals").border_title = " ranks of the collective "
        self.query_one("#ranks-stragglers").border_title = " stragglers "
        self.query_one(TitleBar).show("tlview  ranks")
        self.query_one("#ranks-status", Static).update(
            Text(f"reading the ranks{self.glyphs.ellipsis}", style="dim"))
        self.query_one(CollectiveList).focus()
        self.load_runs(self.start_timeline)

    # -- reads ----------------------------------------------------------------------------

    @work(thread=True, exclusive=True, group="ranks-runs", exit_on_error=False)
    def load_runs(self, timeline_id: int | None) -> None:
        def read(db):
            runs = rq.runs(db)
            run = rq.run_of(db, timeline_id) if timeline_id is not None else None
            start = next((i for i, r in enumerate(runs) if r.run == run), 0)
            return runs, start

        got = self.reader.run("ranks", read)
        if got is not None:
            self.post_message(m.RunsLoaded(*got))

    @work(thread=True, exclusive=True, group="ranks-run", exit_on_error=False)
    def load_run(self, info: RunInfo) -> None:
        view = self.reader.run("ranks", rq.run_view, info)
        if view is not None:
            self.post_message(m.RunLoaded(view))
            whatif = self.reader.run("ranks-whatif", rq.worst_whatif, info.run)
            self.post_message(m.WhatIfLoaded(info.run, whatif))
            targets = self.reader.run("ranks-targets", rq.late_targets, info.run)
            if targets is not None:
                self.post_message(m.TargetsLoaded(info.run, targets))

    @work(thread=True, exclusive=True, group="ranks-arrivals", exit_on_error=False)
    def load_arrivals(self, run: int, collective_id: int) -> None:
        got = self.reader.run("ranks-arrivals", rq.arrivals, run, collective_id)
        if got is not None:
            self.post_message(m.ArrivalsLoaded(run, collective_id, got))

    # -- results --------------------------------------------------------------------------

    @on(m.RunsLoaded)
    def on_runs_loaded(self, event: m.RunsLoaded) -> None:
        self.runs = event.runs
        if not self.runs:
            self.query_one("#ranks-status", Static).update(Text(
                "no run of several ranks in this database: ingest every rank's profiler "
                "trace (a Kineto trace with distributedInfo, or record_param_comms events)"))
            self.query_one(CollectiveList).set_collectives([], [])
            return
        self.run_index = event.start
        self._open_run()

    def _open_run(self) -> None:
        info = self.runs[self.run_index]
        self.view = None
        self.targets = None
        self.query_one(TitleBar).show(self._title(info))
        self.load_run(info)

    def _title(self, info: RunInfo) -> str:
        of = f" of {len(self.runs)}" if len(self.runs) > 1 else ""
        return (f"tlview  ranks  run {info.run}{of}: {len(info.ranks)} of {info.world_size} "
                f"ranks ({ranks_text(info.ranks)})")

    @on(m.RunLoaded)
    def on_run_loaded(self, event: m.RunLoaded) -> None:
        if not self.runs or event.view.info != self.runs[self.run_index]:
            return
        self.view = event.view
        self._status()
        self.query_one(CollectiveList).empty = NO_COLLECTIVES
        self.query_one("#ranks-stragglers", RowList).empty = NO_STRAGGLERS
        self._fill_collectives(cursor=0)
        self.query_one("#ranks-stragglers", RowList).set_rows(
            [straggler_cells(s) for s in self.view.stragglers], cursor=0,
            marks=frozenset(i for i, s in enumerate(self.view.stragglers)
                            if s.caused_wait_order == 1 and s.caused_wait_ns > 0))

    @on(m.WhatIfLoaded)
    def on_whatif_loaded(self, event: m.WhatIfLoaded) -> None:
        if self.view is None or event.run != self.view.info.run or event.whatif is None:
            return
        self.view = attrs.evolve(self.view, whatif=event.whatif)
        self._status()

    @on(m.TargetsLoaded)
    def on_targets_loaded(self, event: m.TargetsLoaded) -> None:
        if self.view is None or event.run != self.view.info.run:
            return
        self.targets = event.targets
        if self.pending_jump:
            self.pending_jump = False
            self.action_jump()

    @on(m.ArrivalsLoaded)
    def on_arrivals_loaded(self, event: m.ArrivalsLoaded) -> None:
        c = self.current
        if self.view is None or c is None or (event.run, event.collective_id) != (
                self.view.info.run, c.collective_id):
            return
        self.arrivals = event.arrivals
        table = self.query_one("#ranks-arrivals", RowList)
        table.border_title = f" ranks of #{c.collective_id}: {c.match_key} "
        table.set_rows([arrival_cells(a, c.skew_ns, self.glyphs) for a in event.arrivals],
                       cursor=0, marks=frozenset(i for i, a in enumerate(event.arrivals)
                                                 if a.rank == c.last_rank))

    # -- drawing --------------------------------------------------------------------------

    def _status(self) -> None:
        v = self.view
        if v is None:
            return
        info = v.info
        n = len(v.collectives)
        done = sum(1 for c in v.collectives if c.complete)
        text = Text()
        text.append(f"{n:,} collectives")
        if done < n:
            text.append(f", {n - done:,} lacking ranks", style="bold")
        if info.missing:
            text.append(f" · missing rank {ranks_text(info.missing)}", style="bold")
        worst = v.stragglers[0] if v.stragglers else None
        if worst is not None and worst.caused_wait_ns > 0:
            of = "step" if worst.step_basis == "profiler_steps" else "collectives' span"
            share = f" ({100 * worst.wait_share:.1f}% of the others' {of})" \
                if worst.wait_share is not None else ""
            text.append(" · straggler ")
            text.append(f"rank {worst.rank}", style="bold")
            text.append(f": {short_ns(worst.caused_wait_ns)} caused{share}")
        if v.whatif is not None:
            text.append(f" · {v.whatif.sentence(short_ns)}")
        offsets = [s for s in v.stragglers if s.offset_ns]
        if offsets:
            o = max(offsets, key=lambda s: abs(s.offset_ns or 0))
            text.append(f" · clocks within {short_ns(abs(o.offset_ns or 0))}", style="dim")
        self.query_one("#ranks-status", Static).update(text)

    def _fill_collectives(self, cursor: int | None = None) -> None:
        v = self.view
        if v is None:
            return
        cs = v.collectives
        self.order = sorted(range(len(cs)), key=lambda i: (-cs[i].skew_ns, i)) \
            if self.by_skew else list(range(len(cs)))
        max_skew = max((c.skew_ns for c in cs), default=0)
        lst = self.query_one(CollectiveList)
        rows = [collective_cells(cs[i], max_skew, self.glyphs, v.buckets) for i in self.order]
        lst.set_collectives(rows, [(cs[i].strip, cs[i].skew_ns) for i in self.order],
                            cursor=cursor,
                            marks=frozenset(k for k, i in enumerate(self.order)
                                            if not cs[i].complete))
        lst.border_title = " collectives, by skew " if self.by_skew else " collectives "

    @property
    def current(self) -> CollectiveRow | None:
        v = self.view
        if v is None or not self.order:
            return None
        row = self.query_one(CollectiveList).cursor
        return v.collectives[self.order[min(row, len(self.order) - 1)]]

    @on(RowList.Highlighted, "#ranks-collectives")
    def _collective_highlighted(self) -> None:
        c = self.current
        if c is not None and self.view is not None:
            self.load_arrivals(self.view.info.run, c.collective_id)

    # -- keys -----------------------------------------------------------------------------

    def action_sort(self) -> None:
        c = self.current
        self.by_skew = not self.by_skew
        if c is None:
            return
        keep = self.view.collectives.index(c) if self.view is not None else 0
        self._fill_collectives()
        self.query_one(CollectiveList).cursor = self.order.index(keep)

    def action_run(self, delta: int) -> None:
        if len(self.runs) < 2:
            self.notify("one run of ranks in this database", severity="warning")
            return
        self.run_index = (self.run_index + delta) % len(self.runs)
        self._open_run()

    def action_enter(self) -> None:
        """Enter where the focus is: a collective (the node before its late arrival), a
        rank of it (its kernel in that rank's trace), a straggler (its trace)."""
        focused = self.focused
        if isinstance(focused, RowList) and focused.id == "ranks-arrivals":
            self._arrival_chosen(focused.cursor)
        elif isinstance(focused, RowList) and focused.id == "ranks-stragglers":
            self._straggler_chosen(focused.cursor)
        else:
            self.action_jump()

    def action_jump(self) -> None:
        c = self.current
        if c is None:
            return
        if self.targets is None:
            self.pending_jump = True  # carried out when the targets arrive
            return
        t = self.targets.get(c.collective_id)
        if t is None:
            self.notify(f"#{c.collective_id} has one rank: no one arrived late",
                        severity="warning")
            return
        if t.graph_timeline_id is not None and t.step is not None:
            self.app.post_message(app_messages.OpenTimeline(t.graph_timeline_id, step=t.step))
        else:
            self.app.post_message(app_messages.OpenTimeline(
                t.timeline_id, seq=t.before_seq if t.before_seq is not None else t.seq))

    @on(RowList.Chosen)
    def _chosen(self, event: RowList.Chosen) -> None:
        """A click on the row at the cursor (Enter is the screen's own key)."""
        if event.row_list.id == "ranks-arrivals":
            self._arrival_chosen(event.index)
        elif event.row_list.id == "ranks-stragglers":
            self._straggler_chosen(event.index)
        else:
            self.action_jump()

    def _arrival_chosen(self, index: int) -> None:
        if index < len(self.arrivals):
            a = self.arrivals[index]
            self.app.post_message(app_messages.OpenTimeline(a.timeline_id, seq=a.seq))

    def _straggler_chosen(self, index: int) -> None:
        if self.view is not None and index < len(self.view.stragglers):
            self.app.post_message(app_messages.OpenTimeline(
                self.view.stragglers[index].timeline_id))

    def action_back(self) -> None:
        self.app.post_message(app_messages.GoBack())
