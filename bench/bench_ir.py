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

from .harness import OUT, Result, run_child, scan_floors
from .scale import scaled_ir

SIZES_MB = [float(x) for x in os.environ.get("TLVIEW_BENCH_IR_MB", "10,100,500").split(",")]
PY_MAX_MB = float(os.environ.get("TLVIEW_BENCH_IR_PY_MAX_MB", "inf"))
# sizes at which the parse alone and DuckDB's side alone are measured too
FLOOR_MB = [float(x) for x in os.environ.get("TLVIEW_BENCH_IR_FLOOR_MB", "100").split(",") if x]


def ingest_with(path: str, db: str, compiled: str) -> dict:
    """``harness.ingest_file`` with the compiled parser on ("1") or off ("0"); the event
    count, the process's CPU time (every thread) and where the wall time went: the
    statements of DuckDB's side timed as they run (``_StatementClock``)."""
    import time

    start = time.perf_counter()
    os.environ["TLVIEW_NATIVE"] = compiled
    c0 = _cpu()
    from tlview.ingest import native

    if compiled == "1" and native.module() is None:
        raise SystemExit("the compiled ingest core is not built")
    from tlview.ingest import records_for
    from tlview.store import open_database, write_records

    if os.path.exists(db):
        os.remove(db)
    t0 = time.perf_counter()
    with open_database(db) as d:
        clock = _StatementClock(d.con)
        d.con = clock
        t1 = time.perf_counter()
        summary = write_records(d, records_for(path, None))
        t2 = time.perf_counter()
    return {"events": sum(summary.counts.values()), "cpu_s": _cpu() - c0,
            "imports_s": t0 - start, "open_s": t1 - t0, "write_s": t2 - t1, **clock.stages()}


def _cpu() -> float:
    import resource

    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


class _StatementClock:
    """A connection that times its own statements (wall and process CPU), by what they
    do: the events INSERT (the parse runs beside it), the caches, the COMMIT."""

    def __init__(self, con: object) -> None:
        self._con = con
        self.spent: dict[str, list[float]] = {}

    def execute(self, sql: str, *args: object) -> object:
        import time

        w, c = time.perf_counter(), _cpu()
        try:
            return self._con.execute(sql, *args)  # type: ignore[attr-defined]
        finally:
            stage = ("insert" if "FROM _tlview_batch" in sql else
                     "caches" if "_cache_" in sql else
                     "commit" if sql.strip() == "COMMIT" else "other")
            s = self.spent.setdefault(stage, [0.0, 0.0])
            s[0] += time.perf_counter() - w
            s[1] += _cpu() - c

    def __getattr__(self, name: str) -> object:
        return getattr(self._con, name)

    def stages(self) -> dict[str, float]:
        return {f"{k}_{what}": v[i] for k, v in self.spent.items()
                for i, what in ((0, "s"), (1, "cpu_s"))}


def parse_only(path: str) -> dict:
    """The compiled parse to Arrow columns, no database: the parser's own speed."""
    os.environ["TLVIEW_NATIVE"] = "1"
    from tlview.ingest import inductor_ir

    c0 = _cpu()
    n = sum(getattr(r, "n", 0) for r in inductor_ir.parse_file(path))
    return {"events": n, "cpu_s": _cpu() - c0}


def write_prebuilt(path: str, db: str) -> dict:
    """DuckDB's side alone: the records parsed first (untimed, held in memory), then
    timed: ``write_records`` of them into a fresh database (INSERT, caches, COMMIT), each
    statement timed as in ``ingest_with``: the events INSERT of the same rows prebuilt is
    the floor of any ingest that writes this table."""
    import time

    os.environ["TLVIEW_NATIVE"] = "1"
    from tlview.ingest import records_for
    from tlview.store import open_database, write_records

    records = list(records_for(path, None))
    if os.path.exists(db):
        os.remove(db)
    with open_database(db) as d:
        clock = _StatementClock(d.con)
        d.con = clock
        t0, c0 = time.perf_counter(), _cpu()
        summary = write_records(d, iter(records))
        write_s, cpu_s = time.perf_counter() - t0, _cpu() - c0
    return {"events": sum(summary.counts.values()), "write_s": write_s, "cpu_s": cpu_s,
            **clock.stages()}


