"""Property test: mutated real dumps either ingest consistently or fail cleanly.

For every registered format's real fixtures, a mutated copy must either ingest with
consistent views (memory never negative, every freed buffer allocated, peak = max of
the curve), or raise IngestError naming the file and a line — and then the database
is exactly as it was. A longer campaign runs outside the suite: `python -m bench.fuzz`.
"""

from __future__ import annotations

import os
import random
import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tlview.ingest import IngestError, records_for
from tlview.store import open_database, write_records

from tests.conftest import FIXTURES, SEED_001, SEED_002
from tests.fuzzing import MUTATIONS, check_consistent, mutate
from tests.ingest.test_inductor_ir_bad_input import snapshot


def fuzz_corpus() -> list[Path]:
    """Small real inputs of every format (large ones are cut by the campaign instead)."""
    extra = [p for p in sorted(FIXTURES.rglob("*")) if p.is_file()
             and p.stat().st_size < 200_000 and not {"seeds", "gen", "fuzz"} & set(p.parts)
             and p.suffix in (".txt", ".log", ".py", ".json", ".gz")]
    return [SEED_002, SEED_001, *extra[:12]]


CORPUS = fuzz_corpus()


# db -> (its files' stat, its snapshot) where the last try_ingest into it was rejected and
# left it as it was: the next one's state before, unless a file of it changed since.
_UNCHANGED: dict[Path, tuple[tuple, tuple]] = {}


def _files(db: Path) -> tuple:
    """The database file's and its WAL's size and time of change (None: no such file)."""
    return tuple((s.st_size, s.st_mtime_ns) if (s := _stat(p)) else None
                 for p in (db, db.with_name(db.name + ".wal")))


def _stat(p: Path) -> os.stat_result | None:
    try:
        return p.stat()
    except FileNotFoundError:
        return None


def try_ingest(db: Path, path: Path) -> str:
    """One ingest; on IngestError assert it names the file and the db is unchanged.

    Returns "ingested" or "rejected"."""
    files, before = _UNCHANGED.pop(db, (None, None))
    if before is None or files != _files(db):
        before = snapshot(db)
    try:
        with open_database(db) as d:
            summary = write_records(d, records_for(path))
    except IngestError as e:
        # it names this input, or (split XLA dumps) the sibling of it that is bad or missing
        assert Path(e.path).resolve().parent == path.resolve().parent, e.path
        after = snapshot(db)
        assert after == before
        _UNCHANGED[db] = (_files(db), after)
        return "rejected"
    check_consistent(str(db), list(summary.timeline_ids.values()))
    return "ingested"


@pytest.fixture(scope="module")
def fuzz_db(tmp_path_factory: pytest.TempPathFactory, alone: Any) -> Path:
    """Seed 002 alone in a database the examples ingest into: a copy of the one ingested
    once per test process (conftest's ``alone``)."""
    db = tmp_path_factory.mktemp("fuzz") / "f.duckdb"
    shutil.copyfile(alone(SEED_002)[0], db)
    return db


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(src=st.sampled_from(CORPUS), kind=st.sampled_from(MUTATIONS), seed=st.integers(0, 2**32))
def test_mutated_inputs(fuzz_db: Path, tmp_path_factory, src: Path, kind: str, seed: int):
    data = mutate(src.read_bytes(), kind, random.Random(seed))
    path = tmp_path_factory.mktemp("m") / src.name
    path.write_bytes(data)
    try_ingest(fuzz_db, path)
