"""`tlview plot`: pictures of one curve, of several, and of a diff (matplotlib, an optional
extra: the drawing tests skip without it; the message when it is missing is tested
always). The labels are checked in the SVG's text (kept as text), the figures against
the views they label."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from conftest import FIXTURES, ingest_into
from tlview.cli import main

DIFF = FIXTURES / "diff"


@pytest.fixture(scope="module")
def db(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("plot") / "p.duckdb"
    ingest_into(path, DIFF / "cpu_base" / "0_forward.ir_post_fusion.txt",
                DIFF / "cpu_wide" / "0_forward.ir_post_fusion.txt",
                DIFF / "leak0.pickle.gz", DIFF / "leak1.pickle.gz",
                DIFF / "kineto_base.pt.trace.json.gz")
    return path


def test_a_clear_message_without_matplotlib(db, tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib fails
    assert main(["plot", "1", "--db", str(db), "-o", str(tmp_path / "x.png")]) == 2
    err = capsys.readouterr().err
    assert "needs matplotlib" in err and "pip install 'tlview[plot]'" in err
    assert not (tmp_path / "x.png").exists()


def test_unknown_suffix_is_refused(db, tmp_path, capsys):
    assert main(["plot", "1", "--db", str(db), "-o", str(tmp_path / "x.pdf")]) == 2
    assert "expected a .svg or .png" in capsys.readouterr().err


@pytest.fixture
def mpl():
    return pytest.importorskip("matplotlib")


def _svg(db: Path, tmp_path: Path, *args: str) -> str:
    out = tmp_path / "p.svg"
    assert main(["plot", *args, "--db", str(db), "-o", str(out)]) == 0
    return out.read_text()


def test_one_curve_marks_its_peak_by_node(mpl, db, tmp_path):
    svg = _svg(db, tmp_path, "1")
    assert "peak 106,496 B" in svg and "step 5: op5" in svg  # peak_memory of timeline 1


def test_a_diff_draws_both_peaks_and_the_shading(mpl, db, tmp_path):
    svg = _svg(db, tmp_path, "1", "2")
    assert "A peak 106,496 B" in svg and "B peak 262,144 B" in svg
    assert "step 1: op1" in svg and "B holds more" in svg
    leak = _svg(db, tmp_path, "3", "4")
    assert "A peak 241,274,880 B" in leak and "B peak 258,052,096 B" in leak


def test_a_trace_draws_its_kernel_times(mpl, db, tmp_path):
    svg = _svg(db, tmp_path, "kineto_base.pt.trace.json.gz")
    assert "measured us" in svg and "live" not in svg  # no memory events: times only


def test_png_and_unaligned_curves(mpl, db, tmp_path):
    out = tmp_path / "p.png"
    assert main(["plot", "1", "2", "--no-align", "--db", str(db), "-o", str(out)]) == 0
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
