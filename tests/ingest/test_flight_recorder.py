"""Flight Recorder dumps and stack dumps of real hung gloo jobs (tests/fixtures/flight_recorder,
made by tests/fixtures/gen/make_fr_gloo.py): the dumps read as torch wrote them, the verdict
torch's own analyzer gave on them (fr_trace.txt beside each), and what tlview adds."""

from __future__ import annotations

import functools
import json
import re
import shutil
from collections import Counter
from pathlib import Path

import pytest
from tlview.ingest.flight_recorder import parse_flight_recorder, rank_from_name
from tlview.ingest.records import CollectiveRecorded, ThreadStack
from tlview.ingest.source import records_for
from tlview.ingest.stack_dump import parse_stack_dump
from tlview.store import open_database

from tests.conftest import FIXTURES, ingest_into, ingest_together

FR = FIXTURES / "flight_recorder"
SCENARIOS = ("skip", "sizes", "subgroup", "late")
FINDING = {"COLLECTIVE_TYPE_MISMATCH": "op mismatch", "SIZE_OR_SYNTAX_MISMATCH": "size mismatch",
           "COLLECTIVE_DTYPE_MISMATCH": "dtype mismatch",
           "COLLECTIVE_STATE_MISMATCH": "state mismatch"}


def rows(db: Path, sql: str, params: list | None = None) -> list[dict]:
    with open_database(db, read_only=True) as d:
        return _dicts(d.con.execute(sql, params or []))


def _dicts(cur) -> list[dict]:
    cols = [c[0] for c in cur.description]
    return [dict(zip(cols, r)) for r in cur.fetchall()]


def verdict_rows(db: Path, sql: str) -> list[dict]:
    """``rows`` of a query of hang_verdict, read as tlview's summary and report read it:
    with fr_dumps read once (hang_queries.dumps_read_once: the view's rows as a table, where
    hang_verdict would plan its walk of the incidents ten times over, ~1 CPU-s a query).
    The same rows as the plain view: TestReport.test_reading_the_dumps_once_changes_no_row."""
    from tlview.store.hang_queries import dumps_read_once

    with open_database(db, read_only=True) as d, dumps_read_once(d):
        return _dicts(d.con.execute(sql))


@functools.cache
def shared_verdicts(db: Path) -> tuple[list[dict], list[dict]]:
    """hang_verdict's rows in a module's shared database (which no test changes), and
    its dumps' (incident, rank, source_path, run), read once: the view's planning alone is
    ~2 CPU-s a query. The tests filter them as their SQL did (``verdicts``)."""
    return (verdict_rows(db, "SELECT * FROM hang_verdict"),
            rows(db, "SELECT d.incident, d.rank, d.source_path, runs.name AS run FROM fr_dumps d "
                     "LEFT JOIN timeline_runs t ON t.timeline_id = d.timeline_id "
                     "LEFT JOIN runs USING (run_id)"))


def verdicts(db: Path, incident: int | None = None, path: str | None = None) -> list[dict]:
    """hang_verdict's rows (of a shared database) of ``incident``, or of the incidents of
    the dumps whose source path holds ``path`` (``source_path LIKE '%path%'``)."""
    verdict, dumps = shared_verdicts(db)
    if path is not None:
        incidents = {d["incident"] for d in dumps if path in d["source_path"]}
        return [v for v in verdict if v["incident"] in incidents]
    return [v for v in verdict if v["incident"] == incident]


def fr_trace_findings(scenario: str, path: Path | None = None) -> list[dict]:
    """What torch's analyzer logged (fr_trace.txt, or ``path``): per finding its sequence
    id, group, expected ranks, missing ranks and culprits with their error types, in its
    order."""
    out: list[dict] = []
    path = path or FR / f"gloo_{scenario}" / "fr_trace.txt"
    for line in path.read_text().splitlines():
        m = re.match(r"(Not all ranks joining collective, sequence number|"
                     r"Collective sequence number|Input/output mismatch in the collective "
                     r"sequence number): (\d+)", line)
        if m:
            out.append({"seq": int(m.group(2)), "missing": set(), "culprits": {},
                        "finding": "rank missing" if m.group(1).startswith("Not all")
                        else None})
        elif out and line.startswith("group info: "):
            out[-1]["group"] = line.split(": ", 1)[1].split(":")[0]
        elif out and line.startswith("missing ranks: "):
            out[-1]["missing"] = set(json.loads(line.split(": ", 1)[1].replace("{", "[")
                                                .replace("}", "]")))
        elif out and line.startswith("expected ranks: "):
            out[-1]["expected"] = set(json.loads(line.split(": ", 1)[1].replace("{", "[")
                                                 .replace("}", "]")))
        elif out and line.startswith("error msg: "):
            for rank, kind in re.findall(r"Culprit rank (\d+); Error type: (\w+)", line):
                out[-1]["culprits"][int(rank)] = kind
                out[-1]["finding"] = FINDING[kind]
    return out


@pytest.fixture(scope="module")
def hangs(tmp_path_factory) -> Path:
    """The four hangs' pickle dumps and stack dumps in one database (four incidents), and
    the late job's profiler traces."""
    db = tmp_path_factory.mktemp("fr") / "hangs.duckdb"
    inputs = [p for s in SCENARIOS for sub in ("pickle", "stacks")
              for p in sorted((FR / f"gloo_{s}" / sub).iterdir())]
    ingest_together(db, *inputs, *sorted((FR / "gloo_late" / "profile").iterdir()))
    return db


@pytest.fixture(scope="module")
def nccl(tmp_path_factory) -> Path:
    """The four real 4-GPU NCCL hangs, each its watchdog's dumps and the stack dumps in a
    folder of the scenario's name, ingested by `tlview ingest FOLDER`: one run each (skip,
    sizes, ...)."""
    if not (FR / "skip" / "timeout_dump").is_dir():
        pytest.skip("the real NCCL fixtures are not in this tree")
    tmp = tmp_path_factory.mktemp("nccl")
    db = tmp / "nccl.duckdb"
    for scenario in SCENARIOS:
        for sub in ("timeout_dump", "stacks"):
            (tmp / scenario / sub).mkdir(parents=True)
            for f in (FR / scenario / sub).iterdir():
                (tmp / scenario / sub / f.name).write_bytes(f.read_bytes())
    # one `tlview ingest` naming the four folders: a run each, one transaction
    cli(["ingest", *(str(tmp / scenario) for scenario in SCENARIOS), "--db", str(db)])
    return db


def cli(args: list[str]) -> str:
    """`tlview ARGS` in this process: its standard output (exit 0 asserted)."""
    import contextlib
    import io

    from tlview.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        assert main(args) == 0
    return out.getvalue()


