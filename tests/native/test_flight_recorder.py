"""The compiled Flight Recorder readers (native/flight_recorder*.{hpp,cpp}) against their
specification, the Python reader (ingest/flight_recorder.py on ingest/pickle_stream.py
and json.loads).

Both must write the same rows (the same columns, attrs text, stack ids), intern the same
frames and stacks, and leave the same groups and notes, or fail with the same error class
at the same place (the line, or the byte a pickle's message names; the wording may
differ): on every real dump of both forms, cut or with bytes flipped or dropped, on odd
entries built from a real one (values the core leaves to Python among them), and on
random plain values in entries.
"""

from __future__ import annotations

import json
import pickle
import random
from pathlib import Path
from typing import Any

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tlview.ingest import IngestError, native
from tlview.ingest.records import EVENT_KINDS, EventColumns, FrameInterned, StackInterned
from tlview.ingest.source import records_for
from tlview.store import write_records
from tlview.store.convert import EVENT_COLUMNS, event_tuple
from tlview.store.digest import source_digest

from tests.conftest import FIXTURES, needs_native

pytestmark = needs_native("FlightRecorderParser", "flight_recorder_json")

FR = FIXTURES / "flight_recorder"
REAL = sorted([*FR.glob("*/timeout_dump/*"), *FR.glob("*/ondemand_pickle/*"),
               *FR.glob("*/ondemand_json/*"), *FR.glob("gloo_*/pickle/*"),
               *FR.glob("gloo_*/json/*"),
               *(FIXTURES / "fuzz" / "flight_recorder_set_in_sizes").glob("*")])
PICKLE = FR / "skip" / "timeout_dump" / "nccl_trace_rank_0"
JSON = FR / "skip" / "ondemand_json" / "nccl_trace_rank_0.json"
ROW_COLUMNS = [c for c in EVENT_COLUMNS if c not in ("source_id", "timeline_id", "seq")]


def _place(message: str) -> str | None:
    """The "byte N" a pickle's message starts with, or None."""
    return message.split(":", 1)[0] if message.startswith("byte ") else None


def parsed(path: Path, compiled: bool, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, ...]:
    """What the reader yields, as comparable values: every event as its events-table row,
    in order, the interned frames and stacks, the other records with their attrs as JSON
    text; or ("error", class, line, place)."""
    monkeypatch.setenv("TLVIEW_NATIVE", "1" if compiled else "0")
    events: list[tuple[Any, ...]] = []
    interned: list[str] = []
    other: list[Any] = []
    try:
        for r in records_for(path, "flight_recorder"):
            if isinstance(r, EventColumns):
                cols = {k: v.to_pylist() for k, v in r.columns.items()}
                for i in range(r.n):
                    events.append((r.timelines[0],
                                   *(cols[c][i] if c in cols else None for c in ROW_COLUMNS)))
            elif type(r) in EVENT_KINDS:
                events.append((r.timeline, *event_tuple(r)))  # type: ignore[union-attr]
            elif isinstance(r, (FrameInterned, StackInterned)):
                interned.append(json.dumps(attrs.asdict(r), default=str))
            else:
                other.append((type(r).__name__, json.dumps(attrs.asdict(r), default=str)))
    except IngestError as e:
        return ("error", type(e).__name__, e.line, _place(e.message))
    return ("rows", events, sorted(interned), other)


def same(path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, ...]:
    spec = parsed(path, False, monkeypatch)
    assert parsed(path, True, monkeypatch) == spec
    return spec


class TestReal:
    """Every real dump, both forms: the same rows (and through the database, the same
    source digest); a pickle fed a few bytes at a time."""

    def test_every_fixture(self, monkeypatch):
        assert len(REAL) >= 76
        for src in REAL:
            assert same(src, monkeypatch)[0] == "rows", src

    @pytest.mark.parametrize("src", [PICKLE, JSON], ids=lambda p: p.name)
    def test_digest(self, src, dbs, monkeypatch):
        digests = []
        for compiled in (False, True):
            monkeypatch.setenv("TLVIEW_NATIVE", "1" if compiled else "0")
            summary = write_records(dbs[compiled], records_for(src, "flight_recorder"))
            digests.append(source_digest(dbs[compiled], summary.source_id))
        assert digests[0] == digests[1]

    def test_core_reads_the_entries(self):
        """torch's entries are the core's rows, none left to Python (the speed's point)."""
        core = native.module()
        outputs, entries, _ = core.flight_recorder_json(str(JSON), JSON.read_bytes())
        assert entries is not None and {o[0] for o in outputs} == {"batch"}
        reader = core.FlightRecorderParser(str(PICKLE), object, object)
        outputs = reader.feed(PICKLE.read_bytes()) + reader.finish()
        assert {o[0] for o in outputs} == {"frame", "stack", "batch", "top", "counts"}

    @pytest.mark.parametrize("chunk", [1, 61])
    def test_tiny_chunks(self, chunk, monkeypatch):
        spec = parsed(PICKLE, False, monkeypatch)
        monkeypatch.setattr(native, "CHUNK", chunk)
        assert parsed(PICKLE, True, monkeypatch) == spec


