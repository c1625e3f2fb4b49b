"""The `tlview` command as a person meets it, from a shell.

Missing or wrong databases, bad files among good ones, locks held by other tlview
processes, closed pipes, help and version, queries from files, migrate, --write.
The commands run in this process (conftest.tlview_main: exit status, stdout, stderr)
but where the process is what is tested: the entry point (`python -m tlview`), a
terminal or a pipe, and a second tlview that waits.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import os
import pickle
import shutil
import subprocess
import sys
import textwrap
import time
import zipfile
from collections.abc import Callable
from contextlib import redirect_stdout
from pathlib import Path

import duckdb
import pytest
from tlview.ingest import formats
from tlview.store import Database
from tlview.store.db import SCHEMA_VERSION

from tests.conftest import FIXTURES, SEED_002, tlview_main

ROOT = Path(__file__).resolve().parents[2]
MLP_TRAIN = FIXTURES / "torch" / "mlp_train"
ESC = "\x1b"


tlview = tlview_main


def tlview_process(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """`python -m tlview ARGS` in a process of its own, its output through pipes."""
    return subprocess.run([sys.executable, "-m", "tlview", *args], capture_output=True,
                          text=True, timeout=timeout)


def one_line_error(p: subprocess.CompletedProcess[str]) -> str:
    """The single stderr line of a failed command (exit 2, nothing on stdout, no escapes)."""
    assert p.returncode == 2, (p.returncode, p.stdout, p.stderr)
    assert p.stdout == "" and ESC not in p.stderr
    assert p.stderr.count("\n") == 1 and "Traceback" not in p.stderr, p.stderr
    return p.stderr


@pytest.fixture
def seed_db(tmp_path: Path, alone) -> Callable[[str], Path]:
    """``seed_db(name)``: ``tmp_path / name``, a database holding seed 002 alone, as
    ``ingest_into(tmp_path / name, SEED_002)`` writes it: a copy of the one ingested once
    per test process (conftest's ``alone``), which the test may change."""

    def make(name: str) -> Path:
        db = tmp_path / name
        shutil.copyfile(alone(SEED_002)[0], db)
        return db

    return make


def count(db: Path, sql: str) -> int:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute(sql).fetchone()[0]
    finally:
        con.close()


# -- the terminal UI's command line ----------------------------------------------------


def test_no_database_says_ingest_first(tmp_path):
    err = one_line_error(tlview(cwd=tmp_path))
    assert "no database here (./tlview.duckdb)" in err and "`tlview ingest FILE...` first" in err
    assert not (tmp_path / "tlview.duckdb").exists()


def test_a_dump_given_as_the_database_says_ingest_it(tmp_path):
    err = one_line_error(tlview(str(SEED_002), cwd=tmp_path))
    assert f"{SEED_002} is a dump (inductor_ir), not a database" in err
    assert f"`tlview ingest {SEED_002}` first" in err
    err = one_line_error(tlview(str(MLP_TRAIN), cwd=tmp_path))
    assert "is a folder, not a database" in err


def test_the_ui_never_draws_into_a_pipe(seed_db):
    db = seed_db("u.duckdb")
    err = one_line_error(tlview_process(str(db), timeout=30))
    assert "needs a terminal" in err and f"tlview info --db {db}" in err


# -- ingest: bad files, new databases, folders -------------------------------------------


def test_failed_ingest_into_a_new_database_leaves_nothing(tmp_path):
    bad = tmp_path / "truncated.log"
    bad.write_bytes((FIXTURES / "torch" / "mlp_train.log").read_bytes()[:30_000])
    db = tmp_path / "new.duckdb"
    err = one_line_error(tlview("ingest", str(bad), "--db", str(db)))
    assert f"{bad}:165: output code without a call(args) function" in err
    assert list(tmp_path.iterdir()) == [bad]  # neither the database nor its WAL


def test_one_bad_file_in_a_folder_does_not_stop_the_others(tmp_path):
    folder = tmp_path / "run"
    folder.mkdir()
    shutil.copy(SEED_002, folder / "a_ir_post_fusion.txt")
    (folder / "b_broken.log").write_bytes(
        (FIXTURES / "torch" / "mlp_train.log").read_bytes()[:30_000])
    (folder / "c.pt.trace.json.gz").write_bytes(
        (FIXTURES / "profile" / "jax" / "vm.trace.json.gz").read_bytes()[:3000])
    shutil.copy(SEED_002, folder / "d_ir_post_fusion.txt")
    db = tmp_path / "f.duckdb"
    p = tlview("ingest", str(folder), "--db", str(db))
    assert p.returncode == 2
    lines = p.stderr.splitlines()
    assert lines[0].startswith(f"tlview: {folder / 'c.pt.trace.json.gz'}:1: corrupt gzip data")
    assert lines[1].startswith(f"tlview: {folder / 'b_broken.log'}:165: ")
    assert lines[2] == "tlview: 2 of 4 files failed (above); the other 2 were ingested"
    assert len(lines) == 3
    assert count(db, "SELECT count(*) FROM sources") == 2
    assert p.stdout.count("peak 1,114,112 B (1.06 MiB) at step 1") == 2


def test_identical_graphs_of_a_folder_are_both_ingested(tmp_path):
    """model__1_forward's dump equal to model__0_forward's is a graph of its own."""
    code = (MLP_TRAIN / "0_forward.output_code.py").read_bytes()
    for graph in ("model__0_forward_1.0", "model__1_forward_2.1"):
        (tmp_path / "run" / graph).mkdir(parents=True)
        (tmp_path / "run" / graph / "output_code.py").write_bytes(code)
    db = tmp_path / "i.duckdb"
    p = tlview("ingest", str(tmp_path / "run"), "--db", str(db))
    assert p.returncode == 0, p.stderr
    assert p.stdout.count("peak 644 B (644 B) at step 3") == 2
    assert "same bytes as source 1" in p.stdout
    assert count(db, "SELECT count(*) FROM timelines") == 2
    # The same files again: each is skipped, nothing added.
    again = tlview("ingest", str(tmp_path / "run"), "--db", str(db))
    # one line for all of them (a folder of 141 files said it 141 times)
    assert again.stdout.count("ingested before") == 1
    assert "2 files were ingested before (same path and bytes: " in again.stdout
    assert count(db, "SELECT count(*) FROM timelines") == 2
    # hashed beside the ingest (a new path), or before it (a path seen): the file's sha256
    con = duckdb.connect(str(db), read_only=True)
    shas = {r[0] for r in con.execute("SELECT sha256 FROM sources").fetchall()}
    con.close()
    assert shas == {hashlib.sha256(code).hexdigest()}


def test_a_folder_says_what_it_skipped(tmp_path):
    db = tmp_path / "s.duckdb"
    p = tlview("ingest", str(MLP_TRAIN), "--db", str(db))
    assert p.returncode == 0, p.stderr
    assert (f"{MLP_TRAIN}: skipped 2 files tlview does not read: 2 .json "
            "(--verbose lists them)") in p.stdout.splitlines()
    v = tlview("ingest", "-v", str(FIXTURES / "xla"), "--db", str(db))
    assert v.stdout.splitlines()[:2] == [
        f"{FIXTURES / 'xla'}: skipped 1 file tlview does not read: 1 without suffix",
        f"  skipped {FIXTURES / 'xla' / 'VERSION'}: text starting "
        f"{(FIXTURES / 'xla' / 'VERSION').read_text().splitlines()[0][:40]!r}",
    ]


def _binary_files(tmp_path: Path) -> dict[str, tuple[Path, str]]:
    """Files that are no dump, each with the words its error must say."""
    # A pickle, but no snapshot (a snapshot's dict has segments and device_traces).
    snapshot = pickle.dumps({"state_dict": {"w": [1.0, 2.0]}, "step": 3}, protocol=4)
    zbuf = io.BytesIO()
    with zipfile.ZipFile(zbuf, "w") as z:
        z.writestr("archive/data.pkl", snapshot)
    db = tmp_path / "other.duckdb"
    duckdb.connect(str(db)).close()
    files = {
        "snapshot.pickle": (snapshot, "a Python pickle, but not a CUDA memory snapshot"),
        "snapshot.pickle.gz": (gzip.compress(snapshot), "gzip-compressed: a Python pickle"),
        "model.pt": (zbuf.getvalue(), "a zip archive (torch.save checkpoints"),
        "libfoo.so": (b"\x7fELF\x02\x01\x01" + bytes(range(256)) * 8, "an ELF executable"),
        "t.parquet": (b"PAR1" + bytes(range(256)) * 8, "a Parquet file"),
        "blob.bin": (bytes(range(256)) * 8, "binary data, not a text dump"),
        "blob.gz": (gzip.compress(bytes(range(256)) * 8), "gzip-compressed: binary data"),
    }
    out = {}
    for name, (data, words) in files.items():
        (tmp_path / name).write_bytes(data)
        out[name] = (tmp_path / name, words)
    out["other.duckdb"] = (db, "a DuckDB database, not a dump")
    return out


def test_a_binary_file_is_described_never_dumped(tmp_path):
    files = _binary_files(tmp_path)
    db = tmp_path / "b.duckdb"
    path, words = files["libfoo.so"]  # alone: the one line of a failed command
    assert one_line_error(tlview("ingest", str(path), "--db", str(db))).startswith(
        f"tlview: {path}: {words}")
    # all together (one process, not eight): each file's own line, then the count
    p = tlview("ingest", *(str(path) for path, _ in files.values()), "--db", str(db))
    assert p.returncode == 2 and p.stdout == "" and ESC not in p.stderr, p.stderr
    lines = p.stderr.splitlines()
    assert lines[-1] == f"tlview: {len(files)} of {len(files)} files failed (above); nothing was ingested"
    for name, (path, words) in files.items():
        err = [line for line in lines if line.startswith(f"tlview: {path}:")]
        assert len(err) == 1 and err[0].startswith(f"tlview: {path}: {words}"), (name, lines)
    assert "\\x" not in p.stderr and "\ufffd" not in p.stderr and "Traceback" not in p.stderr
    assert all(c == "\n" or c.isprintable() for c in p.stderr), p.stderr
    assert not db.exists() or count(db, "SELECT count(*) FROM events") == 0


# -- locks: the holder named, readers together, an ingest that waits ------------------


def _holder(tmp_path: Path, db: Path, command: str, *, write: bool,
            hold_s: float = 60) -> subprocess.Popen[str]:
    """A process that holds ``db`` as `tlview COMMAND DB` would, until killed or hold_s."""
    script = tmp_path / "tlview"
    script.write_text(textwrap.dedent(f"""\
        import sys, time, duckdb
        con = duckdb.connect(sys.argv[-1], read_only={not write})
        print("holding", flush=True)
        time.sleep({hold_s})
    """))
    proc = subprocess.Popen([sys.executable, str(script), command, str(db)],
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "holding"
    return proc


def test_lock_error_names_the_tui_that_holds_the_file(seed_db, tmp_path):
    db = seed_db("run.duckdb")
    tui = _holder(tmp_path, db, "tui", write=False)
    try:
        err = one_line_error(tlview("ingest", str(FIXTURES / "seeds" / "003_5960cad812240b69.txt"),
                                    "--db", str(db), env={"TLVIEW_LOCK_WAIT": "0"}))
        assert f"{db} is locked by process {tui.pid} (tlview tui {db}), which has it open " \
               "for reading" in err
        assert "ingest still running" not in err
        # Readers read meanwhile: nothing writes.
        info = tlview("info", "--db", str(db), env={"TLVIEW_LOCK_WAIT": "0"})
        assert info.returncode == 0 and "peak 1,114,112 B" in info.stdout, info.stderr
        sql = tlview("sql", "--db", str(db), "--csv", "SELECT peak_bytes FROM peak_memory",
                     env={"TLVIEW_LOCK_WAIT": "0"})
        assert sql.stdout.split() == ["peak_bytes", "1114112"], sql.stderr
    finally:
        tui.kill()
        tui.wait()


def test_tlview_threads_sets_duckdbs_threads(seed_db):
    """TLVIEW_THREADS gives the connections tlview opens that many DuckDB threads (the views
    over a shard set too: tests/cli/test_shards); what is not a count of 1 or more is one
    line, exit 2, before anything is opened."""
    db = seed_db("threads.duckdb")
    for n in ("1", "3"):
        p = tlview("sql", "--db", str(db), "--csv",
                   "SELECT current_setting('threads') AS threads", env={"TLVIEW_THREADS": n})
        assert (p.returncode, p.stdout.split()) == (0, ["threads", n]), p.stderr
    for bad in ("all", "0", "-2"):
        err = one_line_error(tlview("info", "--db", str(db), env={"TLVIEW_THREADS": bad}))
        assert err == f"tlview: TLVIEW_THREADS={bad!r}: expected a count of threads, 1 or " \
                      "more\n"


def test_a_reader_waits_for_the_writer_and_names_it(seed_db, tmp_path):
    db = seed_db("w.duckdb")
    writer = _holder(tmp_path, db, "ingest", write=True)
    try:
        t = time.monotonic()
        err = tlview("info", "--db", str(db), env={"TLVIEW_LOCK_WAIT": "0.5"}).stderr
        assert time.monotonic() - t >= 0.5
        assert err.splitlines() == [
            f"tlview: {db} is open in process {writer.pid} (tlview ingest {db}); "
            "waiting up to 0.5 s for it",
            f"tlview: {db} is locked by process {writer.pid} (tlview ingest {db}), which has "
            "it open for writing; try again when it finishes (waited 0.5 s)",
        ]
    finally:
        writer.kill()
        writer.wait()


def test_ingest_waits_while_a_reader_holds_the_file(seed_db, tmp_path):
    db = seed_db("r.duckdb")
    reader = _holder(tmp_path, db, "sql", write=False)
    # The reader lets go once the ingest says it waits (not after a fixed time: a loaded
    # machine may take longer than that to start the ingest).
    p = subprocess.Popen(
        [sys.executable, "-m", "tlview", "ingest",
         str(FIXTURES / "seeds" / "003_5960cad812240b69.txt"), "--db", str(db)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "TLVIEW_LOCK_WAIT": "60"})
    try:
        assert p.stderr is not None
        first = p.stderr.readline()
        reader.kill()
        reader.wait()
        out, rest = p.communicate(timeout=120)
    finally:
        reader.kill()
        p.kill()
    assert p.returncode == 0, first + rest
    assert first + rest == (f"tlview: {db} is open in process {reader.pid} (tlview sql {db}); "
                            "waiting up to 60 s for it\n")
    assert count(db, "SELECT count(*) FROM sources") == 2


# -- info ------------------------------------------------------------------------------


def test_info_asks_one_query_whatever_the_number_of_timelines(tmp_path, monkeypatch):
    """`info` on 2 and on 12 timelines runs the same few queries (it ran one to three
    per timeline: minutes on thousands of timelines). The copies come from one `ingest
    --force` naming the file as many times as copies are missing (one command, not one per
    copy: the same sources as one command per copy, each file ingested again)."""
    from tlview.cli import main

    db = tmp_path / "m.duckdb"
    calls: list[str] = []
    for name in ("query", "query_dicts", "scalar", "sql"):
        original = getattr(Database, name)

        def counted(self, *a, _orig=original, _name=name, **k):
            calls.append(_name)
            return _orig(self, *a, **k)

        monkeypatch.setattr(Database, name, counted)

    def info() -> tuple[int, list[str]]:
        calls.clear()
        out = io.StringIO()
        with redirect_stdout(out):
            assert main(["info", "--db", str(db)]) == 0
        return len(calls), out.getvalue().splitlines()

    counts = []
    for n in (2, 12):
        with redirect_stdout(io.StringIO()):
            missing = n - count_sources(db)
            main(["ingest", "--force", "--db", str(db), *[str(SEED_002)] * missing])
            assert count_sources(db) == n
        n_calls, lines = info()
        # the same graph n times (--force): listed and counted once, its copies named
        assert lines[0].startswith(f"{db}: {n} sources, 1 timelines ({n - 1} more not counted")
        assert sum("peak 1,114,112 B (1.06 MiB) at step 1 (op1)" in ln for ln in lines) == 1
        (also,) = [ln for ln in lines if ln.startswith("  also in ")]
        assert also.count("scheduler IR (timeline ") == n - 1
        counts.append(n_calls)
    assert counts[0] == counts[1] <= 4, counts  # counts, meta, the runs, the timelines


def count_sources(db: Path) -> int:
    return count(db, "SELECT count(*) FROM sources") if db.exists() else 0


def test_info_lines_of_every_kind(tmp_path):
    """One query gives what the per-timeline queries gave: peaks, notes, measured lines."""
    db = tmp_path / "k.duckdb"
    xla = FIXTURES / "xla"
    p = tlview("ingest", str(SEED_002), str(xla), str(FIXTURES / "profile" / "coll"),
               "--db", str(db))
    assert p.returncode == 0, p.stderr
    info = tlview("info", "--db", str(db))
    assert info.returncode == 0, info.stderr
    lines = info.stdout.splitlines()[1:]
    runs = [i for i, ln in enumerate(lines) if ln.startswith("run ")]
    assert len(runs) == 3  # seed 002, the XLA folder, the 2-rank folder: a run each
    # the ingest's closing summary is info's listing: each run, then its timelines
    assert "\n".join(lines) + "\n" in p.stdout
    text = info.stdout
    assert "peak 9,289,740 B (8.86 MiB) at step 49" in text  # the rnn's true maximum
    assert "note: XLA states its peak at step 17 (7,684,184 bytes listed" in text
    assert "overlapped by compute 30.78%" in text and "overlapped by compute 22.88%" in text


# -- sql ---------------------------------------------------------------------------------


def test_sql_from_a_file_and_from_stdin(seed_db, tmp_path):
    db = seed_db("q.duckdb")
    q = tmp_path / "live.sql"
    q.write_text("-- who is live at a step\nSELECT buffer, bytes FROM live_at(?, ?)\n")
    p = tlview("sql", "--db", str(db), "--csv", "-f", str(q), "1", "1")
    assert p.stdout.split() == ["buffer,bytes", "buf0,1048576", "buf1,65536"], p.stderr
    p = tlview("sql", "--db", str(db), "--csv", "-", "1", "1",
               stdin="SELECT buffer FROM live_at(?, ?)")
    assert p.stdout.split() == ["buffer", "buf0", "buf1"], p.stderr
    p = tlview("sql", "--db", str(db), "--csv", "-f", "-", stdin="SELECT 42 AS n")
    assert p.stdout.split() == ["n", "42"], p.stderr
    assert "no query" in one_line_error(tlview("sql", "--db", str(db), "-", stdin=""))


def test_sql_write_that_changes_events_refreshes_the_caches(seed_db):
    """Seed 002 (buf0 1,048,576 B steps 0-1, buf1 65,536 B steps 1-2, buf2 65,536 B steps
    2-3, buf3 1,048,576 B step 3; peak 1,114,112 B first at step 1) without buf1: step 1
    holds 1,048,576 B, so the peak's first step moves to step 3 (buf2 + buf3 =
    1,114,112 B), and the cached views say so."""
    db = seed_db("w.duckdb")
    assert "each kind of event is kept in a table of its own, events_<kind>" in one_line_error(
        tlview("sql", "--write", "--db", str(db), "DELETE FROM events WHERE buffer = 'buf1'"))
    p = tlview("sql", "--write", "--db", str(db),
               "DELETE FROM events_buffer_allocated WHERE buffer = 'buf1'; "
               "DELETE FROM events_buffer_freed WHERE buffer = 'buf1'")
    assert p.returncode == 0, p.stderr
    assert p.stderr == ("tlview: events of 1 timeline changed (1): their buffers, memory_curve "
                        "and peak_memory were recomputed\n")
    con = duckdb.connect(str(db), read_only=True)
    assert con.execute("SELECT peak_step, peak_bytes FROM peak_memory").fetchall() == [
        (3, 1_114_112)]
    assert con.execute("SELECT live_bytes FROM memory_curve ORDER BY step").fetchall() == [
        (1_048_576,), (1_048_576,), (65_536,), (1_114_112,)]
    assert "buf1" not in {r[0] for r in con.execute("SELECT buffer FROM buffers").fetchall()}
    for cached, derived in (("peak_memory", "_peak_derived"),
                            ("memory_curve", "_memory_curve_derived"),
                            ("buffers", "_buffers_derived")):
        assert con.execute(f"SELECT count(*) FROM ((FROM {cached} EXCEPT FROM {derived}) "
                           f"UNION ALL (FROM {derived} EXCEPT FROM {cached}))").fetchone()[0] == 0
    con.close()
    # A write that leaves events alone recomputes nothing; BEGIN inside is refused.
    p = tlview("sql", "--write", "--db", str(db), "CREATE TABLE my_notes (t VARCHAR)")
    assert p.returncode == 0 and p.stderr == ""
    assert "transaction of its own" in one_line_error(
        tlview("sql", "--write", "--db", str(db), "BEGIN; DELETE FROM events; COMMIT"))


# -- closed pipes --------------------------------------------------------------------------


@pytest.mark.parametrize("args", [
    ["sql", "SELECT * FROM range(100000)"],
    ["sql", "--csv", "SELECT * FROM range(100000)"],
    ["info"],
    ["migrate"],
    ["--help"],
    ["ingest", "--help"],
])
def test_output_into_a_closed_pipe_ends_quietly(seed_db, args):
    db = seed_db("p.duckdb")
    if args[0] not in ("--help", "ingest"):
        args = [*args, "--db", str(db)]
    proc = subprocess.Popen([sys.executable, "-m", "tlview", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    proc.stdout.close()  # like `| head` having read what it wanted, before any output
    _, err = proc.communicate(timeout=60)
    assert err == "" and proc.returncode in (0, 141)


def test_ingest_into_a_closed_pipe_still_ingests(tmp_path):
    db = tmp_path / "i.duckdb"
    proc = subprocess.Popen([sys.executable, "-m", "tlview", "ingest", str(MLP_TRAIN),
                             "--db", str(db)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    assert proc.stdout is not None
    proc.stdout.close()
    _, err = proc.communicate(timeout=60)
    assert err == "" and proc.returncode == 0
    assert count(db, "SELECT count(*) FROM timelines") == 4


# -- help, version, migrate, make check ------------------------------------------------------


def test_help_documents_every_option_with_its_default_and_the_formats():
    top = tlview("--help").stdout
    for name in formats():
        assert f"  {name} " in top
    for command in ("ingest", "sql", "info", "migrate", "report", "tui"):
        assert f"    {command} " in top
    assert "TLVIEW_LOCK_WAIT" in top
    expected = {
        "ingest": ["--db DB", "--format NAME", "--force", "--verbose"],
        "sql": ["--db DB", "--file FILE", "--csv", "--json", "--write"],
        "info": ["--db DB"],
        "migrate": ["--db DB"],
        "report": ["--db DB", "--format", "--output FILE"],
        "tui": ["--ascii"],
    }
    for command, options in expected.items():
        text = " ".join(tlview(command, "--help").stdout.split())
        text = text[text.index("options:"):]
        for option in options:
            at = text.index(option)
            assert "default" in text[at:text.find(" -", at + len(option) + 1)], (command, option)
    ingest_help = " ".join(tlview("ingest", "--help").stdout.split())
    assert ", ".join(formats()) in ingest_help


def test_version():
    from tlview import __version__

    p = tlview_process("--version")
    assert p.returncode == 0 and p.stdout.startswith(f"tlview {__version__} (duckdb ")


def test_migrate_a_current_file_says_up_to_date_and_changes_nothing(seed_db, tmp_path):
    db = seed_db("c.duckdb")
    p = tlview("migrate", "--db", str(db))
    assert p.stdout == f"{db}: schema v{SCHEMA_VERSION}, storage v1.4.0+, up to date\n", p.stderr
    other = tmp_path / "other.duckdb"
    con = duckdb.connect(str(other))
    con.execute("CREATE TABLE mine (x INTEGER)")
    con.close()
    err = one_line_error(tlview("migrate", "--db", str(other)))
    assert "not a tlview database" in err
    assert count(other, "SELECT count(*) FROM duckdb_tables()") == 1  # nothing added to it


def test_make_check_installs_the_dev_tools_it_runs(tmp_path):
    """After the README's set-up (a .venv with the test extra), `make check` installs the
    dev extra (ruff, mypy) before it runs them. A stand-in python records the calls."""
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    log = tmp_path / "calls"
    fake = venv / "bin" / "python"
    fake.write_text(f"#!/bin/sh\necho \"$*\" >> {log}\n")
    fake.chmod(0o755)
    p = subprocess.run(["make", "-s", "-C", str(ROOT), f"VENV={venv}", "lint", "types"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    calls = log.read_text().splitlines()
    install = next(i for i, c in enumerate(calls) if "pip install" in c and "[test,dev]" in c)
    assert install < next(i for i, c in enumerate(calls) if c.startswith("-m ruff"))
    assert any(c.startswith("-m mypy") for c in calls)
    # Installed once: a second run goes straight to the tools.
    log.unlink()
    subprocess.run(["make", "-s", "-C", str(ROOT), f"VENV={venv}", "lint"], check=True,
                   capture_output=True, timeout=60)
    assert not any("pip install" in c for c in log.read_text().splitlines())


def test_an_interrupted_ingest_says_so_on_a_line_of_its_own(monkeypatch, capsys):
    """Ctrl-C in the middle of a file: the progress line is ended before 'interrupted'
    (it ran into it)."""
    import sys as _sys

    from tlview import cli as cli_module
    from tlview.ingest.lines import stderr_progress

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    err = Terminal()
    monkeypatch.setattr(_sys, "stderr", err)

    def interrupted(args):
        report = stderr_progress("big.json")
        assert report is not None
        report(10_000_000, 40_000_000)
        raise KeyboardInterrupt

    monkeypatch.setattr("tlview.ingest_command.cmd_ingest", interrupted)  # (loaded on use)
    assert cli_module.main(["ingest", "x"]) == 130
    progress, said, end = err.getvalue().split("\n")
    assert progress.startswith("\rbig.json: 10.0/40.0 MB ( 25%)") and end == ""
    assert said == "tlview: interrupted (SIGINT); nothing of the unfinished ingest was written"


def test_one_file_failed_of_two_says_the_other_file(tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_text("not a dump\n")
    p = tlview("ingest", str(SEED_002), str(bad), "--db", str(tmp_path / "o.duckdb"))
    assert p.returncode == 2
    assert p.stderr.splitlines()[-1] == ("tlview: 1 of 2 files failed (above); the other file "
                                         "was ingested")
