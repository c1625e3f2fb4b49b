"""Inductor scheduler IR dumps (``ir_pre_fusion.txt`` / ``ir_post_fusion.txt``) to events.

The dump is a sequence of top-level nodes in execution order::

    op3: ExternKernelSchedulerNode(ExternKernelOut)     <- header at column 0
    op3.writes = [StarDep(name='buf3', mode=None)]      <- node fields, may wrap
    op3.outputs = [
        buf3: ExternKernelOut                           <- output buffers, indented
        buf3.layout = FixedLayout('cuda:0', torch.bfloat16, size=[..], stride=[..])
        buf3.users = [NodeUser(node=SchedulerNode(name='op13'), ..., is_weak=False)]
    ]
    op3.node.kernel = extern_kernels.mm
    arg0_1_layout = FixedLayout(...)                    <- layouts of what it touches
    class op3_loop_body: ...                            <- kept as text
    op3 Triton code: ...                                <- kept as text

A ``FusedSchedulerNode`` prints ``opA_opB.snodes[i] =`` and then each sub-node
in the same form at column 0. The parser is structural: fields it does not
know are kept in the node's attributes, not dropped.

Liveness rule (docs/liveness.md): a buffer is live from its node's step through the
largest step among its non-weak users (sub-nodes count at their fused node's
step, OUTPUT means the last step, no users means only its own step); a buffer
named in another's ``.mutations``/``.aliases`` lives at least as long as that
buffer, transitively. A ``NonOwningLayout`` buffer (a ConcatKernel's input, written
straight into the concat buffer named in its ``.aliases``) owns 0 bytes; the concat
buffer, printed after the views written into it, is live from the earliest step of
any of them (and is no graph input). Freed events are therefore emitted after the
last node.

This module is the specification: native/inductor_ir.cpp is its compiled twin (with
last_use.py), used by ``parse_file`` where the core is built; tests/native/test_inductor_ir.py
holds the two to the same records and errors. A change here is made there too.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import attrs

from .errors import IngestError
from .last_use import LastUse
from .records import (
    BufferAliased,
    BufferAllocated,
    BufferFreed,
    CollectiveIssued,
    CollectiveWaited,
    NodeScheduled,
    Record,
    Timeline,
    TimelineNote,
)
from .tensors import split_dims, storage_bytes

FORMAT = "inductor_ir"

_HEADER = re.compile(r"(?P<name>[A-Za-z_]\w*): (?P<cls>[A-Za-z_]\w*)\((?P<ir>[^()]*)\)\s*\Z")
_SNODE = re.compile(r"snodes\[(\d+)\]\Z")
_LAYOUT_LINE = re.compile(r"(?P<name>[A-Za-z_]\w*)_layout = (?P<value>.*)\Z")
_LOOP_BODY = re.compile(r"class (?P<name>[A-Za-z_]\w*)_loop_body:\s*\Z")
_CODE_BLOCK = re.compile(r"(?P<name>[A-Za-z_]\w*) (?P<lang>\w+) code:\s*\Z")
_BUF_HEADER = re.compile(r"\s+(?P<name>[A-Za-z_]\w*): (?P<cls>[A-Za-z_]\w*)\s*\Z")
# (?<!\w): a match can only start where a word does (the same matches; without it a long
# word is retried from each of its characters, quadratic in its length)
_DEP = re.compile(r"(?<!\w)(?P<kind>\w+Dep)\((?:name=)?'(?P<name>[^']+)'")
_USER = re.compile(
    r"NodeUser\(node=(?:(?P<output>OUTPUT)|\w+\(name='(?P<node>[^']+)'\))"
    r"(?P<rest>[^)]*)\)"
)
_QUOTED = re.compile(r"'([^']*)'")
_LAYOUT = re.compile(r"(?P<kind>[A-Za-z_]\w*)\((?P<args>.*)\)\s*\Z")
_DEVICE_ARG = re.compile(r"device\(type='(?P<type>\w+)'(?:, index=(?P<index>\d+))?\)")
_ZERO_BYTE_LAYOUTS = {"NoneLayout", "MultiOutputLayout", "MutationLayoutSHOULDREMOVE",
                      "NonOwningLayout"}
# A NonOwningLayout buffer (a ConcatKernel input) is written straight into the buffer it
# names in .aliases (the concat buffer, produced by a later node): it owns no storage.
_NON_OWNING = "NonOwningLayout"

COLLECTIVE_CLASSES = {"_CollectiveKernel"}
WAIT_CLASSES = {"_WaitKernel"}


def _layout_kind(text: str | None) -> str | None:
    return parse_layout(text)["kind"] if text else None


def _balance(text: str) -> int:
    return (
        text.count("[") + text.count("(") + text.count("{")
        - text.count("]") - text.count(")") - text.count("}")
    )


@attrs.define
class _Buffer:
    name: str
    ir_class: str
    line: int
    fields: dict[str, str] = attrs.field(factory=dict)


@attrs.define
class _Node:
    name: str
    cls: str
    ir: str
    line: int
    fields: dict[str, str] = attrs.field(factory=dict)
    buffers: list[_Buffer] = attrs.field(factory=list)
    snodes: list[str] = attrs.field(factory=list)
    layouts: dict[str, str] = attrs.field(factory=dict)
    blocks: dict[str, str] = attrs.field(factory=dict)
    unknown: list[str] = attrs.field(factory=list)
    subs: list[_Node] = attrs.field(factory=list)
    prefix: str = ""

    def __attrs_post_init__(self) -> None:
        self.prefix = self.name + "."


@functools.lru_cache(maxsize=8192)
def parse_layout(text: str) -> dict[str, Any]:
    """``FixedLayout('cuda:0', torch.bfloat16, size=[2, 3], stride=[3, 1])`` to its parts."""
    m = _LAYOUT.match(text.strip())
    if not m:
        return {"kind": text.strip(), "raw": text.strip()}
    out: dict[str, Any] = {"kind": m["kind"], "raw": text.strip()}
    args = split_dims(m["args"])
    for a in args:
        if "=" in a and not a.startswith(("'", '"')):
            key, _, val = a.partition("=")
            key = key.strip()
            val = val.strip()
            if key in ("size", "stride"):
                out[key] = split_dims(val)
            elif key == "device":
                d = _DEVICE_ARG.match(val)
                out["device"] = (
                    (d["type"] + (f":{d['index']}" if d["index"] else "")) if d else val
                )
            elif key == "dtype":
                out["dtype"] = val.rsplit(".", 1)[-1]
            else:
                out.setdefault("extra", {})[key] = val
        elif a.startswith(("'", '"')):
            out["device"] = a.strip("'\"")
        elif a.startswith("torch."):
            out["dtype"] = a[len("torch."):]
        else:
            d = _DEVICE_ARG.match(a)
            if d:
                out["device"] = d["type"] + (f":{d['index']}" if d["index"] else "")
            else:
                out.setdefault("positional", []).append(a)
    return out


def dep_names(text: str) -> list[str]:
    """Buffer names in a dependency list, weak deps excluded, in order, unique."""
    seen: dict[str, None] = {}
    for m in _DEP.finditer(text):
        if m["kind"] != "WeakDep":
            seen.setdefault(m["name"], None)
    return list(seen)


def _default_timeline_name(path: str) -> str:
    p = Path(path)
    parent = p.parent.name
    if p.stem.startswith("ir_") and parent:
        return f"{parent}/{p.name}"
    return p.name


def parse_scheduler_ir(
    lines: Iterable[tuple[int, str]], path: str, *, timeline_name: str | None = None
) -> Iterator[Record]:
    """Yield the records of one scheduler-IR dump, in file order (frees at the end)."""
    key = "ir"
    yield Timeline(key=key, name=timeline_name or _default_timeline_name(path), format=FORMAT)
    parser = _Parser(path, key)
    feed = parser.feed
    for number, text in lines:
        block = parser.block
        if block is not None and (not text or text[0] in " \t"):
            block[2].append(text)  # loop body / code block lines: the bulk of a dump
            continue
        pending = parser.pending
        if pending is not None and text[:1] == " " and parser.pending_balance > 0:
            # continuation of a wrapped value (users lists, dependency lists)
            pending[2].append(text.strip())
            parser.pending_balance += (
                text.count("[") + text.count("(") + text.count("{")
                - text.count("]") - text.count(")") - text.count("}"))
            if parser.pending_balance <= 0:
                parser.pending = None
                pending[0].fields[pending[1]] = " ".join(pending[2]).strip()
            continue
        out = feed(number, text)
        if out:
            yield from out
    yield from parser.finish()


class _Parser:
    """Line-driven state machine. Holds one node's text at a time, plus per-buffer facts."""

    def __init__(self, path: str, key: str) -> None:
        self.path = path
        self.key = key
        self.top: _Node | None = None
        self.current: _Node | None = None  # top or the sub-node being printed
        self.expect_snode_of: _Node | None = None
        self.pending: tuple[Any, str, list[str], int] | None = None  # multi-line value
        self.pending_balance = 0
        self.block: tuple[_Node, str, list[str]] | None = None  # loop body / code block
        self.in_outputs = False
        self.step = 0
        self.last_line = 0
        # Whole-graph facts: names only; per-buffer detail lives in the last-use frontier.
        self.live = LastUse()
        self.produced: set[str] = set()
        self.inputs: dict[str, int | None] = {}  # graph input -> bytes
        self.collective_nodes: set[str] = set()
        self.device: str | None = None
        self.symbolic: list[str] = []
        # concat buffer -> (earliest step of a view written into it, the views), until the
        # node producing it appears
        self.concat_views: dict[str, tuple[int, list[str]]] = {}

    def error(self, line: int, message: str) -> IngestError:
        return IngestError(self.path, line, message)

    # -- line dispatch -------------------------------------------------------------------
    def feed(self, number: int, text: str) -> list[Record] | None:
        """Consume one line; returns the records of a node that this line completed."""
        self.last_line = number
        if self.pending is not None:
            target, field, parts, start = self.pending
            if not self.pending_balance and text[:1] not in (" ", "\t"):
                # "op5.writes = " with nothing after it: an empty value; dispatch this line.
                self.pending = None
                self._set_field(target, field, "", start)
                return self.feed(number, text)
            parts.append(text.strip())
            self.pending_balance += _balance(text)
            if self.pending_balance <= 0:
                self.pending = None
                self._set_field(target, field, " ".join(parts), start)
            return None
        if self.block is not None:
            node, name, body = self.block
            if text.startswith((" ", "\t")) or not text.strip():
                body.append(text)
                return None
            while body and not body[-1].strip():
                body.pop()
            node.blocks[name] = "\n".join(body)
            self.block = None
        if self.in_outputs:
            self._output_line(number, text)
            return None
        if not text.strip():
            return None
        if text[0] in " \t":
            if self.current is None:
                raise self.error(number, "indented text before the first node header")
            self.current.unknown.append(text)
            return None
        cur = self.current
        if cur is not None:
            owner = None
            if text.startswith(cur.prefix):
                owner, rest = cur, text[len(cur.prefix):]
            elif self.top is not None and text.startswith(self.top.prefix):
                owner, rest = self.top, text[len(self.top.prefix):]
            if owner is not None:
                field, sep, value = rest.partition(" =")
                if sep and " " not in field:
                    self._field(owner, field, value[1:] if value[:1] == " " else value, number)
                    return None
        if text[-1:] == ")":
            m = _HEADER.match(text)
            if m:
                return self._header(m, number)
        if cur is None:
            raise self.error(
                number,
                "expected an Inductor scheduler node header like "
                f"'op0: SchedulerNode(ComputedBuffer)', got {text[:80]!r}",
            )
        self.expect_snode_of = None
        if "_layout = " in text:
            m = _LAYOUT_LINE.match(text)
            if m:
                cur.layouts[m["name"]] = m["value"]
                if self.top is not None and self.top is not cur:
                    self.top.layouts.setdefault(m["name"], m["value"])
                return None
        if text.startswith("class ") and _LOOP_BODY.match(text):
            self.block = (cur, "loop_body", [text])
            return None
        if text.endswith(" code:"):
            m = _CODE_BLOCK.match(text)
            if m and self.top is not None:
                self.block = (self.top, f"{m['lang'].lower()}_code", [])
                return None
        cur.unknown.append(text)
        return None

    def _header(self, m: re.Match[str], number: int) -> list[Record] | None:
        if self.expect_snode_of is not None:
            parent = self.expect_snode_of
            self.expect_snode_of = None
            sub = _Node(m["name"], m["cls"], m["ir"], number)
            parent.snodes.append(sub.name)
            parent.subs.append(sub)
            self.current = sub
            return None
        done = list(self._finish_node()) if self.top is not None else None
        self.top = self.current = _Node(m["name"], m["cls"], m["ir"], number)
        return done

    def _field(self, owner: _Node, field: str, value: str, number: int) -> None:
        self.expect_snode_of = None
        if field.startswith("snodes[") and _SNODE.match(field):
            self.expect_snode_of = owner
            return
        if field == "outputs" and value.strip() == "[":
            self._skip_outputs = owner is not self.top  # a sub-node repeats them
            self.in_outputs = True
            return
        bal = _balance(value)
        if bal > 0 or not value.strip():
            # wraps onto following lines, or "op1.met_dependencies = " then "    [ ... ]"
            self.pending = (owner, field, [value], number)
            self.pending_balance = bal
            return
        owner.fields[field] = value.strip()

    def _set_field(self, target: _Node | _Buffer, field: str, value: str, line: int) -> None:
        target.fields[field] = value.strip()

    _skip_outputs = False

    def _output_line(self, number: int, text: str) -> None:
        if text.strip() == "]" and not text.startswith(" "):
            self.in_outputs = False
            self._skip_outputs = False
            return
        if self._skip_outputs:
            return  # a sub-node repeats its fused node's outputs
        assert self.top is not None
        if not text.strip():
            return
        body = text.lstrip()
        name, dot, rest = body.partition(".")
        bufs = self.top.buffers
        if dot and bufs and name == bufs[-1].name:
            field, sep, value = rest.partition(" = ")
            if sep:
                buf = bufs[-1]
                bal = _balance(value)
                if bal > 0:
                    self.pending = (buf, field, [value], number)
                    self.pending_balance = bal
                else:
                    buf.fields[field] = value.strip()
                return
        m = _BUF_HEADER.match(text)
        if m:
            bufs.append(_Buffer(m["name"], m["cls"], number))
            return
        if text.startswith((" ", "\t")) and not text.strip().startswith("]"):
            if self.top.buffers:
                self.top.buffers[-1].fields.setdefault("_unknown", "")
                self.top.buffers[-1].fields["_unknown"] += text.strip() + "\n"
                return
        raise self.error(
            number, f"expected an output buffer line or ']' closing {self.top.name}.outputs"
        )

    # -- node completion -----------------------------------------------------------------
    def _finish_node(self) -> Iterator[Record]:
        node = self.top
        assert node is not None
        step = self.step
        self.step += 1
        f = node.fields
        device = f.get("group.device") or next(
            (s.fields["group.device"] for s in node.subs if "group.device" in s.fields), None
        )
        writes = dep_names(f.get("writes", ""))
        reads = dep_names(f.get("unmet_dependencies", "")) + [
            n for n in dep_names(f.get("met_dependencies", "")) if n not in writes
        ]
        kernel = f.get("node.kernel")
        if kernel in (None, "None"):
            kernel = None
        attrs_: dict[str, Any] = {"line": node.line}
        for k in ("group.iteration", "sizes"):
            if k in f:
                attrs_[k.replace("group.", "group_")] = f[k]
        weak = [m["name"] for m in _DEP.finditer(f.get("unmet_dependencies", "") + f.get("met_dependencies", "")) if m["kind"] == "WeakDep"]
        if weak:
            attrs_["weak_deps"] = weak
        if node.snodes:
            attrs_["snodes"] = node.snodes
        known = {"writes", "unmet_dependencies", "met_dependencies", "group.device",
                 "group.iteration", "sizes", "node.kernel"}
        extra = {k: v for k, v in f.items() if k not in known}
        if extra:
            attrs_["fields"] = extra
        attrs_.update(node.blocks)
        if node.unknown:
            attrs_["unknown_lines"] = node.unknown
        buffer_layouts = {b.name: b.fields.get("layout", "") for b in node.buffers}
        if device is None:
            for lay in buffer_layouts.values():
                d = parse_layout(lay).get("device") if lay else None
                if d:
                    device = d
                    break
        if device and self.device is None:
            self.device = device
        yield NodeScheduled(
            timeline=self.key, step=step, node=node.name, node_class=node.cls,
            ir_type=node.ir, kernel=kernel, device=device, reads=tuple(reads),
            writes=tuple(writes), line=node.line,
            attrs=attrs_,
        )
        links = [
            (buf, target, "mutation" if rel == "mutations" else "alias")
            for buf in node.buffers for rel in ("mutations", "aliases") if rel in buf.fields
            for target in _QUOTED.findall(buf.fields[rel])
        ]
        # Views written into a concat buffer not produced yet: it is no input; it is
        # linked to them once it is produced.
        later = {target for buf, target, _ in links
                 if target not in self.produced and target not in self.inputs
                 and _layout_kind(buf.fields.get("layout")) == _NON_OWNING}
        yield from self._declare_inputs(
            node, reads + [t for _, t, _ in links if t not in later])
        for buf in node.buffers:
            yield self._allocate(node, step, buf)
        for buf in node.buffers:
            self._link_concat_views(buf.name)
        for buf, target, relation in links:
            if target in later:
                first, views = self.concat_views.get(target, (step, []))
                self.concat_views[target] = (min(first, step), [*views, buf.name])
            else:
                self.live.link(buf.name, target)
            yield BufferAliased(timeline=self.key, step=step, buffer=buf.name, target=target,
                                relation=relation, node=node.name)
        if node.ir in COLLECTIVE_CLASSES or node.cls in COLLECTIVE_CLASSES:
            self.collective_nodes.add(node.name)
            yield self._collective(node, step, kernel, reads)
        elif node.ir in WAIT_CLASSES or node.cls in WAIT_CLASSES:
            yield CollectiveWaited(
                timeline=self.key, step=step, node=node.name,
                collective=self._waited_collective(reads),
                attrs={"reads": reads},
            )
        self.live.node([node.name, *node.snodes], step)
        yield from self._frees()

    def _link_concat_views(self, name: str) -> None:
        """``name`` was just produced: if views were written into it before (allocated from
        the earliest of them, see ``_allocate``), it lives at least as long as each."""
        pending = self.concat_views.pop(name, None)
        if pending is None:
            return
        for view in pending[1]:
            if view in self.live.open:
                self.live.link(view, name)

    def _frees(self) -> Iterator[BufferFreed]:
        for c in self.live.drain():
            if c.buffer not in self.inputs:
                yield BufferFreed(timeline=self.key, step=c.last, buffer=c.buffer,
                                  reason=c.reason)

    def _declare_inputs(self, node: _Node, names: list[str]) -> Iterator[BufferAllocated]:
        """Names read or mutated that no node produced: graph inputs, recorded once."""
        for name in names:
            if name in self.produced or name in self.inputs:
                continue
            lay_text = node.layouts.get(name)
            lay = parse_layout(lay_text) if lay_text else {}
            size, stride = lay.get("size"), lay.get("stride")
            st = (storage_bytes(size, stride, lay.get("dtype"))
                  if size is not None and stride is not None else None)
            if st:
                self._check_range(node.line, name, st.bytes)
            self.inputs[name] = st.bytes if st else None
            yield BufferAllocated(
                timeline=self.key, step=None, buffer=name, bytes=st.bytes if st else None,
                node=None, layout=lay.get("kind"), dtype=lay.get("dtype"),
                shape=f"[{', '.join(size)}]" if size is not None else None,
                stride=f"[{', '.join(stride)}]" if stride is not None else None,
                device=lay.get("device"), size_expr=st.expr if st else None,
                is_input=True, line=node.line,
            )

    def _allocate(self, node: _Node, step: int, buf: _Buffer) -> BufferAllocated:
        lay_text = buf.fields.get("layout")
        if lay_text is None:
            raise self.error(buf.line, f"buffer {buf.name} of {node.name} has no .layout line")
        lay = parse_layout(lay_text)
        kind = lay["kind"]
        users = [
            None if m["output"] else m["node"]
            for m in _USER.finditer(buf.fields.get("users", ""))
            if "is_weak=True" not in m["rest"]
        ]
        self.produced.add(buf.name)
        dtype = lay.get("dtype")
        size, stride = lay.get("size"), lay.get("stride")
        attrs_: dict[str, Any] = {"ir_class": buf.ir_class}
        if lay.get("extra"):
            attrs_["layout_args"] = lay["extra"]
        for k, v in buf.fields.items():
            if k not in ("layout", "users"):
                attrs_[k] = v
        size_expr = None
        alloc_step = step
        views = self.concat_views.get(buf.name)
        if views is not None:  # a concat buffer: live from the first view written into it
            alloc_step = min(step, views[0])
            attrs_["written_from_step"] = views[0]
            attrs_["written_by_views"] = views[1]
        if kind == _NON_OWNING:
            into = ", ".join(_QUOTED.findall(buf.fields.get("aliases", "")))
            attrs_["owns_no_storage"] = f"written into {into}"
        if kind in _ZERO_BYTE_LAYOUTS:
            nbytes: int | None = 0
        elif size is not None and stride is not None:
            st = storage_bytes(size, stride, dtype)
            self._check_range(buf.line, buf.name, st.bytes)
            nbytes, size_expr = st.bytes, st.expr
            if st.reason:
                attrs_["bytes_unknown"] = st.reason
                self.symbolic.append(buf.name)
            if kind != "FixedLayout":
                attrs_["layout_rule"] = f"{kind} sized by the FixedLayout storage rule"
        else:
            nbytes = None
            attrs_["bytes_unknown"] = f"layout {kind} has no size/stride"
            self.symbolic.append(buf.name)
        self.live.buffer(buf.name, step, users, buf.line, nbytes, node.name)
        return BufferAllocated(
            timeline=self.key, step=alloc_step, buffer=buf.name, bytes=nbytes, node=node.name,
            layout=kind, dtype=dtype,
            shape=f"[{', '.join(size)}]" if size is not None else None,
            stride=f"[{', '.join(stride)}]" if stride is not None else None,
            device=lay.get("device"), size_expr=size_expr, line=buf.line, attrs=attrs_,
        )

    def _check_range(self, line: int, name: str, nbytes: int | None) -> None:
        """A byte count the events table cannot hold (int64) is bad input, said so."""
        if nbytes is not None and not -(1 << 63) <= nbytes < (1 << 63):
            raise self.error(line, f"buffer {name}: {nbytes} bytes is out of range "
                             "(more than 64 bits)")

    def _collective(
        self, node: _Node, step: int, kernel: str | None, reads: list[str]
    ) -> CollectiveIssued:
        op = (kernel or node.ir).split(".")
        name = op[-2] if len(op) >= 2 and op[-1] in ("default", "out") else op[-1]
        touched = list(reads)
        for buf in node.buffers:
            for rel in ("mutations", "aliases"):
                touched += _QUOTED.findall(buf.fields.get(rel, ""))
        touched = list(dict.fromkeys(touched))
        sizes = [self._bytes(n) for n in touched]
        known = [b for b in sizes if b is not None]
        return CollectiveIssued(
            timeline=self.key, step=step, node=node.name, op=name,
            bytes=max(known) if known and len(known) == len(sizes) else None,
            buffers=tuple(touched), attrs={"kernel": kernel},
        )

    def _bytes(self, name: str) -> int | None:
        b = self.live.open.get(name)
        if b is not None:
            return b.nbytes
        return self.inputs.get(name)

    def _waited_collective(self, reads: list[str]) -> str | None:
        for name in reads:
            b = self.live.open.get(name)
            if b is not None and b.producer in self.collective_nodes:
                return b.producer
        return None

    # -- end of file ---------------------------------------------------------------------
    def finish(self) -> Iterator[Record]:
        end = self.last_line
        if self.pending is not None:
            raise self.error(self.pending[3], "file ends inside a bracketed value: truncated?")
        if self.in_outputs:
            raise self.error(end, "file ends inside an outputs list (missing ']'): truncated?")
        if self.expect_snode_of is not None:
            raise self.error(end, "file ends before a fused node's sub-node: truncated?")
        if self.block is not None:
            node, name, body = self.block
            while body and not body[-1].strip():
                body.pop()
            node.blocks[name] = "\n".join(body)
            self.block = None
        if self.top is None:
            raise self.error(end or 1, "no scheduler nodes found: expected lines like "
                             "'op0: SchedulerNode(ComputedBuffer)'")
        yield from self._finish_node()
        missing = self.live.finish(self.step - 1)
        if missing:
            buf, user, line = missing[0]
            raise self.error(
                line, f"{buf} is used by {user}, which never appears in the dump: truncated?"
            )
        yield from self._frees()
        yield TimelineNote(
            timeline=self.key,
            attrs={"n_steps": self.step, "device": self.device,
                   "symbolic_buffers": self.symbolic},
        )


