"""Scheduler-IR ingest at scale: seed 000 replicated to 10/100/500 MB.

Each size is ingested twice in the same run, each in its own process: by the compiled
parser (native/inductor_ir.cpp, the default where built) and by the Python parser
(``TLVIEW_NATIVE=0``, what the previous release ran). Baseline beside them: a bare
Python line scan of the same file. The events digest of both databases must be equal
(checked after the timed runs, outside them). At ``TLVIEW_BENCH_IR_FLOOR_MB`` sizes
(default 100) the two halves are timed apart too: the compiled parse alone, and
DuckDB's side alone on the same events prebuilt in memory. Goal (issue 15): >= 50 MB/s at 500 MB,
peak RSS < 500 MB. ``TLVIEW_BENCH_IR_MB`` picks the sizes; ``TLVIEW_BENCH_IR_PY_MAX_MB``
the largest size the Python parser also runs (default: all).
"""

from __future__ import annotations

import os

from .harness import OUT, Result, run_child
from .scale import scaled_ir

SIZES_MB = [float(x) for x in os.environ.get("TLVIEW_BENCH_IR_MB", "10,100,500").split(",")]
PY_MAX_MB = float(os.environ.get("TLVIEW_BENCH_IR_PY_MAX_MB", "inf"))
# sizes at which the parse alone and DuckDB's side alone are measured too
FLOOR_MB = [float(x) for x in os.environ.get("TLVIEW_BENCH_IR_FLOOR_MB", "100").split(",") if x]


def ingest_with(path: str, db: str, compiled: str) -> int:
    """``harness.ingest_file`` with the compiled parser on ("1") or off ("0")."""
    os.environ["TLVIEW_NATIVE"] = compiled
    from tlview.ingest import native

    if compiled == "1" and native.module() is None:
        raise SystemExit("the compiled ingest core is not built")
    from .harness import ingest_file

    return ingest_file(path, db)


def parse_only(path: str) -> int:
    """The compiled parse to Arrow columns, no database: the parser's own speed."""
    os.environ["TLVIEW_NATIVE"] = "1"
    from tlview.ingest import inductor_ir

    return sum(getattr(r, "n", 0) for r in inductor_ir.parse_file(path))


def write_prebuilt(path: str, db: str) -> dict:
    """DuckDB's side alone: the records parsed first (untimed, held in memory), then
    timed: ``write_records`` of them into a fresh database (INSERT, caches, COMMIT)."""
    import time

    os.environ["TLVIEW_NATIVE"] = "1"
    from tlview.ingest import records_for
    from tlview.store import open_database, write_records

    records = list(records_for(path, None))
    if os.path.exists(db):
        os.remove(db)
    with open_database(db) as d:
        t0 = time.perf_counter()
        summary = write_records(d, iter(records))
        write_s = time.perf_counter() - t0
    return {"events": sum(summary.counts.values()), "write_s": write_s}


def digest(db: str) -> dict:
    """The events digest of the one source in ``db`` (tlview.store.digest)."""
    from tlview.store import open_database
    from tlview.store.digest import source_digest

    with open_database(db, read_only=True) as d:
        return source_digest(d, 1)


def main() -> list[Result]:
    OUT.mkdir(parents=True, exist_ok=True)
    results = []
    for mb in SIZES_MB:
        path = scaled_ir(mb)
        size = path.stat().st_size
        label = f"IR {mb:g} MB"
        scan = run_child("bench.harness:line_scan", str(path))
        fast_db, slow_db = OUT / "ir_native.duckdb", OUT / "ir_python.duckdb"
        fast = run_child("bench.bench_ir:ingest_with", str(path), str(fast_db), "1")
        results.append(Result("line scan (baseline)", label, size, scan["wall_s"],
                              scan["peak_rss_mb"]))
        if mb > PY_MAX_MB:
            results.append(Result(
                "tlview ingest inductor_ir (compiled)", label, size, fast["wall_s"],
                fast["peak_rss_mb"], events=fast["result"],
                baseline={"vs line scan": fast["wall_s"] / scan["wall_s"]}))
            continue
        slow = run_child("bench.bench_ir:ingest_with", str(path), str(slow_db), "0")
        same = (run_child("bench.bench_ir:digest", str(fast_db))["result"]
                == run_child("bench.bench_ir:digest", str(slow_db))["result"])
        if not same or fast["result"] != slow["result"]:
            raise RuntimeError(f"{label}: the compiled and the Python ingest wrote "
                               "different events")
        results.append(Result(
            "tlview ingest inductor_ir (Python, previous release)", label, size,
            slow["wall_s"], slow["peak_rss_mb"], events=slow["result"],
            baseline={"vs line scan": slow["wall_s"] / scan["wall_s"]}))
        results.append(Result(
            "tlview ingest inductor_ir (compiled)", label, size, fast["wall_s"],
            fast["peak_rss_mb"], events=fast["result"],
            baseline={"vs line scan": fast["wall_s"] / scan["wall_s"],
                      "speed-up vs Python": slow["wall_s"] / fast["wall_s"]},
            extra={"events digest equal": True}))
        print(f"{label}: events digest compiled == Python: {same}", flush=True)
        if mb in FLOOR_MB:
            parse = run_child("bench.bench_ir:parse_only", str(path))
            write = run_child("bench.bench_ir:write_prebuilt", str(path),
                              str(OUT / "ir_prebuilt.duckdb"))
            results.append(Result(
                "  compiled parse alone (to Arrow, no database)", label, size,
                parse["wall_s"], parse["peak_rss_mb"], events=parse["result"],
                baseline={"vs line scan": parse["wall_s"] / scan["wall_s"]}))
            results.append(Result(
                "  DuckDB side alone (prebuilt Arrow batches; RSS holds them all)", label,
                size, write["result"]["write_s"], write["peak_rss_mb"],
                events=write["result"]["events"],
                baseline={"of the whole compiled ingest": write["result"]["write_s"]
                          / fast["wall_s"]}))
    return results
