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

Two streaming passes (never the whole file in memory): the ``HloLiveRange``
section first (``xla_live_range``: steps and ranges, names and numbers only), then
the rest, where each used value's events are emitted as soon as its entry ends.
"""

from __future__ import annotations

import json
import re
from array import array
from bisect import bisect_right
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import attrs

from . import native, xla_native
from .errors import IngestError
from .lines import ProgressFn, read_lines
from .records import (
    BufferAllocated,
    BufferFreed,
    NodeScheduled,
    Record,
    Timeline,
    TimelineNote,
)
from .xla_live_range import LiveRanges, is_live_range_header, read_live_ranges
from .xla_peaks import MomentSums, first_max, union_curve_columns
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
_PARAM = re.compile(r"parameter (?P<n>\d+)")
_BARS = re.compile(r"\|([^|]*)\|")
_SHAPE_INDEX = re.compile(r"at ShapeIndex (\{[\d,]*\})")
_METADATA_ITEM = re.compile(r'\s*(?P<key>\w+)=(?:"(?P<q>(?:[^"\\]|\\.)*)"|(?P<v>[^\s}]+))')
_KIND = re.compile(r", kind=(k\w+)")
_CALLS = re.compile(r", calls=(%[\w.\-]+)")
_REPORT_SPACE = re.compile(r"Memory Space: (?P<space>.*)\Z")
_REPORT_TOTAL = re.compile(r"Total bytes: (?P<bytes>\d+)")
_MAX_LISTED = 8  # names listed in a warning before "and N more"
_NONE: tuple[Record, ...] = ()
_JSON = json.JSONDecoder()


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


_PHI, _EMITTED, _HAS_RANGE = 1, 2, 4  # _Values.flags bits


class _Values:
    """The allocated values, one row each (row = order of the allocation lines).

    Compact on purpose (a module has hundreds of thousands of values): a dict from
    key (``name{index}``) to row, another from value id to row, and the numbers in
    ``array('q')`` columns (a Python list where a number does not fit 64 bits); shapes
    are interned. ``range_row``: the value's row in the live ranges' columns (-2: it has
    none; -1: no live-range section), taken out of the live ranges' map when the value is
    read, so that map ends up holding only the values with no allocation.
    """

    _COLUMNS = ("ids", "colors", "allocation", "offset", "size", "line", "range_row")

    def __init__(self) -> None:
        self.row_of: dict[str, int] = {}
        self._by_id: tuple[Sequence[int], Sequence[int]] | None = None  # (ids sorted, rows)
        self.keys: list[str] = []
        self.shapes: list[str] = []
        self._shape_pool: dict[str, str] = {}
        self.flags = bytearray()
        self.ids: array[int] | list[int] = array("q")
        self.colors: array[int] | list[int] = array("q")  # 0 for none (never shown)
        self.allocation: array[int] | list[int] = array("q")
        self.offset: array[int] | list[int] = array("q")
        self.size: array[int] | list[int] = array("q")
        self.line: array[int] | list[int] = array("q")
        self.range_row: array[int] | list[int] = array("q")

    def __len__(self) -> int:
        return len(self.keys)

    def __contains__(self, key: str) -> bool:
        return key in self.row_of

    def row_of_id(self, id_: int) -> int | None:
        """The row of value ``id_`` (the last one listed, if listed twice), or None.

        By binary search in the ids sorted once (values are all listed before they are
        used): no dict entry per value.
        """
        if self._by_id is None:
            ids = self.ids
            rows = sorted(range(len(ids)), key=ids.__getitem__)  # stable: equal ids by row
            try:
                self._by_id = (array("q", (ids[r] for r in rows)), array("q", rows))
            except OverflowError:
                self._by_id = ([ids[r] for r in rows], array("q", rows))
            del rows
        sorted_ids, rows_ = self._by_id
        i = bisect_right(sorted_ids, id_) - 1
        return rows_[i] if i >= 0 and sorted_ids[i] == id_ else None

    def add(self, key: str, id_: int, phi: bool, color: int, allocation: int, offset: int,
            size: int, shape: str, line: int, range_row: int) -> None:
        row = len(self.keys)
        self.row_of[key] = row
        self._by_id = None
        self.keys.append(key)
        self.shapes.append(self._shape_pool.setdefault(shape, shape))
        self.flags.append((_PHI if phi else 0) | (_HAS_RANGE if range_row >= 0 else 0))
        for name, x in zip(self._COLUMNS, (id_, color, allocation, offset, size, line, range_row),
                           strict=True):
            col = getattr(self, name)
            try:
                col.append(x)
            except OverflowError:
                setattr(self, name, [*col, x])


@attrs.define
class _Entry:
    """One "Used values" entry while it is being read."""

    id: int
    name: str
    index: str
    line: int
    positions: list[str] = attrs.field(factory=list)
    uses: list[str] = attrs.field(factory=list)
    instruction: str | None = None


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
    try:
        _, end = _JSON.raw_decode(text, start)  # backend configs are JSON: found in C
        return text[start:end]
    except ValueError:
        pass
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
    """Pass 2: the allocation and used-value sections, line by line, given the live ranges.

    Holds the allocations and their values (``_Values``: a row of numbers per value, its
    key, an interned shape) and the steps from pass 1; a used value's positions, uses and
    instruction text are held only until its entry ends, when its events are emitted.
    The peak rules' inputs are kept as columns (``placed``) and per-step sums (``moment``).
    """

    def __init__(self, key: str, live: LiveRanges | None) -> None:
        self.key = key
        self.live = live
        self.step_of = live.step_of() if live else {}
        self.path = ""
        self.section = "start"
        self.allocations: dict[int, _Allocation] = {}
        self.kind_pool: dict[tuple[str, ...], list[str]] = {}
        self.current_alloc: _Allocation | None = None
        self.values = _Values()
        self.entry: _Entry | None = None
        self.used_list: list[str] | None = None
        self.instruction_shape_of: dict[str, str | None] = {}  # where no {} value is allocated
        self.last_facts: tuple[str, dict[str, Any]] | None = None
        self.scheduled = bytearray(len(live.sequence) if live else 0)  # by step
        self.total_bytes_used: int | None = None
        # Each value with a live range, for the peak rules: (allocation, offset, size,
        # start, end) rows of tlview's rule; XLA's moment rule summed as it goes.
        self.placed: tuple[array[int] | list[int], ...] = tuple(array("q") for _ in range(5))
        self.moment = MomentSums(live.schedule_end + 2 if live else 0)
        self.moment_unknown = False  # a value whose instruction's bytes are unknown
        self.report: dict[str, int] = {}
        self.report_space: str | None = None
        self.unknown: list[str] = []
        self.seen_buffer_assignment = False

    # -- helpers -----------------------------------------------------------------------
    def error(self, line: int, message: str) -> IngestError:
        return IngestError(self.path, line, message)

    def keep_unknown(self, number: int, text: str) -> None:
        if len(self.unknown) < 100:
            self.unknown.append(f"{Path(self.path).name}:{number}: {text[:200]}")

    def instruction_bytes(self, name: str) -> int | None:
        """ByteSizeOf(defining instruction's shape, 8): the size XLA's moment rule charges."""
        row = self.values.row_of.get(name + "{}")
        if row is not None:
            return self.values.size[row]
        shape = self.instruction_shape_of.get(name)
        return parse_shape(shape).bytes if shape else None

    # -- the line dispatcher -----------------------------------------------------------
    def feed(self, number: int, text: str) -> tuple[Record, ...]:
        """The records one line completes (most lines complete none)."""
        if not text or text.isspace():
            return _NONE
        if text[0] != " ":
            return self.top_level(number, text)
        section = self.section
        if section == "allocations":
            self.value_line(number, text)
        elif section == "used":
            self.used_line(number, text)
        elif section == "report":
            pass  # the report's per-allocation table: the allocations section says it all
        else:
            self.keep_unknown(number, text)
        return _NONE

    def top_level(self, number: int, text: str) -> tuple[Record, ...]:
        out = self.end_entry() if self.entry is not None else _NONE
        if text.startswith("allocation "):
            m = _ALLOCATION.match(text)
            if not m:
                raise self.error(number, "expected 'allocation N: size S, kind...:'")
            if self.section != "allocations":
                raise self.error(number, "allocation line outside the BufferAssignment section")
            self.allocation_header(number, m)
        elif text.startswith("<") and self.section == "used":
            m = _USED_HEADER.match(text)
            if not m:
                raise self.error(number, "expected a used value '<id name{index} @color>'")
            self.entry = _Entry(int(m["id"]), m["name"], m["index"] or "{}", number)
            self.used_list = None
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
            if self.live is not None:  # a dict keeps its size when emptied: shrink it
                self.live.ranges = dict(self.live.ranges)
        elif is_live_range_header(text):
            self.section = "live"  # read in pass 1
        elif m := _REPORT_SPACE.match(text):
            self.report_space = m["space"].strip()
            self.section = "report"
        elif self.section == "report" and (m := _REPORT_TOTAL.match(text)):
            self.report[self.report_space or "default"] = int(m["bytes"])
        else:
            self.keep_unknown(number, text)
        return out

    def allocation_header(self, number: int, m: re.Match[str]) -> None:
        rest = m["rest"] or ""
        shapes = _BARS.findall(rest)
        flags_text = _BARS.sub("||", rest)
        kind: list[str] = []
        alloc = _Allocation(int(m["index"]), int(m["size"]), kind, line=number)
        for part in (p.strip() for p in flags_text.split(",")):
            if not part:
                continue
            if pm := _PARAM.match(part):
                alloc.parameter = int(pm["n"])
                alloc.parameter_shape = shapes[0] if shapes else None
                si = _SHAPE_INDEX.search(flags_text)
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
        alloc.kind = self.kind_pool.setdefault(tuple(kind), kind)  # one list per distinct kind
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
        key = m["name"] + (m["index"] or "{}")
        if key in self.values:
            raise self.error(number, f"value {key} assigned twice")
        # The value's live range moves to its row now: the map keeps only the unallocated.
        lr = self.live.ranges.pop(key, -2) if self.live is not None else -1
        self.values.add(key, int(m["id"]), bool(m["phi"]), int(m["color"]) if m["color"] else 0,
                        alloc.index, offset, size, m["shape"], number, lr)

    def used_line(self, number: int, text: str) -> None:
        e = self.entry
        if e is None:
            self.keep_unknown(number, text)
            return
        if text.startswith("  ") and self.used_list is not None:  # a position or a use
            s = text.strip()
            if s != "(none)":
                self.used_list.append(s)
            return
        s = text.strip()
        if s == "positions:":
            self.used_list = e.positions
        elif s == "uses:":
            self.used_list = e.uses
        elif s.startswith("from instruction:"):
            self.used_list = None
            e.instruction = s[len("from instruction:"):].strip()
        else:
            self.keep_unknown(number, text)

    # -- emitting ----------------------------------------------------------------------
    def end_entry(self) -> tuple[Record, ...]:
        """A used value's entry is complete: its node (first time) and its buffer events."""
        e = self.entry
        assert e is not None
        self.entry = None
        self.used_list = None
        out: list[Record] = []
        facts: dict[str, Any] = {}
        if e.instruction is not None:
            if self.last_facts is not None and self.last_facts[0] == e.instruction:
                facts = self.last_facts[1]  # the next element of the same tuple
            else:
                facts = instruction_facts(e.instruction)
                self.last_facts = (e.instruction, facts)
            if e.name + "{}" not in self.values and e.name not in self.instruction_shape_of:
                self.instruction_shape_of[e.name] = facts.get("shape")  # a tuple not allocated
            step = self.step_of.get(e.name)
            if step is not None and not self.scheduled[step]:
                out.append(self.scheduled_node(e.name, step, facts))
        row = self.values.row_of_id(e.id)
        if row is None:
            self.keep_unknown(e.line, f"used value <{e.id} {e.name}{e.index}> is in no allocation")
            return tuple(out)
        out.extend(self.value_events(row, facts, e))
        return tuple(out)

    def scheduled_node(self, name: str, step: int, facts: dict[str, Any]) -> NodeScheduled:
        self.scheduled[step] = 1
        a = {k: v for k, v in facts.items() if k != "opcode"}
        assert self.live is not None
        return NodeScheduled(timeline=self.key, step=step, node=name,
                             node_class=facts.get("opcode"),
                             line=self.live.sequence_lines[step], attrs=a)

    def value_events(self, row: int, facts: dict[str, Any],
                     e: _Entry | None) -> tuple[Record, ...]:
        vs = self.values
        key = vs.keys[row]
        a: dict[str, Any] = _provenance(facts)
        if e is not None:
            if len(e.positions) > 1:  # one position is the value's own instruction: not kept
                a["positions"] = e.positions
            a["uses"] = e.uses
        r = None
        lr = vs.range_row[row]
        if self.live is not None and lr >= 0:
            r = (self.live.starts[lr], self.live.ends[lr])
        vs.flags[row] |= _EMITTED
        if r is None:
            if self.live is not None:
                a["no_live_range"] = True
            return (self.allocated(row, None, a),)
        start, end = r
        a["instruction_bytes"] = ib = self.instruction_bytes(key[: key.index("{")])
        self.place(row, start, end, ib)
        return (self.allocated(row, start, a),
                BufferFreed(timeline=self.key, step=end, buffer=key, reason="live range end"))

    def place(self, row: int, start: int, end: int, ib: int | None) -> None:
        """Count a value with a live range in both peak rules."""
        vs = self.values
        if row >= 0:
            cols = self.placed
            for i, x in enumerate((vs.allocation[row], vs.offset[row], vs.size[row], start, end)):
                try:
                    cols[i].append(x)
                except OverflowError:
                    self.placed = cols = (*cols[:i], [*cols[i], x], *cols[i + 1:])
        if ib is None:
            self.moment_unknown = True
        elif not self.moment_unknown:
            self.moment.add(start, end, ib)

    def allocated(self, row: int, step: int | None, a: dict[str, Any]) -> BufferAllocated:
        vs = self.values
        key = vs.keys[row]
        allocation = vs.allocation[row]
        alloc = self.allocations[allocation]
        a.update(value_id=vs.ids[row], allocation_size=alloc.size,
                 allocation_kind=", ".join(alloc.kind))
        if vs.flags[row] & _PHI:
            a["phi"] = True
        if color := vs.colors[row]:
            a["color"] = color
        if alloc.parameter is not None:
            a["parameter"] = alloc.parameter
            a["parameter_shape"] = alloc.parameter_shape
            a["parameter_index"] = alloc.parameter_index
        if alloc.output_shape is not None:
            a["output_shape"] = alloc.output_shape
        if "maybe-live-out" in alloc.kind:
            a["maybe_live_out"] = True
        shape = parse_shape(vs.shapes[row])
        return BufferAllocated(
            timeline=self.key, step=step, buffer=key, bytes=vs.size[row],
            node=key[: key.index("{")], layout=shape.layout, dtype=shape.dtype,
            shape=shape.dims or shape.text, allocation=allocation, offset=vs.offset[row],
            line=vs.line[row], attrs=a)

    # -- the end -----------------------------------------------------------------------
    def finish(self, number: int) -> Iterator[Record]:
        if self.entry is not None:
            yield from self.end_entry()
        if not self.seen_buffer_assignment:
            part = split_part(self.path)
            where = (f" (its sibling {Path(part[0]).name}{SPLIT_SUFFIXES[0]} is missing)"
                     if part else "")
            raise self.error(number, "no 'BufferAssignment:' section: expected an XLA "
                                     f"buffer-assignment dump{where}")
        flags = self.values.flags
        for row in range(len(self.values)):  # allocated values "Used values" did not list
            if not flags[row] & _EMITTED:
                yield from self.value_events(row, {}, None)
        without_allocation: list[str] = []
        live = self.live
        if live is not None:
            for step, name in enumerate(live.sequence):  # instructions defining no used value
                if not self.scheduled[step]:
                    yield self.scheduled_node(name, step, {})
            # Every allocated value's range was taken out: these have no allocation.
            for key, lr in live.ranges.items():
                if key not in self.values:
                    without_allocation.append(key)
                    yield from self.unallocated_events(key, live.starts[lr], live.ends[lr],
                                                       live.lines[lr])
        yield TimelineNote(timeline=self.key, attrs=self.note(without_allocation))

    def unallocated_events(self, key: str, start: int, end: int,
                           line: int) -> tuple[Record, ...]:
        """A value in BufferLiveRange with no allocation line: reported, size unknown."""
        name = key[: key.index("{")]
        ib = self.instruction_bytes(name)
        self.place(-1, start, end, ib)
        a = {"no_allocation": True, "instruction_bytes": ib}
        return (
            BufferAllocated(timeline=self.key, step=start, buffer=key, bytes=None, node=name,
                            size_expr="unknown: no allocation line for this value",
                            line=line, attrs=a),
            BufferFreed(timeline=self.key, step=end, buffer=key, reason="live range end"),
        )

    def note(self, without_allocation: list[str]) -> dict[str, Any]:
        warnings: list[str] = []
        note: dict[str, Any] = {
            "total_bytes_used": self.total_bytes_used,
            "n_allocations": len(self.allocations),
            "n_values": len(self.values),
        }
        if self.report:
            note["memory_usage_report"] = self.report
        if self.unknown:
            note["unknown_lines"] = self.unknown
        live = self.live
        if live is None:
            note["liveness"] = "unknown"
            warnings.append("no HloLiveRange section: allocations ingested, liveness unknown "
                            "(no schedule, no memory curve)")
            note["warnings"] = warnings
            return note
        note["schedule_end"] = live.schedule_end
        if without_allocation:
            note["live_range_without_allocation"] = without_allocation
            warnings.append(f"{len(without_allocation)} values in BufferLiveRange have no "
                            f"allocation line (size unknown, not counted): "
                            f"{_some(without_allocation)}")
        vs = self.values
        no_range = [row for row in range(len(vs)) if not vs.flags[row] & _HAS_RANGE]
        if no_range:
            names = [vs.keys[row] for row in no_range]
            note["allocation_without_live_range"] = names
            kinds = Counter("/".join(self.allocations[vs.allocation[row]].kind) or "temp"
                            for row in no_range)
            by_kind = ", ".join(f"{n} {k}" for k, n in sorted(kinds.items()))
            warnings.append(f"{len(names)} allocated values have no live range ({by_kind}; "
                            f"values of called computations): liveness unknown, not counted: "
                            f"{_some(names)}")
        if live.peak_unknown:
            warnings.append(f"XLA: {live.peak_unknown}")
        if live.peak_step is not None:
            warnings.extend(self.peak_warnings(live, note))
        if warnings:
            note["warnings"] = warnings
        return note

    def peak_warnings(self, live: LiveRanges, note: dict[str, Any]) -> list[str]:
        """XLA's claim kept in the note; plain words where it is not the true maximum."""
        assert live.peak_step is not None
        out = []
        stated_bytes = sum(p["bytes"] for p in live.peak_values)
        note["xla_peak"] = {"step": live.peak_step, "form": live.peak_form,
                            "bytes": stated_bytes, "values": live.peak_values}
        if live.stack_trace:
            note["xla_peak"]["stack_trace"] = live.stack_trace
        if not self.moment_unknown:
            recomputed = self.moment.moment()
            if recomputed != live.peak_step:
                out.append(f"XLA's moment rule recomputed from the live ranges gives step "
                           f"{recomputed}, but the dump states {live.peak_step}")
        curve = union_curve_columns(*self.placed, n_steps=len(live.sequence))
        true_peak = first_max(curve)
        if true_peak is not None:
            step, peak = true_peak
            at_k = curve[live.peak_step] if 0 <= live.peak_step < len(curve) else 0
            if peak != at_k:
                out.append(f"XLA states its peak at step {live.peak_step} ({stated_bytes:,} bytes "
                           f"listed, {at_k:,} live by tlview's rule); the true maximum is "
                           f"{peak:,} bytes at step {step}")
        return out


def _provenance(facts: dict[str, Any]) -> dict[str, Any]:
    """The framework op a value came from, for a person reading the buffer list."""
    a: dict[str, Any] = {k: facts[k] for k in ("op_type", "op_name") if k in facts}
    if src := _source_of(facts):
        a["source"] = src
    return a


def _some(names: list[str]) -> str:
    shown = ", ".join(names[:_MAX_LISTED])
    return shown + (f" and {len(names) - _MAX_LISTED} more" if len(names) > _MAX_LISTED else "")


def parse_buffer_assignment(
    paths: list[str], *, name: str, attrs_: dict[str, Any] | None = None,
    progress: ProgressFn | None = None,
    open_lines: Callable[[str, ProgressFn | None], Iterable[tuple[int, str]]] = read_lines,
) -> Iterator[Record]:
    """Records of one module from its files (in section order), in two streaming passes.

    Pass 1 reads the HloLiveRange section (it gives every event its step); pass 2 reads
    everything else and emits each used value's events as soon as its entry ends.
    """
    live = None
    # The split form's -live-range.txt first: then pass 1 reads no other file.
    for path in sorted(paths, key=lambda p: not _is_live_range_file(p)):
        live = read_live_ranges(path, open_lines(path, None))
        if live is not None:
            break
    yield Timeline(key=name, name=name, format=FORMAT, attrs=attrs_ or {})
    parser = _Parser(name, live)
    number = 0
    for path in paths:
        parser.path = path
        for number, text in open_lines(path, progress):
            out = parser.feed(number, text)
            if out:
                yield from out
            if parser.section == "live":
                break  # pass 1 read the live-range section
    yield from parser.finish(number)


def _is_live_range_file(path: str) -> bool:
    part = split_part(path)
    return part is not None and part[1] == "-live-range.txt"


def parse_file(path: str, progress: ProgressFn | None = None) -> Iterator[Record]:
    """Parse ``path`` with its split-form siblings, if any: one timeline for the module."""
    files = sibling_files(path)
    module, stage = module_name(path)
    info: dict[str, Any] = {"files": [Path(f).name for f in files]}
    if stage:
        info["stage"] = stage
    return _parse_fastest(files, name=module, attrs_=info, progress=progress)


def _parse_fastest(paths: list[str], *, name: str, attrs_: dict[str, Any],
                   progress: ProgressFn | None) -> Iterator[Record]:
    """``parse_buffer_assignment``'s records; where the compiled core is built (and
    ``TLVIEW_NATIVE`` is not 0) its twin reads the dump (``xla_native``: the same records,
    events in columns), unless the dump is one only the Python parser reads right."""
    core = native.module()
    live_first = sorted(range(len(paths)), key=lambda i: not _is_live_range_file(paths[i]))
    compiled = xla_native.plain(core, paths, live_first) if core is not None else None
    if compiled is None:
        yield from parse_buffer_assignment(paths, name=name, attrs_=attrs_, progress=progress)
        return
    yield from xla_native.records(compiled, paths, name=name, attrs_=attrs_, progress=progress)


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
    from .format_spec import FormatSpec

    return FormatSpec(
        name=FORMAT,
        description="XLA buffer assignment, *buffer-assignment.txt (one file or split)",
        sniff=sniff,
        parse=parse_file,
        group=group_path,
        compiled=True,
    )


SPEC = _spec()
