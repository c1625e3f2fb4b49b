"""The chooser's rows as plain values: source labels that tell two folders apart, and
the filter. No Textual here, so both are tested as functions."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from attrs import frozen
from tlview.store.timeline_queries import TimelineInfo, TimelinePeak


@frozen
class ChooserRow:
    info: TimelineInfo
    peak: TimelinePeak | None
    source: str  # the shortest end of the source path that no other source shares
    haystack: str  # what the filter searches, lower case


def source_labels(paths: Iterable[str]) -> dict[str, str]:
    """For each distinct path, its last k components with the smallest k that no other
    path ends with: ``fwd/output_code.py`` and ``bwd/output_code.py``, not two
    ``output_code.py``."""
    parts = {p: [x for x in p.split("/") if x] or [p] for p in set(paths)}
    out: dict[str, str] = {}
    pending = set(parts)
    k = 1
    while pending:
        ends = Counter("/".join(v[-k:]) for v in parts.values())
        for p in list(pending):
            end = "/".join(parts[p][-k:])
            if ends[end] == 1 or k >= len(parts[p]):
                out[p] = end
                pending.discard(p)
        k += 1
    return out


def chooser_rows(timelines: Iterable[TimelineInfo],
                 peaks: dict[int, TimelinePeak] | None) -> tuple[ChooserRow, ...]:
    timelines = tuple(timelines)
    labels = source_labels(t.source_path for t in timelines)
    peaks = peaks or {}
    return tuple(
        ChooserRow(t, peaks.get(t.timeline_id), labels[t.source_path],
                   " ".join((str(t.timeline_id), t.name, t.format, t.device or "",
                             t.source_path)).lower())
        for t in timelines)


def filter_rows(rows: tuple[ChooserRow, ...], text: str) -> tuple[ChooserRow, ...]:
    """Rows whose id, name, format, device or source path contain every word of ``text``."""
    words = text.lower().split()
    if not words:
        return rows
    return tuple(r for r in rows if all(w in r.haystack for w in words))
