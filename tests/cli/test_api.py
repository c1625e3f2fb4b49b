"""The command line and the scripting API, end to end on a real database file.

The commands run in this process (conftest.tlview_main); cli/test_cli runs the
entry point in a process of its own."""

from __future__ import annotations

import json
import subprocess
import sys

import duckdb
import tlview.api as tl

from tests.conftest import SEED_000, SEED_002, ingest_into
from tests.conftest import tlview_main as run
from tests.reference_ir import reference


def test_ingest_prints_summary_and_skips_duplicates(tmp_path):
    db = str(tmp_path / "c.duckdb")
    p = run("ingest", str(SEED_002), "--db", db)
    assert p.returncode == 0, p.stderr
    assert "4 steps" in p.stdout and "peak 1,114,112 B" in p.stdout and "at step 1 (op1)" in p.stdout
    again = run("ingest", str(SEED_002), "--db", db)
    assert again.returncode == 0 and "already ingested" in again.stdout
    forced = run("ingest", str(SEED_002), "--db", db, "--force")
    assert "peak 1,114,112 B" in forced.stdout
    con = duckdb.connect(db, read_only=True)
    assert con.execute("SELECT count(*) FROM sources").fetchone()[0] == 2
    assert con.execute("SELECT count(DISTINCT timeline_id) FROM events").fetchone()[0] == 2


def test_sql_live_at_peak_seed_000_sums_to_peak(tmp_path):
    db = str(tmp_path / "c.duckdb")
    ingest_into(tmp_path / "c.duckdb", SEED_000)
    ref = reference(SEED_000)
    p = run("sql", "--db", db, "--json",
            "SELECT buffer, bytes FROM live_at(1, (SELECT peak_step FROM peak_memory))")
    assert p.returncode == 0, p.stderr
    rows = json.loads(p.stdout)
    assert sum(r["bytes"] for r in rows) == ref["peak_bytes"]
    expected = {b for b, v in ref["buffers"].items()
                if v["alloc"] <= ref["peak_step"] <= v["last"] and v["bytes"] is not None}
    assert {r["buffer"] for r in rows} == expected


def test_sql_is_read_only_by_default(tmp_path):
    db = str(tmp_path / "c.duckdb")
    ingest_into(tmp_path / "c.duckdb", SEED_002)
    p = run("sql", "--db", db, "DELETE FROM events_buffer_allocated")
    assert p.returncode == 2 and "read-only" in p.stderr.lower()
    con = duckdb.connect(db, read_only=True)
    assert con.execute("SELECT count(*) FROM events").fetchone()[0] > 0


def test_sql_parameters_and_csv(tmp_path):
    db = str(tmp_path / "c.duckdb")
    ingest_into(tmp_path / "c.duckdb", SEED_002)
    p = run("sql", "--db", db, "--csv", "SELECT node FROM nodes WHERE node = ?", "op1'; DROP TABLE events; --")
    assert p.returncode == 0 and p.stdout.strip() == "node"
    p = run("sql", "--db", db, "--csv", "SELECT node FROM nodes WHERE node = ?", "op1")
    assert p.stdout.split() == ["node", "op1"]


def test_info(tmp_path):
    db = str(tmp_path / "c.duckdb")
    ingest_into(tmp_path / "c.duckdb", SEED_002)
    p = run("info", "--db", db)
    assert p.returncode == 0 and "1 sources, 1 timelines" in p.stdout and "1,114,112" in p.stdout


def test_api(tmp_path):
    path = tmp_path / "a.duckdb"
    with tl.open(path, write=True) as s:
        (tid,) = s.ingest(SEED_002)
    with tl.open(path) as s:
        (t,) = s.timelines()
        assert (t["name"], t["peak_bytes"], t["peak_step"]) == (SEED_002.name, 1_114_112, 1)
        rows = s.rows("SELECT buffer, bytes FROM live_at(?, ?)", [tid, 1])
        assert rows == [{"buffer": "buf0", "bytes": 1_048_576}, {"buffer": "buf1", "bytes": 65_536}]
        table = s.arrow("SELECT step, live_bytes FROM memory_curve WHERE timeline_id = ? ORDER BY step", [tid])
        assert table.column("live_bytes").to_pylist()[1] == 1_114_112


def test_views_readable_without_tlview(tmp_path):
    """The views live in the file: a plain duckdb process, without tlview imported, reads them."""
    db = tmp_path / "p.duckdb"
    ingest_into(db, SEED_002)
    code = ("import duckdb,sys; c=duckdb.connect(sys.argv[1], read_only=True); "
            "print(c.execute('SELECT peak_bytes FROM peak_memory').fetchone()[0]); "
            "print('tlview' in sys.modules)")
    p = subprocess.run([sys.executable, "-c", code, str(db)], capture_output=True, text=True)
    assert p.stdout.split() == ["1114112", "False"]
