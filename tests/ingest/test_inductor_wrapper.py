"""Inductor output code (wrapper modules) ingest: exact peaks against an independent simulation
(tests/reference_wrapper.py) and against what torch itself measured, on seed 004 and on real
CPU torch 2.13 fixtures (tests/fixtures/torch, made by tests/fixtures/gen/make_torch_dumps.py).

How the peak is counted, the same three ways:
* tlview: per step (docs/liveness.md "Inductor output code"): storages live over
  [alloc_step, last_step], graph inputs excluded, returned buffers live to the return step;
* the simulation: per statement moment, reference counts per storage, inputs excluded;
* torch: the profiler's CPU [memory] events while call() runs, the inputs made before
  profiling and kept alive by the caller (so never freed inside), an op's own scratch
  (allocated and freed inside one op call, invisible in output code) left out.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import duckdb
import pytest
from tlview.ingest.errors import IngestError
from tlview.ingest.records import BufferAliased, NodeScheduled, TimelineNote
from tlview.ingest.source import records_for
from tlview.ingest.torch_log import parse_torch_log, undress
from tlview.store import open_database, write_records

from tests import reference_wrapper as ref
from tests.conftest import FIXTURES, SEED_004, ingest_into

TORCH = FIXTURES / "torch"
PROGRAMS = ["mlp_train", "transformer_block", "conv_net", "inplace_mutation"]
TITLE = {"forward": "Forward", "backward": "Backward", "inference": "Forward"}


def _fx_title(aot: str) -> str:
    n, kind = aot.split("_", 1)
    return f"{TITLE[kind]} graph {n}"


def _wrapper_peaks(db_path: Path, tids: list[int]) -> dict[str, int]:
    con = duckdb.connect(str(db_path), read_only=True)
    rows = con.execute(
        "SELECT t.name, p.peak_bytes FROM timelines t JOIN peak_memory p USING (timeline_id) "
        "WHERE t.format = 'inductor_wrapper' AND list_contains(?, t.timeline_id)", [tids]
    ).fetchall()
    con.close()
    return dict(rows)


def _simulated(path: Path) -> dict[str, int]:
    fx = ref.fx_graphs(path) if not path.name.endswith(".py") else {}
    out = {}
    for module in ref.wrapper_modules(path):
        aot = ref.aot_id(module)
        out[aot] = ref.simulate_wrapper(module, fx.get(_fx_title(aot)))
    return out


class TestSeed004:
    """The float8 linear of seed 004: two wrapper modules on cuda:0."""

    def test_peaks_equal_simulation(self, alone):
        db_path, tids = alone(SEED_004)
        got = _wrapper_peaks(db_path, tids)
        assert got == _simulated(SEED_004)
        # buf6 (8 MiB f8) + buf7 (32 MiB f8) + buf9 (32 MiB bf16) + 4,106 B of scales/partials
        assert got == {"0_forward": 75_501_578, "0_backward": 100_663_300}

    def test_launches_with_kernel_reads_writes_grid_stream(self):
        recs = [r for r in records_for(SEED_004) if isinstance(r, NodeScheduled)
                and r.timeline == "wrapper:0_forward"]
        first = recs[0]
        assert (first.step, first.kernel, first.node_class) == (0, "triton_red_fused_abs_max_0",
                                                                "triton")
        assert first.reads == ("primals_2",) and first.writes == ("buf0", "buf11")
        assert first.attrs["grid"] == "grid(1024)" and first.attrs["stream"] == 0
        assert first.attrs["original_aten"] == ["aten.abs", "aten.max"]
        assert "tl.store(out_ptr1 + (x0), tmp3, xmask)" in first.attrs["kernel_source"]
        mm = recs[7]
        assert (mm.kernel, mm.node_class) == ("extern_kernels._scaled_mm", "extern")
        assert mm.reads == ("buf6", "buf7", "buf8", "buf5") and mm.writes == ("buf9",)
        assert mm.attrs["profiler_name"] == "aten::_scaled_mm"
        assert [r.node for r in recs][-1] == "return" and len(recs) == 12

    def test_reuse_is_one_storage_with_an_alias_row(self, alone):
        db_path, (_, _, _, fwd, _) = alone(SEED_004)
        con = duckdb.connect(str(db_path), read_only=True)
        rows = dict((b, (x, a, last, lay)) for b, x, a, last, lay in con.execute(
            "SELECT buffer, bytes, alloc_step, last_step, layout FROM buffers "
            "WHERE timeline_id = ?", [fwd]).fetchall())
        # buf7 = empty f8[4096, 8192] at step 6; buf10 takes it over (# reuse) and is returned:
        # ONE counted 33,554,432 B storage live to the return step (11); buf10 a 0-byte row.
        assert rows["buf7"] == (33_554_432, 6, 11, "empty_strided_cuda")
        assert rows["buf10"] == (0, 8, 11, "reuse")
        rel = con.execute("SELECT buffer, target, relation FROM events WHERE kind = "
                          "'buffer_aliased' AND timeline_id = ? ORDER BY seq", [fwd]).fetchall()
        assert ("buf10", "buf7", "reuse") in rel and ("buf12", "buf4", "reuse") in rel
        # del buf0 after launch 1: last live at step 1
        assert rows["buf0"] == (4096, 0, 1, "empty_strided_cuda")
        # graph inputs are inputs, never counted
        assert con.execute("SELECT count(*) FROM _counted WHERE timeline_id = ? AND buffer "
                           "LIKE 'primals%'", [fwd]).fetchone()[0] == 0

    def test_kernels_view(self, alone):
        db_path, (_, _, _, fwd, bwd) = alone(SEED_004)
        con = duckdb.connect(str(db_path), read_only=True)
        rows = con.execute("SELECT kernel, kind, launches, fused_aten_ops FROM kernels "
                           "WHERE timeline_id = ? ORDER BY first_step", [fwd]).fetchall()
        assert len(rows) == 10 and sum(r[2] for r in rows) == 11
        assert rows[1] == ("triton_per_fused__to_copy_abs_clamp_max_mul_reciprocal_1", "triton",
                           2, ["aten.abs", "aten.max", "aten._to_copy", "aten.clamp",
                               "aten.reciprocal", "aten.mul"])
        kinds = con.execute("SELECT kind, sum(launches) FROM kernels WHERE timeline_id = ? "
                            "GROUP BY 1 ORDER BY 1", [bwd]).fetchall()
        assert kinds == [("extern", 2), ("triton", 4)]
        with open_database(db_path, read_only=True) as db:
            assert db.query("kernels_of_timeline", bwd)[0][:3] == (
                "triton_red_fused_abs_max_0", "triton", 1)


@pytest.mark.parametrize("program", PROGRAMS)
@pytest.mark.parametrize("dress", [".log", ".short.log", "output_code.py"])
def test_real_fixture_peaks_equal_simulation_and_torch(program, dress, db_path, alone):
    """Every wrapper peak equals the simulation and the peak torch measured for it."""
    measured = {p.name.split(".")[0]: json.loads(p.read_text())["peak_bytes"]
                for p in (TORCH / program).glob("*.measured.json")}
    if dress == "output_code.py":
        paths = sorted((TORCH / program).glob("*.output_code.py"))
        tids = ingest_into(db_path, *paths)
    else:  # a log alone in a database (made once per test process: other tests read it)
        paths = [TORCH / f"{program}{dress}"]
        db_path, tids = alone(paths[0])
    got = _wrapper_peaks(db_path, tids)
    simulated: dict[str, int] = {}
    for p in paths:
        simulated.update(_simulated(p))
    assert got == simulated == measured


def test_extern_outputs_sized_from_assert_size_stride(alone):
    db_path, tids = alone(TORCH / "transformer_block.log")
    con = duckdb.connect(str(db_path), read_only=True)
    rows = con.execute(
        "SELECT t.name, b.buffer, b.bytes, b.alloc_step, b.dtype, b.shape, "
        "json_extract_string(b.attrs, '$.dtype_source') FROM buffers b JOIN timelines t "
        "USING (timeline_id) WHERE b.layout = 'extern_output' AND list_contains(?, "
        "b.timeline_id) ORDER BY 1, 2", [tids]).fetchall()
    # sdpa forward (step 2): out f32[2, 2, 8, 8] strides (128, 8, 16, 1) = 1,024 B and
    # logsumexp f32[2, 2, 8] strides (16, 1, 2) = 128 B, both from the FX graph's getitems.
    assert ("0_forward", "buf7", 1024, 2, "float32", "[2, 2, 8, 8]", "FX graph annotation") in rows
    assert ("0_forward", "buf8", 128, 2, "float32", "[2, 2, 8]", "FX graph annotation") in rows
    # sdpa backward's three grads, allocated at its step (8), each 1,024 B
    assert [r[1:4] for r in rows if r[0] == "0_backward"] == [
        ("buf18", 1024, 8), ("buf19", 1024, 8), ("buf20", 1024, 8)]
    # the tuple itself is a 0-byte row naming its elements
    assert con.execute("SELECT bytes, attrs->>'$.elements.\"1\"' FROM buffers WHERE buffer = "
                       "'buf17' AND layout = 'tuple'").fetchone() == (0, "buf19")


def test_bare_output_code_infers_dtype_from_inputs(db_path):
    """Without the FX graph, an extern output's dtype is its first tensor argument's, even
    when that is an input whose dtype only get_args() (after call) states."""
    (tid,) = ingest_into(db_path, TORCH / "conv_net" / "0_backward.output_code.py")
    con = duckdb.connect(str(db_path), read_only=True)
    row = con.execute("SELECT bytes, dtype, attrs->>'$.dtype_inferred' FROM buffers WHERE "
                      "timeline_id = ? AND buffer = 'buf20'", [tid]).fetchone()
    assert row == (432, "float32", "true")  # f32[4, 3, 3, 3] channels-last weight grad


def test_returned_buffers_live_to_the_end(db_path):
    tids = ingest_into(db_path, TORCH / "mlp_train" / "0_forward.output_code.py")
    con = duckdb.connect(str(db_path), read_only=True)
    n, = con.execute("SELECT n_steps FROM timelines WHERE timeline_id = ?", tids).fetchone()
    rows = dict(con.execute("SELECT buffer, last_step FROM buffers WHERE timeline_id = ? AND "
                            "bytes > 0", tids).fetchall())
    # return (buf5, primals_3, primals_4, buf1, buf4): buf1/buf4/buf5 reuse buf0/buf2/buf3
    assert rows == {"buf0": n - 1, "buf2": n - 1, "buf3": n - 1}


def test_step_rule_allocations_join_the_next_launch():
    text = """# AOT ID: ['7_forward']
