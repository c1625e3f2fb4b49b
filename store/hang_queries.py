"""What the ingest's report, the run report and the hang screen ask about hangs: frozen
snapshots of the Flight Recorder views (schemas/55_flight_recorder.sql) through the named
queries of ``schemas/queries_hang.sql``. No figure is computed here: each is a view's.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from attrs import frozen

from .db import Database


@frozen
class Verdict:
    """One row of hang_verdict (see the view for each field)."""

    process_group: str
    pg_desc: str | None
    seq: int
    finding: str
    rank: int
    verdict: str
    culprit: bool | None
    expected_ops: str | None
    expected_sizes: str | None
    ops: str | None
    in_sizes: str | None
    since_ns: int | None
    last_op: str | None
    last_group: str | None
    last_seq: int | None
    last_ns: int | None
    blocked_in: str | None
    root: bool
    reason: str
    p2p_seq: int | None = None  # a point-to-point exchange's p2p id; None: a collective


@frozen
class Incident:
    """One hang: its dumps, the ranks it lacks, what conflicts, and its verdict rows."""

    incident: int
    n_dumps: int
    ranks: tuple[int, ...]
    missing: tuple[int, ...]
    conflicts: tuple[int, ...]
    conflict_paths: tuple[str, ...]  # 'rank path' of each conflicting dump
    no_rank: int
    versions: tuple[str, ...]
    versions_known: bool
    first_ns: int | None
    last_ns: int | None
    verdicts: tuple[Verdict, ...]
    # TORCH_TRACE compile ids some of its ranks lack: (compile id, ranks with, ranks without)
    compile_divergence: tuple[tuple[str, tuple[int, ...], tuple[int, ...]], ...] = ()

    def paths_of(self, rank: int) -> tuple[str, ...]:
        """The conflicting dumps that claim ``rank``."""
        return tuple(p.split(" ", 1)[1] for p in self.conflict_paths
                     if p.split(" ", 1)[0] == str(rank))

    @property
    def culprits(self) -> tuple[Verdict, ...]:
        return tuple(v for v in self.verdicts if v.culprit)

    @property
    def root(self) -> tuple[Verdict, ...]:
        return tuple(v for v in self.verdicts if v.root)


@frozen
class Cell:
    """A rank's progress in one group (hang_grid): last started (else enqueued) and
    completed sequence ids, and its verdict where the group has one."""

    rank: int
    process_group: str
    pg_desc: str | None
    last_enqueued: int | None
    last_started: int | None
    last_completed: int | None
    last_op: str | None
    pending: int
    verdict: str | None
    culprit: bool | None
    root: bool | None


@frozen
class Group:
    process_group: str
    pg_desc: str | None
    members: tuple[int, ...]
    members_from: str
    missing: tuple[int, ...]


@frozen
class Grid:
    """An incident's ranks x process groups, for the hang screen."""

    incident: Incident
    groups: tuple[Group, ...]
    cells: tuple[Cell, ...]


@frozen
class Entry:
    step: int | None
    process_group: str | None
    pg_desc: str | None
    seq: int | None
    op: str | None
    in_sizes: str | None
    state: str | None
    completed: bool | None
    ts_ns: int | None


@frozen
class Thread:
    timeline_id: int
    index: int
    thread: str | None
    name: str | None
    state: str | None
    frames: tuple[str, ...]


@frozen
class Activity:
    timeline_id: int
    name: str
    category: str | None
    start_ns: int
    end_ns: int


@frozen
class RankDetail:
    """One rank of an incident: its newest entries, its threads, its profiler timeline's
    end before the hang (none where no trace of the rank is ingested)."""

    rank: int
    entries: tuple[Entry, ...]
    threads: tuple[Thread, ...]
    profile_end: tuple[Activity, ...]
    hang_ns: int | None = None  # when the incident's first hung collective was enqueued


def group_name(pg_desc: str | None, process_group: str) -> str:
    """How a group is named to a person: its description, else (none, or torch's
    'undefined') ``group <name>``."""
    return pg_desc if pg_desc and pg_desc != "undefined" else f"group {process_group}"


