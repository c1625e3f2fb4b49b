"""XLA buffer-assignment dumps (``--xla_dump_to``) to events: XLA's figures to the byte.

One module's dump, either in one file (older XLA, seed 003) or split over
siblings named ``<module>.<stage>-buffer-assignment.txt``, ``…-values.txt``,
``…-live-range.txt`` and ``…-memory-usage-report.txt`` (newer XLA). Sections::

    BufferAssignment:
    allocation 3: size 138706944, maybe-live-out:               <- index, size, kind
     value: <575 wrapped_concatenate @0> (size=37748736,offset=0): bf16[9216,2048]{1,0}
    Total bytes used: 1093622736 (1.02GiB)
    Used values:
    <576 gemm_fusion_dot.35.0 @0>                                <- id, name{index}, color
     positions: / uses: / from instruction: %name = SHAPE opcode(...), metadata={...}
    HloLiveRange (max 166):                                      <- schedule end time
      InstructionSequence:      0:p1.4.0                        <- one step per instruction
      BufferLiveRange:          wrapped_concatenate{}:91-92      <- start-end, both live
      Live ranges at 158 (peak):                                 <- XLA's own claim
        name: N bytes                          (old form)
        name{index}: N bytes (cumulative: M bytes)   (new form, then a stack-trace breakdown)

Each instruction becomes a ``NodeScheduled`` (step = its index); each value with a
live range a ``BufferAllocated`` at its start (with allocation index and offset)
and a ``BufferFreed`` at its end. Values in no allocation, and allocated values
with no live range, are reported in the closing note, not dropped. XLA's stated
peak is kept in the note and checked by the ``xla_peak_check`` view.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
from tlview.store.records import (
    BufferAllocated,
    BufferFreed,
    NodeScheduled,
    Record,
    Timeline,
    TimelineNote,
)

from .errors import IngestError
from .lines import ProgressFn, read_lines
from .xla_peaks import Placed, first_max, union_curve, xla_peak_moment
from .xla_shapes import instruction_opcode, instruction_shape, parse_shape

FORMAT = "xla_buffer_assignment"

# The split form's siblings, in the order their sections appear in the single-file form.
SPLIT_SUFFIXES = (
    "-buffer-assignment.txt",
    "-buffer-assignment-values.txt",
    "-live-range.txt",
    "-memory-usage-report.txt",
)

_ALLOCATION = re.compile(r"allocation (?P<index>\d+): size (?P<size>\d+)(?:, (?P<rest>.*?))?:\s*\Z")
_VALUE_REF = r"<(?P<id>\d+) (?P<name>[^\s{}<>]+)(?P<index>\{[\d,]*\})?(?P<phi> \(phi\))?(?: @(?P<color>\d+))?>"
_VALUE = re.compile(
    r" value: " + _VALUE_REF + r" \(size=(?P<size>\d+),offset=(?P<offset>\d+)\): (?P<shape>.*)\Z")
_USED_HEADER = re.compile(_VALUE_REF + r"\s*\Z")
_TOTAL = re.compile(r"Total bytes used: (?P<bytes>\d+)")
_LIVE_HEADER = re.compile(r"HloLiveRange \(max (?P<max>\d+)\):\s*\Z")
_SEQ = re.compile(r"\s+(?P<i>\d+):(?P<name>\S+)\s*\Z")
_RANGE = re.compile(r"\s+(?P<name>[^\s{}]+)(?P<index>\{[\d,]*\}):(?P<start>\d+)-(?P<end>\d+)\s*\Z")
_PEAK_HEADER = re.compile(r"\s+Live ranges at (?P<k>-?\d+) \(peak\):\s*\Z")
_PEAK_NEW = re.compile(
    r"\s+(?P<name>[^\s{}]+)(?P<index>\{[\d,]*\}): (?P<bytes>\d+) bytes \(cumulative: (?P<cum>\d+) bytes\)\s*\Z")
_PEAK_OLD = re.compile(r"\s+(?P<name>[^\s{}:]+): (?P<bytes>\d+) bytes\s*\Z")
_PARAM = re.compile(r"parameter (?P<n>\d+)")
_BARS = re.compile(r"\|([^|]*)\|")
_SHAPE_INDEX = re.compile(r"at ShapeIndex (\{[\d,]*\})")
_METADATA_ITEM = re.compile(r'\s*(?P<key>\w+)=(?:"(?P<q>(?:[^"\\]|\\.)*)"|(?P<v>[^\s}]+))')
_KIND = re.compile(r", kind=(k\w+)")
_CALLS = re.compile(r", calls=(%[\w.\-]+)")
_REPORT_SPACE = re.compile(r"Memory Space: (?P<space>.*)\Z")
_REPORT_TOTAL = re.compile(r"Total bytes: (?P<bytes>\d+)")
_MAX_LISTED = 20
_NONE: tuple[Record, ...] = ()  # names listed in a warning before "and N more"


def split_part(path: str) -> tuple[str, str] | None:
    """``(module prefix, suffix)`` when ``path`` is one file of the split form."""
    name = Path(path).name
    if name.endswith(".gz"):
        name = name[:-3]
    for suffix in SPLIT_SUFFIXES:
        if name.endswith(suffix):
            return str(Path(path).parent / name[: -len(suffix)]), suffix
    return None


def sibling_files(path: str) -> list[str]:
    """The files of one module's dump, in section order: ``path`` alone, or its siblings."""
    part = split_part(path)
    if part is None:
        return [path]
    prefix, _ = part
    found = []
    for suffix in SPLIT_SUFFIXES:
        for candidate in (prefix + suffix, prefix + suffix + ".gz"):
            if Path(candidate).is_file():
                found.append(candidate)
                break
    return found if path in found else [path]


