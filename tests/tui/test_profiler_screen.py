"""The profiler screen on the real GPU fixtures: lanes, scrubbing, the kernel at the cursor,
jumps between a kernel and its compiled node, steps, overlap and measured memory.

Lanes and kernels are checked against the trace itself (json.load, tests/reference_profile);
launches, attachments, step totals and overlap against the profile views they come from
(``kernel_launches``, ``kernel_attachments``, ``step_totals``, ``comm_overlap*``), queried
directly.
"""

from __future__ import annotations

from collections import defaultdict

import pytest
from tlview.store import open_database
from tlview.store import profile_queries as pq
from tlview.tui.app import TlviewApp
from tlview.tui.profiler_screen import ProfilerScreen
from tlview.tui.timeline_screen import TimelineScreen

from tests.conftest import FIXTURES, view
from tests.reference_profile import interval, load
from tests.tui.conftest import COLL_RANK0, PROFILE_GROUP
from tests.tui.pilot import asynctest, press, settle, type_text
from tests.tui.screen_text import screen_text

JAX = FIXTURES / "profile" / "jax" / "vm.trace.json.gz"
GPU = {"kernel", "gpu_memcpy", "gpu_memset"}


pytestmark = PROFILE_GROUP  # its databases are built once (tests/tui/conftest.py)


@pytest.fixture
def single(profile_single):
    return profile_single


@pytest.fixture
def coll(coll_rank0):
    return coll_rank0


def trace_tid(path) -> int:
    ((tid,),) = view(path, "SELECT timeline_id FROM timelines WHERE format = 'kineto'")
    return tid


def gpu_rows(trace):
    """(stream, ts_ns, end_ns, name) of every GPU event, by (ts, file order)."""
    rows = [(int(e["tid"]), *interval(e), e["name"], i)
            for i, e in enumerate(trace["traceEvents"])
            if e.get("ph") == "X" and e.get("cat") in GPU]
    return [r[:4] for r in sorted(rows, key=lambda r: (r[1], r[4]))]


@pytest.fixture
def db(coll):
    with open_database(coll, read_only=True) as d:
        yield d


