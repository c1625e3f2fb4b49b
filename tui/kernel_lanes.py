"""GPU streams as lanes of kernels over a window of time, one column per ``col_ns``.

Row 0 is the time ruler; then one row per lane (stream): a cell is shaded by how much
of its column the stream was busy (``glyphs.shades``, idle to full) and colored by the
category with the most time there (compute, communication, memcpy/memset); the cursor's
column is reversed and the selected lane's label bold. The last row marks the cursor
(``▲``) and the kernels of a node being stepped through (``*``). Only the window's
columns are ever read (``LaneWindow``).
"""

from __future__ import annotations

from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.message import Message
from textual.strip import Strip
from textual.widget import Widget
from tlview.store.fmt import offset_ms
from tlview.store.profile_queries import LaneWindow, TraceOverview

from .cell_text import fit
from .glyphs import Glyphs

LABEL_WIDTH = 16  # "cuda:0 s17 comm " and the gutter of the memory curve below

_CATEGORY_CLASS = {"kernel": "kernel-lanes--compute", "comm": "kernel-lanes--comm",
                   "memcpy": "kernel-lanes--copy", "memset": "kernel-lanes--copy"}


def lane_label(device: str | None, stream: int, what: str) -> str:
    return f"s{stream} {what}" if device in (None, "cuda:0") else f"{device} s{stream} {what}"


class KernelLanes(Widget):
    COMPONENT_CLASSES = {"kernel-lanes--ruler", "kernel-lanes--label", "kernel-lanes--selected",
                         "kernel-lanes--compute", "kernel-lanes--comm", "kernel-lanes--copy",
                         "kernel-lanes--cursor", "kernel-lanes--marker",
                         "kernel-lanes--message"}

    class Resized(Message):
        def __init__(self, cols: int) -> None:
            super().__init__()
            self.cols = cols

    class Clicked(Message):
        def __init__(self, col: int, lane: int | None) -> None:
            super().__init__()
            self.col = col
            self.lane = lane

    def __init__(self, glyphs: Glyphs, **kw) -> None:
        super().__init__(**kw)
        self.glyphs = glyphs
        self.overview: TraceOverview | None = None
        self.window: LaneWindow | None = None
        self.cursor_col = 0
        self.lane = 0
        self.marks: frozenset[int] = frozenset()  # columns of the node's kernels
        self.message = ""

    @property
    def cols(self) -> int:
        return max(1, self.size.width - LABEL_WIDTH)

    def show(self, overview: TraceOverview | None, window: LaneWindow | None,
             message: str = "") -> None:
        grew = overview is not self.overview
        self.overview = overview
        self.window = window
        self.message = message
        self.refresh(layout=grew)

    def get_content_height(self, container, viewport, width: int) -> int:
        """The ruler, a row per lane, the marker row."""
        lanes = len(self.overview.lanes) if self.overview is not None else 1
        return 2 + max(1, lanes)

    def set_cursor(self, col: int, lane: int, marks: frozenset[int] | None = None) -> None:
        self.cursor_col = col
        self.lane = lane
        if marks is not None:
            self.marks = marks
        self.refresh()

    def on_resize(self, event: events.Resize) -> None:
        self.post_message(self.Resized(self.cols))

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        base = self.rich_style
        ov, win = self.overview, self.window
        if ov is None or win is None or not ov.lanes:
            text = (self.message or ("no GPU activity in this trace" if ov else "")) if y == 1 \
                else ""
            style = base + self.get_component_rich_style("kernel-lanes--message")
            return Strip([Segment(fit(text, width).ljust(width), style)])
        if y == 0:
            return self._ruler(width, ov, win)
        lane = y - 1
        if lane < len(ov.lanes):
            return self._lane(lane, ov, win)
        if lane == len(ov.lanes):
            return self._markers(width)
        return Strip([Segment(" " * width, base)])

    def _ruler(self, width: int, ov: TraceOverview, win: LaneWindow) -> Strip:
        left = offset_ms(win.t0 - ov.origin_ns)
        right = offset_ms(win.t1 - ov.origin_ns)
        room = self.cols - len(left) - len(right)
        text = "time".ljust(LABEL_WIDTH) + left + " " * max(1, room) + right
        style = self.rich_style + self.get_component_rich_style("kernel-lanes--ruler")
        return Strip([Segment(fit(text, width).ljust(width), style)])

    def _lane(self, i: int, ov: TraceOverview, win: LaneWindow) -> Strip:
        lane = ov.lanes[i]
        base = self.rich_style
        label_style = base + self.get_component_rich_style(
            "kernel-lanes--selected" if i == self.lane else "kernel-lanes--label")
        label = fit(lane_label(lane.device, lane.stream, lane.what), LABEL_WIDTH - 1,
                    self.glyphs.ellipsis)
        segments = [Segment(label.ljust(LABEL_WIDTH), label_style)]
        shades = self.glyphs.shades
        busy, cats, counts = win.busy[i], win.category[i], win.count[i]
        cursor = self.get_component_rich_style("kernel-lanes--cursor")
        for c in range(min(self.cols, win.cols)):
            frac = busy[c] / win.col_ns
            level = 0 if not counts[c] else max(1, min(4, round(frac * 4)))
            style: Style = base
            if cats[c] is not None or counts[c]:
                style += self.get_component_rich_style(_CATEGORY_CLASS.get(cats[c] or "kernel",
                                                                           "kernel-lanes--compute"))
            if c == self.cursor_col and i == self.lane:
                style += cursor
            segments.append(Segment(shades[level], style))
        return Strip(segments).simplify()

    def _markers(self, width: int) -> Strip:
        cells = [" "] * self.cols
        for c in self.marks:
            if 0 <= c < self.cols:
                cells[c] = "*"
        if 0 <= self.cursor_col < self.cols:
            cells[self.cursor_col] = self.glyphs.cursor
        style = self.rich_style + self.get_component_rich_style("kernel-lanes--marker")
        return Strip([Segment(" " * LABEL_WIDTH + "".join(cells), style)])

    def on_click(self, event: events.Click) -> None:
        if self.overview is None or event.x < LABEL_WIDTH:
            return
        lane = event.y - 1 if 1 <= event.y <= len(self.overview.lanes) else None
        self.post_message(self.Clicked(event.x - LABEL_WIDTH, lane))
