"""XLA buffer-assignment ingest: XLA's figures to the byte, and the true peak beside them.

Seed 003 is an older single-file dump (GPU, PyTorch/XLA); the fixtures under
tests/fixtures/xla/ are real split-form dumps made with CPU JAX by
tests/fixtures/gen/make_xla_dumps.py. Figures are checked against the independent
reader in reference_xla.py.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import duckdb
import pytest
from tlview.ingest import IngestError
from tlview.ingest.discover import discover
from tlview.ingest.lines import read_lines
from tlview.ingest.records import BufferAllocated, NodeScheduled, TimelineNote
from tlview.ingest.xla_buffer_assignment import parse_buffer_assignment, sibling_files
from tlview.store import open_database

from tests.conftest import FIXTURES, SEED_003, ingest_into
from tests.reference_xla import reference, xla_moment

XLA = FIXTURES / "xla"
MODULES = sorted(XLA.glob("*-buffer-assignment.txt*"))
MODULE_IDS = [p.name.split(".")[1] for p in MODULES]
ALL_DUMPS = [SEED_003, *MODULES]
ALL_IDS = ["seed003", *MODULE_IDS]


def connect(db_path: Path) -> duckdb.DuckDBPyConnection:
    return duckdb.connect(str(db_path), read_only=True)


def test_fixtures_are_the_four_programs():
    assert MODULE_IDS == ["jit_large_intermediates", "jit_attention", "jit_rnn_scan_grad",
                          "jit_mlp_train_step"]
    for m in MODULES:
        assert len(sibling_files(str(m))) == 4


class TestSeed003:
    """The done-when of issue 3 on the seed: XLA's peak, to the byte, checked three ways."""

    def test_peak_memory(self, alone):
        db_path, (tid,) = alone(SEED_003)
        con = connect(db_path)
        assert con.execute("SELECT peak_step, peak_bytes FROM peak_memory WHERE timeline_id=?",
                           [tid]).fetchone() == (158, 1_092_637_220)

    def test_live_at_158_is_xlas_list(self, alone):
        db_path, (tid,) = alone(SEED_003)
        rows = connect(db_path).execute(
            "SELECT producer, bytes FROM live_at(?, 158)", [tid]).fetchall()
        stated = reference(SEED_003)["stated"]
        assert len(stated) == 50 and len(rows) == 50
        assert sorted(rows) == sorted(stated)
        assert sum(b for _, b in rows) == 1_092_637_220

    def test_xla_peak_check_agrees(self, alone):
        db_path, (tid,) = alone(SEED_003)
        row = connect(db_path).execute(
            "SELECT stated_step, stated_bytes, stated_values, list_matches, recomputed_step, "
            "peak_step, peak_bytes, agrees FROM xla_peak_check WHERE timeline_id=?",
            [tid]).fetchone()
        assert row == (158, 1_092_637_220, 50, True, 158, 158, 1_092_637_220, True)

    def test_total_bytes_used_and_allocations(self, alone):
        db_path, (tid,) = alone(SEED_003)
        con = connect(db_path)
        note = con.execute("SELECT json_extract(notes, '$.total_bytes_used') FROM timelines"
                           ).fetchone()[0]
        assert int(note) == 1_093_622_736
        assert con.execute("SELECT count(*), sum(size) FROM allocations").fetchone() == (
            54, 1_093_622_736)
        # allocation 53 (preallocated-temp): its values at step 158: only tuple{}, 32 bytes
        assert con.execute("SELECT kind, n_values, bytes_at_peak FROM allocations "
                           "WHERE allocation = 53").fetchone() == ("preallocated-temp", 52, 32)
        assert con.execute("SELECT kind, parameter, parameter_shape, parameter_index FROM "
                           "allocations WHERE allocation = 0").fetchone() == (
            "parameter", 5, "bf16[151936,1024]", "{}")
        assert con.execute("SELECT output_shape FROM allocations WHERE allocation = 48"
                           ).fetchone() == ("(bf16[32,8,128], bf16[32,8,128], bf16[4233,16,8,128], "
                                            "bf16[4233,16,8,128])",)
        assert con.execute("SELECT kind FROM allocations WHERE allocation = 48").fetchone() == (
            "output, maybe-live-out",)

    def test_metadata_parameters_live_out(self, alone):
        db_path, _ = alone(SEED_003)
        con = connect(db_path)
        op_type, source, param = con.execute(
            "SELECT op_type, source, parameter FROM xla_values WHERE buffer = 'gemm_fusion_dot.35.0{}'"
        ).fetchone()
        assert op_type == "aten__mm" and param is None
        assert source == "/usr/local/lib/python3.10/site-packages/torch/_ops.py:756"
        assert con.execute("SELECT parameter, bytes, alloc_step, last_step FROM xla_values "
                           "WHERE buffer = 'p5.32.0{}'").fetchone() == (5, 311_164_928, 0, 166)
        assert con.execute("SELECT maybe_live_out FROM xla_values WHERE buffer = 'tuple.810.0{}'"
                           ).fetchone() == (True,)
        node = con.execute("SELECT node_class, json_extract_string(attrs, '$.fusion_kind'), "
                           "json_extract_string(attrs, '$.op_type') FROM nodes "
                           "WHERE node = 'gemm_fusion_dot.35.0'").fetchone()
        assert node == ("fusion", "kCustom", "aten__mm")
        cfg = con.execute("SELECT json_extract_string(attrs, '$.backend_config') FROM nodes "
                          "WHERE node = 'custom-call.19.0'").fetchone()[0]
        assert cfg.startswith('{"operation_queue_id":"0"') and cfg.endswith("}")

    def test_thread_local_values_reported_not_dropped(self, alone):
        db_path, _ = alone(SEED_003)
        rows = connect(db_path).execute(
            "SELECT buffer, bytes, problem FROM xla_unmatched ORDER BY buffer").fetchall()
        assert rows == [("add.127{}", 4, "no live range"), ("x.65{}", 4, "no live range"),
                        ("y.66{}", 4, "no live range")]


