"""Shared fixtures: throwaway databases built from the bundled real dumps."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from tlview.ingest import native, records_for
from tlview.store import open_database, write_records

FIXTURES = Path(__file__).parent / "fixtures"
SEEDS = FIXTURES / "seeds"
SEED_000 = SEEDS / "000_f2a980d458b1ffe8.txt"
SEED_001 = SEEDS / "001_a33eeda162b4c37a.txt"
SEED_002 = SEEDS / "002_0926b2a0123efc8b.txt"
SEED_003 = SEEDS / "003_5960cad812240b69.txt"
SEED_004 = SEEDS / "004_11560de70615f418.txt"

# scripts/test.sh (and so CI) sets TLVIEW_REQUIRE_NATIVE=1: there a compiled core that is
# missing, out of date or fails to import is a failure (test_native.py's
# test_core_is_built), and the compiled core's tests run, and fail, instead of skipping.
# Without it (no compiler on this machine) they skip and the Python parsers are tested.
REQUIRE_NATIVE = os.environ.get("TLVIEW_REQUIRE_NATIVE") == "1"


def native_built(*parsers: str) -> bool:
    """Whether the compiled core is built, with these parser types, or required."""
    core = native.module()
    return REQUIRE_NATIVE or (core is not None and all(hasattr(core, p) for p in parsers))


def needs_native(*parsers: str) -> pytest.MarkDecorator:
    """Skip a compiled-core test where the core is not built (unless it is required)."""
    return pytest.mark.skipif(not native_built(*parsers),
                              reason="the compiled ingest core is not built")


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
