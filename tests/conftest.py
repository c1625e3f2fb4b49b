"""Shared fixtures: throwaway databases built from the bundled real dumps."""

from __future__ import annotations

import contextlib
import functools
import gc
import io
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import duckdb
import pytest
from tlview.ingest import native, records_for
from tlview.ingest.discover import discover
from tlview.store import Database, open_database, write_records
from tlview.store.digest import source_digests

FIXTURES = Path(__file__).parent / "fixtures"
SEEDS = FIXTURES / "seeds"
SEED_000 = SEEDS / "000_f2a980d458b1ffe8.txt"
SEED_001 = SEEDS / "001_a33eeda162b4c37a.txt"
SEED_002 = SEEDS / "002_0926b2a0123efc8b.txt"
SEED_003 = SEEDS / "003_5960cad812240b69.txt"
SEED_004 = SEEDS / "004_11560de70615f418.txt"

# scripts/test.sh (and so CI) sets TLVIEW_REQUIRE_NATIVE=1: there a compiled core that is
# missing, out of date or fails to import is a failure (native/test_chrome_trace.py's
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


def view(path: Path | str, sql: str, *params) -> list[tuple]:
    """Rows of ``sql`` read as a user's plain duckdb client reads the file (read-only, a
    connection of its own): what a test expects, independent of tlview's store."""
    con = duckdb.connect(str(path), read_only=True)
    try:
        return con.execute(sql, list(params)).fetchall()
    finally:
        con.close()


def ingest_into(db_path: Path, *inputs: Path, fmt: str | None = None) -> list[int]:
    """Ingest ``inputs`` into the database at ``db_path``; returns the new timeline ids."""
    tids: list[int] = []
    with open_database(db_path) as db:
        for p in inputs:
            summary = write_records(db, records_for(p, fmt))
            tids.extend(summary.timeline_ids.values())
    return tids


def ingest_together(db_path: Path, *inputs: Path) -> None:
    """What ``ingest_into(db_path, *inputs)`` writes, as `tlview ingest --force -j` writes
    it (``write_together``): many files to a transaction, so the caches are computed once
    per transaction, not once per file (half the CPU of ``ingest_into`` for a database of
    ~50 files). Every row, id and cache is the serial ingest's
    (tests/cli/test_parallel_ingest); each source has the run of its folder, as
    ``ingest_into``'s (store/runs.py: assign_unassigned)."""
    with open_database(db_path) as db:
        write_together(db, [(str(p), None) for p in inputs])


def ingest_folder(db_path: Path, folder: Path) -> None:
    """Every input tlview finds under ``folder`` (``discover``), as ``ingest_together``."""
    ingest_together(db_path, *[Path(p) for p, _ in discover(folder)])


def write_together(db: Database, files: list[tuple[str, str | None]]) -> list[tuple[str, Any]]:
    """``files`` ((path, format)) written into ``db`` as `tlview ingest -j --force` writes
    them: by its writer (cli/parallel_ingest.py ingest_files, GroupWriter) in one
    transaction, each parsed by the function its workers run (parse_file), here in this
    process, in file order: a worker process would compute the same records. Not what the
    command prints (its summaries, its reports): a test of those runs the command.
    Returns (path, IngestSummary) of each, in order."""
    from concurrent.futures import Future

    from tlview.parallel_ingest import ingest_files

    def submit(fn, *args):
        done: Future = Future()
        done.set_result(fn(*args))
        return done

    written: list[tuple[str, Any]] = []

    def report(db, run):
        written.extend((path, summary) for path, summary, _ in run)
        return []

    def report_error(e):
        raise e

    out = ingest_files(db, files, submit, force=True, shards=None,
                       check=lambda db, path, sha: (True, None), report=report,
                       report_error=report_error)
    assert out.ingested == len(files) and not out.failed, out.failed
    return written


