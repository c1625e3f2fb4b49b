"""Every fixture ingests to exactly the rows pinned in fixtures/events_digests.json.

The digest covers every events row, timeline and note (ids, paths and times left out),
so a change to an ingester (a compiled fast path, a rewrite) that alters any row fails
here. A deliberate fix regenerates the file (``TLVIEW_UPDATE_DIGESTS=1``) and says so
in its commit.

Each fixture is ingested once per parser into the test process's database of that
parser (conftest.ingested_fixtures), which store/test_caches reads too: the compiled
parser's tests and store/test_caches share an xdist group, the Python parser's another.
"""

from __future__ import annotations

import json
import os

import pytest
from tlview.store.digest import source_digest

from tests.conftest import FIXTURES, fixture_inputs, native_built

GOLDEN = FIXTURES / "events_digests.json"
UPDATE = os.environ.get("TLVIEW_UPDATE_DIGESTS") == "1"
INPUTS = fixture_inputs()
PARSERS = [pytest.param(p, marks=pytest.mark.xdist_group(f"fixtures_{p}"), id=p)
           for p in ("compiled", "python")]


def test_every_fixture_is_pinned():
    golden = json.loads(GOLDEN.read_text()) if GOLDEN.exists() else {}
    if UPDATE:
        pytest.skip("regenerating digests")
    assert sorted(golden) == sorted(rel for rel, _ in INPUTS)


@pytest.mark.parametrize("parser", PARSERS)
@pytest.mark.parametrize("rel,fmt", INPUTS, ids=[rel for rel, _ in INPUTS])
def test_fixture_digest(rel, fmt, parser, ingested_fixtures):
    """Both the compiled core and the Python parsers write exactly the pinned rows."""
    if parser == "compiled" and not native_built():
        pytest.skip("the compiled ingest core is not built")
    fixtures = ingested_fixtures(parser)
    got = source_digest(fixtures.db, fixtures.source_id(rel, fmt))
    if UPDATE:
        golden = json.loads(GOLDEN.read_text()) if GOLDEN.exists() else {}
        golden[rel] = got
        GOLDEN.write_text(json.dumps(dict(sorted(golden.items())), indent=1) + "\n")
        return
    golden = json.loads(GOLDEN.read_text())
    assert got == golden[rel]
