"""Shared benchmark plumbing: measured subprocess runs, baselines, and the results table.

Every figure is measured in the same run as its baseline, because this machine
is shared and noisy: ratios are what we compare, not absolute seconds.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import attrs

ROOT = Path(__file__).resolve().parent.parent
OUT = Path(os.environ.get("TLVIEW_BENCH_DIR", tempfile.gettempdir())) / "tlview-bench"


@attrs.define
class Result:
    name: str  # what was measured ("ingest inductor_ir", "line scan", ...)
    input: str  # input label ("IR 100 MB")
    size_bytes: int
    wall_s: float
    peak_rss_mb: float
    events: int | None = None
    baseline: dict[str, float] = attrs.field(factory=dict)  # baseline name -> ratio
    extra: dict[str, Any] = attrs.field(factory=dict)
    # issue 15's targets for this row (tlview's ingest at a target size), where it has one
    target_mb_s: float | None = None
    target_rss_mb: float | None = None

    @property
    def mb_s(self) -> float:
        return self.size_bytes / 1e6 / self.wall_s if self.wall_s else float("inf")

    @property
    def verdict(self) -> str:
        """'>= 100 MB/s met, < 500 MB met' (or 'MISSED'), '-' for a row without targets."""
        parts = []
        if self.target_mb_s is not None:
            ok = self.mb_s >= self.target_mb_s
            parts.append(f">= {self.target_mb_s:g} MB/s {'met' if ok else 'MISSED'}")
        if self.target_rss_mb is not None:
            ok = self.peak_rss_mb < self.target_rss_mb
            parts.append(f"RSS < {self.target_rss_mb:g} MB {'met' if ok else 'MISSED'}")
        return ", ".join(parts) or "-"


def run_child(target: str, *args: str, timeout: float = 3600) -> dict[str, Any]:
    """Run ``module:function(*args)`` in a fresh interpreter; wall time, peak RSS, result."""
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    proc = subprocess.run(
        [sys.executable, "-m", "bench.child", target, *args],
        capture_output=True, text=True, timeout=timeout, cwd=ROOT, env=env,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"{target} {args} failed:\n{proc.stderr[-4000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def line_scan(path: str) -> int:
    """The floor for a Python parser: read every line of the file and count them."""
    n = 0
    with open(path, "rb") as f:
        for _ in f:
            n += 1
    return n


def duckdb_lines(path: str) -> list[int]:
    """The floor for DuckDB's own readers: `read_csv` of the file's raw lines (no field
    split, every thread): lines and characters. A parser written as DuckDB SQL over the
    lines (issue 15's other way) starts from here."""
    import duckdb

    return list(duckdb.connect().execute(_LINES, [path]).fetchone())


def duckdb_store_lines(path: str, db: str) -> list[int]:
    """The floor for storing one row per line: the raw lines read as above and written,
    with their line numbers, into a fresh database file, committed. An ingest writes fewer
    rows than lines but more columns."""
    import duckdb

    if os.path.exists(db):
        os.remove(db)
    con = duckdb.connect(db)
    con.execute(f"CREATE TABLE lines AS SELECT row_number() OVER () AS line, l FROM ({_LINES_RAW})",
                [path])
    n = con.execute("SELECT count(*) FROM lines").fetchone()[0]
    con.close()
    size = os.path.getsize(db)
    os.remove(db)
    return [n, size]


_LINES_RAW = ("SELECT l FROM read_csv(?, columns={'l': 'VARCHAR'}, header=false, delim='\\x01', "
              "quote='', escape='', auto_detect=false, strict_mode=false, "
              "max_line_size=100000000)")
_LINES = f"SELECT count(*), sum(length(l)) FROM ({_LINES_RAW})"


def scan_floors(path: Path, label: str) -> tuple[dict[str, Any], list[Result]]:
    """The baselines every ingest benchmark prints first: a Python line scan, DuckDB's
    read of the lines, and DuckDB's store of them. Returns the line scan's run (the
    ratios' denominator) and the three rows."""
    size = path.stat().st_size
    scan = run_child("bench.harness:line_scan", str(path))
    read = run_child("bench.harness:duckdb_lines", str(path))
    store = run_child("bench.harness:duckdb_store_lines", str(path), str(OUT / "lines.duckdb"))
    return scan, [
        Result("line scan (baseline)", label, size, scan["wall_s"], scan["peak_rss_mb"]),
        Result("DuckDB read_csv of the lines (floor)", label, size, read["wall_s"],
               read["peak_rss_mb"], baseline={"vs line scan": read["wall_s"] / scan["wall_s"]}),
        Result("DuckDB lines into a table (floor)", label, size, store["wall_s"],
               store["peak_rss_mb"], events=store["result"][0],
               baseline={"vs line scan": store["wall_s"] / scan["wall_s"]}),
    ]


def ingest_file(path: str, db: str, fmt: str = "") -> int:
    """tlview's real ingest of one file into a fresh database; returns the event count."""
    from tlview.ingest import records_for
    from tlview.store import open_database, write_records
    from tlview.store.writer import limit_ingest_memory

    if os.path.exists(db):
        os.remove(db)
    with open_database(db) as d:
        limit_ingest_memory(d)  # as `tlview ingest` does: the close's checkpoint too
        summary = write_records(d, records_for(path, fmt or None))
    return sum(summary.counts.values())


def print_table(results: list[Result]) -> None:
    cols = ["measurement", "input", "size MB", "wall s", "MB/s", "events/s", "peak RSS MB",
            "target (issue 15)", "ratios"]
    rows = []
    for r in results:
        ev_s = f"{r.events / r.wall_s:,.0f}" if r.events and r.wall_s else "-"
        ratios = ", ".join(f"{k} {v:.2f}x" for k, v in r.baseline.items()) or "-"
        rows.append([r.name, r.input, f"{r.size_bytes / 1e6:,.1f}", f"{r.wall_s:.2f}",
                     f"{r.mb_s:,.1f}", ev_s, f"{r.peak_rss_mb:,.0f}", r.verdict, ratios])
    widths = [max(len(c), *(len(row[i]) for row in rows)) for i, c in enumerate(cols)]
    print("  ".join(c.ljust(w) for c, w in zip(cols, widths)))
    print("  ".join("-" * w for w in widths))
    for row in rows:
        print("  ".join(v.ljust(w) for v, w in zip(row, widths)))