async_compile.wait(globals())
def call(args):
    arg0_1, = args
    args.clear()
    buf0 = empty_strided_cpu((4, ), (1, ), torch.float32)
    cpp_fused_a_0(arg0_1, buf0)
    buf1 = empty_strided_cpu((8, ), (1, ), torch.float32)
    buf2 = reinterpret_tensor(arg0_1, (4, ), (1, ), 0)
    cpp_fused_b_1(buf0, buf1)
    del buf0
    buf3 = empty_strided_cpu((2, ), (1, ), torch.float64)
    del buf1
    cpp_fused_c_2(buf3, buf2)
    return (buf3, )
"""
    recs = list(parse_torch_log(enumerate(text.splitlines(), 1), "x.py"))
    alloc = {r.buffer: (r.step, r.bytes) for r in recs if type(r).__name__ == "BufferAllocated"}
    freed = {r.buffer: r.step for r in recs if type(r).__name__ == "BufferFreed"}
    assert alloc["buf0"] == (0, 16) and freed["buf0"] == 1
    assert alloc["buf1"] == (1, 32)
    # del buf1 comes after buf3's allocation in the same gap: live through launch 2
    assert freed["buf1"] == 2
    assert alloc["buf3"] == (2, 16) and freed["buf3"] == 3  # returned: live at return (3)
    assert alloc["buf2"][1] == 0  # a view of an input: no bytes
    note = next(r for r in recs if isinstance(r, TimelineNote))
    assert note.attrs["n_steps"] == 4 and note.attrs["launches"] == 3


def test_unknown_lines_kept_and_counted():
    text = """# AOT ID: ['1_forward']
