"""Measured kernels attached to output-code and scheduler-IR nodes, on the real fixtures.

The reference reads the trace with json.load and the output code with a regex over
its launch lines, and pairs them by hand; the views must agree with it exactly.
"""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path

import pytest
from tlview.store import open_database

from tests import reference_profile as ref
from tests.conftest import FIXTURES, ingest_folder, ingest_into, ingest_together

PROFILE = FIXTURES / "profile"
SINGLE = PROFILE / "single"
RANK0 = PROFILE / "coll" / "rank0"
RANK1 = PROFILE / "coll" / "rank1"
_LAUNCH = re.compile(
    r"^\s+(?:\w+ = )?(?P<k>triton_\w+)\.run\(|^\s+(?:\w+ = )?(?P<e>extern_kernels\.\w+|torch\.ops\.[\w.]+)\(")


def _debug_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*")
                  if p.name in ("output_code.py", "ir_post_fusion.txt")
                  or p.name.endswith(".pt.trace.json.gz"))


def output_launches(path: Path) -> list[str]:
    """Kernel names launched by call(), in order (Triton names, extern callee names)."""
    out = []
    for line in path.read_text().splitlines():
        m = _LAUNCH.match(line)
        if m:
            out.append(m["k"] or m["e"])
    return out


def trace_calls(trace_path: Path) -> list[list[dict]]:
    """Per '## Call CompiledFxGraph' range: the GPU events its thread launched, in launch order."""
    trace = ref.load(trace_path)
    events = trace["traceEvents"]
    launch = {e["args"]["correlation"]: e for e in events
              if e.get("cat") in ("cuda_runtime", "cuda_driver")}
    calls = [e for e in events if e.get("cat") == "user_annotation"
             and e["name"].startswith("## Call CompiledFxGraph")]
    out = []
    for c in calls:
        s, end = ref.ns(c["ts"]), ref.ns(c["ts"]) + ref.ns(c["dur"])
        mine = []
        for g in ref.gpu_events(trace):
            r = launch.get(g["args"]["correlation"])
            if r is not None and r["tid"] == c["tid"] and s <= ref.ns(r["ts"]) < end:
                mine.append((ref.ns(r["ts"]), g))
        out.append([g for _, g in sorted(mine, key=lambda x: x[0])])
    return out


@pytest.fixture(scope="module")
def rank0_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("a0") / "a.duckdb"
    ingest_together(path, *_debug_files(RANK0))
    return path


@pytest.fixture(scope="module")
def single_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("a1") / "a.duckdb"
    ingest_together(path, *_debug_files(SINGLE))
    return path


class TestTritonKernels:
    """Every Triton launch inside a compiled call lands on its output-code node."""

    @pytest.mark.parametrize("which", ["single", "rank0"])
    def test_every_triton_launch_attached(self, which, single_db, rank0_db):
        folder, db_path = (SINGLE, single_db) if which == "single" else (RANK0, rank0_db)
        trace = next(folder.glob("*.pt.trace.json.gz"))
        calls = trace_calls(trace)
        n_triton = sum(1 for c in calls for g in c if g["name"].startswith("triton_"))
        with open_database(db_path, read_only=True) as db:
            got = db.sql("SELECT count(DISTINCT seq) FROM kernel_attachments "
                         "WHERE method = 'triton_name_order'").fetchone()[0]
            unattached = db.sql("SELECT count(*) FROM unattached_kernels "
                                "WHERE call_seq IS NOT NULL").fetchone()[0]
        assert got == n_triton > 0
        assert unattached == 0  # inside the calls, nothing left over

    def test_node_time_is_the_kth_launch_in_each_call(self, single_db):
        """The k-th triton_X node's total is the sum, over calls, of the k-th triton_X launch."""
        calls = trace_calls(next(SINGLE.glob("*.pt.trace.json.gz")))
        graphs = {p.parent.name: output_launches(p) for p in SINGLE.rglob("output_code.py")}
        expect: dict[tuple[str, int], int] = defaultdict(int)
        for call in calls:
            triton = [g["name"] for g in call if g["name"].startswith("triton_")]
            graph = next(name for name, launches in graphs.items()
                         if [k for k in launches if k.startswith("triton_")] == triton)
            seen: dict[str, int] = defaultdict(int)
            for g in call:
                if g["name"].startswith("triton_"):
                    expect[(graph, g["name"], seen[g["name"]])] += ref.ns(g["dur"])
                    seen[g["name"]] += 1
        with open_database(single_db, read_only=True) as db:
            rows = db.sql(
                "SELECT regexp_extract(s.path, '(model__[^/]+)/output_code.py', 1), nt.kernel, "
                "row_number() OVER (PARTITION BY nt.timeline_id, nt.kernel ORDER BY nt.step) - 1, "
                "nt.total_ns, nt.invocations FROM node_times nt "
                "JOIN timeline_records t ON t.timeline_id = nt.timeline_id "
                "JOIN sources s USING (source_id) "
                "WHERE nt.kind = 'triton' AND s.path LIKE '%output_code.py'").fetchall()
        got = {(g, k, i): total for g, k, i, total, _ in rows}
        assert got == dict(expect)
        assert {r[4] for r in rows} == {3}  # three profiled steps, one call each


