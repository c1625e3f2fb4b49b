"""Benchmark: ingest of XLA buffer-assignment dumps of 100 MB and 1 GB, compiled vs Python.

The input is a real dump scaled up: the JAX RNN module (tests/fixtures/xla, split
form, glued into the single-file form) repeated as N copies of itself inside one
module, each copy with its own instruction names (``name_kN``), value ids,
allocation indices and schedule steps (shifted by the module's length), so the
big dump has N times the instructions, values and allocations of the real one.
XLA's peak list is copy 0's. Built under ``TLVIEW_BENCH_XLA_DIR`` (default
``$TLVIEW_BENCH_DIR/tlview-bench/xla``, never in the repository).

    flock /tmp/tlview-bench.lock .venv/bin/python -m bench xla
    TLVIEW_BENCH_XLA_MB=100 .venv/bin/python -m bench xla      (other sizes; default 100,1000)
    TLVIEW_BENCH_XLA_PY_MAX_MB=2000 ...   (the Python path up to this size; default 200)

Measured in the same run, each in a fresh process: a bare line scan of the file, the
compiled parser alone (records generated, nothing stored), tlview's full ingest into a
fresh DuckDB file with the compiled parser, and the same with the pure-Python parser
(``TLVIEW_NATIVE=0``: the previous release's path; skipped above the size set by
``TLVIEW_BENCH_XLA_PY_MAX_MB``, it takes minutes per GB). Where both ingests run, the
digests of their events rows must be equal (else the benchmark fails). Beside the
compiled ingest: its caches stage (wall, CPU), and the floor on the database's side, the
same events inserted alone into a fresh database from Parquet, then their caches built.
The closing lines show peak RSS per size (flatness) and the compiled/Python ratio.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from .harness import OUT, ROOT, Result, print_table, run_child, scan_floors

SOURCE = ROOT / "tests/fixtures/xla/module_0020.jit_rnn_scan_grad.cpu_after_optimizations"
OUT_DIR = Path(os.environ.get("TLVIEW_BENCH_XLA_DIR", OUT / "xla"))
MARK = "\x01"
SIZES_MB = [float(x) for x in os.environ.get("TLVIEW_BENCH_XLA_MB", "100,1000").split(",")]
PY_MAX_MB = float(os.environ.get("TLVIEW_BENCH_XLA_PY_MAX_MB", "200"))

_SEQ = re.compile(r"^(\s+)(\d+):")
_RANGE = re.compile(r":(\d+)-(\d+)$")
_ALLOC = re.compile(r"^allocation (\d+):")
_VALUE_ID = re.compile(r"^( value: <|<)(\d+) ")


def _parts() -> tuple[list[str], list[str], list[str], int]:
    alloc = Path(f"{SOURCE}-buffer-assignment.txt").read_text().splitlines()
    values = Path(f"{SOURCE}-buffer-assignment-values.txt").read_text().splitlines()
    live = Path(f"{SOURCE}-live-range.txt").read_text().splitlines()
    steps = int(re.match(r"HloLiveRange \(max (\d+)\)", live[0]).group(1))
    return alloc, values, live, steps


def _mark_names(lines: list[str], names: list[str]) -> list[str]:
    """Put MARK after every instruction name, so each copy can give it its own suffix."""
    alternation = "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))
    pattern = re.compile(rf"(?<![\w.\-])({alternation})(?![\w\-]|\.\w)")
    return [pattern.sub(lambda m: m.group(1) + MARK, ln) for ln in lines]


def build(target_mb: float) -> Path:
    """Write the scaled dump (single-file form) and return its path."""
    alloc, values, live, steps = _parts()
    seq_at = live.index("  InstructionSequence:")
    ranges_at = live.index("  BufferLiveRange:")
    peak_at = next(i for i, ln in enumerate(live) if ln.startswith("  Live ranges at"))
    names = [ln.split(":", 1)[1] for ln in live[seq_at + 1:ranges_at]]
    names += [m.group(1) for ln in alloc
              if (m := re.match(r" value: <\d+ ([^\s{}<>]+)", ln))]
    total_used = next(ln for ln in values if ln.startswith("Total bytes used"))
    alloc_body = _mark_names(alloc[1:], names)
    used_body = _mark_names(values[values.index("Used values:") + 1:], names)
    seq_body = _mark_names(live[seq_at + 1:ranges_at], names)
    range_body = _mark_names(live[ranges_at + 1:peak_at], names)
    n_alloc = sum(1 for ln in alloc if ln.startswith("allocation "))
    id_span = 1 + max(int(m.group(2)) for ln in alloc if (m := _VALUE_ID.match(ln)))
    one_copy = sum(len(ln) + 1 for ln in alloc + values + live)
    copies = max(1, int(target_mb * 1e6 / one_copy) + 1)

    def shift(lines: list[str], k: int) -> list[str]:
        out = []
        suffix = f"_k{k}"
        for ln in lines:
            ln = ln.replace(MARK, suffix)
            if m := _ALLOC.match(ln):
                ln = f"allocation {int(m.group(1)) + k * n_alloc}:" + ln[m.end():]
            elif m := _VALUE_ID.match(ln):
                ln = f"{m.group(1)}{int(m.group(2)) + k * id_span} " + ln[m.end():]
            out.append(ln)
        return out

    def shift_steps(lines: list[str], k: int, seq: bool) -> list[str]:
        out = []
        for ln in lines:
            ln = ln.replace(MARK, f"_k{k}")
            if seq and (m := _SEQ.match(ln)):
                ln = f"{m.group(1)}{int(m.group(2)) + k * steps}:" + ln[m.end():]
            elif not seq and (m := _RANGE.search(ln)):
                ln = ln[:m.start()] + f":{int(m.group(1)) + k * steps}-{int(m.group(2)) + k * steps}"
            out.append(ln)
        return out

    OUT_DIR.mkdir(parents=True, exist_ok=True)
    path = OUT_DIR / f"xla_rnn_x{copies}-buffer-assignment.txt"
    if path.exists():
        return path
    with open(path, "w") as f:
        f.write("BufferAssignment:\n")
        for k in range(copies):
            f.write("\n".join(shift(alloc_body, k)) + "\n")
        f.write(f"\n{total_used}\n\nUsed values:\n")
        for k in range(copies):
            f.write("\n".join(shift(used_body, k)) + "\n")
        f.write(f"HloLiveRange (max {steps * copies}):\n  InstructionSequence:\n")
        for k in range(copies):
            f.write("\n".join(shift_steps(seq_body, k, True)) + "\n")
        f.write("  BufferLiveRange:\n")
        for k in range(copies):
            f.write("\n".join(shift_steps(range_body, k, False)) + "\n")
        peak = [ln.replace(MARK, "_k0") for ln in _mark_names(live[peak_at:], names)]
        f.write("\n".join(peak) + "\n")
    return path


def _cpu_s() -> float:
    """CPU seconds of this process so far (all its threads: DuckDB's too)."""
    import resource

    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def parse_only(path: str) -> dict[str, float]:
    """The parser alone (compiled where built): every record generated, nothing stored."""
    from tlview.ingest import records_for

    t0 = _cpu_s()
    n = sum(1 for _ in records_for(path, "xla_buffer_assignment"))
    return {"events": n, "cpu_s": _cpu_s() - t0}


def digest(path: str, db: str, compiled: str) -> dict[str, object]:
    """An ingest with the compiled (``"1"``) or the Python (``"0"``) parser: the event count
    and a hash of the source's digest (every events row, timeline, note). Not timed: the
    digest query itself is heavy at 1 GB."""
    import hashlib
    import json

    os.environ["TLVIEW_NATIVE"] = compiled
    from tlview.ingest import records_for
    from tlview.store import open_database, write_records
    from tlview.store.digest import source_digest

    if os.path.exists(db):
        os.remove(db)
    with open_database(db) as d:
        summary = write_records(d, records_for(path, "xla_buffer_assignment"))
        got = source_digest(d, summary.source_id)
    os.remove(db)
    text = json.dumps(got, sort_keys=True).encode()
    return {"events": sum(summary.counts.values()), "digest": hashlib.sha256(text).hexdigest()}


def ingest(path: str, db: str, compiled: str, keep: str = "") -> dict[str, float]:
    """tlview's full ingest (parse, load into DuckDB, caches) with the compiled (``"1"``)
    or the Python (``"0"``) parser: the event count, the CPU seconds it took and those of
    its caches stage (wall and CPU). The database is kept where ``keep`` is set."""
    import time

    os.environ["TLVIEW_NATIVE"] = compiled
    from tlview.store import caches

    from .harness import ingest_file

    stage = {"caches_wall_s": 0.0, "caches_cpu_s": 0.0}
    refresh = caches.refresh

    def timed(*args: object) -> None:
        w, c = time.perf_counter(), _cpu_s()
        try:
            refresh(*args)  # type: ignore[arg-type]
        finally:
            stage["caches_wall_s"] += time.perf_counter() - w
            stage["caches_cpu_s"] += _cpu_s() - c

    caches.refresh = timed  # type: ignore[assignment]
    t0 = _cpu_s()
    n = ingest_file(path, db, "xla_buffer_assignment")
    cpu = _cpu_s() - t0
    if not keep:
        os.remove(db)
    return {"events": n, "cpu_s": cpu, **stage}


def database_alone(db: str, scratch: str) -> dict[str, float]:
    """The floor on the database's side: the events of an ingested database (``db``),
    written to Parquet (not timed), inserted into a fresh database as the ingest inserts
    them (one transaction under its memory limit, one INSERT per kind in one thread), then
    the caches of those events built (``caches.refresh``): wall and CPU seconds of each."""
    import shutil
    import time

    import duckdb
    from tlview.store import caches, open_database
    from tlview.store.writer import ingest_transaction, limit_ingest_memory

    pq = Path(scratch + ".parquet.d")
    shutil.rmtree(pq, ignore_errors=True)
    pq.mkdir()
    with duckdb.connect(db, read_only=True) as con:
        tables = [t for (t,) in con.execute(
            "SELECT table_name FROM duckdb_tables() WHERE table_name LIKE 'events_%' "
            "AND estimated_size > 0").fetchall()]
        for t in tables:
            con.execute(f"COPY {t} TO '{pq / t}.parquet' (FORMAT parquet)")
        tids = [t for (t,) in con.execute("SELECT DISTINCT timeline_id FROM timeline_records")
                .fetchall()]
    if os.path.exists(scratch):
        os.remove(scratch)
    out: dict[str, float] = {}
    with open_database(scratch) as d:
        limit_ingest_memory(d)
        with ingest_transaction(d) as txn:
            w, c = time.perf_counter(), _cpu_s()
            txn.insert_threads()
            for t in tables:
                d.con.execute(f"INSERT INTO {t} SELECT * FROM read_parquet('{pq / t}.parquet')")
            txn.restore_threads()
            out.update(insert_wall_s=time.perf_counter() - w, insert_cpu_s=_cpu_s() - c)
            w, c = time.perf_counter(), _cpu_s()
            caches.refresh(d, tids)
            out.update(caches_wall_s=time.perf_counter() - w, caches_cpu_s=_cpu_s() - c)
    os.remove(scratch)
    shutil.rmtree(pq)
    return out


def main() -> list[Result]:
    """Per size: build the scaled dump, measure line scan, parse and both ingests."""
    results = [r for mb in SIZES_MB for r in measure(mb)]
    flat = [r for r in results if r.name == "tlview ingest xla_buffer_assignment (compiled)"]
    if len(flat) > 1:
        print("peak RSS of the compiled ingest: " + ", ".join(
            f"{r.size_bytes / 1e6:,.0f} MB -> {r.peak_rss_mb:,.0f} MB" for r in flat)
            + f" ({(flat[-1].peak_rss_mb - flat[0].peak_rss_mb) / ((flat[-1].size_bytes - flat[0].size_bytes) / 1e6):.3f} MB of RSS per MB of dump)")
    return results


def measure(mb: float) -> list[Result]:
    path = build(mb)
    size = path.stat().st_size
    label = f"XLA {size / 1e6:.0f} MB ({path.name})"
    db = str(OUT_DIR / "bench_xla.duckdb")
    scan, floors = scan_floors(path, label)
    parsed = run_child("bench.bench_xla:parse_only", str(path))
    fast = run_child("bench.bench_xla:ingest", str(path), db, "1", "keep")
    alone = run_child("bench.bench_xla:database_alone", db, db + ".alone")["result"]
    os.remove(db)
    out = [
        *floors,
        Result("parse only xla_buffer_assignment (compiled)", label, size, parsed["wall_s"],
               parsed["peak_rss_mb"], events=parsed["result"]["events"],
               baseline={"vs line scan": parsed["wall_s"] / scan["wall_s"]}),
    ]
    ingested = Result("tlview ingest xla_buffer_assignment (compiled)", label, size,
                      fast["wall_s"], fast["peak_rss_mb"], events=fast["result"]["events"],
                      baseline={"vs line scan": fast["wall_s"] / scan["wall_s"]},
                      # issue 15: 1 GB at >= 50 MB/s, RSS flat and < 500 MB
                      target_mb_s=50 if size >= 900e6 else None,
                      target_rss_mb=500 if size >= 900e6 else None)
    out.append(ingested)
    # CPU time (this machine is shared: wall time is often several times the CPU time)
    cpu = [("parse only, compiled", parsed), ("ingest, compiled", fast)]
    if mb <= PY_MAX_MB:
        slow = run_child("bench.bench_xla:ingest", str(path), db, "0")
        ingested.baseline["vs Python ingest"] = fast["wall_s"] / slow["wall_s"]
        cpu.append(("ingest, Python", slow))
        out.append(Result("tlview ingest xla_buffer_assignment (Python, previous release)",
                          label, size, slow["wall_s"], slow["peak_rss_mb"],
                          events=slow["result"]["events"],
                          baseline={"vs line scan": slow["wall_s"] / scan["wall_s"]}))
        a = run_child("bench.bench_xla:digest", str(path), db, "1")["result"]
        b = run_child("bench.bench_xla:digest", str(path), db, "0")["result"]
        if a != b:
            raise AssertionError(f"compiled and Python ingests differ on {path}: {a} vs {b}")
        print(f"{label}: events digest compiled == Python: {a['digest'][:16]} "
              f"({a['events']:,} events)")
    f = fast["result"]
    print(f"{label}: stages of the compiled ingest: caches {f['caches_wall_s']:.2f} s wall, "
          f"{f['caches_cpu_s']:.2f} CPU-s; the rest (parse beside the INSERTs, commit) "
          f"{fast['wall_s'] - f['caches_wall_s']:.2f} s wall, "
          f"{f['cpu_s'] - f['caches_cpu_s']:.2f} CPU-s. The database alone (its events from "
          f"Parquet, no parse): INSERT {alone['insert_wall_s']:.2f} s wall, "
          f"{alone['insert_cpu_s']:.2f} CPU-s; caches {alone['caches_wall_s']:.2f} s wall, "
          f"{alone['caches_cpu_s']:.2f} CPU-s")
    print(f"{label}: CPU " + ", ".join(
        f"{name} {r['result']['cpu_s']:.2f} s ({size / 1e6 / r['result']['cpu_s']:.1f} MB per "
        f"CPU-s; wall {r['wall_s']:.2f} s)" for name, r in cpu))
    return out


if __name__ == "__main__":
    print_table(main())