def incident_of(db: Path, scenario: str) -> int:
    (r,) = rows(db, "SELECT DISTINCT incident FROM fr_dumps WHERE source_path LIKE ?",
                [f"%gloo_{scenario}/%"])
    return r["incident"]


class TestReading:
    """Both forms of a dump hold the same entries; the rank comes from the name."""

    @pytest.mark.parametrize("scenario", SCENARIOS)
    def test_pickle_and_json_entries_equal_the_json_text(self, scenario):
        for pk in sorted((FR / f"gloo_{scenario}" / "pickle").iterdir()):
            js = FR / f"gloo_{scenario}" / "json" / f"{pk.name}.json"
            ref = json.loads(js.read_text())["entries"]
            for path in (pk, js):
                got = [r for r in parse_flight_recorder(str(path))
                       if isinstance(r, CollectiveRecorded)]
                assert [(g.step, g.op, g.process_group, g.pg_desc, g.seq_id, g.p2p_seq_id,
                         g.is_p2p, g.state, g.ts_ns, g.timeout_ms, g.retired,
                         json.loads(g.in_sizes), json.loads(g.out_sizes),
                         json.loads(g.in_dtypes)) for g in got] == [
                    (e["record_id"], e["profiling_name"], e["process_group"][0],
                     e["process_group"][1], e["collective_seq_id"], e["p2p_seq_id"],
                     e["is_p2p"], e["state"], e["time_created_ns"], e["timeout_ms"],
                     e["retired"], e["input_sizes"], e["output_sizes"], e["input_dtypes"])
                    for e in ref]
                assert all((g.stack_id is not None) == (path is pk) for g in got)

    def test_frames_of_the_pickle_are_the_call_sites(self, hangs):
        # the skipped all_reduce of rank 0: torch's frame, then the generator's call site
        (r,) = rows(hangs, """
            SELECT list(f.name ORDER BY u.i) AS names FROM events_collective_recorded e
            JOIN fr_dumps d USING (timeline_id) JOIN stacks s ON s.source_id = d.source_id
             AND s.stack_id = e.stack_id, unnest(s.frame_ids) WITH ORDINALITY u(fid, i)
            JOIN frames f ON f.source_id = d.source_id AND f.frame_id = u.fid
            WHERE d.source_path LIKE '%gloo_skip/pickle/fr_trace_rank_0' AND e.seq_id = 7
              AND e.process_group = '0'""")
        assert r["names"][:5] == ["all_reduce", "wrapper", "call", "run_skip", "worker"]

    @pytest.mark.parametrize("name,rank", [
        ("fr_trace_rank_3", 3), ("nccl_trace_rank_12.node-a7", 12), ("comm_lib_trace_rank_0", 0),
        ("host-b17_trace_5.pkl", 5), ("rank-4.json", 4), ("dump_node3_rank2.pickle", 2),
        ("trace.pkl", None)])
    def test_rank_from_file_name(self, name, rank):
        assert rank_from_name(name) == rank

    def test_faulthandler_threads(self):
        recs = list(parse_stack_dump(str(FR / "gloo_late" / "stacks" / "rank1.faulthandler.txt")))
        threads = [r for r in recs if isinstance(r, ThreadStack)]
        text = (FR / "gloo_late" / "stacks" / "rank1.faulthandler.txt").read_text()
        assert len(threads) == text.count("(most recent call first):")
        assert [t.thread for t in threads] == re.findall(r"hread (0x[0-9a-f]+)", text)
        assert [t.state for t in threads] == ["current" if "Current" in ln else None
                                              for ln in text.splitlines() if "most recent" in ln]

    def test_py_spy_threads(self):
        path = FR / "gloo_late" / "stacks" / "rank1.py-spy.txt"
        text = path.read_text()
        recs = list(parse_stack_dump(str(path)))
        threads = [r for r in recs if isinstance(r, ThreadStack)]
        want = re.findall(r'^Thread (\S+) \((\S+)\)(?:: "(.*)")?$', text, flags=re.M)
        assert [(t.thread, t.state, t.name) for t in threads] == [
            (i, s, n or None) for i, s, n in want]
        note = recs[-1].attrs
        assert note["tool"] == "py-spy" and note["pid"] == int(re.search(
            r"^Process (\d+)", text, flags=re.M).group(1))


