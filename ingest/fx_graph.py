"""AOT FX graphs (joint, forward, backward) printed by ``TORCH_LOGS=aot_graphs``, to timelines.

A graph is printed as readable Python::

     ===== Forward graph 0 =====
     <path> class GraphModule(torch.nn.Module):
        def forward(self, primals_1: "bf16[8192, 4096][4096, 1]cuda:0", ...):
             # File: /x/model.py:335 in forward, code: w = self.weight.t()
            permute: "bf16[4096, 8192][1, 4096]cuda:0" = torch.ops.aten.permute.default(primals_1, [1, 0]);  primals_1 = None
            ...
            return (mm, permute_3)

Rules (docs/liveness.md, "AOT FX graphs"):

* every node line is one step, in order; placeholders (``forward``'s parameters,
  or the joint graph's ``primals_1: "..."; tangents_1: "...";`` line) are inputs,
  never counted;
* a node's tensor output allocates the storage bytes of its annotation
  (``dtype[sizes][strides]device``, docs/liveness.md's storage rule, float8 included);
* view ops (:data:`VIEW_OPS`) and in-place ops (``copy_``, ``add_``...) allocate
  nothing: their name shares the storage of their first argument;
* a node without a tensor annotation whose elements are taken by ``x[i]``
  (``getitem``) is a tuple: each element's storage is allocated at the tuple
  node's step, with the getitem's annotation, and is held by the tuple too;
* ``a = b = None`` after a node ends those names' use at that node's step; a
  storage is freed after the step where its last name ends; returned names live
  to the last step; a name never released nor returned lives to the last step.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import Any

import attrs

from .errors import IngestError
from .pytext import CALL
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
from .tensors import storage_bytes

FORMAT = "aot_fx_graph"
MAX_KEPT_LINES = 200

VIEW_OPS = frozenset({
    "view", "_unsafe_view", "reshape", "_reshape_alias", "permute", "t", "transpose",
    "expand", "expand_as", "as_strided", "slice", "select", "squeeze", "unsqueeze", "alias",
    "view_as", "unfold", "diagonal", "split", "split_with_sizes", "unbind", "chunk", "narrow",
    "detach", "view_as_real", "view_as_complex", "real", "imag", "movedim", "swapaxes",
    "swapdims", "unflatten", "numpy_T", "T", "mT", "view_of", "lift_fresh", "_neg_view",
    "_conj", "conj", "tensor_split", "split_copy_view", "indices", "values",
})
_MULTI_VIEW_OPS = frozenset({"split", "split_with_sizes", "unbind", "chunk", "tensor_split"})

_ANN = re.compile(
    r"(?P<dtype>\w+)\[(?P<shape>[^\]]*)\]\[(?P<stride>[^\]]*)\](?P<device>\S*)\Z")
_DECL = re.compile(r'(?P<name>[A-Za-z_]\w*): "(?P<ann>[^"]*)"')
# _DECL.finditer's matches, found in linear time: a name is tried from the first letter of
# each run of word characters only (_DECL retried every position inside the run: quadratic
# on a long word; a later start in the run ends where the first did, so it never matched)
_DECLS = re.compile(r'(?<!\w)\d*(?P<name>[A-Za-z_]\w*): "(?P<ann>[^"]*)"')
_NODE = re.compile(r'(?P<name>[A-Za-z_]\w*)(?:: "(?P<ann>[^"]*)")? = (?P<rhs>.*)\Z')
_RELEASE = re.compile(r"(?:[A-Za-z_]\w* = )+None\Z")
_GETITEM = re.compile(r"(?P<base>[A-Za-z_]\w*)\[(?P<i>-?\d+)\]\Z")
_FILE = re.compile(r"#\s*File: (?P<loc>.*)")
_FORWARD = re.compile(r"def forward\(self(?:, )?(?P<params>.*)\):\s*\Z")
_TITLE = re.compile(r"(?P<kind>\w+) graph (?P<n>\d+)\Z")


def op_name(target: str) -> str:
    """``torch.ops.aten.permute.default`` -> ``permute``; ``extern_kernels.mm`` -> ``mm``."""
    parts = target.split(".")
    if parts[:2] == ["torch", "ops"] and len(parts) >= 4:
        return parts[3]
    if parts[0] in ("aten", "prims") and len(parts) >= 2:
        return parts[1]
    return parts[-1]


# FX's short dtype names (``bf16``) as torch spells them (``bfloat16``).
DTYPES = {
    "b8": "bool", "u8": "uint8", "i8": "int8", "u16": "uint16", "i16": "int16",
    "u32": "uint32", "i32": "int32", "u64": "uint64", "i64": "int64", "f16": "float16",
    "bf16": "bfloat16", "f32": "float32", "f64": "float64", "c32": "complex32",
    "c64": "complex64", "c128": "complex128", "f8e4m3fn": "float8_e4m3fn",
    "f8e5m2": "float8_e5m2", "f8e4m3fnuz": "float8_e4m3fnuz", "f8e5m2fnuz": "float8_e5m2fnuz",
    "f8e8m0fnu": "float8_e8m0fnu", "f4e2m1fn_x2": "float4_e2m1fn_x2",
}


def parse_annotation(ann: str) -> dict[str, Any] | None:
    """``"bf16[2048, 4096][4096, 1]cuda:0"`` -> dtype (torch's name), shape, stride, device."""
    m = _ANN.match(ann.strip())
    if not m:
        return None
    shape = [d.strip() for d in m["shape"].split(",") if d.strip()]
    stride = [d.strip() for d in m["stride"].split(",") if d.strip()]
    return {"dtype": DTYPES.get(m["dtype"], m["dtype"]), "shape": shape, "stride": stride, "device": m["device"] or None}


_ANN_UNSTRIDED = re.compile(r"(?P<dtype>\w+)\[(?P<shape>[^\]]*)\](?P<device>[^\[\s]*)\Z")


def graph_summary(lines: Iterable[tuple[int, str]]) -> dict[str, Any]:
    """What a wrapper can learn from a readable FX graph file (``fx_graph_readable.py`` /
    ``fx_graph_transformed.py`` of a TORCH_COMPILE_DEBUG folder): the dtype and shape of
    every node's tensor output, in the form of :meth:`FxGraphParser.summary`.

    These files print annotations without strides (``"f32[2, 2, 8]"``): such an output's
    stride is None, and a wrapper matches it on op, output index and shape alone.
    """
    outputs: list[tuple[str, int | None, str, str, str | None]] = []
    inputs: dict[str, tuple[list[str], list[str] | None, str]] = {}
    tuples: dict[str, str] = {}  # tuple-valued node -> its op
    for _, text in lines:
        s = text.strip()
        if s.startswith("def forward("):
            for d in _DECLS.finditer(s):
                a = _loose_annotation(d["ann"])
                if a is not None:
                    inputs[d["name"]] = (a["shape"], a["stride"], a["dtype"])
            continue
        m = _NODE.match(s.split(";", 1)[0].strip())
        if m is None:
            continue
        rhs = m["rhs"].strip()
        call = CALL.match(rhs)
        if m["ann"] is None:
            if call is not None:
                tuples[m["name"]] = op_name(call["callee"])
            continue
        a = _loose_annotation(m["ann"])
        if a is None:
            continue
        shape, stride = _fmt(a["shape"]), _fmt(a["stride"]) if a["stride"] is not None else None
        g = _GETITEM.match(rhs)
        if g is not None and g["base"] in tuples:
            outputs.append((tuples[g["base"]], int(g["i"]), a["dtype"], shape, stride))
        elif call is not None:
            outputs.append((op_name(call["callee"]), None, a["dtype"], shape, stride))
    return {"outputs": outputs, "inputs": inputs}


def _loose_annotation(ann: str) -> dict[str, Any] | None:
    """An annotation with or without its strides and device."""
    a = parse_annotation(ann)
    if a is not None:
        return a
    m = _ANN_UNSTRIDED.match(ann.strip())
    if not m:
        return None
    shape = [d.strip() for d in m["shape"].split(",") if d.strip()]
    return {"dtype": DTYPES.get(m["dtype"], m["dtype"]), "shape": shape, "stride": None,
            "device": m["device"] or None}


def _strip_comment(code: str) -> str:
    """``primals_1: "f32[4][1]cpu",  # PlainAOTInput(idx=0)`` -> the code before the comment
    (a ``#`` inside the quoted annotation is not one)."""
    i = code.find("#")
    if i < 0:
        return code
    if code.count('"', 0, i) % 2:
        j = code.find('"', i)
        i = code.find("#", j) if j >= 0 else -1
        if i < 0:
            return code
    return code[:i].rstrip()


def _balance(text: str) -> int:
    return (text.count("(") + text.count("[") + text.count("{")
            - text.count(")") - text.count("]") - text.count("}"))


def _fmt(dims: list[str]) -> str:
    return "[" + ", ".join(dims) + "]"


def _first_arg(args: str) -> str | None:
    depth = 0
    for i, ch in enumerate(args):
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 0:
            return args[:i].strip()
    return args.strip() or None


@attrs.define
class _Name:
    name: str
    storage: Storage | None  # None: a tuple value
    step: int | None
    line: int
    relation: str  # alloc | view | input | tuple
    target: str | None = None
    ann: dict[str, Any] | None = None
    op: str | None = None
    elements: list[Storage] = attrs.field(factory=list)


class FxGraphParser:
    """One FX graph block, fed line by line (dress already removed)."""

    def __init__(self, path: str, key_and_name: tuple[str, str], title: str, header: Any
                 ) -> None:
        self.path = path
        self.key, self.display = key_and_name
        self.title = title
        self.header = header
        m = _TITLE.match(title)
        self.aot_id = f"{m['n']}_{m['kind'].lower()}" if m else None
        self.interleaved = 0
        self.n_unknown = 0
        self.unknown: list[dict[str, Any]] = []
        self.step = 0
        self.location: str | None = None
        self.bound: dict[str, _Name] = {}
        self.pending: list[Record] = []
        self.returned: list[str] | None = None
        self.saw_forward = False
        # (kind, lines so far, first line) of a signature or return spread over lines
        self.open_lines: tuple[str, list[str], int] | None = None
        self.last_line = header.number if header is not None else 0
        self.device: str | None = None
        self.nodes: list[tuple[str, int | None, str, str, str]] = []  # for summary()
        self.never_released = 0
        self.input_meta: dict[str, tuple[list[str], list[str], str]] = {}

    def error(self, line: int, message: str) -> IngestError:
        return IngestError(self.path, line, message)

    def start(self) -> Iterator[Record]:
        meta = (self.header.meta if self.header is not None else None) or {}
        attrs_: dict[str, Any] = {"kind": "fx_graph", "title": self.title,
                                  "line": self.header.number if self.header else None}
        if self.aot_id:
            attrs_["aot_id"] = self.aot_id
        for k in ("rank", "compile_id", "pid", "time", "dress"):
            if k in meta:
                attrs_[k] = meta[k]
        attrs_.update(meta.get("timeline_attrs", {}))  # what a TORCH_TRACE record adds
        yield Timeline(key=self.key, name=self.display, format=FORMAT, attrs=attrs_)

    def summary(self) -> dict[str, Any]:
        """What a wrapper of the same graph can learn from it (dtypes of extern outputs).

        ``outputs``: (op, output index, dtype, shape, stride) of every tensor output;
        ``inputs``: placeholder name -> (sizes, strides, dtype).
        """
        return {"outputs": self.nodes, "inputs": self.input_meta}

    def _keep_unknown(self, number: int, text: str) -> None:
        self.n_unknown += 1
        if len(self.unknown) < MAX_KEPT_LINES:
            self.unknown.append({"line": number, "text": text})

    def feed(self, line: Any) -> list[Record]:
        """Take one line of the graph; returns the records it completes (often none)."""
        self.last_line = line.number
        self._line(line.number, line.text)
        out, self.pending = self.pending, []
        return out

    def _line(self, number: int, text: str) -> None:
        s = text.strip()
        if self.open_lines is not None:  # inside an expanded signature or return
            self._continue_open(s, number)
            return
        if not s:
            self.location = None
            return
        if self.returned is not None:
            self._keep_unknown(number, text)
            return
        if s.startswith("#"):
            m = _FILE.match(s)
            if m:
                self.location = m["loc"].strip()
            elif s.startswith("# No stacktrace found"):
                self.location = None
            else:
                self._keep_unknown(number, text)
            return
        if not self.saw_forward:
            if s.endswith("(torch.nn.Module):") and " class " in f" {s}":
                return
            if s == "def forward(":  # expanded signature: one parameter per line
                self.open_lines = ("signature", [], number)
                return
            m = _FORWARD.search(s)
            if m:
                self.saw_forward = True
                for d in _DECLS.finditer(m["params"]):
                    self._input(d["name"], d["ann"], number)
                return
        if s.startswith("return"):
            rest = s[len("return"):].strip()
            if _balance(rest) > 0:  # return (\n name,  # comment\n ...)
                self.open_lines = ("return", [rest], number)
                return
            self._return(rest, number)
            return
        if " = " not in s:
            # The joint graph's placeholders: `primals_1: "..."; tangents_1: "...";` on one
            # line, or one per line (`primals_1: "..."  # PlainAOTInput(idx=0)`).
            code = _strip_comment(s)
            decls = list(_DECLS.finditer(code))
            if decls and (code.endswith(";") or _DECL.fullmatch(code)):
                for d in decls:
                    self._input(d["name"], d["ann"], number)
                return
        if "fx_pytree.tree_flatten_spec" in s:
            return
        code, _, release = s.partition(";")
        release = release.strip()
        if _RELEASE.match(code.strip()):  # `x = y = None` on a line of its own
            for n in code.strip().split(" = ")[:-1]:
                self._release(n.strip(), self.step - 1)
            return
        m = _NODE.match(code.strip())
        if m and m["ann"] is None and m["rhs"].startswith("self."):  # get_attr: a constant
            self._input(m["name"], "", number)
            return
        if m:
            self._node(m["name"], m["ann"], m["rhs"].strip(), number)
            if release:
                if not _RELEASE.match(release):
                    self._keep_unknown(number, text)
                else:
                    for n in release.split(" = ")[:-1]:
                        self._release(n.strip(), self.step - 1)
            return
        self._keep_unknown(number, text)

    def _continue_open(self, s: str, number: int) -> None:
        """A line of an expanded signature (``def forward(`` ... ``):``) or of a return
        spread over lines (``return (`` ... ``)``), as TORCH_TRACE prints graphs; each
        line may end with a comment naming what the value is (``# PlainAOTInput(idx=0)``)."""
        assert self.open_lines is not None
        kind, parts, start = self.open_lines
        code = _strip_comment(s)
        if kind == "signature":
            if code.startswith(")"):
                self.open_lines = None
                self.saw_forward = True
                return
            for d in _DECLS.finditer(code):
                self._input(d["name"], d["ann"], number)
            return
        parts.append(code)
        text = " ".join(parts)
        if _balance(text) <= 0:
            self.open_lines = None
            self._return(text, start)

    def _input(self, name: str, ann: str, number: int) -> None:
        a = parse_annotation(ann)
        st = Storage(root=name, step=None, line=number, is_input=True, holders={name})
        if a is not None:
            b = storage_bytes(a["shape"], a["stride"], a["dtype"])
            st.bytes, st.size_expr = b.bytes, b.expr
            st.dtype, st.shape, st.stride, st.device = (
                a["dtype"], _fmt(a["shape"]), _fmt(a["stride"]), a["device"])
            self.device = self.device or a["device"]
            self.input_meta[name] = (a["shape"], a["stride"], a["dtype"])
        else:
            st.attrs["annotation"] = ann
        self.bound[name] = _Name(name, st, None, number, "input", ann=a)

    def _node(self, name: str, ann: str | None, rhs: str, number: int) -> None:
        step = self.step
        a = parse_annotation(ann) if ann else None
        target: str | None = None
        args = ""
        m = CALL.match(rhs)
        g = _GETITEM.match(rhs)
        if m:
            target, args = m["callee"], m["args"]
        elif g:
            target = "getitem"
        if target == "operator.getitem" and m:
            parts = [p.strip() for p in args.split(",")]
            if len(parts) == 2 and parts[1].lstrip("-").isdigit():
                g = re.match(r"(?P<base>\w+)", parts[0])
                idx = int(parts[1])
            else:
                g = None
        else:
            idx = int(g["i"]) if g else 0
        op = op_name(target) if target else "constant"
        attrs_: dict[str, Any] = {}
        if ann:
            attrs_["annotation"] = ann
        if self.location:
            attrs_["source"] = self.location
        first = _first_arg(args) if m else None
        reads = [n for n in re.findall(r"\b[A-Za-z_]\w*\b", args if m else rhs)
                 if n in self.bound]
        self.pending.append(NodeScheduled(
            timeline=self.key, step=step, node=name, node_class="fx_node",
            ir_type=op, kernel=target, device=(a or {}).get("device") or self.device,
            reads=tuple(dict.fromkeys(reads)), writes=(name,), line=number, attrs=attrs_,
        ))
        self.step += 1
        if a is not None and self.device is None:
            self.device = a["device"]
        # What does the name hold?
        if g is not None and g["base"] in self.bound:
            base = self.bound[g["base"]]
            if base.storage is None:  # element of a tuple: allocated at the tuple's step
                st = self._storage(name, base.step, number, a, node=base.name)
                st.holders.add(base.name)
                st.attrs["output_index"] = idx
                base.elements.append(st)
                self._bind(_Name(name, st, base.step, number, "alloc", ann=a, op=base.op))
                if a is not None and base.op:
                    self.nodes.append((base.op, idx, a["dtype"], _fmt(a["shape"]),
                                       _fmt(a["stride"])))
                return
            self._view(name, base, step, number, a)  # element of split/unbind: a view
            return
        if op in VIEW_OPS or (op.endswith("_") and not op.endswith("__")):
            src = self.bound.get(first or "")
            if src is not None:
                if op in _MULTI_VIEW_OPS and a is None:
                    self._bind(_Name(name, src.storage, step, number, "view", target=src.name,
                                     op=op))
                    if src.storage is not None:
                        src.storage.holders.add(name)
                    self.pending.append(BufferAliased(
                        timeline=self.key, step=step, buffer=name, target=src.name,
                        relation="alias", attrs={"op": op}))
                    return
                self._view(name, src, step, number, a, op=op)
                return
        if a is None:
            if ann is None and m is not None:  # a tuple-valued node (elements via getitem)
                self._bind(_Name(name, None, step, number, "tuple", op=op))
            return  # Sym ints, constants: no tensor storage
        st = self._storage(name, step, number, a, node=name)
        self.nodes.append((op, None, a["dtype"], _fmt(a["shape"]), _fmt(a["stride"])))
        self._bind(_Name(name, st, step, number, "alloc", ann=a, op=op))

    def _storage(self, name: str, step: int | None, number: int, a: dict[str, Any] | None,
                 node: str) -> Storage:
        st = Storage(root=name, step=step, line=number, node=node, layout="fx_output")
        if a is not None:
            b = storage_bytes(a["shape"], a["stride"], a["dtype"])
            st.bytes, st.size_expr = b.bytes, b.expr
            if b.reason:
                st.attrs["size_reason"] = b.reason
            st.dtype, st.shape, st.stride, st.device = (
                a["dtype"], _fmt(a["shape"]), _fmt(a["stride"]), a["device"])
        else:
            st.attrs["size_reason"] = "no tensor annotation"
        return st

    def _view(self, name: str, src: _Name, step: int, number: int, a: dict[str, Any] | None,
              op: str | None = None) -> None:
        nm = _Name(name, src.storage, step, number, "view", target=src.name, ann=a, op=op)
        if src.storage is None:
            nm.relation = "tuple"
            nm.elements = src.elements
        self._bind(nm)
        self.pending.append(BufferAliased(timeline=self.key, step=step, buffer=name,
                                          target=src.name, relation="alias",
                                          attrs={"op": op} if op else {}))

    def _bind(self, nm: _Name) -> None:
        if nm.name in self.bound:
            self._release(nm.name, self.step - 1)
        self.bound[nm.name] = nm
        if nm.storage is not None:
            nm.storage.holders.add(nm.name)

    def _release(self, name: str, end: int) -> None:
        nm = self.bound.pop(name, None)
        if nm is None:
            return
        if nm.storage is None:  # a tuple stops holding its elements
            for st in nm.elements:
                if name in st.holders and st.release(name, end):
                    self._emit_storage(st)
            return
        st = nm.storage
        free = st.release(name, end)
        if nm.relation != "input" and name != st.root:
            a = nm.ann or {}
            self.pending.append(BufferAllocated(
                timeline=self.key, step=nm.step, buffer=name, bytes=0, node=name,
                layout="view", dtype=a.get("dtype"),
                shape=_fmt(a["shape"]) if a else None, stride=_fmt(a["stride"]) if a else None,
                device=a.get("device"), line=nm.line,
                attrs={"storage": st.root, "target": nm.target, "op": nm.op,
                       "storage_is_input": st.is_input},
            ))
            self.pending.append(BufferFreed(timeline=self.key, step=max(end, nm.step or 0),
                                            buffer=name, reason="last use"))
        if free:
            self._emit_storage(st)

    def _emit_storage(self, st: Storage) -> None:
        if st.is_input:
            self.pending.append(BufferAllocated(
                timeline=self.key, step=None, buffer=st.root, bytes=st.bytes, layout="input",
                dtype=st.dtype, shape=st.shape, stride=st.stride, device=st.device,
                size_expr=st.size_expr, is_input=True, line=st.line, attrs=st.attrs,
            ))
            return
        self.pending.extend(st.records(self.key, "last use"))

    def _return(self, text: str, number: int) -> None:
        names = re.findall(r"\b[A-Za-z_]\w*\b", text)
        self.returned = [n for n in names if n in self.bound]

    def finish(self) -> Iterator[Record]:
        if self.open_lines is not None:
            what = "signature" if self.open_lines[0] == "signature" else "return statement"
            raise self.error(self.open_lines[2], f"{self.title}: the graph's {what} never "
                             "ends: truncated?")
        if not self.saw_forward:
            raise self.error(self.last_line, f"{self.title}: no 'def forward(self, ...)' line: "
                             "truncated graph?")
        if self.returned is None:
            raise self.error(self.last_line, f"{self.title}: graph ends without its return "
                             "statement: truncated?")
        last = max(self.step - 1, 0)
        returned = set(self.returned)
        for name in list(self.bound):
            if name not in returned and self.bound[name].relation not in ("input",):
                self.never_released += 1
            self._release(name, last)
        out, self.pending = self.pending, []
        yield from out
        self._make_note()

    def _make_note(self) -> None:
        note: dict[str, Any] = {
            "n_steps": self.step, "device": self.device, "outputs": self.returned,
            "unknown_lines": self.n_unknown, "interleaved_lines": self.interleaved,
            "never_released": self.never_released,
        }
        warnings = []
        if self.unknown:
            note["unknown"] = self.unknown
            warnings.append(f"{self.n_unknown} unrecognised line(s) kept "
                            "(timeline_notes.attrs.unknown)")
        if self.interleaved:
            warnings.append(f"{self.interleaved} interleaved warning/traceback line(s) skipped")
        if warnings:
            note["warnings"] = warnings
        self.note = TimelineNote(timeline=self.key, attrs=note)
