"""An independent reading of several ranks' profiler traces for the tests.

Written from the trace format and docs/ranks.md's rules, not from the SQL: json.load with
Decimal timestamps, plain dictionaries and sorted lists. One function per rule: the
calls of a trace, their match across ranks, the clock offsets, the arrivals, the waits.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

from reference_profile import load, ns


def calls(path: Path) -> list[dict[str, Any]]:
    """Every NCCL kernel of one trace with what its collective record says."""
    trace = load(path)
    base = int(trace.get("baseTimeNanoseconds", 0))
    rank = trace["distributedInfo"]["rank"]
    evs = trace["traceEvents"]
    launches = {e["args"]["correlation"]: ns(e["ts"]) for e in evs
                if e.get("cat") in ("cuda_runtime", "cuda_driver")
                and "correlation" in (e.get("args") or {})}
    records = {e["args"]["External id"]: e["args"] for e in evs
               if e.get("name") == "record_param_comms"}
    steps = [(ns(e["ts"]), ns(e["ts"]) + ns(e["dur"]), int(e["name"].split("#")[1]))
             for e in evs if e.get("cat") == "user_annotation"
             and e["name"].startswith("ProfilerStep#")]
    out = []
    for e in evs:
        if e.get("cat") != "kernel" or "nccl" not in e["name"].lower():
            continue
        args = e["args"]
        record = records.get(args.get("External id"), {})

        def get(key: str, args=args, record=record) -> Any:
            return args[key] if key in args else record.get(key)

        launch = launches[args["correlation"]]
        step = next((s for a, b, s in steps if a <= launch < b), None)
        ts, dur = ns(e["ts"]), ns(e["dur"])
        out.append({"rank": rank, "collective": get("Collective name"),
                    "pg": get("Process Group Name"), "pg_ranks": get("Process Group Ranks"),
                    "seq_num": get("Seq"), "step": step, "launch": launch, "ts": ts,
                    "dur": dur, "own_start": base + ts, "own_end": base + ts + dur,
                    "kernel": e["name"]})
    return out


def match(all_calls: list[dict[str, Any]]) -> tuple[dict[tuple, dict[int, dict]], dict]:
    """Instances: key -> {rank: call}; and the method of each process group."""
    by_pg: dict[tuple, list[dict]] = defaultdict(list)
    for c in all_calls:
        by_pg[(c["pg"], c["pg_ranks"])].append(c)
    instances: dict[tuple, dict[int, dict]] = defaultdict(dict)
    methods = {}
    for pg, cs in by_pg.items():
        if all(c["seq_num"] is not None for c in cs):
            method = "seq"
        elif all(c["step"] is not None for c in cs):
            method = "step_order"
        else:
            method = "order"
        methods[pg] = method
        groups: dict[tuple, list[dict]] = defaultdict(list)
        for c in cs:
            if method == "seq":
                sub = (c["seq_num"],)
            elif method == "step_order":
                sub = (c["step"], c["collective"])
            else:
                sub = (c["collective"],)
            groups[(c["rank"], *sub)].append(c)
        for (rank, *sub), g in groups.items():
            for k, c in enumerate(sorted(g, key=lambda c: (c["launch"], c["ts"])), start=1):
                instances[(pg, *sub, k)][rank] = c
    return dict(instances), methods


def lower_median(values: list[int]) -> int:
    s = sorted(values)
    return s[(len(s) - 1) // 2]


def offsets(instances: dict[tuple, dict[int, dict]]) -> dict[int, int]:
    """Each rank's clock offset from the lowest rank (all ranks share the world group)."""
    ranks = sorted({r for inst in instances.values() for r in inst})
    ref = ranks[0]
    out = {ref: 0}
    for r in ranks[1:]:
        diffs = [inst[r]["own_end"] - inst[ref]["own_end"] for inst in instances.values()
                 if r in inst and ref in inst]
        out[r] = lower_median(diffs)
    return out


def arrivals(instances: dict[tuple, dict[int, dict]], off: dict[int, int]) -> dict[tuple, dict]:
    """Per instance with two or more ranks: aligned arrivals, first/last, skew, last rank."""
    out = {}
    for key, inst in instances.items():
        if len(inst) < 2:
            continue
        start = {r: c["own_start"] - off[r] for r, c in inst.items()}
        last = max(start.values())
        last_rank = min(r for r, s in start.items() if s == last)
        others = [s for r, s in start.items() if r != last_rank]
        out[key] = {"start": start, "first": min(start.values()), "last": last,
                    "skew": last - min(start.values()), "last_rank": last_rank,
                    "late": last - max(others),
                    "comm": min(c["dur"] for c in inst.values())}
    return out


def waits(arr: dict[tuple, dict]) -> tuple[dict[int, int], dict[int, int], dict[int, int]]:
    """Per rank: time waited (latest arrival - own), wait caused as last rank, times last."""
    waited: dict[int, int] = defaultdict(int)
    caused: dict[int, int] = defaultdict(int)
    last: dict[int, int] = defaultdict(int)
    for a in arr.values():
        for r, s in a["start"].items():
            waited[r] += a["last"] - s
            caused[a["last_rank"]] += a["last"] - s
        last[a["last_rank"]] += 1
    return dict(waited), dict(caused), dict(last)
