"""The ``tlview`` command: ingest, sql, info, migrate, and the TUI (``tlview [DB]``).

Every failure is one line on stderr and exit code 2; output cut short by a closed
pipe (``tlview sql ... | head``) ends quietly.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

import duckdb
from tlview import __version__
from tlview.ingest import IngestError, formats
from tlview.ingest.formats import NotADump, detect_format
from tlview.ingest.lines import end_progress_line
from tlview.store import DatabaseLocked, SchemaError, open_database
from tlview.store.db import threads_setting
from tlview.store.diff import DiffError
from tlview.store.schema import migrate
from tlview.store.storage import STORAGE_VERSION

from . import cluster, diff_command, plot_command, report_command, shard_command
from .interrupts import as_interrupt, exit_code, signal_name
from .locking import DEFAULT_WAIT_S, lock_wait_s, say_waiting
from .output import SIGPIPE_EXIT, silence_stdout
from .sql_command import UsageError, cmd_sql
from .summary import print_info
from .workers import default_jobs

DEFAULT_DB = "tlview.duckdb"
COMMANDS = {"ingest", "shard", "export", "sql", "info", "migrate", "diff", "plot", "report",
            "tui"}
TOP_LEVEL = {"-h", "--help", "--version"}


def _parser() -> argparse.ArgumentParser:
    names = formats()
    format_list = "\n".join(f"  {n:22} {f.description}" for n, f in names.items())
    p = argparse.ArgumentParser(
        prog="tlview",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Timeline database for the memory and scheduling of compiled ML programs.\n"
        "`tlview [DB]` opens the terminal UI (DB defaults to ./tlview.duckdb).",
        epilog=f"formats (detected from the content; `ingest --format NAME` forces one):\n"
        f"{format_list}\n\n"
        "environment:\n"
        f"  TLVIEW_LOCK_WAIT             seconds to wait while another process holds the "
        f"database (default {DEFAULT_WAIT_S:g})\n"
        "  TLVIEW_INGEST_MEMORY_LIMIT   DuckDB's memory during an ingest (default 256MB)\n"
        "  TLVIEW_THREADS               DuckDB's threads (default one per core)\n"
        "  TLVIEW_ASCII=1, NO_COLOR     7-bit glyphs / no colour in the terminal UI\n\n"
        f"Databases are written in DuckDB storage {STORAGE_VERSION}: the duckdb CLI "
        "1.4.0 and later opens them.",
    )
    p.add_argument("--version", action="version",
                   version=f"tlview {__version__} (duckdb {duckdb.__version__}, "
                   f"writes storage {STORAGE_VERSION})")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    db_help = f"the database file (default: ./{DEFAULT_DB})"

    ing = sub.add_parser(
        "ingest", help="ingest dumps and traces (files or folders)",
        description="Ingest dumps and traces: files, or folders searched for every file "
        "tlview reads (what a folder skips is counted by kind). Each file is one "
        "transaction (with workers, files parsed whole share one); a file that "
        "fails is reported and the others go on (exit code 2 at the end). A file already "
        "ingested (same path and sha256) is skipped.")
    ing.add_argument("paths", nargs="*", metavar="PATH", help="files or folders")
    ing.add_argument("--db", default=DEFAULT_DB, help=db_help + "; created if missing")
    ing.add_argument("--format", choices=list(names), metavar="NAME",
                     help="read every file as this format instead of detecting it: "
                     f"{', '.join(names)} (default: detected from the content)")
    ing.add_argument("--force", action="store_true",
                     help="ingest a file again even if it is already in the database "
                     "(default: skip it)")
    ing.add_argument("-v", "--verbose", action="store_true",
                     help="list every file a folder skips and why (default: counts by kind), "
                     "and say each file as it is committed")
    add_parallel_options(ing)
    ing.add_argument("--shards", metavar="DIR",
                     help="with several files: the workers write each file as a Parquet "
                     "shard in DIR, a shard set, kept (default: they hand their rows to the "
                     "writer as Arrow streams in a temporary folder, removed)")
    ing.add_argument("--from-shards", metavar="DIR",
                     help="ingest the shards of a shard set (`tlview shard`) instead of PATHs "
                     "(default: parse the PATHs)")

    sq = sub.add_parser(
        "sql", help="run a query (read-only unless --write)",
        description="Run SQL on the database: QUERY, or `-f FILE`, or `-` to read the query "
        "from stdin. ? in the query takes the PARAM values, in order. The views are "
        "listed in docs/views.md.")
    sq.add_argument("query", nargs="?", metavar="QUERY",
                    help="the SQL; `-` reads it from stdin (with -f: the first PARAM)")
    sq.add_argument("params", nargs="*", metavar="PARAM", help="values for ? parameters")
    sq.add_argument("-f", "--file", metavar="FILE",
                    help="read the query from FILE (`-`: stdin); every positional is a PARAM "
                    "(default: the query is the first positional)")
    sq.add_argument("--db", default=DEFAULT_DB, help=db_help)
    out = sq.add_mutually_exclusive_group()
    out.add_argument("--csv", action="store_true", help="CSV output (default: a table)")
    out.add_argument("--json", action="store_true", help="JSON output (default: a table)")
    sq.add_argument("--parquet", metavar="DIR",
                    help="query the shard set in DIR (`tlview shard`) instead of a database: "
                    "every view over its Parquet files (default: the database)")
    sq.add_argument("--write", action="store_true",
                    help="open the database for writing, in one transaction; where events "
                    "change, the caches of their timelines are recomputed (default: "
                    "read-only)")

    inf = sub.add_parser("info", help="sources and timelines in the database, with peaks",
                         description="One line per timeline: steps, buffers and peak, or "
                         "for a profiler trace its events, kernels and overlap.")
    inf.add_argument("--db", default=DEFAULT_DB, help=db_help)

    mig = sub.add_parser("migrate", help="bring an older database up to date",
                         description="Bring a tlview database's schema and views up to date, "
                         f"and rewrite a file a newer DuckDB wrote in storage {STORAGE_VERSION} "
                         "(so the duckdb CLI reads it). Says `up to date` when nothing "
                         "changes.")
    mig.add_argument("--db", default=DEFAULT_DB, help=db_help)

    shard_command.add_parser(sub, add_parallel_options)
    shard_command.add_export_parser(sub, db_help)
    diff_command.add_parser(sub, db_help)
    plot_command.add_parser(sub, db_help)
    report_command.add_parser(sub, db_help)

    tui = sub.add_parser("tui", help="open the terminal UI (same as `tlview [DB]`)",
                         description="Open the terminal UI on a database (read-only).")
    tui.add_argument("db", nargs="?", default=None, metavar="DB", help=db_help)
    tui.add_argument("--ascii", action="store_true",
                     help="draw with 7-bit ASCII only (also TLVIEW_ASCII=1; default: Unicode)")
    return p


def add_parallel_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("-j", "--jobs", type=int, metavar="N",
                   help="parse N files at a time in worker processes, one writer (default: "
                   f"every core, {default_jobs()} here; `ingest` takes them for 2 files or "
                   "more where workers are forked (Linux), else from 32 files or 32 MB; "
                   "1: one file after another)")
    p.add_argument("--dask", metavar="ADDRESS",
                   help="run the per-file work on a Dask cluster: a scheduler's address "
                   "(tcp://host:8786) or `local` (a LocalCluster of -j workers); needs "
                   "`pip install 'tlview[cluster]'` (default: worker processes of this machine)")


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or (argv[0] not in COMMANDS and argv[0] not in TOP_LEVEL):
        argv = ["tui", *argv]
    try:
        code = _run(argv)
        sys.stdout.flush()
        return code
    except BrokenPipeError:  # the reader went away (`| head`): stop quietly
        silence_stdout()
        return SIGPIPE_EXIT


def _run(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    try:
        threads_setting()
    except ValueError as e:
        print(f"tlview: {e}", file=sys.stderr)
        return 2
    try:
        if args.command == "ingest":
            from .ingest_command import cmd_ingest  # (the writer and pyarrow: loaded to write)

            return cmd_ingest(args)
        if args.command == "shard":
            return shard_command.cmd_shard(args)
        if args.command == "export":
            return shard_command.cmd_export(args)
        if args.command == "sql":
            return cmd_sql(args)
        if args.command == "info":
            return cmd_info(args)
        if args.command == "migrate":
            return cmd_migrate(args)
        if args.command == "diff":
            return diff_command.cmd_diff(args)
        if args.command == "plot":
            return plot_command.cmd_plot(args)
        if args.command == "report":
            return report_command.cmd_report(args)
        return cmd_tui(args)
    except (IngestError, DatabaseLocked, SchemaError, UsageError, FileNotFoundError,
            DiffError, plot_command.PlotError, cluster.ClusterUnavailable,
            report_command.ReportError, *_shard_error()) as e:
        print(f"tlview: {e}", file=sys.stderr)
        return 2
    except duckdb.Error as e:
        print(f"tlview: {type(e).__name__}: {str(e).splitlines()[0]}", file=sys.stderr)
        return 2
    except (KeyboardInterrupt, RuntimeError) as e:  # cmd_ingest says what it had committed
        if (interrupt := as_interrupt(e)) is None:
            raise
        end_progress_line()
        print(f"tlview: interrupted ({signal_name(interrupt)}); nothing of the unfinished "
              "ingest was written", file=sys.stderr)
        return exit_code(interrupt)


def _shard_error() -> tuple[type[BaseException], ...]:
    """ShardError, where store/shards.py was loaded (with pyarrow's Parquet, which a command
    that only reads never loads): it cannot have been raised elsewhere, and an except
    clause's tuple is made only when an exception reaches it."""
    shards = sys.modules.get("tlview.store.shards")
    return (shards.ShardError,) if shards is not None else ()


