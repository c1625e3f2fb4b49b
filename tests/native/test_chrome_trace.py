"""The compiled ingest core against its specification, the Python parsers.

Both must write the same rows (the events digest) or fail with an IngestError at the same
line: on every fixture (ingest/test_events_digest runs in both modes), on real traces mutated as
crashed jobs mutate them, on hand-written bad events, on random JSON values in events, and
whatever the chunk boundaries.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tlview.ingest import IngestError, native
from tlview.ingest.source import records_for
from tlview.store import Database, write_records
from tlview.store.digest import source_digest

from tests.conftest import FIXTURES, needs_native
from tests.fuzzing import MUTATIONS, mutate

pytestmark = needs_native()

TRACES = [FIXTURES / "profile/single/compiled_step.pt.trace.json.gz",
          FIXTURES / "profile/coll/rank0/rank0.pt.trace.json.gz",
          FIXTURES / "profile/jax/vm.trace.json.gz"]


def outcome(path: Path, fmt: str | None, db: Database, compiled: bool,
            monkeypatch: pytest.MonkeyPatch) -> tuple[Any, ...]:
    """("rows", digest) of an ingest into ``db``, or ("error", class, line) where it fails:
    the twins agree on the error's class and place, not on its wording."""
    monkeypatch.setenv("TLVIEW_NATIVE", "1" if compiled else "0")
    try:
        summary = write_records(db, records_for(path, fmt))
        return ("rows", source_digest(db, summary.source_id))
    except IngestError as e:
        return ("error", type(e).__name__, e.line)


def both(path: Path, fmt: str, dbs: dict[bool, Database], monkeypatch: pytest.MonkeyPatch):
    spec = outcome(path, fmt, dbs[False], False, monkeypatch)
    fast = outcome(path, fmt, dbs[True], True, monkeypatch)
    return spec, fast


def same(spec: tuple[Any, ...], fast: tuple[Any, ...]) -> None:
    assert fast == spec


class TestMutatedTraces:
    """Real traces cut, flipped, with lines dropped, repeated, swapped or garbage added:
    the same rows, or an error at the same line (messages of JSON syntax errors may
    differ in wording)."""

    @pytest.mark.parametrize("kind", MUTATIONS)
    @pytest.mark.parametrize("src", TRACES, ids=lambda p: p.parent.name)
    def test_mutation(self, src, kind, tmp_path, dbs, monkeypatch):
        import gzip

        data = gzip.decompress(src.read_bytes())
        rnd = random.Random(f"{src.name}-{kind}")
        for case in range(2):  # bench.fuzz runs the long campaign
            p = tmp_path / f"m{case}.json"
            p.write_bytes(mutate(data, kind, rnd))
            spec, fast = both(p, "kineto", dbs, monkeypatch)
            same(spec, fast)


BAD_EVENTS = [
    '{"ph": "X", "name": "k", "pid": 0, "tid": 1, "dur": 1}',                 # no ts
    '{"ph": "X", "name": "k", "ts": "12", "dur": 1}',                         # ts a string
    '{"ph": "X", "name": "k", "ts": true, "dur": 1}',                         # ts a bool
    '{"ph": "X", "name": "k", "ts": 1, "dur": [1]}',                          # dur a list
    '{"ph": "X", "name": "k", "ts": NaN, "dur": 1}',                          # not finite
    '{"ph": "X", "name": "k", "ts": 1e300, "dur": 1}',                        # out of range
    '{"ph": "X", "name": "k", "ts": 92233720368547758, "dur": 1}',            # int overflow
    '{"ph": "X", "name": 7, "ts": 1, "dur": 1}',                              # name an int
    '{"ph": "X", "ts": 1, "dur": 1}',                                         # no name
    '{"ph": "X", "cat": 5, "name": "k", "ts": 1}',                            # cat an int
    '{"ph": "X", "name": "k", "ts": 1, "args": [1]}',                         # args a list
    '{"ph": "X", "name": "k", "pid": [0], "ts": 1}',                          # pid a list
    '{"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "args": {"device": {}}}',
    '{"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "args": {"stream": 99999999999999999999}}',
    '{"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "args": {"correlation": "99999999999999999999"}}',
    '{"ph": "X", "cat": "kernel", "name": "ncclDevKernel_x", "ts": 1, '
    '"args": {"dtype": "Double", "In msg nelems": 9223372036854775807}}',     # bytes overflow
    '{"ph": "X", "name": "k\\ud800", "ts": 1}',                               # lone surrogate
    '{"ph": "X", "name": "k", "ts": 1, "args": {"x\\udc00": 1}}',             # ... in a key
    '{"ph": ["X"], "name": "k", "ts": 1}',                                    # ph a list
    '{"ph": "i", "name": "[memory]", "ts": 1, "args": {"Device Type": 1, "Device Id": [0]}}',
    '{"ph": "M", "name": "process_name", "pid": 3, "args": 5}',               # args an int
    '[1, 2]',                                                                 # not an object
    '{"ph": "X", "name": "k", "ts": 1, "dur": 2, "x": 0123}',                 # bad number
    '{"ph": "X", "name": "k", "ts": 1, "dur": 2, "x": "a\tb"}',               # control char
    '{"ph": "X", "name": "k", "ts": 1, "dur": 2, "x": "\\q"}',                 # bad escape
    '{"ph": "X", "name": "k", "ts": 1, "dur": 2, "x": 1' + '0' * 4400 + '}',  # int > 4300 digits
]


