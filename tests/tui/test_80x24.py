"""At 80x24, as a person first sees it (issue 24): after `p` the largest buffers of the
peak are on screen, the title keeps the step, `c` after coming back from a timeline
marks instead of comparing at once, `/` in the filter starts a new filter (no literal
'/'), `--ascii` draws ASCII borders, and the help's long lines wrap under their own
column. Each driven through Pilot on the H100 step's two scheduler IRs (long names)."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import Input
from tlview.tui.app import TlviewApp
from tlview.tui.chooser import ChooserScreen
from tlview.tui.compare_screen import CompareScreen
from tlview.tui.help import HelpScreen
from tlview.tui.live_buffers import LiveBuffers
from tlview.tui.timeline_screen import TimelineScreen

from tests.conftest import FIXTURES, ingest_into
from tests.tui.pilot import asynctest, press, settle, type_text
from tests.tui.screen_text import screen_text

DEBUG = FIXTURES / "torch_trace" / "gpu_step" / "debug"
SIZE = (80, 24)


@pytest.fixture(scope="module")
def irs(tmp_path_factory) -> Path:
    """1: model__0_backward_7.3/ir_post_fusion.txt (26 steps), 2: the forward's."""
    path = tmp_path_factory.mktemp("tui80") / "irs.duckdb"
    ingest_into(path, DEBUG / "model__0_backward_7.3" / "ir_post_fusion.txt",
                DEBUG / "model__0_forward_1.0" / "ir_post_fusion.txt")
    return path


async def _open(pilot, row: int) -> TimelineScreen:
    await settle(pilot)
    await press(pilot, *(["down"] * row), "enter")
    screen = pilot.app.screen
    assert isinstance(screen, TimelineScreen)
    await settle(pilot)
    return screen


class TestPeakKey:
    @asynctest
    async def test_p_shows_the_largest_buffers_of_the_peak_first(self, irs):
        """A small buffer selected before `p` (the last of the live list) stays live at
        the peak; the list used to keep it selected there and scroll the largest off."""
        app = TlviewApp(str(irs))
        async with app.run_test(size=SIZE) as pilot:
            screen = await _open(pilot, 0)
            await press(pilot, "g")
            await type_text(pilot, "13")
            await press(pilot, "enter", "tab")
            live = screen.query_one(LiveBuffers)
            assert screen.step == live.live.step == 13 and live.has_focus
            # the last buffer of the list that is still live at the peak (step 14)
            row = max(i for i, b in enumerate(live.live.buffers) if b.last_step >= 14)
            await press(pilot, *(["down"] * row))
            small = live.selected
            assert small is not None and live.cursor_row == row
            await press(pilot, "p")
            assert screen.step == live.live.step == 14  # the backward's peak
            at_peak = [b.buffer for b in live.live.buffers].index(small.buffer)
            assert at_peak >= live.size.height - 1  # kept selected, it would scroll the list
            assert (live.cursor_row, live.top) == (0, 0)
            biggest = live.live.buffers[0]
            body = screen_text(app).splitlines()
            header = next(i for i, ln in enumerate(body) if "buffer" in ln and "bytes" in ln)
            assert biggest.buffer in body[header + 1].split("▏")[-1]


class TestTitleAndHelp:
    @asynctest
    async def test_the_step_stays_when_the_name_is_long_and_help_lines_wrap(self, irs):
        """One session: the title line keeps the step when the name is long; then the
        help's long lines wrap under their own column."""
        app = TlviewApp(str(irs))
        async with app.run_test(size=SIZE) as pilot:
            screen = await _open(pilot, 0)
            await press(pilot, "p")
            title = screen_text(app).splitlines()[0]
            assert title.endswith(f"step {screen.step} of {screen.timeline.n_steps}")
            name = screen.timeline.title  # the title, as the chooser names it, cut at its end
            assert len(name) > 40 and title.startswith(" tlview  " + name[:30])

            await press(pilot, "question_mark")
            assert isinstance(app.screen, HelpScreen)
            lines = screen_text(app).splitlines()
            tab = next(i for i, ln in enumerate(lines) if "Tab " in ln and "focus:" in ln)
            key, col = lines[tab].index("Tab "), lines[tab].index("focus:")
            assert "then arrows scroll it" not in lines[tab]  # it does not fit on one line
            # the description goes on on the next line under its own column, not under Tab
            assert lines[tab + 1][key:col].strip() == "" and lines[tab + 1][col:col + 1].strip()
            assert "scroll it" in lines[tab + 1]