def call(args):
    arg0_1, = args
    buf0 = empty_strided_cpu((4, ), (1, ), torch.float32)
    some_new_codegen_helper(buf0) if True else None
    cpp_fused_a_0(arg0_1, buf0)
    return (buf0, )
"""
    recs = list(parse_torch_log(enumerate(text.splitlines(), 1), "x.py"))
    note = next(r for r in recs if isinstance(r, TimelineNote))
    assert note.attrs["unknown_lines"] == 1
    assert note.attrs["unknown"] == [
        {"line": 5, "text": "some_new_codegen_helper(buf0) if True else None"}]
    assert any("unrecognised" in w for w in note.attrs["warnings"])


def test_interleaved_warnings_and_tracebacks_never_end_the_ingest(tmp_path, db_path, alone):
    lines = (TORCH / "mlp_train.log").read_text().splitlines()
    i = next(n for n, ln in enumerate(lines) if "buf0 = empty_strided_cpu" in ln)
    noise = [
        "/x/torch/_inductor/utils.py:12: UserWarning: something odd",
        "  warnings.warn(msg)",
        "Traceback (most recent call last):",
        '  File "/x/y.py", line 3, in <module>',
        "    f()",
        "RuntimeError: ignored by the program",
        # another logger's glog record in the middle of the output code record
        "W1122 00:05:29.700000 7273 torch/_dynamo/convert_frame.py:1000] [0/0_1] "
        "[__recompiles] Recompiling function step",
    ]
    noisy = tmp_path / "noisy.log"
    noisy.write_text("\n".join(lines[:i] + noise + lines[i:]) + "\n")
    a, base = alone(TORCH / "mlp_train.log")
    tids = ingest_into(db_path, noisy)
    assert _wrapper_peaks(db_path, tids) == _wrapper_peaks(a, base)
    con = duckdb.connect(str(db_path), read_only=True)
    assert con.execute("SELECT notes->>'$.interleaved_lines' FROM timelines WHERE name = "
                       "'0_forward'").fetchone()[0] == "6"


def test_glog_dress_with_rank_keeps_rank_and_compile_id(tmp_path, db_path):
    """Seed 004 re-dressed in torch's default glog prefix with a rank: same figures."""
    out = []
    record = 0
    for ln in SEED_004.read_text().splitlines():
        head = ln.split(":", 2)
        if ln.startswith(("DEBUG:", "INFO:")) and len(head) == 3:
            record += 1  # a new record: a new time stamp; the logger's last part as artifact
            log = head[1].rsplit(".", 1)[-1]
            prefix = (f"[rank0]:{'V' if head[0] == 'DEBUG' else 'I'}1121 23:39:08."
                      f"{record:06d} 597 torch/{log}.py:{2045 + record % 2}] [0/0]"
                      + (f" [{log}]" if log.startswith("__") else "") + " ")
            out.append(prefix + head[2])
        elif record:
            out.append(prefix + ln)
        else:
            out.append(ln)  # the warning before the first record stays bare
    dressed = tmp_path / "glog.log"
    dressed.write_text("\n".join(out) + "\n")
    tids = ingest_into(db_path, dressed)
    assert len(tids) == 5  # joint, forward, backward FX graphs and the two wrappers
    assert _wrapper_peaks(db_path, tids) == {"0_forward": 75_501_578, "0_backward": 100_663_300}
    con = duckdb.connect(str(db_path), read_only=True)
    assert con.execute("SELECT attrs->>'$.rank', attrs->>'$.compile_id' FROM timelines WHERE "
                       "name = '0_backward'").fetchone() == ("0", "0/0")


