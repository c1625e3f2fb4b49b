"""The compiled torch-log core against its specification, the Python parsers.

``TorchLogUndress`` (native/torch_log.cpp) must give exactly the LogLines of
``torch_log.undress``, and so the same records, or the same error (class, file, line):
on every torch-log fixture, on hand-written prefixes at the edges of the patterns
(Unicode digits and spaces included), on logs mutated as crashed jobs and copy-pastes
mutate them, and whatever the chunk boundaries. ``EventSink`` (native/event_sink.cpp)
must write exactly the writer's rows of the records it takes. (tests/ingest/test_events_digest.py
pins the rows of every fixture in both modes.)
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
from tlview.ingest import native, torch_log
from tlview.ingest.lines import read_chunks, read_lines
from tlview.ingest.source import records_for
from tlview.ingest.torch_log import LogLine, undress, undress_native

from tests.conftest import FIXTURES, SEED_004, needs_native
from tests.fuzzing import MUTATIONS, mutate

pytestmark = needs_native()

TORCH = FIXTURES / "torch"
LOGS = sorted(TORCH.glob("*.log")) + sorted(TORCH.glob("*/*.output_code.py")) + [SEED_004]


def ids(p: Path) -> str:
    return p.relative_to(FIXTURES).as_posix()


def compiled_lines(lines: list[str], chunk: int) -> list[LogLine]:
    """The compiled undress fed ``chunk`` lines at a time."""
    chunks = [lines[i:i + chunk] for i in range(0, len(lines), chunk)]
    return list(undress_native(native.module(), chunks))


def same_lines(got: list[LogLine], want: list[LogLine]) -> None:
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert type(g) is LogLine
        assert g == w, (g, w)
        assert [type(x) for x in g] == [type(x) for x in w], (g, w)


def outcome(path: Path, compiled: bool, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, ...]:
    """("records", [...]) of parsing ``path``, or ("error", class, file, line): the twins
    agree on the error's class and place, not on its wording."""
    monkeypatch.setenv("TLVIEW_NATIVE", "1" if compiled else "0")
    try:
        return ("records", list(records_for(path, "torch_log")))
    except Exception as e:  # noqa: BLE001 - any failure must be the same failure
        return ("error", type(e).__name__, getattr(e, "path", None), getattr(e, "line", None))


def same_outcome(path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, ...]:
    spec = outcome(path, False, monkeypatch)
    fast = outcome(path, True, monkeypatch)
    assert fast == spec
    return spec


class TestFixtures:
    """Every torch log and output_code.py of the fixtures: the same lines, the same records."""

    @pytest.mark.parametrize("src", LOGS, ids=ids)
    def test_same_lines(self, src):
        want = list(undress(read_lines(src)))
        got = list(undress_native(native.module(), read_chunks(src)))
        same_lines(got, want)

    @pytest.mark.parametrize("src", LOGS, ids=ids)
    def test_same_records(self, src, monkeypatch):
        kind, *rest = same_outcome(src, monkeypatch)
        assert kind == "records" and len(rest[0]) > 3

    @pytest.mark.parametrize("chunk", [1, 2, 7, 1000])
    def test_any_chunking(self, chunk):
        """Record state (key, dress, traceback) carries across feed() calls."""
        lines = [t for _, t in read_lines(TORCH / "conv_net.log")]
        lines += [t for _, t in read_lines(TORCH / "mlp_train.short.log")]
        same_lines(compiled_lines(lines, chunk), list(undress(enumerate(lines, 1))))