def cmd_info(args: argparse.Namespace) -> int:
    with open_database(args.db, read_only=True, wait_s=lock_wait_s(),
                       on_wait=say_waiting) as db:
        n_sources, n_timelines, left_out, n_events = db.query("info_counts")[0]
        more = (f" ({left_out} more not counted: a compiled graph's copies in other "
                "artifacts, TORCH_TRACE logs' own)") if left_out else ""
        print(f"{args.db}: {n_sources} sources, {n_timelines} timelines{more}, {n_events} "
              f"events (schema v{db.meta('schema_version')})")
        print_info(db)
    return 0


def cmd_migrate(args: argparse.Namespace) -> int:
    m = migrate(args.db, wait_s=lock_wait_s(), on_wait=say_waiting)
    done = []
    if m.schema_before != m.schema_after:
        done.append(f"migrated from schema v{m.schema_before} to v{m.schema_after}")
    if m.views_rewritten:
        done.append(f"views of schema v{m.schema_after} rewritten")
    if m.storage_before != m.storage_after:
        done.append(f"rewritten from DuckDB storage {m.storage_before} to {m.storage_after}")
    if done:
        print(f"{args.db}: " + "; ".join(done))
    else:
        print(f"{args.db}: schema v{m.schema_after}, storage {m.storage_after}, up to date")
    return 0