def test_undress_prefixes():
    lines = list(undress(enumerate([
        "[rank3]:V1121 23:39:08.467000 597 torch/_inductor/graph.py:2045] [0/1_1] "
        "[__output_code] buf0 = x",
        "INFO:torch._functorch._aot_autograd.jit_compile_runtime_wrappers.__aot_graphs:"
        "TRACED GRAPH",
        " ===== Forward graph 0 =====",
    ], 1)))
    assert lines[0].text == "buf0 = x" and lines[0].meta["rank"] == 3
    assert lines[0].meta["compile_id"] == "0/1_1" and lines[0].meta["log"] == "output_code"
    assert lines[1].text == "TRACED GRAPH" and lines[1].meta["log"] == "aot_graphs"
    assert lines[2].record == lines[1].record and not lines[2].starts_record



def test_a_line_that_repeats_the_prefix_and_adds_a_field_is_a_new_record():
    """A line that begins with the last line's glog prefix continues its record unless
    the prefix would match further there (a compile id or an artifact the last one had
    not): then it is a record of its own, with what it adds."""
    head = "I1121 23:39:08.467000 597 torch/_inductor/graph.py:2045]"
    lines = list(undress(enumerate([
        f"{head} first",
        f"{head} second",  # the same prefix: the same record
        f"{head} [0/0] with a compile id",
        f"{head} [0/0] same again",
        f"{head} [0/0] [__output_code] with an artifact",
        f"{head} [0/0] [__output_code] [1/1] not a field past the artifact",
        f"{head} [not an id] text in brackets",  # not a compile id: the first prefix
    ], 1)))
    assert [ln.text for ln in lines] == [
        "first", "second", "with a compile id", "same again", "with an artifact",
        "[1/1] not a field past the artifact", "[not an id] text in brackets"]
    assert [ln.record for ln in lines] == [1, 1, 2, 2, 3, 3, 4]
    assert [ln.starts_record for ln in lines] == [True, False, True, False, True, False, True]
    assert [(ln.meta.get("compile_id"), ln.meta.get("log")) for ln in lines] == [
        (None, None)] * 2 + [("0/0", None)] * 2 + [("0/0", "output_code")] * 2 + [(None, None)]

