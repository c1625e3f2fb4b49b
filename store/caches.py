"""Caches of the derived views, so that they stay instant on millions of steps.

The events table is the truth; ``_cache_*`` tables hold exactly what the
``_*_derived`` views compute from it, per timeline. They are refreshed for every
timeline an ingest touched, inside the ingest's transaction (so they can never
disagree with committed events), and rebuilt whole when the schema changes. The ranks'
caches (``RANK_CACHES``) span timelines: rebuilt whole when a profiler trace is touched. The
attribution's (``ATTACHMENT_CACHES``) span them too: refreshed for the traces whose
attribution new output code or a new trace can change, rebuilt whole when timelines holding
rows of them change (``refresh_attachments``).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from . import diff
from .db import insert_arrow, restoring

# Dependency order: buffers, then the curve computed from them, then its peak; the
# allocator snapshot caches (schemas/50_allocator_events.sql) and the Flight Recorder dumps'
# (schemas/55_flight_recorder.sql) depend on the events alone.
CACHES = ("buffers", "memory_curve", "peak", "allocator_curve", "allocator_blocks",
          "fr_dump_stats", "fr_calls")
# The many-ranks matching (schemas/45-47_ranks_*.sql), across every profiler trace: rebuilt
# whole, after the per-timeline caches, whenever the timelines refreshed hold a profiler
# trace or rows of it; views of their derivations until a run holds two or more traces
# (a trace alone would pay the matching at each ingest, seconds per GB, for nothing to
# match). In dependency order: the traces' runs, the groups' ranks, the matching.
RANK_CACHES = ("rank_traces", "pg_ranks", "arrivals")
# The attribution of traces' compiled calls to output code (schemas/43_profile_calls.sql,
# 44_profile_attachments.sql), which spans timelines (a trace, and the output code of any
# source, ingested before or after it): refreshed after the per-timeline caches, whenever
# the timelines refreshed hold an output-code timeline or a trace's compiled call (the rows
# of the traces they can change: ``refresh_attachments``), or rows of the caches (rebuilt
# whole). Its derivation is hundreds of views deep: read from the events at each query it
# cost seconds of DuckDB's planning for a few rows. In dependency order (each derivation
# reads the caches before it); tables from the schema's creation on (views of their
# derivations over a shard set).
ATTACHMENT_CACHES = ("output_nodes", "call_candidates", "call_graphs", "extern_ops",
                     "triton_attachments", "kernel_attachments")
# The event kinds the attribution reads (checked by tests/store/test_cache_reads.py): an
# ingest that wrote neither leaves its caches as they are, unchecked.
ATTACHMENT_KINDS = frozenset({"kernel_measured", "node_scheduled"})
# The event kinds each cache's statements read, through its views and the caches before it
# (its rows are made from these alone: a timeline with none of them has none): an ingest
# that wrote none of a cache's kinds skips its statements (``refresh``'s ``kinds``), which
# cost ~10 ms of DuckDB's planning each on any database. tests/store/test_cache_reads.py
# checks these against the tables that the statements' plans scan, and that the caches
# of every fixture are the same skipped or not.
_BUFFERS = frozenset({"buffer_allocated", "buffer_freed"})
_CURVE = _BUFFERS | {"node_scheduled"}
CACHE_KINDS: dict[str, frozenset[str]] = {
    "buffers": _BUFFERS,
    "memory_curve": _CURVE,
    "peak": _CURVE,
    "allocator_curve": frozenset({"allocator_action", "allocator_block", "allocator_segment"}),
    "allocator_blocks": frozenset({"allocator_action", "allocator_block"}),
    "fr_dump_stats": frozenset({"collective_recorded"}),
    "fr_calls": frozenset({"collective_recorded", "process_group_status"}),
}
# The named queries of each cache's refresh beyond its ``cache_clear_*``, ``cache_fill_*``
# and ``cache_ranges_*`` (those of its Python fill, ``PYTHON_FILLS``).
FILL_QUERIES: dict[str, tuple[str, ...]] = {
    "allocator_curve": ("allocator_curve_before", "allocator_curve_deltas"),
}


def refresh(db: Any, timeline_ids: Iterable[int], kinds: Collection[str] | None = None
            ) -> None:
    """Recompute every cache for ``timeline_ids`` (the caller holds the transaction).
    ``kinds``: where the timelines are new (an ingest's: their ids hold no cached rows
    yet), the event kinds written to them; the caches that read none of these
    (``CACHE_KINDS``) are left as they are."""
    ids = sorted(set(timeline_ids))
    names = CACHES if kinds is None else [n for n in CACHES if not CACHE_KINDS[n].isdisjoint(kinds)]
    # One statement per cache and run of consecutive ids (an ingest's timelines are
    # consecutive): an ingest may declare thousands of timelines.
    runs: list[list[int]] = []
    for tid in ids:
        if runs and tid == runs[-1][1] + 1:
            runs[-1][1] = tid
        else:
            runs.append([tid, tid])
    for lo, hi in runs:
        for name in names:
            db.con.execute(db.queries[f"cache_clear_{name}"], [lo, hi])
            ranged = db.queries.get(f"cache_ranges_{name}")
            if ranged is None:
                db.con.execute(db.queries[f"cache_fill_{name}"], [lo, hi])
                continue
            # A cache too large to compute in one statement within the ingest's memory
            # limit names its pieces: (timeline, first, last) of each.
            python_fill = PYTHON_FILLS.get(name)
            for tid, first, last in db.con.execute(ranged, [lo, hi]).fetchall():
                if python_fill is not None and first >= 0:
                    python_fill(db, tid, first, last)
                    continue
                db.con.execute(db.queries[f"cache_fill_{name}"], [tid, first, last])
        # Stored alignments of two runs (schemas/60_diff_timelines.sql) are derived from both
        # timelines' events: recomputed with them.
        diff.refresh_pairs(db, lo, hi)
    refresh_attachments(db, ids, kinds)
    refresh_ranks(db, ids)


def refresh_attachments(db: Any, timeline_ids: Iterable[int],
                        kinds: Collection[str] | None = None) -> None:
    """Refresh the attribution's caches (``ATTACHMENT_CACHES``) for ``timeline_ids``
    (``kinds``: as ``refresh``'s); make them tables the first time (a database's creation).
    Their sources rows must be in: the matching reads the sources' paths.

    A trace's rows in the caches after ``_cache_output_nodes`` are derived from its own
    events, its candidates, and the nodes and graphs of these (every window and join of
    the derivations is per trace, or finer); its candidates, from its events and every
    output-code timeline's nodes and graph (schemas/43_profile_calls.sql). So where
    ``timeline_ids`` hold no row of the caches (new timelines: an ingest's), only the rows
    that they can change are derived again: the nodes of the output-code timelines among
    them; the candidates of the traces that a call may match anew, with them or to them,
    by the names of their events (queries_caches.sql traces_to_match); the rest for the
    traces whose candidates changed (none: nothing more). Where they hold rows (timelines
    whose events changed or went: ``sql --write``), every row is derived again."""
    if kinds is not None and ATTACHMENT_KINDS.isdisjoint(kinds):
        return
    if not db.scalar("attachment_caches_are_tables"):
        for name in ATTACHMENT_CACHES:
            db.con.execute(db.queries[f"cache_make_{name}"])
        return
    ids = sorted(set(timeline_ids))
    if not ids:
        return
    if db.scalar("attachment_rows_among", ids):
        rebuild_attachments(db)
        return
    code = [tid for (tid,) in db.query("output_code_among", ids)]
    if not code and not db.scalar("compiled_calls_among", ids):
        return
    if code:
        _refill(db, ATTACHMENT_CACHES[0], code[0], code[-1])
    first, last = db.con.execute(db.queries["traces_to_match"], [
        *((code[0], code[-1]) if code else _NO_TIMELINE), ids[0], ids[-1]]).fetchone()
    if first is not None:
        _derive_per_call(db, first, last)


def rebuild_attachments(db: Any) -> None:
    """Derive every row of the attribution's caches again (they are tables)."""
    _refill(db, ATTACHMENT_CACHES[0], *EVERY_TIMELINE)
    for name in ATTACHMENT_CACHES[1:]:
        db.con.execute(db.queries[f"cache_clear_{name}"], EVERY_TIMELINE)
    # Without a compiled call or an output-code node the rest are empty: not derived.
    if db.scalar("attachment_calls_and_code"):
        _derive_per_call(db, *EVERY_TIMELINE)


# The range of timeline ids (INTEGER) that holds every timeline; one that holds none.
EVERY_TIMELINE = (-(1 << 31), (1 << 31) - 1)
_NO_TIMELINE = (0, -1)


def _derive_per_call(db: Any, lo: int, hi: int) -> None:
    """The candidates of the traces ``lo``..``hi`` (a range of timeline ids) derived again,
    and, for those whose candidates changed, every cache after them. Each cache is refreshed
    in one statement over a range of ids, from the first trace that changed to the last
    (one per trace would cost each DuckDB's planning of the derivation, ~10-60 ms): the
    rows of the traces between that did not change are derived the same again."""
    db.con.execute(db.queries["call_candidates_derive"], [lo, hi])
    first, last = db.con.execute(db.queries["call_candidates_changed"], [lo, hi]).fetchone()
    if first is not None:
        for name in ATTACHMENT_CACHES[1:]:  # the candidates from those derived above
            _refill(db, name, first, last)
    db.con.execute(db.queries["call_candidates_drop"])


def _refill(db: Any, name: str, lo: int, hi: int) -> None:
    """Attribution cache ``name``'s rows of timelines ``lo``..``hi`` derived again."""
    db.con.execute(db.queries[f"cache_clear_{name}"], [lo, hi])
    db.con.execute(db.queries[f"cache_fill_{name}"], [lo, hi])


def refresh_ranks(db: Any, timeline_ids: Iterable[int]) -> None:
    """Rebuild the ranks' caches (``RANK_CACHES``) if ``timeline_ids`` hold a profiler
    trace or rows of them; make them tables the first time a run holds two or more traces.
    Their sources rows must be in: rank_traces reads the timelines view, which joins them
    (an ingest refreshes its caches after its sources row)."""
    ids = sorted(set(timeline_ids))
    if not ids:
        return
    tables = db.scalar("rank_caches_are_tables")
    if tables:
        if not (db.scalar("rank_traces_among", ids) or db.scalar("rank_cache_rows_among", ids)):
            return
    elif not (db.scalar("rank_traces_among", ids) and db.scalar("rank_trace_count") > 1
              and db.scalar("rank_runs_of_several")):
        return
    with db.one_thread(), _memory_at_least(db, RANKS_MEMORY_BYTES):
        for name in RANK_CACHES:  # made again whole: the derivation's columns as they are now
            db.con.execute(db.queries[f"cache_drop_{name}" if tables else f"cache_view_drop_{name}"])
            db.con.execute(db.queries[f"cache_make_{name}"])


# The matching of 1,024 ranks (24,576 collective calls) once held ~500 MB of DuckDB's buffers
# on one thread (its JSON: each call's group ranks are ~5 KB of text there), more than an
# ingest's cap (store/writer.py INGEST_MEMORY_LIMIT), under which its statement failed and
# with it the ingest. Reading each record's JSON once, it fits in 256 MB (2026-11-28, not
# in 200 MB): it runs under at least twice that, which bounds the ingest's RSS where 1 GiB
# let DuckDB keep ~550 MB (docs/benchmarks.md).
RANKS_MEMORY_BYTES = 512 << 20
_UNITS = {"bytes": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40,
          "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12}


def limit_bytes(limit: Any) -> float:
    """A memory limit as DuckDB states it (``18.6 GiB``) in bytes; infinite where it
    states no size (e.g. no limit)."""
    number, _, unit = str(limit).partition(" ")
    try:
        return float(number) * _UNITS.get(unit, 1)
    except ValueError:
        return float("inf")


@contextmanager
def _memory_at_least(db: Any, nbytes: int) -> Iterator[None]:
    """DuckDB's memory limit raised to ``nbytes`` for the block where it is lower."""
    before = db.scalar("current_memory_limit")
    if limit_bytes(before) >= nbytes:
        yield
        return
    db.con.execute(f"SET memory_limit = '{nbytes}B'")
    with restoring(db.con, f"SET memory_limit = '{before}'"):
        yield


CURVE_SUMS = ("allocated_bytes", "reserved_bytes", "active_blocks", "block_bytes")


def fill_allocator_curve(db: Any, tid: int, lo: int, hi: int) -> None:
    """The allocator curve's rows for entries ``lo``..``hi`` of timeline ``tid``, from the
    cached row before ``lo``: ``_allocator_curve_steps`` (schemas/51_allocator_curve.sql), its
    windowed sums computed as running sums over the entries' deltas in Arrow."""
    con = db.con
    before = con.execute(db.queries["allocator_curve_before"], [tid, lo]).fetchall()
    if not before:
        return
    deltas = con.sql(db.queries["allocator_curve_deltas"], params=[tid, lo, hi]).to_arrow_table()
    if not deltas.num_rows:
        return
    cols: dict[str, Any] = {
        "timeline_id": pa.repeat(pa.scalar(tid, pa.int32()), deltas.num_rows),
        "event_index": deltas["event_index"], "time_us": deltas["time_us"]}
    for name, start in zip(CURVE_SUMS, before[0]):
        cols[name] = running_sum(deltas[name].combine_chunks(), start)
    insert_arrow(con, db.queries["append_allocator_curve"], "_tlview_rows", pa.table(cols))


# Ranged caches whose pieces of entries (first >= 0) are filled in Python rather than by
# their ``cache_fill_*`` statement: name -> fill(db, timeline, first, last). Their piece -1
# (the state before the first entry) is the statement's, as every other cache's pieces.
PYTHON_FILLS: dict[str, Callable[[Any, int, int, int], None]] = {
    "allocator_curve": fill_allocator_curve,
}


def running_sum(deltas: pa.Array, start: int | None) -> pa.Array:
    """``start + sum(deltas) OVER (ROWS UNBOUNDED PRECEDING)`` as SQL gives it: NULL deltas
    are skipped, a row with only NULLs up to it is NULL, and so is every row of a NULL
    ``start``; an overflow of BIGINT raises, as it does in SQL."""
    if start is None:
        return pa.nulls(len(deltas), pa.int64())
    total = pc.cumulative_sum_checked(pc.fill_null(deltas, 0), start=pa.scalar(start, pa.int64()))
    if deltas.null_count:
        seen = pc.cumulative_sum(pc.cast(pc.is_valid(deltas), pa.int64()))
        total = pc.if_else(pc.greater(seen, 0), total, pa.scalar(None, pa.int64()))
    return total


def rebuild_all(db: Any) -> None:
    refresh(db, [row[0] for row in db.query("all_timeline_ids")])


def events_fingerprint(db: Any) -> dict[int, tuple[int, int]]:
    """Per timeline: (event count, XOR of the events' row hashes); two fingerprints
    differ for the timelines whose events were added, removed or changed."""
    return {tid: (n, h) for tid, n, h in db.query("events_fingerprint")}


def changed_timelines(before: dict[int, tuple[int, int]],
                      after: dict[int, tuple[int, int]]) -> list[int]:
    return sorted(t for t in before.keys() | after.keys() if before.get(t) != after.get(t))
