"""A table drawn line by line: only the visible rows are ever laid out or drawn.

Rows are tuples of cell texts, handed over whole (a snapshot); column widths are
measured once per snapshot, so scrolling costs the same with 10 rows or 10,000.
Textual's DataTable measures and restyles per cell, which froze the chooser for
seconds to minutes on hundreds of timelines (docs/benchmarks.md).
"""

from __future__ import annotations

from collections.abc import Sequence

from attrs import frozen
from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.binding import Binding
from textual.message import Message
from textual.reactive import reactive
from textual.strip import Strip
from textual.widget import Widget

from .cell_text import fit


@frozen
class Column:
    title: str
    least: int = 1  # narrowest width
    right: bool = False  # right-aligned (figures)
    flex: bool = False  # takes the room left (several share it)
    most: int = 60  # widest, unless flex
    cut_left: bool = False  # too long: keep the end (paths)
    first: bool = False  # flex: served whole before the other flex columns get the rest


class RowList(Widget, can_focus=True):
    """Rows with a cursor. Posts ``Highlighted`` when the cursor moves, ``Chosen`` on Enter."""

    COMPONENT_CLASSES = {"row-list--header", "row-list--cursor", "row-list--empty",
                         "row-list--mark"}
    BINDINGS = [
        Binding("down,j", "move(1)", show=False), Binding("up,k", "move(-1)", show=False),
        Binding("pagedown", "page(1)", show=False), Binding("pageup", "page(-1)", show=False),
        Binding("home", "edge(0)", show=False), Binding("end", "edge(1)", show=False),
        Binding("enter", "choose", show=False),
    ]

    cursor: reactive[int] = reactive(0)

    class Highlighted(Message):
        def __init__(self, row_list: RowList, index: int) -> None:
            super().__init__()
            self.row_list = row_list
            self.index = index

        @property
        def control(self) -> RowList:
            return self.row_list

    class Chosen(Highlighted):
        pass

    def __init__(self, columns: Sequence[Column], *, empty: str = "", ellipsis: str = "…",
                 **kw) -> None:
        super().__init__(**kw)
        self.columns = tuple(columns)
        self.rows: Sequence[tuple[str, ...]] = ()
        self.marks: frozenset[int] = frozenset()  # rows drawn in the mark style
        self.empty = empty
        self.ellipsis = ellipsis
        self._natural: list[int] = [len(c.title) for c in self.columns]
        self._top = 0

    def set_rows(self, rows: Sequence[tuple[str, ...]], *, cursor: int | None = None,
                 marks: frozenset[int] = frozenset()) -> None:
        self.rows = rows
        self.marks = marks
        natural = [max(len(c.title), c.least) for c in self.columns]
        for row in rows:
            for i, cell in enumerate(row):
                if len(cell) > natural[i]:
                    natural[i] = len(cell)
        self._natural = natural
        index = self.cursor if cursor is None else cursor
        self.set_reactive(RowList.cursor, max(0, min(index, len(rows) - 1)))
        self.refresh()
        if rows:
            self.post_message(self.Highlighted(self, self.cursor))

    # -- keys -----------------------------------------------------------------------------

    def action_move(self, delta: int) -> None:
        if self.rows:
            self.cursor = max(0, min(len(self.rows) - 1, self.cursor + delta))

    def action_page(self, direction: int) -> None:
        self.action_move(direction * self.body_height)

    def action_edge(self, end: int) -> None:
        if self.rows:
            self.cursor = len(self.rows) - 1 if end else 0

    def action_choose(self) -> None:
        if self.rows:
            self.post_message(self.Chosen(self, self.cursor))

    def watch_cursor(self, old: int, new: int) -> None:
        self.refresh()
        if self.rows and old != new:
            self.post_message(self.Highlighted(self, new))

    # -- drawing --------------------------------------------------------------------------

    @property
    def body_height(self) -> int:
        return max(1, self.size.height - 1)

    @property
    def top(self) -> int:
        """First row shown: scrolled as little as keeps the cursor in view."""
        h = self.body_height
        top = self._top
        if self.cursor < top:
            top = self.cursor
        elif self.cursor >= top + h:
            top = self.cursor - h + 1
        self._top = max(0, min(top, len(self.rows) - h))
        return self._top

    def widths(self, width: int) -> list[int]:
        """Fixed columns as wide as their widest cell (up to ``most``); flex columns share
        the rest; columns that do not fit are left out from the right."""
        out: list[int] = []
        used = 0
        flex = [i for i, c in enumerate(self.columns) if c.flex]
        for i, c in enumerate(self.columns):
            if c.flex:
                out.append(0)
                continue
            w = min(self._natural[i], c.most)
            if used + w > width:
                break
            out.append(w)
            used += w + 1
        flex = [i for i in flex if i < len(out)]
        if flex:
            room = max(0, width - used - len(flex))
            rest = [i for i in flex if not self.columns[i].first]
            for i in flex:  # a first column as wide as it wants, the others' least kept
                if self.columns[i].first and rest:
                    spare = room - sum(self.columns[j].least for j in rest)
                    out[i] = max(self.columns[i].least, min(self._natural[i], spare))
                    room -= out[i]
            share = _share(max(0, room), [self._natural[i] for i in rest or flex],
                           [self.columns[i].least for i in rest or flex])
            for i, w in zip(rest or flex, share):
                out[i] = w
        return out

    def line(self, cells: Sequence[str], widths: list[int]) -> str:
        out = []
        for text, w, col in zip(cells, widths, self.columns):
            text = fit(text, w, self.ellipsis, left=col.cut_left)
            out.append(text.rjust(w) if col.right else text.ljust(w))
        return " ".join(out)

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        base = self.rich_style
        style: Style
        if not self.rows:
            text = self.empty if y == 1 else ""
            if y == 0:
                text = self.line([c.title for c in self.columns], self.widths(width))
                style = base + self.get_component_rich_style("row-list--header")
            else:
                style = base + self.get_component_rich_style("row-list--empty")
            return Strip([Segment(fit(text, width).ljust(width), style)])
        widths = self.widths(width)
        if y == 0:
            head = self.line([c.title for c in self.columns], widths)
            style = base + self.get_component_rich_style("row-list--header")
            return Strip([Segment(head.ljust(width)[:width], style)])
        index = self.top + y - 1
        if index >= len(self.rows):
            return Strip([Segment(" " * width, base)])
        style = base
        if index in self.marks:
            style += self.get_component_rich_style("row-list--mark")
        if index == self.cursor:
            style += self.get_component_rich_style("row-list--cursor")
        text = self.line(self.rows[index], widths)
        return Strip([Segment(text.ljust(width)[:width], style)])

    def on_click(self, event: events.Click) -> None:
        if event.y >= 1 and self.rows:
            index = self.top + event.y - 1
            if index < len(self.rows):
                if index == self.cursor:
                    self.action_choose()
                self.cursor = index

    def on_mouse_scroll_down(self, event: events.MouseScrollDown) -> None:
        event.stop()
        self.action_move(3)

    def on_mouse_scroll_up(self, event: events.MouseScrollUp) -> None:
        event.stop()
        self.action_move(-3)


def _share(room: int, want: list[int], least: list[int]) -> list[int]:
    """Split ``room`` among columns wanting ``want``: each its least first, then the rest
    evenly among those that want more (none more than it wants); the last column takes
    what is left over."""
    if not want:
        return []
    out = [min(w, lo) for w, lo in zip(want, least)]
    left = room - sum(out)
    if left < 0:  # not even the least fits: evenly
        return [max(0, room // len(want))] * len(want)
    while left > 0:
        hungry = [i for i, w in enumerate(want) if out[i] < w]
        if not hungry:
            break
        each = max(1, left // len(hungry))
        for i in hungry:
            more = min(each, want[i] - out[i], left)
            out[i] += more
            left -= more
    out[-1] += left
    return out
