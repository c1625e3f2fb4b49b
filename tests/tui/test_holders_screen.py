"""Who holds the memory: live buffers grouped, sorted, filtered and exported.

Every expected figure is computed here from the core views (``live_at``, ``buffers``,
``nodes``, ``memory_curve``) with SQL and Python of the test's own, never from the
``buffer_provenance`` view or the screen's functions.
"""

from __future__ import annotations

import csv
from collections import defaultdict

import pytest
from tlview.store import memory_holders as mh
from tlview.store.memory_holders import Holder
from tlview.tui.app import TlviewApp
from tlview.tui.holders_screen import HoldersScreen
from tlview.tui.timeline_screen import TimelineScreen

from tests.conftest import SEED_004, view
from tests.tui.pilot import asynctest, press, settle, type_text
from tests.tui.screen_text import screen_text


@pytest.fixture
def seed004(alone):
    """Seed 004: AOT FX graphs (joint 1, forward 2, backward 3) and their output code
    (ingested once per test process: these tests only read it)."""
    return alone(SEED_004)[0]



def grouped(rows, live_bytes):
    """(key, buffers, bytes, share) per key, most bytes first: the test's own grouping."""
    acc: dict = defaultdict(lambda: [0, 0])
    for key, nbytes in rows:
        acc[key][0] += 1
        acc[key][1] += nbytes or 0
    out = [(k, n, b, 100.0 * b / live_bytes) for k, (n, b) in acc.items()]
    return sorted(out, key=lambda g: (-g[2], -g[1], g[0] is None, g[0] or ""))


def test_group_filter_sort_as_plain_functions():
    def h(name, nbytes, producer, dtype, alloc=0, last=1):
        return Holder(name, nbytes, dtype, None, alloc, last, None, producer, None, None, None)

    bufs = (h("a", 100, "op1", "f32", 2), h("b", 300, "op2", "bf16", 1), h("c", 50, "op1", "f32"),
            h("d", None, "op3", "f32", 3))
    groups = mh.group_holders(bufs, "producer", 1000)
    assert [(g.key, g.n_buffers, g.bytes, g.n_unknown, g.share) for g in groups] == [
        ("op2", 1, 300, 0, 30.0), ("op1", 2, 150, 0, 15.0), ("op3", 1, 0, 1, 0.0)]
    assert [b.buffer for b in mh.sort_holders(bufs, "bytes")] == ["b", "a", "c", "d"]
    assert [b.buffer for b in mh.sort_holders(bufs, "alloc_step")] == ["c", "b", "a", "d"]
    assert [b.buffer for b in mh.filter_holders(bufs, "F32 op1")] == ["a", "c"]
    assert mh.group_holders(bufs, "producer", 0)[0].share is None


class TestAtThePeak:
    """Seed 000 at its peak (step 879): 258 live buffers, 26,812,233,984 bytes."""

    @asynctest
    async def test_groups_largest_buffers_sort_filter_and_steps(self, seed000):
        """One session from p, w: the groups by producer with bytes and share, the largest
        buffers on top and visible at 80x24; then sorting, filtering and stepping."""
        ((peak_step, peak_bytes),) = view(seed000, "SELECT peak_step, peak_bytes FROM peak_memory")
        live = view(seed000, "SELECT producer, bytes FROM live_at(1, ?)", peak_step)
        want = grouped(live, peak_bytes)
        top = [b for (b,) in view(seed000, "SELECT buffer FROM live_at(1, 879) LIMIT 10")]
        by_alloc = [b for (b,) in view(seed000, "SELECT buffer FROM live_at(1, 879) "
                                                "ORDER BY alloc_step, buffer")]
        matching = [b for (b,) in view(
            seed000, "SELECT buffer FROM live_at(1, 879) WHERE dtype = 'bfloat16' "
                     "AND contains(shape, '3136') ORDER BY bytes DESC, buffer")]
        ((at_880,),) = view(seed000, "SELECT count(*) FROM live_at(1, 880)")
        app = TlviewApp(str(seed000))
        async with app.run_test(size=(80, 24)) as pilot:
            await settle(pilot)
            await press(pilot, "p", "w")
            screen = app.screen
            assert isinstance(screen, HoldersScreen) and screen.step == peak_step == 879
            got = [(g.key, g.n_buffers, g.bytes, g.share) for g in screen.groups]
            assert [g[:3] for g in got] == [g[:3] for g in want]
            assert [g[3] for g in got] == pytest.approx([g[3] for g in want])
            assert want[0][:3] == ("op1012_op1015_op1030_op1033", 4, 13_153_337_344)
            text = screen_text(app)
            assert "op1012_op1015_op1030_op1033" in text and "49.1%" in text
            assert "live 26,812,233,984 B (24.97 GiB)" in text
            # the largest buffers on top, visible at 80x24
            assert [b.buffer for b in screen.shown[:10]] == top
            for name in top:
                assert f"\n{name} " in text, name

            await press(pilot, "s")
            assert [b.buffer for b in app.screen.shown] == by_alloc
            await press(pilot, "s", "s", "s")  # back to bytes
            await press(pilot, "slash")
            await type_text(pilot, "bfloat16 3136")
            await press(pilot, "enter")
            screen = app.screen
            assert [b.buffer for b in screen.shown] == matching
            assert "filter 'bfloat16 3136'" in screen_text(app)
            await press(pilot, "slash", "backspace", "enter")  # the text is selected: cleared
            await press(pilot, "right")
            assert screen.step == 880 and len(screen.shown) == at_880
            await press(pilot, "left", "left", "p")
            assert screen.step == 879
            await press(pilot, "escape")
            assert isinstance(app.screen, TimelineScreen)

    @asynctest
    async def test_export_buffers_and_groups_to_csv(self, seed000, tmp_path, monkeypatch):
        live = view(seed000, "SELECT buffer, bytes, dtype, shape, alloc_step, last_step, "
                             "producer FROM live_at(1, 879)")
        ((peak_bytes,),) = view(seed000, "SELECT peak_bytes FROM peak_memory")
        monkeypatch.chdir(tmp_path)  # the file names typed are relative
        buffers_csv, groups_csv = tmp_path / "b.csv", tmp_path / "g.csv"
        app = TlviewApp(str(seed000))
        async with app.run_test(size=(80, 24)) as pilot:
            await settle(pilot)
            await press(pilot, "p", "w", "e")
            await type_text(pilot, "b.csv")
            await press(pilot, "enter", "tab", "e")
            await type_text(pilot, "g.csv")
            await press(pilot, "enter")
            assert any("140 rows written to g.csv" in n.message
                       for n in app._notifications)
        with open(buffers_csv) as f:
            rows = list(csv.DictReader(f))
        assert [(r["buffer"], int(r["bytes"]), r["dtype"] or None, r["shape"], int(r["alloc_step"]),
                 int(r["last_step"]), r["producer"]) for r in rows] == live
        with open(groups_csv) as f:
            groups = list(csv.DictReader(f))
        want = grouped([(r[6], r[1]) for r in live], peak_bytes)
        assert [(g["producer"], int(g["buffers"]), int(g["bytes"])) for g in groups] == \
            [w[:3] for w in want]
        assert sum(int(g["bytes"]) for g in groups) == peak_bytes