def cmd_tui(args: argparse.Namespace) -> int:
    path = args.db or DEFAULT_DB
    problem = _not_a_database(path, given=args.db is not None)
    if problem:
        print(f"tlview: {problem}", file=sys.stderr)
        return 2
    # The schema and the lock, checked before the UI starts: one line if wrong.
    open_database(path, read_only=True, wait_s=lock_wait_s(), on_wait=say_waiting).close()
    if not (sys.stdout.isatty() and sys.stdin.isatty()):
        print("tlview: the terminal UI needs a terminal (stdin and stdout); for scripts "
              f"use `tlview info --db {path}` or `tlview sql --db {path} QUERY`",
              file=sys.stderr)
        return 2
    from tlview.tui import run

    return run(path, ascii_only=True if args.ascii else None)


def _not_a_database(path: str, *, given: bool) -> str | None:
    """What is wrong with opening ``path`` as a database, with what to do; None if it is one."""
    p = Path(path)
    first = "run `tlview ingest FILE...` first (it writes ./tlview.duckdb), then `tlview`"
    if p.is_dir():
        return (f"{path} is a folder, not a database: run `tlview ingest {path}` first "
                "(it writes ./tlview.duckdb), then `tlview`")
    if not p.exists():
        if not given:
            return f"no database here (./{DEFAULT_DB}): {first}"
        return f"{path}: no such database: run `tlview ingest FILE... --db {path}` first"
    with open(p, "rb") as f:
        if f.read(12)[8:12] == b"DUCK":
            return None
    try:
        spec = detect_format(path)
    except NotADump as e:
        return f"{path} is not a database ({e.message}); {first}"
    except (IngestError, OSError):
        return f"{path} is not a database; {first}"
    return (f"{path} is a dump ({spec.name}), not a database: run `tlview ingest {path}` "
            "first (it writes ./tlview.duckdb), then `tlview`")
