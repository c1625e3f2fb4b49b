"""Content digests of what an ingest wrote: a sha256 over every events row and timeline.

Ids, paths and times are left out (they depend on the database and the machine), so
the same input ingested by two versions of an ingester gives the same digest exactly
when both wrote the same rows. The tests pin the digests of every fixture; the
benchmarks compare the compiled and the previous ingest on the scaled inputs.
"""

from __future__ import annotations

import json
from typing import Any


def source_digest(db: Any, source_id: int) -> dict[str, Any]:
    """``{"format", "events": sha256, "timelines": sha256, "summary": the source's attrs}``,
    and ``"stacks"`` (frames and stacks tables) where the source interned any."""
    fmt, attrs = db.query("source_summary", source_id)[0]
    out = {
        "format": fmt,
        "events": db.scalar("digest_events", source_id),
        "timelines": db.scalar("digest_timelines", source_id),
        "summary": json.loads(attrs) if attrs else {},
    }
    stacks = db.scalar("digest_stacks", source_id)  # interned frames (allocator snapshots)
    if stacks is not None:
        out["stacks"] = stacks
    return out
