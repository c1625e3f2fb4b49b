"""A pickle reader that never runs code and never holds the whole object: opcodes, streamed.

``pickle.load`` on an untrusted file runs whatever the file names (``GLOBAL os system`` then
``REDUCE`` is a function call), and it builds the whole object before returning, so a 2 GB
allocator snapshot becomes many GB of Python objects. This module interprets the opcodes
itself, admitting only plain data: None, bools, ints, floats, str, bytes, lists, tuples,
dicts, sets. Every opcode that imports, calls or builds an object (GLOBAL, STACK_GLOBAL,
REDUCE, BUILD, INST, OBJ, NEWOBJ, NEWOBJ_EX, EXT1/2/4, PERSID, BINPERSID, NEXT_BUFFER,
READONLY_BUFFER) is an ``IngestError`` naming the file, the byte and the global it wanted;
nothing it names is ever imported. So are protocol 0's text opcodes (INT, LONG, FLOAT,
STRING, UNICODE, GET, PUT), which no pickler writes from protocol 2 on.

Streaming: the caller says which lists to stream, by their path from the top object
(``("device_traces", 0)`` is the first device's trace). Each item of such a list is handed
to the caller as soon as it is complete (when the next item begins, when the list's
APPENDS closes the batch, or at the APPEND of a list of one) and is never attached to the
list, so memory holds one item at a time. What stays: the memo (pickle's
back-references), one slot per memoized object; after an item has been handed over, the
containers it memoized are replaced in the memo by what the caller's ``compact`` returns
(an interned stack id, or ``STREAMED`` for the item itself, which no later opcode may
reference). The bound is therefore one pointer per memoized object plus the caller's
interned values, whatever the length of the lists.

Every item handed over, the top object, and every container the memo held inside an item
(what ``compact`` reads) is checked before anyone reads it (``_check_plain``): containers
at most ``MAX_NESTING`` deep and none inside itself (a memo read can put a list into
itself). Dict keys and set members are checked as they are added: at most
``MAX_NESTING`` deep and ``MAX_KEY_VALUES`` values (Python hashes and compares them
whole). So every reader of the values may recurse, and no input makes it run away.

A memo read puts a container in a second place without copying it, and every reader
(``_plain``, ``json.dumps``) writes it out once per place: a list of two reads of a list
of two reads of ... is 40 bytes that expand to 2**40 values. So the values handed over are
counted as their readers will see them, each shared container once per place (the same
walk: ``checked`` keeps each container's count), and their running total may not pass
``MAX_VALUES_FLOOR + MAX_VALUES_PER_BYTE`` x the offset read so far: an ``IngestError``
at the opcode that hands the value over. Plain data holds at most one value per opcode
byte; torch's snapshots and Flight Recorder dumps hold under one per byte counted so
(0.2 to 0.97 on every pickle among the test fixtures).

Paths are known for the top object, its dict values and the items of those that are lists
(two levels: where a snapshot's streamed lists lie). Only pickle protocols 2 to 5 are read
(torch writes 2 from C++, 4 or 5 from Python). Items of a streamed list must be
containers written with MARK ... SETITEMS/APPENDS, as every pickler does for a dict of two
or more keys.

``native/cuda_snapshot.cpp`` is this module's compiled twin (with the snapshot's
semantics); every message here is reproduced there word for word.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Callable, Iterator
from itertools import chain
from typing import Any, BinaryIO

from .errors import IngestError

CHUNK = 1 << 20


class _Streamed:
    """The memo's stand-in for an item already handed to the caller."""

    def __repr__(self) -> str:
        return "STREAMED"


STREAMED: Any = _Streamed()
TOP = ("<top>",)  # the path under which the finished top object is yielded, last
MAX_PATH_DEPTH = 2  # paths are tracked this deep: a streamed list lies at most this deep
MAX_NESTING = 100  # containers within containers in one value (torch writes fewer than 10)
MAX_KEY_VALUES = 10_000  # values in one dict key or set member (torch's keys are text)
MAX_VALUES_FLOOR = 1_000_000  # values handed over (shared containers once per place), at
MAX_VALUES_PER_BYTE = 16  # most this floor plus this many per byte read so far

