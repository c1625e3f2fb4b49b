"""Collectives across ranks: matching, clock alignment, skew, waits, stragglers, bad input.

Every figure is checked against tests/reference_ranks.py, which reads the raw trace JSON
(json.load, Decimal timestamps) and applies docs/ranks.md's rules on its own. Derived traces
(clock skew, a delayed rank, another run, older NCCL names, sequence numbers, four ranks)
come from tests/fixtures/gen/make_rank_traces.py: committed under
tests/fixtures/profile/ranks, or made here into tmp folders.
"""

from __future__ import annotations

import gzip
import importlib.util
import subprocess
from pathlib import Path

import pytest
from tlview.store import open_database

from tests import reference_ranks as ref
from tests.conftest import FIXTURES, ingest_folder, ingest_into, ingest_together, tlview_main

COLL = FIXTURES / "profile" / "coll"
RANKS = [COLL / f"rank{r}" / f"rank{r}.pt.trace.json.gz" for r in (0, 1)]
DERIVED = FIXTURES / "ranks"
SKEWED_1 = DERIVED / "skew" / "rank1.pt.trace.json.gz"
DELAYED = [DERIVED / "delayed" / f"rank{r}.pt.trace.json.gz" for r in (0, 1)]
RERUN_0 = DERIVED / "runs" / "rank0_rerun.pt.trace.json.gz"


