"""`tlview report` at scale (issue 24): the report of a 1,024-rank run (goal < 10 s) and of
a 1 GB allocator snapshot after its ingest (goal < 3 s).

Inputs are the ranks benchmark's (bench_ranks: the real 2-rank NCCL pair replicated to
TLVIEW_BENCH_RANKS_REPORT ranks, default 1,024, ingested by `tlview ingest -j`) and the
snapshot benchmark's (bench_snapshot: the real compiled-step snapshot's trace repeated to
TLVIEW_BENCH_REPORT_SNAPSHOT_MB, default 1000), each ingested by `tlview ingest` into its
own database (cached under bench/out; `tlview migrate`d to this tlview's views). Measured
in a fresh process: the report built (every section's queries, store/report.py) and
rendered in each format; the wall time of the whole `tlview report` command beside it. At
1,024 ranks the report is measured as it was before the run's collective matching was
computed once per report (report.MATCH_ONCE off) and as it is, alternately, with the
machine's load average beside each (TLVIEW_BENCH_REPORT_ROUNDS pairs, default 3).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from .harness import OUT, Result, run_child

RANKS = int(os.environ.get("TLVIEW_BENCH_RANKS_REPORT", "1024"))
SNAPSHOT_MB = float(os.environ.get("TLVIEW_BENCH_REPORT_SNAPSHOT_MB", "1000"))
GOALS = {"ranks": 10.0, "snapshot": 3.0}  # seconds (issue 24)
ROUNDS = int(os.environ.get("TLVIEW_BENCH_REPORT_ROUNDS", "3"))  # before/after pairs


def ingest(paths: list[str], db: Path) -> None:
    """`tlview ingest PATH... --db DB` into a fresh database (the runs as a user makes them)."""
    for p in (db, Path(f"{db}.wal")):
        p.unlink(missing_ok=True)
    subprocess.run([sys.executable, "-m", "tlview", "ingest", *paths, "--db", str(db)],
                   check=True, stdout=subprocess.DEVNULL, timeout=7200)


def migrate(db: Path) -> None:
    """A cached database written by another tlview gets this one's views (`tlview migrate`)."""
    subprocess.run([sys.executable, "-m", "tlview", "migrate", "--db", str(db)], check=True,
                   stdout=subprocess.DEVNULL)


def report(db: str, once: str = "1") -> dict[str, Any]:
    """The last run's report built, then rendered in every format: seconds of each.
    ``once`` "0": each view derives the run's collective matching again (report.MATCH_ONCE
    off: the report before it computed the matching once)."""
    from tlview.report_command import WORDS
    from tlview.report_render import RENDERERS
    from tlview.store import open_database
    from tlview.store import report as report_module
    from tlview.store.report import build_report, find_run

    report_module.MATCH_ONCE = once == "1"
    with open_database(db, read_only=True) as d:
        t, cpu = time.perf_counter(), time.process_time()
        run_id, _ = find_run(d, None)
        rep = build_report(d, run_id, WORDS)
        built = time.perf_counter() - t
        built_cpu = time.process_time() - cpu  # every thread's: on a shared machine the wall
        # time is the load's as much as the report's
    t = time.perf_counter()
    sizes = {fmt: len(render(rep)) for fmt, render in RENDERERS.items()}
    return {"build_s": built, "build_cpu_s": built_cpu,
            "render_s": time.perf_counter() - t, "sizes": sizes,
            "sections": [s.key for s in rep.sections], "headline": [v.text for v in rep.headline]}


def command(db: str) -> float:
    """The whole `tlview report --db DB` (interpreter, imports, open, report, text)."""
    t = time.perf_counter()
    subprocess.run([sys.executable, "-m", "tlview", "report", "--db", db], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t


def _load() -> str:
    return "load average " + " / ".join(f"{x:.1f}" for x in os.getloadavg())


def _measure(label: str, goal: str, db: Path, size: int, compare: bool = False) -> list[Result]:
    """The report built (and rendered) in a fresh process, then the whole command. With
    ``compare``, first the report as it was before the matching was computed once per
    report (each view deriving it), then as it is, alternately, ROUNDS times each, with
    the machine's load beside each (it is shared)."""
    out: list[Result] = []
    rounds = ROUNDS if compare else 1
    for i in range(rounds):
        for once in (("0", "1") if compare else ("1",)):
            load = _load()
            got = run_child("bench.bench_report:report", str(db), once)
            r = got["result"]
            verdict = "met" if r["build_s"] < GOALS[goal] else "MISSED"
            how = ("" if not compare else " (each view matching the collectives again)"
                   if once == "0" else " (the matching once per report)")
            print(f"{label}{how}: report built in {r['build_s']:.2f} s (goal < {GOALS[goal]:g} s: "
                  f"{verdict}; {r['build_cpu_s']:.2f} CPU s), rendered in 4 formats in "
                  f"{r['render_s']:.2f} s; {load}; "
                  f"sections {r['sections']}", file=sys.stderr, flush=True)
            if i == 0 and once == "1":
                for line in r["headline"]:
                    print(f"  {line}", file=sys.stderr)
            out.append(Result(f"tlview report, built{how} (goal < {GOALS[goal]:g} s: "
                              f"{verdict})", label, size, r["build_s"], got["peak_rss_mb"],
                              extra={"render_s": r["render_s"], "cpu_s": r["build_cpu_s"],
                                     "load": load}))
    cmd = run_child("bench.bench_report:command", str(db))
    out.append(Result("tlview report, the whole command", label, size, cmd["result"],
                      cmd["peak_rss_mb"], extra={"load": _load()}))
    return out


def main() -> list[Result]:
    from . import bench_ranks, bench_snapshot

    OUT.mkdir(parents=True, exist_ok=True)
    results: list[Result] = []
    folder = bench_ranks.traces(RANKS)
    db = OUT / f"report_ranks{RANKS}.duckdb"
    if not db.exists():
        print(f"ingesting {RANKS} rank traces into {db}", file=sys.stderr, flush=True)
        ingest([str(folder)], db)
    migrate(db)
    size = sum(p.stat().st_size for p in folder.glob("*.gz"))
    results += _measure(f"{RANKS} ranks", "ranks", db, size, compare=True)
    snap = bench_snapshot.scaled_snapshot(SNAPSHOT_MB)
    db = OUT / f"report_snapshot{SNAPSHOT_MB:g}MB.duckdb"
    if not db.exists():
        print(f"ingesting {snap} into {db}", file=sys.stderr, flush=True)
        ingest([str(snap)], db)
    migrate(db)
    results += _measure(f"snapshot {snap.stat().st_size / 1e6:,.0f} MB", "snapshot", db,
                        snap.stat().st_size)
    return results


if __name__ == "__main__":
    from .harness import print_table

    print_table(main())
