"""Inductor's estimates beside measurements, and the compile views, on the real fixtures.

The expected figures are read here from the files themselves: the TORCH_TRACE log with
json.loads (every inductor_runtime_and_tensor_meta record), the Kineto trace with
tests/reference_profile.py, the output code's launch lines with a regex.
"""

from __future__ import annotations

import functools
import json
import shutil
from pathlib import Path

import pytest
from tlview.ingest.estimates import Aligned, align
from tlview.store import open_database

from tests import reference_profile as ref
from tests.conftest import FIXTURES, ingest_folder, ingest_together
from tests.ingest.test_torch_trace import read_records
from tests.store.test_profile_attachments import output_launches, trace_calls

GPU = FIXTURES / "torch_trace" / "gpu_step"
CPU = FIXTURES / "torch_trace" / "cpu_step"


@pytest.fixture(scope="module")
def gpu_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("est_gpu") / "a.duckdb"
    ingest_folder(path, GPU)
    return path


@pytest.fixture(scope="module")
def cpu_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("est_cpu") / "a.duckdb"
    ingest_folder(path, CPU)
    return path


def _estimates(log: Path) -> list[list[dict]]:
    """The ops of every inductor_runtime_and_tensor_meta record, in log order."""
    return [json.loads(p)["ops"] for _, env, p in read_records(log)
            if env.get("artifact", {}).get("name") == "inductor_runtime_and_tensor_meta"]


@functools.cache
def estimate_vs_measured(db_path: Path) -> list[dict]:
    """Every row of estimate_vs_measured in a module's database (which no test changes),
    with its timeline's record (``record``: None where it has no timeline), read once: the
    view's planning is most of a query's cost (~1.5 CPU-s). The tests filter them as
    their SQL would."""
    with open_database(db_path, read_only=True) as db:
        cur = db.sql("SELECT e.*, t.attrs->>'$.record' AS record FROM estimate_vs_measured e "
                     "LEFT JOIN timeline_records t USING (timeline_id)")
        cols = [c[0] for c in cur.description]
        return [dict(zip(cols, r)) for r in cur.fetchall()]


def triton_nodes(db_path: Path) -> list[dict]:
    """estimate_vs_measured's node rows of Triton kernels of the output code's timelines."""
    return [e for e in estimate_vs_measured(db_path) if e["level"] == "node"
            and e["record"] == "inductor_output_code"
            and (e["kernel"] or "").startswith("triton_")]


