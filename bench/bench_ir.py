"""Scheduler-IR ingest at scale: seed 000 replicated to 10/100/500 MB.

Baseline in the same run: a bare Python line scan of the same file (the floor
for any Python parser). Goal (issue 2): >= 25 MB/s, peak RSS < 500 MB at any size.
"""

from __future__ import annotations

import os

from .harness import OUT, Result, run_child
from .scale import scaled_ir

SIZES_MB = [float(x) for x in os.environ.get("TLVIEW_BENCH_IR_MB", "10,100,500").split(",")]


def main() -> list[Result]:
    OUT.mkdir(parents=True, exist_ok=True)
    results = []
    for mb in SIZES_MB:
        path = scaled_ir(mb)
        size = path.stat().st_size
        scan = run_child("bench.harness:line_scan", str(path))
        ing = run_child("bench.harness:ingest_file", str(path), str(OUT / "ir.duckdb"))
        results.append(Result("line scan (baseline)", f"IR {mb:g} MB", size, scan["wall_s"],
                              scan["peak_rss_mb"]))
        results.append(Result(
            "tlview ingest inductor_ir", f"IR {mb:g} MB", size, ing["wall_s"],
            ing["peak_rss_mb"], events=ing["result"],
            baseline={"vs line scan": ing["wall_s"] / scan["wall_s"]},
        ))
    return results
