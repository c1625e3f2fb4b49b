"""Many files on all cores, and the sharded store: ``python -m bench shards``.

1. Eight rank traces (issue 15's "many files" row): the fixture's Kineto trace scaled to
   TLVIEW_BENCH_SHARDS_MB (default 12.5 MB, bench_kineto.scaled_trace) and copied as
   rank0..7: ``tlview ingest`` one file after another (-j 1) against -j CORES, taking
   turns TLVIEW_BENCH_SHARDS_REPEATS times (default 3; medians and every pair's ratio).
2. 256 rank traces (bench_ranks.traces: the real pair rewritten as ranks 0..255, clocks
   and kernels jittered): -j 1 against -j CORES (TLVIEW_BENCH_RANKS_REPEATS turns,
   default 1) and against ``--dask local`` (a dask.distributed LocalCluster of CORES
   single-threaded worker processes).
3. The same 256 as a shard set (``tlview shard -j CORES``): its Parquet bytes, and
   collective_skew / stragglers over it (``open_shards``, best of 3) beside the same
   queries over the database, in one process; then over 1,024 rank traces: the 256
   shards replicated four times (hard links under new source ids: four runs of 256).
   TLVIEW_BENCH_SHARD_SET=0 leaves this part out.

Every ingest runs in its own process (wall, peak RSS of the writer and of its largest
worker, CPU busy = CPU seconds of the process and its workers / (wall x cores)), and
prints its seconds by phase (the command's, the writer's, the workers'; on stderr).
TLVIEW_BENCH_BASELINE_TLVIEW names another tlview's console script (e.g. the previous
release's venv) whose ``ingest -j CORES`` runs in the same turns. The parallel and Dask
databases are checked against the serial one: every source's events digest
(store/digest.py), its sources row and timeline ids; the scaled trace's digest against
the pure-Python parser's (TLVIEW_NATIVE=0).
"""

from __future__ import annotations

import contextlib
import io
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from .harness import OUT, ROOT, Result, run_child

MB = float(os.environ.get("TLVIEW_BENCH_SHARDS_MB", "12.5"))
RANKS = int(os.environ.get("TLVIEW_BENCH_RANKS", "256"))
REPLICAS = 4
REPEATS = int(os.environ.get("TLVIEW_BENCH_SHARDS_REPEATS", "3"))
RANKS_REPEATS = int(os.environ.get("TLVIEW_BENCH_RANKS_REPEATS", "1"))
BASELINE = os.environ.get("TLVIEW_BENCH_BASELINE_TLVIEW", "")
SHARD_SET = os.environ.get("TLVIEW_BENCH_SHARD_SET", "1") != "0"  # 0: parts 1 and 2 only
QUERIES = {
    "collective_skew": "SELECT * FROM collective_skew",
    "stragglers": "SELECT * FROM stragglers",
}


def cores() -> int:
    from tlview.workers import default_jobs

    return default_jobs()


def eight_traces() -> Path:
    """rank0..7, each a copy of the scaled Kineto trace with its own traceName (cached).

    The copies differ in their last bytes, as real ranks' traces do (files of identical
    bytes are sources of their own too, with a note each)."""
    from .bench_kineto import scaled_trace

    folder = OUT / f"ranks8_{MB:g}MB_distinct"
    src = scaled_trace(MB)
    tail = b'"traceName": "scaled"\n}\n'
    if not (folder / "rank7" / src.name).exists():
        for r in range(8):
            (folder / f"rank{r}").mkdir(parents=True, exist_ok=True)
            dst = folder / f"rank{r}" / src.name
            shutil.copyfile(src, dst)
            with open(dst, "r+b") as f:
                f.seek(-len(tail), os.SEEK_END)
                if f.read() != tail:
                    raise RuntimeError(f"{src}: not the scaled trace's ending")
                f.seek(-len(tail), os.SEEK_END)
                f.write(f'"traceName": "scaled rank{r}"\n}}\n'.encode())
    return folder


def ingest(db: str, jobs: str, dask: str, *paths: str) -> dict[str, Any]:
    """``tlview ingest PATHS --db DB -j JOBS [--dask DASK]`` into a fresh database; with
    the command's seconds by phase (TLVIEW_INGEST_PHASES: the writer's, each worker's)."""
    from tlview.cli import main

    for p in (db, db + ".wal"):
        if os.path.exists(p):
            os.remove(p)
    phases = db + ".phases.json"
    os.environ["TLVIEW_INGEST_PHASES"] = phases
    args = ["ingest", *paths, "--db", db, "-j", jobs] + (["--dask", dask] if dask else [])
    with contextlib.redirect_stdout(io.StringIO()):
        code = main(args)
    if code != 0:
        raise RuntimeError(f"tlview {' '.join(args)}: exit {code}")
    out = _usage()
    if os.path.exists(phases):
        import json

        out["phases"] = json.loads(Path(phases).read_text())
        os.remove(phases)
    return out