class TestVerdict:
    """hang_verdict against torch's analyzer, run on the same dumps."""

    @pytest.mark.parametrize("scenario", SCENARIOS)
    def test_the_first_finding_per_group_is_fr_traces(self, hangs, scenario):
        inc = incident_of(hangs, scenario)
        groups = {g["process_group"]: g for g in rows(
            hangs, "SELECT * FROM fr_groups WHERE incident = ?", [inc])}
        verdict = verdicts(hangs, inc)
        seen: set[str] = set()
        for f in fr_trace_findings(scenario):
            if f["group"] in seen:
                continue  # fr_trace goes on after a group's first mismatch; tlview stops
            seen.add(f["group"])
            g = groups[f["group"]]
            if set(g["members"]) != f["expected"]:
                # gloo's pg_config names no ranks: a group is known from the ranks that
                # used it, and ranks that never did are not seen (fr_trace was given them)
                assert g["members_from"] == "entries" and set(g["members"]) < f["expected"]
                continue
            mine = [v for v in verdict if v["process_group"] == f["group"]]
            assert {v["seq"] for v in mine} == {f["seq"]}
            assert {v["finding"] for v in mine} == {f["finding"]}
            missing = {v["rank"] for v in mine if v["verdict"] in ("never issued it",
                                                                     "missing dump")}
            assert missing == f["missing"]
            for rank in f["culprits"]:  # fr_trace's culprit is one tlview names (or ties)
                (v,) = [v for v in mine if v["rank"] == rank]
                assert v["culprit"] in (True, None), v

    @pytest.mark.parametrize("scenario", SCENARIOS)
    def test_real_nccl_dumps_get_fr_traces_verdict(self, scenario, nccl):
        """The 4-GPU NCCL hangs of the fixtures helper (tests/fixtures/flight_recorder/<s>/,
        merged from its branch): the watchdog's dumps and the stacks, against torch's
        analyzer on the same dumps (fr_trace/timeout_dump__default.txt)."""
        folder = FR / scenario
        verdict = verdicts(nccl, path=f"/{scenario}/timeout_dump/")
        assert verdict
        found = fr_trace_findings(scenario, folder / "fr_trace" / "timeout_dump__default.txt")
        assert found
        f = found[0]  # the analyzer's first finding: the root of the hang
        mine = [v for v in verdict if v["process_group"] == f["group"]]
        assert {v["seq"] for v in mine} == {f["seq"]} and all(v["root"] for v in mine)
        assert {v["finding"] for v in mine} == {f["finding"]}
        assert {v["rank"] for v in mine if v["verdict"] == "never issued it"} == f["missing"]
        assert {v["rank"] for v in mine if v["culprit"]} == (f["missing"] or set(f["culprits"]))

    def test_every_scenario_is_an_incident_of_its_own(self, hangs):
        got = rows(hangs, "SELECT incident, list(rank ORDER BY rank) AS ranks, "
                          "list(DISTINCT status) AS status FROM fr_dumps GROUP BY 1 ORDER BY 1")
        assert sorted(len(r["ranks"]) for r in got) == [2, 3, 3, 4]
        assert all(r["status"] == ["ok"] for r in got)

    def test_the_late_rank_sits_in_its_slow_computation(self, hangs):
        inc = incident_of(hangs, "late")
        (v,) = [v for v in verdicts(hangs, inc) if v["culprit"] is True]
        assert (v["rank"], v["verdict"], v["seq"]) == (1, "never issued it", 8)
        frames = rows(hangs, "SELECT frame FROM hang_stacks WHERE incident = ? AND rank = 1",
                      [inc])
        assert any(f["frame"].startswith("slow_computation ") for f in frames)
        assert any(f["frame"].startswith("sleep ") or f["frame"].startswith("slow_computation")
                   for f in frames)

    def test_the_subgroup_is_the_root_and_the_world_waits_for_it(self, hangs):
        inc = incident_of(hangs, "subgroup")
        v = {(r["process_group"], r["rank"]): r for r in verdicts(hangs, inc)}
        high = [r for r in v.values() if r["pg_desc"] == "pair_high"]
        assert {r["rank"]: r["verdict"] for r in high} == {2: "waiting", 3: "never issued it"}
        assert all(r["root"] for r in high)
        world = {r["rank"]: r for r in v.values() if r["pg_desc"] == "default_pg"}
        assert not any(r["root"] for r in world.values())
        # rank 2 cannot come to the world's all_reduce: it waits in pair_high #3
        assert world[2]["blocked_in"].startswith(f"{high[0]['process_group']}:3 ")
        assert world[3]["blocked_in"] is None

    def test_progress_is_pg_status(self, hangs):
        inc = incident_of(hangs, "skip")
        got = {r["rank"]: r for r in rows(
            hangs, "SELECT * FROM collective_progress WHERE incident = ? AND process_group = '0'",
            [inc])}
        for rank in (0, 1, 2):
            entries = [r for r in parse_flight_recorder(
                str(FR / "gloo_skip" / "pickle" / f"fr_trace_rank_{rank}"))]
            status = next(r for r in entries if type(r).__name__ == "ProcessGroupProgress"
                          and r.pg_id == 0)
            assert got[rank]["last_enqueued_seq"] == status.last_enqueued
            assert got[rank]["last_completed_seq"] == status.last_completed
            assert got[rank]["last_started_seq"] is None  # gloo: -1, not tracked


class TestCaches:
    """The dumps' caches (schemas/55_flight_recorder.sql) hold exactly what their derivations
    compute from the events, after ingests one source at a time; a migrate drops and fills
    them again."""

    PAIRS = (("_cache_fr_calls", "_fr_calls_derived"),
             ("_cache_fr_dump_stats", "_fr_dump_stats_derived"))

    @staticmethod
    def differences(db: Path) -> dict[str, tuple[int, int]]:
        """Per cache: (its rows, rows in one of cache and derivation and not the other)."""
        out = {}
        with open_database(db, read_only=True) as d:
            for cached, derived in TestCaches.PAIRS:
                n = d.sql(f"SELECT count(*) FROM {cached}").fetchone()[0]
                diff = d.sql(f"""
                    WITH a AS (SELECT *, count(*) AS n FROM {cached} GROUP BY ALL),
                         b AS (SELECT *, count(*) AS n FROM {derived} GROUP BY ALL)
                    SELECT count(*) FROM ((FROM a EXCEPT FROM b) UNION ALL (FROM b EXCEPT FROM a))
                """).fetchone()[0]
                out[cached] = (n, diff)
        return out

    def test_the_caches_are_their_derivations(self, hangs):
        got = self.differences(hangs)
        # one row per dump; one per dump, group and collective sequence id
        n_dumps = sum(len(list((FR / f"gloo_{s}" / "pickle").iterdir())) for s in SCENARIOS)
        assert got["_cache_fr_dump_stats"] == (n_dumps, 0)
        n_calls, diff = got["_cache_fr_calls"]
        want = 0
        for s in SCENARIOS:
            for pk in (FR / f"gloo_{s}" / "pickle").iterdir():
                entries = json.loads((FR / f"gloo_{s}" / "json" / f"{pk.name}.json")
                                     .read_text())["entries"]
                want += len({(e["process_group"][0], e["collective_seq_id"]) for e in entries
                             if not e["is_p2p"]})
        assert (n_calls, diff) == (want, 0)

    def test_a_shard_set_carries_them_exactly(self, tmp_path):
        """Written to a shard set's Parquet and read back (`tlview ingest --from-shards`) the
        caches are their derivations still (a HUGEINT hash came back a DOUBLE)."""
        shards, db = tmp_path / "set", tmp_path / "from_shards.duckdb"
        cli(["shard", str(FR / "gloo_sizes" / "pickle"), "-o", str(shards), "-j", "1"])
        cli(["ingest", "--from-shards", str(shards), "--db", str(db)])
        got = self.differences(db)
        assert got["_cache_fr_calls"][0] > 0 and got["_cache_fr_dump_stats"] == (2, 0)
        assert got["_cache_fr_calls"][1] == 0

    # A migrate fills them again: store/test_report.py's TestRuns::
    # test_a_database_before_runs_gets_one_per_folder_on_migrate (one migrate, which
    # rewrites every view, ~6 CPU-s, for that check and this).