@pytest.mark.parametrize("dump", ALL_DUMPS, ids=ALL_IDS)
class TestRealDumps:
    """Every real dump: XLA's list, XLA's moment and tlview's peak, each checked."""

    def test_live_at_stated_step_is_xlas_list(self, dump, alone):
        ref = reference(dump)
        db_path, (tid,) = alone(dump)
        col = "producer" if dump == SEED_003 else "buffer"  # old form lists instruction names
        rows = connect(db_path).execute(
            f"SELECT {col}, bytes FROM live_at(?, ?)", [tid, ref["stated_step"]]).fetchall()
        assert sorted(rows) == sorted(ref["stated"])

    def test_xla_moment_rule_gives_stated_step(self, dump, alone):
        ref = reference(dump)
        assert xla_moment(ref) == ref["stated_step"]
        db_path, (tid,) = alone(dump)
        row = connect(db_path).execute(
            "SELECT recomputed_step, stated_step, list_matches FROM xla_peak_check "
            "WHERE timeline_id = ?", [tid]).fetchone()
        assert row == (ref["stated_step"], ref["stated_step"], True)

    def test_peak_and_curve_equal_closed_interval_reference(self, dump, alone):
        ref = reference(dump)
        db_path, (tid,) = alone(dump)
        con = connect(db_path)
        assert con.execute("SELECT peak_step, peak_bytes FROM peak_memory WHERE timeline_id=?",
                           [tid]).fetchone() == (ref["peak_step"], ref["peak_bytes"])
        curve = [r[0] for r in con.execute(
            "SELECT live_bytes FROM memory_curve WHERE timeline_id=? ORDER BY step", [tid]).fetchall()]
        assert curve == ref["curve"]

    def test_no_allocation_conflicts(self, dump, alone):
        db_path, _ = alone(dump)
        assert connect(db_path).execute("SELECT count(*) FROM allocation_conflicts").fetchone() == (0,)


def test_stated_peaks_of_the_jax_dumps(alone):
    """On the JAX dumps XLA's stated moment is not the true maximum: the exact figures
    (each dump alone in its database, made once per test process)."""
    rows = sorted(r for m in MODULES for r in connect(alone(m)[0]).execute(
        "SELECT t.name, stated_step, stated_bytes, live_bytes_at_stated, peak_step, peak_bytes, "
        "stated_is_peak FROM xla_peak_check JOIN timelines t USING (timeline_id)").fetchall())
    assert rows == [
        ("module_0004.jit_large_intermediates", 10, 67_141_636, 67_141_636, 9, 100_696_068, False),
        ("module_0016.jit_attention", 30, 12_353_540, 10_256_388, 26, 11_567_108, False),
        ("module_0020.jit_rnn_scan_grad", 17, 7_684_184, 7_684_184, 49, 9_289_740, False),
        ("module_0032.jit_mlp_train_step", 25, 17_709_060, 13_514_756, 28, 15_616_004, False),
    ]


