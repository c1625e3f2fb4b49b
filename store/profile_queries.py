"""What the terminal UI asks of a measured timeline (a profiler trace): frozen snapshots.

The screen shows GPU streams as lanes over a window of time, one column per
``col_ns`` nanoseconds; every function here reads only that window (or one kernel),
never the whole trace, except the per-trace summaries read once when the screen opens
(step totals, overlap, attachments). Hot reads go to the events table directly with
bounds on ``ts_ns`` that DuckDB's zone maps use: an event overlapping ``[t0, t1)``
starts before t1 and no earlier than ``t0 - max_dur_ns``. SQL is in
``schemas/queries_profile.sql``; the figures are those of the profile views
(``schemas/40_profile_events.sql`` to ``44_profile_times.sql``), which the tests check them against.
"""

from __future__ import annotations

from attrs import frozen

from .db import Database

GPU_CATEGORIES = ("kernel", "comm", "memcpy", "memset")


@frozen
class Lane:
    """One GPU stream: what ran on it, most frequent category first."""

    device: str | None
    stream: int
    categories: tuple[tuple[str, int], ...]  # (category, events)

    @property
    def n_events(self) -> int:
        return sum(n for _, n in self.categories)

    @property
    def what(self) -> str:
        """``compute``, ``comm``, ``memcpy``... joined with ``+`` when a stream mixes them."""
        names = {"kernel": "compute"}
        return "+".join(names.get(c, c) for c, _ in self.categories)


@frozen
class TraceOverview:
    """The extent of a trace and its lanes, read once when its screen opens."""

    timeline_id: int
    origin_ns: int  # the trace's first event: times are shown from here
    first_ns: int  # first GPU event start (or first event, without GPU events)
    last_ns: int  # last GPU event end
    max_gpu_dur_ns: int
    max_cpu_dur_ns: int
    lanes: tuple[Lane, ...]
    memory_device: str | None  # the device whose [memory] events make the curve
    n_memory_events: int

    @property
    def span_ns(self) -> int:
        return max(1, self.last_ns - self.first_ns)


@frozen
class LaneWindow:
    """Busy time per lane and column over ``[t0, t0 + cols * col_ns)``.

    ``busy[i][c]``: nanoseconds of lane i's events inside column c (events on one stream
    do not overlap, so at most ``col_ns``); ``category[i][c]``: the category with the most
    time there (None: idle); ``count[i][c]``: events touching the column.
    """

    timeline_id: int
    t0: int
    col_ns: int
    cols: int
    busy: tuple[tuple[int, ...], ...]
    category: tuple[tuple[str | None, ...], ...]
    count: tuple[tuple[int, ...], ...]

    @property
    def t1(self) -> int:
        return self.t0 + self.cols * self.col_ns


@frozen
class MeasuredKernel:
    seq: int
    name: str
    category: str
    device: str | None
    stream: int
    ts_ns: int
    dur_ns: int
    correlation: int | None

    @property
    def end_ns(self) -> int:
        return self.ts_ns + self.dur_ns


@frozen
class KernelLaunch:
    """Who launched a GPU event: its runtime call (same correlation) and the CPU op
    whose External id that call carries (as the ``kernel_launches`` view joins them)."""

    seq: int
    runtime: str | None
    runtime_ts_ns: int | None
    thread: int | None
    cpu_op: str | None
    cpu_op_seq: int | None


@frozen
class KernelAttachment:
    """The compiled node a GPU event is attached to (``kernel_attachments``)."""

    seq: int
    graph_timeline_id: int
    graph_name: str
    step: int
    node: str
    method: str
    confidence: float
    candidates: int


@frozen
class StepTotal:
    """One ProfilerStep (``step_totals``) with its CPU range (``profiler_steps``)."""

    step: int | None
    name: str
    ts_ns: int
    cpu_dur_ns: int
    n_gpu_events: int
    kernel_ns: int
    comm_ns: int
    memcpy_ns: int
    memset_ns: int
    gpu_first_ns: int | None
    gpu_last_ns: int | None


@frozen
class OverlapSummary:
    """``comm_overlap_summary`` of one device."""

    device: str | None
    n_comm_kernels: int
    comm_ns: int
    overlapped_ns: int
    exposed_ns: int
    overlap_pct: float | None


@frozen
class CommOverlap:
    """``comm_overlap`` of one communication kernel."""

    seq: int
    overlapped_ns: int
    exposed_ns: int
    overlap_pct: float | None
    op: str | None
    bytes: int | None


