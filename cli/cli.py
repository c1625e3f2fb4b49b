"""The ``tlview`` command: ingest, sql, info, migrate, and the TUI (``tlview [DB]``)."""

from __future__ import annotations

import argparse
import csv
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import duckdb
from tlview.ingest import IngestError
from tlview.ingest.discover import discover
from tlview.ingest.lines import stderr_progress
from tlview.ingest.source import file_sha256, records_for
from tlview.store import Database, DatabaseLocked, SchemaError, open_database, write_records
from tlview.store.db import schema_version_of

from .fmt import exact_bytes

DEFAULT_DB = "tlview.duckdb"
COMMANDS = {"ingest", "sql", "info", "migrate", "tui"}


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="tlview",
        description="Timeline database for the memory and scheduling of compiled ML programs. "
        "`tlview [DB]` opens the terminal UI.",
    )
    sub = p.add_subparsers(dest="command")

    ing = sub.add_parser("ingest", help="ingest dumps and traces (files or folders)")
    ing.add_argument("paths", nargs="+")
    ing.add_argument("--db", default=DEFAULT_DB)
    ing.add_argument("--format", help="force a format instead of detecting it")
    ing.add_argument("--force", action="store_true",
                     help="ingest again even if the same content (sha256) is already there")

    sq = sub.add_parser("sql", help="run a query (read-only unless --write)")
    sq.add_argument("query")
    sq.add_argument("params", nargs="*", help="values for ? parameters, in order")
    sq.add_argument("--db", default=DEFAULT_DB)
    out = sq.add_mutually_exclusive_group()
    out.add_argument("--csv", action="store_true")
    out.add_argument("--json", action="store_true")
    sq.add_argument("--write", action="store_true", help="open the database for writing")

    inf = sub.add_parser("info", help="sources and timelines in the database, with peaks")
    inf.add_argument("--db", default=DEFAULT_DB)

    mig = sub.add_parser("migrate", help="bring an older database's schema up to date")
    mig.add_argument("--db", default=DEFAULT_DB)

    tui = sub.add_parser("tui", help="open the terminal UI (same as `tlview [DB]`)")
    tui.add_argument("db", nargs="?", default=DEFAULT_DB)
    tui.add_argument("--ascii", action="store_true",
                     help="draw with 7-bit ASCII only (also TLVIEW_ASCII=1)")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or (argv[0] not in COMMANDS and not argv[0].startswith("-")):
        argv = ["tui", *argv]
    args = _parser().parse_args(argv)
    try:
        if args.command == "ingest":
            return cmd_ingest(args)
        if args.command == "sql":
            return cmd_sql(args)
        if args.command == "info":
            return cmd_info(args)
        if args.command == "migrate":
            return cmd_migrate(args)
        if args.command == "tui":
            return cmd_tui(args)
    except (IngestError, DatabaseLocked, SchemaError, FileNotFoundError) as e:
        print(f"tlview: {e}", file=sys.stderr)
        return 2
    except duckdb.Error as e:
        print(f"tlview: {type(e).__name__}: {str(e).splitlines()[0]}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("tlview: interrupted; nothing of the unfinished ingest was written", file=sys.stderr)
        return 130
    return 0


def cmd_ingest(args: argparse.Namespace) -> int:
    files: list[tuple[str, str | None]] = []
    for raw in args.paths:
        p = Path(raw)
        if p.is_dir():
            found = discover(p, args.format)
            if not found:
                raise IngestError(str(p), None, "no dump or trace found in this folder")
            files.extend(found)
        elif p.exists():
            files.append((str(p), args.format))
        else:
            raise IngestError(raw, None, "no such file or folder")
    with open_database(args.db) as db:
        for path, fmt in files:
            ingest_one(db, path, fmt, force=args.force)
    return 0


def ingest_one(db: Database, path: str, fmt: str | None, *, force: bool = False) -> list[int]:
    """Ingest one file in one transaction and print a summary; returns new timeline ids."""
    sha = file_sha256(path)
    seen = db.query("source_by_sha", sha)
    if seen and not force:
        print(f"{path}: already ingested as source {seen[0][0]} ({seen[0][1]}); "
              "skipped (use --force to add it again)")
        return []
    progress = stderr_progress(Path(path).name)
    summary = write_records(db, records_for(path, fmt, sha256=sha, progress=progress))
    for tid in summary.timeline_ids.values():
        print_timeline_summary(db, tid)
    return list(summary.timeline_ids.values())


def print_timeline_summary(db: Database, tid: int) -> None:
    rows = db.query_dicts("timeline_summary", tid)
    if not rows:
        return
    r = rows[0]
    if r["format"] in ("kineto", "jax_trace"):
        print_measured_summary(db, r)
        return
    line = (f"timeline {r['timeline_id']} {r['name']} [{r['format']}"
            f"{', ' + r['device'] if r['device'] else ''}]: {r['n_steps']} steps, "
            f"{r['n_buffers']} buffers, {r['n_inputs']} inputs")
    if r["peak_bytes"] is not None:
        line += f"; peak {exact_bytes(r['peak_bytes'])} at step {r['peak_step']} ({r['peak_node']})"
    else:
        line += "; liveness unknown"
    print(line)
    if r["n_unknown_bytes"]:
        print(f"  {r['n_unknown_bytes']} buffers have symbolic or unknown sizes: "
              "not counted in the peak (see buffers.size_expr)")
    for note in db.query("timeline_warnings", tid):
        print(f"  note: {note[0]}")


def print_measured_summary(db: Database, r: dict[str, Any]) -> None:
    """One line for a profiler trace: events, GPU kernels, and the comm overlap."""
    tid = r["timeline_id"]
    m = db.query_dicts("measured_summary", tid, tid)[0]
    line = (f"timeline {tid} {r['name']} [{r['format']}"
            f"{', ' + r['device'] if r['device'] else ''}]: {m['n_events']:,} events, "
            f"{m['n_kernels']:,} GPU kernels ({m['kernel_ns'] / 1e6:,.3f} ms)")
    if m["n_comm"]:
        pct = ", ".join(f"{float(p):.2f}%" for p in m["overlap_pct"] or [])
        line += f", {m['n_comm']:,} communication kernels, overlapped by compute {pct}"
    print(line)


def cmd_sql(args: argparse.Namespace) -> int:
    with open_database(args.db, read_only=not args.write) as db:
        cur = db.sql(args.query, args.params)
        if cur.description is None:
            return 0
        cols = [d[0] for d in cur.description]
        rows = cur.fetchall()
    if args.csv:
        w = csv.writer(sys.stdout)
        w.writerow(cols)
        w.writerows(rows)
    elif args.json:
        json.dump([dict(zip(cols, r)) for r in rows], sys.stdout, default=str, indent=1)
        print()
    else:
        print_table(cols, rows)
    return 0


def print_table(cols: list[str], rows: list[tuple[Any, ...]]) -> None:
    def cell(v: Any) -> str:
        if v is None:
            return "NULL"
        if isinstance(v, int) and not isinstance(v, bool):
            return str(v)
        s = str(v)
        return s if len(s) <= 60 else s[:57] + "..."

    body = [[cell(v) for v in r] for r in rows]
    widths = [max([len(c)] + [len(r[i]) for r in body]) for i, c in enumerate(cols)]
    numeric = [all(isinstance(r[i], (int, float)) or r[i] is None for r in rows) and rows
               for i in range(len(cols))]
    fmt_row = lambda vals: "  ".join(  # noqa: E731
        v.rjust(w) if num else v.ljust(w) for v, w, num in zip(vals, widths, numeric)
    ).rstrip()
    print(fmt_row(cols))
    print("  ".join("-" * w for w in widths))
    for r in body:
        print(fmt_row(r))
    print(f"({len(rows)} row{'s' if len(rows) != 1 else ''})")


def cmd_info(args: argparse.Namespace) -> int:
    with open_database(args.db, read_only=True) as db:
        n_sources, n_timelines, n_events = db.query("counts")[0]
        print(f"{args.db}: {n_sources} sources, {n_timelines} timelines, {n_events} events "
              f"(schema v{db.meta('schema_version')})")
        for (tid,) in db.query("timeline_ids"):
            print_timeline_summary(db, tid)
    return 0


def cmd_migrate(args: argparse.Namespace) -> int:
    before = schema_version_of(args.db)
    with open_database(args.db, create=False) as db:
        now = db.meta("schema_version")
    if before != now:
        print(f"{args.db}: migrated from schema v{before} to v{now}")
    else:
        print(f"{args.db}: schema v{now}, up to date")
    return 0


def cmd_tui(args: argparse.Namespace) -> int:
    from tlview.tui import run

    return run(args.db, ascii_only=True if args.ascii else None)
