"""The compiled scheduler-IR parser (native/inductor_ir.cpp) against its specification,
ingest/inductor_ir.py: the same records, or the same error (class, file and line), on
every IR fixture, on dumps mutated as crashed jobs and editors mutate them, on random
edits with the characters that Python's str methods and regexes treat specially, and
whatever the chunk boundaries.
"""

from __future__ import annotations

import gzip
import random
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tlview.ingest import IngestError, inductor_ir, lines
from tlview.ingest.records import EventColumns
from tlview.store import write_records
from tlview.store.digest import source_digest

from tests.conftest import FIXTURES, SEED_000, SEED_001, SEED_002, discovered_fixtures, needs_native
from tests.fuzzing import MUTATIONS, mutate

pytestmark = needs_native("InductorIrParser")

IR_FIXTURES = sorted(Path(p) for p, fmt in discovered_fixtures()
                     if fmt == "inductor_ir" and "/gen/" not in str(p))
SMALL = [SEED_001, SEED_002,
         FIXTURES / "torch/mlp_dynamic/0_backward.ir_post_fusion.txt",
         FIXTURES / "torch/inplace_mutation/0_inference.ir_post_fusion.txt",
         FIXTURES / "torch_trace/concat/model__0_inference_0.0/ir_post_fusion.txt",
         next(p for p in IR_FIXTURES if "profile/coll/rank0" in str(p))]


def outcome(path: Path, compiled: bool, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, ...]:
    """("records", [...]) of a parse (event columns turned back into records), or
    ("error", class, path, line) where it fails."""
    monkeypatch.setenv("TLVIEW_NATIVE", "1" if compiled else "0")
    out: list[Any] = []
    columns = 0
    try:
        for rec in inductor_ir.parse_file(str(path)):
            if isinstance(rec, EventColumns):
                columns += 1
                out.extend(rec.records())
            else:
                out.append(rec)
    except IngestError as e:
        return ("error", type(e).__name__, e.path, e.line)
    assert bool(columns) == compiled  # the compiled parser ran, and only when asked
    return ("records", out)


def same(path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, ...]:
    spec = outcome(path, False, monkeypatch)
    fast = outcome(path, True, monkeypatch)
    assert fast == spec
    return spec


def test_there_are_ir_fixtures():
    assert len(IR_FIXTURES) >= 25 and all(p.exists() for p in SMALL)


