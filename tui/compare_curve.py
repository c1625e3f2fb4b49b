"""Two memory curves on one axis, aligned step by step, the difference shaded.

Each column covers a run of aligned positions and shows, for each timeline, the most it
held there (a position missing on one side carries that side's value before it). The
scale runs from 0, or from the least both hold where that is over half the peak (so that
a small difference on a large footprint shows), to the higher peak. The
part both hold is drawn solid; above it, what only B holds is shaded one way (``B
more``), what only A holds another (``B less``): glyphs differ, not only colors. The row
under the bars marks the cursor and each timeline's peak (``A``, ``B``).
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.segment import Segment
from textual import events
from textual.message import Message
from textual.reactive import reactive
from textual.strip import Strip
from textual.widget import Widget
from tlview.store.fmt import short_bytes

from .glyphs import Glyphs

AXIS_WIDTH = 10


def carried(values: Sequence[int | None]) -> tuple[int, ...]:
    """None (no step on this side) takes the value before it; 0 at the start."""
    out = []
    last = 0
    for v in values:
        if v is not None:
            last = v
        out.append(last)
    return tuple(out)


class CompareCurve(Widget):
    COMPONENT_CLASSES = {"compare-curve--both", "compare-curve--more", "compare-curve--less",
                         "compare-curve--cursor", "compare-curve--marker",
                         "compare-curve--message"}

    cursor: reactive[int] = reactive(0)

    class Clicked(Message):
        def __init__(self, pos: int) -> None:
            super().__init__()
            self.pos = pos

    def __init__(self, glyphs: Glyphs, **kw) -> None:
        super().__init__(**kw)
        self.glyphs = glyphs
        self.a: tuple[int, ...] = ()
        self.b: tuple[int, ...] = ()
        self.a_peak_pos: int | None = None
        self.b_peak_pos: int | None = None
        self.message = ""

    def show(self, a: tuple[int, ...], b: tuple[int, ...], a_peak_pos: int | None,
             b_peak_pos: int | None, message: str = "") -> None:
        self.a, self.b = a, b
        self.a_peak_pos, self.b_peak_pos = a_peak_pos, b_peak_pos
        self.message = message
        self.refresh()

    def watch_cursor(self) -> None:
        self.refresh()

    @property
    def bar_width(self) -> int:
        return max(1, self.size.width - AXIS_WIDTH)

    def _column_of(self, pos: int, width: int) -> int:
        """The leftmost column showing ``pos``: columns share positions when there are
        more positions than columns, else each position is as wide as they allow."""
        n = max(1, len(self.a))
        if n >= width:
            return min(width - 1, pos * width // n)
        return min(width - 1, pos * (width // n))

    def _range_of(self, x: int, width: int) -> range:
        n = len(self.a)
        if n >= width:
            return range(x * n // width, max(x * n // width + 1, (x + 1) * n // width))
        pos = x // (width // max(1, n))
        return range(pos, pos + 1) if pos < n else range(0)

    def render_line(self, y: int) -> Strip:
        base = self.rich_style
        width = self.bar_width
        if not self.a or not (max(self.a) or max(self.b)):
            text = (self.message or "no memory curve on either side") if y == 0 else ""
            style = base + self.get_component_rich_style("compare-curve--message")
            return Strip([Segment(text.ljust(self.size.width)[:self.size.width], style)])
        rows = max(1, self.size.height - 1)
        top = max(max(self.a), max(self.b), 1)
        # the bottom of the scale: 0, or the least both hold when that is over half the top
        # (a leak of 4 MiB on 240 MiB stays visible in six rows)
        low = min(min(self.a), min(self.b))
        floor = low if low > top // 2 else 0
        span_bytes = max(1, top - floor)
        marker = base + self.get_component_rich_style("compare-curve--marker")
        label = short_bytes(top) if y == 0 else (
            (short_bytes(floor) if floor else "0") if y == rows - 1 else "")
        gutter = Segment(label.rjust(AXIS_WIDTH - 1)[-(AXIS_WIDTH - 1):]
                         + (self.glyphs.axis if y < rows else " "), marker)
        cursor_col = self._column_of(self.cursor, width)
        if y >= rows:
            return Strip([gutter, self._marker_line(width, cursor_col, marker)])
        g = self.glyphs
        styles = {k: base + self.get_component_rich_style(f"compare-curve--{k}")
                  for k in ("both", "more", "less")}
        cursor = self.get_component_rich_style("compare-curve--cursor")
        below = (rows - 1 - y) * 8
        segments = [gutter]
        for x in range(width):
            span = self._range_of(x, width)
            if not span:
                segments.append(Segment(" ", base))
                continue
            av = max(self.a[i] for i in span)
            bv = max(self.b[i] for i in span)
            la, lb = (round((v - floor) / span_bytes * rows * 8) or (1 if v > floor else 0)
                      for v in (av, bv))
            common = max(0, min(8, min(la, lb) - below))
            high = max(0, min(8, max(la, lb) - below))
            kind = "more" if lb > la else "less"
            if common >= 4 or (common and high == common):  # mostly held by both
                cell, style = g.bars[common], styles["both"]
            elif high:
                cell, style = (g.shades[2] if kind == "more" else g.shades[1]), styles[kind]
            else:
                cell, style = " ", base
            if x == cursor_col:
                style += cursor
            segments.append(Segment(cell, style))
        return Strip(segments).simplify()

    def _marker_line(self, width: int, cursor_col: int, style) -> Segment:
        cells = [" "] * width
        for pos, mark in ((self.a_peak_pos, "A"), (self.b_peak_pos, "B")):
            if pos is not None:
                col = self._column_of(pos, width)
                cells[col] = "*" if cells[col] != " " else mark
        cells[cursor_col] = self.glyphs.cursor
        return Segment("".join(cells), style)

    def on_click(self, event: events.Click) -> None:
        if self.a and event.x >= AXIS_WIDTH:
            span = self._range_of(event.x - AXIS_WIDTH, self.bar_width)
            if span:
                self.post_message(self.Clicked(span.start))
