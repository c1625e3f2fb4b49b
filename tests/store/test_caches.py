"""The core caches hold exactly what their views derive from the events.

``_cache_buffers``, ``_cache_memory_curve`` and ``_cache_peak`` are filled by statements of
their own (schemas/queries.sql, cheaper than the views); the ``_*_derived`` views
(schemas/10_core_views.sql) are the specification. Compared as multisets (every row with
its count), on every fixture and on events made to hit the corners: frees recorded twice,
values freed before they start, steps with no node, buffers of no step.
"""

from __future__ import annotations

import pytest
from tlview.ingest.records import (
    BufferAllocated,
    BufferFreed,
    NodeScheduled,
    Source,
    Timeline,
)
from tlview.store import caches, open_database, write_records

from tests.conftest import FIXTURES

PAIRS = (("_cache_buffers", "_buffers_derived"),
         ("_cache_memory_curve", "_memory_curve_derived"),
         ("_cache_peak", "_peak_derived"))


def differences(con, cached: str, derived: str) -> int:
    """Rows (with multiplicity) in one of the two and not the other."""
    return con.execute(f"""
        WITH a AS (SELECT *, count(*) AS n FROM {cached} GROUP BY ALL),
             b AS (SELECT *, count(*) AS n FROM {derived} GROUP BY ALL)
        SELECT count(*) FROM ((FROM a EXCEPT FROM b) UNION ALL (FROM b EXCEPT FROM a))
    """).fetchone()[0]


def assert_caches_are_the_views(con) -> None:
    for cached, derived in PAIRS:
        assert con.execute(f"SELECT count(*) FROM {cached}").fetchone()[0] > 0, cached
        assert differences(con, cached, derived) == 0, cached
    # The order the curve is stored in (zone maps of step serve its windows and ranges):
    # per timeline, by step.
    steps = con.execute("SELECT timeline_id, step FROM _cache_memory_curve "
                        "ORDER BY rowid").fetchall()
    by_tl: dict[int, list] = {}
    for tid, step in steps:
        by_tl.setdefault(tid, []).append(step)
    assert all(s == sorted(s) for s in by_tl.values())


# Beside ingest/test_events_digest's tests of the same parser, which ingest the same database.
pytestmark = pytest.mark.xdist_group("fixtures_compiled")


def test_every_fixture_caches_equal_the_views(all_fixtures):
    con = all_fixtures.db.con
    assert con.execute("SELECT count(DISTINCT timeline_id) FROM _cache_buffers"
                       ).fetchone()[0] >= 20
    assert_caches_are_the_views(con)


# The ranks' caches span the profiler traces (store/caches.py RANK_CACHES): rebuilt whole.
RANK_PAIRS = (("_cache_rank_traces", "_rank_traces_derived"),
              ("_cache_arrivals", "_arrivals_derived"), ("_cache_pg_ranks", "_pg_ranks_derived"))


def test_the_ranks_caches_equal_their_derivations(all_fixtures):
    """Every fixture ingested one after another (each rank trace its own ingest): the
    matching cached after the last one is the one derived from all of them."""
    con = all_fixtures.db.con
    assert con.execute("SELECT count(DISTINCT run), count(DISTINCT timeline_id) "
                       "FROM _cache_arrivals").fetchone() >= (2, 4)
    for cached, derived in RANK_PAIRS:
        assert con.execute(f"SELECT count(*) FROM {cached}").fetchone()[0] > 0, cached
        assert differences(con, cached, derived) == 0, cached


def test_a_trace_alone_is_not_matched_at_its_ingest(tmp_path):
    """One rank's trace: the ranks' caches stay views of their derivations (the matching
    would cost its ingest seconds per GB for nothing to match); its partner's trace
    ingested after it: tables holding the matching of both."""
    from tests.conftest import ingest_into

    path = tmp_path / "r.duckdb"
    ingest_into(path, FIXTURES / "ranks" / "skew" / "rank1.pt.trace.json.gz")
    with open_database(path, read_only=True) as db:
        assert not db.scalar("rank_caches_are_tables")
        assert db.con.execute("SELECT count(*) FROM _arrivals").fetchone()[0] == 24
    ingest_into(path, FIXTURES / "profile" / "coll" / "rank0" / "rank0.pt.trace.json.gz")
    with open_database(path, read_only=True) as db:
        assert db.scalar("rank_caches_are_tables")
        assert db.con.execute("SELECT count(*), count(DISTINCT rank) FROM _cache_arrivals"
                              ).fetchone() == (48, 2)
        for cached, derived in RANK_PAIRS:
            assert differences(db.con, cached, derived) == 0, cached


def test_rebuilt_at_once_the_caches_are_unchanged(all_fixtures, tmp_path):
    """All timelines refreshed in one run (what `tlview migrate` does)."""
    path = all_fixtures.copy_to(tmp_path / "copy.duckdb")
    with open_database(path) as db:
        before = db.con.execute("SELECT * FROM _cache_buffers ORDER BY rowid").fetchall()
        db.con.execute("BEGIN")
        caches.rebuild_all(db)
        db.con.execute("COMMIT")
        assert_caches_are_the_views(db.con)
        after = db.con.execute("SELECT * FROM _cache_buffers ORDER BY rowid").fetchall()
        for cached, derived in RANK_PAIRS:
            assert differences(db.con, cached, derived) == 0, cached
    assert sorted(after, key=repr) == sorted(before, key=repr)