class TestBadEvents:
    """Each bad event, on line 3 of a trace: the same error class and line."""

    @pytest.mark.parametrize("event", BAD_EVENTS, ids=range(len(BAD_EVENTS)))
    def test_same_error(self, event, tmp_path, dbs, monkeypatch):
        p = tmp_path / "t.json"
        p.write_text('{"traceEvents": [\n{"ph": "X", "name": "a", "ts": 1, "dur": 1},\n'
                     + event + "\n]}\n")
        spec, fast = both(p, "kineto", dbs, monkeypatch)
        assert spec[0] == "error" and spec[2] == 3, spec
        same(spec, fast)


JSON_SCALARS = (st.none() | st.booleans() | st.integers(-(2**70), 2**70)
                | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=12))
JSON_VALUES = st.recursive(
    JSON_SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner,
                                                                 max_size=4),
    max_leaves=12)


def write_text_of(value: Any, rnd: random.Random) -> str:
    """JSON text of a value, written in varied ways (spacing, escapes, repeated keys)."""
    if isinstance(value, dict):
        items = [f"{write_text_of(k, rnd)}{' ' * rnd.randint(0, 2)}:"
                 f"{write_text_of(v, rnd)}" for k, v in value.items()]
        if items and rnd.random() < 0.3:  # a repeated key: json keeps the last value
            k = next(iter(value))
            items.insert(0, f"{write_text_of(k, rnd)}: 12345")
        return "{" + ("," + " " * rnd.randint(0, 1)).join(items) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(write_text_of(v, rnd) for v in value) + "]"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=rnd.random() < 0.5)
    if isinstance(value, float) and rnd.random() < 0.3 and value == value and abs(value) < 1e300:
        return f"{value:.20e}"  # another spelling of (nearly) the same number
    return json.dumps(value)


class TestEventValues:
    """Any JSON in an event's args and extra keys gives the same attrs text, columns
    and errors in both parsers."""

    @given(args=st.dictionaries(st.text(max_size=8), JSON_VALUES, max_size=5),
           extra=JSON_VALUES, seed=st.integers(0, 2**16), ts=st.floats(-1e16, 1e16))
    # 20 here (two databases each); `python -m bench.fuzz` runs the long campaign
    @settings(max_examples=20, deadline=None,
              suppress_health_check=[HealthCheck.function_scoped_fixture])
    def test_same_rows(self, args, extra, seed, ts, tmp_path_factory, dbs, monkeypatch):
        tmp = tmp_path_factory.mktemp("ev")
        rnd = random.Random(seed)
        cat = rnd.choice(['"kernel"', '"cpu_op"', '"gpu_memcpy"', "null", '"Trace"',
                          '"cuda_runtime"', '"x"'])
        ev = (f'{{"ph": "X", "cat": {cat}, "name": "nccl_k", "pid": 0, "tid": 3, '
              f'"ts": {write_text_of(ts, rnd)}, "dur": 1.5, '
              f'"extra": {write_text_of(extra, rnd)}, "args": {write_text_of(args, rnd)}}}')
        p = tmp / "t.json"
        p.write_text('{"traceEvents": [\n' + ev + "\n]}\n", encoding="utf-8",
                     errors="surrogatepass")
        spec, fast = both(p, "kineto", dbs, monkeypatch)
        same(spec, fast)


class TestChunks:
    """Chunk boundaries inside every token change nothing."""

    @pytest.mark.parametrize("src", TRACES, ids=lambda p: p.parent.name)
    def test_tiny_chunks(self, src, dbs, monkeypatch):
        spec = outcome(src, None, dbs[False], True, monkeypatch)
        monkeypatch.setattr(native, "CHUNK", 97)
        small = outcome(src, None, dbs[True], True, monkeypatch)
        assert small == spec and small[0] == "rows"


