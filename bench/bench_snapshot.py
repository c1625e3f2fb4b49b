"""CUDA allocator snapshot ingest at scale: the real compiled-step snapshot replicated to 100 MB / 1 GB.

The scaled snapshot keeps the fixture's end state (segments, blocks, settings) and
repeats its trace: copy c (c >= 1) is shifted by c * 2**36 in address and by c times the
trace's span in time, inside its own shifted segments (a segment_alloc of each before
it, a segment_free after), so that every copy pairs and replays like the original. It is
written opcode by opcode as Python's pickler writes torch's dicts (protocol 4, MARK /
SETITEMS batches, each entry's frames a new list of shared frame dicts, compile_context
and user_metadata new strings per entry): one copy is rendered once, then written again
per copy with its addresses and times patched (8-byte LONG1 fields), so the file is
written at disk speed and never held in memory.

Measured in the same run, each in its own process (wall time, peak RSS):
- ``pickle.load`` of the same file with an unpickler that resolves no global (the usual
  "safe" load; the C unpickler, whole object in memory),
- tlview's parse alone (records, no database), compiled core and, up to
  TLVIEW_BENCH_SNAPSHOT_PY_MB (default 100), the pure-Python reader, whose records
  must be the compiled core's (a digest of both; the bench stops if they differ),
- tlview ingest (parse + DuckDB write + the allocator caches), with DuckDB's memory
  during the ingest capped at tlview's default 512MB and at 256MB
  (TLVIEW_INGEST_MEMORY_LIMIT).
Goal (issue 11): >= 50 MB/s at >= 1 GB with peak RSS < 500 MB.

Sizes: TLVIEW_BENCH_SNAPSHOT_MB (default "100,1000").
"""

from __future__ import annotations

import gzip
import io
import os
import pickle
import struct
import sys
from pathlib import Path
from typing import Any, BinaryIO

from .harness import OUT, ROOT, Result, run_child

SOURCE = ROOT / "tests" / "fixtures" / "snapshot" / "compiled_step.pickle.gz"
SIZES_MB = [float(x) for x in os.environ.get("TLVIEW_BENCH_SNAPSHOT_MB", "100,1000").split(",")]
PY_MAX_MB = float(os.environ.get("TLVIEW_BENCH_SNAPSHOT_PY_MB", "100"))
SHIFT = 1 << 36


