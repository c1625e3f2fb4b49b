"""The fuzz campaign: ``python -m bench.fuzz [SECONDS] [--parse] [--out DIR] [--seed N]``.

Every real fixture of every format (tests/fixtures, gunzipped first so that mutations hit
the dump and not its compression; each allocator snapshot also re-pickled with protocols
2 to 5; an XLA dump with its sibling files) is mutated (tests/fuzzing.py: truncations,
flipped bytes, lines dropped, repeated or swapped, garbage, chunks repeated or lost,
invalid UTF-8, edge numbers, deep nesting; in pickles, length and memo index fields that
lie, stray opcodes, deep nesting, containers holding themselves, long MARK runs), then:

- default: ingested into a database (tests/ingest/test_fuzz_inputs.try_ingest): it succeeds with
  consistent views, or fails with IngestError naming the file and the database unchanged;
- ``--parse``: parsed (no database) by the compiled core and by the Python parsers, its
  specification: each gives its records or IngestError, never another exception, and
  the two agree on which (and on the failing line; for a Flight Recorder dump, whose
  twin gives the same rows, on the rows too). This is what scripts/sanitize.sh runs
  under AddressSanitizer + UndefinedBehaviorSanitizer.

``--formats a,b`` keeps the campaign to those formats' dumps.

A case that runs past ``--timeout`` seconds, or kills the process (a sanitizer report, a
signal), ends the campaign: the input it was on is in ``OUT/current/``, written before
each case. Every other finding is kept in ``OUT/findings/``. Prints how many inputs it
tried, by mutation, how they ended, and each finding; exits 1 on any.
"""

from __future__ import annotations

import argparse
import faulthandler
import gzip
import io
import os
import pickle
import random
import shutil
import sys
import tempfile
import time
import traceback
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"
sys.path.insert(0, str(ROOT))

from tlview.ingest import IngestError, records_for  # noqa: E402
from tlview.ingest.discover import discover  # noqa: E402
from tlview.ingest.xla_buffer_assignment import sibling_files  # noqa: E402

from tests.fuzzing import (  # noqa: E402
    HOSTILE,
    MUTATIONS,
    PICKLE_HOSTILE,
    hostile,
    mutate,
    pickle_hostile,
    pickle_ops,
)

MAX_BYTES = 1 << 20  # a larger fixture is cut (at a line end) to this much


class Case:
    """One corpus entry: the files of one dump (most are one file), one of them mutated."""

    def __init__(self, fmt: str, files: dict[str, bytes]) -> None:
        self.fmt = fmt
        self.files = files  # the file to ingest first, then its siblings
        self.main = next(iter(files))
        self.ops = {name: pickle_ops(data) for name, data in files.items()
                    if data[:1] == b"\x80"}


def _plain_name(name: str) -> str:
    return name[:-3] if name.endswith(".gz") else name


def _read(path: Path) -> bytes:
    data = path.read_bytes()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    if len(data) > MAX_BYTES and data[:1] != b"\x80":
        data = data[:data.rfind(b"\n", 0, MAX_BYTES) + 1]
    return data


