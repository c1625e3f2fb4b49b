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
from collections.abc import Iterable, Sequence

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


class MomentSums:
    """``xla_peak_moment`` fed one value at a time: per-time sums, not a list of events.

    At one time all starts come before all ends, so the running sum only grows through
    a time's starts and only falls through its ends: summing them per time gives the
    same first strict maximum. Memory: two lists of ``n_times`` sums.
    """

    def __init__(self, n_times: int) -> None:
        self.up = [0] * n_times
        self.down = [0] * n_times

    def add(self, start: int, end: int, size: int) -> None:
        self.up[start] += size
        self.down[end + 1] += size

    def moment(self) -> int:
        usage = peak = 0
        moment = 0
        for time, (up, down) in enumerate(zip(self.up, self.down, strict=True)):
            usage += up
            if peak < usage:
                peak, moment = usage, time
            usage -= down
        return moment


def union_curve(values: Iterable[Placed], n_steps: int) -> list[int]:
    """Live bytes at each step 0..n_steps-1 by tlview's rule (union per allocation)."""
    cols: tuple[list[int], ...] = ([], [], [], [], [])
    for v in values:
        for col, x in zip(cols, (v.allocation, v.offset, v.size, v.start, v.end), strict=True):
            col.append(x)
    return union_curve_columns(*cols, n_steps=n_steps)


def union_curve_columns(allocation: Sequence[int], offset: Sequence[int], size: Sequence[int],
                        start: Sequence[int], end: Sequence[int], *,
                        n_steps: int) -> list[int]:
    """``union_curve`` over columns (value i is row i of each): no object per value."""
    by_alloc: dict[int, list[int]] = defaultdict(list)
    for i, a in enumerate(allocation):
        if size[i] > 0:
            by_alloc[a].append(i)
    delta = [0] * (n_steps + 1)
    while by_alloc:
        _, rows = by_alloc.popitem()
        opens: dict[int, list[int]] = defaultdict(list)
        closes: dict[int, list[int]] = defaultdict(list)
        for i in rows:
            opens[offset[i]].append(i)
            closes[offset[i] + size[i]].append(i)
        bounds = sorted(opens.keys() | closes.keys())
        active: set[int] = set()
        # Sweep the elementary byte segments; merge the live intervals covering each.
        for lo, hi in zip(bounds[:-1], bounds[1:], strict=True):
            active.difference_update(closes.get(lo, ()))
            active.update(opens.get(lo, ()))
            spans = sorted((start[i], end[i]) for i in active)
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
