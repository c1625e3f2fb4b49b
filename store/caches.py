"""Caches of the derived views, so that they stay instant on millions of steps.

The events table is the truth; ``_cache_*`` tables hold exactly what the
``_*_derived`` views compute from it, per timeline. They are refreshed for every
timeline an ingest touched, inside the ingest's transaction (so they can never
disagree with committed events), and rebuilt whole when the schema changes.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

# Dependency order: buffers, then the curve computed from them, then its peak.
CACHES = ("buffers", "memory_curve", "peak")


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
            db.con.execute(db.queries[f"cache_fill_{name}"], [lo, hi])


def rebuild_all(db: Any) -> None:
    refresh(db, [row[0] for row in db.query("all_timeline_ids")])
