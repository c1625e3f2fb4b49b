"""What a view of an allocator snapshot asks of the store: frozen snapshots, as
``timeline_queries`` does for schedules. SQL in ``schemas/queries_snapshot.sql``; the
curve and the blocks' lives are cached at ingest, so scrubbing is a range read."""

from __future__ import annotations

from attrs import frozen

from .db import Database
from .timeline_queries import TimelinePeak


@frozen
class SnapshotOverview:
    timeline_id: int
    n_events: int
    peak_event: int  # allocator_peak.event_index (-1: the window's start)
    peak_allocated: int
    peak_reserved: int
    peak_blocks: int
    consistent: bool
    ooms: tuple[int, ...]  # event indexes of the OOMs, in order
    peak_time_us: int | None = None
    reserved_event: int = -1  # allocator_peak.reserved_event_index
    reserved_time_us: int | None = None
    start_time_us: int | None = None  # the window's start (event -1)


@frozen
class SnapshotCurve:
    """allocated/reserved squeezed to columns: the largest of the events in each."""

    allocated: tuple[int, ...]
    reserved: tuple[int, ...]


@frozen
class SnapshotPoint:
    event_index: int  # -1: the window's start
    time_us: int | None
    action: str | None
    size: int | None
    address: int | None
    allocated: int
    reserved: int
    active_blocks: int
    block_bytes: int
    stream: int | None = None
    device_free: int | None = None  # on an oom: what CUDA said was free


@frozen
class SiteRow:
    site: str
    blocks: int
    bytes: int
    block_bytes: int
    stack_id: int | None  # the largest block's stack (see ``stack``)
    stacks: int = 1  # distinct stacks of its blocks


@frozen
class OomDetail:
    """One row of the ``ooms`` view."""

    event_index: int
    time_us: int | None
    requested_bytes: int | None
    device_free: int | None
    stream: int | None
    allocated: int
    reserved: int
    largest_free_block: int | None  # fragmentation's, for the request's stream and pool
    request_fits: bool | None
    segment_bytes: int | None  # what torch says it "Tried to allocate" (ooms)


def overview(db: Database, tid: int) -> SnapshotOverview | None:
    """``allocator_peak``'s figures (read by plain scans: see ``snap_curve_max``), the
    number of entries, the OOMs."""
    n, alloc, res, blocks = db.query("snap_curve_max", tid)[0]
    if n < 0 or alloc is None:
        return None
    idx, r_idx = db.query("snap_first_reaching", tid, alloc, res)[0]
    times = dict(db.query("snap_times", tid, idx, r_idx))
    consistent = db.scalar("snap_consistent", tid)
    ooms = tuple(r[0] for r in db.query("snap_ooms", tid))
    return SnapshotOverview(tid, n, idx, alloc, res, blocks, bool(consistent), ooms,
                            times.get(idx), r_idx, times.get(r_idx), times.get(-1))


def snapshot_peaks(db: Database) -> dict[int, TimelinePeak]:
    """Every snapshot timeline's allocated peak, as the chooser shows peaks (its event)."""
    out = {}
    for tid, alloc in db.query("snap_peak_maxima"):
        if alloc is not None:
            idx = db.query("snap_first_reaching", tid, alloc, None)[0][0]
            out[tid] = TimelinePeak(tid, idx, alloc)
    return out


def curve(db: Database, tid: int, columns: int, n_events: int) -> SnapshotCurve:
    """The curve in ``columns`` columns (event -1 and the ``n_events`` entries)."""
    alloc = [0] * columns
    res = [0] * columns
    for col, a, r in db.query("snap_curve_buckets", tid, columns, max(n_events + 1, 1)):
        if 0 <= col < columns:
            alloc[col], res[col] = a, r
    return SnapshotCurve(tuple(alloc), tuple(res))


def point(db: Database, tid: int, event_index: int) -> SnapshotPoint | None:
    rows = db.query("snap_at", tid, event_index)
    return SnapshotPoint(*rows[0]) if rows else None


def sites_at(db: Database, tid: int, event_index: int, limit: int = 200) -> tuple[SiteRow, ...]:
    """The blocks live after ``event_index``, by allocation site, largest first."""
    return tuple(SiteRow(*r) for r in db.query("snap_sites_at", tid, event_index, limit))


def oom_details(db: Database, tid: int) -> tuple[OomDetail, ...]:
    """Every OOM of the timeline, in order, with what was free (the ``ooms`` view)."""
    return tuple(OomDetail(*r) for r in db.query("snap_oom_details", tid))


def stack(db: Database, tid: int, stack_id: int | None) -> tuple[str, ...]:
    """A stack's frames as ``filename:line:name``, innermost first."""
    if stack_id is None:
        return ()
    rows = db.query("snap_stack", tid, stack_id)
    return tuple(rows[0][0]) if rows else ()