class TestExternKernels:
    def test_mm_nodes_get_the_kernels_their_cpu_op_launched(self, rank0_db):
        trace = ref.load(next(RANK0.glob("*.pt.trace.json.gz")))
        events = trace["traceEvents"]
        launch = {e["args"]["correlation"]: e for e in events
                  if e.get("cat") in ("cuda_runtime", "cuda_driver")}
        ops = sorted((ref.ns(e["ts"]), ref.ns(e["ts"]) + ref.ns(e["dur"]), e["tid"])
                     for e in events if e.get("cat") == "cpu_op" and e["name"] == "aten::mm")
        per_op = []
        for s, end, tid in ops:
            per_op.append(sum(
                ref.ns(g["dur"]) for g in ref.gpu_events(trace)
                if (r := launch.get(g["args"]["correlation"])) is not None
                and r["tid"] == tid and s <= ref.ns(r["ts"]) < end))
        # four mm nodes per call, three calls: op i is node (i % 4)
        expect = [sum(per_op[i::4]) for i in range(4)]
        with open_database(rank0_db, read_only=True) as db:
            got = db.sql("SELECT total_ns, attach_method, confidence FROM node_times "
                         "WHERE kernel = 'extern_kernels.mm' AND kind = 'extern' "
                         "ORDER BY step").fetchall()
        assert [g[0] for g in got] == expect
        assert {(g[1], float(g[2])) for g in got} == {("extern_cpu_op", 1.0)}

    def test_collectives_and_waits(self, rank0_db):
        with open_database(rank0_db, read_only=True) as db:
            rows = db.sql("SELECT kernel, attach_method, count(*), sum(n_gpu_events) "
                          "FROM node_times WHERE kernel LIKE 'torch.ops._c10d%' AND kind = 'extern' "
                          "GROUP BY ALL ORDER BY 1").fetchall()
        assert rows == [
            ("torch.ops._c10d_functional.all_gather_into_tensor.default", "extern_cpu_op", 4, 12),
            ("torch.ops._c10d_functional.reduce_scatter_tensor.default", "extern_cpu_op", 4, 12),
            ("torch.ops._c10d_functional.wait_tensor.default", "no_gpu_work", 8, 0),
        ]


