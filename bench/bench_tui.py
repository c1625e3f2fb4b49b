"""TUI benchmark: a synthetic 1,000,000-step / 3,000,000-buffer timeline, driven by Pilot.

Measures, in a fresh process each: time to first screen (the list's rows on screen),
time until the memory curve and live buffers are shown, and per step key (median of
100 presses of ``j`` near the peak): until the cursor is drawn, and until every panel
(live buffers, node, collectives) shows the new step. Goals: first screen < 1.5 s,
step < 30 ms.

    .venv/bin/python -m bench.bench_tui [--steps N]

The database is built once under bench/out/ (about 3 minutes for 1M steps) through
the store's writer, from generated records (bench/synthetic_timeline.py).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from pathlib import Path

from bench.harness import ROOT, run_child
from bench.synthetic_timeline import build

OUT = ROOT / "bench" / "out"


async def _measure(db: str, width: int, height: int, presses: int) -> dict:
    from tlview.tui.app import TlviewApp
    from tlview.tui.execution_list import ExecutionList
    from tlview.tui.live_buffers import LiveBuffers

    t0 = time.perf_counter()
    app = TlviewApp(db)
    out: dict = {}
    async with app.run_test(size=(width, height)) as pilot:
        steps = app.query_one(ExecutionList)
        while not steps.rows:
            await pilot.pause(0.005)
        await pilot.pause()
        out["first_screen_s"] = time.perf_counter() - t0
        live = app.query_one(LiveBuffers)
        while app.curve is None or live.live is None:
            await pilot.pause(0.01)
        await pilot.pause()
        out["memory_ready_s"] = time.perf_counter() - t0
        out["peak_step"] = app.curve.peak_step
        out["n_steps"] = app.timeline.n_steps
        app.go(app.curve.peak_step - presses // 2)
        await app.workers.wait_for_complete()
        await pilot.pause()
        drawn, settled = [], []
        for _ in range(presses):
            target = app.step + 1
            t = time.perf_counter()
            await pilot.press("j")
            while steps.cursor != target or target not in steps.rows:
                await pilot.pause(0.001)
            await pilot.pause()
            drawn.append(time.perf_counter() - t)
            while live.live is None or live.live.step != target:
                await pilot.pause(0.001)
            await app.workers.wait_for_complete()
            await pilot.pause()
            settled.append(time.perf_counter() - t)
        out["step_drawn_ms"] = statistics.median(drawn) * 1000
        out["step_settled_ms"] = statistics.median(settled) * 1000
        out["step_settled_p90_ms"] = sorted(settled)[int(0.9 * len(settled))] * 1000
        out["live_at_peak"] = live.live.n_live
    return out


def measure(db: str, width: str = "80", height: str = "24", presses: str = "100") -> dict:
    return asyncio.run(_measure(db, int(width), int(height), int(presses)))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=1_000_000)
    args = ap.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    db = OUT / f"syn_{args.steps}.duckdb"
    t = time.perf_counter()
    build(db, args.steps)
    print(f"database: {db} ({db.stat().st_size / 1e6:,.0f} MB, "
          f"built/reused in {time.perf_counter() - t:.1f} s)")
    rows = []
    for size in ((80, 24), (160, 48)):
        r = run_child("bench.bench_tui:measure", str(db), str(size[0]), str(size[1]), "100")
        res = r["result"]
        rows.append((f"{size[0]}x{size[1]}", res, r["peak_rss_mb"]))
    print(f"{'terminal':9} {'steps':>9} {'first screen s':>14} {'memory shown s':>14} "
          f"{'step drawn ms':>13} {'step settled ms':>15} {'settled p90':>11} {'RSS MB':>7}")
    for label, res, rss in rows:
        print(f"{label:9} {res['n_steps']:>9,} {res['first_screen_s']:>14.2f} "
              f"{res['memory_ready_s']:>14.2f} {res['step_drawn_ms']:>13.1f} "
              f"{res['step_settled_ms']:>15.1f} {res['step_settled_p90_ms']:>11.1f} {rss:>7,.0f}")
    print("goals: first screen < 1.5 s, step < 30 ms (median of 100 presses of j near the "
          f"peak, step {rows[0][1]['peak_step']:,}, {rows[0][1]['live_at_peak']:,} live buffers)")


if __name__ == "__main__":
    main()
