"""AOT FX graphs (joint, forward, backward) ingest: exact peaks against the independent
simulation in tests/reference_wrapper.py, on seed 004 and the real CPU torch fixtures.

Both count an FX graph the same documented way (docs/liveness.md "AOT FX graphs"): placeholders
excluded, each node's tensor output allocates its annotation's storage bytes, views and
in-place ops share their first argument's storage, a tuple node's elements appear at the
tuple's step, ``x = None`` ends a name, outputs live to the last step. tlview counts per
step, the simulation per node line with reference counts.
"""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest
from tlview.ingest.errors import IngestError
from tlview.ingest.fx_graph import parse_annotation
from tlview.ingest.records import NodeScheduled
from tlview.ingest.source import records_for

from tests import reference_wrapper as ref
from tests.conftest import FIXTURES, SEED_004, ingest_into

TORCH = FIXTURES / "torch"


def _fx_peaks(db_path: Path, tids: list[int]) -> dict[str, int]:
    con = duckdb.connect(str(db_path), read_only=True)
    rows = con.execute(
        "SELECT t.name, p.peak_bytes FROM timelines t JOIN peak_memory p USING (timeline_id) "
        "WHERE t.format = 'aot_fx_graph' AND list_contains(?, t.timeline_id)", [tids]).fetchall()
    con.close()
    return dict(rows)


def test_seed_004_graphs_equal_simulation(db_path):
    tids = ingest_into(db_path, SEED_004)
    got = _fx_peaks(db_path, tids)
    assert got == {t: ref.simulate_fx(body) for t, body in ref.fx_graphs(SEED_004).items()}
    assert got == {"Joint graph 0": 318_767_112, "Forward graph 0": 276_824_072,
                   "Backward graph 0": 134_217_732}


@pytest.mark.parametrize("log", ["mlp_train.log", "transformer_block.short.log",
                                 "conv_net.log", "conv_net.short.log", "inplace_mutation.log"])
def test_real_graphs_equal_simulation(log, db_path):
    tids = ingest_into(db_path, TORCH / log)
    got = _fx_peaks(db_path, tids)
    assert got == {t: ref.simulate_fx(b) for t, b in ref.fx_graphs(TORCH / log).items()}
    assert len(got) == (1 if log.startswith("inplace") else 2)


def test_views_alias_and_float8_bytes(db_path):
    tids = ingest_into(db_path, SEED_004)
    con = duckdb.connect(str(db_path), read_only=True)
    fwd = con.execute("SELECT timeline_id FROM timelines WHERE name = 'Forward graph 0' AND "
                      "list_contains(?, timeline_id)", [tids]).fetchone()[0]
    rows = {b: (x, dt, lay) for b, x, dt, lay in con.execute(
        "SELECT buffer, bytes, dtype, layout FROM buffers WHERE timeline_id = ?",
        [fwd]).fetchall()}
    # f8e4m3fn[4096, 8192] = 33,554,432 B; its permute_3 (after clone) is a view: 0 B
    assert rows["convert_element_type_7"] == (33_554_432, "float8_e4m3fn", "fx_output")
    assert rows["permute_3"] == (0, "float8_e4m3fn", "view")
    assert rows["primals_1"] == (67_108_864, "bfloat16", "input")
    # permute of an input: a view of the input, never counted
    assert rows["permute"][0] == 0
    # outputs live to the last step
    last = con.execute("SELECT n_steps - 1 FROM timelines WHERE timeline_id = ?",
                       [fwd]).fetchone()[0]
    assert con.execute("SELECT last_step FROM buffers WHERE timeline_id = ? AND buffer = "
                       "'clone'", [fwd]).fetchone()[0] == last


def test_nodes_keep_target_and_source_location():
    nodes = [r for r in records_for(SEED_004) if isinstance(r, NodeScheduled)
             and r.timeline == "fx:Backward graph 0"]
    first = nodes[0]
    assert (first.step, first.node, first.ir_type, first.kernel) == (
        0, "view_2", "view", "torch.ops.aten.view.default")
    assert first.attrs["source"].startswith(
        "/data/users/vasiliy/ao/torchao/float8/float8_linear.py:364 in forward")
    assert first.reads == ("tangents_1",)
    assert len(nodes) == 18


def test_tuple_elements_allocate_at_the_tuple_step(db_path):
    tids = ingest_into(db_path, TORCH / "transformer_block.log")
    con = duckdb.connect(str(db_path), read_only=True)
    rows = con.execute(
        "SELECT b.buffer, b.bytes, b.alloc_step, b.producer FROM buffers b JOIN timelines t "
        "USING (timeline_id) WHERE t.name = 'Forward graph 0' AND b.buffer IN "
        "('getitem_5', 'getitem_6') AND list_contains(?, t.timeline_id) ORDER BY 1",
        [tids]).fetchall()
    step = con.execute("SELECT n.step FROM nodes n JOIN timelines t USING (timeline_id) WHERE "
                       "t.name = 'Forward graph 0' AND n.node = "
                       "'_scaled_dot_product_flash_attention_for_cpu' AND list_contains(?, "
                       "t.timeline_id)", [tids]).fetchone()[0]
    sdpa = "_scaled_dot_product_flash_attention_for_cpu"
    assert rows == [("getitem_5", 1024, step, sdpa), ("getitem_6", 128, step, sdpa)]


