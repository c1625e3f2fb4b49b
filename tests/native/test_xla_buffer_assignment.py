"""The compiled XLA parser (native/xla_buffer_assignment.cpp) against its specification.

Both parsers read each input and must give the same outcome: every events row (column
by column, attrs text included), the timeline and its closing note, or an IngestError
of the same class naming the same file and line. Inputs: every XLA dump among the fixtures (both
forms), the same dumps glued into one file, and those cut, flipped, with lines dropped,
repeated, swapped, garbage or odd characters added, numbers and tokens changed.
"""

from __future__ import annotations

import random
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from tlview.ingest import IngestError, native
from tlview.ingest.records import EventColumns, Source, Timeline, TimelineNote, dumps
from tlview.ingest.source import records_for
from tlview.ingest.xla_buffer_assignment import sibling_files
from tlview.store.convert import EVENT_COLUMNS, event_tuple

from tests.conftest import FIXTURES, SEED_003, needs_native
from tests.fuzzing import MUTATIONS, mutate

pytestmark = needs_native()

SPLIT = sorted((FIXTURES / "xla").glob("*-buffer-assignment.txt"))
DUMPS = [SEED_003, *SPLIT]
IDS = ["seed003", *(p.name.split(".")[1] for p in SPLIT)]
_ROW = EVENT_COLUMNS[3:]  # after source_id, timeline_id, seq (the writer's)


def rows_of(path: Path) -> list[tuple[Any, ...]]:
    """Everything the parser yields, as plain rows (events in events-table column order)."""
    out: list[tuple[Any, ...]] = []
    for rec in records_for(path, "xla_buffer_assignment"):
        if isinstance(rec, Source):
            continue
        if isinstance(rec, Timeline):
            out.append(("timeline", rec.key, rec.name, rec.format, dumps(rec.attrs)))
        elif isinstance(rec, TimelineNote):
            out.append(("note", rec.timeline, dumps(rec.attrs)))
        elif isinstance(rec, EventColumns):
            cols = [rec.columns[c].to_pylist() if c in rec.columns else [None] * rec.n
                    for c in _ROW]
            out.extend(("event", *row) for row in zip(*cols, strict=True))
        else:
            row = event_tuple(rec)
            out.append(("event", *(list(v) if isinstance(v, tuple) else v for v in row)))
    return out


def outcome(path: Path, compiled: bool, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, ...]:
    monkeypatch.setenv("TLVIEW_NATIVE", "1" if compiled else "0")
    try:
        return ("rows", rows_of(path))
    except IngestError as e:
        return ("error", type(e).__name__, Path(e.path).name, e.line)


def assert_same(path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, ...]:
    spec = outcome(path, False, monkeypatch)
    fast = outcome(path, True, monkeypatch)
    if spec[0] == "rows" and fast[0] == "rows":
        assert len(fast[1]) == len(spec[1])
        for i, (a, b) in enumerate(zip(spec[1], fast[1], strict=True)):
            assert b == a, f"row {i} differs"
    assert fast == spec
    return spec


def compiled_reads(paths: list[str]) -> bool:
    """True when the compiled parser reads these files itself (no hand-over to Python)."""
    from tlview.ingest import xla_native

    live_first = sorted(range(len(paths)), key=lambda i: not paths[i].endswith("-live-range.txt"))
    try:
        return xla_native.plain(native.module(), paths, live_first) is not None
    except IngestError:
        return True  # read, and found bad: the compiled parser's own error


def glued(split: Path, out: Path) -> Path:
    """A split-form dump as the single-file form: its siblings' text in section order."""
    out.write_bytes(b"".join(Path(f).read_bytes() for f in sibling_files(str(split))))
    return out


@pytest.mark.parametrize("dump", DUMPS, ids=IDS)
def test_fixture(dump, monkeypatch):
    assert compiled_reads(sibling_files(str(dump)))
    spec = assert_same(dump, monkeypatch)
    assert spec[0] == "rows"


@pytest.mark.parametrize("dump", SPLIT, ids=IDS[1:])
def test_glued(dump, tmp_path, monkeypatch):
    p = glued(dump, tmp_path / "m-single.txt")
    assert compiled_reads([str(p)])
    assert assert_same(p, monkeypatch)[0] == "rows"


