"""The chooser's rows as plain values: source labels that tell two folders apart, the
grouping by run, and the filter. No Textual here, so they are tested as functions."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from attrs import frozen
from tlview.store.timeline_queries import TimelineInfo, TimelinePeak
from tlview.store.words import source_labels

LOG_FORMAT = "torch_trace"  # a TORCH_TRACE log's own timeline: a source, not a schedule


@frozen
class ChooserRow:
    info: TimelineInfo
    peak: TimelinePeak | None
    source: str  # the shortest end of the source path that no other source shares
    haystack: str  # what the filter searches, lower case
    name: str = ""  # what the name column shows: the title without the run
    copies: int = 0  # repeats of this compiled graph in other artifacts (not listed)

    @property
    def hidden(self) -> bool:
        """A repeat of a graph listed through another timeline, or a TORCH_TRACE log's
        own (empty) timeline: listed only with every timeline asked for."""
        return self.info.copy_of is not None or self.info.format == LOG_FORMAT


def shown_name(t: TimelineInfo) -> str:
    """The title without its run (the run has a column of its own), else the name."""
    if t.title and t.run_name and t.title.startswith(t.run_name + " · "):
        return t.title[len(t.run_name) + 3:]
    return t.title or t.name


def chooser_rows(timelines: Iterable[TimelineInfo],
                 peaks: dict[int, TimelinePeak] | None) -> tuple[ChooserRow, ...]:
    """Every timeline, grouped by run (runs in order, timelines in id order within)."""
    timelines = sorted(timelines, key=lambda t: (t.run_id is None, t.run_id or 0, t.timeline_id))
    labels = source_labels(t.source_path for t in timelines)
    copies = Counter(t.copy_of for t in timelines if t.copy_of is not None)
    peaks = peaks or {}
    return tuple(
        ChooserRow(t, peaks.get(t.timeline_id), labels[t.source_path],
                   " ".join((str(t.timeline_id), t.name, t.title, t.run_name, t.format,
                             t.device or "", t.source_path)).lower(),
                   shown_name(t), copies.get(t.timeline_id, 0))
        for t in timelines)


def filter_rows(rows: tuple[ChooserRow, ...], text: str,
                everything: bool = False) -> tuple[ChooserRow, ...]:
    """Rows whose id, name, title, run, format, device or source path contain every word
    of ``text``; repeats of a graph and TORCH_TRACE logs' own timelines only with
    ``everything``."""
    words = text.lower().split()
    return tuple(r for r in rows if (everything or not r.hidden)
                 and all(w in r.haystack for w in words))