class TestMutated:
    """Real dumps cut, with bytes flipped or dropped: the same rows or the same error."""

    @pytest.mark.parametrize("src", [PICKLE, JSON], ids=lambda p: p.name)
    def test_mutations(self, src, tmp_path, monkeypatch):
        data = src.read_bytes()
        rnd = random.Random(src.name)
        cases = [data[:n] for n in sorted(rnd.sample(range(len(data)), 10))]
        for _ in range(12):
            b = bytearray(data)
            b[rnd.randrange(len(b))] = rnd.randrange(256)
            cases.append(bytes(b))
        for _ in range(6):
            i = rnd.randrange(len(data))
            cases.append(data[:i] + data[min(len(data), i + rnd.randrange(1, 40)):])
        for k, case in enumerate(cases):
            p = tmp_path / f"m{k}_{src.name}"
            p.write_bytes(case)
            same(p, monkeypatch)


def _real() -> dict[str, Any]:
    from tlview.ingest.pickle_stream import load_plain

    with open(PICKLE, "rb") as f:
        return load_plain(f, str(PICKLE))  # type: ignore[no-any-return]


# Odd entries, each a real entry changed: what the core reads itself and what it leaves
# to Python (floats in unknown keys, keys that are not text, sets, big ints, ...).
_ODD: dict[str, Any] = {
    "unknown keys": {"new_key": "x", "other": [1, [2, None]], "flag": True, "n": -5},
    "a float in an unknown key": {"ratio": 0.5, "neg_zero": -0.0},
    "old seq_id": {"collective_seq_id": None, "seq_id": 7},
    "old seq_id as text": {"seq_id": " 12 "},
    "ints as text": {"record_id": "42", "pg_id": "-3", "op_id": "x1", "timeout_ms": "1e3"},
    "ints as floats": {"record_id": 4.0, "pg_id": 2.5, "op_id": float("nan")},
    "big ints": {"record_id": 1 << 70, "time_created_ns": -(1 << 64), "duration_ms": 1 << 80},
    "bools where ints go": {"record_id": True, "pg_id": False},
    "zero times": {"time_discovered_started_ns": 0, "time_discovered_completed_ns": "0"},
    "times as text": {"time_discovered_started_ns": "17", "time_created_ns": "99"},
    "int duration": {"duration_ms": 3},
    "half durations": {"duration_ms": 2.5e-6},
    "odd durations": {"duration_ms": float("inf")},
    "bool duration": {"duration_ms": True},
    "text duration": {"duration_ms": "5"},
    "pg a bare name": {"process_group": "pg7"},
    "pg of one": {"process_group": ["only"]},
    "pg empty": {"process_group": []},
    "pg of ints": {"process_group": [3, None, "x"]},
    "pg an int": {"process_group": 5},
    "pg a dict": {"process_group": {"a": 1}},
    "op and state not text": {"profiling_name": 12, "state": False},
    "op a float": {"profiling_name": 1.5},
    "sizes odd": {"input_sizes": [], "output_sizes": "text", "input_dtypes": None,
                  "output_dtypes": [["ü", 1, True]]},
    "sizes with floats": {"input_sizes": [[1.5]]},
    "bools not bools": {"is_p2p": 1, "retired": "True"},
    "unicode": {"profiling_name": "nccl:all_reduce \u00e9\U0001f600", "thread_name": "t\u00fc"},
    "no frames": {"frames": None},
    "empty frames": {"frames": []},
    "missing keys": {"state": None, "record_id": None, "profiling_name": None},
}
_DROP = ("frames", "pg_id", "state", "duration_ms", "process_group", "thread_id")


