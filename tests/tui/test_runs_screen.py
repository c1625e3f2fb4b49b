"""The runs screen (what `tlview DB` shows first) and the chooser grouped by run.

The database holds two runs as `tlview ingest` makes them: the OOM snapshot (a file) and
the 2-rank delayed folder. Each verdict line's figures are checked against the views they
come from (run_peaks, ooms, stragglers); Enter on a verdict opens its evidence.
"""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest
from tlview.cli import main
from tlview.store import open_database
from tlview.store.fmt import short_bytes, short_ns
from tlview.store.timeline_queries import TimelineInfo
from tlview.tui.app import TlviewApp
from tlview.tui.chooser import ChooserScreen
from tlview.tui.chooser_rows import chooser_rows, filter_rows
from tlview.tui.profiler_screen import ProfilerScreen
from tlview.tui.ranks_screen import RanksScreen
from tlview.tui.runs_screen import RunsScreen
from tlview.tui.snapshot_screen import SnapshotScreen
from tlview.tui.timeline_screen import TimelineScreen

from tests.conftest import FIXTURES
from tests.tui.pilot import asynctest, press, settle, wait_for
from tests.tui.screen_text import screen_text

OOM = FIXTURES / "snapshot" / "oom.pickle.gz"
DELAYED = FIXTURES / "ranks" / "delayed"
MLP_TRAIN = FIXTURES / "torch" / "mlp_train"


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory) -> Path:
    db = tmp_path_factory.mktemp("tui-runs") / "runs.duckdb"
    for path in (OOM, DELAYED):
        with contextlib.redirect_stdout(io.StringIO()):
            assert main(["ingest", str(path), "--db", str(db)]) == 0
    return db


def view(db: Path, sql: str) -> list[tuple]:
    with open_database(db, read_only=True) as d:
        return d.sql(sql).fetchall()


async def runs_read(pilot) -> RunsScreen:
    app = pilot.app
    await wait_for(pilot, lambda: isinstance(app.screen, RunsScreen)
                   and len(app.screen.verdicts) == 2, timeout=60)
    await settle(pilot)
    return app.screen


