"""The ranks screen: a run's collectives across its ranks, the late rank of each, the
stragglers, and Enter to the node that ran before a late arrival.

The screen's figures are checked against the views they come from (collective_skew,
collective_ranks, stragglers, late_arrivals, queried directly), which tests/store/test_ranks.py
checks against the raw traces; the strip's drawing rule is tested as a plain function.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from tlview.store import open_database
from tlview.store import rank_queries as rq
from tlview.tui.app import TlviewApp
from tlview.tui.glyphs import ASCII, UNICODE
from tlview.tui.profiler_screen import ProfilerScreen
from tlview.tui.rank_strips import skew_bar, strip_cells
from tlview.tui.ranks_screen import RanksScreen
from tlview.tui.timeline_screen import TimelineScreen

from tests.conftest import FIXTURES, ingest_folder, ingest_into, view
from tests.tui.pilot import asynctest, press, settle, type_text
from tests.tui.screen_text import screen_text

COLL = FIXTURES / "profile" / "coll"
RERUN_0 = FIXTURES / "ranks" / "runs" / "rank0_rerun.pt.trace.json.gz"


@pytest.fixture(scope="module")
def coll_tree(tmp_path_factory) -> Path:
    """Both ranks with their TORCH_COMPILE_DEBUG trees and the compile log."""
    path = tmp_path_factory.mktemp("tui-ranks") / "coll.duckdb"
    ingest_folder(path, COLL)
    return path



class TestStrips:
    """The arrival strip: one cell per bucket of ranks, its height how late, the last
    rank's cell marked."""

    def test_one_cell_per_rank(self):
        s = rq.Strip((0, 100, None, 400), last_bucket=3)
        assert strip_cells(s, 400, 10, UNICODE) == [("▁", False), ("▂", False), ("·", False),
                                                     ("█", True)]
        assert [c for c, _ in strip_cells(s, 400, 10, ASCII)] == [".", ":", " ", "@"]

    def test_buckets_merge_to_the_latest(self):
        s = rq.Strip((0, 100, 50, 400, None, None), last_bucket=3)
        assert strip_cells(s, 400, 3, UNICODE) == [("▂", False), ("█", True), ("·", False)]

    def test_skew_bar_is_full_at_the_largest_skew(self):
        assert skew_bar(100, 100, 8, UNICODE) == "█" * 8
        assert skew_bar(50, 100, 8, UNICODE) == "████    "
        assert skew_bar(1, 100, 8, UNICODE) == "▏       "
        assert skew_bar(0, 0, 8, UNICODE) == ""


class TestRankQueries:
    """The screen's snapshots are the views' rows."""

    def test_run_view_is_collective_skew_and_stragglers(self, coll_tree):
        with open_database(coll_tree, read_only=True) as db:
            (info,) = rq.runs(db)
            v = rq.run_view(db, info)
            arrivals = rq.arrivals(db, info.run, v.collectives[2].collective_id)
        assert (info.ranks, info.missing, v.buckets) == ((0, 1), (), 2)
        skew = view(coll_tree, "SELECT collective_id, skew_ns, last_rank, first_arrival_ns "
                               "FROM collective_skew ORDER BY first_arrival_ns, collective_id")
        assert [(c.collective_id, c.skew_ns, c.last_rank, c.first_arrival_ns)
                for c in v.collectives] == skew
        ranks = view(coll_tree, "SELECT collective_id, rank, start_ns FROM collective_ranks")
        first = {cid: f for cid, _, _, f in skew}
        for c in v.collectives:
            late = {r: s - first[c.collective_id] for cid, r, s in ranks if cid == c.collective_id}
            assert c.strip.late_ns == (late[0], late[1])
            assert c.strip.last_bucket == c.last_rank
        assert [(s.rank, s.caused_wait_ns) for s in v.stragglers] == view(
            coll_tree, "SELECT rank, caused_wait_ns FROM stragglers ORDER BY caused_wait_order")
        c = v.collectives[2]
        assert [(a.rank, a.late_ns, a.wait_ns) for a in arrivals] == sorted(
            [(r, late, c.skew_ns - late) for r, late in
             ((r, s - first[c.collective_id]) for cid, r, s in ranks if cid == c.collective_id)],
            key=lambda x: -x[1])


