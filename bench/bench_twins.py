"""What each compiled twin earns end to end: `tlview ingest` with the whole core against
the same ingest with that one twin hidden (its format then read by the Python parser).

A twin stays only where it earns >= 2x end to end (issue 27): the parse, the load into
DuckDB and the caches, as ``tlview ingest`` runs them, in one process per run. A twin is
hidden by a core that lacks its entry points (the dispatch falls back to the Python
parser exactly as on a core built before the twin existed); formats read by one twin
alone run with no core at all (``TLVIEW_NATIVE=0``'s path). Each pair is measured three
times, alternately, and the medians compared; the event counts of both must be equal.

Inputs (the other benchmarks' builders, from the real fixtures):
* Kineto (chrome_trace), the scheduler IR (inductor_ir), XLA (xla_buffer_assignment),
  the allocator snapshot (cuda_snapshot): ``TLVIEW_BENCH_TWINS_MB`` (default 20; the
  snapshot half of it);
* Flight Recorder dumps (flight_recorder), each form: ``TLVIEW_BENCH_TWINS_FR_RANKS``
  (default 64) ranks' dumps of 2,000 entries, bench_hang's: the folder ingested whole,
  as a hang's dumps are, with ``-j`` the machine's cores (the workers forked from the
  measured process, the twin hidden in them too) and once with ``-j 1``.

The torch logs' twins were removed after this bench's runs of 2026-11-28
(docs/benchmarks.md): the FX graph and output-code readers (torch_fx, wrapper_module,
torch_wrapper) first, then torch_log (the dress, TORCH_TRACE's payload runs) with the
event sink that served it (bench/results/2026-11-28-twins-torch_log.txt). The Flight
Recorder twin's JSON half, removed once (bench/results/2026-11-28-issue25-frnative.txt:
64 dumps, measured before the Python reader was made columnar), came back for the
1,024-rank hang (bench/results/2026-11-28-fr-json-twin.txt).
"""

from __future__ import annotations

import os
import resource
import statistics
import time
from pathlib import Path
from typing import Any

from .harness import OUT, Result, run_child

SIZE_MB = float(os.environ.get("TLVIEW_BENCH_TWINS_MB", "20"))
RUNS = int(os.environ.get("TLVIEW_BENCH_TWINS_RUNS", "3"))

# The entry points each Flight Recorder twin adds to the core (the other formats' twins:
# "*", the core left out whole).
FR_PICKLE, FR_JSON = "FlightRecorderParser", "flight_recorder_json"
FR_RANKS = int(os.environ.get("TLVIEW_BENCH_TWINS_FR_RANKS", "64"))


class _Without:
    """The compiled core less some entry points (``hasattr`` is False for them)."""

    def __init__(self, core: Any, hidden: set[str]) -> None:
        self._core, self._hidden = core, hidden

    def __getattr__(self, name: str) -> Any:
        if name in self._hidden:
            raise AttributeError(name)
        return getattr(self._core, name)


def ingest_without(path: str, db: str, hidden: str, jobs: str = "1") -> dict[str, float]:
    """``tlview ingest PATH --db DB -j JOBS`` in this process with the named entry points
    hidden (its forked workers inherit that); its wall time (imports done first), CPU
    time (its workers' too) and the events written."""
    import duckdb
    from tlview.cli import main
    from tlview.ingest import native

    core = native.module()
    if hidden == "*":
        native.module = lambda: None  # type: ignore[assignment]
    elif hidden:
        without = _Without(core, set(hidden.split(",")))
        native.module = lambda: without  # type: ignore[assignment]
    if os.path.exists(db):
        os.remove(db)
    t0, c0 = time.perf_counter(), _cpu()
    rc = main(["ingest", path, "--db", db, "-j", jobs])
    wall, cpu = time.perf_counter() - t0, _cpu() - c0
    if rc != 0:
        raise RuntimeError(f"ingest of {path} exited {rc}")
    con = duckdb.connect(db, read_only=True)
    (events,) = con.execute("SELECT count(*) FROM events").fetchall()[0]
    con.close()
    os.remove(db)
    return {"wall_s": wall, "cpu_s": cpu, "events": events}