def test_truncated_log_is_an_error_naming_file_and_line(tmp_path, db_path):
    lines = SEED_004.read_text().splitlines()
    cut = next(n for n, ln in enumerate(lines) if "buf13 = reinterpret_tensor" in ln)
    bad = tmp_path / "cut.log"
    bad.write_text("\n".join(lines[:cut]) + "\n")
    with open_database(db_path) as db:
        with pytest.raises(IngestError) as e:
            write_records(db, records_for(bad))
        assert e.value.path.endswith("cut.log") and e.value.line == cut
        assert "truncated" in e.value.message
        assert db.query("counts") == [(0, 0, 0)]  # nothing written


def test_not_a_torch_log_is_an_error(tmp_path):
    p = tmp_path / "x.log"
    p.write_text("INFO:foo:hello\nOutput code:\n")
    with pytest.raises(IngestError) as e:
        list(records_for(p, "torch_log"))
    assert "call(args)" in e.value.message or "AOT ID" in e.value.message


def test_ir_estimate_next_to_wrapper_peak(db_path):
    """docs/liveness.md's query: scheduler IR (ir_post_fusion.txt) vs the wrapper's real peak."""
    folder = TORCH / "mlp_train"
    ingest_into(db_path, *sorted(folder.glob("*.ir_post_fusion.txt")),
                *sorted(folder.glob("*.output_code.py")))
    con = duckdb.connect(str(db_path), read_only=True)
    rows = con.execute("SELECT aot_id, ir_stage, ir_peak_bytes, wrapper_peak_bytes, "
                       "ir_minus_wrapper, estimate_minus_real FROM ir_vs_wrapper_peak "
                       "ORDER BY aot_id").fetchall()
    assert rows == [("0_backward", "post_fusion", 3744, 3232, 512, 512),
                    ("0_forward", "post_fusion", 1024, 644, 380, 380)]
    with open_database(db_path, read_only=True) as db:
        ir, wr = con.execute("SELECT ir_timeline_id, wrapper_timeline_id FROM "
                             "ir_vs_wrapper_peak WHERE aot_id = '0_forward'").fetchone()
        assert db.query("compare_ir_wrapper_peak", ir, wr) == [(1024, 644, 380, 1.59)]


