"""The runs screen: what each incident says, first.

Per run (``runs``: a folder or files one `tlview ingest` named) a line, then its verdict
lines: the headline of its report (store/report.py): the peak and which figure it is,
who held it, each OOM, the straggler, the step time. Enter on a verdict opens its
evidence: the snapshot at the OOM or the peak, the compiled graph at its peak, the ranks
screen at the straggler's run, the profiler trace; Enter on a run's line shows its
timelines in the chooser. The runs are read first, then each run's verdicts in a worker
(a report's memory and time sections: about a second a run), shown as they come; the app
keeps what was read (``RunsRead``) while the file is unchanged, so the screen opened again
(s in the chooser) shows it at once.
"""

from __future__ import annotations

import textwrap
import threading

import duckdb
from attrs import frozen
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Static
from tlview.store.fmt import short_bytes, short_ns
from tlview.store.report import Evidence, RunRow, Verdict, Words, headline, list_runs

from . import messages as app_messages
from . import runs_messages as m
from .glyphs import Glyphs
from .keys_footer import KeysFooter
from .reader import Reader, file_stamp
from .row_list import Column, RowList
from .title_bar import TitleBar

WORDS = Words(bytes=short_bytes, ns=short_ns)
KEYS = (
    ("j k  Down Up", "next / previous line"),
    ("PgDn PgUp Home End", "a page / the first / the last"),
    ("Enter", "on a verdict: its evidence (the snapshot at the OOM or the peak, the graph at "
              "its peak, the ranks at the straggler, the hang at its culprit, the trace); on "
              "a run: its timelines"),
    ("t", "every timeline (the chooser)"),
    ("Esc", "back to the timelines"),
)
ABOUT = ("A run is what one `tlview ingest` named: a folder (a TORCH_COMPILE_DEBUG tree, a "
         "rank's folder, a job's traces) or a file. Its verdicts are the headline of "
         "`tlview report RUN`, which prints the whole postmortem with the SQL of each figure.")
COLUMNS = (Column("run and what it says", least=20, flex=True),)


@frozen
class RunLine:
    """A line of the list: a run's own (``verdict`` None) or one of its verdicts."""

    run: RunRow
    verdict: Verdict | None
    text: str


def run_lines(runs: tuple[RunRow, ...], verdicts: dict[int, tuple[Verdict, ...]],
              g: Glyphs) -> tuple[RunLine, ...]:
    """Each run's line, then its verdicts (or that they are being read)."""
    out: list[RunLine] = []
    for r in runs:
        out.append(RunLine(r, None, f"{r.name}  {_n(r.n_timelines, 'timeline')} from "
                                    f"{_n(r.n_sources, 'file')}: {r.artifacts}"))
        got = verdicts.get(r.run_id)
        if got is None:
            out.append(RunLine(r, None, f"  reading{g.ellipsis}"))
        elif not got:
            out.append(RunLine(r, None, "  no memory figure, profiler trace or hang to judge"))
        else:
            out += [RunLine(r, v, f"  {g.arrow} {v.text}") for v in got]
    return tuple(out)


def _n(n: int, what: str) -> str:
    return f"{n:,} {what}{'' if n == 1 else 's'}"


def _key(ln: RunLine) -> tuple[int, str | None]:
    return (ln.run.run_id, ln.verdict.key if ln.verdict is not None else
            ("run" if _is_run(ln) else "pending"))


def _is_run(ln: RunLine) -> bool:
    """A run's own line (not a verdict, nor 'reading...')."""
    return ln.verdict is None and not ln.text.startswith(" ")


def where(e: Evidence | None) -> str:
    """What Enter opens for a verdict's evidence."""
    if e is None:
        return ""
    if e.screen == "snapshot":
        return f"Enter: the snapshot at trace entry {e.at:,}" if e.at is not None else \
            "Enter: the snapshot"
    if e.screen == "timeline":
        return f"Enter: the compiled graph at step {e.at}"
    if e.screen == "ranks":
        return "Enter: the ranks of this run's collectives"
    if e.screen == "hang":
        return (f"Enter: the hang, at rank {e.at}" if e.at is not None
                else "Enter: the hang's ranks and process groups")
    return "Enter: the profiler trace"


