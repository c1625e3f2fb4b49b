"""The profiler-trace ingester and the measured views, on the real GPU fixtures.

Every figure is checked against tests/reference_profile.py (json.load with
Decimal timestamps and plain interval arithmetic), never the ingester's code.
"""

from __future__ import annotations

import gzip
import json
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tlview.ingest import IngestError, chrome_trace, detect_format
from tlview.ingest.kineto import measured_records, parse_trace
from tlview.store import open_database

from tests import reference_profile as ref
from tests.conftest import FIXTURES, ingest_into, ingest_together

PROFILE = FIXTURES / "profile"
SINGLE = PROFILE / "single" / "compiled_step.pt.trace.json.gz"
RANKS = [PROFILE / "coll" / f"rank{r}" / f"rank{r}.pt.trace.json.gz" for r in (0, 1)]
JAX = PROFILE / "jax" / "vm.trace.json.gz"


@pytest.fixture(scope="module")
def coll_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("coll") / "coll.duckdb"
    ingest_together(path, *RANKS)
    return path


@pytest.fixture(scope="module")
def single_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("single") / "single.duckdb"
    ingest_into(path, SINGLE)
    return path


class TestStreamingReader:
    """The reader yields exactly the events json.load sees, whatever the chunk size."""

    @pytest.mark.parametrize("path", [SINGLE, JAX, RANKS[0]], ids=lambda p: p.name)
    def test_events_equal_json_load_across_tiny_chunks(self, path, monkeypatch):
        monkeypatch.setattr(chrome_trace, "CHUNK", 97)  # a boundary inside most tokens
        items = list(chrome_trace.read_trace(str(path)))
        with gzip.open(path, "rt") as f:
            whole = json.load(f)
        assert [v for k, v, _ in items if k == "traceEvents"] == whole["traceEvents"]
        # each event's raw text is exactly that event
        assert [json.loads(raw) for k, _, raw in items if k == "traceEvents"] == \
            whole["traceEvents"]
        meta = {k: v for k, v, _ in items if k != "traceEvents"}
        assert meta == {k: v for k, v in whole.items() if k != "traceEvents"}

    def test_bare_array_trace(self, tmp_path):
        p = tmp_path / "bare.json"
        p.write_text('[{"ph": "X", "name": "a", "ts": 1.5, "dur": 2}]\n')
        assert list(chrome_trace.read_trace(str(p))) == [
            ("traceEvents", {"ph": "X", "name": "a", "ts": 1.5, "dur": 2},
             '{"ph": "X", "name": "a", "ts": 1.5, "dur": 2}')]

    @pytest.mark.parametrize("text, expect", [
        ("1", 1000), ("4449116405799.195", 4449116405799195), ("0.5", 500),
        ("-1.25", -1250), ("17.393999999999998", 17394), ("1e3", 1000000),
    ])
    def test_microseconds_to_exact_nanoseconds(self, text, expect):
        assert chrome_trace.us_to_ns(text) == expect
        value = json.loads(text)
        assert chrome_trace.exact_ns(value, "ts", None) == expect

    @given(st.integers(min_value=-(2**43) * 1000 + 1, max_value=2**43 * 1000 - 1))
    @settings(max_examples=3000, deadline=None)
    def test_every_three_decimal_timestamp_below_2_43_us_is_exact(self, ns):
        sign = "-" if ns < 0 else ""
        text = f"{sign}{abs(ns) // 1000}.{abs(ns) % 1000:03d}"
        assert chrome_trace.exact_ns(float(text), "ts", None) == ns

    def test_timestamps_beyond_float_precision_come_from_the_text(self):
        # 9e12 us (104 days): a double cannot hold every ns step there
        raw = '{"ph": "X", "ts": 9007199254740.993, "dur": 1.001}'
        ev = json.loads(raw)
        assert chrome_trace.exact_ns(ev["ts"], "ts", raw) == 9007199254740993
        assert chrome_trace.exact_ns(ev["dur"], "dur", raw) == 1001


