"""Aligning two sequences of node signatures, tolerant of insertions and deletions.

Node names are not stable between two compiles of one program (``op12`` in one is
``op14`` in the other, buffer numbers shift), so two timelines are aligned by content:
each node is a signature (``schemas/60_diff_timelines.sql``, ``_diff_items``), and the two
sequences are matched in order, as ``diff`` matches lines. Pure functions over lists of
strings: no DuckDB, no formats.

The matching (``match``) is patience diff with fallbacks, so that 100k-node timelines
take well under a second and memory stays linear:

1. the common prefix and suffix of a range match as they are;
2. a small range (at most ``DP_CELLS`` cells) is matched exactly by the LCS table;
3. otherwise, anchors: the signatures occurring exactly once in both ranges (patience
   diff), or else those occurring equally often in both (the k-th with the k-th), are
   kept where they are in the same order (longest increasing subsequence), and the
   ranges between anchors are matched the same way; a range with no common signature
   is left unmatched.

``align`` does this twice: first on the full signature (``same``), then, in each gap
between those matches, on the loose signature (kernel and origin without shapes or
dtypes: ``changed``), so that a node whose output grew is paired with its twin rather
than listed as removed and added.
"""

from __future__ import annotations

import bisect
from collections import Counter
from collections.abc import Sequence

from attrs import frozen

# A range of at most this many cells (len(a) * len(b)) is matched exactly by the LCS
# table; larger ones by anchors. The bound keeps the table's Python loop to a few
# milliseconds (measured: docs/benchmarks.md).
DP_CELLS = 40_000

SAME = "same"  # identical signatures
CHANGED = "changed"  # same loose signature (kernel, origin), other shapes or dtypes
INSERTED = "inserted"  # only in b
DELETED = "deleted"  # only in a


@frozen
class Step:
    """One row of an alignment: a_index / b_index are positions in the input lists
    (None on the side a node is missing from)."""

    a_index: int | None
    b_index: int | None
    method: str


def match(a: Sequence[str], b: Sequence[str]) -> list[tuple[int, int]]:
    """Pairs (i, j) with a[i] == b[j], increasing in both i and j."""
    pairs: list[tuple[int, int]] = []
    work = [(0, len(a), 0, len(b))]
    while work:
        alo, ahi, blo, bhi = work.pop()
        while alo < ahi and blo < bhi and a[alo] == b[blo]:
            pairs.append((alo, blo))
            alo += 1
            blo += 1
        while alo < ahi and blo < bhi and a[ahi - 1] == b[bhi - 1]:
            ahi -= 1
            bhi -= 1
            pairs.append((ahi, bhi))
        if alo == ahi or blo == bhi:
            continue
        if (ahi - alo) * (bhi - blo) <= DP_CELLS:
            pairs.extend(_lcs(a, alo, ahi, b, blo, bhi))
            continue
        anchors = _anchors(a, alo, ahi, b, blo, bhi)
        if not anchors:
            continue
        pi, pj = alo, blo
        for i, j in anchors:
            pairs.append((i, j))
            if i > pi and j > pj:
                work.append((pi, i, pj, j))
            pi, pj = i + 1, j + 1
        if pi < ahi and pj < bhi:
            work.append((pi, ahi, pj, bhi))
    pairs.sort()
    return pairs


def _lcs(a: Sequence[str], alo: int, ahi: int, b: Sequence[str], blo: int,
         bhi: int) -> list[tuple[int, int]]:
    """An exact longest common subsequence of a[alo:ahi] and b[blo:bhi] (small ranges)."""
    n, m = ahi - alo, bhi - blo
    # table[i][j] = LCS length of a[alo+i:ahi], b[blo+j:bhi] (suffixes), so that the walk
    # forward takes the earliest match first.
    table = [[0] * (m + 1) for _ in range(n + 1)]
    for i in range(n - 1, -1, -1):
        ai = a[alo + i]
        row, below = table[i], table[i + 1]
        for j in range(m - 1, -1, -1):
            if ai == b[blo + j]:
                row[j] = below[j + 1] + 1
            else:
                row[j] = below[j] if below[j] >= row[j + 1] else row[j + 1]
    out: list[tuple[int, int]] = []
    i = j = 0
    while i < n and j < m:
        if a[alo + i] == b[blo + j]:
            out.append((alo + i, blo + j))
            i += 1
            j += 1
        elif table[i + 1][j] >= table[i][j + 1]:
            i += 1
        else:
            j += 1
    return out