class RunsRead:
    """The runs and verdicts read of the database as it was (its file's stamp, as the
    app's poll reads it): another state of the file is read anew. Filled by the runs
    screens' workers, so behind a lock."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._stamp: tuple[int, int] | None = None
        self._runs: tuple[RunRow, ...] | None = None
        self._verdicts: dict[int, tuple[Verdict, ...]] = {}

    def runs(self, stamp: tuple[int, int] | None) -> tuple[RunRow, ...] | None:
        with self._lock:
            return self._runs if self._kept(stamp) else None

    def verdicts(self, stamp: tuple[int, int] | None, run_id: int) -> tuple[Verdict, ...] | None:
        with self._lock:
            return self._verdicts.get(run_id) if self._kept(stamp) else None

    def _kept(self, stamp: tuple[int, int] | None) -> bool:
        """Whether what is kept was read of the file at ``stamp`` (None: not known)."""
        return stamp is not None and stamp == self._stamp

    def keep(self, stamp: tuple[int, int] | None, runs: tuple[RunRow, ...] | None = None,
             run_id: int | None = None, verdicts: tuple[Verdict, ...] | None = None) -> None:
        """Keep what was read of the file at ``stamp`` (taken before the read)."""
        with self._lock:
            if stamp != self._stamp:
                self._stamp, self._runs, self._verdicts = stamp, None, {}
            if runs is not None:
                self._runs = runs
            if run_id is not None and verdicts is not None:
                self._verdicts[run_id] = verdicts


class RunsScreen(Screen[None]):
    KEYS = KEYS
    ABOUT = ABOUT
    BINDINGS = [Binding("escape", "back", show=False)]

    def __init__(self, reader: Reader, glyphs: Glyphs, read: RunsRead | None = None) -> None:
        super().__init__()
        self.reader = reader
        self.glyphs = glyphs
        self.runs_read = read if read is not None else RunsRead()
        self.runs: tuple[RunRow, ...] = ()
        self.verdicts: dict[int, tuple[Verdict, ...]] = {}
        self.lines: tuple[RunLine, ...] = ()
        self.touched = False
        self._set_cursor = 0

    def compose(self) -> ComposeResult:
        yield TitleBar(id="title")
        yield RowList(COLUMNS, id="runs-list", ellipsis=self.glyphs.ellipsis, empty="")
        yield Static("", id="runs-detail")
        yield KeysFooter()

    def on_mount(self) -> None:
        self.query_one(TitleBar).show(f"tlview  runs: reading{self.glyphs.ellipsis}")
        self.query_one(RowList).focus()
        self.load()

    # -- reads ----------------------------------------------------------------------------

    @work(thread=True, exclusive=True, group="runs", exit_on_error=False)
    def load(self) -> None:
        stamp = file_stamp(self.reader.path)  # before reading: a write after it is read anew
        runs = self.runs_read.runs(stamp)
        if runs is None:
            runs = self.reader.run("runs", list_runs)
            if runs is None:
                return
            self.runs_read.keep(stamp, runs=runs)
        self.post_message(m.RunsListed(runs))
        for r in runs:
            got = self.runs_read.verdicts(stamp, r.run_id)
            if got is None:
                try:
                    got = self.reader.run("runs", headline, r.run_id, WORDS)
                except duckdb.Error as e:  # said, not kept: the next screen tries again
                    got = (Verdict("error", f"not read: {str(e).splitlines()[0]}", None),)
                else:
                    if got is None:
                        return
                    self.runs_read.keep(stamp, run_id=r.run_id, verdicts=got)
            self.post_message(m.VerdictsRead(r.run_id, got))

    @on(m.RunsListed)
    def on_runs_listed(self, event: m.RunsListed) -> None:
        self.runs = event.runs
        n = len(self.runs)
        self.query_one(TitleBar).show(
            f"tlview  {n} run{'s' if n != 1 else ''}: Enter opens the evidence, t the timelines")
        self._fill()

    @on(m.VerdictsRead)
    def on_verdicts_read(self, event: m.VerdictsRead) -> None:
        self.verdicts[event.run_id] = event.verdicts
        self._fill()

    def _fill(self) -> None:
        """The lines again (a run listed, its verdicts read): the cursor stays on its line,
        or, until the user moves it, goes to the first verdict."""
        before = self.current
        self.lines = run_lines(self.runs, self.verdicts, self.glyphs)
        cursor = None
        if self.touched and before is not None:
            cursor = next((i for i, ln in enumerate(self.lines) if _key(ln) == _key(before)),
                          None)
        if cursor is None:
            cursor = next((i for i, ln in enumerate(self.lines) if ln.verdict is not None), 0)
        self._set_cursor = cursor
        self.query_one(RowList).set_rows(
            [(ln.text,) for ln in self.lines], cursor=cursor,
            marks=frozenset(i for i, ln in enumerate(self.lines) if _is_run(ln)))
        self._detail()

    @property
    def current(self) -> RunLine | None:
        if not self.lines:
            return None
        return self.lines[min(self.query_one(RowList).cursor, len(self.lines) - 1)]

    def _detail(self) -> None:
        ln = self.current
        box = self.query_one("#runs-detail", Static)
        if ln is None:
            box.update("")
            return
        width = max(20, self.size.width - 2)
        if ln.verdict is None:
            text = Text(textwrap.fill(f"run {ln.run.run_id} {ln.run.name}: {ln.run.root}", width))
            text.append("\nEnter: its timelines", style="dim")
        else:
            text = Text(textwrap.fill(ln.verdict.text, width))
            if ln.verdict.evidence is not None:
                text.append("\n" + where(ln.verdict.evidence), style="dim")
        box.update(text)

    @on(RowList.Highlighted, "#runs-list")
    def _highlighted(self, event: RowList.Highlighted) -> None:
        if event.index != self._set_cursor:
            self.touched = True  # the user moved: new verdicts leave the cursor be
        self._detail()

    @on(RowList.Chosen, "#runs-list")
    def _chosen(self, event: RowList.Chosen) -> None:
        ln = self.lines[event.index]
        e = ln.verdict.evidence if ln.verdict is not None else None
        if ln.verdict is None:
            if _is_run(ln):
                self.app.post_message(m.ShowRun(ln.run.name))
        elif e is None or e.timeline_id is None:
            return
        elif e.screen == "ranks":
            self.app.post_message(app_messages.OpenRanks(e.timeline_id))
        elif e.screen == "hang":
            self.app.post_message(app_messages.OpenHang(e.timeline_id, e.at))
        else:
            self.app.post_message(app_messages.OpenTimeline(
                e.timeline_id, step=e.at if e.screen in ("snapshot", "timeline") else None))

    def action_back(self) -> None:
        self.app.post_message(app_messages.GoBack())
