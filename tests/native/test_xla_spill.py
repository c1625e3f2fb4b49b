"""The compiled XLA parser's spill (native/xla_buffer_assignment.cpp, ``Spill``): its state
in a file whose resident pages are dropped past a budget must not change a single row.

A dump scaled from the RNN fixture the way the benchmark scales it (30 copies, ~1.6 MB)
is read with a budget so small that every check drops the pages: the compiled rows must
equal the Python parser's, and the parser must have dropped its pages many times. The
same dump on the heap (budget 0) gives the same rows too.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from tlview.ingest import native, xla_native

from tests.conftest import needs_native
from tests.native.test_xla_buffer_assignment import rows_of

pytestmark = needs_native()


@pytest.fixture(scope="module")
def scaled(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from bench import bench_xla

    out = tmp_path_factory.mktemp("xla_scaled")
    saved = bench_xla.OUT_DIR
    bench_xla.OUT_DIR = out
    try:
        return bench_xla.build(1.5)
    finally:
        bench_xla.OUT_DIR = saved


def compiled_stats(path: Path) -> dict[str, int]:
    parser = xla_native.plain(native.module(), [str(path)], [0])
    assert parser is not None
    for _ in xla_native.records(parser, [str(path)], name="m", attrs_=None, progress=None):
        pass
    return parser.stats()


def test_spill_drops_pages_rows_unchanged(scaled, monkeypatch):
    monkeypatch.setenv("TLVIEW_NATIVE", "0")
    spec = rows_of(scaled)
    monkeypatch.setenv("TLVIEW_NATIVE", "1")
    monkeypatch.setenv("TLVIEW_XLA_SPILL_MB", "0.0001")
    stats = compiled_stats(scaled)
    assert stats["spill_bytes"] > 100_000, stats
    assert stats["spill_drops"] >= 20, stats
    got = rows_of(scaled)
    assert len(got) == len(spec) > 30 * 80
    for i, (a, b) in enumerate(zip(spec, got, strict=True)):
        assert b == a, f"row {i} differs"


def test_heap_rows_unchanged(scaled, monkeypatch):
    monkeypatch.setenv("TLVIEW_NATIVE", "1")
    monkeypatch.setenv("TLVIEW_XLA_SPILL_MB", "0.0001")
    spilled = rows_of(scaled)
    monkeypatch.setenv("TLVIEW_XLA_SPILL_MB", "0")
    assert compiled_stats(scaled) == {"spill_bytes": 0, "spill_drops": 0}
    assert rows_of(scaled) == spilled
