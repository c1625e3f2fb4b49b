"""Small things a person trips over, each driven through Pilot: XLA nodes say what they
read and write, one unit system with a scale on the curve, the help and the node panel
scroll from the keyboard, Ctrl-C quits, and a key pressed before its data arrives is
carried out when it does (issue 14)."""

from __future__ import annotations

import re
import threading

import pytest
from tlview.tui.app import TlviewApp
from tlview.tui.timeline_screen import TimelineScreen

from tests.conftest import FIXTURES, SEED_003, view
from tests.tui.pilot import asynctest, press, settle, type_text, wait_for
from tests.tui.screen_text import screen_text

XLA_MLP = FIXTURES / "xla" / "module_0032.jit_mlp_train_step.cpu_after_optimizations-buffer-assignment.txt"


@pytest.fixture
def xla_dbs(alone):
    """Seed 003 and the JAX MLP's dump, each alone (once per test process: read only)."""
    return alone(SEED_003)[0], alone(XLA_MLP)[0]



def node_text(app) -> str:
    return str(app.screen.query_one("#node-text").render())


def operands_of(instruction: str, opcode: str) -> list[str]:
    """The test's own reading of an HLO line: %names inside ``opcode(...)``."""
    inside = instruction.split(f" {opcode}(", 1)[1]
    depth, end = 1, 0
    while depth and end < len(inside):
        depth += {"(": 1, ")": -1}.get(inside[end], 0)
        end += 1
    return re.findall(r"%([\w.\-]+)", inside[:end - 1])


class TestXlaNodes:
    """An XLA instruction shows its operands, the values they and it define, its op and
    source line (stored in the node's and values' attrs), not 'reads nothing'."""

    @asynctest
    async def test_custom_call_reads_operands_values_and_source(self, xla_dbs):
        seed, _ = xla_dbs
        ((node, opcode, attrs),) = view(seed, "SELECT node, node_class, attrs FROM nodes "
                                              "WHERE timeline_id = 1 AND step = 100")
        instruction = re.search(r'"instruction":"((?:[^"\\]|\\.)*)"', attrs).group(1)
        operands = operands_of(instruction.replace('\\"', '"'), opcode)
        assert operands == ["fusion.123", "p.16"]
        reads = [b for op in operands for (b,) in view(
            seed, "SELECT buffer FROM buffers WHERE timeline_id = 1 AND producer = ? "
                  "ORDER BY buffer", op)]
        writes = [b for (b,) in view(seed, "SELECT buffer FROM buffers WHERE timeline_id = 1 "
                                           "AND producer = ? ORDER BY buffer", node)]
        assert reads and writes
        app = TlviewApp(str(seed))
        async with app.run_test(size=(120, 40)) as pilot:
            await settle(pilot)
            await press(pilot, "g")
            await type_text(pilot, "100")
            await press(pilot, "enter")
            text = node_text(app)
            assert "reads nothing" not in text and "writes nothing" not in text
            assert "operands fusion.123, p.16" in text
            for name in reads + writes:
                assert name in text
            assert "origin aten__mm" in text
            assert "source /usr/local/lib/python3.10/site-packages/torch/_ops.py:756" in text
            assert "custom_call_target" in text  # the instruction itself, under the facts

    @asynctest
    async def test_fusion_of_a_jax_dump_names_its_op(self, xla_dbs):
        _, mlp = xla_dbs
        ((step,),) = view(mlp, "SELECT step FROM nodes WHERE node = 'ynn_fusion.2'")
        app = TlviewApp(str(mlp))
        async with app.run_test(size=(120, 40)) as pilot:
            await settle(pilot)
            await press(pilot, "g", *str(step), "enter")
            text = node_text(app)
            assert "operands compare_select_fusion, constant.18" in text
            assert "compare_select_fusion{}" in text  # the operand's value, with its size
            assert "writes ynn_fusion.2{}" in text
            assert "origin jit(mlp_train_step)/transpose(jvp())/reduce_sum" in text
            assert "frame 4" in text and "fusion kCustom" in text


class TestUnitsScrollingAndQuit:
    @asynctest
    async def test_units_scrolling_help_and_ctrl_c(self, seed000):
        """One session on seed 000 from p: one unit system and a y axis; the node panel
        scrolls from the keyboard; the help scrolls to its end at 80x24; Ctrl-C quits."""
        ((peak,),) = view(seed000, "SELECT peak_bytes FROM peak_memory")
        app = TlviewApp(str(seed000))
        async with app.run_test(size=(80, 24)) as pilot:
            await settle(pilot)
            await press(pilot, "p")
            text = screen_text(app)
            # never a bare 3.06G beside 24.97 GiB: every short figure has its binary unit
            assert not re.search(r"\d[KMGTP]\b", text), text
            assert "3.06 GiB" in text and "24.97 GiB" in text
            lines = text.splitlines()
            # the curve's scale: the peak at the top row, 0 at the bottom row
            assert lines[1].lstrip().startswith(f"{peak / 2**30:.1f} GiB┤")
            assert lines[2].lstrip().startswith("0┤")

            # the node panel scrolls from the keyboard
            await press(pilot, "tab", "tab")
            panel = app.screen.query_one("#node")
            assert app.focused is panel and panel.max_scroll_y > 0
            await press(pilot, "down", "down")
            assert panel.scroll_y == 2
            await press(pilot, "end")
            assert panel.scroll_y == panel.max_scroll_y
            assert app.screen.step == 879  # the keys scrolled the panel, not the steps

            # the help scrolls to its end at 80x24
            await press(pilot, "question_mark")
            assert "Esc closes" not in screen_text(app)  # longer than the screen
            await press(pilot, "pagedown", "pagedown", "pagedown")
            text = screen_text(app)
            assert "Esc closes" in text and "Ctrl-C" in text
            await press(pilot, "escape")
            assert isinstance(app.screen, TimelineScreen)

            # Ctrl-C quits
            await pilot.press("ctrl+c")
            await pilot.pause()
            assert not app.is_running
        assert app.return_code == 0


class TestEarlyKeys:
    """Issue 14: ``p`` pressed before the memory data arrives is carried out when it does."""

    @asynctest
    async def test_p_before_data_is_not_lost(self, seed000):
        app = TlviewApp(str(seed000))
        gate = threading.Event()
        run = app.reader.run

        def held(lane, fn, *args, **kw):  # memory reads wait until the key was pressed
            if lane == "memory":
                gate.wait(60)
            return run(lane, fn, *args, **kw)

        app.reader.run = held  # type: ignore[method-assign]
        async with app.run_test(size=(80, 24)) as pilot:
            await wait_for(pilot, lambda: isinstance(app.screen, TimelineScreen), timeout=60)
            await pilot.press("p")
            assert app.screen.step == 0 and app.screen.peak is None
            gate.set()
            await settle(pilot)
            assert app.screen.step == 879
            assert not any("still being computed" in n.message for n in app._notifications)
