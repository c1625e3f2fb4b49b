"""`tlview plot`: pictures of one curve, of several, and of a diff (matplotlib, an optional
extra: the drawing tests skip without it; the message when it is missing is tested
always). The labels are checked in the SVG's text (kept as text), the figures against
the views they label."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest
from tlview.cli import main

from tests.conftest import FIXTURES, ingest_together

DIFF = FIXTURES / "diff"


@pytest.fixture(scope="module")
def db(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("plot") / "p.duckdb"
    ingest_together(path, DIFF / "cpu_base" / "0_forward.ir_post_fusion.txt",
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
    assert "GPU event (us)" in svg and "live" not in svg  # no memory events: times only


def test_png_and_unaligned_curves(mpl, db, tmp_path):
    out = tmp_path / "p.png"
    assert main(["plot", "1", "2", "--no-align", "--db", str(db), "-o", str(out)]) == 0
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


# ----- what the pictures must show (each found wrong on a real dump) -----

GPU_STEP = FIXTURES / "torch_trace" / "gpu_step"
SNAP = FIXTURES / "snapshot"
MiB = 1 << 20


@pytest.fixture(scope="module")
def more_db(tmp_path_factory) -> Path:
    """Two OOM snapshots, the H100 step's trace (with [memory] events of the GPU and of
    the CPU) and its two forward graphs' IR (long names), the leak pair."""
    path = tmp_path_factory.mktemp("plot2") / "p.duckdb"
    ingest_together(path, SNAP / "oom.pickle.gz", SNAP / "oom_waste.pickle.gz",
                    GPU_STEP / "step.pt.trace.json.gz",
                    GPU_STEP / "debug" / "model__0_forward_1.0" / "ir_post_fusion.txt",
                    GPU_STEP / "debug" / "model__1_forward_4.1" / "ir_post_fusion.txt",
                    DIFF / "leak0.pickle.gz", DIFF / "leak1.pickle.gz")
    return path


def _figure(path: Path, *ids: int, align: bool = True):
    from tlview.plot_command import figure
    from tlview.store import open_database

    with open_database(path, read_only=True) as d:
        return figure(d, list(ids), align=align)


def test_an_oom_is_marked_with_its_request_and_what_the_device_had(mpl, more_db, tmp_path):
    """Where it happened, what it asked (and, when the allocator rounds it, the segment
    torch asked CUDA for), and reserved + CUDA free at it: off the scale under a memory
    fraction, so said in words."""
    import gzip
    import pickle  # the fixture is torch's own pickle, read here to know what to expect

    for tid, name in ((1, "oom.pickle.gz"), (2, "oom_waste.pickle.gz")):
        with gzip.open(SNAP / name) as f:
            trace = pickle.load(f)["device_traces"][0]
        (i, oom), = [(i, e) for i, e in enumerate(trace) if e["action"] == "oom"]
        svg = _svg(more_db, tmp_path, str(tid))
        assert f"OOM at entry {i}: requested {oom['size']:,} B" in svg
        assert f"CUDA free {oom['device_free'] / 1024**3:.2f} GiB, off the scale" in svg
    assert "asking CUDA for a 64.00 MiB segment" in svg  # oom_waste: 62.25 MiB asked


def test_the_capacity_line_where_it_is_on_the_scale(mpl, more_db):
    """The OOM of oom.pickle.gz as if CUDA had had only 40 MiB free (no memory
    fraction): reserved + free is drawn as a line and labelled, on the scale."""
    from tlview.plot_command import _mark_oom, _pyplot
    from tlview.store import open_database

    with open_database(more_db, read_only=True) as d:
        (row,) = d.query("plot_ooms", 1)
    plt = _pyplot()
    fig, ax = plt.subplots()
    ax.set_ylim(0, 1100)
    row = (*row[:5], 40 * MiB)
    _mark_oom(ax, row, (MiB, "MiB"), "tab:red")
    texts = [t.get_text() for t in ax.texts]
    cap = row[4] + 40 * MiB
    assert any(t.startswith(f"reserved + CUDA free at the OOM: {cap:,} B (") for t in texts)
    assert any(line.get_ydata()[0] == cap / MiB for line in ax.get_lines()
               if len(set(line.get_ydata())) == 1 and len(line.get_ydata()) == 2)
    plt.close(fig)


