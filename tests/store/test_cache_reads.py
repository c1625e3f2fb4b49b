"""An ingest refreshes only the caches of the event kinds it wrote (store/caches.py
``CACHE_KINDS``): the declared kinds are those the caches' statements read, and the caches
of every fixture are the same as a full refresh makes them."""

from __future__ import annotations

import re

import pytest
from tlview.ingest.records import EVENT_KINDS
from tlview.store import caches, open_database

from tests.conftest import native_built


def _params(sql: str) -> list[int]:
    """Placeholder values for a statement's parameters ($n or ?)."""
    numbered = [int(n) for n in re.findall(r"\$(\d+)", sql)]
    return [1] * (max(numbered) if numbered else sql.count("?"))


def test_cache_kinds_are_what_the_statements_read(tmp_path):
    """Each cache's declared kinds are exactly the event tables that the unoptimised plans
    of its statements scan, with those of the caches it reads (the optimiser would drop
    the scans of an empty database's tables)."""
    kinds = sorted(set(EVENT_KINDS.values()))
    with open_database(tmp_path / "t.duckdb") as db:
        db.con.execute("PRAGMA disable_optimizer")
        read: dict[str, set[str]] = {}
        for name in caches.CACHES:
            queries = [q for q in (f"cache_fill_{name}", f"cache_ranges_{name}",
                                   *caches.FILL_QUERIES.get(name, ())) if q in db.queries]
            assert f"cache_fill_{name}" in queries
            plan = "\n".join(row[1] for q in queries for row in db.con.execute(
                "EXPLAIN " + db.queries[q], _params(db.queries[q])).fetchall())
            tables = set(re.findall(r"\b(events_\w+|_cache_\w+)\b", plan))
            got = {k for k in kinds if f"events_{k}" in tables}
            for other in caches.CACHES[:caches.CACHES.index(name)]:  # the caches it reads
                if f"_cache_{other}" in tables:
                    got |= read[other]
            assert got, name
            read[name] = got
    assert read == {n: set(k) for n, k in caches.CACHE_KINDS.items()}


pytestmark = pytest.mark.xdist_group("fixtures_compiled")  # the database of every fixture


def test_every_fixture_caches_are_those_of_a_full_refresh(ingested_fixtures, tmp_path):
    """Every fixture ingested (each refreshing only the caches of the kinds it wrote):
    each cache's rows, with their counts, are those of refreshing every cache of every
    timeline."""
    fixtures = ingested_fixtures("compiled" if native_built() else "python").every_fixture()
    assert_caches_are_a_full_refresh(fixtures.copy_to(tmp_path / "copy.duckdb"))


def assert_caches_are_a_full_refresh(db_path) -> None:
    """Every cache of the database at ``db_path`` holds rows, and the rows (with their
    counts) of refreshing every cache of every timeline."""
    with open_database(db_path) as db:
        con = db.con
        for name in caches.CACHES:
            con.execute(f"CREATE TEMP TABLE before_{name} AS FROM _cache_{name}")
        with db.transaction():
            caches.rebuild_all(db)
        for name in caches.CACHES:
            n = con.execute(f"SELECT count(*) FROM _cache_{name}").fetchone()[0]
            assert n > 0, name
            assert con.execute(f"""SELECT count(*) FROM (
                (FROM before_{name} EXCEPT ALL FROM _cache_{name}) UNION ALL
                (FROM _cache_{name} EXCEPT ALL FROM before_{name}))""").fetchone()[0] == 0, name

