"""Issue 24's "done when", on the incident folders made on a GPU machine
(tests/fixtures/runs/compiled_train, runs/oom, ranks/real_delay; gen/DEVICE_RUNS.md):
each folder one run, each compiled graph once, unique names; the snapshot's whole-block
peak equal to the torch.cuda.max_memory_allocated() the generating script recorded; the
report in every format carrying the peak, the OOM request and the straggler's cost, each
equal to the views and to what torch (or the raw traces) say.
"""

from __future__ import annotations

import contextlib
import html
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
from tlview.store.report import build_report

from tests import reference_ranks as ref
from tests.conftest import FIXTURES

TRAIN = FIXTURES / "runs" / "compiled_train"
OOM = FIXTURES / "runs" / "oom"
DELAY = FIXTURES / "ranks" / "real_delay"


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    """The three folders, named to one `tlview ingest` (a run each, in that order: one
    transaction, where an ingest per folder cost half again the CPU)."""
    path = tmp_path_factory.mktemp("incidents") / "incidents.duckdb"
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        assert main(["ingest", str(TRAIN), str(OOM), str(DELAY), "--db", str(path)]) == 0
    with open_database(path, read_only=True) as d:
        yield d


def rows(db, sql: str, params=()) -> list[dict]:
    cur = db.con.execute(sql, list(params))
    cols = [d[0] for d in cur.description]
    return [dict(zip(cols, r)) for r in cur.fetchall()]


def torch_figures(folder: Path) -> dict:
    return json.loads((folder / "torch.json").read_text())


@pytest.fixture(scope="module")
def reports(db):
    ids = {r["name"]: r["run_id"] for r in rows(db, "SELECT run_id, name FROM runs")}
    return {name: build_report(db, ids[name], WORDS) for name in ("compiled_train", "oom",
                                                                  "real_delay")}


def test_each_folder_is_one_run(db):
    got = rows(db, "SELECT name, root, n_sources FROM runs ORDER BY run_id")
    assert [(r["name"], r["root"]) for r in got] == [
        ("compiled_train", str(TRAIN.resolve())), ("oom", str(OOM.resolve())),
        ("real_delay", str(DELAY.resolve()))]
    assert rows(db, "SELECT count(*) AS n FROM source_runs WHERE run_id IS NULL")[0]["n"] == 0


def test_each_graph_once_and_names_unique(db):
    n = rows(db, "SELECT count(*) AS n, count(DISTINCT title) AS t FROM timelines")[0]
    assert n["n"] == n["t"]
    # every output code listed once per run: as many listed as distinct AOT ids, and every
    # repeat has the same plan as the one listed for it
    for r in rows(db, "SELECT run_id, count(*) FILTER (WHERE copy_of IS NULL) AS listed, "
                      "count(DISTINCT json_extract_string(attrs, '$.aot_id')) AS graphs "
                      "FROM timelines WHERE format = 'inductor_wrapper' GROUP BY run_id"):
        assert r["listed"] == r["graphs"], r
    bad = rows(db, "SELECT c.timeline_id FROM timelines c JOIN timelines o ON o.timeline_id = c.copy_of "
                   "JOIN peak_memory pc ON pc.timeline_id = c.timeline_id "
                   "JOIN peak_memory po ON po.timeline_id = o.timeline_id "
                   "WHERE pc.peak_bytes <> po.peak_bytes OR c.n_steps <> o.n_steps")
    assert bad == []
    graphs = rows(db, "SELECT graph FROM graphs g JOIN runs r USING (run_id) "
                      "WHERE r.name = 'compiled_train' ORDER BY graph")
    assert [g["graph"] for g in graphs] == ["0_backward", "0_forward", "0_joint"]


def test_the_snapshots_whole_block_peak_is_max_memory_allocated(db):
    got = {r["name"]: r for r in rows(
        db, "SELECT r.name, p.peak_bytes, p.requested_bytes, p.figure FROM peaks p "
            "JOIN runs r USING (run_id) WHERE p.figure = 'allocator_blocks'")}
    train, oom = torch_figures(TRAIN), torch_figures(OOM)
    assert got["compiled_train"]["peak_bytes"] == train["max_memory_allocated"] == 140_593_152
    assert got["oom"]["peak_bytes"] == oom["at_oom"]["max_memory_allocated"] == 1_967_513_600
    assert got["oom"]["requested_bytes"] == oom["at_oom"]["requested_bytes.all.peak"]
    run = rows(db, "SELECT r.name, p.peak_bytes, p.figure FROM run_peaks p JOIN runs r USING (run_id)")
    assert {(r["name"], r["peak_bytes"], r["figure"]) for r in run} == {
        ("compiled_train", 140_593_152, "allocator_blocks"),
        ("oom", 1_967_513_600, "allocator_blocks")}  # real_delay records no memory