def group_path(path: str) -> str:
    """The one file that stands for a split dump's siblings (so a folder ingests it once)."""
    return sibling_files(path)[0]


def module_name(path: str) -> tuple[str, str | None]:
    """``(module, stage)`` from a dump's file name: ``module_0020.jit_f``, ``cpu_after_optimizations``."""
    part = split_part(path)
    if part is None:
        stem = Path(path).name
        for ext in (".gz", ".txt"):
            stem = stem.removesuffix(ext)
        return stem.removesuffix("-buffer-assignment"), None
    base = Path(part[0]).name
    module, dot, stage = base.rpartition(".")
    return (module, stage) if dot and module else (base, None)


@attrs.define
class _Allocation:
    index: int
    size: int
    kind: list[str]
    parameter: int | None = None
    parameter_shape: str | None = None
    parameter_index: str | None = None
    output_shape: str | None = None
    line: int = 0


@attrs.define
class _Value:
    id: int
    key: str  # name{index}
    name: str
    index: str
    phi: bool
    color: int | None
    allocation: int
    offset: int
    size: int
    shape: str
    line: int
    path: str
    live: bool = False


@attrs.define
class _Used:
    positions: list[str] = attrs.field(factory=list)
    uses: list[str] = attrs.field(factory=list)


def parse_metadata(instruction: str) -> dict[str, Any]:
    """op_type, op_name, source_file, source_line... from ``metadata={...}``."""
    at = instruction.find("metadata={")
    if at < 0:
        return {}
    out: dict[str, Any] = {}
    pos = at + len("metadata={")
    while pos < len(instruction) and instruction[pos] != "}":
        m = _METADATA_ITEM.match(instruction, pos)
        if not m:
            break
        out[m["key"]] = m["q"] if m["q"] is not None else m["v"]
        pos = m.end()
    return out


def _braced(text: str, start: int) -> str | None:
    """The balanced ``{...}`` beginning at ``text[start]`` (JSON strings respected)."""
    depth = 0
    in_str = False
    i = start
    while i < len(text):
        ch = text[i]
        if in_str:
            if ch == "\\":
                i += 1
            elif ch == '"':
                in_str = False
        elif ch == '"':
            in_str = True
        elif ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return text[start:i + 1]
        i += 1
    return None


