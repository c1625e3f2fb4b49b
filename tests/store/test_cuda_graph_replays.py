"""CUDA-graph replays in profiler traces: every kernel a replay ran is attributed to the
replay, to the compiled graph it replays and to that graph's nodes, with the per-node
times of the same graph run eagerly.

Fixtures: tests/fixtures/cudagraphs/{infer,train,default_train} (an H200, torch 2.11; README
there; tests/fixtures/gen/gpu_cudagraphs.py): the same two-block model compiled with
mode="reduce-overhead" (inference; training step) and in the default mode (training step),
each with its Kineto trace (ProfilerStep#1..#4) and TORCH_COMPILE_DEBUG tree, and
``summary.json``: the kernels each cudaGraphLaunch launched, read from the trace by the
generator. The tests read the trace themselves (json) for every expected figure.
"""

from __future__ import annotations

import gzip
import json
import statistics
from collections import Counter
from pathlib import Path

import pytest
from tlview.store import open_database

from tests.conftest import FIXTURES, ingest_into, ingest_together

CG = FIXTURES / "cudagraphs"
RUNS = ("infer", "train", "default_train")


def _inputs(run: str) -> list[Path]:
    return [CG / run / "kineto.pt.trace.json.gz",
            *sorted((CG / run / "torch_compile_debug").rglob("output_code.py"))]


QUERIES = {  # what the tests read, each view evaluated once per run
    "replays": "SELECT correlation, n_kernels, n_attached, partition, graph_timeline_id "
               "FROM graph_replays",
    "modes": "SELECT DISTINCT mode FROM call_graphs",
    "attached": "SELECT l.correlation, a.step, a.graph_timeline_id, a.method FROM "
                "kernel_attachments a JOIN kernel_launches l USING (timeline_id, seq) "
                "WHERE l.graph_launch ORDER BY l.correlation, l.ts_ns, l.seq",
    "partition_steps": "SELECT timeline_id, list(step ORDER BY step) FROM nodes WHERE "
                       "json_extract_string(attrs, '$.partition') = 'partition_0' GROUP BY ALL",
    "unattached": "SELECT u.eager, l.cpu_op, l.graph_launch, count(*) FROM unattached_kernels u "
                  "JOIN kernel_launches l USING (timeline_id, seq) GROUP BY ALL",
    "node_times": "SELECT json_extract_string(t.attrs, '$.aot_id'), o.step, o.node, o.mean_ns, "
                  "o.attach_method FROM output_node_times o JOIN timeline_records t ON "
                  "t.timeline_id = o.timeline_id WHERE o.counted AND o.measured_timeline_id "
                  "IS NOT NULL AND o.kind IS NOT NULL",
    "step_totals": "SELECT step, n_gpu_events FROM step_totals WHERE timeline_id = 1",
}


@pytest.fixture(scope="module")
def dbs(tmp_path_factory) -> dict[str, Path]:
    out = {}
    for run in RUNS:
        out[run] = tmp_path_factory.mktemp(run) / "t.duckdb"
        ingest_together(out[run], *_inputs(run))
    return out


@pytest.fixture(scope="module")
def rows(dbs) -> dict[str, dict[str, list[tuple]]]:
    out = {}
    for run, db in dbs.items():
        with open_database(db, read_only=True) as d:
            # kernel_attachments once per run: a temporary table of the view's rows, which
            # this connection's views read in its place (as tlview diff's temporary tables)
            d.sql("CREATE TEMP TABLE kernel_attachments AS SELECT * FROM main.kernel_attachments")
            out[run] = {k: d.sql(q).fetchall() for k, q in QUERIES.items()}
    return out


def _trace(run: str) -> list[dict]:
    with gzip.open(CG / run / "kineto.pt.trace.json.gz") as f:
        return [e for e in json.load(f)["traceEvents"] if e.get("ph") == "X"]


def _replays(run: str) -> dict[int, list[str]]:
    """correlation -> kernel names (GPU order) of every cudaGraphLaunch, from the trace."""
    ev = _trace(run)
    launches = {e["args"]["correlation"] for e in ev if e["name"] == "cudaGraphLaunch"}
    out: dict[int, list[tuple[float, str]]] = {c: [] for c in launches}
    for e in ev:
        if e.get("cat") == "kernel" and e["args"].get("correlation") in launches:
            out[e["args"]["correlation"]].append((e["ts"], e["name"]))
    return {c: [n for _, n in sorted(ks)] for c, ks in out.items()}