class TestCompareKey:
    @asynctest
    async def test_c_after_coming_back_marks_first(self, irs):
        """Back from timeline 1, on timeline 2: `c` marks 2 (it compared 1 with 2 at
        once); `c` on 1 then compares."""
        app = TlviewApp(str(irs))
        async with app.run_test(size=SIZE) as pilot:
            await _open(pilot, 0)
            await press(pilot, "escape", "down", "c")
            chooser = app.screen
            assert isinstance(chooser, ChooserScreen) and chooser.compare_from == 2
            assert "compare 2 with" in screen_text(app).splitlines()[0]
            await press(pilot, "up", "c")
            assert isinstance(app.screen, CompareScreen)
            assert (app.screen.a.timeline_id, app.screen.b.timeline_id) == (2, 1)


class TestFilterKey:
    @asynctest
    async def test_slash_in_the_filter_starts_a_new_filter(self, irs):
        app = TlviewApp(str(irs))
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot)
            await press(pilot, "slash")
            await type_text(pilot, "forward")
            box = app.screen.query_one(Input)
            assert box.value == "forward" and len(app.screen.shown) == 1
            await press(pilot, "slash")
            assert box.value == "forward" and box.has_focus  # no '/' typed
            await type_text(pilot, "backward")
            assert box.value == "backward"
            assert [r.info.timeline_id for r in app.screen.shown] == [1]


class TestAscii:
    @asynctest
    async def test_ascii_borders(self, irs):
        """--ascii: the panels' borders are drawn in ASCII (were box-drawing lines and
        eighth blocks)."""
        app = TlviewApp(str(irs), ascii_only=True)
        async with app.run_test(size=SIZE) as pilot:
            await _open(pilot, 0)
            text = screen_text(app)
            assert "execution order" in text and "live buffers" in text
            drawn = {c for c in text if not c.isascii()}
            assert not drawn & set("─│┌┐└┘▏▕▔▁"), sorted(drawn)
            await press(pilot, "question_mark")
            assert not {c for c in screen_text(app) if not c.isascii()} & set("─│┌┐└┘")


class TestGraphSources:
    """A compiled graph read from several artifacts (the H100 step's 0_forward: its debug
    folder's output_code.py and scheduler IR, its copy in the torch log): the chooser lists
    it once, "(N sources)"; its timeline screen says them under the title, at 80 columns,
    as the graphs view lists them."""

    @pytest.fixture(scope="class")
    def graph(self, tmp_path_factory) -> Path:
        import contextlib
        import io

        from tlview.cli import main

        tmp = tmp_path_factory.mktemp("tui80g")
        fwd = tmp / "step" / "debug" / "model__0_forward_1.0"
        fwd.mkdir(parents=True)
        for name in ("output_code.py", "ir_post_fusion.txt"):
            (fwd / name).write_bytes((DEBUG / "model__0_forward_1.0" / name).read_bytes())
        (tmp / "step" / "compile.log.gz").write_bytes((DEBUG.parent / "compile.log.gz")
                                                      .read_bytes())
        with contextlib.redirect_stdout(io.StringIO()):  # one run: the folder
            assert main(["ingest", str(tmp / "step"), "--db", str(tmp / "g.duckdb")]) == 0
        return tmp / "g.duckdb"

    @asynctest
    async def test_the_title_line_names_the_other_sources(self, graph):
        from tlview.store import open_database

        with open_database(graph, read_only=True) as d:
            (tid, forms), = d.sql("SELECT timeline_id, forms FROM graphs WHERE graph = "
                                  "'0_forward' AND list_contains(list_transform(forms, lambda f: "
                                  "f.source_kind), 'torch log')").fetchall()
        others = [f for f in forms if f["timeline_id"] != tid]
        app = TlviewApp(str(graph))
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot)
            chooser = app.screen
            (row,) = [i for i, r in enumerate(chooser.shown) if r.info.timeline_id == tid]
            from tlview.tui.chooser import cells

            assert cells(chooser.shown[row])[-2].endswith(
                f"({sum(f['form'] == 'output code' for f in forms)} sources)")
            await _open(pilot, row)
            line = screen_text(app).splitlines()[1].strip()
            assert len(line) <= SIZE[0] - 2
            copy = next(f for f in others if f["copy_of"] == tid)
            assert f"also in torch log #{copy['timeline_id']}; as " in line
            for f in others:
                assert f"#{f['timeline_id']}" in line
