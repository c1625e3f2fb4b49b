"""The ``HloLiveRange`` section of an XLA dump: the schedule, each value's life, XLA's peak.

Read in a first pass (it comes last in the dump, but every event needs its steps)::

    HloLiveRange (max 166):                    <- schedule end time: steps 0..165
      InstructionSequence:
        0:p1.4.0                               <- step: instruction
      BufferLiveRange:
        wrapped_concatenate{}:91-92            <- value name{index}: start-end, both live
      Live ranges at 158 (peak):               <- XLA's own claim
        name: N bytes                                   (old form)
        name{index}: N bytes (cumulative: M bytes)      (new form)
      Stack trace breakdown for peak usage: ...         (new form, kept as text)

Holds names and numbers only: the steps of instructions and the ranges of values.
"""

from __future__ import annotations

import re
from array import array
from collections.abc import Iterable
from typing import Any

import attrs

from .errors import IngestError

_HEADER = re.compile(r"HloLiveRange \(max (?P<max>\d+)\):\s*\Z")
_SEQ = re.compile(r"\s+(?P<i>\d+):(?P<name>\S+)\s*\Z")
_RANGE = re.compile(r"\s+(?P<name>[^\s{}]+)(?P<index>\{[\d,]*\}):(?P<start>\d+)-(?P<end>\d+)\s*\Z")
_PEAK_HEADER = re.compile(r"\s+Live ranges at (?P<k>-?\d+) \(peak\):\s*\Z")
_PEAK_NEW = re.compile(
    r"\s+(?P<name>[^\s{}]+)(?P<index>\{[\d,]*\}): (?P<bytes>\d+) bytes "
    r"\(cumulative: (?P<cum>\d+) bytes\)\s*\Z")
_PEAK_OLD = re.compile(r"\s+(?P<name>[^\s{}:]+): (?P<bytes>\d+) bytes\s*\Z")
_MAX_STACK_LINES = 200


def is_live_range_header(text: str) -> bool:
    return text.startswith("HloLiveRange (max")


@attrs.define
class LiveRanges:
    """What the section says. ``ranges``: value key -> row of ``starts``/``ends``/``lines``.

    Compact: one dict entry per value (its key and row number), its three numbers in
    ``array('q')`` columns. The buffer-assignment parser takes a value's entry out of
    ``ranges`` when it reads the value's allocation line (the row stays valid).
    """

    path: str
    header_line: int
    schedule_end: int
    sequence: list[str] = attrs.field(factory=list)
    sequence_lines: array[int] = attrs.field(factory=lambda: array("q"))
    ranges: dict[str, int] = attrs.field(factory=dict)
    starts: array[int] = attrs.field(factory=lambda: array("q"))
    ends: array[int] = attrs.field(factory=lambda: array("q"))
    lines: array[int] = attrs.field(factory=lambda: array("q"))
    peak_step: int | None = None
    peak_form: str | None = None  # "old" (name: N bytes) or "new" (name{index}: N bytes (...))
    peak_values: list[dict[str, Any]] = attrs.field(factory=list)
    stack_trace: list[str] = attrs.field(factory=list)
    peak_unknown: str | None = None  # XLA's own sentence when it could not compute a peak

    def step_of(self) -> dict[str, int]:
        return {name: i for i, name in enumerate(self.sequence)}

    def add_range(self, key: str, start: int, end: int, line: int) -> None:
        self.ranges[key] = len(self.starts)
        self.starts.append(start)
        self.ends.append(end)
        self.lines.append(line)


def read_live_ranges(path: str, lines: Iterable[tuple[int, str]]) -> LiveRanges | None:
    """Skip to ``HloLiveRange (max N):`` and parse the section; None if the file has none."""
    it = iter(lines)
    for number, text in it:
        if m := _HEADER.match(text):
            lr = LiveRanges(path, number, int(m["max"]))
            _parse(lr, it)
            return lr
    return None


def _parse(lr: LiveRanges, it: Iterable[tuple[int, str]]) -> None:
    section = "header"
    cumulative = 0
    seen: set[str] = set()
    number = lr.header_line
    for number, text in it:
        if not text.strip():
            continue
        if not text.startswith(" "):
            if is_live_range_header(text):
                raise IngestError(lr.path, number, "a second HloLiveRange section")
            break  # the section is over (whatever follows is not ours)
        if section == "header":
            if text.strip() != "InstructionSequence:":
                raise IngestError(lr.path, number, "expected '  InstructionSequence:'")
            section = "sequence"
        elif section == "sequence":
            if m := _SEQ.match(text):
                i = int(m["i"])
                if i != len(lr.sequence):
                    raise IngestError(lr.path, number,
                                      f"expected instruction {len(lr.sequence)}, found {i}")
                if m["name"] in seen:
                    raise IngestError(lr.path, number, f"instruction {m['name']} scheduled twice")
                seen.add(m["name"])
                lr.sequence.append(m["name"])
                lr.sequence_lines.append(number)
            elif text.strip() == "BufferLiveRange:":
                _check_complete(lr, number)
                section = "ranges"
            else:
                raise IngestError(lr.path, number,
                                  "expected 'N:instruction' in the InstructionSequence")
        elif section == "ranges":
            if m := _RANGE.match(text):
                start, end = int(m["start"]), int(m["end"])
                if not 0 <= start <= end <= lr.schedule_end:
                    raise IngestError(lr.path, number,
                                      f"live range {start}-{end} outside 0-{lr.schedule_end}")
                key = m["name"] + m["index"]
                if key in lr.ranges:
                    raise IngestError(lr.path, number, f"value {key} has two live ranges")
                lr.add_range(key, start, end, number)
            elif m := _PEAK_HEADER.match(text):
                lr.peak_step = int(m["k"])
                section = "peak"
            elif "Peak memory could not be determined" in text:
                lr.peak_unknown = text.strip()
                section = "after"
            else:
                raise IngestError(lr.path, number,
                                  "expected 'name{index}:start-end' in BufferLiveRange")
        elif section == "peak":
            if m := _PEAK_NEW.match(text):
                lr.peak_form = "new"
                cumulative += int(m["bytes"])
                if int(m["cum"]) != cumulative:
                    raise IngestError(lr.path, number, f"cumulative {m['cum']} bytes, expected "
                                                       f"{cumulative} from the sizes listed above")
                lr.peak_values.append({"name": m["name"] + m["index"], "bytes": int(m["bytes"])})
            elif m := _PEAK_OLD.match(text):
                lr.peak_form = "old"
                lr.peak_values.append({"name": m["name"], "bytes": int(m["bytes"])})
            elif text.lstrip().startswith("Stack trace breakdown"):
                section = "stack"
                lr.stack_trace.append(text)
            else:
                raise IngestError(lr.path, number, "expected 'name{index}: N bytes' in the peak list")
        elif section == "stack" and len(lr.stack_trace) < _MAX_STACK_LINES:
            lr.stack_trace.append(text)
    if section in ("header", "sequence"):
        _check_complete(lr, number)
        raise IngestError(lr.path, number, "truncated live-range section: no BufferLiveRange")


def _check_complete(lr: LiveRanges, number: int) -> None:
    if len(lr.sequence) != lr.schedule_end:
        raise IngestError(
            lr.path, number,
            f"truncated live-range section: 'HloLiveRange (max {lr.schedule_end})' promises "
            f"{lr.schedule_end} instructions, found {len(lr.sequence)}")
