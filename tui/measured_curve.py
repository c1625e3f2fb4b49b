"""The allocator's measured memory over the lanes' window, on the same columns.

From the trace's ``[memory]`` events (``measured_memory.total_allocated``): per column,
the highest total during it. The scale is at the left (the window's highest total at
the top, 0 at the bottom), in the lanes' label gutter, so columns line up with the lanes.
"""

from __future__ import annotations

from rich.segment import Segment
from textual.strip import Strip
from textual.widget import Widget
from tlview.store.fmt import short_bytes
from tlview.store.profile_queries import MemoryWindow

from .cell_text import fit
from .glyphs import Glyphs
from .kernel_lanes import LABEL_WIDTH


class MeasuredCurve(Widget):
    COMPONENT_CLASSES = {"measured-curve--bar", "measured-curve--axis",
                         "measured-curve--cursor", "measured-curve--message"}

    def __init__(self, glyphs: Glyphs, **kw) -> None:
        super().__init__(**kw)
        self.glyphs = glyphs
        self.window: MemoryWindow | None = None
        self.cursor_col = 0
        self.message = ""

    def show(self, window: MemoryWindow | None, message: str = "") -> None:
        self.window = window
        self.message = message
        self.refresh()

    def set_cursor(self, col: int) -> None:
        self.cursor_col = col
        self.refresh()

    @property
    def top(self) -> int:
        values = [v for v in (self.window.values if self.window else ()) if v is not None]
        return max(values) if values else 0

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        base = self.rich_style
        win = self.window
        rows = max(1, self.size.height)
        if win is None or not any(v is not None for v in win.values):
            text = self.message if y == 0 else ""
            style = base + self.get_component_rich_style("measured-curve--message")
            return Strip([Segment(fit(text, width).ljust(width), style)])
        top = max(1, self.top)
        label = ("memory " + short_bytes(self.top)) if y == 0 else "0" if y == rows - 1 else ""
        axis = base + self.get_component_rich_style("measured-curve--axis")
        segments = [Segment(label.rjust(LABEL_WIDTH - 1)[-(LABEL_WIDTH - 1):]
                            + self.glyphs.axis, axis)]
        bar = base + self.get_component_rich_style("measured-curve--bar")
        cursor = self.get_component_rich_style("measured-curve--cursor")
        bars = self.glyphs.bars
        level_below = (rows - 1 - y) * 8
        for c in range(max(0, width - LABEL_WIDTH)):
            v = win.values[c] if c < len(win.values) else None
            level = 0 if v is None else round(v / top * rows * 8)
            if v and not level:
                level = 1
            cell = bars[max(0, min(8, level - level_below))]
            segments.append(Segment(cell, bar + cursor if c == self.cursor_col else bar))
        return Strip(segments).simplify()
