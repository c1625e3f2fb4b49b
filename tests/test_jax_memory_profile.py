"""JAX device memory profiles (jax.profiler.save_device_memory_profile): the live buffers
at one instant, their bytes equal to JAX's own figures, two profiles diffed, and broken
profiles refused in one line with the database untouched.

Fixtures: tests/fixtures/jax_memory/cpu/ (tests/fixtures/gen/make_jax_memory.py, CPU JAX):
each ``<variant>.prof`` has ``<variant>.json`` beside it with the live arrays JAX listed
right before the dump (the CPU backend has no memory_stats(): their nbytes are its live
device bytes).
"""

from __future__ import annotations

import gzip
import json
from collections import Counter
from pathlib import Path

import pytest
from conftest import FIXTURES, ingest_into
from tlview.ingest.errors import IngestError
from tlview.ingest.jax_memory_profile import parse_profile_file
from tlview.ingest.pprof import ProtoError, fields, parse_profile, read_varint
from tlview.store import open_database
from tlview.store.diff import ensure_alignment
from tlview.store.digest import source_digest

CPU = FIXTURES / "jax_memory" / "cpu"
GPU = FIXTURES / "jax_memory"


def figures(prof: Path) -> dict:
    return json.loads(prof.with_suffix(".json").read_text())


