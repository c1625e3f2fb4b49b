"""TUI benchmark, driven by Pilot, each measurement in a fresh process.

- steps: a synthetic 1,000,000-step / 3,000,000-buffer timeline: time to first screen
  (the list's rows on screen), until the memory curve and live buffers are shown, and
  per step key (median of 100 presses of ``j`` near the peak) until the cursor is drawn
  and until every panel shows the new step. Goals: first screen < 1.5 s, step < 30 ms.
- chooser: a database of 5,000 timelines (2,500 run folders of 0_forward/0_backward):
  until the chooser lists them all with their peaks (goal < 1 s), a key, typing a
  filter; and the same for the chooser before its rewrite (``TLVIEW_BENCH_TUI_BASELINE``,
  a git ref, default the last commit before it), in the same run, on a copy of the
  database migrated by that version.
- profiler: the 1 GB Kineto trace of bench_kineto (scaled_trace(1000)): first draw (the
  lanes of the whole trace and the first kernel named; goal < 1 s), then per scrub step
  (median of 50): from the key to the kernel at the new cursor shown (goal < 30 ms), and
  until its launch and the memory there are shown; by column on the whole trace, by
  column zoomed in 1024x, and by kernel (``n``). Beside it the floor: the same window
  reads from the store without the UI.
- snapshot: the 1 GB CUDA allocator snapshot of bench_snapshot (its compiled-step trace
  replicated): the snapshot screen's first draw (peaks, curve, live blocks by site at the
  peak; goal < 1 s) and per scrub key (median of 50): one entry (right) and one curve
  column (PgDn), from the key to the entry and its sites shown (goal < 30 ms); beside
  them the floor: the cursor's reads from the store without the UI.

    .venv/bin/python -m bench.bench_tui [--steps N] [--only steps,chooser,profiler,snapshot]

Databases are built once under bench/out/ through the store's writer (about 3 minutes
for 1M steps, 2 for the chooser's, 1 for the 1 GB trace).
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

from tlview.store.db import schema_sql

from bench.harness import ROOT, Result, run_child
from bench.synthetic_catalog import build_catalog
from bench.synthetic_timeline import build

OUT = ROOT / "bench" / "out"


async def _measure(db: str, width: int, height: int, presses: int) -> dict:
    t0 = time.perf_counter()  # before importing the UI: the import is part of the wait
    from textual import events
    from tlview.tui.app import TlviewApp
    from tlview.tui.execution_list import ExecutionList
    from tlview.tui.live_buffers import LiveBuffers

    drawn_at: dict[int, float] = {}
    original = ExecutionList.render_line

    def render_line(self, y):  # note when the cursor's row is first drawn at its new step
        strip = original(self, y)
        if y >= 1 and self.top + y - 1 == self.cursor and self.cursor in self.rows:
            drawn_at.setdefault(self.cursor, time.perf_counter())
        return strip

    # Pilot.pause() without a delay waits for the process to look idle (up to 1 s), which
    # a query running in a worker thread prevents: poll with short sleeps instead.

    ExecutionList.render_line = render_line
    app = TlviewApp(db)
    out: dict = {}
    async with app.run_test(size=(width, height)) as pilot:
        while 0 not in drawn_at:
            await pilot.pause(0.002)
        out["first_screen_s"] = drawn_at[0] - t0
        screen = app.screen
        live = screen.query_one(LiveBuffers)
        while screen.curve is None or live.live is None:
            await pilot.pause(0.005)
        await pilot.pause(0.001)
        out["memory_ready_s"] = time.perf_counter() - t0
        out["peak_step"] = screen.curve.peak_step
        out["n_steps"] = screen.timeline.n_steps
        screen.go(screen.curve.peak_step - presses // 2)
        await settle(app)
        await pilot.pause()
        drawn, pressed, settled = [], [], []
        for _ in range(presses):
            target = screen.step + 1
            drawn_at.pop(target, None)
            t = time.perf_counter()
            await pilot.press("j")
            pressed.append(time.perf_counter() - t)
            while target not in drawn_at:
                await pilot.pause(0.001)
            drawn.append(drawn_at[target] - t)
            while live.live is None or live.live.step != target:
                await pilot.pause(0.001)
            await settle(app)
            await pilot.pause(0.001)
            settled.append(time.perf_counter() - t)
        out["step_drawn_ms"] = statistics.median(drawn) * 1000
        out["step_press_ms"] = statistics.median(pressed) * 1000
        out["step_settled_ms"] = statistics.median(settled) * 1000
        # The same keys posted straight to the app, without Pilot's idle waits.
        direct_drawn, direct_settled = [], []
        for _ in range(presses):
            target = screen.step + 1
            drawn_at.pop(target, None)
            t = time.perf_counter()
            app.post_message(events.Key("j", "j"))
            while target not in drawn_at:
                await asyncio.sleep(0.0005)
            direct_drawn.append(drawn_at[target] - t)
            while live.live is None or live.live.step != target or app.workers:
                await asyncio.sleep(0.0005)
            direct_settled.append(time.perf_counter() - t)
        out["direct_drawn_ms"] = statistics.median(direct_drawn) * 1000
        out["direct_settled_ms"] = statistics.median(direct_settled) * 1000
        out["step_settled_p90_ms"] = sorted(settled)[int(0.9 * len(settled))] * 1000
        out["live_at_peak"] = live.live.n_live
    return out


async def settle(app) -> None:
    """Wait for the app's workers; an exclusive worker replaced by a newer one is fine."""
    from textual.worker import WorkerCancelled

    while True:
        try:
            await app.workers.wait_for_complete()
            return
        except WorkerCancelled:
            continue