P = "V1121 23:39:08.467000 597 torch/_inductor/graph.py:2045]"
EDGE_LINES = [
    f"[rank0]:{P} [0/0] [__output_code] text",
    f"[rank12]:{P} [0/0] [__output_code] text",
    f"[rank]:{P} [0/0] text",
    f"[rank0]{P} text",
    "V1121 23:39:08.467000  597 a:b:12] x",
    "V1121 23:39:08.467000 597 a.py:12]",
    "V1121 23:39:08.467000 597 a.py:12]  two spaces",
    "V1121 23:39:08.467000 597 a.py:1x] t",
    "V1121 23:39:08.467000 597 :12] t",
    "V1121 23:39:08.467000 597 a.py:] t",
    "V1121 23:39:08.467000 597 a.py:12 ] t",
    "V1121 23:39:08.467000 597 a.py:12] [__output_code] t",
    "V1121 23:39:08.467000 597 a.py:12] [0/0] [__] t",
    "V1121 23:39:08.467000 597 a.py:12] [0/0] [__a-b] t",
    "V1121 23:39:08.467000 597 a.py:12] [] [__aot_graphs] t",
    "V1121 23:39:08.467000 597 a.py:12] [0 0] t",
    "V1121 23:39:08. 597 a.py:12] t",
    "V112 23:39:08.467000 597 a.py:12] t",
    "X1121 23:39:08.467000 597 a.py:12] t",
    "V1121 23:39:08.467000 12345678901234567890123 a.py:12] t",
    "[rank99999999999999999999]:V1121 23:39:08.467000 597 a.py:12] t",
    "V1122 23:39:08.467000 597 a.py:12] same record, another date",
    "I1121 23:39:08.467000 597 a.py:12] another level",
    "INFO:torch._inductor.__output_code:text",
    "INFO::x",
    "INFO:a b:c",
    "WARNING:x.y:",
    "DEBUG:torch.__a.b:t",
    "CRITICAL:torch._dynamo.__graph:t",
    "ERRORS:x:y",
    "  continuation of a short record",
    "/x/y.py:12: UserWarning: hi",
    "  warn_once(",
    "  ",
    "x:12: Warning: ",
    " /x.py:1: UserWarning: leading space",
    "a:1: FooError: x",
    "a:1:  UserWarning: x",
    "a:b:1: my_Warning: x",
    "a:1: Warn-Warning: x",
    ":1: UserWarning: x",
    "ab:1: UserWarning:x",
    "Traceback (most recent call last):",
    '  File "x.py", line 1, in <module>',
    "",
    "\tx",
    "ValueError: boom",
    "after the traceback",
    "\x1c",
    "\x1c\x1d x",
    "Traceback (most recent call last):",
    "\x1f",
    "RuntimeError: x",
    # Lines that start with the last glog line's whole prefix (both optional groups):
    # the compiled undress takes them as of its record without matching again.
    f"{P} [0/0] [__output_code] a",
    f"{P} [0/0] [__output_code] [__more] b",
    f"{P} [0/0] [__output_code]",
    f"{P} [0/0] [__output_code]x",
    f"{P} [0/0] [__output_code]  two spaces",
    f"{P} [0/0] [__output_code]\u00e9",
    f"{P} [0/0] [__output_code]] c",
    f"{P} [0/0] d",
    f"{P} [0/0] [__output_code] e",
    f"{P} [0/0] [__output_codes] f",
    f"[rank1]:{P} [0/0] [__output_code] g",
    f"{P} [1/0] [__output_code] h",
    # Non-ASCII lines: the patterns' Unicode classes (the Python regexes decide).
    "V1121 23:39:08.467000 \u0663\u0669\u0667 a.py:12] Arabic-Indic pid",
    "V1121 23:39:08.467000\u00a0597 a.py:12] no-break space",
    "V1121 23:39:08.467000 597 a\u00a0b.py:12] t",
    "V1121 23:39:08.467000 597 \u00e9.py:12] t",
    "V1121 23:39:08.467000 597 \u00e9.py:12] same record as above",
    f"{P} [0/0] [__output_code] caf\u00e9",
    f"{P} [0/0] [__output_code] ascii again, same record",
    f"{P} [0/0] [__output_\u00e9] t",
    f"{P} [0/\u00e9] t",
    "INFO:t\u00f4rch.__x:text",
    "INFO:torch.__\u00e9:text",
    "/x/\u00e9.py:12: UserWarning: x",
    "/x/y.py:\u0661\u0662: UserWarning: x",
    "  \u00e9",
    "\u00a0\u00a0",
    "\u2028",
    "Traceback (most recent call last):",
    "\u00a0caf\u00e9",
    "\u3000",
    "KeyError: '\u00e9'",
    "caf\u00e9 bare text",
]


class TestEdges:
    """Hand-written lines at the edges of the glog, short, warning and traceback patterns."""

    @pytest.mark.parametrize("chunk", [1, 3, 1000])
    def test_edge_lines(self, chunk):
        same_lines(compiled_lines(EDGE_LINES, chunk), list(undress(enumerate(EDGE_LINES, 1))))

    @pytest.mark.parametrize("seed", range(30))
    def test_shuffled_edges(self, seed):
        """The same lines in random orders and repeats (record and traceback state)."""
        rnd = random.Random(seed)
        lines = [rnd.choice(EDGE_LINES) for _ in range(60)]
        same_lines(compiled_lines(lines, rnd.randint(1, 9)), list(undress(enumerate(lines, 1))))


