"""A database of many timelines made from the real fixtures (for `info` and the chooser).

Every timeline is a real one: the CPU torch logs of tests/fixtures/torch (short dress)
repeated with renumbered AOT ids and graph numbers (each copy a new compile, as in
bench_wrapper), plus ten ingests each of the XLA dump folder, scheduler-IR seed 002,
XLA seed 003 and the three real profiler traces (Kineto single and 2-rank, JAX), so
that every kind of summary line is computed. Built once under bench/out/, named by
schema and size.

    .venv/bin/python -m bench.many_timelines [N]     # build (default 5,000) and print its path
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

from tlview.ingest import records_for
from tlview.ingest.discover import discover
from tlview.store import open_database, write_records
from tlview.store.db import schema_sql

from .bench_wrapper import _AOT, _GRAPH
from .scale import OUT_DIR, ROOT

FIXTURES = ROOT / "tests" / "fixtures"
TORCH = FIXTURES / "torch"
PROFILE = FIXTURES / "profile"
COPIES = 10  # ingests of each non-log input
# The log programs repeated (timelines per copy): four-timeline ones, and one of two.
LOGS_4 = ["mlp_train", "transformer_block", "conv_net", "mlp_dynamic"]
LOG_2 = "inplace_mutation"


def _fixed_inputs() -> list[Path]:
    """The non-log inputs, each ingested COPIES times."""
    one = [Path(p) for p, _ in discover(FIXTURES / "xla")]
    one += [FIXTURES / "seeds" / "002_0926b2a0123efc8b.txt",
            FIXTURES / "seeds" / "003_5960cad812240b69.txt",
            PROFILE / "single" / "compiled_step.pt.trace.json.gz",
            PROFILE / "coll" / "rank0" / "rank0.pt.trace.json.gz",
            PROFILE / "coll" / "rank1" / "rank1.pt.trace.json.gz",
            PROFILE / "jax" / "vm.trace.json.gz"]
    return one * COPIES


def _log(n_timelines: int, out: Path) -> None:
    """Renumbered copies of the real short-dress logs, ``n_timelines`` timelines in all."""
    texts = {p: (TORCH / f"{p}.short.log").read_text() for p in [*LOGS_4, LOG_2]}
    if n_timelines % 2:
        raise ValueError("the logs give timelines in pairs: ask for an even number")
    left, k = n_timelines, 0
    with open(out, "w") as f:
        while left:
            prog = LOGS_4[k % len(LOGS_4)] if left >= 4 else LOG_2
            chunk = _AOT.sub(lambda m, k=k: f"{m[1]}{k}{m[3]}", texts[prog])
            f.write(_GRAPH.sub(lambda m, k=k: f"{m[1]}{k}{m[3]}", chunk))
            left -= 4 if prog in LOGS_4 else 2
            k += 1


def build(n_timelines: int = 5000) -> Path:
    """The database (built unless already there); exactly ``n_timelines`` timelines."""
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    tag = hashlib.sha256(schema_sql().encode()).hexdigest()[:8]
    db_path = OUT_DIR / f"timelines_{n_timelines}_{tag}.duckdb"
    if db_path.exists():
        return db_path
    tmp = db_path.with_suffix(".building")
    tmp.unlink(missing_ok=True)
    log = OUT_DIR / f"timelines_{n_timelines}.log"
    with open_database(tmp) as db:
        fixed = 0
        for path in _fixed_inputs():
            fixed += len(write_records(db, records_for(path)).timeline_ids)
        _log(n_timelines - fixed, log)
        write_records(db, records_for(log))
        n = db.query("counts")[0][1]
    if n != n_timelines:
        raise RuntimeError(f"built {n} timelines, expected {n_timelines}")
    tmp.rename(db_path)
    log.unlink()
    return db_path


if __name__ == "__main__":
    print(build(int(sys.argv[1]) if len(sys.argv) > 1 else 5000))
