"""The compiled-assisted wrapper parser against its specification, WrapperParser.

``CompiledWrapperParser`` keeps a module's lines and lets the compiled scans
(native/torch_wrapper.cpp) pass over the runs the line-by-line parser would only pass over
(kernel source, ignored top-level code). It must give exactly WrapperParser's records
(attrs JSON included), note and errors: on every wrapper module of the torch-log, output
code, seed and TORCH_TRACE fixtures, on those modules mutated, and the scans must answer
as the Python tests they replace on hand-written edge lines (Unicode spaces included).
(tests/test_events_digest.py pins the rows of every fixture in both modes.)
"""

from __future__ import annotations

import random
from typing import Any

import pytest
from conftest import FIXTURES, SEED_004, needs_native
from fuzzing import feed_lines, reshuffle, same_result
from tlview.ingest import inductor_wrapper as iw
from tlview.ingest import native
from tlview.ingest.source import records_for
from tlview.ingest.torch_log import _Names

pytestmark = needs_native("wrapper_source_end")

TORCH = FIXTURES / "torch"
SOURCES = (sorted(TORCH.glob("*.log")) + sorted(TORCH.glob("*/*.output_code.py")) +
           [SEED_004] + sorted((FIXTURES / "torch_trace").glob("*/*.log.gz")))


def _modules() -> list[tuple[str, dict[str, Any], list[str], list[int]]]:
    """(source, constructor kwargs, texts, numbers) of every wrapper module the fixtures
    hold, as the log and trace parsers hand them to the wrapper parser."""
    seen: list[tuple[str, dict[str, Any], list[str], list[int]]] = []
    init, finish = iw.CompiledWrapperParser.__init__, iw.CompiledWrapperParser.finish

    def spy_init(self: Any, core: Any, path: str, names: Any, **kw: Any) -> None:
        self._spy_kw = {k: v for k, v in kw.items() if k != "sink"}  # records, not rows
        init(self, core, path, names, **kw)

    def spy_finish(self: Any) -> Any:
        seen.append((self.path, self._spy_kw, list(self._texts), list(self._numbers)))
        return finish(self)

    mp = pytest.MonkeyPatch()
    mp.setattr(iw.CompiledWrapperParser, "__init__", spy_init)
    mp.setattr(iw.CompiledWrapperParser, "finish", spy_finish)
    mp.setenv("TLVIEW_NATIVE", "1")
    try:
        for src in SOURCES:
            list(records_for(src))
    finally:
        mp.undo()
    return seen


MODULES = _modules() if pytestmark.args[0] is False else []


def run(parser: Any, texts: list[str], numbers: list[int]) -> tuple[Any, ...]:
    """Feed a wrapper parser the lines; ("ok", records, note, ...) or its error."""
    return feed_lines(parser, texts, numbers,
                      lambda p: (p.note, p.key, p.n_unknown, p.interleaved))


def both(kw: dict[str, Any], texts: list[str], numbers: list[int]
         ) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    want = run(iw.WrapperParser("w.log", _Names(), **kw), texts, numbers)
    got = run(iw.CompiledWrapperParser(native.module(), "w.log", _Names(), **kw), texts,
              numbers)
    return want, got


same = same_result  # (fuzzing.same_result)


class TestFixtures:
    def test_found(self):
        """Wrapper modules of glog and short logs, output_code.py files and TORCH_TRACE."""
        assert len(MODULES) >= 30
        assert {p.rsplit(".", 1)[-1] for p, *_ in MODULES} >= {"log", "py", "gz", "txt"}

    @pytest.mark.parametrize("i", range(len(MODULES)))
    def test_module(self, i):
        _, kw, texts, numbers = MODULES[i]
        want, got = both(kw, texts, numbers)
        assert want[0] == "ok" and len(want[1]) > 3
        same(want, got)


