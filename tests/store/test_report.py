"""Runs, one peak and `tlview report` on real folders (issue 24).

One database, built once, holds three runs as a user makes them with `tlview ingest`: the
GPU training step's folder (tests/fixtures/torch_trace/gpu_step: TORCH_COMPILE_DEBUG
tree, TORCH_LOGS log, TORCH_TRACE log, profiler trace), the OOM snapshot file, and the
2-rank NCCL folder. The report's figures are checked against the views, against the
figures torch recorded beside the fixtures, and against tests/reference_ranks.py.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
from tlview.cli import main
from tlview.report_command import WORDS
from tlview.report_render import RENDERERS
from tlview.store import open_database
from tlview.store.report import build_report, render_sql

from tests import reference_ranks as ref
from tests.conftest import FIXTURES

GPU_STEP = FIXTURES / "torch_trace" / "gpu_step"
OOM = FIXTURES / "snapshot" / "oom.pickle.gz"
COLL = FIXTURES / "profile" / "coll"


def tlview(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    return code, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def db_path(tmp_path_factory) -> Path:
    """The three paths named to one `tlview ingest` (a run each, in that order: one
    transaction, where an ingest per path cost half again the CPU)."""
    db = tmp_path_factory.mktemp("runs") / "runs.duckdb"
    code, _, err = tlview("ingest", str(GPU_STEP), str(COLL), str(OOM), "--db", str(db))
    assert code == 0, err
    return db


@pytest.fixture(scope="module")
def db(db_path):
    with open_database(db_path, read_only=True) as d:
        yield d


def rows(db, sql: str, params=()) -> list[dict]:
    cur = db.con.execute(sql, list(params))
    cols = [d[0] for d in cur.description]
    return [dict(zip(cols, r)) for r in cur.fetchall()]


def run_id(db, name: str) -> int:
    return rows(db, "SELECT run_id FROM runs WHERE name = ?", [name])[0]["run_id"]


@pytest.fixture(scope="module")
def reports(db):
    return {name: build_report(db, run_id(db, name), WORDS)
            for name in ("gpu_step", "oom", "coll")}


class TestRuns:
    """What a person sees of the folders they ingested: three runs, each thing once."""

    def test_each_path_named_is_a_run_and_every_source_has_one(self, db):
        got = rows(db, "SELECT name, root, n_sources FROM runs ORDER BY run_id")
        assert [(r["name"], r["root"]) for r in got] == [
            ("gpu_step", str(GPU_STEP.resolve())), ("coll", str(COLL.resolve())),
            ("oom", str(OOM.resolve()))]
        n = rows(db, "SELECT count(*) AS n, count(run_id) AS with_run FROM source_runs")[0]
        assert n["n"] == n["with_run"] == sum(r["n_sources"] for r in got)

    def test_titles_are_unique_and_say_where_they_come_from(self, db):
        t = rows(db, "SELECT count(*) AS n, count(DISTINCT title) AS titles FROM timelines")[0]
        assert t["n"] == t["titles"]
        titles = {r["title"] for r in rows(db, "SELECT title FROM timelines")}
        assert {"gpu_step · 0_forward · output code",
                "gpu_step · 0_forward · output code in torch log",
                "gpu_step · 0_forward · output code in TORCH_TRACE",
                "oom · oom cuda:0 · allocator snapshot",
                "coll · rank 1 · profiler trace"} <= titles

    def test_a_graph_from_three_artifacts_is_listed_once(self, db):
        """Each output code of gpu_step comes from output_code.py, compile.log.gz and
        trace.log.gz: one graph, the others copies of it (same plan: equal peaks)."""
        r = run_id(db, "gpu_step")
        groups = rows(db, "SELECT COALESCE(copy_of, timeline_id) AS graph, list(source_kind "
                          "ORDER BY source_kind) AS kinds, count(DISTINCT p.peak_bytes) AS peaks "
                          "FROM timelines t JOIN peak_memory p USING (timeline_id) "
                          "WHERE run_id = ? AND format = 'inductor_wrapper' GROUP BY ALL", [r])
        assert len(groups) == 4
        assert all(g["kinds"] == ["TORCH_TRACE", "output_code.py", "torch log"]
                   and g["peaks"] == 1 for g in groups)
        graphs = rows(db, "SELECT graph, n_sources FROM graphs WHERE run_id = ? ORDER BY graph", [r])
        assert [g["graph"] for g in graphs] == ["0_backward", "0_forward", "0_joint",
                                                "1_backward", "1_forward", "1_joint"]

    def test_the_torch_trace_log_is_a_source_not_a_timeline(self, db):
        run = rows(db, "SELECT * FROM runs WHERE name = 'gpu_step'")[0]
        n = rows(db, "SELECT count(*) FILTER (WHERE copy_of IS NULL AND format <> 'torch_trace') "
                     "AS shown, count(*) FILTER (WHERE format = 'torch_trace') AS logs "
                     "FROM timelines WHERE run_id = ?", [run["run_id"]])[0]
        assert run["n_timelines"] == n["shown"] and n["logs"] == 1
        assert {"kind": "TORCH_TRACE", "files": 1} in run["artifacts"]

    def test_versions_and_skipped_files_are_kept(self, db):
        run = rows(db, "SELECT * FROM runs WHERE name = 'gpu_step'")[0]
        summary = (GPU_STEP / "summary.txt").read_text()
        assert run["torch_version"] in summary and run["triton_version"] in summary
        skipped = rows(db, "SELECT attrs FROM run_records WHERE name = 'gpu_step'")[0]["attrs"]
        py = sum(1 for p in GPU_STEP.rglob("*.py") if p.name != "output_code.py")
        assert json.loads(skipped)["skipped"][".py"] == py
        assert rows(db, "SELECT nccl_version FROM runs WHERE name = 'coll'")[0]["nccl_version"] \
            == "2.28.9"

    def test_a_file_named_again_under_its_run_joins_it(self, tmp_path):
        db = tmp_path / "j.duckdb"
        r0 = COLL / "rank0" / "rank0.pt.trace.json.gz"
        assert tlview("ingest", str(COLL / "rank0"), "--db", str(db))[0] == 0
        assert tlview("ingest", str(COLL / "rank1"), str(r0), "--force", "--db", str(db))[0] == 0
        with open_database(db, read_only=True) as d:
            got = rows(d, "SELECT name, n_sources FROM runs ORDER BY run_id")
        assert got == [{"name": "rank0", "n_sources": 4}, {"name": "rank1", "n_sources": 3}]

    def test_a_database_before_runs_gets_one_per_folder_on_migrate(self, tmp_path):
        """One run per folder, a folder below another of them (a debug tree) joining it.
        The same migrate fills again the Flight Recorder dumps' caches of a database that
        lacks them (was ingest/test_flight_recorder.py's TestCaches::
        test_migrate_fills_them_again: one migrate, which rewrites every view, for both)."""
        from tests.ingest import test_flight_recorder as fr

        db = tmp_path / "old.duckdb"
        debug = FIXTURES / "snapshot" / "torch_compile_debug"
        dumps = fr.FR / "gloo_sizes" / "pickle"
        assert tlview("ingest", str(OOM), str(debug), str(dumps), "--db", str(db))[0] == 0
        want = fr.TestCaches.differences(db)
        assert want["_cache_fr_calls"][0] > 0
        with open_database(db) as d:  # as before runs: no run, views of another version;
            # the dumps' caches absent, as a database of schema v5 left them
            d.con.execute("DELETE FROM run_records")
            d.con.execute("UPDATE tlview_meta SET value = 'old' WHERE key = 'views_sha'")
            d.con.execute("DROP TABLE _cache_fr_calls; DROP TABLE _cache_fr_dump_stats")
        code, out, _ = tlview("migrate", "--db", str(db))
        assert code == 0 and "rewritten" in out
        with open_database(db, read_only=True) as d:
            got = rows(d, "SELECT name, root, n_sources FROM runs ORDER BY name")
        n = sum(1 for p in debug.rglob("*") if p.name in ("output_code.py", "ir_post_fusion.txt"))
        # the debug tree below snapshot/ joins the folder of the snapshot beside it
        assert got == [{"name": "pickle", "root": str(dumps.resolve()),
                        "n_sources": len(list(dumps.iterdir()))},
                       {"name": "snapshot", "root": str(OOM.resolve().parent), "n_sources": 1 + n}]
        assert fr.TestCaches.differences(db) == want


class TestOnePeak:
    def test_the_snapshot_peak_is_torchs_max_memory_allocated(self, db):
        torch_figures = json.loads((FIXTURES / "snapshot" / "oom.torch.json").read_text())
        (p,) = rows(db, "SELECT p.* FROM peaks p JOIN timelines t USING (timeline_id) "
                        "WHERE t.run_id = ?", [run_id(db, "oom")])
        assert p["figure"] == "allocator_blocks" and p["measured"]
        assert p["peak_bytes"] == torch_figures["max_memory_allocated"] == 1_024_537_600
        assert p["requested_bytes"] == torch_figures["requested_bytes.all.peak"]
        assert "max_memory_allocated" in p["what"]

    def test_a_runs_peak_is_its_most_measured_figure(self, db):
        """gpu_step has compile-time figures up to 25.7 MB (the joint graph) and the
        profiler's measurement: the run's peak is the measurement, torch's own figure."""
        summary = (GPU_STEP / "summary.txt").read_text()
        torch_peak = int(re.search(r"max_memory_allocated (\d+)", summary).group(1))
        p = rows(db, "SELECT * FROM run_peaks WHERE run_id = ?", [run_id(db, "gpu_step")])[0]
        assert (p["figure"], p["peak_bytes"]) == ("profiler_memory", torch_peak)
        planned = rows(db, "SELECT max(peak_bytes) AS m FROM peaks WHERE run_id = ? AND NOT measured",
                       [run_id(db, "gpu_step")])[0]["m"]
        assert planned == 25_723_408  # the joint graph's estimate, below the measurement

    def test_the_api_gives_a_snapshots_peak(self, db_path):
        import tlview.api as tl

        with tl.open(db_path) as s:
            snap = next(t for t in s.timelines() if t["format"] == "cuda_snapshot")
        assert (snap["peak_bytes"], snap["peak_figure"]) == (1_024_537_600, "allocator_blocks")

    def test_info_says_each_runs_peak_and_which_it_is(self, db_path):
        code, out, _ = tlview("info", "--db", str(db_path))
        assert code == 0
        assert re.search(r"^run 3 oom: .*oom\.pickle\.gz; 1 source \(1 allocator snapshot\)", out, re.M)
        assert ("  peak 1,024,537,600 B (977.08 MiB) measured by the allocator in whole blocks "
                "(what torch.cuda.max_memory_allocated() counts), timeline") in out