class TestEstimateVsMeasured:
    def test_every_triton_kernel_has_both_figures(self, gpu_db):
        """On the GPU step, every Triton launch of every graph of the TORCH_TRACE log is
        listed with Inductor's estimate (ms in the log, ns here) and its measured time
        per call (the mean over the trace's calls of its attributed shares)."""
        logged = _estimates(GPU / "trace.log.gz")
        rows = [(e["aot_id"], e["step"], e["kernel"], e["estimated_ns"], e["measured_ns"])
                for e in triton_nodes(gpu_db)]
        with open_database(gpu_db, read_only=True) as db:
            launches = db.sql(
                "SELECT t.attrs->>'$.aot_id', n.step, n.kernel FROM nodes n JOIN "
                "timeline_records t USING (timeline_id) WHERE t.attrs->>'$.record' = "
                "'inductor_output_code' AND n.kernel LIKE 'triton!_%' ESCAPE '!'").fetchall()
        assert sorted(r[:3] for r in rows) == sorted(launches) and len(launches) == 37
        assert all(r[3] > 0 and r[4] > 0 for r in rows)
        fused = sorted(round(op["estimated_runtime_ns"] * 1_000_000) for ops in logged
                       for op in ops if op["name"] is not None and "." not in op["name"])
        assert sorted(r[3] for r in rows) == fused

    def test_measured_side_is_the_kernels_mean_per_call(self, gpu_db):
        """0_backward's Triton nodes: the k-th launch of triton_X in each of its 3 calls
        (never ambiguous: 1_backward launches one kernel more)."""
        code = next((GPU / "debug").glob("model__0_backward*/output_code.py"))
        sig = [k for k in output_launches(code) if k.startswith("triton_")]
        expect: dict[tuple[str, int], list[int]] = {}
        for call in trace_calls(GPU / "step.pt.trace.json.gz"):
            if [g["name"] for g in call if g["name"].startswith("triton_")] != sig:
                continue
            seen: dict[str, int] = {}
            for g in call:
                if g["name"].startswith("triton_"):
                    k = seen.get(g["name"], 0)
                    seen[g["name"]] = k + 1
                    expect.setdefault((g["name"], k), []).append(ref.ns(g["dur"]))
        # (kernel, its k-th node by step, measured, invocations) of 0_backward's Triton nodes
        nodes = sorted((e for e in triton_nodes(gpu_db) if e["aot_id"] == "0_backward"),
                       key=lambda e: e["step"])
        seen_nodes: dict[str, int] = {}
        rows = []
        for e in nodes:
            k = seen_nodes[e["kernel"]] = seen_nodes.get(e["kernel"], -1) + 1
            rows.append((e["kernel"], k, e["measured_ns"], e["invocations"]))
        assert {(k, i): (m, n) for k, i, m, n in rows} == {
            key: (round(sum(d) / len(d)), len(d)) for key, d in expect.items()}

    def test_graph_rows_and_largest_misses(self, gpu_db):
        every = estimate_vs_measured(gpu_db)
        graphs = [(e["aot_id"], e["estimated_ns"], e["measured_ns"], e["ratio"]) for e in every
                  if e["level"] == "graph" and e["record"] == "inductor_output_code"]
        forward = [e for e in every if e["level"] == "node" and e["aot_id"] == "0_forward"]
        (first, *_) = [(e["kernel"], e["miss_ns"]) for e in forward if e["miss_rank"] == 1]
        worst = max(abs(e["miss_ns"]) for e in forward if e["miss_ns"] is not None)
        logged = [sum(round(op["estimated_runtime_ns"] * 1_000_000) for op in ops)
                  for ops in _estimates(GPU / "trace.log.gz")]
        assert sorted(g[1] for g in graphs) == sorted(logged) and len(logged) == 4
        assert all(g[2] > 0 for g in graphs)
        # Inductor's mm estimate (1.003 ms for a 1024x256x1024 bf16 addmm) misses most
        assert first[0] == "extern_kernels.addmm" and abs(first[1]) == worst

    def test_estimates_align_to_every_gpu_launch(self, gpu_db):
        with open_database(gpu_db, read_only=True) as db:
            rows = db.sql("SELECT kind, align, count(*), count(step) FROM inductor_estimates "
                          "GROUP BY ALL ORDER BY ALL").fetchall()
        assert rows == [("extern", "extern_order", 28, 28), ("fused", "fused_order", 37, 37),
                        ("none", "no_launch", 14, 0)]


class TestAlignRule:
    """ingest/estimates.align on small cases (the rule of docs/profiles.md)."""

    L = [(0, "fused", "triton_a"), (1, "extern", "extern_kernels.mm"), (2, "fused", "triton_b"),
         (3, "fused", "triton_c")]

    def test_in_order_between_extern_anchors(self):
        got = align([("op0", 1.0), ("extern_kernels.mm", 2.0), (None, 0.0), ("op2", 1.0),
                     ("op3_op4", 1.0)], self.L)
        assert got == [Aligned(0, "fused_order"), Aligned(1, "extern_order"),
                       Aligned(None, "no_launch"), Aligned(2, "fused_order"),
                       Aligned(3, "fused_order")]

    def test_zero_estimates_are_nop_nodes_when_that_makes_counts_agree(self):
        got = align([("op0", 1.0), ("extern_kernels.mm", 2.0), ("op1", 0.0), ("op2", 1.0),
                     ("op3", 1.0)], self.L)
        assert [a.step for a in got] == [0, 1, None, 2, 3]
        assert got[3].method == "fused_order_skipping_zero"

    def test_disagreeing_orders_stay_unaligned(self):
        got = align([("op0", 1.0), ("extern_kernels.mm", 2.0), ("op2", 1.0)], self.L)
        assert got[2] == Aligned(None, "unaligned_stretch") and got[0].step == 0
        got = align([("extern_kernels.addmm", 1.0)], self.L)
        assert got == [Aligned(None, "unaligned_extern_order")]


