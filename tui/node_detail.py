"""The node at the cursor: kind, kernel, fused sub-nodes, reads and writes, origin, code.

Focus it (Tab) to scroll it with the arrows, PgUp/PgDn, Home/End.
"""

from __future__ import annotations

from rich.text import Text
from textual.containers import VerticalScroll
from textual.widgets import Static
from tlview.store.fmt import short_bytes
from tlview.store.timeline_queries import BufferFact, NodeDetail

CODE_LINES = 60


def _facts(facts: tuple[BufferFact, ...]) -> Text:
    out = Text()
    for i, f in enumerate(facts):
        if i:
            out.append(", ")
        out.append(f.buffer, style="bold")
        what = " ".join(x for x in (f.dtype, f.shape) if x)
        size = short_bytes(f.bytes) if f.bytes is not None else None
        extra = "; ".join(x for x in (what, size, "input" if f.is_input else None) if x)
        if extra:
            out.append(f" ({extra})", style="dim")
    return out


def describe(detail: NodeDetail) -> Text:
    text = Text()
    text.append(detail.node, style="bold")
    text.append(f"  step {detail.step}  ")
    ir = detail.ir_type
    if ir and "," in ir:  # a fused node lists its sub-nodes' classes; they are shown below
        ir = None
    text.append(" ".join(x for x in (detail.node_class, ir and f"({ir})") if x), style="dim")
    if detail.line:
        text.append(f"  line {detail.line}", style="dim")
    rows: list[tuple[str, Text | str]] = []
    if detail.kernel:
        rows.append(("kernel", detail.kernel))
    if detail.device:
        rows.append(("device", detail.device))
    if detail.snodes:
        rows.append(("fused", ", ".join(detail.snodes)))
    if detail.operands:
        rows.append(("operands", ", ".join(detail.operands)))
    rows.append(("reads", _facts(detail.reads) if detail.reads else "nothing"))
    rows.append(("writes", _facts(detail.writes) if detail.writes else "nothing"))
    if detail.origin:
        rows.append(("origin", detail.origin))
    if detail.source:
        rows.append(("source", detail.source))
    rows.extend(detail.extra)
    for label, value in rows:
        text.append(f"\n{label:>8} ", style="dim")
        text.append(value)
    for title, code in detail.code:
        lines = code.splitlines()
        text.append(f"\n{title}\n", style="bold dim")
        text.append("\n".join(lines[:CODE_LINES]))
        if len(lines) > CODE_LINES:
            text.append(f"\n({len(lines) - CODE_LINES} more lines)", style="dim")
    return text


class NodeDetailPanel(VerticalScroll, can_focus=True):
    def compose(self):
        yield Static(id="node-text")

    def show(self, detail: NodeDetail | None, message: str = "") -> None:
        body = self.query_one("#node-text", Static)
        body.update(describe(detail) if detail else Text(message, style="dim"))
        self.scroll_home(animate=False)