class TestWindowReads:
    """The store's window reads against the trace read with json.load."""

    def test_lanes_and_busy_time_per_column(self, db, coll):
        trace = load(COLL_RANK0 / "rank0.pt.trace.json.gz")
        rows = gpu_rows(trace)
        ov = pq.trace_overview(db, trace_tid(coll))
        streams = sorted({r[0] for r in rows})
        assert [lane.stream for lane in ov.lanes] == streams == [7, 17]
        assert (ov.first_ns, ov.last_ns) == (min(r[1] for r in rows), max(r[2] for r in rows))
        cols = 70
        col_ns = -(-ov.span_ns // cols)
        win = pq.lane_window(db, ov, ov.first_ns, col_ns, cols)
        for i, stream in enumerate(streams):
            want = [0] * cols
            for s, ts, end, _ in rows:
                if s != stream:
                    continue
                for c in range(cols):
                    lo, hi = ov.first_ns + c * col_ns, ov.first_ns + (c + 1) * col_ns
                    want[c] += max(0, min(end, hi) - max(ts, lo))
            assert list(win.busy[i]) == [min(w, col_ns) for w in want]

    def test_walking_a_lane_kernel_by_kernel_visits_every_event(self, db, coll):
        trace = load(COLL_RANK0 / "rank0.pt.trace.json.gz")
        ov = pq.trace_overview(db, trace_tid(coll))
        for lane in ov.lanes:
            want = [(ts, end - ts, name) for s, ts, end, name in gpu_rows(trace)
                    if s == lane.stream]
            got = []
            k = pq.adjacent_kernel(db, ov, lane, ov.first_ns - 1, True)
            while k is not None:
                got.append((k.ts_ns, k.dur_ns, k.name))
                k = pq.adjacent_kernel(db, ov, lane, k, True)
            assert got == want
            back = pq.adjacent_kernel(db, ov, lane, ov.last_ns + 1, False)
            assert (back.ts_ns, back.dur_ns, back.name) == want[-1]
            mid = want[len(want) // 2]
            at = pq.kernel_at(db, ov, lane, mid[0] + mid[1] // 2, 1)
            assert (at.ts_ns, at.dur_ns, at.name) == mid

    def test_launch_of_every_kernel_is_kernel_launches(self, db, coll):
        tid = trace_tid(coll)
        ov = pq.trace_overview(db, tid)
        want = view(coll, "SELECT seq, runtime, cpu_op FROM kernel_launches "
                          "WHERE timeline_id = ? ORDER BY seq", tid)
        assert len(want) == 60
        for seq, runtime, cpu_op in want:
            launch = pq.kernel_launch(db, ov, pq.kernel_by_seq(db, tid, seq))
            assert (launch.runtime, launch.cpu_op) == (runtime, cpu_op)

    def test_summaries_are_the_views(self, db, coll):
        tid = trace_tid(coll)
        s = pq.trace_summary(db, pq.trace_overview(db, tid))
        steps = view(coll, "SELECT name, cpu_dur_ns, n_gpu_events, kernel_ns, comm_ns, "
                           "memcpy_ns, memset_ns, gpu_first_ns, gpu_last_ns FROM step_totals "
                           "WHERE timeline_id = ? ORDER BY step", tid)
        assert [(x.name, x.cpu_dur_ns, x.n_gpu_events, x.kernel_ns, x.comm_ns, x.memcpy_ns,
                 x.memset_ns, x.gpu_first_ns, x.gpu_last_ns) for x in s.steps] == steps
        assert [(o.device, o.comm_ns, o.overlapped_ns, o.exposed_ns, float(o.overlap_pct))
                for o in s.overlap] == view(
            coll, "SELECT device, comm_ns, overlapped_ns, exposed_ns, overlap_pct "
                  "FROM comm_overlap_summary WHERE timeline_id = ?", tid)
        assert s.overlap[0].overlap_pct == pytest.approx(30.78)
        assert {k: (c.overlapped_ns, c.exposed_ns) for k, c in s.comm.items()} == {
            seq: (o, e) for seq, o, e in view(coll, "SELECT seq, overlapped_ns, exposed_ns "
                                                    "FROM comm_overlap WHERE timeline_id = ?",
                                              tid)}

    def test_memory_columns_from_the_allocator_events(self, db, coll):
        tid = trace_tid(coll)
        ov = pq.trace_overview(db, tid)
        events = view(coll, "SELECT ts_ns, total_allocated FROM measured_memory "
                            "WHERE timeline_id = ? AND device = ? ORDER BY ts_ns, seq",
                      tid, ov.memory_device)
        cols = 50
        col_ns = -(-ov.span_ns // cols)
        win = pq.memory_window(db, ov, ov.first_ns, col_ns, cols)
        level = None
        want = []
        for c in range(cols):
            lo, hi = ov.first_ns + c * col_ns, ov.first_ns + (c + 1) * col_ns
            before = [a for t, a in events if t < lo]
            level = before[-1] if before else None
            inside = [a for t, a in events if lo <= t < hi]
            highs = [v for v in [level, *inside] if v is not None]
            want.append(max(highs) if highs else None)
        assert list(win.values) == want
        ((peak,),) = view(coll, "SELECT peak_allocated FROM measured_peak_memory "
                                "WHERE timeline_id = ?", tid)
        assert max(v for v in win.values if v is not None) == peak


class TestProfilerScreen:
    @asynctest
    async def test_trace_opens_on_lanes_not_no_steps_then_zoom_and_steps(self, coll):
        """One session: the trace opens on its lanes, then +/0 zoom and ]/[ step."""
        trace = load(COLL_RANK0 / "rank0.pt.trace.json.gz")
        first7 = next(r for r in gpu_rows(trace) if r[0] == 7)
        tid = trace_tid(coll)
        steps = view(coll, "SELECT gpu_first_ns, gpu_last_ns FROM step_totals "
                           "WHERE timeline_id = ? ORDER BY step", tid)
        app = TlviewApp(str(coll))
        async with app.run_test(size=(80, 24)) as pilot:
            await settle(pilot)
            await press(pilot, "slash")
            await type_text(pilot, "kineto")
            await press(pilot, "enter", "enter")
            screen = app.screen
            assert isinstance(screen, ProfilerScreen)
            text = screen_text(app)
            assert "no steps" not in text
            assert "s7 compute" in text and "s17 comm" in text
            assert (screen.kernel.ts_ns, screen.kernel.name) == (first7[1], first7[3])
            assert "30.78% overlapped by compute" in text
            assert "3 profiler steps" in text

            whole = screen.col_ns
            await press(pilot, "plus", "plus")
            assert screen.col_ns == whole // 4
            await press(pilot, "0")
            assert screen.col_ns == whole
            await press(pilot, "right_square_bracket")  # from step 1, where the cursor is
            first, last = steps[1]
            assert screen.cursor_ns == first and screen.t0 == first
            assert screen.t0 + screen.cols * screen.col_ns >= last
            assert screen.query_one("#steps-table").cursor == 1
            await press(pilot, "left_square_bracket")
            assert screen.cursor_ns == steps[0][0]

    @asynctest
    async def test_scrub_by_kernel_and_time_shows_duration_and_launch(self, coll):
        tid = trace_tid(coll)
        comm = view(coll, "SELECT seq, name, dur_ns, overlapped_ns, exposed_ns FROM comm_overlap "
                          "WHERE timeline_id = ? ORDER BY ts_ns, seq LIMIT 2", tid)
        launches = dict(view(coll, "SELECT seq, cpu_op FROM kernel_launches "
                                   "WHERE timeline_id = ?", tid))
        app = TlviewApp(str(coll))
        async with app.run_test(size=(100, 30)) as pilot:
            await settle(pilot)
            await press(pilot, "slash")
            await type_text(pilot, "kineto")
            await press(pilot, "enter", "enter", "j", "home")  # the communication lane
            screen = app.screen
            assert screen.kernel.seq == comm[0][0] and screen.kernel.category == "comm"
            await press(pilot, "n")
            seq, name, dur, overlapped, exposed = comm[1]
            assert (screen.kernel.seq, screen.kernel.name, screen.kernel.dur_ns) == \
                (seq, name, dur)
            text = str(screen.query_one("#kernel-text").render())
            assert f" {dur / 1e3:.1f} us · ProfilerStep#1" in text
            assert f"→ {launches[seq]}" in text
            assert f"exposed {exposed / 1e3:.1f} us" in text
            assert f"overlapped {overlapped / 1e3:.1f} us" in text
            col = screen.cursor_col
            await press(pilot, "right", "right")
            assert screen.cursor_col == col + 2
            await press(pilot, "N")
            assert screen.kernel.ts_ns < screen.cursor_ns + screen.col_ns

    @asynctest
    async def test_enter_opens_the_attached_node_and_m_comes_back(self, single):
        """One session: Enter on a kernel opens its node, m comes back; then m on a copy
        of the graph: the folder holds the forward's output code twice (compile.log and
        the debug tree): the copy's times come from the other (graph_copies); m finds
        its kernels."""
        tid = trace_tid(single)
        att = view(single, "SELECT a.seq, a.graph_timeline_id, a.step, a.node, e.ts_ns "
                           "FROM kernel_attachments a JOIN measured e "
                           "ON e.timeline_id = a.timeline_id AND e.seq = a.seq "
                           "WHERE a.timeline_id = ? ORDER BY e.ts_ns, a.seq, "
                           "a.graph_timeline_id", tid)
        first = att[0]
        copy, source, copy_step = view(
            single, "SELECT timeline_id, copy_of, min(step) FROM node_times "
                    "WHERE copy_of IS NOT NULL AND n_gpu_events > 0 GROUP BY ALL "
                    "ORDER BY timeline_id LIMIT 1")[0]
        copy_want = [r[0] for r in view(
            single, "SELECT a.seq FROM kernel_attachments a JOIN measured e "
                    "ON e.timeline_id = a.timeline_id AND e.seq = a.seq "
                    "WHERE a.graph_timeline_id = ? AND a.step = ? ORDER BY e.ts_ns, a.seq",
            source, copy_step)]
        assert copy_want
        app = TlviewApp(str(single))
        async with app.run_test(size=(100, 30)) as pilot:
            await settle(pilot)
            await press(pilot, "slash")
            await type_text(pilot, "kineto")
            await press(pilot, "enter", "enter")
            screen = app.screen
            assert screen.kernel.seq == first[0]
            assert f"{first[3]} step {first[2]}" in str(screen.query_one("#kernel-text").render())
            await press(pilot, "enter")
            node_screen = app.screen
            assert isinstance(node_screen, TimelineScreen)
            assert (node_screen.timeline.timeline_id, node_screen.step) == first[1:3]
            # the node's measured kernels, from the compiled timeline
            want = [s for s, g, st, _, _ in att if (g, st) == first[1:3]]
            await press(pilot, "m")
            back = app.screen
            assert isinstance(back, ProfilerScreen) and back is not screen
            assert back.kernel.seq == want[0]
            assert [k.seq for k in back.node_kernels] == want
            assert len(want) == 3  # the node ran in each of the 3 profiled steps
            await press(pilot, "n")
            assert back.kernel.seq == want[1]
            await press(pilot, "escape", "escape")
            assert app.screen is node_screen
            await press(pilot, "escape")
            assert app.screen is screen

            app.open_timeline(copy, step=copy_step)
            await settle(pilot)
            await press(pilot, "m")
            on_copy = app.screen
            assert isinstance(on_copy, ProfilerScreen)
            assert [k.seq for k in on_copy.node_kernels] == copy_want

    @asynctest
    async def test_jax_trace(self, alone):
        path, _ = alone(JAX)  # once per test process: read only
        trace = load(JAX)
        kernels = [e for e in trace["traceEvents"] if e.get("ph") == "X"
                   and str(e.get("pid")) in {str(p) for p in _gpu_pids(trace)}]
        app = TlviewApp(str(path))
        async with app.run_test(size=(80, 24)) as pilot:
            await settle(pilot)
            screen = app.screen
            assert isinstance(screen, ProfilerScreen)
            ov = screen.overview
            assert sum(lane.n_events for lane in ov.lanes) == len(kernels) == 33
            text = screen_text(app)
            assert "no ProfilerStep in this trace" in text
            assert "no [memory] events" in text


def _gpu_pids(trace):
    """JAX: the processes named for a GPU device (/device:GPU:N)."""
    out = defaultdict(str)
    for e in trace["traceEvents"]:
        if e.get("ph") == "M" and e.get("name") == "process_name":
            out[e["pid"]] = e["args"]["name"]
    return [p for p, n in out.items() if "/device:GPU" in n]
