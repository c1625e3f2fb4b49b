"""TORCH_TRACE structured logs (``dedicated_log_torch_trace_rank_<r>_*.log``) to timelines.

``TORCH_TRACE=/dir`` makes torch write, per process, every structured record of a compile
(``torch._logging.trace_structured``; what tlparse reads). Each record is one line: a
glog prefix and a JSON *envelope*::

    V1123 11:55:10.603000 25154 torch/_inductor/graph.py:2745] {"inductor_output_code":
        {"filename": ...}, "frame_id": 0, "frame_compile_id": 0, "attempt": 1,
        "has_payload": "<md5>"}

then, where ``has_payload`` is set, the payload on the following lines, each starting
with a tab (torch writes ``"\\t" + line`` for every line of the payload text, so the
md5 is over the payload lines joined by newlines). The envelope's first key names its
kind; ``rank``, ``frame_id``/``frame_compile_id``/``attempt``, ``compiled_autograd_id``
give its context (the compile id torch prints as ``0/0_1``). ``{"str": [text, id]}``
records intern strings that later records name by number (``stack[].filename``).

What becomes of each kind (docs/formats.md, "TORCH_TRACE logs"):

* ``inductor_output_code``: a wrapper timeline (:mod:`tlview.ingest.inductor_wrapper`),
  with the compile's AOT forward/backward graph and Inductor's post-grad graph as the
  dtype source of extern outputs;
* ``aot_joint_graph`` / ``aot_forward_graph`` / ``aot_backward_graph`` /
  ``aot_inference_graph``: FX timelines (:mod:`tlview.ingest.fx_graph`);
* artifact ``inductor_runtime_and_tensor_meta``: one ``estimate`` CompileEvent per
  scheduler node on its graph's wrapper timeline, aligned to a launch
  (:mod:`tlview.ingest.estimates`); ``inductor_provenance_tracking_node_mappings``:
  ``provenance`` events; ``fx_graph_cache_{miss,hit,bypass}``: the FX graph cache key
  (what a profiler's ``## Call CompiledFxGraph <key> ##`` names) in the wrapper's note;
* ``chromium_event``: a ``chromium`` event (compile phases), ``compilation_metrics``
  and the like: ``metrics`` events, ``str``: ``string`` events, on the log's own
  timeline (format ``torch_trace``);
* every other record: an ``envelope`` event with its metadata; a kind tlview does not
  know is counted in the note and kept with its payload (up to 64 KiB).

A payload whose md5 differs from ``has_payload`` is reported (note, warning), not fatal.
The parser streams: it holds one record's payload parser at a time, and the JSON
payloads it decodes (chromium events, estimates, provenance) one at a time.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from collections.abc import Callable, Generator, Iterable, Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

from .errors import IngestError
from .estimates import ESTIMATE_UNIT_NS, align, entry_kind
from .fx_graph import FxGraphParser, graph_summary
from .inductor_wrapper import _AOT_ID, WrapperParser
from .records import (
    CompileEvent,
    NodeScheduled,
    Record,
    Timeline,
    TimelineNote,
)
from .torch_log import LogLine, _Names

FORMAT = "torch_trace"
# json.loads(text[, parse_float=Decimal]) without a decoder made per payload (the same
# values, and the same ValueError for what is no JSON; a BOM is no JSON value either).
_DECODER = json.JSONDecoder()
_EXACT = json.JSONDecoder(parse_float=Decimal)
KEPT_PAYLOAD = 64 * 1024  # payload text kept for a record of unknown kind
MAX_LISTED = 50  # md5 mismatches and stray lines listed in the note (all are counted)

GRAPH_KINDS = {"aot_joint_graph": "joint", "aot_forward_graph": "forward",
               "aot_backward_graph": "backward", "aot_inference_graph": "inference"}
METRICS_KINDS = frozenset({"compilation_metrics", "bwd_compilation_metrics",
                           "aot_autograd_backward_compilation_metrics"})
# Envelope keys that give a record's context, not its kind (torch's reserved names).
CONTEXT_KEYS = frozenset({"rank", "frame_id", "frame_compile_id", "attempt",
                          "compiled_autograd_id", "has_payload", "stack", "subgraph_name",
                          "severity", "timestamp", "pathname", "thread"})
# Record kinds torch writes (tlparse's Envelope, torch 2.13): kept without their payload.
KNOWN_KINDS = frozenset({
    "str", "dynamo_start", "dynamo_output_graph", "optimize_ddp_split_graph",
    "optimize_ddp_split_child", "compiled_autograd_graph", "dynamo_guards",
    "aot_forward_graph", "aot_backward_graph", "aot_inference_graph", "aot_joint_graph",
    "inductor_pre_grad_graph", "inductor_post_grad_graph", "dynamo_cpp_guards_str",
    "inductor_output_code", "compilation_metrics", "bwd_compilation_metrics",
    "aot_autograd_backward_compilation_metrics", "graph_dump", "link",
    "symbolic_shape_specialization", "propagate_real_tensors_provenance", "guard_added",
    "create_unbacked_symbol", "expression_created", "missing_fake_kernel",
    "mismatched_fake_kernel", "artifact", "describe_storage", "describe_tensor",
    "describe_source", "dump_file", "chromium_event", "guard_added_fast",
    "exported_program",
})
_SNIFF = re.compile(r"[VIWEC]\d{4} \d\d:\d\d:\d\d\.\d+ +\d+ \S+:\d+\] \{\"")
_RANK_IN_NAME = re.compile(r"_rank_(\d+)_")


def compile_id(env: dict[str, Any]) -> str | None:
    """torch's trace id of a record: ``0/0``, ``0/0_1`` (attempt 1), ``!3/0/0``."""
    frame, fcid = env.get("frame_id"), env.get("frame_compile_id")
    ca = env.get("compiled_autograd_id")
    if ca is not None:
        cid = f"!{ca}" + (f"/{frame}/{fcid}" if frame is not None else "")
    elif frame is not None and fcid is not None:
        cid = f"{frame}/{fcid}"
    else:
        return None
    attempt = env.get("attempt")
    return f"{cid}_{attempt}" if attempt else cid