def _log_mutations(data: bytes, kind: str, rnd: random.Random) -> bytes:
    """What happens to torch logs besides generic damage: prefixes lost or changed,
    warnings and tracebacks interleaved, CRLF line ends, non-ASCII text."""
    lines = data.split(b"\n")
    i = rnd.randrange(len(lines))
    if kind == "strip_prefix":
        j = lines[i].find(b"] ")
        lines[i] = lines[i][j + 2:] if j >= 0 else lines[i]
    elif kind == "interleave":
        lines[i:i] = rnd.choice([
            [b"/x/y.py:12: UserWarning: careful", b"  warnings.warn(msg)"],
            [b"Traceback (most recent call last):", b'  File "a.py", line 3, in f',
             b"    g()", b"ValueError: no"],
            [b"plain text from print()"]])
    elif kind == "crlf":
        return b"\r\n".join(lines)
    elif kind == "unicode":
        line = lines[i]
        k = rnd.randrange(len(line) + 1)
        lines[i] = line[:k] + rnd.choice(["\u00e9", "\u0663", "\u00a0", "\u2028"]).encode() \
            + line[k:]
    elif kind == "pid":
        lines[i] = lines[i].replace(b" 3685 ", b" 3686 ", 1)
    return b"\n".join(lines)


LOG_MUTATIONS = ("strip_prefix", "interleave", "crlf", "unicode", "pid")
MUTATED = [TORCH / "mlp_train.log", TORCH / "mlp_train.short.log",
           TORCH / "inplace_mutation.log", TORCH / "mlp_dynamic" / "0_forward.output_code.py"]


class TestMutated:
    """Real logs cut, flipped, with lines dropped, repeated, swapped, garbage, interleaved
    warnings, lost prefixes, Unicode: the same records, or the same error."""

    @pytest.mark.parametrize("kind", MUTATIONS + LOG_MUTATIONS)
    @pytest.mark.parametrize("src", MUTATED, ids=ids)
    def test_mutation(self, src, kind, tmp_path, monkeypatch):
        data = src.read_bytes()
        rnd = random.Random(f"{src.name}-{kind}")
        outcomes = set()
        for case in range(3):
            p = tmp_path / f"m{case}{src.suffix}"
            if kind in LOG_MUTATIONS:
                p.write_bytes(_log_mutations(data, kind, rnd))
            else:
                p.write_bytes(mutate(data, kind, rnd))
            outcomes.add(same_outcome(p, monkeypatch)[0])
        assert outcomes <= {"records", "error"}


def test_python_when_disabled(tmp_path, monkeypatch):
    """TLVIEW_NATIVE=0 parses without the compiled core; 1 uses it."""
    calls = []
    real = torch_log.undress_native

    def spy(*a: Any, **kw: Any) -> Any:
        calls.append(1)
        return real(*a, **kw)

    monkeypatch.setattr(torch_log, "undress_native", spy)
    src = TORCH / "inplace_mutation.log"
    monkeypatch.setenv("TLVIEW_NATIVE", "0")
    python = list(records_for(src, "torch_log"))
    assert calls == []
    monkeypatch.setenv("TLVIEW_NATIVE", "1")
    assert list(records_for(src, "torch_log")) == python
    assert calls == [1]


# -- the event sink (native/event_sink.cpp) ---------------------------------------------

def event_rows(out: list[Any]) -> list[tuple[Any, ...]]:
    """The events-table rows (less source and seq; the timeline by key) of records and
    EventColumns, as the writer makes them: attrs JSON text, lists for reads/writes."""
    from tlview.ingest.records import EVENT_KINDS, EventColumns
    from tlview.store.convert import EVENT_COLUMNS, event_tuple

    names = EVENT_COLUMNS[3:]
    rows: list[tuple[Any, ...]] = []
    for r in out:
        if isinstance(r, EventColumns):
            cols = {k: v.to_pylist() for k, v in r.columns.items()}
            tl = cols.pop("_tl", None)
            assert set(cols) <= set(names)
            rows += [(r.timelines[tl[i] if tl else 0],
                      *(cols[c][i] if c in cols else None for c in names))
                     for i in range(r.n)]
        elif type(r) in EVENT_KINDS:
            rows.append((r.timeline,
                         *(list(v) if isinstance(v, tuple) else v for v in event_tuple(r))))
    return rows


@pytest.mark.parametrize("src", [p for p in LOGS if p.suffix == ".log"] + [SEED_004] +
                         sorted((FIXTURES / "torch_trace").glob("*/*trace*.log.gz")), ids=ids)
