"""What `tlview ingest` says about hangs once Flight Recorder dumps are in: per incident,
its ranks, the ranks it lacks, and each process group's first disagreement in words (the
rows of ``hang_verdict``, through ``tlview.store.hang_queries.hang_summary``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from tlview.store import Database
from tlview.store.hang_queries import Incident, Verdict, group_name, hang_summary

from .rank_report import rank_ranges


def _who(ranks: list[int]) -> str:
    return f"rank{'s' if len(ranks) > 1 else ''} {rank_ranges(ranks)}"


def group_line(rows: Sequence[Verdict]) -> str:
    """``default_pg #8 (gloo:all_reduce): rank 1 never issued it; ranks 0, 2 wait`` (root)."""
    v0 = rows[0]
    by: dict[str, list[int]] = {}
    for v in rows:
        by.setdefault(v.verdict, []).append(v.rank)
    parts = []
    for verdict in sorted(by, key=lambda k: (k in ("waiting", "completed"), k)):
        ranks = by[verdict]
        if verdict == "waiting":
            parts.append(f"{_who(ranks)} wait{'' if len(ranks) > 1 else 's'} in it")
        elif verdict == "completed":
            parts.append(f"{_who(ranks)} completed it")
        else:
            parts.append(f"{_who(ranks)}: {verdict}")
    undecided = [v.rank for v in rows if v.culprit is None and v.verdict not in
                 ("missing dump", "not in its ring")]
    tail = f" (ranks {rank_ranges(undecided)} split evenly: either may be wrong)" if undecided else ""
    what = v0.expected_ops or next((v.ops for v in rows if v.ops), None) or "?"
    root = " [first in the incident]" if v0.root else ""
    return (f"  {group_name(v0.pg_desc, v0.process_group)} #{v0.seq} ({what}), {v0.finding}: "
            f"{'; '.join(parts)}{tail}{root}")


def incident_lines(i: Incident) -> list[str]:
    head = f"hang: incident {i.incident}: {i.n_dumps} Flight Recorder dump{'s' * (i.n_dumps != 1)}"
    if i.ranks:
        head += f" (ranks {rank_ranges(list(i.ranks))})"
    if i.missing:
        head += f", no dump of {_who(list(i.missing))}"
    lines = [head]
    groups: dict[str, list[Verdict]] = {}
    for v in i.verdicts:
        groups.setdefault(v.process_group, []).append(v)
    if not groups:
        lines.append("  every collective the dumps hold matches across ranks and completed")
    lines += [group_line(rows) for rows in groups.values()]
    for c in i.conflicts:
        lines.append(f"  note: rank {c} is claimed by dumps of two processes that overlap in "
                     f"time ({', '.join(i.paths_of(c))}): left out of the verdict")
    if not i.versions_known:
        lines.append(f"  note: dump version {', '.join(i.versions) or '(none stated)'} is not "
                     "one tlview knows: read by structure, unknown keys kept "
                     "(fr_dumps.version_known)")
    for cid, with_it, without in i.compile_divergence[:3]:
        lines.append(f"  note: TORCH_TRACE compile {cid} is in the logs of "
                     f"{_who(list(with_it))}, not of {_who(list(without))}: a recompile on "
                     "some ranks makes their collectives differ (compile_divergence)")
    if len(i.compile_divergence) > 3:
        lines.append(f"  note: {len(i.compile_divergence) - 3} more compile ids differ "
                     "across ranks (compile_divergence)")
    if i.no_rank:
        lines.append(f"  note: {i.no_rank} dump{'s' * (i.no_rank != 1)} without a rank in "
                     "name or content: left out")
    return lines


def print_hang_report(db: Database, timeline_ids: Sequence[int],
                      out: Callable[[str], None] = print) -> None:
    """The report of every incident holding one of ``timeline_ids`` (nothing if none)."""
    if not timeline_ids or not db.scalar("hang_dumps_among", list(timeline_ids)):
        return
    for i in hang_summary(db, list(timeline_ids)):
        for line in incident_lines(i):
            out(line)
