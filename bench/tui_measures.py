"""The TUI's screens timed through Pilot, each function run in a fresh process by
bench_tui (``bench.child``). Times start before the UI is imported: the import is part
of what a person waits for.

``chooser`` runs against this tree and against an export of the tree before the
chooser was rewritten (bench_tui's baseline), so it uses only what both have: the app's
class, and its chooser screen's rows (``all_rows`` now, ``peaks`` then).
"""

from __future__ import annotations

import asyncio
import statistics
import time


async def _chooser(db: str, n: int, presses: int) -> dict:
    t0 = time.perf_counter()
    from tlview.tui.app import TlviewApp

    app = TlviewApp(db)
    out: dict = {}
    async with app.run_test(size=(80, 24)) as pilot:

        def ready() -> bool:
            s = app.screen
            name = type(s).__name__
            if name == "ChooserScreen":  # this tree
                return len(s.all_rows) == n and all(r.peak for r in s.all_rows)
            if name == "TimelineChooser":  # before: a DataTable, peaks set cell by cell
                return s.peaks is not None
            return False

        while not ready():
            await pilot.pause(0.005)
        await pilot.pause()
        out["ready_s"] = time.perf_counter() - t0
        screen = app.screen
        if type(screen).__name__ != "ChooserScreen":
            return out
        table = screen.query_one("#chooser-table")
        keys = []
        for _ in range(presses):
            t = time.perf_counter()
            await pilot.press("j")
            keys.append(time.perf_counter() - t)
        out["key_ms"] = statistics.median(keys) * 1000
        assert table.cursor == presses
        await pilot.press("slash")
        t = time.perf_counter()
        await pilot.press(*"job1234")
        out["filter_typed_ms"] = (time.perf_counter() - t) * 1000
        out["filter_rows"] = len(screen.shown)
    return out


def chooser(db: str, n: str, presses: str = "50") -> dict:
    return asyncio.run(_chooser(db, int(n), int(presses)))


async def _profiler(db: str, presses: int) -> dict:
    t0 = time.perf_counter()
    from textual import events
    from tlview.tui.app import TlviewApp
    from tlview.tui.kernel_lanes import KernelLanes
    from tlview.tui.kernel_panel import KernelPanel
    from tlview.tui.profiler_screen import ProfilerScreen

    drawn: list[float] = []
    shown: dict[int, float] = {}  # cursor_ns -> when the kernel panel showed it
    settled: dict[int, float] = {}  # ... and when its launch and memory had arrived

    original_line = KernelLanes.render_line

    def render_line(self, y):  # the lanes of a window drawn
        if self.window is not None and y == 1:
            drawn.append(time.perf_counter())
        return original_line(self, y)

    original_show = KernelPanel.show

    def show(self, text):
        screen = self.screen
        if isinstance(screen, ProfilerScreen) and screen.overview is not None:
            now = time.perf_counter()
            shown.setdefault(screen.cursor_ns, now)
            if screen.launch is not None or screen.kernel is None:
                settled.setdefault(screen.cursor_ns, now)
        return original_show(self, text)

    KernelLanes.render_line = render_line  # type: ignore[method-assign]
    KernelPanel.show = show  # type: ignore[method-assign]
    app = TlviewApp(db)
    out: dict = {}
    async with app.run_test(size=(80, 24)) as pilot:
        while not (isinstance(app.screen, ProfilerScreen) and drawn
                   and app.screen.kernel is not None and shown):
            await pilot.pause(0.002)
        screen = app.screen
        out["first_draw_s"] = max(drawn[0], min(shown.values())) - t0
        out["events"] = sum(lane.n_events for lane in screen.overview.lanes)
        while screen.summary is None or screen.attachments is None:
            await pilot.pause(0.01)
        out["summaries_s"] = time.perf_counter() - t0

        async def scrub(key: str) -> tuple[float, float]:
            """Median ms from the key to the kernel at the new cursor shown, and settled."""
            got, done = [], []
            for _ in range(presses):
                before = screen.cursor_ns
                t = time.perf_counter()
                app.post_message(events.Key(key, key if len(key) == 1 else None))
                while screen.cursor_ns == before or screen.cursor_ns not in shown:
                    await asyncio.sleep(0.0005)
                got.append(shown[screen.cursor_ns] - t)
                while screen.cursor_ns not in settled:
                    await asyncio.sleep(0.0005)
                done.append(settled[screen.cursor_ns] - t)
                while app.workers:  # let the last reads finish before the next key
                    await asyncio.sleep(0.0005)
            return statistics.median(got) * 1000, statistics.median(done) * 1000

        out["scrub_whole_ms"], out["scrub_whole_settled_ms"] = await scrub("right")
        for _ in range(10):  # zoom in 1024x: a window of ~30 ms of a 30 s trace
            await pilot.press("plus")
        while app.workers:
            await pilot.pause(0.01)
        out["zoomed_col_ns"] = screen.col_ns
        out["scrub_zoomed_ms"], out["scrub_zoomed_settled_ms"] = await scrub("right")
        out["scrub_kernel_ms"], out["scrub_kernel_settled_ms"] = await scrub("n")
    return out


