"""TORCH_TRACE logs (format torch_trace) on the real fixtures and on small made-up logs.

Independent checks: the records of a log are read back here with json.loads over the
whole file (no streaming, no shared code), payload md5s recomputed with hashlib, each
output code simulated by tests/reference_wrapper.py; the same compiles' debug folders
and TORCH_LOGS logs (other ingest paths) must give identical buffers and peaks.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import re
from decimal import Decimal
from pathlib import Path

import duckdb
import pytest
from tlview.ingest.errors import IngestError
from tlview.ingest.formats import detect_format
from tlview.ingest.records import CompileEvent, Timeline, TimelineNote
from tlview.ingest.torch_trace import parse_torch_trace

from tests import reference_wrapper as ref
from tests.conftest import FIXTURES, ingest_into, ingest_together

TT = FIXTURES / "torch_trace"
LOGS = {"cpu_step": [TT / "cpu_step" / "trace.log.gz"],
        "gpu_step": [TT / "gpu_step" / "trace.log.gz"],
        "two_ranks": sorted((TT / "two_ranks").glob("*.log.gz"))}


def read_records(path: Path) -> list[tuple[int, dict, str | None]]:
    """(line, envelope, payload text or None) of every record, read whole."""
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt") as f:
        lines = f.read().split("\n")
    out = []
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        if not line or line.startswith("\t"):
            continue
        env = json.loads(line[line.index("] {") + 2:])
        payload = None
        if "has_payload" in env:
            body = []
            while i < len(lines) and lines[i].startswith("\t"):
                body.append(lines[i][1:])
                i += 1
            payload = "\n".join(body)
        out.append((i, env, payload))
    return out


def _payloads(path: Path, kind: str) -> list[tuple[dict, str]]:
    return [(env, p) for _, env, p in read_records(path) if kind in env]


@pytest.fixture(scope="module")
def dbs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out = {}
    for name, logs in LOGS.items():
        path = tmp_path_factory.mktemp(name) / "t.duckdb"
        ingest_together(path, *logs)
        out[name] = path
    return out


def _wrappers(db: Path) -> dict[tuple, tuple]:
    """(rank, aot id) -> (peak_step, peak_bytes, counted buffers) of every wrapper."""
    con = duckdb.connect(str(db), read_only=True)
    out = {}
    for tid, rank, aot, step, peak in con.execute(
            "SELECT t.timeline_id, t.attrs->>'$.rank', t.attrs->>'$.aot_id', p.peak_step, "
            "p.peak_bytes FROM timeline_records t JOIN peak_memory p USING (timeline_id) "
            "WHERE t.format = 'inductor_wrapper'").fetchall():
        bufs = frozenset(con.execute(
            "SELECT buffer, bytes, alloc_step, last_step, dtype, shape, stride, layout FROM "
            "buffers WHERE timeline_id = ? AND NOT is_input", [tid]).fetchall())
        out[(rank, aot)] = (step, peak, bufs)
    con.close()
    return out


class TestOutputCode:
    """Every inductor_output_code record is a wrapper timeline, exactly as other paths."""

    @pytest.mark.parametrize("name", sorted(LOGS))
    def test_one_wrapper_per_output_code_with_the_simulated_peak(self, name, dbs, tmp_path):
        expect = {}
        for log in LOGS[name]:
            post_grad = [p for env, p in _payloads(log, "artifact")
                         if env["artifact"]["name"] == "inductor_post_grad_graph"]
            for k, (env, code) in enumerate(_payloads(log, "inductor_output_code")):
                module = code.split("\n")
                # the post-grad graph printed just before this output code: its FX graph
                fx = post_grad[k].split("\n") if k < len(post_grad) else None
                expect[(str(env["rank"]) if "rank" in env else None, ref.aot_id(module))] = \
                    ref.simulate_wrapper(module, fx)
        got = {k: v[1] for k, v in _wrappers(dbs[name]).items()}
        assert got == expect and len(got) == {"cpu_step": 2, "gpu_step": 4, "two_ranks": 4}[name]

    @pytest.mark.parametrize("name", ["cpu_step", "gpu_step"])
    def test_same_buffers_and_peaks_as_debug_folder_and_log(self, name, dbs, tmp_path):
        folder = tmp_path / "folder.duckdb"
        ingest_together(folder, *sorted((TT / name / "debug").rglob("output_code.py")))
        log = tmp_path / "log.duckdb"
        ingest_into(log, TT / name / "compile.log.gz")
        trace = _wrappers(dbs[name])
        assert trace == _wrappers(folder) == _wrappers(log)

    def test_fx_graphs_equal_the_log_ones(self, dbs, tmp_path):
        """The AOT graphs, printed in TORCH_TRACE's expanded form, are the same timelines
        (buffers, peaks) as the glog log's one-line form of the same compile."""
        log = tmp_path / "log.duckdb"
        ingest_into(log, TT / "cpu_step" / "compile.log.gz")

        def graphs(db: Path, key: str) -> dict:
            con = duckdb.connect(str(db), read_only=True)
            out = {}
            for tid, aot, peak in con.execute(
                    f"SELECT t.timeline_id, {key}, p.peak_bytes FROM timelines t JOIN "
                    "peak_memory p USING (timeline_id) WHERE t.format = 'aot_fx_graph'"
            ).fetchall():
                out[aot] = (peak, frozenset(con.execute(
                    "SELECT buffer, bytes, alloc_step, last_step, dtype, shape FROM buffers "
                    "WHERE timeline_id = ?", [tid]).fetchall()))
            return out

        got = graphs(dbs["cpu_step"], "t.notes->>'$.aot_id'")
        assert sorted(got) == ["0_backward", "0_forward", "0_joint"]
        logged = graphs(log, "t.attrs->>'$.aot_id'")  # aot_graphs logs no joint graph
        assert {k: got[k] for k in logged} == logged and sorted(logged) == [
            "0_backward", "0_forward"]

    def test_compile_id_rank_and_identity_kept(self, dbs):
        con = duckdb.connect(str(dbs["two_ranks"]), read_only=True)
        rows = con.execute(
            "SELECT name, attrs->>'$.rank', attrs->>'$.compile_id', attrs->>'$.frame_id', "
            "attrs->>'$.attempt', attrs->>'$.payload_md5' IS NOT NULL, "
            "attrs->>'$.filename' LIKE '%.py' FROM timeline_records "
            "WHERE format = 'inductor_wrapper' ORDER BY name").fetchall()
        assert rows == [
            ("0_backward [rank 0]", "0", "0/0_1", "0", "1", True, True),
            ("0_backward [rank 1]", "1", "0/0_1", "0", "1", True, True),
            ("0_forward [rank 0]", "0", "0/0_1", "0", "1", True, True),
            ("0_forward [rank 1]", "1", "0/0_1", "0", "1", True, True)]
        # one set of timelines per rank: each log is one source, its rank on all of them
        per_rank = con.execute("SELECT s.path, list(DISTINCT t.attrs->>'$.rank') FROM "
                               "timeline_records t JOIN sources s USING (source_id) GROUP BY 1 "
                               "ORDER BY 1").fetchall()
        assert [r[1] for r in per_rank] == [["0"], ["1"]]

    def test_ranks_differ_by_their_batch(self, dbs):
        """Rank r ran a batch of 4 + 4r: its forward's peak is the simulation's."""
        peaks = {k: v[1] for k, v in _wrappers(dbs["two_ranks"]).items()}
        assert peaks[("0", "0_forward")] != peaks[("1", "0_forward")]


