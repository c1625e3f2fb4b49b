"""`tlview shard PATH... -o DIR`: each input file as a Parquet shard, no database.

The sharded store for traces that outgrow one database: every file is parsed on its
own (worker processes, or Dask tasks with ``--dask``) into a shard of the set in DIR
(store/shards.py has the layout). ``tlview sql --parquet DIR`` runs every view over
the set where it lies; ``tlview ingest --from-shards DIR`` commits it into a database.
A file already in the set (same path, same bytes) is skipped; a bad file is reported
and the others are written, as in ``tlview ingest``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from . import cluster
from .output import say
from .workers import default_jobs


def add_parser(sub: argparse._SubParsersAction, add_parallel_options) -> None:  # type: ignore[type-arg]
    from tlview.ingest import formats

    p = sub.add_parser(
        "shard", help="write files as Parquet shards (no database)",
        description="Parse every file (or every file tlview reads in a folder) into a shard "
        "of the set in DIR: plain Parquet, Hive-partitioned by source "
        "(DIR/<table>/source_id=<K>/data_0.parquet), which `tlview sql --parquet DIR`, "
        "`tlview ingest --from-shards DIR`, the duckdb CLI (`.read DIR/views.sql`) and any "
        "Parquet reader read. A file already in the set (same path and bytes) is skipped.")
    p.add_argument("paths", nargs="+", metavar="PATH", help="files or folders")
    p.add_argument("-o", "--out", required=True, metavar="DIR",
                   help="the shard set: a new or empty folder, or one `tlview shard` wrote "
                   "(the new shards are added); required, no default")
    p.add_argument("--format", choices=list(formats()), metavar="NAME",
                   help="read every file as this format (default: detected from the content)")
    p.add_argument("--force", action="store_true",
                   help="shard a file again even if the set holds it (default: skip it)")
    p.add_argument("-v", "--verbose", action="store_true",
                   help="list every file a folder skips and why (default: counts by kind)")
    add_parallel_options(p)


def add_export_parser(sub: argparse._SubParsersAction, db_help: str) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "export", help="write a database as a Parquet shard set",
        description="Write every source of the database as a shard of the set in DIR (the "
        "layout of `tlview shard`; each shard keyed by its source id), for Spark, Trino, "
        "pyarrow.dataset or `tlview sql --parquet DIR`.")
    p.add_argument("--parquet", required=True, metavar="DIR",
                   help="the shard set to write: a new or empty folder (required, no default)")
    p.add_argument("--db", default="tlview.duckdb", help=db_help)


def cmd_export(args: argparse.Namespace) -> int:
    from tlview.store import open_database
    from tlview.store.shards import MANIFEST, export_database, shard_bytes, shard_keys

    from .locking import lock_wait_s, say_waiting

    root = Path(args.parquet)
    if (root / MANIFEST).exists() and shard_keys(root):
        print(f"tlview: {args.parquet} already holds shards; export writes a new set",
              file=sys.stderr)
        return 2
    with open_database(args.db, read_only=True, wait_s=lock_wait_s(),
                       on_wait=say_waiting) as db:
        keys = export_database(db, root)
    say(f"{args.parquet}: {len(keys)} shard{'s' if len(keys) != 1 else ''} "
        f"({shard_bytes(root):,} B of Parquet)")
    return 0


def cmd_shard(args: argparse.Namespace) -> int:
    from tlview.store.shards import init_set, known_sources, shard_bytes, shard_keys

    from .ingest_command import _plan
    from .parallel_ingest import local_pool
    from .shard_task import error_of, shard_file

    jobs = args.jobs or default_jobs()
    if jobs < 1:
        print(f"tlview: -j {jobs}: expected 1 or more worker processes", file=sys.stderr)
        return 2
    if args.dask:
        cluster.require()
    plan = _plan(args.paths, args.format, verbose=args.verbose)
    failed = list(plan.failed)
    for e in failed:
        print(f"tlview: {e}", file=sys.stderr)
    root = init_set(args.out)
    keys = shard_keys(root)
    first = (keys[-1] + 1) if keys else 1
    known = known_sources(root) if keys else {}
    written = skipped = 0
    if plan.files:
        pool = (cluster.dask_pool(args.dask, jobs) if args.dask
                else local_pool(min(jobs, len(plan.files))))
        with pool as submit:
            futures = [submit(shard_file, path, fmt, str(root), first + i, known, args.force)
                       for i, (path, fmt) in enumerate(plan.files)]
            for f in futures:
                r = f.result()
                if r["status"] == "failed":
                    err = error_of(r)
                    print(f"tlview: {err}", file=sys.stderr)
                    failed.append(err)
                elif r["status"] == "skipped":
                    say(f"{r['path']}: already in {args.out}; skipped (use --force to add it "
                        "again)")
                    skipped += 1
                else:
                    say(f"{r['path']}: shard {r['key']} ({r['bytes']:,} B in {r['seconds']:.2f} s)")
                    written += 1
    total = len(plan.files) + len(plan.failed)
    say(f"{args.out}: {written} shard{'s' if written != 1 else ''} written"
        + (f", {skipped} skipped" if skipped else "")
        + f"; the set holds {len(shard_keys(root))} ({shard_bytes(root):,} B of Parquet). "
        f"Query it with `tlview sql --parquet {args.out} QUERY`")
    if failed and total > 1:
        print(f"tlview: {len(failed)} of {total} files failed (above); "
              f"{'the other ' + str(written + skipped) + ' were' if written + skipped else 'nothing was'} "
              "sharded", file=sys.stderr)
    return 2 if failed else 0
