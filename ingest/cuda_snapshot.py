"""CUDA caching-allocator snapshots (``torch.cuda.memory._dump_snapshot``) to measured timelines.

The file is the pickle of ``torch.cuda.memory._snapshot()``: a dict with ``segments`` (the
allocator's state when it was taken: every cudaMalloc'd segment and its blocks),
``device_traces`` (per device, the last ``max_entries`` actions the allocator took, oldest
first, when ``_record_memory_history`` was on), ``allocator_settings`` and
``external_annotations``. It is read by ``pickle_stream`` (opcodes, never executed, trace
entries streamed one at a time, frames interned), so a snapshot of any size is read in
flat memory and a pickle that would run code is refused.

One timeline per device (format ``cuda_snapshot``, key ``cuda:N``):

- every trace entry is an ``allocator_action`` event: ``step`` = its index in the device's
  trace, ``op`` = the action, address, ``bytes`` = the entry's size, stream, ``ts_ns`` =
  ``time_us`` x 1000, ``stack_id`` = its frames; ``attrs`` keeps ``device_free`` (oom),
  ``compile_context``, ``user_metadata`` and any key this reader does not know;
- the final state: ``allocator_segment`` events (address, total size, stream, and in attrs
  segment_type, segment_pool_id, allocated/active/requested sizes, is_expandable) and
  ``allocator_block`` events (address, state as ``op``, ``bytes`` = requested size,
  ``block_bytes`` = size), emitted after the trace;
- ``external_annotations`` as ``allocator_annotation`` events; ``allocator_settings`` and
  the reconstruction below in the timeline's note.

Frames are interned per source: ``frames`` (filename, line, name; FX fields in attrs) and
``stacks`` (frame ids, innermost first, as torch lists them).

**The window and its start.** The trace is relative to the end state: it is a ring buffer
holding the last ``max_entries`` actions, so the blocks alive when it begins are not in it.
They are inferred: a ``free_completed`` of an address with no ``alloc`` before it in the
trace freed a block made before the window (its ``correlation`` is NULL), and an active
block of the end state that no trace ``alloc`` made was alive through the whole window.
Frees are paired with their allocs by address (``correlation`` = the alloc's step). What
cannot happen in a consistent trace is counted, never summed silently, and listed in the
note (``consistent: false``): an alloc at an address already allocated in the window, a
second free of an address without an alloc between, a free whose size differs from its
alloc's, an alloc still live at the end that the end state does not hold (or holds with
another size), time going backwards. The note also says how many blocks came from before
the window (the ring buffer wrapped, or recording began after they were made).

**Block sizes.** The trace records requested sizes; the allocator hands out whole blocks
and its statistics (``max_memory_allocated``) count those. ``block_bytes`` of an alloc
replays the allocator's rule (c10/cuda/CUDACachingAllocator.cpp, default settings): the
request is rounded up to a multiple of 512 (at least 512), and the free block it is carved
from (from its address to the next live block or the segment's end) is split only if the
remainder is at least 512 bytes (small pool: rounded size <= 1 MiB) or more than 1 MiB
(large pool); otherwise the whole free block is handed out. The replay starts from the end
state's blocks and segments, drops an end block as soon as the trace shows its space free
before it was made (a segment_alloc or alloc covering it), and counts as estimated (the
rounded size) any alloc outside every known segment, any free of a block it did not see
allocated, and every alloc when the allocator ran with expandable segments or non-default
rounding. On the real fixtures the replayed block peak equals ``max_memory_allocated()``.
"""

from __future__ import annotations

import bisect
import gzip
import json
import os
import re
import zlib
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from . import native
from .errors import IngestError
from .lines import ProgressFn
from .pickle_stream import STREAMED, TOP, PickleStream
from .records import (
    AllocatorAction,
    AllocatorAnnotation,
    AllocatorBlock,
    AllocatorSegment,
    EventColumns,
    FrameInterned,
    Record,
    StackInterned,
    Timeline,
    TimelineNote,
)

FORMAT = "cuda_snapshot"
MIN_BLOCK = 512  # kMinBlockSize
SMALL_SIZE = 1 << 20  # kSmallSize: requests up to this come from the small pool
MAX_EXAMPLES = 20  # inconsistencies described in the note (all are counted)

