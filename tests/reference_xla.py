"""An independent reading of XLA buffer-assignment dumps, for the tests only.

Deliberately naive (whole text, regexes, brute force per step) and sharing no code
with ``tlview.ingest``: if both agree, the figures are what the dump says.
"""

from __future__ import annotations

import gzip
import re
from pathlib import Path

VALUE = re.compile(r"^ value: <\d+ ([^\s{}<>]+)(\{[\d,]*\})?(?: \(phi\))?(?: @\d+)?> "
                   r"\(size=(\d+),offset=(\d+)\)", re.M)
ALLOC = re.compile(r"^allocation (\d+): size (\d+)", re.M)
RANGE = re.compile(r"^    ([^\s{}]+)(\{[\d,]*\}):(\d+)-(\d+)$", re.M)
PEAK_AT = re.compile(r"^  Live ranges at (\d+) \(peak\):$", re.M)
PEAK_ITEM = re.compile(r"^    ([^\s:]+): (\d+) bytes", re.M)
MAX = re.compile(r"^HloLiveRange \(max (\d+)\):$", re.M)
FROM = re.compile(r"^ from instruction: %(\S+) = (\([^=]*?\)|\S+) ", re.M)


def read_text(path: Path) -> str:
    data = path.read_bytes()
    return (gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data).decode()


def module_text(path: Path) -> str:
    """One module's text: the file itself, or its split siblings in section order."""
    name = path.name
    for suffix in ("-buffer-assignment.txt", "-buffer-assignment-values.txt", "-live-range.txt"):
        if name.endswith(suffix):
            stem = name[: -len(suffix)]
            parts = []
            for s in ("-buffer-assignment.txt", "-buffer-assignment-values.txt", "-live-range.txt"):
                p = path.parent / (stem + s)
                if p.exists():
                    parts.append(read_text(p))
            return "\n".join(parts)
    return read_text(path)


def reference(path: Path) -> dict:
    text = module_text(path)
    # allocation of each value: the last allocation header before it
    headers = [(m.start(), int(m.group(1))) for m in ALLOC.finditer(text)]
    values = {}
    for m in VALUE.finditer(text):
        alloc = max(i for pos, i in headers if pos < m.start())
        values[m.group(1) + (m.group(2) or "{}")] = (alloc, int(m.group(4)), int(m.group(3)))
    live_start = text.find("HloLiveRange")
    ranges = {m.group(1) + m.group(2): (int(m.group(3)), int(m.group(4)))
              for m in RANGE.finditer(text, live_start)
              if text.rfind("BufferLiveRange", 0, m.start()) > text.rfind("InstructionSequence", 0, m.start())}
    n_steps = int(MAX.search(text).group(1))
    curve = []
    for s in range(n_steps):
        spans: dict[int, list[tuple[int, int]]] = {}
        for key, (start, end) in ranges.items():
            if start <= s <= end and key in values:
                alloc, off, size = values[key]
                spans.setdefault(alloc, []).append((off, off + size))
        total = 0
        for ivs in spans.values():  # union of byte ranges, brute force
            covered = 0
            cur_lo = cur_hi = None
            for lo, hi in sorted(ivs):
                if cur_hi is None or lo > cur_hi:
                    if cur_hi is not None:
                        covered += cur_hi - cur_lo
                    cur_lo, cur_hi = lo, hi
                else:
                    cur_hi = max(cur_hi, hi)
            if cur_hi is not None:
                covered += cur_hi - cur_lo
            total += covered
        curve.append(total)
    peak_bytes = max(curve)
    peak = PEAK_AT.search(text)
    k = int(peak.group(1))
    stated = []
    for m in PEAK_ITEM.finditer(text, peak.end()):
        if text.rfind("Stack trace", peak.end(), m.start()) >= 0:
            break
        stated.append((m.group(1), int(m.group(2))))
    # instruction shapes, for XLA's moment rule
    inst_shape = {m.group(1): m.group(2) for m in FROM.finditer(text)}
    return {
        "values": values, "ranges": ranges, "n_steps": n_steps, "curve": curve,
        "peak_step": curve.index(peak_bytes), "peak_bytes": peak_bytes,
        "stated_step": k, "stated": stated, "inst_shape": inst_shape,
    }


def instruction_size(ref: dict, key: str) -> int | None:
    """ByteSizeOf(defining instruction's shape, 8) for value ``key``."""
    name, index = key[: key.index("{")], key[key.index("{"):]
    whole = ref["values"].get(name + "{}")
    if whole is not None:
        return whole[2]
    shape = ref["inst_shape"].get(name)
    if shape is None:
        return None
    if shape.startswith("("):
        depth, n = 0, 1
        for ch in shape[1:-1]:
            depth += ch in "([{"
            depth -= ch in ")]}"
            n += ch == "," and depth == 0
        return 8 * n
    assert index == "{}"
    return None


def xla_moment(ref: dict) -> int | None:
    """HloLiveRange::ComputePeakMemoryMoment, written out again: None if a size is unknown."""
    events = []
    for key, (start, end) in ref["ranges"].items():
        size = instruction_size(ref, key)
        if size is None:
            return None
        events.append((start, 0, size))
        events.append((end + 1, 1, -size))
    usage = peak = moment = 0
    for t, _, d in sorted(events):
        usage += d
        if usage > peak:
            peak, moment = usage, t
    return moment
