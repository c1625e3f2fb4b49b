"""What `tlview ingest` says about hangs once Flight Recorder dumps are in: per incident,
its ranks, the ranks it lacks, and each process group's first disagreement in words (the
rows of ``hang_verdict``, through ``tlview.store.hang_queries.hang_summary``; the words
are tlview.store.words', which the run report shares)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from tlview.store import Database
from tlview.store.hang_queries import Incident, hang_summary
from tlview.store.words import by_group, group_line, incident_notes, rank_ranges, who


def incident_lines(i: Incident) -> list[str]:
    head = f"hang: incident {i.incident}: {i.n_dumps} Flight Recorder dump{'s' * (i.n_dumps != 1)}"
    if i.ranks:
        head += f" (ranks {rank_ranges(list(i.ranks))})"
    if i.missing:
        head += f", no dump of {who(list(i.missing))}"
    lines = [head]
    groups = by_group(i)
    if not groups:
        lines.append("  every collective the dumps hold matches across ranks and completed")
    lines += [f"  {group_line(rows)}" for rows in groups.values()]
    lines += [f"  note: {n}" for n in incident_notes(i, rings=False)]
    return lines


def print_hang_report(db: Database, timeline_ids: Sequence[int],
                      out: Callable[[str], None] = print) -> None:
    """The report of every incident holding one of ``timeline_ids`` (nothing if none)."""
    if not timeline_ids or not db.scalar("hang_dumps_among", list(timeline_ids)):
        return
    for i in hang_summary(db, list(timeline_ids)):
        for line in incident_lines(i):
            out(line)