def test_gzip_and_tiny_chunks(tmp_path, monkeypatch):
    """A gzipped dump, and chunk boundaries anywhere (even inside a line or a character)."""
    import gzip

    from tlview.ingest import native as native_module

    dump = next(p for p in SPLIT if "attention" in p.name)
    data = glued(dump, tmp_path / "g.txt").read_bytes()
    gz = tmp_path / "g-buffer-assignment.txt.gz"
    gz.write_bytes(gzip.compress(data))
    assert assert_same(gz, monkeypatch)[0] == "rows"
    spec = outcome(tmp_path / "g.txt", False, monkeypatch)
    monkeypatch.setattr(native_module, "CHUNK", 7)
    assert outcome(tmp_path / "g.txt", True, monkeypatch) == spec


def test_xla_peak_figure(monkeypatch):
    """XLA's own "Live ranges at K (peak)" claim, from the compiled parser's note."""
    monkeypatch.setenv("TLVIEW_NATIVE", "1")
    dump = next(p for p in SPLIT if "rnn_scan_grad" in p.name)
    note = next(r for r in records_for(dump, "xla_buffer_assignment")
                if isinstance(r, TimelineNote))
    live = Path(str(dump).replace("-buffer-assignment.txt", "-live-range.txt")).read_text()
    k = int(re.search(r"Live ranges at (\d+) \(peak\)", live).group(1))
    listed = [(m.group(1), int(m.group(2)))
              for m in re.finditer(r"^    (\S+): (\d+) bytes \(cumulative", live, re.M)]
    peak = note.attrs["xla_peak"]
    assert peak["step"] == k == 17
    assert peak["bytes"] == sum(b for _, b in listed) == 7684184
    assert [(v["name"], v["bytes"]) for v in peak["values"]] == listed


# -- mutated inputs ----------------------------------------------------------------------

ODD = [b"\r", b"\xc3\xa9", b"\xc2\xa0", b"\t", b"\x0b", b"\xff", b"\x00", b"\xe2\x94\x82"]
XLA_MUTATIONS = ("number", "token", "odd", "blank", "dedent", "indent", "ascii_garbage")
_PUNCT = b" <>{}()[]:,@=|%\"\\-."


def mutate_xla(data: bytes, kind: str, rnd: random.Random) -> bytes:
    """Edits a person or a crashed job makes to a dump: numbers, tokens, characters."""
    lines = data.split(b"\n")
    i = rnd.randrange(len(lines))
    ln = lines[i]
    if kind == "number":
        nums = list(re.finditer(rb"\d+", ln))
        if nums:
            m = rnd.choice(nums)
            new = rnd.choice([b"0", b"1", b"7", b"99999999", b"123456789012345678901",
                              str(int(m.group()) + 1).encode(), b"-1", b""])
            ln = ln[:m.start()] + new + ln[m.end():]
    elif kind == "token":
        toks = list(re.finditer(rb"[^\s]+", ln))
        if toks:
            m = rnd.choice(toks)
            ln = ln[:m.start()] + ln[m.end():]
    elif kind == "odd":
        at = rnd.randrange(len(ln) + 1)
        ln = ln[:at] + rnd.choice(ODD) + ln[at:]
    elif kind == "blank":
        lines.insert(i, rnd.choice([b"", b"   ", b"\t"]))
    elif kind == "dedent":
        ln = ln.lstrip(b" ")
    elif kind == "indent":
        ln = b" " + ln
    elif kind == "ascii_garbage":  # plain text the compiled parser reads itself
        alphabet = b"ab09_" + _PUNCT
        junk = bytes(rnd.choice(alphabet) for _ in range(rnd.randint(1, 40)))
        ln = rnd.choice([b"", b" ", b"  ", b"    "]) + junk
        lines.insert(i, ln)
        return b"\n".join(lines)
    lines[i] = ln
    return b"\n".join(lines)


