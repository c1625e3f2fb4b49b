"""Kineto trace ingest at scale: the real 2-rank fixture's rank-0 trace replicated to 100 MB / 1 GB.

The scaled trace keeps the real header (distributedInfo, deviceProperties) and
repeats the real events, each copy shifted in time by the original span and with
its correlation / External ids offset, so joins stay unique. Events are written
in Kineto's own multi-line layout.

Measured in the same run, each in its own process (wall time, peak RSS):
- tlview ingest (compiled parse + DuckDB write, caches, commit: end to end),
- tlview's parse alone (no database), and the database's share alone: the same
  write (INSERT, caches, COMMIT) over columns parsed beforehand (the floor the parse
  thread overlaps with),
- a bare line scan of the file (the floor of reading it in Python),
- ``json.load`` and ``orjson.loads`` of the same file (what scripts do; orjson is in
  the ``dev`` extra only, and said so where it is missing),
- the previous release's ingest: the pure-Python parser (``TLVIEW_NATIVE=0``), up to
  TLVIEW_BENCH_KINETO_PY_MAX_MB (default 100), with the events digest of both
  databases compared (store/digest.py): the benchmark fails where they differ,
- Holistic Trace Analysis: ``TraceAnalysis`` load + ``get_comm_comp_overlap``, run
  with the interpreter in ``TLVIEW_HTA_PYTHON`` (default /work/venv-hta/bin/python);
  skipped, and said so, where that interpreter is missing.
Goal (issue 15): >= 100 MB/s end to end at 1 GB, peak RSS < 500 MB.

Sizes: TLVIEW_BENCH_KINETO_MB (default "100,1000"); HTA runs up to
TLVIEW_BENCH_HTA_MAX_MB (default 300), beyond that its RAM would exceed this machine's.
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from decimal import Decimal
from pathlib import Path
from typing import Any

from .harness import OUT, ROOT, Result, run_child, scan_floors

SOURCE = ROOT / "tests" / "fixtures" / "profile" / "coll" / "rank0" / "rank0.pt.trace.json.gz"
SIZES_MB = [float(x) for x in os.environ.get("TLVIEW_BENCH_KINETO_MB", "100,1000").split(",")]
PY_MAX_MB = float(os.environ.get("TLVIEW_BENCH_KINETO_PY_MAX_MB", "100"))
HTA_MAX_MB = float(os.environ.get("TLVIEW_BENCH_HTA_MAX_MB", "300"))
HTA_PYTHON = os.environ.get("TLVIEW_HTA_PYTHON", "/work/venv-hta/bin/python")


def _us(ns: int) -> str:
    return f"{ns // 1000}.{ns % 1000:03d}"


def _event_text(e: dict[str, Any], shift_ns: int, id_shift: int) -> str:
    """One event in Kineto's layout, shifted by ``shift_ns`` and ``id_shift``."""
    e = dict(e)
    ts = int(Decimal(e.pop("ts")) * 1000) + shift_ns
    dur = e.pop("dur", None)
    args = e.pop("args", None)
    lines = [f'    "{k}": {json.dumps(v)}' for k, v in e.items()]
    lines.append(f'    "ts": {_us(ts)}')
    if dur is not None:
        lines.append(f'    "dur": {_us(int(Decimal(dur) * 1000))}')
    if args is not None:
        args = dict(args)
        for k in ("correlation", "External id"):
            if isinstance(args.get(k), int) and args[k] > 0:
                args[k] += id_shift
        body = json.dumps(args, default=str)
        lines.append(f'    "args": {body}')
    return "  {\n" + ",\n".join(lines) + "\n  }"


