"""The views at scale: memory_curve / peak_memory over 10,000,000 events, live_at at any step.

The synthetic timeline is written straight into the events table with SQL (a bench
fixture, not an ingest): 3,333,334 steps, each allocating one buffer whose life spans a
pseudo-random number of steps, each freed: about 10,000,000 events. Goals (issue 8):
memory_curve and peak_memory < 2 s; live_at at any step < 100 ms.
Baseline in the same run: a bare `SELECT count(*), sum(bytes) FROM events` scan.
"""

from __future__ import annotations

import os
import statistics
import time

from .harness import OUT, Result

EVENTS = int(os.environ.get("TLVIEW_BENCH_EVENTS", "10000000"))


def build(path: str, n_events: int) -> int:
    from tlview.store import caches, open_database

    if os.path.exists(path):
        os.remove(path)
    steps = n_events // 3
    with open_database(path) as db:
        db.sql("BEGIN")
        db.sql("INSERT INTO sources VALUES (1, 'synthetic', 0, 'x', 'synthetic', NULL, now(), NULL)")
        db.sql("INSERT INTO timeline_records VALUES (1, 1, 'syn', 'synthetic', 'synthetic', 'cuda:0', NULL)")
        db.sql(f"""
            INSERT INTO events (source_id, timeline_id, seq, kind, step, node, node_class)
            SELECT 1, 1, i * 3, 'node_scheduled', i, 'op' || i, 'SchedulerNode' FROM range({steps}) t(i)""")
        db.sql(f"""
            INSERT INTO events (source_id, timeline_id, seq, kind, step, buffer, node, bytes, dtype, shape)
            SELECT 1, 1, i * 3 + 1, 'buffer_allocated', i, 'buf' || i, 'op' || i,
                   (1 + hash(i) % 4096) * 512, 'bfloat16', '[' || (1 + hash(i) % 4096) || ', 256]'
            FROM range({steps}) t(i)""")
        db.sql(f"""
            INSERT INTO events (source_id, timeline_id, seq, kind, step, buffer, reason)
            SELECT 1, 1, i * 3 + 2, 'buffer_freed', least(i + hash(i * 7) % 64, {steps - 1}), 'buf' || i, 'last use'
            FROM range({steps}) t(i)""")
        t = time.perf_counter()
        caches.refresh(db, [1])  # what the writer does at the end of every ingest
        refresh_s = time.perf_counter() - t
        db.sql("COMMIT")
        return refresh_s


def timed(db, sql: str, params=None) -> tuple[float, object]:
    t = time.perf_counter()
    rows = db.sql(sql, params).fetchall()
    return time.perf_counter() - t, rows


def main() -> list[Result]:
    from tlview.store import open_database

    OUT.mkdir(parents=True, exist_ok=True)
    path = str(OUT / "views.duckdb")
    refresh_s = build(path, EVENTS)
    size = os.path.getsize(path)
    results = []
    with open_database(path, read_only=True) as db:
        n = db.sql("SELECT count(*) FROM events").fetchone()[0]
        base, _ = timed(db, "SELECT count(*), sum(bytes) FROM events")
        label = f"{n / 1e6:.1f}M events"
        results.append(Result("cache refresh (once, in the ingest)", label, size, refresh_s, 0,
                              events=n, baseline={"vs events scan": refresh_s / base}))
        for name, sql in [
            ("peak_memory", "SELECT * FROM peak_memory"),
            ("memory_curve (all steps)", "SELECT count(*), max(live_bytes) FROM memory_curve"),
        ]:
            wall, _ = timed(db, sql)
            results.append(Result(name, label, size, wall, 0, events=n,
                                  baseline={"vs events scan": wall / base}))
        steps = db.sql("SELECT max(step) FROM nodes").fetchone()[0]
        lat = []
        for k in range(20):
            s = (k * 7919 * 104729) % steps
            wall, _ = timed(db, "SELECT * FROM live_at(1, ?)", [s])
            lat.append(wall)
        results.append(Result("live_at (median of 20 steps)", label, size,
                              statistics.median(lat), 0, events=n,
                              baseline={"vs events scan": statistics.median(lat) / base}))
    return results