def instruction_facts(instruction: str) -> dict[str, Any]:
    """What a person needs from an HLO instruction line: opcode, shape, op metadata, fusion."""
    facts: dict[str, Any] = {"instruction": instruction}
    shape = instruction_shape(instruction)
    if shape:
        facts["shape"] = shape
    opcode = instruction_opcode(instruction, shape)
    if opcode:
        facts["opcode"] = opcode
    meta = parse_metadata(instruction)
    for key in ("op_type", "op_name", "source_file", "source_line"):
        if key in meta:
            facts[key] = meta[key]
    if "stack_frame_id" in meta:
        facts["stack_frame_id"] = meta["stack_frame_id"]
    kind = _KIND.search(instruction)
    if kind:
        facts["fusion_kind"] = kind.group(1)
    calls = _CALLS.search(instruction)
    if calls:
        facts["calls"] = calls.group(1)
    at = instruction.find("backend_config=")
    if at >= 0 and instruction.startswith("{", at + len("backend_config=")):
        cfg = _braced(instruction, at + len("backend_config="))
        if cfg:
            facts["backend_config"] = cfg
    return facts


def _source_of(facts: dict[str, Any]) -> str | None:
    if "source_file" not in facts:
        return None
    line = facts.get("source_line")
    return f"{facts['source_file']}:{line}" if line else facts["source_file"]


