"""Caches of the derived views, so that they stay instant on millions of steps.

The events table is the truth; ``_cache_*`` tables hold exactly what the
``_*_derived`` views compute from it, per timeline. They are refreshed for every
timeline an ingest touched, inside the ingest's transaction (so they can never
disagree with committed events), and rebuilt whole when the schema changes.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

# Dependency order: buffers, then the curve computed from them, then its peak; the
# allocator snapshot caches (schemas/50_allocator.sql) depend on the events alone.
CACHES = ("buffers", "memory_curve", "peak", "allocator_curve", "allocator_blocks")


def refresh(db: Any, timeline_ids: Iterable[int]) -> None:
    """Recompute every cache for ``timeline_ids`` (the caller holds the transaction)."""
    ids = sorted(set(timeline_ids))
    # One statement per cache and run of consecutive ids (an ingest's timelines are
    # consecutive): an ingest may declare thousands of timelines.
    runs: list[list[int]] = []
    for tid in ids:
        if runs and tid == runs[-1][1] + 1:
            runs[-1][1] = tid
        else:
            runs.append([tid, tid])
    for lo, hi in runs:
        for name in CACHES:
            db.con.execute(db.queries[f"cache_clear_{name}"], [lo, hi])
            ranged = db.queries.get(f"cache_ranges_{name}")
            if ranged is None:
                db.con.execute(db.queries[f"cache_fill_{name}"], [lo, hi])
                continue
            # A cache too large to compute in one statement within the ingest's memory
            # limit names its pieces: (timeline, first, last) of each.
            for tid, first, last in db.con.execute(ranged, [lo, hi]).fetchall():
                db.con.execute(db.queries[f"cache_fill_{name}"], [tid, first, last])
        # Stored alignments of two runs (schemas/60_diff.sql) are derived from both
        # timelines' events: recomputed with them.
        from . import diff

        diff.refresh_pairs(db, lo, hi)


def rebuild_all(db: Any) -> None:
    refresh(db, [row[0] for row in db.query("all_timeline_ids")])


def events_fingerprint(db: Any) -> dict[int, tuple[int, int]]:
    """Per timeline: (event count, XOR of the events' row hashes); two fingerprints
    differ for the timelines whose events were added, removed or changed."""
    return {tid: (n, h) for tid, n, h in db.query("events_fingerprint")}


def changed_timelines(before: dict[int, tuple[int, int]],
                      after: dict[int, tuple[int, int]]) -> list[int]:
    return sorted(t for t in before.keys() | after.keys() if before.get(t) != after.get(t))
