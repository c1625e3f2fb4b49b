"""The snapshot screen on the real CUDA allocator snapshots (tests/fixtures/snapshot):
the peaks in the header, scrubbing by trace entry, the blocks live at the cursor by
allocation site, a site's stack, the OOM jumps, the chooser's routing, and snapshots of
the screen at 80x24 and 160x48.

Figures are checked against the views queried directly (``allocator_peak``,
``allocator_events``, ``blocks_live_at``, ``fragmentation``, ``ooms``, ``allocator_stacks``)
and against an independent replay of the pickle (tests/reference_snapshot.py).
"""

from __future__ import annotations

from collections import defaultdict

import pytest
from tlview.store.fmt import exact_bytes
from tlview.store.snapshot_queries import SiteRow
from tlview.tui.allocator_curve import column_of, event_at
from tlview.tui.app import TlviewApp
from tlview.tui.chooser import ChooserScreen
from tlview.tui.help import HelpScreen
from tlview.tui.row_list import RowList
from tlview.tui.site_rows import frame_label, site_rows
from tlview.tui.snapshot_screen import SnapshotScreen, next_oom

from tests.conftest import FIXTURES, ingest_into, view
from tests.reference_snapshot import live_at, load, replay
from tests.tui.pilot import asynctest, press, settle
from tests.tui.screen_text import screen_text

SNAP = FIXTURES / "snapshot"
FILES = ("compiled_step.pickle.gz", "compiled_step_wrapped.pickle.gz", "oom.pickle.gz",
         "frag_oom.pickle")
OOM_FILES = ("oom.pickle.gz", "frag_oom.pickle")


@pytest.fixture(scope="module")
def snap_db(tmp_path_factory) -> tuple[str, dict[str, int]]:
    path = tmp_path_factory.mktemp("snaptui") / "snap.duckdb"
    tids = {}
    for name in FILES:
        (tid,) = ingest_into(path, SNAP / name)
        tids[name] = tid
    return str(path), tids


@pytest.fixture(scope="module")
def oom_only(tmp_path_factory) -> str:
    """One timeline: the app opens it at once (no chooser), as the snapshots need."""
    path = tmp_path_factory.mktemp("snaptui") / "oom.duckdb"
    ingest_into(path, SNAP / "oom.pickle.gz")
    return str(path)


@pytest.fixture(scope="module")
def frag_only(tmp_path_factory) -> str:
    path = tmp_path_factory.mktemp("snaptui") / "frag.duckdb"
    ingest_into(path, SNAP / "frag_oom.pickle")
    return str(path)



def peak_row(db: str, tid: int) -> tuple:
    ((row),) = view(db, "SELECT event_index, allocated_bytes, reserved_bytes, "
                        "reserved_event_index, time_us, block_bytes, consistent "
                        "FROM allocator_peak WHERE timeline_id = ?", tid)
    return row


async def open_snapshot(pilot, tid: int) -> SnapshotScreen:
    await settle(pilot)
    pilot.app.open_timeline(tid)
    await settle(pilot)
    screen = pilot.app.screen
    assert isinstance(screen, SnapshotScreen)
    return screen


def shown_sites(screen: SnapshotScreen) -> list[tuple[str, int, int]]:
    """(site, blocks, bytes) of the site rows as the table shows them (figures parsed back
    from the cells)."""
    table = screen.query_one("#snap-sites", RowList)
    out = []
    for cells, line in zip(table.rows, screen.lines):
        if line.frame is None:
            site = screen.sites[line.site].site if line.site >= 0 else "(rest)"
            out.append((site, int(cells[0].replace(",", "")), int(cells[1].replace(",", ""))))
    return out