_ENTRY_KEYS = ("action", "addr", "size", "stream", "time_us", "frames")
_FRAME_KEYS = ("filename", "line", "name")
_SEGMENT_COLUMNS = ("address", "total_size", "stream", "frames", "blocks", "device")
_BLOCK_KNOWN = ("address", "size", "requested_size", "state", "frames", "history")
_ACTIVE = ("active_allocated", "active_pending_free")
_FREE_ACTIONS = ("free_requested", "free_completed")


def round_size(size: int) -> int:
    """The allocator's rounding of a request (default settings): 512-byte multiples (a
    size too close to 2**63 to round is its own block)."""
    if size < MIN_BLOCK:
        return MIN_BLOCK
    if size > _INT64_MAX - MIN_BLOCK + 1:
        return size
    return (size + MIN_BLOCK - 1) // MIN_BLOCK * MIN_BLOCK


class Frame:
    """The memo's stand-in for a frame dict already interned."""

    __slots__ = ("frame_id",)

    def __init__(self, frame_id: int) -> None:
        self.frame_id = frame_id

    def __repr__(self) -> str:  # its text where a reader writes an object as text
        return f"Frame({self.frame_id})"


class InternedStack:
    """The memo's stand-in for a frames list already interned (None: no frames)."""

    __slots__ = ("stack_id",)

    def __init__(self, stack_id: int | None) -> None:
        self.stack_id = stack_id

    def __repr__(self) -> str:  # (not its address: two runs would differ)
        return f"InternedStack({self.stack_id})"


