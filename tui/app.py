"""The tlview app: opens the database and routes between screens.

The chooser lists the timelines; a compiled timeline opens on a :class:`TimelineScreen`,
a profiler trace on a :class:`ProfilerScreen`, a CUDA allocator snapshot on a
:class:`SnapshotScreen`; screens ask for one another through
messages (``OpenTimeline``, ``GoBack``) and the app alone pushes and pops them. The
database is read through a :class:`Reader` that keeps no file open while idle, and a
cheap poll (the file's size and time, no open) notices when an ingest has landed, so
new timelines appear in the chooser while the app stays open.
"""

from __future__ import annotations

import duckdb
from rich.text import Text
from textual import on, work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.reactive import reactive
from textual.widgets import Static
from textual.worker import Worker, WorkerState
from tlview.store import DatabaseLocked, SchemaError
from tlview.store import snapshot_queries as sq
from tlview.store import timeline_queries as q
from tlview.store.timeline_queries import DataVersion, TimelineInfo, TimelinePeak

from . import messages as m
from .chooser import ChooserScreen
from .compare_screen import CompareScreen
from .glyphs import ASCII, Glyphs, glyphs
from .hang_screen import HangScreen
from .help import HelpScreen
from .keys_footer import KeysFooter
from .profiler_screen import ProfilerScreen
from .ranks_screen import RanksScreen
from .reader import Reader, file_stamp
from .runs_messages import OpenRuns, ShowRun
from .runs_screen import RunsRead, RunsScreen
from .snapshot_screen import SnapshotScreen
from .timeline_screen import TimelineScreen
from .title_bar import TitleBar

OPEN_ERRORS = (FileNotFoundError, DatabaseLocked, SchemaError, duckdb.Error)
POLL_S = 1.0  # how often the file's size and time are looked at
SNAPSHOT_FORMAT = "cuda_snapshot"
HANG_FORMATS = ("flight_recorder", "stack_dump")


def one_sentence(e: BaseException) -> str:
    text = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
    return text if isinstance(e, OPEN_ERRORS[:3]) else f"{type(e).__name__}: {text}"


def read_timelines(db) -> tuple:
    """Everything the chooser needs, in one read (snapshots' peaks come after: see
    ``load_timelines``)."""
    return (q.list_timelines(db), q.timeline_peaks(db), q.has_node_times(db),
            q.data_version(db))


