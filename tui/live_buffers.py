"""The buffers live at the cursor, largest first: a virtual list drawn line by line.

``at`` says ``+`` when the buffer is allocated at this step, ``-`` when this is its
last live step (it is freed after it). Up/Down select a buffer when the list has focus;
``b`` acts on the selected one.
"""

from __future__ import annotations

from rich.segment import Segment
from textual import events
from textual.binding import Binding
from textual.reactive import reactive
from textual.strip import Strip
from textual.widget import Widget
from tlview.store.fmt import short_bytes
from tlview.store.timeline_queries import LiveAt, LiveBuffer

from .glyphs import Glyphs

# (title, minimum width, right-aligned); columns that do not fit are left out from the right.
COLUMNS = (("buffer", 8, False), ("bytes", 6, True), ("at", 2, False), ("alloc", 5, True),
           ("last", 5, True), ("dtype", 8, False), ("shape", 14, False), ("producer", 12, False))


class LiveBuffers(Widget, can_focus=True):
    COMPONENT_CLASSES = {"live-buffers--header", "live-buffers--cursor", "live-buffers--empty"}
    BINDINGS = [
        Binding("down", "move(1)", show=False), Binding("up", "move(-1)", show=False),
        Binding("pagedown", "move(10)", show=False), Binding("pageup", "move(-10)", show=False),
    ]

    cursor_row: reactive[int] = reactive(0)

    def __init__(self, glyphs: Glyphs, **kw) -> None:
        super().__init__(**kw)
        self.glyphs = glyphs
        self.live: LiveAt | None = None
        self.message = ""
        self.top_at_step: int | None = None  # that step's list opens on its largest

    def from_top_at(self, step: int) -> None:
        """The list of ``step`` (shown now or when it arrives) starts at its largest
        buffer, whatever was selected before (``p``: the peak's largest first)."""
        if self.live is not None and self.live.step == step:
            self.cursor_row = 0
        else:
            self.top_at_step = step

    def show(self, live: LiveAt | None, message: str = "") -> None:
        keep = self.selected
        if live is not None and live.step == self.top_at_step:
            keep, self.top_at_step = None, None
        self.live = live
        self.message = message
        row = 0
        if keep is not None and live is not None:
            row = next((i for i, b in enumerate(live.buffers) if b.buffer == keep.buffer), 0)
        self.set_reactive(LiveBuffers.cursor_row, row)
        self.refresh()

    def select_buffer(self, name: str) -> bool:
        if self.live:
            for i, b in enumerate(self.live.buffers):
                if b.buffer == name:
                    self.cursor_row = i
                    return True
        return False

    @property
    def selected(self) -> LiveBuffer | None:
        if not self.live or not self.live.buffers:
            return None
        return self.live.buffers[min(self.cursor_row, len(self.live.buffers) - 1)]

    def action_move(self, delta: int) -> None:
        if self.live and self.live.buffers:
            self.cursor_row = max(0, min(len(self.live.buffers) - 1, self.cursor_row + delta))

    def watch_cursor_row(self) -> None:
        self.refresh()

    # -- drawing ----------------------------------------------------------------------

    @property
    def top(self) -> int:
        h = max(1, self.size.height - 1)
        return max(0, self.cursor_row - h + 1) if self.cursor_row >= h else 0

    def _cells(self, b: LiveBuffer) -> tuple[str, ...]:
        assert self.live is not None
        g = self.glyphs
        at = (g.alloc if b.alloc_step == self.live.step else "") + (
            g.freed if b.last_step == self.live.step else "")
        size = short_bytes(b.bytes) if b.bytes is not None else (b.size_expr or "?")
        return (b.buffer, size, at, str(b.alloc_step), str(b.last_step), b.dtype or "",
                b.shape or "", b.producer or "")

    def _layout(self, width: int, rows: list[tuple[str, ...]]) -> list[int]:
        """Column widths: each as wide as its widest visible cell, while they fit."""
        widths = []
        used = 0
        for i, (title, least, _) in enumerate(COLUMNS):
            w = max([len(title), least] + [len(r[i]) for r in rows])
            if i == 0:
                w = min(w, max(least, width // 3))
            if used + w > width:
                if i >= 2:
                    break
                w = max(1, width - used)
            widths.append(w)
            used += w + 1
        return widths

    def _line(self, cells: tuple[str, ...], widths: list[int]) -> str:
        out = []
        for text, w, (_, _, right) in zip(cells, widths, COLUMNS):
            if len(text) > w:
                text = text[: max(0, w - 1)] + self.glyphs.ellipsis[:1]
            out.append(text.rjust(w) if right else text.ljust(w))
        return " ".join(out)

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        base = self.rich_style
        live = self.live
        if live is None or not live.buffers:
            text = (self.message or ("no live buffers at this step" if live else "")) if y == 0 else ""
            style = base + self.get_component_rich_style("live-buffers--empty")
            return Strip([Segment(text.ljust(width)[:width], style)])
        top = self.top
        visible = live.buffers[top: top + max(1, self.size.height - 1)]
        rows = [self._cells(b) for b in visible]
        widths = self._layout(width, rows)
        if y == 0:
            head = self._line(tuple(c[0] for c in COLUMNS), widths)
            style = base + self.get_component_rich_style("live-buffers--header")
            return Strip([Segment(head.ljust(width)[:width], style)])
        i = y - 1
        if i >= len(rows):
            return Strip([Segment(" " * width, base)])
        style = base
        if top + i == self.cursor_row:
            style += self.get_component_rich_style("live-buffers--cursor")
        return Strip([Segment(self._line(rows[i], widths).ljust(width)[:width], style)])

    def on_click(self, event: events.Click) -> None:
        if self.live and event.y >= 1:
            row = self.top + event.y - 1
            if row < len(self.live.buffers):
                self.cursor_row = row