def _anchors(a: Sequence[str], alo: int, ahi: int, b: Sequence[str], blo: int,
             bhi: int) -> list[tuple[int, int]]:
    """Pairs of one signature's k-th occurrences, in order in both ranges."""
    ca = Counter(a[alo:ahi])
    cb = Counter(b[blo:bhi])
    unique = {s for s, n in ca.items() if n == 1 and cb.get(s) == 1}
    keep = unique or {s for s, n in ca.items() if cb.get(s) == n}
    if not keep:
        return []
    seen: dict[str, list[int]] = {}
    for j in range(blo, bhi):
        if b[j] in keep:
            seen.setdefault(b[j], []).append(j)
    taken: Counter[str] = Counter()
    cand: list[tuple[int, int]] = []
    for i in range(alo, ahi):
        s = a[i]
        if s in keep:
            cand.append((i, seen[s][taken[s]]))
            taken[s] += 1
    return _increasing(cand)


def _increasing(cand: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The longest subsequence of ``cand`` (sorted by i) increasing in j."""
    tails: list[int] = []  # tails[k]: the smallest j ending an increasing run of k+1
    tail_at: list[int] = []  # index into cand of that run's end
    prev = [-1] * len(cand)
    for k, (_, j) in enumerate(cand):
        pos = bisect.bisect_left(tails, j)
        if pos == len(tails):
            tails.append(j)
            tail_at.append(k)
        else:
            tails[pos] = j
            tail_at[pos] = k
        prev[k] = tail_at[pos - 1] if pos > 0 else -1
    out: list[tuple[int, int]] = []
    k = tail_at[-1] if tail_at else -1
    while k >= 0:
        out.append(cand[k])
        k = prev[k]
    out.reverse()
    return out


def align(a: Sequence[str], b: Sequence[str], a_loose: Sequence[str],
          b_loose: Sequence[str]) -> list[Step]:
    """The alignment of two node sequences: every node of a and of b once, in order.

    ``a``/``b`` are the full signatures, ``a_loose``/``b_loose`` the loose ones (same
    lengths). Matches on the full signature are ``same``; in the gaps between them,
    matches on the loose signature are ``changed`` (``same`` if the full ones agree);
    the rest are ``deleted`` (a only) and ``inserted`` (b only), a gap's deletions
    before its insertions.
    """
    if len(a) != len(a_loose) or len(b) != len(b_loose):
        raise ValueError("a signature list and its loose list differ in length")
    out: list[Step] = []
    pi = pj = 0
    for i, j in [*match(a, b), (len(a), len(b))]:
        if i > pi or j > pj:
            out.extend(_gap(a, b, a_loose, b_loose, pi, i, pj, j))
        if i < len(a):
            out.append(Step(i, j, SAME))
        pi, pj = i + 1, j + 1
    return out


def _gap(a: Sequence[str], b: Sequence[str], a_loose: Sequence[str],
         b_loose: Sequence[str], alo: int, ahi: int, blo: int, bhi: int) -> list[Step]:
    out: list[Step] = []
    pi, pj = alo, blo
    inner = match(a_loose[alo:ahi], b_loose[blo:bhi]) if alo < ahi and blo < bhi else []
    for di, dj in [*inner, (ahi - alo, bhi - blo)]:
        i, j = alo + di, blo + dj
        out.extend(Step(k, None, DELETED) for k in range(pi, i))
        out.extend(Step(None, k, INSERTED) for k in range(pj, j))
        if i < ahi:
            out.append(Step(i, j, SAME if a[i] == b[j] else CHANGED))
        pi, pj = i + 1, j + 1
    return out