def ingest_cli(exe: str, db: str, jobs: str, *paths: str) -> dict[str, Any]:
    """Another tlview's ``ingest`` (``exe``: its console script, e.g. the previous
    release's) into a fresh database: wall, CPU and peak RSS of the command and its
    workers (the largest process)."""
    for p in (db, db + ".wal"):
        if os.path.exists(p):
            os.remove(p)
    t = time.perf_counter()
    subprocess.run([exe, "ingest", *paths, "--db", db, "-j", jobs], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    wall = time.perf_counter() - t
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return {"wall_s": wall, "cpu_s": kids.ru_utime + kids.ru_stime,
            "peak_rss_mb": kids.ru_maxrss / 1024}


def shard(out: str, jobs: str, *paths: str) -> dict[str, Any]:
    """``tlview shard PATHS -o OUT -j JOBS`` into a fresh set."""
    from tlview.cli import main

    shutil.rmtree(out, ignore_errors=True)
    with contextlib.redirect_stdout(io.StringIO()):
        code = main(["shard", *paths, "-o", out, "-j", jobs])
    if code != 0:
        raise RuntimeError(f"tlview shard: exit {code}")
    return _usage()


def _usage() -> dict[str, Any]:
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return {"cpu_s": me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime,
            "writer_cpu_s": me.ru_utime + me.ru_stime,
            "worker_rss_mb": kids.ru_maxrss / 1024}


def digest(db: str) -> dict[str, Any]:
    """What a database holds, ids and times aside: every source's digest, in order, with
    its sources row and timeline ids."""
    from tlview.store import open_database
    from tlview.store.digest import source_digest

    with open_database(db, read_only=True) as d:
        srcs = d.sql("SELECT source_id, path, size, sha256, format, attrs FROM sources "
                     "ORDER BY 1").fetchall()
        tls = d.sql("SELECT timeline_id, source_id, key FROM timeline_records ORDER BY 1"
                    ).fetchall()
        return {"sources": [list(map(str, s)) for s in srcs], "timelines": tls,
                "digests": [source_digest(d, s[0]) for s in srcs]}


def python_digest(path: str) -> dict[str, Any]:
    """The pure-Python parser's digest of one trace (TLVIEW_NATIVE=0 in this process)."""
    from tlview.ingest import records_for
    from tlview.store import open_database, write_records
    from tlview.store.digest import source_digest

    db = str(OUT / "shards_python.duckdb")
    for p in (db, db + ".wal"):
        if os.path.exists(p):
            os.remove(p)
    with open_database(db) as d:
        s = write_records(d, records_for(path))
        return source_digest(d, s.source_id)


def replicate(src: str, dst: str, copies: str) -> int:
    """``copies`` copies of the shard set ``src`` in ``dst`` (hard links, new keys)."""
    from tlview.store.shards import init_set, shard_keys

    shutil.rmtree(dst, ignore_errors=True)
    init_set(dst)
    keys = shard_keys(src)
    n = 0
    for c in range(int(copies)):
        for table in Path(src).iterdir():
            if not table.is_dir():
                continue
            for k in keys:
                target = Path(dst) / table.name / f"source_id={k + c * keys[-1]}"
                target.mkdir(parents=True, exist_ok=True)
                os.link(table / f"source_id={k}" / "data_0.parquet", target / "data_0.parquet")
        n += len(keys)
    return n


def queries(where: str, kind: str) -> dict[str, Any]:
    """Best of three of each query over a shard set (kind ``shards``) or a database."""
    from tlview.store import open_database
    from tlview.store.shards import open_shards

    t = time.perf_counter()
    db = open_shards(where) if kind == "shards" else open_database(where, read_only=True)
    out: dict[str, Any] = {"open_s": time.perf_counter() - t}
    with db:
        for name, sql in QUERIES.items():
            best = float("inf")
            rows = 0
            for _ in range(3):
                t = time.perf_counter()
                rows = len(db.sql(sql).fetchall())
                best = min(best, time.perf_counter() - t)
            out[name] = {"best_s": best, "rows": rows}
        out["traces"] = db.sql("SELECT count(*) FROM rank_traces").fetchall()[0][0]
        out["events"] = db.sql("SELECT count(*) FROM events").fetchall()[0][0]
    return out


def _size(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def _ingest_result(label: str, input_label: str, size: int, got: dict[str, Any], n: int,
                   base: dict[str, Any] | None) -> Result:
    r = got["result"]
    busy = r["cpu_s"] / (got["wall_s"] * n)
    extra = {"cpu_busy": busy, "worker_rss_mb": r["worker_rss_mb"]}
    return Result(f"{label} (CPU busy {busy:.0%}, largest worker {r['worker_rss_mb']:,.0f} MB)",
                  input_label, size, got["wall_s"], got["peak_rss_mb"],
                  baseline={"vs -j 1": base["wall_s"] / got["wall_s"]} if base else {},
                  extra=extra)


def _compare(folder: Path, dbs: dict[str, str], n: int, repeats: int, label: str,
             size: int) -> list[Result]:
    """``ingest -j 1`` and ``-j n`` of ``folder``, ``repeats`` times each, taking turns
    (the machine is shared: each pair under the same load); the median run of each,
    the ratio of the medians, every pair's ratio and the phases of the median runs (on
    stderr). With TLVIEW_BENCH_BASELINE_TLVIEW (another tlview's console script, e.g.
    the previous release's), its ``-j n`` too, in the same turns."""
    runs: dict[str, list[dict[str, Any]]] = {"1": [], str(n): [], "base": []}
    for _ in range(repeats):
        for j in ("1", str(n)):
            runs[j].append(run_child("bench.bench_shards:ingest", dbs[j], j, "", str(folder)))
        if BASELINE:
            runs["base"].append(run_child("bench.bench_shards:ingest_cli", BASELINE,
                                          str(OUT / "shards_baseline.duckdb"), str(n),
                                          str(folder))["result"])
    one, par = _median(runs["1"]), _median(runs[str(n)])
    pairs = ", ".join(f"{a['wall_s'] / b['wall_s']:.2f}x" for a, b in zip(runs["1"],
                                                                          runs[str(n)]))
    print(f"{label}: -j {n} vs -j 1, each pair: {pairs}", file=sys.stderr)
    for j, got in (("1", one), (str(n), par)):
        _say_phases(f"{label}, -j {j} (median of {repeats})", got, n)
    rows = [_ingest_result(f"ingest -j 1 (one file after another; median of {repeats})",
                           label, size, one, n, None),
            _ingest_result(f"ingest -j {n} (median of {repeats})", label, size, par, n, one)]
    if runs["base"]:
        base = _median([{"wall_s": r["wall_s"], "peak_rss_mb": r["peak_rss_mb"],
                         "result": {"cpu_s": r["cpu_s"], "worker_rss_mb": r["peak_rss_mb"]}}
                        for r in runs["base"]])
        rows.append(_ingest_result(f"baseline {BASELINE} ingest -j {n} (median of {repeats})",
                                   label, size, base, n, one))
    return rows


def _median(runs: list[dict[str, Any]]) -> dict[str, Any]:
    return sorted(runs, key=lambda r: r["wall_s"])[len(runs) // 2]


def _say_phases(what: str, got: dict[str, Any], n: int) -> None:
    """The seconds by phase of one ingest (TLVIEW_INGEST_PHASES), on stderr."""
    r = got["result"]
    ph = r.get("phases")
    cpu = f"CPU {r['cpu_s']:.2f} s (writer {r['writer_cpu_s']:.2f} s), busy " \
          f"{r['cpu_s'] / (got['wall_s'] * n):.0%}"
    if not ph:
        print(f"{what}: wall {got['wall_s']:.2f} s, {cpu}", file=sys.stderr)
        return
    top = ", ".join(f"{k} {v:.2f}" for k, v in ph.items() if isinstance(v, float))
    print(f"{what}: wall {got['wall_s']:.2f} s, {cpu}; phases (s): {top}", file=sys.stderr)
    if "writer" in ph:
        w = ", ".join(f"{k} {v:.2f}" for k, v in ph["writer"].items())
        work = ph["workers"]
        steps: dict[str, float] = {}
        for x in work:
            for k, v in x["phases"].items():
                steps[k] = steps.get(k, 0.0) + v
        print(f"  writer (s): {w}; {ph['transactions']} transaction(s); {len(work)} tasks: "
              f"{sum(x['seconds'] for x in work):.2f} s, CPU {sum(x['cpu_s'] for x in work):.2f}"
              f" s ({', '.join(f'{k} {v:.2f}' for k, v in steps.items())}), largest worker "
              f"{max(x['rss_mb'] for x in work):,.0f} MB RSS (pages shared with the writer "
              f"at the fork included); writer {got['peak_rss_mb']:,.0f} MB", file=sys.stderr)


def _same(a: dict[str, Any], b: dict[str, Any], what: str) -> None:
    if a != b:
        raise AssertionError(f"{what}: the databases differ")


def main() -> list[Result]:
    OUT.mkdir(parents=True, exist_ok=True)
    n = cores()
    results: list[Result] = []
    # 1. eight big rank traces
    eight = eight_traces()
    size8 = _size(eight)
    label8 = f"8 rank traces, {size8 / 1e6:,.0f} MB"
    dbs = {j: str(OUT / f"shards8_j{j}.duckdb") for j in ("1", str(n))}
    rows = _compare(eight, dbs, n, REPEATS, label8, size8)
    # issue 15's "many files" target: time = total size / (cores x single-file speed)
    rows[1].target_mb_s = round(n * rows[0].mb_s, 1)
    results += rows
    d1 = run_child("bench.bench_shards:digest", dbs["1"])["result"]
    _same(d1, run_child("bench.bench_shards:digest", dbs[str(n)])["result"], "8 traces -j")
    one = next(eight.rglob("*.json"))
    env = {**os.environ, "TLVIEW_NATIVE": "0"}
    py = _child_env(env, "bench.bench_shards:python_digest", str(one))
    if py["events"] != d1["digests"][0]["events"]:
        raise AssertionError("the scaled trace: native and pure-Python events differ")
    print(f"8 traces: -j {n} == -j 1 (every source's digest); events digest == pure Python",
          file=sys.stderr)

    # 2. 256 rank traces: serial, -j, Dask
    from .bench_ranks import traces

    folder = traces(RANKS)
    size = _size(folder)
    label = f"{RANKS} rank traces, {size / 1e6:,.1f} MB"
    dbs = {k: str(OUT / f"shards{RANKS}_{k}.duckdb") for k in ("1", str(n), "dask")}
    rows = _compare(folder, dbs, n, RANKS_REPEATS, label, size)
    results += rows
    serial = {"wall_s": rows[0].wall_s}
    try:
        dask = run_child("bench.bench_shards:ingest", dbs["dask"], str(n), "local", str(folder))
        results.append(_ingest_result(f"ingest --dask local ({n} workers)", label, size, dask,
                                      n, serial))
    except RuntimeError as e:
        print(f"dask: not measured ({str(e).splitlines()[-1]})", file=sys.stderr)
        dbs.pop("dask")
    d1 = run_child("bench.bench_shards:digest", dbs["1"])["result"]
    for k in dbs:
        if k != "1":
            _same(d1, run_child("bench.bench_shards:digest", dbs[k])["result"], k)
    print(f"{RANKS} traces: -j {n} and Dask == -j 1 (every source's digest, ids)",
          file=sys.stderr)

    if not SHARD_SET:
        return results
    # 3. the shard set, and the views over it
    sset = str(OUT / f"shards{RANKS}_set")
    got = run_child("bench.bench_shards:shard", sset, str(n), str(folder))
    pq = sum(p.stat().st_size for p in Path(sset).rglob("*.parquet"))
    db_bytes = os.path.getsize(dbs["1"])
    results.append(_ingest_result(
        f"tlview shard -j {n}: {pq / 1e6:,.1f} MB of Parquet ({pq / size:.2f}x the gzipped "
        f"traces, {pq / db_bytes:.2f}x the database)", label, size, got, n, serial))
    for where, kind, lab in ((dbs["1"], "db", "database"), (sset, "shards", "shards")):
        q = run_child("bench.bench_shards:queries", where, kind)
        r = q["result"]
        for name in QUERIES:
            results.append(Result(
                f"{name} over {r['traces']} ranks, {lab} ({r[name]['rows']:,} rows; open "
                f"{r['open_s']:.2f} s)", label, size, r[name]["best_s"], q["peak_rss_mb"],
                events=r["events"]))
    big = str(OUT / f"shards{RANKS * REPLICAS}_set")
    run_child("bench.bench_shards:replicate", sset, big, str(REPLICAS))
    q = run_child("bench.bench_shards:queries", big, "shards")
    r = q["result"]
    for name in QUERIES:
        results.append(Result(
            f"{name} over {r['traces']} ranks ({REPLICAS} runs of {RANKS}), replicated shards "
            f"({r[name]['rows']:,} rows; open {r['open_s']:.2f} s)",
            f"{r['traces']} rank traces", size * REPLICAS, r[name]["best_s"], q["peak_rss_mb"],
            events=r["events"]))
    return results


def _child_env(env: dict[str, str], target: str, *args: str) -> Any:
    """``run_child`` with another environment; the result only."""
    import json

    env = {**env, "PYTHONPATH": str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")}
    proc = subprocess.run([sys.executable, "-m", "bench.child", target, *args],
                          capture_output=True, text=True, cwd=ROOT, env=env, timeout=3600)
    if proc.returncode != 0:
        raise RuntimeError(f"{target} failed:\n{proc.stderr[-4000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])["result"]


if __name__ == "__main__":
    from .harness import print_table

    print_table(main())
