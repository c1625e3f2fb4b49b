"""The compiled snapshot reader (native/cuda_snapshot.cpp) against its specification, the
Python reader (ingest/pickle_stream.py, ingest/cuda_snapshot.py).

Both must write the same rows, intern the same frames and stacks under the same ids, and
leave the same notes (the source digest covers all of it), or fail with the same error
class at the same place (the byte the message names; its wording may differ):
on every real snapshot, cut or with bytes flipped, dropped or repeated, on hand-built odd
and hostile layouts, on random plain values in entries, and whatever the chunk size.
"""

from __future__ import annotations

import json
import math
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
from tlview.store import Database, write_records
from tlview.store.convert import EVENT_COLUMNS, event_tuple
from tlview.store.digest import source_digest

from tests.conftest import FIXTURES, needs_native

pytestmark = needs_native("SnapshotParser")

REAL = sorted((FIXTURES / "snapshot").glob("*.pickle*")) + \
    sorted((FIXTURES / "diff").glob("*.pickle*"))
A = 1 << 32
ROW_COLUMNS = [c for c in EVENT_COLUMNS if c not in ("source_id", "timeline_id", "seq")]


def _place(message: str) -> str | None:
    """Where a pickle's error is: the "byte N" its message starts with (a pickle has no
    lines), or None."""
    return message.split(":", 1)[0] if message.startswith("byte ") else None


def outcome(path: Path, db: Database, compiled: bool, monkeypatch: pytest.MonkeyPatch
            ) -> tuple[Any, ...]:
    """("rows", digest) of an ingest into ``db``, or ("error", class, line, place) where it
    fails."""
    monkeypatch.setenv("TLVIEW_NATIVE", "1" if compiled else "0")
    try:
        summary = write_records(db, records_for(path, "cuda_snapshot"))
        return ("rows", source_digest(db, summary.source_id))
    except IngestError as e:
        return ("error", type(e).__name__, e.line, _place(e.message))


def parsed(path: Path, compiled: bool, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, ...]:
    """What the reader yields, as comparable values (no database: fast): every event as
    its events-table row, the interned frames and stacks by id, the timelines and notes
    with their attrs as JSON text; or ("error", class, line, place)."""
    monkeypatch.setenv("TLVIEW_NATIVE", "1" if compiled else "0")
    events: list[tuple[Any, ...]] = []
    interned: list[Any] = []
    other: list[Any] = []
    try:
        for r in records_for(path, "cuda_snapshot"):
            if isinstance(r, EventColumns):
                cols = {k: v.to_pylist() for k, v in r.columns.items()}
                tl = cols.get("_tl")
                for i in range(r.n):
                    row = tuple(cols[c][i] if c in cols else None for c in ROW_COLUMNS)
                    events.append((r.timelines[tl[i] if tl else 0], *row))
            elif type(r) in EVENT_KINDS:
                events.append((r.timeline, *event_tuple(r)))  # type: ignore[union-attr]
            elif isinstance(r, (FrameInterned, StackInterned)):
                interned.append(r)
            else:
                other.append((type(r).__name__, json.dumps(attrs.asdict(r), sort_keys=True,
                                                           default=str)))
    except IngestError as e:
        return ("error", type(e).__name__, e.line, _place(e.message))
    interned.sort(key=lambda r: (type(r).__name__, getattr(r, "frame_id", 0),
                                 getattr(r, "stack_id", 0)))
    return ("rows", events, [json.dumps(attrs.asdict(r), default=str) for r in interned], other)


def same(path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, ...]:
    spec = parsed(path, False, monkeypatch)
    fast = parsed(path, True, monkeypatch)
    assert fast == spec
    return spec


def write(tmp_path: Path, data: Any, protocol: int = 4, name: str = "s.pickle") -> Path:
    p = tmp_path / name
    p.write_bytes(data if isinstance(data, bytes) else pickle.dumps(data, protocol=protocol))
    return p


def frames(*names: str) -> list[dict[str, Any]]:
    return [{"filename": f"/src/{n}.py", "line": i + 1, "name": n} for i, n in enumerate(names)]


def entry(action: str, addr: int, size: int, t: int, **kw: Any) -> dict[str, Any]:
    return {"action": action, "addr": addr, "size": size, "stream": 0, "time_us": t,
            "frames": frames("train", "step"), **kw}