@pytest.mark.parametrize("src", IR_FIXTURES, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_fixture(src, monkeypatch):
    """Every IR fixture: the same records, in the same order."""
    spec = same(src, monkeypatch)
    assert spec[0] == "records" and len(spec[1]) > 2


def test_rows_in_the_database(dbs, monkeypatch):
    """Through the writer (Arrow columns vs records): the same rows, digest and counts."""
    got = {}
    for compiled in (False, True):
        monkeypatch.setenv("TLVIEW_NATIVE", "1" if compiled else "0")
        from tlview.ingest.source import records_for

        summary = write_records(dbs[compiled], records_for(SEED_000, "inductor_ir"))
        got[compiled] = (source_digest(dbs[compiled], summary.source_id), summary.counts)
    assert got[True] == got[False]
    assert got[True][1]["node_scheduled"] == 959


class TestMutated:
    """Real dumps cut, flipped, with lines dropped, repeated, swapped, or garbage and
    enormous lines added: the same records or the same error."""

    @pytest.mark.parametrize("kind", MUTATIONS)
    @pytest.mark.parametrize("src", SMALL, ids=lambda p: p.name[:24])
    def test_mutation(self, src, kind, tmp_path, monkeypatch):
        data = src.read_bytes()
        rnd = random.Random(f"{src.name}-{kind}")
        for case in range(6 if kind != "huge_line" else 2):
            p = tmp_path / f"m{case}.txt"
            p.write_bytes(mutate(data, kind, rnd))
            same(p, monkeypatch)


# Characters that str.strip/isspace, re's \s \w \d, the bracket balance and the
# field syntax treat specially, as UTF-8, plus bytes that are no text at all.
SPECIAL = [b" ", b"\t", b"\n", b"\r", b"\r\n", b"\x0b", b"\x0c", b"\x1c", b"\x1f", b"\x85",
           b"[", b"]", b"(", b")", b"{", b"}", b"'", b'"', b"=", b" = ", b".", b":", b": ",
           b",", b"_", b"x", b"0", b"-", b"op1.", b"buf0.", b"snodes[0] =", b"WeakDep('a')",
           b"NodeUser(node=OUTPUT, is_weak=False)", b"_layout = ", b" code:",
           b"\xc2\xa0", b"\xe2\x80\x83", b"\xc3\xa9", b"\xd9\xa3", b"\xe2\x85\xa0",
           b"\xf0\x9d\x9f\x98", b"\x00", b"\xff", b"\xc3", b"\xe2\x80"]


class TestRandomEdits:
    """Random insertions, deletions and cuts with those characters."""

    @given(src=st.sampled_from(SMALL[:4]),
           edits=st.lists(st.tuples(st.floats(0, 1), st.integers(0, 3),
                                    st.sampled_from(SPECIAL)), min_size=1, max_size=4),
           cut=st.none() | st.floats(0, 1))
    @settings(max_examples=300, deadline=None,
              suppress_health_check=[HealthCheck.function_scoped_fixture])
    def test_same_outcome(self, src, edits, cut, tmp_path_factory, monkeypatch):
        data = bytearray(src.read_bytes())
        for where, drop, what in edits:
            i = int(where * len(data))
            data[i:i + drop] = what
        if cut is not None:
            data = data[: int(cut * len(data))]
        p = tmp_path_factory.mktemp("ed") / "ir.txt"
        p.write_bytes(bytes(data))
        same(p, monkeypatch)


HEAD = ("op0: SchedulerNode(ComputedBuffer)\n"
        "op0.writes = [MemoryDep('buf0', c0, {c0: 8})]\n"
        "op0.unmet_dependencies = []\n"
        "op0.met_dependencies = [MemoryDep('arg0_1', c0, {c0: 8})]\n"
        "op0.outputs = [\n"
        "    buf0: ComputedBuffer\n"
        "    buf0.layout = {layout}\n"
        "    buf0.users = [NodeUser(node=OUTPUT, can_inplace=False, is_weak=False)]\n"
        "]\n"
        "arg0_1_layout = {layout}\n")


class TestEdgeCases:
    """Hand-written inputs for what mutations rarely reach."""

    @pytest.mark.parametrize("layout", [
        "FixedLayout('cuda:0', torch.float32, size=[8], stride=[1])",
        "FixedLayout('cuda:0', torch.float32, size=[s0, 8], stride=[8, 1])",       # symbolic
        "FixedLayout('cuda:0', torch.float32, size=[s0*s1, 2*s2], stride=[2*s2, 1])",
        "FixedLayout('cuda:0', torch.weird, size=[8, 4], stride=[4, 1])",         # dtype
        "FixedLayout('cuda:0', torch.weird, size=[0, 4], stride=[4, 1])",
        "FixedLayout('cuda:0', torch.float32, size=[8, 4], stride=[1])",          # rank
        "FixedLayout('cuda:0', torch.float32, size=['a\\'b', 4], stride=[1])",
        "FixedLayout('cuda:0', torch.float32, size=[99999999999, 99999999999], "
        "stride=[99999999999, 1])",                                                # > int64
        "FixedLayout('cuda:0', torch.float32, size=[12345678901234567890123, 2], "
        "stride=[2, 1])",                                                          # bigint
        "FixedLayout('cuda:0', torch.weird, size=[12345678901234567890123, 2], "
        "stride=[2, 1])",
        "FixedLayout('cuda:0', torch.float32, size=[\u0663, 2], stride=[2, 1])",  # Arabic 3
        "FixedLayout(device=device(type='cuda', index=1), dtype=torch.bfloat16, size=[2], "
        "stride=[1], extra=1, extra=2)",
        "NonOwningLayout(view=ReinterpretView(...))",
        "FlexibleLayout('cpu', torch.float32, size=[4], stride=[1])",
        "FixedLayout",
        "\u00a0FixedLayout('cpu', torch.int8, size=[3], stride=[1])\u2003",
    ])
    def test_layouts(self, layout, tmp_path, monkeypatch):
        p = tmp_path / "ir.txt"
        p.write_text(HEAD.replace("{layout}", layout), encoding="utf-8")
        same(p, monkeypatch)

    @pytest.mark.parametrize("text", [
        b"",
        b"\n\n",
        b"hello\n",
        b"    indented\n",
        HEAD.replace("{layout}", "FixedLayout('cpu', torch.int8, size=[3], stride=[1])")
        .replace("\n", "\r\n").encode(),
        HEAD.replace("{layout}", "X").encode()[:-40] + b"\xe2\x80",             # cut char
        HEAD.replace("{layout}", "X").encode().replace(b"ComputedBuffer\n", b"Computed\xffB\n"),
        HEAD.replace("{layout}", "X").encode().replace(b"ComputedBuffer\n", b"Comp\x00B\n"),
        HEAD.replace("{layout}", "X").encode().replace(b"ComputedBuffer\n", b"C\xe2\x00\n"),
        HEAD.replace("{layout}", "X").encode() + "op1: Sched\u00e9ulerNode(X)\nop1.w\u00e9 = 1\n"
        "class op1_l\u00f6op_loop_body:\u2003\n  x\n\nop1 Tr\u00cfTON code:\n  y\n".encode(),
        HEAD.replace("{layout}", "X").encode().replace(b"\n]\n", b"\n"),        # no ]
        HEAD.replace("{layout}", "X").encode().replace(b"OUTPUT", b"SchedulerNode(name='op9')"),
    ], ids=range(12))
    def test_inputs(self, text, tmp_path, monkeypatch):
        p = tmp_path / "ir.txt"
        p.write_bytes(text)
        same(p, monkeypatch)

    def test_gzip(self, tmp_path, monkeypatch):
        p = tmp_path / "ir_post_fusion.txt.gz"
        p.write_bytes(gzip.compress(SEED_001.read_bytes()))
        assert same(p, monkeypatch)[0] == "records"
        bad = tmp_path / "bad.txt.gz"
        bad.write_bytes(gzip.compress(SEED_001.read_bytes())[:-300])
        assert same(bad, monkeypatch)[0] == "error"


def _node(name: str, buf: str, users: list[str], reads: list[str] = (),
          extra: str = "") -> str:
    user_text = ", ".join(
        "NodeUser(node=OUTPUT, can_inplace=False, is_weak=False)" if u == "OUTPUT"
        else f"NodeUser(node=SchedulerNode(name='{u}'), can_inplace=False, is_weak=False)"
        for u in users)
    deps = ", ".join(f"MemoryDep('{r}', c0, {{c0: 8}})" for r in reads)
    return (f"{name}: SchedulerNode(ComputedBuffer)\n"
            f"{name}.writes = [MemoryDep('{buf}', c0, {{c0: 8}})]\n"
            f"{name}.unmet_dependencies = [{deps}]\n"
            f"{name}.met_dependencies = []\n"
            f"{name}.outputs = [\n"
            f"    {buf}: ComputedBuffer\n"
            f"    {buf}.layout = FixedLayout('cuda:0', torch.float32, size=[8], stride=[1])\n"
            f"{extra}"
            f"    {buf}.users = [{user_text}]\n"
            "]\n")


class TestNames:
    """``buf<N>``/``op<N>`` names are looked up by number (NameMap), other names by
    hash: names that differ only in spelling (leading zeros, other digits, a number
    past the dense range) stay distinct, as in the specification's dicts."""

    @pytest.mark.parametrize("names", [
        ("op1", "op01", "buf1", "buf01"),
        ("op0", "op00", "buf0", "buf00"),
        ("op", "op\u0661", "buf", "buf\u0661"),                    # no number; Arabic 1
        ("op4294967296", "op2147483648", "buf99999999999", "buf2147483647"),
        ("op7", "opx7", "buf7", "bufx7"),
    ], ids=range(5))
    def test_spellings(self, names, tmp_path, monkeypatch):
        a, b, x, y = names
        text = (_node(a, x, [b, "OUTPUT"]) + _node(b, y, [a], reads=[x])
                + _node("op9", "buf9", [], reads=[y, x]))
        p = tmp_path / "ir.txt"
        p.write_text(text, encoding="utf-8")
        got = same(p, monkeypatch)
        assert got[0] == "records"

    def test_many_nodes(self, tmp_path, monkeypatch):
        """Thousands of numbered names, users seen before and after, across pages."""
        rnd = random.Random(5)
        order = list(range(3000))
        parts = []
        for i in order:
            later = [f"op{j}" for j in rnd.sample(range(i + 1, 3001), k=min(2, 3000 - i))]
            parts.append(_node(f"op{i * 3}" if i % 7 else f"op{i}", f"buf{i * 5000}",
                               later, reads=[f"buf{(i - 1) * 5000}"] if i else []))
        p = tmp_path / "ir.txt"
        p.write_text("".join(parts), encoding="utf-8")
        same(p, monkeypatch)

    @pytest.mark.parametrize("field", ["ir_class", "bytes_unknown", "layout_rule",
                                       "written_by_views", "owns_no_storage", "mutations"])
    def test_buffer_field_named_like_an_attr(self, field, tmp_path, monkeypatch):
        """A buffer field named as a key allocate() sets itself: the dict's order."""
        text = _node("op0", "buf0", ["OUTPUT"], extra=f"    buf0.{field} = ['x']\n")
        p = tmp_path / "ir.txt"
        p.write_text(text.replace("FixedLayout('cuda:0', torch.float32, size=[8]",
                                  "FlexibleLayout('cuda:0', torch.float32, size=[s0]"),
                     encoding="utf-8")
        assert same(p, monkeypatch)[0] == "records"

    def test_many_layout_lines(self, tmp_path, monkeypatch):
        """A node with more layout lines than the linear lookup holds, names repeated."""
        reads = [f"arg{i}_1" for i in range(40)]
        lays = "".join(f"arg{i % 30}_1_layout = FixedLayout('cpu', torch.int8, "
                       f"size=[{i + 1}], stride=[1])\n" for i in range(40))
        text = _node("op0", "buf0", ["OUTPUT"], reads=reads) + lays
        p = tmp_path / "ir.txt"
        p.write_text(text, encoding="utf-8")
        assert same(p, monkeypatch)[0] == "records"


class TestChunks:
    """Chunk boundaries (inside lines, characters, CR LF pairs) change nothing, and
    which of a bad byte and a bad line is reported first follows the chunks as in
    lines.read_text."""

    @pytest.mark.parametrize("chunk", [1, 7, 64, 4093])
    def test_small_chunks(self, chunk, tmp_path, monkeypatch):
        text = SEED_002.read_bytes()
        crlf = tmp_path / "crlf.txt"
        crlf.write_bytes(text.replace(b"\n", b"\r\n"))
        bad = tmp_path / "bad.txt"
        bad.write_bytes(text[:3000] + b"\xff" + text[3000:])
        uni = tmp_path / "uni.txt"
        uni.write_bytes(text.replace(b"ComputedBuffer", "Comput\u00e9\u2003B".encode()))
        monkeypatch.setattr(lines, "CHUNK", chunk)
        for p in (SEED_002, crlf, bad, uni):
            same(p, monkeypatch)
