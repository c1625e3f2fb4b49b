"""`tlview sql`: a query from the command line, a file (``-f FILE``) or stdin (``-``).

Read-only unless ``--write``. With ``--write``, the statements run in one transaction,
and where they changed events (which tlview itself only ever appends), the caches
behind ``buffers``, ``memory_curve`` and ``peak_memory`` are refreshed for exactly the
timelines whose events changed, before the commit: the views never disagree with the
events.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from typing import Any

import duckdb
from tlview.store import Database, open_database

from .locking import lock_wait_s, say_waiting

# Statements that cannot change a table; anything else under --write is checked.
_READS = {duckdb.StatementType.SELECT, duckdb.StatementType.EXPLAIN}


class UsageError(Exception):
    """The command line asks for something impossible; exit code 2."""


def query_and_params(args: argparse.Namespace) -> tuple[str, list[str]]:
    """The SQL text and its ``?`` values: ``-f FILE`` (``-`` = stdin) takes every
    positional as a value; else the first positional is the query (``-`` = stdin)."""
    positional = ([args.query] if args.query is not None else []) + list(args.params)
    if args.file is not None:
        source, params = args.file, positional
    elif positional:
        source, params = None, positional[1:]
        if positional[0] != "-":
            return positional[0], params
        source = "-"
    else:
        raise UsageError("no query: give one, or `-f FILE`, or `-` to read it from stdin")
    if source == "-":
        text = sys.stdin.read()
    else:
        with open(source, encoding="utf-8") as f:
            text = f.read()
    if not text.strip():
        raise UsageError(f"{'stdin' if source == '-' else source}: no query in it")
    return text, params


def cmd_sql(args: argparse.Namespace) -> int:
    query, params = query_and_params(args)
    parquet = getattr(args, "parquet", None)
    if parquet and args.write:
        raise UsageError("--parquet reads a shard set; --write changes only a database")
    if parquet:
        from tlview.store.shards import open_shards  # (pyarrow: only for a shard set)
    opened = (open_shards(parquet) if parquet else
              open_database(args.db, read_only=not args.write, wait_s=lock_wait_s(),
                            on_wait=say_waiting))
    with opened as db:
        if args.write:
            cols, rows = _run_writing(db, query, params)
        else:
            cols, rows = _fetch(db.sql(query, params))
    if cols is None:
        return 0
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


def _fetch(cur: Any) -> tuple[list[str] | None, list[tuple[Any, ...]]]:
    if cur.description is None:
        return None, []
    return [d[0] for d in cur.description], cur.fetchall()


def _run_writing(db: Database, query: str,
                 params: list[str]) -> tuple[list[str] | None, list[tuple[Any, ...]]]:
    """Run the statements in one transaction; refresh the caches of timelines whose
    events they changed."""
    kinds = {s.type for s in db.con.extract_statements(query)}
    if duckdb.StatementType.TRANSACTION in kinds:
        raise UsageError("tlview sql --write runs the statements in one transaction of its "
                         "own: leave out BEGIN/COMMIT/ROLLBACK")
    checked = not kinds <= _READS
    from tlview.store import caches  # (pyarrow: only where a query writes)

    db.con.execute("BEGIN TRANSACTION")
    try:
        before = caches.events_fingerprint(db) if checked else {}
        result = _fetch(db.sql(query, params))
        if checked:
            changed = caches.changed_timelines(before, caches.events_fingerprint(db))
            if changed:
                caches.refresh(db, changed)
                shown = ", ".join(map(str, changed[:10])) + (", ..." if len(changed) > 10 else "")
                print(f"tlview: events of {len(changed)} timeline"
                      f"{'s' if len(changed) != 1 else ''} changed ({shown}): their buffers, "
                      "memory_curve and peak_memory were recomputed", file=sys.stderr)
        db.con.execute("COMMIT")
    except BaseException as e:
        try:
            db.con.execute("ROLLBACK")
        except duckdb.Error:
            pass
        if isinstance(e, duckdb.BinderException) and "base table" in str(e):
            raise UsageError(  # a DELETE or UPDATE of a view
                f"{str(e).splitlines()[0]}: the views (events among them) cannot be "
                "changed; each kind of event is kept in a table of its own, "
                "events_<kind> (events_buffer_allocated, ...)") from None
        raise
    return result


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
