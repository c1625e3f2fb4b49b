"""Scheduler-IR ingest: exact figures against an independent reference, on the real seeds."""

from __future__ import annotations

import duckdb
import pytest
from tlview.ingest.inductor_ir import parse_scheduler_ir
from tlview.ingest.lines import read_lines
from tlview.ingest.records import BufferAllocated, NodeScheduled

from tests.conftest import FIXTURES, SEED_000, SEED_001, SEED_002
from tests.reference_ir import reference


@pytest.mark.parametrize("seed", [SEED_000, SEED_001, SEED_002], ids=["000", "001", "002"])
def test_peak_and_curve_equal_reference(seed, alone):
    ref = reference(seed)
    db_path, (tid,) = alone(seed)
    con = duckdb.connect(str(db_path), read_only=True)
    peak = con.execute("SELECT peak_step, peak_bytes FROM peak_memory WHERE timeline_id=?", [tid]).fetchone()
    assert peak == (ref["peak_step"], ref["peak_bytes"])
    curve = [r[0] for r in con.execute(
        "SELECT live_bytes FROM memory_curve WHERE timeline_id=? ORDER BY step", [tid]).fetchall()]
    assert curve == ref["curve"]
    n = con.execute("SELECT n_steps FROM timelines WHERE timeline_id=?", [tid]).fetchone()[0]
    assert n == ref["n_steps"]
    rows = con.execute(
        "SELECT buffer, bytes, alloc_step, last_step FROM buffers WHERE timeline_id=? AND NOT is_input",
        [tid]).fetchall()
    got = {b: {"bytes": x, "alloc": a, "last": last} for b, x, a, last in rows}
    assert got == ref["buffers"]


def test_seed_002_worked_example(alone):
    """docs/liveness.md's worked example: 4 steps, peak 1,114,112 bytes at step 1 (op1)."""
    db_path, (tid,) = alone(SEED_002)
    con = duckdb.connect(str(db_path), read_only=True)
    assert con.execute("SELECT peak_step, peak_bytes, node FROM peak_memory").fetchone() == (
        1, 1_114_112, "op1")
    assert con.execute(
        "SELECT live_bytes FROM memory_curve ORDER BY step DESC LIMIT 1").fetchone()[0] == 1_114_112
    # buf0 = bf16[2048, 256] = 1,048,576 B; buf1 = bf16[128, 256] = 65,536 B.
    assert con.execute("SELECT buffer, bytes FROM live_at(?, 1)", [tid]).fetchall() == [
        ("buf0", 1_048_576), ("buf1", 65_536)]


def test_live_at_peak_sums_to_peak_seed_000(alone):
    db_path, (tid,) = alone(SEED_000)
    con = duckdb.connect(str(db_path), read_only=True)
    step, peak = con.execute("SELECT peak_step, peak_bytes FROM peak_memory").fetchone()
    total = con.execute("SELECT sum(bytes) FROM live_at(?, ?)", [tid, step]).fetchone()[0]
    assert total == peak == reference(SEED_000)["peak_bytes"]


def test_collectives_seed_001_all_paired(alone):
    db_path, _ = alone(SEED_001)
    con = duckdb.connect(str(db_path), read_only=True)
    rows = con.execute(
        "SELECT node, op, issue_step, wait_node, wait_step FROM collectives ORDER BY issue_step"
    ).fetchall()
    ops = {r[1] for r in rows}
    assert {"all_gather_into_tensor_out", "reduce_scatter_tensor"} <= ops
    for node, op, issue, wait_node, wait in rows:
        assert wait_node is not None, f"{node} ({op}) has no wait"
        assert wait > issue
    # Every _WaitKernel in the dump is paired with exactly one collective.
    text = SEED_001.read_text()
    n_waits = text.count("ExternKernelSchedulerNode(_WaitKernel)")
    assert sum(1 for r in rows if r[3]) == n_waits
    assert len(rows) == text.count("ExternKernelSchedulerNode(_CollectiveKernel)")