def profiler(db: str, presses: str = "50") -> dict:
    return asyncio.run(_profiler(db, int(presses)))


def lane_query_floor(db: str) -> dict:
    """The floor: the lanes' window read and the kernel-at-cursor read straight from the
    store (no UI), on the whole trace and on a 1/1024 window, median of 20."""
    from tlview.store import open_database
    from tlview.store import profile_queries as pq

    out: dict = {}
    with open_database(db, read_only=True) as d:
        (tid,) = d.sql("SELECT timeline_id FROM timelines LIMIT 1").fetchone()
        ov = pq.trace_overview(d, tid)
        cols = 62
        for label, span in (("whole", ov.span_ns), ("zoomed", ov.span_ns // 1024)):
            col_ns = -(-span // cols)
            t0 = ov.first_ns + (ov.span_ns - span) // 2
            lanes, kernel = [], []
            for i in range(20):
                t = time.perf_counter()
                pq.lane_window(d, ov, t0 + i * col_ns, col_ns, cols)
                lanes.append(time.perf_counter() - t)
                t = time.perf_counter()
                pq.kernel_at(d, ov, ov.lanes[0], t0 + i * col_ns, col_ns)
                kernel.append(time.perf_counter() - t)
            out[f"lanes_{label}_ms"] = statistics.median(lanes) * 1000
            out[f"kernel_at_{label}_ms"] = statistics.median(kernel) * 1000
    return out


def migrate_here(db: str) -> str:
    """Bring ``db``'s views to the version of tlview this interpreter imports."""
    from tlview.store import open_database

    open_database(db).close()
    return db


async def _snapshot(db: str, presses: int) -> dict:
    """The snapshot screen on a database holding one snapshot timeline: first draw (the
    header, the curve and the live blocks by site at the peak shown), then per scrub key
    (median of ``presses``): from the key to the entry shown, and to its sites shown."""
    t0 = time.perf_counter()
    from textual import events
    from tlview.tui.allocator_curve import AllocatorCurve
    from tlview.tui.app import TlviewApp
    from tlview.tui.snapshot_screen import SnapshotScreen

    app = TlviewApp(db)
    out: dict = {}
    async with app.run_test(size=(80, 24)) as pilot:

        def drawn() -> bool:
            s = app.screen
            return (isinstance(s, SnapshotScreen) and s.sites_point is not None
                    and s.sites_point.event_index == s.cursor and bool(s.lines)
                    and s.query_one(AllocatorCurve).curve is not None)

        while not drawn():
            await pilot.pause(0.002)
        out["first_draw_s"] = time.perf_counter() - t0
        screen = app.screen
        assert isinstance(screen, SnapshotScreen) and screen.overview is not None
        out["events"] = screen.overview.n_events
        out["sites_at_peak"] = len(screen.sites)
        out["blocks_at_peak"] = screen.point.active_blocks

        async def scrub(key: str) -> tuple[float, float]:
            got, settled = [], []
            for _ in range(presses):
                before = screen.cursor
                t = time.perf_counter()
                app.post_message(events.Key(key, None))
                while screen.cursor == before or screen.point is None \
                        or screen.point.event_index != screen.cursor:
                    await asyncio.sleep(0.0005)
                got.append(time.perf_counter() - t)
                while screen.sites_point is None \
                        or screen.sites_point.event_index != screen.cursor:
                    await asyncio.sleep(0.0005)
                settled.append(time.perf_counter() - t)
                while app.workers:
                    await asyncio.sleep(0.0005)
            return statistics.median(got) * 1000, statistics.median(settled) * 1000

        out["scrub_entry_ms"], out["scrub_entry_sites_ms"] = await scrub("right")
        out["scrub_column_ms"], out["scrub_column_sites_ms"] = await scrub("pagedown")
        out["entries_per_column"] = -(-(screen.overview.n_events + 1)
                                      // screen.query_one(AllocatorCurve).bar_width)
    return out


def snapshot(db: str, presses: str = "50") -> dict:
    return asyncio.run(_snapshot(db, int(presses)))


def snapshot_floor(db: str) -> dict:
    """The floor: what one cursor position reads (the point and the sites), straight
    from the store without the UI, at the peak and beside it, median of 20."""
    from tlview.store import open_database
    from tlview.store import snapshot_queries as sq

    with open_database(db, read_only=True) as d:
        (tid,) = d.sql("SELECT timeline_id FROM timelines LIMIT 1").fetchone()
        t = time.perf_counter()
        o = sq.overview(d, tid)
        overview_ms = (time.perf_counter() - t) * 1000
        assert o is not None
        t = time.perf_counter()
        sq.curve(d, tid, 70, o.n_events)
        curve_ms = (time.perf_counter() - t) * 1000
        points, sites = [], []
        for i in range(20):
            t = time.perf_counter()
            sq.point(d, tid, o.peak_event + i)
            points.append(time.perf_counter() - t)
            t = time.perf_counter()
            sq.sites_at(d, tid, o.peak_event + i, 500)
            sites.append(time.perf_counter() - t)
    return {"overview_ms": overview_ms, "curve_ms": curve_ms,
            "point_ms": statistics.median(points) * 1000,
            "sites_ms": statistics.median(sites) * 1000}
