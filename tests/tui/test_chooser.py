"""The chooser at scale: a thousand timelines at once, a filter as you type, a source
column that tells two folders' ``0_forward`` apart, j/k/Home/End. Expected rows come
from the ``timelines`` and ``peak_memory`` views queried directly."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from tlview.store import open_database, write_records
from tlview.store.timeline_queries import TimelineInfo
from tlview.store.words import source_labels
from tlview.tui.app import TlviewApp
from tlview.tui.chooser import ChooserScreen
from tlview.tui.chooser_rows import chooser_rows, filter_rows
from tlview.tui.timeline_screen import TimelineScreen

from tests.conftest import view
from tests.tui.pilot import asynctest, press, settle, type_text, wait_for
from tests.tui.screen_text import screen_text

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from bench.synthetic_catalog import catalog_records, one_source  # noqa: E402


def test_source_labels_are_the_shortest_distinct_ends():
    paths = ["/a/run1/fwd/output_code.py", "/a/run2/fwd/output_code.py",
             "/a/run1/bwd/output_code.py", "/x/seeds/000.txt", "rel.txt"]
    assert source_labels(paths) == {
        "/a/run1/fwd/output_code.py": "run1/fwd/output_code.py",
        "/a/run2/fwd/output_code.py": "run2/fwd/output_code.py",
        "/a/run1/bwd/output_code.py": "bwd/output_code.py",
        "/x/seeds/000.txt": "000.txt",
        "rel.txt": "rel.txt",
    }
    assert source_labels(["/only/one.py", "/only/one.py"]) == {"/only/one.py": "one.py"}


def test_filter_needs_every_word_in_any_field():
    infos = [TimelineInfo(1, "0_forward", "inductor_wrapper", "cuda:0", 3, "/r/job1/o.py", 1),
             TimelineInfo(2, "0_forward", "inductor_wrapper", "cuda:1", 3, "/r/job2/o.py", 2),
             TimelineInfo(3, "rank0", "kineto", "cuda:0", 0, "/r/job1/t.json", 3)]
    rows = chooser_rows(infos, None)
    assert [r.info.timeline_id for r in filter_rows(rows, "")] == [1, 2, 3]
    assert [r.info.timeline_id for r in filter_rows(rows, "FORWARD job2")] == [2]
    assert [r.info.timeline_id for r in filter_rows(rows, "cuda:0")] == [1, 3]
    assert [r.info.timeline_id for r in filter_rows(rows, "kineto job1")] == [3]
    assert filter_rows(rows, "nothing-like-this") == ()


@pytest.fixture(scope="module")
def catalog(tmp_path_factory):
    """1,000 timelines of one source, then 0_forward/0_backward of two more run folders."""
    path = tmp_path_factory.mktemp("chooser") / "catalog.duckdb"
    with open_database(path) as db:
        write_records(db, one_source(1000))
        write_records(db, catalog_records("/runs/jobA/rank0/output_code.py",
                                          ("0_forward", "0_backward"), seed=1))
        write_records(db, catalog_records("/runs/jobB/rank0/output_code.py",
                                          ("0_forward", "0_backward"), seed=2))
    return path



class TestChooserScale:
    @asynctest
    async def test_thousand_timelines_ready_at_once_with_peaks_then_keys(self, catalog):
        """One session: 1,004 timelines ready at once with their peaks; then the keys
        move the cursor and Enter opens."""
        want = view(catalog, "SELECT t.timeline_id, t.name, p.peak_bytes, p.peak_step "
                             "FROM timelines t JOIN peak_memory p USING (timeline_id) "
                             "ORDER BY 1")
        assert len(want) == 1004
        app = TlviewApp(str(catalog))
        async with app.run_test(size=(80, 24)) as pilot:
            await wait_for(pilot, lambda: isinstance(app.screen, ChooserScreen))
            await settle(pilot)
            rows = app.screen.all_rows
            assert [(r.info.timeline_id, r.info.name, r.peak.peak_bytes, r.peak.peak_step)
                    for r in rows] == want
            text = screen_text(app)
            assert "1,004 timelines" in text
            assert "0_forward" in text and "1.00 KiB" in text

            # the keys move the cursor, Enter opens
            table = app.screen.query_one("#chooser-table")
            await press(pilot, "j", "j", "j", "k")
            assert table.cursor == 2
            await press(pilot, "end")
            assert table.cursor == 1003
            assert "jobB/rank0" in screen_text(app)  # the start of the source: what differs
            await press(pilot, "home")
            assert table.cursor == 0
            await press(pilot, "pagedown")
            assert table.cursor == table.body_height
            await press(pilot, "home", "j", "enter")
            assert isinstance(app.screen, TimelineScreen)
            assert app.screen.timeline.timeline_id == 2
            assert app.screen.timeline.name == "0_backward"


class TestFilterAndSource:
    @asynctest
    async def test_filter_as_you_type_and_source_column(self, catalog):
        want = [r[0] for r in view(catalog, "SELECT timeline_id FROM timelines "
                                            "WHERE contains(name, '0_forward') ORDER BY 1")]
        app = TlviewApp(str(catalog))
        async with app.run_test(size=(100, 24)) as pilot:
            await settle(pilot)
            await press(pilot, "slash")
            await type_text(pilot, "0_forward")
            screen = app.screen
            assert [r.info.timeline_id for r in screen.shown] == want  # 10_forward too
            await type_text(pilot, " jobA")
            assert [r.info.timeline_id for r in screen.shown] == [1001]
            text = screen_text(app)
            assert "1 of 1,004 timelines" in text
            assert "jobA/rank0/output_code.py" in text
            await press(pilot, "enter", "enter")  # leave the filter, open the one row
            assert isinstance(app.screen, TimelineScreen)
            assert app.screen.timeline.timeline_id == 1001

    @asynctest
    async def test_source_column_tells_folders_apart(self, catalog):
        app = TlviewApp(str(catalog))
        async with app.run_test(size=(120, 24)) as pilot:
            await settle(pilot)
            await press(pilot, "slash")
            await type_text(pilot, "rank0 0_forward")
            text = screen_text(app)
            lines = [ln for ln in text.splitlines() if "output_code.py" in ln]
            assert len(lines) == 2
            assert "jobA/rank0/output_code.py" in lines[0]
            assert "jobB/rank0/output_code.py" in lines[1]
            await press(pilot, "escape")
            assert len(app.screen.shown) == 1004


def test_the_name_is_served_before_the_source():
    """At 80 columns the name (a `first` flex column) keeps its whole text and the
    source takes what is left; with a run column too there is no room for both, so the
    source keeps its least (12) and the name the rest. Shared evenly (without `first`),
    the name was cut at 24 columns in the one-run chooser."""
    from tlview.tui.chooser import COLUMNS, WITH_RUN
    from tlview.tui.row_list import RowList

    name = "0_backward · output code (2 sources)"
    source = "model__0_backward_3.1/output_code.py"
    figures = ("7", "49", "15.1 MiB", "28", "cuda:0")
    rows = RowList(COLUMNS)
    rows.set_rows((figures + (name, source),))
    widths = rows.widths(80)
    fixed = sum(max(len(c.title), len(f)) for c, f in zip(COLUMNS, figures)) + len(figures)
    assert widths[5] == len(name)  # the source the rest (less a space kept per column)
    assert widths[6] == 80 - fixed - len(name) - 2
    rows = RowList(WITH_RUN)
    rows.set_rows((figures + ("compiled_train", name, source),))
    widths = rows.widths(80)
    assert widths[7] == 12 and widths[6] == 80 - sum(widths[:6]) - 6 - 12 - 2
