"""What `tlview diff` reports and the TUI's compare mode shows: plain values read through
the diff macros (schemas/60_diff_timelines.sql to 63_diff_sites.sql) once the pair is aligned (``diff.ensure_alignment``).
"""

from __future__ import annotations

from typing import Any

from attrs import asdict, frozen

from .db import Database
from .diff import AlignmentInfo


@frozen
class PeakSide:
    bytes: int | None
    step: int | None
    node: str | None


@frozen
class DiffReport:
    alignment: AlignmentInfo
    a_peak: PeakSide
    b_peak: PeakSide
    peak_rows: tuple[dict[str, Any], ...]  # peak_diff, status <> 'same', largest |delta| first
    site_rows: tuple[dict[str, Any], ...]  # site_diff (snapshots, profiles), delta <> 0
    a_time_ns: int | None  # total measured time of a's aligned steps (None: not measured)
    b_time_ns: int | None
    kernel_rows: tuple[dict[str, Any], ...]  # kernel_time_diff, delta <> 0 (both measured)
    changed_nodes: tuple[dict[str, Any], ...]  # timeline_diff rows not 'same', in order

    @property
    def peak_delta(self) -> int | None:
        if self.a_peak.bytes is None or self.b_peak.bytes is None:
            return None
        return self.b_peak.bytes - self.a_peak.bytes

    @property
    def time_delta(self) -> int | None:
        if self.a_time_ns is None or self.b_time_ns is None:
            return None
        return self.b_time_ns - self.a_time_ns

    def as_json(self) -> dict[str, Any]:
        al = self.alignment
        return {
            "a": asdict(al.a), "b": asdict(al.b),
            "alignment": {"kind": al.kind, "a_items": al.a_items, "b_items": al.b_items,
                          "same": al.same, "changed": al.changed, "deleted": al.deleted,
                          "inserted": al.inserted, "stored": al.stored},
            "peak": {"a_bytes": self.a_peak.bytes, "a_step": self.a_peak.step,
                     "a_node": self.a_peak.node, "b_bytes": self.b_peak.bytes,
                     "b_step": self.b_peak.step, "b_node": self.b_peak.node,
                     "delta_bytes": self.peak_delta,
                     "delta_ratio": ratio(self.peak_delta, self.a_peak.bytes),
                     "buffers": list(self.peak_rows), "sites": list(self.site_rows)},
            "time": {"a_ns": self.a_time_ns, "b_ns": self.b_time_ns,
                     "a_measured": self.a_time_ns is not None,
                     "b_measured": self.b_time_ns is not None,
                     "delta_ns": self.time_delta,
                     "delta_ratio": ratio(self.time_delta, self.a_time_ns),
                     "kernels": list(self.kernel_rows)},
            "changed_nodes": list(self.changed_nodes),
        }


def ratio(delta: int | None, base: int | None) -> float | None:
    """delta / base, None where either is missing or base is 0."""
    if delta is None or not base:
        return None
    return delta / base


def _dicts(db: Database, name: str, *params: Any) -> tuple[dict[str, Any], ...]:
    return tuple(db.query_dicts(name, *params))


def _peak(db: Database, tid: int) -> PeakSide:
    rows = db.query("diff_peaks", tid)
    if not rows:
        return PeakSide(None, None, None)
    _, nbytes, step, node = rows[0]
    return PeakSide(nbytes, step, node)


def _times(db: Database, a: int, b: int) -> tuple[int | None, int | None]:
    """Each side's total measured time over the aligned steps; None for a side with no
    measured step (a compiled timeline with no trace attached, a trace without GPU
    events, a snapshot): its 0 would read as a time."""
    ta, tb, na, nb = db.query("diff_time_totals", a, b)[0]
    return (ta if na else None), (tb if nb else None)


def report(db: Database, info: AlignmentInfo, top: int = 10,
           changed_limit: int = 50) -> DiffReport:
    """The report of an aligned pair: top ``top`` rows of each list."""
    a, b = info.a.timeline_id, info.b.timeline_id
    ta, tb = _times(db, a, b)
    sites = _dicts(db, "diff_site_rows", a, b, top) \
        if info.kind in ("allocator", "jax_memory_profile") else ()
    return DiffReport(
        alignment=info, a_peak=_peak(db, a), b_peak=_peak(db, b),
        peak_rows=_dicts(db, "diff_peak_rows", a, b, top), site_rows=sites,
        a_time_ns=ta, b_time_ns=tb,
        kernel_rows=_dicts(db, "diff_kernel_rows", a, b, top)
        if ta is not None and tb is not None else (),
        changed_nodes=_dicts(db, "diff_changed_nodes", a, b, changed_limit))


@frozen
class AlignedStep:
    """One aligned position of two timelines (``timeline_diff``)."""

    pos: int
    method: str
    a_step: int | None
    b_step: int | None
    a_node: str | None
    b_node: str | None
    a_live: int | None
    b_live: int | None


@frozen
class Comparison:
    """What the TUI's compare mode shows, read at once: the aligned steps, with both
    memory curves over them, and the rows of peak_diff (or, without memory, of
    kernel_time_diff) that explain the change."""

    alignment: AlignmentInfo
    a_peak: PeakSide
    b_peak: PeakSide
    steps: tuple[AlignedStep, ...]
    peak_rows: tuple[dict[str, Any], ...]
    kernel_rows: tuple[dict[str, Any], ...]
    a_time_ns: int | None
    b_time_ns: int | None

    def pos_of(self, side: str, step: int | None) -> int | None:
        """The aligned position of step ``step`` of side ``a`` or ``b``."""
        if step is None:
            return None
        key = "a_step" if side == "a" else "b_step"
        return next((s.pos for s in self.steps if getattr(s, key) == step), None)


def comparison(db: Database, a: int, b: int, rows: int = 500) -> Comparison:
    """Align ``a`` and ``b`` (temporary tables on a read-only connection) and read the
    compare mode's snapshot."""
    from .diff import ensure_alignment

    info = ensure_alignment(db, a, b)
    steps = tuple(AlignedStep(*r[:8]) for r in db.query("diff_curves", a, b))
    ta, tb = _times(db, a, b)
    return Comparison(
        alignment=info, a_peak=_peak(db, a), b_peak=_peak(db, b), steps=steps,
        peak_rows=_dicts(db, "diff_peak_rows_all", a, b),
        kernel_rows=_dicts(db, "diff_kernel_rows", a, b, rows)
        if ta is not None and tb is not None else (),
        a_time_ns=ta, b_time_ns=tb)