class TestIncomplete:
    """A rank's dump missing, two dumps of one rank, a dump of an unknown version."""

    def test_a_missing_rank_is_named_and_the_others_still_judged(self, tmp_path):
        db = tmp_path / "m.duckdb"
        ingest_into(db, *(FR / "gloo_late" / "pickle" / f"fr_trace_rank_{r}" for r in (0, 2)))
        (g,) = rows(db, "SELECT * FROM fr_groups")
        assert g["members"] == [0, 1, 2] and g["missing"] == [1]
        v = {r["rank"]: r for r in verdict_rows(db, "SELECT * FROM hang_verdict")}
        assert v[1]["verdict"] == "missing dump" and v[1]["culprit"] is None
        assert v[0]["verdict"] == v[2]["verdict"] == "waiting"
        assert {r["seq"] for r in v.values()} == {8}

    def test_two_dumps_of_one_rank_conflict(self, tmp_path):
        db = tmp_path / "c.duckdb"
        twin = tmp_path / "copy" / "fr_trace_rank_2"
        twin.parent.mkdir()
        twin.write_bytes((FR / "gloo_skip" / "pickle" / "fr_trace_rank_1").read_bytes())
        ingest_into(db, *sorted((FR / "gloo_skip" / "pickle").iterdir()), twin)
        d = {r["source_path"]: r for r in rows(db, "SELECT * FROM fr_dumps")}
        assert {Path(p).parent.name + "/" + Path(p).name: r["status"] for p, r in d.items()} == {
            "pickle/fr_trace_rank_0": "ok", "pickle/fr_trace_rank_1": "ok",
            "pickle/fr_trace_rank_2": "conflict", "copy/fr_trace_rank_2": "conflict"}
        assert len({r["incident"] for r in d.values()}) == 1
        v = {r["rank"]: r for r in verdict_rows(db, "SELECT * FROM hang_verdict "
                                            "WHERE process_group = '0'")}
        assert v[2]["verdict"] == "missing dump" and "conflict" in v[2]["reason"]

    def test_dumps_of_one_ring_are_superseded_by_the_newest(self, tmp_path):
        """The pickle and the JSON of the same moment, and an older dump (the pickle cut to
        its first entries, as if dumped on demand before the hang): one dump per rank is
        read, the verdict is the pickles' alone."""
        db = tmp_path / "s.duckdb"
        skip = FR / "gloo_skip"
        older = json.loads((skip / "json" / "fr_trace_rank_1.json").read_text())
        older["entries"] = older["entries"][:4]
        early = tmp_path / "early" / "fr_trace_rank_1.json"
        early.parent.mkdir()
        early.write_text(json.dumps(older))
        ingest_into(db, *sorted((skip / "pickle").iterdir()), *sorted((skip / "json").iterdir()),
                    early)
        got = rows(db, "SELECT rank, status, count(*) AS n FROM fr_dumps GROUP BY ALL ORDER BY ALL")
        assert [(r["rank"], r["status"], r["n"]) for r in got] == [
            (0, "ok", 1), (0, "superseded", 1), (1, "ok", 1), (1, "superseded", 2),
            (2, "ok", 1), (2, "superseded", 1)]
        v = verdict_rows(db, "SELECT rank, verdict FROM hang_verdict WHERE process_group = '0' "
                     "ORDER BY rank")
        assert [(r["rank"], r["verdict"]) for r in v] == [
            (0, "waiting"), (1, "waiting"), (2, "never issued it")]

    def test_unknown_version_is_kept_and_said(self, tmp_path):
        data = json.loads((FR / "gloo_sizes" / "json" / "fr_trace_rank_0.json").read_text())
        data["version"] = "7.1"
        data["entries"][0]["future_field"] = {"x": 1}
        data["brand_new"] = [1, 2]
        path = tmp_path / "fr_trace_rank_0.json"
        path.write_text(json.dumps(data))
        db = tmp_path / "v.duckdb"
        ingest_into(db, path)
        (d,) = rows(db, "SELECT version, version_known, n_entries FROM fr_dumps")
        assert d == {"version": "7.1", "version_known": False,
                     "n_entries": len(data["entries"])}
        (n,) = rows(db, "SELECT notes FROM timelines")
        note = json.loads(n["notes"])
        assert "7.1" in note["version_note"] and note["unknown_keys"] == {"brand_new": [1, 2]}
        assert note["unknown_entry_keys"] == {"future_field": 1}
        (e,) = rows(db, "SELECT attrs->>'$.future_field' AS f FROM events_collective_recorded "
                        "WHERE step = 0")
        assert json.loads(e["f"]) == {"x": 1}


