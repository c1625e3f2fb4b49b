"""Ctrl-C (SIGINT) and SIGTERM during `tlview ingest` stop it: real signals to a real
`tlview ingest -j 2` and its worker processes, and to the one-file and one-after-another
ingests. The workers end without a traceback, nothing of an unfinished file is committed,
the files already committed are named in one line, exit 130 (SIGINT) or 143 (SIGTERM).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import duckdb
import pytest
from tlview import ingest_command
from tlview.cli import main
from tlview.store import Database

from tests.conftest import SEED_001, SEED_002, ingest_into
from tests.ingest.test_inductor_ir_bad_input import snapshot


def _sources(db: Path) -> list[str]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return [r[0] for r in con.execute("SELECT path FROM sources ORDER BY source_id")
                .fetchall()]
    finally:
        con.close()


def _named(err: str, sig: str) -> list[str]:
    """The files the one line says were committed."""
    (line,) = err.splitlines()
    head = f"tlview: interrupted ({sig}): "
    assert line.startswith(head) and line.endswith(
        "; nothing of the unfinished ones was written"), line
    what = line[len(head):line.rindex(";")]
    if what == "no file was committed":
        return []
    return what.split(": ", 1)[1].split(", ")


def _workers_left(marker: str) -> list[int]:
    """Processes whose command line names ``marker`` (forked workers keep the parent's)."""
    left = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and marker in (proc / "cmdline").read_bytes().decode(
                    errors="replace"):
                left.append(int(proc.name))
        except OSError:
            pass
    return left


@pytest.mark.skipif(sys.platform != "linux", reason="forked workers and /proc: Linux")
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_many_files_with_workers(sig, tmp_path):
    files = []
    for i in range(16):  # distinct bytes: no "same bytes as" notes
        f = tmp_path / "in" / f"f{i:02d}.txt"
        f.parent.mkdir(exist_ok=True)
        f.write_text(SEED_002.read_text() + "\n" * i)
        files.append(str(f))
    db = tmp_path / "interrupted.duckdb"
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = dict(os.environ, TLVIEW_INGEST_GROUP_MB="0",  # a transaction per file
               TMPDIR=str(tmp))  # the workers' parsed files, in tempfile's folder
    proc = subprocess.Popen(
        [sys.executable, "-m", "tlview", "ingest", "--verbose", "--db", str(db), "-j", "2",
         *files],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
        # a process group of its own, as a terminal's foreground job; SIGINT as a
        # terminal leaves it (a background shell ignores it, and children inherit that)
        start_new_session=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    assert proc.stdout is not None
    for line in proc.stdout:  # the first file's line (--verbose): said once it is committed
        if line.startswith("committed "):
            break
    if sig == signal.SIGINT:
        os.killpg(proc.pid, sig)  # Ctrl-C: the whole group, workers included
    else:
        proc.send_signal(sig)  # `kill PID`: the parent alone, which ends its workers
    _, err = proc.communicate(timeout=120)
    name = signal.Signals(sig).name
    assert proc.returncode == 128 + sig, err
    assert "Traceback" not in err
    named = _named(err, name)
    assert named == _sources(db)  # exactly what was committed, in order
    assert 1 <= len(named) < len(files)
    assert named == [str(Path(f).resolve()) for f in files[:len(named)]]
    time.sleep(0.5)
    assert _workers_left(str(db)) == []
    assert list(tmp.iterdir()) == []


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_one_after_another(sig, tmp_path, monkeypatch, capsys, ctrl_c):
    """-j 1: the signal comes while the second file is read; the first stays, the second
    is rolled back, the third never starts. One file alone is the same path."""
    db = tmp_path / "db.duckdb"
    ingest_into(db, SEED_001)
    real = ingest_command.records_for
    calls = []

    def records_for(path, fmt=None, **kw):
        calls.append(path)
        for i, rec in enumerate(real(path, fmt, **kw)):
            if len(calls) == 2 and i == 1:
                os.kill(os.getpid(), sig)  # delivered to this, the main, thread
            yield rec

    monkeypatch.setattr(ingest_command, "records_for", records_for)
    _stopped_at_the_second(db, tmp_path, capsys, sig, n_files=3)
    assert len(calls) == 2
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # as before the ingest


def test_one_file_leaves_the_database_as_it_was(tmp_path, monkeypatch, capsys, ctrl_c):
    db = tmp_path / "db.duckdb"
    ingest_into(db, SEED_001)
    before = snapshot(db)
    real = ingest_command.records_for

    def records_for(path, fmt=None, **kw):
        for i, rec in enumerate(real(path, fmt, **kw)):
            if i == 1:
                os.kill(os.getpid(), signal.SIGTERM)
            yield rec

    monkeypatch.setattr(ingest_command, "records_for", records_for)
    code = main(["ingest", "--db", str(db), str(SEED_002)])
    err = capsys.readouterr().err
    assert code == 143
    assert _named(err, "SIGTERM") == []
    assert snapshot(db) == before


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_while_duckdb_runs_a_statement(sig, tmp_path, monkeypatch, capsys, ctrl_c):
    """DuckDB's Python client runs the signal handlers itself while a statement runs in
    the main thread and ends it, then or when it is done, with RuntimeError("Query
    interrupted") in place of the handler's interrupt (duckdb 2.0.1; it made the ingest
    print a traceback and exit 1):
    the ingest stops as on any interrupt. The signal comes while the second file's
    transaction opens (a long statement before its first query there, as a slow one)."""
    db = tmp_path / "db.duckdb"
    ingest_into(db, SEED_001)
    real = Database.query
    opened = []

    def query(self, name, *params):
        if name == "ingest_settings":
            opened.append(name)
            if len(opened) == 2:
                threading.Timer(0.1, os.kill, (os.getpid(), sig)).start()
                guard = threading.Timer(10, self.con.interrupt)  # were the signal not seen
                guard.start()
                try:  # ~0.5 s; the handler runs meanwhile, the error comes at its end
                    self.con.execute("SELECT count(*) FROM range(100000000) t(x) "
                                     "WHERE x % 7 = 3").fetchall()
                finally:
                    guard.cancel()
        return real(self, name, *params)

    monkeypatch.setattr(Database, "query", query)
    _stopped_at_the_second(db, tmp_path, capsys, sig, n_files=2)


def _stopped_at_the_second(db: Path, tmp_path: Path, capsys, sig: int, n_files: int) -> None:
    """``tlview ingest -j 1`` of ``n_files`` copies of a seed, which the signal stops in
    the second: exit 128 + the signal, the first named and committed, nothing else."""
    files = [tmp_path / f"{n}.txt" for n in "abcdef"[:n_files]]
    for i, f in enumerate(files):
        f.write_text(SEED_002.read_text() + "\n" * i)
    before = _sources(db)
    code = main(["ingest", "--db", str(db), "-j", "1", *map(str, files)])
    err = capsys.readouterr().err
    assert code == 128 + sig, err
    assert _named(err, signal.Signals(sig).name) == [str(files[0].resolve())]
    assert _sources(db) == [*before, str(files[0].resolve())]


def _drop_one(sig: int):
    """``sig`` now, and the interrupt its handler raises dropped, as DuckDB 2.0.1 drops it
    where the handler runs in Python code it calls back (an Arrow source's schema, while
    ``register`` runs: cli/interrupts.py)."""
    try:
        os.kill(os.getpid(), sig)  # the handler raises here, in the main thread
    except KeyboardInterrupt:
        pass  # and the exception is lost


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_an_interrupt_duckdb_drops_still_stops_one_after_another(sig, tmp_path, monkeypatch,
                                                                 capsys, ctrl_c):
    """-j 1: the interrupt dropped while the second file's rows are appended; the second is
    rolled back, the third never starts (it went on to commit every file, exit 0)."""
    from tlview.store import writer

    db = tmp_path / "db.duckdb"
    ingest_into(db, SEED_001)
    real_records, real_insert = ingest_command.records_for, writer.insert_arrow
    files_begun: list[str] = []
    dropped: list[int] = []

    def records_for(path, fmt=None, **kw):
        files_begun.append(path)
        return real_records(path, fmt, **kw)

    def insert_arrow(*args, **kw):
        if len(files_begun) == 2 and not dropped:
            dropped.append(sig)
            _drop_one(sig)
        return real_insert(*args, **kw)

    monkeypatch.setattr(ingest_command, "records_for", records_for)
    monkeypatch.setattr(writer, "insert_arrow", insert_arrow)
    _stopped_at_the_second(db, tmp_path, capsys, sig, n_files=3)
    assert len(files_begun) == 2 and dropped


@pytest.mark.skipif(sys.platform != "linux", reason="forked workers: Linux")
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_an_interrupt_duckdb_drops_still_stops_the_workers_ingest(sig, tmp_path, monkeypatch,
                                                                  capsys, ctrl_c):
    """-j 2, the files in one transaction: the interrupt dropped while the workers' rows are
    appended stops the ingest before its COMMIT; nothing is written (it went on to commit
    every file, exit 0: 1 or 2 of each 20-30 real Ctrl-Cs under load, after the first file)."""
    from tlview.store import parsed_files

    db = tmp_path / "db.duckdb"
    ingest_into(db, SEED_001)
    before = snapshot(db)
    real = parsed_files._insert
    dropped: list[int] = []

    def insert(*args, **kw):
        if not dropped:
            dropped.append(sig)
            _drop_one(sig)
        return real(*args, **kw)

    monkeypatch.setattr(parsed_files, "_insert", insert)
    files = [tmp_path / f"{n}.txt" for n in "abc"]
    for i, f in enumerate(files):
        f.write_text(SEED_002.read_text() + "\n" * i)
    code = main(["ingest", "--db", str(db), "-j", "2", *map(str, files)])
    err = capsys.readouterr().err
    assert code == 128 + sig, err
    assert _named(err, signal.Signals(sig).name) == [] and dropped
    assert snapshot(db) == before
