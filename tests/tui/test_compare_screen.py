"""The compare mode: ``c`` on two timelines in the chooser, driven with Pilot, and its
snapshots at 80x24 and 160x48.

The pairs: the CPU MLP forward's scheduler IR with its first layer 4x wider
(tests/fixtures/diff/cpu_base, cpu_wide), and the two allocator snapshots of which one
leaks an activation per step (leak0, leak1)."""

from __future__ import annotations

from pathlib import Path

import pytest
from tlview.tui.app import TlviewApp
from tlview.tui.chooser import ChooserScreen
from tlview.tui.compare_curve import CompareCurve, carried
from tlview.tui.compare_screen import CompareScreen
from tlview.tui.timeline_screen import TimelineScreen

from tests.conftest import FIXTURES, ingest_into
from tests.tui.pilot import asynctest, press, settle
from tests.tui.screen_text import screen_text

DIFF = FIXTURES / "diff"


@pytest.fixture(scope="module")
def pair_db(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("cmp") / "pair.duckdb"
    ingest_into(path, DIFF / "cpu_base" / "0_forward.ir_post_fusion.txt",
                DIFF / "cpu_wide" / "0_forward.ir_post_fusion.txt",
                DIFF / "leak0.pickle.gz")
    return path


@pytest.fixture(scope="module")
def leak_db(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("cmp") / "leak.duckdb"
    ingest_into(path, DIFF / "leak0.pickle.gz", DIFF / "leak1.pickle.gz")
    return path


def test_carried_values_fill_the_steps_one_side_lacks():
    assert carried([None, 5, None, 7, None]) == (0, 5, 5, 7, 7)


class TestCompareMode:
    @asynctest
    async def test_c_then_c_compares_and_the_cursor_moves_on_both(self, pair_db):
        before = pair_db.read_bytes()
        app = TlviewApp(str(pair_db))
        async with app.run_test(size=(100, 30)) as pilot:
            await settle(pilot)
            await press(pilot, "c")
            assert isinstance(app.screen, ChooserScreen)
            assert "compare 1 with" in screen_text(app).splitlines()[0]
            await press(pilot, "j", "c")
            await settle(pilot)
            screen = app.screen
            assert isinstance(screen, CompareScreen)
            snap = screen.snapshot
            assert snap is not None and not snap.alignment.stored
            al = snap.alignment
            assert (al.same, al.changed, al.deleted, al.inserted) == (8, 2, 0, 0)
            # the wide layer's addmm and relu are the changed steps; the curves as stored
            assert [s.method for s in snap.steps[:3]] == ["changed", "changed", "same"]
            curve = screen.query_one(CompareCurve)
            assert curve.a[:2] == (32_768, 65_536) and curve.b[:2] == (131_072, 262_144)
            text = screen_text(app)
            assert "1/10 changed: A 0 op0 32.0 KiB | B 0 op0 128 KiB | +96.0 KiB" in text
            assert "peak +152 KiB, by buffer" in text
            await press(pilot, "j")
            assert curve.cursor == 1
            assert "2/10 changed: A 1 op1 64.0 KiB | B 1 op1 256 KiB" in screen_text(app)
            await press(pilot, "P")  # A's peak: step 5
            assert curve.cursor == 5 and "A 5 op5 104 KiB" in screen_text(app)
            await press(pilot, "p")  # B's peak: step 1
            assert curve.cursor == 1
            await press(pilot, "home", "n")
            assert curve.cursor == 1  # the next step not the same, after step 0
            await press(pilot, "escape")
            assert isinstance(app.screen, ChooserScreen)
        assert pair_db.read_bytes() == before  # the UI aligns without writing the file

    @asynctest
    async def test_back_from_a_timeline_c_marks_first(self, pair_db):
        """The timeline come back from is not taken as the first (`c` compared at
        once, issue 24): `c` marks, `c` on another compares."""
        app = TlviewApp(str(pair_db))
        async with app.run_test(size=(100, 30)) as pilot:
            await settle(pilot)
            await press(pilot, "j", "enter")
            assert isinstance(app.screen, TimelineScreen)
            await press(pilot, "t", "k", "c")
            assert isinstance(app.screen, ChooserScreen) and app.screen.compare_from == 1
            await press(pilot, "j", "c")
            await settle(pilot)
            assert isinstance(app.screen, CompareScreen)
            assert (app.screen.a.timeline_id, app.screen.b.timeline_id) == (1, 2)

    @asynctest
    async def test_c_twice_on_one_row_unmarks_and_other_kinds_are_refused(self, pair_db):
        app = TlviewApp(str(pair_db))
        async with app.run_test(size=(100, 30)) as pilot:
            await settle(pilot)
            await press(pilot, "c", "c")
            assert isinstance(app.screen, ChooserScreen)
            assert "compare" not in screen_text(app).splitlines()[0]
            await press(pilot, "c", "j", "j", "c")  # an IR against a snapshot
            await settle(pilot)
            assert isinstance(app.screen, CompareScreen)
            assert "not of the same kind" in screen_text(app)


def keys(*names: str):
    async def run_before(pilot) -> None:
        await settle(pilot)
        await press(pilot, *names)
        await settle(pilot)

    return run_before


class TestCompareSnapshots:
    """What a person sees comparing two runs: both curves on one axis, solid where both
    hold memory and shaded where B holds more; the aligned steps with the cursor; beside
    them the buffers explaining the peak's change."""

    def test_wider_layer_at_b_peak_80x24(self, snap_compare, pair_db):
        """The forward with its first layer 4x wider: B's peak (step 1, op1) marked;
        new, grown and gone buffers summing to +152 KiB."""
        assert snap_compare(TlviewApp(str(pair_db)), terminal_size=(80, 24),
                            run_before=keys("c", "j", "c", "p"))

    def test_leak_160x48(self, snap_compare, leak_db):
        """The leaking snapshot: four 4 MiB activations new at B's peak, the curve's
        shaded band growing step by step."""
        assert snap_compare(TlviewApp(str(leak_db)), terminal_size=(160, 48),
                            run_before=keys("c", "j", "c", "p"))
