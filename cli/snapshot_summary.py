"""The lines `tlview ingest` and `tlview info` print for a CUDA allocator snapshot timeline."""

from __future__ import annotations

import datetime as _dt
from collections.abc import Callable
from typing import Any

from tlview.store.fmt import exact_bytes


def _when(time_us: int | None, start_us: int | None) -> str:
    """``+5.001 ms`` into the window, and the wall-clock time torch recorded (UTC)."""
    if time_us is None:
        return "time not recorded"
    clock = _dt.datetime.fromtimestamp(time_us / 1e6, _dt.timezone.utc)
    rel = f"+{(time_us - start_us) / 1000:,.3f} ms, " if start_us is not None else ""
    return f"{rel}{clock:%Y-%m-%d %H:%M:%S}.{time_us % 1_000_000:06d} UTC"


def _at(index: int) -> str:
    return "the start of the window" if index == -1 else f"event {index:,}"


def _peak(db: Any, tid: int) -> dict[str, Any] | None:
    """allocator_peak's row for ``tid`` with the start's time, the reserved peak's time and
    the number of entries (None: no curve), in a few plain scans of the cached curve."""
    s = db.query_dicts("snapshot_summary", tid)[0]
    if not s["n_rows"]:
        return None
    s.update(db.query_dicts("snapshot_summary_firsts", tid, s["allocated_bytes"],
                            s["reserved_bytes"], s["block_bytes"])[0])
    times = dict(db.query("snap_times", tid, s["event_index"], s["reserved_event_index"]))
    s["time_us"] = times.get(s["event_index"])
    s["start_time_us"] = times.get(-1)
    s["reserved_time_us"] = times.get(s["reserved_event_index"])
    s["consistent"] = db.scalar("snap_consistent", tid)
    return s


def _pools(db: Any, tid: int) -> list[dict[str, Any]]:
    """allocator_pools' rows for ``tid``, read only where a segment is in a private pool
    (a CUDA graph's, a MemPool): the view places every block in its segment."""
    if not db.scalar("snapshot_private_segments", tid):
        return []
    return db.query_dicts("snapshot_pools", tid)


def print_snapshot_summary(db: Any, r: dict[str, Any], head: str,
                           out: Callable[[str], None] = print) -> None:
    """After ``head`` (the timeline's words), its events, the allocated and reserved peaks
    with time and top site, every OOM."""
    tid = r["timeline_id"]
    s = _peak(db, tid)
    if s is None:
        out(f"{head}: no allocator state")
        return
    if not s["n_events"]:  # include_traces=False: the state, no history
        out(f"{head}: no trace entries: the end state only (segments and blocks when the "
            "snapshot was taken, e.g. include_traces=False), no curve over time")
        out(f"  allocated {exact_bytes(s['allocated_bytes'])} (in whole blocks "
            f"{exact_bytes(s['block_bytes'])}), reserved {exact_bytes(s['reserved_bytes'])}")
        for p in _pools(db, tid):
            out(f"  pool {p['pool_id']} ({p['kind']}): {p['segments_end']} segments, reserved "
                f"{exact_bytes(p['reserved_end_bytes'])}, allocated "
                f"{exact_bytes(p['allocated_end_bytes'])}")
        return
    actions = ", ".join(f"{n:,} {a}" for a, n in db.query("snapshot_actions", tid))
    out(f"{head}: {s['n_events']:,} events{' (' + actions + ')' if actions else ''}")
    start = s["start_time_us"]
    site = db.query("snapshot_top_site", tid, s["event_index"])
    top = f"; top site {site[0][0]}: {exact_bytes(site[0][1])}" if site else ""
    out(f"  peak allocated {exact_bytes(s['allocated_bytes'])} at {_at(s['event_index'])} "
          f"({_when(s['time_us'], start)}){top}")
    out(f"  peak reserved {exact_bytes(s['reserved_bytes'])} at "
          f"{_at(s['reserved_event_index'])} ({_when(s['reserved_time_us'], start)})")
    out(f"  peak in whole blocks {exact_bytes(s['block_bytes'])} at "
          f"{_at(s['block_event_index'])} (what torch.cuda.max_memory_allocated() counts)")
    if not s["consistent"]:
        out("  the trace does not match its allocations: these sums are not to be trusted")
    for p in _pools(db, tid):
        if p["kind"] == "default":
            continue
        owners = "; ".join(
            f"{o['owner']}{' (' + o['function'] + ')' if o['function'] else ''}: "
            f"{exact_bytes(o['bytes'])}" for o in p["owners"][:3])
        made = f"; allocated in it in the window by {owners}" if owners else ""
        if p["pool_id"] is None:
            out("  segments freed before the snapshot (their pool not recorded)"
                + (f": allocated in them in the window by {owners}" if owners else ""))
            continue
        out(f"  pool {p['pool_id']} ({p['kind']}): {p['segments_end']} segments at the end, "
            f"reserved {exact_bytes(p['reserved_end_bytes'])}, allocated "
            f"{exact_bytes(p['allocated_end_bytes'])}{made}")
    for o in db.query_dicts("snapshot_ooms", tid):
        out(oom_line(o, _when(o["time_us"], start)))


def oom_line(o: dict[str, Any], when: str) -> str:
    """One OOM (a ``snapshot_ooms`` row) with torch's own figures beside tlview's: the
    segment it tried to allocate (its message, the OOM observer) and the reserved bytes
    not in whole blocks (its "reserved but unallocated")."""
    fits = {True: "it would fit", False: "it would not fit", None: "unknown"}[o["request_fits"]]
    segment = ("" if o["segment_bytes"] == o["requested_bytes"] else
               f" (torch's message and OOM observer say {exact_bytes(o['segment_bytes'])}: "
               "the segment it asked CUDA for)")
    return (f"  OOM at {_at(o['event_index'])} ({when}): requested "
            f"{exact_bytes(o['requested_bytes'])}{segment}, CUDA free "
            f"{exact_bytes(o['device_free'])}; allocated {exact_bytes(o['block_bytes'])} in "
            f"whole blocks ({exact_bytes(o['allocated_bytes'])} requested), reserved "
            f"{exact_bytes(o['reserved_bytes'])}, of it "
            f"{exact_bytes(o['reserved_unallocated_bytes'])} reserved but unallocated; "
            f"largest free block {exact_bytes(o['largest_free_block'])} ({fits})")