def test_cli_says_when_stated_peak_is_not_the_maximum(tmp_path, capsys):
    from tlview.cli import main

    rnn = next(m for m in MODULES if "rnn" in m.name)
    assert main(["ingest", "--db", str(tmp_path / "c.duckdb"), str(rnn)]) == 0
    out = capsys.readouterr().out
    assert "peak 9,289,740 B" in out and "at step 49" in out
    assert ("XLA states its peak at step 17 (7,684,184 bytes listed, 7,684,184 live by tlview's "
            "rule); the true maximum is 9,289,740 bytes at step 49") in out


# -- broken and partial copies -------------------------------------------------------------

def copy_module(src: Path, dest: Path) -> Path:
    """Copy a split dump's siblings into ``dest``; returns the copy of ``src``."""
    for f in sibling_files(str(src)):
        shutil.copy(f, dest / Path(f).name)
    return dest / src.name


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert text.count(old) == 1, old
    path.write_text(text.replace(old, new))


def test_allocation_conflicts_found_in_broken_copy(tmp_path, db_path):
    """Move copy.5 onto add_tanh_fusion's bytes in the RNN's temp allocation: both live at 16."""
    rnn = next(m for m in MODULES if "rnn" in m.name)
    broken = copy_module(rnn, tmp_path)
    # copy.5 lives 10-16 at offset 0, wrapped_broadcast 7-51 at 8192000: same allocation 16
    edit(broken, "<137 wrapped_broadcast @0> (size=32768,offset=8192000)",
         "<137 wrapped_broadcast @0> (size=32768,offset=16384)")
    ingest_into(db_path, broken)
    rows = connect(db_path).execute(
        "SELECT value_a, value_b, overlap_from, overlap_to, overlap_bytes FROM allocation_conflicts "
        "WHERE 'wrapped_broadcast{}' IN (value_a, value_b) ORDER BY ALL").fetchall()
    assert ("copy.5{}", "wrapped_broadcast{}", 10, 16, 16384) in rows
    assert all(r[4] > 0 for r in rows)


def test_split_and_single_file_forms_give_the_same_timeline(tmp_path, alone):
    """Seed 003 cut into the split form by its sections; a JAX dump glued into one file."""
    text = SEED_003.read_text()
    cut_values = text.index("\nTotal bytes used:")
    cut_live = text.index("HloLiveRange (max")
    stem = tmp_path / "module_0003.seed.gpu_after_optimizations"
    Path(f"{stem}-buffer-assignment.txt").write_text(text[:cut_values + 1])
    Path(f"{stem}-buffer-assignment-values.txt").write_text(text[cut_values + 1:cut_live])
    Path(f"{stem}-live-range.txt").write_text(text[cut_live:])
    rnn = next(m for m in MODULES if "rnn" in m.name)
    glued = tmp_path / "rnn-buffer-assignment.txt"
    glued.write_text("".join(Path(f).read_text() for f in sibling_files(str(rnn))[:3]))

    def figures(db: Path, dump: Path | None = None, tid: int | None = None) -> tuple:
        """The timeline of ``dump`` ingested into ``db`` (or timeline ``tid`` of ``db``)."""
        if dump is not None:
            (tid,) = ingest_into(db, dump)
        con = connect(db)
        return (
            con.execute("SELECT peak_step, peak_bytes FROM peak_memory WHERE timeline_id=?", [tid]).fetchall(),
            con.execute("SELECT step, live_bytes FROM memory_curve WHERE timeline_id=? ORDER BY step", [tid]).fetchall(),
            con.execute("SELECT buffer, bytes, allocation, \"offset\", alloc_step, last_step FROM buffers "
                        "WHERE timeline_id=? ORDER BY buffer", [tid]).fetchall(),
            con.execute("SELECT stated_step, stated_bytes, recomputed_step, agrees FROM xla_peak_check "
                        "WHERE timeline_id=?", [tid]).fetchall(),
        )

    # the single file and the split dump each alone in a database (``alone``: made once)
    db, (tid,) = alone(SEED_003)
    assert figures(db, tid=tid) == figures(tmp_path / "b.duckdb", Path(f"{stem}-live-range.txt"))
    db, (tid,) = alone(rnn)
    assert figures(db, tid=tid) == figures(tmp_path / "d.duckdb", glued)