def _fresh(v: Any) -> Any:
    """A copy of every container in ``v``, tuples too (deepcopy keeps a tuple of text)."""
    if isinstance(v, (list, tuple)):
        return type(v)([_fresh(x) for x in v])
    if isinstance(v, dict):
        return {k: _fresh(x) for k, x in v.items()}
    return v


def _copy(e: dict[str, Any], **change: Any) -> dict[str, Any]:
    """An entry's copy that shares only its frames (a pickler's memo would otherwise point
    into an entry already handed over, which both readers refuse: torch never does)."""
    return {**_fresh({k: v for k, v in e.items() if k != "frames"}), "frames": e["frames"],
            **_fresh(change)}


def _odd_dump(json_form: bool) -> dict[str, Any]:
    top = _real()
    entries = top["entries"]
    out = [_copy(entries[k % len(entries)], **change) for k, change in enumerate(_ODD.values())]
    for k, key in enumerate(_DROP):
        e = _copy(entries[k % len(entries)])
        del e[key]
        out.append(e)
    out.append(["not", "a", "dict"])
    out.append(_copy(entries[0]))
    if json_form:
        for e in out:
            if isinstance(e, dict):
                e.pop("frames", None)
        out.append(_copy(entries[1]))  # frames in JSON
    top["entries"] = out
    return top


class TestOdd:
    """Odd entries in both forms: the core's rows and Python's rows interleave in order."""

    @pytest.mark.parametrize("protocol", [2, 4])
    def test_pickle(self, protocol, tmp_path, monkeypatch):
        top = _odd_dump(False)
        top["entries"] = [e for e in top["entries"] if not isinstance(e, list)]  # bad last
        p = tmp_path / "rank_3"
        p.write_bytes(pickle.dumps(top, protocol=protocol))
        spec = same(p, monkeypatch)
        assert spec[0] == "rows"
        assert sum(e[1] == "collective_recorded" for e in spec[1]) == len(top["entries"])

    def test_pickle_keys_not_text(self, tmp_path, monkeypatch):
        top = _real()
        e = top["entries"]
        top["entries"] = [{**_copy(e[0]), 5: "five", ("a", 1): {2}},
                          {**_copy(e[1]), "s": {1, 2}, "b": b"\xff"}, _copy(e[2])]
        p = tmp_path / "rank_1"
        p.write_bytes(pickle.dumps(top, protocol=4))
        assert same(p, monkeypatch)[0] == "rows"

    def test_not_a_dict_entry(self, tmp_path, monkeypatch):
        top = _odd_dump(False)
        p = tmp_path / "rank_2"
        p.write_bytes(pickle.dumps(top, protocol=4))
        assert same(p, monkeypatch)[0] == "error"
        p.write_text(json.dumps(_odd_dump(True)))
        assert same(p, monkeypatch)[0] == "error"

    def test_json(self, tmp_path, monkeypatch):
        top = _odd_dump(True)
        top["entries"] = [e for e in top["entries"] if not isinstance(e, list)]
        text = json.dumps(top, sort_keys=True, allow_nan=True)
        cases = {
            "odd": text,
            "repeated key": text.replace('"is_p2p": false', '"is_p2p": false, "is_p2p": true',
                                         1),
            "repeated unknown key": text.replace('"thread_name"', '"thread_name": 1, '
                                                 '"thread_name"', 1),
            "repeated entries": text.replace('{"comm_lib_version"', '{"entries": [1, 2], '
                                             '"comm_lib_version"', 1),
            "repeated top key": text.replace('{"comm_lib_version"', '{"version": "9.1", '
                                             '"comm_lib_version"', 1),
            "lone surrogate": text.replace('"python3"', '"py\\ud800"', 1),
            "lone surrogate in a key": text.replace('"thread_name"', '"\\udc00"', 1),
            "lone surrogate outside the entries": text.replace(
                '"comm_lib_version": "', '"comm_lib_version": "\\ud800', 1),
            "escapes": text.replace('"python3"', '"py\\u00e9\\n\\"3"', 1),
            "escaped key": text.replace('"state"', '"st\\u0061te"', 1),
            "an int beyond 64 bits": text.replace('"record_id": ', '"record_id": 1' + "0" * 25
                                                  + ', "big": -' + "9" * 30 + ', "x": ', 1),
            "an int of 5000 digits": text.replace('"record_id": ', '"record_id": ' + "1" * 5000
                                                  + ', "x": ', 1),
            "deep": text.replace('"python3"', "[" * 600 + "]" * 600, 1),
            "BOM": "\ufeff" + text,
            "not an object": "[1]",
            "entries not a list": '{"version": "2.10", "entries": {}}',
            "no entries": '{"version": "2.10", "pg_config": {}}',
            "empty entries": '{"version": "2.10", "entries": []}',
            "entries of scalars": '{"version": "2.10", "entries": [1, "x", null]}',
            "bad JSON": text[:-40],
            "trailing data": text + " 1",
            "short": "{}",
            "whitespace": " \n\t" + text + "\r\n ",
        }
        for k, (name, case) in enumerate(cases.items()):
            p = tmp_path / f"rank_{k}.json"
            p.write_bytes(case.encode("utf-8", "surrogatepass"))
            assert same(p, monkeypatch), name
        p.write_bytes(text.encode().replace(b"python3", b"py\xed\xa0\x80"))  # a UTF-8 surrogate
        same(p, monkeypatch)
        p.write_bytes(text.encode().replace(b"python3", b"py\xff"))  # not UTF-8
        assert same(p, monkeypatch)[0] == "error"
        p.write_text(cases["an int of 5000 digits"])  # json's digits limit: one clear line
        assert same(p, monkeypatch)[0] == "error"

    def test_hostile_opcodes(self, tmp_path, monkeypatch):
        import os

        class Evil:
            def __reduce__(self):
                return (os.system, ("true",))

        top = _real()
        top["entries"] = [top["entries"][0], Evil()]
        cases = [pickle.dumps(top, protocol=p) for p in (2, 4)]
        cases.append(b"\x80\x04}\x94(\x8c\x07version\x94\x8c\x01x\x8c\x07entries\x94]\x94"
                     b"cos\nsystem\n.")
        for k, case in enumerate(cases):
            p = tmp_path / f"h{k}"
            p.write_bytes(case)
            assert same(p, monkeypatch)[0] == "error"