# Opcodes refused at once, with the reason.
_CODE_OPCODES = {
    0x63: "GLOBAL", 0x93: "STACK_GLOBAL", 0x52: "REDUCE", 0x62: "BUILD", 0x69: "INST",
    0x6F: "OBJ", 0x81: "NEWOBJ", 0x92: "NEWOBJ_EX", 0x82: "EXT1", 0x83: "EXT2", 0x84: "EXT4",
    0x50: "PERSID", 0x51: "BINPERSID", 0x97: "NEXT_BUFFER", 0x98: "READONLY_BUFFER",
}
_TEXT_OPCODES = {0x49: "INT", 0x4C: "LONG", 0x46: "FLOAT", 0x56: "UNICODE", 0x53: "STRING",
                 0x67: "GET", 0x70: "PUT"}
# Opcodes that push nothing onto the current stack (a streamed item stays open across them).
_NO_PUSH = frozenset({
    0x28, 0x94, 0x71, 0x72, 0x75, 0x65, 0x61, 0x73, 0x95, 0x80, 0x2E, 0x90, 0x30, 0x31,
    0x85, 0x86, 0x87, 0x74, 0x6C, 0x64, 0x91,
})

_u32 = struct.Struct("<I").unpack_from
_i32 = struct.Struct("<i").unpack_from
_u64 = struct.Struct("<Q").unpack_from
_f64 = struct.Struct(">d").unpack_from
_u16 = struct.Struct("<H").unpack_from
_CONTAINERS = (list, dict, set, tuple)
_NESTED = (list, dict, set, tuple, frozenset)
_UNHASHABLE = (list, dict, set, bytearray)
_PLAIN = "expected the plain data torch writes (dicts, lists, text and numbers"


class _Truncated(Exception):
    """The file ended where more bytes were needed."""