@frozen
class TraceSummary:
    """What is read once per trace, off the first draw's path."""

    timeline_id: int
    steps: tuple[StepTotal, ...]
    overlap: tuple[OverlapSummary, ...]
    comm: dict[int, CommOverlap]  # by seq
    peak_allocated: int | None
    peak_ts_ns: int | None
    peak_reserved: int | None


@frozen
class MemoryWindow:
    """The allocator's total (``measured_memory.total_allocated``) per column.

    ``values[c]``: the highest total during column c, counting the level carried in
    from before it (memory stays at the last event's total until the next event);
    None before the first event.
    """

    timeline_id: int
    device: str | None
    t0: int
    col_ns: int
    values: tuple[int | None, ...]


# -- the trace -------------------------------------------------------------------------


def trace_overview(db: Database, timeline_id: int) -> TraceOverview:
    """Lanes, extent and the longest event of each kind (bounds for the window reads)."""
    lanes: dict[tuple[str | None, int], list[tuple[str, int]]] = {}
    first = last = None
    any_first = any_last = None
    max_gpu = max_cpu = 0
    memory: dict[str | None, int] = {}
    rows = db.query("tui_trace_extent", timeline_id)
    for device, stream, category, n, lo, hi, longest in rows:
        any_first = lo if any_first is None else min(any_first, lo)
        any_last = hi if any_last is None else max(any_last, hi)
        if category in GPU_CATEGORIES:
            lanes.setdefault((device, stream), []).append((category, n))
            first = lo if first is None else min(first, lo)
            last = hi if last is None else max(last, hi)
            max_gpu = max(max_gpu, longest)
        elif category in ("cpu_op", "comm_call"):
            max_cpu = max(max_cpu, longest)
        elif category == "memory" and device is not None and device != "cpu":
            memory[device] = memory.get(device, 0) + n
    if first is None:
        first, last = any_first or 0, any_last or 0
    ordered = tuple(Lane(d, s, tuple(sorted(cats, key=lambda c: (-c[1], c[0]))))
                    for (d, s), cats in sorted(lanes.items(), key=lambda kv: (str(kv[0][0]),
                                                                             kv[0][1])))
    mem_device = max(memory, key=lambda d: (memory[d], str(d))) if memory else None
    return TraceOverview(timeline_id, any_first or 0, first, last or first, max_gpu, max_cpu,
                         ordered,
                         mem_device, memory.get(mem_device, 0) if mem_device else 0)


def lane_window(db: Database, overview: TraceOverview, t0: int, col_ns: int,
                cols: int) -> LaneWindow:
    """Busy time of every lane in each of ``cols`` columns from ``t0``."""
    col_ns = max(1, col_ns)
    index = {(lane.device, lane.stream): i for i, lane in enumerate(overview.lanes)}
    busy = [[0] * cols for _ in overview.lanes]
    count = [[0] * cols for _ in overview.lanes]
    best: list[list[tuple[int, str] | None]] = [[None] * cols for _ in overview.lanes]
    t1 = t0 + cols * col_ns
    for device, stream, category, col, ns, n in db.query(
            "tui_lane_busy", overview.timeline_id, t0, col_ns, t1, overview.max_gpu_dur_ns):
        i = index.get((device, stream))
        if i is None or not 0 <= col < cols:
            continue
        busy[i][col] = min(col_ns, busy[i][col] + int(ns))
        count[i][col] += n
        cur = best[i][col]
        if cur is None or (ns, category) > cur:
            best[i][col] = (int(ns), category)
    return LaneWindow(overview.timeline_id, t0, col_ns, cols,
                      tuple(tuple(r) for r in busy),
                      tuple(tuple(b[1] if b else None for b in r) for r in best),
                      tuple(tuple(r) for r in count))


def kernel_at(db: Database, overview: TraceOverview, lane: Lane, t: int,
              col_ns: int) -> MeasuredKernel | None:
    """The event of ``lane`` running at ``t``, else the first one starting in ``[t, t +
    col_ns)`` (so a column that shows work always names a kernel), else None."""
    rows = db.query("tui_kernel_at", overview.timeline_id, lane.device, lane.stream, t,
                    t + max(1, col_ns), overview.max_gpu_dur_ns)
    return MeasuredKernel(*rows[0]) if rows else None


def adjacent_kernel(db: Database, overview: TraceOverview, lane: Lane, after: MeasuredKernel | int,
                    forward: bool) -> MeasuredKernel | None:
    """The next (or previous) event of ``lane`` after a kernel (or a time)."""
    if isinstance(after, MeasuredKernel):
        ts, seq = after.ts_ns, after.seq
    else:
        ts, seq = after, -1 if forward else 2**62
    name = "tui_next_kernel" if forward else "tui_prev_kernel"
    # Look near first (zone maps skip the rest), then everywhere.
    for reach in (64 * max(1, overview.max_gpu_dur_ns), overview.span_ns + 1):
        rows = db.query(name, overview.timeline_id, lane.device, lane.stream, ts, seq, reach)
        if rows:
            return MeasuredKernel(*rows[0])
    return None


