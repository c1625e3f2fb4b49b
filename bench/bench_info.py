"""`tlview info` on a database of many timelines (bench/many_timelines.py: 5,000 real ones).

Measured in a fresh process each: `tlview info` (its whole run: imports, open, the
one summary query, printing), and as the baseline in the same run the pattern it had
before, one summary query per timeline. Goal: under a second.
Size override: TLVIEW_BENCH_TIMELINES (default 5000).

    .venv/bin/python -m bench info
"""

from __future__ import annotations

import contextlib
import io
import os

from .harness import Result, run_child
from .many_timelines import build

N_TIMELINES = int(os.environ.get("TLVIEW_BENCH_TIMELINES", "5000"))


def info(db: str) -> int:
    """`tlview info --db DB`, its output kept in memory; the number of lines printed."""
    from tlview.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["info", "--db", db])
    if code != 0:
        raise RuntimeError(f"tlview info exited {code}")
    return out.getvalue().count("\n")


def one_query_per_timeline(db: str) -> int:
    """The baseline: the same summaries, asked one timeline at a time."""
    from tlview.store import open_database

    n = 0
    with open_database(db, read_only=True) as d:
        for (tid,) in d.query("all_timeline_ids"):
            n += len(d.query_dicts("timeline_summaries", tid, tid))
    return n


def main() -> list[Result]:
    db = build(N_TIMELINES)
    size = db.stat().st_size
    label = f"{N_TIMELINES:,} timelines"
    new = run_child("bench.bench_info:info", str(db))
    old = run_child("bench.bench_info:one_query_per_timeline", str(db))
    print(f"tlview info, {label}: {new['wall_s']:.2f} s ({new['result']:,} lines); "
          f"one query per timeline: {old['wall_s']:.2f} s "
          f"({old['wall_s'] / new['wall_s']:.0f}x); goal < 1 s")
    return [
        Result("one summary query per timeline (baseline)", label, size, old["wall_s"],
               old["peak_rss_mb"]),
        Result("tlview info", label, size, new["wall_s"], new["peak_rss_mb"],
               baseline={"faster than one query per timeline": old["wall_s"] / new["wall_s"]}),
    ]


if __name__ == "__main__":
    main()