def corner_records(n_wide: int = 40):
    """Two timelines. "c": nodes at steps 0, 1, 2, 4 (no step 3); a buffer freed twice
    (the later free counts), one of no step, one whose free lands on the missing step,
    one of unknown size, a free of a buffer never allocated; allocation 7 holds
    overlapping values and one freed before it starts (the views' slow way), allocation
    8 values whose lives touch or leave a gap. "w": ``n_wide`` buffers over 10 steps
    plus 3 of no step."""
    yield Source(path="/corner", size=0, sha256="0" * 64, format="inductor_ir")
    yield Timeline(key="c", name="c", format="inductor_ir")
    for s in (0, 1, 2, 4):
        yield NodeScheduled(timeline="c", step=s, node=f"op{s}")
    yield BufferAllocated(timeline="c", step=0, buffer="a", bytes=100, node="op0")
    yield BufferFreed(timeline="c", step=1, buffer="a", reason="first")
    yield BufferFreed(timeline="c", step=2, buffer="a", reason="second")
    yield BufferAllocated(timeline="c", step=None, buffer="in", bytes=5, is_input=True)
    yield BufferFreed(timeline="c", step=1, buffer="in", reason="last use")
    yield BufferAllocated(timeline="c", step=1, buffer="gap", bytes=30, node="op1")
    yield BufferFreed(timeline="c", step=2, buffer="gap")
    yield BufferAllocated(timeline="c", step=2, buffer="sym", bytes=None, size_expr="s0*4")
    yield BufferFreed(timeline="c", step=9, buffer="ghost", reason="never allocated")
    for buf, off, size, start, end in (("v1", 0, 64, 0, 1), ("v2", 32, 64, 1, 2),
                                       ("v3", 0, 16, 2, 0)):
        yield BufferAllocated(timeline="c", step=start, buffer=buf, bytes=size,
                              allocation=7, offset=off)
        yield BufferFreed(timeline="c", step=end, buffer=buf)
    for buf, start, end in (("w1", 0, 1), ("w2", 4, 4), ("w3", 2, 2)):
        yield BufferAllocated(timeline="c", step=start, buffer=buf, bytes=64,
                              allocation=8, offset=0, attrs={"k": buf})
        yield BufferFreed(timeline="c", step=end, buffer=buf)
    yield Timeline(key="w", name="w", format="inductor_ir")
    for s in range(10):
        yield NodeScheduled(timeline="w", step=s, node=f"n{s}")
    for i in range(n_wide):
        yield BufferAllocated(timeline="w", step=(i * 7) % 10, buffer=f"b{i % 13}_{i}",
                              bytes=1000 + i)
        yield BufferFreed(timeline="w", step=min(9, (i * 7) % 10 + i % 3), buffer=f"b{i % 13}_{i}")
    for i in range(3):
        yield BufferAllocated(timeline="w", step=None, buffer=f"p{i}", bytes=1, is_input=True)


def test_corner_cases(tmp_path):
    with open_database(tmp_path / "c.duckdb") as db:
        write_records(db, corner_records())
        assert_caches_are_the_views(db.con)
        con = db.con
        # The facts the corners were made for, as the views define them.
        assert con.execute("SELECT last_step, free_reason FROM buffers WHERE buffer = 'a'"
                           ).fetchone() == (2, "second")
        assert con.execute("SELECT alloc_step, last_step FROM buffers WHERE buffer = 'v3'"
                           ).fetchone() == (2, 0)
        assert con.execute("SELECT count(*) FROM _cache_buffers WHERE timeline_id = "
                           "(SELECT timeline_id FROM timeline_records WHERE key = 'w')"
                           ).fetchone()[0] == 43


@pytest.mark.parametrize("block", ["one_thread", "memory_at_least"])
def test_a_statement_failing_under_a_setting_is_the_error_raised(db_path, block):
    """A statement that fails inside an ingest's transaction aborts it, and DuckDB then
    refuses the SET that puts the setting back: the statement's error is the one raised
    (the rank caches out of memory at 10,000 ranks said "Current transaction is aborted"),
    and the rollback puts the threads and the memory limit back as they were."""
    import duckdb
    from tlview.store import caches, open_database
    from tlview.store.writer import IngestTransaction

    with open_database(db_path) as db:
        before = (db.scalar("current_threads"), db.scalar("current_memory_limit"))
        txn = IngestTransaction(db)
        setting = (db.one_thread() if block == "one_thread"
                   else caches._memory_at_least(db, 1 << 40))
        with pytest.raises(duckdb.ConversionException), setting:
            db.con.execute("SELECT CAST('x' AS INTEGER)")
        txn.rollback()
        assert db.scalar("current_threads") == before[0]
        # (DuckDB states the limit rounded: set back from its text it may read 0.1 GiB less)
        assert caches.limit_bytes(db.scalar("current_memory_limit")) == pytest.approx(
            caches.limit_bytes(before[1]), rel=0.01)
