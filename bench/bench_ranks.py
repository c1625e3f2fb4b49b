"""The many-ranks views over 256 ranks (goal < 1 s each), and the ranks screen's reads.

Input: the real 2-rank NCCL fixture replicated to TLVIEW_BENCH_RANKS ranks (default 256)
by tests/fixtures/gen/make_rank_traces.py's ``as_rank``: rank r is a copy of real rank
r % 2 with its rank id, world size, process-group ranks and size rewritten, its clock
moved by a random offset within +-2 ms and each GPU kernel by a further +-5 us (seeded),
so every collective has 256 ranks with distinct arrivals. Traces and the database are
cached under bench/out (the ingest, one file after another, is timed once when made).

Each query runs in its own process (peak RSS its own), three times; the best time is
reported beside baselines measured in the same process: a scan of every measured event
(``SELECT count(*), sum(dur_ns) FROM gpu_activity``) and the per-rank
``comm_overlap_summary`` of the same traces.

Then ``tlview ingest -j CORES`` of TLVIEW_BENCH_RANKS_REPORT traces (default 1,024, made
the same way) into a fresh database, under the ingest's memory cap, timed with its rank
report (which must report: at 1,024 ranks it once ran out of memory).
"""

from __future__ import annotations

import importlib.util
import os
import random
import sys
import time
from pathlib import Path
from typing import Any

from .harness import OUT, ROOT, Result, run_child

RANKS = int(os.environ.get("TLVIEW_BENCH_RANKS", "256"))
REPORT_RANKS = int(os.environ.get("TLVIEW_BENCH_RANKS_REPORT", "1024"))
GEN = ROOT / "tests" / "fixtures" / "gen" / "make_rank_traces.py"
QUERIES = {
    "collective_skew": "SELECT * FROM collective_skew",
    "stragglers": "SELECT * FROM stragglers",
    "clock_offsets": "SELECT * FROM clock_offsets",
    "collective_ranks": "SELECT * FROM collective_ranks",
    "rank_wait (with late_nodes)": "SELECT * FROM rank_wait",
    "rank_traces": "SELECT * FROM rank_traces",
    "rank_runs": "SELECT * FROM rank_runs",
    "_arrivals": "SELECT * FROM _arrivals",
    "collective_unmatched": "SELECT * FROM collective_unmatched",
    "late_arrivals": "SELECT * FROM late_arrivals",
    "collective_nodes": "SELECT * FROM collective_nodes",
    "whatif_stragglers": "SELECT * FROM whatif_stragglers",
}
BASELINES = {
    "events scan": "SELECT count(*), sum(dur_ns) FROM gpu_activity",
    "comm_overlap_summary": "SELECT * FROM comm_overlap_summary",
}


def _gen() -> Any:
    spec = importlib.util.spec_from_file_location("make_rank_traces", GEN)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def traces(n: int) -> Path:
    """``n`` rank traces (cached): copies of the two real ranks, rewritten and jittered."""
    folder = OUT / f"ranks{n}"
    if folder.exists() and len(list(folder.glob("*.gz"))) == n:
        return folder
    folder.mkdir(parents=True, exist_ok=True)
    g = _gen()
    real = [g.read(g.source(0)), g.read(g.source(1))]
    rng = random.Random(5)
    for r in range(n):
        t = g.as_rank(real[r % 2], r, n, offset_ns=rng.randint(-2_000_000, 2_000_000),
                      jitter_ns=5_000, seed=r)
        g.write(t, folder / f"rank{r}.pt.trace.json.gz")
    return folder


def ingest(folder: str, db: str) -> int:
    """Every rank trace of ``folder`` into a fresh database, one after another."""
    from tlview.ingest import records_for
    from tlview.store import open_database, write_records

    if os.path.exists(db):
        os.remove(db)
    events = 0
    with open_database(db) as d:
        for p in sorted(Path(folder).glob("*.gz")):
            events += sum(write_records(d, records_for(str(p))).counts.values())
    return events


def timed(db: str, name: str) -> dict[str, Any]:
    """Best of three of the query ``name`` and of both baselines, in this process."""
    from tlview.store import open_database

    sql = QUERIES.get(name) or BASELINES[name]
    out: dict[str, Any] = {}
    with open_database(db, read_only=True) as d:
        for label, q in (("query", sql), *BASELINES.items()):
            best = float("inf")
            rows = 0
            for _ in range(3):
                t = time.perf_counter()
                rows = len(d.sql(q).fetchall())
                best = min(best, time.perf_counter() - t)
            out[label] = {"best_s": best, "rows": rows}
        out["events"] = d.sql("SELECT count(*) FROM events").fetchall()[0][0]
    return out