def _gen():
    spec = importlib.util.spec_from_file_location(
        "make_rank_traces", FIXTURES / "gen" / "make_rank_traces.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


gen = _gen()


def cli_ingest(path: Path, db: Path) -> subprocess.CompletedProcess[str]:
    """`tlview ingest PATH --db DB` as a user runs it (its report on stdout), in this
    process (conftest.tlview_main)."""
    return tlview_main("ingest", str(path), "--db", str(db), env={"TLVIEW_LOCK_WAIT": "0"})


def rows(db_path: Path, sql: str) -> list[dict]:
    with open_database(db_path, read_only=True) as db:
        cur = db.con.execute(sql)
        cols = [d[0] for d in cur.description]
        return [dict(zip(cols, r)) for r in cur.fetchall()]


def reference(paths: list[Path]):
    calls = [c for p in paths for c in ref.calls(p)]
    instances, methods = ref.match(calls)
    off = ref.offsets(instances)
    return calls, instances, methods, off, ref.arrivals(instances, off)


def skew_by_kernels(db_path: Path) -> dict[frozenset, dict]:
    """collective_skew rows keyed by the (rank, ts_ns) of their kernels: the instance as
    the traces name it, whatever ids the database gave."""
    kernels: dict[int, set] = {}
    for r in rows(db_path, "SELECT collective_id, rank, ts_ns FROM collective_ranks"):
        kernels.setdefault(r["collective_id"], set()).add((r["rank"], r["ts_ns"]))
    return {frozenset(kernels[s["collective_id"]]): s
            for s in rows(db_path, "SELECT * FROM collective_skew")}


def ref_kernels(inst: dict[int, dict]) -> frozenset:
    return frozenset((r, c["ts"]) for r, c in inst.items())


@pytest.fixture(scope="module")
def coll_db(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("ranks") / "coll.duckdb"
    ingest_together(path, *RANKS)
    return path


@pytest.fixture(scope="module")
def delayed_db(tmp_path_factory) -> Path:
    """The two delayed ranks (ranks/delayed), for the tests that only read them."""
    path = tmp_path_factory.mktemp("ranks") / "delayed.duckdb"
    ingest_together(path, *DELAYED)
    return path


class TestRealTwoRanks:
    """The real 2-rank NCCL run (H200, torch 2.11): every NCCL kernel matched, figures
    equal to the reference's reading of the raw JSON."""

    def test_every_nccl_kernel_is_matched_across_both_ranks(self, coll_db):
        calls, instances, methods, _, _ = reference(RANKS)
        assert len(calls) == 48 and len(instances) == 24
        assert set(methods.values()) == {"step_order"}
        got = skew_by_kernels(coll_db)
        assert set(got) == {ref_kernels(i) for i in instances.values()}
        for s in got.values():
            assert (s["n_ranks"], s["group_size"], s["complete"], s["consistent"]) == \
                (2, 2, True, True)
            assert s["match_method"] == "step_order" and s["pg"] == "0"
        assert rows(coll_db, "SELECT count(*) AS n FROM collective_unmatched")[0]["n"] == 0
        per_rank = rows(coll_db, "SELECT rank, count(*) AS n, count(DISTINCT seq) AS k "
                                 "FROM collective_ranks GROUP BY rank ORDER BY rank")
        assert per_rank == [{"rank": 0, "n": 24, "k": 24}, {"rank": 1, "n": 24, "k": 24}]

    def test_clock_offset_is_the_median_end_difference(self, coll_db):
        _, _, _, off, _ = reference(RANKS)
        got = {r["rank"]: r for r in rows(coll_db, "SELECT * FROM clock_offsets")}
        assert got[0]["offset_ns"] == 0 and got[0]["method"] == "reference"
        assert got[1]["offset_ns"] == off[1] == -13134  # docs/ranks.md's figure
        assert got[1]["n_collectives"] == 24 and got[1]["via_rank"] == 0

    def test_skew_per_collective(self, coll_db):
        _, instances, _, _, arr = reference(RANKS)
        got = skew_by_kernels(coll_db)
        for key, inst in instances.items():
            s, a = got[ref_kernels(inst)], arr[key]
            assert (s["first_arrival_ns"], s["last_arrival_ns"], s["skew_ns"], s["last_rank"],
                    s["comm_ns"]) == (a["first"], a["last"], a["skew"], a["last_rank"], a["comm"])
            # bytes: the larger message, bf16; bus bandwidth of 2 ranks is half the algorithm's
            assert s["bytes"] == 2 * 16777216 * (2 if s["kind"] == "ReduceScatter" else 1)
            assert float(s["busbw_gbps"]) == pytest.approx(s["bytes"] / a["comm"] / 2, abs=1e-3)

    def test_each_ranks_wait_and_the_stragglers(self, coll_db):
        _, _, _, _, arr = reference(RANKS)
        waited, caused, last = ref.waits(arr)
        wait = {r["rank"]: r for r in rows(coll_db, "SELECT * FROM rank_wait")}
        strag = rows(coll_db, "SELECT * FROM stragglers ORDER BY caused_wait_order")
        for rank in (0, 1):
            assert wait[rank]["wait_ns"] == waited[rank]
            assert wait[rank]["times_last"] == last[rank]
        assert [(s["rank"], s["caused_wait_ns"], s["times_last"]) for s in strag] == \
            sorted(((r, caused[r], last[r]) for r in (0, 1)), key=lambda x: -x[1])
        assert sum(s["caused_wait_ns"] for s in strag) == sum(waited.values())
        assert [s["delay_ns"] for s in strag] == [s["caused_wait_ns"] for s in strag]  # 2 ranks
        assert strag[0]["rank"] == 1  # in the real run rank 1 kept rank 0 waiting most

    def test_late_arrivals_name_the_node_that_ran_before(self, tmp_path):
        path = tmp_path / "tree.duckdb"
        ingest_folder(path, COLL)
        late = rows(path, "SELECT * FROM late_arrivals WHERE node IS NOT NULL ORDER BY start_ns")
        assert len(late) >= 20
        for r in late:
            assert r["node"] in ("extern_kernels.mm", "triton_poi_fused_add_gelu_mul_0")
        # every call is issued by a compiled node, and a matched collective by the same
        # node (output code and scheduler IR) on both ranks
        issued = rows(path, "SELECT collective_id, count(*) AS n, count(DISTINCT step) AS steps, "
                            "count(DISTINCT ir_node) AS ir, min(node) AS node "
                            "FROM collective_nodes GROUP BY collective_id")
        assert len(issued) == 24 and all((i["n"], i["steps"], i["ir"]) == (2, 1, 1)
                                         for i in issued)
        assert {i["node"] for i in issued} == {
            "torch.ops._c10d_functional.all_gather_into_tensor.default",
            "torch.ops._c10d_functional.reduce_scatter_tensor.default"}
        nodes = rows(path, "SELECT rank, late_nodes FROM rank_wait ORDER BY rank")
        assert all(set(n["late_nodes"]) <= {"extern_kernels.mm", "triton_poi_fused_add_gelu_mul_0",
                                            "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT"}
                   for n in nodes)


class TestKernelNamesAndSequenceNumbers:
    """Older NCCL kernel names without the collective record on the kernel; sequence
    numbers where torch records them."""

    def test_old_nccl_names_match_through_record_param_comms(self, tmp_path, coll_db):
        paths = []
        for r in (0, 1):
            t = gen.read(gen.source(r))
            gen.old_nccl(t)
            paths.append(gen.write(t, tmp_path / f"rank{r}.pt.trace.json.gz"))
        db = tmp_path / "old.duckdb"
        ingest_into(db, *paths)
        old = rows(db, "SELECT kernel, collective, kind, pg, bytes FROM collective_ranks")
        assert {r["kernel"] for r in old} == {"ncclKernel_AllGather_RING_LL_Sum_bf16",
                                              "ncclKernel_ReduceScatter_RING_LL_Sum_bf16"}
        assert all(r["collective"] and r["pg"] == "0" and r["bytes"] for r in old)
        cols = "first_arrival_ns, skew_ns, last_rank, match_method, bytes, kind, busbw_gbps"
        assert rows(db, f"SELECT {cols} FROM collective_skew ORDER BY 1") == \
            rows(coll_db, f"SELECT {cols} FROM collective_skew ORDER BY 1")

    def test_sequence_numbers_match_even_when_a_call_is_missing(self, tmp_path):
        paths = []
        for r in (0, 1):
            t = gen.read(gen.source(r))
            gen.with_seq(t)
            if r == 1:
                gen.drop_comm(t, 1)  # rank 1's trace lost its second collective
            paths.append(gen.write(t, tmp_path / f"rank{r}.pt.trace.json.gz"))
        db = tmp_path / "seq.duckdb"
        ingest_into(db, *paths)
        _, instances, methods, off, arr = reference(paths)
        assert set(methods.values()) == {"seq"}
        got = skew_by_kernels(db)
        assert set(got) == {ref_kernels(i) for i in instances.values()}
        assert len([s for s in got.values() if s["n_ranks"] == 2]) == 23
        for key, inst in instances.items():
            s = got[ref_kernels(inst)]
            assert s["match_method"] == "seq" and s["seq_num"] == key[1]
            if key in arr:
                assert (s["skew_ns"], s["last_rank"]) == (arr[key]["skew"], arr[key]["last_rank"])
        (u,) = rows(db, "SELECT * FROM collective_unmatched")
        assert (u["ranks"], u["missing"], u["match_method"]) == ([0], [1], "seq")
        assert u["match_key"] == "seq 2 #1"
        assert u["reason"] == ("the trace of rank 1 has no matching call "
                               "(it ends early, or its calls differ)")


class TestClockAlignment:
    """Known skews: one rank's clock moved by a fixed offset plus jitter; a delayed rank."""

    def test_offset_is_found_within_the_jitter(self, tmp_path, coll_db):
        db = tmp_path / "skew.duckdb"
        ingest_together(db, RANKS[0], SKEWED_1)
        (o,) = rows(db, "SELECT * FROM clock_offsets WHERE rank = 1")
        assert abs(o["offset_ns"] - gen.OFFSET_NS) <= gen.JITTER_NS
        _, _, _, off, _ = reference([RANKS[0], SKEWED_1])
        assert o["offset_ns"] == off[1]
        # aligned, the arrivals are the real run's, moved by the jitter and the difference
        # between the two offset estimates, never by the 2.5 ms offset
        def arrivals(path):
            return {r["match_key"]: r["s"] for r in rows(
                path, "SELECT match_key, max(start_ns) FILTER (WHERE rank = 1) - "
                      "max(start_ns) FILTER (WHERE rank = 0) AS s FROM collective_ranks GROUP BY 1")}

        real_db = coll_db
        (real_off,) = rows(real_db, "SELECT offset_ns FROM clock_offsets WHERE rank = 1")
        drift = abs((o["offset_ns"] - gen.OFFSET_NS) - real_off["offset_ns"])
        skewed, real = arrivals(db), arrivals(real_db)
        assert set(skewed) == set(real) and len(real) == 24
        assert all(abs(skewed[k] - real[k]) <= gen.JITTER_NS + drift for k in real)

    def test_the_delayed_rank_is_named_the_straggler(self, delayed_db):
        db = delayed_db
        _, instances, _, off, arr = reference(DELAYED)
        (o,) = rows(db, "SELECT * FROM clock_offsets WHERE rank = 1")
        assert o["offset_ns"] == off[1]
        assert abs(o["offset_ns"] - gen.DELAYED_CLOCK_NS) <= o["spread_ns"]
        strag = rows(db, "SELECT * FROM stragglers ORDER BY caused_wait_order")
        _, caused, _ = ref.waits(arr)
        assert strag[0]["rank"] == 0 and strag[0]["caused_wait_ns"] == caused[0]
        assert strag[1]["caused_wait_ns"] == caused[1]
        late = rows(db, "SELECT s.match_key, s.skew_ns, s.last_rank, l.late_ns FROM collective_skew s "
                        "JOIN late_arrivals l USING (run, collective_id) "
                        "WHERE s.match_key LIKE '%reduce_scatter_tensor_coalesced #1'")
        assert len(late) == 3
        for r in late:
            assert r["last_rank"] == 0 and r["late_ns"] > gen.DELAY_NS // 2


class TestWhatIf:
    """whatif_stragglers against the same replay read from the traces on their own."""

    @pytest.mark.parametrize("paths", ["delayed", "real"])
    def test_saved_is_the_replay_of_the_traces(self, request, paths):
        """Over the module's database of the same files (coll_db: ingest_together(*RANKS))."""
        files = DELAYED if paths == "delayed" else RANKS
        db = request.getfixturevalue("delayed_db" if paths == "delayed" else "coll_db")
        got = {(r["step"], r["rank"]): r for r in rows(db, "SELECT * FROM whatif_stragglers")}
        want = ref.whatif(files)
        assert {k: (r["n_late"], r["saved_ns"]) for k, r in got.items()} == want
        ext = [ref.gpu_extents(p) for p in files]
        for (step, _), r in got.items():
            assert r["measured_ns"] == max(e[step] for e in ext)
            assert r["modelled_ns"] == r["measured_ns"] - r["saved_ns"]

    def test_the_injected_delay_of_the_real_4_gpu_run_comes_back(self, tmp_path):
        """tests/fixtures/ranks/real_delay (the fixtures helper's 4-GPU DDP run, merged from
        its branch): rank 2 slept 30 / 60 ms before its backward at ProfilerStep#2 / #3
        (rank2.json). What the replay saves lies between the sleep and rank 2's lateness
        at the step's first all_reduce (the sleep, the synchronize before it)."""
        import json

        real = FIXTURES / "ranks" / "real_delay"
        if not (real / "rank2.json").exists():
            pytest.skip("the real_delay fixture is not in this tree")
        injected = json.loads((real / "rank2.json").read_text())["injected_delays_ms"]
        db = tmp_path / "r.duckdb"
        ingest_together(db, *sorted(real.glob("rank*.pt.trace.json.gz")))
        for step, ms in injected.items():
            (w,) = rows(db, f"SELECT * FROM whatif_stragglers WHERE step = {int(step)} "
                            "AND rank = 2")
            (first,) = rows(db, "SELECT l.late_ns FROM late_arrivals l JOIN collective_skew s "
                                f"USING (run, collective_id) WHERE s.profiler_step = {int(step)} "
                                "AND l.rank = 2 ORDER BY s.first_arrival_ns LIMIT 1")
            assert 0.9 * ms * 1e6 <= w["saved_ns"] <= first["late_ns"], (step, w, first)

    def test_the_report_says_it_in_words(self, tmp_path, capsys):
        from tlview.cli import main

        db = tmp_path / "w.duckdb"
        assert main(["ingest", *map(str, DELAYED), "--db", str(db)]) == 0
        out = capsys.readouterr().out
        (w,) = rows(db, "SELECT * FROM whatif_stragglers ORDER BY saved_ns DESC, step, rank "
                        "LIMIT 1")
        assert (f"without rank {w['rank']}'s delay, step {w['step']} would take "
                f"{w['modelled_ns'] / 1e6:,.3f} ms instead of {w['measured_ns'] / 1e6:,.3f} ms"
                ) in out


class TestBadInput:
    """Runs mixed in one folder, a rank twice, a rank missing, a truncated rank."""

    def test_another_run_in_the_folder_is_a_run_of_its_own(self, tmp_path, coll_db):
        db = tmp_path / "runs.duckdb"
        ingest_together(db, *RANKS, RERUN_0)
        runs = rows(db, "SELECT run, world_size, ranks, missing FROM rank_runs ORDER BY run")
        assert runs == [{"run": 1, "world_size": 2, "ranks": [0, 1], "missing": []},
                        {"run": 2, "world_size": 2, "ranks": [0], "missing": [1]}]
        un = rows(db, "SELECT run, ranks, missing, reason FROM collective_unmatched")
        assert len(un) == 24 and {(u["run"], tuple(u["ranks"]), tuple(u["missing"]), u["reason"])
                                  for u in un} == {(2, (0,), (1,), "rank 1 has no trace in this run")}
        cols = "first_arrival_ns, skew_ns, last_rank"
        assert rows(db, f"SELECT {cols} FROM collective_skew WHERE run = 1 ORDER BY 1") == \
            rows(coll_db, f"SELECT {cols} FROM collective_skew ORDER BY 1")
        assert rows(db, "SELECT count(*) AS n FROM stragglers WHERE run = 2")[0]["n"] == 0

    def test_a_rank_ingested_twice_is_told_apart(self, tmp_path):
        db = tmp_path / "twice.duckdb"
        ingest_together(db, *RANKS, RANKS[0])
        traces = rows(db, "SELECT rank, run, status FROM rank_traces ORDER BY timeline_id")
        assert traces == [{"rank": 0, "run": 1, "status": "ok"},
                          {"rank": 1, "run": 1, "status": "ok"},
                          {"rank": 0, "run": 2, "status": "duplicate"}]
        assert rows(db, "SELECT count(*) AS n FROM collective_skew WHERE run = 1 AND complete"
                        )[0]["n"] == 24

    def test_a_truncated_rank_leaves_the_others_matched(self, tmp_path):
        """Four ranks made from the two real ones; rank 3's file is cut: the ingest says so
        (file, line, exit 2), ingests the others, matches them on ranks 0-2 and says rank 3
        is missing from every collective."""
        folder = tmp_path / "job"
        for r in range(4):
            t = gen.as_rank(gen.read(gen.source(r % 2)), r, 4, offset_ns=r * 1000)
            gen.write(t, folder / f"rank{r}.pt.trace.json.gz")
        cut = folder / "rank3.pt.trace.json"
        with gzip.open(folder / "rank3.pt.trace.json.gz", "rt") as f:
            text = f.read()
        cut.write_text(text[: len(text) * 2 // 3])
        (folder / "rank3.pt.trace.json.gz").unlink()
        db = tmp_path / "job.duckdb"
        p = cli_ingest(folder, db)
        assert p.returncode == 2
        assert f"{cut}:" in p.stderr and "expected" in p.stderr
        assert "ranks: run 1: 3 of 4 ranks (0-2), missing 3; 24 collectives, 24 matched across " \
               "ranks by step_order, 24 without every rank of their group" in p.stdout
        assert "rank 3 has no trace in this run (the collective_unmatched view lists them)" \
            in p.stdout
        skew = rows(db, "SELECT n_ranks, group_size, complete FROM collective_skew")
        assert len(skew) == 24 and all(s == {"n_ranks": 3, "group_size": 4, "complete": False}
                                       for s in skew)
        un = rows(db, "SELECT missing, reason FROM collective_unmatched")
        assert len(un) == 24 and all(u["missing"] == [3] for u in un)
        offs = {o["rank"]: o["offset_ns"] for o in rows(db, "SELECT * FROM clock_offsets")}
        assert set(offs) == {0, 1, 2}

    def test_the_ingest_report_of_one_rank_then_both(self, tmp_path):
        """One rank's trace: its run is told from rank_traces alone (no matching to do);
        its collective count is collective_skew's. The second rank's ingest matches both."""
        db = tmp_path / "one.duckdb"

        def ingest(path: Path) -> str:
            p = cli_ingest(path, db)
            assert p.returncode == 0, p.stderr
            return p.stdout

        out = ingest(RANKS[0])
        n = rows(db, "SELECT count(*) AS n FROM collective_skew")[0]["n"]
        assert n == 24
        assert (f"ranks: run 1: 1 of 2 ranks (0), missing 1; {n} collectives, none matched "
                "across ranks (the other ranks' traces are not ingested)") in out
        out = ingest(RANKS[1])
        assert "ranks: run 1: 2 of 2 ranks (0-1); 24 collectives, 24 matched across ranks by " \
            "step_order" in out

    def test_a_lone_rank_whose_group_is_not_named(self, tmp_path):
        """Without the group's ranks in the trace, what is missing cannot be named: the
        reason says how many of the group's ranks have the collective."""
        t = gen.read(gen.source(0))
        for e in t["traceEvents"]:
            (e.get("args") or {}).pop("Process Group Ranks", None)
        db = tmp_path / "lone.duckdb"
        ingest_into(db, gen.write(t, tmp_path / "rank0.pt.trace.json.gz"))
        un = rows(db, "SELECT ranks, missing, reason FROM collective_unmatched")
        assert len(un) == 24 and all(
            u == {"ranks": [0], "missing": [],
                  "reason": "1 of its 2 ranks have it (its process group's ranks are not "
                            "recorded)"} for u in un)
        assert rows(db, "SELECT missing FROM rank_runs") == [{"missing": [1]}]


def _step_ns(path: Path) -> int:
    """The rank's profiled time: its ProfilerSteps' summed durations (README)."""
    evs = ref.load(path)["traceEvents"]
    return sum(ref.ns(e["dur"]) for e in evs if e.get("cat") == "user_annotation"
               and e["name"].startswith("ProfilerStep#"))


def _collectives_span_ns(path: Path) -> int:
    """Without ProfilerSteps: first NCCL kernel's start to the last one's end."""
    cs = ref.calls(path)
    return max(c["own_end"] for c in cs) - min(c["own_start"] for c in cs)


class TestStragglerShare:
    """stragglers' share divides the wait a rank caused by the others' step time: their
    ProfilerSteps, else the span of their collective kernels, and says which. The
    ordinal is named for what it is (caused_wait_order); rank is the rank id."""

    def test_with_profiler_steps(self, coll_db, capsys):
        (s, *_) = rows(coll_db, "SELECT * FROM stragglers ORDER BY caused_wait_order")
        assert (s["rank"], s["caused_wait_order"], s["straggler_rank"]) == (1, 1, 1)
        assert s["step_basis"] == "profiler_steps"
        assert s["step_ns"] == (sum(_step_ns(p) for p in RANKS) + 1) // 2  # mean, rounded

    def test_without_profiler_steps_the_span_is_said(self, tmp_path, capsys):
        """The real traces with their ProfilerStep marks renamed (as a trace recorded
        without prof.step() has none), every other byte as it was."""
        from tlview.cli import main

        paths = []
        for p in RANKS:
            text = gzip.decompress(p.read_bytes()).decode()
            assert text.count('"ProfilerStep#') == 3
            out = tmp_path / p.name.replace(".gz", "")
            out.write_text(text.replace('"ProfilerStep#', '"step mark #'))
            paths.append(out)
        assert main(["ingest", *map(str, paths), "--db", str(tmp_path / "n.duckdb")]) == 0
        (line,) = [x for x in capsys.readouterr().out.splitlines() if "straggler" in x]
        strag = rows(tmp_path / "n.duckdb", "SELECT * FROM stragglers ORDER BY caused_wait_order")
        span = (sum(_collectives_span_ns(p) for p in paths) + 1) // 2
        assert [(s["step_basis"], s["step_ns"]) for s in strag] == [("collectives_span", span)] * 2
        worst = strag[0]
        share = worst["caused_wait_ns"] / span
        assert float(worst["wait_share"]) == pytest.approx(share, abs=5e-5)
        assert line.endswith(f"straggler rank {worst['rank']}: its late arrivals cost the others "
                             f"{worst['caused_wait_ns'] / 1e6:,.3f} ms ({100 * share:.2f}% of the "
                             "span of their collective kernels: the traces have no ProfilerStep)")
        assert "step time" not in line