def test_columnar_where_the_writer_reads(src, monkeypatch):
    """Where the writer reads (columns_accepted) a torch log or TORCH_TRACE log parses to
    EventColumns holding exactly the events records_for yields elsewhere, in order; the
    other records (timelines, notes) are the same too."""
    from tlview.ingest.records import EVENT_KINDS, EventColumns, columns_accepted

    monkeypatch.setenv("TLVIEW_NATIVE", "1")
    plain = list(records_for(src))
    assert not any(isinstance(r, EventColumns) for r in plain)
    with columns_accepted():
        cols = list(records_for(src))
    assert any(isinstance(r, EventColumns) for r in cols)
    assert not any(type(r) in EVENT_KINDS and type(r).__name__ != "CompileEvent"
                   for r in cols)
    assert event_rows(cols) == event_rows(plain)
    assert [r for r in cols if type(r) not in EVENT_KINDS and not isinstance(r, EventColumns)] \
        == [r for r in plain if type(r) not in EVENT_KINDS]


class TestEventSink:
    """EventSink.add against the writer's row functions (store/convert.py) on values the
    parsers rarely make: non-ASCII text, floats, nested attrs; values JSON or the row
    cannot take as the writer does (a Decimal, a huge int, a non-str key) are refused,
    leaving the sink as it was."""

    def records(self) -> list[Any]:
        from tlview.ingest.records import (
            BufferAliased,
            BufferAllocated,
            BufferFreed,
            CompileEvent,
            NodeScheduled,
        )

        return [
            NodeScheduled("t", 0, "n\u00e9", reads=("a", "b\U0001f600"), writes=(), line=3,
                          attrs={"x": [1, 2.5, None, True], "y": {"z": "q\"\\\n\x01\x7f"}}),
            NodeScheduled("u", 1, "m"),
            BufferAllocated("t", None, "buf0", None, is_input=True,
                            attrs={"f": [float("nan"), float("inf"), -0.0, 1e16, 1.5e-7, 0.1]}),
            BufferAllocated("t", 2, "buf1", 4096, node="k", layout="view", dtype="f32",
                            shape="[2]", stride="[1]", device="cpu", size_expr="s0",
                            allocation=7, offset=-1, line=9),
            BufferFreed("u", 3, "buf1", reason="del", attrs={"t": (1, "x")}),
            BufferAliased("t", 4, "b2", "b1", "alias", attrs={"line": 2 ** 63 - 1}),
            CompileEvent("t", "metrics", name="m", step=None, ts_ns=-5, dur_ns=0, line=1,
                         attrs={"k": {"a": [{"b": []}]}}),
        ]

    def refused(self) -> list[Any]:
        from decimal import Decimal

        from tlview.ingest.records import BufferFreed, CompileEvent, Timeline

        return [
            CompileEvent("t", "metrics", attrs={"d": Decimal("1.5")}),
            CompileEvent("t", "metrics", attrs={"i": 2 ** 64}),
            BufferFreed("t", 2 ** 70, "b"),
            CompileEvent("t", "metrics", attrs={1: "int key"}),
            BufferFreed("t", 1, "b\ud800"),
            Timeline("t", "t", "x"),
        ]

    def test_rows(self):
        from tlview.ingest.event_sink import SINK_CLASSES
        from tlview.ingest.native import arrow_columns
        from tlview.ingest.records import EventColumns

        recs = self.records()
        sink = native.module().EventSink(SINK_CLASSES)
        for r in recs:
            assert sink.add(r) is True
        for r in self.refused():
            assert sink.add(r) is False
        assert sink.rows() == len(recs)
        tls, batch = sink.take()
        assert tls == ("t", "u") and sink.take() is None and sink.rows() == 0
        got = EventColumns(tls, *arrow_columns(batch))
        assert event_rows([got]) == event_rows(recs)


# -- TORCH_TRACE logs (native trace_groups) ----------------------------------------------

TRACE_LOGS = sorted((FIXTURES / "torch_trace").glob("*/*trace*.log.gz"))


def trace_outcome(path: Path, compiled: bool, monkeypatch: pytest.MonkeyPatch,
                  chunk: int | None = None) -> tuple[Any, ...]:
    """("records", [...]) of a TORCH_TRACE log, or ("error", ...); ``chunk``: feed the
    compiled grouping that many lines at a time."""
    from tlview.ingest import torch_trace

    monkeypatch.setenv("TLVIEW_NATIVE", "1" if compiled else "0")
    try:
        if chunk is None:
            return ("records", list(records_for(path, "torch_trace")))
        lines = [t for _, t in read_lines(path)]
        chunks = [lines[i:i + chunk] for i in range(0, len(lines), chunk)]
        parser = torch_trace.TraceParser(str(path))
        return ("records", list(parser.parse_groups(
            torch_trace.trace_groups(native.module(), chunks))))
    except Exception as e:  # noqa: BLE001
        return ("error", type(e).__name__, getattr(e, "line", None))