class Interner:
    """Frames and stacks of one source, numbered from 1 in order of first use."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.frames: dict[tuple[Any, ...], int] = {}
        self.stacks: dict[tuple[int, ...], int] = {}
        self.pending: list[Record] = []
        # One stand-in object per distinct frame and stack: the memo holds pointers only.
        self._frame_objs: dict[int, Frame] = {}
        self._stack_objs: dict[int | None, InternedStack] = {}

    def frame(self, f: Any) -> int:
        if type(f) is Frame:
            return f.frame_id
        if type(f) is not dict:
            raise IngestError(self.path, None, f"a frame that is a {type(f).__name__}, "
                              "expected a dict with filename, line and name")
        extra = {_key(k): _plain(v) for k, v in f.items() if k not in _FRAME_KEYS}
        key = (_canonical(_plain(f.get("filename"))), _canonical(_plain(f.get("line"))),
               _canonical(_plain(f.get("name"))), _canonical(extra) if extra else None)
        fid = self.frames.get(key)
        if fid is None:
            fid = self.frames[key] = len(self.frames) + 1
            self.pending.append(frame_record(fid, f))
        return fid

    def stack(self, frames: Any) -> int | None:
        """The stack id of a frames value (a list of frames, or an interned stand-in)."""
        if frames is None:
            return None
        if type(frames) is InternedStack:
            return frames.stack_id
        if type(frames) is not list:
            raise IngestError(self.path, None, f"frames that are a {type(frames).__name__}, "
                              "expected a list of frames")
        if not frames:
            return None
        key = tuple(self.frame(f) for f in frames)
        sid = self.stacks.get(key)
        if sid is None:
            sid = self.stacks[key] = len(self.stacks) + 1
            self.pending.append(StackInterned(stack_id=sid, frame_ids=key))
        return sid

    def compact(self, value: Any) -> Any:
        """What the pickle memo keeps of a container once its item was handed over."""
        if type(value) is dict:
            if "filename" in value and "line" in value and "name" in value:
                fid = self.frame(value)
                obj = self._frame_objs.get(fid)
                if obj is None:
                    obj = self._frame_objs[fid] = Frame(fid)
                return obj
            return STREAMED
        if type(value) is list:
            if all(type(f) is Frame or (type(f) is dict and "filename" in f) for f in value):
                sid = self.stack(value)
                st = self._stack_objs.get(sid)
                if st is None:
                    st = self._stack_objs[sid] = InternedStack(sid)
                return st
            return STREAMED
        return STREAMED

    def take(self) -> list[Record]:
        out, self.pending = self.pending, []
        return out


class _Block:
    __slots__ = ("address", "size", "requested", "state", "stack_id", "stream", "attrs",
                 "alloc_step")

    def __init__(self, address: int, size: int, requested: int | None, state: str,
                 stack_id: int | None, stream: int | None, attrs: dict[str, Any]) -> None:
        self.address = address
        self.size = size
        self.requested = requested
        self.state = state
        self.stack_id = stack_id
        self.stream = stream
        self.attrs = attrs
        self.alloc_step: int | None = None


class _Segment:
    __slots__ = ("address", "size", "stream", "stack_id", "attrs", "blocks")

    def __init__(self, address: int, size: int, stream: int | None, stack_id: int | None,
                 attrs: dict[str, Any], blocks: list[_Block]) -> None:
        self.address = address
        self.size = size
        self.stream = stream
        self.stack_id = stack_id
        self.attrs = attrs
        self.blocks = blocks


class _Device:
    """One device's trace while it streams by: pairing, the block-size replay, checks."""

    def __init__(self, parser: _Parser, index: int) -> None:
        self.parser = parser
        self.index = index
        self.key = f"cuda:{index}"
        self.declared = False
        self.step = 0
        self.actions: Counter[str] = Counter()
        self.segments: list[_Segment] = []
        self.end_blocks: dict[int, _Block] = {}  # active blocks of the end state
        # Allocations made in the window and not yet freed: address -> [step, size, block].
        self.live: dict[int, list[int]] = {}
        self.freed_before: set[int] = set()  # pre-window addresses already freed
        self.before_freed = [0, 0]  # blocks, bytes made before the window and freed in it
        self.problems: Counter[str] = Counter()
        self.examples: list[str] = []
        self.estimated = 0
        self.last_time: int | None = None
        self.exact_rule = True  # default rounding, no expandable segments
        # The replay: live block starts (sorted) with their sizes, end blocks not yet
        # proven made later (tentative), and the segments known to exist.
        self.starts: list[int] = []
        self.block_size: dict[int, int] = {}
        self.tentative: set[int] = set()
        self.seg_starts: list[int] = []
        self.seg_size: dict[int, int] = {}
        self.seg_made: dict[int, int] = {}  # address -> step of its segment_alloc/map

    # -- the end state (read first: segments come before the traces) -------------------
    def add_segment(self, seg: _Segment) -> None:
        self.segments.append(seg)
        self._seg_add(seg.address, seg.size)
        if seg.attrs.get("is_expandable"):
            self.exact_rule = False
        for b in seg.blocks:
            if b.state in _ACTIVE:
                self.end_blocks[b.address] = b
                self._live_add(b.address, b.size)
                self.tentative.add(b.address)

    def _seg_add(self, address: int, size: int) -> None:
        if address not in self.seg_size:
            bisect.insort(self.seg_starts, address)
        self.seg_size[address] = size

    def _seg_remove(self, address: int) -> None:
        if self.seg_size.pop(address, None) is not None:
            del self.seg_starts[bisect.bisect_left(self.seg_starts, address)]

    def _live_add(self, address: int, size: int) -> None:
        if address not in self.block_size:
            bisect.insort(self.starts, address)
        self.block_size[address] = size

    def _live_remove(self, address: int) -> int | None:
        size = self.block_size.pop(address, None)
        if size is not None:
            del self.starts[bisect.bisect_left(self.starts, address)]
            self.tentative.discard(address)
        return size

    def _drop_tentative(self, lo: int, hi: int) -> None:
        """End blocks inside [lo, hi) cannot have been live: the space was just free."""
        i = bisect.bisect_left(self.starts, lo)
        while i < len(self.starts) and self.starts[i] < hi:
            a = self.starts[i]
            if a in self.tentative:
                self._live_remove(a)
            else:
                i += 1

    def _segment_end(self, address: int) -> int | None:
        i = bisect.bisect_right(self.seg_starts, address) - 1
        if i >= 0:
            s = self.seg_starts[i]
            if address < s + self.seg_size[s]:
                return s + self.seg_size[s]
        return None

    def _block_bytes(self, address: int, size: int) -> int:
        """The whole block the allocator hands out for ``size`` bytes at ``address``."""
        rounded = round_size(size)
        self._drop_tentative(address, address + rounded)
        seg_end = self._segment_end(address)
        if seg_end is None or not self.exact_rule:
            self.estimated += 1
            return rounded
        i = bisect.bisect_right(self.starts, address)
        nxt = self.starts[i] if i < len(self.starts) and self.starts[i] < seg_end else seg_end
        remaining = nxt - address - rounded
        split = remaining >= MIN_BLOCK if rounded <= SMALL_SIZE else remaining > SMALL_SIZE
        if split or nxt - address > _INT64_MAX:
            return rounded
        return nxt - address

    # -- the trace ----------------------------------------------------------------------
    def problem(self, kind: str, text: str) -> None:
        self.problems[kind] += 1
        if len(self.examples) < MAX_EXAMPLES:
            self.examples.append(f"step {self.step}: {text}")

    def entry(self, e: Any) -> AllocatorAction:
        parser = self.parser
        if type(e) is not dict:
            raise IngestError(parser.path, None, f"trace entry {self.step} of {self.key} is a "
                              f"{type(e).__name__}, expected a dict with an action")
        action = e.get("action")
        if type(action) is not str:
            raise IngestError(parser.path, None, f"trace entry {self.step} of {self.key} has "
                              f"no action (its keys: {_keys(e)})")
        addr = _int_or_none(e.get("addr"))
        size = _int_or_none(e.get("size"))
        time_us = _time_or_none(e.get("time_us"))
        attrs = {_key(k): _plain(v) for k, v in e.items() if k not in _ENTRY_KEYS}
        for k in ("addr", "size", "stream", "time_us"):
            v = e.get(k)
            if v is not None and (_time_or_none(v) if k == "time_us" else _int_or_none(v)) \
                    is None:
                attrs[k] = _plain(v)  # kept as the dump said it, the column stays NULL
        action = _clean(action)
        step = self.step
        self.actions[action] += 1
        ts_ns = None
        if time_us is not None:
            ts_ns = time_us * 1000
            if self.last_time is not None and time_us < self.last_time:
                self.problem("time_goes_back", f"time_us {time_us} < {self.last_time} "
                             "(a ring buffer not in order?)")
            self.last_time = time_us
        block = None
        corr = None
        if addr is not None and size is not None:
            if action == "alloc":
                if addr in self.live:
                    self.problem("alloc_of_live_address",
                                 f"alloc at {_hex(addr)} still allocated since step "
                                 f"{self.live[addr][0]}")
                    self._live_remove(addr)
                self.freed_before.discard(addr)
                block = self._block_bytes(addr, size)
                self._live_add(addr, block)
                self.live[addr] = [step, size, block]
            elif action in _FREE_ACTIONS:
                made = self.live.get(addr)
                if made is not None:
                    corr, block = made[0], made[2]
                    if made[1] != size:
                        self.problem("free_size_differs", f"{action} of {_hex(addr)} with "
                                     f"{size} bytes, allocated with {made[1]} at step {made[0]}")
                elif addr in self.freed_before and action == "free_completed":
                    self.problem("double_free", f"free_completed of {_hex(addr)} again "
                                 "without an alloc between")
                if action == "free_completed":
                    if made is not None:
                        del self.live[addr]
                        self._live_remove(addr)
                    else:
                        self.before_freed[0] += 1
                        self.before_freed[1] += size
                        self.freed_before.add(addr)
                        self._live_remove(addr)  # whatever the replay held there is free now
                        self.estimated += 1  # its block was never seen: the rounded size
                        block = round_size(size)
            elif action in ("segment_alloc", "segment_map"):
                if action == "segment_map":
                    self.exact_rule = False
                self._drop_tentative(addr, addr + size)
                self._seg_add(addr, size)
                self.seg_made[addr] = step
            elif action in ("segment_free", "segment_unmap"):
                self._seg_remove(addr)
                corr = self.seg_made.pop(addr, None)
        stack_id = parser.interner.stack(e.get("frames"))
        self.step += 1
        stream = _int_or_none(e.get("stream"))
        return AllocatorAction(
            timeline=self.key, step=step, op=action, address=addr, bytes=size,
            block_bytes=block, stream=stream, ts_ns=ts_ns, stack_id=stack_id,
            correlation=corr, device=self.key, attrs=attrs)

    # -- after the trace: the end state, checked against it ------------------------------
    def finish(self) -> Iterator[Record]:
        for addr, (step, size, _block) in self.live.items():
            b = self.end_blocks.get(addr)
            if b is None:
                self.problem("live_not_in_end_state", f"alloc at step {step} ({_hex(addr)}, "
                             f"{size} bytes) never freed, but no active block there at the end")
            elif b.requested is not None and b.requested != size:
                self.problem("end_size_differs", f"alloc at step {step} ({_hex(addr)}) of "
                             f"{size} bytes, the end state's block requested {b.requested}")
            else:
                b.alloc_step = step
        for seg in self.segments:
            yield AllocatorSegment(timeline=self.key, address=seg.address, bytes=seg.size,
                                   stream=seg.stream, stack_id=seg.stack_id,
                                   correlation=self.seg_made.get(seg.address),
                                   device=self.key, attrs=seg.attrs)
            for b in seg.blocks:
                yield AllocatorBlock(
                    timeline=self.key, address=b.address, op=b.state, bytes=b.requested,
                    block_bytes=b.size, stream=seg.stream, stack_id=b.stack_id,
                    correlation=b.alloc_step if b.state in _ACTIVE else None,
                    device=self.key, attrs=b.attrs)

    def note(self, settings: Any, extra: dict[str, Any]) -> TimelineNote:
        active = [b for b in self.end_blocks.values()]
        through = [b for b in active if b.alloc_step is None]
        warnings = []
        consistent = not self.problems
        if not consistent:
            warnings.append(
                f"the trace does not match its allocations ({dict(self.problems)}): its "
                "curve is not a sum to trust; see timeline_notes attrs.inconsistencies")
        if self.before_freed[0]:
            warnings.append(
                f"{self.before_freed[0]} blocks ({self.before_freed[1]:,} B) were allocated "
                "before the first recorded event and freed inside the window: the ring "
                "buffer wrapped (max_entries) or recording began after they were made; "
                "the state at the start is inferred from the end state")
        attrs: dict[str, Any] = {
            "device": self.key, "events": self.step, "actions": dict(self.actions),
            "segments": len(self.segments), "end_active_blocks": len(active),
            "before_window": {
                "freed_in_window": {"blocks": self.before_freed[0],
                                    "bytes": self.before_freed[1]},
                "alive_throughout": {"blocks": len(through),
                                     "bytes": sum(b.requested or 0 for b in through)},
            },
            "consistent": consistent,
            "block_bytes_estimated": self.estimated,
            "block_rule": "default" if self.exact_rule else "estimated",
        }
        if self.problems:
            attrs["inconsistencies"] = dict(self.problems)
            attrs["inconsistency_examples"] = self.examples
        if settings is not None:
            attrs["allocator_settings"] = settings
        attrs.update(extra)
        if warnings:
            attrs["warnings"] = warnings
        return TimelineNote(timeline=self.key, attrs=attrs)


