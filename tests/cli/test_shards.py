"""Many files at once: ``ingest -j`` (worker processes, one writer), shard sets read in
place, the Dask path. Each is checked against the serial ingest of the same files,
table by table, row by row."""

from __future__ import annotations

import gzip
import importlib.util
import shutil
from pathlib import Path

import duckdb
import pytest
from tlview.cli import main
from tlview.ingest.discover import discover
from tlview.store import open_database
from tlview.store.digest import source_digests

FIXTURES = Path(__file__).parents[1] / "fixtures"
RANKS = FIXTURES / "ranks"
# the four derived rank traces in three folders (ranks/real_delay holds real ones)
DERIVED = [str(RANKS / d) for d in ("delayed", "runs", "skew")]
COLL = FIXTURES / "profile" / "coll"  # the real 2-rank traces with their compile dumps

# Every table an ingest writes, with its key order (ingested_at: the time of the commit).
TABLES = {
    "sources": "SELECT * EXCLUDE (ingested_at) FROM sources ORDER BY source_id",
    "timeline_records": "SELECT * FROM timeline_records ORDER BY timeline_id",
    "timeline_notes": "SELECT * FROM timeline_notes ORDER BY timeline_id, attrs",
    "events": "SELECT * FROM events ORDER BY source_id, seq",
    "frames": "SELECT * FROM frames ORDER BY source_id, frame_id",
    "stacks": "SELECT * FROM stacks ORDER BY source_id, stack_id",
    "_cache_buffers": "SELECT * FROM _cache_buffers ORDER BY ALL",
    "_cache_memory_curve": "SELECT * FROM _cache_memory_curve ORDER BY ALL",
    "_cache_peak": "SELECT * FROM _cache_peak ORDER BY ALL",
    "_cache_allocator_curve": "SELECT * FROM _cache_allocator_curve ORDER BY ALL",
    "_cache_allocator_blocks": "SELECT * FROM _cache_allocator_blocks ORDER BY ALL",
}