@pytest.fixture(scope="module")
def db(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("jaxmem") / "m.duckdb"
    ingest_into(path, CPU / "base.prof", CPU / "changed.prof")
    with open_database(path) as d:
        ensure_alignment(d, 1, 2)
    return path


@pytest.mark.parametrize("variant,tid", [("base", 1), ("changed", 2)])
def test_live_bytes_equal_jax_live_arrays(db, variant, tid):
    """The profile's live bytes (peak_memory, memory_curve at its one step) equal the sum
    of jax.live_arrays() nbytes at the dump, and its buffers are those arrays: each
    sample's size, count times, gives the arrays' sizes exactly."""
    fig = figures(CPU / f"{variant}.prof")
    with open_database(db, read_only=True) as d:
        peak = d.sql("SELECT peak_step, peak_bytes FROM peak_memory WHERE timeline_id = ?",
                     [tid]).fetchone()
        curve = d.sql("SELECT step, live_bytes FROM memory_curve WHERE timeline_id = ?",
                      [tid]).fetchall()
        sizes = d.sql("SELECT size, count FROM memory_profile_buffers WHERE timeline_id = ?",
                      [tid]).fetchall()
        fmt, dev = d.sql("SELECT format, device FROM timelines WHERE timeline_id = ?",
                         [tid]).fetchone()
    assert peak == (0, fig["live_arrays_nbytes_sum"])
    assert curve == [(0, fig["live_arrays_nbytes_sum"])]
    assert (fmt, dev) == ("jax_memory_profile", fig["device"])
    got = Counter()
    for size, count in sizes:
        got[size] += count
    assert got == Counter(a["nbytes"] for a in fig["live_arrays"])


def test_stacks_name_the_functions_that_made_the_arrays(db):
    """Each buffer's stack names the generator's function that made it (its innermost
    frame in the generator); the bytes per function equal the live arrays' by made_by
    (the token ids are made in dump() itself), and the site is the first frame outside
    jax and Python's library: in the generator."""
    fig = figures(CPU / "base.prof")
    want = Counter()
    for a in fig["live_arrays"]:
        want["dump" if a["made_by"] == "make_token_ids" else a["made_by"]] += a["nbytes"]
    with open_database(db, read_only=True) as d:
        rows = d.sql("SELECT site, stack, bytes FROM memory_profile_buffers "
                     "WHERE timeline_id = 1").fetchall()
    got = Counter()
    for site, stack, nbytes in rows:
        assert site.startswith(str(FIXTURES / "gen" / "make_jax_memory.py")), site
        names = [f.rsplit(":", 1)[1] for f in stack if "make_jax_memory.py" in f]
        got[next(n for n in names if n in want)] += nbytes
    assert got == want
    with open_database(db, read_only=True) as d:
        deepest = d.sql("SELECT stack[-1] FROM memory_profile_buffers WHERE timeline_id = 1 "
                        "LIMIT 1").fetchone()[0]
        sites = d.sql("SELECT sum(bytes) FROM memory_profile_sites WHERE timeline_id = 1"
                      ).fetchone()[0]
    assert deepest.endswith(":<module>")  # the outermost frame: the script itself
    assert sites == fig["live_arrays_nbytes_sum"]


def test_executables_are_counted_beside_not_in_the_live_bytes(db):
    prof = parse_profile(gzip.decompress((CPU / "base.prof").read_bytes()))
    kinds = Counter(next(la.text for la in s.labels if la.key == "kind") for s in prof.samples)
    with open_database(db, read_only=True) as d:
        note = json.loads(d.sql("SELECT notes FROM timelines WHERE timeline_id = 1").fetchone()[0])
    assert note["executables"]["samples"] == kinds["executable"] > 0
    assert note["buffer_samples"] == kinds["buffer"]
    assert note["live_bytes"] == figures(CPU / "base.prof")["live_arrays_nbytes_sum"]


def test_two_profiles_diffed_like_two_snapshots(db):
    """peak_diff explains the change exactly (Σ delta = b - a); the buffers are matched by
    site and size, else by site (grown): the KV cache doubled, the scratch is new, the
    mask is gone; site_diff sums to the same change."""
    a, b = figures(CPU / "base.prof"), figures(CPU / "changed.prof")

    def by(fig, name):
        return sum(x["nbytes"] for x in fig["live_arrays"] if x["made_by"] == name)

    change = b["live_arrays_nbytes_sum"] - a["live_arrays_nbytes_sum"]
    with open_database(db, read_only=True) as d:
        ensure_alignment(d, 1, 2)
        rows = d.sql("SELECT status, delta_bytes, matched_by, what FROM peak_diff(1, 2)").fetchall()
        sites = d.sql("SELECT site, delta_bytes FROM site_diff(1, 2)").fetchall()
        report_sites = d.query_dicts("diff_site_rows", 1, 2, 10)  # what `tlview diff` lists
    assert sum(r[1] for r in rows) == change == sum(s[1] for s in sites)
    moved = {(r[0], r[3].rsplit(":", 1)[1]): r[1] for r in rows if r[0] != "same"}
    assert moved[("new", "make_extra_scratch")] == by(b, "make_extra_scratch")
    assert moved[("gone", "make_mask")] == -by(a, "make_mask")
    grown = [r for r in rows if r[0] == "grown"]
    assert [r[2] for r in grown] == ["same_group", "same_group"]
    assert sum(r[1] for r in grown) == by(b, "make_kv_cache") - by(a, "make_kv_cache")
    assert {r[2] for r in rows if r[0] == "same"} == {"same_key"}
    assert sorted(r["delta_bytes"] for r in report_sites) == sorted(x for _, x in sites if x)


# ----- broken profiles -----

def _state(db: Path) -> str:
    with open_database(db, read_only=True) as d:
        return json.dumps([source_digest(d, s) for s in (1, 2)], sort_keys=True)


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
    data = (CPU / "base.prof").read_bytes()
    bad = tmp_path / "cut.prof"
    bad.write_bytes(data[: len(data) // 2])
    _refused(db, bad, capsys, "corrupt gzip data", "expected a gzip file")
    _refused(db, bad, capsys, "corrupt gzip data", "expected a gzipped pprof profile",
             fmt="jax_memory_profile")


def test_truncated_profile_names_the_byte(db, tmp_path, capsys):
    """A whole gzip of a cut profile: the field running past the end is named by offset."""
    raw = gzip.decompress((CPU / "base.prof").read_bytes())
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
    raw = bytearray(gzip.decompress((CPU / "base.prof").read_bytes()))
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
    raw = bytearray(gzip.decompress((CPU / "base.prof").read_bytes()))
    i = raw.rfind(b"bytes")  # the string table's "bytes" (the space unit)
    raw[i:i + 5] = b"bytez"
    bad = tmp_path / "cpu.prof"
    bad.write_bytes(gzip.compress(bytes(raw)))
    with pytest.raises(IngestError, match="no value in bytes"):
        list(parse_profile_file(str(bad)))


@pytest.mark.skipif(not list(GPU.glob("gpu_*.prof")), reason="GPU profiles not merged yet")
def test_gpu_profiles_live_bytes_equal_bytes_in_use(tmp_path):
    """On a GPU the profile's live bytes equal memory_stats()['bytes_in_use'] at the dump
    (read right before and right after it, no JAX work between)."""
    for prof in sorted(GPU.glob("gpu_*.prof")):
        fig = json.loads(prof.with_suffix(".json").read_text())
        before = fig["memory_stats_before_dump"]["bytes_in_use"]
        assert before == fig["memory_stats_after_dump"]["bytes_in_use"]
        path = tmp_path / f"{prof.stem}.duckdb"
        ingest_into(path, prof)
        with open_database(path, read_only=True) as d:
            peaks = d.sql("SELECT t.device, p.peak_bytes FROM peak_memory p "
                          "JOIN timelines t USING (timeline_id)").fetchall()
        assert sum(b for _, b in peaks) == before, (prof.name, peaks, before)
