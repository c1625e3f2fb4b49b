"""Allocator snapshots that are hostile, broken, old or odd: refused in one line with the
database untouched, or read with what they say kept."""

from __future__ import annotations

import gzip
import io
import json
import os
import pickle
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import duckdb
import pytest
from tlview.ingest.cuda_snapshot import Interner
from tlview.ingest.errors import IngestError
from tlview.ingest.pickle_stream import TOP, PickleStream, load_plain
from tlview.store import open_database
from tlview.store.convert import KIND_SCHEMAS
from tlview.store.db import SCHEMA_VERSION
from tlview.store.digest import source_digest

from tests.conftest import FIXTURES, ingest_into, tlview_main

SNAP = FIXTURES / "snapshot"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    """`tlview ARGS` in this process, as a finished process (conftest.tlview_main)."""
    return tlview_main(*args)


def frames(*names: str) -> list[dict[str, Any]]:
    return [{"filename": f"/src/{n}.py", "line": i + 1, "name": n} for i, n in enumerate(names)]


def snapshot(trace: list[dict[str, Any]], blocks: list[dict[str, Any]],
             seg: tuple[int, int] = (1 << 32, 2 << 20), **top: Any) -> dict[str, Any]:
    """A snapshot in torch's layout: one segment holding ``blocks``, one device."""
    return {
        "segments": [{"device": 0, "address": seg[0], "total_size": seg[1], "stream": 0,
                      "segment_type": "small", "segment_pool_id": (0, 0),
                      "allocated_size": 0, "active_size": 0, "requested_size": 0,
                      "is_expandable": False, "frames": [], "blocks": blocks}],
        "device_traces": [trace], "allocator_settings": {}, "external_annotations": [], **top,
    }


def entry(action: str, addr: int, size: int, t: int, **kw: Any) -> dict[str, Any]:
    return {"action": action, "addr": addr, "size": size, "stream": 0, "time_us": t,
            "frames": frames("train", "step"), **kw}


A = 1 << 32