class TestBadInput:
    """A broken trace is an IngestError naming file and line; nothing is written."""

    def _truncated(self, tmp_path: Path) -> Path:
        with gzip.open(SINGLE, "rt") as f:
            text = f.read()
        p = tmp_path / "cut.json"
        p.write_text(text[: len(text) // 2])
        return p

    def test_truncated_trace_names_its_line(self, tmp_path):
        p = self._truncated(tmp_path)
        with pytest.raises(IngestError) as e:
            list(parse_trace(str(p)))
        assert e.value.path == str(p)
        assert e.value.line == p.read_text().count("\n") + 1
        assert "truncated" in e.value.message or "ends" in e.value.message

    def test_garbage_between_events(self, tmp_path):
        p = tmp_path / "bad.json"
        p.write_text('{"traceEvents": [\n{"ph": "X", "name": "a", "ts": 1, "dur": 1},\n'
                     '{"ph": "X", "name": "b" "ts": 2}\n]}\n')
        with pytest.raises(IngestError) as e:
            list(parse_trace(str(p)))
        assert e.value.line == 3

    def test_nothing_written_on_error(self, tmp_path):
        p = self._truncated(tmp_path)
        db_path = tmp_path / "t.duckdb"
        with pytest.raises(IngestError):
            ingest_into(db_path, p, fmt="kineto")
        with open_database(db_path, read_only=True) as db:
            assert db.query("counts") == [(0, 0, 0)]


class TestKinetoRecords:
    def test_detects_kineto_and_jax(self):
        assert detect_format(str(SINGLE)).name == "kineto"
        assert detect_format(str(RANKS[1])).name == "kineto"
        assert detect_format(str(JAX)).name == "jax_trace"

    def test_categories_match_the_trace(self):
        trace = ref.load(SINGLE)
        expect: Counter[str] = Counter()
        names = {"kernel": "kernel", "gpu_memcpy": "memcpy", "gpu_memset": "memset",
                 "cuda_runtime": "runtime", "cuda_driver": "runtime",
                 "user_annotation": "annotation", "gpu_user_annotation": "gpu_annotation"}
        for e in trace["traceEvents"]:
            if e.get("ph") == "X" and e.get("cat") == "cpu_op":
                expect["comm_call" if e["name"] == "record_param_comms" else "cpu_op"] += 1
            elif e.get("ph") == "X" and e.get("cat") in names:
                expect[names[e["cat"]]] += 1
            elif e.get("ph") == "i" and e.get("name") == "[memory]":
                expect["memory"] += 1
        got = Counter(r.category for r in measured_records(str(SINGLE)))
        assert got == expect
        assert got["kernel"] == 303 and got["memory"] == 672

    def test_kernel_fields_exact(self):
        trace = ref.load(RANKS[0])
        first = min(ref.gpu_events(trace), key=lambda e: ref.ns(e["ts"]))
        recs = measured_records(str(RANKS[0]))
        got = next(r for r in recs if r.correlation == first["args"]["correlation"]
                   and r.category in ("kernel", "comm"))
        assert (got.name, got.ts_ns, got.dur_ns) == (
            first["name"], ref.ns(first["ts"]), ref.ns(first["dur"]))
        assert got.category == "comm" and got.device == "cuda:0" and got.stream == 17
        assert first["args"]["dtype"] == "BFloat16"
        assert got.bytes == first["args"]["Out msg nelems"] * 2 == 4096 * 4096 * 2
        assert got.attrs["args"]["grid"] == [24, 1, 1]
        assert {k: v for k, v in got.attrs["args"].items() if type(v) is not float} == \
            {k: v for k, v in first["args"].items() if type(v) is int or type(v) is str
             or type(v) is list}

    def test_distributed_info_on_the_timeline(self, coll_db):
        with open_database(coll_db, read_only=True) as db:
            rows = db.sql("SELECT name, json_extract(attrs, '$.rank'), "
                          "json_extract(attrs, '$.world_size'), "
                          "json_extract_string(attrs, '$.distributedInfo.backend') "
                          "FROM timelines ORDER BY timeline_id").fetchall()
        assert [r[1:] for r in rows] == [("0", "2", "nccl"), ("1", "2", "nccl")]
        assert rows[0][0] == "rank0 rank0.pt.trace.json.gz"

    def test_jax_kernels_by_device_process(self, tmp_path):
        trace = ref.load(JAX)
        gpu_pids = {e["pid"] for e in trace["traceEvents"] if e.get("ph") == "M"
                    and e.get("name") == "process_name"
                    and e["args"]["name"].startswith("/device:GPU")}
        expect = sum(1 for e in trace["traceEvents"]
                     if e.get("ph") == "X" and e.get("pid") in gpu_pids)
        recs = [r for r in measured_records(str(JAX), fmt="jax_trace")
                if r.device == "cuda:0"]
        assert len(recs) == expect == 33


class TestOverlap:
    """comm_overlap_summary equals docs/profiles.md's definition computed independently."""

    def test_summary_per_rank(self, coll_db):
        with open_database(coll_db, read_only=True) as db:
            rows = db.sql("SELECT rank, device, comm_ns, overlapped_ns, exposed_ns, overlap_pct "
                          "FROM comm_overlap_summary ORDER BY rank").fetchall()
        assert len(rows) == 2
        for rank, row in enumerate(rows):
            comm_ns, overlapped_ns = ref.overlap(ref.load(RANKS[rank]))
            assert row[:5] == (rank, f"cuda:{rank}", comm_ns, overlapped_ns,
                               comm_ns - overlapped_ns)
            assert float(row[5]) == round(100 * overlapped_ns / comm_ns, 2)
        # the figures docs/profiles.md quotes
        assert [float(r[5]) for r in rows] == [30.78, 22.88]

    def test_per_collective_kernel(self, coll_db):
        trace = ref.load(RANKS[1])
        kernels = [e for e in ref.gpu_events(trace) if e["cat"] == "kernel"]
        comp = ref.union([ref.interval(e) for e in kernels if not ref.is_comm(e["name"])])
        expect = sorted(
            (ref.interval(e)[0], ref.ns(e["dur"]), ref.intersection([ref.interval(e)], comp))
            for e in kernels if ref.is_comm(e["name"]))
        with open_database(coll_db, read_only=True) as db:
            got = db.sql("SELECT ts_ns, dur_ns, overlapped_ns, exposed_ns, op FROM comm_overlap "
                         "WHERE rank = 1 ORDER BY ts_ns").fetchall()
        assert [g[:3] for g in got] == expect
        assert all(g[3] == g[1] - g[2] for g in got)
        assert {g[4] for g in got} == {"allgather_into_tensor_coalesced",
                                       "reduce_scatter_tensor_coalesced"}


class TestBusyAndKernels:
    def test_gpu_busy_per_stream_and_device(self, single_db):
        events = ref.gpu_events(ref.load(SINGLE))
        by_stream: dict[int, list[tuple[int, int]]] = {}
        for e in events:
            by_stream.setdefault(e["args"]["stream"], []).append(ref.interval(e))
        everything = [i for v in by_stream.values() for i in v]
        expect = {s: (ref.measure(ref.union(v)), max(i[1] for i in v) - min(i[0] for i in v))
                  for s, v in by_stream.items()}
        expect[None] = (ref.measure(ref.union(everything)),
                        max(i[1] for i in everything) - min(i[0] for i in everything))
        with open_database(single_db, read_only=True) as db:
            got = {r[0]: (r[1], r[2]) for r in db.sql(
                "SELECT stream, busy_ns, span_ns FROM gpu_busy").fetchall()}
        assert got == expect

    def test_kernels_measured_stats(self, single_db):
        durs: dict[str, list[int]] = {}
        for e in ref.gpu_events(ref.load(SINGLE)):
            durs.setdefault(e["name"], []).append(ref.ns(e["dur"]))
        with open_database(single_db, read_only=True) as db:
            rows = db.sql("SELECT name, launches, total_ns, p50_ns, p99_ns, max_ns "
                          "FROM kernels_measured").fetchall()
        assert len(rows) == len(durs)
        for name, launches, total, p50, p99, mx in rows:
            d = durs[name]
            assert (launches, total, p50, p99, mx) == (
                len(d), sum(d), ref.nearest_rank(d, 0.5), ref.nearest_rank(d, 0.99), max(d))

    def test_step_totals(self, single_db):
        trace = ref.load(SINGLE)
        runtime = {e["args"]["correlation"]: ref.ns(e["ts"]) for e in trace["traceEvents"]
                   if e.get("cat") in ("cuda_runtime", "cuda_driver")}
        steps = sorted((ref.ns(e["ts"]), ref.ns(e["ts"]) + ref.ns(e["dur"]), e["name"])
                       for e in trace["traceEvents"]
                       if e.get("cat") == "user_annotation"
                       and e["name"].startswith("ProfilerStep#"))
        expect = []
        for s, end, name in steps:
            mine = [e for e in ref.gpu_events(trace)
                    if s <= runtime.get(e["args"]["correlation"], -1) < end]
            expect.append((int(name.split("#")[1]), len(mine),
                           sum(ref.ns(e["dur"]) for e in mine if e["cat"] == "kernel")))
        with open_database(single_db, read_only=True) as db:
            got = db.sql("SELECT step, n_gpu_events, kernel_ns + comm_ns FROM step_totals "
                         "ORDER BY step").fetchall()
        assert got == expect
        assert [g[1] for g in got] == [103, 103, 103]

    def test_measured_peak_memory(self, single_db):
        mem = [e for e in ref.load(SINGLE)["traceEvents"] if e.get("name") == "[memory]"
               and e["args"]["Device Type"] == 1]
        with open_database(single_db, read_only=True) as db:
            peak = db.sql("SELECT peak_allocated FROM measured_peak_memory "
                          "WHERE device = 'cuda:0'").fetchone()[0]
        assert peak == max(e["args"]["Total Allocated"] for e in mem)


def test_folder_ingest_finds_every_trace(tmp_path):
    from tlview.ingest.discover import discover

    found = discover(PROFILE)
    fmts = Counter(f for _, f in found)
    assert fmts["kineto"] == 3 and fmts["jax_trace"] == 1


def test_kineto_sniffed_when_a_long_header_hides_trace_events(tmp_path):
    groups = [{"pg_name": str(i), "ranks": list(range(64))} for i in range(400)]
    p = tmp_path / "big_header.json"
    p.write_text(json.dumps({"schemaVersion": 1, "distributedInfo": {"rank": 3, "pg_config": groups},
                             "traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "pid": 0,
                                              "tid": 7, "ts": 1.5, "dur": 2.25,
                                              "args": {"device": 0, "stream": 7}}]}))
    assert '"traceEvents"' not in chrome_trace_head(p)
    assert detect_format(str(p)).name == "kineto"
    [rec] = measured_records(str(p))
    assert (rec.ts_ns, rec.dur_ns, rec.device, rec.stream) == (1500, 2250, "cuda:0", 7)


def chrome_trace_head(path: Path) -> str:
    from tlview.ingest.format_spec import read_head

    return read_head(str(path))
