"""The writer of ``ingest -j`` (cli/parallel_ingest.py): parsed files share transactions,
yet every row, id, cache and message is the serial ingest's; a transaction that fails is
written again file by file. Small dumps (three IR and XLA seeds, one twice), so that
each ingest takes a fraction of a second."""

from __future__ import annotations

import shutil
import signal
from pathlib import Path

import duckdb
import pytest
import tlview.parallel_ingest as parallel_ingest
from tlview.cli import main
from tlview.store import caches
from tlview.store.parsed_files import Parsed

from tests.cli.test_shards import TABLES, digests, tables
from tests.store.test_cache_reads import assert_caches_are_a_full_refresh

SEEDS = Path(__file__).parents[1] / "fixtures" / "seeds"
DUMPS = ("001_a33eeda162b4c37a.txt", "002_0926b2a0123efc8b.txt", "003_5960cad812240b69.txt")


@pytest.fixture
def dumps(tmp_path: Path) -> Path:
    """The three seeds, and the second again under another name (a source of its own,
    with a note naming the first: the check must see it in the open transaction)."""
    folder = tmp_path / "dumps"
    folder.mkdir()
    for name in DUMPS:
        shutil.copy(SEEDS / name, folder / name)
    shutil.copy(SEEDS / DUMPS[1], folder / "005_same_bytes.txt")
    return folder


def ingest(capsys, folder: Path, db: Path, jobs: str) -> tuple[int, str, str]:
    code = main(["ingest", str(folder), "--db", str(db), "-j", jobs])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_one_transaction_or_one_per_file_write_what_the_serial_ingest_writes(
        dumps, tmp_path, capsys, monkeypatch):
    serial = ingest(capsys, dumps, tmp_path / "s.duckdb", "1")
    assert serial[0] == 0
    assert "005_same_bytes.txt: same bytes as source 2" in serial[1]
    expected = tables(tmp_path / "s.duckdb")
    assert len(expected["_cache_buffers"]) > 100 and len(expected["_cache_peak"]) == 4
    made: list[int] = []  # each run's count of transactions
    real = parallel_ingest.ingest_files
    monkeypatch.setattr("tlview.ingest_command.ingest_files",
                        lambda *a, **k: _keep(made, real(*a, **k)))
    for group_bytes, transactions in ((parallel_ingest.GROUP_BYTES, 1), (1, 4)):
        monkeypatch.setattr(parallel_ingest, "GROUP_BYTES", group_bytes)
        db = tmp_path / f"p{transactions}.duckdb"
        assert ingest(capsys, dumps, db, "2") == serial
        assert made[-1] == transactions
        got = tables(db)
        for t in TABLES:
            assert got[t] == expected[t], t
        assert digests(db) == digests(tmp_path / "s.duckdb")


def _keep(made: list[int], out: parallel_ingest.Outcome) -> parallel_ingest.Outcome:
    made.append(out.transactions)
    return out


def test_a_transaction_that_fails_is_written_again_file_by_file(dumps, tmp_path, capsys,
                                                               monkeypatch):
    real = parallel_ingest.append_parsed

    def append(db, files: list[tuple[Path, Parsed]]):
        if any(p.source[0].endswith(DUMPS[2]) for _, p in files):
            raise duckdb.IOException("disk full (a test)")
        return real(db, files)

    monkeypatch.setattr(parallel_ingest, "append_parsed", append)
    code, out, err = ingest(capsys, dumps, tmp_path / "p.duckdb", "2")
    assert code == 2
    assert err.splitlines() == [
        f"tlview: {dumps / DUMPS[2]}: not written: disk full (a test)",
        "tlview: 1 of 4 files failed (above); the other 3 were ingested"]
    # the others as a serial ingest of them alone writes them
    (dumps / DUMPS[2]).unlink()
    serial = ingest(capsys, dumps, tmp_path / "s.duckdb", "1")
    assert (0, out, "") == serial
    assert tables(tmp_path / "p.duckdb") == tables(tmp_path / "s.duckdb")


def test_a_signal_behind_a_write_error_stops_the_ingest(dumps, tmp_path, capsys, monkeypatch):
    """A Ctrl-C whose exception DuckDB dropped (cli/interrupts.py), seen as a statement's
    error, stops the ingest as an interrupt, not as one file's write error after which
    the next files are tried (a 10,000-rank ingest went on so after SIGTERM)."""
    from tlview import interrupts

    monkeypatch.setattr(interrupts, "_received", [])  # this test's signals alone
    monkeypatch.setattr(interrupts, "_taken", 0)
    real = parallel_ingest.append_parsed
    failing: list[int] = []

    def append(db, files: list[tuple[Path, Parsed]]):
        # from DUMPS[2] on every write fails, as every file failed there, before its commit
        if failing or any(p.source[0].endswith(DUMPS[2]) for _, p in files):
            if not failing:
                interrupts._received.append(signal.SIGINT)  # its handler ran; DuckDB dropped it
            failing.append(1)
            raise duckdb.InvalidInputException("the statement's error (a test)")
        return real(db, files)

    monkeypatch.setattr(parallel_ingest, "append_parsed", append)
    code, _, err = ingest(capsys, dumps, tmp_path / "p.duckdb", "2")
    assert len(failing) == 1  # stopped at the first
    assert code == 130
    assert "interrupted (SIGINT)" in err and "not written" not in err, err


def test_the_caches_of_the_kinds_written_are_those_of_a_full_refresh(tmp_path, capsys,
                                                                      monkeypatch):
    """``ingest -j`` refreshes once, for the files of a transaction, the caches of the
    kinds they wrote (``caches.refresh``'s ``kinds``): a folder of an IR dump, an allocator
    snapshot and Flight Recorder dumps of both forms, written as one transaction, gives
    each of those caches the rows of a full refresh (the attribution's, of traces and
    output code: tests/store/test_cache_reads.py)."""
    fixtures = SEEDS.parent
    folder = tmp_path / "mixed"
    folder.mkdir()
    for src in (SEEDS / DUMPS[0],
                fixtures / "snapshot" / "oom_waste.pickle.gz",
                fixtures / "flight_recorder" / "gloo_skip" / "json" / "fr_trace_rank_0.json",
                fixtures / "flight_recorder" / "gloo_skip" / "pickle" / "fr_trace_rank_1"):
        shutil.copy(src, folder / src.name)
    made: list[int] = []
    real = parallel_ingest.ingest_files
    monkeypatch.setattr("tlview.ingest_command.ingest_files",
                        lambda *a, **k: made.append(1) or real(*a, **k))
    db_path = tmp_path / "j.duckdb"
    assert main(["ingest", str(folder), "--db", str(db_path), "-j", "2"]) == 0, capsys.readouterr()
    assert made == [1]
    assert_caches_are_a_full_refresh(db_path, caches.CACHES)
