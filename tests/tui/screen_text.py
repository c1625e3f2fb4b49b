"""The screen as plain text, for tests and for looking at a screen from a script."""

from __future__ import annotations


def screen_text(app) -> str:
    """What the terminal shows now, one line per row, trailing spaces removed."""
    strips = app.screen._compositor.render_strips()
    return "\n".join("".join(seg.text for seg in strip).rstrip() for strip in strips)
