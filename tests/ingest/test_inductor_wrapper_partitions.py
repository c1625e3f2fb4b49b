"""Output code split into graph partitions (``def partition_N(args):`` dispatched from
``call`` by ``self.partitions[N](partitionN_args)``): the partitions' bodies are the
program, in every form tlview reads output code (output_code.py, TORCH_LOGS, TORCH_TRACE).

Fixtures: tests/fixtures/torch/partitions{,.log} and tests/fixtures/torch_trace/partitions
(tests/fixtures/gen/make_partitions.py, CPU torch 2.13: two partitions around a sort that
stays in ``call`` in the forward, one partition in the backward). The peaks are checked
against an independent walk of the module (tests/reference_wrapper.py: reference counts per
storage, each function a scope of its own as Python runs it) and torch's own measurement
of ``call`` (``<aot id>.measured.json``).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from tlview.store import open_database
from tlview.store.digest import source_digest

from tests import reference_wrapper as ref
from tests.conftest import FIXTURES, ingest_together

PART = FIXTURES / "torch" / "partitions"
LOG = FIXTURES / "torch" / "partitions.log"
TRACE = FIXTURES / "torch_trace" / "partitions" / "trace.log.gz"
TITLE = {"0_forward": "Forward graph 0", "0_backward": "Backward graph 0"}


@pytest.fixture(scope="module")
def db(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("partitions") / "p.duckdb"
    ingest_together(path, LOG, PART / "0_forward.output_code.py",
                    PART / "0_backward.output_code.py", TRACE,
                    PART / "0_forward.ir_post_fusion.txt", PART / "0_backward.ir_post_fusion.txt")
    return path


def _peaks(db: Path) -> dict[tuple[str, str], int]:
    """(source file name, timeline name) -> peak bytes of every wrapper timeline."""
    with open_database(db, read_only=True) as d:
        rows = d.sql("SELECT regexp_extract(t.source_path, '[^/]*$'), t.name, p.peak_bytes "
                     "FROM timelines t JOIN peak_memory p USING (timeline_id) "
                     "WHERE t.format IN ('inductor_wrapper', 'inductor_ir')").fetchall()
    return {(f, n): b for f, n, b in rows}


def _measured(aot: str) -> int:
    return json.loads((PART / f"{aot}.measured.json").read_text())["peak_bytes"]


def test_peaks_equal_the_walk_and_torch(db):
    """Every form's wrapper peak equals the independent walk of the same module; where the
    form carries the FX graph (log, TORCH_TRACE) the sort's int64 indices are sized right
    and the peak is torch's own; output_code.py alone infers them from the sort's float
    input (the rule for extern outputs without a graph): 2,048 B fewer in the forward."""
    peaks = _peaks(db)
    fx = ref.fx_graphs(LOG)
    walked_log = {ref.aot_id(m): ref.simulate_wrapper(m, fx[TITLE[ref.aot_id(m)]])
                  for m in ref.wrapper_modules(LOG)}
    for aot in ("0_forward", "0_backward"):
        module = (PART / f"{aot}.output_code.py").read_text().splitlines()
        walked_file = ref.simulate_wrapper(module)
        assert peaks[(f"{aot}.output_code.py", aot)] == walked_file
        assert peaks[("partitions.log", aot)] == walked_log[aot] == _measured(aot)
        assert peaks[("trace.log.gz", aot)] == _measured(aot)
    assert (_measured("0_forward"), walked_file) != (0, 0)
    assert _measured("0_forward") - peaks[("0_forward.output_code.py", "0_forward")] == \
        8 * 64 * (8 - 4)  # the [8, 64] indices: int64 in torch, float32 inferred
    assert peaks[("0_backward.output_code.py", "0_backward")] == _measured("0_backward")


def test_scheduler_ir_agrees_but_for_the_reuse_it_cannot_see(db):
    """The scheduler IR holds the storages the wrapper makes, with the same bytes; the
    wrapper reuses buf1's storage for buf6 in place (decided at codegen, after the IR):
    the backward peaks are equal, the forward IR counts buf6's 2,048 B besides buf1."""
    def bufs(d, name: str, src: str) -> dict[str, tuple]:
        return {b: (n, lay) for b, n, lay in d.sql(
            "SELECT b.buffer, b.bytes, b.layout FROM buffers b JOIN timelines t USING "
            "(timeline_id) WHERE t.name = ? AND t.source_path LIKE ? AND NOT b.is_input",
            [name, f"%{src}"]).fetchall()}

    with open_database(db, read_only=True) as d:
        for aot in ("0_forward", "0_backward"):
            wrapper = bufs(d, aot, "partitions.log")
            ir = bufs(d, f"{aot}.ir_post_fusion.txt", ".ir_post_fusion.txt")
            made = {b: n for b, (n, lay) in wrapper.items() if lay not in ("reuse", "tuple")}
            assert made and all(ir[b][0] == n for b, n in made.items()), (aot, made, ir)
    peaks = _peaks(db)
    assert peaks[("0_backward.ir_post_fusion.txt", "0_backward.ir_post_fusion.txt")] == \
        peaks[("partitions.log", "0_backward")]
    assert peaks[("0_forward.ir_post_fusion.txt", "0_forward.ir_post_fusion.txt")] - 2048 == \
        peaks[("partitions.log", "0_forward")]