@pytest.mark.parametrize("suffix", ["-buffer-assignment.txt", "-buffer-assignment-values.txt",
                                    "-live-range.txt", "-memory-usage-report.txt"])
def test_any_sibling_builds_the_module(suffix, db_path):
    attn = next(m for m in MODULES if "attention" in m.name)
    sibling = Path(str(attn).replace("-buffer-assignment.txt", suffix))
    (tid,) = ingest_into(db_path, sibling)
    con = connect(db_path)
    assert con.execute("SELECT name, n_steps FROM timelines").fetchone() == (
        "module_0016.jit_attention", 42)
    assert con.execute("SELECT peak_step, peak_bytes FROM peak_memory").fetchone() == (26, 11_567_108)


def test_folder_gives_one_timeline_per_module(tmp_path, db_path):
    for m in MODULES:
        copy_module(m, tmp_path)
    shutil.copy(SEED_003, tmp_path / SEED_003.name)
    found = discover(tmp_path)
    assert len(found) == 5
    assert all(fmt == "xla_buffer_assignment" for _, fmt in found)
    forced = discover(tmp_path, "xla_buffer_assignment")
    assert [p for p, _ in forced] == [p for p, _ in found]
    tids = ingest_into(db_path, *[Path(p) for p, _ in found])
    names = [r[0] for r in connect(db_path).execute("SELECT name FROM timelines ORDER BY 1").fetchall()]
    assert len(tids) == 5 and names == sorted(["003_5960cad812240b69", *(
        m.name.split(".cpu_")[0] for m in MODULES)])


def test_value_without_allocation_is_reported(tmp_path, db_path):
    """Drop copy.4's allocation line: it stays a buffer of unknown size, listed as unmatched."""
    rnn = next(m for m in MODULES if "rnn" in m.name)
    copy = copy_module(rnn, tmp_path)
    edit(copy, " value: <136 copy.4 @0> (size=4,offset=0): s32[]\n", "")
    (tid,) = ingest_into(db_path, copy)
    con = connect(db_path)
    assert con.execute("SELECT buffer, bytes, alloc_step, last_step, problem FROM xla_unmatched "
                       "WHERE problem = 'no allocation line'").fetchall() == [
        ("copy.4{}", None, 14, 16, "no allocation line")]
    assert con.execute("SELECT unknown_live FROM memory_curve WHERE timeline_id=? AND step=15",
                       [tid]).fetchone() == (1,)
    warnings = [r[0] for r in con.execute(
        "SELECT unnest(from_json(json_extract(attrs, '$.warnings'), '[\"VARCHAR\"]')) "
        "FROM timeline_notes").fetchall()]
    assert any(w.startswith("1 values in BufferLiveRange have no allocation line") for w in warnings)


def test_dump_without_live_range_ingests_allocations(tmp_path, db_path):
    text = SEED_003.read_text()
    dump = tmp_path / "nolive-buffer-assignment.txt"
    dump.write_text(text[: text.index("HloLiveRange (max")])
    ingest_into(db_path, dump)
    con = connect(db_path)
    assert con.execute("SELECT count(*), sum(size) FROM allocations").fetchone() == (54, 1_093_622_736)
    assert con.execute("SELECT n_steps FROM timelines").fetchone() == (0,)
    assert con.execute("SELECT count(*) FROM peak_memory").fetchone() == (0,)
    assert con.execute("SELECT json_extract_string(notes, '$.liveness') FROM timelines").fetchone() == (
        "unknown",)
    assert con.execute("SELECT stated_step, recomputed_step, peak_step, agrees FROM xla_peak_check"
                       ).fetchone() == (None, None, None, False)


def assert_nothing_written(db_path: Path) -> None:
    with open_database(db_path) as db:
        assert db.query("counts")[0] == (0, 0, 0)


def test_truncated_live_range_is_an_error(tmp_path, db_path):
    text = SEED_003.read_text()
    dump = tmp_path / "cut.txt"
    dump.write_text(text[: text.index("    100:custom-call.21.0")])
    with pytest.raises(IngestError) as e:
        ingest_into(db_path, dump)
    assert e.value.path == str(dump.resolve())
    assert "promises 166 instructions, found 100" in e.value.message
    assert_nothing_written(db_path)


