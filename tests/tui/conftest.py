"""Databases more than one file of tests/tui reads (the profiler screen's and the SVG
snapshots'): built once per test process; the tests that use them name the xdist group
``tui_profile``, so that under xdist one worker builds them, once. Read only."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import FIXTURES, ingest_folder

PROFILE_SINGLE = FIXTURES / "profile" / "single"
COLL_RANK0 = FIXTURES / "profile" / "coll" / "rank0"
PROFILE_GROUP = pytest.mark.xdist_group("tui_profile")


@pytest.fixture(scope="session")
def profile_single(tmp_path_factory) -> Path:
    """The single-GPU run's folder (profile/single): its trace and compiled graphs."""
    path = tmp_path_factory.mktemp("tui-prof") / "single.duckdb"
    ingest_folder(path, PROFILE_SINGLE)
    return path


@pytest.fixture(scope="session")
def coll_rank0(tmp_path_factory) -> Path:
    """Rank 0's folder of the 2-rank NCCL run (profile/coll/rank0)."""
    path = tmp_path_factory.mktemp("tui-prof") / "coll.duckdb"
    ingest_folder(path, COLL_RANK0)
    return path


@pytest.fixture(autouse=True, scope="session")
def short_idle_waits():
    """Textual's Pilot waits, after each key and each ``pause()``, until the process looks
    idle, in sleeps of 1/50 s (textual._wait): three such sleeps or more of an idle core
    per key (figures: docs/benchmarks.md, "The test suite"). Steps of 4 ms (busy: a tenth
    of a step's CPU; Textual's, a twentieth) make the same judgement sooner; what a test
    waits for it waits for exactly (pilot.settle: the queues and the workers)."""
    import textual._wait as wait

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(wait, "SLEEP_GRANULARITY", 0.004)
        mp.setattr(wait, "SLEEP_IDLE", 0.0004)
        yield