class TlviewApp(App[int]):
    CSS_PATH = "tlview.tcss"
    TITLE = "tlview"
    ENABLE_COMMAND_PALETTE = False
    BINDINGS = [
        Binding("t", "timelines", "timelines"),
        Binding("question_mark", "help", "help", key_display="?"),
        Binding("q", "quit", "quit"),
        Binding("ctrl+c", "quit", show=False, priority=True),
    ]

    db_notice: reactive[str] = reactive("")  # "ingest in progress", in every TitleBar

    def __init__(self, db_path: str, *, ascii_only: bool | None = None,
                 poll_s: float = POLL_S, runs_first: bool = False) -> None:
        self.glyphs: Glyphs = glyphs(ascii_only)  # before the CSS is read (its borders)
        super().__init__()
        self.runs_first = runs_first  # `tlview DB`: the runs screen first (RunsScreen)
        self.db_path = db_path
        self.reader = Reader(db_path, on_wait=self._waiting)
        self.poll_s = poll_s
        self.timelines: tuple[TimelineInfo, ...] = ()
        self.peaks: dict[int, TimelinePeak] = {}
        self.has_durations = False
        self.version: DataVersion | None = None
        self.stamp = file_stamp(db_path)
        self.opened = False
        self.runs_read = RunsRead()  # the runs screen's reads, while the file is unchanged

    def get_css_variables(self) -> dict[str, str]:
        """The theme's, and the border kinds of tlview.tcss: ASCII under --ascii."""
        ascii_only = getattr(self, "glyphs", None) is ASCII
        return {**super().get_css_variables(),
                "frame": "ascii" if ascii_only else "solid",
                "frame-side": "ascii" if ascii_only else "vkey"}

    def _waiting(self, text: str | None) -> None:
        """From a reader's thread: the file is locked by a writer (text), or free again."""
        self.post_message(m.DatabaseWaiting(text))

    # -- layout -------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield TitleBar(id="title")
        yield Static("", id="message")
        yield KeysFooter()

    def on_mount(self) -> None:
        self.show_message(f"opening {self.db_path}{self.glyphs.ellipsis}")
        self.load_timelines(first=True)
        self.set_interval(self.poll_s, self.poll)

    def show_message(self, text: str) -> None:
        msg = self.query_one("#message", Static)
        msg.update(Text(text))  # plain text: a path with [brackets] is not markup

    def on_unmount(self) -> None:
        self.reader.close()

    # -- the database -------------------------------------------------------------------

    @work(thread=True, exclusive=True, group="open", exit_on_error=False)
    def load_timelines(self, first: bool = False) -> None:
        self.stamp = file_stamp(self.db_path)
        try:
            got = self.reader.run("meta", read_timelines)
        except OPEN_ERRORS as e:
            if first:
                self.post_message(m.Failed(one_sentence(e), fatal=True))
            return
        if got is not None:
            self.post_message(m.TimelinesLoaded(*got))
            # A snapshot's peak is its allocated peak at its trace entry: a scan of its
            # curve (slow at millions of entries), so the chooser and the first screen do not wait.
            if any(t.format == SNAPSHOT_FORMAT for t in got[0]):
                peaks = self.reader.run("meta", sq.snapshot_peaks)
                if peaks:
                    self.post_message(m.PeaksLoaded(peaks))

    def poll(self) -> None:
        """Read the timelines again when the file changed on disk (an ingest wrote it)."""
        stamp = file_stamp(self.db_path)
        if self.opened and stamp is not None and stamp != self.stamp:
            self.stamp = stamp
            self.load_timelines()

    @on(m.DatabaseWaiting)
    def on_database_waiting(self, event: m.DatabaseWaiting) -> None:
        self.db_notice = event.text or ""
        if not self.opened and event.text:
            self.show_message(f"{self.db_path}: {event.text}")

    @on(m.Failed)
    def on_failed(self, event: m.Failed) -> None:
        if event.fatal:
            self.show_message(event.text + "\n\nq quits.")
        else:
            self.notify(event.text, severity="error", timeout=6)

    @on(m.TimelinesLoaded)
    def on_timelines_loaded(self, event: m.TimelinesLoaded) -> None:
        before = {t.timeline_id for t in self.timelines}
        changed = self.version != event.version
        self.timelines, self.peaks = event.timelines, event.peaks
        self.has_durations, self.version = event.has_durations, event.version
        if not self.opened:
            self.opened = True
            self.show_message("")
            if not self.timelines:
                self.show_message(
                    f"{self.db_path} holds no timelines yet: add one with "
                    f"`tlview ingest DUMP --db {self.db_path}`.\n\nq quits.")
                return
            if len(self.timelines) == 1:
                # The one timeline opens at once; the chooser is made when first asked
                # for (Esc, t: show_chooser): made beneath, it cost the first screen
                # ~0.2 s of CPU and twice that before the timeline was drawn.
                self.open_timeline(self.timelines[0].timeline_id)
                return
            self.push_screen(ChooserScreen(self.timelines, self.peaks))
            if self.runs_first and any(t.run_id is not None for t in self.timelines):
                self.push_screen(RunsScreen(self.reader, self.glyphs, self.runs_read))  # first
            return
        if not changed:
            return
        chooser = self.chooser
        if chooser is not None:
            chooser.update_timelines(self.timelines, self.peaks)
        elif self.timelines and len(self.screen_stack) == 1:  # none before: the message
            self.show_message("")
            self.push_screen(ChooserScreen(self.timelines, self.peaks))
        new = [t for t in self.timelines if t.timeline_id not in before]
        if new:
            names = ", ".join(t.name for t in new[:3]) + (" ..." if len(new) > 3 else "")
            self.notify(f"{len(new)} new timeline{'s' if len(new) != 1 else ''}: {names} "
                        "(t lists them)", timeout=8)

    @on(m.PeaksLoaded)
    def on_peaks_loaded(self, event: m.PeaksLoaded) -> None:
        self.peaks = {**self.peaks, **event.peaks}
        chooser = self.chooser
        if chooser is not None:
            chooser.update_timelines(self.timelines, self.peaks)

    @property
    def chooser(self) -> ChooserScreen | None:
        return next((s for s in self.screen_stack if isinstance(s, ChooserScreen)), None)

    # -- routing ------------------------------------------------------------------------

    @on(m.OpenTimeline)
    def on_open_timeline(self, event: m.OpenTimeline) -> None:
        self.open_timeline(event.timeline_id, step=event.step, seq=event.seq,
                           kernels=event.kernels, why=event.why)

    def open_timeline(self, timeline_id: int, *, step: int | None = None, seq: int | None = None,
                      kernels: tuple[int, ...] = (), why: str = "") -> None:
        info = next((t for t in self.timelines if t.timeline_id == timeline_id), None)
        if info is None:
            self.notify(f"timeline {timeline_id} is not in the database", severity="error")
            return
        if info.format == SNAPSHOT_FORMAT:
            self.push_screen(SnapshotScreen(self.reader, info, self.glyphs, event_index=step))
        elif info.format in HANG_FORMATS:  # a rank's Flight Recorder or stack dump
            self.push_screen(HangScreen(self.reader, self.glyphs, timeline_id=timeline_id))
        elif info.is_measured:
            self.push_screen(ProfilerScreen(self.reader, info, self.glyphs, seq=seq,
                                            kernels=kernels, why=why))
        else:
            self.push_screen(TimelineScreen(self.reader, info, self.glyphs,
                                            has_durations=self.has_durations, step=step or 0))
            if step is not None:
                self.notify(f"{info.title or info.name}: step {step}")

    @on(m.OpenRanks)
    def on_open_ranks(self, event: m.OpenRanks) -> None:
        self.push_screen(RanksScreen(self.reader, self.glyphs, timeline_id=event.timeline_id))

    @on(m.OpenHang)
    def on_open_hang(self, event: m.OpenHang) -> None:
        self.push_screen(HangScreen(self.reader, self.glyphs, timeline_id=event.timeline_id,
                                    rank=event.rank))

    @on(OpenRuns)
    def on_open_runs(self) -> None:
        self.push_screen(RunsScreen(self.reader, self.glyphs, self.runs_read))

    @on(ShowRun)
    def on_show_run(self, event: ShowRun) -> None:
        self.action_timelines()
        if self.chooser is not None:
            self.chooser.show_run(event.name)

    @on(m.CompareTimelines)
    def on_compare_timelines(self, event: m.CompareTimelines) -> None:
        infos = {t.timeline_id: t for t in self.timelines}
        a, b = infos.get(event.a), infos.get(event.b)
        if a is None or b is None:
            self.notify("that timeline is not in the database", severity="error")
            return
        self.push_screen(CompareScreen(self.reader, a, b, self.glyphs))

    @on(m.GoBack)
    def on_go_back(self) -> None:
        if len(self.screen_stack) > 2:  # never below the chooser
            self.pop_screen()
        elif len(self.screen_stack) == 2 and self.chooser is None:
            self.show_chooser()  # back from the one timeline, opened without it

    def show_chooser(self) -> None:
        """The chooser, made now where the one timeline opened without it: what was
        shown above it is left, as Esc and t leave it."""
        while len(self.screen_stack) > 1:
            self.pop_screen()
        self.push_screen(ChooserScreen(self.timelines, self.peaks))

    def action_timelines(self) -> None:
        if self.chooser is None:
            if self.timelines and len(self.screen_stack) > 1:
                self.show_chooser()
            return
        while not isinstance(self.screen, ChooserScreen):
            self.pop_screen()

    def action_help(self) -> None:
        screen = self.screen
        title = {"ChooserScreen": "the timelines", "TimelineScreen": "a compiled timeline",
                 "ProfilerScreen": "a profiler trace",
                 "SnapshotScreen": "a CUDA allocator snapshot",
                 "HoldersScreen": "who holds the memory",
                 "RanksScreen": "the collectives across ranks",
                 "HangScreen": "a hang: the ranks' Flight Recorder dumps",
                 "RunsScreen": "the runs",
                 "CompareScreen": "two timelines compared"}.get(type(screen).__name__, "")
        self.push_screen(HelpScreen(title, getattr(screen, "KEYS", ()),
                                    getattr(screen, "ABOUT", "")))

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.state == WorkerState.ERROR and event.worker.error is not None:
            self.post_message(m.Failed(one_sentence(event.worker.error),
                                       fatal=event.worker.group == "open" and not self.opened))


def run_app(db_path: str, ascii_only: bool | None = None) -> int:
    app = TlviewApp(db_path, ascii_only=ascii_only, runs_first=True)
    app.run()
    return app.return_code or 0