class TestSchedulerIR:
    @pytest.mark.parametrize("which", ["single", "rank0"])
    def test_ir_nodes_that_launch_work_have_durations(self, which, single_db, rank0_db):
        db_path = single_db if which == "single" else rank0_db
        with open_database(db_path, read_only=True) as db:
            rows = db.sql("SELECT ir_type, attach_method, total_ns FROM ir_node_times").fetchall()
        launching = [r for r in rows if r[1] != "no_launch"]
        timed = [r for r in launching
                 if r[1] in ("ir_launch_order+triton_name_order", "ir_launch_order+extern_cpu_op")
                 and r[2] > 0]
        waits = [r for r in launching if r[1] == "ir_launch_order+no_gpu_work"]
        assert {r[0] for r in rows if r[1] == "no_launch"} <= {"MultiOutput"}
        assert {r[0] for r in waits} <= {"_WaitKernel"}
        assert len(timed) + len(waits) == len(launching)  # 100%, waits marked as such

    def test_collectives_gain_measured_durations(self, rank0_db):
        with open_database(rank0_db, read_only=True) as db:
            rows = db.sql("SELECT op, total_ns, invocations FROM collectives_measured "
                          "ORDER BY issue_step").fetchall()
        assert len(rows) == 8 and all(r[1] > 0 and r[2] == 3 for r in rows)


def test_unmatched_call_is_listed_with_its_reason(tmp_path):
    """Without the right output code, nothing is guessed: the calls' kernels are listed."""
    db_path = tmp_path / "t.duckdb"
    wrong = next(SINGLE.rglob("model__0_forward_1.0/output_code.py"))
    ingest_into(db_path, next(RANK0.glob("*.pt.trace.json.gz")), wrong)
    with open_database(db_path, read_only=True) as db:
        assert db.sql("SELECT count(*) FROM kernel_attachments").fetchone()[0] == 0
        reasons = db.sql("SELECT reason, count(*) FROM unattached_kernels GROUP BY eager, reason "
                         "ORDER BY eager, reason").fetchall()
    in_calls = sum(len(c) for c in trace_calls(next(RANK0.glob("*.pt.trace.json.gz"))))
    assert in_calls == 60  # every GPU event of this trace ran inside a compiled call
    assert reasons == [
        ("no output-code timeline launches this call's Triton kernels in this order", 60)]


def test_each_rank_runs_its_own_folders_output_code(tmp_path):
    """The whole 2-rank folder (both debug trees and the log holding both ranks' output
    code): each rank's calls are matched to the output_code.py under its own folder."""
    db_path = tmp_path / "t.duckdb"
    ingest_folder(db_path, PROFILE / "coll")
    with open_database(db_path, read_only=True) as db:
        rows = db.sql(
            "SELECT DISTINCT regexp_extract(ts.path, 'coll/(rank\\d)/', 1), "
            "regexp_extract(gs.path, 'coll/(rank\\d)/', 1), g.candidates "
            "FROM call_graphs g "
            "JOIN timeline_records tt ON tt.timeline_id = g.timeline_id "
            "JOIN sources ts ON ts.source_id = tt.source_id "
            "JOIN timeline_records gt ON gt.timeline_id = g.graph_timeline_id "
            "JOIN sources gs ON gs.source_id = gt.source_id ORDER BY 1").fetchall()
    assert rows == [("rank0", "rank0", 1), ("rank1", "rank1", 1)]


def test_kernel_times_account_for_every_gpu_event_of_the_calls(rank0_db):
    calls = trace_calls(next(RANK0.glob("*.pt.trace.json.gz")))
    expect = sum(ref.ns(g["dur"]) for call in calls for g in call)
    with open_database(rank0_db, read_only=True) as db:
        got = db.sql("SELECT sum(total_ns), sum(n_gpu_events) FROM kernel_times").fetchone()
    assert got == (expect, sum(len(c) for c in calls))


TT = FIXTURES / "torch_trace"


