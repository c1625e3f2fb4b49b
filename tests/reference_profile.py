"""An independent reading of profiler traces for the tests: json.load + plain interval math.

Written from the trace format and docs/profiles.md's definitions, not from the
ingester's code: timestamps via Decimal, unions by sorting, intersections by
a two-pointer sweep.
"""

from __future__ import annotations

import gzip
import json
from decimal import Decimal
from pathlib import Path
from typing import Any

GPU_CATS = {"kernel", "gpu_memcpy", "gpu_memset"}


def load(path: Path) -> dict[str, Any]:
    with gzip.open(path, "rt") if path.suffix == ".gz" else open(path) as f:
        return json.load(f, parse_float=Decimal)


def ns(us: Any) -> int:
    return int(Decimal(us) * 1000)


def is_comm(name: str) -> bool:
    return "nccl" in name.lower()


def gpu_events(trace: dict[str, Any]) -> list[dict[str, Any]]:
    return [e for e in trace["traceEvents"] if e.get("ph") == "X" and e.get("cat") in GPU_CATS]


def interval(e: dict[str, Any]) -> tuple[int, int]:
    return ns(e["ts"]), ns(e["ts"]) + ns(e["dur"])


def union(intervals: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[list[int]] = []
    for s, e in sorted(i for i in intervals if i[1] > i[0]):
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return [(s, e) for s, e in out]


def measure(intervals: list[tuple[int, int]]) -> int:
    return sum(e - s for s, e in intervals)


def intersection(a: list[tuple[int, int]], b: list[tuple[int, int]]) -> int:
    """Total length of (union a) & (union b), both already unions."""
    i = j = total = 0
    while i < len(a) and j < len(b):
        lo, hi = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if hi > lo:
            total += hi - lo
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return total


def overlap(trace: dict[str, Any]) -> tuple[int, int]:
    """(comm_ns, overlapped_ns) of one single-GPU trace, by docs/profiles.md's definition."""
    kernels = [e for e in gpu_events(trace) if e["cat"] == "kernel"]
    comm = union([interval(e) for e in kernels if is_comm(e["name"])])
    comp = union([interval(e) for e in kernels if not is_comm(e["name"])])
    return measure(comm), intersection(comm, comp)


def nearest_rank(values: list[int], q: float) -> int:
    """Smallest value with at least q of the values at or below it."""
    s = sorted(values)
    k = 0
    while (k + 1) / len(s) < q:
        k += 1
    return s[k]