def _compile_key(env: dict[str, Any]) -> tuple[Any, ...]:
    """A compile, whatever its attempt (AOT graphs and output code of one compile)."""
    return (env.get("compiled_autograd_id"), env.get("frame_id"), env.get("frame_compile_id"))


class _RankNames(_Names):
    """Timeline names, with the rank appended where the log states one."""

    def __init__(self) -> None:
        super().__init__()
        self.suffix = ""

    def take(self, kind: str, name: str) -> tuple[str, str]:
        key, display = super().take(kind, name)
        return key, display + self.suffix


Done = Callable[["_Payload"], Iterator[Record]]
Sink = Callable[[int, str], "list[Record] | None"]


class _Payload:
    """The payload lines of one record: md5 as they come, handed to ``sink`` or kept
    (``keep``: all of it, a JSON payload to decode; up to ``cap`` bytes otherwise).

    The lines wait in ``pending`` and are hashed and counted ``PENDING`` at a time, as
    one text: one md5 update and one encode per many lines, not two and one per line
    (~1M payload lines per 100 MB of log). A payload kept up to a cap counts its bytes
    line by line (its cap is checked at each)."""

    __slots__ = ("kind", "name", "expect", "md5", "n", "_nbytes", "pending", "start",
                 "sink", "keep", "cap", "done")

    PENDING = 512

    def __init__(self, kind: str, name: str | None, expect: str | None, start: int, *,
                 sink: Sink | None = None, keep: bool = False, cap: int | None = None,
                 done: Done | None = None) -> None:
        self.kind, self.name, self.expect, self.start = kind, name, expect, start
        self.md5 = hashlib.md5(usedforsecurity=False)
        self.n = 0  # payload lines read
        self._nbytes = 0  # bytes of the lines hashed (newlines between lines included)
        self.pending: list[str] = []  # lines read, not hashed yet (the last of the n)
        self.sink = sink
        self.keep: list[str] | None = [] if keep else None
        self.cap = cap
        self.done = done

    def add(self, text: str) -> None:
        """One more payload line (without its tab)."""
        self.n += 1
        self.pending.append(text)
        if len(self.pending) >= self.PENDING or (self.cap is not None and self.keep is not None):
            self._hash()

    def _hash(self) -> None:
        if not self.pending:
            return
        raw = "\n".join(self.pending).encode()
        if self.n > len(self.pending):  # lines hashed before these: a newline between
            self.md5.update(b"\n")
            self._nbytes += 1
        self.md5.update(raw)
        self._nbytes += len(raw)
        self.pending.clear()

    @property
    def nbytes(self) -> int:
        """Bytes of the payload text read so far (newlines between lines included)."""
        self._hash()
        return self._nbytes

    @property
    def md5_ok(self) -> bool:
        """No payload announced, or the one read has the announced md5."""
        return self.expect is None or self.hexdigest() == self.expect

    def hexdigest(self) -> str:
        self._hash()
        return self.md5.hexdigest()

    def text(self) -> str:
        out = "\n".join(self.keep or [])
        self.keep = None
        return out


