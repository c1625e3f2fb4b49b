"""The ``?`` screen: the keys of the screen it was opened from, one line each, then the
keys every screen has. It scrolls (arrows, j/k, PgUp/PgDn), so it reads whole at 80x24."""

from __future__ import annotations

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


class HelpScreen(ModalScreen[None]):
    BINDINGS = [
        Binding("escape,question_mark,q", "close", "close"),
        Binding("j", "scroll(1)", show=False), Binding("k", "scroll(-1)", show=False),
    ]

    def __init__(self, title: str, keys: tuple[tuple[str, str], ...], about: str = "") -> None:
        super().__init__()
        self.text = help_text(title, keys, about)

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help"):
            yield Static(self.text, id="help-text", markup=False)

    def on_mount(self) -> None:
        self.query_one("#help").focus()

    def action_scroll(self, delta: int) -> None:
        box = self.query_one("#help", VerticalScroll)
        box.scroll_to(y=box.scroll_y + delta, animate=False)

    def action_close(self) -> None:
        self.dismiss(None)