class TestHeaderAndScrub:
    @pytest.mark.parametrize("name", FILES)
    @asynctest
    async def test_header_peaks_then_sites_at_the_peak_sum_to_allocated(self, snap_db, name):
        """One session: the header's peaks equal allocator_peak and the screen opens on the
        peak; then Home, then p: the live blocks by site sum to the allocated bytes there,
        summed here from blocks_live_at and from the pickle's own replay."""
        db, tids = snap_db
        tid = tids[name]
        event, allocated, reserved, r_event, time_us, blocks_bytes, consistent = peak_row(
            db, tid)
        snap = load(SNAP / name)
        ref = replay(snap)
        assert (allocated, reserved) == (ref["peak"], ref["reserved_peak"])
        blocks = view(db, "SELECT site, requested_size FROM blocks_live_at(?, ?)", tid, event)
        by_site: dict[str, list[int]] = defaultdict(list)
        for site, size in blocks:
            by_site[site].append(size)
        assert sum(sum(v) for v in by_site.values()) == allocated
        assert sum(live_at(snap, event).values()) == allocated
        app = TlviewApp(db)
        async with app.run_test(size=(120, 40)) as pilot:
            screen = await open_snapshot(pilot, tid)
            o = screen.overview
            assert (o.peak_event, o.peak_allocated, o.peak_reserved, o.reserved_event,
                    o.peak_time_us, o.peak_blocks, o.consistent) == (
                event, allocated, reserved, r_event, time_us, blocks_bytes, consistent)
            text = screen_text(app)
            assert f"peak allocated {exact_bytes(allocated)} at event {event}" in text
            assert f"peak reserved  {exact_bytes(reserved)}" in text
            # The screen opens on the peak.
            assert screen.cursor == event

            await press(pilot, "home")
            assert screen.cursor == -1
            await press(pilot, "p")
            assert screen.cursor == event and screen.point.event_index == event
            shown = shown_sites(screen)
            assert sum(b for _, _, b in shown) == allocated
            assert sorted(shown) == sorted((s, len(v), sum(v)) for s, v in by_site.items())
            assert [b for _, _, b in shown] == sorted((b for _, _, b in shown), reverse=True)
            text = screen_text(app)
            assert f"allocated {exact_bytes(allocated)}" in text
            plural = "s" if len(blocks) != 1 else ""
            assert f"{len(blocks):,} block{plural} live after event {event}" in text

    @asynctest
    async def test_scrub_by_entry_shows_each_entry(self, snap_db):
        """o with no OOM leaves the cursor; right/left one entry, Shift ten, End the last,
        Home the start; the entry line is the allocator_events row there, the allocated
        bytes allocator_curve's."""
        db, tids = snap_db
        tid = tids["compiled_step.pickle.gz"]
        events = {r[0]: r[1:] for r in view(
            db, "SELECT e.event_index, e.action, e.size, e.stream, e.address, c.allocated_bytes "
                "FROM allocator_events e JOIN allocator_curve c USING (timeline_id, event_index) "
                "WHERE timeline_id = ?", tid)}
        (start_time,), = view(db, "SELECT time_us FROM allocator_curve WHERE timeline_id = ? "
                                  "AND event_index = -1", tid)
        times = dict(view(db, "SELECT event_index, time_us FROM allocator_events "
                              "WHERE timeline_id = ?", tid))
        app = TlviewApp(db)
        async with app.run_test(size=(120, 40)) as pilot:
            screen = await open_snapshot(pilot, tid)
            # o where the snapshot has no OOM leaves the cursor (this check was an
            # unreachable method nested in test_next_oom_both_ways, never run)
            before = screen.cursor
            await press(pilot, "o")
            assert screen.cursor == before
            assert "no OOM" in screen_text(app)
            await press(pilot, "home")
            assert screen.cursor == -1
            assert "the state before the first recorded entry" in screen_text(app)
            for keys, want in ((("right",), 0), (("right", "right"), 2), (("left",), 1),
                               (("shift+right",), 11), (("L",), 21), (("H",), 11),
                               (("end",), len(events) - 1), (("right",), len(events) - 1),
                               (("pageup",), len(events) - 11)):
                await press(pilot, *keys)
                assert screen.cursor == want, keys
                action, size, stream, address, allocated = events[want]
                text = screen_text(app)
                when = f"+{(times[want] - start_time) / 1000:,.3f} ms"
                assert f"event {want} {when}: {action} {exact_bytes(size)} stream {stream}" \
                    in text
                assert f"allocated {exact_bytes(allocated)}" in text
                assert sum(b for _, _, b in shown_sites(screen)) == allocated
            assert f"event {len(events) - 11} of {len(events)}" in text


