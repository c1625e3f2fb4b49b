"""The hang screen: one incident's ranks x process groups, who held up whom, where each sat.

A row per rank: per process group the last collective sequence id it enqueued and the last
it completed (``enqueued/completed``, as its Flight Recorder dump says: collective_progress),
``*`` where the rank holds up the group's first disagreeing collective (hang_verdict's
culprit), ``?`` where it cannot be told (an even split, a missing dump); then its verdict
in words. Culprit rows are marked. The line above says the incident's first collective in
words (the root group). Enter on a rank shows below its stack dump (each thread's frames,
innermost first), its newest Flight Recorder entries and the end of its profiler timeline
before the hang, where those were ingested.

Reads (``tlview.store.hang_queries``) run in workers: the incidents at once, the grid of
the one shown, a rank's detail on Enter. Opened at a rank (the runs screen's Enter on a
hang verdict: its culprit), the cursor starts there and its detail is read at once.
"""

from __future__ import annotations

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import Screen
from textual.widgets import Static
from tlview.store import hang_queries as hq
from tlview.store.fmt import short_ns
from tlview.store.hang_queries import Cell, Grid, Incident, RankDetail

from . import hang_messages as m
from . import messages as app_messages
from .glyphs import Glyphs
from .keys_footer import KeysFooter
from .reader import Reader
from .row_list import Column, RowList
from .title_bar import TitleBar

KEYS = (
    ("j k  Down Up", "next / previous rank"),
    ("Enter", "that rank's stack dump, newest entries and profiler timeline end"),
    ("[ ]", "previous / next incident (another hang's dumps in the database)"),
    ("Tab", "to the rank's detail and back"),
    ("Esc", "back"),
)
ABOUT = (
    "Each cell: the last collective sequence id the rank enqueued in that process group / "
    "the last it completed (pg_status of its dump). '*': the rank holds up the group's "
    "first collective where the ranks disagree (hang_verdict.culprit); '?': cannot be "
    "told (ranks split evenly, or no dump). The group issued first in the incident is "
    "the root; the others' hangs usually follow from it."
)
WAITING = "reading the Flight Recorder dumps"


def _seq(n: int | None) -> str:
    return "-" if n is None else str(n)


def cell_text(c: Cell | None) -> str:
    if c is None:
        return ""
    mark = " *" if c.culprit else " ?" if c.culprit is None and c.verdict in (
        "issued a different op", "different sizes", "different dtypes", "missing dump") else ""
    return f"{_seq(c.last_enqueued)}/{_seq(c.last_completed)}{mark}"


def grid_rows(g: Grid) -> tuple[list[Column], list[tuple[str, ...]], frozenset[int]]:
    """The grid as a RowList's columns, rows and marked rows (every member rank of any
    group, a rank without a dump included)."""
    names = [hq.group_name(grp.pg_desc, grp.process_group) for grp in g.groups]
    cols = [Column("rank", right=True)] + [Column(n[:14], right=True) for n in names] + [
        Column("verdict", least=8, flex=True)]
    by = {(c.rank, c.process_group): c for c in g.cells}
    ranks = sorted({r for grp in g.groups for r in grp.members} | {c.rank for c in g.cells})
    verdicts: dict[int, list[hq.Verdict]] = {}
    for v in g.incident.verdicts:
        if v.culprit is not False or v.rank not in verdicts:
            verdicts.setdefault(v.rank, []).append(v)
    rows, marks = [], set()
    for i, r in enumerate(ranks):
        cells = tuple(cell_text(by.get((r, grp.process_group))) if (r, grp.process_group) in by
                      else ("no dump" if r in grp.missing else "") for grp in g.groups)
        mine = verdicts.get(r, [])
        words = "; ".join(f"{v.verdict} {hq.group_name(v.pg_desc, v.process_group)} #{v.seq}"
                          for v in mine if v.verdict not in ("waiting", "completed"))
        if not words and mine:
            words = (f"waits in {hq.group_name(mine[0].pg_desc, mine[0].process_group)} "
                     f"#{mine[0].seq}")
        if any(v.culprit for v in mine):
            marks.add(i)
        rows.append((f"r{r}", *cells, words))
    return cols, rows, frozenset(marks)