@pytest.mark.parametrize("run", ["infer", "train"])
def test_every_replayed_kernel_is_attached(rows, run):
    """Each replay (graph_replays) holds the kernels its cudaGraphLaunch's correlation
    names in the trace (and the generator's count per launch), all attached to nodes of
    the output code the call ran; the compiled calls are replays."""
    want = _replays(run)
    summary = json.loads((CG / run / "summary.json").read_text())["trace"]
    assert sorted(len(v) for v in want.values()) == sorted(
        p["kernels"] for p in summary["per_graph_launch"])
    got = rows[run]["replays"]
    assert {c: (n, a) for c, n, a, _, _ in got} == {c: (len(k), len(k)) for c, k in want.items()}
    assert {(p, g is not None) for *_, p, g in got} == {("partition_0", True)}
    assert rows[run]["modes"] == [("cuda_graph_replay",)]
    assert rows["default_train"]["modes"] == [("eager",)]


@pytest.mark.parametrize("run", ["infer", "train"])
def test_attached_nodes_follow_the_output_code(rows, run):
    """In each replay, the nodes its kernels attach to come in the output code's order
    (kernels in the order they ran), and every launch node of the partition gets its
    kernels: Triton kernels by name, the others (cuBLAS, attention) by their place
    between them."""
    attached = rows[run]["attached"]
    nodes = dict(rows[run]["partition_steps"])
    by: dict[int, list[tuple[int, int]]] = {}
    for corr, step, graph, _ in attached:
        by.setdefault(corr, []).append((graph, step))
    assert len(by) == len(_replays(run))
    for corr, seq in by.items():
        steps = [s for _, s in seq]
        assert steps == sorted(steps), corr
        assert sorted(set(steps)) == nodes[seq[0][0]], corr
    assert {r[3] for r in attached} == {"triton_name_order", "graph_replay_order"}