def test_read_whole():
    """Every fixture module is read by the compiled reader (native/wrapper_module.cpp), not
    declined to the line-by-line path (whose records the tests above also compare), but
    those split into graph partitions: the Python parser reads their dispatches."""
    core = native.module()
    partitioned = 0
    for _, kw, texts, numbers in MODULES:
        p = iw.CompiledWrapperParser(core, "w.log", _Names(), **kw)
        i = next(k for k, t in enumerate(texts) if t.strip())
        p._feed(numbers[i], texts[i])
        got = core.wrapper_module(texts, numbers, i + 1, p.key, iw._RECORD_CLASSES,
                                  p._fx_graph())
        if any(t.startswith("def partition_") for t in texts):
            partitioned += 1
            assert got is None, texts[i]
        else:
            # the least: torch/no_alloc's in-place graph (its input, one launch, the return)
            assert got is not None and len(got[0]) >= 3, texts[i]
    assert partitioned >= 6  # partitions/: 2 modules in each of 3 forms (and short/glog)


EDITS = [
    "'''", "    '''", "\u3000'''", "\u00a0 ''')", "''", " ''' x", "x '''",
    "triton_poi_0 = async_compile.triton('triton_poi_0', '''",
    "cpp_fused_x = async_compile.cpp_pybinding(['float*'], r'''",
    "k2 = async_compile.multi_kernel('k2', [])", "\u00e9 = async_compile.triton('x', '''",
    "def call(args):", "    def call(self, args):", "\u3000def call(args):",
    "# Topologically Sorted Source Nodes: [a], Original ATen: [aten.mm]", "\u2003# note",
    "\u00e9# not a comment", "#", "x = rand_strided((2, ), (1, ), device='cpu', dtype=torch.float32)",
    "caf\u00e9 = rand_strided((2, ), (1, ), device='cpu', dtype=torch.float16)",
    "import torch", "", "   ", "\u2028", "    return (buf0, )", "    del buf0",
    "    buf9 = empty_strided_cpu((4, ), (1, ), torch.float32)", "        pass", "class Runner:",
    "    (", ")", "# AOT ID: ['9_forward']",
    "def partition_0(args):", "def partition_9(args):", "def f(x):", "def g(args): ",
    "    buf0, = args", "        partition0_args = [buf0]",
    "        (buf1, ) = self.partitions[0](partition0_args)", "        del partition0_args",
    "        (buf2, buf3) = self.partitions[1](partition1_args)", "    return (buf1, )",
]

STATEMENTS = [
    "buf1 = buf0; del buf0  # reuse", "x == y", "a = b == c", "passed = 1", "pass",
    "returned = buf0", "del buf0; foo()", "del (buf0)", "del buf0, buf1", "s0 = 4*s1",
    "buf2 = reinterpret_tensor(buf1, (4, ), (1, ), 0); del buf1  # reuse", "f(x)  # c",
    "extern_kernels.mm(buf0, buf1, out=buf2)", "x = '#'; del buf0", "a, b = args",
    "stream0 = get_raw_stream(0)", "assert_size_stride(buf0, (4, ), (1, ))", "buf3 = buf2[0]",
    "g()extra", "f(a) ; ", ";", "with torch.cuda._DeviceGuard(0):", "torch.cuda.set_device(0)",
    "buf9 = empty_strided_cuda((4, 4), (4, 1), torch.float16)", "x\x1c=\x1cy", "buf0 =",
    "_x = f(1)", "1x = f(1)", "a.b = c", "f()", "f.g.h(1, (2, 3))", "x = 'a;b'; del y",
    "x = \"#\" # c", "buf4 = buf3  #", "del", "del  buf0", "if __name__ == 1: f()",
    "buf5 = empty_strided_cpu((2, ), (1, ), torch.float32); del buf5",
    "buf6 = caf\u00e9(1)", "\u00e9 = 1", "x = y # \u00e9", "assert_alignment(buf0, 16)",
    "buf7 = torch.ops.aten.mm.default(buf0, buf1)", "args.clear()", "f(x)\x0b",
    "# Topologically Sorted Source Nodes: [a, , b ], Original ATen: [aten.mm]",
    "#Topologically Sorted Source Nodes:[x],Original ATen:[]  trailing",
    "# Topologically Sorted Source Nodes: [x] , Original ATen: [y]",
    "# Topologically Sorted Source Nodes: [x], Original ATen: [y",
    "# [Provenance debug handles] triton_poi_0:3 ", "#\x1c[Provenance debug handles]",
    "# kernel path: /tmp/x.py", "# kernel path:", "#  kernel path: \u00e9",
    "# Source node to ATen node mapping:", "#   a => b", "# Graph fragment:", "#   %x",
    "f(1, (2,", "    3))", "g([1, ']'", "])",
]