def test_reuse_events_are_alias_records():
    recs = list(records_for(TORCH / "mlp_train" / "0_forward.output_code.py"))
    reuse = [(r.buffer, r.target) for r in recs if isinstance(r, BufferAliased)]
    assert reuse == [("buf1", "buf0"), ("buf4", "buf2"), ("buf5", "buf3")]


def test_allocation_forms_pools_and_symbolic_sizes():
    """Memory-planning pools, p2p and torch.empty allocations, multi-line statements,
    symbolic sizes kept as expressions, an unasserted extern output reported unknown."""
    text = """# AOT ID: ['3_forward']
def call(args):
    arg0_1, arg1_1 = args
    s0 = arg1_1
    pool1 = empty_strided_cuda((1024, ), (1, ), torch.uint8)
    buf0 = alloc_from_pool(pool1, 0, torch.float32, (16, 16), (16, 1))
    buf1 = empty_strided_p2p((8, 8), (8, 1), torch.bfloat16, torch.device("cuda:0"),
                             group_name="0", alloc_id=7)
    buf2 = torch.empty((4, 2), dtype=torch.float64, device='cuda')
    buf3 = empty_strided_cuda((s0, 128), (128, 1), torch.bfloat16)
    triton_poi_fused_0.run(arg0_1, buf0, buf1, buf2, buf3, 256, stream=stream0)
    del buf0
    del pool1
    buf4 = extern_kernels.some_op(buf1)
    del buf1
    del buf4
    return (buf2, buf3, )
"""
    recs = list(parse_torch_log(enumerate(text.splitlines(), 1), "x.py"))
    alloc = {r.buffer: r for r in recs if type(r).__name__ == "BufferAllocated"}
    assert alloc["pool1"].bytes == 1024 and alloc["buf0"].bytes == 0
    assert alloc["buf0"].attrs["storage"] == "pool1"
    assert alloc["buf1"].bytes == 128 and alloc["buf2"].bytes == 64
    assert alloc["buf3"].bytes is None
    assert alloc["buf3"].size_expr == "(1 + ((s0) - 1)*(128) + ((128) - 1)*(1))*2"
    assert alloc["buf4"].bytes is None and alloc["buf4"].step == 1
    assert "s0" not in alloc  # a size symbol, not a buffer
    note = next(r for r in recs if isinstance(r, TimelineNote))
    assert note.attrs["symbols"] == {"s0": "arg1_1"}
    assert any("buf4" in w and "unknown" in w for w in note.attrs["warnings"])
    launch = next(r for r in recs if isinstance(r, NodeScheduled))
    assert launch.reads == ("arg0_1", "buf0", "buf1", "buf2", "buf3")


def test_dynamic_shapes_symbolic_then_evaluated_equal_torch(db_path):
    """dynamic=True: sizes stay expressions (bytes NULL, never 0). Evaluated at the batch
    size torch ran with (get_args: primals_3 = 4), the per-step peak is torch's."""
    code = TORCH / "mlp_dynamic" / "0_forward.output_code.py"
    (tid,) = ingest_into(db_path, code)
    con = duckdb.connect(str(db_path), read_only=True)
    rows = con.execute("SELECT bytes, size_expr, alloc_step, last_step FROM _counted WHERE "
                       "timeline_id = ?", [tid]).fetchall()
    assert any(b is None and e and "s77" in e for b, e, _, _ in rows)
    symbols = json.loads(con.execute("SELECT notes->'$.symbols' FROM timelines WHERE "
                                     "timeline_id = ?", [tid]).fetchone()[0])
    assert symbols == {"s77": "primals_3"}
    n = con.execute("SELECT n_steps FROM timelines WHERE timeline_id = ?", [tid]).fetchone()[0]
    value = {"s77": 4}
    sizes = [(b if b is not None else eval(e, {}, value), a, last) for b, e, a, last in rows]
    peak = max(sum(b for b, a, last in sizes if a <= s <= last) for s in range(n))
    measured = json.loads((TORCH / "mlp_dynamic" / "0_forward.measured.json").read_text())
    assert peak == measured["peak_bytes"] == 804


