"""The buffers live at the cursor, largest first (the first hundred of them)."""

from __future__ import annotations

from textual.widgets import DataTable

from tlview.store.timeline_queries import LiveAt, LiveBuffer

from .fmt import short_bytes
from .glyphs import Glyphs

COLUMNS = ("buffer", "bytes", "at", "alloc", "last", "dtype", "shape", "producer")


class LiveBuffers(DataTable):
    """``at`` says ``+`` when the buffer is allocated at this step, ``-`` when this is
    its last live step (it is freed after it)."""

    def __init__(self, glyphs: Glyphs, **kw) -> None:
        super().__init__(cursor_type="row", zebra_stripes=False, **kw)
        self.glyphs = glyphs
        self.live: LiveAt | None = None

    def on_mount(self) -> None:
        self.add_columns(*COLUMNS)

    def show(self, live: LiveAt | None) -> None:
        keep = self.selected
        self.live = live
        self.clear()
        if live is None:
            return
        g = self.glyphs
        for b in live.buffers:
            at = (g.alloc if b.alloc_step == live.step else "") + (
                g.freed if b.last_step == live.step else "")
            size = short_bytes(b.bytes) if b.bytes is not None else (b.size_expr or "?")
            self.add_row(b.buffer, size, at, str(b.alloc_step), str(b.last_step),
                         b.dtype or "", b.shape or "", b.producer or "", key=b.buffer)
        if keep is not None:
            for i, b in enumerate(live.buffers):
                if b.buffer == keep.buffer:
                    self.move_cursor(row=i, animate=False)
                    break

    def select_buffer(self, name: str) -> bool:
        if self.live:
            for i, b in enumerate(self.live.buffers):
                if b.buffer == name:
                    self.move_cursor(row=i, animate=False)
                    return True
        return False

    @property
    def selected(self) -> LiveBuffer | None:
        if not self.live or not self.live.buffers:
            return None
        row = self.cursor_row
        return self.live.buffers[row] if 0 <= row < len(self.live.buffers) else None
