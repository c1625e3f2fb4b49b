"""What the terminal UI asks about many ranks: frozen snapshots of one run's collectives.

A run's collectives, their arrival strips (the ranks' lateness in buckets, so a thousand
ranks fit a line), the stragglers and clock offsets are read when the ranks screen opens
a run; the ranks of the collective at the cursor as it moves; where to jump (the node
before each late arrival) once, off the first draw's path. SQL is in
``schemas/queries_rank.sql``; the figures are the views' (``schemas/45_ranks_traces.sql`` to ``49_ranks_whatif.sql``).
"""

from __future__ import annotations

from collections.abc import Callable

from attrs import frozen

from .db import Database

STRIP_BUCKETS = 240  # the most arrival cells a row can show


@frozen
class RunInfo:
    run: int
    world_size: int | None
    ranks: tuple[int, ...]
    missing: tuple[int, ...]
    n_traces: int


@frozen
class Strip:
    """A collective's ranks in buckets (rank order): the latest arrival in each after the
    first one's (None: no rank of the bucket took part), and the bucket of the last rank."""

    late_ns: tuple[int | None, ...]
    last_bucket: int | None


@frozen
class CollectiveRow:
    collective_id: int
    match_key: str
    match_method: str
    kind: str | None
    collective: str | None
    pg: str | None
    profiler_step: int | None
    n_ranks: int
    group_size: int
    complete: bool
    first_arrival_ns: int
    skew_ns: int
    last_rank: int
    comm_ns: int
    bytes: int | None
    busbw_gbps: float | None
    strip: Strip


@frozen
class StragglerRow:
    rank: int
    timeline_id: int
    n_collectives: int
    times_last: int
    caused_wait_ns: int
    delay_ns: int
    wait_share: float | None  # of the others' step_ns: see step_basis
    caused_wait_order: int  # 1: the rank that caused the most wait
    offset_ns: int | None
    spread_ns: int | None
    step_basis: str  # profiler_steps | collectives_span | mixed (stragglers)


@frozen
class WhatIf:
    """A row of whatif_stragglers: step ``step`` without rank ``rank``'s late arrivals."""

    run: int
    step: int
    rank: int
    n_late: int
    saved_ns: int
    measured_ns: int
    modelled_ns: int

    def sentence(self, duration: Callable[[int], str]) -> str:
        """``without rank 5's delay, step 7 would take 410 ms instead of 455 ms``."""
        return (f"without rank {self.rank}'s delay, step {self.step} would take "
                f"{duration(self.modelled_ns)} instead of {duration(self.measured_ns)}")


@frozen
class RunView:
    """Everything the ranks screen shows of one run, read at once."""

    info: RunInfo
    collectives: tuple[CollectiveRow, ...]
    stragglers: tuple[StragglerRow, ...]
    buckets: int  # the strips' length: min(ranks, STRIP_BUCKETS)
    whatif: WhatIf | None = None  # the step a straggler cost the most (read after the rest)


@frozen
class Arrival:
    """One rank of a collective: how late it arrived after the first, how long it waited."""

    rank: int
    timeline_id: int
    seq: int
    late_ns: int
    wait_ns: int
    dur_ns: int
    kernel: str


@frozen
class LateTarget:
    """Where a collective's last rank was just before it arrived: a compiled node (graph
    timeline and step) where the kernel before is attached, else that kernel (or the
    collective's own) in the rank's trace."""

    collective_id: int
    rank: int
    timeline_id: int
    seq: int
    before_seq: int | None
    before_kernel: str | None
    graph_timeline_id: int | None
    step: int | None
    node: str | None


def runs(db: Database) -> tuple[RunInfo, ...]:
    return tuple(RunInfo(run, world, tuple(ranks), tuple(missing or ()), n)
                 for run, world, ranks, missing, n in db.query("tui_rank_runs"))


def strips(rows: list[tuple[int, int, int | None, bool]], buckets: int) -> dict[int, Strip]:
    """``tui_rank_strips`` rows (collective, bucket, late, has last) as one Strip each."""
    late: dict[int, list[int | None]] = {}
    last: dict[int, int | None] = {}
    for cid, bucket, ns, has_last in rows:
        cells = late.setdefault(cid, [None] * buckets)
        last.setdefault(cid, None)
        if 0 <= bucket < buckets:
            cells[bucket] = ns
            if has_last:
                last[cid] = bucket
    return {cid: Strip(tuple(cells), last[cid]) for cid, cells in late.items()}


def run_view(db: Database, info: RunInfo) -> RunView:
    n = max(1, min(len(info.ranks), STRIP_BUCKETS))
    by_id = strips(db.query("tui_rank_strips", info.run, n), n)
    empty = Strip((None,) * n, None)
    rows = tuple(
        CollectiveRow(cid, key, method, kind, name, pg, step, n_ranks, group, complete, first,
                      skew, last, comm, nbytes, busbw, strip=by_id.get(cid, empty))
        for (cid, key, method, kind, name, pg, step, n_ranks, group, complete, first, skew, last,
             comm, nbytes, busbw) in db.query("tui_rank_collectives", info.run))
    stragglers = tuple(StragglerRow(*r) for r in db.query("tui_rank_stragglers", info.run))
    # without the what-if (worst_whatif): its replay over every rank's kernels takes the
    # longest, so the screen reads it after showing the rest
    return RunView(info, rows, stragglers, n)


def worst_whatif(db: Database, run: int) -> WhatIf | None:
    """The step and rank of run ``run`` whose late arrivals cost the most (None: none)."""
    rows = db.query("rank_whatif_worst", run)
    return WhatIf(*rows[0]) if rows else None


def arrivals(db: Database, run: int, collective_id: int) -> tuple[Arrival, ...]:
    return tuple(Arrival(*r) for r in db.query("tui_rank_arrivals", run, collective_id))


def late_targets(db: Database, run: int) -> dict[int, LateTarget]:
    return {r[0]: LateTarget(*r) for r in db.query("tui_rank_late", run)}


def run_of(db: Database, timeline_id: int) -> int | None:
    """The run the trace ``timeline_id`` is part of (None: not a rank trace)."""
    return db.scalar("tui_rank_run_of", timeline_id)
