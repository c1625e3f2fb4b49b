"""The first line of every screen: what is shown, and the database's state at the right
("ingest in progress" while a writer holds the file), watched from the app."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from .fmt import fit


class TitleBar(Static):
    def __init__(self, text: str = "tlview", **kw) -> None:
        super().__init__(**kw)
        self.text = text
        self.notice = ""

    def on_mount(self) -> None:
        if hasattr(self.app, "db_notice"):
            self.watch(self.app, "db_notice", self._notice_changed)

    def _notice_changed(self, notice: str) -> None:
        self.notice = notice
        self._draw()

    def show(self, text: str) -> None:
        self.text = text
        self._draw()

    def _draw(self) -> None:
        """The title, cut if need be so that the notice is always whole."""
        width = max(1, self.size.width - 2)  # less the padding
        text = self.text
        if self.notice:
            text = fit(text, max(0, width - len(self.notice) - 1))
        line = Text(text)  # plain text: a name with [brackets] is not markup
        if self.notice:
            line.append(" " * max(1, width - len(text) - len(self.notice)))
            line.append(self.notice, style="bold reverse")
        self.update(line, layout=False)

    def on_resize(self) -> None:
        self._draw()