def _cpu() -> float:
    """CPU seconds of every thread of this process and of its finished workers."""
    return sum(r.ru_utime + r.ru_stime for r in (resource.getrusage(resource.RUSAGE_SELF),
                                                  resource.getrusage(resource.RUSAGE_CHILDREN)))


def _input(label: str) -> Path:
    """The input of one case (built on first use: a run of some twins builds only theirs)."""
    from . import (
        bench_hang,
        bench_kineto,
        bench_snapshot,
        bench_xla,
    )
    from .scale import scaled_ir

    build = {
        "Kineto": lambda: bench_kineto.scaled_trace(SIZE_MB),
        "scheduler IR": lambda: scaled_ir(SIZE_MB),
        "XLA": lambda: bench_xla.build(SIZE_MB),
        "snapshot": lambda: bench_snapshot.scaled_snapshot(SIZE_MB / 2),
        "FR pickle": lambda: bench_hang.dumps("pickle", FR_RANKS),
        "FR json": lambda: bench_hang.dumps("json", FR_RANKS),
    }
    return build[label]()


# (twin, input, hidden on the measured side, hidden on both sides[, ingest -j])
CORES = str(len(os.sched_getaffinity(0)))
CASES: list[tuple[str, ...]] = [
    ("chrome_trace", "Kineto", "*", ""),
    ("inductor_ir", "scheduler IR", "*", ""),
    ("xla_buffer_assignment", "XLA", "*", ""),
    ("cuda_snapshot", "snapshot", "*", ""),
    ("flight_recorder", "FR pickle", FR_PICKLE, "", CORES),
    ("flight_recorder", "FR json", FR_JSON, "", CORES),
    ("flight_recorder", "FR pickle", FR_PICKLE, "", "1"),
    ("flight_recorder", "FR json", FR_JSON, "", "1"),
]


def _join(*parts: str) -> str:
    return ",".join(p for p in parts if p and p != "*") if "*" not in parts else "*"


def _runs(d: dict[str, list[float]]) -> str:
    return " / ".join(",".join(f"{v:.2f}" for v in d[s]) for s in ("with", "without"))


def main() -> list[Result]:
    only = os.environ.get("TLVIEW_BENCH_TWINS_ONLY")
    db = str(OUT / "twins.duckdb")
    results = []
    for twin, label, hidden, base, *jobs in CASES:
        if only and twin not in only.split(","):
            continue
        path = _input(label)
        walls: dict[str, list[float]] = {"with": [], "without": []}
        cpus: dict[str, list[float]] = {"with": [], "without": []}
        events: set[int] = set()
        for _ in range(RUNS):
            for side, hide in (("with", base), ("without", _join(base, hidden))):
                got = run_child("bench.bench_twins:ingest_without", str(path), db, hide,
                                *jobs)
                walls[side].append(got["result"]["wall_s"])
                cpus[side].append(got["result"]["cpu_s"])
                events.add(got["result"]["events"])
        if len(events) != 1:
            raise RuntimeError(f"{twin} on {label}: event counts differ {events}")
        with_s, without_s = (statistics.median(walls[s]) for s in ("with", "without"))
        with_c, without_c = (statistics.median(cpus[s]) for s in ("with", "without"))
        ratio = without_s / with_s
        if jobs:
            label = f"{label} -j {jobs[0]}"
        print(f"{twin:26} {label:16} wall {with_s:6.2f} / {without_s:6.2f} s {ratio:5.2f}x  "
              f"CPU {with_c:6.2f} / {without_c:6.2f} s {without_c / with_c:5.2f}x  "
              f"(wall {_runs(walls)}; CPU {_runs(cpus)})", flush=True)
        size = sum(p.stat().st_size for p in path.iterdir()) if path.is_dir() else \
            path.stat().st_size
        results.append(Result(f"twin {twin}: ingest with it", label, size, with_s, 0.0,
                              events=events.pop(),
                              baseline={"without it (wall)": ratio,
                                        "without it (CPU)": without_c / with_c}))
    return results
