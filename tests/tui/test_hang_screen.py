"""The hang screen: an incident's ranks x process groups from the Flight Recorder dumps,
the culprit marked, Enter to a rank's stacks, entries and profiler end.

The screen's figures are checked against the views they come from (collective_progress,
hang_verdict, hang_stacks, queried directly), which tests/ingest/test_flight_recorder.py checks
against torch's own analyzer and the dumps."""

from __future__ import annotations

from pathlib import Path

import pytest
from tlview.store import hang_queries as hq
from tlview.store import open_database
from tlview.tui.app import TlviewApp
from tlview.tui.hang_screen import HangScreen, cell_text, grid_rows

from tests.conftest import FIXTURES, ingest_into
from tests.tui.pilot import asynctest, press, settle, wait_for
from tests.tui.screen_text import screen_text

FR = FIXTURES / "flight_recorder"


@pytest.fixture(scope="module")
def two_hangs(tmp_path_factory) -> Path:
    """The subgroup hang and the late rank's, their stack dumps and the late job's traces."""
    path = tmp_path_factory.mktemp("tui-hang") / "hangs.duckdb"
    inputs = [p for s in ("subgroup", "late") for sub in ("pickle", "stacks")
              for p in sorted((FR / f"gloo_{s}" / sub).iterdir())]
    ingest_into(path, *inputs, *sorted((FR / "gloo_late" / "profile").iterdir()))
    return path


def rows(path: Path, sql: str, *params) -> list[tuple]:
    with open_database(path, read_only=True) as db:
        return db.sql(sql, list(params)).fetchall()


def test_grid_cells_are_collective_progress(two_hangs):
    with open_database(two_hangs, read_only=True) as db:
        (first, _) = hq.hang_summary(db)
        g = hq.grid(db, first)
    cols, table, marks = grid_rows(g)
    assert [c.title for c in cols] == ["rank", "default_pg", "pair_low", "pair_high", "verdict"]
    progress = rows(two_hangs, "SELECT rank, pg_desc, last_enqueued_seq, last_completed_seq "
                               "FROM collective_progress WHERE incident = ?", first.incident)
    culprits = {(r, pg) for r, pg in rows(
        two_hangs, "SELECT rank, pg_desc FROM hang_verdict WHERE incident = ? AND culprit",
        first.incident)}
    for rank, pg, enq, done in progress:
        cell = table[rank][[c.title for c in cols].index(pg)]
        assert cell == f"{enq}/{done}" + (" *" if (rank, pg) in culprits else "")
    assert marks == {r for r, _ in culprits}
    assert cell_text(None) == ""


class TestHangScreen:
    @asynctest
    async def test_from_a_dump_the_incident_its_culprit_and_a_ranks_stacks(self, two_hangs):
        (late_inc,) = rows(two_hangs, "SELECT DISTINCT incident FROM fr_dumps "
                                      "WHERE source_path LIKE '%gloo_late%'")
        app = TlviewApp(str(two_hangs))
        async with app.run_test(size=(100, 30)) as pilot:
            await settle(pilot)
            await press(pilot, "enter")  # the chooser's first timeline: rank 0's dump
            screen = app.screen
            assert isinstance(screen, HangScreen)
            await wait_for(pilot, lambda: screen.grid is not None)
            await settle(pilot)
            text = screen_text(app)
            assert "incident 1 of 2: 4 ranks" in text
            assert "pair_high #3 (gloo:all_reduce): rank 3 never issued it" in text
            table = screen.query_one(".hang-grid")
            assert screen.ranks[table.cursor] == 2  # the first culprit row
            await press(pilot, "]")  # the late rank's incident
            await wait_for(pilot, lambda: screen.grid is not None
                           and screen.grid.incident.incident == late_inc[0])
            await settle(pilot)
            table = screen.query_one(".hang-grid")
            assert screen.ranks[table.cursor] == 1
            await press(pilot, "enter")
            detail = screen.query_one("#hang-detail")
            await wait_for(pilot, lambda: len(detail.rows) > 0)
            lines = [r[0] for r in detail.rows]
            assert lines[0].startswith("rank 1 never issued default_pg #8 (gloo:all_reduce)")
            frames = rows(two_hangs, "SELECT frames FROM hang_stacks WHERE rank = 1 AND "
                                     "incident = ? AND name = 'MainThread'", late_inc[0])
            assert f"  {frames[0][0][0]}" in lines  # py-spy's main thread, innermost first
            assert lines[lines.index(f"  {frames[0][0][0]}") - 1] == "stack MainThread, idle:"
            assert any(ln.startswith("its profiler timeline's end") for ln in lines)
            assert detail.border_title == " rank 1 "


class TestFromTheRunsScreen:
    @asynctest
    async def test_a_hang_verdict_opens_the_hang_screen_at_its_culprit(self, two_hangs):
        """The runs screen (what `tlview DB` opens on) says each incident's verdict (the
        report's headline); Enter on one opens the hang screen at that incident, the cursor
        and the detail on its culprit (hang_verdict's, queried here)."""
        from tlview.tui.runs_screen import RunsScreen

        culprits = rows(two_hangs, "SELECT incident, process_group, seq, rank FROM hang_verdict "
                                   "WHERE root AND culprit ORDER BY incident")
        app = TlviewApp(str(two_hangs), runs_first=True)
        async with app.run_test(size=(80, 24)) as pilot:
            await wait_for(pilot, lambda: isinstance(app.screen, RunsScreen)
                           and app.screen.verdicts, timeout=60)
            await settle(pilot)
            runs = app.screen
            hangs = [ln for ln in runs.lines if ln.verdict and ln.verdict.key.startswith("hang")]
            assert len(hangs) == len(culprits) == 2
            for ln, (_, _, seq, rank) in zip(hangs, culprits):
                assert ln.text.lstrip().split(" ", 1)[1].startswith(f"Hang: rank {rank} ")
                assert f" #{seq} (" in ln.text and ln.verdict.evidence.at == rank
            i = runs.lines.index(hangs[1])
            runs.query_one("#runs-list").cursor = i
            await settle(pilot)
            assert f"Enter: the hang, at rank {culprits[1][3]}" in screen_text(app)
            await press(pilot, "enter")
            screen = app.screen
            assert isinstance(screen, HangScreen)
            await wait_for(pilot, lambda: screen.grid is not None
                           and screen.grid.incident.incident == culprits[1][0])
            detail = screen.query_one("#hang-detail")
            await wait_for(pilot, lambda: len(detail.rows) > 0)
            table = screen.query_one(".hang-grid")
            assert screen.ranks[table.cursor] == culprits[1][3]
            assert detail.border_title == f" rank {culprits[1][3]} "
            assert detail.rows[0][0].startswith(f"rank {culprits[1][3]} never issued")
