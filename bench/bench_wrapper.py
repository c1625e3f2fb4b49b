"""Torch-log ingest at scale: a 50 MB TORCH_LOGS=aot_graphs,output_code log made from real ones.

Inputs (under bench/out/, made here from the committed fixtures, never random text):
* ``torch_glog_50MB.log``: the four real CPU torch 2.13 logs of tests/fixtures/torch in
  torch's default glog dress, repeated with renamed AOT ids / graph numbers (each copy is
  a new compile: ``['12_forward']``, ``Forward graph 12``) until 50 MB;
* ``torch_short_50MB.log``: the same with the ``TORCH_LOGS_FORMAT=short`` logs and seed 004.

Measured in the same run, each in its own process: a bare Python line scan of the same
file; the database side alone (the same rows parsed first, then written: the floor a
parser of no cost would leave); tlview's parse alone and its whole ingest, with the
compiled core and with the pure-Python parsers (``TLVIEW_NATIVE=0``: the previous
release's path); and the digest of every events row written by both, which must be equal.
Size override: TLVIEW_BENCH_WRAPPER_MB (comma list, default 10,50,100).
"""

from __future__ import annotations

import contextlib
import os
import re
import resource
import sys
from collections.abc import Iterator
from pathlib import Path

from .harness import OUT, Result, run_child, scan_floors

ROOT = Path(__file__).resolve().parent.parent
TORCH = ROOT / "tests" / "fixtures" / "torch"
SEED_004 = ROOT / "tests" / "fixtures" / "seeds" / "004_11560de70615f418.txt"
OUT_DIR = ROOT / "bench" / "out"
SIZES_MB = [float(x) for x in os.environ.get("TLVIEW_BENCH_WRAPPER_MB", "10,50,100").split(",")]
PROGRAMS = ["mlp_train", "transformer_block", "conv_net", "inplace_mutation"]

_AOT = re.compile(r"(AOT ID: \[')(\d+)(_\w+'\])")
_GRAPH = re.compile(r"(===== \w+ graph )(\d+)( =====)")


def scaled_log(dress: str, target_mb: float) -> Path:
    """Real logs repeated, each copy renumbered as a new compile, up to ``target_mb``."""
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    out = OUT_DIR / f"torch_{dress}_{target_mb:g}MB.log"
    if out.exists() and out.stat().st_size >= target_mb * 1e6:
        return out
    if dress == "glog":
        sources = [TORCH / f"{p}.log" for p in PROGRAMS]
    else:
        sources = [TORCH / f"{p}.short.log" for p in PROGRAMS] + [SEED_004]
    texts = [p.read_text() for p in sources]
    written = 0
    k = 0
    with open(out, "w") as f:
        while written < target_mb * 1e6:
            for text in texts:
                chunk = _AOT.sub(lambda m, k=k: f"{m[1]}{k}{m[3]}", text)
                chunk = _GRAPH.sub(lambda m, k=k: f"{m[1]}{k}{m[3]}", chunk)
                f.write(chunk)
                written += len(chunk)
                k += 1
    return out


@contextlib.contextmanager
def native_mode(on: bool) -> Iterator[None]:
    """Children started inside run with the compiled core (on) or the Python parsers."""
    before = os.environ.get("TLVIEW_NATIVE")
    os.environ["TLVIEW_NATIVE"] = "1" if on else "0"
    try:
        yield
    finally:
        if before is None:
            del os.environ["TLVIEW_NATIVE"]
        else:
            os.environ["TLVIEW_NATIVE"] = before


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def parse_only(path: str) -> dict:
    """tlview's parser alone (the file's format), as the writer reads it (columns
    accepted: ingest.records.columns_accepted): every record made, none written; the
    record count and the process CPU seconds it took."""
    from tlview.ingest import records_for
    from tlview.ingest.records import EventColumns, columns_accepted

    c = _cpu()
    n = 0
    with columns_accepted():
        for r in records_for(path):
            n += len(r) if isinstance(r, EventColumns) else 1
    return {"n": n, "cpu_s": _cpu() - c}


def insert_prebuilt(path: str, db: str) -> dict:
    """The floor of the database side: the ingest's records parsed first into memory (as
    the writer reads them: events in EventColumns), then written as the ingest writes
    them (one INSERT, side tables, caches, commit) into a fresh database; the CPU and
    wall seconds of the writing alone."""
    import time

    from tlview.ingest import records_for
    from tlview.ingest.records import columns_accepted
    from tlview.store import open_database, write_records

    with columns_accepted():
        records = list(records_for(path))
    if os.path.exists(db):
        os.remove(db)
    c, w = _cpu(), time.perf_counter()
    with open_database(db) as d:
        summary = write_records(d, iter(records))
    return {"n": sum(summary.counts.values()), "cpu_s": _cpu() - c,
            "wall_s": time.perf_counter() - w}


