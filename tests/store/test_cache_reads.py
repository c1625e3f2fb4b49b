"""An ingest refreshes only the caches of the event kinds it wrote (store/caches.py
``CACHE_KINDS``, ``ATTACHMENT_KINDS``): the declared kinds are those the caches' statements
read, and the caches of every fixture are the same as a full refresh makes them, whatever
the order their sources came in."""

from __future__ import annotations

import re

import pytest
from tlview.ingest.records import EVENT_KINDS
from tlview.store import caches, open_database

from tests.conftest import FIXTURES, ingest_into, ingest_together


def _params(sql: str) -> list[int]:
    """Placeholder values for a statement's parameters ($n or ?)."""
    numbered = [int(n) for n in re.findall(r"\$(\d+)", sql)]
    return [1] * (max(numbered) if numbered else sql.count("?"))


def _scanned(db, sql: str) -> set[str]:
    """The event tables and caches that the plan of statement ``sql`` scans."""
    plan = "\n".join(row[1] for row in db.con.execute("EXPLAIN " + sql, _params(sql)).fetchall())
    return set(re.findall(r"\b(events_\w+|_cache_\w+)\b", plan))


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
            tables = set().union(*(_scanned(db, db.queries[q]) for q in queries))
            got = {k for k in kinds if f"events_{k}" in tables}
            for other in caches.CACHES[:caches.CACHES.index(name)]:  # the caches it reads
                if f"_cache_{other}" in tables:
                    got |= read[other]
            assert got, name
            read[name] = got
    assert read == {n: set(k) for n, k in caches.CACHE_KINDS.items()}


def test_attachment_kinds_are_what_the_derivations_read(tmp_path):
    """The attribution's caches (``ATTACHMENT_CACHES``) are derived from the event tables of
    ``ATTACHMENT_KINDS`` alone (and from the caches before them)."""
    with open_database(tmp_path / "t.duckdb") as db:
        db.con.execute("PRAGMA disable_optimizer")
        read = set()
        for i, name in enumerate(caches.ATTACHMENT_CACHES):
            tables = _scanned(db, f"SELECT * FROM _{name}_derived")
            assert {t.removeprefix("_cache_") for t in tables if t.startswith("_cache_")} <= set(
                caches.ATTACHMENT_CACHES[:i]), name  # only the caches before it
            read |= {t.removeprefix("events_") for t in tables if t.startswith("events_")}
    assert read == set(caches.ATTACHMENT_KINDS)


pytestmark = pytest.mark.xdist_group("fixtures_compiled")  # the database of every fixture


def test_every_fixture_caches_are_those_of_a_full_refresh(all_fixtures, tmp_path):
    """Every fixture ingested (each refreshing only the caches of the kinds it wrote):
    each cache's rows, with their counts, are those of refreshing every cache of every
    timeline."""
    assert_caches_are_a_full_refresh(all_fixtures.copy_to(tmp_path / "copy.duckdb"))


def assert_caches_are_a_full_refresh(
        db_path, names: tuple[str, ...] = caches.CACHES + caches.ATTACHMENT_CACHES) -> None:
    """Each of the caches ``names`` of the database at ``db_path`` holds rows, and the rows
    (with their counts) of refreshing every cache of every timeline."""
    with open_database(db_path) as db:
        con = db.con
        for name in names:
            con.execute(f"CREATE TEMP TABLE before_{name} AS FROM _cache_{name}")
        with db.transaction():
            caches.rebuild_all(db)
        for name in names:
            n = con.execute(f"SELECT count(*) FROM _cache_{name}").fetchone()[0]
            assert n > 0, name
            assert con.execute(f"""SELECT count(*) FROM (
                (FROM before_{name} EXCEPT ALL FROM _cache_{name}) UNION ALL
                (FROM _cache_{name} EXCEPT ALL FROM before_{name}))""").fetchone()[0] == 0, name


SINGLE = FIXTURES / "profile" / "single"


