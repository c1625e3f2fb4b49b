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
    from tlview.store.convert import dumps

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
            neg = con.execute(
                "SELECT count(*) FROM memory_curve WHERE timeline_id = ? AND live_bytes < 0",
                [tid]).fetchone()[0]
            assert neg == 0, "memory went negative"
            orphan = con.execute(
                "SELECT count(*) FROM events f WHERE f.timeline_id = ? AND f.kind = 'buffer_freed' "
                "AND NOT EXISTS (SELECT 1 FROM events a WHERE a.timeline_id = f.timeline_id "
                "AND a.kind = 'buffer_allocated' AND a.buffer = f.buffer)", [tid]).fetchone()[0]
            assert orphan == 0, "a buffer was freed that was never allocated"
            early = con.execute(
                "SELECT count(*) FROM buffers WHERE timeline_id = ? AND last_step < alloc_step",
                [tid]).fetchone()[0]
            assert early == 0, "a buffer freed before it was allocated"
            mx = con.execute("SELECT max(live_bytes) FROM memory_curve WHERE timeline_id = ?",
                             [tid]).fetchone()[0]
            peak = con.execute("SELECT peak_bytes FROM peak_memory WHERE timeline_id = ?",
                               [tid]).fetchone()
            assert (peak[0] if peak else None) == mx, "peak is not the maximum of the curve"
    finally:
        con.close()