def test_the_report_carries_peak_oom_and_straggler_as_the_views_say(db, reports):
    oom = torch_figures(OOM)
    r = reports["oom"]
    assert r.figure("peak_bytes").value == oom["at_oom"]["max_memory_allocated"]
    assert r.figure("oom1_requested_bytes").value == oom["observer"]["alloc"] == 100_663_296
    assert r.figure("oom1_device_free").value == oom["observer"]["device_free"]
    assert r.figure("oom1_reserved_bytes").value == oom["at_oom"]["memory_reserved"]
    (v,) = rows(db, "SELECT requested_bytes, largest_free_block FROM ooms")
    assert r.figure("oom1_largest_free_block").value == v["largest_free_block"]
    assert r.figure("peak_top_graph").value == "1_forward"  # the batch's activations
    assert reports["compiled_train"].figure("peak_bytes").value == 140_593_152

    traces = sorted(DELAY.glob("rank*.pt.trace.json.gz"))
    calls = [c for p in traces for c in ref.calls(p)]
    instances, _ = ref.match(calls)
    _, caused, _ = ref.waits(ref.arrivals(instances, ref.offsets(instances)))
    d = reports["real_delay"]
    assert d.figure("straggler_rank").value == 2  # the rank the script delayed
    assert d.figure("straggler_caused_wait_ns").value == caused[2]
    (s,) = rows(db, "SELECT caused_wait_ns, wait_share FROM stragglers WHERE rank = 2")
    assert d.figure("straggler_wait_share").value == pytest.approx(float(s["wait_share"]))
    # the others waited for rank 2's 30 + 60 ms of sleep, each of three ranks
    assert 3 * 90_000_000 < caused[2] < 3 * 120_000_000

    for fmt in ("text", "md", "html", "json"):
        texts = {n: RENDERERS[fmt](reports[n]) for n in reports}
        if fmt == "json":
            figs = {n: {f["key"]: f["value"] for s in json.loads(t)["sections"]
                        for f in s["figures"]} for n, t in texts.items()}
            assert figs["oom"]["peak_bytes"] == 1_967_513_600
            assert figs["oom"]["oom1_requested_bytes"] == 100_663_296
            assert figs["real_delay"]["straggler_caused_wait_ns"] == caused[2]
            assert figs["compiled_train"]["peak_bytes"] == 140_593_152
            continue
        assert "1,967,513,600 B" in texts["oom"] and "100,663,296 B" in texts["oom"], fmt
        assert f"{caused[2] / 1e6:,.3f} ms" in texts["real_delay"], fmt
        assert "140,593,152 B" in texts["compiled_train"], fmt


def test_the_html_opens_offline(reports):
    class Refs(HTMLParser):
        def __init__(self):
            super().__init__()
            self.tags, self.refs = set(), []

        def handle_starttag(self, tag, attrs):
            self.tags.add(tag)
            self.refs += [v for k, v in attrs if k in ("src", "href", "srcset", "action", "data")]

    for r in reports.values():
        page = RENDERERS["html"](r)
        p = Refs()
        p.feed(page)
        assert not {"script", "link", "img", "iframe", "object", "embed"} & p.tags
        assert p.refs == [] and "url(" not in page and "@import" not in page
        assert "http" not in page.replace('xmlns="http://www.w3.org/2000/svg"', "")


