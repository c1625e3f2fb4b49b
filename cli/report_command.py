"""`tlview report [RUN] [--format text|md|html|json] [-o FILE]`: the postmortem of a run.

The sections and their figures come from tlview.store.report (named queries over the
public views); this module picks the run, renders and writes.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tlview.store import open_database
from tlview.store.fmt import exact_bytes
from tlview.store.report import RunNotFound, Words, build_report, find_run

from .locking import lock_wait_s, say_waiting
from .report_render import RENDERERS, duration

WORDS = Words(bytes=exact_bytes, ns=duration)


def add_parser(sub: argparse._SubParsersAction, db_help: str) -> None:
    rep = sub.add_parser(
        "report", help="the postmortem of a run: peak, OOMs, holders, time, stragglers",
        description="The postmortem of one run (what one `tlview ingest` of a folder or "
        "files read): what was read, memory (the peak, each OOM, who held the memory), "
        "plan vs actual, time (steps, kernels, communication, stragglers), compile, and "
        "what the capture cannot tell. Sections appear where the run has their data; in "
        "md and html every figure names the SQL that reproduces it.")
    rep.add_argument("run", nargs="?", metavar="RUN",
                     help="the run's name or id (`tlview info` lists them; default: the "
                     "last run ingested)")
    rep.add_argument("--db", default="tlview.duckdb", help=db_help)
    rep.add_argument("--format", choices=list(RENDERERS), default="text",
                     help="text (default), md (a postmortem document), html (one "
                     "self-contained file with pictures) or json (for scripts and CI)")
    rep.add_argument("-o", "--output", metavar="FILE",
                     help="write the report to FILE (default: standard output)")


class ReportError(Exception):
    pass


def cmd_report(args: argparse.Namespace) -> int:
    with open_database(args.db, read_only=True, wait_s=lock_wait_s(),
                       on_wait=say_waiting) as db:
        try:
            run_id, n_runs = find_run(db, args.run)
        except RunNotFound as e:
            raise ReportError(f"{args.db}: {e}") from None
        report = build_report(db, run_id, WORDS)
    text = RENDERERS[args.format](report)
    if args.run is None and n_runs > 1:
        print(f"tlview: {n_runs} runs in {args.db}: reporting the last, "
              f"{report.run['name']} (`tlview report NAME` for another)", file=sys.stderr)
    if args.output:
        Path(args.output).write_text(text, encoding="utf-8")
        print(f"{args.output}: the report of run {run_id} {report.run['name']} "
              f"({args.format})", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0