class TestMemory:
    def test_planned_peaks_beside_the_measured_one(self, gpu_db):
        """The forward graphs' calls allocate at most 8,422,400 B beyond what they were
        given, by the profiler's [memory] events; the output code plans 8,421,392 B (the
        1,008 B between are the caching allocator's 512 B rounding), the scheduler IR's
        liveness rule 8,945,680 B."""
        trace = ref.load(GPU / "step.pt.trace.json.gz")
        mem = sorted((ref.ns(e["ts"]), e["args"]["Total Allocated"]) for e in
                     trace["traceEvents"] if e.get("name") == "[memory]"
                     and e["args"].get("Device Type") == 1)
        fwd = [c for c in trace["traceEvents"]
               if c.get("name", "").startswith("## Call CompiledFxGraph")]
        peaks = []
        for c in fwd:
            s, end = ref.ns(c["ts"]), ref.ns(c["ts"]) + ref.ns(c["dur"])
            before = [a for t, a in mem if t < s]
            during = [a for t, a in mem if s <= t < end]
            if during:
                peaks.append(max(during) - (before[-1] if before else 0))
        with open_database(gpu_db, read_only=True) as db:
            rows = db.sql("SELECT DISTINCT aot_id, ir_peak_bytes, wrapper_peak_bytes, "
                          "measured_peak_bytes, calls FROM memory_estimate_vs_measured "
                          "ORDER BY aot_id").fetchall()
        assert max(peaks) == 8_422_400
        assert [r for r in rows if r[0].endswith("forward")] == [
            ("0_forward", 8_945_680, 8_421_392, 8_422_400, 6),
            ("1_forward", 8_945_680, 8_421_392, 8_422_400, 6)]
        assert {r[3] for r in rows} <= set(peaks)

    def test_cpu_graph_measured_through_cpu_memory_events(self, cpu_db):
        with open_database(cpu_db, read_only=True) as db:
            rows = db.sql("SELECT DISTINCT aot_id, wrapper_peak_bytes, measured_peak_bytes "
                          "FROM memory_estimate_vs_measured ORDER BY aot_id").fetchall()
        # the CPU profiler's [memory] events also hold each op's own scratch
        assert rows == [("0_backward", 8_544, 14_624), ("0_forward", 7_872, 18_112)]


class TestCompileViews:
    def test_phases_pair_begins_and_ends(self, cpu_db):
        events = [json.loads(p) for _, env, p in read_records(CPU / "trace.log.gz")
                  if "chromium_event" in env]
        begins = sum(e["ph"] == "B" for e in events)
        with open_database(cpu_db, read_only=True) as db:
            n, closed, negative = db.sql("SELECT count(*), count(end_ns), count(*) FILTER "
                                         "(WHERE dur_ns < 0) FROM compile_phases").fetchone()
            inductor = db.sql("SELECT dur_ns FROM compile_phases WHERE phase = "
                              "'inductor_compile' ORDER BY start_ns").fetchall()
        assert n == begins == closed and negative == 0
        assert len(inductor) == 2 and all(d > 0 for (d,) in inductor)

    def test_compilation_metrics(self, cpu_db):
        with open_database(cpu_db, read_only=True) as db:
            rows = db.sql("SELECT kind, compile_id, co_name, entire_frame_compile_time_s, "
                          "graph_op_count FROM compilation_metrics ORDER BY kind").fetchall()
        metrics = [env["compilation_metrics"] for _, env, _ in read_records(CPU / "trace.log.gz")
                   if "compilation_metrics" in env]
        assert rows == [
            ("bwd_compilation_metrics", "0/0", None, None, None),
            ("compilation_metrics", "0/0", metrics[0]["co_name"],
             metrics[0]["entire_frame_compile_time_s"], metrics[0]["graph_op_count"])]


