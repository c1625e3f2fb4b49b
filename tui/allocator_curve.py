"""A snapshot's allocated and reserved bytes over its trace entries, fitted to the width.

Each column is the largest of the events it covers (``allocator_curve``, squeezed by the
store): allocated bytes as bars, the reserved bytes above them (reserved − allocated:
cached in segments, not in use) as a light shade. The scale is at the left: the top is
the highest reserved, the bottom 0. The row under the bars marks the cursor, the
allocated peak (``P``) and each OOM (``!``).
"""

from __future__ import annotations

from rich.segment import Segment
from textual import events
from textual.message import Message
from textual.strip import Strip
from textual.widget import Widget
from tlview.store.fmt import short_bytes
from tlview.store.snapshot_queries import SnapshotCurve

from .glyphs import Glyphs

AXIS_WIDTH = 10  # "1000 MiB" and the axis glyph
OOM_MARK = "!"


def column_of(event: int, n_events: int, buckets: int, width: int) -> int:
    """Leftmost screen column showing ``event`` (-1: the window's start) when the
    ``n_events + 1`` curve rows are squeezed into ``buckets`` stretched over ``width``."""
    bucket = (event + 1) * buckets // max(1, n_events + 1)
    return max(0, min(width - 1, (bucket * width + buckets - 1) // max(1, buckets)))


def event_at(x: int, n_events: int, buckets: int, width: int) -> int:
    """The first event of the bucket drawn at screen column ``x``."""
    bucket = x * buckets // max(1, width)
    return min(n_events - 1, -(-bucket * (n_events + 1) // max(1, buckets)) - 1)


class AllocatorCurve(Widget):
    COMPONENT_CLASSES = {
        "allocator-curve--allocated", "allocator-curve--reserved", "allocator-curve--cursor",
        "allocator-curve--peak", "allocator-curve--axis", "allocator-curve--marker",
        "allocator-curve--message",
    }

    class Resized(Message):
        def __init__(self, width: int) -> None:
            super().__init__()
            self.width = width

    class Clicked(Message):
        def __init__(self, event_index: int) -> None:
            super().__init__()
            self.event_index = event_index

    def __init__(self, glyphs: Glyphs, **kw) -> None:
        super().__init__(**kw)
        self.glyphs = glyphs
        self.curve: SnapshotCurve | None = None
        self.n_events = 0
        self.top = 0  # bytes at the top of the scale
        self.peak_event = -1
        self.ooms: tuple[int, ...] = ()
        self.cursor = -1
        self.message = ""

    def show(self, curve: SnapshotCurve | None, n_events: int = 0, top: int = 0,
             peak_event: int = -1, ooms: tuple[int, ...] = (), message: str = "") -> None:
        self.curve, self.n_events, self.top = curve, n_events, top
        self.peak_event, self.ooms, self.message = peak_event, ooms, message
        self.refresh()

    def set_cursor(self, event_index: int) -> None:
        if event_index != self.cursor:
            self.cursor = event_index
            self.refresh()

    @property
    def bar_width(self) -> int:
        """Columns of bars: the width less the scale."""
        return max(1, self.size.width - AXIS_WIDTH)

    def on_resize(self, event: events.Resize) -> None:
        self.post_message(self.Resized(self.bar_width))

    def _col(self, event: int) -> int:
        assert self.curve is not None
        return column_of(event, self.n_events, len(self.curve.allocated), self.bar_width)

    # -- drawing ------------------------------------------------------------------------

    def render_line(self, y: int) -> Strip:
        base = self.rich_style
        curve = self.curve
        if curve is None or not curve.allocated:
            text = self.message if y == 0 else ""
            style = base + self.get_component_rich_style("allocator-curve--message")
            width = self.size.width
            return Strip([Segment(text.ljust(width)[:width], style)])
        rows = max(1, self.size.height - 1)
        label = short_bytes(self.top) if y == 0 else "0" if y == rows - 1 else ""
        if y == rows // 2 and 0 < y < rows - 1:
            label = short_bytes(self.top // 2)
        axis = self.glyphs.axis if y < rows else " "
        gutter = Segment(label.rjust(AXIS_WIDTH - 1)[-(AXIS_WIDTH - 1):] + axis,
                         base + self.get_component_rich_style("allocator-curve--axis"))
        if y >= rows:
            return Strip([gutter, *self._marker_line()])
        return Strip([gutter, *self._bars(y, rows)]).simplify()

    def _bars(self, y: int, rows: int) -> list[Segment]:
        assert self.curve is not None
        width = self.bar_width
        base = self.rich_style
        alloc_s = base + self.get_component_rich_style("allocator-curve--allocated")
        res_s = base + self.get_component_rich_style("allocator-curve--reserved")
        peak_s = self.get_component_rich_style("allocator-curve--peak")
        cursor_s = self.get_component_rich_style("allocator-curve--cursor")
        bars, shade = self.glyphs.bars, self.glyphs.shades[1]
        top = max(1, self.top)
        n = len(self.curve.allocated)
        peak_col, cursor_col = self._col(self.peak_event), self._col(self.cursor)
        level_below = (rows - 1 - y) * 8
        out = []
        for x in range(width):
            b = x * n // width
            a, r = self.curve.allocated[b], self.curve.reserved[b]
            level = round(a / top * rows * 8)
            if a and not level:
                level = 1
            r_level = round(r / top * rows * 8)
            fill = level - level_below
            if fill > 0:
                cell, style = bars[min(8, fill)], alloc_s
            elif r_level - level_below > 0:
                cell, style = shade, res_s
            else:
                cell, style = " ", base
            if x == peak_col:
                style += peak_s
            if x == cursor_col:
                style += cursor_s
            out.append(Segment(cell, style))
        return out

    def _marker_line(self) -> list[Segment]:
        g = self.glyphs
        width = self.bar_width
        cells = [" "] * width
        for o in self.ooms:
            cells[self._col(o)] = OOM_MARK
        cells[self._col(self.peak_event)] = g.peak
        cells[self._col(self.cursor)] = g.cursor
        style = self.rich_style + self.get_component_rich_style("allocator-curve--marker")
        return [Segment("".join(cells), style)]

    def on_click(self, event: events.Click) -> None:
        if self.curve is not None and self.n_events and event.x >= AXIS_WIDTH:
            self.post_message(self.Clicked(event_at(event.x - AXIS_WIDTH, self.n_events,
                                                    len(self.curve.allocated),
                                                    self.bar_width)))