class _Parser:
    """Line-driven state machine over the module's sections, file after file."""

    def __init__(self, key: str) -> None:
        self.key = key
        self.path = ""
        self.section = "start"
        self.allocations: dict[int, _Allocation] = {}
        self.current_alloc: _Allocation | None = None
        self.values: dict[str, _Value] = {}
        self.value_by_id: dict[int, _Value] = {}
        self.used: dict[int, _Used] = {}
        self.used_current: _Used | None = None
        self.used_list: list[str] | None = None
        self.instructions: dict[str, dict[str, Any]] = {}  # name -> facts
        self.total_bytes_used: int | None = None
        self.schedule_end: int | None = None
        self.live_header_line = 0
        self.n_instructions = 0
        self.ranges: list[tuple[str, int, int]] = []  # live-range values without allocation
        self.placed: list[Placed] = []
        self.xla_sizes: list[tuple[int, int, int | None]] = []  # (start, end, instruction bytes)
        self.peak_step: int | None = None
        self.peak_form: str | None = None
        self.peak_values: list[dict[str, Any]] = []
        self.peak_cumulative = 0
        self.peak_unknown: str | None = None
        self.stack_trace: list[str] = []
        self.report: dict[str, int] = {}
        self.report_space: str | None = None
        self.unknown: list[str] = []
        self.seen_buffer_assignment = False
        self.seen_live_range = False

    # -- helpers -----------------------------------------------------------------------
    def error(self, line: int, message: str) -> IngestError:
        return IngestError(self.path, line, message)

    def keep_unknown(self, number: int, text: str) -> None:
        if len(self.unknown) < 100:
            self.unknown.append(f"{Path(self.path).name}:{number}: {text[:200]}")

    def instruction_bytes(self, v: _Value | None, name: str, index: str) -> int | None:
        """ByteSizeOf(defining instruction's shape, 8): the size XLA's moment rule charges."""
        if index == "{}":
            if v is not None:
                return v.size
        else:
            whole = self.values.get(name + "{}")
            if whole is not None:
                return whole.size
        facts = self.instructions.get(name)
        if facts and "shape" in facts:
            return parse_shape(facts["shape"]).bytes
        return None

    # -- the line dispatcher -----------------------------------------------------------
    def feed(self, number: int, text: str) -> tuple[Record, ...]:
        """The records one line completes (most lines complete none)."""
        if not text or text.isspace():
            return _NONE
        if text[0] != " ":
            self.top_level(number, text)
            return _NONE
        section = self.section
        if section == "live" and text.strip() == "InstructionSequence:":
            self.section = "sequence"
        elif section == "allocations":
            self.value_line(number, text)
        elif section == "used":
            self.used_line(number, text)
        elif section == "sequence":
            return self.sequence_line(number, text)
        elif section == "ranges":
            return self.range_line(number, text)
        elif section == "peak":
            self.peak_line(number, text)
        elif section == "report":
            pass  # the report's per-allocation table: the allocations section says it all
        elif section == "stack":
            if len(self.stack_trace) < 200:
                self.stack_trace.append(text)
        else:
            self.keep_unknown(number, text)
        return _NONE

    def top_level(self, number: int, text: str) -> None:
        if text.startswith("allocation "):
            m = _ALLOCATION.match(text)
            if not m:
                raise self.error(number, "expected 'allocation N: size S, kind...:'")
            if self.section != "allocations":
                raise self.error(number, "allocation line outside the BufferAssignment section")
            self.allocation_header(number, m)
        elif text.startswith("BufferAssignment:"):
            if self.seen_buffer_assignment:
                raise self.error(number, "a second BufferAssignment section: one module per dump")
            self.seen_buffer_assignment = True
            self.section = "allocations"
        elif m := _TOTAL.match(text):
            self.total_bytes_used = int(m["bytes"])
            self.section = "after_total"
        elif text.startswith("Used values:"):
            self.section = "used"
        elif text.startswith("<") and self.section == "used":
            m = _USED_HEADER.match(text)
            if not m:
                raise self.error(number, "expected a used value '<id name{index} @color>'")
            self.used_current = self.used.setdefault(int(m["id"]), _Used())
            self.used_list = None
        elif m := _LIVE_HEADER.match(text):
            if self.seen_live_range:
                raise self.error(number, "a second HloLiveRange section")
            self.seen_live_range = True
            self.schedule_end = int(m["max"])
            self.live_header_line = number
            self.section = "live"
        elif m := _REPORT_SPACE.match(text):
            self.report_space = m["space"].strip()
            self.section = "report"
        elif self.section == "report" and (m := _REPORT_TOTAL.match(text)):
            self.report[self.report_space or "default"] = int(m["bytes"])
        else:
            self.keep_unknown(number, text)

    def allocation_header(self, number: int, m: re.Match[str]) -> None:
        rest = m["rest"] or ""
        shapes = _BARS.findall(rest)
        flags_text = _BARS.sub("||", rest)
        kind = []
        alloc = _Allocation(int(m["index"]), int(m["size"]), kind, line=number)
        for part in (p.strip() for p in flags_text.split(",")):
            if not part:
                continue
            if pm := _PARAM.match(part):
                alloc.parameter = int(pm["n"])
                alloc.parameter_shape = shapes[0] if shapes else None
                si = _SHAPE_INDEX.search(part)
                alloc.parameter_index = si.group(1) if si else None
                kind.append("parameter")
            elif part.startswith("output shape is"):
                alloc.output_shape = shapes[-1] if shapes else None
                kind.append("output")
            elif part.startswith("shape ||"):
                continue  # the parameter's shape, split off by the comma inside it
            else:
                kind.append(part)
        if alloc.index in self.allocations:
            raise self.error(number, f"allocation {alloc.index} listed twice")
        self.allocations[alloc.index] = alloc
        self.current_alloc = alloc

    def value_line(self, number: int, text: str) -> None:
        m = _VALUE.match(text)
        if not m:
            if text.startswith(" value:"):
                raise self.error(number, "expected ' value: <id name{index} @color> "
                                         "(size=N,offset=M): shape'")
            self.keep_unknown(number, text)
            return
        alloc = self.current_alloc
        if alloc is None:
            raise self.error(number, "value line before any 'allocation N:' line")
        size, offset = int(m["size"]), int(m["offset"])
        if offset + size > alloc.size:
            raise self.error(number, f"value {m['name']} at offset {offset} size {size} runs past "
                                     f"allocation {alloc.index}'s {alloc.size} bytes")
        index = m["index"] or "{}"
        v = _Value(int(m["id"]), m["name"] + index, m["name"], index, bool(m["phi"]),
                   int(m["color"]) if m["color"] else None, alloc.index, offset, size,
                   m["shape"], number, self.path)
        if v.key in self.values:
            raise self.error(number, f"value {v.key} assigned twice")
        self.values[v.key] = v
        self.value_by_id[v.id] = v

    def used_line(self, number: int, text: str) -> None:
        u = self.used_current
        if u is None:
            self.keep_unknown(number, text)
            return
        if text.startswith("  ") and self.used_list is not None:  # a position or a use
            s = text.strip()
            if s != "(none)":
                self.used_list.append(s)
            return
        s = text.strip()
        if s == "positions:":
            self.used_list = u.positions
        elif s == "uses:":
            self.used_list = u.uses
        elif s.startswith("from instruction:"):
            self.used_list = None
            instruction = s[len("from instruction:"):].strip()
            name = instruction[1:].split(" ", 1)[0] if instruction.startswith("%") else None
            if name and name not in self.instructions:
                self.instructions[name] = instruction_facts(instruction)
        elif self.used_list is not None:
            if s != "(none)":
                self.used_list.append(s)
        else:
            self.keep_unknown(number, text)

    def sequence_line(self, number: int, text: str) -> tuple[Record, ...]:
        m = _SEQ.match(text)
        if not m:
            if text.strip() == "BufferLiveRange:":
                self.check_sequence_complete(number)
                self.section = "ranges"
                return _NONE
            raise self.error(number, "expected 'N:instruction' in the InstructionSequence")
        i = int(m["i"])
        if i != self.n_instructions:
            raise self.error(number, f"expected instruction {self.n_instructions}, found {i}")
        self.n_instructions += 1
        name = m["name"]
        facts = self.instructions.get(name, {})
        attrs_ = {k: v for k, v in facts.items() if k != "opcode"}
        return (NodeScheduled(timeline=self.key, step=i, node=name,
                              node_class=facts.get("opcode"), line=number, attrs=attrs_),)

    def check_sequence_complete(self, number: int) -> None:
        if self.schedule_end is not None and self.n_instructions != self.schedule_end:
            raise self.error(
                number, f"truncated live-range section: 'HloLiveRange (max {self.schedule_end})' "
                        f"promises {self.schedule_end} instructions, found {self.n_instructions}")

    def range_line(self, number: int, text: str) -> tuple[Record, ...]:
        m = _RANGE.match(text)
        if not m:
            if m := _PEAK_HEADER.match(text):
                self.peak_step = int(m["k"])
                self.section = "peak"
                return _NONE
            if "Peak memory could not be determined" in text:
                self.peak_unknown = text.strip()
                self.section = "after_peak"
                return _NONE
            raise self.error(number, "expected 'name{index}:start-end' in BufferLiveRange")
        start, end = int(m["start"]), int(m["end"])
        assert self.schedule_end is not None
        if not 0 <= start <= end <= self.schedule_end:
            raise self.error(number, f"live range {start}-{end} outside 0-{self.schedule_end}")
        return self.value_records(m["name"], m["index"], start, end, number)

    def value_records(self, name: str, index: str, start: int, end: int,
                      number: int) -> tuple[Record, ...]:
        key = name + index
        v = self.values.get(key)
        facts = self.instructions.get(name, {})
        a: dict[str, Any] = {}
        for k in ("op_type", "op_name"):
            if k in facts:
                a[k] = facts[k]
        if src := _source_of(facts):
            a["source"] = src
        xla_bytes = self.instruction_bytes(v, name, index)
        a["instruction_bytes"] = xla_bytes
        if v is None:
            self.ranges.append((key, start, end))
            a["no_allocation"] = True
            shape = parse_shape(facts["shape"]) if index == "{}" and "shape" in facts else None
            allocated = BufferAllocated(
                timeline=self.key, step=start, buffer=key, bytes=None, node=name,
                size_expr="unknown: no allocation line for this value",
                dtype=shape.dtype if shape else None, shape=shape.dims if shape else None,
                line=number, attrs=a)
        else:
            v.live = True
            allocated = self.allocated(v, start, a)
            self.placed.append(Placed(v.allocation, v.offset, v.size, start, end))
        self.xla_sizes.append((start, end, xla_bytes))
        return allocated, BufferFreed(timeline=self.key, step=end, buffer=key,
                                      reason="live range end")

    def allocated(self, v: _Value, step: int | None, a: dict[str, Any]) -> BufferAllocated:
        alloc = self.allocations[v.allocation]
        a.update(value_id=v.id, allocation_size=alloc.size, allocation_kind=alloc.kind)
        if v.phi:
            a["phi"] = True
        if v.color:
            a["color"] = v.color
        if alloc.parameter is not None:
            a["parameter"] = alloc.parameter
            a["parameter_index"] = alloc.parameter_index
        if "maybe-live-out" in alloc.kind:
            a["maybe_live_out"] = True
        used = self.used.get(v.id)
        if used is not None:
            a["positions"] = used.positions
            a["uses"] = used.uses
        shape = parse_shape(v.shape)
        return BufferAllocated(
            timeline=self.key, step=step, buffer=v.key, bytes=v.size, node=v.name,
            layout=shape.layout, dtype=shape.dtype, shape=shape.dims or shape.text,
            allocation=v.allocation, offset=v.offset, line=v.line, attrs=a)

    def peak_line(self, number: int, text: str) -> None:
        if text.lstrip().startswith("Stack trace breakdown"):
            self.section = "stack"
            self.stack_trace.append(text)
            return
        if m := _PEAK_NEW.match(text):
            self.peak_form = "new"
            self.peak_cumulative += int(m["bytes"])
            if int(m["cum"]) != self.peak_cumulative:
                raise self.error(number, f"cumulative {m['cum']} bytes, expected "
                                         f"{self.peak_cumulative} from the sizes listed above")
            self.peak_values.append({"name": m["name"] + m["index"], "bytes": int(m["bytes"])})
        elif m := _PEAK_OLD.match(text):
            self.peak_form = "old"
            self.peak_values.append({"name": m["name"], "bytes": int(m["bytes"])})
        else:
            raise self.error(number, "expected 'name{index}: N bytes' in the peak list")

    # -- the end -----------------------------------------------------------------------
    def finish(self, number: int) -> Iterator[Record]:
        if not self.seen_buffer_assignment:
            raise self.error(number, "no 'BufferAssignment:' section: expected an XLA "
                                     "buffer-assignment dump")
        if self.section == "sequence":
            self.check_sequence_complete(number)
            raise self.error(number, "truncated live-range section: no BufferLiveRange")
        if self.section == "live":
            raise self.error(number, "truncated live-range section: no InstructionSequence")
        unmatched_alloc = [v for v in self.values.values() if not v.live]
        for v in unmatched_alloc:
            facts = self.instructions.get(v.name, {})
            a: dict[str, Any] = {"no_live_range": True}
            for k in ("op_type", "op_name"):
                if k in facts:
                    a[k] = facts[k]
            yield self.allocated(v, None, a)
        yield TimelineNote(timeline=self.key, attrs=self.note(unmatched_alloc))

    def note(self, unmatched_alloc: list[_Value]) -> dict[str, Any]:
        warnings: list[str] = []
        note: dict[str, Any] = {
            "total_bytes_used": self.total_bytes_used,
            "n_allocations": len(self.allocations),
            "n_values": len(self.values),
            "schedule_end": self.schedule_end,
        }
        if self.report:
            note["memory_usage_report"] = self.report
        if self.unknown:
            note["unknown_lines"] = self.unknown
        if not self.seen_live_range:
            note["liveness"] = "unknown"
            warnings.append("no HloLiveRange section: allocations ingested, liveness unknown "
                            "(no schedule, no memory curve)")
            note["warnings"] = warnings
            return note
        if self.ranges:
            names = [k for k, _, _ in self.ranges]
            note["live_range_without_allocation"] = names
            warnings.append(f"{len(names)} values in BufferLiveRange have no allocation line "
                            f"(size unknown, not counted): {_some(names)}")
        if unmatched_alloc:
            names = [v.key for v in unmatched_alloc]
            note["allocation_without_live_range"] = names
            kinds = Counter("/".join(self.allocations[v.allocation].kind) or "temp"
                            for v in unmatched_alloc)
            by_kind = ", ".join(f"{n} {k}" for k, n in sorted(kinds.items()))
            warnings.append(f"{len(names)} allocated values have no live range ({by_kind}; "
                            f"values of called computations): liveness unknown, not counted: "
                            f"{_some(names)}")
        if self.peak_unknown:
            warnings.append(f"XLA: {self.peak_unknown}")
        curve = union_curve(self.placed, self.n_instructions)
        true_peak = first_max(curve)
        if self.peak_step is not None:
            stated_bytes = sum(p["bytes"] for p in self.peak_values)
            note["xla_peak"] = {"step": self.peak_step, "form": self.peak_form,
                                "bytes": stated_bytes, "values": self.peak_values}
            if self.stack_trace:
                note["xla_peak"]["stack_trace"] = self.stack_trace
            sizes = [(s, e, b) for s, e, b in self.xla_sizes if b is not None]
            if len(sizes) == len(self.xla_sizes):
                recomputed = xla_peak_moment(sizes)
                if recomputed != self.peak_step:
                    warnings.append(f"XLA's moment rule recomputed from the live ranges gives "
                                    f"step {recomputed}, but the dump states {self.peak_step}")
            if true_peak is not None:
                step, peak = true_peak
                at_k = curve[self.peak_step] if 0 <= self.peak_step < len(curve) else None
                if peak != at_k:
                    warnings.append(
                        f"XLA states its peak at step {self.peak_step} ({stated_bytes:,} bytes "
                        f"listed, {at_k if at_k is not None else 0:,} live by tlview's rule); "
                        f"the true maximum is {peak:,} bytes at step {step}")
        if warnings:
            note["warnings"] = warnings
        return note