class _Parser:
    def __init__(self, path: str) -> None:
        self.path = path
        self.name = Path(path).name
        self.interner = Interner(path)
        self.devices: dict[int, _Device] = {}
        self.layout = "frames"

    def device(self, index: Any) -> _Device:
        if type(index) is not int or index < 0:
            what = f"device {index}" if type(index) is int else \
                f"a device that is a {type(index).__name__}"
            raise IngestError(self.path, None, f"{what}: expected a device index (an int >= 0)")
        d = self.devices.get(index)
        if d is None:
            d = self.devices[index] = _Device(self, index)
        return d

    def declare(self, d: _Device) -> Iterator[Record]:
        if not d.declared:
            d.declared = True
            yield Timeline(key=d.key, name=f"{self.name} {d.key}", format=FORMAT,
                           device=d.key, attrs={"device_index": d.index})

    def segment(self, s: Any, device_hint: int | None) -> None:
        if type(s) is not dict:
            raise IngestError(self.path, None, f"a segment that is a {type(s).__name__}, "
                              "expected a dict")
        address = _int_or_none(s.get("address"))
        size = _int_or_none(s.get("total_size"))
        if address is None or size is None:
            raise IngestError(self.path, None, "a segment without address and total_size "
                              f"(its keys: {_keys(s)})")
        device = s.get("device", device_hint if device_hint is not None else 0)
        stream = _int_or_none(s.get("stream"))
        attrs = {_key(k): _plain(v) for k, v in s.items() if k not in _SEGMENT_COLUMNS}
        blocks = []
        at = address
        raw_blocks = s.get("blocks") or []
        if type(raw_blocks) is not list:
            raise IngestError(self.path, None, "segment blocks that are not a list")
        for b in raw_blocks:
            if type(b) is not dict or _int_or_none(b.get("size")) is None:
                raise IngestError(self.path, None, "a block without a size in segment "
                                  f"{_hex(address)}")
            bsize = b["size"]
            baddr = _int_or_none(b.get("address"))
            if baddr is None:
                baddr = at  # older layouts: blocks follow each other from the segment start
                if _int_or_none(baddr) is None:
                    raise IngestError(self.path, None, "blocks that run past the 64-bit "
                                      f"address space in segment {_hex(address)}")
            requested = _int_or_none(b.get("requested_size"))
            frames = b.get("frames")
            battrs = {_key(k): _plain(v) for k, v in b.items() if k not in _BLOCK_KNOWN}
            if "history" in b and "frames" not in b:
                # torch <= 2.0: the block's allocations in `history`, newest first
                self.layout = "history"
                hist = b.get("history") or []
                if type(hist) is not list or (hist and type(hist[0]) is not dict):
                    raise IngestError(self.path, None, "a block history that is not a list "
                                      "of dicts")
                if hist:
                    frames = hist[0].get("frames")
                    if requested is None:
                        requested = _int_or_none(hist[0].get("real_size"))
                battrs["history_entries"] = len(hist)
            state = b.get("state")
            if type(state) is not str:
                raise IngestError(self.path, None, "a block without a state in segment "
                                  f"{_hex(address)}")
            if requested is None and state in _ACTIVE:
                requested = bsize
                battrs["requested_size_missing"] = True
            blocks.append(_Block(baddr, bsize, requested, _clean(state),
                                 self.interner.stack(frames), stream, battrs))
            at = baddr + bsize
        self.device(device).add_segment(_Segment(
            address, size, stream, self.interner.stack(s.get("frames")), attrs, blocks))

    def annotation(self, a: Any) -> Iterator[Record]:
        if type(a) is not dict:
            raise IngestError(self.path, None, "an external annotation that is not a dict")
        d = self.device(a.get("device", 0))
        yield from self.declare(d)
        t = _time_or_none(a.get("time_us"))
        name = a.get("name")
        yield AllocatorAnnotation(
            timeline=d.key, name=_clean(name) if type(name) is str else None,
            ts_ns=t * 1000 if t is not None else None, device=d.key,
            attrs={_key(k): _plain(v) for k, v in a.items()
                   if k not in ("name", "time_us", "device")})

    def records(self, progress: ProgressFn | None) -> Iterator[Record]:
        """The compiled core reads where it is built (the same rows; see native.py)."""
        core = native.module()
        if core is not None and hasattr(core, "SnapshotParser"):
            return self._consume_native(core.SnapshotParser(self.path, Frame, InternedStack),
                                        progress)
        return self._records_python(progress)

    def _consume_native(self, parser: Any, progress: ProgressFn | None) -> Iterator[Record]:
        """The compiled core's outputs: it runs the opcodes, interns frames and stacks and
        turns every trace entry into a row (with the state above, in C++); segments,
        annotations and the top object come back as plain values for the code above."""
        top: Any = None
        states: dict[int, dict[str, Any]] = {}
        for outputs in native.feed_file(parser, self.path, progress):
            for item in outputs:
                tag = item[0]
                if tag == "batch":
                    n, columns = native.arrow_columns(item[2])
                    yield EventColumns(timelines=(f"cuda:{item[1]}",), n=n, columns=columns)
                elif tag == "device":
                    yield from self.declare(self.device(item[1]))
                elif tag == "frame":
                    yield frame_record(item[1], item[2])
                elif tag == "stack":
                    yield StackInterned(stack_id=item[1], frame_ids=tuple(item[2]))
                elif tag == "segment":
                    self.segment(item[1], None)
                elif tag == "annotation":
                    yield from self.annotation(item[1])
                elif tag == "end":
                    top, states = item[1], item[2]
        self._check_top(top)
        for index, state in states.items():
            d = self.device(index)
            for name, value in state.items():
                setattr(d, name, Counter(value) if name in ("actions", "problems") else value)
        yield from self._finish(top)

    def _records_python(self, progress: ProgressFn | None) -> Iterator[Record]:
        total = os.path.getsize(self.path)
        with open(self.path, "rb") as raw:
            gz = raw.read(2) == b"\x1f\x8b"
            raw.seek(0)
            f: Any = gzip.GzipFile(fileobj=raw, mode="rb") if gz else raw
            report = (lambda _n: progress(raw.tell(), total)) if progress else None
            stream = PickleStream(f, self.path, _streamed_path, self.interner.compact, report)
            try:
                yield from self._consume(stream.items())
            except (EOFError, zlib.error, gzip.BadGzipFile) as e:
                raise IngestError(self.path, None, f"corrupt gzip data ({e}): expected a "
                                  "gzip-compressed snapshot") from None

    def _consume(self, items: Iterator[tuple[tuple[Any, ...], Any]]) -> Iterator[Record]:
        first = True
        top: Any = None
        interner = self.interner
        for path, value in items:
            if first:
                first = False
                if path == TOP and type(value) is not dict:
                    raise IngestError(self.path, None, f"a pickle of a {type(value).__name__}, "
                                      "not an allocator snapshot: expected a dict with "
                                      "'segments' and 'device_traces' "
                                      "(torch.cuda.memory._dump_snapshot)")
            head = path[0]
            if head == "device_traces":
                d = self.device(path[1])
                yield from self.declare(d)
                rec = d.entry(value)
                if interner.pending:
                    yield from interner.take()
                yield rec
            elif head == "segments":
                self.segment(value, None)
            elif head == "external_annotations":
                yield from self.annotation(value)
            elif path == TOP:
                top = value
        self._check_top(top)
        # Items a pickler wrote without a batch (lists of one) arrive with the top object.
        for s in top.get("segments") or []:
            self.segment(s, None)
        traces = top.get("device_traces")
        if type(traces) is not list:
            raise IngestError(self.path, None, "device_traces is not a list of per-device lists")
        for i, trace in enumerate(traces):
            if type(trace) is not list:
                raise IngestError(self.path, None, f"device_traces[{i}] is not a list")
            for e in trace:
                d = self.device(i)
                yield from self.declare(d)
                rec = d.entry(e)
                yield from interner.take()
                yield rec
        for a in top.get("external_annotations") or []:
            yield from self.annotation(a)
        yield from self._finish(top)

    def _check_top(self, top: Any) -> None:
        """The top object is a snapshot: a dict with segments and device_traces, as lists."""
        if type(top) is not dict or "segments" not in top or "device_traces" not in top:
            what = type(top).__name__
            with_keys = f" with keys {_keys(top)}" if type(top) is dict and top else ""
            raise IngestError(self.path, None, f"a pickle of a {what}{with_keys}, not an "
                              "allocator snapshot: expected a dict with 'segments' and "
                              "'device_traces' (torch.cuda.memory._dump_snapshot)")
        expected: tuple[tuple[str, type], ...] = (
            ("segments", list), ("device_traces", list), ("external_annotations", list),
            ("allocator_settings", dict))
        for key, kind in expected:
            if key in top and type(top[key]) is not kind:
                raise IngestError(self.path, None, f"'{key}' is a {type(top[key]).__name__}, "
                                  f"expected a {kind.__name__}: not an allocator snapshot "
                                  "in the layout torch writes")

    def _finish(self, top: dict[Any, Any]) -> Iterator[Record]:
        """After the trace: the settings, each device's end state and note."""
        interner = self.interner
        settings = _plain(top.get("allocator_settings"))
        extra = {_key(k): _plain(v) for k, v in top.items()
                 if k not in ("segments", "device_traces", "allocator_settings",
                              "external_annotations")}
        if type(settings) is dict:
            divisions = settings.get("roundup_power2_divisions")
            split = settings.get("max_split_size")
            if (type(divisions) is dict and any(divisions.values())) or \
                    settings.get("expandable_segments") or (type(split) is int and split != -1):
                for d in self.devices.values():
                    d.exact_rule = False
        yield from interner.take()
        for index in sorted(self.devices):
            d = self.devices[index]
            yield from self.declare(d)
            yield from d.finish()
            yield from interner.take()
            note_extra = {"layout": self.layout, **({"top_level_keys": extra} if extra else {})}
            yield d.note(settings, note_extra)


