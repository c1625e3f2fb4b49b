"""The long fuzz campaign: `python -m bench.fuzz [SECONDS]` (default 600).

Mutates every real fixture (tests/fuzzing.py) and checks that each ingest either
succeeds with consistent views or fails with IngestError leaving the database as it was.
Prints how many inputs it tried, how many ingested, how many were rejected, and any bug.
"""

from __future__ import annotations

import random
import sys
import tempfile
import time
import traceback
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from fuzzing import MUTATIONS, mutate  # noqa: E402
from test_fuzz_inputs import try_ingest  # noqa: E402
from tlview.ingest import records_for  # noqa: E402
from tlview.store import open_database, write_records  # noqa: E402


def main(seconds: float) -> int:
    corpus = [p for p in sorted((ROOT / "tests" / "fixtures").rglob("*"))
              if p.is_file() and p.suffix in (".txt", ".log", ".py", ".json", ".gz")
              and "gen" not in p.relative_to(ROOT / "tests" / "fixtures").parts
              and p.stat().st_size < 3_000_000]
    tmp = Path(tempfile.mkdtemp(prefix="tlview-fuzz-"))
    db = tmp / "fuzz.duckdb"
    with open_database(db) as d:
        write_records(d, records_for(ROOT / "tests" / "fixtures" / "seeds" /
                                     "002_0926b2a0123efc8b.txt"))
    rnd = random.Random(1234)
    stats: Counter[str] = Counter()
    failures = []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        src = rnd.choice(corpus)
        kind = rnd.choice(MUTATIONS)
        seed = rnd.randrange(2**32)
        data = mutate(src.read_bytes(), kind, random.Random(seed))
        case = tmp / f"case{stats['tried']}"  # a folder of its own: no stale siblings
        case.mkdir()
        path = case / src.name
        path.write_bytes(data)
        stats["tried"] += 1
        stats[f"kind:{kind}"] += 1
        try:
            stats[try_ingest(db, path)] += 1
            stats["ok"] += 1
        except Exception:
            stats["bug"] += 1
            failures.append((src.name, kind, seed, traceback.format_exc(limit=3)))
        finally:
            path.unlink()
            case.rmdir()
    print(f"inputs tried: {stats['tried']} from {len(corpus)} fixtures in {seconds:.0f} s")
    print("by mutation: " + ", ".join(f"{k[5:]} {v}" for k, v in sorted(stats.items())
                                      if k.startswith("kind:")))
    print(f"completed as specified: {stats['ok']} ({stats['ingested']} ingested with "
          f"consistent views, {stats['rejected']} rejected with IngestError, db unchanged)")
    print(f"bugs: {stats['bug']}")
    for name, kind, seed, tb in failures[:10]:
        print(f"--- {name} {kind} seed={seed}\n{tb}")
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main(float(sys.argv[1]) if len(sys.argv) > 1 else 600))
