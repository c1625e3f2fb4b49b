"""The kernel at the profiler's cursor: what it is, when, who launched it, which compiled
node it belongs to (Enter opens that node), how much of it compute hid (communication),
and the allocator's memory at that time."""

from __future__ import annotations

from rich.text import Text
from textual.containers import VerticalScroll
from textual.widgets import Static
from tlview.store.fmt import offset_ms, short_bytes, short_ns
from tlview.store.profile_queries import (
    CommOverlap,
    KernelAttachment,
    KernelLaunch,
    MeasuredKernel,
    StepTotal,
)

from .glyphs import Glyphs


def describe(kernel: MeasuredKernel, origin_ns: int, launch: KernelLaunch | None,
             attachment: KernelAttachment | None, attachments_known: bool,
             comm: CommOverlap | None, step: StepTotal | None, g: Glyphs) -> Text:
    """Most telling first, so 80x24 shows it: name; kind, start, duration, step; for a
    collective how much compute hid; who launched it; the node it belongs to."""
    text = Text()
    text.append(kernel.name, style="bold")
    what = {"kernel": "compute", "comm": "communication"}.get(kernel.category, kernel.category)
    text.append(f"\n{what} on stream {kernel.stream} · start "
                f"{offset_ms(kernel.ts_ns - origin_ns)} · ", style="dim")
    text.append(short_ns(kernel.dur_ns), style="bold")
    if step is not None:
        text.append(f" · {step.name}", style="dim")
    if comm is not None:
        text.append("\nexposed ", style="dim")
        text.append(short_ns(comm.exposed_ns), style="bold")
        pct = comm.overlap_pct if comm.overlap_pct is not None else 0
        text.append(f", overlapped {short_ns(comm.overlapped_ns)} ({pct:.1f}%)", style="dim")
        if comm.op:
            text.append(f" · {comm.op}{' ' + short_bytes(comm.bytes) if comm.bytes else ''}")
    text.append("\nlaunch ", style="dim")
    if launch is None:
        text.append(g.ellipsis, style="dim")
    elif launch.runtime is None:
        text.append("no runtime call with its correlation id in the trace", style="dim")
    else:
        text.append(launch.runtime)
        if launch.cpu_op:
            text.append(f" {g.arrow} ", style="dim")
            text.append(launch.cpu_op, style="bold")
        text.append(f" (thread {launch.thread})", style="dim")
    text.append("\nnode ", style="dim")
    if attachment is not None:
        text.append(attachment.node, style="bold")
        text.append(f" step {attachment.step} of {attachment.graph_name}")
        copies = f", {attachment.candidates} copies" if attachment.candidates > 1 else ""
        text.append(f" ({attachment.method} {attachment.confidence:g}{copies})"
                    " · Enter opens it", style="dim")
    elif attachments_known:
        text.append("not attached to a compiled node", style="dim")
    else:
        text.append(f"attaching{g.ellipsis}", style="dim")
    return text


class KernelPanel(VerticalScroll, can_focus=True):
    def compose(self):
        yield Static(id="kernel-text")

    def show(self, text: Text) -> None:
        self.query_one("#kernel-text", Static).update(text)