def _some(names: list[str]) -> str:
    shown = ", ".join(names[:_MAX_LISTED])
    return shown + (f" and {len(names) - _MAX_LISTED} more" if len(names) > _MAX_LISTED else "")


def parse_buffer_assignment(
    files: list[tuple[str, Iterator[tuple[int, str]]]], *, name: str,
    attrs_: dict[str, Any] | None = None,
) -> Iterator[Record]:
    """Records of one module from its files' lines, in section order."""
    key = name
    yield Timeline(key=key, name=name, format=FORMAT, attrs=attrs_ or {})
    parser = _Parser(key)
    number = 0
    for path, lines in files:
        parser.path = path
        number = 0
        for number, text in lines:
            out = parser.feed(number, text)
            if out:
                yield from out
        if parser.section == "sequence":
            parser.check_sequence_complete(number)
    yield from parser.finish(number)


def parse_file(path: str, progress: ProgressFn | None = None) -> Iterator[Record]:
    """Parse ``path`` with its split-form siblings, if any: one timeline for the module."""
    files = sibling_files(path)
    module, stage = module_name(path)
    info: dict[str, Any] = {"files": [Path(f).name for f in files]}
    if stage:
        info["stage"] = stage
    return parse_buffer_assignment(
        [(f, read_lines(f, progress)) for f in files], name=module, attrs_=info)


def sniff(head: str, path: str) -> bool:
    """The single-file form starts ``BufferAssignment:``; siblings are known by name and content."""
    first = head.lstrip()
    if first.startswith("BufferAssignment:"):
        return True
    if split_part(path) is None:
        return False
    return first.startswith(("HloLiveRange (max", "Total bytes used:", "Used values:",
                             "Memory Space:"))


def _spec() -> Any:
    from .formats import FormatSpec

    return FormatSpec(
        name=FORMAT,
        description="XLA buffer assignment, *buffer-assignment.txt (one file or split)",
        sniff=sniff,
        parse=parse_file,
        group=group_path,
    )


SPEC = _spec()