def measure(db: str, width: str = "80", height: str = "24", presses: str = "100") -> dict:
    return asyncio.run(_measure(db, int(width), int(height), int(presses)))


def steps_table(n_steps: int) -> list[Result]:
    # Named by schema: a database written by another tlview is refused (SchemaError).
    tag = hashlib.sha256(schema_sql().encode()).hexdigest()[:8]
    db = OUT / f"syn_{n_steps}_{tag}.duckdb"
    t = time.perf_counter()
    build(db, n_steps)
    print(f"database: {db} ({db.stat().st_size / 1e6:,.0f} MB, "
          f"built/reused in {time.perf_counter() - t:.1f} s)")
    rows = []
    for size in ((80, 24), (160, 48)):
        r = run_child("bench.bench_tui:measure", str(db), str(size[0]), str(size[1]), "100")
        res = r["result"]
        rows.append((f"{size[0]}x{size[1]}", res, r["peak_rss_mb"]))
    print(f"{'terminal':9} {'steps':>9} {'first screen s':>14} {'memory shown s':>14} "
          f"{'drawn ms':>8} {'press ms':>8} {'settled ms':>10} {'p90':>6} "
          f"{'direct drawn':>12} {'direct settled':>14} {'RSS MB':>7}")
    for label, res, rss in rows:
        print(f"{label:9} {res['n_steps']:>9,} {res['first_screen_s']:>14.2f} "
              f"{res['memory_ready_s']:>14.2f} {res['step_drawn_ms']:>8.1f} "
              f"{res['step_press_ms']:>8.1f} {res['step_settled_ms']:>10.1f} "
              f"{res['step_settled_p90_ms']:>6.1f} {res['direct_drawn_ms']:>12.1f} "
              f"{res['direct_settled_ms']:>14.1f} {rss:>7,.0f}")
    print("first screen: from importing the UI to the first row drawn. Per step key (median): "
          "drawn = key to the cursor's row drawn at the new step; press = until Pilot.press "
          "returns (it waits for the process to look idle); settled = until live buffers, node "
          "and collectives show the step; direct = the key event posted to the app without "
          "Pilot's waits")
    print("goals: first screen < 1.5 s, step < 30 ms (median of 100 presses of j near the "
          f"peak, step {rows[0][1]['peak_step']:,}, {rows[0][1]['live_at_peak']:,} live buffers)")
    size = db.stat().st_size
    out = []
    for label, res, rss in rows:
        inp = f"{res['n_steps']:,} steps, {label}"
        out.append(Result("tui first screen", inp, size, res["first_screen_s"], rss))
        out.append(Result("tui memory shown", inp, size, res["memory_ready_s"], rss))
        out.append(Result("tui step drawn (median)", inp, size, res["step_drawn_ms"] / 1000, rss))
        out.append(Result("tui step settled (median)", inp, size,
                          res["step_settled_ms"] / 1000, rss))
    return out