def mutated(seed: int) -> tuple[dict[str, Any], list[str], list[int]]:
    """One fixture module with 1-4 random edits (dropped, doubled, swapped, cut, inserted
    or edited lines), renumbered from its first line."""
    rnd = random.Random(seed)
    _, kw, texts, numbers = rnd.choice(MODULES)
    texts = list(texts)
    for _ in range(rnd.randint(1, 4)):
        i = rnd.randrange(len(texts))
        kind = rnd.choice(["drop", "dup", "swap", "cut", "insert", "edit", "indent",
                           "statement", "statement"])
        shuffled = reshuffle(texts, kind, i, rnd)
        if shuffled is not None:
            texts = shuffled
        elif kind == "insert":
            texts.insert(i, rnd.choice(EDITS))
        elif kind == "edit":
            t = texts[i]
            k = rnd.randrange(len(t) + 1)
            texts[i] = t[:k] + rnd.choice(["'''", "#", "(", ")", " ", "\u00e9", "\u3000",
                                           "async_compile.", "def call(", "rand_strided("]) + t[k:]
        elif kind == "statement":  # into call(args)'s body, at its indent
            body = [k for k, t in enumerate(texts) if t.startswith("        ") and any(
                "def call(" in u for u in texts[:k])] or [i]
            k = rnd.choice(body)
            indent = texts[k][:len(texts[k]) - len(texts[k].lstrip())]
            texts.insert(k, indent + rnd.choice(STATEMENTS))
        elif kind == "indent":
            texts[i] = rnd.choice(["", "    ", "\t", "\u00a0"]) + texts[i].lstrip()
    return kw, texts, list(range(numbers[0], numbers[0] + len(texts)))


class TestMutated:
    @pytest.mark.parametrize("seed", range(600))
    def test_mutated_module(self, seed):
        same(*both(*mutated(seed)))


class TestScans:
    """The scans answer as the Python tests they replace, line by line."""

    LINES = EDITS + ["\t'''", "\x1c'''", "\x85'''", "  #x", " \u00e9", "a\u00e9 async_compile.",
                     "x = 1  # rand_strided(", "\ud7ff", "\U0001f600 def call("]

    def test_source_end(self):
        core = native.module()
        for i in range(len(self.LINES) + 1):
            want = next((j for j in range(i, len(self.LINES))
                         if self.LINES[j].lstrip().startswith("'''")), len(self.LINES))
            assert core.wrapper_source_end(self.LINES, i) == want, i

    def test_top_next(self):
        """Every line skipped is one ``_top`` would pass over (it changes nothing)."""
        core = native.module()
        i = 0
        while i < len(self.LINES):
            j = core.wrapper_top_next(self.LINES, i)
            for t in self.LINES[i:j]:
                p = iw.WrapperParser("w.log", _Names())
                p._feed(1, "# AOT ID: ['0_forward']")
                before = (p.state, dict(p.comments), dict(p.kernels), dict(p.input_meta),
                          p.call_line, dict(p.functions))
                p._top(2, t)
                assert (p.state, p.comments, p.kernels, p.input_meta, p.call_line,
                        p.functions) == before, t
            if j < len(self.LINES):
                t = self.LINES[j]
                assert t.strip() and (not t.isascii() or t.strip().startswith("#") or any(
                    w in t for w in ("async_compile.", "def ", "rand_strided("))), t
            i = j + 1