class TestReport:
    """`tlview report` on each real NCCL hang (its own run): the hang section's figures are
    hang_verdict's root rows and torch's analyzer's first finding; the headline says it in
    words and opens the hang screen at the culprit; every format carries it, md and html
    with the SQL."""

    @pytest.fixture(scope="class")
    def reports(self, nccl):
        from tlview.report_command import WORDS
        from tlview.store.report import build_report, find_run

        with open_database(nccl, read_only=True) as d:
            got = {s: build_report(d, find_run(d, s)[0], WORDS) for s in SCENARIOS}
            # what the hang section made in the connection is gone (dumps_read_once)
            assert not d.scalar("hang_dumps_are_read")
        return got

    @pytest.mark.parametrize("scenario", SCENARIOS)
    def test_the_hang_section_is_hang_verdict_and_fr_trace(self, nccl, reports, scenario):
        r = reports[scenario]
        # hang_verdict's root rows joined with the dumps of their incident and rank in the
        # scenario's run (a row per such dump)
        verdict, dumps = shared_verdicts(nccl)
        root = [v for v in verdict for d in dumps if v["root"] and d["run"] == scenario
                and (d["incident"], d["rank"]) == (v["incident"], v["rank"])]
        assert root and len({v["seq"] for v in root}) == 1
        f = fr_trace_findings(scenario, FR / scenario / "fr_trace" /
                              "timeout_dump__default.txt")[0]  # the analyzer's first finding
        fig = {k: r.figure(f"hang1_{k}").value for k in
               ("group", "seq", "finding", "culprits", "waiting", "since_ns", "dumps")}
        assert fig["seq"] == root[0]["seq"] == f["seq"]
        assert {v["process_group"] for v in root} == {f["group"]}
        assert fig["group"] == (root[0]["pg_desc"] if root[0]["pg_desc"] not in (None, "undefined")
                                else f"group {root[0]['process_group']}")
        assert fig["finding"] == root[0]["finding"] == f["finding"]
        assert fig["culprits"] == sorted(v["rank"] for v in root if v["culprit"]) \
            == sorted(f["missing"] or f["culprits"])
        assert fig["waiting"] == sorted(v["rank"] for v in root if v["verdict"] == "waiting")
        assert fig["since_ns"] == root[0]["since_ns"]
        assert fig["dumps"] == 4 and r.figure("hang1_missing") is None
        (v,) = [h for h in r.headline if h.key == "hang1"]
        assert r.headline[0] == v  # a hang is the run's first verdict
        (culprit,) = fig["culprits"]
        assert (v.evidence.screen, v.evidence.at) == ("hang", culprit)
        assert v.text.startswith(f"Hang: rank {culprit} ")
        assert f"#{f['seq']} (" in v.text and fig["group"] in v.text

    def test_every_format_carries_the_verdict_and_md_html_its_sql(self, nccl, reports):
        from tlview.report_render import RENDERERS

        r = reports["skip"]
        (inc,) = {d["incident"] for d in rows(nccl, "SELECT incident FROM fr_dumps WHERE "
                                                    "source_path LIKE '%/skip/%'")}
        sentence = r.headline[0].text
        assert sentence == ("Hang: rank 3 never issued default_pg #10 (nccl:all_reduce); "
                            "ranks 0-2 wait in it since 2026-11-28 06:19:14 UTC.")
        for fmt, render in RENDERERS.items():
            text = render(r)
            assert (json.dumps(sentence) if fmt == "json" else
                    sentence.replace("'", "&#x27;") if fmt == "html" else sentence) in text, fmt
            if fmt in ("md", "html"):
                assert f"FROM hang_verdict WHERE incident = {inc}" in text, fmt
        doc = json.loads(RENDERERS["json"](r))
        hang = next(s for s in doc["sections"] if s["key"] == "hang")
        assert {f["key"]: f["value"] for f in hang["figures"]}["hang1_culprits"] == [3]

    def test_reading_the_dumps_once_changes_no_row(self, nccl, reports):
        """The summary, the grid and the report read fr_dumps once (a temporary table of
        that name: hang_queries.dumps_read_once) where each view would plan it anew: the
        incidents and verdict rows are the views' as read without it, and nothing of it is left in the connection afterwards."""
        from tlview.store import hang_queries as hq

        verdict = rows(nccl, "SELECT * FROM hang_verdict")  # the plain view
        fields = [f.name for f in hq.Verdict.__attrs_attrs__]
        with open_database(nccl, read_only=True) as d:
            got = hq.hang_summary(d)
            once = d.query_dicts("hang_incidents", None, None)
            assert not d.scalar("hang_dumps_are_read")
            with hq.dumps_read_once(d):
                assert d.scalar("hang_dumps_are_read")
                assert d.query_dicts("hang_incidents", None, None) == once
                grid = hq.grid(d, got[0])
                assert d.scalar("hang_dumps_are_read")  # a block inside keeps the outer's
            assert not d.scalar("hang_dumps_are_read")
            plain_grid = d.query("hang_grid", got[0].incident)
        assert len(got) == len(SCENARIOS)
        assert [(i.incident, i.n_dumps, list(i.ranks)) for i in got] == [
            (r["incident"], r["n_dumps"], r["ranks"]) for r in once]
        assert Counter((i.incident, *(getattr(v, f) for f in fields))
                       for i in got for v in i.verdicts) == Counter(
            (v["incident"], *(v[f] for f in fields)) for v in verdict)
        assert [tuple(getattr(c, f.name) for f in hq.Cell.__attrs_attrs__)
                for c in grid.cells] == plain_grid

    def test_a_missing_dump_and_what_can_still_be_concluded(self, tmp_path):
        """Without the culprit's dump (rank 3 of skip) every rank with a dump issued #10 and
        waits: only rank 3 can hold it up. Without a waiting rank's (0), rank 3 is named all
        the same. (A truncated dump is refused by the ingest, so it reads as missing.)"""
        from tlview.report_command import WORDS
        from tlview.store.report import build_report

        dumps = FR / "skip" / "timeout_dump"
        for gone, culprits, words in ((3, [], "only rank 3 can hold it up"),
                                      (0, [3], "the other dumps name the culprit")):
            db = tmp_path / f"without{gone}.duckdb"
            cli(["ingest", *(str(dumps / f"nccl_trace_rank_{r}") for r in range(4)
                             if r != gone), "--db", str(db)])
            with open_database(db, read_only=True) as d:
                r = build_report(d, 1, WORDS)
            assert r.figure("hang1_missing").value == [gone]
            assert r.figure("hang1_culprits").value == culprits
            assert words in r.headline[0].text and f"no dump of rank {gone}" in r.headline[0].text


# Point-to-point and coalesced ops on gloo (make_fr_gloo.py p2p, coalesced; torch's analyzer on
# them in fr_trace.txt beside each).
P2P_COALESCED = ("p2p", "coalesced")


@pytest.fixture(scope="module")
def p2p_coalesced(tmp_path_factory) -> dict[str, Path]:
    """Per form, a database of both scenarios' three ranks' dumps (an incident each: the
    second dump of a rank begins a new one); the tests read a scenario's incident by its
    dumps' folder (``verdicts``)."""
    out = {}
    for form in ("pickle", "json"):
        db = tmp_path_factory.mktemp(f"p2p_coalesced_{form}") / "d.duckdb"
        ingest_together(db, *(p for s in P2P_COALESCED for p in sorted((FR / f"gloo_{s}" / form)
                                                                       .iterdir())))
        out[form] = db
    return out


class TestP2PAndCoalesced:
    """What gloo records of point-to-point and coalesced ops, and the verdict against torch's
    analyzer on the same dumps."""

    def test_gloo_records_no_p2p_entry_but_p2p_takes_op_ids(self):
        """Gloo writes no entry for send/recv or batch_isend_irecv: the dumps hold only the
        all_reduces, and each ring exchange (one isend, one irecv) shows as two op ids that no
        entry has; pg_status counts op ids, not collective sequence ids."""
        for rank in range(3):
            dump = json.loads((FR / "gloo_p2p" / "json" / f"fr_trace_rank_{rank}.json")
                              .read_text())
            entries = dump["entries"]
            assert not any(e["is_p2p"] for e in entries)
            assert {e["profiling_name"] for e in entries} == {"gloo:all_reduce"}
            # all_reduce #k is op 3k - 2: the exchanges between take two op ids each
            assert [(e["collective_seq_id"], e["op_id"]) for e in entries] == [
                (k, 3 * k - 2) for k in range(1, len(entries) + 1)]
            last = entries[-1]
            enqueued = int(dump["pg_status"]["0"]["last_enqueued_collective"])
            assert enqueued == last["op_id"] > last["collective_seq_id"]

    @pytest.mark.parametrize("form", ["pickle", "json"])
    def test_p2p_hang_is_fr_traces_verdict(self, p2p_coalesced, form):
        """Rank 0 waits in a recv rank 1 never sends; ranks 1 and 2 go on to the all_reduce.
        The dumps cannot show the recv: torch's analyzer and tlview both name rank 0 as
        missing from that all_reduce, which is all a gloo dump can tell."""
        (f,) = fr_trace_findings("p2p")
        v = verdicts(p2p_coalesced[form], path=f"/gloo_p2p/{form}/")
        assert {(r["process_group"], r["seq"], r["finding"]) for r in v} == {
            (f["group"], f["seq"], f["finding"])}
        assert {r["rank"] for r in v if r["verdict"] == "never issued it"} == f["missing"]
        assert {r["rank"] for r in v if r["culprit"]} == f["missing"] == {0}
        assert {r["rank"] for r in v} == f["expected"]

    @pytest.mark.parametrize("form", ["pickle", "json"])
    def test_coalesced_mismatch_is_fr_traces_verdict(self, p2p_coalesced, form):
        """Rank 2 coalesces the fourth step's two all_reduces the other way round: gloo records
        one entry per coalesced group, and its input sizes differ ([[8], [4]] against
        [[4], [8]]); the analyzer names rank 2, SIZE_OR_SYNTAX_MISMATCH, at seq 4."""
        (f,) = [x for x in fr_trace_findings("coalesced") if x["finding"]]
        assert f["culprits"] == {2: "SIZE_OR_SYNTAX_MISMATCH"}
        v = {r["rank"]: r for r in verdicts(p2p_coalesced[form], path=f"/gloo_coalesced/{form}/")}
        assert {(r["process_group"], r["seq"], r["finding"]) for r in v.values()} == {
            (f["group"], f["seq"], f["finding"])}
        assert {r for r, x in v.items() if x["culprit"]} == set(f["culprits"])
        ref = json.loads((FR / "gloo_coalesced" / "json" / "fr_trace_rank_2.json").read_text())
        (e,) = [e for e in ref["entries"] if e["collective_seq_id"] == f["seq"]]
        assert v[2]["verdict"] == "different sizes"
        assert json.loads(v[2]["in_sizes"]) == e["input_sizes"] == [[8], [4]]
        assert json.loads(v[2]["expected_sizes"]) == [[4], [8]]



