"""CUDA allocator snapshots: every entry kept, the curve against an independent replay and
torch's own figures, OOMs and fragmentation, planned versus actual on the real fixtures."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest
from tlview.ingest.cuda_snapshot import parse_snapshot
from tlview.ingest.formats import detect_format
from tlview.ingest.records import AllocatorAction, EventColumns

from tests.conftest import FIXTURES, ingest_into, ingest_together, tlview_main
from tests.reference_snapshot import active_blocks, live_at, load, replay

SNAP = FIXTURES / "snapshot"
DIFF = FIXTURES / "diff"
# Every real snapshot, with torch's figures beside it.
REAL = [SNAP / "compiled_step.pickle.gz", SNAP / "compiled_step_wrapped.pickle.gz",
        SNAP / "oom.pickle.gz", SNAP / "frag_oom.pickle", SNAP / "oom_waste.pickle.gz",
        DIFF / "leak0.pickle.gz", DIFF / "leak1.pickle.gz"]
OOMS = [p for p in REAL if "oom" in p.name]
MiB = 1 << 20


def torch_figures(path: Path) -> dict:
    name = path.name.split(".pickle")[0]
    return json.loads((path.parent / f"{name}.torch.json").read_text())


def one(con: duckdb.DuckDBPyConnection, sql: str, *params: object) -> tuple:
    row = con.execute(sql, list(params)).fetchone()
    assert row is not None
    return row


@pytest.fixture(scope="module")
def real_db(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, int]]:
    db = tmp_path_factory.mktemp("snap") / "s.duckdb"
    tids = {}
    for p in REAL:
        (tid,) = ingest_into(db, p)
        tids[p.name] = tid
    return db, tids


@pytest.fixture(scope="module")
def con(real_db):
    c = duckdb.connect(str(real_db[0]), read_only=True)
    yield c
    c.close()


class TestDetection:
    """A snapshot is recognised by its bytes, compressed or not, whatever its name."""

    def test_detected_by_content(self, tmp_path):
        renamed = tmp_path / "memory.bin"
        renamed.write_bytes((SNAP / "frag_oom.pickle").read_bytes())
        assert detect_format(str(renamed)).name == "cuda_snapshot"
        assert detect_format(str(SNAP / "oom.pickle.gz")).name == "cuda_snapshot"


class TestEveryEntryKept:
    """Each trace entry is one event with all its fields; the end state is kept too."""

    @pytest.mark.parametrize("path", REAL, ids=lambda p: p.name)
    def test_entries_match_the_pickle(self, con, real_db, path):
        tid = real_db[1][path.name]
        snap = load(path)
        trace = snap["device_traces"][0]
        rows = con.execute(
            "SELECT event_index, action, address, size, stream, time_us, compile_context, "
            "user_metadata, device_free, s.stack FROM allocator_events e "
            "LEFT JOIN allocator_stacks s USING (source_id, stack_id) "
            "WHERE timeline_id = ? ORDER BY event_index", [tid]).fetchall()
        assert len(rows) == len(trace)
        for (i, action, addr, size, stream, t, cc, um, free, stack), e in zip(rows, trace):
            assert (action, addr, size, stream, t) == (
                e["action"], e.get("addr"), e["size"], e["stream"], e["time_us"]), i
            assert (cc, um, free) == (e.get("compile_context"), e.get("user_metadata"),
                                      e.get("device_free"))
            frames = [f"{f['filename']}:{f['line']}:{f['name']}" for f in e.get("frames", [])]
            assert (stack or []) == frames, i

    @pytest.mark.parametrize("path", REAL, ids=lambda p: p.name)
    def test_end_state_matches_the_pickle(self, con, real_db, path):
        tid = real_db[1][path.name]
        snap = load(path)
        segs = con.execute("SELECT address, size, stream, pool FROM allocator_segments_end "
                           "WHERE timeline_id = ? ORDER BY address", [tid]).fetchall()
        assert segs == sorted((s["address"], s["total_size"], s["stream"], s["segment_type"])
                              for s in snap["segments"])
        blocks = con.execute("SELECT address, size, requested_size, state "
                             "FROM allocator_blocks_end WHERE timeline_id = ? ORDER BY address",
                             [tid]).fetchall()
        assert blocks == sorted((b["address"], b["size"], b["requested_size"], b["state"])
                                for s in snap["segments"] for b in s["blocks"])

    def test_settings_and_annotations_kept(self, con, real_db):
        tid = real_db[1]["compiled_step.pickle.gz"]
        snap = load(SNAP / "compiled_step.pickle.gz")
        note = json.loads(one(con, "SELECT attrs FROM timeline_notes WHERE timeline_id = ?",
                              tid)[0])
        assert note["allocator_settings"] == snap["allocator_settings"]
        ann = con.execute("SELECT name, ts_ns // 1000, attrs->>'$.stage' FROM events "
                          "WHERE timeline_id = ? AND kind = 'allocator_annotation' ORDER BY seq",
                          [tid]).fetchall()
        assert ann == [(a["name"], a["time_us"], a["stage"]) for a in snap["external_annotations"]]


class TestCurveAgainstReplayAndTorch:
    """The allocated peak equals an independent replay, and torch's own statistics:
    requested_bytes.all.peak exactly (the trace records requested sizes), and
    max_memory_allocated() in whole blocks (block_bytes: the allocator's rounding)."""

    @pytest.mark.parametrize("path", REAL, ids=lambda p: p.name)
    def test_peak(self, con, real_db, path):
        tid = real_db[1][path.name]
        ref = replay(load(path))
        fig = torch_figures(path)
        idx, alloc, reserved, blocks = one(
            con, "SELECT event_index, allocated_bytes, reserved_bytes, block_bytes "
                 "FROM allocator_peak WHERE timeline_id = ?", tid)
        assert (idx, alloc) == (ref["peak_index"], ref["peak"])
        assert reserved == ref["reserved_peak"]
        # Every window starts after reset_peak_memory_stats(): torch's peaks are the window's.
        assert alloc == fig["requested_bytes.all.peak"]
        assert blocks == fig["max_memory_allocated"]
        assert reserved == fig["max_memory_reserved"]

    @pytest.mark.parametrize("path", REAL, ids=lambda p: p.name)
    def test_whole_curve(self, con, real_db, path):
        tid = real_db[1][path.name]
        ref = replay(load(path))
        rows = con.execute("SELECT allocated_bytes, reserved_bytes FROM allocator_curve "
                           "WHERE timeline_id = ? ORDER BY event_index", [tid]).fetchall()
        assert [r[0] for r in rows] == ref["allocated"]
        assert [r[1] for r in rows] == ref["reserved"]

    def test_compiled_step_figures(self, con, real_db):
        """The closing figures of the compiled step: 127,014,920 B requested at the peak
        (torch: requested_bytes.all.peak), 128,064,512 B in blocks (max_memory_allocated);
        the 1,049,592 B between them is rounding: 1,016 B of 512-byte rounding of small
        requests and one 1 MiB remainder handed out unsplit (large pool: a remainder of
        at most 1 MiB is not split)."""
        tid = real_db[1]["compiled_step.pickle.gz"]
        alloc, blocks, bidx, idx = one(
            con, "SELECT allocated_bytes, block_bytes, block_event_index, event_index "
                 "FROM allocator_peak WHERE timeline_id = ?", tid)
        assert (alloc, blocks) == (127_014_920, 128_064_512)
        assert bidx == idx == 51
        live = con.execute("SELECT size - requested_size FROM blocks_live_at(?, ?) "
                           "WHERE size > requested_size", [tid, idx]).fetchall()
        waste = sorted(w for (w,) in live)
        assert sum(waste) == blocks - alloc == 1_049_592
        assert waste[-1] == 1_048_576 and sum(waste[:-1]) == 1_016

    @pytest.mark.parametrize("path", REAL, ids=lambda p: p.name)
    def test_blocks_live_at_sum_to_the_curve(self, con, real_db, path):
        tid = real_db[1][path.name]
        snap = load(path)
        n = len(snap["device_traces"][0])
        for idx in sorted({-1, n // 3, n // 2, n - 1}):
            rows = con.execute("SELECT address, requested_size FROM blocks_live_at(?, ?)",
                               [tid, idx]).fetchall()
            assert dict(rows) == live_at(snap, idx)
            curve = one(con, "SELECT allocated_bytes, active_blocks FROM allocator_curve "
                             "WHERE timeline_id = ? AND event_index = ?", tid, idx)
            assert curve == (sum(r[1] for r in rows), len(rows))

    def test_wrapped_ring_buffer_reported(self, con, real_db):
        """max_entries=400 over two steps: 43 blocks made before the window are freed in
        it. They are counted from the start (the curve still matches the replay) and the
        note says so."""
        tid = real_db[1]["compiled_step_wrapped.pickle.gz"]
        snap = load(SNAP / "compiled_step_wrapped.pickle.gz")
        freed_before = [e for e in snap["device_traces"][0] if e["action"] == "free_completed"
                        and not any(a["action"] == "alloc" and a["addr"] == e["addr"]
                                    for a in snap["device_traces"][0][:snap["device_traces"][0].index(e)])]
        note = json.loads(one(con, "SELECT attrs FROM timeline_notes WHERE timeline_id = ?",
                              tid)[0])
        got = note["before_window"]["freed_in_window"]
        assert got == {"blocks": len(freed_before), "bytes": sum(e["size"] for e in freed_before)}
        assert got["blocks"] == 43 and note["consistent"] is True
        assert any("ring buffer wrapped" in w for w in note["warnings"])
        n_before = one(con, "SELECT count(*) FROM allocator_blocks WHERE timeline_id = ? "
                            "AND origin = 'before_window' AND free_index IS NOT NULL", tid)[0]
        assert n_before == 43


class TestOomAndFragmentation:
    """At an OOM: what was requested, what was free, the largest free block, and the
    live blocks by site summing to the allocated bytes."""

    def test_oom_row(self, con, real_db):
        tid = real_db[1]["oom.pickle.gz"]
        snap = load(SNAP / "oom.pickle.gz")
        fig = torch_figures(SNAP / "oom.pickle.gz")
        trace = snap["device_traces"][0]
        (i, oom), = [(i, e) for i, e in enumerate(trace) if e["action"] == "oom"]
        row = one(con, "SELECT event_index, requested_bytes, device_free, allocated_bytes, "
                       "block_bytes, reserved_bytes, live_by_site FROM ooms WHERE timeline_id = ?",
                  tid)
        assert row[:3] == (i, oom["size"], oom["device_free"])
        assert row[2] == fig["observer"]["device_free"]
        assert row[3] == replay(snap)["allocated"][i + 1] == sum(live_at(snap, i).values())
        assert row[4] == fig["observer"]["at_oom"]["memory_allocated"]  # in whole blocks
        assert row[5] == fig["observer"]["at_oom"]["memory_reserved"]
        assert sum(s["bytes"] for s in row[6]) == row[3]
        assert sum(s["blocks"] for s in row[6]) == len(live_at(snap, i))

    @pytest.mark.parametrize("name", [p.name for p in OOMS])
    def test_fragmentation_at_oom_from_the_end_state(self, con, real_db, name):
        """Each snapshot was taken in the OOM observer, so the end state is the state at
        the OOM: its inactive blocks are the free ranges."""
        tid = real_db[1][name]
        snap = load(SNAP / name)
        assert snap["device_traces"][0][-1]["action"] == "oom"
        request = snap["device_traces"][0][-1]["size"]
        for pool in ("small", "large"):
            segs = [s for s in snap["segments"] if s["segment_type"] == pool]
            if not segs:
                continue
            live = [b for s in segs for b in s["blocks"] if b["state"] != "inactive"]
            free = [b["size"] for s in segs for b in s["blocks"] if b["state"] == "inactive"]
            alloc = sum(b["requested_size"] for b in live)
            blocks = sum(b["size"] for b in live)
            reserved = sum(s["total_size"] for s in segs)
            row = one(con, "SELECT reserved_bytes, allocated_bytes, block_bytes, "
                           "reserved_unallocated_bytes, reserved_minus_requested, "
                           "largest_free_block, free_ranges, internal_waste, request_fits "
                           "FROM fragmentation WHERE timeline_id = ? AND moment = 'oom' "
                           "AND pool = ?", tid, pool)
            fits = (max(free, default=0) >= request) if pool == "large" else None
            assert row == (reserved, alloc, blocks, reserved - blocks, reserved - alloc,
                           max(free, default=0), len(free), blocks - alloc, fits), pool

    def test_fragmentation_oom_figures(self, con, real_db):
        """The fragmentation case: 600 MiB reserved, 280 MiB allocated (torch's message says
        the same), 320 MiB free, yet the 100 MiB request fits nowhere: the largest free
        range is the 40 MiB tail, the 14 others are 20 MiB holes."""
        tid = real_db[1]["frag_oom.pickle"]
        fig = torch_figures(SNAP / "frag_oom.pickle")
        row = one(con, "SELECT reserved_bytes, allocated_bytes, reserved_unallocated_bytes, "
                       "largest_free_block, free_ranges, requested_bytes, request_fits "
                       "FROM fragmentation WHERE timeline_id = ? AND moment = 'oom'", tid)
        assert row == (600 * MiB, 280 * MiB, 320 * MiB, 40 * MiB, 15, 100 * MiB, False)
        assert "280.00 MiB is allocated by PyTorch, and 320.00 MiB is reserved" in fig["error"]
        sites = one(con, "SELECT live_by_site FROM ooms WHERE timeline_id = ?", tid)[0]
        assert [(s["blocks"], s["bytes"]) for s in sites] == [(14, 280 * MiB)]
        assert sites[0]["site"].endswith("gpu_snapshots.py:209:case_frag")

    @pytest.mark.parametrize("path", OOMS, ids=lambda p: p.name)
    def test_reserved_but_unallocated_as_torch_says_it(self, con, real_db, path):
        """torch's OOM message counts whole blocks: reserved - memory_allocated() at the
        OOM (oom_waste: 17.50 MiB). fragmentation's rows of the OOM sum to it and ooms
        gives it; reserved - requested bytes (oom_waste: 23.50 MiB, the 6 MiB more are
        twelve 30 MiB blocks holding 29.5 MiB each) is the column named for it."""
        tid = real_db[1][path.name]
        fig = torch_figures(path)
        at = fig["observer"]["at_oom"]
        torch_says = at["memory_reserved"] - at["memory_allocated"]
        assert (f"{at['memory_allocated'] / MiB:.2f} MiB is allocated by PyTorch, and "
                f"{torch_says / MiB:.2f} MiB is reserved by PyTorch but unallocated"
                in fig["error"])
        frag = one(con, "SELECT sum(reserved_unallocated_bytes), sum(reserved_minus_requested), "
                        "sum(internal_waste) FROM fragmentation WHERE timeline_id = ? "
                        "AND moment = 'oom'", tid)
        oom = one(con, "SELECT reserved_unallocated_bytes, reserved_bytes - allocated_bytes "
                       "FROM ooms WHERE timeline_id = ?", tid)
        assert frag[0] == oom[0] == torch_says
        assert frag[1] == oom[1] == torch_says + frag[2]
        assert at["memory_allocated"] - at["requested_bytes.all.current"] == frag[2]
        if path.name == "oom_waste.pickle.gz":
            assert (torch_says, frag[1]) == (int(17.5 * MiB), int(23.5 * MiB))

    @pytest.mark.parametrize("path", OOMS, ids=lambda p: p.name)
    def test_the_segment_torch_tried_to_allocate(self, con, real_db, path):
        """The OOM's trace entry holds the request as the allocator rounded it; the OOM
        observer's alloc and the message's "Tried to allocate" are the segment it asked
        CUDA for: on oom_waste 67,108,864 B for a 65,273,856 B request, 1,835,008 B more
        (a large request's segment is rounded up to 2 MiB)."""
        tid = real_db[1][path.name]
        fig = torch_figures(path)
        entry = load(path)["device_traces"][0][-1]
        requested, segment = one(con, "SELECT requested_bytes, segment_bytes FROM ooms "
                                      "WHERE timeline_id = ?", tid)
        assert requested == entry["size"]
        assert segment == fig["observer"]["alloc"]
        assert f"Tried to allocate {segment / MiB:.2f} MiB" in fig["error"]
        if path.name == "oom_waste.pickle.gz":
            assert (requested, segment - requested) == (fig["requested"], 1_835_008)

    def test_allocation_sites_at_peak_sum_to_peak(self, con, real_db):
        for name, tid in real_db[1].items():
            at_peak, peak = one(
                con, "SELECT (SELECT sum(bytes_at_peak) FROM allocation_sites WHERE timeline_id = ?), "
                     "(SELECT allocated_bytes FROM allocator_peak WHERE timeline_id = ?)", tid, tid)
            assert at_peak == peak, name


class TestPlannedVersusActual:
    """The compiled step with its output code: every allocation made by a line of the
    wrapper's call() maps to a compiled buffer or says why not, and each call's measured
    peak is accounted for."""

    @pytest.fixture(scope="class")
    def pva(self, tmp_path_factory):
        db = tmp_path_factory.mktemp("pva") / "p.duckdb"
        ingest_together(db, SNAP / "compiled_step.pickle.gz",
                        *sorted(SNAP.glob("torch_compile_debug/*/torchinductor/*/output_code.py")))
        c = duckdb.connect(str(db), read_only=True)
        yield c
        c.close()

    def test_every_wrapper_allocation_mapped_or_explained(self, pva):
        snap = load(SNAP / "compiled_step.pickle.gz")
        # An allocation made by a line of call(): a frame of it in the stack (the innermost
        # frame is call() itself, or torch's op dispatch under it).
        wrapper_allocs = [i for i, e in enumerate(snap["device_traces"][0])
                          if e["action"] == "alloc"
                          and any(f["name"] == "call" and "torchinductor" in f["filename"]
                                  for f in e["frames"])]
        rows = pva.execute("SELECT alloc_index, status, reason, size_matches FROM planned_vs_actual "
                           "WHERE timeline_id = 1 AND alloc_index IS NOT NULL").fetchall()
        assert sorted(r[0] for r in rows) == wrapper_allocs
        for idx, status, reason, matches in rows:
            assert (status == "mapped" and matches) or (status == "unmapped" and reason), idx
        files = pva.execute("SELECT wrapper_timeline_id IS NOT NULL, lines = hits "
                            "FROM wrapper_files").fetchall()
        assert files == [(True, True), (True, True)]

    def test_forward_reconciles(self, pva):
        """Forward: planned peak 34,660,368 B; at the measured peak the call's mapped
        buffers hold 34,660,352 B, 16 B less: the four 4-byte SDPA outputs the wrapper
        plans are not allocated on the device; the rest of the measured 122,820,608 B is
        the 88,160,256 B of parameters and state made before recording began."""
        calls = pva.execute("SELECT graph, planned_peak_bytes, measured_peak_bytes, "
                            "planned_bytes_at_measured_step, planned_live_bytes, "
                            "unplanned_call_bytes, other_graph_bytes, optimizer_bytes, "
                            "before_window_bytes, other_bytes FROM planned_vs_actual_calls "
                            "WHERE timeline_id = 1 ORDER BY call_index").fetchall()
        assert [c[0] for c in calls] == ["0_forward", "0_backward"] * 2
        for c in calls:
            assert c[2] == sum(c[4:]), c  # the classes sum to the measured peak
        fwd = calls[0]
        assert fwd[1:5] == (34_660_368, 122_820_608, 34_660_368, 34_660_352)
        assert fwd[8] == sum(b["requested_size"] for b in active_blocks(
            load(SNAP / "compiled_step.pickle.gz"))) == 88_160_256
        missing = pva.execute("SELECT sum(planned_bytes), count(*) FROM planned_vs_actual "
                              "WHERE timeline_id = 1 AND call_index = 0 "
                              "AND status = 'not_allocated'").fetchone()
        assert missing == (16, 4) and fwd[3] - fwd[4] == 16

    def test_backward_peak_holds_the_forward_saved_tensors(self, pva):
        """Backward: the measured peak (127,014,920 B, the whole window's) comes at its
        second allocation, while the forward's saved tensors (32,563,200 B) are still live;
        its own planned peak (15,816,704 B, step 28) comes later, after they are freed."""
        row = pva.execute("SELECT planned_peak_bytes, planned_peak_step, measured_peak_bytes, "
                          "measured_peak_event, planned_live_bytes, other_graph_bytes, "
                          "before_window_bytes, other_bytes, unmapped_allocations "
                          "FROM planned_vs_actual_calls WHERE timeline_id = 1 AND call_index = 1"
                          ).fetchone()
        assert row == (15_816_704, 28, 127_014_920, 51, 5_242_880, 32_563_200, 88_160_256,
                       1_048_584, 8)
        reasons = pva.execute("SELECT DISTINCT reason FROM planned_vs_actual WHERE timeline_id = 1 "
                              "AND call_index = 1 AND status = 'unmapped'").fetchall()
        assert reasons == [("no planned buffer left at its line: the op's own scratch",)]


def test_parser_records_are_the_events(tmp_path):
    """The records the parser yields are exactly what the events table holds."""
    path = SNAP / "frag_oom.pickle"
    actions = []
    for r in parse_snapshot(str(path)):  # records, or columns from the compiled core
        actions += [a for a in (r.records() if isinstance(r, EventColumns) else [r])
                    if isinstance(a, AllocatorAction)]
    db = tmp_path / "r.duckdb"
    ingest_into(db, path)
    con = duckdb.connect(str(db), read_only=True)
    rows = con.execute("SELECT step, op, address, bytes, block_bytes, stream, ts_ns, stack_id, "
                       "correlation FROM events WHERE kind = 'allocator_action' ORDER BY step"
                       ).fetchall()
    assert rows == [(a.step, a.op, a.address, a.bytes, a.block_bytes, a.stream, a.ts_ns,
                     a.stack_id, a.correlation) for a in actions]


def test_cli_ingest_prints_peaks_site_and_ooms(tmp_path):
    """`tlview ingest` on a snapshot: events, the peaks exactly and in binary units with
    their time and top site, and the OOM with what was asked and free."""
    snap = load(SNAP / "frag_oom.pickle")
    ref = replay(snap)
    p = tlview_main("ingest", str(SNAP / "frag_oom.pickle"), "--db", str(tmp_path / "c.duckdb"))
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    lines = lines[next(i for i, ln in enumerate(lines) if ln.startswith("timeline "))  # after
                  :]  # its run's lines
    assert lines[0].endswith(f"{len(snap['device_traces'][0])} events (29 alloc, "
                             "15 free_completed, 15 free_requested, 1 oom, 1 segment_alloc)")
    assert lines[1].startswith(f"  peak allocated {ref['peak']:,} B (600.00 MiB) at event "
                               f"{ref['peak_index']} (+0.004 ms, 2026-11-23 12:05:12.316128 UTC)")
    assert lines[1].endswith("gpu_snapshots.py:207:case_frag: 629,145,600 B (600.00 MiB)")
    assert lines[2].startswith(f"  peak reserved {ref['reserved_peak']:,} B (600.00 MiB) at event 0")
    assert lines[4] == (
        "  OOM at event 60 (+1.151 ms, 2026-11-23 12:05:12.317275 UTC): requested "
        "104,857,600 B (100.00 MiB), CUDA free 82,693,849,088 B (77.01 GiB); allocated "
        "293,601,280 B (280.00 MiB) in whole blocks (293,601,280 B (280.00 MiB) requested), "
        "reserved 629,145,600 B (600.00 MiB), of it 335,544,320 B (320.00 MiB) reserved but "
        "unallocated; largest free block 41,943,040 B (40.00 MiB) (it would not fit)")


def test_oom_line_gives_torchs_figures(tmp_path, capsys):
    """At an OOM whose segment the allocator rounded up and whose blocks are wider than
    their requests, the ingest says torch's figures (its message: "Tried to allocate 64.00
    MiB", "982.50 MiB is allocated by PyTorch, and 17.50 MiB is reserved by PyTorch but
    unallocated") beside the requested bytes."""
    from tlview.cli import main

    path = SNAP / "oom_waste.pickle.gz"
    fig = torch_figures(path)
    at = fig["observer"]["at_oom"]
    assert main(["ingest", str(path), "--db", str(tmp_path / "w.duckdb")]) == 0
    (line,) = [x for x in capsys.readouterr().out.splitlines() if "OOM at" in x]
    assert (f"requested {fig['requested']:,} B (62.25 MiB) (torch's message and OOM observer "
            f"say {fig['observer']['alloc']:,} B (64.00 MiB): the segment it asked CUDA for)"
            in line)
    assert (f"allocated {at['memory_allocated']:,} B (982.50 MiB) in whole blocks "
            f"({at['requested_bytes.all.current']:,} B (976.50 MiB) requested), reserved "
            f"{at['memory_reserved']:,} B (1000.00 MiB), of it "
            f"{at['memory_reserved'] - at['memory_allocated']:,} B (17.50 MiB) reserved but "
            "unallocated") in line


def test_curve_cache_is_the_view_and_ranges_chain(con, real_db):
    """The cached curve equals its derivation; filled in ranges (each from the row before
    it, as the store does for traces of millions of entries) it gives the same rows."""
    for name, tid in real_db[1].items():
        diff = one(con, "SELECT count(*) FROM (SELECT * FROM _cache_allocator_curve "
                        "EXCEPT SELECT * FROM _allocator_curve_derived)")[0]
        assert diff == 0, name
        n = one(con, "SELECT count(*) FROM allocator_events WHERE timeline_id = ?", tid)[0]
        cut = n // 3
        start = con.execute("SELECT allocated_bytes, reserved_bytes, active_blocks, block_bytes "
                            "FROM allocator_curve WHERE timeline_id = ? AND event_index = -1",
                            [tid]).fetchone()
        first = con.execute("SELECT * FROM _allocator_curve_steps(?, 0, ?, ?, ?, ?, ?) "
                            "ORDER BY event_index", [tid, cut, *start]).fetchall()
        second = con.execute("SELECT * FROM _allocator_curve_steps(?, ?, ?, ?, ?, ?, ?) "
                             "ORDER BY event_index", [tid, cut + 1, n, *first[-1][3:]]).fetchall()
        whole = con.execute("SELECT * FROM allocator_curve WHERE timeline_id = ? "
                            "AND event_index >= 0 ORDER BY event_index", [tid]).fetchall()
        assert first + second == whole, name


def _same_rows(con, a: str, b: str) -> bool:
    """Tables/views ``a`` and ``b`` hold the same rows, duplicates counted."""
    return one(con, f"SELECT count(*) FROM ((FROM {a} EXCEPT ALL FROM {b}) "
                    f"UNION ALL (FROM {b} EXCEPT ALL FROM {a}))")[0] == 0


# Ranges of this many entries: three or more in every real fixture's timeline (61 entries
# the fewest), ~75 boundaries in all, each a statement or two.
RANGE = 29


def test_curve_and_blocks_filled_in_ranges_are_the_derived_views(real_db, tmp_path):
    """The store fills the curve's ranges with running sums in Arrow, not the view's
    window: on every real fixture, refilled in ranges of RANGE entries (each from the
    row before it), and with some sizes NULL (SQL's sum skips them; a range that has seen
    only NULLs so far is NULL), the cache holds exactly what _allocator_curve_derived
    computes; the blocks' cache, filled in ranges of RANGE allocating entries, exactly what
    _allocator_blocks_derived does."""
    import shutil

    from tlview.store import caches, open_database

    db_path = tmp_path / "copy.duckdb"
    shutil.copyfile(real_db[0], db_path)
    with open_database(db_path) as db:
        con = db.con
        assert _same_rows(con, "_cache_allocator_curve", "_allocator_curve_derived")
        for tid in real_db[1].values():
            n = one(con, "SELECT count(*) FROM allocator_events WHERE timeline_id = ?", tid)[0]
            con.execute("DELETE FROM _cache_allocator_curve WHERE timeline_id = ? "
                        "AND event_index >= 0", [tid])
            for lo in range(0, n, RANGE):
                caches.fill_allocator_curve(db, tid, lo, lo + RANGE - 1)
        assert _same_rows(con, "_cache_allocator_curve", "_allocator_curve_derived")
        # the blocks' cache, filled in ranges of RANGE allocating entries, is its view too
        assert _same_rows(con, "_cache_allocator_blocks", "_allocator_blocks_derived")
        for tid in real_db[1].values():
            n = one(con, "SELECT count(*) FROM allocator_events WHERE timeline_id = ?", tid)[0]
            con.execute("DELETE FROM _cache_allocator_blocks WHERE timeline_id = ?", [tid])
            for lo in (-1, *range(0, n, RANGE)):
                con.execute(db.queries["cache_fill_allocator_blocks"],
                            [tid, lo, -1 if lo < 0 else lo + RANGE - 1])
        assert one(con, "SELECT count(*) FROM _cache_allocator_blocks")[0] > 100
        assert _same_rows(con, "_cache_allocator_blocks", "_allocator_blocks_derived")
        # entries of unknown size: the first alloc of each timeline and every 5th event
        con.execute("UPDATE events_allocator_action SET bytes = NULL, block_bytes = NULL "
                    "WHERE step % 5 = 0 OR step = (SELECT min(step) FROM events_allocator_action "
                    "a WHERE a.timeline_id = events_allocator_action.timeline_id "
                    "AND a.op = 'alloc')")
        caches.rebuild_all(db)
        nulls = one(con, "SELECT count(*) FILTER (WHERE allocated_bytes IS NULL), count(*) "
                         "FROM _cache_allocator_curve")
        assert 0 < nulls[0] < nulls[1], nulls
        assert _same_rows(con, "_cache_allocator_curve", "_allocator_curve_derived")


def test_snapshot_queries_for_a_view(real_db):
    """The store's reads for a snapshot screen: the peak, the OOMs, the curve squeezed to
    columns, the point at the cursor, the live blocks by site summing to it, a stack."""
    from tlview.store import open_database
    from tlview.store import snapshot_queries as q

    db_path, tids = real_db
    with open_database(db_path, read_only=True) as db:
        tid = tids["oom.pickle.gz"]
        snap = load(SNAP / "oom.pickle.gz")
        ref = replay(snap)
        o = q.overview(db, tid)
        assert o is not None
        assert (o.n_events, o.peak_event, o.peak_allocated) == (
            len(snap["device_traces"][0]), ref["peak_index"], ref["peak"])
        assert o.ooms == (436,) and o.consistent
        c = q.curve(db, tid, 40, o.n_events)
        assert len(c.allocated) == 40 and max(c.allocated) == ref["peak"]
        assert max(c.reserved) == ref["reserved_peak"]
        p = q.point(db, tid, 436)
        assert p is not None and (p.action, p.size, p.allocated) == (
            "oom", 67_108_864, ref["allocated"][437])
        sites = q.sites_at(db, tid, 436)
        assert sum(s.bytes for s in sites) == p.allocated
        top = next(s for s in sites if s.stack_id is not None)
        assert q.stack(db, tid, top.stack_id)[-1].endswith(":<module>")