class TestOoms:
    @pytest.mark.parametrize("name", OOM_FILES)
    @asynctest
    async def test_o_lands_on_the_oom_with_what_was_free(self, snap_db, name):
        db, tids = snap_db
        tid = tids[name]
        ((oom, requested, device_free),) = view(
            db, "SELECT event_index, size, device_free FROM allocator_events "
                "WHERE timeline_id = ? AND action = 'oom'", tid)
        ((largest, fits),) = view(
            db, "SELECT largest_free_block, request_fits FROM fragmentation WHERE "
                "timeline_id = ? AND moment = 'oom' AND request_fits IS NOT NULL", tid)
        ((allocated, live_by_site),) = view(
            db, "SELECT allocated_bytes, live_by_site FROM ooms WHERE timeline_id = ?", tid)
        app = TlviewApp(db)
        async with app.run_test(size=(120, 40)) as pilot:
            screen = await open_snapshot(pilot, tid)
            await press(pilot, "home", "o")
            assert screen.cursor == oom
            text = screen_text(app)
            assert f"event {oom} " in text and f"oom requested {exact_bytes(requested)}" in text
            assert f"CUDA free (device_free) {exact_bytes(device_free)}" in text
            assert f"largest free block {exact_bytes(largest)}" in text
            assert ("would not fit" if not fits else "would have fit") in text
            shown = shown_sites(screen)
            assert sum(b for _, _, b in shown) == allocated
            assert sorted(shown) == sorted((d["site"], d["blocks"], d["bytes"])
                                           for d in live_by_site)
            await press(pilot, "o")  # no later OOM: the cursor stays
            assert screen.cursor == oom
            await press(pilot, "home", "O")  # none earlier than the start
            assert screen.cursor == -1
            await press(pilot, "end", "right", "O")  # the OOM is the last entry
            assert screen.cursor == oom


def test_next_oom_both_ways():
    ooms = (5, 9, 40)
    assert [next_oom(ooms, c, 1) for c in (-1, 5, 6, 9, 40)] == [5, 9, 9, 40, None]
    assert [next_oom(ooms, c, -1) for c in (-1, 5, 6, 9, 41)] == [None, None, 5, 5, 40]


class TestStacks:
    @asynctest
    async def test_enter_opens_the_largest_blocks_stack_then_g_goes_to_an_entry(self, snap_db):
        """One session on the OOM snapshot: Enter opens the largest block's stack; then g."""
        db, tids = snap_db
        tid = tids["oom.pickle.gz"]
        event, *_ = peak_row(db, tid)
        app = TlviewApp(db)
        async with app.run_test(size=(120, 40)) as pilot:
            screen = await open_snapshot(pilot, tid)
            table = screen.query_one("#snap-sites", RowList)
            assert screen.focused is table
            i = next(i for i, s in enumerate(screen.sites) if s.stack_id is not None)
            site = screen.sites[i]
            ((stack,),) = view(
                db, "SELECT stack FROM blocks_live_at(?, ?) WHERE site = ? "
                    "ORDER BY size DESC, requested_size DESC, address LIMIT 1",
                tid, event, site.site)
            n_rows = len(table.rows)
            await press(pilot, *(["down"] * i), "enter")
            frames = [(cells[4].strip(), line.text) for cells, line in
                      zip(table.rows, screen.lines) if line.frame is not None and line.frame >= 0]
            assert [t for _, t in frames] == list(stack)
            assert [c for c, _ in frames] == [frame_label(f) for f in stack]
            assert table.marks and all(screen.lines[k].text == site.site for k in table.marks)
            text = screen_text(app)
            assert frame_label(stack[0]) in text
            await press(pilot, "enter")
            assert len(table.rows) == n_rows
            # An open stack stays open while the cursor moves.
            await press(pilot, "enter", "left")
            assert screen.cursor == event - 1
            assert any(line.frame is not None for line in screen.lines)
            # g goes to an entry (wherever the cursor was)
            await press(pilot, "g")
            await pilot.press(*"123")
            await press(pilot, "enter")
            assert screen.cursor == 123


