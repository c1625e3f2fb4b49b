"""The execution order as a virtual list: only the visible rows are drawn or fetched.

Rows arrive in windows (``StepWindow`` snapshots) around the cursor; a row not fetched
yet is drawn as a placeholder and asked for. The cursor stays in the middle of the
list, so a million-step timeline costs the same per key as a ten-step one.
"""

from __future__ import annotations

from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.message import Message
from textual.reactive import reactive
from textual.strip import Strip
from textual.widget import Widget
from tlview.store.fmt import short_bytes, short_ns
from tlview.store.timeline_queries import StepRow, StepWindow

from .cell_text import node_kind
from .glyphs import Glyphs

MAX_CACHED_ROWS = 20_000


class ExecutionList(Widget, can_focus=True):
    """Step, node, kind, bytes allocated and freed, measured time, kernel."""

    COMPONENT_CLASSES = {
        "execution-list--header", "execution-list--cursor", "execution-list--pending",
        "execution-list--collective", "execution-list--peak", "execution-list--life",
    }

    cursor: reactive[int] = reactive(0)

    class NeedRows(Message):
        def __init__(self, first: int, count: int) -> None:
            super().__init__()
            self.first = first
            self.count = count

    class Clicked(Message):
        def __init__(self, step: int) -> None:
            super().__init__()
            self.step = step

    class Scrolled(Message):
        def __init__(self, delta: int) -> None:
            super().__init__()
            self.delta = delta

    def __init__(self, glyphs: Glyphs, **kw) -> None:
        super().__init__(**kw)
        self.glyphs = glyphs
        self.timeline_id: int | None = None
        self.n_steps = 0
        self.has_durations = False
        self.peak_step: int | None = None
        self.life: tuple[int, int] | None = None
        self.rows: dict[int, StepRow] = {}
        self.durations: dict[int, int] = {}  # measured time per step, read once
        self.timed = False  # a row with a measured time was seen: show the time column
        self._asked: tuple[int, int] | None = None

    # -- data -------------------------------------------------------------------------

    def reset(self, timeline_id: int | None, n_steps: int, has_durations: bool) -> None:
        self.timeline_id = timeline_id
        self.n_steps = n_steps
        self.has_durations = has_durations
        self.peak_step = None
        self.life = None
        self.timed = False
        self.rows = {}
        self.durations = {}
        self._asked = None
        self.set_reactive(ExecutionList.cursor, 0)
        self.refresh()

    def forget_rows(self) -> None:
        """Fetch again (memory figures became available)."""
        self.rows = {}
        self._asked = None
        self.refresh()

    def set_durations(self, timeline_id: int, durations: dict[int, int]) -> None:
        if timeline_id != self.timeline_id:
            return
        self.durations = durations
        self.timed = self.timed or bool(durations)
        self.refresh()

    def add_window(self, window: StepWindow) -> None:
        if window.timeline_id != self.timeline_id:
            return
        if len(self.rows) > MAX_CACHED_ROWS:
            keep = range(self.cursor - MAX_CACHED_ROWS // 4, self.cursor + MAX_CACHED_ROWS // 4)
            self.rows = {s: r for s, r in self.rows.items() if s in keep}
        for row in window.rows:
            self.rows[row.step] = row
            self.timed = self.timed or row.duration_ns is not None
        self._asked = None
        self.refresh()

    @property
    def body_height(self) -> int:
        return max(1, self.size.height - 1)

    @property
    def top(self) -> int:
        """First step shown: the cursor sits in the middle, except near either end."""
        h = self.body_height
        return max(0, min(self.cursor - (h - 1) // 2, self.n_steps - h))

    def watch_cursor(self) -> None:
        self.refresh()

    def _ask(self, first: int) -> None:
        h = self.body_height
        lo = max(0, first - 2 * h)
        hi = min(self.n_steps, first + 3 * h)
        if self._asked and self._asked[0] <= first and first + h <= self._asked[1]:
            return
        self._asked = (lo, hi)
        self.post_message(self.NeedRows(lo, hi - lo))

    # -- drawing ----------------------------------------------------------------------

    def _columns(self, width: int) -> list[tuple[str, int, bool]]:
        """(name, width, right-aligned) of the columns that fit, in priority order."""
        step_w = max(4, len(str(max(0, self.n_steps - 1))))
        cols = [("step", step_w, True), ("node", 0, False), ("kind", 6, False),
                ("+alloc", 9, True), ("-freed", 9, True)]
        if self.has_durations and self.timed:
            cols.append(("time", 8, True))
        fixed = sum(w for _, w, _ in cols) + len(cols)
        room = width - fixed
        for least_wanted in ("kind", "-freed"):  # a readable node name comes first
            if room >= 14:
                break
            i = next(i for i, c in enumerate(cols) if c[0] == least_wanted)
            room += cols.pop(i)[1] + 1
        if room >= 30:
            node_w = min(28, room // 2)
            cols[1] = ("node", node_w, False)
            cols.append(("kernel", room - node_w - 1, False))
        else:
            cols[1] = ("node", max(6, room), False)
        return cols

    def _cells(self, row: StepRow, cols: list[tuple[str, int, bool]]) -> list[str]:
        g = self.glyphs
        values = {
            "step": str(row.step), "node": row.node,
            "kind": node_kind(row.node_class, row.ir_type),
            "+alloc": "" if row.alloc_bytes is None else
            (g.alloc + short_bytes(row.alloc_bytes) if row.alloc_bytes else ""),
            "-freed": "" if row.freed_bytes is None else
            (g.freed + short_bytes(row.freed_bytes) if row.freed_bytes else ""),
            "time": short_ns(self.durations.get(row.step, row.duration_ns)), "kernel": row.kernel or "",
        }
        return [values[name] for name, _, _ in cols]

    def _line(self, cells: list[str], cols: list[tuple[str, int, bool]]) -> str:
        out = []
        for text, (_, w, right) in zip(cells, cols):
            if len(text) > w:
                text = text[: max(0, w - 1)] + self.glyphs.ellipsis[:1] if w > 1 else text[:w]
            out.append(text.rjust(w) if right else text.ljust(w))
        return " ".join(out)

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        cols = self._columns(width)
        base = self.rich_style
        if y == 0:
            labels = {"-freed": self.glyphs.freed + "freed", "+alloc": self.glyphs.alloc + "alloc"}
            head = self._line([labels.get(n, n) for n, _, _ in cols], cols)
            header = base + self.get_component_rich_style("execution-list--header")
            return Strip([Segment(head.ljust(width)[:width], header)])
        step = self.top + y - 1
        if step >= self.n_steps or self.timeline_id is None:
            return Strip([Segment(" " * width, base)])
        row = self.rows.get(step)
        style: Style = base
        if row is None:
            # Not from inside rendering: a message posted there is sent as the app's.
            self.call_later(self._ask, self.top)
            text = self._line([str(step), self.glyphs.ellipsis], cols[:2])
            style += self.get_component_rich_style("execution-list--pending")
        else:
            text = self._line(self._cells(row, cols), cols)
            if node_kind(row.node_class, row.ir_type) in ("coll", "wait"):
                style += self.get_component_rich_style("execution-list--collective")
            if self.life and self.life[0] <= step <= self.life[1]:
                style += self.get_component_rich_style("execution-list--life")
            if step == self.peak_step:
                style += self.get_component_rich_style("execution-list--peak")
        if step == self.cursor:
            style += self.get_component_rich_style("execution-list--cursor")
        return Strip([Segment(text.ljust(width)[:width], style)])

    # -- mouse ------------------------------------------------------------------------

    def on_click(self, event: events.Click) -> None:
        if event.y >= 1 and self.n_steps:
            step = self.top + event.y - 1
            if step < self.n_steps:
                self.post_message(self.Clicked(step))

    def on_mouse_scroll_down(self, event: events.MouseScrollDown) -> None:
        event.stop()
        self.post_message(self.Scrolled(3))

    def on_mouse_scroll_up(self, event: events.MouseScrollUp) -> None:
        event.stop()
        self.post_message(self.Scrolled(-3))