def _streamed_path(path: tuple[Any, ...]) -> bool:
    """The lists whose items stream: segments, each device's trace, the annotations."""
    if len(path) == 1:
        return path[0] in ("segments", "external_annotations")
    return len(path) == 2 and path[0] == "device_traces"


def _int_or_none(v: Any) -> int | None:
    if type(v) is int and -(1 << 63) <= v < (1 << 63):
        return v
    return None


_INT64_MAX = (1 << 63) - 1
_TIME_LIMIT = _INT64_MAX // 1000


def _hex(v: int) -> str:
    return f"0x{v:x}" if v >= 0 else f"-0x{-v:x}"


def _time_or_none(v: Any) -> int | None:
    """A time in us whose ns fit the events table's int64."""
    if type(v) is int and -_TIME_LIMIT <= v <= _TIME_LIMIT:
        return v
    return None


def frame_record(fid: int, f: dict[Any, Any]) -> FrameInterned:
    """The frames-table row of a frame dict (both readers)."""
    return FrameInterned(
        frame_id=fid, filename=_str_or_none(f.get("filename")),
        line=_int_or_none(f.get("line")), name=_str_or_none(f.get("name")),
        attrs={_key(k): _plain(v) for k, v in f.items() if k not in _FRAME_KEYS})


def _str_or_none(v: Any) -> str | None:
    """A frame's filename or name: the text, or its canonical JSON if not text."""
    return _clean(v) if type(v) is str else None if v is None else _canonical(_plain(v))