class _Compile:
    """What one compile's records told so far: its graphs' summaries, its wrappers."""

    def __init__(self) -> None:
        self.graphs: dict[str, dict[str, Any]] = {}  # forward/backward/... -> FX summary
        self.post_grad: dict[str, Any] | None = None
        self.fx_notes: dict[str, list[TimelineNote]] = {}  # graph kind -> held notes


class _Wrapper:
    """A wrapper timeline of the log whose note waits for the records that follow it."""

    def __init__(self, key: str, ckey: tuple[Any, ...], parser: WrapperParser) -> None:
        self.key, self.ckey, self.parser = key, ckey, parser
        self.launches: list[tuple[int, str, str, str | None]] = []
        self.extra: dict[str, Any] = {}


class TraceParser:
    """One TORCH_TRACE log, line by line."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.names = _RankNames()
        m = _RANK_IN_NAME.search(Path(path).name)
        self.file_rank = int(m.group(1)) if m else None
        self.log_key: str | None = None  # the log's own timeline, declared at its 1st record
        self.payload: _Payload | None = None
        self.compiles: dict[tuple[Any, ...], _Compile] = {}
        self.wrapper: _Wrapper | None = None  # the last wrapper, note held
        self.fx: FxGraphParser | None = None  # an FX graph being read
        self.fx_kind: tuple[tuple[Any, ...], str] | None = None
        self.strings: dict[int, str] = {}
        self.kinds: Counter[str] = Counter()
        self.unknown: Counter[str] = Counter()
        self.mismatches: list[dict[str, Any]] = []
        self.n_mismatch = 0
        self.foreign: list[int] = []
        self.n_foreign = 0
        self.n_stray = 0
        self.bad_json: list[int] = []
        self.ranks: set[int] = set()
        self.torch_version: str | None = None
        self.n_records = 0
        self.last = 0

    # -- the line loop ---------------------------------------------------------------
    def parse(self, lines: Iterable[tuple[int, str]]) -> Iterator[Record]:
        for number, line in lines:
            if not line:
                continue  # a stutter: torch never writes an empty line (a payload's is "\t")
            if line[0] == "\t":
                p = self.payload
                if p is None:
                    self.n_stray += 1
                    continue
                text = line[1:]
                p.add(text)
                if p.sink is not None:
                    out = p.sink(number, text)
                    if out:
                        yield from out
                elif p.keep is not None and (p.cap is None or p.nbytes <= p.cap):
                    p.keep.append(text)
                continue
            if self.payload is not None:
                yield from self._end_payload()
            self.last = number
            yield from self._record(number, line)
        if self.payload is not None:
            yield from self._end_payload()
        yield from self._finish()

    def _record(self, number: int, line: str) -> Iterator[Record]:
        j = line.find("] {")
        if j < 0 or line[0] not in "VIWEC":
            self.n_foreign += 1
            if len(self.foreign) < MAX_LISTED:
                self.foreign.append(number)
            return
        try:
            env = json.loads(line[j + 2:])
        except (ValueError, RecursionError):  # no JSON, or nested past json's limit
            env = None
        if not isinstance(env, dict) or not env:
            if len(self.bad_json) < MAX_LISTED:
                self.bad_json.append(number)
            self.n_foreign += 1
            return
        self.n_records += 1
        kind = next((k for k in env if k not in CONTEXT_KEYS), "")
        self.kinds[kind] += 1
        rank = env.get("rank")
        if isinstance(rank, int):
            self.ranks.add(rank)
        if self.log_key is None:
            yield from self._declare_log(rank)
        head = line[:j].split()
        prefix = {"time": " ".join(head[:2])[1:], "pid": head[2] if len(head) > 2 else None,
                  "source": head[3] if len(head) > 3 else None}
        meta = env[kind] if kind else None
        expect = env.get("has_payload")
        if kind == "str":
            yield from self._string(meta, number)
            return
        handler = getattr(self, "_on_" + kind, None) if kind in KNOWN_KINDS else None
        payload: _Payload | None
        if handler is not None:
            payload = yield from handler(env, meta, number, prefix)
        elif kind in GRAPH_KINDS:
            payload = yield from self._graph(env, kind, number, prefix)
        else:
            known = kind in KNOWN_KINDS
            if not known:
                self.unknown[kind] += 1
            payload = _Payload(kind, None, expect, number, keep=not known, cap=KEPT_PAYLOAD,
                               done=self._envelope_done(env, kind, number, prefix, meta))
        if payload is None:
            payload = _Payload(kind, None, expect, number)  # md5 checked, nothing kept
        if isinstance(expect, str):
            self.payload = payload
        elif payload.done is not None:  # no payload announced: the record is complete
            payload.expect = None
            yield from payload.done(payload)

    def _end_payload(self) -> Iterator[Record]:
        p = self.payload
        assert p is not None
        self.payload = None
        if not p.md5_ok:
            self.n_mismatch += 1
            if len(self.mismatches) < MAX_LISTED:
                self.mismatches.append({"line": p.start, "kind": p.name or p.kind,
                                        "expected": p.expect, "got": p.hexdigest(),
                                        "payload_lines": p.n})
        if p.done is not None:
            yield from p.done(p)

    # -- the log's own timeline ------------------------------------------------------
    def _declare_log(self, rank: Any) -> Iterator[Record]:
        if self.file_rank is None and isinstance(rank, int):
            self.file_rank = rank
        if self.file_rank is not None:
            self.names.suffix = f" [rank {self.file_rank}]"
        self.log_key, display = self.names.take("log", "TORCH_TRACE")
        attrs: dict[str, Any] = {"kind": "torch_trace"}
        if self.file_rank is not None:
            attrs["rank"] = self.file_rank
        yield Timeline(key=self.log_key, name=display, format=FORMAT, attrs=attrs)

    def _context(self, env: dict[str, Any], prefix: dict[str, Any] | None) -> dict[str, Any]:
        out: dict[str, Any] = {k: env[k] for k in ("rank", "frame_id", "frame_compile_id",
                                                   "attempt", "compiled_autograd_id",
                                                   "subgraph_name") if k in env}
        cid = compile_id(env)
        if cid is not None:
            out["compile_id"] = cid
        if prefix is not None:
            out["time"] = prefix["time"]
        return out

    def _string(self, meta: Any, number: int) -> Iterator[Record]:
        if isinstance(meta, list) and len(meta) == 2 and isinstance(meta[1], int):
            self.strings[meta[1]] = str(meta[0])
            assert self.log_key is not None
            yield CompileEvent(timeline=self.log_key, category="string", name=str(meta[0]),
                               line=number, attrs={"id": meta[1]})

    def _envelope_done(self, env: dict[str, Any], kind: str, number: int,
                       prefix: dict[str, Any], meta: Any
                       ) -> Callable[[_Payload], Iterator[Record]]:
        def done(p: _Payload) -> Iterator[Record]:
            attrs: dict[str, Any] = {**self._context(env, prefix), "source": prefix["source"]}
            if meta is not None and meta != {}:
                attrs["metadata"] = meta
            if "stack" in env:
                attrs["stack"] = self._unintern(env["stack"])
            if isinstance(meta, dict) and isinstance(meta.get("stack"), list):
                attrs["metadata"] = {**meta, "stack": self._unintern(meta["stack"])}
            if p.n >= 0:
                attrs["payload_lines"] = p.n
                attrs["payload_bytes"] = p.nbytes
                if not p.md5_ok:
                    attrs["payload_md5_mismatch"] = True
                if p.keep is not None:
                    attrs["payload"] = "\n".join(p.keep)
                    if p.nbytes > KEPT_PAYLOAD:
                        attrs["payload_truncated"] = True
            if kind not in KNOWN_KINDS:
                attrs["unknown_kind"] = True
            name = meta.get("name") if kind == "artifact" and isinstance(meta, dict) else kind
            assert self.log_key is not None
            yield CompileEvent(timeline=self.log_key, category="envelope", name=name,
                               line=number, attrs=attrs)
        return done

    def _unintern(self, stack: Any) -> Any:
        if not isinstance(stack, list):
            return stack
        return [{**f, "filename": self.strings.get(f["filename"], f["filename"])}
                if isinstance(f, dict) and isinstance(f.get("filename"), int) else f
                for f in stack]

    # -- graphs and output code ------------------------------------------------------
    # Each handler may yield records at once and returns the _Payload that reads the
    # record's payload (or None: md5 checked, nothing kept).
    def _header(self, env: dict[str, Any], number: int, prefix: dict[str, Any],
                extra: dict[str, Any]) -> LogLine:
        meta: dict[str, Any] = {"dress": "torch_trace", "time": prefix["time"]}
        if prefix["pid"] is not None and prefix["pid"].isdigit():
            meta["pid"] = int(prefix["pid"])
        rank = env.get("rank", self.file_rank)
        if rank is not None:
            meta["rank"] = rank
        cid = compile_id(env)
        if cid is not None:
            meta["compile_id"] = cid
        attrs = {k: env[k] for k in ("frame_id", "frame_compile_id", "attempt",
                                     "compiled_autograd_id") if k in env}
        meta["timeline_attrs"] = {**attrs, **extra}
        return LogLine(number, "", 0, meta)

    def _graph(self, env: dict[str, Any], kind: str, number: int, prefix: dict[str, Any]
               ) -> Generator[Record, None, _Payload]:
        graph = GRAPH_KINDS[kind]
        cid = compile_id(env) or "?"
        title = f"{graph.capitalize()} graph [{cid}]"
        header = self._header(env, number, prefix, {"graph": graph, "record": kind})
        parser = FxGraphParser(self.path, self.names.take("fx", title), title, header)
        yield from parser.start()

        def sink(n: int, text: str) -> list[Record]:
            return parser.feed(LogLine(n, text, 0, None))

        def done(p: _Payload) -> Iterator[Record]:
            yield from parser.finish()
            c = self.compiles.setdefault(_compile_key(env), _Compile())
            c.graphs[graph] = parser.summary()
            note = parser.note
            assert note is not None
            if not p.md5_ok:
                note = TimelineNote(note.timeline, {**note.attrs, "payload_md5_mismatch": True})
            c.fx_notes.setdefault(graph, []).append(note)

        return _Payload(kind, None, env.get("has_payload"), number, sink=sink, done=done)

    def _on_inductor_output_code(self, env: dict[str, Any], meta: Any, number: int,
                                 prefix: dict[str, Any]) -> Generator[Record, None, _Payload]:
        yield from self._release_wrapper()
        ckey = _compile_key(env)
        compile_ = self.compiles.setdefault(ckey, _Compile())
        extra: dict[str, Any] = {"record": "inductor_output_code"}
        if isinstance(meta, dict):
            for k in ("filename", "file_path"):
                if k in meta:
                    extra[k] = meta[k]
        extra["payload_md5"] = env.get("has_payload")
        header = self._header(env, number, prefix, extra)
        state: dict[str, _Wrapper] = {}

        def sink(n: int, text: str) -> list[Record]:
            w = state.get("w")
            if w is None:  # the first line names the graph: # AOT ID: ['0_forward']
                m = _AOT_ID.match(text.strip())
                aot = m["id"].strip() if m else ""
                parser = WrapperParser(self.path, self.names, header=header,
                                       graph=self._graph_for(compile_, aot))
                w = state["w"] = _Wrapper("", ckey, parser)
                self._name_fx_graphs(compile_, aot)
            return launches(w, w.parser.feed(LogLine(n, text, 0, None)))

        def launches(w: _Wrapper, out: list[Record]) -> list[Record]:
            """Note the module's launches as its records go by."""
            for rec in out:
                if type(rec) is NodeScheduled and rec.node_class != "return":
                    w.launches.append((rec.step, "extern" if rec.node_class == "extern"
                                       else "fused", rec.kernel or rec.node,
                                       rec.attrs.get("provenance")))
            return out

        def done(p: _Payload) -> Iterator[Record]:
            w = state.get("w")
            if w is None:
                raise IngestError(self.path, number, "inductor_output_code record without a "
                                  "payload: expected the output code on tab-indented lines")
            yield from launches(w, list(w.parser.finish()))
            w.key = w.parser.key or ""
            if not p.md5_ok:
                w.extra["payload_md5_mismatch"] = True
            self.wrapper = w

        return _Payload("inductor_output_code", None, env.get("has_payload"), number,
                        sink=sink, done=done)

    def _graph_for(self, c: _Compile, aot: str) -> dict[str, Any] | None:
        """The FX graph summary for a wrapper: its AOT graph, then the post-grad graph."""
        kind = aot.rsplit("_", 1)[-1] if "_" in aot else ""
        parts = [g for g in (c.graphs.get(kind), c.post_grad) if g is not None]
        if not parts:
            return None
        inputs: dict[str, Any] = {}
        for g in parts:
            for k, v in g["inputs"].items():
                inputs.setdefault(k, v)
        return {"outputs": [o for g in parts for o in g["outputs"]], "inputs": inputs}

    def _name_fx_graphs(self, c: _Compile, aot: str) -> None:
        """The AOT graphs of a compile learn their AOT id from its first output code."""
        n, _, _ = aot.partition("_")
        if not n.isdigit():
            return
        for graph, notes in c.fx_notes.items():
            c.fx_notes[graph] = [TimelineNote(note.timeline, {**note.attrs,
                                                              "aot_id": f"{n}_{graph}"})
                                 if "aot_id" not in note.attrs else note for note in notes]

    def _release_wrapper(self) -> Iterator[Record]:
        """The held wrapper's note, with what the records after its code told; the notes
        of its compile's FX graphs."""
        w, self.wrapper = self.wrapper, None
        if w is None:
            return
        note = w.parser.note
        assert note is not None
        yield TimelineNote(note.timeline, {**note.attrs, **w.extra})
        c = self.compiles.get(w.ckey)
        if c is not None:
            for notes in c.fx_notes.values():
                yield from notes
            c.fx_notes.clear()

    def _current_wrapper(self, env: dict[str, Any]) -> _Wrapper | None:
        """The output code the artifacts of ``env``'s compile that follow it speak of."""
        w = self.wrapper
        return w if w is not None and w.ckey == _compile_key(env) else None

    # -- artifacts -------------------------------------------------------------------
    def _on_artifact(self, env: dict[str, Any], meta: Any, number: int,
                     prefix: dict[str, Any]) -> Generator[Record, None, _Payload]:
        name = meta.get("name") if isinstance(meta, dict) else None
        expect = env.get("has_payload")
        envelope = self._envelope_done(env, "artifact", number, prefix, meta)
        use: Callable[[Any, dict[str, Any], int, _Payload], Iterator[Record]] | None = {
            "inductor_runtime_and_tensor_meta": self._estimates,
            "inductor_provenance_tracking_node_mappings": self._provenance,
            "torch_version": self._version,
        }.get(name or "")
        if isinstance(name, str) and name.startswith("fx_graph_cache_"):
            use = self._cache
        if name == "inductor_post_grad_graph":
            return self._post_grad(env, number, envelope)
        if use is None:
            return _Payload("artifact", name, expect, number, done=envelope)
        yield from ()
        return _Payload("artifact", name, expect, number, keep=True,
                        done=self._json_done(use, env, number))

    def _on_inductor_post_grad_graph(self, env: dict[str, Any], meta: Any, number: int,
                                     prefix: dict[str, Any]) -> Generator[Record, None, _Payload]:
        yield from ()
        return self._post_grad(env, number, self._envelope_done(
            env, "inductor_post_grad_graph", number, prefix, meta))

    def _post_grad(self, env: dict[str, Any], number: int, envelope: Done) -> _Payload:
        """Inductor's post-grad graph: the dtypes of the extern ops it will call."""
        c = self.compiles.setdefault(_compile_key(env), _Compile())

        def done(p: _Payload) -> Iterator[Record]:
            c.post_grad = graph_summary(enumerate(p.text().split("\n"), p.start + 1))
            yield from envelope(p)

        return _Payload("artifact", "inductor_post_grad_graph", env.get("has_payload"),
                        number, keep=True, done=done)

    def _json_done(self, use: Callable[[Any, dict[str, Any], int, _Payload], Iterator[Record]],
                   env: dict[str, Any], number: int, exact: bool = False) -> Done:
        """Decode the payload as JSON (``exact``: numbers with a fraction as Decimal, as
        written) and hand it to ``use``."""
        def done(p: _Payload) -> Iterator[Record]:
            try:
                value = (_EXACT if exact else _DECODER).decode(p.text())
            except (ValueError, RecursionError):
                value = None  # a damaged payload: its md5 mismatch is reported
            yield from use(value, env, number, p)
        return done

    def _estimates(self, value: Any, env: dict[str, Any], number: int,
                   p: _Payload) -> Iterator[Record]:
        ops = value.get("ops") if isinstance(value, dict) else None
        if not isinstance(ops, list):
            return
        w = self._current_wrapper(env)
        entries = [(op.get("name"), float(op.get("estimated_runtime_ns") or 0)) for op in ops]
        aligned = align(entries, [(s, k, kern) for s, k, kern, _ in w.launches]) if w else []
        kernels = {s: kern for s, _, kern, _ in w.launches} if w else {}
        target = w.key if w is not None else self.log_key
        assert target is not None
        n_aligned = 0
        for i, op in enumerate(ops):
            est = entries[i][1]
            step = aligned[i].step if aligned else None
            attrs = {"index": i, "type": op.get("type"), "estimated_runtime_ns": est,
                     "outputs": op.get("outputs"), "kind": entry_kind(entries[i][0]),
                     "align": aligned[i].method if aligned else "no_output_code"}
            if not p.md5_ok:
                attrs["payload_md5_mismatch"] = True
            n_aligned += step is not None
            yield CompileEvent(timeline=target, category="estimate", name=entries[i][0],
                               step=step, kernel=kernels.get(step) if step is not None else None,
                               dur_ns=round(est * ESTIMATE_UNIT_NS), line=number, attrs=attrs)
        if w is not None:
            w.extra["estimates"] = len(ops)
            w.extra["estimates_aligned"] = n_aligned

    def _provenance(self, value: Any, env: dict[str, Any], number: int,
                    p: _Payload) -> Iterator[Record]:
        if not isinstance(value, dict):
            return
        w = self._current_wrapper(env)
        target = w.key if w is not None else self.log_key
        assert target is not None
        steps = {prov: s for s, _, _, prov in w.launches if prov} if w is not None else {}
        for mapping, entries in value.items():
            if mapping.endswith("CodeToPost") and isinstance(entries, dict):
                for handle, nodes in entries.items():
                    yield CompileEvent(timeline=target, category="provenance", name=mapping,
                                       node=handle, kernel=handle.rsplit(":", 1)[0],
                                       step=steps.get(handle), line=number,
                                       attrs={"post_grad_nodes": nodes})
            else:
                yield CompileEvent(timeline=target, category="provenance", name=mapping,
                                   line=number, attrs={"value": entries})

    def _cache(self, value: Any, env: dict[str, Any], number: int,
               p: _Payload) -> Iterator[Record]:
        """fx_graph_cache_{miss,hit,bypass}: the key a profiler's call names the graph by."""
        w = self._current_wrapper(env)
        state = (p.name or "").removeprefix("fx_graph_cache_")
        info = {k: v for k, v in value.items() if k != "components"} \
            if isinstance(value, dict) else {}
        if w is not None and info.get("key"):
            w.extra["fx_graph_cache_key"] = info["key"]
            w.extra["fx_graph_cache_state"] = state
        assert self.log_key is not None
        yield CompileEvent(timeline=self.log_key, category="envelope", name=p.name,
                           line=number, attrs={**self._context(env, None), "metadata": info,
                                               "graph": w.key if w is not None else None})

    def _version(self, value: Any, env: dict[str, Any], number: int,
                 p: _Payload) -> Iterator[Record]:
        if isinstance(value, dict):
            self.torch_version = value.get("pytorch_version") or value.get("version")
            assert self.log_key is not None
            yield CompileEvent(timeline=self.log_key, category="envelope", name=p.name,
                               line=number, attrs={"metadata": value})

    # -- compile phases and metrics --------------------------------------------------
    def _on_chromium_event(self, env: dict[str, Any], meta: Any, number: int,
                           prefix: dict[str, Any]) -> Generator[Record, None, _Payload]:
        def use(value: Any, env_: dict[str, Any], number_: int, p: _Payload
                ) -> Iterator[Record]:
            if not isinstance(value, dict):
                return
            ts, dur = value.get("ts"), value.get("dur")
            attrs = {k: _floats(v) for k, v in value.items() if k not in ("name", "ts", "dur")}
            attrs.update(self._context(env, prefix))
            assert self.log_key is not None
            yield CompileEvent(timeline=self.log_key, category="chromium",
                               name=str(value.get("name")), ts_ns=_us_to_ns(ts),
                               dur_ns=_us_to_ns(dur), line=number, attrs=attrs)

        yield from ()
        return _Payload("chromium_event", None, env.get("has_payload"), number, keep=True,
                        done=self._json_done(use, env, number, exact=True))

    def _on_compilation_metrics(self, env: dict[str, Any], meta: Any, number: int,
                                prefix: dict[str, Any]) -> Generator[Record, None, None]:
        yield self._metrics("compilation_metrics", env, meta, number, prefix)

    def _on_bwd_compilation_metrics(self, env: dict[str, Any], meta: Any, number: int,
                                    prefix: dict[str, Any]) -> Generator[Record, None, None]:
        yield self._metrics("bwd_compilation_metrics", env, meta, number, prefix)

    def _on_aot_autograd_backward_compilation_metrics(
            self, env: dict[str, Any], meta: Any, number: int, prefix: dict[str, Any]
    ) -> Generator[Record, None, None]:
        yield self._metrics("aot_autograd_backward_compilation_metrics", env, meta, number,
                            prefix)

    def _metrics(self, kind: str, env: dict[str, Any], meta: Any, number: int,
                 prefix: dict[str, Any]) -> CompileEvent:
        assert self.log_key is not None
        return CompileEvent(timeline=self.log_key, category="metrics", name=kind, line=number,
                            attrs={**self._context(env, prefix), "metrics": meta})

    # -- the end ---------------------------------------------------------------------
    def _finish(self) -> Iterator[Record]:
        yield from self._release_wrapper()
        for c in self.compiles.values():
            for notes in c.fx_notes.values():
                yield from notes
            c.fx_notes.clear()
        if self.log_key is None:
            raise IngestError(self.path, self.last or 1, "no TORCH_TRACE record found: "
                              "expected lines like 'V1123 11:55:10.603000 25154 "
                              "torch/_inductor/graph.py:2745] {\"inductor_output_code\": ...}'")
        note: dict[str, Any] = {"records": self.n_records, "kinds": dict(self.kinds),
                                "strings": len(self.strings),
                                "ranks": sorted(self.ranks)}
        warnings = []
        if self.torch_version:
            note["torch_version"] = self.torch_version
        if self.unknown:
            note["unknown_kinds"] = dict(self.unknown)
            warnings.append(f"{sum(self.unknown.values())} record(s) of kinds tlview does not "
                            f"know ({', '.join(sorted(self.unknown))}): kept as envelope events")
        if self.n_mismatch:
            note["md5_mismatches"] = self.n_mismatch
            note["md5_mismatch_records"] = self.mismatches
            warnings.append(f"{self.n_mismatch} payload(s) whose md5 differs from has_payload "
                            f"(first at line {self.mismatches[0]['line']}): damaged or cut")
        if self.n_foreign:
            note["foreign_lines"] = self.n_foreign
            note["foreign_line_numbers"] = self.foreign
            if self.bad_json:
                note["bad_json_lines"] = self.bad_json
            warnings.append(f"{self.n_foreign} line(s) that are no TORCH_TRACE record skipped")
        if self.n_stray:
            note["stray_payload_lines"] = self.n_stray
        if len(self.ranks) > 1:
            warnings.append(f"records of several ranks ({sorted(self.ranks)}) in one log")
        if warnings:
            note["warnings"] = warnings
        assert self.log_key is not None
        yield TimelineNote(timeline=self.log_key, attrs=note)