def test_kernels_without_inline_source_are_launches():
    text = """# AOT ID: ['2_forward']
multi_kernel_0 = async_compile.multi_kernel('multi_kernel_0', ['triton_a', 'triton_b'])
def call(args):
    arg0_1, = args
    buf0 = empty_strided_cuda((4, ), (1, ), torch.float32)
    multi_kernel_0.run(arg0_1, buf0, 4, stream=stream0)
    return (buf0, )
"""
    recs = list(parse_torch_log(enumerate(text.splitlines(), 1), "x.py"))
    launch = next(r for r in recs if isinstance(r, NodeScheduled))
    assert (launch.kernel, launch.node_class, launch.step) == ("multi_kernel_0", "multi_kernel", 0)
    assert launch.reads == ("arg0_1", "buf0")


def test_kernel_params_linear_on_garbled_long_line():
    """Found by the fuzz campaign: a 1 MB garbled signature hung the ingest (quadratic regex)."""
    import time

    from tlview.ingest.inductor_wrapper import _params

    assert _params("in_out_ptr0, in_ptr1 : tl.pointer, xnumel, XBLOCK : tl.constexpr") == [
        "in_out_ptr0", "in_ptr1", "xnumel", "XBLOCK"]
    t = time.perf_counter()
    assert _params("x" * 1_000_000 + ")") == []
    assert time.perf_counter() - t < 2


# Fixtures holding one compile twice: its TORCH_COMPILE_DEBUG tree (output_code.py with
# fx_graph_readable.py / fx_graph_transformed.py beside it) and its TORCH_LOGS log (glog
# dress). profile/single is not one: its tree was kept without the fx_graph_*.py files,
# so the dtypes of its extern outputs are inferred (the int64 seed and offset of
# efficient attention counted as 4-byte values, 16 B below the log's forward peak).
FOLDER_AND_LOG = {
    "profile/coll": ("rank*/torch_compile_debug", "compile.log.gz"),
    "torch_trace/cpu_step": ("debug", "compile.log.gz"),
    "torch_trace/gpu_step": ("debug", "compile.log.gz"),
}

_COUNTED = ("SELECT t.attrs->>'$.aot_id', COALESCE(t.attrs->>'$.rank', ?), b.buffer, b.bytes, "
            "b.alloc_step, b.last_step, b.dtype, b.shape, b.stride, b.layout FROM buffers b "
            "JOIN timeline_records t USING (timeline_id) WHERE t.format = 'inductor_wrapper' "
            "AND NOT b.is_input AND list_contains(?, t.timeline_id)")
_PEAKS = ("SELECT t.attrs->>'$.aot_id', COALESCE(t.attrs->>'$.rank', ?), p.peak_step, "
          "p.peak_bytes FROM peak_memory p JOIN timeline_records t USING (timeline_id) "
          "WHERE t.format = 'inductor_wrapper' AND list_contains(?, t.timeline_id)")


@pytest.mark.parametrize("fixture", sorted(FOLDER_AND_LOG))
def test_folder_and_log_give_identical_buffers_and_peaks(fixture, alone):
    """Every counted buffer (bytes, life, dtype, shape, stride, layout) and every peak of
    each graph is the same from the debug folder's output_code.py as from the log (each
    file alone in a database, made once per test process)."""
    tree, log = FOLDER_AND_LOG[fixture]
    root = FIXTURES / fixture
    folder_rows: set = set()
    folder_peaks: set = set()
    for code in sorted(root.glob(f"{tree}/**/output_code.py")):
        rank = re.search(r"rank(\d)", str(code.relative_to(root)))
        db, tids = alone(code)
        con = duckdb.connect(str(db), read_only=True)
        r = rank.group(1) if rank else None
        folder_rows |= set(con.execute(_COUNTED, [r, tids]).fetchall())
        folder_peaks |= set(con.execute(_PEAKS, [r, tids]).fetchall())
        con.close()
    db, tids = alone(root / log)
    con = duckdb.connect(str(db), read_only=True)
    log_rows = set(con.execute(_COUNTED, [None, tids]).fetchall())
    log_peaks = set(con.execute(_PEAKS, [None, tids]).fetchall())
    assert folder_peaks == log_peaks and len(log_peaks) >= 2
    assert folder_rows == log_rows