class TestRecords:
    def test_every_record_counted_by_kind(self, dbs):
        log = LOGS["gpu_step"][0]
        kinds: dict[str, int] = {}
        for _, env, _ in read_records(log):
            kind = next(k for k in env if k not in ("rank", "frame_id", "frame_compile_id",
                                                    "attempt", "has_payload",
                                                    "compiled_autograd_id", "stack"))
            kinds[kind] = kinds.get(kind, 0) + 1
        con = duckdb.connect(str(dbs["gpu_step"]), read_only=True)
        note = json.loads(con.execute("SELECT notes FROM timelines WHERE format = "
                                      "'torch_trace'").fetchone()[0])
        assert note["kinds"] == kinds
        # torch 2.11 writes compilation_metrics_runtime, a kind tlview does not know:
        # counted, and kept with its payload
        assert note["unknown_kinds"] == {"compilation_metrics_runtime": 2}
        kept = con.execute("SELECT attrs FROM events WHERE kind = 'compile_event' AND "
                           "name = 'compilation_metrics_runtime'").fetchall()
        assert len(kept) == 2 and all(json.loads(a)["unknown_kind"] for (a,) in kept)
        assert "md5_mismatches" not in note

    def test_chromium_events_and_metrics(self, dbs):
        log = LOGS["cpu_step"][0]
        chromium = [json.loads(p, parse_float=Decimal) for env, p in _payloads(log, "chromium_event")]
        con = duckdb.connect(str(dbs["cpu_step"]), read_only=True)
        got = con.execute("SELECT name, ts_ns, attrs->>'$.ph' FROM events WHERE kind = "
                          "'compile_event' AND category = 'chromium' ORDER BY seq").fetchall()
        assert got == [(e["name"], int(e["ts"] * 1000), e["ph"]) for e in chromium]
        metrics = con.execute("SELECT name, attrs->>'$.metrics.compile_id' FROM events WHERE "
                              "kind = 'compile_event' AND category = 'metrics' ORDER BY seq"
                              ).fetchall()
        assert metrics == [("compilation_metrics", "0/0"), ("bwd_compilation_metrics", "0/0")]

    def test_cache_keys_are_the_profilers_graph_keys(self, dbs):
        """fx_graph_cache_miss names each graph by the key a profiler's compiled call
        carries: both graphs of the CPU step are among the trace's calls."""
        con = duckdb.connect(str(dbs["cpu_step"]), read_only=True)
        keys = {r[0] for r in con.execute("SELECT notes->>'$.fx_graph_cache_key' FROM "
                                          "timelines WHERE format = 'inductor_wrapper'"
                                          ).fetchall()}
        with gzip.open(TT / "cpu_step" / "step.pt.trace.json.gz", "rt") as f:
            calls = {e["name"].split()[3] for e in json.load(f)["traceEvents"]
                     if e.get("name", "").startswith("## Call CompiledFxGraph")}
        assert keys == calls and len(keys) == 2


