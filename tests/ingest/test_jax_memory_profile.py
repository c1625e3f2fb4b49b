"""JAX device memory profiles (jax.profiler.save_device_memory_profile): the live buffers
at one instant, their bytes equal to JAX's own figures, two profiles diffed, and broken
profiles refused in one line with the database untouched.

Fixtures: tests/fixtures/jax_memory/ (tests/fixtures/gen/gpu_jax_memory.py; README there):
``gpu_*`` on an H200 (JAX 0.11.2), ``cpu_*`` on CPU JAX 0.10.2, each ``<name>.prof`` with
``<name>.json`` beside it: ``memory_stats()`` right before and after the dump (null on
CPU) and the live arrays JAX listed (shape, dtype, nbytes, the function that made them).
"""

from __future__ import annotations

import gzip
import json
from collections import Counter
from pathlib import Path

import pytest
from tlview.ingest.errors import IngestError
from tlview.ingest.jax_memory_profile import parse_profile_file
from tlview.ingest.pprof import ProtoError, fields, parse_profile, read_varint
from tlview.store import open_database
from tlview.store.diff import ensure_alignment
from tlview.store.digest import source_digest

from tests.conftest import FIXTURES, ingest_together

JM = FIXTURES / "jax_memory"
NAMES = ["gpu_base", "gpu_changed", "cpu_base", "cpu_changed"]  # timelines 1..4


def figures(name: str) -> dict:
    return json.loads((JM / f"{name}.json").read_text())