class PickleStream:
    """One pass over one pickle. ``items()`` yields ``(path, item)`` for every item of a
    streamed list, in file order, then ``(TOP, top_object)``.

    ``stream(path)`` says whether the list at ``path`` streams its items;
    ``compact(value)`` gives what the memo keeps of a container memoized inside an item
    once that item has been handed over (default: the container itself).
    """

    def __init__(self, f: BinaryIO, path: str, stream: Callable[[tuple[Any, ...]], bool],
                 compact: Callable[[Any], Any] | None = None,
                 progress: Callable[[int], None] | None = None,
                 holds: str = "a memory snapshot") -> None:
        self.f = f
        self.holds = holds  # what the file should be, for the refusal's words
        self.path = path
        self.stream = stream
        self.compact = compact or (lambda v: v)
        self.progress = progress
        self.buf = b""
        self.pos = 0
        self.base = 0  # file offset of buf[0]
        self.eof = False
        self.memo: list[Any] = []
        self.values = 0  # handed over so far, each shared container once per place

    def error(self, at: int, message: str) -> IngestError:
        """An error at file offset ``at``."""
        return IngestError(self.path, None, f"byte {at:,}: {message}")

    def _more(self, n: int) -> bool:
        """Make ``n`` bytes available at ``pos`` if the file has them."""
        if len(self.buf) - self.pos >= n:
            return True
        rest = self.buf[self.pos:]
        self.base += self.pos
        self.pos = 0
        parts = [rest]
        have = len(rest)
        while have < n and not self.eof:
            data = self.f.read(CHUNK)  # never more at once: a length may lie
            if not data:
                self.eof = True
                break
            parts.append(data)
            have += len(data)
        self.buf = b"".join(parts)
        if self.progress is not None:
            self.progress(self.base + len(self.buf))
        return have >= n

    def _need(self, n: int) -> None:
        if not self._more(n):
            raise _Truncated

    # -- the machine ------------------------------------------------------------------
    def items(self) -> Iterator[tuple[tuple[Any, ...], Any]]:
        """Run the opcodes; yield streamed items and finally the top object."""
        self.at = 0
        try:
            yield from self._run()
        except (_Truncated, struct.error, IndexError):
            raise self.error(self.at, "the file ends inside this opcode: truncated pickle, "
                             "expected more data before STOP") from None

    def _run(self) -> Iterator[tuple[tuple[Any, ...], Any]]:  # noqa: C901 - one dispatch loop
        if not self._more(1):
            raise self.error(0, "the file ends before STOP: truncated pickle")
        if self.buf[0] != 0x80:
            raise self.error(0, "not a pickle of protocol 2 or later (no PROTO opcode); "
                             "expected a file written by torch (pickle protocol 2 to 5)")
        stack: list[Any] = []
        metastack: list[list[Any]] = []
        # Per open MARK: [owner path or None, streamed?, items handed over so far].
        markinfo: list[list[Any]] = []
        memo: list[Any] = []
        self.memo = memo  # inspected by the tests: containers of handed-over items are gone
        memo_extra: dict[int, Any] = {}
        # Containers whose path is known, and the streamed lists: kept alive (never reused).
        paths: dict[int, tuple[tuple[Any, ...], Any]] = {}
        streamed_ids: dict[int, Any] = {}
        streamed = False  # is `stack` the items of a streamed list?
        pending_from = -1  # memo index where the item under construction began
        stream = self.stream
        compact = self.compact

        def memo_get(i: int, at: int) -> Any:
            v = memo[i] if i < len(memo) else memo_extra.get(i, _MISSING)
            if v is _MISSING:
                raise self.error(at, f"memo entry {i} read before it was written")
            if v is STREAMED:
                raise self.error(at, f"memo entry {i} refers back to an item already handed "
                                 "over (a snapshot never shares its trace entries)")
            return v

        def memo_put(i: int, v: Any) -> None:
            if i == len(memo):
                memo.append(v)
            elif i < len(memo):
                memo[i] = v
            else:
                memo_extra[i] = v

        def new_path(obj: Any) -> None:
            """Record the path of a container being pushed, where it can be known."""
            if not metastack:
                if not stack:
                    paths[id(obj)] = ((), obj)
                return
            info = markinfo[-1]
            owner_path = info[0]
            if owner_path is None or info[1] or len(owner_path) >= MAX_PATH_DEPTH:
                return  # too deep, or an item of a streamed list (handed over, never owns)
            owner = metastack[-1][-1]
            if type(owner) is dict:
                if len(stack) % 2 == 1 and type(stack[-1]) is str:
                    p: tuple[Any, ...] = (*owner_path, stack[-1])
                elif len(stack) % 2 == 0 and stack and type(stack[-1]) is list \
                        and not stack[-1] and id(stack[-1]) in paths \
                        and id(stack[-1]) not in streamed_ids:
                    # The value slot is taken: this is the single item of that list,
                    # written as `item APPEND` (a list of one item has no MARK).
                    p = (*paths[id(stack[-1])][0], 0)
                    if len(p) > MAX_PATH_DEPTH:
                        return
                else:
                    return
            elif type(owner) is list:
                p = (*owner_path, info[2] + len(stack))
            else:
                return
            paths[id(obj)] = (p, obj)
            if type(obj) is list and stream(p):
                streamed_ids[id(obj)] = obj

        def pop_mark() -> list[Any]:
            nonlocal stack, streamed
            items = stack
            markinfo.pop()
            stack = metastack.pop()
            streamed = bool(markinfo) and markinfo[-1][1]
            return items

        while True:
            if len(self.buf) - self.pos < 10:
                self._more(10)  # reads on; at the end of the file fewer remain
                if self.pos >= len(self.buf):
                    raise self.error(self.base + self.pos,
                                     "the file ends before STOP: truncated pickle")
            buf = self.buf
            pos = self.pos
            op = buf[pos]
            at = self.at = self.base + pos
            self.pos = pos = pos + 1
            # Items of a streamed list: the previous item is complete once another begins.
            if streamed and stack and op not in _NO_PUSH:
                info = markinfo[-1]
                checked: dict[int, list[int]] = {}
                for item in stack:
                    self._spend(self._check_plain(item, at, checked), at)
                    yield (*info[0], info[2]), item
                    info[2] += 1
                stack.clear()
                if pending_from >= 0:
                    self._compact(memo, pending_from, compact, at, checked)
                pending_from = len(memo)
                buf, pos = self.buf, self.pos
            if op == 0x68:  # BINGET
                stack.append(memo_get(buf[pos], at))
                self.pos = pos + 1
            elif op == 0x94:  # MEMOIZE
                if not stack:
                    raise self.error(at, "MEMOIZE with an empty stack")
                memo_put(len(memo), stack[-1])
            elif op == 0x8C:  # SHORT_BINUNICODE
                stack.append(self._text(buf[pos], 1, at))
            elif op == 0x6A:  # LONG_BINGET
                stack.append(memo_get(_u32(buf, pos)[0], at))
                self.pos = pos + 4
            elif op == 0x4B:  # BININT1
                stack.append(buf[pos])
                self.pos = pos + 1
            elif op == 0x8A:  # LONG1
                stack.append(self._long(buf[pos], 1))
            elif op == 0x4A:  # BININT
                stack.append(_i32(buf, pos)[0])
                self.pos = pos + 4
            elif op == 0x4D:  # BININT2
                stack.append(_u16(buf, pos)[0])
                self.pos = pos + 2
            elif op == 0x7D or op == 0x5D:  # EMPTY_DICT, EMPTY_LIST
                obj: Any = {} if op == 0x7D else []
                new_path(obj)
                stack.append(obj)
            elif op == 0x28:  # MARK
                owner = stack[-1] if stack else None
                known = paths.get(id(owner)) if type(owner) in (dict, list) else None
                is_streamed = type(owner) is list and id(owner) in streamed_ids
                metastack.append(stack)
                markinfo.append([known[0] if known else None, is_streamed, 0])
                stack = []
                streamed = is_streamed
                if streamed:
                    pending_from = len(memo)
            elif op == 0x75 or op == 0x65:  # SETITEMS, APPENDS
                if not metastack:
                    raise self.error(at, "SETITEMS/APPENDS without a MARK")
                closing = markinfo[-1]
                if closing[1]:  # the last items of a streamed batch
                    checked = {}
                    for item in stack:
                        self._spend(self._check_plain(item, at, checked), at)
                        yield (*closing[0], closing[2]), item
                        closing[2] += 1
                    stack.clear()
                    if pending_from >= 0:
                        self._compact(memo, pending_from, compact, at, checked)
                    pending_from = -1
                items = pop_mark()
                if not stack:
                    raise self.error(at, "SETITEMS/APPENDS with nothing to add to")
                target = stack[-1]
                if op == 0x75:
                    if type(target) is not dict:
                        raise self.error(at, f"SETITEMS on a {_type_name(target)}, expected "
                                         "a dict")
                    if len(items) % 2:
                        raise self.error(at, "SETITEMS with an odd number of values")
                    for i in range(0, len(items), 2):
                        self._setitem(target, items[i], items[i + 1], at)
                elif type(target) is list:
                    target.extend(items)
                else:
                    raise self.error(at, f"APPENDS to a {_type_name(target)}, expected a list")
            elif op == 0x85 or op == 0x86 or op == 0x87:  # TUPLE1, TUPLE2, TUPLE3
                n = op - 0x84
                if len(stack) < n:
                    raise self.error(at, "TUPLE with too few values")
                t = tuple(stack[-n:])
                del stack[-n:]
                stack.append(t)
            elif op == 0x89:  # NEWFALSE
                stack.append(False)
            elif op == 0x88:  # NEWTRUE
                stack.append(True)
            elif op == 0x4E:  # NONE
                stack.append(None)
            elif op == 0x47:  # BINFLOAT
                stack.append(_f64(buf, pos)[0])
                self.pos = pos + 8
            elif op == 0x61:  # APPEND
                if len(stack) < 2 or type(stack[-2]) is not list:
                    raise self.error(at, "APPEND without a list below its value")
                v = stack.pop()
                if id(stack[-1]) in streamed_ids:  # a streamed list of one item
                    checked = {}
                    self._spend(self._check_plain(v, at, checked), at)
                    yield (*paths[id(stack[-1])][0], 0), v
                    self._compact(memo, pending_from if pending_from >= 0 else len(memo),
                                  compact, at, checked)
                    pending_from = -1
                else:
                    stack[-1].append(v)
            elif op == 0x73:  # SETITEM
                if len(stack) < 3 or type(stack[-3]) is not dict:
                    raise self.error(at, "SETITEM without a dict below its key and value")
                v = stack.pop()
                k = stack.pop()
                self._setitem(stack[-1], k, v, at)
            elif op == 0x58:  # BINUNICODE
                stack.append(self._text(_u32(buf, pos)[0], 4, at))
            elif op == 0x8D:  # BINUNICODE8
                stack.append(self._text(_u64(buf, pos)[0], 8, at))
            elif op == 0x95:  # FRAME: a length hint, nothing to do
                self._need(8)
                self.pos += 8
            elif op == 0x80:  # PROTO
                proto = buf[pos]
                self.pos = pos + 1
                if not 2 <= proto <= 5:
                    raise self.error(at, f"pickle protocol {proto}: expected 2 to 5")
            elif op == 0x71:  # BINPUT
                if not stack:
                    raise self.error(at, "BINPUT with an empty stack")
                memo_put(buf[pos], stack[-1])
                self.pos = pos + 1
            elif op == 0x72:  # LONG_BINPUT
                if not stack:
                    raise self.error(at, "LONG_BINPUT with an empty stack")
                memo_put(_u32(buf, pos)[0], stack[-1])
                self.pos = pos + 4
            elif op == 0x29:  # EMPTY_TUPLE
                stack.append(())
            elif op == 0x74:  # TUPLE (from the mark)
                if not metastack:
                    raise self.error(at, "TUPLE without a MARK")
                items = pop_mark()  # first: it rebinds `stack` to the list below the MARK
                stack.append(tuple(items))
            elif op == 0x6C or op == 0x64:  # LIST, DICT (from the mark)
                if not metastack:
                    raise self.error(at, "LIST/DICT without a MARK")
                items = pop_mark()
                if op == 0x6C:
                    obj = list(items)
                else:
                    if len(items) % 2:
                        raise self.error(at, "DICT with an odd number of values")
                    obj = {}
                    for i in range(0, len(items), 2):
                        self._setitem(obj, items[i], items[i + 1], at)
                new_path(obj)
                stack.append(obj)
            elif op == 0x8F:  # EMPTY_SET
                stack.append(set())
            elif op == 0x90:  # ADDITEMS
                if not metastack:
                    raise self.error(at, "ADDITEMS without a MARK")
                items = pop_mark()
                if not stack or type(stack[-1]) is not set:
                    raise self.error(at, "ADDITEMS without a set")
                for v in items:
                    self._hashable(v, at)
                    stack[-1].add(v)
            elif op == 0x91:  # FROZENSET
                if not metastack:
                    raise self.error(at, "FROZENSET without a MARK")
                items = pop_mark()
                for v in items:
                    self._hashable(v, at)
                stack.append(frozenset(items))
            elif op == 0x30:  # POP
                if stack:
                    stack.pop()
                elif metastack:  # pops the mark, as pickle does
                    pop_mark()
                else:
                    raise self.error(at, "POP with an empty stack")
            elif op == 0x31:  # POP_MARK
                if not metastack:
                    raise self.error(at, "POP_MARK without a MARK")
                pop_mark()
            elif op == 0x32:  # DUP
                if not stack:
                    raise self.error(at, "DUP with an empty stack")
                stack.append(stack[-1])
            elif op in (0x43, 0x42, 0x8E, 0x55, 0x54, 0x96):
                # SHORT_BINBYTES, BINBYTES, BINBYTES8, SHORT_BINSTRING, BINSTRING, BYTEARRAY8
                if op == 0x43 or op == 0x55:
                    n, width = buf[pos], 1
                elif op == 0x42 or op == 0x54:
                    n, width = _u32(buf, pos)[0], 4
                else:
                    n, width = _u64(buf, pos)[0], 8
                data = self._raw(n, width)
                if op in (0x55, 0x54):  # Python 2 str: pickle decodes it as ASCII
                    if not data.isascii():
                        raise self.error(at, "a Python 2 string that is not ASCII")
                    stack.append(data.decode("ascii"))
                else:
                    stack.append(bytearray(data) if op == 0x96 else data)
            elif op == 0x8B:  # LONG4
                n = _i32(buf, pos)[0]
                if n < 0:
                    raise self.error(at, "LONG4 with a negative length")
                stack.append(self._long(n, 4))
            elif op == 0x2E:  # STOP
                if metastack:
                    raise self.error(at, "STOP inside an unfinished MARK: truncated or corrupt")
                if len(stack) != 1:
                    raise self.error(at, f"STOP with {len(stack)} values on the stack, "
                                     "expected 1")
                self._spend(self._check_plain(stack[0], at, {}), at)
                yield TOP, stack[0]
                return
            elif op in _CODE_OPCODES:
                raise self.error(at, self._code_message(op, stack))
            elif op in _TEXT_OPCODES:
                raise self.error(at, f"refused pickle opcode {_TEXT_OPCODES[op]}: a text "
                                 "opcode of protocol 0, which torch never writes")
            else:
                raise self.error(at, f"unknown pickle opcode 0x{op:02x}: corrupt file or not "
                                 "a pickle")

    # -- argument readers (they move `pos` past the opcode's argument) -------------------
    def _raw(self, n: int, width: int) -> bytes:
        """``n`` bytes after a ``width``-byte length."""
        self.pos += width
        self._need(n)
        data = self.buf[self.pos:self.pos + n]
        self.pos += n
        return data

    def _text(self, n: int, width: int, at: int) -> str:
        data = self._raw(n, width)
        try:
            return data.decode("utf-8", "surrogatepass")
        except UnicodeDecodeError:
            raise self.error(at, "a string that is not UTF-8") from None

    def _long(self, n: int, width: int) -> int:
        return int.from_bytes(self._raw(n, width), "little", signed=True)

    def _compact(self, memo: list[Any], start: int, compact: Callable[[Any], Any], at: int,
                 checked: dict[int, list[int]]) -> None:
        """The memo's containers from ``start`` on (an item's, handed over) replaced by
        what ``compact`` makes of them; it reads them, so they are checked first (and
        counted, unless the item handed over held them)."""
        for i in range(start, len(memo)):
            if type(memo[i]) in _CONTAINERS and id(memo[i]) not in checked:
                self._spend(self._check_plain(memo[i], at, checked), at)
        for i in range(start, len(memo)):
            v = memo[i]
            if type(v) in _CONTAINERS:
                memo[i] = compact(v)

    def _check_plain(self, value: Any, at: int, checked: dict[int, list[int]]) -> int:
        """``value`` holds containers at most MAX_NESTING deep and none inside itself;
        the values it holds as its readers see them (itself, and each shared container
        once per place).

        Depth first, without recursion; ``checked`` maps the containers already checked
        (by id: the caller holds them) to their height and count, so that one shared many
        times is walked once."""
        if type(value) not in _NESTED:
            return 1
        known = checked.get(id(value))
        if known is not None:
            return known[1]
        # [container, its members, height, values]
        work: list[list[Any]] = [[value, _members(value), 0, 1 + _size(value)]]
        on_path = {id(value)}
        while work:
            top = work[-1]
            for x in top[1]:
                if type(x) not in _NESTED:
                    continue
                known = checked.get(id(x))
                if known is not None:
                    height = known[0]
                    if len(work) + height > MAX_NESTING:
                        raise self._too_deep(at)
                    if height > top[2]:
                        top[2] = height
                    top[3] += known[1] - 1
                    continue
                if id(x) in on_path:
                    raise self.error(at, f"a {_type_name(x)} that contains itself: {_PLAIN}, "
                                     "no cycles)")
                if len(work) == MAX_NESTING:
                    raise self._too_deep(at)
                on_path.add(id(x))
                work.append([x, _members(x), 0, 1 + _size(x)])
                break
            else:
                work.pop()
                on_path.discard(id(top[0]))
                height = top[2] + 1
                checked[id(top[0])] = [height, top[3]]
                if work:
                    if height > work[-1][2]:
                        work[-1][2] = height
                    work[-1][3] += top[3] - 1
        return top[3]

    def _spend(self, values: int, at: int) -> None:
        """Count ``values`` handed over at ``at``; past the bound, the file is refused."""
        self.values += values
        limit = MAX_VALUES_FLOOR + MAX_VALUES_PER_BYTE * at
        if self.values > limit:
            raise self.error(at, f"memo reads repeat containers into more than {limit:,} "
                             f"values by this byte ({MAX_VALUES_FLOOR:,} plus "
                             f"{MAX_VALUES_PER_BYTE} per byte read): {_PLAIN}, each "
                             "written out where it is used)")

    def _too_deep(self, at: int) -> IngestError:
        return self.error(at, f"data nested deeper than {MAX_NESTING} levels: {_PLAIN} "
                          "a few levels deep)")

    def _hashable(self, key: Any, at: int) -> None:
        """Python's rule, without calling hash(): no list, dict, set or bytearray inside;
        and at most MAX_NESTING deep and MAX_KEY_VALUES values, as Python hashes and
        compares a key whole (recursively, in C)."""
        t = type(key)
        if t is not tuple and t is not frozenset:
            if t in _UNHASHABLE:
                raise self.error(at, f"a {t.__name__} used as a dict key or set member")
            return
        work = [iter(key)]
        n = 1
        while work:
            for k in work[-1]:
                n += 1
                t = type(k)
                if t in _UNHASHABLE:
                    raise self.error(at, f"a {t.__name__} used as a dict key or set member")
                if n > MAX_KEY_VALUES:
                    raise self.error(at, f"a dict key or set member of more than "
                                     f"{MAX_KEY_VALUES:,} values: {_PLAIN} as keys)")
                if t is tuple or t is frozenset:
                    if len(work) == MAX_NESTING:
                        raise self.error(at, "a dict key or set member nested deeper than "
                                         f"{MAX_NESTING} levels: {_PLAIN} as keys)")
                    work.append(iter(k))
                    break
            else:
                work.pop()

    def _setitem(self, d: dict[Any, Any], k: Any, v: Any, at: int) -> None:
        self._hashable(k, at)
        d[k] = v

    def _code_message(self, op: int, stack: list[Any]) -> str:
        """Why the file is refused: the opcode, and the global it would import."""
        name = _CODE_OPCODES[op]
        target = ""
        if op == 0x63:  # GLOBAL module\nname\n within the next 256 bytes
            self._more(256)
            window = self.buf[self.pos:self.pos + 256]
            parts = window.split(b"\n")
            if len(parts) >= 3:
                try:
                    target = f" {parts[0].decode()}.{parts[1].decode()}"
                except UnicodeDecodeError:
                    target = " (a name that is not UTF-8)"
        elif op == 0x93 and len(stack) >= 2 and all(type(s) is str for s in stack[-2:]):
            target = f" {_clean(stack[-2])}.{_clean(stack[-1])}"
        return (f"refused pickle opcode {name}{target}: it imports or calls code, and "
                f"{self.holds} holds only dicts, lists, strings and numbers "
                "(nothing was run)")


_MISSING = object()


_SURROGATE = re.compile("[\ud800-\udfff]")


def _clean(s: str) -> str:
    """Text without surrogate code points (U+FFFD instead): messages are printable."""
    return _SURROGATE.sub("\ufffd", s)


def _type_name(v: Any) -> str:
    return type(v).__name__


def _size(v: Any) -> int:
    """How many members ``_members`` gives."""
    return 2 * len(v) if type(v) is dict else len(v)


def _members(v: Any) -> Iterator[Any]:
    """What a container holds, in order: a dict's keys and values, pair by pair."""
    return chain.from_iterable(v.items()) if type(v) is dict else iter(v)


def load_plain(f: BinaryIO, path: str) -> Any:
    """The whole object of a small pickle, with the same refusals (tests, small files)."""
    for p, value in PickleStream(f, path, lambda _p: False).items():
        if p == TOP:
            return value
    raise IngestError(path, None, "no STOP opcode: truncated pickle")