def test_core_is_built():
    """The compiled core imports and is the one these sources build (its ABI). Where it
    is required (TLVIEW_REQUIRE_NATIVE=1: scripts/test.sh, CI) this fails on a core that
    did not build, instead of every compiled-core test skipping; elsewhere the module's
    tests skip without one."""
    try:
        from tlview.ingest import _native  # type: ignore[attr-defined]
    except ImportError as e:
        pytest.fail(f"the compiled ingest core is not built or fails to import: {e}")
    assert getattr(_native, "ABI", None) == native.ABI, \
        "the compiled ingest core is out of date (rebuild: pip install -e .)"


class TestNestingDepth:
    """Arrays and objects within one another: Python's json refused them only at the
    interpreter's recursion limit (between about 900 and 1000 levels, by the caller's
    stack) and the compiled reader past 901, so the two disagreed between. Both refuse
    the level past MAX_DEPTH, as IngestError at the value's first line: in an event, in a
    top-level value, before a syntax error further in; brackets in strings are text."""

    @staticmethod
    def trace_with(src: Path, tmp_path: Path, text: str, key: str | None) -> tuple[Path, int]:
        """``src`` (a real trace) with ``text`` as the first event, or as the top-level
        value of ``key``, on lines of its own; the file and that value's first line."""
        import gzip

        data = gzip.decompress(src.read_bytes()).decode()
        at = data.index('"traceEvents"')
        if key is None:
            at = data.index("[", at) + 1
            insert = f"\n{text},\n"
        else:
            insert = f'"{key}":\n{text},\n'
        p = tmp_path / "deep.json"
        p.write_text(data[:at] + insert + data[at:])
        return p, data.count("\n", 0, at) + 2

    @staticmethod
    def nested(levels: int, inner: str = "") -> str:
        return "[" * levels + inner + "]" * levels

    def event(self, levels: int, inner: str = "") -> str:
        """An instant event whose args nest ``levels`` deep in all (the event counts)."""
        return ('{"ph": "i", "name": "deep", "ts": 1, "pid": 0, "tid": 0, "s": "t", '
                '"args": {"x": ' + self.nested(levels - 2, inner) + "}}")

    def test_the_bound_is_one(self):
        from tlview.ingest.chrome_trace import MAX_DEPTH

        assert native.module().JSON_MAX_DEPTH == MAX_DEPTH == 512

    # the JAX trace is small: a trace that is read whole is read quickly; the Kineto one
    # where the ingest stops
    @pytest.mark.parametrize("src, key, over", [
        (TRACES[2], None, 0), (TRACES[2], None, 1), (TRACES[2], "deepValue", 0),
        (TRACES[2], "deepValue", 1), (TRACES[0], None, 1), (TRACES[0], "deepValue", 1)],
        ids=["jax-event-at-the-bound", "jax-event-past-it", "jax-top-level-at-the-bound",
             "jax-top-level-past-it", "kineto-event-past-it", "kineto-top-level-past-it"])
    def test_bound(self, src, key, over, tmp_path, dbs, monkeypatch):
        from tlview.ingest.chrome_trace import MAX_DEPTH

        levels = MAX_DEPTH + over
        text = self.event(levels) if key is None else self.nested(levels)
        p, line = self.trace_with(src, tmp_path, text, key)
        spec, fast = both(p, "kineto", dbs, monkeypatch)
        if over:
            assert spec == ("error", "IngestError", line)
        else:
            assert spec[0] == "rows"
        same(spec, fast)

    # What the event's innermost list holds, and what both readers make of it.
    FIRST = {
        "deep-then-bad": (1, '"]"] x', "nested too deeply"),  # the depth is met first
        "bad-then-deep": (0, "1 x" + "[" * 400, "Expecting ',' delimiter"),  # at level 512
        "brackets-in-a-string": (0, '"' + "[" * 600 + '"', None),  # past it only in text
    }

    @pytest.mark.parametrize("case", sorted(FIRST))
    def test_what_comes_first(self, case, tmp_path, dbs, monkeypatch):
        from tlview.ingest.chrome_trace import MAX_DEPTH

        over, inner, error = self.FIRST[case]
        text = self.event(MAX_DEPTH + over, inner)
        p, line = self.trace_with(TRACES[2], tmp_path, text, None)
        spec, fast = both(p, "kineto", dbs, monkeypatch)
        if error is None:
            assert spec[0] == "rows"
        else:
            assert spec == ("error", "IngestError", line)
            assert error in _message(p, monkeypatch)
        same(spec, fast)


def _message(path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """The Python parser's IngestError text for ``path``."""
    monkeypatch.setenv("TLVIEW_NATIVE", "0")
    with pytest.raises(IngestError) as e:
        for _ in records_for(path, "kineto"):
            pass
    return str(e.value)
