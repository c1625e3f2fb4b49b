"""What `tlview ingest` says about the ranks once their traces are in: per run, the ranks
it holds and lacks, how the collectives matched, the clock offsets and the straggler.

Bad multi-rank input is told here, in words: a rank missing, a rank ingested twice or
from another run, collectives left unmatched (listed in the ``collective_unmatched``
view). The named queries ``rank_report_*`` read it, one part at a time.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from tlview.store import Database
from tlview.store.rank_queries import worst_whatif
from tlview.store.words import rank_ranges


def _count(n: int, what: str) -> str:
    return f"{n:,} {what}{'' if n == 1 else 's'}"


def _us(ns: int) -> str:
    return f"{ns / 1e3:,.1f} us" if abs(ns) < 1_000_000 else f"{ns / 1e6:,.3f} ms"


# What stragglers.wait_share is a share of, by its step_basis.
_SHARE_OF = {
    "profiler_steps": "their step time",
    "collectives_span": "the span of their collective kernels: the traces have no "
                        "ProfilerStep",
    "mixed": "their step time, or the span of their collective kernels where a trace has "
             "no ProfilerStep",
}


def run_lines(r: dict[str, Any]) -> list[str]:
    """The lines about one run (a row of ``_rank_report``)."""
    parts = [_head(r)]
    n, done, matched = r["n_collectives"], r["n_complete"], r["n_matched"]
    if not n:
        parts.append("no collective kernels")
    elif not matched:
        parts.append(f"{_count(n, 'collective')}, none matched across ranks")
    else:
        methods = " and ".join(r["methods"] or [])
        parts.append(f"{_count(n, 'collective')}, {matched:,} matched across ranks by {methods}"
                     + ("" if done == n else f", {n - done:,} without every rank of their group"))
    if r["n_offsets"]:
        parts.append(f"clock offsets up to {_us(r['max_offset_ns'])} (rank "
                     f"{r['max_offset_rank']}, spread up to {_us(r['max_spread_ns'])})")
    if r["straggler"] is not None:
        parts.append(f"straggler rank {r['straggler']}: its late arrivals cost the others "
                     f"{_us(r['caused_wait_ns'])} ({100 * float(r['wait_share']):.2f}% of "
                     f"{_SHARE_OF[r['step_basis']]})")
    if r.get("whatif") is not None:
        parts.append(r["whatif"].sentence(_us))
    lines = ["; ".join(parts), *_trace_notes(r)]
    if r["n_unmatched"]:
        lines.append(f"  note: {_count(r['n_unmatched'], 'collective')} not matched on every "
                     f"rank of {'its' if r['n_unmatched'] == 1 else 'their'} group: {r['reason']} (the collective_unmatched view lists "
                     "them)")
    if r["n_inconsistent"]:
        lines.append(f"  note: {_count(r['n_inconsistent'], 'matched collective')} disagree "
                     "across ranks on name or dtype (collective_skew.consistent)")
    return lines


def one_trace_lines(r: dict[str, Any]) -> list[str]:
    """The lines about a run of one trace (a ``rank_runs_among`` row): nothing to match
    yet, so none of rank_report's matching is run (seconds per GB of trace)."""
    n = r["n_collectives"] or 0
    tail = ("no collective kernels" if not n else
            f"{_count(n, 'collective')}, none matched across ranks"
            + (" (the other ranks' traces are not ingested)" if r["missing"] else ""))
    return [f"{_head(r)}; {tail}", *_trace_notes(r)]


def _head(r: dict[str, Any]) -> str:
    """``ranks: run 1: 3 of 4 ranks (0-2), missing 3``."""
    head = (f"ranks: run {r['run']}: {len(r['ranks'])} of {r['world_size']} ranks "
            f"({rank_ranges(r['ranks'])})")
    return head + (f", missing {rank_ranges(r['missing'])}" if r["missing"] else "")


def _trace_notes(r: dict[str, Any]) -> list[str]:
    """Notes on the run's traces: a rank traced twice, a rank beyond the world size."""
    lines = []
    if r["dup_ranks"]:
        lines.append(f"  note: rank {rank_ranges(r['dup_ranks'])} also has a trace in another run "
                     f"overlapping this one in time ({', '.join(r['dup_names'])}): taken as "
                     "a run of its own (ingested twice, or two jobs recorded together?)")
    if r["out_of_range"]:
        lines.append(f"  note: rank {rank_ranges(r['out_of_range'])} is not below the world size "
                     f"{r['world_size']}")
    return lines


def print_rank_report(db: Database, timeline_ids: Sequence[int],
                      out: Callable[[str], None] = print) -> None:
    """The report of every run holding one of ``timeline_ids`` (nothing if none). Runs of
    one trace are told from rank_traces alone; the others through rank_report."""
    if not timeline_ids or not db.scalar("rank_traces_among", list(timeline_ids)):
        return
    runs = db.query_dicts("rank_runs_among", list(timeline_ids))
    many = [t for r in runs if r["n_traces"] > 1 for t in r["timeline_ids"]]
    full = _rank_report(db, many) if many else {}
    for r in runs:
        for line in run_lines(full[r["run"]]) if r["run"] in full else one_trace_lines(r):
            out(line)


# What a run without a row in a part reads (the runs' rows are filled from each part).
_PART_DEFAULTS: dict[str, dict[str, Any]] = {
    "rank_report_collectives": {"n_collectives": 0, "n_complete": 0, "n_matched": 0,
                                "n_inconsistent": 0, "methods": None},
    "rank_report_unmatched": {"n_unmatched": 0, "reason": None},
    "rank_report_offsets": {"n_offsets": 0, "max_offset_ns": None, "max_offset_rank": None,
                            "max_spread_ns": None},
    "rank_report_straggler": {"straggler": None, "caused_wait_ns": None, "wait_share": None,
                              "step_basis": None},
}


def _rank_report(db: Database, timeline_ids: list[int]) -> dict[int, dict[str, Any]]:
    """Per run holding one of ``timeline_ids``, its report row: the runs, then each part
    of the matching's findings in a query of its own, on one DuckDB thread (under the
    ingest's memory cap each thread's hash tables and sorts take their share at once: at
    256 ranks two threads ran out where one spills)."""
    with db.one_thread():
        full = {r["run"]: r for r in db.query_dicts("rank_report_runs", timeline_ids)}
        for part, defaults in _PART_DEFAULTS.items():
            found = {r.pop("run"): r for r in db.query_dicts(part)}
            for run, row in full.items():
                row.update(found.get(run, defaults))
        for run, row in full.items():
            row["whatif"] = worst_whatif(db, run)
    return full
