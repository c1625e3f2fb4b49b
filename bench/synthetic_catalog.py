"""Databases of many small timelines (the chooser's scale), written through the store.

Each source is an ``output_code.py`` of a different run folder holding two graphs,
``0_forward`` and ``0_backward`` (as a folder of TORCH_COMPILE_DEBUG runs gives), each
a few steps with one buffer, so every timeline has a peak.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path

from tlview.ingest.records import (
    BufferAllocated,
    BufferFreed,
    NodeScheduled,
    Record,
    Source,
    Timeline,
)
from tlview.store import open_database, write_records


def catalog_records(source_path: str, graphs: tuple[str, ...], steps: int = 3,
                    seed: int = 0) -> Iterator[Record]:
    yield Source(path=source_path, size=0,
                 sha256=hashlib.sha256(f"{source_path}/{seed}".encode()).hexdigest(),
                 format="synthetic")
    for g, name in enumerate(graphs):
        key = f"g{g}"
        yield Timeline(key=key, name=name, format="inductor_wrapper", device="cuda:0")
        for step in range(steps):
            yield NodeScheduled(timeline=key, step=step, node=f"triton_poi_{step}",
                                kernel=f"triton_poi_{step}")
        nbytes = 1024 * (1 + (seed * 7 + g) % 50)
        yield BufferAllocated(timeline=key, step=0, buffer="buf0", bytes=nbytes,
                              node="triton_poi_0", layout="FixedLayout", dtype="f32",
                              shape=f"[{nbytes // 4}]", stride="[1]", device="cuda:0")
        yield BufferFreed(timeline=key, step=steps - 1, buffer="buf0")


def one_source(n_timelines: int, source_path: str = "/runs/catalog/output_code.py"
               ) -> Iterator[Record]:
    """One source holding ``n_timelines`` graphs (one transaction: quick to write)."""
    names = tuple(f"{i // 2}_{'forward' if i % 2 == 0 else 'backward'}"
                  for i in range(n_timelines))
    yield from catalog_records(source_path, names)


def build_catalog(db_path: str | Path, n_timelines: int, runs: int = 1) -> Path:
    """``runs`` sources (``/runs/job<r>/output_code.py``) sharing ``n_timelines`` between
    them; skipped when the file exists."""
    db_path = Path(db_path)
    if db_path.exists():
        return db_path
    tmp = db_path.with_suffix(".building")
    tmp.unlink(missing_ok=True)
    per_run = -(-n_timelines // runs)
    with open_database(tmp) as db:
        made = 0
        for r in range(runs):
            n = min(per_run, n_timelines - made)
            if n <= 0:
                break
            names = tuple(f"{i // 2}_{'forward' if i % 2 == 0 else 'backward'}"
                          for i in range(n))
            write_records(db, catalog_records(f"/runs/job{r}/output_code.py", names, seed=r))
            made += n
    tmp.rename(db_path)
    return db_path