def rows(db_path: Path, sql: str) -> list[tuple]:
    con = duckdb.connect(str(db_path), read_only=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def tables(db_path: Path) -> dict[str, list[tuple]]:
    """Every table of TABLES, read through one connection (a connection costs more than
    these tables' reads)."""
    con = duckdb.connect(str(db_path), read_only=True)
    try:
        return {name: con.execute(sql).fetchall() for name, sql in TABLES.items()}
    finally:
        con.close()


def digests(db_path: Path) -> list[dict]:
    with open_database(db_path, read_only=True) as db:
        ids = [r[0] for r in db.sql("SELECT source_id FROM sources ORDER BY 1").fetchall()]
        by_id = source_digests(db, ids)  # one statement for all of them
        return [by_id[i] for i in ids]


def run(capsys, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture(scope="module")
def serial(tmp_path_factory) -> tuple[Path, str]:
    """The ranks fixtures and the 2-rank run with its dumps, one file after another."""
    db = tmp_path_factory.mktemp("serial") / "s.duckdb"
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["ingest", *DERIVED, str(COLL), "--db", str(db), "-j", "1"]) == 0
    return db, out.getvalue()


def test_parallel_ingest_writes_what_the_serial_ingest_writes(serial, tmp_path, capsys):
    db_serial, out_serial = serial
    db = tmp_path / "p.duckdb"
    code, out, err = run(capsys, "ingest", *DERIVED, str(COLL), "--db", str(db), "-j", "2")
    assert code == 0, err
    assert out == out_serial  # every summary, in the same order, with the same ids
    expected = tables(db_serial)
    got = tables(db)
    assert [len(got[t]) for t in TABLES] == [len(expected[t]) for t in TABLES]
    assert len(got["events"]) > 5000
    for t in TABLES:
        assert got[t] == expected[t], t
    # the pinned content digest (ids, paths and times left out) per source, too
    assert digests(db) == digests(db_serial)


def test_a_bad_file_among_many_is_reported_and_the_rest_are_ingested(tmp_path, capsys):
    folder = tmp_path / "job"
    folder.mkdir()
    for r in (0, 1):
        shutil.copy(COLL / f"rank{r}" / f"rank{r}.pt.trace.json.gz", folder)
    text = gzip.decompress((RANKS / "skew" / "rank1.pt.trace.json.gz").read_bytes())
    (folder / "rank2.pt.trace.json").write_bytes(text[: len(text) // 2])  # cut short
    shutil.copy(RANKS / "runs" / "rank0_rerun.pt.trace.json.gz", folder / "rank3.pt.trace.json.gz")
    results = {}
    for jobs in ("1", "2"):
        db = tmp_path / f"j{jobs}.duckdb"
        results[jobs] = run(capsys, "ingest", str(folder), "--db", str(db), "-j", jobs)
    code, out, err = results["2"]
    assert code == 2
    lines = err.splitlines()
    assert lines[0].startswith(f"tlview: {folder / 'rank2.pt.trace.json'}:")
    assert lines[-1] == "tlview: 1 of 4 files failed (above); the other 3 were ingested"
    assert results["2"] == results["1"]  # the same messages, exit code and summaries
    assert rows(tmp_path / "j2.duckdb", "SELECT count(*) FROM sources") == [(3,)]
    assert tables(tmp_path / "j2.duckdb") == tables(tmp_path / "j1.duckdb")


def test_files_already_ingested_are_skipped_as_in_a_serial_ingest(tmp_path, capsys):
    db = tmp_path / "a.duckdb"
    assert run(capsys, "ingest", str(RANKS / "delayed"), "--db", str(db), "-j", "2")[0] == 0
    code, out, err = run(capsys, "ingest", *DERIVED, "--db", str(db), "-j", "2")
    assert code == 0, err
    assert out.count("ingested before") == 1 and "2 files were ingested before" in out
    assert rows(db, "SELECT count(*) FROM sources") == [(sum(len(discover(Path(d))) for d in DERIVED),)]


HAS_DASK = importlib.util.find_spec("distributed") is not None


@pytest.mark.skipif(not HAS_DASK, reason="dask.distributed is not installed "
                    "(pip install 'tlview[cluster]'; the test extra installs it)")
def test_the_dask_path_writes_what_the_serial_ingest_writes(serial, tmp_path, capsys):
    db_serial, out_serial = serial
    db = tmp_path / "d.duckdb"
    code, out, err = run(capsys, "ingest", *DERIVED, str(COLL), "--db", str(db),
                         "--dask", "local", "-j", "2")
    assert code == 0, err
    assert out == out_serial
    assert tables(db) == tables(db_serial)


# What the views over a shard set must give as over the database of the same files.
VIEWS = {
    "timelines": "SELECT * EXCLUDE (attrs, notes) FROM timelines ORDER BY timeline_id",
    "memory_curve": "SELECT * FROM memory_curve ORDER BY ALL",
    "peak_memory": "SELECT * FROM peak_memory ORDER BY ALL",
    "buffers": "SELECT * FROM buffers ORDER BY ALL",
    "rank_traces": "SELECT * FROM rank_traces ORDER BY ALL",
    "collective_ranks": "SELECT * FROM collective_ranks ORDER BY ALL",
    "collective_skew": "SELECT * FROM collective_skew ORDER BY ALL",
    "clock_offsets": "SELECT * FROM clock_offsets ORDER BY ALL",
    "rank_wait": "SELECT * FROM rank_wait ORDER BY ALL",
    "stragglers": "SELECT * FROM stragglers ORDER BY ALL",
    "collective_nodes": "SELECT * FROM collective_nodes ORDER BY ALL",
}


@pytest.fixture(scope="module")
def coll_db(tmp_path_factory) -> Path:
    """The real 2-rank run (traces and compile dumps), ingested one file after another."""
    import contextlib
    import io

    db = tmp_path_factory.mktemp("coll") / "c.duckdb"
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(["ingest", str(COLL), "--db", str(db), "-j", "1"]) == 0
    return db


@pytest.fixture(scope="module")
def coll_set(tmp_path_factory) -> Path:
    """The same files as a shard set, parsed on two worker processes."""
    import contextlib
    import io

    out = tmp_path_factory.mktemp("coll_set") / "set"
    text = io.StringIO()
    with contextlib.redirect_stdout(text):
        assert main(["shard", str(COLL), "-o", str(out), "-j", "2"]) == 0
    assert "7 shards written" in text.getvalue()
    return out


def assert_same_as_database(shard_set: Path, db_path: Path, *, views: bool = True) -> None:
    """Every table (ids included) and, with ``views``, every view of VIEWS over the set
    equal the db's."""
    from tlview.store.shards import open_shards

    expected_tables = tables(db_path)
    with open_shards(shard_set) as shards:
        for t, q in TABLES.items():
            assert shards.sql(q).fetchall() == expected_tables[t], t
        if not views:
            return
        got = {v: shards.sql(q).fetchall() for v, q in VIEWS.items()}
    with open_database(db_path, read_only=True) as db:
        expected = {v: db.sql(q).fetchall() for v, q in VIEWS.items()}
    assert len(expected["collective_skew"]) == 24
    assert len(expected["peak_memory"]) > 0
    for v in VIEWS:
        assert got[v] == expected[v], v


def test_views_over_shards_equal_views_over_the_database(coll_db, coll_set, capsys):
    assert_same_as_database(coll_set, coll_db)
    # tlview sql --parquet: the same answer as the database's
    code, text, _ = run(capsys, "sql", "--parquet", str(coll_set), "--csv",
                        "SELECT rank, caused_wait_ns FROM stragglers ORDER BY rank")
    assert code == 0
    assert text.splitlines() == ["rank,caused_wait_ns"] + [
        f"{r},{w}" for r, w in rows(coll_db, "SELECT rank, caused_wait_ns FROM stragglers "
                                             "ORDER BY rank")]


def test_the_shard_sets_connection_has_tlview_threads(coll_set, capsys, monkeypatch):
    monkeypatch.setenv("TLVIEW_THREADS", "3")
    code, text, err = run(capsys, "sql", "--parquet", str(coll_set), "--csv",
                          "SELECT current_setting('threads') AS threads")
    assert (code, text.split()) == (0, ["threads", "3"]), err


def test_an_exported_database_is_a_shard_set_with_the_same_views(coll_db, tmp_path, capsys):
    out = tmp_path / "exported"
    code, text, err = run(capsys, "export", "--parquet", str(out), "--db", str(coll_db))
    assert code == 0, err
    assert text.startswith(f"{out}: 7 shards")
    # the tables equal the database's; the views over them are the views over coll_set's
    # equal tables, which test_views_over_shards_equal_views_over_the_database checks
    assert_same_as_database(out, coll_db, views=False)


def test_a_shard_set_is_plain_parquet_that_other_readers_read(coll_db, coll_set):
    import pyarrow.dataset as ds

    events = ds.dataset(coll_set / "events", format="parquet", partitioning="hive").to_table()
    per_source: dict[int, list[int]] = {}
    for sid, dur in zip(events.column("source_id").to_pylist(),
                        events.column("dur_ns").to_pylist()):
        per_source.setdefault(sid, []).append(dur or 0)
    assert sorted((k, len(v), sum(v)) for k, v in per_source.items()) == rows(
        coll_db, "SELECT source_id, count(*), COALESCE(sum(dur_ns), 0) FROM events "
                 "GROUP BY 1 ORDER BY 1")
    # the duckdb module alone, with the script the set carries
    con = duckdb.connect()
    con.execute((coll_set / "views.sql").read_text())
    assert con.execute("SELECT rank, caused_wait_ns FROM stragglers ORDER BY rank").fetchall() \
        == rows(coll_db, "SELECT rank, caused_wait_ns FROM stragglers ORDER BY rank")


def test_shards_ingested_into_a_database_equal_the_serial_ingest(coll_db, coll_set, tmp_path,
                                                                 capsys):
    db = tmp_path / "from_shards.duckdb"
    code, _, err = run(capsys, "ingest", "--from-shards", str(coll_set), "--db", str(db))
    assert code == 0, err
    assert tables(db) == tables(coll_db)
    assert digests(db) == digests(coll_db)


def test_files_already_in_a_shard_set_are_skipped(tmp_path, capsys):
    out = tmp_path / "set"
    assert run(capsys, "shard", str(RANKS / "delayed"), "-o", str(out), "-j", "1")[0] == 0
    code, text, _ = run(capsys, "shard", *DERIVED, "-o", str(out), "-j", "1")
    assert code == 0
    n = sum(len(discover(Path(d))) for d in DERIVED)  # delayed's two, runs' and skew's
    assert text.count("already in") == 2
    assert f"{n - 2} shards written, 2 skipped; the set holds {n}" in text


def test_a_folder_that_is_not_a_shard_set_is_refused(tmp_path, capsys):
    (tmp_path / "notes.txt").write_text("x")
    code, _, err = run(capsys, "shard", str(RANKS / "delayed"), "-o", str(tmp_path))
    assert code == 2
    assert err == (f"tlview: {tmp_path}: not empty and not a shard set (no tlview_shards.json); "
                   "give a new or empty folder\n")
    code, _, err = run(capsys, "sql", "--parquet", str(tmp_path), "SELECT 1")
    assert code == 2 and "not a tlview shard set" in err


def test_without_dask_the_dask_path_says_how_to_install_it(tmp_path, capsys, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "distributed", None)  # import fails
    code, _, err = run(capsys, "ingest", str(RANKS / "delayed"), "--db",
                       str(tmp_path / "x.duckdb"), "--dask", "local")
    assert code == 2
    assert "pip install 'tlview[cluster]'" in err
    assert not (tmp_path / "x.duckdb").exists()
