"""The ``?`` screen: every key, one line each."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import ModalScreen
from textual.widgets import Static

KEYS = (
    ("j k  Down Up", "next / previous step (also -> and <-)"),
    ("PgDn PgUp", "a page of steps"),
    ("Home End", "first / last step"),
    ("p", "jump to the peak of memory"),
    ("n N", "next / previous collective"),
    ("g", "go to a step"),
    ("/", "search nodes, kernels, buffers (to the next match)"),
    ("Tab", "switch between the step list and the live buffers"),
    ("b", "lifetime of the selected buffer; again: alloc <-> last"),
    ("Esc", "clear the lifetime highlight"),
    ("t", "choose another timeline"),
    ("?", "this help"),
    ("q", "quit"),
)

ABOUT = (
    "Memory: live bytes of buffers live at a step (allocated at or before it, last used at "
    "or after it); graph inputs are not counted; buffers of unknown (symbolic) size are "
    "counted apart. The curve shows, per column, the largest value of its steps."
)


class HelpScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,question_mark,q", "close", "close")]

    def compose(self) -> ComposeResult:
        width = max(len(k) for k, _ in KEYS)
        lines = ["tlview keys", ""] + [f"  {k:<{width}}  {v}" for k, v in KEYS]
        yield Static("\n".join(lines) + "\n\n" + ABOUT + "\n\nEsc closes.", id="help")

    def action_close(self) -> None:
        self.dismiss(None)
