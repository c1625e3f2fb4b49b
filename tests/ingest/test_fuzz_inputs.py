"""Property test: mutated real dumps either ingest consistently or fail cleanly.

For every registered format's real fixtures, a mutated copy must either ingest with
consistent views (memory never negative, every freed buffer allocated, peak = max of
the curve), or raise IngestError naming the file and a line — and then the database
is exactly as it was. A longer campaign runs outside the suite: `python -m bench.fuzz`.
"""

from __future__ import annotations

import random
from pathlib import Path

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


def try_ingest(db: Path, path: Path) -> str:
    """One ingest; on IngestError assert it names the file and the db is unchanged.

    Returns "ingested" or "rejected"."""
    before = snapshot(db)
    try:
        with open_database(db) as d:
            summary = write_records(d, records_for(path))
    except IngestError as e:
        # it names this input, or (split XLA dumps) the sibling of it that is bad or missing
        assert Path(e.path).resolve().parent == path.resolve().parent, e.path
        assert snapshot(db) == before
        return "rejected"
    check_consistent(str(db), list(summary.timeline_ids.values()))
    return "ingested"


@pytest.fixture(scope="module")
def fuzz_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("fuzz") / "f.duckdb"
    with open_database(db) as d:
        write_records(d, records_for(SEED_002))
    return db


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(src=st.sampled_from(CORPUS), kind=st.sampled_from(MUTATIONS), seed=st.integers(0, 2**32))
def test_mutated_inputs(fuzz_db: Path, tmp_path_factory, src: Path, kind: str, seed: int):
    data = mutate(src.read_bytes(), kind, random.Random(seed))
    path = tmp_path_factory.mktemp("m") / src.name
    path.write_bytes(data)
    try_ingest(fuzz_db, path)