def _say_stages(label: str, parser: str, run: dict) -> None:
    """Where one ingest's time went (this machine is shared: CPU time is the steadier
    figure; the wall time of a stage includes waiting for a core)."""
    r = run["result"]
    mb = float(label.split()[1])

    def stage(name: str) -> str:
        return f"{r.get(name + '_s', 0):.2f} s ({r.get(name + '_cpu_s', 0):.2f} CPU-s)"

    print(f"{label}, {parser} parser: {run['wall_s']:.2f} s, CPU {r['cpu_s']:.2f} s "
          f"({mb / r['cpu_s']:.1f} MB per CPU-s), load {os.getloadavg()[0]:.1f}; imports "
          f"{r['imports_s']:.2f} s, schema {r['open_s']:.2f} s, events INSERT with the parse "
          f"beside it {stage('insert')}, caches {stage('caches')}, COMMIT {stage('commit')}",
          flush=True)


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
        scan, floors = scan_floors(path, label)
        fast_db, slow_db = OUT / "ir_native.duckdb", OUT / "ir_python.duckdb"
        fast = run_child("bench.bench_ir:ingest_with", str(path), str(fast_db), "1")
        _say_stages(label, "compiled", fast)
        results.extend(floors)
        if mb > PY_MAX_MB:
            results.append(Result(
                "tlview ingest inductor_ir (compiled)", label, size, fast["wall_s"],
                fast["peak_rss_mb"], events=fast["result"]["events"],
                baseline={"vs line scan": fast["wall_s"] / scan["wall_s"]},
                target_mb_s=50 if mb >= 500 else None,  # issue 15, as below
                target_rss_mb=500 if mb >= 500 else None))
            continue
        slow = run_child("bench.bench_ir:ingest_with", str(path), str(slow_db), "0")
        _say_stages(label, "Python", slow)
        same = (run_child("bench.bench_ir:digest", str(fast_db))["result"]
                == run_child("bench.bench_ir:digest", str(slow_db))["result"])
        if not same or fast["result"]["events"] != slow["result"]["events"]:
            raise RuntimeError(f"{label}: the compiled and the Python ingest wrote "
                               "different events")
        results.append(Result(
            "tlview ingest inductor_ir (Python, previous release)", label, size,
            slow["wall_s"], slow["peak_rss_mb"], events=slow["result"]["events"],
            baseline={"vs line scan": slow["wall_s"] / scan["wall_s"]}))
        results.append(Result(
            "tlview ingest inductor_ir (compiled)", label, size, fast["wall_s"],
            fast["peak_rss_mb"], events=fast["result"]["events"],
            baseline={"vs line scan": fast["wall_s"] / scan["wall_s"],
                      "speed-up vs Python": slow["wall_s"] / fast["wall_s"],
                      "CPU-time speed-up vs Python": slow["result"]["cpu_s"]
                      / fast["result"]["cpu_s"]},
            extra={"events digest equal": True},
            # issue 15: 500 MB at >= 50 MB/s with peak RSS < 500 MB
            target_mb_s=50 if mb >= 500 else None,
            target_rss_mb=500 if mb >= 500 else None))
        print(f"{label}: events digest compiled == Python: {same}", flush=True)
        if mb in FLOOR_MB:
            parse = run_child("bench.bench_ir:parse_only", str(path))
            write = run_child("bench.bench_ir:write_prebuilt", str(path),
                              str(OUT / "ir_prebuilt.duckdb"))
            w = write["result"]
            print(f"{label}, DuckDB side alone on prebuilt Arrow batches: {w['write_s']:.2f} s, "
                  f"CPU {w['cpu_s']:.2f} s: events INSERT {w['insert_s']:.2f} s "
                  f"({w['insert_cpu_s']:.2f} CPU-s), caches {w['caches_s']:.2f} s "
                  f"({w['caches_cpu_s']:.2f} CPU-s), COMMIT {w['commit_s']:.2f} s "
                  f"({w['commit_cpu_s']:.2f} CPU-s); the parse alone {parse['wall_s']:.2f} s "
                  f"({parse['result']['cpu_s']:.2f} CPU-s)",
                  flush=True)
            results.append(Result(
                "  compiled parse alone (to Arrow, no database)", label, size,
                parse["wall_s"], parse["peak_rss_mb"], events=parse["result"]["events"],
                baseline={"vs line scan": parse["wall_s"] / scan["wall_s"]}))
            results.append(Result(
                "  DuckDB side alone (prebuilt Arrow batches; RSS holds them all)", label,
                size, write["result"]["write_s"], write["peak_rss_mb"],
                events=write["result"]["events"],
                baseline={"of the whole compiled ingest": write["result"]["write_s"]
                          / fast["wall_s"]}))
    return results