def _record(kind_meta: dict, payload: str | None, *, md5: str | None = None, pid: int = 7,
            src: str = "torch/x.py:1") -> list[str]:
    env = dict(kind_meta)
    if payload is not None:
        env["has_payload"] = md5 or hashlib.md5(payload.encode()).hexdigest()
    lines = [f"V1123 11:55:10.603000 {pid} {src}] {json.dumps(env)}"]
    if payload is not None:
        lines += ["\t" + ln for ln in payload.split("\n")]
    return lines


CODE = """# AOT ID: ['0_forward']
async_compile = AsyncCompile()
def call(args):
    arg0_1, = args
    args.clear()
    buf0 = empty_strided_cpu((4, ), (1, ), torch.float32)
    cpp_fused_a_0(arg0_1, buf0)
    return (buf0, )
"""


def _parse(lines: list[str]) -> list:
    return list(parse_torch_trace(enumerate(lines, 1), "x.log"))


class TestMadeUpLogs:
    def test_interned_strings_resolve_stacks(self):
        lines = (_record({"str": ["/a/model.py", 0]}, None)
                 + _record({"dynamo_start": {"stack": [{"line": 3, "name": "f",
                                                         "filename": 0}]},
                            "frame_id": 0, "frame_compile_id": 0, "attempt": 0}, None))
        recs = _parse(lines)
        start = next(r for r in recs if isinstance(r, CompileEvent) and r.name == "dynamo_start")
        assert start.attrs["metadata"]["stack"] == [{"line": 3, "name": "f",
                                                     "filename": "/a/model.py"}]
        assert start.attrs["compile_id"] == "0/0"
        string = next(r for r in recs if isinstance(r, CompileEvent) and r.category == "string")
        assert (string.name, string.attrs) == ("/a/model.py", {"id": 0})

    def test_md5_mismatch_is_reported_not_fatal(self):
        ctx = {"frame_id": 0, "frame_compile_id": 0, "attempt": 1}
        lines = _record({"inductor_output_code": {"filename": "/t/c.py"}, **ctx}, CODE,
                        md5="0" * 32)
        recs = _parse(lines)
        notes = {r.timeline: r.attrs for r in recs if isinstance(r, TimelineNote)}
        assert notes["wrapper:0_forward"]["payload_md5_mismatch"] is True
        log = notes["log:TORCH_TRACE"]
        assert log["md5_mismatches"] == 1 and log["md5_mismatch_records"][0]["line"] == 1
        assert any("md5" in w for w in log["warnings"])
        timeline = next(r for r in recs if isinstance(r, Timeline) and r.key == "wrapper:0_forward")
        assert timeline.attrs["compile_id"] == "0/0_1"

    def test_unknown_kinds_counted_and_kept_with_payload(self):
        lines = (_record({"brand_new_thing": {"a": 1}, "frame_id": 2, "frame_compile_id": 0},
                         "line one\nline two")
                 + [""]  # a blank stutter line: skipped
                 + _record({"artifact": {"name": "x", "encoding": "string"}}, "big text"))
        recs = _parse(lines)
        new = next(r for r in recs if isinstance(r, CompileEvent) and r.name == "brand_new_thing")
        assert new.attrs["payload"] == "line one\nline two" and new.attrs["unknown_kind"]
        assert new.attrs["metadata"] == {"a": 1} and new.attrs["compile_id"] == "2/0"
        art = next(r for r in recs if isinstance(r, CompileEvent) and r.name == "x")
        assert "payload" not in art.attrs and art.attrs["payload_bytes"] == 8
        note = next(r for r in recs if isinstance(r, TimelineNote)).attrs
        assert note["unknown_kinds"] == {"brand_new_thing": 1}
        assert note["kinds"] == {"brand_new_thing": 1, "artifact": 1}

    def test_foreign_lines_counted(self):
        lines = (["some warning printed by a library"]
                 + _record({"artifact": {"name": "x", "encoding": "string"}}, "t"))
        note = next(r for r in _parse(lines) if isinstance(r, TimelineNote)).attrs
        assert note["foreign_lines"] == 1 and note["foreign_line_numbers"] == [1]

    def test_not_a_trace_is_an_error(self):
        with pytest.raises(IngestError) as e:
            _parse(["hello", "world"])
        assert e.value.line == 2 and "TORCH_TRACE" in e.value.message

    def test_truncated_output_code_is_an_error_naming_the_line(self):
        ctx = {"frame_id": 0, "frame_compile_id": 0, "attempt": 1}
        lines = _record({"inductor_output_code": {}, **ctx}, CODE)[:7]
        with pytest.raises(IngestError) as e:
            _parse(lines)
        assert "truncated" in e.value.message

    def test_detected_from_content(self, tmp_path):
        p = tmp_path / "renamed.txt"
        p.write_text("\n".join(_record({"artifact": {"name": "x", "encoding": "s"}}, "t")))
        assert detect_format(str(p)).name == "torch_trace"
        for log in [p for logs in LOGS.values() for p in logs]:
            assert detect_format(str(log)).name == "torch_trace"


def test_glog_prefix_facts():
    lines = _record({"artifact": {"name": "x", "encoding": "s"}, "rank": 3}, "t", pid=42,
                    src="torch/_inductor/graph.py:2745")
    recs = _parse(lines)
    ev = next(r for r in recs if isinstance(r, CompileEvent))
    assert ev.attrs["source"] == "torch/_inductor/graph.py:2745"
    assert ev.attrs["rank"] == 3 and ev.attrs["time"] == "1123 11:55:10.603000"
    log = next(r for r in recs if isinstance(r, Timeline))
    assert log.name == "TORCH_TRACE [rank 3]" and log.attrs["rank"] == 3
    assert re.match(r"log:", log.key)