class TestOrigins:
    """Seed 004's AOT forward graph: origins are the FX nodes' ATen targets, source lines
    their ``# File:`` comments; the output code's buffers group by the ATen ops of the
    launch that allocates them."""

    @asynctest
    async def test_fx_groupings_by_origin_and_source(self, seed004):
        ((tid, step),) = view(seed004, "SELECT t.timeline_id, p.peak_step FROM timelines t "
                                       "JOIN peak_memory p USING (timeline_id) "
                                       "WHERE t.name = 'Forward graph 0'")
        rows = view(seed004, """
            SELECT regexp_replace(n.kernel, '^torch[.]ops[.]', ''),
                   json_extract_string(n.attrs, '$.source'), l.bytes, l.dtype
            FROM live_at(?, ?) l JOIN nodes n ON n.timeline_id = ? AND n.node = l.producer""",
                    tid, step, tid)
        ((live_bytes,),) = view(seed004, "SELECT live_bytes FROM memory_curve "
                                         "WHERE timeline_id = ? AND step = ?", tid, step)
        app = TlviewApp(str(seed004))
        async with app.run_test(size=(160, 48)) as pilot:
            await settle(pilot)
            await press(pilot, "slash")
            await type_text(pilot, "Forward graph")
            await press(pilot, "enter", "enter", "p", "w")
            screen = app.screen
            assert screen.step == step
            await press(pilot, "o")
            assert screen.by == "origin"
            assert [(g.key, g.n_buffers, g.bytes) for g in screen.groups] == \
                [g[:3] for g in grouped([(o, b) for o, _, b, _ in rows], live_bytes)]
            await press(pilot, "o")
            assert [(g.key, g.n_buffers, g.bytes) for g in screen.groups] == \
                [g[:3] for g in grouped([(s, b) for _, s, b, _ in rows], live_bytes)]
            assert "float8_linear.py:" in screen_text(app)  # the file, without its folders
            await press(pilot, "o")
            assert [(g.key, g.n_buffers, g.bytes) for g in screen.groups] == \
                [g[:3] for g in grouped([(d, b) for _, _, b, d in rows], live_bytes)]
            await press(pilot, "O", "O", "O", "O")
            assert screen.by == "buffer" and not screen.groups
            assert len(screen.shown) == len(rows)

    @asynctest
    async def test_output_code_groups_by_the_launch_aten_ops(self, seed004):
        ((tid, step),) = view(seed004, "SELECT t.timeline_id, p.peak_step FROM timelines t "
                                       "JOIN peak_memory p USING (timeline_id) "
                                       "WHERE t.name = '0_forward'")
        rows = view(seed004, """
            SELECT l.buffer, l.bytes, n.node, n.attrs FROM live_at(?, ?) l
            JOIN nodes n ON n.timeline_id = ? AND n.step = l.alloc_step""", tid, step, tid)
        import json

        by_origin = grouped([(", ".join(json.loads(a).get("original_aten") or []) or None, b)
                             for _, b, _, a in rows], 1)
        app = TlviewApp(str(seed004))
        async with app.run_test(size=(160, 48)) as pilot:
            await settle(pilot)
            await press(pilot, "slash")
            await type_text(pilot, "0_forward output")  # its output code (not its FX graph)
            await press(pilot, "enter", "enter", "p", "w", "o")
            screen = app.screen
            assert [(g.key, g.n_buffers, g.bytes) for g in screen.groups] == \
                [g[:3] for g in by_origin]
            assert screen.groups[0].key.endswith("aten._scaled_mm")