@pytest.fixture(scope="module")
def gpu_all_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The GPU step with every copy of its graphs: the debug tree's output_code.py, the
    TORCH_LOGS log and the TORCH_TRACE log, beside the Kineto trace."""
    path = tmp_path_factory.mktemp("gpu_all") / "a.duckdb"
    ingest_folder(path, TT / "gpu_step")
    return path


@pytest.fixture(scope="module")
def cpu_all_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("cpu_all") / "a.duckdb"
    ingest_folder(path, TT / "cpu_step")
    return path


class TestAttributedOnce:
    """Copies of a graph, identical graphs and eager work: every GPU event once."""

    def test_measured_totals_add_up_to_the_trace(self, gpu_all_db):
        trace = ref.load(TT / "gpu_step" / "step.pt.trace.json.gz")
        total = sum(ref.ns(g["dur"]) for g in ref.gpu_events(trace))
        in_calls = sum(ref.ns(g["dur"]) for c in trace_calls(
            TT / "gpu_step" / "step.pt.trace.json.gz") for g in c)
        with open_database(gpu_all_db, read_only=True) as db:
            counted = db.sql("SELECT sum(total_ns) FROM node_times WHERE counted").fetchone()[0]
            eager, rest = db.sql("SELECT sum(dur_ns) FILTER (WHERE eager), "
                                 "sum(dur_ns) FILTER (WHERE NOT eager) FROM unattached_kernels"
                                 ).fetchone()
            shares = db.sql("SELECT count(*) FROM (SELECT seq, any_value(dur_ns) AS d, "
                            "sum(share_ns) AS s FROM kernel_attachments GROUP BY seq) "
                            "WHERE d <> s").fetchone()[0]
        assert counted + eager + (rest or 0) == total == 1_070_737
        assert counted == in_calls and rest is None  # everything inside a call attached
        assert eager == total - in_calls > 0
        assert shares == 0  # each event's shares sum to its duration

    def test_eager_work_is_listed(self, gpu_all_db):
        """The host copy, the loss, AdamW's foreach kernels: launched outside the calls."""
        with open_database(gpu_all_db, read_only=True) as db:
            rows = dict(db.sql("SELECT category, count(*) FROM unattached_kernels "
                               "WHERE eager GROUP BY 1").fetchall())
            adam = db.sql("SELECT count(*) FROM unattached_kernels WHERE eager AND kernel "
                          "LIKE '%multi_tensor_apply%'").fetchone()[0]
            h2d = db.sql("SELECT count(*) FROM unattached_kernels WHERE eager AND kernel "
                         "LIKE 'Memcpy HtoD%'").fetchone()[0]
        assert h2d == 3 and rows["memcpy"] == 6 and rows["kernel"] > 0 and adam == 24

    def test_copies_of_a_graph_are_one(self, gpu_all_db):
        """Each graph is in the database three times (output_code.py, TORCH_LOGS log,
        TORCH_TRACE log): attributed through one, the others copies that repeat its
        times and are not counted."""
        with open_database(gpu_all_db, read_only=True) as db:
            copies = db.sql("SELECT t.name, count(*) FROM graph_copies c JOIN timelines t "
                            "ON t.timeline_id = c.copy_of GROUP BY 1 ORDER BY 1").fetchall()
            mirrored = db.sql(
                "SELECT count(*) FROM output_node_times c JOIN output_node_times r "
                "ON r.timeline_id = c.copy_of AND r.step = c.step AND r.counted "
                "WHERE NOT c.counted AND (c.total_ns, c.invocations) = (r.total_ns, "
                "r.invocations)").fetchone()[0]
            uncounted = db.sql("SELECT count(*) FROM output_node_times WHERE NOT counted"
                               ).fetchone()[0]
        assert copies == [("0_backward", 2), ("0_forward", 2), ("1_backward", 2),
                          ("1_forward", 2)]
        assert mirrored == uncounted > 0

    def test_identical_graphs_share_their_calls(self, gpu_all_db):
        """0_forward and 1_forward launch the same kernels and the calls carry no key
        ('## Call CompiledFxGraph None ##'): each forward call is ambiguous between the
        two, each gets half (confidence 0.5), and together they hold every forward
        Triton launch's time exactly; the backward graphs differ and are attributed."""
        calls = trace_calls(TT / "gpu_step" / "step.pt.trace.json.gz")
        fwd_sig = [k for k in output_launches(next((TT / "gpu_step" / "debug").glob(
            "model__0_forward*/output_code.py"))) if k.startswith("triton_")]
        fwd = [c for c in calls if [g["name"] for g in c if g["name"].startswith(
            "triton_")] == fwd_sig]
        triton_fwd = sum(ref.ns(g["dur"]) for c in fwd for g in c
                         if g["name"].startswith("triton_"))
        with open_database(gpu_all_db, read_only=True) as db:
            matches = db.sql("SELECT t.attrs->>'$.aot_id', g.match, g.candidates, "
                             "count(DISTINCT g.call_seq) FROM call_graphs g JOIN "
                             "timelines t ON t.timeline_id = g.graph_timeline_id "
                             "GROUP BY ALL ORDER BY 1").fetchall()
            got = db.sql("SELECT sum(n.total_ns), min(n.confidence), max(n.confidence) "
                         "FROM node_times n JOIN timelines t USING (timeline_id) WHERE "
                         "n.counted AND n.kind = 'triton' AND t.attrs->>'$.aot_id' LIKE "
                         "'%_forward'").fetchone()
        assert len(fwd) == 6
        assert matches == [("0_backward", "kernel_sequence", 1, 3),
                           ("0_forward", "ambiguous", 2, 6),
                           ("1_backward", "kernel_sequence", 1, 3),
                           ("1_forward", "ambiguous", 2, 6)]
        assert got == (triton_fwd, 0.5, 0.5)