class _NoGlobals(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        raise pickle.UnpicklingError(f"{module}.{name}")


def corpus() -> list[Case]:
    """Every fixture tlview reads (not the generators' nor the fuzz reproducers')."""
    cases = []
    for path, fmt in discover(FIXTURES):
        rel = Path(path).relative_to(FIXTURES).parts
        if rel[0] in ("gen", "fuzz"):
            continue
        names = sibling_files(path) if fmt == "xla_buffer_assignment" else [path]
        files = {_plain_name(Path(p).name): _read(Path(p)) for p in names}
        if any(len(d) > MAX_BYTES for d in files.values()):
            continue
        cases.append(Case(fmt or "", files))
        if fmt == "cuda_snapshot":  # the same snapshot as other picklers write it
            (name, data), = files.items()
            value = _NoGlobals(io.BytesIO(data)).load()
            for proto in (2, 3, 5):
                cases.append(Case(fmt, {name: pickle.dumps(value, protocol=proto)}))
    return cases


def mutated(case: Case, rnd: random.Random) -> tuple[str, str, dict[str, bytes]]:
    """(the file mutated, the mutation, the dump's files)."""
    name = rnd.choice(sorted(case.files))
    data = case.files[name]
    kinds = MUTATIONS + HOSTILE + (PICKLE_HOSTILE * 3 if name in case.ops else ())
    kind = rnd.choice(kinds)
    if kind in MUTATIONS:
        new = mutate(data, kind, rnd)
    elif kind in HOSTILE:
        new = hostile(data, kind, rnd)
    else:
        new = pickle_hostile(data, kind, rnd, case.ops[name])
    return name, kind, {**case.files, name: new}


# Formats whose twin must give the same rows, not only the same outcome: ("ok", rows).
SAME_ROWS = ("flight_recorder",)


def _rows(records: Any) -> int:
    """A hash of what ``records`` hold: every record (EventColumns as their events: batches
    may be cut elsewhere), the interned frames and stacks in any order, not the Source."""
    from tlview.ingest.records import EventColumns, FrameInterned, Source, StackInterned

    out: list[str] = []
    interned: list[str] = []
    for r in records:
        if isinstance(r, EventColumns):
            out += map(repr, r.records())
        elif isinstance(r, (FrameInterned, StackInterned)):
            interned.append(repr(r))
        elif not isinstance(r, Source):
            out.append(repr(r))
    return hash((tuple(out), tuple(sorted(interned))))


def outcome(path: Path, fmt: str, compiled: bool) -> tuple[Any, ...]:
    """("ok",) (("ok", rows) for SAME_ROWS) or ("error", line) of parsing ``path``; ("bug",
    traceback) for anything else."""
    os.environ["TLVIEW_NATIVE"] = "1" if compiled else "0"
    try:
        if fmt in SAME_ROWS:
            return ("ok", _rows(records_for(path, fmt)))
        for _ in records_for(path, fmt or None):
            pass
    except IngestError as e:
        return ("error", e.line)
    except Exception:  # noqa: BLE001 - what the campaign looks for
        return ("bug", traceback.format_exc(limit=8))
    return ("ok",)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.fuzz", description=__doc__.split("\n")[0])
    ap.add_argument("seconds", nargs="?", type=float, default=600.0)
    ap.add_argument("--parse", action="store_true",
                    help="parse only, compiled core and Python parsers (default: ingest)")
    ap.add_argument("--out", default=None, help="where inputs and findings are kept")
    ap.add_argument("--seed", type=int, default=None, help="default: from the clock")
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds one case may take")
    ap.add_argument("--formats", default=None,
                    help="only these formats' dumps (comma-separated; default: all)")
    ap.add_argument("--spec-every", type=int, default=1, metavar="N",
                    help="--parse: the Python parsers on every Nth input only (the compiled "
                    "core on each; default 1)")
    args = ap.parse_args(argv)
    seed = args.seed if args.seed is not None else int(time.time())
    out = Path(args.out or tempfile.mkdtemp(prefix="tlview-fuzz-"))
    current, findings = out / "current", out / "findings"
    shutil.rmtree(current, ignore_errors=True)
    findings.mkdir(parents=True, exist_ok=True)
    cases = corpus()
    if args.formats:
        cases = [c for c in cases if c.fmt in args.formats.split(",")]
    rnd = random.Random(seed)
    stats: Counter[str] = Counter()
    kinds: Counter[str] = Counter()
    by_format: Counter[str] = Counter()
    seconds: Counter[str] = Counter()
    found: list[str] = []
    db = None
    if not args.parse:
        from tlview.store import open_database, write_records

        db = out / "fuzz.duckdb"
        db.unlink(missing_ok=True)
        with open_database(db) as d:
            write_records(d, records_for(FIXTURES / "seeds" / "002_0926b2a0123efc8b.txt"))
    print(f"fuzz: {len(cases)} dumps of {len(Counter(c.fmt for c in cases))} formats, "
          f"seed {seed}, {args.seconds:.0f} s, {'parse' if args.parse else 'ingest'}; "
          f"inputs in {out}", flush=True)
    end = time.monotonic() + args.seconds
    while time.monotonic() < end:
        case = rnd.choice(cases)
        name, kind, files = mutated(case, rnd)
        shutil.rmtree(current, ignore_errors=True)
        current.mkdir()
        for n, data in files.items():
            (current / n).write_bytes(data)
        stats["tried"] += 1
        kinds[kind] += 1
        by_format[case.fmt] += 1
        faulthandler.dump_traceback_later(args.timeout, exit=True)
        t = time.perf_counter()
        try:
            spec = stats["tried"] % args.spec_every == 0
            problem = _check(current / case.main, case.fmt, db, args.parse, spec, stats)
        finally:
            faulthandler.cancel_dump_traceback_later()
            seconds[case.fmt] += time.perf_counter() - t
        if problem:
            keep = findings / f"{len(found):03d}_{case.fmt}_{kind}"
            shutil.copytree(current, keep)
            (keep / "FINDING.txt").write_text(f"{case.fmt} {name} {kind}\n{problem}\n")
            found.append(f"--- {keep}\n{problem}")
    shutil.rmtree(current, ignore_errors=True)
    print(f"inputs tried: {stats['tried']} ({stats['tried'] / args.seconds:.0f}/s) from "
          f"{len(cases)} dumps")
    print("by mutation: " + ", ".join(f"{k} {v}" for k, v in sorted(kinds.items())))
    print("by format: " + ", ".join(f"{k} {v} ({seconds[k]:.0f} s)"
                                    for k, v in sorted(by_format.items())))
    print("ended: " + ", ".join(f"{k} {v}" for k, v in sorted(stats.items()) if k != "tried"))
    print(f"findings: {len(found)}")
    for f in found[:20]:
        print(f)
    return 1 if found else 0


def _check(path: Path, fmt: str, db: Path | None, parse: bool, spec_too: bool,
           stats: Counter[str]) -> str:
    """What is wrong with how ``path`` ended ("" when it ended as specified)."""
    if not parse:
        from tests.ingest.test_fuzz_inputs import try_ingest

        assert db is not None
        try:
            stats[try_ingest(db, path)] += 1
        except Exception:  # noqa: BLE001
            return traceback.format_exc(limit=8)
        return ""
    fast = outcome(path, fmt, compiled=True)
    spec = outcome(path, fmt, compiled=False) if spec_too else fast
    stats[f"compiled {fast[0]}"] += 1
    if fast[0] == "bug" or spec[0] == "bug":
        return (fast if fast[0] == "bug" else spec)[1] + \
            ("(compiled core)" if fast[0] == "bug" else "(Python parser)")
    if fast != spec:
        return f"the compiled core and the Python parser differ: {fast} vs {spec}"
    return ""


if __name__ == "__main__":
    raise SystemExit(main())