def _plain(v: Any) -> Any:
    """A value as JSON holds it, the same in the compiled core: tuples as lists, bytes as
    latin-1 text, sets as lists sorted by their canonical JSON, keys as text (a key that
    is not text: its canonical JSON), interned stand-ins as their ids. It recurses: the
    pickle reader hands over nothing nested deeper than MAX_NESTING, nor a container
    inside itself (pickle_stream.PickleStream._check_plain)."""
    t = type(v)
    if t is list or t is tuple:
        return [_plain(x) for x in v]
    if t is dict:
        return {_key(k): _plain(x) for k, x in v.items()}
    if t is bytes or t is bytearray:
        return v.decode("latin-1")
    if t is set or t is frozenset:
        return sorted((_plain(x) for x in v), key=_canonical)
    if t is str:
        return _clean(v)
    if t is Frame:
        return v.frame_id
    if t is InternedStack:
        return v.stack_id
    return v


def _key(k: Any) -> str:
    return _clean(k) if type(k) is str else _canonical(_plain(k))


_SURROGATE = re.compile("[\ud800-\udfff]")


def _clean(s: str) -> str:
    """Text without surrogate code points (a pickle may carry them; JSON and Arrow
    cannot): each becomes U+FFFD, the same in the compiled core."""
    return s if s.isascii() or not _SURROGATE.search(s) else _SURROGATE.sub("\ufffd", s)