@pytest.fixture(scope="module")
def db(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("jaxmem") / "m.duckdb"
    ingest_together(path, *(JM / f"{n}.prof" for n in NAMES))
    with open_database(path) as d:
        ensure_alignment(d, 1, 2)
    return path


def _tid(name: str) -> int:
    return NAMES.index(name) + 1


def test_gpu_live_bytes_equal_bytes_in_use(db):
    """On the GPU the profile's buffers, each rounded up to the allocator's 256-byte chunks,
    hold exactly memory_stats()['bytes_in_use'] at the dump; unrounded (the profile's own
    figure) they are the live arrays' nbytes."""
    for name in ("gpu_base", "gpu_changed"):
        fig = figures(name)
        in_use = fig["memory_stats_before_dump"]["bytes_in_use"]
        assert in_use == fig["memory_stats_after_dump"]["bytes_in_use"]
        with open_database(db, read_only=True) as d:
            peak = d.sql("SELECT peak_step, peak_bytes FROM peak_memory WHERE timeline_id = ?",
                         [_tid(name)]).fetchone()
            profile = d.sql("SELECT sum(profile_bytes) FROM memory_profile_buffers "
                            "WHERE timeline_id = ?", [_tid(name)]).fetchone()[0]
        assert peak == (0, in_use)
        assert profile == fig["live_arrays_nbytes_sum"] != in_use


@pytest.mark.parametrize("name", NAMES)
def test_buffers_are_the_live_arrays(db, name):
    """Each sample's size, count times, gives the live arrays' sizes exactly; on CPU the
    live bytes are their nbytes."""
    fig = figures(name)
    with open_database(db, read_only=True) as d:
        rows = d.sql("SELECT size, count, device FROM memory_profile_buffers "
                     "WHERE timeline_id = ?", [_tid(name)]).fetchall()
        peak = d.sql("SELECT peak_bytes FROM peak_memory WHERE timeline_id = ?",
                     [_tid(name)]).fetchone()[0]
    got = Counter()
    for size, count, _ in rows:
        got[size] += count
    assert got == Counter(a["nbytes"] for a in fig["live_arrays"])
    assert {r[2] for r in rows} == {fig["device"]}
    if name.startswith("cpu"):
        assert peak == fig["live_arrays_nbytes_sum"]


def test_stacks_name_the_functions_that_made_the_arrays(db):
    """Each buffer's stack holds the generator's function that made it; the bytes per
    function equal the live arrays' by made_by (the PRNG key is made in main), and the
    site (the first frame outside jax and Python's library) is in the generator."""
    fig = figures("gpu_base")
    want = Counter()
    for a in fig["live_arrays"]:
        want[a["made_by"] or "main"] += a["nbytes"]
    with open_database(db, read_only=True) as d:
        rows = d.sql("SELECT site, stack, profile_bytes FROM memory_profile_buffers "
                     "WHERE timeline_id = 1").fetchall()
        sites = d.sql("SELECT sum(bytes) FROM memory_profile_sites WHERE timeline_id = 1"
                      ).fetchone()[0]
        peak = d.sql("SELECT peak_bytes FROM peak_memory WHERE timeline_id = 1").fetchone()[0]
    got = Counter()
    for site, stack, nbytes in rows:
        assert "gpu_jax_memory.py:" in site, site
        names = [f.rsplit(":", 1)[1] for f in stack if "gpu_jax_memory.py:" in f]
        got[next(n for n in names if n in want)] += nbytes
    assert got == want
    assert sites == peak


def test_executables_are_counted_beside_not_in_the_live_bytes(db):
    prof = parse_profile(gzip.decompress((JM / "gpu_base.prof").read_bytes()))
    kinds = Counter(next(la.text for la in s.labels if la.key == "kind") for s in prof.samples)
    with open_database(db, read_only=True) as d:
        note = json.loads(d.sql("SELECT notes FROM timelines WHERE timeline_id = 1").fetchone()[0])
    assert note["executables"]["samples"] == kinds["executable"] > 0
    assert note["buffer_samples"] == kinds["buffer"]
    assert note["live_bytes"] == figures("gpu_base")["memory_stats_before_dump"]["bytes_in_use"]


def test_two_profiles_diffed_like_two_snapshots(db):
    """peak_diff explains the change exactly (Σ delta = b - a = the change of bytes_in_use);
    buffers are matched by site and size, else by site (grown): the KV cache doubled, the
    scratch is new; site_diff sums to the same change."""
    a, b = figures("gpu_base"), figures("gpu_changed")

    def by(fig, name):
        return sum(x["nbytes"] for x in fig["live_arrays"] if x["made_by"] == name)

    change = (b["memory_stats_before_dump"]["bytes_in_use"]
              - a["memory_stats_before_dump"]["bytes_in_use"])
    with open_database(db, read_only=True) as d:
        rows = d.sql("SELECT status, delta_bytes, matched_by, what FROM peak_diff(1, 2)").fetchall()
        sites = d.sql("SELECT site, delta_bytes FROM site_diff(1, 2)").fetchall()
        report_sites = d.query_dicts("diff_site_rows", 1, 2, 10)  # what `tlview diff` lists
    assert sum(r[1] for r in rows) == change == sum(s[1] for s in sites)
    moved = [(r[0], r[1], r[2], r[3].rsplit(":", 1)[1]) for r in rows if r[0] != "same"]
    assert ("new", by(b, "make_extra_scratch"), None, "make_extra_scratch") in moved
    grown = [m for m in moved if m[0] == "grown"]
    assert {m[2:] for m in grown} == {("same_group", "make_kv_cache")}
    assert sum(m[1] for m in grown) == by(b, "make_kv_cache") - by(a, "make_kv_cache")
    assert len(moved) == 3 and {r[2] for r in rows if r[0] == "same"} == {"same_key"}
    assert sorted(r["delta_bytes"] for r in report_sites) == sorted(x for _, x in sites if x)


# ----- one peak: the profile's row in peaks, the run's peak, and who says which it is -----


def _live(name: str) -> int:
    """What a profile's peaks row must hold: memory_stats()['bytes_in_use'] at the dump on
    the GPU (before = after), the live arrays' nbytes on CPU (no memory_stats there)."""
    fig = figures(name)
    if fig["memory_stats_before_dump"] is None:
        return fig["live_arrays_nbytes_sum"]
    assert fig["memory_stats_before_dump"]["bytes_in_use"] == \
        fig["memory_stats_after_dump"]["bytes_in_use"]
    return fig["memory_stats_before_dump"]["bytes_in_use"]


def test_each_profile_has_its_live_bytes_in_peaks(db):
    with open_database(db, read_only=True) as d:
        got = {r[0]: r[1:] for r in d.sql(
            "SELECT timeline_id, figure, measured, what, peak_bytes, at_step, device, preference "
            "FROM peaks").fetchall()}
    assert set(got) == {_tid(n) for n in NAMES}
    for name in NAMES:
        assert got[_tid(name)] == ("jax_memory_profile", True, "live bytes of a JAX memory "
                                   "profile", _live(name), 0, figures(name)["device"], 3)


def test_the_runs_peak_is_its_largest_profile(db):
    """One run (the folder): its peak is the largest measured figure, gpu_changed's
    bytes_in_use; the CPU twin (no 256-byte rounding) is 248 B less."""
    with open_database(db, read_only=True) as d:
        (run,) = d.sql("SELECT timeline_id, figure, peak_bytes, figures FROM run_peaks").fetchall()
    assert run == (_tid("gpu_changed"), "jax_memory_profile", _live("gpu_changed"), 4)
    assert _live("gpu_changed") - _live("cpu_changed") == 248


def test_a_snapshot_of_the_same_run_outranks_a_profile(tmp_path):
    """The rule's order: an allocator snapshot's whole blocks (preference 1) before a JAX
    profile's live bytes (3), whatever their size."""
    folder = tmp_path / "mixed"
    folder.mkdir()
    (folder / "gpu_changed.prof").write_bytes((JM / "gpu_changed.prof").read_bytes())
    oom = FIXTURES / "runs" / "oom"
    (folder / "memory_snapshot.pickle.gz").write_bytes(
        (oom / "memory_snapshot.pickle.gz").read_bytes())
    db = tmp_path / "mixed.duckdb"
    ingest_together(db, *sorted(folder.iterdir()))
    torch_peak = json.loads((oom / "torch.json").read_text())["at_oom"]["max_memory_allocated"]
    with open_database(db, read_only=True) as d:
        figs = dict(d.sql("SELECT figure, peak_bytes FROM peaks").fetchall())
        (run,) = d.sql("SELECT figure, peak_bytes FROM run_peaks").fetchall()
    assert figs == {"allocator_blocks": torch_peak, "jax_memory_profile": _live("gpu_changed")}
    assert run == ("allocator_blocks", torch_peak)


def test_info_the_api_the_report_and_the_runs_screen_say_which_figure(db, capsys):
    from tlview import api
    from tlview.cli import main
    from tlview.report_command import WORDS
    from tlview.report_render import RENDERERS
    from tlview.store.report import build_report, headline
    from tlview.tui.runs_screen import WORDS as TUI_WORDS

    what = "live bytes of a JAX memory profile"
    peak = _live("gpu_changed")
    assert main(["info", "--db", str(db)]) == 0
    out = capsys.readouterr().out
    assert f"  peak {peak:,} B (184.00 MiB) {what}, timeline {_tid('gpu_changed')}" in out
    assert sum(f"{_live(n):,} B" in ln and what in ln for n in NAMES
               for ln in out.splitlines() if ln.startswith("timeline ")) == 4
    with api.open(db) as s:
        got = {t["timeline_id"]: (t["peak_bytes"], t["peak_figure"], t["peak_what"])
               for t in s.timelines()}
    assert got == {_tid(n): (_live(n), "jax_memory_profile", what) for n in NAMES}

    with open_database(db, read_only=True) as d:
        report = build_report(d, 1, WORDS)
        verdicts = headline(d, 1, TUI_WORDS)  # the runs screen's lines
        sites = d.sql("SELECT site, bytes FROM memory_profile_sites WHERE timeline_id = ? "
                      "ORDER BY bytes DESC, site", [_tid("gpu_changed")]).fetchall()
    assert report.figure("peak_bytes").value == peak
    assert (report.figure("peak_figure").value, report.figure("peak_figure").note) == (
        "jax_memory_profile", what)
    # the largest holder: one KV cache half, made by make_kv_cache (the generator's record)
    kv = max(a["nbytes"] for a in figures("gpu_changed")["live_arrays"]
             if a["made_by"] == "make_kv_cache")
    top = report.figure("peak_top_site")
    assert (top.value, sites[0][1]) == (sites[0][0], kv) and "make_kv_cache" in top.value
    memory = next(s for s in report.sections if s.key == "memory")
    tables = {t.key: t for t in memory.tables}
    assert sum(r[2] for r in tables["jax1_sites"].rows) == peak  # every site of the dump
    assert [r[3] for r in tables["jax_profiles"].rows] == sorted(
        (_live(n) for n in NAMES), reverse=True)
    assert verdicts[0].text.startswith(f"Peak {TUI_WORDS.bytes(peak)}, {what}")
    assert verdicts[0].evidence.screen == "timeline"
    for fmt, render in RENDERERS.items():
        text = render(report)
        assert what in text and "make_kv_cache" in text, fmt
        if fmt in ("md", "html"):
            assert "FROM memory_profile_sites WHERE timeline_id = 2" in text, fmt


# ----- broken profiles -----

def _state(db: Path) -> str:
    with open_database(db, read_only=True) as d:
        return json.dumps([source_digest(d, s) for s in (1, 2, 3, 4)], sort_keys=True)


def _refused(db: Path, bad: Path, capsys, *needles: str, fmt: str | None = None) -> str:
    from tlview.cli import main

    before = _state(db)
    code = main(["ingest", str(bad), "--db", str(db), *(["--format", fmt] if fmt else [])])
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.count("\n") == 1 and "Traceback" not in err and bad.name in err, err
    for n in needles:
        assert n in err, err
    assert _state(db) == before
    return err


def test_truncated_gzip_is_one_line(db, tmp_path, capsys):
    data = (JM / "cpu_base.prof").read_bytes()
    bad = tmp_path / "cut.prof"
    bad.write_bytes(data[: len(data) // 2])
    _refused(db, bad, capsys, "corrupt gzip data", "expected a gzip file")
    _refused(db, bad, capsys, "corrupt gzip data", "expected a gzipped pprof profile",
             fmt="jax_memory_profile")


def test_truncated_profile_names_the_byte(db, tmp_path, capsys):
    """A whole gzip of a cut profile: the field running past the end is named by offset."""
    raw = gzip.decompress((JM / "cpu_base.prof").read_bytes())
    bad = tmp_path / "short.prof"
    bad.write_bytes(gzip.compress(raw[: len(raw) - 7]))
    err = _refused(db, bad, capsys, "of the un-gzipped profile",
                   "expected a gzipped pprof profile")
    with pytest.raises(ProtoError) as e:
        parse_profile(raw[: len(raw) - 7])
    assert f"byte {e.value.offset} " in err and "truncated" in err


def test_unknown_location_is_one_line(db, tmp_path, capsys):
    """A sample naming a location the profile does not define (the first sample's leaf
    location id changed in place to an unused id of the same varint length): refused,
    not read as a shorter stack."""
    raw = bytearray(gzip.decompress((JM / "cpu_base.prof").read_bytes()))
    prof = parse_profile(bytes(raw))
    sample = next(v for n, _, v, _ in fields(raw, 0, len(raw)) if n == 2)
    lo, hi = next(v for n, _, v, _ in fields(raw, *sample) if n == 1)  # packed ids
    first, after = read_varint(raw, lo, hi)
    unused = next(i for i in range(1, 128) if i not in prof.locations)
    assert after == lo + 1 and unused != first  # one byte each
    raw[lo] = unused
    bad = tmp_path / "loc.prof"
    bad.write_bytes(gzip.compress(bytes(raw)))
    _refused(db, bad, capsys, "names location", "expected a defined location")


def test_varint_reader_is_bounded():
    assert read_varint(b"\x96\x01", 0, 2) == (150, 2)
    with pytest.raises(ProtoError, match="runs past the end"):
        read_varint(b"\x96\x81", 0, 2)
    with pytest.raises(ProtoError, match="longer than 10 bytes"):
        read_varint(b"\xff" * 11 + b"\x01", 0, 12)
    with pytest.raises(ProtoError, match="runs past"):
        read_varint(b"\x96\x01", 0, 1)  # the message ends before the buffer does


def test_a_profile_of_no_bytes_is_refused(tmp_path):
    """A pprof whose sample types carry no bytes (a CPU profile) is no memory profile."""
    raw = bytearray(gzip.decompress((JM / "cpu_base.prof").read_bytes()))
    i = raw.rfind(b"bytes")  # the string table's "bytes" (the space unit)
    raw[i:i + 5] = b"bytez"
    bad = tmp_path / "cpu.prof"
    bad.write_bytes(gzip.compress(bytes(raw)))
    with pytest.raises(IngestError, match="no value in bytes"):
        list(parse_profile_file(str(bad)))
