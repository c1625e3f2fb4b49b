"""One-line prompts: go to a step, search, filter, a file name to export to."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.validation import Integer
from textual.widgets import Input, Label


class Prompt(ModalScreen[str | None]):
    BINDINGS = [Binding("escape", "cancel", "cancel")]

    def __init__(self, label: str, placeholder: str, value: str = "",
                 max_step: int | None = None, allow_empty: bool = False) -> None:
        super().__init__()
        self.allow_empty = allow_empty  # Enter on an empty line answers "" (else: cancel)
        self.label = label
        self.placeholder = placeholder
        self.value = value
        self.max_step = max_step

    def compose(self) -> ComposeResult:
        validators = [Integer(minimum=0, maximum=self.max_step)] if self.max_step is not None else []
        with Vertical(id="prompt"):
            yield Label(self.label)
            yield Input(value=self.value, placeholder=self.placeholder, validators=validators,
                        select_on_focus=True)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.validation_result is not None and not event.validation_result.is_valid:
            self.query_one(Label).update(f"{self.label}  (a step from 0 to {self.max_step})")
            return
        value = event.value.strip()
        self.dismiss(value if value or self.allow_empty else None)

    def action_cancel(self) -> None:
        self.dismiss(None)
