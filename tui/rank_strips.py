"""The ranks screen's list of collectives: one row each, figures first, then the skew as a
bar and the ranks' arrivals as a strip, one cell per rank (or per bucket of ranks when
there are more ranks than cells), its height how late that rank arrived after the first;
the last rank's cell is drawn in the late style, a cell of ranks that took no part ``·``.

A :class:`RowList` (only visible rows are drawn) whose last column is drawn here, at
the width the row has."""

from __future__ import annotations

from rich.segment import Segment
from rich.style import Style
from textual.strip import Strip as TextStrip
from tlview.store.rank_queries import Strip

from .glyphs import Glyphs
from .row_list import Column, RowList


def strip_cells(strip: Strip, skew_ns: int, width: int, g: Glyphs) -> list[tuple[str, bool]]:
    """``width`` cells (fewer if there are fewer buckets) of (glyph, is the last rank's).

    A cell covers buckets [j*B//w, (j+1)*B//w) and shows the latest of them; its level is
    ceil(8 * late / skew), at least 1 for a rank that took part."""
    b = len(strip.late_ns)
    w = min(width, b)
    out = []
    levels = len(g.bars) - 1
    for j in range(w):
        lo, hi = j * b // w, max(j * b // w + 1, (j + 1) * b // w)
        present = [x for x in strip.late_ns[lo:hi] if x is not None]
        last = strip.last_bucket is not None and lo <= strip.last_bucket < hi
        if not present:
            out.append((g.absent, False))
            continue
        late = max(present)
        level = levels if skew_ns <= 0 and last else (
            max(1, -(-late * levels // skew_ns)) if skew_ns > 0 else 1)
        out.append((g.bars[min(levels, level)], last))
    return out


def skew_bar(skew_ns: int, max_skew_ns: int, width: int, g: Glyphs) -> str:
    """``skew`` as a bar of ``width`` cells, full at the run's largest skew (eighths)."""
    if max_skew_ns <= 0:
        return ""
    eighths = round(8 * width * skew_ns / max_skew_ns)
    full, part = divmod(eighths, 8)
    return (g.full * full + (g.eighths[part] if part else "")).ljust(width)[:width]


class CollectiveList(RowList):
    """Rows of collectives; the last column is each row's arrival strip."""

    COMPONENT_CLASSES = RowList.COMPONENT_CLASSES | {"collective-list--late"}

    def __init__(self, columns: tuple[Column, ...], glyphs: Glyphs, **kw) -> None:
        super().__init__(columns, ellipsis=glyphs.ellipsis, **kw)
        self.glyphs = glyphs
        self.strips: list[tuple[Strip, int]] = []  # per row: its strip and skew

    def set_collectives(self, rows: list[tuple[str, ...]], strips: list[tuple[Strip, int]],
                        *, cursor: int | None = None, marks: frozenset[int] = frozenset()
                        ) -> None:
        self.strips = strips
        self.set_rows(rows, cursor=cursor, marks=marks)

    def render_line(self, y: int) -> TextStrip:
        line = super().render_line(y)
        index = self.top + y - 1
        if y == 0 or not self.rows or index >= len(self.rows) or index >= len(self.strips):
            return line
        width = self.size.width
        widths = self.widths(width)
        if len(widths) < len(self.columns):  # the strip's column does not fit
            return line
        x = sum(widths[:-1]) + len(widths) - 1
        strip, skew = self.strips[index]
        cells = strip_cells(strip, skew, widths[-1], self.glyphs)
        segments = list(line.crop(0, x))
        row_style = segments[-1].style if segments else self.rich_style
        late = self.get_component_rich_style("collective-list--late")
        for glyph, is_last in cells:
            segments.append(Segment(glyph, (row_style or Style()) + late if is_last
                                    else row_style))
        rest = width - x - len(cells)
        if rest > 0:
            segments.append(Segment(" " * rest, row_style))
        return TextStrip(segments, width)