def kernel_launch(db: Database, overview: TraceOverview, kernel: MeasuredKernel) -> KernelLaunch:
    """The runtime call and CPU op that launched ``kernel`` (``kernel_launches``' join)."""
    rt = db.query("tui_launching_runtime", overview.timeline_id, kernel.correlation)
    if not rt:
        return KernelLaunch(kernel.seq, None, None, None, None, None)
    name, ts, thread, ext = rt[0]
    op = None
    if ext is not None:
        # The op with that External id encloses the call: look back as far as the
        # longest CPU op, then (if the trace says otherwise) everywhere.
        for reach in (overview.max_cpu_dur_ns, None):
            lo = ts - reach if reach is not None else -(2**62)
            rows = db.query("tui_cpu_op_of", overview.timeline_id, ext, lo,
                            ts if reach is not None else 2**62)
            if rows:
                op = rows[0]
                break
    return KernelLaunch(kernel.seq, name, ts, thread, op[0] if op else None,
                        op[1] if op else None)


def kernel_attachments(db: Database, timeline_id: int) -> dict[int, KernelAttachment]:
    """Every GPU event of the trace attached to a compiled node, by seq."""
    out: dict[int, KernelAttachment] = {}
    for r in db.query("tui_trace_attachments", timeline_id):
        out.setdefault(r[0], KernelAttachment(*r))  # the same graph ingested twice: the first
    return out


def trace_summary(db: Database, overview: TraceOverview) -> TraceSummary:
    tid = overview.timeline_id
    steps = tuple(StepTotal(*r) for r in db.query("tui_step_totals", tid))
    overlap = tuple(OverlapSummary(*r) for r in db.query("tui_overlap_summary", tid))
    comm = {r[0]: CommOverlap(*r) for r in db.query("tui_comm_overlap", tid)}
    peak = db.query("tui_measured_peak", tid, overview.memory_device)
    p_alloc, p_ts, p_res = peak[0] if peak else (None, None, None)
    return TraceSummary(tid, steps, overlap, comm, p_alloc, p_ts, p_res)


def memory_window(db: Database, overview: TraceOverview, t0: int, col_ns: int,
                  cols: int) -> MemoryWindow:
    tid, device = overview.timeline_id, overview.memory_device
    values: list[int | None] = [None] * cols
    if device is None:
        return MemoryWindow(tid, device, t0, col_ns, tuple(values))
    level = memory_at(db, overview, t0 - 1, reach=cols * col_ns)
    per_col = {c: (hi, last) for c, hi, last in db.query(
        "tui_memory_columns", tid, device, t0, col_ns, t0 + cols * col_ns)}
    for c in range(cols):
        hi, last = per_col.get(c, (None, None))
        if hi is not None:
            values[c] = max(hi, level) if level is not None else hi
            level = last
        else:
            values[c] = level
    return MemoryWindow(tid, device, t0, col_ns, tuple(values))


def memory_at(db: Database, overview: TraceOverview, t: int, reach: int) -> int | None:
    """The allocator's total just after its last event at or before ``t``."""
    if overview.memory_device is None:
        return None
    for lo in (t - max(1, reach), -(2**62)):
        rows = db.query("tui_memory_before", overview.timeline_id, overview.memory_device,
                        lo, t)
        if rows:
            return rows[0][0]
    return None


def search_kernel(db: Database, timeline_id: int, text: str, after_ns: int,
                  after_seq: int) -> MeasuredKernel | None:
    """The first GPU event whose name contains ``text`` after a point (wrapping)."""
    if not text:
        return None
    rows = db.query("tui_search_kernel", timeline_id, text, after_ns, after_seq)
    return MeasuredKernel(*rows[0]) if rows else None


def kernel_by_seq(db: Database, timeline_id: int, seq: int) -> MeasuredKernel | None:
    rows = db.query("tui_kernel_by_seq", timeline_id, seq)
    return MeasuredKernel(*rows[0]) if rows else None


def kernels_by_seq(db: Database, timeline_id: int, seqs: tuple[int, ...]) -> tuple[MeasuredKernel, ...]:
    """The given GPU events, in time order."""
    return tuple(MeasuredKernel(*r) for r in db.query("tui_kernels_by_seq", timeline_id,
                                                      list(seqs)))
