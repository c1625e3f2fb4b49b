"""Mutations of real dumps, shared by the property tests and the long fuzz campaign.

Each mutation is what crashed jobs and copy-pastes really do to a dump: a cut at a
random point, flipped bytes, a line dropped or repeated, binary noise, an enormous line.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import duckdb

MUTATIONS = ("truncate", "flip", "drop_line", "dup_line", "garbage", "huge_line", "swap_lines")


def mutate(data: bytes, kind: str, rnd: random.Random) -> bytes:
    if not data:
        return data
    if kind == "truncate":
        return data[: rnd.randrange(len(data))]
    if kind == "flip":
        b = bytearray(data)
        for _ in range(rnd.randint(1, 4)):
            b[rnd.randrange(len(b))] = rnd.randrange(256)
        return bytes(b)
    lines = data.split(b"\n")
    i = rnd.randrange(len(lines))
    if kind == "drop_line":
        del lines[i]
    elif kind == "dup_line":
        lines.insert(i, lines[i])
    elif kind == "garbage":
        lines.insert(i, bytes(rnd.randrange(256) for _ in range(rnd.randint(1, 64))))
    elif kind == "huge_line":
        lines.insert(i, b"x" * rnd.randint(1 << 16, 1 << 20))
    elif kind == "swap_lines":
        j = rnd.randrange(len(lines))
        lines[i], lines[j] = lines[j], lines[i]
    return b"\n".join(lines)


# What a hostile or badly broken file holds (the campaign, bench/fuzz.py): chunks repeated
# or lost, bytes that are no UTF-8, numbers at the edges of int64 and float, nesting a
# parser may recurse through; and in pickles, opcodes in the wrong place, length and memo
# index fields that lie, containers that hold themselves.
HOSTILE = ("dup_chunk", "drop_chunk", "bad_utf8", "edge_number", "deep")
PICKLE_HOSTILE = ("p_huge_field", "p_opcode", "p_deep", "p_cycle", "p_mark_run")

EDGE_NUMBERS = (b"9223372036854775807", b"9223372036854775808", b"-9223372036854775809",
                b"18446744073709551616", b"1e309", b"-1e309", b"1e99999999999", b"4e-400",
                b"NaN", b"-Infinity", b"-0", b"0.1e-99999", b"1" * 400, b"-" + b"9" * 400,
                b"1.7976931348623157e308", b"9.25e18")
BAD_UTF8 = (b"\xff", b"\xc0\xaf", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xe2\x82",
            b"\x00", b"\xef\xbb\xbf")


def hostile(data: bytes, kind: str, rnd: random.Random) -> bytes:
    """``data`` after one HOSTILE edit of ``kind``."""
    if not data:
        return data
    at = rnd.randrange(len(data) + 1)
    if kind in ("dup_chunk", "drop_chunk"):
        n = rnd.choice((1, 7, 64, 4096))
        chunk = data[at:at + n]
        return data[:at] + chunk + data[at:] if kind == "dup_chunk" else \
            data[:at] + data[at + n:]
    if kind == "bad_utf8":
        return data[:at] + rnd.choice(BAD_UTF8) + data[at:]
    if kind == "edge_number":
        digits = [i for i in range(len(data)) if 48 <= data[i] <= 57
                  and (i == 0 or not 48 <= data[i - 1] <= 57)]
        if not digits:
            return data
        i = rnd.choice(digits)
        j = i
        while j < len(data) and data[j] in b"0123456789.eE+-":
            j += 1
        return data[:i] + rnd.choice(EDGE_NUMBERS) + data[j:]
    if kind == "deep":
        n = rnd.choice((150, 1100, 20000, 300000))
        opening, closing = rnd.choice(((b"[", b"]"), (b'{"a":', b"}"), (b"(", b")")))
        return data[:at] + opening * n + b"1" + closing * n + data[at:]
    raise ValueError(kind)


# Pickle opcodes by the width of their argument (pickletools' names in comments).
_OP_ARGS = {
    b"(": 0, b")": 0, b"]": 0, b"}": 0, b"N": 0, b"\x88": 0, b"\x89": 0, b"a": 0, b"e": 0,
    b"s": 0, b"u": 0, b"t": 0, b"l": 0, b"d": 0, b"\x85": 0, b"\x86": 0, b"\x87": 0,
    b"\x8f": 0, b"\x90": 0, b"\x91": 0, b"0": 0, b"1": 0, b"2": 0, b"\x94": 0, b".": 0,
    b"R": 0, b"b": 0, b"\x93": 0, b"\x81": 0,
    b"K": 1, b"h": 1, b"q": 1, b"\x80": 1, b"\x8a": 1, b"C": 1, b"\x8c": 1, b"U": 1,
    b"M": 2, b"J": 4, b"j": 4, b"r": 4, b"B": 4, b"X": 4, b"\x8b": 4, b"T": 4,
    b"G": 8, b"\x8e": 8, b"\x8d": 8, b"\x96": 8, b"\x95": 8,
}
_LENGTHS = {b"C": 1, b"\x8c": 1, b"U": 1, b"\x8a": 1, b"B": 4, b"X": 4, b"T": 4,
            b"\x8b": 4, b"\x8e": 8, b"\x8d": 8, b"\x96": 8, b"\x95": 8,
            b"h": 1, b"q": 1, b"j": 4, b"r": 4}  # lengths, and memo indexes


def pickle_ops(data: bytes) -> list[tuple[int, bytes]]:
    """(offset, opcode) of every opcode of a pickle, as pickletools reads them."""
    import pickletools

    out = []
    try:
        for op, _, pos in pickletools.genops(data):
            out.append((pos, op.code.encode("latin-1")))
    except Exception:  # noqa: BLE001 - a prefix is enough
        pass
    return out


def pickle_hostile(data: bytes, kind: str, rnd: random.Random,
                   ops: list[tuple[int, bytes]]) -> bytes:
    """``data`` (a pickle, its opcodes ``ops``) after one PICKLE_HOSTILE edit of ``kind``."""
    if len(ops) < 3:
        return data
    at = rnd.choice(ops[1:])[0]  # an opcode boundary after PROTO
    if kind == "p_huge_field":
        fields = [(pos, op) for pos, op in ops if op in _LENGTHS]
        if not fields:
            return data
        pos, op = rnd.choice(fields)
        width = _LENGTHS[op]
        value = rnd.choice([(1 << (8 * width)) - 1, 1 << (8 * width - 1),
                            (1 << (8 * width - 1)) - 1, rnd.randrange(1 << (8 * width))])
        return data[:pos + 1] + value.to_bytes(width, "little") + data[pos + 1 + width:]
    if kind == "p_opcode":
        op = rnd.choice(list(_OP_ARGS))
        arg = bytes(rnd.randrange(256) for _ in range(_OP_ARGS[op]))
        return data[:at] + op + arg + data[at:]
    if kind == "p_deep":
        n = rnd.choice((101, 1000, 100000))
        run = rnd.choice((b"]" * n + b"a" * (n - 1), b")" + b"\x85" * n,
                          b"}" + (b"K\x01}" * n) + b"s" * n))
        return data[:at] + run + data[at:]
    if kind == "p_cycle":
        # an empty list or dict just memoized, read back and put into itself
        made = []
        memoized = 0
        for i, (_, op) in enumerate(ops[:-1]):
            nxt, nop = ops[i + 1]
            if op in (b"]", b"}") and nop in (b"\x94", b"q", b"r"):
                index = (memoized if nop == b"\x94" else
                         int.from_bytes(data[nxt + 1:nxt + (2 if nop == b"q" else 5)], "little"))
                made.append((op, index, nxt + (1 if nop == b"\x94" else 2 if nop == b"q" else 5)))
            memoized += op == b"\x94"
        if not made:
            return data
        op, index, after = rnd.choice(made)
        get = b"h" + bytes([index]) if index < 256 else b"j" + index.to_bytes(4, "little")
        body = get + b"a" if op == b"]" else b"K\x07" + get + b"s"
        return data[:after] + body + data[after:]
    if kind == "p_mark_run":
        n = rnd.choice((1000, 100000))
        run = rnd.choice((b"(" * n, b"(" + b"N" * n + b"l", b"(" + b"K\x01" * n + b"\x91"))
        return data[:at] + run + data[at:]
    raise ValueError(kind)


def reshuffle(texts: list[str], kind: str, i: int, rnd: random.Random) -> list[str] | None:
    """``texts`` (a module's or a graph's lines) after one structural edit of ``kind`` at
    line ``i``: drop it, dup it, swap it with a random line, or cut after it; None for any
    other kind (the caller's own edits)."""
    if kind not in ("drop", "dup", "swap", "cut"):
        return None
    if kind == "drop" and len(texts) > 1:
        del texts[i]
    elif kind == "dup":
        texts.insert(i, texts[i])
    elif kind == "swap":
        j = rnd.randrange(len(texts))
        texts[i], texts[j] = texts[j], texts[i]
    elif kind == "cut":
        texts = texts[:i + 1]
    return texts


def feed_lines(parser: Any, texts: list[str], numbers: list[int],
               state: Callable[[Any], tuple[Any, ...]]) -> tuple[Any, ...]:
    """Feed a line parser (wrapper, FX graph) the lines as log lines, then finish it:
    ("ok", records, *state(parser)) or ("error", type, path, line, message), what two
    implementations of it must agree on."""
    from tlview.ingest.torch_log import LogLine

    out: list[Any] = []
    try:
        for n, t in zip(numbers, texts):
            out += parser.feed(LogLine(n, t, 0, None))
        out += list(parser.finish())
    except Exception as e:  # noqa: BLE001 - any failure must be the same failure
        return ("error", type(e).__name__, getattr(e, "path", None), getattr(e, "line", None),
                str(e))
    return ("ok", out, *state(parser))


def same_result(want: tuple[Any, ...], got: tuple[Any, ...]) -> None:
    """Two ``feed_lines`` outcomes agree: equal records with equal attrs JSON (key order
    included), equal note and state, or equal errors."""
    from tlview.ingest.records import dumps

    assert got[0] == want[0], (got[:1], want)
    if want[0] == "error":
        assert got == want
        return
    assert got[1] == want[1]
    assert [dumps(getattr(r, "attrs", None)) for r in got[1]] == \
        [dumps(getattr(r, "attrs", None)) for r in want[1]]
    assert got[2] == want[2] and dumps(got[2].attrs) == dumps(want[2].attrs)
    assert got[3:] == want[3:]


def check_consistent(db_path: str, timeline_ids: list[int]) -> None:
    """The invariants every successful ingest must satisfy, whatever its input."""
    con = duckdb.connect(db_path, read_only=True)
    try:
        for tid in timeline_ids:
            # one statement per timeline (planning the views costs more than their rows)
            neg, orphan, early, mx, peak = con.execute(
                "SELECT (SELECT count(*) FROM memory_curve WHERE timeline_id = $1 "
                "AND live_bytes < 0), "
                "(SELECT count(*) FROM events f WHERE f.timeline_id = $1 "
                "AND f.kind = 'buffer_freed' AND NOT EXISTS (SELECT 1 FROM events a "
                "WHERE a.timeline_id = f.timeline_id AND a.kind = 'buffer_allocated' "
                "AND a.buffer = f.buffer)), "
                "(SELECT count(*) FROM buffers WHERE timeline_id = $1 "
                "AND last_step < alloc_step), "
                "(SELECT max(live_bytes) FROM memory_curve WHERE timeline_id = $1), "
                # the first row's peak, None where there is none
                "(SELECT peak_bytes FROM peak_memory WHERE timeline_id = $1 LIMIT 1)",
                [tid]).fetchone()
            assert neg == 0, "memory went negative"
            assert orphan == 0, "a buffer was freed that was never allocated"
            assert early == 0, "a buffer freed before it was allocated"
            assert peak == mx, "peak is not the maximum of the curve"
    finally:
        con.close()
