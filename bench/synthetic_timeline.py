"""A synthetic training-step timeline, generated as records and written through the store.

Shape: a forward half that saves activations (freed in the mirrored backward step),
short-lived temporaries, medium-lived intermediates, and a collective every
``collective_every`` steps. Deterministic for a given seed.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Iterator
from pathlib import Path

from tlview.ingest.records import (
    BufferAllocated,
    BufferFreed,
    CollectiveIssued,
    CollectiveWaited,
    NodeScheduled,
    Record,
    Source,
    Timeline,
)
from tlview.store import open_database, write_records

SIZES = (512, 4096, 65_536, 262_144, 1_048_576, 4_194_304)
DTYPES = (("bf16", 2), ("f32", 4))


def synthetic_records(n_steps: int, buffers_per_step: int = 3, *, seed: int = 0,
                      collective_every: int = 1000) -> Iterator[Record]:
    rng = random.Random(seed)
    yield Source(path=f"synthetic-{n_steps}", size=0,
                 sha256=hashlib.sha256(f"{n_steps}/{buffers_per_step}/{seed}".encode()).hexdigest(),
                 format="synthetic")
    yield Timeline(key="syn", name=f"synthetic {n_steps:,} steps", format="synthetic",
                   device="cuda:0")
    frees: list[BufferFreed] = []
    b = 0
    for step in range(n_steps):
        node = f"op{step}"
        kernel = f"triton_poi_fused_add_mul_{step % 97}" if step % 3 else "extern_kernels.mm"
        outs = [f"buf{b + k}" for k in range(buffers_per_step)]
        reads = tuple(f"buf{max(0, b - k - 1)}" for k in range(2))
        yield NodeScheduled(timeline="syn", step=step, node=node,
                            node_class="SchedulerNode" if step % 3 else "ExternKernelSchedulerNode",
                            ir_type="ComputedBuffer", kernel=kernel, device="cuda:0",
                            reads=reads, writes=tuple(outs))
        for k, name in enumerate(outs):
            dtype, item = DTYPES[k % 2]
            nbytes = rng.choice(SIZES)
            if k == 0:
                last = min(n_steps - 1, step + rng.randint(0, 4))
            elif k == 1:
                last = min(n_steps - 1, step + rng.randint(5, 200))
            elif step < n_steps // 2 and rng.random() < 0.05:
                last = n_steps - 1 - step  # saved activation, freed in backward
            else:
                last = min(n_steps - 1, step + rng.randint(0, 20))
            yield BufferAllocated(timeline="syn", step=step, buffer=name, bytes=nbytes,
                                  node=node, layout="FixedLayout", dtype=dtype,
                                  shape=f"[{nbytes // item}]", stride="[1]", device="cuda:0")
            frees.append(BufferFreed(timeline="syn", step=last, buffer=name))
        b += buffers_per_step
        if collective_every and step % collective_every == 1 and step + 10 < n_steps:
            yield CollectiveIssued(timeline="syn", step=step, node=node,
                                   op="all_gather_into_tensor_out", bytes=SIZES[-1],
                                   buffers=(outs[0],))
        if collective_every and step % collective_every == 11 and step > 10:
            yield CollectiveWaited(timeline="syn", step=step, node=node,
                                   collective=f"op{step - 10}")
    yield from frees


def build(db_path: str | Path, n_steps: int, buffers_per_step: int = 3) -> Path:
    """Write the synthetic timeline into a fresh database (skipped when it already exists)."""
    db_path = Path(db_path)
    if db_path.exists():
        return db_path
    tmp = db_path.with_suffix(".building")
    tmp.unlink(missing_ok=True)
    with open_database(tmp) as db:
        write_records(db, synthetic_records(n_steps, buffers_per_step))
    tmp.rename(db_path)
    return db_path