def test_debug_folder_types_extern_outputs_from_its_fx_graphs(alone):
    """_scaled_dot_product_cudnn_attention (bf16 q, k, v): its logsumexp output is float32
    and its two seed/offset outputs int64 scalars, as fx_graph_readable.py beside
    output_code.py states; inferred from the bf16 query they would be 2-byte values
    (8,204 B less: 8*4*128*1 f32 = 16,384 B, not 8,192; 8 B each, not 2). The attention
    output buf7 spans (1 + 7*32768 + 3*64 + 127*256 + 63) * 2 = 524,288 B (strided)."""
    code = next((FIXTURES / "torch_trace" / "gpu_step" / "debug").glob(
        "model__0_forward*/output_code.py"))
    db_path, (tid,) = alone(code)  # made once per test process (the folder test's too)
    con = duckdb.connect(str(db_path), read_only=True)
    rows = con.execute("SELECT buffer, bytes, dtype, shape, attrs->>'$.dtype_source' FROM "
                       "buffers WHERE timeline_id = ? AND layout = 'extern_output' ORDER BY "
                       "buffer", [tid]).fetchall()
    assert rows == [
        ("buf10", 8, "int64", "[]", "FX graph annotation"),
        ("buf7", 524_288, "bfloat16", "[8, 4, 128, 64]", "FX graph annotation"),
        ("buf8", 16_384, "float32", "[8, 4, 128, 1]", "FX graph annotation"),
        ("buf9", 8, "int64", "[]", "FX graph annotation")]
    assert con.execute("SELECT peak_bytes FROM peak_memory WHERE timeline_id = ?",
                       [tid]).fetchone() == (8_421_392,)
    assert json.loads(con.execute("SELECT notes FROM timelines WHERE timeline_id = ?",
                                  [tid]).fetchone()[0])["fx_graph_files"] == [
        "fx_graph_readable.py", "fx_graph_transformed.py"]


@pytest.mark.parametrize("native", ["1", "0"], ids=["compiled", "python"])
def test_output_code_that_allocates_nothing_still_has_its_device(tmp_path, monkeypatch, native):
    """A graph that only updates its input in place allocates nothing in call(): its
    device is the one its `with torch.<dev>._DeviceGuard(<i>):` names, or cpu where it
    launches C++ kernels (fixtures/torch/no_alloc, H100 and CPU, torch 2.11 / 2.13)."""
    monkeypatch.setenv("TLVIEW_NATIVE", native)
    want = {}
    for p in sorted((TORCH / "no_alloc").glob("*.output_code.py")):
        text = p.read_text()
        assert "empty_strided" not in text.split("def call")[1]  # allocates nothing
        guard = re.search(r"with torch\.(\w+)\._DeviceGuard\((\d+)\):", text)
        want[p.name] = f"{guard[1]}:{guard[2]}" if guard else (
            "cpu" if re.search(r"^\s+cpp_fused\w*\(", text, re.M) else None)
    assert want == {"cpu.output_code.py": "cpu", "cuda.output_code.py": "cuda:0"}
    db = tmp_path / "n.duckdb"
    ingest_into(db, *sorted((TORCH / "no_alloc").glob("*.output_code.py")))
    con = duckdb.connect(str(db), read_only=True)
    got = dict(con.execute("SELECT regexp_extract(source_path, '[^/]*$'), device "
                           "FROM timelines").fetchall())
    assert got == want