def _variant(dump: Path, kind: str, case: int, tmp_path: Path) -> Path:
    """A copy of ``dump`` (all its siblings) with one file mutated."""
    rnd = random.Random(f"{dump.name}-{kind}-{case}")
    folder = tmp_path / f"{kind}{case}"
    folder.mkdir()
    files = [Path(f) for f in sibling_files(str(dump))]
    for f in files:
        shutil.copy(f, folder / f.name)
    victim = folder / rnd.choice(files).name
    data = victim.read_bytes()
    victim.write_bytes(mutate(data, kind, rnd) if kind in MUTATIONS
                       else mutate_xla(data, kind, rnd))
    return folder / dump.name


@pytest.mark.parametrize("kind", MUTATIONS + XLA_MUTATIONS)
@pytest.mark.parametrize("dump", DUMPS, ids=IDS)
def test_mutation(dump, kind, tmp_path, monkeypatch):
    for case in range(4):
        assert_same(_variant(dump, kind, case, tmp_path), monkeypatch)


@pytest.mark.parametrize("dump", SPLIT[:2], ids=IDS[1:3])
def test_truncated_everywhere(dump, tmp_path, monkeypatch):
    """The glued dump cut at many points: the same rows or the same error, every time."""
    data = glued(dump, tmp_path / "whole.txt").read_bytes()
    rnd = random.Random(dump.name)
    for cut in sorted(rnd.sample(range(len(data)), 12)):
        p = tmp_path / f"cut{cut}-buffer-assignment.txt"
        p.write_bytes(data[:cut])
        assert_same(p, monkeypatch)


def test_missing_siblings(tmp_path, monkeypatch):
    """Split form with a sibling gone: the same error or the same partial rows."""
    dump = SPLIT[0]
    for drop in range(1, 4):
        folder = tmp_path / f"d{drop}"
        folder.mkdir()
        files = sibling_files(str(dump))
        for j, f in enumerate(files):
            if j != drop:
                shutil.copy(f, folder / Path(f).name)
        assert_same(folder / dump.name, monkeypatch)


def test_hand_written(tmp_path, monkeypatch):
    """Small dumps that reach the rarer branches: phi, colors, unknown lines, old peak form,
    no live ranges, values without ranges, ranges without values, the moment warning."""
    text = """BufferAssignment:
allocation 0: size 64, parameter 0, shape |f32[4,4]| at ShapeIndex {1}, maybe-live-out:
 value: <3 p0 @0> (size=64,offset=0): f32[4,4]{1,0}
 value: <4 t{1} (phi) @2> (size=32,offset=32): (f32[], /*index=1*/s8[<=5,3])
allocation 1: size 16, output shape is |(f32[4])|, thread-local:
 value: <9 out{} @1> (size=16,offset=0): bf16[2,<=4]{0}
 junk line
allocation 2: size 8:
 value: <11 lonely @0> (size=8,offset=0): weird
mystery top line

Total bytes used: 88 (88B)

Used values:
<3 p0 @0>
 positions:
  p0
  t{1}
 uses:
  (none)
 from instruction: %p0 = f32[4,4]{1,0} parameter(0), metadata={op_type="A" op_name="x/\\"y\\"" source_file="f.py" source_line=12 stack_frame_id=3}, backend_config={"a":{"b":"}"}}
<4 t{1} (phi) @2>
 positions:
  t{1}
 uses:
  out, operand 0
 from instruction: %t = (f32[], s8[5,3]) tuple(%p0), kind=kLoop, calls=%fused.1
<77 ghost @0>
 from instruction: %ghost = f32[] constant(0)
  stray
HloLiveRange (max 3):
  InstructionSequence:
    0:p0
    1:t
    2:out
  BufferLiveRange:
    p0{}:0-2
    t{1}:1-1
    out{}:2-3
    nowhere{}:0-1
  Live ranges at 1 (peak):
    p0: 64 bytes
    t: 32 bytes
"""
    p = tmp_path / "hand-buffer-assignment.txt"
    p.write_text(text)
    assert compiled_reads([str(p)])
    spec = assert_same(p, monkeypatch)
    assert spec[0] == "rows"
    for cut in ("  Live ranges at", "HloLiveRange"):
        q = tmp_path / f"cut{len(cut)}-buffer-assignment.txt"
        q.write_text(text[: text.index(cut)])
        assert_same(q, monkeypatch)
