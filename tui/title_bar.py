"""The first line of every screen: what is shown, and the database's state at the right
("ingest in progress" while a writer holds the file), watched from the app."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static
from tlview.store.timeline_queries import TimelineInfo

from .cell_text import fit


def timeline_heading(info: TimelineInfo) -> str:
    """A timeline's screen title: its title as the chooser and the report name it
    (``run · 0_forward · output code``), not the name its reader gave it, then what
    it was read as and on which device."""
    where = info.format + (", " + info.device if info.device else "")
    return f"tlview  {info.title or info.name}  [{where}]"


class TitleBar(Static):
    def __init__(self, text: str = "tlview", **kw) -> None:
        super().__init__(**kw)
        self.text = text
        self.keep = ""  # drawn whole after the text (a step number), the text cut first
        self.notice = ""

    def on_mount(self) -> None:
        if hasattr(self.app, "db_notice"):
            self.watch(self.app, "db_notice", self._notice_changed)

    def _notice_changed(self, notice: str) -> None:
        self.notice = notice
        self._draw()

    def show(self, text: str, keep: str = "") -> None:
        """``text``, then ``keep``: what must stay whole (the step), ``text`` cut first."""
        self.text, self.keep = text, keep
        self._draw()

    def _draw(self) -> None:
        """The title, cut if need be so that the kept part and the notice are whole."""
        width = max(1, self.size.width - 2)  # less the padding
        glyphs = getattr(self.app, "glyphs", None)
        dots = glyphs.ellipsis if glyphs is not None else "…"
        text = self.text
        if self.keep:
            room = width - len(self.keep) - 2 - (len(self.notice) + 1 if self.notice else 0)
            text = fit(text, max(0, room), dots) + "  " + self.keep
        if self.notice:
            text = fit(text, max(0, width - len(self.notice) - 1), dots)
        line = Text(text)  # plain text: a name with [brackets] is not markup
        if self.notice:
            line.append(" " * max(1, width - len(text) - len(self.notice)))
            line.append(self.notice, style="bold reverse")
        self.update(line, layout=False)

    def on_resize(self) -> None:
        self._draw()