def root_text(i: Incident) -> Text:
    text = Text()
    root = i.root
    if not root:
        text.append("every collective the dumps hold matches across ranks and completed")
        return text
    v0 = root[0]
    text.append(f"{hq.group_name(v0.pg_desc, v0.process_group)} #{v0.seq} "
                f"({v0.expected_ops or v0.ops or '?'}): ")
    culprits = [v for v in root if v.culprit]
    undecided = [v for v in root if v.culprit is None]
    if culprits:
        text.append("; ".join(f"rank {v.rank} {v.verdict}" for v in culprits), style="bold")
    elif undecided:
        text.append(", ".join(f"rank {v.rank} {v.verdict}" for v in undecided), style="bold")
    else:
        text.append(v0.finding, style="bold")
    waiting = [v.rank for v in root if v.verdict == "waiting"]
    if waiting:
        text.append(f"; {len(waiting)} rank{'s' * (len(waiting) != 1)} wait")
    return text


def detail_lines(d: RankDetail, verdicts: tuple[hq.Verdict, ...]) -> list[tuple[str]]:
    out: list[tuple[str]] = []
    for v in verdicts:
        if v.rank == d.rank:
            out.append((v.reason + (f" (blocked in {v.blocked_in})" if v.blocked_in else ""),))
    # the threads that sat somewhere first (the dumping thread, faulthandler's current
    # one, last), a thread named MainThread before the others
    for t in sorted(d.threads, key=lambda t: (t.state == "current", t.name != "MainThread",
                                              t.timeline_id, t.index)):
        name = t.name or t.thread or "thread"
        state = f", {t.state}" if t.state else ""
        out.append((f"stack {name}{state}:",))
        out += [(f"  {f}",) for f in t.frames[:8]]
        if len(t.frames) > 8:
            out.append((f"  ... {len(t.frames) - 8} more frames",))
    if not d.threads:
        out.append(("no stack dump of this rank ingested",))
    if d.entries:
        out.append(("newest Flight Recorder entries:",))
        out += [(f"  {hq.group_name(e.pg_desc, e.process_group or '?')} #{_seq(e.seq)} {e.op} "
                 f"{e.in_sizes or ''} "
                 f"{'completed' if e.completed else e.state or ''}",) for e in d.entries]
    if d.profile_end:
        hang = d.hang_ns if d.hang_ns is not None else d.profile_end[0].end_ns
        out.append(("its profiler timeline's end, newest first (before the hung collective "
                    "was enqueued by):",))
        out += [(f"  {a.name} ({a.category}) {short_ns(hang - a.end_ns) or '0 ns'}",)
                for a in d.profile_end]
    return out