class TestRunsScreen:
    @asynctest
    async def test_each_run_and_its_verdicts_with_the_views_figures(self, two_runs):
        (peak,) = view(two_runs, "SELECT p.peak_bytes FROM run_peaks p JOIN runs r USING (run_id) "
                                 "WHERE r.name = 'oom'")
        (oom,) = view(two_runs, "SELECT requested_bytes, event_index FROM ooms")
        (caused,) = view(two_runs, "SELECT max(caused_wait_ns) FROM stragglers")
        app = TlviewApp(str(two_runs), runs_first=True)
        async with app.run_test(size=(100, 30)) as pilot:
            screen = await runs_read(pilot)
            lines = [ln.text for ln in screen.lines]
            assert lines[0].startswith("oom  1 timeline from 1 file: 1 allocator snapshot")
            assert f"Peak {short_bytes(peak[0])}, measured by the allocator in whole blocks" \
                in lines[1]
            oom_line = next(t for t in lines if "OOM in" in t)
            assert f"asked for {short_bytes(oom[0])}" in oom_line
            assert f"at trace entry {oom[1]}" in oom_line
            straggler = next(t for t in lines if "Straggler rank" in t)
            assert f"cost the other ranks {short_ns(caused[0])}" in straggler
            assert "delayed  2 timelines from 2 files: 2 profiler traces" in screen_text(app)
            assert screen.query_one("#runs-list").cursor == 1  # on the first verdict

    @asynctest
    async def test_enter_on_the_peak_the_step_time_a_run_and_the_evidence(self, two_runs):
        """One session at 80x24. The OOM run's peak opens the snapshot at the peak's trace
        entry (run_peaks), the delayed pair's step time its profiler trace; Enter on a run
        lists its timelines (s comes back); Enter on a verdict opens its evidence."""
        (at,) = view(two_runs, "SELECT p.at_step FROM run_peaks p JOIN runs r USING (run_id) "
                               "WHERE r.name = 'oom'")[0]
        (oom_at,) = view(two_runs, "SELECT event_index FROM ooms")[0]
        app = TlviewApp(str(two_runs), runs_first=True)
        async with app.run_test(size=(80, 24)) as pilot:
            screen = await runs_read(pilot)
            for key, shown in (("peak", SnapshotScreen), ("time", ProfilerScreen)):
                i = next(i for i, ln in enumerate(screen.lines) if ln.verdict is not None
                         and ln.verdict.key == key)
                screen.query_one("#runs-list").cursor = i
                await settle(pilot)
                await press(pilot, "enter")
                await wait_for(pilot, lambda s=shown: isinstance(app.screen, s))
                if key == "peak":
                    assert app.screen.start_event == at
                await press(pilot, "escape")
                await wait_for(pilot, lambda: isinstance(app.screen, RunsScreen))
                screen = app.screen

            # Enter on a run lists its timelines
            screen = await runs_read(pilot)
            i = next(i for i, ln in enumerate(screen.lines) if ln.run.name == "delayed")
            screen.query_one("#runs-list").cursor = i
            await settle(pilot)
            await press(pilot, "enter")
            await wait_for(pilot, lambda: isinstance(app.screen, ChooserScreen))
            await settle(pilot)
            assert [r.info.name for r in app.screen.shown] == ["rank0 rank0.pt.trace.json.gz",
                                                               "rank1 rank1.pt.trace.json.gz"]
            # s: the runs again, as read (the file is unchanged): no report read again
            reads = []
            real_run = app.reader.run

            def counted(lane, fn, *args, **kw):
                reads.append(fn.__name__)
                return real_run(lane, fn, *args, **kw)

            app.reader.run = counted
            await press(pilot, "s")
            await wait_for(pilot, lambda: isinstance(app.screen, RunsScreen))

            # Enter on a verdict opens its evidence
            screen = await runs_read(pilot)
            app.reader.run = real_run
            assert "headline" not in reads and "list_runs" not in reads
            i = next(i for i, ln in enumerate(screen.lines) if ln.verdict is not None
                     and ln.verdict.key == "oom1")
            screen.query_one("#runs-list").cursor = i
            await settle(pilot)
            assert "Enter: the snapshot at trace entry 436" in screen_text(app)
            await press(pilot, "enter")
            await wait_for(pilot, lambda: isinstance(app.screen, SnapshotScreen))
            assert app.screen.start_event == oom_at
            await press(pilot, "escape")
            await wait_for(pilot, lambda: isinstance(app.screen, RunsScreen))
            screen = app.screen
            i = next(i for i, ln in enumerate(screen.lines) if ln.verdict is not None
                     and ln.verdict.key == "straggler")
            screen.query_one("#runs-list").cursor = i
            await settle(pilot)
            await press(pilot, "enter")
            await wait_for(pilot, lambda: isinstance(app.screen, RanksScreen))

    @asynctest
    async def test_enter_on_a_compiled_graphs_peak_opens_it_at_that_step(self, tmp_path):
        """A run of compiled graphs alone: its peak is the compiler's plan (peaks), Enter
        opens the graph at the step of its peak."""
        db = tmp_path / "graphs.duckdb"
        with contextlib.redirect_stdout(io.StringIO()):
            assert main(["ingest", str(MLP_TRAIN), "--db", str(db)]) == 0
        ((tid, step),) = view(db, "SELECT timeline_id, at_step FROM run_peaks")
        (want,) = view(db, f"SELECT peak_step FROM peak_memory WHERE timeline_id = {tid}")[0]
        assert step == want
        app = TlviewApp(str(db), runs_first=True)
        async with app.run_test(size=(80, 24)) as pilot:
            await wait_for(pilot, lambda: isinstance(app.screen, RunsScreen)
                           and any(ln.verdict is not None for ln in app.screen.lines), timeout=60)
            await settle(pilot)
            screen = app.screen
            i = next(i for i, ln in enumerate(screen.lines) if ln.verdict is not None
                     and ln.verdict.key == "peak")
            screen.query_one("#runs-list").cursor = i
            await settle(pilot)
            assert f"Enter: the compiled graph at step {step}" in screen_text(app)
            await press(pilot, "enter")
            await wait_for(pilot, lambda: isinstance(app.screen, TimelineScreen))
            assert (app.screen.timeline.timeline_id, app.screen.step) == (tid, step)


def test_the_chooser_lists_a_graph_once_and_groups_by_run():
    t = [TimelineInfo(1, "0_forward", "inductor_wrapper", "cuda:0", 10, "/r/a/compile.log", 1,
                      2, "a", "a · 0_forward · output code in torch log", copy_of=3),
         TimelineInfo(2, "TORCH_TRACE", "torch_trace", None, 0, "/r/a/trace.log", 2,
                      2, "a", "a · TORCH_TRACE · compile log"),
         TimelineInfo(3, "0_forward", "inductor_wrapper", "cuda:0", 10, "/r/a/x/output_code.py",
                      3, 2, "a", "a · 0_forward · output code"),
         TimelineInfo(4, "oom cuda:0", "cuda_snapshot", "cuda:0", 0, "/r/oom.pickle", 4,
                      1, "oom", "oom · oom cuda:0 · allocator snapshot")]
    rows = chooser_rows(t, None)
    assert [r.info.timeline_id for r in rows] == [4, 1, 2, 3]  # run 1, then run 2
    shown = filter_rows(rows, "")
    assert [(r.info.timeline_id, r.name, r.copies) for r in shown] == [
        (4, "oom cuda:0 · allocator snapshot", 0), (3, "0_forward · output code", 1)]
    assert len(filter_rows(rows, "", everything=True)) == 4
    assert [r.info.timeline_id for r in filter_rows(rows, "oom")] == [4]


class TestSnapshots:
    """The runs screen at 80x24: the OOM run's verdicts (peak, holder, OOM) and the
    delayed pair's (peak, straggler, step time), the cursor on the first, its full text
    below."""

    def test_runs_80x24(self, snap_compare, two_runs):
        async def run_before(pilot) -> None:
            await runs_read(pilot)

        assert snap_compare(TlviewApp(str(two_runs), runs_first=True), terminal_size=(80, 24),
                            run_before=run_before)
