"""Allocator snapshots of CUDA-graph runs: private memory pools and who made them, MemPool
snapshots, snapshots without traces, expandable segments; every figure against the pickle
itself (tests/reference_snapshot.py's plain loader) and torch's own figures
(``<name>.torch.json``).

Fixtures: tests/fixtures/cudagraphs/*.pickle.gz (an H200, torch 2.11; README there;
tests/fixtures/gen/gpu_cudagraphs.py): ``cudagraph_pools`` (the reduce-overhead training
run, history from the first allocation through capture and replays: its graphs' private
pool), ``mempool`` (allocations in a torch.cuda.MemPool beside the default pool),
``no_traces`` (the same state, taken without traces), ``expandable``
(expandable_segments:True).
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import pytest
from tlview.store import open_database

from tests import reference_snapshot as ref
from tests.conftest import FIXTURES, ingest_together

CG = FIXTURES / "cudagraphs"
NAMES = ["cudagraph_pools", "mempool", "no_traces", "expandable"]  # timelines 1..4


@pytest.fixture(scope="module")
def db(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("pools") / "p.duckdb"
    train = sorted((CG / "train" / "torch_compile_debug").rglob("output_code.py"))
    ingest_together(path, *(CG / f"{n}.pickle.gz" for n in NAMES), *train)
    return path


def torch_json(name: str) -> dict:
    return json.loads((CG / f"{name}.torch.json").read_text())


def _pools_in_pickle(name: str) -> dict[str, tuple[int, int, int]]:
    """pool id -> (segments, total size, requested bytes of active blocks), read apart."""
    out: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    for s in ref.load(CG / f"{name}.pickle.gz")["segments"]:
        key = json.dumps(list(s["segment_pool_id"]), separators=(",", ":"))
        out[key][0] += 1
        out[key][1] += s["total_size"]
        out[key][2] += sum(b["requested_size"] for b in s["blocks"]
                           if b["state"] != "inactive")
    return {k: tuple(v) for k, v in out.items()}


def _pools(db: Path, tid: int) -> dict[str, tuple]:
    with open_database(db, read_only=True) as d:
        rows = d.sql("SELECT pool_id, kind, segments_end, reserved_end_bytes, "
                     "allocated_end_bytes, owners FROM allocator_pools WHERE timeline_id = ? "
                     "AND pool_id IS NOT NULL", [tid]).fetchall()
    return {r[0]: r[1:] for r in rows}


@pytest.mark.parametrize("name,tid", [("cudagraph_pools", 1), ("mempool", 2), ("no_traces", 3),
                                      ("expandable", 4)])
def test_peaks_are_torchs(db, name, tid):
    """The allocated peak is torch's requested_bytes.all.peak, the block peak its
    max_memory_allocated(), the reserved peak its max_memory_reserved(); for the snapshot
    without traces these are the end state's, which is the peak state there."""
    t = torch_json(name)
    stats = t.get("memory_stats", t)
    with open_database(db, read_only=True) as d:
        got = d.sql("SELECT allocated_bytes, block_bytes, reserved_bytes FROM allocator_peak "
                    "WHERE timeline_id = ?", [tid]).fetchone()
    assert got == (stats["requested_bytes.all.peak"], t["max_memory_allocated"],
                   t["max_memory_reserved"])


def test_the_graphs_private_pool_is_theirs(db):
    """The tree manager's pool (cudagraph_trees' cuda_graphs_thread_pool, (0, 1)) holds 13
    of the 27 end segments as the pickle says; the allocations made in it come from the
    compiled graphs' partition_0 (and call) frames: its owners are the training run's
    0_forward and 0_backward; nothing of a partition is in the default pool."""
    pool = json.dumps(torch_json("cudagraph_pools")["pools"]["cuda_graphs_thread_pool"],
                      separators=(",", ":"))
    got = _pools(db, 1)
    want = _pools_in_pickle("cudagraph_pools")
    assert {k: v[1:4] for k, v in got.items()} == want and pool in got
    assert got[pool][0] == "graph" and got["[0,0]"][0] == "default"
    assert {o["owner"] for o in got[pool][4]} == {"0_forward", "0_backward"}
    assert {o["function"] for o in got[pool][4]} <= {"partition_0", "call"}
    assert not any(o["function"] == "partition_0" for o in got["[0,0]"][4])


def test_graph_allocations_by_frame_land_in_the_pool(db):
    """Every alloc entry of the trace whose frames hold a partition_0 frame lies in a
    segment of the private pool: the bytes the pool's owners made with partition_0 are
    those entries' sizes, read from the pickle."""
    snap = ref.load(CG / "cudagraph_pools.pickle.gz")
    want = sum(e["size"] for e in snap["device_traces"][0] if e["action"] == "alloc"
               and any(f["name"] == "partition_0" for f in e.get("frames") or []))
    got = _pools(db, 1)
    made = sum(o["bytes"] for p, v in got.items() if p != "[0,0]" for o in v[4]
               if o["function"] == "partition_0")
    assert made == want > 0


def test_a_mempool_and_its_snapshot(db):
    """The MemPool's pool: its segments, reserved and allocated bytes are MemPool.snapshot()'s
    (in the json); what was allocated in it is named by its site; the default pool holds
    the 8 and 12 MiB made outside it. The snapshot without traces has the same pools."""
    t = torch_json("mempool")
    pool = json.dumps(t["mempool_id"], separators=(",", ":"))
    segs = t["mempool_snapshot_segments"]
    for tid in (2, 3):
        got = _pools(db, tid)
        assert got[pool][1:4] == (len(segs), sum(s["total_size"] for s in segs),
                                  sum(s["requested_size"] for s in segs))
        assert got[pool][0] == "private" and got["[0,0]"][3] == 20 * 2**20
    owners = _pools(db, 2)[pool][4]
    assert owners and all(o["owner"].endswith(":case_mempool") for o in owners)


def test_a_snapshot_without_traces_says_it_is_the_end_state(db, capsys):
    """No trace entries: the curve is the end state alone (one row, event -1), and the
    summary says so instead of a peak in time."""
    from tlview.cli import main

    with open_database(db, read_only=True) as d:
        curve = d.sql("SELECT event_index FROM allocator_curve WHERE timeline_id = 3").fetchall()
    assert curve == [(-1,)]
    assert main(["info", "--db", str(db)]) == 0
    out = capsys.readouterr().out
    line = next(ln for ln in out.splitlines()  # under its title, without the extensions
                if ln.startswith("timeline ") and " · no_traces cuda:0 · allocator snapshot [" in ln)
    assert "no trace entries: the end state only" in line and "no curve" in line
    assert "pool [0,1] (graph): 13 segments at the end" in out