def tlview_main(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None,
                stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """`tlview ARGS` run by ``tlview.cli.main`` in this process, as a finished process: its
    exit status (argparse's SystemExit too), standard output and error. For the commands
    whose test needs nothing of a process of their own (a terminal, signals, a pipe, the
    entry point): a new interpreter costs a second or more of imports each time."""
    from tlview.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.ExitStack() as stack, pytest.MonkeyPatch.context() as mp:
        if cwd is not None:
            mp.chdir(cwd)
        for k, v in (env or {}).items():
            mp.setenv(k, v)
        mp.setattr(sys, "stdin", io.StringIO(stdin or ""))
        stack.enter_context(contextlib.redirect_stdout(out))
        stack.enter_context(contextlib.redirect_stderr(err))
        try:
            code = main(list(args))
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    return subprocess.CompletedProcess(["tlview", *args], code, out.getvalue(), err.getvalue())


@pytest.fixture(scope="session")
def seed000(tmp_path_factory) -> Path:
    """Seed 000 alone in a database, made once per test process for the files that only
    read it (the terminal UI's); a test that writes makes its own."""
    path = tmp_path_factory.mktemp("seed000") / "000.duckdb"
    ingest_into(path, SEED_000)
    return path


@pytest.fixture(scope="session")
def alone(tmp_path_factory) -> Callable[[Path], tuple[Path, list[int]]]:
    """``alone(dump) -> (database, its timeline ids)``: ``dump`` ingested alone into a
    database of its own, made once per test process, for the tests that only read it: the
    database each of them made before (``ingest_into`` of it into a new one)."""
    made: dict[Path, tuple[Path, list[int]]] = {}

    def get(dump: Path) -> tuple[Path, list[int]]:
        if dump not in made:
            db = tmp_path_factory.mktemp("alone") / f"{dump.name}.duckdb"
            made[dump] = (db, ingest_into(db, dump))
        return made[dump]

    return get


@pytest.fixture
def ctrl_c() -> Iterator[None]:
    """SIGINT as Python sets it up when started from a terminal, in this process and so in
    the processes it starts: a shell running the tests in the background (`cmd &` in a
    script, nohup) starts them with SIGINT ignored, children inherit that, and Python then
    keeps it ignored (a tlview started so ignores Ctrl-C, as a background job should)."""
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, before)


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "t.duckdb"


@functools.cache
def discovered_fixtures() -> tuple[tuple[str, str], ...]:
    """``discover(FIXTURES)``: (path, format) of every recognised input below fixtures/,
    surveyed once per test process (it reads the head of ~1,200 files: seconds)."""
    return tuple(discover(FIXTURES))


@functools.cache
def fixture_inputs() -> list[tuple[str, str]]:
    """(path relative to fixtures, format) of every recognised input below fixtures/, but
    the generators' (gen/) and the fuzzing's reproducers (fuzz/, native/test_fuzz_findings)."""
    out = []
    for path, fmt in discovered_fixtures():
        rel = Path(path).relative_to(FIXTURES).as_posix()
        if rel.startswith(("gen/", "fuzz/")):
            continue
        out.append((rel, fmt))
    return out


class IngestedFixtures:
    """Fixtures ingested into one database of this test process, each once, on first
    ask: with the compiled core (``parser="compiled"``) or the Python parsers.

    The events digest of every fixture (ingest/test_events_digest) and the caches of every
    fixture (store/test_caches) read the same database instead of one new database per test:
    an ingest's rows, and so its digest, do not depend on the sources beside it.
    Nothing may change the database but ``source_id``; a test that writes copies it
    (``copy_to``).
    """

    def __init__(self, path: Path, parser: str) -> None:
        self.path = path
        self.parser = parser
        self.source_ids: dict[str, int] = {}
        # Whether the ingest of each fixture asked for the compiled core (native.module()):
        # a parser without a compiled twin never does.
        self.asked_core: dict[str, bool] = {}
        self.digests: dict[str, dict] = {}
        self.db: Database = open_database(path)

    def source_id(self, rel: str, fmt: str | None = None) -> int:
        """The source id of fixture ``rel`` (relative to fixtures/), ingested if not yet."""
        if rel not in self.source_ids:
            asked: list[bool] = []
            module = native.module

            def spy():
                asked.append(True)
                return module()

            with pytest.MonkeyPatch.context() as mp:
                mp.setenv("TLVIEW_NATIVE", "1" if self.parser == "compiled" else "0")
                mp.setattr(native, "module", spy)
                summary = write_records(self.db, records_for(FIXTURES / rel, fmt))
            self.source_ids[rel] = summary.source_id
            self.asked_core[rel] = bool(asked)
        return self.source_ids[rel]

    def together(self, inputs: list[tuple[str, str]]) -> IngestedFixtures:
        """Ingest those of fixtures ``inputs`` ((rel, format)) not here yet as `tlview
        ingest -j --force` writes many files: parsed in this process (with this parser:
        TLVIEW_NATIVE), written in one transaction, the caches computed once for them all,
        not once per file (cli/parallel_ingest.py's GroupWriter, the writer of every
        `ingest -j`). Each source's rows are those of its ingest alone: they are the
        parser's records, which read only their file, and the writer's rows equal the
        serial writer's (cli/test_parallel_ingest); the events digest of every fixture
        ingested so, equal to the one pinned from the serial ingest, shows it again. Only
        for a database no test reads the caches of (what each source's refresh left is
        not this: ``source_id``)."""
        todo = [(rel, fmt) for rel, fmt in inputs if rel not in self.source_ids]
        if not todo:
            return self
        rel_of = {str(FIXTURES / rel): rel for rel, _ in todo}
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("TLVIEW_NATIVE", "1" if self.parser == "compiled" else "0")
            written = write_together(self.db, [(str(FIXTURES / rel), fmt) for rel, fmt in todo])
        for path, summary in written:
            self.source_ids[rel_of[path]] = summary.source_id
        return self

    def digest(self, rel: str, fmt: str | None = None) -> dict:
        """``source_digest`` of fixture ``rel``, ingested if not yet. The digests of every
        fixture ingested until then are computed together, in one statement."""
        self.source_id(rel, fmt)
        if rel not in self.digests:
            todo = {sid: r for r, sid in self.source_ids.items() if r not in self.digests}
            for sid, got in source_digests(self.db, todo).items():
                self.digests[todo[sid]] = got
        return self.digests[rel]

    def every_fixture(self) -> IngestedFixtures:
        """All of fixture_inputs() ingested."""
        for rel, fmt in fixture_inputs():
            self.source_id(rel, fmt)
        return self

    def copy_to(self, path: Path) -> Path:
        """A copy of the database file as it is now, to change."""
        self.db.con.execute("CHECKPOINT")
        path.write_bytes(self.path.read_bytes())
        return path