@pytest.mark.parametrize("run", ["infer", "train"])
def test_what_stays_unattached_is_eager(rows, run):
    """Outside the replays nothing of the compiled code is missed: the unattached GPU events
    are the eager ones (the optimizer, the loss; launched outside every compiled call) and
    the copies of inputs into the graphs' static buffers CUDA graph trees make inside the
    call (aten::_foreach_copy_), exactly the trace's events launched by no cudaGraphLaunch."""
    ev = _trace(run)
    graph_corr = {e["args"]["correlation"] for e in ev if e["name"] == "cudaGraphLaunch"}
    gpu = [e for e in ev if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    not_replayed = sum(1 for e in gpu if e["args"].get("correlation") not in graph_corr)
    got = rows[run]["unattached"]
    assert sum(r[3] for r in got) == not_replayed
    assert {(e, op) for e, op, g, _ in got if not e} == {(False, "aten::_foreach_copy_")}
    assert not any(g for _, _, g, _ in got)


def test_per_node_times_equal_the_eager_run(rows):
    """The training step's nodes measured in CUDA-graph replays against the same graph's
    nodes run eagerly (default mode, attached through their CPU ops): the same nodes, the
    same total within 2%, every node within 20% or 600 ns (kernels of 1-2 us)."""
    def times(run: str) -> dict[tuple[str, int], tuple[str, int, str]]:
        return {(a, s): (n, m, meth) for a, s, n, m, meth in rows[run]["node_times"]}

    replay, eager = times("train"), times("default_train")
    assert set(replay) == set(eager) and len(replay) == 65
    assert all(replay[k][0] == eager[k][0] for k in replay)
    assert {m for _, _, m in replay.values()} == {"triton_name_order", "graph_replay_order"}
    assert {m for _, _, m in eager.values()} == {"triton_name_order", "extern_cpu_op"}
    total_r, total_e = (sum(v[1] for v in x.values()) for x in (replay, eager))
    assert abs(total_r - total_e) <= 0.02 * total_e
    for k in replay:
        a, b = replay[k][1], eager[k][1]
        assert abs(a - b) <= max(0.2 * b, 600), (k, replay[k], eager[k])
    assert abs(statistics.median(replay[k][1] / eager[k][1] for k in replay) - 1) < 0.02


def test_step_totals_count_replayed_kernels_in_their_step(rows):
    """A replay's kernels belong to the ProfilerStep whose CPU range holds its
    cudaGraphLaunch: step_totals' kernel counts and times equal the trace's, read apart."""
    ev = _trace("train")
    runtime = {e["args"]["correlation"]: e["ts"] for e in ev
               if e.get("cat") == "cuda_runtime" and "correlation" in e.get("args", {})}
    steps = sorted((e["ts"], e["ts"] + e["dur"], int(e["name"].split("#")[1])) for e in ev
                   if e.get("cat") == "user_annotation" and e["name"].startswith("ProfilerStep#"))
    want: Counter = Counter()
    for e in ev:
        t = runtime.get(e.get("args", {}).get("correlation"))
        if e.get("cat") == "kernel" and t is not None:
            for lo, hi, n in steps:
                if lo <= t < hi:
                    want[n] += 1
    got = dict(rows["train"]["step_totals"])
    memsets = Counter()
    for e in ev:
        t = runtime.get(e.get("args", {}).get("correlation"))
        if e.get("cat") in ("gpu_memset", "gpu_memcpy") and t is not None:
            for lo, hi, n in steps:
                if lo <= t < hi:
                    memsets[n] += 1
    assert got == {n: want[n] + memsets[n] for n in want} and sum(want.values()) == 412


def test_info_says_replays_and_attached(dbs, capsys):
    from tlview.cli import main

    for run, n, replays in (("infer", 76, 4), ("train", 348, 8)):
        assert main(["info", "--db", str(dbs[run])]) == 0
        out = capsys.readouterr().out
        assert f"{n} of them from {replays} CUDA-graph replays, {n} of those attached to " \
               "compiled nodes" in out, out
    assert main(["info", "--db", str(dbs["default_train"])]) == 0
    assert "CUDA-graph" not in capsys.readouterr().out


def _summary(run: str) -> dict:
    return json.loads((CG / run / "summary.json").read_text())["trace"]


def test_the_report_says_replays_and_attached(dbs, rows):
    """`tlview report`'s time section: the GPU kernels of CUDA-graph replays and how many of
    them are attached, equal to the generator's count from the trace (summary.json) and to
    graph_replays; capture health has nothing to say of them; every format carries them."""
    from tlview.report_command import WORDS
    from tlview.report_render import RENDERERS
    from tlview.store.report import build_report

    for run in ("infer", "train"):
        with open_database(dbs[run], read_only=True) as d:
            r = build_report(d, 1, WORDS)
        want = _summary(run)
        n = r.figure("replay_kernels")
        assert n.value == want["kernels_from_graph_launches"] == sum(
            x[1] for x in rows[run]["replays"])
        assert n.note == f"of {want['graph_launches']:,} replays (cudaGraphLaunch)"
        assert r.figure("replay_attached_kernels").value == sum(
            x[2] for x in rows[run]["replays"]) == n.value
        health = next(s for s in r.sections if s.key == "health")
        assert not any("CUDA-graph" in x for x in health.notes)
        for fmt, render in RENDERERS.items():
            text = render(r)
            assert "GPU kernels from CUDA-graph replays" in text, fmt
            if fmt in ("md", "html"):
                assert "FROM graph_replays r JOIN timeline_runs t USING (timeline_id)" in text
    with open_database(dbs["default_train"], read_only=True) as d:
        assert build_report(d, 1, WORDS).figure("replay_kernels") is None


def test_replayed_kernels_without_their_output_code_are_said_in_capture_health(tmp_path):
    """The inference trace alone: its 76 replayed kernels attach to nothing, and capture
    health says how many and why (unattached_kernels)."""
    from tlview.report_command import WORDS
    from tlview.store.report import build_report

    db = tmp_path / "alone.duckdb"
    ingest_into(db, CG / "infer" / "kineto.pt.trace.json.gz")
    with open_database(db, read_only=True) as d:
        r = build_report(d, 1, WORDS)
        why = d.sql("SELECT DISTINCT u.reason FROM unattached_kernels u JOIN kernel_launches l "
                    "USING (timeline_id, seq) WHERE l.graph_launch").fetchall()
    n = _summary("infer")["kernels_from_graph_launches"]
    assert (r.figure("replay_kernels").value, r.figure("replay_attached_kernels").value) == (n, 0)
    health = next(s for s in r.sections if s.key == "health")
    (note,) = [x for x in health.notes if "CUDA-graph" in x]
    assert note.startswith(f"{n:,} GPU kernels of CUDA-graph replays are attached to no "
                           f"compiled node") and f"{n:,} {why[0][0]}" in note