class _Evil:
    """Unpickling this runs a shell command that writes a marker file."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Any, ...]:
        return (os.system, (f"touch {self.marker}",))


@pytest.fixture
def db_with_one(tmp_path: Path, alone: Any) -> Path:
    """A database holding frag_oom.pickle alone, which the test may change: a copy of the
    one ingested once per test process (conftest's ``alone``)."""
    db = tmp_path / "d.duckdb"
    shutil.copyfile(alone(SNAP / "frag_oom.pickle")[0], db)
    return db


def state_of(db: Path) -> tuple[Any, ...]:
    with open_database(db, read_only=True) as d:
        counts = d.query("counts")[0]
        digest = source_digest(d, 1)
        frames_n = d.sql("SELECT count(*) FROM frames").fetchone()
    return counts, json.dumps(digest, sort_keys=True), frames_n


class TestRefused:
    """One line naming the file, exit 2, the database exactly as it was."""

    def assert_refused(self, db: Path, path: Path, *needles: str, fmt: str | None = None) -> str:
        before = state_of(db)
        args = ["ingest", str(path), "--db", str(db)] + (["--format", fmt] if fmt else [])
        p = run(*args)
        assert p.returncode == 2, p.stdout + p.stderr
        assert p.stderr.count("\n") == 1 and "Traceback" not in p.stderr, p.stderr
        assert str(path.name) in p.stderr
        for n in needles:
            assert n in p.stderr, p.stderr
        assert state_of(db) == before
        return p.stderr

    @pytest.mark.parametrize("protocol", [2, 4, 5])
    def test_code_running_global_never_runs(self, db_with_one, tmp_path, protocol):
        marker = tmp_path / "MARKER"
        evil = tmp_path / "evil.pickle"
        data = snapshot([entry("alloc", A, 512, 1)], [])
        data["segments"][0]["blocks"] = [_Evil(marker)]
        evil.write_bytes(pickle.dumps(data, protocol=protocol))
        # The same bytes really run the command under pickle.load (in a child process):
        # proof that the payload is live, then that tlview never runs it.
        probe = tmp_path / "probe.pickle"
        probe_marker = tmp_path / "PROBE"
        data["segments"][0]["blocks"] = [_Evil(probe_marker)]
        probe.write_bytes(pickle.dumps(data, protocol=protocol))
        subprocess.run([sys.executable, "-c", "import pickle,sys; pickle.load(open(sys.argv[1],'rb'))",
                        str(probe)], capture_output=True)
        assert probe_marker.exists()
        msg = self.assert_refused(db_with_one, evil, "refused pickle opcode", "system",
                                  "nothing was run")
        assert not marker.exists(), msg

    def test_code_running_global_with_forced_format(self, db_with_one, tmp_path):
        marker = tmp_path / "MARKER"
        evil = tmp_path / "evil2.pkl"
        evil.write_bytes(pickle.dumps(_Evil(marker), protocol=4))
        self.assert_refused(db_with_one, evil, "STACK_GLOBAL", fmt="cuda_snapshot")
        assert not marker.exists()

    def test_truncated(self, db_with_one, tmp_path):
        data = (SNAP / "frag_oom.pickle").read_bytes()
        for cut in (3, len(data) // 2, len(data) - 1):
            bad = tmp_path / f"cut{cut}.pickle"
            bad.write_bytes(data[:cut])
            self.assert_refused(db_with_one, bad, "truncated", fmt="cuda_snapshot")

    def test_truncated_gzip(self, db_with_one, tmp_path):
        data = (SNAP / "oom.pickle.gz").read_bytes()
        bad = tmp_path / "cut.pickle.gz"
        bad.write_bytes(data[: len(data) // 2])
        self.assert_refused(db_with_one, bad, fmt="cuda_snapshot")

    @pytest.mark.parametrize("obj,needle", [
        ([1, 2, 3], "a pickle of a list"),
        ({"segments": [], "other": 1}, "not an allocator snapshot"),
        ({"segments": 5, "device_traces": []}, "not an allocator snapshot"),
    ])
    def test_other_object(self, db_with_one, tmp_path, obj, needle):
        bad = tmp_path / "other.pickle"
        bad.write_bytes(pickle.dumps(obj, protocol=4))
        self.assert_refused(db_with_one, bad, needle, fmt="cuda_snapshot")

    def test_other_object_detected(self, db_with_one, tmp_path):
        bad = tmp_path / "model.pickle"
        bad.write_bytes(pickle.dumps({"weights": [1.0, 2.0]}, protocol=4))
        self.assert_refused(db_with_one, bad, "a Python pickle, but not a CUDA memory snapshot")

    def test_empty_file(self, db_with_one, tmp_path):
        empty = tmp_path / "empty.pickle"
        empty.write_bytes(b"")
        self.assert_refused(db_with_one, empty, "empty file")
        self.assert_refused(db_with_one, empty, fmt="cuda_snapshot")

    def test_entry_without_action(self, db_with_one, tmp_path):
        bad = tmp_path / "noaction.pickle"
        e = entry("alloc", A, 512, 1)
        del e["action"]
        bad.write_bytes(pickle.dumps(snapshot([e, entry("alloc", A + 512, 512, 2)], []),
                                     protocol=4))
        self.assert_refused(db_with_one, bad, "trace entry 0 of cuda:0 has no action")


class TestOddButRead:
    """What the dump says is kept; what does not add up is reported, never summed."""

    def ingest(self, tmp_path: Path, data: dict[str, Any], name: str = "s.pickle",
               protocol: int = 4) -> duckdb.DuckDBPyConnection:
        p = tmp_path / name
        p.write_bytes(pickle.dumps(data, protocol=protocol))
        ingest_into(tmp_path / "db.duckdb", p)
        return duckdb.connect(str(tmp_path / "db.duckdb"), read_only=True)

    def test_unknown_keys_kept(self, tmp_path):
        e = entry("alloc", A, 1000, 1, pool_id=(0, 0), future_field={"x": 1})
        blk = {"address": A, "size": 1024, "requested_size": 1000, "state": "active_allocated",
               "frames": e["frames"], "new_block_key": "kept"}
        con = self.ingest(tmp_path, snapshot([e], [blk], new_top_key=[7]))
        attrs = json.loads(con.execute("SELECT attrs FROM allocator_events").fetchone()[0])
        assert attrs["future_field"] == {"x": 1} and attrs["pool_id"] == [0, 0]
        battrs = json.loads(con.execute("SELECT attrs FROM allocator_blocks_end").fetchone()[0])
        assert battrs == {"new_block_key": "kept"}
        note = json.loads(con.execute("SELECT attrs FROM timeline_notes").fetchone()[0])
        assert note["top_level_keys"] == {"new_top_key": [7]}
        # The block's frames are the alloc's: one interned stack.
        assert con.execute("SELECT count(*) FROM stacks").fetchone()[0] == 1

    def test_inconsistent_trace_reported(self, tmp_path):
        """An alloc at an address already allocated in the window (its free is missing):
        counted and said, the peak flagged."""
        trace = [entry("alloc", A, 512, 1), entry("alloc", A, 512, 2)]
        blk = {"address": A, "size": 512, "requested_size": 512, "state": "active_allocated",
               "frames": []}
        con = self.ingest(tmp_path, snapshot(trace, [blk]))
        note = json.loads(con.execute("SELECT attrs FROM timeline_notes").fetchone()[0])
        assert note["consistent"] is False
        assert note["inconsistencies"] == {"alloc_of_live_address": 1}
        assert "alloc at 0x100000000 still allocated since step 0" in note["inconsistency_examples"][0]
        assert con.execute("SELECT consistent FROM allocator_peak").fetchone()[0] is False
        p = run("info", "--db", str(tmp_path / "db.duckdb"))
        assert "does not match its allocations" in p.stdout

    def test_time_going_back_reported(self, tmp_path):
        trace = [entry("alloc", A, 512, 5), entry("free_completed", A, 512, 3)]
        con = self.ingest(tmp_path, snapshot(trace, []))
        note = json.loads(con.execute("SELECT attrs FROM timeline_notes").fetchone()[0])
        assert note["inconsistencies"] == {"time_goes_back": 1}

    def test_older_layout_with_history(self, tmp_path):
        """torch <= 2.0: blocks carry `history` (real_size, frames), no requested_size nor
        frames of their own, no block address; trace entries have no time_us. Read as
        torch's own viewer reads them (history[0])."""
        hist_frames = frames("old_train")
        data = {
            "segments": [{"device": 0, "address": A, "total_size": 2 << 20, "stream": 0,
                          "segment_type": "small", "allocated_size": 1536, "active_size": 1536,
                          "blocks": [
                              {"size": 1024, "state": "active_allocated",
                               "history": [{"addr": A, "real_size": 1000, "frames": hist_frames}]},
                              {"size": 512, "state": "active_allocated",
                               "history": [{"addr": A + 1024, "real_size": 500}]},
                              {"size": (2 << 20) - 1536, "state": "inactive"}]}],
            "device_traces": [[{"action": "alloc", "addr": A + 1024, "size": 500, "stream": 0,
                                "frames": hist_frames}]],
        }
        con = self.ingest(tmp_path, data, protocol=2)
        blocks = con.execute("SELECT address, size, requested_size, state FROM allocator_blocks_end "
                             "ORDER BY address").fetchall()
        assert blocks == [(A, 1024, 1000, "active_allocated"), (A + 1024, 512, 500, "active_allocated"),
                          (A + 1536, (2 << 20) - 1536, None, "inactive")]
        assert con.execute("SELECT allocated_bytes FROM allocator_curve ORDER BY event_index"
                           ).fetchall() == [(1000,), (1500,)]
        note = json.loads(con.execute("SELECT attrs FROM timeline_notes").fetchone()[0])
        assert note["layout"] == "history"
        site = con.execute("SELECT site FROM blocks_live_at(1, -1)").fetchall()
        assert site == [("/src/old_train.py:1:old_train",)]

    def test_lists_of_one_and_several_devices(self, tmp_path):
        """A pickler writes a list of one item without a batch: still streamed and read."""
        data = snapshot([entry("alloc", A, 512, 1)], [
            {"address": A, "size": 512, "requested_size": 512, "state": "active_allocated",
             "frames": []}])
        data["device_traces"] = [[], data["device_traces"][0]]
        data["segments"][0]["device"] = 1
        con = self.ingest(tmp_path, data)
        rows = con.execute("SELECT t.device, count(*) FROM allocator_events e "
                           "JOIN timeline_records t USING (timeline_id) GROUP BY ALL").fetchall()
        assert rows == [("cuda:1", 1)]
        assert con.execute("SELECT allocated_bytes FROM allocator_peak").fetchone() == (512,)

    def test_gzip_and_plain_give_the_same_rows(self, tmp_path, alone):
        raw = (SNAP / "frag_oom.pickle").read_bytes()
        gz = tmp_path / "frag_oom.pickle.gz"
        gz.write_bytes(gzip.compress(raw))
        a = alone(SNAP / "frag_oom.pickle")[0]  # read only
        b = tmp_path / "b.duckdb"
        ingest_into(b, gz)
        with open_database(a, read_only=True) as da, open_database(b, read_only=True) as dbb:
            ga, gb = source_digest(da, 1), source_digest(dbb, 1)
        assert (ga["events"], ga["stacks"]) == (gb["events"], gb["stacks"])


class TestPickleStream:
    """The opcode reader: plain data of every protocol torch writes, nothing else."""

    VALUE = {"a": [1, -2, 2**40, -2**70, 2.5, None, True, False, "x" * 300, "é"],
             "t": (1, (2, 3)), "d": {"k": {}}, "e": [], "n": [[1], [2, 3]]}

    @pytest.mark.parametrize("protocol", [2, 3, 4, 5])
    def test_plain_values(self, protocol):
        data = pickle.dumps(self.VALUE, protocol=protocol)
        assert load_plain(io.BytesIO(data), "v") == self.VALUE

    @pytest.mark.parametrize("protocol", [4, 5])
    def test_bytes_and_sets(self, protocol):
        v: dict[str, Any] = {"b": b"\x00\x01", "s": {1, 2}, "f": frozenset({3})}
        if protocol == 5:
            v["ba"] = bytearray(b"z")  # BYTEARRAY8 exists from protocol 5
        assert load_plain(io.BytesIO(pickle.dumps(v, protocol=protocol)), "v") == v

    @pytest.mark.parametrize("protocol", [0, 1])
    def test_old_protocols_refused(self, protocol):
        with pytest.raises(IngestError, match="protocol 2 or later"):
            load_plain(io.BytesIO(pickle.dumps(self.VALUE, protocol=protocol)), "v")

    def test_memo_keeps_no_container_of_a_streamed_item(self):
        """After each trace entry is handed over, the memo holds stand-ins (interned
        frames and stacks) and the marker of handed-over items, never the entry's dicts or
        lists: memory is one pointer per memoized object, whatever the trace's length."""
        shared = frames(*(f"f{i}" for i in range(30)))
        trace = []
        for k in range(3000):
            fl = shared[k % 5: k % 5 + 20]
            trace.append(entry("alloc", A + 512 * (k % 7), 512, k, frames=fl))
            trace.append(entry("free_completed", A + 512 * (k % 7), 512, k, frames=fl))
        data = pickle.dumps(snapshot(trace, []), protocol=4)
        interner = Interner("s")
        stream = PickleStream(io.BytesIO(data), "s", lambda p: len(p) == 2 or p == ("segments",),
                              interner.compact)
        n = 0
        for path, value in stream.items():
            if path != TOP and path[0] == "device_traces":
                interner.stack(value["frames"])
                n += 1
        assert n == 6000
        containers = [v for v in stream.memo if type(v) in (dict, list)]
        # Only the top-level containers remain (the dict, its lists, the one segment written
        # as a list of one), none of the 6000 entries nor any of their frames lists.
        assert not any(type(v) is dict and "action" in v for v in containers)
        assert not any(type(v) is list and v and type(v[0]) is dict and "filename" in v[0]
                       for v in containers)
        assert len(containers) == 9
        assert len(stream.memo) < 3 * 6000  # one slot per memoized object, nothing more
        assert len(interner.stacks) == 5 and len(interner.frames) == 24


def _wide_events_database(db: Path, version: int) -> None:
    """Turn a current database into the layout of schema ``version`` (2 or 3): every
    event in one table named events (v2: without the allocator columns, frames, stacks)."""
    con = duckdb.connect(str(db))
    kinds = [r[0] for r in con.execute("SELECT table_name FROM duckdb_tables() "
                                       "WHERE table_name LIKE 'events\\_%' ESCAPE '\\'").fetchall()]
    assert sorted(kinds) == sorted(f"events_{k}" for k in KIND_SCHEMAS), kinds
    con.execute("CREATE TABLE _wide AS SELECT * FROM events ORDER BY source_id, seq")
    con.execute("DROP VIEW events")
    for t in kinds:
        con.execute(f"DROP TABLE {t}")
    con.execute("ALTER TABLE _wide RENAME TO events")
    if version == 2:
        for col in ("address", "stack_id", "block_bytes"):
            con.execute(f"ALTER TABLE events DROP COLUMN {col}")
        con.execute("DROP TABLE frames")
        con.execute("DROP TABLE stacks")
    con.execute("UPDATE tlview_meta SET value = ? WHERE key = 'schema_version'", [str(version)])
    con.close()


@pytest.mark.parametrize("version", [2, 3])
def test_a_database_of_one_events_table_migrates_to_v4(tmp_path, alone, version):
    """A database written before v4 (v2: also before the allocator columns): `tlview
    migrate` moves every event to its kind's table (the digest of its events unchanged,
    the events view with v3's columns), then a snapshot ingests into it."""
    from tests.conftest import SEED_002

    db = tmp_path / "old.duckdb"
    shutil.copyfile(alone(SEED_002)[0], db)  # as ingest_into(db, SEED_002) writes it
    with open_database(db, read_only=True) as d:
        before = source_digest(d, 1)
        columns = d.sql("SELECT column_name, data_type FROM duckdb_columns() "
                        "WHERE table_name = 'events' ORDER BY column_index").fetchall()
        n = d.sql("SELECT count(*) FROM events").fetchone()[0]
    _wide_events_database(db, version)
    p = run("migrate", "--db", str(db))
    assert p.returncode == 0 and f"migrated from schema v{version} to v{SCHEMA_VERSION}" \
        in p.stdout, p.stderr
    ingest_into(db, SNAP / "frag_oom.pickle")
    with open_database(db, read_only=True) as d:
        assert source_digest(d, 1) == before
        assert d.sql("SELECT count(*) FROM events WHERE source_id = 1").fetchone()[0] == n
        assert d.sql("SELECT column_name, data_type FROM duckdb_columns() "
                     "WHERE table_name = 'events' ORDER BY column_index").fetchall() == columns
        assert d.sql("SELECT count(*) FROM duckdb_tables() WHERE table_name = '_events_v3'"
                     ).fetchone()[0] == 0
        assert d.sql("SELECT allocated_bytes FROM allocator_peak").fetchone() == (629_145_600,)