@pytest.fixture(scope="session")
def ingested_fixtures(tmp_path_factory):
    """``parser -> IngestedFixtures`` ("compiled" or "python"), opened on first use."""
    made: dict[str, IngestedFixtures] = {}

    def get(parser: str) -> IngestedFixtures:
        if parser not in made:
            folder = tmp_path_factory.mktemp(f"fixtures_{parser}")
            made[parser] = IngestedFixtures(folder / "all.duckdb", parser)
        return made[parser]

    yield get
    for f in made.values():
        f.db.close()


@pytest.fixture(scope="session")
def all_fixtures(ingested_fixtures):
    """Every recognised fixture ingested into one database (the events digest test's,
    ``ingested_fixtures``: its compiled parser, the default where the core is built). Its
    tests name the xdist group ``fixtures_compiled``, so one worker ingests them, once."""
    return ingested_fixtures("compiled" if native_built() else "python").every_fixture()


def pytest_configure(config):
    """Under xdist, each worker's DuckDB (and that of each tlview process it starts) gets
    the cores divided among the workers (TLVIEW_THREADS, unless set): with one thread per
    core in each of two workers on two cores, DuckDB spends more CPU for the same rows, its
    threads waiting on each other (figures: docs/benchmarks.md, "The test suite")."""
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT") or 0)
    if workers and "TLVIEW_THREADS" not in os.environ:
        os.environ["TLVIEW_THREADS"] = str(max(1, (os.cpu_count() or 1) // workers))


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """Under xdist (``-n``, with pyproject's ``--dist loadgroup``) the tests of a module
    that builds something once for many tests (a module- or class-scoped fixture of its
    own, often a database) run in one worker, so it is built once, not once per worker.
    Tests that name an xdist_group keep theirs; the others are spread one by one."""
    for item in items:
        if item.get_closest_marker("xdist_group") is not None:
            continue
        info = getattr(item, "_fixtureinfo", None)
        if info is None:
            continue
        module = item.nodeid.split("::")[0]
        shared = any(d.scope in ("module", "class") and d.baseid.startswith(module)
                     for defs in info.name2fixturedefs.values() for d in defs)
        if shared:
            item.add_marker(pytest.mark.xdist_group(module.removesuffix(".py")))


def pytest_collection_finish(session):
    """What the test process holds once it has collected (its modules and test items)
    moved out of the garbage collector's reach (gc.freeze): they live to its end anyway,
    and each full collection scanned them again (pytest runs five more as each worker
    exits). And the young generation collected every 10,000 allocations, not 700: most of
    a test's objects die before that (figures: docs/benchmarks.md, "The test suite")."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(10_000, 10, 10)
