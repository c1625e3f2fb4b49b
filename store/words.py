"""Sentences the store's reports share: ranks as ranges, a hang's verdict in words, the
shortest label that tells a source apart from the others (the TUI's chooser, `tlview plot`).

`tlview ingest` (cli/hang_report.py), the run report and its headline (report.py) and the
TUI's runs screen say a hang with these, from the rows of ``hang_verdict`` that
``hang_queries`` reads. No figure is computed here: each is a view's.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from .hang_queries import Incident, Verdict, group_name


def rank_ranges(ranks: Sequence[int]) -> str:
    """``0-3, 5, 7-8``: runs of consecutive ranks."""
    out: list[str] = []
    for r in sorted(ranks):
        if out and "-" not in out[-1] and int(out[-1]) == r - 1:
            out[-1] = f"{out[-1]}-{r}"
        elif out and "-" in out[-1] and int(out[-1].split("-")[1]) == r - 1:
            out[-1] = f"{out[-1].split('-')[0]}-{r}"
        else:
            out.append(str(r))
    return ", ".join(out)


def artifact_counts(artifacts: Sequence[dict[str, Any]] | None) -> str:
    """A run's artifacts by kind (runs.artifacts): ``4 profiler traces, 2 output_code.py,
    1 TORCH_TRACE``: a kind in words takes its plural, a file's or format's name does not
    (``scheduler IR``, ``output_code.py``)."""
    return ", ".join(f"{a['files']} {a['kind']}"
                     + ("s" if a["files"] != 1 and a["kind"][-1:].islower()
                        and not a["kind"].endswith(".py") else "")
                     for a in artifacts or [])


def who(ranks: Sequence[int]) -> str:
    """``rank 3``, ``ranks 0-2``."""
    return f"rank{'s' if len(ranks) > 1 else ''} {rank_ranges(ranks)}"


def group_line(rows: Sequence[Verdict]) -> str:
    """One process group's first disagreement: ``default_pg #8 (gloo:all_reduce), rank
    missing: rank 1: never issued it; ranks 0, 2 wait in it [first in the incident]``."""
    v0 = rows[0]
    by: dict[str, list[int]] = {}
    for v in rows:
        by.setdefault(v.verdict, []).append(v.rank)
    parts = []
    for verdict in sorted(by, key=lambda k: (k in ("waiting", "completed"), k)):
        ranks = by[verdict]
        if verdict == "waiting":
            parts.append(f"{who(ranks)} wait{'' if len(ranks) > 1 else 's'} in it")
        elif verdict == "completed":
            parts.append(f"{who(ranks)} completed it")
        else:
            parts.append(f"{who(ranks)}: {verdict}")
    undecided = [v.rank for v in rows if v.culprit is None and v.verdict not in
                 ("missing dump", "not in its ring")]
    tail = (f" (ranks {rank_ranges(undecided)} split evenly: either may be wrong"
            f"{fr_trace_words(rows)})" if undecided else "")
    root = " [first in the incident]" if v0.root else ""
    return f"{where(rows)}, {v0.finding}: {'; '.join(parts)}{tail}{root}"


def where(rows: Sequence[Verdict]) -> str:
    """``default_pg #10 (nccl:all_reduce)``; a point-to-point exchange with its p2p id:
    ``default_pg #10 p2p #9 (nccl:send 0->1)``."""
    v0 = rows[0]
    p2p = f" p2p #{v0.p2p_seq}" if v0.p2p_seq is not None else ""
    return f"{group_name(v0.pg_desc, v0.process_group)} #{v0.seq}{p2p} ({expected(rows)})"


def fr_trace_words(rows: Sequence[Verdict]) -> str:
    """Where tlview cannot tell the culprit, what torch's analyzer does: of a p2p exchange
    whose ops do not pair it names none; of a collective split evenly it names the rank
    whose dump it read second (os.walk's order of the folder: not a property of the
    dumps)."""
    if rows[0].p2p_seq is not None and any(v.ops and " + " in v.ops for v in rows):
        return "; torch's analyzer names no culprit of a batch either"
    return "; torch's analyzer names one by the order it reads the files in"


def expected(rows: Sequence[Verdict]) -> str:
    """The call the group's ranks were to make: what most issued, else any rank's."""
    return rows[0].expected_ops or next((v.ops for v in rows if v.ops), None) or "?"


def by_group(i: Incident) -> dict[str, list[Verdict]]:
    """The incident's verdict rows by process group, the root group first."""
    groups: dict[str, list[Verdict]] = {}
    for v in i.verdicts:
        groups.setdefault(v.process_group, []).append(v)
    return groups


