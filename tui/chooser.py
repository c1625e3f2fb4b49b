"""The timeline chooser: name, format, device, steps and peak of every timeline."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import ModalScreen
from textual.widgets import DataTable, Static
from tlview.store.timeline_queries import TimelineInfo, TimelinePeak

from .fmt import short_bytes


class TimelineChooser(ModalScreen[int | None]):
    BINDINGS = [Binding("escape,t", "cancel", "back"), Binding("q", "app.quit", "quit")]

    def __init__(self, timelines: tuple[TimelineInfo, ...],
                 peaks: dict[int, TimelinePeak] | None, current: int | None) -> None:
        super().__init__()
        self.timelines = timelines
        self.peaks = peaks
        self.current = current

    def compose(self) -> ComposeResult:
        yield Static("Timelines: Enter opens one, Esc goes back", id="chooser-title")
        yield DataTable(cursor_type="row", id="chooser-table")

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        # The figures first, the (long) name last: at 80 columns only the name is cut.
        for label, key in (("id", "id"), ("steps", "steps"), ("peak", "peak"), ("at", "at"),
                           ("device", "device"), ("format", "format"), ("name", "name")):
            table.add_column(label, key=key)
        for i, t in enumerate(self.timelines):
            table.add_row(str(t.timeline_id), f"{t.n_steps:,}", *self._peak_cells(t.timeline_id),
                          Text(t.device or ""), Text(t.format), Text(t.name),
                          key=str(t.timeline_id))
            if t.timeline_id == self.current:
                table.move_cursor(row=i, animate=False)
        table.focus()

    def _peak_cells(self, tid: int) -> tuple[str, str]:
        if self.peaks is None:
            return ("...", "")
        p = self.peaks.get(tid)
        return (short_bytes(p.peak_bytes), str(p.peak_step)) if p else ("unknown", "")

    def show_peaks(self, peaks: dict[int, TimelinePeak]) -> None:
        self.peaks = peaks
        table = self.query_one(DataTable)
        for t in self.timelines:
            peak, at = self._peak_cells(t.timeline_id)
            table.update_cell(str(t.timeline_id), "peak", peak, update_width=True)
            table.update_cell(str(t.timeline_id), "at", at, update_width=True)

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        self.dismiss(int(str(event.row_key.value)))

    def action_cancel(self) -> None:
        self.dismiss(None)
