"""Shared fixtures: throwaway databases built from the bundled real dumps."""

from __future__ import annotations

from pathlib import Path

import pytest
from tlview.ingest import records_for
from tlview.store import open_database, write_records

FIXTURES = Path(__file__).parent / "fixtures"
SEEDS = FIXTURES / "seeds"
SEED_000 = SEEDS / "000_f2a980d458b1ffe8.txt"
SEED_001 = SEEDS / "001_a33eeda162b4c37a.txt"
SEED_002 = SEEDS / "002_0926b2a0123efc8b.txt"
SEED_003 = SEEDS / "003_5960cad812240b69.txt"
SEED_004 = SEEDS / "004_11560de70615f418.txt"


def ingest_into(db_path: Path, *inputs: Path, fmt: str | None = None) -> list[int]:
    """Ingest ``inputs`` into the database at ``db_path``; returns the new timeline ids."""
    tids: list[int] = []
    with open_database(db_path) as db:
        for p in inputs:
            summary = write_records(db, records_for(p, fmt))
            tids.extend(summary.timeline_ids.values())
    return tids


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "t.duckdb"
