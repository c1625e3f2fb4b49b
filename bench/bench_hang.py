"""Hangs at scale: 1,024 ranks' Flight Recorder dumps of 2,000 entries each, ingested, and
the verdict out (goal: < 30 s, RSS < 500 MB on the 2-core machine).

Input: the real 2,000-entry dump of tests/fixtures/flight_recorder/gloo_long (rank 0 of a
gloo job whose ring wrapped), in each form (``TLVIEW_BENCH_HANG_FORMS``, default
json,pickle), rewritten as rank r of TLVIEW_BENCH_HANG_RANKS ranks (default 1,024): the
file named ``fr_trace_rank_<r>`` as torch names it, the default group's ranks in
pg_config set to 0..N-1, every entry's enqueue time moved by a random offset within
+-1 ms (seeded), and the hang injected: rank N-1 (the last) loses its newest
entry, so it never issued the collective every other rank waits in. The pickle is read
back through tlview's own restricted reader (never pickle.load) and written by Python's
pickler at protocol 2, as torch's C++ pickler writes it; the JSON as nlohmann writes it
(sorted keys, no spaces). Files are cached under bench/out.

Each form: ``tlview ingest DIR -j CORES`` into a fresh database (the command's wall time,
with its report of the incident), then ``SELECT * FROM hang_verdict`` in its own process;
the total is the time from the command's start to the verdict's rows. Peak RSS: the
largest process. The floor, in the same run (the machine is shared: compare ratios):
every file read whole by ``json.loads`` / ``pickle.load`` (globals refused) on as many
processes as the ingest has cores, the values dropped: what any reader of these files in
Python pays before a row exists. ``TLVIEW_INGEST_PHASES`` of the ingest go to
``bench/out``'s ``hang<N>_<form>.phases.json``.
"""

from __future__ import annotations

import io
import json
import os
import pickle
import random
import sys
import time
from pathlib import Path
from typing import Any

from .harness import OUT, ROOT, Result, run_child

RANKS = int(os.environ.get("TLVIEW_BENCH_HANG_RANKS", "1024"))
FORMS = os.environ.get("TLVIEW_BENCH_HANG_FORMS", "json,pickle").split(",")
SOURCE = ROOT / "tests" / "fixtures" / "flight_recorder" / "gloo_long"


def _read(form: str) -> dict[str, Any]:
    if form == "json":
        return json.loads((SOURCE / "json" / "fr_trace_rank_0.json").read_text())
    from tlview.ingest.pickle_stream import load_plain

    path = SOURCE / "pickle" / "fr_trace_rank_0"
    with open(path, "rb") as f:
        return load_plain(f, str(path))


def dumps(form: str, n: int) -> Path:
    """``n`` ranks' dumps of one form (cached)."""
    folder = OUT / f"hang{n}_{form}"
    if folder.exists() and len(list(folder.iterdir())) == n:
        return folder
    folder.mkdir(parents=True, exist_ok=True)
    real = _read(form)
    ranks = str(list(range(n)))
    rng = random.Random(11)
    for r in range(n):
        d = dict(real)
        d["pg_config"] = {k: {**v, "ranks": ranks} for k, v in real["pg_config"].items()}
        shift = rng.randint(-1_000_000, 1_000_000)
        entries = [{**e, "time_created_ns": e["time_created_ns"] + shift}
                   for e in real["entries"]]
        if r == n - 1:  # the culprit: its newest collective never issued
            entries = entries[:-1]
        d["entries"] = entries
        path = folder / f"fr_trace_rank_{r}"
        if form == "json":
            path.with_suffix(".json").write_text(
                json.dumps(d, sort_keys=True, separators=(",", ":")))
        else:
            buf = io.BytesIO()
            pickle.Pickler(buf, protocol=2).dump(d)
            path.write_bytes(buf.getvalue())
    return folder