class TestRouting:
    @asynctest
    async def test_chooser_lists_and_opens_a_snapshot(self, snap_db):
        db, tids = snap_db
        app = TlviewApp(db)
        async with app.run_test(size=(120, 40)) as pilot:
            await settle(pilot)
            chooser = app.screen
            assert isinstance(chooser, ChooserScreen)
            table = chooser.query_one(RowList)
            tid = tids["frag_oom.pickle"]
            row = next(i for i, r in enumerate(chooser.shown) if r.info.timeline_id == tid)
            event, allocated, *_ = peak_row(db, tid)
            assert (chooser.shown[row].peak.peak_step,
                    chooser.shown[row].peak.peak_bytes) == (event, allocated)
            assert table.rows[row][1] == "snapshot"
            await press(pilot, *(["down"] * row), "enter")
            screen = app.screen
            assert isinstance(screen, SnapshotScreen) and screen.timeline.timeline_id == tid
            await press(pilot, "question_mark")
            assert isinstance(app.screen, HelpScreen)
            assert "next / previous OOM" in app.screen.text
            await press(pilot, "escape", "escape")
            assert isinstance(app.screen, ChooserScreen)


def keys(*names: str):
    async def run_before(pilot) -> None:
        await settle(pilot)
        await press(pilot, *names)

    return run_before


class TestSnapshotScreenSnapshots:
    """What a person sees after opening the OOM snapshot: the peaks, the curve climbing
    to the 986 MiB reserved, the cursor on the OOM (64 MiB asked, 4 MiB the largest free
    block) and the five sites of the 26 live blocks; then the fragmentation case with the
    site's stack open."""

    def test_oom_80x24(self, snap_compare, oom_only):
        assert snap_compare(TlviewApp(oom_only), terminal_size=(80, 24),
                            run_before=keys("o"))

    def test_oom_160x48(self, snap_compare, oom_only):
        assert snap_compare(TlviewApp(oom_only), terminal_size=(160, 48),
                            run_before=keys("o"))

    def test_frag_stack_160x48(self, snap_compare, frag_only):
        assert snap_compare(TlviewApp(frag_only), terminal_size=(160, 48),
                            run_before=keys("o", "enter"))

    def test_ascii_80x24(self, snap_compare, frag_only):
        assert snap_compare(TlviewApp(frag_only, ascii_only=True), terminal_size=(80, 24),
                            run_before=keys("p"))


@pytest.mark.parametrize("n_events,width", [(60, 70), (436, 70), (9_700_000, 150), (0, 70)])
def test_curve_columns_and_clicks_agree(n_events, width):
    """A click on a column moves the cursor to an entry drawn in that column; entries
    are drawn left to right, the start in the first column, the last in the last."""
    buckets = max(1, min(width, n_events + 1))
    assert column_of(-1, n_events, buckets, width) == 0
    if n_events:
        assert width - width // buckets - 1 <= column_of(n_events - 1, n_events, buckets,
                                                         width) <= width - 1
    last = -1
    for x in range(width):
        e = event_at(x, n_events, buckets, width)
        assert -1 <= e <= max(-1, n_events - 1)
        assert e >= last
        last = e
        if n_events:
            assert column_of(e, n_events, buckets, width) <= x


def test_site_rows_expand_and_rest():
    sites = (SiteRow("/a/x.py:3:f", 2, 300, 1024, 7, 2), SiteRow("<no frames>", 1, 100, 512, None, 0))
    rows, lines = site_rows(sites, 500, {7: ("/t/torch/a.py:1:g", "/a/x.py:3:f")},
                            frozenset({"/a/x.py:3:f"}), rest=(3, 100))
    assert [r[4] for r in rows] == [
        "- x.py:3 f", "    the largest block's stack (of 2 at this site):", "    a.py:1 g",
        "    x.py:3 f", "  <no frames>", "  (the other sites)"]
    assert [r[3] for r in rows] == ["60.0%", "", "#0", "#1", "20.0%", "20.0%"]
    assert [(ln.site, ln.frame) for ln in lines] == [(0, None), (0, -1), (0, 0), (0, 1),
                                                     (1, None), (-1, None)]
    assert frame_label("??:0:at::empty(c10::ArrayRef<long>)") == "??:0 at::empty(c10::ArrayRef<long>)"
