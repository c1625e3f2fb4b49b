"""The rows of the live-blocks-by-site table: plain values, no Textual, tested as functions.

A site row gives its blocks, requested bytes (exact and in binary units), share of the
allocated bytes at the cursor, and the site; an expanded site is followed by the frames
of its largest block's stack, innermost first. Frames read ``file.py:12 name``: the
folder is dropped (the full text is shown for the highlighted row)."""

from __future__ import annotations

import re

from attrs import frozen
from tlview.store.fmt import short_bytes
from tlview.store.snapshot_queries import SiteRow

from .row_list import Column

COLUMNS = (Column("blocks", right=True), Column("bytes", right=True),
           Column("size", right=True), Column("share", right=True),
           Column("allocation site", least=12, flex=True))

_FRAME = re.compile(r"(?s)(.*?):(\d+|\?):(.*)")


def frame_label(text: str) -> str:
    """``/a/b/file.py:12:name`` as ``file.py:12 name`` (a C++ frame: ``??:0 name``)."""
    m = _FRAME.fullmatch(text)
    if not m:
        return text
    path, line, name = m.groups()
    return f"{path.rsplit('/', 1)[-1]}:{line} {name}"


def share(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f}%" if whole > 0 else ""


@frozen
class SiteLine:
    """What a row of the table is: a site (frame None) or one frame of its stack."""

    site: int  # index into the sites
    frame: int | None = None
    text: str = ""  # the full site or frame text


def site_rows(sites: tuple[SiteRow, ...], allocated: int,
              stacks: dict[int, tuple[str, ...]], expanded: frozenset[str],
              rest: tuple[int, int] | None = None, ellipsis: str = "…"
              ) -> tuple[list[tuple[str, ...]], list[SiteLine]]:
    """The table's cells and what each row is. ``stacks``: frames by stack id (those read
    so far); ``rest``: (blocks, bytes) of the sites past the list's limit, as one row."""
    rows: list[tuple[str, ...]] = []
    lines: list[SiteLine] = []
    for i, s in enumerate(sites):
        mark = ("- " if s.site in expanded else "+ ") if s.stack_id is not None else "  "
        rows.append((f"{s.blocks:,}", f"{s.bytes:,}", short_bytes(s.bytes),
                     share(s.bytes, allocated), mark + frame_label(s.site)))
        lines.append(SiteLine(i, None, s.site))
        if s.site not in expanded or s.stack_id is None:
            continue
        frames = stacks.get(s.stack_id)
        if frames is None:
            rows.append(("", "", "", "", "    reading the stack" + ellipsis))
            lines.append(SiteLine(i, -1, ""))
            continue
        if s.stacks > 1:
            rows.append(("", "", "", "",
                         f"    the largest block's stack (of {s.stacks} at this site):"))
            lines.append(SiteLine(i, -1, ""))
        for j, f in enumerate(frames):
            rows.append(("", "", "", f"#{j}", "    " + frame_label(f)))
            lines.append(SiteLine(i, j, f))
    if rest is not None and rest[0] > 0:
        rows.append((f"{rest[0]:,}", f"{rest[1]:,}", short_bytes(rest[1]),
                     share(rest[1], allocated), "  (the other sites)"))
        lines.append(SiteLine(-1, None, ""))
    return rows, lines