def test_a_trace_is_drawn_in_time_and_from_its_gpus_memory_events(mpl, more_db):
    """x: ms since the first GPU event; y: the last [memory] event of the GPU (Device
    Type 1) at or before each event, never the CPU's (which read 0-8 B here)."""
    from tests import reference_profile as rp

    fig = _figure(more_db, 3)
    trace = rp.load(GPU_STEP / "step.pt.trace.json.gz")
    gpu = sorted((rp.ns(e["ts"]), e.get("args", {}).get("correlation", 0))
                 for e in trace["traceEvents"] if e.get("ph") == "X"
                 and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset"))
    mem = sorted((rp.ns(e["ts"]), e["args"]["Total Allocated"]) for e in trace["traceEvents"]
                 if e.get("name") == "[memory]" and e["args"].get("Device Type") == 1)
    cpu = [e for e in trace["traceEvents"]
           if e.get("name") == "[memory]" and e["args"].get("Device Type") == 0]
    assert cpu  # the trace holds CPU memory events the curve must not read
    t0 = gpu[0][0]
    want_x = [(t - t0) / 1e6 for t, _ in gpu]
    want_y = []
    for t, _ in gpu:
        before = [a for m, a in mem if m <= t]
        want_y.append(before[-1] / MiB if before else math.nan)
    ax = fig.axes[0]
    assert ax.get_xlabel() == "" and fig.axes[1].get_xlabel().startswith("time since")
    (curve,) = [ln for ln in ax.get_lines() if len(ln.get_xdata()) > 2]
    xs, ys = list(curve.get_xdata())[:-1], list(curve.get_ydata())[:-1]
    assert xs == pytest.approx(want_x)
    assert ys == pytest.approx(want_y, nan_ok=True)
    mpl.pyplot.close(fig)


def test_long_names_keep_the_legend_in_the_picture(mpl, more_db):
    fig = _figure(more_db, 4, 5)
    fig.canvas.draw()
    (leg,) = [a.get_legend() for a in fig.axes if a.get_legend() is not None]
    box = leg.get_window_extent()
    assert fig.bbox.x0 <= box.x0 and box.x1 <= fig.bbox.x1
    labels = [t.get_text() for t in leg.get_texts()]
    from tlview.store import open_database

    with open_database(more_db, read_only=True) as d:  # the timelines' unique titles
        titles = dict(d.sql("SELECT timeline_id, title FROM timelines").fetchall())
    assert labels[:2] == [f"A 4 {titles[4]}", f"B 5 {titles[5]}"]
    assert "0_forward" in titles[4] and "1_forward" in titles[5]
    mpl.pyplot.close(fig)


def test_a_diff_side_stops_at_its_last_step(mpl, more_db):
    """leak1 has 7 fewer entries than leak0: past its last aligned step its curve is not
    drawn (it was flat to the end, and shaded against A)."""
    from tlview.plot_command import figure
    from tlview.store import open_database

    with open_database(more_db, read_only=True) as d:
        fig = figure(d, [7, 6])  # A leak1, B leak0 (aligned in this session)
        rows = d.query("diff_curves", 7, 6)
    last_a = max(i for i, r in enumerate(rows) if r[2] is not None)
    assert last_a < len(rows) - 1  # leak0's last entries have no twin in leak1
    a_line = next(ln for ln in fig.axes[0].get_lines() if ln.get_label().startswith("A "))
    ys = list(a_line.get_ydata())
    assert not math.isnan(ys[last_a])
    assert all(math.isnan(y) for y in ys[last_a + 1:])
    mpl.pyplot.close(fig)