def _attachment_rows(path) -> dict[str, list[tuple]]:
    """Each attribution cache's rows, and those of its derivation from the events."""
    with open_database(path, read_only=True) as db:
        out = {}
        for name in caches.ATTACHMENT_CACHES:
            out[name] = sorted(db.sql(f"FROM _cache_{name}").fetchall(), key=repr)
            out[f"{name} derived"] = sorted(db.sql(f"FROM _{name}_derived").fetchall(), key=repr)
        return out


CPU_STEP = FIXTURES / "torch_trace" / "cpu_step"


def test_attachment_caches_do_not_depend_on_the_order_of_ingest(tmp_path, monkeypatch):
    """A trace and its output code (two output_code.py and the log that copies them) ingested
    one file per command with the trace first, then last, and by `tlview ingest -j` in two
    commands (the output code, then the trace): the same attribution in each, and each
    cache holds what its derivation from the events gives. An ingest derives again only the
    rows it can change, never every one (store/caches.py refresh_attachments): checked too
    after the trace's code came, and after the trace came again, then a CPU graph its calls
    do not run (their extern ops, in another order), then another copy of the code (both
    traces' candidates gain a copy). A trace's events changed (as by `sql --write`): every
    row derived again."""
    trace = SINGLE / "compiled_step.pt.trace.json.gz"
    code = [*sorted(SINGLE.rglob("output_code.py")), SINGLE / "compile.log.gz"]
    first, last, parallel = (tmp_path / f"{n}.duckdb" for n in ("first", "last", "parallel"))
    rebuilt: list = []
    whole = caches.rebuild_attachments
    monkeypatch.setattr(caches, "rebuild_attachments", lambda db: (rebuilt.append(1), whole(db)))

    def assert_derived(path, step: str) -> None:
        got = _attachment_rows(path)
        for name in caches.ATTACHMENT_CACHES:
            assert got[name] and got[name] == got[f"{name} derived"], (path.name, step, name)

    ingest_into(first, trace, code[0])
    assert_derived(first, "the trace, then its code")
    ingest_into(first, *code[1:])
    ingest_into(last, *code, trace)
    ingest_together(parallel, *code)
    ingest_together(parallel, trace)
    want = _attachment_rows(first)
    assert all(want[n] for n in caches.ATTACHMENT_CACHES)
    for name in caches.ATTACHMENT_CACHES:
        assert want[name] == want[f"{name} derived"], name
    # timeline ids differ with the order: the rows are compared by what they name
    def named(path):
        with open_database(path, read_only=True) as db:
            return sorted(db.sql(
                "SELECT s.path, t.key, g.path, gt.key, a.seq, a.step, a.method, a.confidence, "
                "a.share_ns FROM kernel_attachments a "
                "JOIN timeline_records t ON t.timeline_id = a.timeline_id "
                "JOIN sources s ON s.source_id = t.source_id "
                "JOIN timeline_records gt ON gt.timeline_id = a.graph_timeline_id "
                "JOIN sources g ON g.source_id = gt.source_id").fetchall())
    expect = named(first)
    assert expect
    for path in (last, parallel):
        got = _attachment_rows(path)
        for name in caches.ATTACHMENT_CACHES:
            assert got[name] == got[f"{name} derived"], (path.name, name)
        assert named(path) == expect, path.name
    ingest_into(last, trace, CPU_STEP / "debug" / "model__0_forward_1.0" / "output_code.py",
                code[-1])
    assert_derived(last, "the trace again, a CPU graph, another copy")
    with open_database(last, read_only=True) as db:  # both traces; the log twice, a copy
        assert db.sql("SELECT count(DISTINCT timeline_id), max(copies) FROM _cache_call_graphs"
                      ).fetchone() == (2, 3)
        tid = db.sql("SELECT min(timeline_id) FROM _cache_call_graphs").fetchone()[0]
    assert rebuilt == []
    with open_database(last) as db, db.transaction():  # what `sql --write` does (sql_command)
        db.con.execute("DELETE FROM events_kernel_measured WHERE timeline_id = ? "
                       "AND name LIKE 'triton%'", [tid])
        caches.refresh(db, [tid])
    assert rebuilt == [1]
    assert_derived(last, "a trace's Triton kernels gone")
