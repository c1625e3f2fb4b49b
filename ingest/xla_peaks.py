"""Two peak rules over XLA live ranges, used at ingest time to word the warnings.

The figures users see come from the SQL views (``memory_curve``, ``xla_peak_check``);
these functions apply the same documented rules so that ``tlview ingest`` can say
plainly when XLA's stated peak is not the true maximum.

* tlview's rule: a value is live at step s when start <= s <= end; the live bytes
  of an allocation at s are the bytes covered by the union of ``[offset, offset+size)``
  of its live values; the peak is the first step reaching the maximum.
* XLA's moment rule (``HloLiveRange::ComputePeakMemoryMoment``): events
  ``(start, +size)`` and ``(end + 1, -size)`` sorted by time with starts before
  ends at equal times; the moment is the time of the first strict new maximum of
  the running sum. ``size`` is the byte size of the defining instruction's shape.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

import attrs


@attrs.frozen
class Placed:
    """A value with a known interval, placed at ``offset`` in ``allocation``."""

    allocation: int
    offset: int
    size: int
    start: int
    end: int


def xla_peak_moment(values: Iterable[tuple[int, int, int]]) -> int:
    """XLA's peak moment for ``(start, end, size)`` triples (0 when nothing is live)."""
    events: list[tuple[int, bool, int]] = []
    for start, end, size in values:
        events.append((start, False, size))
        events.append((end + 1, True, -size))
    events.sort(key=lambda e: (e[0], e[1]))
    usage = peak = 0
    moment = 0
    for time, _, delta in events:
        usage += delta
        if peak < usage:
            peak, moment = usage, time
    return moment


def union_curve(values: Iterable[Placed], n_steps: int) -> list[int]:
    """Live bytes at each step 0..n_steps-1 by tlview's rule (union per allocation)."""
    by_alloc: dict[int, list[Placed]] = defaultdict(list)
    for v in values:
        if v.size > 0:
            by_alloc[v.allocation].append(v)
    delta = [0] * (n_steps + 1)
    for vals in by_alloc.values():
        opens: dict[int, list[int]] = defaultdict(list)
        closes: dict[int, list[int]] = defaultdict(list)
        for i, v in enumerate(vals):
            opens[v.offset].append(i)
            closes[v.offset + v.size].append(i)
        bounds = sorted(opens.keys() | closes.keys())
        active: set[int] = set()
        # Sweep the elementary byte segments; merge the live intervals covering each.
        for lo, hi in zip(bounds[:-1], bounds[1:], strict=True):
            active.difference_update(closes.get(lo, ()))
            active.update(opens.get(lo, ()))
            spans = sorted((vals[i].start, vals[i].end) for i in active)
            merged: list[list[int]] = []
            for s, e in spans:
                if merged and s <= merged[-1][1] + 1:
                    merged[-1][1] = max(merged[-1][1], e)
                else:
                    merged.append([s, e])
            for s, e in merged:
                if s < n_steps:
                    delta[s] += hi - lo
                    delta[min(e + 1, n_steps)] -= hi - lo
    curve, live = [], 0
    for s in range(n_steps):
        live += delta[s]
        curve.append(live)
    return curve


def first_max(curve: list[int]) -> tuple[int, int] | None:
    """``(step, bytes)`` of the first step reaching the maximum, or None for no steps."""
    if not curve:
        return None
    best = max(curve)
    return curve.index(best), best