class TestCpuGraphs:
    """A CPU graph profiled with the CPU profiler: node times through its CPU ops."""

    def test_extern_nodes_get_their_cpu_ops(self, cpu_all_db):
        trace = ref.load(TT / "cpu_step" / "step.pt.trace.json.gz")
        events = trace["traceEvents"]
        calls = [e for e in events if e.get("name", "").startswith("## Call CompiledFxGraph")]
        expect: dict[tuple[str, str, int], int] = defaultdict(int)
        for c in calls:
            s, end = ref.ns(c["ts"]), ref.ns(c["ts"]) + ref.ns(c["dur"])
            ops = sorted((ref.ns(e["ts"]), -ref.ns(e["dur"]), e) for e in events
                         if e.get("cat") == "cpu_op" and e["tid"] == c["tid"]
                         and s <= ref.ns(e["ts"]) and ref.ns(e["ts"]) + ref.ns(e["dur"]) <= end)
            top, reach = [], -1
            for ts, neg, e in ops:  # not inside another op of the call
                if ts >= reach:
                    top.append(e)
                    reach = ts - neg
            seen: dict[str, int] = defaultdict(int)
            key = c["name"].split()[3]
            for e in top:
                expect[(key, e["name"], seen[e["name"]])] += ref.ns(e["dur"])
                seen[e["name"]] += 1
        with open_database(cpu_all_db, read_only=True) as db:
            rows = db.sql(
                "SELECT n.total_ns, n.invocations, n.attach_method, tn.notes->>"
                "'$.fx_graph_cache_key', n.kernel, row_number() OVER (PARTITION BY "
                "n.timeline_id, n.kernel ORDER BY n.step) - 1 FROM node_times n JOIN "
                "output_node_times o USING (timeline_id, step) JOIN timelines t USING "
                "(timeline_id) JOIN timelines tn ON tn.timeline_id = n.timeline_id WHERE "
                "n.counted AND n.kind = 'extern' AND o.counted").fetchall()
            keyed = db.sql("SELECT DISTINCT match FROM call_graphs").fetchall()
        assert keyed == [("graph_key",)]  # TORCH_TRACE's cache keys name the calls' graphs
        assert len(rows) == 14 and {r[1:3] for r in rows} == {(2, "cpu_op")}

        def name(kernel: str) -> str:
            parts = kernel.split(".")
            return f"aten::{parts[-1]}" if parts[0] == "extern_kernels" else \
                f"{parts[2]}::{parts[3]}"
        got = {(key, name(kernel), k): total for total, _, _, key, kernel, k in rows}
        assert got == {k: v for k, v in expect.items() if k[1] in {n for _, n, _ in got}}
