"""The ``?`` screen: the keys of the screen it was opened from, one line each, then the
keys every screen has. It scrolls (arrows, j/k, PgUp/PgDn), so it reads whole at 80x24."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

GLOBAL_KEYS = (
    ("t", "the timelines of the database (the chooser)"),
    ("Esc", "back to the screen before (after a jump)"),
    ("?", "this help"),
    ("q  Ctrl-C", "quit"),
)


def help_text(title: str, keys: tuple[tuple[str, str], ...], about: str = "") -> str:
    every = keys + GLOBAL_KEYS
    width = max(len(k) for k, _ in every)
    lines = [f"tlview keys: {title}", ""] + [f"  {k:<{width}}  {v}" for k, v in keys]
    lines += ["", "Everywhere:"] + [f"  {k:<{width}}  {v}" for k, v in GLOBAL_KEYS]
    if about:
        lines += ["", about]
    lines += ["", "Esc closes; arrows, j/k and PgUp/PgDn scroll."]
    return "\n".join(lines)


def help_renderable(title: str, keys: tuple[tuple[str, str], ...],
                    about: str = "") -> RenderableType:
    """The same as ``help_text``, laid out in two columns: a description too long for
    the box wraps under its own column, never under the keys."""
    every = keys + GLOBAL_KEYS
    width = max(len(k) for k, _ in every)

    def table(rows: tuple[tuple[str, str], ...]) -> Table:
        t = Table.grid(padding=(0, 2))
        t.add_column(width=width + 2, no_wrap=True)  # two spaces of indent, then the key
        t.add_column(ratio=1)
        for k, v in rows:
            t.add_row(Text(f"  {k}"), Text(v))
        return t

    parts: list[RenderableType] = [Text(f"tlview keys: {title}"), Text(""), table(keys),
                                   Text(""), Text("Everywhere:"), table(GLOBAL_KEYS)]
    if about:
        parts += [Text(""), Text(about)]
    parts += [Text(""), Text("Esc closes; arrows, j/k and PgUp/PgDn scroll.")]
    return Group(*parts)


class HelpScreen(ModalScreen[None]):
    BINDINGS = [
        Binding("escape,question_mark,q", "close", "close"),
        Binding("j", "scroll(1)", show=False), Binding("k", "scroll(-1)", show=False),
    ]

    def __init__(self, title: str, keys: tuple[tuple[str, str], ...], about: str = "") -> None:
        super().__init__()
        self.text = help_text(title, keys, about)  # the same words as plain text
        self.renderable = help_renderable(title, keys, about)

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help"):
            yield Static(self.renderable, id="help-text")

    def on_mount(self) -> None:
        self.query_one("#help").focus()

    def action_scroll(self, delta: int) -> None:
        box = self.query_one("#help", VerticalScroll)
        box.scroll_to(y=box.scroll_y + delta, animate=False)

    def action_close(self) -> None:
        self.dismiss(None)