class TestPytext:
    """The compiled split_args and dims give pytext's pieces, quirks included."""

    EDGES = ["", ",", " , ,", "a,,b", "a,,b(", "(a, b), c", "[1, 2], [3]", "((4, 32), ",
             "'a,b', c", '"a\\",b", c', "'a\\\\',b", "'\\\\\\'',x", "a\\,b", "f(x,", "x),y",
             "\x1ca,\x1fb\x0b", " (32, ) ", "[s0, 2*s1]", "torch.float32, device='cuda:0'",
             "\u00e9, a", "a,\u00a0b", "(\u3000)", "{a: (1, 2)}, b"]

    def strings(self) -> list[str]:
        rnd = random.Random(7)
        alphabet = "()[]{},'\"\\ ab1\t\x1c"
        out = list(self.EDGES)
        for _ in range(3000):
            out.append("".join(rnd.choice(alphabet) for _ in range(rnd.randint(0, 12))))
        return out

    def test_split_args(self):
        from tlview.ingest.pytext import split_args

        core = native.module()
        for t in self.strings():
            assert core.pytext_split_args(split_args, t) == split_args(t), repr(t)

    def test_balance(self):
        from tlview.ingest.pytext import balance

        core = native.module()
        for t in self.strings():
            assert core.pytext_balance(balance, t) == balance(t), repr(t)

    def test_dims(self):
        from tlview.ingest.pytext import dims

        core = native.module()
        for t in self.strings():
            assert core.pytext_dims(dims, t) == dims(t), repr(t)


class TestRuns:
    """parse_log_lines handing the keeping parsers whole runs of a record's lines
    (torch_log.Runs, log_take_run) gives the records of feeding them line by line,
    whatever the batch boundaries, interleaved lines and record starts."""

    @pytest.mark.parametrize("chunk", [1, 3, 50, 100000])
    @pytest.mark.parametrize("name", ["conv_net.log", "mlp_train.short.log",
                                      "inplace_mutation.log"])
    def test_runs(self, name, chunk, monkeypatch):
        from tlview.ingest.lines import read_lines
        from tlview.ingest.torch_log import Runs, parse_log_lines, undress_batches

        monkeypatch.setenv("TLVIEW_NATIVE", "1")
        core = native.module()
        lines = [t for _, t in read_lines(TORCH / name)]
        # foreign lines inside sections: a warning, a traceback, a bare print
        lines[40:40] = ["/x/y.py:12: UserWarning: careful", "  warnings.warn(msg)"]
        lines[90:90] = ["Traceback (most recent call last):", '  File "a.py", line 3', "E: x"]
        lines[150:150] = ["plain text from print()"]
        chunks = [lines[i:i + chunk] for i in range(0, len(lines), chunk)]
        flat = list(parse_log_lines(
            (ln for b in undress_batches(core, chunks) for ln in b), "w.log"))
        runs = list(parse_log_lines(Runs(core, undress_batches(core, chunks)), "w.log"))
        assert runs == flat and len(runs) > 10


class TestStatements:
    """Each hand-written statement in a real module's body, after its first statements:
    the compiled front of _statement reads it as _statement does."""

    @pytest.mark.parametrize("stmt", STATEMENTS)
    @pytest.mark.parametrize("where", ["args.clear()", "return ("])
    def test_statement(self, stmt, where):
        mods = [m for m in MODULES if any(where in t for t in m[2])
                and m[0].endswith(".log")]
        _, kw, texts, numbers = mods[0]
        k = next(i for i, t in enumerate(texts) if where in t)
        indent = texts[k][:len(texts[k]) - len(texts[k].lstrip())]
        k += where == "args.clear()"  # after the unpacking, or before the return
        texts = texts[:k] + [indent + stmt] + texts[k:]
        want, got = both(kw, texts, list(range(1, len(texts) + 1)))
        same(want, got)


class TestComments:
    """The compiled comment patterns leave the comments _comment leaves."""

    @pytest.mark.parametrize("seed", range(5))
    def test_comments(self, seed):
        rnd = random.Random(seed)
        comments = [t for t in STATEMENTS if t.startswith("#")]
        for _ in range(300):
            t = rnd.choice(comments)
            k = rnd.randrange(len(t) + 1)
            comments.append(t[:k] + rnd.choice(["", " ", "]", "[", ",", ":", "\x1c", "\u00e9",
                                                "#", "\t"]) + t[k + rnd.randint(0, 2):])
        want = iw.WrapperParser("w.log", _Names())
        got = iw.CompiledWrapperParser(native.module(), "w.log", _Names())
        for t in comments:
            if not t.startswith("#"):
                continue
            want._comment(t, 1)
            got._comment(t, 1)
            assert got.comments == want.comments, repr(t)
            if rnd.random() < 0.3:
                want.comments, got.comments = {}, {}
