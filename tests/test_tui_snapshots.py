"""Snapshots of the main screen (pytest-textual-snapshot), at 80x24 and 160x48.

Nothing on these screens depends on time: no clocks, no toasts (notifications are
avoided), no input cursor. Update with ``pytest --snapshot-update`` after a deliberate
change, and look at the SVGs before committing them.
"""

from __future__ import annotations

import pytest
from conftest import SEED_000, SEED_001, ingest_into
from tlview.tui.app import TlviewApp
from tui_helpers import press, settle


def keys(*names: str):
    """Settle, press the keys (settling after each), so the snapshot shows the result."""

    async def run_before(pilot) -> None:
        await settle(pilot)
        await press(pilot, *names)

    return run_before


@pytest.fixture(scope="module")
def seed000(tmp_path_factory):
    path = tmp_path_factory.mktemp("snap") / "000.duckdb"
    ingest_into(path, SEED_000)
    return path


@pytest.fixture(scope="module")
def seed001(tmp_path_factory):
    path = tmp_path_factory.mktemp("snap") / "001.duckdb"
    ingest_into(path, SEED_001)
    return path


class TestMainScreen:
    """What a person sees after opening the conv-net backward and pressing p: the cursor
    on step 879 in the middle of the list, the curve with its peak, 258 live buffers
    largest first, and the fused node that reaches the peak."""

    def test_peak_80x24(self, snap_compare, seed000):
        assert snap_compare(TlviewApp(str(seed000)), terminal_size=(80, 24),
                            run_before=keys("p"))

    def test_peak_160x48(self, snap_compare, seed000):
        assert snap_compare(TlviewApp(str(seed000)), terminal_size=(160, 48),
                            run_before=keys("p"))

    def test_ascii_80x24(self, snap_compare, seed000):
        """The same screen with 7-bit glyphs only (TLVIEW_ASCII=1)."""
        assert snap_compare(TlviewApp(str(seed000), ascii_only=True), terminal_size=(80, 24),
                            run_before=keys("p"))


class TestCollectives:
    """FSDP on cuda:1 at step 4: an all_gather issued at 3, waited at 5, one node under it."""

    def test_in_flight_160x48(self, snap_compare, seed001):
        assert snap_compare(TlviewApp(str(seed001)), terminal_size=(160, 48),
                            run_before=keys("n", "j"))
