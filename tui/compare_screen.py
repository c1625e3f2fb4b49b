"""Compare mode: two timelines of the same kind, aligned step by step (``c`` in the chooser).

Above, both memory curves on one axis over the aligned steps, the difference shaded;
the status line says both steps at the cursor and what each holds. Below, the aligned
steps (the cursor of the curve: moving in the list moves it on both curves), and beside
them the rows of ``peak_diff`` that explain the change of the peak (or, for two
profiler traces, which have no memory curve, ``kernel_time_diff``). One read
(``tlview.store.diff_report.comparison``, which aligns the pair in the read's own
temporary tables: the file is never written); moving is done on that snapshot.
"""

from __future__ import annotations

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Static
from tlview.store.diff_report import AlignedStep, Comparison, comparison
from tlview.store.fmt import short_bytes, signed_ns, signed_short_bytes
from tlview.store.timeline_queries import TimelineInfo

from . import messages as app_messages
from .compare_curve import CompareCurve, carried
from .glyphs import Glyphs
from .keys_footer import KeysFooter
from .reader import Reader
from .row_list import Column, RowList
from .title_bar import TitleBar

KEYS = (
    ("j k  Down Up", "next / previous aligned step (both curves follow)"),
    ("PgDn PgUp Home End", "a page / the first / the last step"),
    ("p P", "B's peak / A's peak"),
    ("n N", "next / previous step that is not the same on both sides"),
    ("Tab", "the steps <-> the list of what changed"),
    ("Esc", "back to the timelines"),
)
ABOUT = ("Steps are aligned by content (kernel, IR type, origin, shapes), not by name: "
         "same, changed (same op, other shapes), deleted (only in A), inserted (only in "
         "B). The curves: solid where both hold memory, shaded where only B holds more "
         "(or less). The list beside: the buffers live at each peak matched to each other "
         "(peak_diff); their deltas sum to the difference of the peaks.")

STEP_COLUMNS = (Column("pos", right=True), Column("how"), Column("A step", least=7, flex=True),
                Column("B step", least=7, flex=True), Column("B - A", right=True))
PEAK_COLUMNS = (Column("status"), Column("delta", right=True),
                Column("buffer A -> B", least=8, flex=True), Column("what", least=6, flex=True))
KERNEL_COLUMNS = (Column("how"), Column("delta", right=True), Column("share", right=True),
                  Column("kernel", least=8, flex=True))


def step_cells(s: AlignedStep) -> tuple[str, ...]:
    delta = s.b_live - s.a_live if s.a_live is not None and s.b_live is not None else None
    return (str(s.pos), s.method, "" if s.a_step is None else f"{s.a_step} {s.a_node or ''}",
            "" if s.b_step is None else f"{s.b_step} {s.b_node or ''}", signed_short_bytes(delta))


def peak_cells(r: dict) -> tuple[str, ...]:
    names = " -> ".join(x for x in (r["a_buffer"], r["b_buffer"]) if x)
    return (r["status"], signed_short_bytes(r["delta_bytes"]), names, r["what"] or "")


def kernel_cells(r: dict) -> tuple[str, ...]:
    k = r["a_kernel"] if r["a_kernel"] == r["b_kernel"] else \
        f"{r['a_kernel'] or '-'} -> {r['b_kernel'] or '-'}"
    share = f"{r['share'] * 100:.1f}%" if r["share"] is not None else ""
    return (r["method"], signed_ns(r["delta_ns"]), share, k)