plain = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-2 ** 70, max_value=2 ** 70)
    | st.floats(allow_nan=True) | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner,
                                                                max_size=3),
    max_leaves=6)
_KEYS = ("record_id", "collective_seq_id", "duration_ms", "process_group", "input_sizes",
         "state", "time_discovered_started_ns", "is_p2p", "thread_id", "new")


@settings(max_examples=15, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(values=st.lists(st.tuples(st.sampled_from(_KEYS), plain), min_size=1, max_size=4))
def test_random_values_in_entries(values, tmp_path, monkeypatch):
    """Random plain values under an entry's keys, in both forms: the same rows."""
    top = _real()
    entries = top["entries"][:3]
    top["entries"] = [_copy(entries[k % 3], **{key: v}) for k, (key, v) in enumerate(values)]
    p = tmp_path / "rank_0"
    p.write_bytes(pickle.dumps(top, protocol=4))
    same(p, monkeypatch)
    for e in top["entries"]:
        e.pop("frames", None)
    p = tmp_path / "rank_0.json"
    p.write_text(json.dumps(top, allow_nan=True))
    same(p, monkeypatch)


def test_shared_frames_in_unknown_keys(tmp_path, monkeypatch):
    """A frames list and a frame shared by two entries' unknown keys: the second entry's
    attrs hold the ids they were interned under (the memo keeps stand-ins), both ways."""
    from tlview.ingest.records import CollectiveRecorded

    top = _real()
    e = top["entries"]
    shared = [{"filename": "/a.py", "line": 1, "name": "f"},
              {"filename": "/b.py", "line": 2, "name": "g"}]
    first, second = _copy(e[0]), _copy(e[1])
    first["extra_frames"] = second["extra_frames"] = shared
    second["one_frame"] = shared[0]
    top["entries"] = [first, second]
    p = tmp_path / "rank_0"
    p.write_bytes(pickle.dumps(top, protocol=4))
    assert same(p, monkeypatch)[0] == "rows"
    for mode in ("0", "1"):
        monkeypatch.setenv("TLVIEW_NATIVE", mode)
        recs = list(records_for(p, "flight_recorder"))
        frame = {r.filename: r.frame_id for r in recs if isinstance(r, FrameInterned)}
        stack = {r.frame_ids: r.stack_id for r in recs if isinstance(r, StackInterned)}
        rows = [r for r in recs if isinstance(r, CollectiveRecorded)]
        assert rows[0].attrs["extra_frames"] == shared
        assert rows[1].attrs["extra_frames"] == stack[(frame["/a.py"], frame["/b.py"])]
        assert rows[1].attrs["one_frame"] == frame["/a.py"]
