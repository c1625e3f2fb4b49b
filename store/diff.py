"""Comparing two timelines: their alignment (stored or temporary) and what changed.

The alignment is computed here (``align.align`` over the signatures of
``schemas/60_diff_timelines.sql``) and written to the ``alignments`` table, so that the table macros
``timeline_diff``, ``peak_diff``, ``kernel_time_diff`` run in the plain duckdb CLI too. A
read-only connection (``tlview diff --no-store``, the TUI) aligns into temporary tables
of the same names, which DuckDB reads first; they vanish with the connection.
"""

from __future__ import annotations

from typing import Any

from attrs import frozen

from . import align
from .db import Database, insert_arrow

# Bumped whenever align.py or the signatures change what an alignment holds: a stored pair
# of another version is recomputed.
ALIGN_VERSION = 1


class DiffError(Exception):
    """Two timelines that cannot be compared, or one that is not there."""


@frozen
class Side:
    timeline_id: int
    name: str
    format: str
    kind: str
    device: str | None
    title: str = ""  # unique in the database, says its run and source (timelines.title)


@frozen
class AlignmentInfo:
    a: Side
    b: Side
    kind: str
    a_items: int
    b_items: int
    same: int
    changed: int
    deleted: int
    inserted: int
    stored: bool  # in the database file (else in this connection's temporary tables)


def resolve(db: Database, ref: str) -> int:
    """A timeline id from ``ref``: its id, its title, or its name when exactly one timeline
    has it (a compiled graph's copies in other artifacts left out)."""
    if ref.isdigit():
        if db.query("diff_timeline", int(ref)):
            return int(ref)
    named = db.query("diff_timelines_named", ref)
    ids = ([r[0] for r in named if r[1]]  # a title names one
           or [r[0] for r in named if r[2] is None]  # a name: a graph's copies left out
           or [r[0] for r in named])
    if len(ids) == 1:
        return ids[0]
    if len(ids) > 1:
        raise DiffError(f"{len(ids)} timelines are named {ref!r} "
                        f"(ids {', '.join(map(str, ids))}): give an id or a title")
    raise DiffError(f"no timeline {ref!r} (give an id, a title or a name; `tlview info` lists them)")


def side(db: Database, timeline_id: int) -> Side:
    rows = db.query("diff_timeline", timeline_id)
    if not rows:
        raise DiffError(f"no timeline {timeline_id}")
    tid, name, fmt, kind, device, title = rows[0]
    return Side(tid, name, fmt, kind, device, title or name)


def _temp_tables_exist(db: Database) -> bool:
    return bool(db.scalar("alignment_temp_exists"))


def _stored(db: Database, a: int, b: int) -> tuple[Any, ...] | None:
    rows = db.query("alignment_pair", a, b)
    if rows and rows[0][0] == ALIGN_VERSION:
        return rows[0]
    return None


def ensure_alignment(db: Database, a: int, b: int) -> AlignmentInfo:
    """Make the alignment of timelines ``a`` and ``b`` visible to the diff views.

    A writable database stores it (replacing one of another version), in the caller's
    transaction if there is one; a read-only one keeps it in temporary tables.
    """
    sa, sb = side(db, a), side(db, b)
    if sa.kind != sb.kind:
        raise DiffError(f"timelines {a} ({sa.format}) and {b} ({sb.format}) are not of the "
                        "same kind: compare a compiled timeline with one of its format, a "
                        "profiler trace with a trace, a snapshot with a snapshot")
    temp = db.read_only
    if temp and _temp_tables_exist(db):
        row = _stored(db, a, b)
    else:
        row = _stored(db, a, b)
        if row is not None:
            return _info(sa, sb, row, stored=True)
        if temp:
            db.con.execute(db.queries["alignment_temp_tables"])
    if row is not None:
        return _info(sa, sb, row, stored=not temp)
    steps, counts = _compute(db, a, b)
    import pyarrow as pa  # only where an alignment is stored: a diff read goes without it

    table = pa.table({
        "a_timeline_id": pa.array([a] * len(steps), pa.int32()),
        "b_timeline_id": pa.array([b] * len(steps), pa.int32()),
        "pos": pa.array(range(len(steps)), pa.int64()),
        "a_step": pa.array([s[0] for s in steps], pa.int64()),
        "b_step": pa.array([s[1] for s in steps], pa.int64()),
        "method": pa.array([s[2] for s in steps], pa.string()),
    })
    row = (ALIGN_VERSION, sa.kind, *counts)
    db.con.execute(db.queries["alignment_delete_rows"], [a, b])
    db.con.execute(db.queries["alignment_delete_pair"], [a, b])
    insert_arrow(db.con, db.queries["alignment_append_rows"], "_tlview_alignment", table)
    db.con.execute(db.queries["alignment_insert_pair"], [a, b, *row])
    return _info(sa, sb, row, stored=not temp)


def _info(sa: Side, sb: Side, row: tuple[Any, ...], *, stored: bool) -> AlignmentInfo:
    _, kind, na, nb, same, changed, deleted, inserted = row
    return AlignmentInfo(sa, sb, kind, na, nb, same, changed, deleted, inserted, stored)


def _compute(db: Database, a: int, b: int) -> tuple[list[tuple[Any, Any, str]],
                                                    tuple[int, int, int, int, int, int]]:
    ra = db.con.execute(db.queries["diff_signatures"], [a]).fetchall()
    rb = db.con.execute(db.queries["diff_signatures"], [b]).fetchall()
    steps = align.align([r[1] or "" for r in ra], [r[1] or "" for r in rb],
                        [r[2] or "" for r in ra], [r[2] or "" for r in rb])
    out = [(ra[s.a_index][0] if s.a_index is not None else None,
            rb[s.b_index][0] if s.b_index is not None else None, s.method) for s in steps]
    n = {m: 0 for m in (align.SAME, align.CHANGED, align.DELETED, align.INSERTED)}
    for s in steps:
        n[s.method] += 1
    return out, (len(ra), len(rb), n[align.SAME], n[align.CHANGED], n[align.DELETED],
                 n[align.INSERTED])


def refresh_pairs(db: Database, lo: int, hi: int) -> None:
    """Recompute the stored alignments touching timelines [lo, hi] (their events changed,
    or the schema did); one whose timeline is gone is dropped."""
    for a, b in db.query("alignment_pairs_touching", lo, hi):
        db.con.execute(db.queries["alignment_delete_pair"], [a, b])
        db.con.execute(db.queries["alignment_delete_rows"], [a, b])
        if db.query("diff_timeline", a) and db.query("diff_timeline", b):
            ensure_alignment(db, a, b)