def snapshot(trace: list[Any], blocks: list[Any], **top: Any) -> dict[str, Any]:
    return {
        "segments": [{"device": 0, "address": A, "total_size": 2 << 20, "stream": 0,
                      "segment_type": "small", "segment_pool_id": (0, 0),
                      "is_expandable": False, "frames": [], "blocks": blocks}],
        "device_traces": [trace], "allocator_settings": {}, "external_annotations": [], **top,
    }


OOM = FIXTURES / "snapshot" / "oom.pickle.gz"


@pytest.fixture(scope="module")
def oom_spec(dbs: dict[bool, Database]) -> tuple[Any, ...]:
    """The Python reader's outcome on oom.pickle.gz, read once for every chunk size."""
    with pytest.MonkeyPatch.context() as mp:
        spec = outcome(OOM, dbs[False], False, mp)
    assert spec[0] == "rows"
    return spec


class TestReal:
    """The real snapshots give the same rows, also fed a few bytes at a time. (That both
    readers write every real snapshot's pinned rows is ingest/test_events_digest's check:
    it ingests each of them, REAL among them, with both and compares the digests.)"""

    def test_every_real_snapshot_is_pinned(self):
        """What makes the events digest test the check of both readers on REAL."""
        golden = json.loads((FIXTURES / "events_digests.json").read_text())
        assert REAL
        for p in REAL:
            assert golden[p.relative_to(FIXTURES).as_posix()]["format"] == "cuda_snapshot"

    @pytest.mark.parametrize("chunk", [1, 7, 4096])
    def test_tiny_chunks(self, chunk, oom_spec, dbs, monkeypatch):
        monkeypatch.setattr(native, "CHUNK", chunk)
        assert outcome(OOM, dbs[True], True, monkeypatch) == oom_spec


class TestMutated:
    """Real snapshots cut, with bytes flipped, dropped or repeated: the same rows or the
    same error, word for word."""

    @pytest.mark.parametrize("src", [FIXTURES / "snapshot" / "frag_oom.pickle",
                                     FIXTURES / "diff" / "leak0.pickle.gz"],
                             ids=lambda p: p.name)
    def test_mutations(self, src, tmp_path, monkeypatch):
        import gzip

        data = src.read_bytes()
        if data[:2] == b"\x1f\x8b":
            data = gzip.decompress(data)
        rnd = random.Random(src.name)
        cases = [data[:n] for n in sorted(rnd.sample(range(len(data)), 12))]
        for _ in range(14):
            b = bytearray(data)
            i = rnd.randrange(len(b))
            b[i] = rnd.randrange(256)
            cases.append(bytes(b))
        for _ in range(8):
            i = rnd.randrange(len(data))
            j = min(len(data), i + rnd.randrange(1, 40))
            cases.append(data[:i] + data[j:])
            cases.append(data[:j] + data[i:j] + data[j:])
        for k, case in enumerate(cases):
            same(write(tmp_path, case, name=f"m{k}.pickle"), tmp_path, monkeypatch)


# Frame dicts and frames lists shared between entries, as torch writes them: the entries
# the compiled reader reads in one go (fast_entry), and the shapes next to it that it
# leaves to the opcode machine (a list of 1,001 or 1,200 frames, a frame-like entry,
# values it cannot hold in a column, attrs that change from one entry to the next).
_F = frames("train", "step", "inner")
_PAIR = [_F[0], _F[1]]


def _shared(action: str, addr: Any, t: int, fr: Any, **kw: Any) -> dict[str, Any]:
    return {**entry(action, addr, 1000, t, frames=fr), "compile_context": "N/A",
            "user_metadata": "", **kw}


