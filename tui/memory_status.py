"""One line under the curve: live bytes at the cursor, exactly and as a share of the peak."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static
from tlview.store.fmt import exact_bytes, human_bytes
from tlview.store.timeline_queries import CurveSummary, LiveAt


class MemoryStatus(Static):
    def show_text(self, text: str) -> None:
        self.update(Text(text), layout=False)

    def show(self, live: LiveAt, curve: CurveSummary | None, wide: bool) -> None:
        peak = curve.peak_bytes if curve is not None else None
        text = Text()
        text.append("live ", style="dim")
        text.append(f"{live.live_bytes:,} B", style="bold")
        if wide:
            text.append(f" ({human_bytes(live.live_bytes)})")
        if curve is not None and peak:
            text.append(f" {100 * live.live_bytes / peak:.1f}%", style="bold")
            text.append(" of peak ", style="dim")
            text.append(exact_bytes(peak) if wide else human_bytes(peak))
            text.append(f" @{curve.peak_step}")
        text.append(f"  {live.n_live:,} live", style="dim")
        if live.unknown_live:
            text.append(f" ({live.unknown_live} of unknown size, not counted)", style="italic")
        self.update(text, layout=False)