# Read fr_dumps once per summary, grid and report (dumps_read_once); off, each query plans
# the view anew.
READ_DUMPS_ONCE = True


@contextmanager
def dumps_read_once(db: Database) -> Iterator[None]:
    """For the block, fr_dumps read once in ``db``'s connection (hang_dumps_once): the hang
    views ask it many times over, each time planned anew. The same rows; dropped at the
    block's end (a block inside another keeps the outer one's). READ_DUMPS_ONCE off: the
    views as they are (what tests compare)."""
    if not READ_DUMPS_ONCE or db.scalar("hang_dumps_are_read"):
        yield
        return
    db.query("hang_dumps_once")
    try:
        yield
    finally:
        db.query("hang_dumps_drop")


def hang_summary(db: Database, timeline_ids: list[int] | None = None) -> tuple[Incident, ...]:
    """Every incident (only those holding one of ``timeline_ids``, where given), with its
    verdict: plain data for reports."""
    with dumps_read_once(db):
        return tuple(incident(db, r, db.query_dicts("hang_verdicts", r["incident"]))
                     for r in db.query_dicts("hang_incidents", timeline_ids, None))


def incident(db: Database, r: dict[str, Any], verdicts: list[dict[str, Any]]) -> Incident:
    """An incident from its row of ``hang_incidents`` and its rows of ``hang_verdicts``."""
    ranks = list(r["ranks"] or ()) + list(r["missing"] or ())
    diverge = tuple((c, tuple(w), tuple(m)) for c, w, m in
                    db.query("hang_compile_divergence", ranks)) if ranks else ()
    return Incident(
        incident=r["incident"], n_dumps=r["n_dumps"], ranks=tuple(r["ranks"] or ()),
        missing=tuple(r["missing"] or ()), conflicts=tuple(r["conflicts"] or ()),
        conflict_paths=tuple(r["conflict_paths"] or ()), no_rank=r["no_rank"],
        versions=tuple(v for v in r["versions"] or () if v is not None),
        versions_known=bool(r["versions_known"]), first_ns=r["first_ns"],
        last_ns=r["last_ns"], verdicts=tuple(Verdict(**v) for v in verdicts),
        compile_divergence=diverge)


def incident_of(db: Database, timeline_id: int) -> int | None:
    """The incident a dump (or a rank's stack dump) belongs to, or None."""
    return db.scalar("hang_incident_of", timeline_id)


def grid(db: Database, incident: Incident) -> Grid:
    with dumps_read_once(db):
        groups = tuple(Group(g["process_group"], g["pg_desc"], tuple(g["members"] or ()),
                             g["members_from"], tuple(g["missing"] or ()))
                       for g in db.query_dicts("hang_groups", incident.incident))
        cells = tuple(Cell(*row) for row in db.query("hang_grid", incident.incident))
    return Grid(incident, groups, cells)


def rank_detail(db: Database, incident: Incident, rank: int, n: int = 12) -> RankDetail:
    entries = tuple(Entry(*r) for r in db.query("hang_rank_entries", incident.incident, rank, n))
    threads = tuple(Thread(r[0], r[1], r[2], r[3], r[4], tuple(r[5] or ()))
                    for r in db.query("hang_rank_stacks", incident.incident, rank))
    since = min((v.since_ns for v in incident.verdicts if v.since_ns is not None),
                default=incident.last_ns)
    profile: tuple[Activity, ...] = ()
    if since is not None and db.scalar("hang_has_profile"):
        profile = tuple(Activity(*r) for r in db.query("hang_rank_profile_end", since, rank, n))
    return RankDetail(rank, entries, threads, profile, since)


def as_json(incidents: tuple[Incident, ...]) -> list[dict[str, Any]]:
    """The summary as JSON-ready dicts (the run report's machine-readable form)."""
    import attrs

    return json.loads(json.dumps([attrs.asdict(i) for i in incidents]))