class TestLayouts:
    """Hand-built layouts, odd and hostile: the same rows or the same error."""

    CASES: dict[str, Any] = {
        "plain": snapshot([entry("alloc", A, 1000, 1), entry("free_completed", A, 1000, 2)], []),
        "unknown keys, odd values": snapshot(
            [entry("alloc", A, 1000, 1, pool_id=(0, 0), extra={"x": [1.5, None, True]},
                   blob=b"\x00\xff", tags={3, 1, 2}, big=2 ** 70, nan=math.nan,
                   inf=-math.inf, text="é\ud800\U0001f600\n\"", small=1e-7, huge=1e22)],
            [{"address": A, "size": 1024, "requested_size": 1000,
              "state": "active_allocated", "frames": frames("train", "step"),
              "new_block_key": "kept"}], new_top_key=[7]),
        "non-text keys": snapshot([{**entry("alloc", A, 512, 1), 5: "five", (1, 2): "t",
                                    None: 0, 1.5: "f", True: "b"}], []),
        "inconsistent": snapshot([entry("alloc", A, 512, 1), entry("alloc", A, 512, 2),
                                  entry("free_completed", A, 256, 3),
                                  entry("free_completed", A + 4096, 512, 4),
                                  entry("free_completed", A + 4096, 512, 5),
                                  entry("alloc", A + 8192, 512, 0)],
                                 [{"address": A, "size": 512, "requested_size": 512,
                                   "state": "active_allocated", "frames": []}]),
        "segments in the trace": snapshot(
            [entry("segment_alloc", A + (4 << 20), 20 << 20, 1),
             entry("alloc", A + (4 << 20), (19 << 20) + 300, 2),
             entry("alloc", A + (24 << 20), 10, 3),
             entry("segment_map", A + (64 << 20), 2 << 20, 4),
             entry("free_completed", A + (4 << 20), (19 << 20) + 300, 5),
             entry("segment_free", A + (4 << 20), 20 << 20, 6),
             {"action": "oom", "device_free": 123, "size": 1 << 30, "stream": 0,
              "time_us": 7},
             {"action": "snapshot", "addr": 0, "size": 0, "stream": 0, "time_us": 8}], []),
        "not a dict at the top": [1, 2, 3],
        "no device_traces": {"segments": [], "other": 1},
        "device_traces a dict": {"segments": [], "device_traces": {"x": [entry("alloc", A, 1, 1)]}},
        "device_traces item not a list": {"segments": [], "device_traces": [5]},
        "entry not a dict": snapshot([entry("alloc", A, 1, 1), [1, 2]], []),
        "entry without action": snapshot([{"addr": A, "size": 3, 7: 1},
                                          entry("alloc", A, 1, 1)], []),
        "frames not a list": snapshot([entry("alloc", A, 1, 1, frames=5),
                                       entry("alloc", A + 512, 1, 2)], []),
        "frame not a dict": snapshot([entry("alloc", A, 1, 1, frames=["x"]),
                                      entry("alloc", A + 512, 1, 2)], []),
        "frame with fx fields": snapshot([entry("alloc", A, 1, 1, frames=[
            {"filename": "f.py", "line": 3, "name": "g", "fx_node_op": "call_function",
             "fx_original_trace": "x = y"}, {"filename": 7, "line": "x", "name": None}])], []),
        "segment without size": {"segments": [{"address": A}, {"address": A}],
                                 "device_traces": []},
        "block without state": snapshot([], [{"address": A, "size": 512}, {"size": 3}]),
        "bad device": {"segments": [{"device": "gpu", "address": A, "total_size": 1,
                                     "blocks": []}, {"address": 1, "total_size": 1}],
                       "device_traces": []},
        "negative device": {"segments": [{"device": -1, "address": A, "total_size": 1},
                                         {"address": 1, "total_size": 1}],
                            "device_traces": []},
        "history layout": {
            "segments": [{"device": 0, "address": A, "total_size": 2 << 20, "stream": 0,
                          "blocks": [{"size": 1024, "state": "active_allocated",
                                      "history": [{"addr": A, "real_size": 1000,
                                                   "frames": frames("old")}]},
                                     {"size": (2 << 20) - 1024, "state": "inactive"}]},
                         {"device": 0, "address": A * 2, "total_size": 1024,
                          "blocks": [{"size": 1024, "state": "inactive", "history": 3}]}],
            "device_traces": [[{"action": "alloc", "addr": A, "size": 1000, "stream": 0,
                                "frames": frames("old")}]]},
        "times out of range": snapshot([entry("alloc", A, 1, 2 ** 62),
                                        entry("alloc", A + 512, 1, -5),
                                        entry("alloc", A + 1024, 2 ** 63 - 1, 3),
                                        entry("alloc", A - 10, -4, 2 ** 64)], []),
        "several devices and annotations": {
            "segments": [{"device": 1, "address": A, "total_size": 2 << 20, "blocks": []}],
            "device_traces": [[entry("alloc", A, 512, 1)], [], [entry("alloc", A, 512, 1),
                                                                entry("alloc", A + 512, 512, 2)]],
            "external_annotations": [{"device": 2, "time_us": 5, "name": "step",
                                      "stage": "START"}, {"device": 0, "time_us": 9}],
            "allocator_settings": {"expandable_segments": True}},
        "settings not a dict": {"segments": [], "device_traces": [], "allocator_settings": []},
        "shared frames": snapshot(
            [_shared("alloc", A, 1, _F), _shared("alloc", A + 1024, 2, _PAIR),
             _shared("free_requested", A, 3, _PAIR), _shared("free_completed", A, 4, _PAIR),
             _shared("alloc", A + 4096, 5, [_F[2]], compile_context="x"),
             _shared("alloc", A + 8192, 6, []), _shared("alloc", A + 9216, 7, _F * 400),
             _shared("alloc", A + 12288, 8, _F * 333 + [_F[1], _F[1]]),
             {**_shared("alloc", A + 16384, 9, _F), "filename": "f.py", "line": 1, "name": "n"},
             _shared("alloc", "A", 10, _F), _shared("alloc", A + 20480, 11, _F, size=2 ** 70),
             _shared("alloc", A + 24576, 12, _F, user_metadata=None),
             _shared("alloc", A + 28672, 13, _F, user_metadata=1.5),
             _shared("alloc", A + 32768, 14, _F, user_metadata=1.5),
             _shared("alloc", A + 36864, 15, _F, user_metadata=-0.0),
             _shared("alloc", A + 40960, 16, _F, user_metadata=b"x"),
             _shared("alloc", A + 45056, 17, _F, user_metadata=b"x"),
             _shared("alloc", A + 49152, 18, _F, user_metadata="\ud800"),
             _shared("segment_alloc", A + (4 << 20), 19, _F), _shared("oom", 0, 20, []),
             {"action": "alloc", "addr": A + 53248, "size": 8, "frames": _F, "k": _PAIR},
             _shared("alloc", A + 57344, 21, _F, extra=(1, 2)),
             _shared("free_completed", A + 1024, 22, _F, stream=None)], []),
    }

    @pytest.mark.parametrize("protocol", [2, 4, 5])
    @pytest.mark.parametrize("name", list(CASES))
    def test_case(self, name, protocol, tmp_path, monkeypatch):
        data = self.CASES[name]
        if protocol == 2 and "unknown keys" in name:
            return  # protocol 2 pickles bytes and sets by calling code: refused by both
        same(write(tmp_path, data, protocol), tmp_path, monkeypatch)

    def test_hostile_opcodes(self, tmp_path, monkeypatch):
        import os

        class Evil:
            def __reduce__(self):
                return (os.system, ("true",))

        cases = [pickle.dumps({"segments": [Evil()]}, protocol=p) for p in (2, 4)]
        cases += [b"\x80\x04}\x94(\x8c\x08segments\x94]\x94cos\nsystem\n.",
                  b"\x80\x04}\x94(\x8c\x08segments\x94]\x94I1\n.",
                  b"\x80\x04}\x94(\x8c\x08segments\x94]\x94h\x09.",
                  b"\x80\x01}.", b"\x80\x04\xff.", b"\x80\x04]\x94(]\x94e\x8c\x01a\x93.",
                  b"\x80\x04}\x94(]\x94]\x94s."]
        for k, case in enumerate(cases):
            assert same(write(tmp_path, case, name=f"h{k}.pickle"), tmp_path,
                        monkeypatch)[0] == "error"


plain = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-2 ** 80, max_value=2 ** 80)
    | st.floats(allow_nan=True) | st.text(max_size=8) | st.binary(max_size=6),
    lambda inner: st.lists(inner, max_size=3) | st.tuples(inner, inner)
    | st.dictionaries(st.text(max_size=4) | st.integers(-3, 3), inner, max_size=3)
    | st.frozensets(st.integers(-3, 3) | st.text(max_size=2), max_size=3),
    max_leaves=8)


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(values=st.lists(plain, min_size=1, max_size=3))
def test_random_values_in_entries(values, tmp_path, monkeypatch):
    """Random plain values as an entry's unknown keys, as its addr/size/time, as a
    segment's extra keys: the same attrs text, the same columns."""
    trace = [entry("alloc", A + 512 * i, 512, i, **{f"k{i}": v}) for i, v in enumerate(values)]
    trace.append({"action": "free_completed", "addr": values[0], "size": values[-1],
                  "time_us": values[0], "stream": values[-1]})
    data = snapshot(trace, [])
    data["segments"][0]["odd"] = values
    same(write(tmp_path, data), tmp_path, monkeypatch)
