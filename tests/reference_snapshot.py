"""An independent reading of allocator snapshots for the tests.

Loads the pickle with the standard library's unpickler restricted to plain data (no
global is ever resolved), and replays the trace with the issue's rule, written here from
the format and not from the ingester: alloc adds the entry's size, free_completed removes
it, the start is the end state's active blocks minus the trace's net change.
"""

from __future__ import annotations

import gzip
import io
import pickle
from pathlib import Path
from typing import Any


class _PlainUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:  # noqa: D102
        raise pickle.UnpicklingError(f"refused global {module}.{name}")


def load(path: Path) -> dict[str, Any]:
    data = path.read_bytes()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    return _PlainUnpickler(io.BytesIO(data)).load()


def active_blocks(snap: dict[str, Any], device: int = 0) -> list[dict[str, Any]]:
    return [b for s in snap["segments"] if s.get("device", 0) == device for b in s["blocks"]
            if b["state"] in ("active_allocated", "active_pending_free")]


def replay(snap: dict[str, Any], device: int = 0) -> dict[str, Any]:
    """allocated (requested) and reserved bytes after every entry, and the start."""
    trace = snap["device_traces"][device]
    d_alloc = [0]
    d_res = [0]
    for e in trace:
        a = e["action"]
        d_alloc.append(d_alloc[-1] + (e["size"] if a == "alloc" else
                                      -e["size"] if a == "free_completed" else 0))
        d_res.append(d_res[-1] + (e["size"] if a in ("segment_alloc", "segment_map") else
                                  -e["size"] if a in ("segment_free", "segment_unmap") else 0))
    end_alloc = sum(b["requested_size"] for b in active_blocks(snap, device))
    end_res = sum(s["total_size"] for s in snap["segments"] if s.get("device", 0) == device)
    start_alloc = end_alloc - d_alloc[-1]
    start_res = end_res - d_res[-1]
    allocated = [start_alloc + x for x in d_alloc]  # [start, after entry 0, after entry 1...]
    reserved = [start_res + x for x in d_res]
    peak = max(allocated)
    return {
        "start": start_alloc, "allocated": allocated, "reserved": reserved,
        "peak": peak, "peak_index": allocated.index(peak) - 1,  # -1: the start
        "reserved_peak": max(reserved),
    }


def live_at(snap: dict[str, Any], index: int, device: int = 0) -> dict[int, int]:
    """address -> requested size of the blocks allocated after entry ``index``."""
    trace = snap["device_traces"][device]
    live = {b["address"]: b["requested_size"] for b in active_blocks(snap, device)}
    # Walk back from the end: undo every entry after ``index``.
    for e in reversed(trace[index + 1:]):
        if e["action"] == "alloc":
            live.pop(e["addr"])
        elif e["action"] == "free_completed":
            live[e["addr"]] = e["size"]
    return live