def ingest_cpu(path: str, db: str) -> dict:
    """The whole ingest (bench.harness.ingest_file); events and process CPU seconds (the
    parse thread and DuckDB's together)."""
    from .harness import ingest_file

    c = _cpu()
    n = ingest_file(path, db)
    return {"n": n, "cpu_s": _cpu() - c}


def digest(db: str) -> dict:
    """The events/timelines digest of the one source in ``db`` (store.digest)."""
    from tlview.store import open_database
    from tlview.store.digest import source_digest

    with open_database(db) as d:
        return source_digest(d, 1)


def compare_modes(path: Path, label: str, name: str, scan: dict) -> list[Result]:
    """Parse alone and whole ingest, compiled core vs Python parsers, with the digests."""
    size = path.stat().st_size
    runs = {}
    for on in (True, False):
        db = OUT / f"modes_{'c' if on else 'py'}.duckdb"
        with native_mode(on):
            parse = run_child("bench.bench_wrapper:parse_only", str(path))
            ing = run_child("bench.bench_wrapper:ingest_cpu", str(path), str(db))
        # The digest in a child of its own: the parent's RSS would pass to later children.
        runs[on] = (parse, ing, run_child("bench.bench_wrapper:digest", str(db))["result"])
    same = runs[True][2] == runs[False][2]
    if not same:
        raise AssertionError(f"{label}: the compiled and Python ingests wrote different rows")
    print(f"{label}: compiled and Python ingests wrote identical rows (events digest "
          f"{runs[True][2]['events'][:16]})", file=sys.stderr, flush=True)
    out = []
    for on, mode in ((False, "Python parsers (previous release)"), (True, "compiled core")):
        parse, ing, _ = runs[on]
        ratios = {"vs line scan": ing["wall_s"] / scan["wall_s"]}
        if on:
            ratios["speedup vs Python"] = runs[False][1]["wall_s"] / ing["wall_s"]
            ratios["parse speedup"] = runs[False][0]["wall_s"] / parse["wall_s"]
            ratios["CPU-time speedup"] = runs[False][1]["result"]["cpu_s"] / \
                ing["result"]["cpu_s"]
            ratios["parse CPU-time speedup"] = runs[False][0]["result"]["cpu_s"] / \
                parse["result"]["cpu_s"]
        out.append(Result(f"tlview parse {name}, {mode}", label, size, parse["wall_s"],
                          parse["peak_rss_mb"], events=parse["result"]["n"],
                          extra={"cpu_s": parse["result"]["cpu_s"]}))
        at_size = on and size >= 95e6  # issue 15: torch logs at 100 MB, >= 50 MB/s
        out.append(Result(f"tlview ingest {name}, {mode}", label, size, ing["wall_s"],
                          ing["peak_rss_mb"], events=ing["result"]["n"], baseline=ratios,
                          extra={"cpu_s": ing["result"]["cpu_s"], "digest equal": same},
                          target_mb_s=50 if at_size else None))
        for what, r in (("parse", parse), ("ingest", ing)):
            cpu = r["result"]["cpu_s"]
            print(f"  {label:<24} {what:<6} {mode:<34} wall {r['wall_s']:7.2f} s  "
                  f"CPU {cpu:7.2f} s = {size / 1e6 / cpu:6.1f} MB/s of CPU  "
                  f"peak RSS {r['peak_rss_mb']:5.0f} MB", file=sys.stderr, flush=True)
    return out


def main() -> list[Result]:
    OUT.mkdir(parents=True, exist_ok=True)
    results = []
    for dress, mb in [(d, mb) for d in ("glog", "short") for mb in SIZES_MB]:
        path = scaled_log(dress, mb)
        label = f"torch log ({dress}) {mb:g} MB"
        scan, floors = scan_floors(path, label)
        results.extend(floors)
        results.append(floor(path, label))
        results.extend(compare_modes(path, label, "torch_log", scan))
    return results


def floor(path: Path, label: str) -> Result:
    """The database side alone (insert_prebuilt), compiled core: what a parser of no cost
    would leave."""
    size = path.stat().st_size
    with native_mode(True):
        r = run_child("bench.bench_wrapper:insert_prebuilt", str(path), str(OUT / "floor.duckdb"))
    res = r["result"]
    print(f"  {label:<24} floor  DuckDB side of the same rows, prebuilt: wall "
          f"{res['wall_s']:7.2f} s  CPU {res['cpu_s']:7.2f} s = "
          f"{size / 1e6 / res['cpu_s']:6.1f} MB/s of CPU", file=sys.stderr, flush=True)
    return Result("DuckDB side of the same rows, prebuilt (floor)", label, size, res["wall_s"],
                  r["peak_rss_mb"], events=res["n"], extra={"cpu_s": res["cpu_s"]})