def test_truncated_instruction_sequence_before_buffer_live_range(tmp_path, db_path):
    text = SEED_003.read_text()
    dump = tmp_path / "cut.txt"
    start = text.index("    150:get-tuple-element.18.0\n")
    end = text.index("  BufferLiveRange:")
    dump.write_text(text[:start] + text[end:])
    with pytest.raises(IngestError) as e:
        ingest_into(db_path, dump)
    assert e.value.line == text[:start].count("\n") + 1
    assert "promises 166 instructions, found 150" in e.value.message
    assert_nothing_written(db_path)


@pytest.mark.parametrize("old,new,expected", [
    (" value: <661 p5.32.0 @0> (size=311164928,offset=0)", " value: <661 p5.32.0 @0> (size=311164928)",
     "expected ' value: <id name{index} @color>"),
    (" value: <661 p5.32.0 @0> (size=311164928,offset=0)", " value: <661 p5.32.0 @0> (size=311164928,offset=8)",
     "runs past allocation 0's 311164928 bytes"),
    ("    p5.32.0{}:0-166", "    p5.32.0{}:0-167", "live range 0-167 outside 0-166"),
    ("    p5.32.0{}:0-166", "    p5.32.0{}:0166", "expected 'name{index}:start-end'"),
    ("    101:get-tuple-element.2.0", "    101:custom-call.21.0", "custom-call.21.0 scheduled twice"),
    ("    wrapped_slice{}:151-166", "    fusion.111{}:151-166", "fusion.111{} has two live ranges"),
])
def test_bad_lines_are_errors_with_line(tmp_path, db_path, old, new, expected):
    dump = tmp_path / "bad.txt"
    shutil.copy(SEED_003, dump)
    edit(dump, old, new)
    with pytest.raises(IngestError) as e:
        ingest_into(db_path, dump)
    lines = dump.read_text().splitlines()
    assert lines[e.value.line - 1].startswith(new)
    assert expected in e.value.message
    assert_nothing_written(db_path)


def test_new_form_cumulative_is_checked(tmp_path, db_path):
    rnn = next(m for m in MODULES if "rnn" in m.name)
    copy = copy_module(rnn, tmp_path)
    live = Path(str(copy).replace("-buffer-assignment.txt", "-live-range.txt"))
    edit(live, "xs.1{}: 409600 bytes (cumulative: 6963200 bytes)",
         "xs.1{}: 409600 bytes (cumulative: 6963201 bytes)")
    with pytest.raises(IngestError, match="cumulative 6963201 bytes, expected 6963200"):
        ingest_into(db_path, copy)


def test_parser_is_pure_and_streams_records():
    recs = list(parse_buffer_assignment([str(SEED_003)], name="m", open_lines=read_lines))
    nodes = [r for r in recs if isinstance(r, NodeScheduled)]
    assert sorted(n.step for n in nodes) == list(range(166))  # each instruction once
    assert nodes[0].node == "wrapped_concatenate" and nodes[0].step == 91  # first used value
    bufs = {r.buffer: r for r in recs if isinstance(r, BufferAllocated)}
    v = bufs["custom-call.19.0{0}"]
    assert (v.bytes, v.allocation, v.offset, v.step, v.dtype, v.shape, v.layout) == (
        393216, 53, 2176, 94, "bf16", "[32,6144]", "{1,0}")
    # A tuple element is charged its tuple's table (2 elements x 8 bytes) by XLA's moment rule.
    assert v.attrs["instruction_bytes"] == 16
    assert v.attrs["positions"] == ["custom-call.19.0 {0}", "get-tuple-element.19"]
    assert v.attrs["uses"] == ["loop_convert_fusion, operand 0"]
    assert "positions" not in bufs["fusion.122{}"].attrs  # only its own instruction
    (note,) = [r for r in recs if isinstance(r, TimelineNote)]
    assert note.attrs["xla_peak"]["step"] == 158 and len(note.attrs["xla_peak"]["values"]) == 50


