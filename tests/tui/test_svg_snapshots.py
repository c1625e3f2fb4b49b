"""Snapshots of the main screen (pytest-textual-snapshot), at 80x24 and 160x48.

Nothing on these screens depends on time: no clocks, no toasts (notifications are
avoided), no input cursor. Update with ``pytest --snapshot-update`` after a deliberate
change, and look at the SVGs before committing them.
"""

from __future__ import annotations

import pytest
from tlview.tui.app import TlviewApp

from tests.conftest import SEED_001, ingest_into
from tests.tui.conftest import PROFILE_GROUP
from tests.tui.pilot import press, settle


def keys(*names: str):
    """Settle, press the keys (settling after each), so the snapshot shows the result."""

    async def run_before(pilot) -> None:
        await settle(pilot)
        await press(pilot, *names)

    return run_before


@pytest.fixture
def seed001(alone):
    return alone(SEED_001)[0]  # once per test process: read only


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


def open_trace(*more: str):
    """From the chooser: filter to the trace, open it, then the keys."""

    async def run_before(pilot) -> None:
        await settle(pilot)
        await press(pilot, "slash")
        await pilot.press(*"kineto")
        await press(pilot, "enter", "enter", *more)

    return run_before


@PROFILE_GROUP  # coll_rank0, profile_single: tests/tui/conftest.py
class TestProfiler:
    """Rank 0 of the 2-rank NCCL run, on the communication lane's second all-gather: the
    two lanes (compute+memset on stream 7, NCCL on 17), the allocator's memory below with
    its scale, the kernel with its duration, the runtime call and CPU op that launched
    it, the extern node it is attached to, its overlapped and exposed time, the trace's
    30.78% overlap and the three ProfilerSteps with their GPU totals."""

    def test_comm_kernel_80x24(self, snap_compare, coll_rank0):
        assert snap_compare(TlviewApp(str(coll_rank0)), terminal_size=(80, 24),
                            run_before=open_trace("j", "home", "n"))

    def test_comm_kernel_160x48(self, snap_compare, coll_rank0):
        assert snap_compare(TlviewApp(str(coll_rank0)), terminal_size=(160, 48),
                            run_before=open_trace("j", "home", "n"))

    def test_zoomed_into_step_2_80x24(self, snap_compare, profile_single):
        """The single-GPU training step: ProfilerStep#2 fills the window (] once)."""
        assert snap_compare(TlviewApp(str(profile_single)), terminal_size=(80, 24),
                            run_before=open_trace("right_square_bracket"))


class TestHolders:
    """Who holds the memory at the conv-net's peak: 140 producers, the fused op1012 node
    holding 49.1%, and the largest live buffers (3.06 GiB each) at the top of the list."""

    def test_peak_by_producer_80x24(self, snap_compare, seed000):
        assert snap_compare(TlviewApp(str(seed000)), terminal_size=(80, 24),
                            run_before=keys("p", "w"))

    def test_peak_by_producer_160x48(self, snap_compare, seed000):
        assert snap_compare(TlviewApp(str(seed000)), terminal_size=(160, 48),
                            run_before=keys("p", "w"))

    def test_by_dtype_80x24(self, snap_compare, seed000):
        """The same step grouped by dtype (o three times: origin, source line, dtype)."""
        assert snap_compare(TlviewApp(str(seed000)), terminal_size=(80, 24),
                            run_before=keys("p", "w", "o", "o", "o"))


@PROFILE_GROUP
class TestChooser:
    """The single-GPU run's timelines, each compiled graph once: 0_forward and 0_backward's
    output code listed through output_code.py (its copy in the torch log counted, not
    listed), named by their titles (`0_forward · output code`); the trace marked as such."""

    def test_chooser_80x24(self, snap_compare, profile_single):
        assert snap_compare(TlviewApp(str(profile_single)), terminal_size=(80, 24),
                            run_before=keys())

    def test_chooser_160x48(self, snap_compare, profile_single):
        assert snap_compare(TlviewApp(str(profile_single)), terminal_size=(160, 48),
                            run_before=keys())


@pytest.fixture(scope="module")
def ranks_delayed(tmp_path_factory):
    from tests.conftest import FIXTURES

    path = tmp_path_factory.mktemp("snap") / "delayed.duckdb"
    ingest_into(path, *sorted((FIXTURES / "ranks" / "delayed").glob("*.gz")))
    return path


class TestRanks:
    """The 2-rank run with rank 0 made late by 1 ms at each step's first reduce-scatter
    (and rank 1's clock 1.7 ms behind, aligned away): the collectives with their skew bars
    and arrival strips (the late rank's cell marked), rank 0 named the straggler, the
    ranks of the first collective with their waits; sorted by skew, the three delayed
    reduce-scatters come first."""

    def test_collectives_80x24(self, snap_compare, ranks_delayed):
        assert snap_compare(TlviewApp(str(ranks_delayed)), terminal_size=(80, 24),
                            run_before=keys("r"))

    def test_by_skew_160x48(self, snap_compare, ranks_delayed):
        assert snap_compare(TlviewApp(str(ranks_delayed)), terminal_size=(160, 48),
                            run_before=keys("r", "s", "home"))


@pytest.fixture(scope="module")
def hang_subgroup(tmp_path_factory):
    from tests.conftest import FIXTURES

    fr = FIXTURES / "flight_recorder" / "gloo_subgroup"
    path = tmp_path_factory.mktemp("snap") / "hang.duckdb"
    ingest_into(path, *sorted((fr / "pickle").iterdir()), *sorted((fr / "stacks").iterdir()))
    return path


class TestHang:
    """A hang inside a subgroup (4 gloo ranks; rank 3 never issues pair_high's third
    all_reduce): the root group said above the grid, per rank and group the last sequence
    id enqueued / completed, ranks 2 and 3 marked as holding up the world group, rank 3
    pair_high; Enter on rank 3: its reason and its stack sitting in slow_computation."""

    def test_culprit_80x24(self, snap_compare, hang_subgroup):
        assert snap_compare(TlviewApp(str(hang_subgroup)), terminal_size=(80, 24),
                            run_before=keys("enter", "j", "enter"))