# Point-to-point and coalesced ops on NCCL (gen/gpu_fr_hang.py p2p, batch_p2p, coalesced on
# 2 x H200, torch 2.11; each scenario's README says what was injected, fr_trace/ holds torch's
# analyzer on the watchdog's dumps and on the on-demand pickles).
NCCL_P2P = ("p2p", "batch_p2p", "coalesced")
NCCL_FORMS = ("timeout_dump", "ondemand_pickle", "ondemand_json")


@pytest.fixture(scope="module")
def nccl_p2p(tmp_path_factory) -> dict[str, Path]:
    """Per form, a database of the three scenarios' dumps of that form (an incident each:
    the second dump of a rank begins a new one)."""
    out = {}
    for form in NCCL_FORMS:
        db = tmp_path_factory.mktemp(f"nccl_p2p_{form}") / "d.duckdb"
        ingest_together(db, *(p for s in NCCL_P2P for p in sorted((FR / s / form).iterdir())))
        out[form] = db
    return out


def json_entries(scenario: str, rank: int) -> list[dict]:
    """Rank ``rank``'s entries as torch wrote them (the on-demand JSON: the same ring as the
    on-demand pickle; the watchdog's dump holds the same records, said by facts.json)."""
    path = FR / scenario / "ondemand_json" / f"nccl_trace_rank_{rank}.json"
    return json.loads(path.read_text())["entries"]


def analyzer_text(scenario: str, form: str) -> str:
    """torch's analyzer on the same dumps (the JSON is the on-demand pickle's ring: the
    analyzer ran on the pickle)."""
    name = "timeout_dump" if form == "timeout_dump" else "ondemand_pickle"
    return (FR / scenario / "fr_trace" / f"{name}__default.txt").read_text()


def verdict_of(db: Path, scenario: str, form: str) -> dict[int, dict]:
    return {r["rank"]: r for r in verdicts(db, path=f"/{scenario}/{form}/")}