def test_parser_is_pure_and_keeps_structure():
    recs = list(parse_scheduler_ir(read_lines(SEED_002), str(SEED_002)))
    nodes = [r for r in recs if isinstance(r, NodeScheduled)]
    assert [n.node for n in nodes] == ["op0", "op1", "op2", "op3"]
    assert nodes[0].attrs["triton_code"].lstrip().startswith("import triton")
    assert "def body(self, ops)" in nodes[0].attrs["loop_body"]
    assert nodes[1].kernel == "extern_kernels.mm"
    assert nodes[0].device == "cuda:0" and nodes[0].attrs["group_iteration"] == "(524288, 1)"
    inputs = {r.buffer: r for r in recs if isinstance(r, BufferAllocated) and r.is_input}
    assert inputs["arg2_1"].bytes == 2048 * 256 * 2 and inputs["arg2_1"].layout == "FixedLayout"


def test_fused_node_keeps_subnodes(alone):
    db_path, _ = alone(SEED_000)
    con = duckdb.connect(str(db_path), read_only=True)
    snodes = con.execute(
        "SELECT json_extract(attrs, '$.snodes') FROM nodes WHERE node = 'op11_op12'").fetchone()[0]
    assert snodes == '["op11","op12"]'
    counts = dict(con.execute("SELECT node_class, count(*) FROM nodes GROUP BY 1").fetchall())
    text = SEED_000.read_text()
    assert counts["FusedSchedulerNode"] == text.count(": FusedSchedulerNode(")


CONCAT_IR = next((FIXTURES / "torch_trace" / "concat").rglob("ir_post_fusion.txt"))
BACKWARD_WITH_CAT = FIXTURES / "torch" / "transformer_block" / "0_backward.ir_post_fusion.txt"


class TestNonOwningLayout:
    """ConcatKernel inputs (NonOwningLayout) are written straight into the concat buffer."""

    @pytest.mark.parametrize("path", [CONCAT_IR, BACKWARD_WITH_CAT], ids=["cat", "split_bwd"])
    def test_equal_reference(self, path, alone):
        ref = reference(path)
        db_path, (tid,) = alone(path)
        con = duckdb.connect(str(db_path), read_only=True)
        rows = con.execute("SELECT buffer, bytes, alloc_step, last_step FROM buffers "
                           "WHERE timeline_id=? AND NOT is_input", [tid]).fetchall()
        assert {b: {"bytes": x, "alloc": a, "last": last} for b, x, a, last in rows} == \
            ref["buffers"]
        curve = [r[0] for r in con.execute(
            "SELECT live_bytes FROM memory_curve WHERE timeline_id=? ORDER BY step",
            [tid]).fetchall()]
        assert curve == ref["curve"]

    def test_cat_of_mm_and_pointwise(self, alone):
        """torch.cat([x.sin()*2, x@y, (x+1).relu()], 1).sum(0) of f32[64, 32] inputs: the
        three views own nothing; buf3 = f32[64, 96] = 24,576 B is live from step 0 (op0,
        the mm written into it) through op4 (step 3), which adds buf4 = f32[96] = 384 B."""
        db_path, (tid,) = alone(CONCAT_IR)
        con = duckdb.connect(str(db_path), read_only=True)
        rows = con.execute("SELECT buffer, bytes, alloc_step, last_step, is_input FROM buffers "
                           "WHERE timeline_id=? AND buffer LIKE 'buf%' ORDER BY buffer",
                           [tid]).fetchall()
        assert rows == [("buf0", 0, 0, 3, False), ("buf1", 0, 1, 3, False),
                        ("buf2", 0, 1, 3, False), ("buf3", 24_576, 0, 3, False),
                        ("buf4", 384, 3, 3, False)]
        assert con.execute("SELECT peak_step, peak_bytes FROM peak_memory WHERE timeline_id=?",
                           [tid]).fetchone() == (3, 24_960)