def same_trace(path: Path, monkeypatch: pytest.MonkeyPatch, chunk: int | None = None
               ) -> tuple[Any, ...]:
    spec = trace_outcome(path, False, monkeypatch)
    fast = trace_outcome(path, True, monkeypatch, chunk)
    assert fast[0] == spec[0]
    if spec[0] == "records":
        if chunk is None:
            assert fast[1][0] == spec[1][0]  # the Source
        assert fast[1][-(len(spec[1]) - 1):] == spec[1][1:]
        assert len(fast[1]) == len(spec[1]) - (chunk is not None)
    else:
        assert fast == spec
    return spec


def _trace_lines_mutation(data: bytes, kind: str, rnd: random.Random) -> bytes:
    lines = data.split(b"\n")
    i = rnd.randrange(len(lines))
    if kind == "blank_in_payload":
        lines.insert(i, b"")
    elif kind == "stray_payload":
        lines.insert(0, b"\tstray")
    elif kind == "payload_edit":
        tabbed = [k for k, ln in enumerate(lines) if ln.startswith(b"\t")]
        k = rnd.choice(tabbed)
        lines[k] = lines[k] + rnd.choice([b"x", b" \xc3\xa9", b"("])
    elif kind == "cut_payload":
        tabbed = [k for k, ln in enumerate(lines) if ln.startswith(b"\t")]
        del lines[rnd.choice(tabbed):]
    return b"\n".join(lines)


TRACE_MUTATIONS = ("blank_in_payload", "stray_payload", "payload_edit", "cut_payload")


class TestTorchTrace:
    """TORCH_TRACE logs: record lines and payload runs grouped by the compiled core give
    the records of the line-by-line parser, whatever the chunks, on the fixtures and on
    mutated logs (md5 mismatches, kept payloads cut at their cap, stray lines)."""

    @pytest.mark.parametrize("src", TRACE_LOGS, ids=ids)
    def test_same_records(self, src, monkeypatch):
        kind, records = same_trace(src, monkeypatch)
        assert kind == "records" and len(records) > 100

    @pytest.mark.parametrize("chunk", [1, 2, 7, 1000])
    def test_any_chunking(self, chunk, monkeypatch):
        same_trace(FIXTURES / "torch_trace" / "cpu_step" / "trace.log.gz", monkeypatch, chunk)

    @pytest.mark.parametrize("kind", MUTATIONS + TRACE_MUTATIONS)
    def test_mutation(self, kind, tmp_path, monkeypatch):
        import gzip

        src = FIXTURES / "torch_trace" / "cpu_step" / "trace.log.gz"
        data = gzip.decompress(src.read_bytes())
        rnd = random.Random(f"trace-{kind}")
        for case in range(3):
            p = tmp_path / f"m{case}.log"
            if kind in TRACE_MUTATIONS:
                p.write_bytes(_trace_lines_mutation(data, kind, rnd))
            else:
                p.write_bytes(mutate(data, kind, rnd))
            same_trace(p, monkeypatch)

    def test_kept_payload_cap(self, tmp_path, monkeypatch):
        """A record of unknown kind keeps its payload up to 64 KiB, line by line."""
        import hashlib
        import json

        lines = [f"line {i} " + "x" * (i % 97) for i in range(3000)]
        md5 = hashlib.md5("\n".join(lines).encode()).hexdigest()
        env = json.dumps({"no_such_kind": {}, "frame_id": 0, "frame_compile_id": 0,
                          "has_payload": md5})
        text = f"V1123 11:55:10.603000 25154 torch/x.py:1] {env}\n" + \
            "".join(f"\t{ln}\n" for ln in lines)
        p = tmp_path / "t.log"
        p.write_text(text)
        for chunk in (None, 1, 5, 1000):
            kind, records = same_trace(p, monkeypatch, chunk)
        ev = [r for r in records if getattr(r, "category", None) == "envelope"]
        assert ev[0].attrs["payload_truncated"] is True
        kept = ev[0].attrs["payload"]
        assert 60_000 < len(kept) <= 64 * 1024 and "\n".join(lines).startswith(kept)