class TestNcclP2PAndCoalesced:
    """The real NCCL dumps of point-to-point and coalesced hangs: hang_verdict against torch's
    analyzer on the same dumps, and what the entries themselves say."""

    @pytest.mark.parametrize("form", NCCL_FORMS)
    def test_p2p_rank_missing_is_fr_traces_verdict(self, nccl_p2p, form):
        """Rank 1 posts neither side of the exchange: the analyzer names it missing from
        rank 0's send (record 18) at sequence number 10; tlview says the same of that p2p
        id, the send's (the recv after it, record 19, has the next)."""
        (f, f2) = fr_trace_findings("p2p", FR / "p2p" / "fr_trace" / (
            "timeout_dump__default.txt" if form == "timeout_dump"
            else "ondemand_pickle__default.txt"))
        text = analyzer_text("p2p", form)
        assert "internal record id: 18" in text and "collective: nccl:send 0->1" in text
        (sent,) = [e for e in json_entries("p2p", 0) if e["record_id"] == 18]
        assert (f["seq"], f["group"], f["missing"]) == (sent["collective_seq_id"], "0", {1})
        v = verdict_of(nccl_p2p[form], "p2p", form)
        assert sorted(v) == sorted(f["expected"]) == [0, 1]
        assert {(r["process_group"], r["seq"], r["p2p_seq"], r["finding"]) for r in v.values()
                } == {(f["group"], f["seq"], sent["p2p_seq_id"], "rank missing")}
        assert sent["p2p_seq_id"] == 9 and sent["is_p2p"]
        # rank 1's p2p ids in the group stop before it
        assert max(e["p2p_seq_id"] for e in json_entries("p2p", 1) if e["is_p2p"]) < 9
        assert (v[1]["verdict"], v[1]["culprit"]) == ("never issued it", True)
        assert {r for r, x in v.items() if x["culprit"]} == f["missing"] == f2["missing"]
        # rank 0's send: the analyzer's "collective state: completed"
        assert (v[0]["verdict"], v[0]["ops"], v[0]["culprit"]) == (
            "completed", sent["profiling_name"], False)
        assert json.loads(v[0]["in_sizes"]) == sent["input_sizes"] == [[256, 1024]]
        assert sent["state"] == "completed" and all(x["root"] for x in v.values())
        assert v[1]["expected_ops"] == "nccl:send 0->1"
        assert v[1]["reason"].startswith("rank 1 never issued default_pg p2p #9 (after #10")

    @pytest.mark.parametrize("form", NCCL_FORMS)
    def test_batch_p2p_sizes_that_do_not_pair_name_no_culprit(self, nccl_p2p, form):
        """Rank 1's batch receives [128, 1024] where rank 0 sends [256, 1024]: the analyzer
        prints the two ranks' lists as a MISMATCH and names no culprit; tlview finds the
        same batch (its p2p id, computed here from the entries: the first whose sends and
        recvs do not pair up), says which op of each rank pairs with nothing, and names no
        culprit either."""
        text = analyzer_text("batch_p2p", form)
        assert "MISMATCH" in text and "Culprit rank" not in text
        assert "recv(s=0 d=1, input_sizes=[[128, 1024]]" in text
        ops = {r: [e for e in json_entries("batch_p2p", r) if e["is_p2p"]] for r in (0, 1)}

        def transfers(rank: int, kind: str, seq: int) -> list:
            out = []
            for e in ops[rank]:
                m = re.match(r"nccl:(send|recv) (\d+)(->|<-)(\d+)$", e["profiling_name"])
                assert m
                a, b = int(m.group(2)), int(m.group(4))
                if m.group(1) == kind and e["p2p_seq_id"] == seq:
                    pair = (a, b) if m.group(3) == "->" else (b, a)
                    moved = e["input_sizes"] if kind == "send" else e["output_sizes"]
                    out.append((pair, json.dumps(moved)))
            return sorted(out)

        seqs = sorted({e["p2p_seq_id"] for r in ops for e in ops[r]})
        bad = [s for s in seqs if transfers(0, "send", s) + transfers(1, "send", s)
               and sorted(transfers(0, "send", s) + transfers(1, "send", s))
               != sorted(transfers(0, "recv", s) + transfers(1, "recv", s))]
        first = bad[0]
        (coll,) = {e["collective_seq_id"] for r in ops for e in ops[r]
                   if e["p2p_seq_id"] == first}
        v = verdict_of(nccl_p2p[form], "batch_p2p", form)
        assert {(r["process_group"], r["seq"], r["p2p_seq"], r["finding"]) for r in v.values()
                } == {("0", coll, first, "size mismatch")}
        assert (first, coll) == (5, 10)
        for r in (0, 1):
            assert (v[r]["verdict"], v[r]["culprit"]) == ("different sizes", None)
        # the op of each rank that pairs with nothing, and what the peer posted (sizes as
        # the dumps give them, compact JSON)
        assert v[0]["reason"].startswith(
            "rank 0 different sizes in p2p #5: nccl:send 0->1 [[256,1024]] pairs with no op "
            "of the peer, which posted nccl:send 1->0 [[256,1024]] + nccl:recv 1<-0 "
            "[[128,1024]] (either side may be wrong")
        assert v[1]["reason"].startswith(
            "rank 1 different sizes in p2p #5: nccl:recv 1<-0 [[128,1024]] pairs with no op "
            "of the peer, which posted nccl:send 0->1 [[256,1024]] + nccl:recv 0<-1 "
            "[[256,1024]]")
        assert v[1]["ops"] == "nccl:send 1->0 + nccl:recv 1<-0"
        # the batch did not complete on rank 1: its end entry ('nccl:coalesced') says so
        (end,) = [e for e in json_entries("batch_p2p", 1) if not e["is_p2p"]
                  and e["p2p_seq_id"] == first and e["profiling_name"] == "nccl:coalesced"]
        assert end["state"] != "completed"

    @pytest.mark.parametrize("form", NCCL_FORMS)
    def test_coalesced_sizes_fr_trace_takes_the_first_rank_as_reference(self, nccl_p2p, form):
        """Rank 1 coalesces three all_reduces where rank 0 coalesces two: two ranks split
        evenly, so tlview's culprit is NULL (either may be wrong). The analyzer names rank 1:
        it takes the call of the dump it read first as the reference, in os.walk's order of
        the folder, not a property of the dumps: on gloo_sizes, split evenly too, it named
        rank 0 against rank 1's call. Not reproduced: tlview says the pair."""
        (f,) = fr_trace_findings("coalesced", FR / "coalesced" / "fr_trace" / (
            "timeout_dump__default.txt" if form == "timeout_dump"
            else "ondemand_pickle__default.txt"))
        assert f["culprits"] == {1: "SIZE_OR_SYNTAX_MISMATCH"}
        v = verdict_of(nccl_p2p[form], "coalesced", form)
        assert {(r["process_group"], r["seq"], r["p2p_seq"], r["finding"]) for r in v.values()
                } == {(f["group"], f["seq"], None, f["finding"])}
        assert [v[r]["culprit"] for r in (0, 1)] == [None, None]
        assert set(f["culprits"]) < set(v)  # one of tlview's pair
        (g,) = [x for x in fr_trace_findings("sizes") if x["finding"]]
        assert g["culprits"] == {0: "SIZE_OR_SYNTAX_MISMATCH"} and g["expected"] == {0, 1}
        for r in (0, 1):
            (e,) = [e for e in json_entries("coalesced", r)
                    if e["collective_seq_id"] == f["seq"]]
            assert json.loads(v[r]["in_sizes"]) == e["input_sizes"]
        assert json.loads(v[1]["in_sizes"]) == [[256, 1024], [512, 1024], [64, 1024]]

    def test_the_ingest_says_the_exchange_and_torchs_figure(self, nccl_p2p):
        """The lines the ingest prints (store/words.py over hang_verdicts): the p2p id of
        an exchange, and where the ranks split evenly what torch's analyzer does."""
        from tlview.store.hang_queries import hang_summary
        from tlview.store.words import by_group, group_line
        with open_database(nccl_p2p["timeout_dump"], read_only=True) as d:
            lines = [group_line(g) for i in hang_summary(d) for g in by_group(i).values()]
        assert lines == [
            "default_pg #10 p2p #9 (nccl:send 0->1), rank missing: rank 1: never issued it; "
            "rank 0 completed it [first in the incident]",
            "default_pg #10 p2p #5 (nccl:send 1->0 + nccl:recv 1<-0), size mismatch: ranks "
            "0-1: different sizes (ranks 0-1 split evenly: either may be wrong; torch's "
            "analyzer names no culprit of a batch either) [first in the incident]",
            "default_pg #15 (nccl:allreduce_coalesced), size mismatch: ranks 0-1: different "
            "sizes (ranks 0-1 split evenly: either may be wrong; torch's analyzer names one by "
            "the order it reads the files in) [first in the incident]"]


def test_records_for_detects_both_forms_and_stacks():
    fmts = {p.parent.name: next(r for r in records_for(p)).format for p in (
        FR / "gloo_skip" / "pickle" / "fr_trace_rank_0",
        FR / "gloo_skip" / "json" / "fr_trace_rank_0.json",
        FR / "gloo_skip" / "stacks" / "rank0.faulthandler.txt")}
    assert fmts == {"pickle": "flight_recorder", "json": "flight_recorder",
                    "stacks": "stack_dump"}


def run(capsys, *args: str) -> tuple[int, str, str]:
    from tlview.cli import main

    code = main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


def state_of(db: Path) -> tuple:
    with open_database(db, read_only=True) as d:
        return (d.query("counts")[0], d.sql("SELECT count(*) FROM frames").fetchone(),
                d.sql("SELECT count(*) FROM events_collective_recorded").fetchone())


