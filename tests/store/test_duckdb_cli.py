"""The plain duckdb CLI opens tlview's file and runs every documented view and macro.

The CLI is the one users install, `pip install duckdb-cli` (in the test extra): a real
binary of another DuckDB version than the Python module that wrote the file. Its row
counts must equal the writing module's, so no view fails or changes meaning in it.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest
from tlview.ingest.discover import discover
from tlview.store import open_database
from tlview.store.db import SCHEMA_VERSION
from tlview.store.diff import ensure_alignment
from tlview.store.views_doc import public_objects as documented_objects

from tests.conftest import FIXTURES, SEED_002, SEED_003, ingest_into, ingest_together, tlview_main

ROOT = Path(__file__).resolve().parents[2]
PROFILE = FIXTURES / "profile"
# Views that are empty on the fixtures, as the docs say (no compiled node left
# without its kernels, no XLA allocation conflict, every collective of the 2-rank run
# matched on both ranks): every other view must have rows.
# compile_divergence: the fixtures' TORCH_TRACE logs are of one rank each (ingest/test_flight_recorder
# makes a divergent pair)
EMPTY_ON_FIXTURES = {"allocation_conflicts", "unattached_nodes", "collective_unmatched",
                     "compile_divergence"}


def duckdb_cli() -> str:
    """The duckdb CLI binary of the `duckdb-cli` package in this environment
    (TLVIEW_DUCKDB_CLI names another, to check more versions)."""
    if os.environ.get("TLVIEW_DUCKDB_CLI"):
        return os.environ["TLVIEW_DUCKDB_CLI"]
    spec = importlib.util.find_spec("duckdb_cli")
    candidates = []
    if spec is not None and spec.submodule_search_locations:
        candidates.append(Path(next(iter(spec.submodule_search_locations))) / "duckdb")
    candidates.append(Path(sys.executable).parent / "duckdb")
    for c in candidates:
        if c.is_file():
            return str(c)
    found = shutil.which("duckdb")
    if found is None:
        pytest.fail("no duckdb CLI: install the test extra (`pip install -e '.[test]'` "
                    "brings duckdb-cli)")
    return found


def cli(db: Path, sql: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([duckdb_cli(), "-readonly", "-json", str(db), "-c", sql],
                          capture_output=True, text=True, timeout=400)


def cli_rows(db: Path, sql: str) -> list[dict]:
    p = cli(db, sql)
    assert p.returncode == 0 and "Error" not in p.stderr, f"{sql}: {p.stderr}"
    return json.loads(p.stdout) if p.stdout.strip() else []


def public_objects() -> tuple[list[str], list[str]]:
    """Every view and table macro of schemas/*.sql that is not a helper (``_name``): the
    list docs/views.md documents (tlview.store.views_doc, tests/store/test_views_doc.py)."""
    objects = documented_objects()
    return ([o.name for o in objects if o.kind == "view"],
            [o.name for o in objects if o.kind == "macro"])


@pytest.fixture(scope="module")
def every_kind(tmp_path_factory) -> Path:
    """A database holding every fixture kind: scheduler IR, XLA (one file and split),
    output code and FX graphs (folder and log), Kineto (single and 2 ranks), JAX,
    a TORCH_TRACE log with its trace, allocator snapshots with their debug tree, JAX
    device memory profiles, a trace of CUDA-graph replays with its output code, a hung
    job's Flight Recorder dumps and stack dumps."""
    db = tmp_path_factory.mktemp("cli") / "all.duckdb"
    inputs = [SEED_002, SEED_003, FIXTURES / "torch" / "mlp_train.log"]
    for folder in (FIXTURES / "xla", FIXTURES / "torch" / "mlp_train", PROFILE / "single",
                   PROFILE / "jax", PROFILE / "coll", FIXTURES / "torch_trace" / "gpu_step",
                   FIXTURES / "snapshot", FIXTURES / "jax_memory",
                   FIXTURES / "flight_recorder" / "gloo_subgroup" / "pickle",
                   FIXTURES / "flight_recorder" / "gloo_subgroup" / "stacks"):
        inputs += [Path(p) for p, _ in discover(folder)]
    infer = FIXTURES / "cudagraphs" / "infer"  # CUDA-graph replays (graph_replays)
    inputs += [infer / "kineto.pt.trace.json.gz",
               *sorted((infer / "torch_compile_debug").rglob("output_code.py"))]
    ingest_together(db, *inputs)
    with open_database(db) as d:  # stored alignments for the diff macros (60_diff_timelines.sql ...)
        for fmt in ("inductor_ir", "kineto", "cuda_snapshot"):
            a, b = d.sql("SELECT min(timeline_id), max(timeline_id) FROM timeline_records "
                         "WHERE format = ?", [fmt]).fetchone()
            ensure_alignment(d, a, b)
    return db


def _pair(db, fmt: str) -> str:
    return "{}, {}".format(*db.sql("SELECT min(timeline_id), max(timeline_id) FROM "
                                   "timeline_records WHERE format = ?", [fmt]).fetchone())


def test_database_is_written_in_a_storage_version_the_cli_reads(every_kind):
    con = duckdb.connect(str(every_kind), read_only=True)
    tag = con.execute("SELECT tags['storage_version'] FROM duckdb_databases() "
                      "WHERE database_name = current_database()").fetchone()[0]
    con.close()
    assert tag == "v1.4.0+"
    (row,) = cli_rows(every_kind, "SELECT version() AS v")
    assert re.match(r"v1\.[45]\.", row["v"]), row  # the CLIs on PyPI today


def test_event_attrs_are_stored_with_zstd_and_read_by_the_cli(every_kind):
    """The attrs of every kind's events table are written with zstd (2.7x smaller than
    the default for a Kineto trace's raw event text, and twice as fast to write): the
    CLI reads them back whole through the events view."""
    con = duckdb.connect(str(every_kind), read_only=True)
    tables = [r[0] for r in con.execute(
        "SELECT DISTINCT table_name FROM duckdb_tables() WHERE table_name LIKE 'events_%' "
        "AND estimated_size > 0").fetchall()]
    assert len(tables) >= 8, tables  # every_kind holds events of most kinds
    kinds = {t: {r[0] for r in con.execute(
        "SELECT DISTINCT compression FROM pragma_storage_info(?) "
        "WHERE column_name = 'attrs' AND segment_type <> 'VALIDITY'", [t]).fetchall()}
        for t in tables}
    want = con.execute("SELECT count(attrs), sum(length(attrs)), "
                       "sum(hash(attrs)) FROM events").fetchone()
    con.close()
    assert all(k == {"ZSTD"} for k in kinds.values() if k), kinds
    (row,) = cli_rows(every_kind, "SELECT count(attrs) AS n, sum(length(attrs)) AS chars, "
                                  "sum(hash(attrs)) AS h FROM events")
    assert tuple(int(row[k]) for k in ("n", "chars", "h")) == tuple(int(x) for x in want)


def test_every_documented_view_and_macro_runs_in_the_duckdb_cli(every_kind):
    views, macros = public_objects()
    assert set(macros) == {"live_at", "gpu_gaps", "blocks_live_at", "timeline_diff",
                           "peak_diff", "kernel_time_diff", "site_diff"}
    with open_database(every_kind, read_only=True) as db:
        tid, peak_step = db.sql("SELECT timeline_id, peak_step FROM peak_memory "
                                "ORDER BY peak_bytes DESC LIMIT 1").fetchone()
        snap, snap_peak = db.sql("SELECT timeline_id, event_index FROM allocator_peak "
                                 "ORDER BY allocated_bytes DESC LIMIT 1").fetchone()
        ir, trace, snaps = (_pair(db, f) for f in ("inductor_ir", "kineto", "cuda_snapshot"))
        calls = [*views, f"live_at({tid}, {peak_step})", "gpu_gaps(0)",
                 f"blocks_live_at({snap}, {snap_peak})", f"timeline_diff({ir})",
                 f"peak_diff({ir})", f"peak_diff({snaps})", f"kernel_time_diff({trace})",
                 f"site_diff({snaps})", f"timeline_diff({snaps})"]
        expected = {c: db.sql(f"SELECT count(*) FROM {c}").fetchone()[0] for c in calls}
    # one CLI run, one statement per object: the ~80 in one UNION ALL took the CLI's
    # optimizer minutes (each alone plans in a fraction of a second)
    sql = "".join(f"SELECT '{c}' AS obj, count(*) AS n FROM {c};\n" for c in calls)
    p = subprocess.run([duckdb_cli(), "-readonly", "-jsonlines", str(every_kind), "-c", sql],
                       capture_output=True, text=True, timeout=400)
    assert p.returncode == 0 and "Error" not in p.stderr, p.stderr
    got = {r["obj"]: r["n"] for r in map(json.loads, p.stdout.splitlines())}
    assert got == expected
    nonempty = {c for c, n in got.items() if n > 0}
    assert set(calls) - nonempty == EMPTY_ON_FIXTURES


def test_figures_through_the_cli_equal_tlviews(every_kind):
    """The peak of every timeline, and seed 002's worked example, read by the CLI."""
    with open_database(every_kind, read_only=True) as db:
        mine = db.sql("SELECT timeline_id, peak_step, peak_bytes FROM peak_memory "
                      "ORDER BY timeline_id").fetchall()
    got = cli_rows(every_kind, "SELECT timeline_id, peak_step, peak_bytes FROM peak_memory "
                   "ORDER BY timeline_id")
    assert [(r["timeline_id"], r["peak_step"], r["peak_bytes"]) for r in got] == mine
    seed = cli_rows(every_kind, "SELECT p.peak_bytes, p.peak_step, CAST(sum(l.bytes) AS BIGINT) AS live "
                    "FROM peak_memory p JOIN timelines t USING (timeline_id), "
                    "live_at(p.timeline_id, p.peak_step) l "
                    f"WHERE t.name = '{SEED_002.name}' GROUP BY ALL")
    assert seed == [{"peak_bytes": 1_114_112, "peak_step": 1, "live": 1_114_112}]


def _newer_format_database(path: Path) -> None:
    """A tlview database in DuckDB 2.0's own storage format, as tlview wrote before."""
    duckdb.connect(str(path)).close()  # created with no storage option: the newest format
    ingest_into(path, SEED_002)


def test_a_file_in_the_newer_format_still_opens_and_migrate_rewrites_it(tmp_path):
    db = tmp_path / "old.duckdb"
    _newer_format_database(db)
    p = cli(db, "SELECT 1")
    assert p.returncode != 0 and "version number" in p.stderr  # the CLI's refusal
    info = tlview_main("info", "--db", str(db))
    assert info.returncode == 0 and "peak 1,114,112 B" in info.stdout, info.stderr
    mig = tlview_main("migrate", "--db", str(db))
    assert mig.returncode == 0, mig.stderr
    assert "rewritten from DuckDB storage v2.0.0+ to v1.4.0+" in mig.stdout
    assert cli_rows(db, "SELECT peak_bytes FROM peak_memory") == [{"peak_bytes": 1_114_112}]
    again = tlview_main("migrate", "--db", str(db))
    assert again.stdout.strip() == f"{db}: schema v{SCHEMA_VERSION}, storage v1.4.0+, up to date"
    assert not list(tmp_path.glob("*.converting*"))
