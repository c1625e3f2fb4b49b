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
import hashlib
import statistics
import time

from tlview.store.db import schema_sql

from bench.harness import ROOT, Result, run_child
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
        app.query_one(ExecutionList)
        while 0 not in drawn_at:
            await pilot.pause(0.002)
        out["first_screen_s"] = drawn_at[0] - t0
        live = app.query_one(LiveBuffers)
        while app.curve is None or live.live is None:
            await pilot.pause(0.005)
        await pilot.pause(0.001)
        out["memory_ready_s"] = time.perf_counter() - t0
        out["peak_step"] = app.curve.peak_step
        out["n_steps"] = app.timeline.n_steps
        app.go(app.curve.peak_step - presses // 2)
        await settle(app)
        await pilot.pause()
        drawn, pressed, settled = [], [], []
        for _ in range(presses):
            target = app.step + 1
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
            target = app.step + 1
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


def main(argv: list[str] | None = None) -> list[Result]:
    """Print the TUI table; return the figures for ``python -m bench``'s common table."""
    ap = argparse.ArgumentParser(prog="python -m bench.bench_tui")
    ap.add_argument("--steps", type=int, default=1_000_000)
    args = ap.parse_args(argv or [])
    OUT.mkdir(parents=True, exist_ok=True)
    # Named by schema: a database written by another tlview is refused (SchemaError).
    tag = hashlib.sha256(schema_sql().encode()).hexdigest()[:8]
    db = OUT / f"syn_{args.steps}_{tag}.duckdb"
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


if __name__ == "__main__":
    import sys

    main(sys.argv[1:])