class _Evil:
    """Unpickling this runs a shell command that writes a marker file."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        import os

        return (os.system, (f"touch {self.marker}",))


class TestBadInput:
    """One line naming the file, the place and what was expected; exit 2; the database
    exactly as it was."""

    @pytest.fixture
    def db(self, tmp_path, alone) -> Path:
        """A database holding one dump alone, which the test may change: a copy of the one
        ingested once per test process (conftest's ``alone``)."""
        db = tmp_path / "d.duckdb"
        shutil.copyfile(alone(FR / "gloo_sizes" / "pickle" / "fr_trace_rank_0")[0], db)
        return db

    def refused(self, capsys, db: Path, path: Path, *needles: str) -> str:
        before = state_of(db)
        code, _, err = run(capsys, "ingest", str(path), "--db", str(db))
        assert code == 2 and err.count("\n") == 1 and "Traceback" not in err, err
        assert path.name in err
        for n in needles:
            assert n in err, err
        assert state_of(db) == before
        return err

    def test_truncated_pickle(self, capsys, db, tmp_path):
        data = (FR / "gloo_skip" / "pickle" / "fr_trace_rank_0").read_bytes()
        bad = tmp_path / "fr_trace_rank_0"
        bad.write_bytes(data[:len(data) // 2])
        self.refused(capsys, db, bad, "byte ", "truncated pickle")

    def test_truncated_json(self, capsys, db, tmp_path):
        text = (FR / "gloo_skip" / "json" / "fr_trace_rank_0.json").read_text()
        bad = tmp_path / "fr_trace_rank_0.json"
        bad.write_text(text[:len(text) // 2])
        err = self.refused(capsys, db, bad, "truncated dump", "column ")
        assert f"{bad.name}:1:" in err

    @pytest.mark.parametrize("protocol", [2, 4])
    def test_a_pickle_that_would_run_code_is_refused_and_nothing_runs(
            self, capsys, db, tmp_path, protocol):
        import pickle
        import subprocess
        import sys

        real = json.loads((FR / "gloo_skip" / "json" / "fr_trace_rank_0.json").read_text())

        def dump_with(marker: Path) -> bytes:  # a real dump, an entry's field the payload
            first = real["entries"][0]
            poisoned = {**json.loads(json.dumps(first)), "frames": _Evil(marker)}
            return pickle.dumps({**real, "entries": [first, poisoned]}, protocol=protocol)

        # the same bytes really run the command under pickle.load (in a child process)
        probe, probe_marker = tmp_path / "probe.pkl", tmp_path / "PROBE"
        probe.write_bytes(dump_with(probe_marker))
        subprocess.run([sys.executable, "-c", "import pickle,sys; "
                        "pickle.load(open(sys.argv[1],'rb'))", str(probe)],
                       capture_output=True, check=False)
        assert probe_marker.exists()
        marker = tmp_path / "MARKER"
        evil = tmp_path / "fr_trace_rank_1"
        evil.write_bytes(dump_with(marker))
        self.refused(capsys, db, evil, "refused pickle opcode", "system",
                     "a Flight Recorder dump holds only", "nothing was run")
        assert not marker.exists()

    def test_odd_values_are_kept_as_null_not_a_crash(self, tmp_path):
        data = json.loads((FR / "gloo_sizes" / "json" / "fr_trace_rank_0.json").read_text())
        e = data["entries"][0]
        e.update(record_id=2**70, input_sizes="x", process_group=7, is_p2p="no",
                 duration_ms=float("1e300"), time_created_ns="123")
        data["pg_config"] = {"0": {"name": "0", "desc": "default_pg", "ranks": '["0", 1]'}}
        path = tmp_path / "fr_trace_rank_0.json"
        path.write_text(json.dumps(data))
        db = tmp_path / "o.duckdb"
        ingest_into(db, path)
        (r,) = rows(db, "SELECT step, in_sizes, process_group, is_p2p, dur_ns, ts_ns "
                        "FROM events_collective_recorded ORDER BY seq LIMIT 1")
        assert r == {"step": None, "in_sizes": '"x"', "process_group": "7", "is_p2p": None,
                     "dur_ns": None, "ts_ns": 123}
        (g,) = rows(db, "SELECT ranks FROM events_process_group")
        assert g["ranks"] == [0, 1]

    def test_a_dump_of_another_shape(self, capsys, db, tmp_path):
        bad = tmp_path / "fr_trace_rank_4.json"
        bad.write_text(json.dumps({"version": "2.10", "pg_config": {}, "entries": {"a": 1}}))
        self.refused(capsys, db, bad, "entries is a dict, expected a list")

    def test_missing_and_conflicting_ranks_are_said_in_one_line_each(self, capsys, tmp_path):
        db = tmp_path / "r.duckdb"
        folder = tmp_path / "dumps"
        folder.mkdir()
        for r in (0, 2):
            (folder / f"fr_trace_rank_{r}").write_bytes(
                (FR / "gloo_late" / "pickle" / f"fr_trace_rank_{r}").read_bytes())
        (folder / "again_rank_2").write_bytes(
            (FR / "gloo_late" / "pickle" / "fr_trace_rank_0").read_bytes())
        code, out, err = run(capsys, "ingest", str(folder), "--db", str(db))
        assert code == 0, err
        hang = [ln for ln in out.splitlines() if ln.startswith(("hang:", "  "))]
        assert hang[0] == "hang: incident 1: 3 Flight Recorder dumps (ranks 0), no dump of ranks 1-2"
        notes = [ln for ln in hang if "note:" in ln]
        assert len(notes) == 1 and "rank 2 is claimed by dumps of two processes" in notes[0]
        assert "again_rank_2" in notes[0] and "fr_trace_rank_2" in notes[0]


def test_compile_ids_that_diverge_across_ranks_are_told(tmp_path, capsys):
    """Rank 1's real TORCH_TRACE log with its compile 1/0 cut out (as if it never compiled
    that frame): compile_divergence names it, and the hang report of the ranks says so."""
    import gzip

    tt = FIXTURES / "torch_trace" / "two_ranks"
    lines = gzip.open(tt / "dedicated_log_torch_trace_rank_1.log.gz", "rt").read().splitlines()
    kept, skip = [], False
    for ln in lines:
        if not ln.startswith("\t"):
            skip = '"frame_id": 1,' in ln
        if not skip:
            kept.append(ln)
    cut = tmp_path / "dedicated_log_torch_trace_rank_1.log"
    cut.write_text("\n".join(kept) + "\n")
    db = tmp_path / "c.duckdb"
    ingest_into(db, tt / "dedicated_log_torch_trace_rank_0.log.gz", cut)
    want = {r["c"] for r in rows(db, "SELECT DISTINCT compile_id AS c FROM compile_events "
                                     "WHERE rank = 0 AND compile_id LIKE '1/%'")}
    got = rows(db, "SELECT * FROM compile_divergence ORDER BY compile_id")
    assert {r["compile_id"] for r in got} == want and want
    assert all(r["ranks"] == [0] and r["missing"] == [1] for r in got)
    code, out, err = run(capsys, "ingest", *(str(p) for p in sorted(
        (FR / "gloo_sizes" / "pickle").iterdir())), "--db", str(db))
    assert code == 0, err
    assert f"  note: TORCH_TRACE compile {got[0]['compile_id']} is in the logs of rank 0, " \
           "not of rank 1" in out
