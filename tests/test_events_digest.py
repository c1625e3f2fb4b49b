"""Every fixture ingests to exactly the rows pinned in fixtures/events_digests.json.

The digest covers every events row, timeline and note (ids, paths and times left out),
so a change to an ingester (a compiled fast path, a rewrite) that alters any row fails
here. A deliberate fix regenerates the file (``TLVIEW_UPDATE_DIGESTS=1``) and says so
in its commit.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from conftest import FIXTURES, native_built
from tlview.ingest.discover import discover
from tlview.ingest.source import records_for
from tlview.store import open_database, write_records
from tlview.store.digest import source_digest

GOLDEN = FIXTURES / "events_digests.json"
UPDATE = os.environ.get("TLVIEW_UPDATE_DIGESTS") == "1"


def fixture_inputs() -> list[tuple[str, str]]:
    """(path relative to fixtures, format) of every recognised input below fixtures/, but
    the generators' (gen/) and the fuzzing's reproducers (fuzz/, test_fuzz_findings)."""
    out = []
    for path, fmt in discover(FIXTURES):
        rel = Path(path).relative_to(FIXTURES).as_posix()
        if rel.startswith(("gen/", "fuzz/")):
            continue
        out.append((rel, fmt))
    return out


def digest_of(path: Path, fmt: str | None, db_path: Path) -> dict:
    with open_database(db_path) as db:
        summary = write_records(db, records_for(path, fmt))
        return source_digest(db, summary.source_id)


INPUTS = fixture_inputs()


def test_every_fixture_is_pinned():
    golden = json.loads(GOLDEN.read_text()) if GOLDEN.exists() else {}
    if UPDATE:
        pytest.skip("regenerating digests")
    assert sorted(golden) == sorted(rel for rel, _ in INPUTS)


@pytest.mark.parametrize("parser", ["compiled", "python"])
@pytest.mark.parametrize("rel,fmt", INPUTS, ids=[rel for rel, _ in INPUTS])
def test_fixture_digest(rel, fmt, parser, tmp_path, monkeypatch):
    """Both the compiled core and the Python parsers write exactly the pinned rows."""
    if parser == "compiled" and not native_built():
        pytest.skip("the compiled ingest core is not built")
    monkeypatch.setenv("TLVIEW_NATIVE", "1" if parser == "compiled" else "0")
    got = digest_of(FIXTURES / rel, fmt, tmp_path / "d.duckdb")
    if UPDATE:
        golden = json.loads(GOLDEN.read_text()) if GOLDEN.exists() else {}
        golden[rel] = got
        GOLDEN.write_text(json.dumps(dict(sorted(golden.items())), indent=1) + "\n")
        return
    golden = json.loads(GOLDEN.read_text())
    assert got == golden[rel]