class TestRanksScreen:
    @asynctest
    async def test_from_the_chooser_the_run_its_straggler_and_enter(self, coll_tree):
        """One session: r from the chooser, the run and its straggler, s sorts by skew;
        then (Home: the first row in time order) Enter goes to the node before the late
        arrival, or to the trace where no node is attached."""
        skew = view(coll_tree, "SELECT collective_id, skew_ns, last_rank FROM collective_skew "
                               "ORDER BY first_arrival_ns, collective_id")
        late = view(coll_tree, "SELECT collective_id, rank, graph_timeline_id, step, node, "
                               "timeline_id, seq, before_seq FROM late_arrivals")
        attached = {r[0]: r for r in late if r[2] is not None}
        bare = {r[0]: r for r in late if r[2] is None}
        order = [r[0] for r in view(coll_tree, "SELECT collective_id FROM collective_skew "
                                               "ORDER BY first_arrival_ns, collective_id")]
        app = TlviewApp(str(coll_tree))
        async with app.run_test(size=(100, 30)) as pilot:
            await settle(pilot)
            assert "r: ranks" in screen_text(app)
            await press(pilot, "r")
            screen = app.screen
            assert isinstance(screen, RanksScreen)
            assert screen.view is not None and len(screen.view.collectives) == 24
            assert screen.targets is not None and len(screen.targets) == 24
            # the what-if, read after the run (its replay takes the longest): the costliest
            (worst,) = view(coll_tree, "SELECT run, step, rank, n_late, saved_ns, measured_ns, "
                                       "modelled_ns FROM whatif_stragglers "
                                       "ORDER BY saved_ns DESC, step, rank LIMIT 1")
            assert screen.view.whatif == rq.WhatIf(*worst)
            text = screen_text(app)
            assert "run 1: 2 of 2 ranks (0-1)" in text
            assert "straggler rank 1: 1.60 ms caused (16.7% of the others' step)" in text
            cid, skew_ns, last = skew[0]
            assert screen.query_one("#ranks-arrivals").border_title == \
                f" ranks of #{cid}: ProfilerStep#1 allgather_into_tensor_coalesced #1 "
            assert screen.current.collective_id == cid and screen.current.last_rank == last
            assert [a.rank for a in screen.arrivals] == [last, 1 - last]
            await press(pilot, "s")  # largest skew first, the cursor staying on its collective
            assert screen.current.collective_id == cid
            assert [screen.view.collectives[i].skew_ns for i in screen.order] == \
                sorted((s for _, s, _ in skew), reverse=True)
            await press(pilot, "home")
            assert screen.current.collective_id == max(skew, key=lambda r: r[1])[0]
            await press(pilot, "s")  # back in time order
            assert [screen.view.collectives[i].collective_id for i in screen.order] == \
                [c for c, _, _ in skew]

            # Enter: the node before the late arrival
            ranks = app.screen
            row = next(i for i, cid in enumerate(order) if cid in attached)
            await press(pilot, "home", *["down"] * row, "enter")
            node = app.screen
            cid, _, graph, step, name, *_ = attached[order[row]]
            assert isinstance(node, TimelineScreen)
            assert (node.timeline.timeline_id, node.step) == (graph, step)
            await press(pilot, "escape")
            assert app.screen is ranks
            row = next(i for i, cid in enumerate(order) if cid in bare)
            await press(pilot, "home", *["down"] * row, "enter")
            trace = app.screen
            _, rank, _, _, _, tid, seq, before = bare[order[row]]
            assert isinstance(trace, ProfilerScreen) and trace.timeline.timeline_id == tid
            assert trace.kernel is not None and trace.kernel.seq == (before or seq)
            await press(pilot, "escape")
            assert app.screen is ranks
            await press(pilot, "tab", "enter")  # a rank of the collective: its kernel
            assert isinstance(app.screen, ProfilerScreen)
            assert app.screen.kernel.seq == ranks.arrivals[0].seq

    @asynctest
    async def test_while_the_run_is_read_no_list_says_it_is_empty(self, coll_tree,
                                                                  monkeypatch):
        """The run's read held (at 1,024 ranks it takes seconds): the screen says it is
        reading, and neither list claims the run has no collectives; then the run."""
        import threading

        release = threading.Event()
        real = rq.run_view

        def held(*args, **kw):
            release.wait(30)
            return real(*args, **kw)

        monkeypatch.setattr(rq, "run_view", held)
        app = TlviewApp(str(coll_tree))
        async with app.run_test(size=(100, 30)) as pilot:
            await settle(pilot)
            await pilot.press("r")
            await pilot.pause(0.3)
            text = screen_text(app)
            assert isinstance(app.screen, RanksScreen) and app.screen.view is None
            assert "reading the ranks" in text
            assert "no collective kernels" not in text and "no collective with" not in text
            release.set()
            await settle(pilot)
            assert app.screen.view is not None and "24 collectives" in screen_text(app)

    @asynctest
    async def test_r_on_a_trace_opens_its_run(self, tmp_path):
        path = tmp_path / "runs.duckdb"
        ingest_into(path, COLL / "rank0" / "rank0.pt.trace.json.gz",
                    COLL / "rank1" / "rank1.pt.trace.json.gz", RERUN_0)
        app = TlviewApp(str(path))
        async with app.run_test(size=(100, 30)) as pilot:
            await settle(pilot)
            await press(pilot, "slash")
            await type_text(pilot, "rerun")
            await press(pilot, "enter", "enter")
            assert isinstance(app.screen, ProfilerScreen)
            await press(pilot, "r")
            screen = app.screen
            assert isinstance(screen, RanksScreen) and screen.view.info.run == 2
            text = screen_text(app)
            assert "run 2 of 2: 1 of 2 ranks (0)" in text
            assert "24 collectives, 24 lacking ranks · missing rank 1" in text
            await press(pilot, "left_square_bracket")
            assert screen.view.info.run == 1 and screen.view.info.missing == ()

    @asynctest
    async def test_a_database_without_ranks_says_so(self, tmp_path):
        path = tmp_path / "one.duckdb"
        ingest_into(path, FIXTURES / "profile" / "single" / "compiled_step.pt.trace.json.gz",
                    FIXTURES / "seeds" / "002_0926b2a0123efc8b.txt")
        app = TlviewApp(str(path))
        async with app.run_test(size=(80, 24)) as pilot:
            await settle(pilot)
            await press(pilot, "r")
            assert isinstance(app.screen, RanksScreen)
            assert "no run of several ranks in this database" in screen_text(app)
