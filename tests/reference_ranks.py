"""An independent reading of several ranks' profiler traces for the tests.

Written from the trace format and docs/ranks.md's rules, not from the SQL: json.load with
Decimal timestamps, plain dictionaries and sorted lists. One function per rule: the
calls of a trace, their match across ranks, the clock offsets, the arrivals, the waits,
the steps' GPU extents and the what-if replay of a late rank.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

from tests.reference_profile import load, ns

KINDS = (("allreduce", "AllReduce"), ("reducescatter", "ReduceScatter"),
         ("allgather", "AllGather"), ("alltoall", "AllToAll"), ("broadcast", "Broadcast"),
         ("barrier", "Barrier"), ("sendrecv", "SendRecv"), ("send", "SendRecv"),
         ("recv", "SendRecv"), ("reduce", "Reduce"))


def kind(collective: str | None, kernel: str) -> str | None:
    """The collective's kind, from torch's collective name, else the NCCL kernel's name
    (a kernel replayed by a CUDA graph has no collective record)."""
    x = f"{collective or ''} {kernel}".replace("_", "").lower()
    return next((k for word, k in KINDS if word in x), None)


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
    groups = trace["distributedInfo"].get("pg_config") or []
    only = groups[0] if len(groups) == 1 else {}  # a kernel with no group is in the only one
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
        pg = get("Process Group Name")
        out.append({"rank": rank, "collective": get("Collective name"),
                    "pg": pg if pg is not None else only.get("pg_name"),
                    "pg_ranks": get("Process Group Ranks") if pg is not None else (
                        "[" + ", ".join(map(str, only["ranks"])) + "]" if only else None),
                    "seq_num": get("Seq"), "step": step, "launch": launch, "ts": ts,
                    "dur": dur, "own_start": base + ts, "own_end": base + ts + dur,
                    "kernel": e["name"], "kind": kind(get("Collective name"), e["name"])})
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
                sub = (c["step"], c["collective"] or c["kind"] or c["kernel"])
            else:
                sub = (c["collective"] or c["kind"] or c["kernel"],)
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


def gpu_extents(path: Path) -> dict[int, int]:
    """Per ProfilerStep of one trace, the extent of the GPU work its CPU range launched
    (first start to last end), read from the trace itself."""
    trace = load(path)
    evs = trace["traceEvents"]
    launch = {e["args"]["correlation"]: ns(e["ts"]) for e in evs
              if e.get("cat") in ("cuda_runtime", "cuda_driver")
              and "correlation" in (e.get("args") or {})}
    steps = [(ns(e["ts"]), ns(e["ts"]) + ns(e["dur"]), int(e["name"].split("#")[1]))
             for e in evs if e.get("cat") == "user_annotation"
             and e["name"].startswith("ProfilerStep#")]
    span: dict[int, list[int]] = {}
    for e in evs:
        if e.get("cat") not in ("kernel", "gpu_memcpy", "gpu_memset"):
            continue
        t = launch.get((e.get("args") or {}).get("correlation"))
        step = next((k for a, b, k in steps if t is not None and a <= t < b), None)
        if step is not None:
            lo, hi = ns(e["ts"]), ns(e["ts"]) + ns(e["dur"])
            cur = span.setdefault(step, [lo, hi])
            cur[0], cur[1] = min(cur[0], lo), max(cur[1], hi)
    return {k: hi - lo for k, (lo, hi) in span.items()}


def whatif(paths: list[Path], gate: bool = True) -> dict[tuple[int, int], tuple[int, int]]:
    """The what-if replay of whatif_stragglers (docs/hangs.md), read from the traces on
    their own: per (step, late rank), (collectives it was last at, saved ns). A rank's ready
    time (the end of its last compute kernel before its collective kernel) moves with the
    latest earlier collective of the step that ended before it and that it waited for: the
    previous one, or one at whose end (its own kernel's) its GPU ran no compute kernel
    (gate=False: any earlier one, to show where that rule matters)."""
    instances, _ = match([c for p in paths for c in calls(p)])
    off = offsets(instances)
    arr = arrivals(instances, off)
    compute: dict[int, list[tuple[int, int]]] = {}
    for p in paths:  # each rank's compute kernels (one GPU per rank in these traces)
        t = load(p)
        compute[t["distributedInfo"]["rank"]] = sorted(
            (ns(e["ts"]), ns(e["ts"]) + ns(e["dur"])) for e in t["traceEvents"]
            if e.get("cat") == "kernel" and "nccl" not in e["name"].lower())
    ready: dict[tuple, dict[int, int]] = {}
    idle: dict[tuple, dict[int, bool]] = {}
    for key, a in arr.items():
        ready[key], idle[key] = {}, {}
        for r, call in instances[key].items():
            before = [e for _, e in compute[r] if e <= call["ts"]]
            ready[key][r] = a["start"][r] - (call["ts"] - max(before)) if before \
                else a["start"][r]
            end = call["ts"] + call["dur"]
            idle[key][r] = not any(s < end < e for s, e in compute[r])
    by_step: dict[int, list[tuple]] = {}
    for key, a in arr.items():
        step = instances[key][a["last_rank"]]["step"]
        end = max(c["own_end"] - off[r] for r, c in instances[key].items())
        by_step.setdefault(step, []).append((a["last"], key, end))
    out = {}
    for step, colls in by_step.items():
        colls.sort(key=lambda c: (c[0], c[1]))
        for x in {arr[k]["last_rank"] for _, k, _ in colls if arr[k]["late"] > 0}:
            n_late = sum(1 for _, k, _ in colls if arr[k]["last_rank"] == x and arr[k]["late"] > 0)
            done: list[tuple[int, int, tuple]] = []  # (real end, real - replayed end, key)
            for start, key, real_end in colls:
                got = {}
                for r, rd in ready[key].items():
                    if not done:
                        got[r] = arr[key]["start"][r]
                        continue
                    waited = [(e, sh) for i, (e, sh, k) in enumerate(done) if e < rd and (
                        i == len(done) - 1 or idle[k].get(r, False) or not gate)]
                    got[r] = rd - (max(waited)[1] if waited else 0)
                others = max(v for r, v in got.items() if r != x)
                mine = got.get(x)
                s2 = max(others, min(mine, others) if mine is not None else others,
                         done[-1][0] - done[-1][1] if done else others)
                done.append((real_end, real_end - (s2 + (real_end - start)), key))
            out[(step, x)] = (n_late, done[-1][1])
    return out