def main() -> list[Result]:
    OUT.mkdir(parents=True, exist_ok=True)
    folder = traces(RANKS)
    db = OUT / f"ranks{RANKS}.duckdb"
    size = sum(p.stat().st_size for p in folder.glob("*.gz"))
    results: list[Result] = []
    if not db.exists():
        print(f"ingesting {RANKS} rank traces into {db}", file=sys.stderr, flush=True)
        got = run_child("bench.bench_ranks:ingest", str(folder), str(db), timeout=7200)
        results.append(Result(f"ingest {RANKS} rank traces (serial)", f"{RANKS} ranks", size,
                              got["wall_s"], got["peak_rss_mb"], events=got["result"]))
    label = f"{RANKS} ranks"
    for name in QUERIES:
        got = run_child("bench.bench_ranks:timed", str(db), name)
        r = got["result"]
        q = r["query"]["best_s"]
        results.append(Result(
            f"{name} ({r['query']['rows']:,} rows)", label, size, q, got["peak_rss_mb"],
            events=r["events"],
            baseline={f"vs {b}": q / r[b]["best_s"] for b in BASELINES},
            extra={"baseline_s": {b: r[b]["best_s"] for b in BASELINES}}))
    for b in BASELINES:
        results.append(Result(f"{b} (baseline)", label, size,
                              min(x.extra["baseline_s"][b] for x in results if x.extra), 0))
    results.extend(screen_results(db, label, size))
    if REPORT_RANKS:
        results.append(ingest_with_report(REPORT_RANKS))
    return results


def screen(db: str) -> dict[str, float]:
    """What the ranks screen reads, as its workers read it, in a fresh process: opening
    the database, the runs and the run of the first trace, then the first run's view
    (collectives, strips, stragglers: then the screen shows the collectives), then its
    what-if and the targets of Enter, read after it. Seconds from the opening (the
    application has its modules imported when the screen opens)."""
    from tlview.store import open_database
    from tlview.store import rank_queries as rq

    out: dict[str, float] = {}
    t0 = time.perf_counter()
    with open_database(db, read_only=True) as d:
        runs = rq.runs(d)
        rq.run_of(d, 1)  # as the screen opened from a trace does
        out["runs_s"] = time.perf_counter() - t0
        rq.run_view(d, runs[0])
        out["collectives_s"] = time.perf_counter() - t0
        rq.worst_whatif(d, runs[0].run)
        out["whatif_s"] = time.perf_counter() - t0
        rq.late_targets(d, runs[0].run)
        out["targets_s"] = time.perf_counter() - t0
    return out


def screen_results(db: Path, label: str, size: int) -> list[Result]:
    """The ranks screen's reads (``screen``), three fresh processes: the best of each."""
    got = [run_child("bench.bench_ranks:screen", str(db)) for _ in range(3)]
    best = {k: min(g["result"][k] for g in got) for k in got[0]["result"]}
    rss = max(g["peak_rss_mb"] for g in got)
    return [Result(f"ranks screen: {what} shown (from its start)", label, size, best[k], rss,
                   extra={"all_s": [g["result"][k] for g in got]})
            for what, k in (("runs", "runs_s"), ("collectives", "collectives_s"),
                            ("what-if", "whatif_s"), ("Enter's targets", "targets_s"))]


def ingest_cli(folder: str, db: str) -> dict[str, Any]:
    """``tlview ingest FOLDER -j CORES`` into a fresh database: its exit code, its rank
    report line, the seconds between its last timeline line and that line (the report)
    and the peak RSS of the command or its largest worker."""
    import subprocess

    for p in (db, db + ".wal"):
        if os.path.exists(p):
            os.remove(p)
    proc = subprocess.Popen([sys.executable, "-m", "tlview", "ingest", folder, "--db", db,
                             "-j", str(len(os.sched_getaffinity(0)))],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert proc.stdout is not None
    last_timeline = report_s = 0.0
    ranks = ""
    for line in proc.stdout:
        if line.startswith("timeline "):
            last_timeline = time.perf_counter()
        elif line.startswith("ranks: "):
            report_s = time.perf_counter() - last_timeline
            ranks = line.strip()
    import resource

    rc = proc.wait()
    return {"rc": rc, "ranks": ranks, "report_s": report_s,  # the largest process's RSS:
            "rss_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024}


def ingest_with_report(n: int) -> Result:
    folder = traces(n)
    size = sum(p.stat().st_size for p in folder.glob("*.gz"))
    got = run_child("bench.bench_ranks:ingest_cli", str(folder), str(OUT / f"report{n}.duckdb"),
                    timeout=7200)
    r = got["result"]
    print(f"{n} ranks: tlview ingest -j, exit {r['rc']}, the rank report in "
          f"{r['report_s']:.2f} s: {r['ranks'][:160]}", file=sys.stderr, flush=True)
    if r["rc"] != 0 or not r["ranks"] or "not reported" in r["ranks"]:
        raise RuntimeError(f"{n} ranks: the ingest's rank report failed: {r}")
    return Result(f"tlview ingest -j of {n} rank traces, rank report {r['report_s']:.1f} s",
                  f"{n} ranks", size, got["wall_s"], r["rss_mb"])


if __name__ == "__main__":
    from .harness import print_table

    print_table(main())