def ingest_cli(folder: str, db: str) -> dict[str, Any]:
    """``tlview ingest FOLDER -j CORES``: exit code, wall time, its hang report's lines,
    the largest process's peak RSS."""
    import resource
    import subprocess

    for p in (db, db + ".wal"):
        if os.path.exists(p):
            os.remove(p)
    t = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "tlview", "ingest", folder, "--db", db,
                           "-j", str(len(os.sched_getaffinity(0)))],
                          capture_output=True, text=True, check=False,
                          env={**os.environ, "TLVIEW_INGEST_PHASES": db + ".phases.json"})
    wall = time.perf_counter() - t
    hang = [ln for ln in proc.stdout.splitlines() if ln.startswith(("hang:", "  "))]
    return {"rc": proc.returncode, "wall_s": wall, "hang": hang[:4],
            "err": proc.stderr[-500:],
            "rss_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024}


class _NoGlobals(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        raise pickle.UnpicklingError(f"global {module}.{name} refused")


def _load_one(path: str) -> int:
    with open(path, "rb") as f:
        data = f.read()
    top = json.loads(data) if path.endswith(".json") else _NoGlobals(io.BytesIO(data)).load()
    return len(top["entries"])


def floor(folder: str) -> dict[str, Any]:
    """Every dump of ``folder`` loaded whole (json.loads / pickle.load, no globals) on
    CORES processes: entries."""
    from concurrent.futures import ProcessPoolExecutor

    paths = sorted(str(p) for p in Path(folder).iterdir())
    with ProcessPoolExecutor(len(os.sched_getaffinity(0))) as ex:
        return {"entries": sum(ex.map(_load_one, paths, chunksize=16))}


def verdict(db: str) -> dict[str, Any]:
    from tlview.store import open_database

    with open_database(db, read_only=True) as d:
        t = time.perf_counter()
        rows = d.sql("SELECT * FROM hang_verdict WHERE culprit").fetchall()
        s = time.perf_counter() - t
        n = d.sql("SELECT count(*) FROM events_collective_recorded").fetchall()[0][0]
    return {"s": s, "culprits": [(r[1], r[3], r[5], r[6]) for r in rows], "entries": n}


def main() -> list[Result]:
    OUT.mkdir(parents=True, exist_ok=True)
    results: list[Result] = []
    for form in FORMS:
        folder = dumps(form, RANKS)
        size = sum(p.stat().st_size for p in folder.iterdir())
        db = str(OUT / f"hang{RANKS}_{form}.duckdb")
        got = run_child("bench.bench_hang:ingest_cli", str(folder), db, timeout=7200)
        r = got["result"]
        if r["rc"] != 0:
            raise RuntimeError(f"{form}: tlview ingest failed: {r}")
        v = run_child("bench.bench_hang:verdict", db)
        vr = v["result"]
        fl = run_child("bench.bench_hang:floor", str(folder))
        phases = json.loads(Path(db + ".phases.json").read_text())
        phases.pop("workers", None)
        print(f"{RANKS} {form} dumps: ingest {r['wall_s']:.2f} s, verdict {vr['s']:.2f} s "
              f"({vr['entries']:,} entries): {vr['culprits'][:2]}; {r['hang'][:2]}; "
              f"floor {fl['wall_s']:.2f} s; phases {phases}", file=sys.stderr, flush=True)
        total = r["wall_s"] + v["wall_s"]
        load = "json.loads" if form == "json" else "pickle.load"
        results.append(Result(f"{load} of every dump (floor)", f"{RANKS} ranks", size,
                              fl["wall_s"], fl["peak_rss_mb"],
                              events=fl["result"]["entries"]))
        results.append(Result(
            f"{RANKS} FR dumps ({form}) ingest -j + hang_verdict", f"{RANKS} ranks", size,
            total, max(r["rss_mb"], v["peak_rss_mb"]), events=vr["entries"],
            baseline={f"time vs {load}": total / fl["wall_s"]},
            extra={"ingest_s": r["wall_s"], "verdict_s": vr["s"], "verdict_child_s": v["wall_s"],
                   "culprits": vr["culprits"], "report": r["hang"], "phases": phases}))
    return results


if __name__ == "__main__":
    from .harness import print_table

    print_table(main())
