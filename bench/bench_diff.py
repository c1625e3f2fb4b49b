"""Comparing two runs at scale: the alignment of ~100k-node timelines.

- ``align``: store/align.py on the real signatures of seed 000 (a 959-node conv-net
  backward, read from its ingest) tiled to TLVIEW_BENCH_DIFF_NODES (default 100,000) —
  a graph run many times, so no signature is unique — against a copy with edits every
  few hundred nodes (removed, inserted, reshaped); baseline in the same run: Python's
  difflib.SequenceMatcher (autojunk off, so that repeated kernels are not thrown away)
  on the same lists, up to TLVIEW_BENCH_DIFF_DIFFLIB_NODES (default 20,000; it is
  quadratic on repeats).
- ``tlview diff``: two ingested scheduler IRs of ~100k nodes (bench/scale.py's scaled
  seed 000, and the same renumbered as another compile would), aligned and reported
  by the command (a fresh process), then again with the alignment stored.

    .venv/bin/python -m bench diff
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

from .harness import OUT, ROOT, Result, run_child
from .scale import SEEDS, scaled_ir

N_NODES = int(os.environ.get("TLVIEW_BENCH_DIFF_NODES", "100000"))
N_DIFFLIB = int(os.environ.get("TLVIEW_BENCH_DIFF_DIFFLIB_NODES", "20000"))


def _seed_signatures() -> tuple[list[str], list[str]]:
    from tlview.ingest import records_for
    from tlview.store import open_database, write_records

    OUT.mkdir(parents=True, exist_ok=True)
    db = OUT / "diff_seed000.duckdb"
    if not db.exists():
        with open_database(db) as d:
            write_records(d, records_for(SEEDS / "000_f2a980d458b1ffe8.txt", None))
    with open_database(db) as d:  # read-write: brings the views of an older run up to date
        rows = d.query("diff_signatures", 1)
    return [r[1] for r in rows], [r[2] for r in rows]


def _lists(n: int) -> tuple[list[str], list[str], list[str], list[str]]:
    sig, loose = _seed_signatures()
    reps = -(-n // len(sig))
    a, al = (sig * reps)[:n], (loose * reps)[:n]
    b, bl = list(a), list(al)
    for k in range(len(b) - 1, 0, -331):  # from the end, so indices stay valid
        what = (k // 331) % 3
        if what == 0:
            del b[k], bl[k]
        elif what == 1:
            b.insert(k, f"inserted {k}")
            bl.insert(k, f"inserted {k}")
        else:
            b[k] += "|reshaped"
    return a, b, al, bl


def align_lists(n: str) -> int:
    from tlview.store import align

    a, b, al, bl = _lists(int(n))
    t = time.perf_counter()
    steps = align.align(a, b, al, bl)
    print(f"align: {time.perf_counter() - t:.2f} s for {len(a):,} x {len(b):,}",
          file=sys.stderr)
    return sum(s.method == align.SAME for s in steps)


def difflib_lists(n: str) -> int:
    import difflib

    a, b, _, _ = _lists(int(n))
    m = difflib.SequenceMatcher(None, a, b, autojunk=False)
    return sum(x.size for x in m.get_matching_blocks())


def _renamed(src: Path) -> Path:
    out = src.with_name(src.stem + "_renamed.txt")
    if not out.exists():
        name = re.compile(r"(?<![A-Za-z0-9])(op|buf)(\d+)")
        with open(src) as f, open(out, "w") as g:
            for line in f:
                g.write(name.sub(lambda m: f"{m.group(1)}{int(m.group(2)) + 7}", line))
    return out


def main() -> list[Result]:
    out: list[Result] = []
    ours = run_child("bench.bench_diff:align_lists", str(N_NODES))
    small = run_child("bench.bench_diff:align_lists", str(N_DIFFLIB))
    base = run_child("bench.bench_diff:difflib_lists", str(N_DIFFLIB))
    print(f"align {N_NODES:,}: {ours['wall_s']:.2f} s (same {ours['result']:,}); "
          f"{N_DIFFLIB:,}: {small['wall_s']:.2f} s (same {small['result']:,}) vs difflib "
          f"{base['wall_s']:.2f} s (matched {base['result']:,})", file=sys.stderr)
    out.append(Result("difflib.SequenceMatcher (baseline)", f"{N_DIFFLIB:,} nodes", 0,
                      base["wall_s"], base["peak_rss_mb"], events=N_DIFFLIB,
                      extra={"matched": base["result"]}))
    out.append(Result("align (store/align.py)", f"{N_DIFFLIB:,} nodes", 0, small["wall_s"],
                      small["peak_rss_mb"], events=N_DIFFLIB,
                      baseline={"faster than difflib": base["wall_s"] / small["wall_s"]},
                      extra={"same": small["result"]}))
    out.append(Result("align (store/align.py)", f"{N_NODES:,} nodes", 0, ours["wall_s"],
                      ours["peak_rss_mb"], events=N_NODES, extra={"same": ours["result"]}))
    mb = 1.2 * N_NODES / 1000  # seed 000: ~1.2 MB per 1,000 nodes
    a = scaled_ir(mb)
    b = _renamed(a)
    db = OUT / "diff_ir.duckdb"
    if not db.exists():
        for f in (a, b):
            subprocess.run([sys.executable, "-m", "tlview", "ingest", str(f), "--db", str(db)],
                           check=True, cwd=ROOT, stdout=subprocess.DEVNULL)
    # views of this tlview, and no stored alignment: the first diff aligns
    subprocess.run([sys.executable, "-m", "tlview", "migrate", "--db", str(db)], check=True,
                   cwd=ROOT, stdout=subprocess.DEVNULL)
    subprocess.run([sys.executable, "-m", "tlview", "sql", "--write", "--db", str(db),
                    "DELETE FROM alignment_pairs"], check=True, cwd=ROOT,
                   stdout=subprocess.DEVNULL)
    for what in ("tlview diff (aligns and stores)", "tlview diff (alignment stored)"):
        res = run_child("bench.bench_diff:diff_command", str(db))
        out.append(Result(what, f"IR {a.stat().st_size / 1e6:.0f} MB x 2", a.stat().st_size * 2,
                          res["wall_s"], res["peak_rss_mb"]))
    return out


def diff_command(db: str) -> int:
    import contextlib
    import io

    from tlview.cli import main

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        code = main(["diff", "1", "2", "--db", db])
    if code != 0:
        raise RuntimeError(f"tlview diff exited {code}")
    first = buf.getvalue().splitlines()[2]
    print(first, file=sys.stderr)
    return len(buf.getvalue())