def test_annotation_parsing():
    assert parse_annotation("bf16[2048, 4096][4096, 1]cuda:0") == {
        "dtype": "bfloat16", "shape": ["2048", "4096"], "stride": ["4096", "1"],
        "device": "cuda:0"}
    assert parse_annotation("f32[][]cpu")["shape"] == []
    assert parse_annotation("f32[s0, 16][16, 1]cpu")["shape"] == ["s0", "16"]
    assert parse_annotation("Sym(s0)") is None


def test_truncated_graph_is_an_error(tmp_path):
    lines = SEED_004.read_text().splitlines()
    end = next(n for n, ln in enumerate(lines) if "===== Backward graph 0" in ln)
    bad = tmp_path / "cut.log"
    bad.write_text("\n".join(lines[:end + 8]) + "\n")
    with pytest.raises(IngestError) as e:
        list(records_for(bad))
    assert "Backward graph 0" in e.value.message and "truncated" in e.value.message
    assert e.value.line == end + 8


EXPANDED = '''class inner_f(torch.nn.Module):
    def forward(
        self,
        primals,
        tangents,
    ):
        primals_1: "f32[4, 8][8, 1]cpu"  # PlainAOTInput(idx=0)
        tangents_1: "f32[4, 8][8, 1]cpu"  # TangentAOTInput(output=PlainAOTOutput(idx=0))
        primals_1, tangents_1, = fx_pytree.tree_flatten_spec([primals, tangents], self._in_spec)
        relu: "f32[4, 8][8, 1]cpu" = torch.ops.aten.relu.default(primals_1);  primals_1 = None
        mul: "f32[4, 8][8, 1]cpu" = torch.ops.aten.mul.Tensor(tangents_1, relu);  tangents_1 = None
        return pytree.tree_unflatten([
            relu,  # PlainAOTOutput(idx=0)
            mul,  # GradAOTOutput(grad_of=PlainAOTInput(idx=0))
        ], self._out_spec)
'''
EXPANDED_FORWARD = '''class GraphModule(torch.nn.Module):
    def forward(
        self,
        primals_1: "f32[4, 8][8, 1]cpu",  # PlainAOTInput(idx=0)
        primals_2: "f32[8][1]cpu",  # PlainAOTInput(idx=1)
    ):
        add: "f32[4, 8][8, 1]cpu" = torch.ops.aten.add.Tensor(primals_1, primals_2)
        relu: "f32[4, 8][8, 1]cpu" = torch.ops.aten.relu.default(add);  add = None
        return (
            relu,  # PlainAOTOutput(idx=0)
            primals_1,  # SavedForBackwardsAOTOutput(idx=0)
        )
'''


@pytest.mark.parametrize("text,inputs,outputs,peak", [
    (EXPANDED, ["primals_1", "tangents_1"], ["relu", "mul"], 256),
    (EXPANDED_FORWARD, ["primals_1", "primals_2"], ["relu", "primals_1"], 256)],
    ids=["joint", "forward"])
def test_expanded_signature_and_return(text, inputs, outputs, peak):
    """TORCH_TRACE prints graphs with one parameter and one returned value per line, each
    with a comment naming it: the same graph as the one-line form (f32[4, 8] = 128 B)."""
    from tlview.ingest.fx_graph import FxGraphParser
    from tlview.ingest.records import BufferAllocated, BufferFreed
    from tlview.ingest.torch_log import LogLine

    parser = FxGraphParser("x.log", ("fx:g", "g"), "Joint graph 0", None)
    recs = list(parser.start())
    for n, line in enumerate(text.splitlines(), 1):
        recs += parser.feed(LogLine(n, line, 0, None))
    recs += list(parser.finish())
    alloc = {r.buffer: r for r in recs if isinstance(r, BufferAllocated)}
    assert sorted(b for b, r in alloc.items() if r.is_input) == sorted(inputs)
    assert parser.note.attrs["outputs"] == outputs and parser.note.attrs["unknown_lines"] == 0
    last = {r.buffer: r.step for r in recs if isinstance(r, BufferFreed)}
    counted = {b: (r.step, last[b], r.bytes) for b, r in alloc.items() if not r.is_input}
    # two 128 B outputs, both live to the last step (1): 256 B at step 1
    assert sum(x for s, e, x in counted.values() if s <= 1 <= e) == peak


def test_expanded_signature_cut_is_an_error():
    from tlview.ingest.fx_graph import FxGraphParser
    from tlview.ingest.torch_log import LogLine

    parser = FxGraphParser("x.log", ("fx:g", "g"), "Forward graph 0", None)
    list(parser.start())
    for n, line in enumerate(EXPANDED_FORWARD.splitlines()[:4], 1):
        parser.feed(LogLine(n, line, 0, None))
    with pytest.raises(IngestError) as e:
        list(parser.finish())
    assert e.value.line == 2 and "signature never ends" in e.value.message