def test_named_queries(alone):
    db_path, (tid,) = alone(SEED_003)
    with open_database(db_path, read_only=True) as db:
        assert db.query("xla_peak_check_of", tid)[0][2] == 158
        assert len(db.query("xla_allocations_of", tid)) == 54
        assert db.query("xla_allocation_conflicts_of", tid) == []
        assert len(db.query("xla_unmatched_of", tid)) == 3
        stated = db.query_dicts("xla_peak_stated_of", tid)
        assert [r["ordinal"] for r in stated] == list(range(1, 51))
        assert stated[0]["name"] == "input_concatenate_fusion" and stated[0]["bytes"] == 65536


def test_gzipped_siblings(tmp_path, db_path):
    """Siblings are found with or without .gz, and read through gzip."""
    import gzip

    mlp = next(m for m in MODULES if "mlp" in m.name)
    for f in sibling_files(str(mlp)):
        with open(f, "rb") as src, gzip.open(tmp_path / (Path(f).name + ".gz"), "wb") as dst:
            dst.write(src.read())
    live = next(tmp_path.glob("*-live-range.txt.gz"))
    assert len(sibling_files(str(live))) == 4
    assert len(discover(tmp_path)) == 1
    ingest_into(db_path, live)
    assert connect(db_path).execute("SELECT peak_step, peak_bytes FROM peak_memory").fetchone() == (
        28, 15_616_004)


def test_hand_over_needs_a_use_or_a_phi(tmp_path, db_path):
    """broadcast_select_fusion takes over ynn_fusion.8's bytes at step 16 because it reads it;
    with that use deleted from the dump, the one shared step is a conflict."""
    attn = next(m for m in MODULES if "attention" in m.name)
    copy = copy_module(attn, tmp_path)
    values = Path(str(copy).replace("-buffer-assignment.txt", "-buffer-assignment-values.txt"))
    edit(values, "  ynn_fusion.8\n uses:\n  broadcast_select_fusion, operand 0\n",
         "  ynn_fusion.8\n uses:\n  (none)\n")
    ingest_into(db_path, copy)
    rows = connect(db_path).execute(
        "SELECT value_a, value_b, overlap_from, overlap_to FROM allocation_conflicts").fetchall()
    assert rows == [("broadcast_select_fusion{}", "ynn_fusion.8{}", 16, 16)]


@pytest.mark.parametrize("text,n,nbytes", [
    ("bf16[2,3]{1,0}", None, 12), ("f32[]", None, 4), ("pred[]", None, 1), ("s8[4194304]{0}", None, 4194304),
    ("(bf16[32,6144]{1,0}, s8[4194304]{0})", 2, 16), ("()", 0, 0),
    ("(s32[], (f32[2,3]{1,0}, f32[]), /*index=2*/f32[4]{0})", 3, 24),
])
def test_byte_size_of_shapes(text, n, nbytes):
    """ShapeUtil::ByteSizeOf(shape, 8): arrays by elements, tuples by their 8-byte table."""
    from tlview.ingest.xla_shapes import parse_shape

    shape = parse_shape(text)
    assert (shape.n_elements, shape.bytes) == (n, nbytes)


def test_peak_not_determined_by_xla(tmp_path, db_path):
    """XLA prints a sentence instead of its list for unbounded dynamic shapes: kept as a note."""
    text = SEED_003.read_text()
    dump = tmp_path / "dynamic.txt"
    dump.write_text(text[: text.index("  Live ranges at 158 (peak):")]
                    + "  Peak memory could not be determined due to unbounded dynamic shape.\n")
    ingest_into(db_path, dump)
    con = connect(db_path)
    assert con.execute("SELECT stated_step, recomputed_step, peak_step, peak_bytes FROM xla_peak_check"
                       ).fetchone() == (None, 158, 158, 1_092_637_220)
    warnings = [r[0] for r in con.execute(
        "SELECT unnest(from_json(json_extract(attrs, '$.warnings'), '[\"VARCHAR\"]')) "
        "FROM timeline_notes").fetchall()]
    assert ("XLA: Peak memory could not be determined due to unbounded dynamic shape."
            in warnings)


def test_split_form_without_its_allocations_file(tmp_path, db_path):
    mlp = next(m for m in MODULES if "mlp" in m.name)
    live = Path(str(mlp).replace("-buffer-assignment.txt", "-live-range.txt"))
    shutil.copy(live, tmp_path / live.name)
    with pytest.raises(IngestError, match="its sibling module_0032.jit_mlp_train_step"
                                          r".cpu_after_optimizations-buffer-assignment.txt is missing"):
        ingest_into(db_path, tmp_path / live.name)
    assert_nothing_written(db_path)