def scaled_trace(mb: float) -> Path:
    """The fixture's trace repeated to about ``mb`` MB (cached under the bench folder)."""
    path = OUT / f"kineto_{mb:g}MB" / "rank0.pt.trace.json"
    if path.exists():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(SOURCE, "rt") as f:
        trace = json.load(f, parse_float=Decimal)
    events = [e for e in trace["traceEvents"] if e.get("ph") != "M" and "ts" in e]
    meta = [e for e in trace["traceEvents"] if e.get("ph") == "M"]
    ts = [int(Decimal(e["ts"]) * 1000) for e in events]
    ends = [t + int(Decimal(e.get("dur", 0)) * 1000) for t, e in zip(ts, events)]
    span = max(ends) - min(ts) + 1000
    ids = [v for e in events for k, v in (e.get("args") or {}).items()
           if k in ("correlation", "External id") and isinstance(v, int)]
    id_span = max(ids) + 1
    header = {k: v for k, v in trace.items() if k not in ("traceEvents", "traceName")}
    target = int(mb * 1e6)
    tmp = path.with_suffix(".tmp")
    with open(tmp, "w") as out:
        out.write("{\n")
        for k, v in header.items():
            out.write(f'  "{k}": {json.dumps(v, default=str)},\n')
        out.write('  "traceEvents": [\n')
        out.write(",\n".join(_event_text(e, 0, 0) for e in meta))
        copy = 0
        while out.tell() < target:
            out.write(",\n")
            out.write(",\n".join(_event_text(e, copy * span, copy * id_span) for e in events))
            copy += 1
        out.write('\n  ],\n  "traceName": "scaled"\n}\n')
    tmp.rename(path)
    return path


def json_load(path: str) -> int:
    """The baseline: json.load of the whole trace; returns the event count."""
    with open(path) as f:
        return len(json.load(f)["traceEvents"])


def orjson_load(path: str) -> int:
    """The fastest JSON library's baseline: the file's bytes, orjson.loads; the event count."""
    import orjson

    with open(path, "rb") as f:
        return len(orjson.loads(f.read())["traceEvents"])


def events_digest(db_path: str) -> str:
    """The events digest (store/digest.py) of the one source in a bench database."""
    from tlview.store import open_database
    from tlview.store.digest import source_digest

    with open_database(db_path, read_only=True) as db:
        source_id = db.con.execute("SELECT max(source_id) FROM sources").fetchone()[0]
        return str(source_digest(db, source_id)["events"])


def db_floor(path: str, db_path: str) -> dict[str, float]:
    """The database's share alone: the trace parsed into Arrow columns first (untimed),
    then the same write_records (INSERT, caches, COMMIT) timed over them. Holds the
    whole trace's columns in memory: a measurement, not a way to ingest."""
    import time

    from tlview.ingest import records_for
    from tlview.store import open_database, write_records

    if os.path.exists(db_path):
        os.remove(db_path)
    records = list(records_for(path, "kineto"))
    with open_database(db_path) as db:
        t0 = time.perf_counter()
        summary = write_records(db, iter(records))
        wall = time.perf_counter() - t0
    return {"wall_s": wall, "events": sum(summary.counts.values())}


def parse_only(path: str) -> int:
    """tlview's streaming reader and record building, without the database."""
    from tlview.ingest.kineto import parse_trace

    return sum(len(r) for r in parse_trace(path) if hasattr(r, "columns"))


def hta_overlap(trace_dir: str) -> float:
    """HTA: load the traces of a folder and compute its comm/compute overlap (rank 0)."""
    import logging

    logging.disable(logging.WARNING)
    from hta.trace_analysis import TraceAnalysis

    analysis = TraceAnalysis(trace_dir=trace_dir)
    df = analysis.get_comm_comp_overlap(visualize=False)
    return float(df["comp_comm_overlap_pctg"].iloc[0])


