"""The memory curve of the whole timeline as a sparkline that fits the width.

Each column is the largest live_bytes among the steps it covers. The row under the
bars marks the cursor, the peak, and (after ``b``) a buffer's lifetime. The scale is at
the left: the top of the bars is the peak, the bottom 0.
"""

from __future__ import annotations

from rich.segment import Segment
from textual import events
from textual.message import Message
from textual.reactive import reactive
from textual.strip import Strip
from textual.widget import Widget
from tlview.store.fmt import short_bytes
from tlview.store.timeline_queries import CurveSummary

from .glyphs import Glyphs

AXIS_WIDTH = 10  # "25.0 GiB" and the axis glyph


class MemoryCurve(Widget):
    COMPONENT_CLASSES = {
        "memory-curve--bar", "memory-curve--cursor", "memory-curve--peak",
        "memory-curve--life", "memory-curve--marker", "memory-curve--message",
    }

    cursor: reactive[int] = reactive(0)

    class Resized(Message):
        def __init__(self, width: int) -> None:
            super().__init__()
            self.width = width

    class Clicked(Message):
        def __init__(self, step: int) -> None:
            super().__init__()
            self.step = step

    def __init__(self, glyphs: Glyphs, **kw) -> None:
        super().__init__(**kw)
        self.glyphs = glyphs
        self.curve: CurveSummary | None = None
        self.life: tuple[int, int] | None = None
        self.message = ""

    def show(self, curve: CurveSummary | None, message: str = "") -> None:
        self.curve = curve
        self.message = message
        self.refresh()

    def show_life(self, life: tuple[int, int] | None) -> None:
        self.life = life
        self.refresh()

    def watch_cursor(self) -> None:
        self.refresh()

    @property
    def bar_width(self) -> int:
        """Columns of bars: the width less the scale."""
        return max(1, self.size.width - AXIS_WIDTH)

    def on_resize(self, event: events.Resize) -> None:
        self.post_message(self.Resized(self.bar_width))

    # -- geometry ---------------------------------------------------------------------

    def _column_of(self, step: int, width: int) -> int:
        """Leftmost screen column showing ``step``."""
        assert self.curve is not None
        cols = len(self.curve.buckets)
        bucket = step * cols // max(1, self.curve.n_steps)
        return min(width - 1, (bucket * width + cols - 1) // cols)

    def _step_at(self, x: int, width: int) -> int:
        assert self.curve is not None
        cols = len(self.curve.buckets)
        bucket = x * cols // max(1, width)
        return min(self.curve.n_steps - 1, -(-bucket * self.curve.n_steps // cols))

    # -- drawing ----------------------------------------------------------------------

    def render_line(self, y: int) -> Strip:
        base = self.rich_style
        strip = self._render_bars(y)
        if self.curve is None or not self.curve.has_liveness or self.curve.n_steps == 0:
            return strip
        rows = max(1, self.size.height - 1)
        label = ""
        if y == 0:
            label = short_bytes(self.curve.peak_bytes or 0)
        elif y == rows - 1:
            label = "0"
        axis = self.glyphs.axis if y < rows else " "
        gutter = Segment(label.rjust(AXIS_WIDTH - 1)[-(AXIS_WIDTH - 1):] + axis,
                         base + self.get_component_rich_style("memory-curve--marker"))
        return Strip([gutter, *strip])

    def _render_bars(self, y: int) -> Strip:
        width = self.bar_width
        base = self.rich_style
        curve = self.curve
        if curve is None or not curve.has_liveness or curve.n_steps == 0:
            text = self.message if y == 0 else ""
            style = base + self.get_component_rich_style("memory-curve--message")
            full = self.size.width
            return Strip([Segment(text.ljust(full)[:full], style)])
        rows = max(1, self.size.height - 1)
        cols = len(curve.buckets)
        top = max(curve.peak_bytes or 0, 1)
        cursor_col = self._column_of(self.cursor, width)
        peak_col = self._column_of(curve.peak_step or 0, width)
        life_cols = None
        if self.life:
            life_cols = (self._column_of(self.life[0], width), self._column_of(self.life[1], width))
        if y == rows:
            return self._marker_line(width, cursor_col, peak_col, life_cols)
        bars = self.glyphs.bars
        level_below = (rows - 1 - y) * 8
        segments = []
        bar = base + self.get_component_rich_style("memory-curve--bar")
        for x in range(width):
            value = curve.buckets[x * cols // width]
            level = round(value / top * rows * 8)
            if value and not level:
                level = 1
            cell = bars[max(0, min(8, level - level_below))]
            style = bar
            if life_cols and life_cols[0] <= x <= life_cols[1]:
                style += self.get_component_rich_style("memory-curve--life")
            if x == peak_col:
                style += self.get_component_rich_style("memory-curve--peak")
            if x == cursor_col:
                style += self.get_component_rich_style("memory-curve--cursor")
            segments.append(Segment(cell, style))
        return Strip(segments).simplify()

    def _marker_line(self, width: int, cursor_col: int, peak_col: int,
                     life_cols: tuple[int, int] | None) -> Strip:
        g = self.glyphs
        cells = [" "] * width
        if life_cols:
            for x in range(life_cols[0], life_cols[1] + 1):
                cells[x] = g.life
        cells[peak_col] = g.peak
        cells[cursor_col] = g.cursor
        style = self.rich_style + self.get_component_rich_style("memory-curve--marker")
        return Strip([Segment("".join(cells), style)])

    def on_click(self, event: events.Click) -> None:
        if self.curve and self.curve.n_steps and event.x >= AXIS_WIDTH:
            self.post_message(self.Clicked(self._step_at(event.x - AXIS_WIDTH, self.bar_width)))