def test_the_partitions_bodies_are_the_program(db):
    """Each launch of each partition is a step, in dispatch order, with the partition it
    runs in; the sort between them runs in call itself; the return is the last step."""
    text = (PART / "0_forward.output_code.py").read_text()
    bodies = {m[1]: m[2] for m in re.finditer(r"^def (partition_\d+)\(args\):\n((?:    .*\n|\n)*)",
                                              text, flags=re.M)}
    launched = {p: re.findall(r"^    (extern_kernels\.\w+|cpp_fused_\w+)\(", b, flags=re.M)
                for p, b in bodies.items()}
    with open_database(db, read_only=True) as d:
        rows = d.sql("SELECT n.step, n.node, json_extract_string(n.attrs, '$.partition') "
                     "FROM nodes n JOIN timelines t USING (timeline_id) WHERE t.name = "
                     "'0_forward' AND t.source_path LIKE '%.output_code.py' ORDER BY n.step"
                     ).fetchall()
    want = [(k, "partition_0") for k in launched["partition_0"]] + \
        [("torch.ops.aten.sort.stable", None)] + \
        [(k, "partition_1") for k in launched["partition_1"]] + [("return", None)]
    assert [(n, p) for _, n, p in rows] == want
    assert [s for s, _, _ in rows] == list(range(len(want)))


def test_buffers_keep_their_identity_across_partitions(db):
    """buf1, made in partition_0, is returned to call, read by the sort and handed to
    partition_1, which reuses it in place as buf6 (returned): one storage, live from its
    kernel in partition_0 to the return; the inputs handed over and deleted inside a
    partition are inputs still (never counted)."""
    with open_database(db, read_only=True) as d:
        rows = d.sql("SELECT b.buffer, b.bytes, b.alloc_step, b.last_step, b.layout, "
                     "b.is_input, json_extract_string(b.attrs, '$.storage') FROM buffers b "
                     "JOIN timelines t USING (timeline_id) WHERE t.name = '0_forward' AND "
                     "t.source_path LIKE '%partitions.log'").fetchall()
    by = {r[0]: r[1:] for r in rows}
    assert by["buf1"] == (2048, 1, 5, "empty_strided_cpu", False, None)
    assert by["buf6"] == (0, 4, 5, "reuse", False, "buf1")
    assert {b for b, r in by.items() if r[4]} == {f"primals_{i}" for i in range(1, 6)}


def test_a_dispatch_of_an_unknown_partition_is_one_line(db, tmp_path, capsys, monkeypatch):
    """A partition that call dispatches but the module does not define: one line naming
    the file, the line and what was expected, exit 2, the database unchanged; the same
    with the compiled core and without."""
    from tlview.cli import main

    text = (PART / "0_forward.output_code.py").read_text()
    assert text.count("self.partitions[1](") == 1
    bad = tmp_path / "0_forward.output_code.py"
    bad.write_text(text.replace("self.partitions[1](", "self.partitions[7]("))
    line = 1 + text[:text.index("self.partitions[1](")].count("\n")
    with open_database(db, read_only=True) as d:
        before = json.dumps([source_digest(d, s) for s in range(1, 7)], sort_keys=True)
    for native in ("1", "0"):
        monkeypatch.setenv("TLVIEW_NATIVE", native)
        assert main(["ingest", str(bad), "--db", str(db)]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "Traceback" not in err, err
        assert f"{bad}:{line}: self.partitions[7] dispatches partition_7, which this module " \
               "does not define: expected def partition_7(args) before call" in err, err
    with open_database(db, read_only=True) as d:
        assert json.dumps([source_digest(d, s) for s in range(1, 7)], sort_keys=True) == before


def test_gpu_partitioned_output_code_peaks_equal_the_walk(tmp_path):
    """The H200 reduce-overhead runs (tests/fixtures/cudagraphs: torch 2.11 partitions by
    default): each graph's kernels all in partition_0, call only dispatching it. The
    wrapper peaks of the TORCH_LOGS output code equal the walk of the same modules (both
    typing extern outputs from their first argument: the log holds no FX graph)."""
    cg = FIXTURES / "cudagraphs"
    logs = [cg / "infer" / "torch_logs.txt", cg / "train" / "torch_logs.txt"]
    path = tmp_path / "g.duckdb"
    ingest_together(path, *logs)
    walked = {}
    for log in logs:
        for m in ref.wrapper_modules(log):
            assert any(ln.startswith("def partition_0(args):") for ln in m)
            walked[(log.parent.name, ref.aot_id(m))] = ref.simulate_wrapper(m)
    with open_database(path, read_only=True) as d:
        got = {(Path(src).parent.name, name): (peak, parts) for src, name, peak, parts in d.sql(
            "SELECT t.source_path, t.name, p.peak_bytes, count(n.step) FILTER (WHERE "
            "json_extract_string(n.attrs, '$.partition') = 'partition_0') FROM timelines t "
            "JOIN peak_memory p USING (timeline_id) JOIN nodes n USING (timeline_id) "
            "GROUP BY ALL").fetchall()}
    assert {k: v[0] for k, v in got.items()} == walked
    assert walked[("train", "0_forward")] == 34_660_368 and len(walked) == 3
    assert all(parts > 10 for _, parts in got.values())  # every launch inside the partition