def sniff(head: str, path: str) -> bool:
    """An IR dump starts with a node header followed by its ``.writes`` field."""
    lines = [ln for ln in head.splitlines() if ln.strip()][:4]
    m = _HEADER.match(lines[0]) if lines else None
    return m is not None and any(ln.startswith(m["name"] + ".") for ln in lines[1:])


def parse_file(path: str, progress: Any = None) -> Iterator[Record]:
    """The compiled core reads where it is built (the same rows; see native.py)."""
    from . import native
    from .lines import read_lines

    core = native.module()
    if core is not None and hasattr(core, "InductorIrParser"):
        return _parse_native(core.InductorIrParser(path), path, progress)
    return parse_scheduler_ir(read_lines(path, progress), path)


def _parse_native(parser: Any, path: str, progress: Any) -> Iterator[Record]:
    """The compiled twin's outputs: event columns a batch at a time, then the note.

    The file is read as ``lines.read_text`` reads it (1 MiB chunks, un-gzipped), so
    that a bad byte and a bad line are reported in the same order as there."""
    import gzip
    import os
    import zlib

    from .lines import CHUNK
    from .native import arrow_columns
    from .records import EventColumns

    key = "ir"
    yield Timeline(key=key, name=_default_timeline_name(path), format=FORMAT)
    total = os.path.getsize(path)
    with open(path, "rb") as raw:
        gz = raw.read(2) == b"\x1f\x8b"
        raw.seek(0)
        f: Any = gzip.GzipFile(fileobj=raw, mode="rb") if gz else raw
        try:
            while True:
                try:
                    data = f.read(CHUNK)
                except (EOFError, zlib.error, gzip.BadGzipFile) as e:
                    raise IngestError(path, parser.line(), f"corrupt gzip data ({e})") from None
                outputs = parser.feed(data) if data else parser.finish()
                for item in outputs:
                    if item[0] == "batch":
                        n, columns = arrow_columns(item[1])
                        yield EventColumns(timelines=(key,), n=n, columns=columns)
                    else:  # ("end", n_steps, device, symbolic buffers)
                        yield TimelineNote(timeline=key, attrs={
                            "n_steps": item[1], "device": item[2], "symbolic_buffers": item[3]})
                if progress is not None:
                    progress(raw.tell(), total)
                if not data:
                    break
        finally:
            if f is not raw:
                f.close()


def _spec() -> Any:
    from .format_spec import FormatSpec

    return FormatSpec(
        name=FORMAT,
        description="Inductor scheduler IR, ir_pre_fusion.txt / ir_post_fusion.txt",
        sniff=sniff,
        parse=parse_file,
        compiled=True,
    )


SPEC = _spec()
