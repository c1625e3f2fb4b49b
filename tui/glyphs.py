"""The characters the UI draws with: Unicode by default, plain ASCII on request.

``TLVIEW_ASCII=1`` (or ``tlview --ascii``) keeps every glyph in 7-bit ASCII, for
terminals and fonts that show nothing else. Block elements are in every
monospace font a plain SSH terminal uses, so Unicode stays the default.
"""

from __future__ import annotations

import os

from attrs import frozen


@frozen
class Glyphs:
    bars: str  # levels of a sparkline cell, empty to full
    cursor: str  # under the curve: the cursor step
    peak: str  # under the curve: the peak step
    life: str  # under the curve: a highlighted buffer's lifetime
    arrow: str
    alloc: str
    freed: str
    ellipsis: str
    rule: str
    axis: str  # the y-axis of a curve, beside its scale
    shades: str  # how busy a lane's column is, idle to full
    full: str = "█"  # a horizontal bar's whole cell
    eighths: str = " ▏▎▍▌▋▊▉"  # a horizontal bar's last cell, 0/8 to 7/8
    absent: str = "·"  # a rank that took no part in a collective


UNICODE = Glyphs(bars=" ▁▂▃▄▅▆▇█", cursor="▲", peak="P", life="─", arrow="→",
                 alloc="+", freed="−", ellipsis="…", rule="─", axis="┤",
                 shades=" ░▒▓█")
ASCII = Glyphs(bars=" .:-=+*#@", cursor="^", peak="P", life="-", arrow="->",
               alloc="+", freed="-", ellipsis="...", rule="-", axis="|",
               shades=" .:=#", full="#", eighths=" -------", absent=" ")


def glyphs(ascii_only: bool | None = None) -> Glyphs:
    if ascii_only is None:
        ascii_only = os.environ.get("TLVIEW_ASCII", "") not in ("", "0")
    return ASCII if ascii_only else UNICODE
