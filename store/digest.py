"""Content digests of what an ingest wrote: a sha256 over every events row and timeline.

Ids, paths and times are left out (they depend on the database and the machine), so
the same input ingested by two versions of an ingester gives the same digest exactly
when both wrote the same rows. The tests pin the digests of every fixture; the
benchmarks compare the compiled and the previous ingest on the scaled inputs.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any


def source_digests(db: Any, source_ids: Iterable[int]) -> dict[int, dict[str, Any]]:
    """``source_id -> source_digest`` of each of ``source_ids`` in the database, in one
    statement (schemas/queries.sql digest_sources: its planning is most of the cost of a
    small source's digest)."""
    out: dict[int, dict[str, Any]] = {}
    for sid, fmt, attrs, events, timelines, stacks in db.query("digest_sources",
                                                               sorted(set(source_ids))):
        out[sid] = {"format": fmt, "events": events, "timelines": timelines,
                    "summary": json.loads(attrs) if attrs else {}}
        if stacks is not None:  # interned frames (allocator snapshots)
            out[sid]["stacks"] = stacks
    return out


def source_digest(db: Any, source_id: int) -> dict[str, Any]:
    """``{"format", "events": sha256, "timelines": sha256, "summary": the source's attrs}``,
    and ``"stacks"`` (frames and stacks tables) where the source interned any."""
    return source_digests(db, [source_id])[source_id]