def _us_to_ns(us: Any) -> int | None:
    """Microseconds as the log writes them (``1795434911379979.5``, read as Decimal) to
    integer nanoseconds: exactly the text's value (sub-ns digits dropped); None for what
    is no number or gives no int64 of ns (``1e99999999999``: Decimal arithmetic would
    overflow its own exponent range first)."""
    if isinstance(us, bool) or not isinstance(us, (int, Decimal)):
        return None
    if isinstance(us, Decimal) and us.adjusted() > 18:
        return None
    ns = int(us * 1000)
    return ns if -(1 << 63) <= ns < (1 << 63) else None


def _floats(value: Any) -> Any:
    """``value`` with Decimal numbers (an exact decode) back as floats, for attrs (the
    values of a JSON decode: exactly these types)."""
    t = type(value)
    if t is Decimal:
        return float(value)
    if t is dict:
        return {k: _floats(v) for k, v in value.items()}
    if t is list:
        return [_floats(v) for v in value]
    return value


def parse_torch_trace(lines: Iterable[tuple[int, str]], path: str) -> Iterator[Record]:
    """Yield the records of one TORCH_TRACE log (one rank's), streaming."""
    return TraceParser(path).parse(lines)


def sniff(head: str, path: str) -> bool:
    """A TORCH_TRACE log: its first line is a glog prefix and a JSON envelope."""
    first = next((ln for ln in head.splitlines() if ln.strip()), "")
    return _SNIFF.match(first) is not None


def parse_file(path: str, progress: Any = None) -> Iterator[Record]:
    from .lines import read_lines

    return parse_torch_trace(read_lines(path, progress), path)


def _spec() -> Any:
    from .format_spec import FormatSpec

    return FormatSpec(
        name=FORMAT,
        description="PyTorch TORCH_TRACE structured log (dedicated_log_torch_trace_*.log)",
        sniff=sniff,
        parse=parse_file,
    )


SPEC = _spec()