def _run_with(python: str, target: str, *args: str, env: dict[str, str] | None = None
              ) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    proc = subprocess.run([python, "-m", "bench.child", target, *args], capture_output=True,
                          text=True, timeout=7200, cwd=ROOT, env=env)
    if proc.returncode != 0:
        raise RuntimeError(f"{target} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _has_orjson() -> bool:
    import importlib.util

    return importlib.util.find_spec("orjson") is not None


def main() -> list[Result]:
    OUT.mkdir(parents=True, exist_ok=True)
    results: list[Result] = []
    for mb in SIZES_MB:
        path = scaled_trace(mb)
        size = path.stat().st_size
        label = f"Kineto {mb:g} MB"
        print(f"{label}: {path}", file=sys.stderr, flush=True)
        scan, floors = scan_floors(path, label)
        load = run_child("bench.bench_kineto:json_load", str(path))
        oj = run_child("bench.bench_kineto:orjson_load", str(path)) if _has_orjson() else None
        if oj is None:
            print("orjson not installed (pip install -e '.[dev]'): its baseline skipped",
                  file=sys.stderr)
        parse = run_child("bench.bench_kineto:parse_only", str(path))
        db = OUT / f"kineto_{mb:g}MB.duckdb"
        ing = run_child("bench.harness:ingest_file", str(path), str(db), "kineto")
        floor = run_child("bench.bench_kineto:db_floor", str(path),
                          str(OUT / f"kineto_{mb:g}MB_floor.duckdb"))
        prev = None
        if mb <= PY_MAX_MB:
            py_db = OUT / f"kineto_{mb:g}MB_python.duckdb"
            prev = _run_with(sys.executable, "bench.harness:ingest_file", str(path), str(py_db),
                             "kineto", env={"TLVIEW_NATIVE": "0"})
            ours = run_child("bench.bench_kineto:events_digest", str(db))["result"]
            theirs = run_child("bench.bench_kineto:events_digest", str(py_db))["result"]
            if ours != theirs or ing["result"] != prev["result"]:
                raise RuntimeError(f"{label}: the compiled ingest wrote other rows than the "
                                   f"pure-Python one: events digest {ours} ({ing['result']} "
                                   f"events) vs {theirs} ({prev['result']} events)")
            print(f"{label}: events digest {ours[:16]}... identical to the pure-Python "
                  f"ingest's ({ing['result']:,} events)", file=sys.stderr, flush=True)
        results.extend(floors)
        results.append(Result("json.load (baseline)", label, size, load["wall_s"],
                              load["peak_rss_mb"], events=load["result"]))
        if oj is not None:
            results.append(Result("orjson.loads (baseline)", label, size, oj["wall_s"],
                                  oj["peak_rss_mb"], events=oj["result"]))
        if prev is not None:
            results.append(Result("previous release: pure-Python ingest", label, size,
                                  prev["wall_s"], prev["peak_rss_mb"], events=prev["result"]))
        hta = None
        if mb <= HTA_MAX_MB and Path(HTA_PYTHON).exists():
            hta = _run_with(HTA_PYTHON, "bench.bench_kineto:hta_overlap", str(path.parent))
            results.append(Result("HTA load + comm overlap", label, size, hta["wall_s"],
                                  hta["peak_rss_mb"], extra={"overlap_pct": hta["result"]}))
        results.append(Result("tlview parse only (no DB)", label, size, parse["wall_s"],
                              parse["peak_rss_mb"], events=parse["result"],
                              baseline={"time vs json.load": parse["wall_s"] / load["wall_s"]}))
        results.append(Result("DuckDB alone: write of pre-built columns", label, size,
                              floor["result"]["wall_s"], floor["peak_rss_mb"],
                              events=floor["result"]["events"],
                              extra={"note": "INSERT + caches + COMMIT, columns in memory"}))
        ratios = {"time vs line scan": ing["wall_s"] / scan["wall_s"],
                  "time vs json.load": ing["wall_s"] / load["wall_s"]}
        if oj is not None:
            ratios["time vs orjson.loads"] = ing["wall_s"] / oj["wall_s"]
        ratios["RSS vs json.load"] = ing["peak_rss_mb"] / load["peak_rss_mb"]
        if prev is not None:
            ratios["speedup vs previous release"] = prev["wall_s"] / ing["wall_s"]
        if hta is not None:
            ratios["speedup vs HTA"] = hta["wall_s"] / ing["wall_s"]
        name = "tlview ingest kineto" + (" (digest = Python's)" if prev is not None else "")
        at_size = mb >= 1000  # issue 15: a 1 GB trace at >= 100 MB/s, RSS < 500 MB
        results.append(Result(name, label, size, ing["wall_s"], ing["peak_rss_mb"],
                              events=ing["result"], baseline=ratios,
                              target_mb_s=100 if at_size else None,
                              target_rss_mb=500 if at_size else None))
    return results


if __name__ == "__main__":
    from .harness import print_table

    print_table(main())
