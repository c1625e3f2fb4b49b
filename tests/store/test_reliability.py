"""Reliability: a killed or interrupted ingest changes nothing; locks give a clear message;
schema versions are never misread."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pytest
from tlview.store import SchemaError, open_database
from tlview.store.db import SCHEMA_VERSION

from tests.conftest import SEED_000, SEED_002, ingest_into, tlview_main
from tests.ingest.test_inductor_ir_bad_input import snapshot

_NAME = __import__("re").compile(r"(?<![A-Za-z0-9])(op|buf)(\d+)")


def big_ir(tmp_path: Path, copies: int = 24) -> Path:
    """Seed 000 repeated with renamed nodes and buffers: a long, real-looking schedule."""
    text = SEED_000.read_text()
    out = tmp_path / "big_ir.txt"
    with open(out, "w") as f:
        for k in range(copies):
            f.write(_NAME.sub(lambda m, k=k: f"{m.group(1)}{int(m.group(2)) + 100_000 * k}", text))
            f.write("\n\n")
    return out


@pytest.fixture(scope="module")
def big(tmp_path_factory) -> Path:
    """``big_ir``, written once for the tests of this module that only read it."""
    return big_ir(tmp_path_factory.mktemp("big_ir"))


def start_ingest(path: Path, db: Path) -> subprocess.Popen[str]:
    """An ingest that holds its transaction for seconds: with the Python IR parser
    (TLVIEW_NATIVE=0), as the compiled one ingests this 26 MB file in about a second,
    before the other processes of these tests could even start. What is tested (the
    transaction, the lock, the signals) is the writer's, the same for both parsers."""
    return subprocess.Popen(
        [sys.executable, "-m", "tlview", "ingest", str(path), "--db", str(db)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "TLVIEW_NATIVE": "0"},
    )


