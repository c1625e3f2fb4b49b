"""Inductor output code (the generated Python wrapper module) to a timeline of real allocations.

The module defines kernels at the top (``triton_* = async_compile.triton('...', '''<source>''')``,
``cpp_fused_* = async_compile.cpp_pybinding([...], r'''<source>''')``), each maybe preceded by
``# Topologically Sorted Source Nodes: [...], Original ATen: [...]`` comments, and then
``call(args)`` (a module function in older torch, ``Runner.call(self, args)`` in newer),
whose body really allocates and frees memory, in order.

Steps (documented in docs/liveness.md and schemas/30_wrapper.sql): every kernel launch or op call
in ``call`` is one step, 0-based, in order; the ``return`` statement is one more, last step.
An allocation written between two launches belongs to the step of the next launch (it is
live while that launch runs); a ``del`` after launch k ends the name's life at step k. (A
``del`` that follows an allocation within the same gap is counted live through the next
launch, so that the step maximum never misses the true peak.) An extern or fallback op
that allocates its own outputs allocates them at its own step.

**Graph partitions and subgraphs.** With ``graph_partition`` (the default under CUDA graphs)
the kernels live in top-level functions ``def partition_N(args):`` and ``call`` only
dispatches them: ``partitionN_args = [a, b]`` (``del`` of the names it hands over), then
``(x, y, ) = self.partitions[N](partitionN_args)``. A subgraph launcher called with its
outputs flattened is the same shape: ``def name(args):``, ``(x, ) = name(name_args)``
(the list form ``x = name(name_args)`` with ``x[i]``, and control flow around subgraphs,
``if``/``while``, are not read: their lines are kept as unknown). Their bodies are the program: each dispatch is read in place,
the function's statements in order as if written in ``call`` (their launches are steps,
with ``attrs.partition`` / ``attrs.subgraph`` naming the function), its parameters bound
to the arguments given (a buffer keeps its identity: the same storage, whatever it is
called on either side), its return values to the caller's names; what it made or was
handed and neither returns nor deletes dies when it returns. A dispatch of a function the
module does not define is an error naming the line.

Memory is counted per *storage*: ``empty_strided_*``/``empty_strided``/``torch.empty*``/
``empty_strided_p2p`` make a storage of exact bytes (sizes, strides, dtype); a reuse
(``bufX = bufY; del bufY  # reuse`` or ``bufX = reinterpret_tensor(bufY, ...); del bufY``)
hands the storage to a new name; a view (``reinterpret_tensor`` without ``del``,
``alloc_from_pool(pool, ...)``, ``bufX = bufY``) adds a name to it. The storage is one
buffer row (its first name, all its bytes) live from its allocation to the end of its last
name; every other name is a 0-byte row (layout ``reuse``/``view``/``tuple``) plus a
``BufferAliased`` event, so a person finds it. Storages of graph inputs are inputs, never
counted. Returned buffers are live at the ``return`` step.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import attrs

from .errors import IngestError
from .fx_graph import op_name
from .pytext import CALL, balance, dims, split_args, split_comment, split_semicolons
from .records import (
    BufferAliased,
    BufferAllocated,
    BufferFreed,
    NodeScheduled,
    Record,
    Timeline,
    TimelineNote,
)
from .storage import Storage
from .tensors import itemsize, storage_bytes

FORMAT = "inductor_wrapper"
MAX_KEPT_LINES = 200  # unknown lines kept verbatim per timeline (all are counted)

_AOT_ID = re.compile(r"#\s*AOT ID:\s*\[?'?(?P<id>[^'\]]*)'?\]?")
_KERNEL_DEF = re.compile(
    r"(?P<name>[A-Za-z_]\w*) = async_compile\.(?P<kind>\w+)\((?P<rest>.*?)(?P<q>r?''')\s*\Z")
_ASYNC_DEF = re.compile(r"(?P<name>[A-Za-z_]\w*) = async_compile\.(?P<kind>\w+)\(")
_CALL_DEF = re.compile(r"(?P<indent>\s*)def call\((?:self, )?(?P<args>\w+)\):\s*\Z")
# A top-level function of the module's program (a graph partition, a subgraph launcher).
_FUNC_DEF = re.compile(r"def (?P<name>[A-Za-z_]\w*)\((?P<args>\w+)\):\s*\Z")
# Its dispatch in call: `(x, y, ) = self.partitions[N](partitionN_args)`, `(x, ) = f(f_args)`
_DISPATCH = re.compile(
    r"\(\s*(?P<outs>[A-Za-z_]\w*(?:\s*,\s*[A-Za-z_]\w*)*)?\s*,?\s*\)\s*=\s*"
    r"(?P<fn>self\.partitions\[(?P<idx>\d+)\]|[A-Za-z_]\w*)\((?P<arg>[A-Za-z_]\w*)\)\Z")
_PARTITION = re.compile(r"partition_\d+\Z")
MAX_NESTING = 32  # functions dispatching functions: deeper is no Inductor output
_TOPO = re.compile(
    r"#\s*Topologically Sorted Source Nodes:\s*\[(?P<nodes>[^\]]*)\],\s*"
    r"Original ATen:\s*\[(?P<aten>[^\]]*)\]")
_PROVENANCE = re.compile(r"#\s*\[Provenance debug handles\]\s*(?P<h>.*)")
_KERNEL_PATH = re.compile(r"#\s*kernel path:\s*(?P<p>.*)")
_UNPACK = re.compile(r"(?P<names>[A-Za-z_]\w*(?:\s*,\s*[A-Za-z_]\w*)*)\s*,?\s*=\s*(?P<src>\w+)\Z")
_ASSIGN = re.compile(r"(?P<lhs>[A-Za-z_]\w*)\s*=\s*(?P<rhs>.*)\Z")
_NAME = re.compile(r"[A-Za-z_]\w*\Z")
_SYMBOL = re.compile(r"(?:s|u|ps|ks|q|zuf)\d+\Z")  # Inductor's size symbols (s77 = primals_3)
_INDEX = re.compile(r"(?P<base>[A-Za-z_]\w*)\[(?P<i>\d+)\]\Z")
_RAND_STRIDED = re.compile(r"(?P<name>\w+) = rand_strided\((?P<args>.*)\)\Z")
_DEVICE_GUARD = re.compile(r"with torch\.(?P<dev>\w+)\._DeviceGuard\((?P<idx>\d+)\):")
_RAW_STREAM = re.compile(r"(?P<name>\w+) = get_raw_stream\((?P<idx>\d+)\)\Z")
_TRITON_DEF = re.compile(r"def (?P<name>\w+)\((?P<params>.*)\):?")
_CPP_DEF = re.compile(r'extern "C"\s+\S*\s*void\s+\w*\s*kernel\((?P<params>.*)')

_ALLOC_FNS = {
    "empty_strided_cuda": "cuda", "empty_strided_cpu": "cpu", "empty_strided_xpu": "xpu",
    "empty_strided_mtia": "mtia", "empty_strided_cpu_pinned": "cpu", "empty_strided": None,
    "torch.empty_strided": None, "empty_strided_p2p": None,
}
_CONTIGUOUS_ALLOC_FNS = {"torch.empty", "torch.zeros", "torch.ones"}
_IGNORED_CALLS = {
    "args.clear", "assert_alignment", "torch.cuda.set_device", "torch.xpu.set_device",
    "run_intermediate_hooks", "torch.cuda.synchronize", "print", "check_memory_step",
    "check_alias",
}
_IGNORED_PREFIXES = ("with ", "pass", "if __name__")


@attrs.define
class _Kernel:
    name: str
    kind: str
    line: int
    source: list[str] = attrs.field(factory=list)
    comments: dict[str, Any] = attrs.field(factory=dict)
    params: list[str] | None = None
    launched: bool = False


@attrs.define
class _Function:
    """A top-level ``def name(args):`` of the module: its body's lines, read at each
    dispatch (a graph partition or a subgraph launcher)."""

    name: str
    param: str
    line: int
    lines: list[tuple[int, str]] = attrs.field(factory=list)
    calls: int = 0
    launches: int = 0


@attrs.define
class _Frame:
    """A function being read in place: what it was given and what was bound before."""

    fn: _Function
    args: list[tuple[str, Any]]  # the argument list: (caller's name, its _Name or None)
    before: dict[str, Any]  # the caller's names when it was dispatched
    outs: list[str]  # the caller's names for its return values
    number: int = 0  # the dispatching line
    returned: bool = False


@attrs.define
class _OpResult:
    """``bufN = <op>(...)``: a tensor or a tuple, known once asserted or indexed."""

    name: str
    step: int
    line: int
    op: str
    kernel: str
    arg_dtype: str | None
    kind: str | None = None  # "tensor" | "tuple"
    arg_root: str | None = None  # storage root of the first tensor argument
    elements: dict[int, str] = attrs.field(factory=dict)  # index -> element name
    storages: list[Storage] = attrs.field(factory=list)  # the elements' storages


@attrs.define
class _Name:
    """A name bound in ``call``: which storage it holds, and how it came to."""

    name: str
    storage: Storage | None  # None: a tuple result (holds its elements)
    step: int
    line: int
    relation: str  # alloc | reuse | view | tuple | input
    target: str | None = None
    shape: str | None = None
    stride: str | None = None
    dtype: str | None = None
    op: _OpResult | None = None


def _fmt(dims: list[str]) -> str:
    return "[" + ", ".join(dims) + "]"


def _dtype(text: str) -> str | None:
    t = text.strip()
    if t.startswith("dtype="):
        t = t[len("dtype="):]
    return t[len("torch."):] if t.startswith("torch.") else None


def _contiguous(sizes: list[str]) -> list[str]:
    strides: list[str] = []
    acc = "1"
    for s in reversed(sizes):
        strides.append(acc)
        acc = str(int(acc) * int(s)) if acc.isdigit() and s.isdigit() else f"{acc}*{s}"
    return list(reversed(strides))


def _params(signature: str) -> list[str]:
    """Parameter names of a kernel signature: the last identifier of each parameter.

    Scanned backwards by hand: a regex search for a trailing word is quadratic on a
    long garbled line (the fuzz campaign found a 1 MB line that hung the ingest).
    """
    out = []
    for p in split_args(signature):
        p = p.split(":")[0].split("=")[0].rstrip()
        i = len(p)
        while i and (p[i - 1].isalnum() or p[i - 1] == "_"):
            i -= 1
        if i < len(p):
            out.append(p[i:])
    return out


def profiler_name(kind: str, kernel: str) -> str:
    """The name a profiler trace gives this launch (``aten::mm`` for ``extern_kernels.mm``)."""
    if kind == "extern":
        parts = kernel.split(".")
        if parts[0] == "extern_kernels":
            return f"aten::{parts[-1]}"
        if parts[:2] == ["torch", "ops"] and len(parts) >= 4:
            return f"{parts[2]}::{parts[3]}"
        if parts[0] == "aten" and len(parts) >= 2:
            return f"aten::{parts[1]}"
    return kernel


class WrapperParser:
    """One wrapper module, fed line by line; yields its timeline's records."""

    # pytext's readers of argument lists
    _split_args = staticmethod(split_args)
    _dims = staticmethod(dims)
    _balance = staticmethod(balance)

    def __init__(self, path: str, names: Any, *, header: Any = None,
                 fx_graphs: dict[str, Any] | None = None, default_name: str | None = None,
                 graph: dict[str, Any] | None = None) -> None:
        self.path = path
        self.names = names
        self.header = header
        # FX graph summaries by AOT id (a log's graphs, printed before their wrappers), and
        # this module's own graph where the caller knows it (a TORCH_COMPILE_DEBUG
        # folder's fx_graph_*.py beside output_code.py, a TORCH_TRACE compile's graphs).
        self.fx_graphs = fx_graphs if fx_graphs is not None else {}
        self.graph = graph
        self.default_name = default_name
        self.key: str | None = None
        self.aot_id: str | None = None
        self.interleaved = 0
        self.unknown: list[dict[str, Any]] = []
        self.n_unknown = 0
        self.warnings: list[str] = []
        self.state = "top"  # top | source | body | done
        self.kernels: dict[str, _Kernel] = {}
        self.kernel: _Kernel | None = None
        self.comments: dict[str, Any] = {}  # comments waiting for the next kernel/launch
        self.body_indent: int | None = None
        self.call_indent = 0
        self.call_line = 0
        self.returned = False
        self.partial: tuple[list[str], int] | None = None  # multi-line statement
        self.step = 0  # index the next launch will take
        self.gap_alloc = False  # an allocation since the last launch
        self.bound: dict[str, _Name] = {}
        self.asserted: dict[str, tuple[list[str], list[str]]] = {}
        self.inputs: dict[str, int] = {}  # input name -> line
        self.input_meta: dict[str, tuple[list[str], list[str], str | None]] = {}
        self.streams: dict[str, int] = {}
        self.device: str | None = None  # the first allocation's
        self.device_index: str | None = None
        # Where no allocation names the device (a graph that allocates nothing): the
        # `with torch.<dev>._DeviceGuard(<i>):` of call(), else cpu if it launches C++.
        self.guard_device: str | None = None
        self.launched_cpp = False
        self.pending: list[Record] = []
        self.last_line = 0
        self.n_launches = 0
        self.alloc_lines = 0
        self.note: TimelineNote | None = None
        self.deferred: list[Storage] = []
        self.sizes: dict[str, tuple[list[str], list[str]]] = {}
        self.symbols: dict[str, str] = {}
        self.functions: dict[str, _Function] = {}  # partitions and subgraph launchers
        self.function: _Function | None = None  # the one whose lines are being kept
        self.arg_lists: dict[str, list[tuple[str, Any]]] = {}  # partitionN_args = [...]
        self.frames: list[_Frame] = []  # functions being read in place, innermost last
        self.cleared: set[str] = set()  # argument lists a dispatched function took

    # -- plumbing -----------------------------------------------------------------------
    def error(self, line: int, message: str) -> IngestError:
        return IngestError(self.path, line, message)

    def _begin(self, number: int, aot_id: str | None) -> Timeline:
        self.aot_id = aot_id
        name = aot_id or self.default_name or "output_code"
        self.key, display = self.names.take("wrapper", name)
        meta = (self.header.meta if self.header is not None else None) or {}
        attrs_: dict[str, Any] = {"kind": "wrapper", "line": number}
        if aot_id:
            attrs_["aot_id"] = aot_id
        for k in ("rank", "compile_id", "pid", "time", "dress"):
            if k in meta:
                attrs_[k] = meta[k]
        attrs_.update(meta.get("timeline_attrs", {}))  # what a TORCH_TRACE record adds
        return Timeline(key=self.key, name=display, format=FORMAT, attrs=attrs_)

    def feed(self, line: Any) -> list[Record]:
        """Take one line of the module; returns the records it completes (often none)."""
        self._feed(line.number, line.text)
        out, self.pending = self.pending, []
        return out

    def _feed(self, number: int, text: str) -> None:
        self.last_line = number
        if self.key is None:
            if not text.strip():
                return
            m = _AOT_ID.match(text.strip())
            self.pending.append(self._begin(number, m["id"].strip() if m else None))
            if m:
                return
        if self.state == "source":
            assert self.kernel is not None
            if text.lstrip().startswith("'''"):
                self._end_kernel(text)
            else:
                self.kernel.source.append(text)
            return
        if self.state == "func":
            assert self.function is not None
            if not text.strip() or text[0].isspace():
                self.function.lines.append((number, text))
                return
            self.state = "top"
            self.function = None
        if self.state == "body":
            if self.partial is not None:
                parts, start = self.partial
                parts.append(text.strip())
                if self._balance(" ".join(parts)) <= 0:
                    self.partial = None
                    self._statement(" ".join(parts), start)
                return
            if not text.strip():
                return
            indent = len(text) - len(text.lstrip())
            if self.body_indent is None:
                if indent <= self.call_indent:
                    raise self.error(number, "expected the indented body of call(args)")
                self.body_indent = indent
            if indent >= self.body_indent:
                s = text.strip()
                if self._balance(s) > 0:
                    self.partial = ([s], number)
                    return
                self._statement(s, number)
                return
            if not self.returned:
                raise self.error(number, "call(args) ends without a return statement")
            self.state = "done"
        self._top(number, text)

    def _top(self, number: int, text: str) -> None:
        s = text.strip()
        if not s:
            return
        if s.startswith("#"):
            self._comment(s, number)
            return
        m = _KERNEL_DEF.match(s)
        if m:
            self.kernel = _Kernel(m["name"], _kernel_kind(m["kind"]), number,
                                  comments=self.comments)
            self.comments = {}
            self.state = "source"
            return
        m = _ASYNC_DEF.match(s)
        if m:  # a kernel made without inline source (multi_kernel, a precompiled binary...)
            self.kernels[m["name"]] = _Kernel(m["name"], _kernel_kind(m["kind"]), number,
                                              comments=self.comments)
            self.comments = {}
            return
        m = _CALL_DEF.match(text)
        if m and self.state != "done":
            self.state = "body"
            self.call_indent = len(m["indent"])
            self.call_line = number
            self.comments = {}
            return
        m = _FUNC_DEF.match(text)
        if m and m["name"] != "call":
            if m["name"] in self.functions:
                raise self.error(number, f"function {m['name']} defined again (first at line "
                                 f"{self.functions[m['name']].line}): expected one definition")
            self.function = self.functions[m["name"]] = _Function(m["name"], m["args"], number)
            self.state = "func"
            self.comments = {}
            return
        m = _RAND_STRIDED.match(s)
        if m and len(a := self._split_args(m["args"])) >= 2:  # else no sizes and strides
            kw = {x.split("=", 1)[0]: x.split("=", 1)[1] for x in a if "=" in x}
            self.input_meta[m["name"]] = (self._dims(a[0]), self._dims(a[1]),
                                          _dtype(kw.get("dtype", "")))

    def _end_kernel(self, text: str) -> None:
        k = self.kernel
        assert k is not None
        self.kernel = None
        self.state = "top"
        src = "\n".join(k.source)
        if k.kind == "triton":
            for ln in k.source:
                d = _TRITON_DEF.match(ln.strip())
                if d and d["name"] == k.name:
                    k.params = _params(d["params"].rsplit(")", 1)[0])
                    break
        else:
            m = _CPP_DEF.search(src)
            if m:
                sig = m["params"]
                close = sig.find(")")
                if close < 0:  # signature spans lines
                    after = src[m.start("params"):]
                    close = after.find(")")
                    sig = after
                k.params = _params(sig[:close].replace("\n", " "))
        self.kernels[k.name] = k

    def _comment(self, s: str, number: int) -> None:
        m = _TOPO.match(s)
        if m:
            self.comments["source_nodes"] = [x.strip() for x in m["nodes"].split(",") if x.strip()]
            self.comments["original_aten"] = [x.strip() for x in m["aten"].split(",") if x.strip()]
            return
        m = _PROVENANCE.match(s)
        if m:
            self.comments["provenance"] = m["h"].strip()
            return
        m = _KERNEL_PATH.match(s)
        if m:
            self.comments["kernel_path"] = m["p"].strip()
            return
        if s.startswith("# Source node to ATen node mapping"):
            self.comments["_block"] = "node_mapping"
            return
        if s.startswith("# Graph fragment"):
            self.comments["_block"] = "graph_fragment"
            return
        block = self.comments.get("_block")
        if block and s.startswith("#   "):
            self.comments.setdefault(block, []).append(s[4:].strip())
            return
        self.comments.setdefault("comments", []).append(s[1:].strip())

    def _keep_unknown(self, number: int, text: str) -> None:
        self.n_unknown += 1
        if len(self.unknown) < MAX_KEPT_LINES:
            self.unknown.append({"line": number, "text": text})

    # -- the body of call(args) ---------------------------------------------------------
    def _statement(self, s: str, number: int) -> None:
        if s.startswith("#"):
            self._comment(s, number)
            return
        code, _, comment = split_comment(s)
        stmts = [c.strip() for c in split_semicolons(code) if c.strip()]
        if not stmts:
            return
        first = stmts[0]
        if first.startswith("return"):
            if self.frames:
                self._function_return(first[len("return"):].strip(), number)
            else:
                self._return(first[len("return"):].strip(), number)
            return
        if first.startswith("("):
            m = _DISPATCH.match(first)
            if m:
                outs = [x.strip() for x in m["outs"].split(",")] if m["outs"] else []
                self._dispatch(m["fn"], m["idx"], m["arg"], outs, number)
                return
        if first.startswith("del "):
            for st in stmts:
                if not st.startswith("del "):
                    self._keep_unknown(number, s)
                    continue
                for n in self._split_args(st[4:]):
                    self._del(n.strip(), number, reuse=False)
            return
        m = _DEVICE_GUARD.match(first)
        if m:
            self.device_index = m["idx"]
            self.guard_device = self.guard_device or f"{m['dev']}:{m['idx']}"
            return
        if first.startswith(_IGNORED_PREFIXES):
            return
        m = _UNPACK.match(first)
        if m and self.frames and m["src"] == self.frames[-1].fn.param:
            self._bind_params(self._split_args(m["names"]), number)
            return
        if m and m["src"] == "args":
            graph = self._fx_graph()
            if graph is not None:
                for n, meta in graph["inputs"].items():
                    self.input_meta.setdefault(n, meta)
            for n in self._split_args(m["names"]):
                self.inputs[n] = number
                self._bind(_Name(n, Storage(n, -1, number, is_input=True, holders={n}),
                                 -1, number, "input"))
            return
        m = _RAW_STREAM.match(first)
        if m:
            self.streams[m["name"]] = int(m["idx"])
            return
        m = _ASSIGN.match(first)
        if m and not first.startswith(("assert_size_stride(", "assert_alignment(")) \
                and "==" not in first.split("(")[0]:
            dels = [st[4:].strip() for st in stmts[1:] if st.startswith("del ")]
            self._assign(m["lhs"], m["rhs"].strip(), dels, comment, number, s)
            return
        m = CALL.match(first)
        if m:
            self._call(m["callee"], m["args"], number, s)
            return
        self._keep_unknown(number, s)

    def _call(self, callee: str, args: str, number: int, s: str) -> None:
        """A statement that is a call: an assert, an ignored call, a launch or unknown."""
        if callee == "assert_size_stride":
            a = self._split_args(args)
            if len(a) >= 3:
                self._assert(a[0], self._dims(a[1]), self._dims(a[2]))
            return
        if callee in _IGNORED_CALLS:
            return
        kind = self._launch_kind(callee)
        if kind is not None:
            self._launch(callee, kind, args, None, number)
            return
        self._keep_unknown(number, s)

    def _launch_kind(self, callee: str) -> str | None:
        base = callee[:-len(".run")] if callee.endswith(".run") else callee
        k = self.kernels.get(base)
        if k is not None:
            return k.kind
        if callee.endswith(".run") and base.startswith("triton_"):
            return "triton"
        if base.startswith("cpp_fused") or base.startswith("cpp_"):
            return "cpp"
        if callee.startswith(("extern_kernels.", "torch.ops.", "aten.", "torch._ops.")):
            return "extern"
        if "." in callee and callee.split(".")[0] in self.bound and callee.endswith("_"):
            return "extern"  # bufN.copy_(...) style in-place method
        return None

    def _bind(self, nm: _Name) -> None:
        if nm.name in self.bound:
            # Rebinding a live name drops its old value first.
            old = self.bound[nm.name]
            self._release(old, self._free_step())
        self.bound[nm.name] = nm
        if nm.storage is not None:
            nm.storage.holders.add(nm.name)

    def _free_step(self) -> int:
        return self.step if self.gap_alloc else self.step - 1

    def _new_storage(self, name: str, number: int, sizes: list[str], strides: list[str],
                     dtype: str | None, device: str | None, layout: str) -> Storage:
        st = storage_bytes(sizes, strides, dtype)
        return Storage(
            root=name, step=self.step, line=number, bytes=st.bytes, size_expr=st.expr,
            dtype=dtype, shape=_fmt(sizes), stride=_fmt(strides), device=device,
            layout=layout, attrs={"size_reason": st.reason} if st.reason else {},
        )

    def _assign(self, lhs: str, rhs: str, dels: list[str], comment: str, number: int,
                text: str) -> None:
        if _SYMBOL.match(lhs):
            self.symbols[lhs] = rhs  # a size symbol, not a tensor
            return
        reuse = any(d == _target_of(rhs) for d in dels) or "reuse" in comment
        if lhs.endswith("_args") and rhs.startswith("[") and rhs.endswith("]"):
            # a function's argument list: it holds its buffers until the function takes them
            self.arg_lists[lhs] = [(a.strip(), self.bound.get(a.strip()))
                                   for a in self._split_args(rhs[1:-1]) if a.strip()]
            for d in dels:
                self._del(d, number, reuse=False)
            return
        m = CALL.match(rhs)
        callee = m["callee"] if m else None
        if callee in _ALLOC_FNS or callee in _CONTIGUOUS_ALLOC_FNS:
            assert m is not None
            a = self._split_args(m["args"])
            pos = [x for x in a if "=" not in x.split("(")[0]]
            kw = {x.split("=", 1)[0].strip(): x.split("=", 1)[1] for x in a
                  if "=" in x.split("(")[0]}
            if callee in _CONTIGUOUS_ALLOC_FNS:
                sizes = self._dims(pos[0]) if pos else []
                if len(pos) > 1 and not pos[0].startswith(("(", "[")):
                    sizes = [p for p in pos if not p.startswith("torch.")]
                strides = _contiguous(sizes) if all(x.isdigit() for x in sizes) else \
                    _contiguous(sizes)
                dtype = _dtype(kw.get("dtype", ""))
            else:
                if len(pos) < 2:
                    raise self.error(number, f"expected {callee}(size, stride, dtype), got {rhs[:80]!r}")
                sizes, strides = self._dims(pos[0]), self._dims(pos[1])
                dtype = _dtype(pos[2]) if len(pos) > 2 else _dtype(kw.get("dtype", ""))
            dev = _ALLOC_FNS.get(callee) if callee in _ALLOC_FNS else None
            if dev is None and "device" in kw:
                dev = kw["device"].strip("'\" ")
            if dev and self.device_index is not None and ":" not in dev and dev != "cpu":
                dev = f"{dev}:{self.device_index}"
            if dev and self.device is None:
                self.device = dev
            storage = self._new_storage(lhs, number, sizes, strides, dtype, dev, callee or "")
            if dtype is None or itemsize(dtype) is None:
                storage.attrs["dtype_text"] = pos[2] if len(pos) > 2 else kw.get("dtype")
            self.gap_alloc = True
            self.alloc_lines += 1
            self._bind(_Name(lhs, storage, self.step, number, "alloc", shape=storage.shape,
                             stride=storage.stride, dtype=dtype))
            return
        if callee == "alloc_from_pool":
            assert m is not None
            a = self._split_args(m["args"])
            pool = a[0].strip() if a else ""
            self._alias(lhs, pool, "view", number, shape=_fmt(self._dims(a[3]))
                                   if len(a) > 3 else None,
                                   stride=_fmt(self._dims(a[4])) if len(a) > 4 else None,
                                   dtype=_dtype(a[2]) if len(a) > 2 else None, dels=dels)
            return
        if callee == "reinterpret_tensor":
            assert m is not None
            a = self._split_args(m["args"])
            src = a[0].strip()
            self._alias(lhs, src, "reuse" if reuse else "view", number,
                                   shape=_fmt(self._dims(a[1])) if len(a) > 1 else None,
                                   stride=_fmt(self._dims(a[2])) if len(a) > 2 else None,
                                   dels=dels, attrs_={"offset": a[3].strip()} if len(a) > 3 else {})
            return
        if _NAME.match(rhs):
            self._alias(lhs, rhs, "reuse" if reuse else "view", number, dels=dels)
            return
        im = _INDEX.match(rhs)
        if im and im["base"] in self.bound and self.bound[im["base"]].op is not None:
            self._element(lhs, self.bound[im["base"]], int(im["i"]), number)
            for d in dels:
                self._del(d, number, reuse=False)
            return
        if m is not None and callee is not None:
            kind = self._launch_kind(callee)
            if kind is not None:
                self._launch(callee, kind, m["args"], lhs, number)
                for d in dels:
                    self._del(d, number, reuse=False)
                return
        if re.fullmatch(r"[\w\s+\-*/%().,]*", rhs) and not any(
                n in self.bound for n in re.findall(r"[A-Za-z_]\w*", rhs)):
            return  # a size/offset expression (ps0 = s0*128), not a tensor
        self._keep_unknown(number, text)

    def _alias(self, lhs: str, src: str, relation: str, number: int, *,
               shape: str | None = None, stride: str | None = None, dtype: str | None = None,
               dels: list[str] = (), attrs_: dict[str, Any] | None = None  # type: ignore[assignment]
               ) -> None:
        base = self.bound.get(src)
        if base is None:
            self._keep_unknown(number, f"{lhs} = ... {src} (unknown name {src})")
            return
        storage = base.storage
        if storage is None:  # aliasing a tuple: keep it as another tuple name
            self._bind(_Name(lhs, None, self.step, number, "tuple", target=src, op=base.op))
        else:
            self._bind(_Name(lhs, storage, self.step, number, relation, target=src,
                             shape=shape or base.shape, stride=stride or base.stride,
                             dtype=dtype or base.dtype))
        self.pending.append(BufferAliased(timeline=self.key or "", step=self.step, buffer=lhs, target=src,
                            relation="reuse" if relation == "reuse" else "alias",
                            attrs={"line": number, **(attrs_ or {})}))
        for d in dels:
            self._del(d, number, reuse=relation == "reuse")

    def _element(self, lhs: str, tup: _Name, index: int, number: int) -> None:
        op = tup.op
        assert op is not None
        if op.kind is None:
            op.kind = "tuple"
        op.elements[index] = lhs
        storage = Storage(root=lhs, step=op.step, line=number, node=op.kernel,
                           layout="extern_output", pending_op=op,
                           attrs={"op": op.op, "output_index": index})
        storage.holders.add(tup.name)
        op.storages.append(storage)
        self._bind(_Name(lhs, storage, op.step, number, "alloc"))

    def _assert(self, name: str, sizes: list[str], strides: list[str]) -> None:
        name = name.strip()
        self.asserted[name] = (sizes, strides)
        nm = self.bound.get(name)
        if nm is None:
            return
        if nm.relation == "input":
            self.input_meta.setdefault(name, (sizes, strides, None))
            return
        if nm.op is not None and nm.op.kind is None and nm.storage is None:
            # The op returned a single tensor.
            nm.op.kind = "tensor"
            nm.storage = Storage(root=name, step=nm.op.step, line=nm.line, node=nm.op.kernel,
                                  layout="extern_output", pending_op=nm.op,
                                  attrs={"op": nm.op.op}, holders={name})
        st = nm.storage
        if st is not None and st.pending_op is not None and st.root == name:
            self._size_from_assert(st, sizes, strides)

    def _size_from_assert(self, st: Storage, sizes: list[str], strides: list[str]) -> None:
        op = st.pending_op
        assert op is not None
        st.pending_op = None
        index = st.attrs.get("output_index")
        dtype, source = self._fx_dtype(op.op, index, sizes, strides)
        if dtype is None:
            dtype, source = op.arg_dtype, "inferred from the op's first tensor argument"
            st.attrs["dtype_inferred"] = True
            if dtype is None:  # an input whose dtype only get_args() (after call) tells
                st.attrs["dtype_from_input"] = op.arg_root
        st.attrs["dtype_source"] = source
        b = storage_bytes(sizes, strides, dtype)
        st.bytes, st.size_expr = b.bytes, b.expr
        if b.reason:
            st.attrs["size_reason"] = b.reason
        st.dtype, st.shape, st.stride = dtype, _fmt(sizes), _fmt(strides)
        st.attrs["size_from"] = "assert_size_stride"
        self.sizes[st.root] = (sizes, strides)

    def _fx_dtype(self, op: str, index: int | None, sizes: list[str], strides: list[str]
                  ) -> tuple[str | None, str]:
        graph = self._fx_graph()
        if graph is None:
            return None, ""
        shape, stride = _fmt(sizes), _fmt(strides)
        # The same op's output of this index and shape; its stride where the graph states
        # one (fx_graph_readable.py does not).
        found = {dt for (o, i, dt, sh, sd) in graph["outputs"] if o == op and i == index
                 and sh == shape and (sd is None or sd == stride)}
        if len(found) == 1:
            return found.pop(), "FX graph annotation"
        return None, ""

    def _fx_graph(self) -> dict[str, Any] | None:
        """The FX graph of the same AOT id earlier in the log (``N_inference`` prints as
        ``Forward graph N``), else the module's own graph given by the caller."""
        aot = self.aot_id or ""
        graph = self.fx_graphs.get(aot)
        if graph is None and aot.endswith("_inference"):
            graph = self.fx_graphs.get(aot[: -len("_inference")] + "_forward")
        return graph if graph is not None else self.graph

    def _arg_buffers(self, arg: str) -> str | None:
        a = arg.strip()
        if _NAME.match(a) and a in self.bound:
            return a
        m = CALL.match(a)
        if m and m["callee"] == "reinterpret_tensor":
            inner = self._split_args(m["args"])
            if inner and inner[0].strip() in self.bound:
                return inner[0].strip()
        return None

    def _launch(self, callee: str, kind: str, args_text: str, lhs: str | None,
                number: int) -> None:
        step = self.step
        base = callee[:-len(".run")] if callee.endswith(".run") else callee
        kernel = self.kernels.get(base)
        self.launched_cpp = self.launched_cpp or kind == "cpp"
        args = self._split_args(args_text)
        pos: list[str] = []
        kw: dict[str, str] = {}
        for a in args:
            head = a.split("(")[0]
            if "=" in head and not head.strip().startswith(("'", '"')):
                k, _, v = a.partition("=")
                kw[k.strip()] = v.strip()
            else:
                pos.append(a)
        reads: list[str] = []
        writes: list[str] = []
        params = kernel.params if kernel is not None else None
        for i, a in enumerate(pos):
            b = self._arg_buffers(a)
            if b is None:
                continue
            p = params[i] if params is not None and i < len(params) else None
            if p is not None and p.startswith("out_ptr"):
                writes.append(b)
            elif p is not None and p.startswith("in_out_ptr"):
                reads.append(b)
                writes.append(b)
            else:
                reads.append(b)
        if kind == "extern" and (base.endswith("_") or base.split(".")[-2:-1] and
                                 base.split(".")[-2].endswith("_")) and reads and lhs is None:
            writes.append(reads[0])
        for k, v in kw.items():
            b = self._arg_buffers(v)
            if b is not None:
                (writes if k == "out" else reads).append(b)
        attrs_: dict[str, Any] = {}
        if "grid" in kw:
            attrs_["grid"] = kw["grid"]
        if "stream" in kw:
            attrs_["stream"] = self.streams.get(kw["stream"], kw["stream"])
        comments = {k: v for k, v in self.comments.items() if not k.startswith("_")}
        self.comments = {}
        attrs_.update(comments)
        if kernel is not None:
            for k, v in kernel.comments.items():
                if not k.startswith("_"):
                    attrs_.setdefault(k, v)
            if not kernel.launched:
                attrs_["kernel_source"] = "\n".join(kernel.source)
                kernel.launched = True
            attrs_["defined_at_line"] = kernel.line
        attrs_["profiler_name"] = profiler_name(kind, base)
        if self.frames:
            self._in_function(attrs_)
        if lhs is not None:
            writes.append(lhs)
            attrs_["returns"] = lhs
        self.pending.append(NodeScheduled(
            timeline=self.key or "", step=step, node=base, node_class=kind, kernel=base,
            device=self.device, reads=tuple(dict.fromkeys(reads)),
            writes=tuple(dict.fromkeys(writes)), line=number, attrs=attrs_,
        ))
        self.step += 1
        self.n_launches += 1
        self.gap_alloc = False
        if lhs is not None:
            arg_dtype = arg_root = None
            for a in pos:
                b = self._arg_buffers(a)
                if b is not None:
                    arg_dtype = self._dtype_of(b)
                    st = self.bound[b].storage
                    arg_root = st.root if st is not None else b
                    break
            op = _OpResult(lhs, step, number, op_name(base), base, arg_dtype, arg_root=arg_root)
            self._bind(_Name(lhs, None, step, number, "result", op=op))
            # Already asserted (never in practice, but harmless)?
            if lhs in self.asserted:
                self._assert(lhs, *self.asserted[lhs])

    def _dtype_of(self, name: str) -> str | None:
        nm = self.bound.get(name)
        if nm is None:
            return None
        if nm.dtype:
            return nm.dtype
        st = nm.storage
        if st is not None and st.dtype:
            return st.dtype
        meta = self.input_meta.get(st.root if st is not None else name)
        return meta[2] if meta else None

    def _del(self, name: str, number: int, *, reuse: bool) -> None:
        if name in self.cleared:  # `del partitionN_args`: the function cleared it
            self.cleared.discard(name)
            return
        held = any(a == name and o is not None and self.bound.get(name) is o
                   for lst in self.arg_lists.values() for a, o in lst)
        if held:  # handed to an argument list: it holds the buffer, the name goes
            self.bound.pop(name)
            return
        nm = self.bound.pop(name, None)
        if nm is None:
            self._keep_unknown(number, f"del {name} (name not bound)")
            return
        self._release(nm, self._free_step(), reuse=reuse)

    def _release(self, nm: _Name, end: int, *, reuse: bool = False) -> None:
        """``nm`` stops being a name at ``end``; emit its rows when nothing holds its storage."""
        self.pending.extend(self._release_list(nm, end, reuse=reuse))

    def _release_list(self, nm: _Name, end: int, *, reuse: bool = False) -> list[Record]:
        key = self.key or ""
        out: list[Record] = []
        if nm.storage is None:
            # A tuple result: it stops holding its elements; an unasserted tensor result.
            op = nm.op
            if op is not None and op.kind == "tuple":
                out.append(BufferAllocated(
                    timeline=key, step=nm.step, buffer=nm.name, bytes=0, node=op.kernel,
                    layout="tuple", line=nm.line,
                    attrs={"op": op.op, "elements": {str(i): e for i, e in op.elements.items()}},
                ))
                out.append(BufferFreed(timeline=key, step=max(end, nm.step), buffer=nm.name,
                                       reason="del"))
                for st in op.storages:
                    if nm.name in st.holders and st.release(nm.name, end):
                        out.extend(self._storage_rows(st))
                return out
            if op is not None:  # never asserted nor indexed: size unknown
                st = Storage(root=nm.name, step=op.step, line=nm.line, node=op.kernel,
                              layout="extern_output", attrs={
                                  "op": op.op, "size_reason":
                                  "extern output without assert_size_stride: size unknown"})
                st.end = max(end, op.step)
                if not reuse:
                    self.warnings.append(f"{nm.name}: output of {op.kernel} has no "
                                         "assert_size_stride; its size is unknown")
                out.extend(self._storage_rows(st))
            return out
        st = nm.storage
        name_end = max(end, nm.step)
        free = st.release(nm.name, name_end)
        if nm.name != st.root:
            out.append(BufferAllocated(
                timeline=key, step=nm.step if nm.step >= 0 else None, buffer=nm.name, bytes=0,
                node=None, layout=nm.relation, dtype=nm.dtype, shape=nm.shape, stride=nm.stride,
                device=st.device, line=nm.line,
                attrs={"storage": st.root, "target": nm.target, "storage_is_input": st.is_input},
            ))
            out.append(BufferFreed(timeline=key, step=name_end, buffer=nm.name,
                                   reason="del" if not self.returned else "return"))
        if free:
            out.extend(self._storage_rows(st))
        return out

    def _storage_rows(self, st: Storage) -> list[Record]:
        key = self.key or ""
        if st.is_input:
            sizes, strides, dtype = self.input_meta.get(st.root, (None, None, None))
            b = storage_bytes(sizes, strides, dtype) if sizes is not None and strides \
                is not None else None
            return [BufferAllocated(
                timeline=key, step=None, buffer=st.root, bytes=b.bytes if b else None,
                layout="input", dtype=dtype, shape=_fmt(sizes) if sizes is not None else None,
                stride=_fmt(strides) if strides is not None else None, device=self.device,
                size_expr=b.expr if b else None, is_input=True, line=st.line,
            )]
        if st.pending_op is not None:
            st.attrs["size_reason"] = "extern output without assert_size_stride: size unknown"
            self.warnings.append(f"{st.root}: output of {st.pending_op.kernel} has no "
                                 "assert_size_stride; its size is unknown")
            st.pending_op = None
        if st.dtype is None and st.attrs.get("dtype_from_input"):
            self.deferred.append(st)  # resolved at the end of the module
            return []
        return st.records(key, "storage released")

    def _return(self, text: str, number: int) -> None:
        t = text.strip()
        if t.startswith("(") and t.endswith(")"):
            t = t[1:-1]
        returned = []
        for a in self._split_args(t):
            b = self._arg_buffers(a)
            if b is not None:
                returned.append(b)
        step = self.step
        self.pending.append(NodeScheduled(
            timeline=self.key or "", step=step, node="return", node_class="return",
            device=self.device, reads=tuple(dict.fromkeys(returned)), line=number,
            attrs={"returns": returned}))
        self.step += 1
        self.returned = True
        # Everything still bound (returned or not) lives through the return step.
        for nm in list(self.bound.values()):
            self.bound.pop(nm.name, None)
            self._release(nm, step)

    # -- functions read in place (graph partitions, subgraphs) ----------------------------
    def _in_function(self, attrs_: dict[str, Any]) -> None:
        """A launch inside functions being read: the partition it runs in (the outermost
        partition_N: the unit a CUDA graph captures) and the innermost subgraph."""
        names = [f.fn.name for f in self.frames]
        part = next((n for n in names if _PARTITION.match(n)), None)
        sub = next((n for n in reversed(names) if not _PARTITION.match(n)), None)
        if part is not None:
            attrs_["partition"] = part
        if sub is not None:
            attrs_["subgraph"] = sub
        self.frames[-1].fn.launches += 1

    def _dispatch(self, fn: str, idx: str | None, arg: str, outs: list[str],
                  number: int) -> None:
        """``outs = fn(arg)``: read the function's body here, in place."""
        name = f"partition_{idx}" if idx is not None else fn
        what = f"self.partitions[{idx}]" if idx is not None else f"{fn}({arg})"
        func = self.functions.get(name)
        if func is None:
            raise self.error(number, f"{what} dispatches {name}, which this module does not "
                             f"define: expected def {name}(args) before call")
        if any(f.fn is func for f in self.frames) or len(self.frames) >= MAX_NESTING:
            chain = " -> ".join(f.fn.name for f in self.frames)
            raise self.error(number, f"{name} dispatched inside itself ({chain}): expected "
                             f"straight-line functions, at most {MAX_NESTING} deep")
        if arg not in self.arg_lists:
            raise self.error(number, f"{what}: no argument list {arg} = [...] before it")
        func.calls += 1
        frame = _Frame(func, self.arg_lists.pop(arg), dict(self.bound), outs, number)
        self.cleared.add(arg)  # the function clears it (args.clear()); `del` follows
        self.frames.append(frame)
        partial: tuple[list[str], int] | None = None
        for n, text in func.lines:
            if partial is not None:
                partial[0].append(text.strip())
                if self._balance(" ".join(partial[0])) <= 0:
                    joined, start = " ".join(partial[0]), partial[1]
                    partial = None
                    self._statement(joined, start)
                continue
            s = text.strip()
            if not s:
                continue
            if self._balance(s) > 0:
                partial = ([s], n)
                continue
            self._statement(s, n)
            if frame.returned:
                break
        if partial is not None:
            raise self.error(partial[1], "statement never ends (unbalanced brackets): "
                             "truncated?")
        if not frame.returned:
            self._function_return(None, func.lines[-1][0] if func.lines else func.line)
        self.frames.pop()

    def _bind_params(self, params: list[str], number: int) -> None:
        """``a, b = args`` in a function read in place: its parameters take the
        arguments' buffers (the same storage; a name of the caller keeps its own)."""
        frame = self.frames[-1]
        if len(params) != len(frame.args):
            raise self.error(number, f"{frame.fn.name} unpacks {len(params)} arguments, "
                             f"line {frame.number} gives {len(frame.args)}: expected as many")
        for p, (a, obj) in zip(params, frame.args):
            p = p.strip()
            if obj is None:
                continue  # a size symbol or an unknown value: nothing to hold
            if p == a and self.bound.get(p) is obj:
                continue  # the caller still holds it under this name: the same binding
            if p == a and p not in self.bound:
                self.bound[p] = obj  # handed over: the name holds the buffer again
                continue
            self._take(p, a, obj, number)

    def _take(self, new: str, old: str, obj: Any, number: int) -> None:
        """``new`` holds the buffer ``obj`` (bound as ``old`` by the other side)."""
        if obj.storage is None:
            self._bind(_Name(new, None, self.step, number, "tuple", target=old, op=obj.op))
        else:
            self._bind(_Name(new, obj.storage, self.step, number, "view", target=old,
                             shape=obj.shape, stride=obj.stride, dtype=obj.dtype))
        self.pending.append(BufferAliased(timeline=self.key or "", step=self.step,
                                          buffer=new, target=old, relation="alias",
                                          attrs={"line": number}))

    def _function_return(self, text: str | None, number: int) -> None:
        """The end of a function read in place: its return values to the caller's names,
        the rest of what it held released."""
        frame = self.frames[-1]
        frame.returned = True
        values: list[Any] = []
        if text is not None:
            t = text.strip()
            if t.startswith("(") and t.endswith(")"):
                t = t[1:-1]
            values = [self._arg_buffers(a) for a in self._split_args(t) if a.strip()]
        outs = frame.outs
        if text is not None and len(values) != len(outs):
            raise self.error(number, f"{frame.fn.name} returns {len(values)} values to "
                             f"{len(outs)} names at line {frame.number}: expected as many")
        end = self._free_step()
        kept: set[str] = set()
        for out, val in zip(outs, values):
            if val is None:
                continue
            obj = self.bound[val]
            if out != val:
                self._take(out, val, obj, number)
            kept.add(out)
        for name, obj in list(self.bound.items()):
            if name in kept or frame.before.get(name) is obj:
                continue  # returned, or the caller's own binding
            self.bound.pop(name)
            self._release(obj, end)

    def flush(self) -> Iterator[Record]:
        out, self.pending = self.pending, []
        yield from out

    def finish(self) -> Iterator[Record]:
        end = self.last_line
        if self.key is None:
            raise self.error(end or 1, "empty output code section: expected '# AOT ID' and "
                             "a wrapper module")
        if self.state == "source":
            assert self.kernel is not None
            raise self.error(self.kernel.line, f"kernel {self.kernel.name}'s source never "
                             "ends (no closing '''): truncated?")
        if self.partial is not None:
            raise self.error(self.partial[1], "statement never ends (unbalanced brackets): "
                             "truncated?")
        if self.state in ("top", "func") and self.call_line == 0:
            raise self.error(end, "output code without a call(args) function: truncated?")
        if self.state == "body" and not self.returned:
            raise self.error(end, "file ends inside call(args) before its return: truncated?")
        yield from self.flush()
        for st in self.deferred:
            meta = self.input_meta.get(st.attrs.pop("dtype_from_input"))
            sizes, strides = self.sizes[st.root]
            if meta is not None and meta[2] is not None:
                st.dtype = meta[2]
                b = storage_bytes(sizes, strides, st.dtype)
                st.bytes, st.size_expr = b.bytes, b.expr
                if b.reason:
                    st.attrs["size_reason"] = b.reason
                else:
                    st.attrs.pop("size_reason", None)
            yield from self._storage_rows(st)
        self._make_note(len(self.kernels),
                        sorted(k.name for k in self.kernels.values() if not k.launched))

    def _make_note(self, kernels_defined: int, never: list[str]) -> None:
        """The timeline's note, once the module is read (``kernels_defined`` kernels,
        ``never`` the sorted names of those never launched)."""
        device = self.device or self.guard_device or ("cpu" if self.launched_cpp else None)
        note: dict[str, Any] = {
            "n_steps": self.step, "device": device, "launches": self.n_launches,
            "kernels_defined": kernels_defined, "unknown_lines": self.n_unknown,
            "interleaved_lines": self.interleaved,
        }
        if never:
            note["kernels_never_launched"] = never
        if self.unknown:
            note["unknown"] = self.unknown
        warnings = list(self.warnings)
        if self.n_unknown:
            warnings.append(f"{self.n_unknown} unrecognised line(s) in call() kept "
                            "(timeline_notes.attrs.unknown)")
        if self.interleaved:
            warnings.append(f"{self.interleaved} interleaved warning/traceback line(s) skipped")
        if self.symbols:
            note["symbols"] = self.symbols
        if self.graph is not None and self.graph.get("files"):
            note["fx_graph_files"] = self.graph["files"]
        if self.functions:
            note["functions"] = [{"name": f.name, "line": f.line, "calls": f.calls,
                                  "launches": f.launches} for f in self.functions.values()]
            never = [f.name for f in self.functions.values() if not f.calls]
            if never:
                warnings.append(f"function(s) defined but never dispatched: "
                                f"{', '.join(never)}")
        if warnings:
            note["warnings"] = warnings
        self.note = TimelineNote(timeline=self.key or "", attrs=note)


def _target_of(rhs: str) -> str | None:
    if _NAME.match(rhs):
        return rhs
    m = CALL.match(rhs)
    if m and m["callee"] in ("reinterpret_tensor", "alloc_from_pool"):
        a = split_args(m["args"])
        return a[0].strip() if a else None
    return None


def _kernel_kind(method: str) -> str:
    if method == "triton":
        return "triton"
    if method.startswith("cpp"):
        return "cpp"
    return method