# json.dumps(p, sort_keys=True, separators=(",", ":")) without making an encoder per call
# (most of the cost of a small value's text): the same text, byte for byte.
_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":")).encode


def _canonical(p: Any) -> str:
    """Canonical JSON text of a plain value (keys sorted, no spaces, ASCII only); an int's
    is its decimal text, as json writes it (int.__repr__)."""
    return str(p) if type(p) is int else _CANONICAL(p)


def _keys(d: dict[Any, Any]) -> str:
    """A dict's first keys for a message: text keys as they are, others by type."""
    names = sorted(_clean(k) if type(k) is str else f"<{type(k).__name__}>" for k in d)
    return ", ".join(names[:8]) + (", ..." if len(names) > 8 else "")


def parse_snapshot(path: str, progress: ProgressFn | None = None) -> Iterator[Record]:
    """The timelines of one snapshot: per device its trace, end state and note."""
    return _Parser(path).records(progress)


def sniff(head: str, path: str) -> bool:
    """A pickle (protocol 2+) whose top-level dict begins with the key 'segments'."""
    try:
        with open(path, "rb") as raw:
            data = raw.read(2)
            raw.seek(0)
            f: Any = gzip.GzipFile(fileobj=raw, mode="rb") if data == b"\x1f\x8b" else raw
            start = f.read(64)
    except (OSError, EOFError, zlib.error):
        return False
    return (len(start) > 2 and start[0] == 0x80 and 2 <= start[1] <= 5
            and b"segments" in start)


def _spec() -> Any:
    from .format_spec import FormatSpec

    return FormatSpec(name=FORMAT, description="CUDA allocator snapshot pickle "
                      "(torch.cuda.memory._dump_snapshot), .pickle or .pickle.gz",
                      sniff=sniff, parse=parse_snapshot, compiled=True)


SPEC = _spec()