class _NoGlobals(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        raise pickle.UnpicklingError(f"global {module}.{name} refused")


def _load_source() -> dict[str, Any]:
    return _NoGlobals(io.BytesIO(gzip.decompress(SOURCE.read_bytes()))).load()


class _Writer:
    """Protocol-4 opcodes as Python's pickler writes plain dicts, lists and scalars; the
    memo held only for the objects the caller says live on."""

    def __init__(self, f: BinaryIO) -> None:
        self.f = f
        self.memo: dict[int, int] = {}
        self.keep: list[Any] = []  # memoized objects kept alive (stable ids)
        self.n = 0

    def w(self, b: bytes) -> None:
        self.f.write(b)

    def memoize(self, obj: Any, keep: bool) -> None:
        self.w(b"\x94")
        if keep:
            self.memo[id(obj)] = self.n
            self.keep.append(obj)
        self.n += 1

    def get(self, obj: Any) -> bool:
        i = self.memo.get(id(obj))
        if i is None:
            return False
        self.w(b"h" + bytes([i]) if i < 256 else b"j" + struct.pack("<I", i))
        return True

    def save(self, v: Any, keep: bool = True) -> None:
        if v is None:
            self.w(b"N")
        elif v is True or v is False:
            self.w(b"\x88" if v else b"\x89")
        elif type(v) is int:
            if 0 <= v < 256:
                self.w(b"K" + bytes([v]))
            elif 0 <= v < 65536:
                self.w(b"M" + struct.pack("<H", v))
            elif -(1 << 31) <= v < (1 << 31):
                self.w(b"J" + struct.pack("<i", v))
            else:
                n = (v.bit_length() + 8) // 8
                self.w(b"\x8a" + bytes([n]) + v.to_bytes(n, "little", signed=True))
        elif type(v) is float:
            self.w(b"G" + struct.pack(">d", v))
        elif type(v) is str:
            if self.get(v):
                return
            b = v.encode("utf-8", "surrogatepass")
            self.w((b"\x8c" + bytes([len(b)])) if len(b) < 256 else (b"X" + struct.pack("<I", len(b))))
            self.w(b)
            self.memoize(v, keep)
        elif type(v) is tuple:
            if self.get(v):
                return
            for x in v:
                self.save(x, keep)
            self.w(bytes([0x84 + len(v)]) if 1 <= len(v) <= 3 else b")")
            self.memoize(v, keep)
        elif type(v) is list:
            if self.get(v):
                return
            self.w(b"]")
            self.memoize(v, keep)
            self._batch(v, keep)
        elif type(v) is dict:
            if self.get(v):
                return
            self.w(b"}")
            self.memoize(v, keep)
            items = list(v.items())
            if len(items) == 1:
                self.save(items[0][0], keep)
                self.save(items[0][1], keep)
                self.w(b"s")
            for i in range(0, len(items) if len(items) > 1 else 0, 1000):
                self.w(b"(")
                for k, x in items[i:i + 1000]:
                    self.save(k, keep)
                    self.save(x, keep)
                self.w(b"u")
        else:
            raise TypeError(type(v))

    def _batch(self, items: list[Any], keep: bool) -> None:
        if len(items) == 1:
            self.save(items[0], keep)
            self.w(b"a")
            return
        for i in range(0, len(items), 1000):
            self.w(b"(")
            for x in items[i:i + 1000]:
                self.save(x, keep)
            self.w(b"e")


def _entries(trace: list[dict[str, Any]], segs: list[tuple[int, int]], t0: int, span: int,
             with_segments: bool) -> list[dict[str, Any]]:
    """One copy of the trace (unshifted), inside its own segments when ``with_segments``."""
    out: list[dict[str, Any]] = []
    if with_segments:
        out += [{"action": "segment_alloc", "addr": a, "size": n, "stream": 0, "time_us": t0}
                for a, n in segs]
    out += [dict(e) for e in trace]
    if with_segments:
        out += [{"action": "segment_free", "addr": a, "size": n, "stream": 0,
                 "time_us": t0 + span - 1} for a, n in segs]
    return out


def _template(w: _Writer, entries: list[dict[str, Any]], shared: bool
              ) -> tuple[bytes, list[int], list[int]]:
    """The bytes of one copy's batches, and where each entry's addr and time_us lie (8-byte
    LONG1 payloads, patched per copy). Entry dicts, frames lists and per-entry text are
    memoized as the pickler does but never referred to again; keys, action strings and
    frame dicts are shared (``shared``: memoized at their first use, in copy 0), so every
    later copy's bytes are the same but for those fields."""
    f = io.BytesIO()
    w.f = f
    addr_at: list[int] = []
    time_at: list[int] = []
    for i in range(0, len(entries), 1000):
        w.w(b"(")
        for d in entries[i:i + 1000]:
            w.w(b"}")
            w.memoize(d, False)
            w.w(b"(")
            for k, v in d.items():
                w.save(k, keep=shared)
                if k in ("addr", "time_us"):
                    w.w(b"\x8a\x08")
                    (addr_at if k == "addr" else time_at).append(f.tell())
                    w.w(struct.pack("<q", v))
                elif k == "frames":
                    w.w(b"]")
                    w.memoize(v, False)
                    if v:
                        w._batch(v, shared)  # the frame dicts: shared, memoized once
                else:  # the action strings are shared, other text new per entry
                    w.save(v, keep=shared and k == "action")
            w.w(b"u")
        w.w(b"e")
    return f.getvalue(), addr_at, time_at


def write_scaled(mb: float, path: Path) -> None:
    """The fixture's snapshot with its trace repeated to about ``mb`` MB."""
    snap = _load_source()
    trace = snap["device_traces"][0]
    t0 = min(e["time_us"] for e in trace)
    span = max(e["time_us"] for e in trace) - t0 + 1000
    segs = [(s["address"], s["total_size"]) for s in snap["segments"]]
    target = int(mb * 1e6)
    first = _entries(trace, segs, t0, span, False)
    later = _entries(trace, segs, t0, span, True)
    with open(path, "wb") as f:
        w = _Writer(f)
        w.w(b"\x80\x04}")
        w.memoize(snap, True)
        w.w(b"(")
        w.save("segments")
        w.save(snap["segments"])
        w.save("device_traces")
        w.w(b"]")
        w.memoize([], False)
        w.w(b"(]")  # one device: its list
        w.memoize([], False)
        # Copy 0 as the pickler writes it: keys, actions and frame dicts appear first inside
        # its entries (memoized there), later copies refer to them.
        data, addr_at, time_at = _template(w, first, shared=True)
        f.write(data)
        n_before = w.n
        template = _template(w, later, shared=False)
        per_copy = w.n - n_before  # memo slots each copy's bytes take
        w.f = f
        copy = 1
        while f.tell() < target:
            data, addr_at, time_at = template
            buf = bytearray(data)
            shift, tshift = copy * SHIFT, copy * span
            for d, at, tt in zip(later, addr_at, time_at):
                struct.pack_into("<q", buf, at, d["addr"] + shift)
                struct.pack_into("<q", buf, tt, d["time_us"] + tshift)
            f.write(buf)
            copy += 1
        w.n = n_before + (copy - 1) * per_copy
        w.w(b"e")  # the device's list into device_traces
        for k in ("allocator_settings", "external_annotations"):
            w.save(k)
            w.save(snap.get(k, {} if k == "allocator_settings" else []))
        w.w(b"u.")


def scaled_snapshot(mb: float) -> Path:
    path = OUT / f"snapshot_{mb:g}MB.pickle"
    if path.exists():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    write_scaled(mb, tmp)
    tmp.rename(path)
    return path


def pickle_load(path: str) -> int:
    """The baseline: the whole object by pickle.load (globals refused); trace entries."""
    with open(path, "rb") as f:
        snap = _NoGlobals(f).load()
    return sum(len(t) for t in snap["device_traces"])


def parse_only(path: str, native: str = "1") -> int:
    """tlview's reader and record building, without the database; events made."""
    os.environ["TLVIEW_NATIVE"] = native
    from tlview.ingest.cuda_snapshot import parse_snapshot

    n = 0
    for r in parse_snapshot(path):
        n += len(r) if hasattr(r, "columns") else 1
    return n


def digest(path: str, native: str) -> str:
    """A sha256 of what the reader yields, as comparable values (every event as its
    events-table row, interned frames and stacks, the other records), as
    tests/native/test_cuda_snapshot.py compares the compiled reader with the Python one."""
    import hashlib
    import json

    import attrs

    os.environ["TLVIEW_NATIVE"] = native
    from tlview.ingest.cuda_snapshot import parse_snapshot
    from tlview.ingest.records import EVENT_KINDS, EventColumns, FrameInterned, StackInterned
    from tlview.store.convert import EVENT_COLUMNS, event_tuple

    row_columns = [c for c in EVENT_COLUMNS if c not in ("source_id", "timeline_id", "seq")]
    h = hashlib.sha256()
    interned: list[Any] = []
    for r in parse_snapshot(path):
        if isinstance(r, EventColumns):
            cols = {k: v.to_pylist() for k, v in r.columns.items()}
            tl = cols.get("_tl")
            for i in range(r.n):
                row = tuple(cols[c][i] if c in cols else None for c in row_columns)
                h.update(repr((r.timelines[tl[i] if tl else 0], *row)).encode())
        elif type(r) in EVENT_KINDS:
            h.update(repr((r.timeline, *event_tuple(r))).encode())  # type: ignore[union-attr]
        elif isinstance(r, (FrameInterned, StackInterned)):
            interned.append(r)
        else:
            h.update(json.dumps(attrs.asdict(r), sort_keys=True, default=str).encode())
    interned.sort(key=lambda r: (type(r).__name__, getattr(r, "frame_id", 0),
                                 getattr(r, "stack_id", 0)))
    for r in interned:
        h.update(json.dumps(attrs.asdict(r), default=str).encode())
    return h.hexdigest()


def ingest_limited(path: str, db: str, limit: str) -> int:
    """The ingest with DuckDB's memory capped at ``limit`` during it."""
    os.environ["TLVIEW_INGEST_MEMORY_LIMIT"] = limit
    from .harness import ingest_file

    return ingest_file(path, db, "cuda_snapshot")


def main() -> list[Result]:
    OUT.mkdir(parents=True, exist_ok=True)
    results: list[Result] = []
    for mb in SIZES_MB:
        path = scaled_snapshot(mb)
        size = path.stat().st_size
        label = f"snapshot {size / 1e6:,.0f} MB"
        print(f"{label}: {path}", file=sys.stderr, flush=True)
        load = run_child("bench.bench_snapshot:pickle_load", str(path))
        results.append(Result("pickle.load, no globals (baseline)", label, size, load["wall_s"],
                              load["peak_rss_mb"], events=load["result"]))
        parse = run_child("bench.bench_snapshot:parse_only", str(path), "1")
        results.append(Result("tlview parse only, compiled", label, size, parse["wall_s"],
                              parse["peak_rss_mb"], events=parse["result"],
                              baseline={"time vs pickle.load": parse["wall_s"] / load["wall_s"],
                                        "RSS vs pickle.load":
                                            parse["peak_rss_mb"] / load["peak_rss_mb"]}))
        if mb <= PY_MAX_MB:
            # the compiled reader gives what the Python one (the specification) gives
            d_native = run_child("bench.bench_snapshot:digest", str(path), "1")["result"]
            d_py = run_child("bench.bench_snapshot:digest", str(path), "0")["result"]
            print(f"{label}: records digest, compiled {d_native[:16]}, pure Python "
                  f"{d_py[:16]}: {'the same' if d_native == d_py else 'DIFFERENT'}",
                  file=sys.stderr, flush=True)
            if d_native != d_py:
                raise SystemExit(f"{label}: the compiled reader's records differ from the "
                                 "Python reader's")
            py = run_child("bench.bench_snapshot:parse_only", str(path), "0")
            results.append(Result("tlview parse only, pure Python", label, size, py["wall_s"],
                                  py["peak_rss_mb"], events=py["result"],
                                  baseline={"time vs pickle.load": py["wall_s"] / load["wall_s"]}))
        for limit in ("512MB", "256MB"):  # tlview's default cap on DuckDB, and a lower one
            ing = run_child("bench.bench_snapshot:ingest_limited", str(path),
                            str(OUT / "snapshot.duckdb"), limit)
            results.append(Result(f"tlview ingest (DuckDB {limit})", label, size, ing["wall_s"],
                                  ing["peak_rss_mb"], events=ing["result"],
                                  baseline={"time vs pickle.load": ing["wall_s"] / load["wall_s"],
                                            "RSS vs pickle.load":
                                                ing["peak_rss_mb"] / load["peak_rss_mb"]},
                                  # issue 11: >= 1 GB at >= 50 MB/s, peak RSS < 500 MB
                                  target_mb_s=50 if size >= 1e9 else None,
                                  target_rss_mb=500 if size >= 1e9 else None))
    return results


if __name__ == "__main__":
    from .harness import print_table

    print_table(main())