class HangScreen(Screen[None]):
    KEYS = KEYS
    ABOUT = ABOUT
    BINDINGS = [
        Binding("right_square_bracket", "incident(1)", "incident", key_display="[/]"),
        Binding("left_square_bracket", "incident(-1)", show=False),
        Binding("escape", "back", show=False),
    ]

    def __init__(self, reader: Reader, glyphs: Glyphs, *, timeline_id: int | None = None,
                 rank: int | None = None) -> None:
        super().__init__()
        self.reader = reader
        self.glyphs = glyphs
        self.start_timeline = timeline_id
        self.start_rank = rank  # the cursor's first rank (a verdict's culprit), its detail shown
        self.incidents: tuple[Incident, ...] = ()
        self.index = 0
        self.grid: Grid | None = None
        self.ranks: list[int] = []

    def compose(self) -> ComposeResult:
        yield TitleBar(id="title")
        yield Static("", id="hang-status")
        yield Vertical(id="hang-grid-box")
        yield RowList([Column("", flex=True)], id="hang-detail", ellipsis=self.glyphs.ellipsis,
                      empty="Enter on a rank: its stacks, entries and profiler end")
        yield KeysFooter()

    def on_mount(self) -> None:
        self.query_one("#hang-detail").border_title = " rank "
        self.query_one(TitleBar).show("tlview  hang")
        self.query_one("#hang-status", Static).update(
            Text(f"{WAITING}{self.glyphs.ellipsis}", style="dim"))
        self.load_incidents(self.start_timeline)

    # -- reads ----------------------------------------------------------------------------

    @work(thread=True, exclusive=True, group="hang-incidents", exit_on_error=False)
    def load_incidents(self, timeline_id: int | None) -> None:
        def read(db):
            incidents = hq.hang_summary(db)
            at = hq.incident_of(db, timeline_id) if timeline_id is not None else None
            return incidents, next((i for i, x in enumerate(incidents) if x.incident == at), 0)

        got = self.reader.run("hang", read)
        if got is not None:
            self.post_message(m.IncidentsLoaded(*got))

    @work(thread=True, exclusive=True, group="hang-grid", exit_on_error=False)
    def load_grid(self, incident: Incident) -> None:
        got = self.reader.run("hang", hq.grid, incident)
        if got is not None:
            self.post_message(m.GridLoaded(got))

    @work(thread=True, exclusive=True, group="hang-rank", exit_on_error=False)
    def load_rank(self, incident: Incident, rank: int) -> None:
        got = self.reader.run("hang-rank", hq.rank_detail, incident, rank)
        if got is not None:
            self.post_message(m.RankLoaded(incident.incident, got))

    # -- results --------------------------------------------------------------------------

    @on(m.IncidentsLoaded)
    def on_incidents_loaded(self, event: m.IncidentsLoaded) -> None:
        self.incidents = event.incidents
        if not self.incidents:
            self.query_one("#hang-status", Static).update(Text(
                "no Flight Recorder dump in this database: ingest every rank's dump "
                "(TORCH_FR_DUMP_TEMP_FILE<rank>, pickle or JSON)"))
            return
        self.index = event.start
        self._open()

    def _open(self) -> None:
        i = self.incidents[self.index]
        self.grid = None
        of = f" of {len(self.incidents)}" if len(self.incidents) > 1 else ""
        miss = f", no dump of {', '.join(map(str, i.missing))}" if i.missing else ""
        self.query_one(TitleBar).show(f"tlview  hang  incident {i.incident}{of}: "
                                      f"{len(i.ranks)} ranks{miss}")
        self.query_one("#hang-status", Static).update(root_text(i))
        self.query_one("#hang-detail", RowList).set_rows([])
        self.load_grid(i)

    @on(m.GridLoaded)
    async def on_grid_loaded(self, event: m.GridLoaded) -> None:
        if not self.incidents or event.grid.incident != self.incidents[self.index]:
            return
        self.grid = event.grid
        cols, rows, marks = grid_rows(event.grid)
        self.ranks = [int(r[0][1:]) for r in rows]
        box = self.query_one("#hang-grid-box", Vertical)
        await box.remove_children()  # the columns are the incident's groups: a new table
        table = RowList(cols, classes="hang-grid", ellipsis=self.glyphs.ellipsis,
                        empty="no rank in this incident")
        await box.mount(table)
        at = (self.ranks.index(self.start_rank) if self.start_rank in self.ranks
              else min(marks, default=0))
        table.set_rows(rows, cursor=at, marks=marks)
        table.focus()
        if self.start_rank in self.ranks:  # opened at a verdict's rank: its detail too
            self.start_rank = None
            self.show_rank(at)

    @on(RowList.Chosen, ".hang-grid")
    def on_rank_chosen(self, event: RowList.Chosen) -> None:
        self.show_rank(event.index)

    def show_rank(self, index: int) -> None:
        """The detail of the grid's ``index``-th rank (read in a worker)."""
        if self.grid is not None and index < len(self.ranks):
            rank = self.ranks[index]
            self.query_one("#hang-detail").border_title = f" rank {rank} "
            self.load_rank(self.grid.incident, rank)

    @on(m.RankLoaded)
    def on_rank_loaded(self, event: m.RankLoaded) -> None:
        if self.grid is None or event.incident != self.grid.incident.incident:
            return
        self.query_one("#hang-detail", RowList).set_rows(
            detail_lines(event.detail, self.grid.incident.verdicts), cursor=0)

    # -- actions --------------------------------------------------------------------------

    def action_incident(self, delta: int) -> None:
        if len(self.incidents) > 1:
            self.index = (self.index + delta) % len(self.incidents)
            self._open()

    def action_back(self) -> None:
        self.app.post_message(app_messages.GoBack())