@pytest.fixture(scope="module")
def both_irs_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """cpu_step's TORCH_COMPILE_DEBUG tree with each graph's ir_pre_fusion.txt beside its
    ir_post_fusion.txt, as torch writes them (fixtures/torch_trace/pre_fusion: the same
    compile, README), and the CPU trace that measures it."""
    tmp = tmp_path_factory.mktemp("both_irs")
    debug = tmp / "debug"
    shutil.copytree(CPU / "debug", debug)
    for pre in sorted((FIXTURES / "torch_trace" / "pre_fusion").rglob("ir_pre_fusion.txt")):
        shutil.copy(pre, debug / pre.parent.name / pre.name)
    path = tmp / "a.duckdb"
    ingest_together(path, *sorted(debug.rglob("ir_pre_fusion.txt")),
                    *sorted(debug.rglob("ir_post_fusion.txt")),
                    *sorted(debug.rglob("output_code.py")), CPU / "step.pt.trace.json.gz")
    return path


class TestPreAndPostFusionIr:
    """A debug folder holds both scheduler IRs of a compile; their peaks differ (the
    backward: 8,480 B before fusion, 8,544 B after). Each figure says which IR it is."""

    def test_each_ir_pairs_with_the_output_code_under_its_stage(self, both_irs_db):
        with open_database(both_irs_db, read_only=True) as db:
            rows = db.sql("SELECT aot_id, ir_stage, ir_peak_bytes, wrapper_peak_bytes, "
                          "ir_minus_wrapper FROM ir_vs_wrapper_peak ORDER BY 1, 2").fetchall()
            peaks = dict(db.sql("SELECT regexp_extract(s.path, '(model__[^/]*/[^/]*)$', 1), "
                                "p.peak_bytes FROM peak_memory p JOIN timeline_records t "
                                "USING (timeline_id) JOIN sources s USING (source_id) "
                                "WHERE t.format = 'inductor_ir'").fetchall())
        bwd, fwd = "model__0_backward_3.1/", "model__0_forward_1.0/"
        assert peaks[bwd + "ir_pre_fusion.txt"] == 8_480
        assert peaks[bwd + "ir_post_fusion.txt"] == 8_544
        assert rows == [
            ("0_backward", "post_fusion", 8_544, 8_544, 0),
            ("0_backward", "pre_fusion", 8_480, 8_544, -64),
            ("0_forward", "post_fusion", peaks[fwd + "ir_post_fusion.txt"], 7_872,
             peaks[fwd + "ir_post_fusion.txt"] - 7_872),
            ("0_forward", "pre_fusion", peaks[fwd + "ir_pre_fusion.txt"], 7_872,
             peaks[fwd + "ir_pre_fusion.txt"] - 7_872)]

    def test_estimate_vs_measured_names_the_post_fusion_ir(self, both_irs_db):
        """ir_peak_bytes is the post-fusion IR's (the schedule the output code came from),
        the pre-fusion one has its own column: no more any_value over both."""
        with open_database(both_irs_db, read_only=True) as db:
            rows = db.sql("SELECT DISTINCT aot_id, ir_peak_bytes, ir_pre_fusion_peak_bytes, "
                          "wrapper_peak_bytes, measured_peak_bytes "
                          "FROM memory_estimate_vs_measured ORDER BY aot_id").fetchall()
        assert rows[0] == ("0_backward", 8_544, 8_480, 8_544, 14_624)
        assert [r[0] for r in rows] == ["0_backward", "0_forward"]
