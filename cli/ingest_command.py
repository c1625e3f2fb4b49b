"""`tlview ingest PATH...`: every file in its own transaction, one bad file never the rest.

A file already ingested (same path, same sha256) is skipped; another file with the
same bytes (two graphs of one folder with identical dumps) is a source of its own. A
folder says what it skipped and of which kinds. Files that fail are reported one line
each and the run ends with exit code 2; a database this run created and left empty is
removed.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from functools import partial
from pathlib import Path
from typing import Any

import attrs
import duckdb
from tlview.ingest import IngestError
from tlview.ingest.discover import Skipped, survey
from tlview.ingest.lines import end_progress_line, stderr_progress
from tlview.ingest.source import SHA256_LATER, file_sha256, records_for, sha256_beside
from tlview.store import Database, IngestSummary, open_database, runs, write_records
from tlview.store.shards import MANIFEST, ShardError, commit_shards, shard_keys
from tlview.store.writer import limit_ingest_memory

from . import cluster
from .hang_report import print_hang_report
from .interrupts import (
    as_interrupt,
    exit_code,
    raise_dropped,
    signal_name,
    terminate_as_interrupt,
)
from .locking import lock_wait_s, say_waiting
from .output import say
from .parallel_ingest import (
    Outcome,
    can_fork,
    ingest_files,
    local_pool,
    say_err,
)
from .rank_report import print_rank_report
from .summary import print_ingested
from .workers import default_jobs


@attrs.frozen
class Plan:
    files: tuple[tuple[str, str | None], ...]
    failed: tuple[IngestError, ...]
    # per folder named (resolved): the files it skipped, by kind (kept with its run)
    skipped: dict[str, dict[str, int]] = attrs.field(factory=dict)


def cmd_ingest(args: argparse.Namespace) -> int:
    with terminate_as_interrupt():  # SIGTERM stops it as Ctrl-C does
        return _cmd_ingest(args)


def _cmd_ingest(args: argparse.Namespace) -> int:
    jobs = getattr(args, "jobs", None) or default_jobs()
    dask = getattr(args, "dask", None)
    from_shards = getattr(args, "from_shards", None)
    if from_shards:
        if args.paths:
            print("tlview: ingest takes PATHs or --from-shards DIR, not both", file=sys.stderr)
            return 2
        return _ingest_shards(args, from_shards)
    if not args.paths:
        print("tlview: ingest needs files or folders (PATH...), or --from-shards DIR",
              file=sys.stderr)
        return 2
    if jobs < 1:
        print(f"tlview: -j {jobs}: expected 1 or more worker processes", file=sys.stderr)
        return 2
    if dask:
        cluster.require()
    plan = _plan(args.paths, args.format, verbose=args.verbose)
    failed = list(plan.failed)
    for e in failed:
        print(f"tlview: {e}", file=sys.stderr)
    ingested = 0
    if plan.files:
        parallel = bool(dask) or (jobs > 1 and _worth_workers(
            plan.files, explicit=bool(args.jobs),
            forked=can_fork() and getattr(args, "shards", None) is None))
        # the workers start before the database opens: a forked one copies no DuckDB thread
        phases: dict[str, Any] = {}  # seconds by phase, for TLVIEW_INGEST_PHASES
        t = time.perf_counter()
        with _pool(args, jobs, len(plan.files), dask) if parallel else nullcontext() as submit:
            _tick(phases, "start workers", t)
            t = time.perf_counter()
            created = not Path(args.db).exists()
            db = open_database(args.db, wait_s=lock_wait_s(), on_wait=say_waiting)
            limit_ingest_memory(db)
            runs.register(db, runs.roots_of(args.paths, runs.known_roots(db)), plan.skipped)
            _tick(phases, "open database", t)
            new_ids: list[int] = []
            again: list[tuple[str, str]] = []  # (path, note) of files ingested before
            first_new = db.scalar("next_source_id")
            try:
                t = time.perf_counter()
                if submit is not None:
                    out = _ingest_parallel(db, plan.files, args, submit, again)
                    ingested += out.ingested
                    failed += out.failed
                    new_ids += out.new_ids
                    phases.update(writer=out.phases, transactions=out.transactions,
                                  workers=[{k: v for k, v in r.items() if k != "parsed"}
                                           for r in out.results])
                else:
                    for path, fmt in plan.files:
                        try:
                            new_ids += ingest_one(db, path, fmt, force=args.force, again=again,
                                                  verbose=args.verbose)
                            ingested += 1
                        except (IngestError, OSError) as e:
                            err = e if isinstance(e, IngestError) else _unreadable(path, e)
                            end_progress_line()
                            print(f"tlview: {err}", file=sys.stderr)
                            failed.append(err)
                _tick(phases, "files", t)
                _say_again(again)
                t = time.perf_counter()
                print_ingested(db, new_ids, out=say)  # each graph once, under its title
                _tick(phases, "summary", t)
                t = time.perf_counter()
                try:  # runs of ranks the new traces are in
                    print_rank_report(db, new_ids, out=say)
                except duckdb.Error as e:
                    say(f"ranks: not reported ({str(e).splitlines()[0]})")
                _tick(phases, "rank report", t)
                t = time.perf_counter()
                try:  # incidents of the new Flight Recorder dumps
                    print_hang_report(db, new_ids, out=say)
                except duckdb.Error as e:
                    say(f"hang: not reported ({str(e).splitlines()[0]})")
                _tick(phases, "hang report", t)
            except (KeyboardInterrupt, RuntimeError) as e:  # Ctrl-C or SIGTERM: rolled back
                if (interrupt := as_interrupt(e)) is None:
                    raise
                _say_interrupted(interrupt, db, first_new)
                return exit_code(interrupt)
            finally:
                t = time.perf_counter()
                _close(db, remove_if_empty=created)
                _tick(phases, "close", t)
        _write_phases(phases)
    total = len(plan.files) + len(plan.failed)
    if failed and total > 1:
        rest = ("nothing was ingested" if not ingested else
                "the other file was ingested" if ingested == 1 else
                f"the other {ingested} were ingested")
        print(f"tlview: {len(failed)} of {total} files failed (above); {rest}", file=sys.stderr)
    return 2 if failed else 0


# Below these, starting spawned worker processes (an interpreter and tlview's imports
# each, ~1 s) costs more than it saves, unless -j was given. Forked ones start in
# milliseconds, and the writer's caches, commit and summary query are then paid once
# for all files (measured: docs/benchmarks.md).
AUTO_MIN_FILES = 32
AUTO_MIN_BYTES = 32 << 20


def _worth_workers(files: tuple[tuple[str, str | None], ...], *, explicit: bool,
                   forked: bool) -> bool:
    """Whether to parse on worker processes: several files, and with the default -j and
    spawned workers enough of them, or enough bytes, to pay for starting the workers."""
    if len(files) < 2:
        return False
    if explicit or forked:
        return True
    total = 0
    for path, _ in files:
        try:
            total += os.path.getsize(path)
        except OSError:
            pass
    return len(files) >= AUTO_MIN_FILES or total >= AUTO_MIN_BYTES


def _pool(args: argparse.Namespace, jobs: int, n_files: int,
          dask: str | None) -> AbstractContextManager[Callable[..., Any]]:
    """The workers: a Dask cluster's, or ``jobs`` processes here (forked: they parse and
    use no DuckDB, unless they write complete shards to keep, ``--shards``)."""
    if dask:
        return cluster.dask_pool(dask, jobs)
    return local_pool(min(jobs, n_files), fork=getattr(args, "shards", None) is None)


def _ingest_parallel(db: Database, files: tuple[tuple[str, str | None], ...],
                     args: argparse.Namespace, submit: Callable[..., Any],
                     again: list[tuple[str, str]]) -> Outcome:
    """Parse on the workers of ``submit``, write here in file order; the files ingested
    before are gathered in ``again`` (said once, after)."""
    def check(d: Database, p: str, sha: str) -> tuple[bool, str | None]:
        go, note = check_again(d, p, sha, force=args.force)
        if not go and note:
            again.append((p, note))
            return go, None
        return go, note

    return ingest_files(db, files, submit, force=args.force,
                        shards=getattr(args, "shards", None), check=check,
                        report=partial(report_ingests, verbose=args.verbose),
                        report_error=say_err)


def _say_again(again: list[tuple[str, str]]) -> None:
    """The files ingested before (same path, same bytes), skipped: one line for all."""
    if len(again) == 1:
        say(again[0][1])
    elif again:
        say(f"{len(again):,} files were ingested before (same path and bytes: "
            f"{again[0][0]}, ...): skipped (use --force to add them again)")


def _tick(phases: dict[str, Any], name: str, since: float) -> None:
    """Add the seconds since ``since`` to ``phases[name]``."""
    phases[name] = phases.get(name, 0.0) + time.perf_counter() - since


def _write_phases(phases: dict[str, Any]) -> None:
    """Where ``TLVIEW_INGEST_PHASES`` names a file, ``phases`` there as JSON: the
    command's seconds by phase, the writer's and each worker's with -j (the benchmarks
    read it)."""
    where = os.environ.get("TLVIEW_INGEST_PHASES")
    if where:
        import json

        Path(where).write_text(json.dumps(phases))


def _ingest_shards(args: argparse.Namespace, folder: str) -> int:
    """``ingest --from-shards DIR``: every shard of a set, in key order, into the database."""
    if not (Path(folder) / MANIFEST).exists():
        raise ShardError(f"{folder}: not a tlview shard set (no {MANIFEST})")
    keys = shard_keys(folder)
    created = not Path(args.db).exists()
    db = open_database(args.db, wait_s=lock_wait_s(), on_wait=say_waiting)
    limit_ingest_memory(db)
    new_ids: list[int] = []
    try:
        summaries = commit_shards(db, folder, keys, raise_dropped)
        for s in summaries:
            path = db.scalar("source_path", s.source_id)
            new_ids += report_ingest(db, path, s)
        print_ingested(db, new_ids, out=say)
        try:
            print_rank_report(db, new_ids, out=say)
        except duckdb.Error as e:
            say(f"ranks: not reported ({str(e).splitlines()[0]})")
    finally:
        _close(db, remove_if_empty=created)
    return 0


def _plan(paths: list[str], fmt: str | None, *, verbose: bool) -> Plan:
    """The files to ingest, in order; folders surveyed and what they skip reported."""
    files: list[tuple[str, str | None]] = []
    failed: list[IngestError] = []
    skipped: dict[str, dict[str, int]] = {}
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            found = survey(p, fmt)
            if not found.files and not found.failed:
                failed.append(IngestError(str(p), None, "no dump or trace found in this folder"
                                          + _skipped_text(found.skipped_kinds())))
            else:
                _report_skipped(p, found.skipped, found.skipped_kinds(), verbose)
            if found.skipped:
                skipped[os.path.realpath(p)] = dict(found.skipped_kinds())
            files.extend(found.files)
            failed.extend(found.failed)
        elif p.exists():
            files.append((str(p), fmt))
        else:
            failed.append(IngestError(raw, None, "no such file or folder"))
    return Plan(tuple(files), tuple(failed), skipped)


def _skipped_text(kinds: list[tuple[str, int]]) -> str:
    if not kinds:
        return ""
    n = sum(c for _, c in kinds)
    return (f" ({n} file{'s' if n != 1 else ''} of other kinds: "
            + ", ".join(f"{c} {k}" for k, c in kinds) + ")")


def _report_skipped(folder: Path, skipped: tuple[Skipped, ...],
                    kinds: list[tuple[str, int]], verbose: bool) -> None:
    if not skipped:
        return
    say(f"{folder}: skipped {len(skipped)} file{'s' if len(skipped) != 1 else ''} "
          "tlview does not read: " + ", ".join(f"{c} {k}" for k, c in kinds)
          + ("" if verbose else " (--verbose lists them)"))
    if verbose:
        for s in skipped:
            say(f"  skipped {s.path}: {s.looks}")


def ingest_one(db: Database, path: str, fmt: str | None, *, force: bool = False,
               again: list[tuple[str, str]] | None = None, verbose: bool = False
               ) -> list[int]:
    """Ingest one file in one transaction and print a summary; returns new timeline ids.
    A file ingested before is skipped, its note kept in ``again`` (else said)."""
    progress = stderr_progress(Path(path).name)
    if force or not db.scalar("sources_same_path_size", str(Path(path).resolve()),
                              os.path.getsize(path)):
        # not ingested before (no source of this path and size): hashed beside the ingest
        later = sha256_beside(path)
        summary = write_records(db, records_for(path, fmt, sha256=SHA256_LATER,
                                                progress=progress), sha256=later,
                                before_commit=raise_dropped)
        _, note = check_again(db, path, later(), force=True, source_id=summary.source_id)
        if note:
            say(note)
        return report_ingest(db, path, summary, verbose=verbose)
    sha = file_sha256(path)
    go, note = check_again(db, path, sha, force=force)
    if not go and note and again is not None:
        again.append((path, note))
        return []
    if note:
        say(note)
    if not go:
        return []
    summary = write_records(db, records_for(path, fmt, sha256=sha, progress=progress),
                            before_commit=raise_dropped)  # a dropped Ctrl-C: not committed
    return report_ingest(db, path, summary, verbose=verbose)


def check_again(db: Database, path: str, sha: str, *, force: bool,
                source_id: int | None = None) -> tuple[bool, str | None]:
    """Whether to ingest ``path`` (bytes ``sha``) into ``db``, and what to say first: a
    file already ingested (same path, same bytes) is skipped unless ``force``
    (``source_id``: the file's own source, when it is ingested already)."""
    resolved = str(Path(path).resolve())
    same = [r for r in db.query("sources_by_sha", sha) if r[0] != source_id]
    again = [r for r in same if r[1] == resolved]
    if again and not force:
        return False, (f"{path}: already ingested as source {again[0][0]} "
                       f"({again[0][2]:%Y-%m-%d %H:%M}); skipped (use --force to add it again)")
    if same and not again:
        return True, (f"{path}: same bytes as source {same[0][0]} ({same[0][1]}); "
                      "ingested as a source of its own")
    return True, None


def report_ingests(db: Database, done: list[tuple[str, IngestSummary, str | None]], *,
                   verbose: bool = False) -> list[int]:
    """Print, file by file, the note of each ``(path, summary, note)`` and whether it
    recorded nothing (with ``verbose``, that it was committed); their new timeline ids
    (listed at the end: print_ingested)."""
    tids = [t for _, s, _ in done for t in s.timeline_ids.values()]
    for path, summary, note in done:
        if note:
            say(note)
        _say_committed(path, summary, verbose)
    return tids


def _say_no_timeline(path: str, summary: IngestSummary) -> None:
    say(f"{path}: ingested as source {summary.source_id}, but it records no timeline "
        "(nothing was captured in it)")


def report_ingest(db: Database, path: str, summary: IngestSummary, *,
                  verbose: bool = False) -> list[int]:
    """Say if an ingest of ``path`` recorded nothing (with ``verbose``, that it was
    committed); its new timeline ids (listed at the end: print_ingested)."""
    _say_committed(path, summary, verbose)
    return list(summary.timeline_ids.values())


def _say_committed(path: str, summary: IngestSummary, verbose: bool) -> None:
    """A file's line as it is committed: none unless it recorded nothing or ``verbose``
    asks (the timelines are listed once at the end, by run: print_ingested)."""
    n = len(summary.timeline_ids)
    if not n:
        _say_no_timeline(path, summary)
    elif verbose:
        say(f"committed {path}: source {summary.source_id}, "
            f"{n} timeline{'s' if n != 1 else ''}")


def _say_interrupted(e: KeyboardInterrupt, db: Database, first_new: int) -> None:
    """One line: the files this run committed before the interrupt (the one it was
    writing, and with workers the files of the open transaction, were rolled back)."""
    try:
        done = [r[0] for r in db.query("sources_from", first_new)]
    except duckdb.Error:
        done = []
    what = (f"{len(done)} file{'s' if len(done) != 1 else ''} committed before it: "
            + ", ".join(done)) if done else "no file was committed"
    print(f"tlview: interrupted ({signal_name(e)}): {what}; nothing of the unfinished ones "
          "was written", file=sys.stderr)


def _unreadable(path: str, e: OSError) -> IngestError:
    return IngestError(path, None, f"cannot read it ({e.strerror or e})")


def _close(db: Database, *, remove_if_empty: bool) -> None:
    """Close ``db``; remove it (and its WAL) if this run created it and wrote no source."""
    try:
        empty = remove_if_empty and not db.query("counts")[0][0]
    except duckdb.Error:
        empty = False  # it could not say: keep it
    db.close()
    if empty:
        for p in (Path(db.path), Path(f"{db.path}.wal")):
            p.unlink(missing_ok=True)