def test_the_time_section_says_what_each_straggler_cost(db, reports):
    """Per straggler, its costliest step in words, as whatif_stragglers has it: "without
    rank 2's delay, step 3 would take X instead of Y" (tests/store/test_ranks.py holds the view
    to the replay computed from the traces alone); the headline's straggler line says it,
    every format carries it."""
    from tlview.store.rank_queries import WhatIf

    views = rows(db, "SELECT w.run, w.step, w.rank, w.n_late, w.saved_ns, w.measured_ns, "
                     "w.modelled_ns FROM whatif_stragglers w ORDER BY saved_ns DESC")
    costliest: dict[int, WhatIf] = {}
    for v in views:
        if v["saved_ns"]:
            costliest.setdefault(v["rank"], WhatIf(**v))
    r = reports["real_delay"]
    for rank, c in costliest.items():
        assert r.figure(f"whatif_rank{rank}_modelled_ns").value == c.modelled_ns
        assert r.figure(f"whatif_rank{rank}_measured_ns").value == c.measured_ns
    w = costliest[2]  # the delayed rank: its 60 ms sleep, most of it given back
    assert w.step == 3 and w.measured_ns - w.modelled_ns == w.saved_ns > 50_000_000
    assert max(c.saved_ns for k, c in costliest.items() if k != 2) < 1_000_000
    sentence = w.sentence(WORDS.ns)
    assert sentence == (f"without rank 2's delay, step 3 would take {w.modelled_ns / 1e6:,.3f} "
                        f"ms instead of {w.measured_ns / 1e6:,.3f} ms")
    (straggler,) = [v for v in r.headline if v.key == "straggler"]
    assert straggler.text.endswith(f"; {sentence}.")
    time = next(s for s in r.sections if s.key == "time")
    # the stragglers' order (the only rank traces in the database are real_delay's)
    order = [x["rank"] for x in rows(db, "SELECT rank FROM stragglers "
                                         "ORDER BY caused_wait_ns DESC, rank")
             if x["rank"] in costliest]
    said = [n.split(" (")[0] for n in time.notes if n.startswith("Without rank ")]
    assert said == ["W" + costliest[k].sentence(WORDS.ns)[1:] for k in order]
    whatif = next(t for t in time.tables if t.key == "whatif")
    assert [WhatIf(*row) for row in whatif.rows] == [costliest[k] for k in order]
    for fmt, render in RENDERERS.items():
        assert (html.escape(sentence) if fmt == "html" else sentence) in render(r), fmt


def _report_without(db, once: str, run: str, **kw):
    """The report of ``run`` built with store/report.py's ``once`` (MATCH_ONCE,
    ALLOCS_ONCE) off: each view derives what it reads."""
    from tlview.store import report as report_module

    ids = {r["name"]: r["run_id"] for r in rows(db, "SELECT run_id, name FROM runs")}
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(report_module, once, False)
        return build_report(db, ids[run], WORDS, **kw)


def test_the_matching_once_per_report_changes_no_figure(db, reports):
    """The report computes the run's collective matching once (temporary tables in its own
    connection: report_match_once) where each view would derive it anew: the same report
    as without, and nothing of it left in the connection afterwards."""
    again = _report_without(db, "MATCH_ONCE", "real_delay")
    assert again == reports["real_delay"]
    assert rows(db, "SELECT count(*) AS n FROM duckdb_tables() WHERE temporary")[0]["n"] == 0


def test_the_allocations_once_per_report_change_no_figure(db, reports):
    """The report reads its snapshots' allocations by output-code line once (a temporary
    table of the run's rows of _wrapper_allocs: report_allocs_once) where planned_vs_actual
    and planned_vs_actual_calls would derive them in each query: the same report as
    without (compiled_train: a snapshot and its graphs' output code), and nothing of it
    left in the connection afterwards. (The sections that read them, memory and plan: the
    others ask no view of them.)"""
    from tlview.store import report as report_module

    again = _report_without(db, "ALLOCS_ONCE", "compiled_train",
                            sections=[report_module.memory_section, report_module.plan_section])
    once = {s.key: s for s in reports["compiled_train"].sections}
    assert [s.key for s in again.sections] == ["memory", "plan"]
    assert all(s == once[s.key] for s in again.sections)
    assert any(t.key == "plan_calls" for t in once["plan"].tables)
    assert any(t.key == "peak_by_graph" for t in once["memory"].tables)
    assert rows(db, "SELECT count(*) AS n FROM duckdb_tables() WHERE temporary")[0]["n"] == 0