def wait_until_writing(proc: subprocess.Popen[str], db: Path, timeout: float = 30) -> None:
    """Wait until the ingest holds the database and is well into the file."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"ingest ended early: {proc.stderr.read() if proc.stderr else ''}")
        # Look, without taking a lock ourselves, for the database among its open files.
        try:
            fds = os.listdir(f"/proc/{proc.pid}/fd")
            opened = any(os.readlink(f"/proc/{proc.pid}/fd/{fd}") == str(db) for fd in fds)
        except OSError:
            opened = False
        if opened:
            time.sleep(0.5)  # into its transaction, well before the end of the file
            return
        time.sleep(0.02)
    pytest.fail("ingest never took the lock")


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGINT], ids=["kill-9", "ctrl-c"])
def test_interrupted_ingest_leaves_database_unchanged(tmp_path, big, sig, ctrl_c):
    db = tmp_path / "k.duckdb"
    ingest_into(db, SEED_002)
    before = snapshot(db)
    proc = start_ingest(big, db)
    wait_until_writing(proc, db)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    if sig == signal.SIGKILL:
        assert proc.returncode == -signal.SIGKILL
    else:
        assert proc.returncode == 130 and "interrupted" in err and "Traceback" not in err, err
    assert snapshot(db) == before
    # And the database still takes a full ingest afterwards.
    ingest_into(db, SEED_000)
    assert snapshot(db) != before


def test_second_writer_and_reader_get_lock_message(tmp_path):
    """The writer is stopped (SIGSTOP) while the others try: it holds the file as while
    it writes, and cannot finish before they have tried, however slow they are; so a
    quarter of ``big_ir`` is enough, and the test waits for less of an ingest to end."""
    db = tmp_path / "l.duckdb"
    ingest_into(db, SEED_002)
    proc = start_ingest(big_ir(tmp_path, copies=6), db)
    try:
        wait_until_writing(proc, db)
        os.kill(proc.pid, signal.SIGSTOP)
        for args in (["ingest", str(SEED_000)], ["sql", "SELECT 1"], ["info"]):
            p = tlview_main(*args, "--db", str(db), env={"TLVIEW_LOCK_WAIT": "0"})
            assert p.returncode == 2, p.stdout
            # The holder named by its command line, and what it does with the file.
            assert f"locked by process {proc.pid} (" in p.stderr, p.stderr
            assert "-m tlview ingest" in p.stderr and "open for writing" in p.stderr
            assert "Traceback" not in p.stderr and p.stderr.count("\n") == 1
    finally:
        os.kill(proc.pid, signal.SIGCONT)
        proc.wait(timeout=120)
    assert proc.returncode == 0


def test_several_readers_at_once(tmp_path):
    db = tmp_path / "r.duckdb"
    ingest_into(db, SEED_002)
    readers = [open_database(db, read_only=True) for _ in range(2)]
    code = ("import sys; from tlview.store import open_database; "
            "d=open_database(sys.argv[1], read_only=True); print(d.scalar('next_source_id'))")
    p = subprocess.run([sys.executable, "-c", code, str(db)], capture_output=True, text=True)
    assert p.stdout.strip() == "2", p.stderr
    assert [r.scalar("next_source_id") for r in readers] == [2, 2]
    for r in readers:
        r.close()


def _set_version(db: Path, version: int) -> None:
    con = duckdb.connect(str(db))
    con.execute("UPDATE tlview_meta SET value = ? WHERE key = 'schema_version'", [str(version)])
    con.close()


def test_older_schema_refused_read_only_then_migrated(tmp_path):
    db = tmp_path / "o.duckdb"
    ingest_into(db, SEED_002)
    _set_version(db, 0)
    with pytest.raises(SchemaError, match="tlview migrate"):
        open_database(db, read_only=True)
    p = tlview_main("sql", "--db", str(db), "SELECT 1")
    assert p.returncode == 2 and "tlview migrate" in p.stderr
    p = tlview_main("migrate", "--db", str(db))
    assert p.returncode == 0, p.stderr
    assert "migrated from schema v0" in p.stdout
    with open_database(db, read_only=True) as d:
        assert d.scalar("get_meta", "schema_version") == str(SCHEMA_VERSION)
        assert d.sql("SELECT peak_bytes FROM peak_memory").fetchone()[0] == 1_114_112


def test_newer_schema_refused(tmp_path):
    db = tmp_path / "n.duckdb"
    ingest_into(db, SEED_002)
    _set_version(db, 99)
    before = snapshot(db)
    for ro in (True, False):
        with pytest.raises(SchemaError, match="newer tlview"):
            open_database(db, read_only=ro)
    assert snapshot(db) == before


def test_not_a_tlview_database(tmp_path):
    db = tmp_path / "other.duckdb"
    duckdb.connect(str(db)).execute("CREATE TABLE x (a INT)").close()
    with pytest.raises(SchemaError, match="not a tlview database"):
        open_database(db, read_only=True)


def test_missing_database_read_only(tmp_path):
    p = tlview_main("info", "--db", str(tmp_path / "no.duckdb"))
    assert p.returncode == 2 and "no such database" in p.stderr


def test_progress_off_when_not_a_tty(tmp_path):
    p = tlview_main("ingest", str(SEED_002), "--db", str(tmp_path / "p.duckdb"))
    assert p.returncode == 0 and p.stderr == ""


def test_every_view_of_the_schema_is_made_with_its_binding_deferred():
    """schema_ddl defers the binding of every view the schema makes (DuckDB 2.0): a view
    head its pattern missed would be bound when made, seconds of CPU again, unseen."""
    from tlview.store import db

    if not db.DEFERS_BINDING:
        pytest.skip(f"DuckDB {duckdb.__version__} binds views when made")
    con = duckdb.connect()
    heads = [re.sub(r"--[^\n]*", "", s.query).split()[:5]
             for s in con.extract_statements(db.schema_sql())]
    views = [h for h in heads if h[0].upper() == "CREATE" and "VIEW" in map(str.upper, h)]
    ddl = db.schema_ddl()
    assert len(views) > 100
    assert ddl.count("WITH (DEFER_BINDING) AS") == len(views)
