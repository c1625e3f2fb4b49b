"""Collectives in flight at the cursor (issued, not yet waited) and the compute under them."""

from __future__ import annotations

from rich.text import Text
from textual.containers import VerticalScroll
from textual.widgets import Static
from tlview.store.fmt import short_bytes
from tlview.store.timeline_queries import CollectiveInFlight

from .glyphs import Glyphs


def describe(step: int, rows: tuple[CollectiveInFlight, ...], g: Glyphs) -> Text:
    text = Text()
    if not rows:
        text.append(f"no collective in flight at step {step}", style="dim")
        return text
    for i, c in enumerate(rows):
        if i:
            text.append("\n")
        text.append(c.node, style="bold")
        text.append(f" {c.op or '?'} {short_bytes(c.bytes)}")
        wait = (f"{c.wait_step} ({c.wait_node})" if c.wait_step is not None else "never waited")
        text.append(f"\n  issued {c.issue_step} {g.arrow} waited {wait}", style="dim")
        text.append(f"\n  under it: {c.n_under} node{'s' if c.n_under != 1 else ''}")
        if c.under:
            names = ", ".join(u.node for u in c.under)
            more = g.ellipsis if c.n_under > len(c.under) else ""
            text.append(f": {names}{more}", style="dim")
    return text


class CollectivesPanel(VerticalScroll):
    def __init__(self, glyphs: Glyphs, **kw) -> None:
        super().__init__(**kw)
        self.glyphs = glyphs

    def compose(self):
        yield Static(id="collectives-text")

    def show(self, step: int, rows: tuple[CollectiveInFlight, ...]) -> None:
        self.query_one("#collectives-text", Static).update(describe(step, rows, self.glyphs))

    def show_text(self, message: str) -> None:
        self.query_one("#collectives-text", Static).update(Text(message, style="dim"))