def test_long_allocation_sites_keep_their_file_line_and_function(db, reports):
    """The sites held at compiled_train's peak are output-code files of Inductor's cache,
    longer than a text cell: text and md cut them from the left (`…/name.py:698:call`),
    keeping what tells them apart; html and json keep them whole. The sites are the
    allocator's (blocks_live_at), read here apart."""
    r = reports["compiled_train"]
    peak = r.headline[0].evidence
    sites = [x["site"] for x in rows(
        db, "SELECT site, sum(requested_size) AS b FROM blocks_live_at(?, ?) GROUP BY site "
            "ORDER BY b DESC, site LIMIT 10", [peak.timeline_id, peak.at])]
    long = [s for s in sites if len(s) > 72]
    assert len(long) >= 2 and all(s.rsplit(":", 2)[1].isdigit() for s in long)
    for fmt in ("text", "md"):
        cut = {w[1:] for w in RENDERERS[fmt](r).split() if w.startswith("…/")}
        for s in long:  # its end from a folder on: file name, line and function
            assert any(s.endswith(c) and s[s.rindex("/"):] in c for c in cut), (fmt, s)
    for fmt in ("html", "json"):
        out = RENDERERS[fmt](r)
        assert all(s in out for s in long), fmt


def test_info_lists_each_graph_once_under_its_title(db):
    """`tlview info` (and an ingest's closing summary, the same lines: cli/test_cli)
    lists each timeline once, under its unique title, a compiled graph's copies in the
    torch log and the TORCH_TRACE log only named on its line, and counts as runs does."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["info", "--db", str(db.path)]) == 0
    lines = out.getvalue().splitlines()
    total = sum(r["n_timelines"] for r in rows(db, "SELECT n_timelines FROM runs"))
    assert re.match(rf".*: \d+ sources, {total} timelines \(\d+ more not counted", lines[0])
    heads = [re.match(r"^ *timeline (\d+) (.*) \[", ln) for ln in lines]
    listed = [int(m.group(1)) for m in heads if m]
    assert len(listed) == len(set(listed)) == total
    copies = [r["timeline_id"] for r in rows(db, "SELECT timeline_id FROM timelines "
                                                 "WHERE copy_of IS NOT NULL")]
    assert copies and not set(copies) & set(listed)
    also = " ".join(ln for ln in lines if ln.lstrip().startswith("also in "))
    assert all(f"(timeline {c})" in also for c in copies)
    titles = dict((r["timeline_id"], r["title"]) for r in rows(db, "SELECT timeline_id, title "
                                                                   "FROM timelines"))
    top = [m for m in heads if m and not m.group(0).startswith(" ")]
    assert all(m.group(2) == titles[int(m.group(1))] for m in top)
    # compiled_train's graphs: one line each for the debug tree's output_code.py files
    code = [m.group(2) for m in top if m.group(2).startswith("compiled_train · ")
            and m.group(2).endswith(" · output code")]
    assert len(code) == len(list(TRAIN.rglob("output_code.py"))) == 2
    logs = [p for f in (TRAIN, OOM) for p in (f / "torch_trace").iterdir()]
    assert sum(ln.startswith("source ") and "(TORCH_TRACE log)" in ln for ln in lines) \
        == len(logs) == 2  # a source of its run, not a timeline


def test_the_report_asks_no_view_that_cannot_have_rows(db, monkeypatch):
    """compiled_train has no Inductor estimates (its TORCH_TRACE log was written without
    LOG_TLPARSE) and no collective: estimate_vs_measured and the rank views would only cost
    planning (3.2 and 0.7 of the report's 9.2 CPU s before), so they are not asked; health
    still says why estimate_vs_measured is empty."""
    from tlview.store import report as rp

    asked: list[str] = []
    original = rp.Context.ask

    def ask(self, name, *params):
        asked.append(name)
        return original(self, name, *params)

    monkeypatch.setattr(rp.Context, "ask", ask)
    (run,) = rows(db, "SELECT run_id FROM runs WHERE name = 'compiled_train'")
    assert rows(db, "SELECT count(*) AS n FROM inductor_estimates e JOIN timeline_runs t "
                    "USING (timeline_id) WHERE t.run_id = ?", [run["run_id"]])[0]["n"] == 0
    r = build_report(db, run["run_id"], WORDS, sections=[rp.time_section, rp.compile_section,
                                                         rp.health_section])
    assert "report_estimate_sources" in asked and "report_traces" in asked
    assert not {"report_estimates", "report_stragglers", "report_rank_runs"} & set(asked)
    health = next(s for s in r.sections if s.key == "health")
    assert any(n.startswith("estimate_vs_measured is empty: no Inductor runtime estimates")
               for n in health.notes)