def figure_cells(db, sql: str) -> list:
    """Every value the SQL gives (it must run as printed)."""
    return [v for r in db.con.execute(sql).fetchall() for v in r]


class TestReport:
    def test_every_figure_is_what_its_sql_gives(self, db, reports):
        """The SQL printed beside each figure runs as is and gives the figure (tables are
        their query's rows, as read)."""
        checked = 0
        ran: dict[str, list] = {}
        for rep in reports.values():
            for s in rep.sections:
                for f in s.figures:
                    cells = ran.get(f.sql) or ran.setdefault(f.sql, figure_cells(db, f.sql))
                    plain = [float(c) if hasattr(c, "as_integer_ratio") and not isinstance(c, bool)
                             else c for c in cells]
                    v = float(f.value) if isinstance(f.value, (int, float)) and not isinstance(
                        f.value, bool) else f.value
                    assert v in plain or str(v) in map(str, cells), (f.key, f.value, f.sql)
                    checked += 1
        assert checked > 40

    def test_the_oom_report(self, reports):
        torch_figures = json.loads((FIXTURES / "snapshot" / "oom.torch.json").read_text())
        rep = reports["oom"]
        f = {k: rep.figure(k).value for k in ("peak_bytes", "oom1_requested_bytes",
                                               "oom1_device_free", "oom1_allocated_bytes",
                                               "oom1_largest_free_block")}
        assert f["peak_bytes"] == torch_figures["max_memory_allocated"]
        assert f["oom1_requested_bytes"] == torch_figures["observer"]["alloc"] == 67_108_864
        assert f["oom1_device_free"] == torch_figures["observer"]["device_free"]
        assert f["oom1_allocated_bytes"] == torch_figures["observer"]["at_oom"]["requested_bytes.all.current"]
        assert f["oom1_largest_free_block"] < f["oom1_requested_bytes"]
        assert [v.key for v in rep.headline] == ["peak", "peak_holder", "oom1"]
        assert rep.headline[2].evidence.screen == "snapshot" and rep.headline[2].evidence.at == 436

    def test_holders_at_the_peak_sum_to_it(self, db, reports):
        rep = reports["oom"]
        peak = rep.figure("peak_bytes").value
        assert rep.figure("peak_held_block_bytes").value == peak
        by_site = next(t for s in rep.sections for t in s.tables if t.key == "peak_by_site")
        assert sum(r[2] for r in by_site.rows) == rep.figure("peak_held_bytes").value
        before = rows(db, "SELECT sum(requested_size) AS b FROM blocks_live_at(?, ?) "
                          "WHERE origin = 'before_window'",
                      [rep.headline[0].evidence.timeline_id, rep.headline[0].evidence.at])[0]["b"]
        assert rep.figure("peak_before_window_bytes").value == before == 100_700_160

    def test_the_straggler_of_the_two_ranks(self, reports):
        calls = [c for r in (0, 1) for c in ref.calls(COLL / f"rank{r}" / f"rank{r}.pt.trace.json.gz")]
        instances, _ = ref.match(calls)
        _, caused, _ = ref.waits(ref.arrivals(instances, ref.offsets(instances)))
        worst = max(caused, key=lambda r: (caused[r], -r))
        rep = reports["coll"]
        assert rep.figure("straggler_rank").value == worst
        assert rep.figure("straggler_caused_wait_ns").value == caused[worst]
        v = next(v for v in rep.headline if v.key == "straggler")
        assert v.evidence.screen == "ranks"

    @pytest.mark.parametrize("fmt", ["text", "md", "html", "json"])
    def test_every_format_carries_the_peak_the_oom_and_the_straggler(self, reports, fmt):
        oom, coll = (RENDERERS[fmt](reports[n]) for n in ("oom", "coll"))
        straggler = reports["coll"].figure("straggler_caused_wait_ns").value
        if fmt == "json":
            figs = {f["key"]: f["value"] for s in json.loads(oom)["sections"] for f in s["figures"]}
            assert figs["peak_bytes"] == 1_024_537_600 and figs["oom1_requested_bytes"] == 67_108_864
            figs = {f["key"]: f["value"] for s in json.loads(coll)["sections"] for f in s["figures"]}
            assert figs["straggler_caused_wait_ns"] == straggler
            return
        assert "1,024,537,600 B" in oom and "67,108,864 B" in oom
        assert f"{straggler / 1e6:,.3f} ms" in coll
        if fmt in ("md", "html"):
            assert "SELECT timeline_id, title, figure" in oom  # the peak's SQL, named
            assert "FROM stragglers s JOIN timeline_runs t" in coll

    def test_the_html_is_one_file_that_fetches_nothing(self, reports):
        page = RENDERERS["html"](reports["oom"])

        class Refs(HTMLParser):
            def __init__(self):
                super().__init__()
                self.tags, self.refs = [], []

            def handle_starttag(self, tag, attrs):
                self.tags.append(tag)
                self.refs += [v for k, v in attrs if k in ("src", "href", "srcset", "action")]

        p = Refs()
        p.feed(page)
        assert "svg" in p.tags and "polyline" in p.tags  # the memory curve, drawn inline
        assert not {"script", "link", "img", "iframe", "object"} & set(p.tags)
        assert p.refs == [] and "url(" not in page and "@import" not in page

    def test_the_command(self, db_path, tmp_path):
        out = tmp_path / "oom.html"
        code, _, err = tlview("report", "--db", str(db_path), "--format", "html", "-o", str(out))
        assert code == 0 and "reporting the last, oom" in err and "run 3 oom (html)" in err
        assert out.read_text().startswith("<!DOCTYPE html>")
        code, _, err = tlview("report", "nope", "--db", str(db_path))
        assert code == 2 and "no run 'nope'" in err and "1 gpu_step" in err

    def test_sql_is_printed_with_its_values(self):
        assert render_sql("SELECT 'a?''' || x FROM t WHERE a = ? AND b = $2 -- ?\n", [1, "it's"]) \
            == "SELECT 'a?''' || x FROM t WHERE a = 1 AND b = 'it''s';"