class CompareScreen(Screen[None]):
    class Loaded(Message):
        def __init__(self, snapshot: Comparison) -> None:
            super().__init__()
            self.snapshot = snapshot

    class LoadFailed(Message):
        def __init__(self, text: str) -> None:
            super().__init__()
            self.text = text

    KEYS = KEYS
    ABOUT = ABOUT
    BINDINGS = [
        Binding("p", "peak('b')", "B peak"),
        Binding("P", "peak('a')", "A peak", key_display="P"),
        Binding("n", "next_change(1)", "next change"),
        Binding("N", "next_change(-1)", show=False),
        Binding("tab", "switch", "switch", priority=True),
        Binding("escape", "back", "back"),
    ]

    def __init__(self, reader: Reader, a: TimelineInfo, b: TimelineInfo, glyphs: Glyphs) -> None:
        super().__init__()
        self.reader = reader
        self.a, self.b = a, b
        self.glyphs = glyphs
        self.snapshot: Comparison | None = None
        self.a_curve: tuple[int, ...] = ()
        self.b_curve: tuple[int, ...] = ()

    def compose(self) -> ComposeResult:
        yield TitleBar(id="title")
        yield CompareCurve(self.glyphs, id="compare-curve")
        yield Static("", id="compare-status")
        with Horizontal(id="compare-lower"):
            yield RowList(STEP_COLUMNS, id="compare-steps", ellipsis=self.glyphs.ellipsis,
                          empty="no steps")
            yield RowList(PEAK_COLUMNS, id="compare-changes", ellipsis=self.glyphs.ellipsis,
                          empty="nothing live at either peak")
        yield KeysFooter()

    def on_mount(self) -> None:
        self.query_one(TitleBar).show(
            f"tlview  A {self.a.timeline_id} {self.a.name} vs B {self.b.timeline_id} "
            f"{self.b.name}  [{self.a.format}]")
        self.query_one("#compare-steps").border_title = "aligned steps"
        self.query_one("#compare-changes").border_title = "peak change"
        self.query_one(CompareCurve).show((), (), None, None, f"aligning{self.glyphs.ellipsis}")
        self.query_one("#compare-steps").focus()
        self.load(self.a.timeline_id, self.b.timeline_id)

    @work(thread=True, exclusive=True, group="compare", exit_on_error=False)
    def load(self, a: int, b: int) -> None:
        from tlview.store.diff import DiffError

        try:
            got = self.reader.run("compare", comparison, a, b)
        except DiffError as e:
            self.post_message(self.LoadFailed(str(e)))
            return
        if got is not None:
            self.post_message(self.Loaded(got))

    @on(LoadFailed)
    def _failed(self, event: LoadFailed) -> None:
        self.query_one(CompareCurve).show((), (), None, None, event.text)
        self.query_one("#compare-status", Static).update(event.text)

    @on(Loaded)
    def _loaded(self, event: Loaded) -> None:
        snap = self.snapshot = event.snapshot
        self.a_curve = carried([s.a_live for s in snap.steps])
        self.b_curve = carried([s.b_live for s in snap.steps])
        al = snap.alignment
        self.query_one("#compare-steps", RowList).border_title = (
            f"steps: {al.same} same, {al.changed} changed, {al.deleted} A only, "
            f"{al.inserted} B only")
        has_memory = any(s.a_live is not None or s.b_live is not None for s in snap.steps)
        self.query_one(CompareCurve).show(
            self.a_curve, self.b_curve, snap.pos_of("a", snap.a_peak.step),
            snap.pos_of("b", snap.b_peak.step),
            "" if has_memory else "no memory curve on either side: measured kernel times beside")
        changes = self.query_one("#compare-changes", RowList)
        if has_memory or not snap.kernel_rows:
            delta = (snap.b_peak.bytes - snap.a_peak.bytes
                     if snap.a_peak.bytes is not None and snap.b_peak.bytes is not None else None)
            changes.border_title = f"peak {signed_short_bytes(delta)}, by buffer"
            changes.set_rows([peak_cells(r) for r in snap.peak_rows
                              if r["status"] != "same" or r["delta_bytes"]])
        else:
            changes.columns = KERNEL_COLUMNS
            dt = (snap.b_time_ns or 0) - (snap.a_time_ns or 0)
            changes.border_title = f"kernel time: {signed_ns(dt)}"
            changes.set_rows([kernel_cells(r) for r in snap.kernel_rows])
        self.query_one("#compare-steps", RowList).set_rows(
            [step_cells(s) for s in snap.steps], cursor=0)
        self._at(0)

    def _at(self, pos: int) -> None:
        snap = self.snapshot
        if snap is None or not snap.steps:
            return
        self.query_one(CompareCurve).cursor = pos
        s = snap.steps[pos]
        a = self.a_curve[pos]
        b = self.b_curve[pos]

        def side(name: str, step: int | None, node: str | None, live: int) -> str:
            where = "-" if step is None else f"{step} {node or ''}"
            return f"{name} {where} {short_bytes(live)}"

        self.query_one("#compare-status", Static).update(
            f"{pos + 1}/{len(snap.steps)} {s.method}: {side('A', s.a_step, s.a_node, a)} | "
            f"{side('B', s.b_step, s.b_node, b)} | {signed_short_bytes(b - a)}")

    @on(RowList.Highlighted, "#compare-steps")
    def _moved(self, event: RowList.Highlighted) -> None:
        self._at(event.index)

    @on(CompareCurve.Clicked)
    def _clicked(self, event: CompareCurve.Clicked) -> None:
        self.query_one("#compare-steps", RowList).cursor = event.pos

    def action_peak(self, which: str) -> None:
        snap = self.snapshot
        if snap is None:
            return
        pos = snap.pos_of(which, (snap.a_peak if which == "a" else snap.b_peak).step)
        if pos is not None:
            self.query_one("#compare-steps", RowList).cursor = pos

    def action_next_change(self, direction: int) -> None:
        snap = self.snapshot
        if snap is None:
            return
        steps = self.query_one("#compare-steps", RowList)
        k = steps.cursor + direction
        while 0 <= k < len(snap.steps):
            if snap.steps[k].method != "same":
                steps.cursor = k
                return
            k += direction

    def action_switch(self) -> None:
        steps = self.query_one("#compare-steps")
        (self.query_one("#compare-changes") if steps.has_focus else steps).focus()

    def action_back(self) -> None:
        self.app.post_message(app_messages.GoBack())
