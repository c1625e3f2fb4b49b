"""Every fixture ingests to exactly the rows pinned in fixtures/events_digests.json.

The digest covers every events row, timeline and note (ids, paths and times left out),
so a change to an ingester (a compiled fast path, a rewrite) that alters any row fails
here. A deliberate fix regenerates the file (``TLVIEW_UPDATE_DIGESTS=1``) and says so
in its commit.

Every fixture is ingested once per parser into the test process's database of that
parser (conftest.ingested_fixtures), which store/test_caches reads too (one xdist group):
the compiled core's (where it is built), and the Python parsers' for the fixtures whose
compiled ingest asked for the core. An ingest that never asks for it (native.module(),
through which alone TLVIEW_NATIVE acts) runs the same Python parser either way, so its
second run would be the same computation: this holds for the formats without a compiled
twin, and follows a new twin without a list to keep.
"""

from __future__ import annotations

import functools
import json
import os

import pytest

from tests.conftest import FIXTURES, fixture_inputs, native_built

GOLDEN = FIXTURES / "events_digests.json"
UPDATE = os.environ.get("TLVIEW_UPDATE_DIGESTS") == "1"
INPUTS = fixture_inputs()

pytestmark = pytest.mark.xdist_group("fixtures_compiled")


@functools.cache
def golden_digests() -> dict:
    return json.loads(GOLDEN.read_text())


def test_every_fixture_is_pinned():
    golden = json.loads(GOLDEN.read_text()) if GOLDEN.exists() else {}
    if UPDATE:
        pytest.skip("regenerating digests")
    assert sorted(golden) == sorted(rel for rel, _ in INPUTS)


@pytest.fixture(scope="module")
def parsed(ingested_fixtures):
    """``rel -> the IngestedFixtures that must give its pinned digest``: every fixture's
    compiled ingest (where the core is built) and its Python ingest where the compiled
    one asked for the core; every fixture's Python ingest where the core is not built.
    All ingested first, so that each database's digests take one statement. The compiled
    ingests one by one (store/test_caches and test_cache_reads read what each one's
    refresh of the caches left); the Python ones, where the compiled database is there,
    as `tlview ingest -j` writes them (IngestedFixtures.together: in one transaction, its
    caches computed once, 24% less CPU for this file), so each twin's pinned digest
    checks the group writer's rows of the Python parser's records."""
    parsers: dict[str, list] = {rel: [] for rel, _ in INPUTS}
    if native_built():
        compiled = ingested_fixtures("compiled").every_fixture()
        for rel, _ in INPUTS:
            parsers[rel].append(compiled)
    twins = [(rel, fmt) for rel, fmt in INPUTS if not native_built() or compiled.asked_core[rel]]
    python = ingested_fixtures("python")
    if native_built():
        python.together(twins)  # no test reads this database's caches
    for rel, fmt in twins:
        python.source_id(rel, fmt)
        parsers[rel].append(python)
    return parsers


def test_some_fixtures_have_a_compiled_twin(parsed):
    """Both parsers run where a twin exists (else the Python half checks nothing)."""
    if native_built():
        assert sum(len(p) == 2 for p in parsed.values()) >= 100


@pytest.mark.parametrize("rel,fmt", INPUTS, ids=[rel for rel, _ in INPUTS])
def test_fixture_digest(rel, fmt, parsed):
    """The compiled core and, where it has a twin, the Python parser write exactly the
    pinned rows."""
    for fixtures in parsed[rel]:
        got = fixtures.digest(rel, fmt)
        if UPDATE:
            golden = json.loads(GOLDEN.read_text()) if GOLDEN.exists() else {}
            golden[rel] = got
            GOLDEN.write_text(json.dumps(dict(sorted(golden.items())), indent=1) + "\n")
            continue
        assert got == golden_digests()[rel], fixtures.parser


def test_the_formats_marked_compiled_are_those_whose_ingest_asks_for_the_core(parsed):
    """FormatSpec.compiled (the writer then parses in a thread: store/writer.py _parsing)
    holds for a format exactly where its parser asks for the compiled core: every fixture
    of it did, and no fixture of another format did."""
    from tlview.ingest import formats

    if not native_built():
        pytest.skip("the compiled core is not built: no ingest asks for it")
    asked: dict[str, set[bool]] = {}
    compiled = next(p for p in parsed[INPUTS[0][0]] if p.parser == "compiled")
    for rel, fmt in INPUTS:
        asked.setdefault(fmt, set()).add(compiled.asked_core[rel])
    assert {fmt: {formats()[fmt].compiled} for fmt in asked} == asked