# The last commit before the chooser and the Reader were rewritten (issue 16).
BASELINE_REF = os.environ.get("TLVIEW_BENCH_TUI_BASELINE", "bb2b3e9")
BASELINE_TIMEOUT_S = float(os.environ.get("TLVIEW_BENCH_TUI_BASELINE_TIMEOUT", "900"))


def baseline_tree(ref: str) -> Path:
    """``ref`` exported from git and laid out as the ``tlview`` package, under bench/out."""
    sha = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", ref],
                         capture_output=True, text=True, check=True).stdout.strip()
    root = OUT / f"baseline-{sha}"
    pkg = root / "pkg" / "tlview"
    if pkg.exists():
        return root / "pkg"
    src = root / "src"
    src.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", sha], capture_output=True,
                             check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(src)], input=archive, check=True)
    shutil.copytree(src / "cli", pkg)
    for part in ("ingest", "store", "tui", "schemas"):
        shutil.copytree(src / part, pkg / part)
    return root / "pkg"


def run_baseline(pkg: Path, target: str, *args: str) -> dict | None:
    """``target`` in a fresh interpreter importing tlview from ``pkg``; None past the timeout."""
    env = {**os.environ, "PYTHONPATH": f"{pkg}{os.pathsep}{ROOT}"}
    try:
        proc = subprocess.run([sys.executable, "-m", "bench.child", target, *args],
                              capture_output=True, text=True, cwd=ROOT, env=env,
                              timeout=BASELINE_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return None
    if proc.returncode != 0:
        raise RuntimeError(f"baseline {target} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def chooser_table(n: int = 5000) -> list[Result]:
    tag = hashlib.sha256(schema_sql().encode()).hexdigest()[:8]
    db = OUT / f"catalog_{n}_{tag}.duckdb"
    t = time.perf_counter()
    build_catalog(db, n, runs=n // 2)
    print(f"database: {db} ({n:,} timelines, built/reused in {time.perf_counter() - t:.1f} s)")
    now = run_child("bench.tui_measures:chooser", str(db), str(n))
    pkg = baseline_tree(BASELINE_REF)
    old_db = OUT / f"catalog_{n}_{tag}_baseline.duckdb"
    shutil.copy(db, old_db)  # migrated by the old tlview: its views, its schema check
    run_baseline(pkg, "bench.tui_measures:migrate_here", str(old_db))
    before = run_baseline(pkg, "bench.tui_measures:chooser", str(old_db), str(n))
    res = now["result"]
    old = f"{before['result']['ready_s']:.2f} s" if before else f"> {BASELINE_TIMEOUT_S:.0f} s"
    print(f"chooser with {n:,} timelines: ready {res['ready_s']:.2f} s (goal < 1 s; before "
          f"the rewrite, {BASELINE_REF}: {old}); j {res['key_ms']:.1f} ms; typing a 7-letter "
          f"filter {res['filter_typed_ms']:.0f} ms ({res['filter_rows']} rows)")
    ratio = {"vs before": before["result"]["ready_s"] / res["ready_s"]} if before else {}
    size = db.stat().st_size
    out = [Result("tui chooser ready", f"{n:,} timelines", size, res["ready_s"],
                  now["peak_rss_mb"], baseline=ratio)]
    if before:
        out.append(Result(f"tui chooser ready, {BASELINE_REF} (baseline)", f"{n:,} timelines",
                          size, before["result"]["ready_s"], before["peak_rss_mb"]))
    return out


def profiler_db(mb: float = 1000) -> Path:
    from bench.bench_kineto import scaled_trace
    from bench.harness import ingest_file

    tag = hashlib.sha256(schema_sql().encode()).hexdigest()[:8]
    db = OUT / f"kineto_{mb:g}MB_{tag}.duckdb"
    if not db.exists():
        trace = scaled_trace(mb)
        tmp = db.with_suffix(".building")
        ingest_file(str(trace), str(tmp), "kineto")
        tmp.rename(db)
    return db


def profiler_table(mb: float = 1000) -> list[Result]:
    t = time.perf_counter()
    db = profiler_db(mb)
    print(f"database: {db} ({db.stat().st_size / 1e6:,.0f} MB, the {mb:g} MB Kineto trace; "
          f"built/reused in {time.perf_counter() - t:.1f} s)")
    floor = run_child("bench.tui_measures:lane_query_floor", str(db))["result"]
    r = run_child("bench.tui_measures:profiler", str(db))
    res = r["result"]
    print(f"profiler, {mb:g} MB trace ({res['events']:,} GPU events): first draw "
          f"{res['first_draw_s']:.2f} s (goal < 1 s); step totals, overlap and attachments "
          f"read by {res['summaries_s']:.2f} s")
    print(f"{'scrub step (median of 50)':34} {'kernel shown ms':>15} {'settled ms':>10} "
          f"{'store floor ms':>14}")
    for label, key, fl in (("by column, whole trace", "scrub_whole", "whole"),
                           (f"by column, zoomed ({res['zoomed_col_ns'] / 1e3:,.0f} us/col)",
                            "scrub_zoomed", "zoomed"),
                           ("by kernel (n), zoomed", "scrub_kernel", "zoomed")):
        print(f"{label:34} {res[key + '_ms']:>15.1f} {res[key + '_settled_ms']:>10.1f} "
              f"{floor['kernel_at_' + fl + '_ms']:>14.1f}")
    print(f"store floor, lanes of a window: whole trace {floor['lanes_whole_ms']:.1f} ms, "
          f"zoomed {floor['lanes_zoomed_ms']:.1f} ms. Goal: scrub step < 30 ms (kernel shown); "
          "settled adds its launching runtime call, CPU op and the memory at the cursor")
    size = db.stat().st_size
    inp = f"Kineto {mb:g} MB"
    return [
        Result("tui profiler first draw", inp, size, res["first_draw_s"], r["peak_rss_mb"]),
        Result("tui profiler scrub step, zoomed (median)", inp, size,
               res["scrub_zoomed_ms"] / 1000, r["peak_rss_mb"],
               baseline={"vs kernel_at alone": res["scrub_zoomed_ms"]
                         / floor["kernel_at_zoomed_ms"]}),
        Result("tui profiler scrub step, whole trace (median)", inp, size,
               res["scrub_whole_ms"] / 1000, r["peak_rss_mb"]),
    ]


def snapshot_db(mb: float | None = 1000) -> Path:
    """The scaled snapshot ingested (under the harness's folder: a temporary one); None:
    the fixture it is scaled from, as it is (630 entries)."""
    from bench.bench_snapshot import SOURCE, scaled_snapshot
    from bench.harness import OUT as TMP
    from bench.harness import ingest_file

    tag = hashlib.sha256(schema_sql().encode()).hexdigest()[:8]
    db = TMP / f"snapshot_tui_{'fixture' if mb is None else f'{mb:g}MB'}_{tag}.duckdb"
    if not db.exists():
        TMP.mkdir(parents=True, exist_ok=True)
        tmp = db.with_suffix(".building")
        tmp.unlink(missing_ok=True)
        ingest_file(str(SOURCE if mb is None else scaled_snapshot(mb)), str(tmp),
                    "cuda_snapshot")
        tmp.rename(db)
    return db


SNAPSHOT_RUNS = int(os.environ.get("TLVIEW_BENCH_TUI_SNAPSHOT_RUNS", "3"))


def _median_run(runs: list[dict]) -> dict:
    """Each figure the median of the runs (peak RSS: the largest)."""
    keys = runs[0]["result"].keys()
    return {"result": {k: statistics.median(x["result"][k] for x in runs) for k in keys},
            "peak_rss_mb": max(x["peak_rss_mb"] for x in runs)}


def snapshot_table(mb: float = 1000) -> list[Result]:
    t = time.perf_counter()
    db = snapshot_db(mb)
    print(f"database: {db} ({db.stat().st_size / 1e6:,.0f} MB, the {mb:g} MB snapshot; "
          f"built/reused in {time.perf_counter() - t:.1f} s)")
    floor = run_child("bench.tui_measures:snapshot_floor", str(db))["result"]
    # Alternated, three of each, medians: the machine is shared and its load comes and goes.
    smalls, bigs = [], []
    for _ in range(SNAPSHOT_RUNS):
        smalls.append(run_child("bench.tui_measures:snapshot", str(snapshot_db(None))))
        bigs.append(run_child("bench.tui_measures:snapshot", str(db)))
    small, r = _median_run(smalls), _median_run(bigs)
    res = r["result"]
    print(f"snapshot screen, {mb:g} MB snapshot ({res['events']:,.0f} trace entries, "
          f"{res['blocks_at_peak']:,.0f} blocks live at the peak in {res['sites_at_peak']:.0f} sites): "
          f"first draw {res['first_draw_s']:.2f} s (goal < 1 s); RSS {r['peak_rss_mb']:,.0f} MB. "
          f"The fixture it is scaled from ({small['result']['events']:,.0f} entries), the same "
          f"run: first draw {small['result']['first_draw_s']:.2f} s, RSS "
          f"{small['peak_rss_mb']:,.0f} MB (the import of the UI and the app's start)")
    print(f"scrub step (median of 50, median of {SNAPSHOT_RUNS} runs), entry shown / its "
          f"sites shown: one entry {res['scrub_entry_ms']:.1f} / "
          f"{res['scrub_entry_sites_ms']:.1f} ms, one column ({res['entries_per_column']:,.0f} "
          f"entries) {res['scrub_column_ms']:.1f} / {res['scrub_column_sites_ms']:.1f} ms "
          f"(goal < 30 ms); the 630-entry fixture: {small['result']['scrub_entry_ms']:.1f} / "
          f"{small['result']['scrub_entry_sites_ms']:.1f} ms. Store floor (one process, no UI): "
          f"point {floor['point_ms']:.1f} ms, sites {floor['sites_ms']:.1f} ms; overview "
          f"{floor['overview_ms']:.1f} ms, curve {floor['curve_ms']:.1f} ms")
    size = db.stat().st_size
    inp = f"snapshot {mb:g} MB"
    return [
        Result("tui snapshot first draw", inp, size, res["first_draw_s"], r["peak_rss_mb"],
               baseline={"vs the 630-entry fixture": res["first_draw_s"]
                         / small["result"]["first_draw_s"]}),
        Result("tui snapshot scrub step, one entry, sites shown (median)", inp, size,
               res["scrub_entry_sites_ms"] / 1000, r["peak_rss_mb"],
               baseline={"vs store reads alone": res["scrub_entry_sites_ms"]
                         / (floor["point_ms"] + floor["sites_ms"])}),
    ]


def main(argv: list[str] | None = None) -> list[Result]:
    """Print the TUI tables; return the figures for ``python -m bench``'s common table."""
    ap = argparse.ArgumentParser(prog="python -m bench.bench_tui")
    ap.add_argument("--steps", type=int, default=1_000_000)
    ap.add_argument("--only", default="steps,chooser,profiler,snapshot")
    args = ap.parse_args(argv or [])
    OUT.mkdir(parents=True, exist_ok=True)
    out: list[Result] = []
    chosen = args.only.split(",")
    if "chooser" in chosen:
        out += chooser_table()
    if "profiler" in chosen:
        out += profiler_table()
    if "snapshot" in chosen:
        out += snapshot_table()
    if "steps" in chosen:
        out += steps_table(args.steps)
    return out


if __name__ == "__main__":
    main(sys.argv[1:])
