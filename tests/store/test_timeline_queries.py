"""The UI's store queries, as plain functions, against the core views they copy."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from tlview.store import open_database, write_records
from tlview.store import timeline_queries as q

from tests.conftest import SEED_000, SEED_001, SEED_002, SEED_003, ingest_together

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from bench.synthetic_timeline import synthetic_records  # noqa: E402


@pytest.fixture(scope="module")
def seeds_db(tmp_path_factory):
    path = tmp_path_factory.mktemp("q") / "seeds.duckdb"
    ingest_together(path, SEED_000, SEED_001, SEED_002, SEED_003)  # timelines 1-4
    with open_database(path) as db:
        write_records(db, synthetic_records(3000, seed=7, collective_every=100))
    return path


@pytest.fixture
def db(seeds_db):
    with open_database(seeds_db, read_only=True) as d:
        d.query("tui_quiet")
        yield d


CURVE = ("SELECT step, live_bytes, alloc_bytes, freed_bytes, unknown_live FROM {} "
         "WHERE timeline_id = ? ORDER BY step")


@pytest.mark.parametrize("tid", [1, 2, 3, 4, 5])  # 4: XLA shared allocations
def test_curve_summary_buckets_are_column_maxima(db, tid):
    curve = db.sql(CURVE.format("memory_curve"), [tid]).fetchall()
    summary = q.curve_summary(db, tid, 80)
    assert (summary.peak_step, summary.peak_bytes) == db.sql(
        "SELECT peak_step, peak_bytes FROM peak_memory WHERE timeline_id = ?", [tid]).fetchone()
    assert max(summary.buckets) == summary.peak_bytes
    assert len(summary.buckets) == min(80, summary.n_steps)
    cols = len(summary.buckets)
    want = [0] * cols
    for step, live, *_ in curve:
        col = step * cols // len(curve)
        want[col] = max(want[col], live)
    assert list(summary.buckets) == want


@pytest.mark.parametrize("tid,step", [(1, 0), (1, 879), (1, 500), (2, 24), (4, 158),
                                      (5, 1500)])
def test_live_at_equals_macro(db, tid, step):
    live = q.live_at(db, tid, step)
    want = db.sql("SELECT buffer, bytes, alloc_step, last_step FROM live_at(?, ?)",
                  [tid, step]).fetchall()
    got = [(b.buffer, b.bytes, b.alloc_step, b.last_step) for b in live.buffers]
    assert got == want[: q.LIVE_LIMIT]
    assert live.n_live == len(want)
    ((curve_live,),) = db.sql("SELECT live_bytes FROM memory_curve WHERE timeline_id = ? "
                              "AND step = ?", [tid, step]).fetchall()
    assert live.live_bytes == curve_live


def test_xla_peak_is_xlas_own(db):
    """Seed 003: XLA reports its peak at step 158, 50 values, 1,092,637,220 bytes."""
    summary = q.curve_summary(db, 4, 80)
    assert (summary.peak_step, summary.peak_bytes) == (158, 1_092_637_220)
    live = q.live_at(db, 4, 158)
    assert (live.live_bytes, live.n_live) == (1_092_637_220, 50)


def test_step_window_and_memory(db):
    w = q.with_memory(db, q.step_window(db, 1, 875, 10, durations=False))
    assert [r.step for r in w.rows] == list(range(875, 885))
    want = db.sql("SELECT step, node, alloc_bytes, freed_bytes FROM memory_curve "
                  "WHERE timeline_id = 1 AND step BETWEEN 875 AND 884 ORDER BY step").fetchall()
    assert [(r.step, r.node, r.alloc_bytes, r.freed_bytes) for r in w.rows] == want


def test_collectives_in_flight_and_under(db):
    known = q.timeline_collectives(db, 2)
    rows = q.collectives_at(db, 2, known, 4)
    assert [(c.node, c.issue_step, c.wait_step, c.n_under) for c in rows] == [("op3", 3, 5, 1)]
    assert [u.node for u in rows[0].under] == ["op5"]
    assert q.collectives_at(db, 2, known, 5) == ()
    assert q.adjacent_collective(known, 0, True) == 3
    assert q.adjacent_collective(known, 3, False) is None


def test_node_detail_keeps_fused_and_code(db):
    fused = q.node_at(db, 1, 879)
    assert fused.node == "op1012_op1015_op1030_op1033"
    assert fused.snodes == ("op1012", "op1015", "op1030", "op1033")
    assert fused.reads[0].bytes is not None
    tiny = q.node_at(db, 3, 0)
    assert any(title == "triton code" for title, _ in tiny.code)
    assert q.node_at(db, 1, 10**9) is None


def test_search_is_a_parameter_and_wraps(db):
    assert q.search(db, 1, "x' OR 1=1 --", 0) is None
    assert q.search(db, 1, "%", 0) is None
    hit = q.search(db, 1, "BUF1048", 0)
    assert (hit.what, hit.name) == ("buffer", "buf1048")
    again = q.search(db, 1, "buf1048", hit.step)  # wraps around to the same one
    assert again == hit