def hang_sentence(i: Incident, when: Callable[[int | None], str]) -> str:
    """The incident in one sentence, from its root group: who holds it up, who waits and
    since when, what the dumps lack."""
    root = list(i.root)
    if not root:
        return (f"Flight Recorder dumps of {who(list(i.ranks))}: every collective they hold "
                "matches across ranks and completed (no hang in them).")
    v0 = root[0]
    at = where(root)
    culprits = [v for v in root if v.culprit]
    undecided = [v for v in root if v.culprit is None
                 and v.verdict not in ("missing dump", "not in its ring")]
    waiting = [v.rank for v in root if v.verdict == "waiting"]
    if culprits:
        head = "; ".join(f"rank {v.rank} {_DID.get(v.verdict, v.verdict + ' at')} {at}"
                         for v in culprits)
    elif undecided:
        head = (f"ranks {rank_ranges([v.rank for v in undecided])} disagree at {at} "
                f"({v0.finding}; split evenly: either may be wrong{fr_trace_words(root)})")
    elif i.missing:
        head = f"{at}: {v0.finding}"
    else:
        head = f"{at} {v0.finding}: every rank issued it and none finished it"
    out = f"Hang: {head}"
    if waiting:
        out += (f"; {who(waiting)} wait{'' if len(waiting) > 1 else 's'} in it since "
                f"{when(v0.since_ns)}")
    conclusion = missing_conclusion(i)
    if conclusion:
        out += f"; {conclusion}"
    return out + "."


# A culprit's verdict as the verb before the collective it concerns.
_DID = {"never issued it": "never issued", "issued a different op": "issued another op than",
        "different sizes": "issued other sizes for", "different dtypes": "issued other dtypes for",
        "different state": "is in another state than the others in"}


def missing_conclusion(i: Incident) -> str:
    """What can still be concluded with some members' dumps missing (empty if none is)."""
    if not i.missing:
        return ""
    root = list(i.root)
    miss = f"no dump of {who(list(i.missing))}"
    if any(v.culprit for v in root):
        return f"{miss}; the other dumps name the culprit all the same"
    if root and all(v.verdict in ("waiting", "completed", "missing dump") for v in root):
        return (f"{miss}: every rank with a dump issued it, so only "
                f"{who(list(i.missing))} can hold it up")
    return f"{miss}: the verdict is of the ranks with a dump"


def incident_notes(i: Incident, rings: bool = True) -> list[str]:
    """What the dumps lack or disagree on: conflicts, rings too short, unknown versions,
    compiles that differ across ranks, dumps without a rank (missing dumps: see
    missing_conclusion); ``rings``: the ranks whose ring starts after the collective too."""
    out: list[str] = []
    for v in i.verdicts if rings else ():
        if v.verdict == "not in its ring":
            out.append(f"{v.reason}: its dump cannot tell whether it issued "
                       f"{group_name(v.pg_desc, v.process_group)} #{v.seq} (a larger "
                       "TORCH_FR_BUFFER_SIZE keeps more entries)")
    for c in i.conflicts:
        out.append(f"rank {c} is claimed by dumps of two processes that overlap in time "
                   f"({', '.join(i.paths_of(c))}): left out of the verdict")
    if not i.versions_known:
        out.append(f"dump version {', '.join(i.versions) or '(none stated)'} is not one "
                   "tlview knows: read by structure, unknown keys kept (fr_dumps.version_known)")
    for cid, with_it, without in i.compile_divergence[:3]:
        out.append(f"TORCH_TRACE compile {cid} is in the logs of {who(list(with_it))}, not of "
                   f"{who(list(without))}: a recompile on some ranks makes their collectives "
                   "differ (compile_divergence)")
    if len(i.compile_divergence) > 3:
        out.append(f"{len(i.compile_divergence) - 3} more compile ids differ across ranks "
                   "(compile_divergence)")
    if i.no_rank:
        out.append(f"{i.no_rank} dump{'s' * (i.no_rank != 1)} without a rank in name or "
                   "content: left out")
    return out


def source_labels(paths: Iterable[str]) -> dict[str, str]:
    """For each distinct path, its last k components with the smallest k that no other
    path ends with: ``fwd/output_code.py`` and ``bwd/output_code.py``, not two
    ``output_code.py``."""
    parts = {p: [x for x in p.split("/") if x] or [p] for p in set(paths)}
    out: dict[str, str] = {}
    pending = set(parts)
    k = 1
    while pending:
        ends = Counter("/".join(v[-k:]) for v in parts.values())
        for p in list(pending):
            end = "/".join(parts[p][-k:])
            if ends[end] == 1 or k >= len(parts[p]):
                out[p] = end
                pending.discard(p)
        k += 1
    return out
