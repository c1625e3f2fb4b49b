"""Collectives inside CUDA graphs, two ranks: replays attached, capture and warm-up told
apart, per-step figures, overlap and the ranks views.

Fixture: tests/fixtures/cudagraphs/coll (2 x H200, NCCL 2.28.9, torch 2.11; README there;
tests/fixtures/gen/gpu_cudagraph_coll.py): a forward with all_gather_tensor /
reduce_scatter_tensor / all_reduce (functional collectives) compiled with
mode="reduce-overhead", profiled per rank: ProfilerStep#1 CUDA graph trees' warm-up (eager),
#2 records (captures, then replays once), #3..#7 replay; rank 1 sleeps 30 ms before its
call at #4. Every expected figure is read from the trace JSON and the output code by the
test's own code (tests/reference_ranks.py, tests/reference_profile.py, below).
"""

from __future__ import annotations

import json
import re
from collections import Counter, defaultdict
from pathlib import Path

import pytest
from tlview.store import open_database

from tests import reference_profile as refp
from tests import reference_ranks as ref
from tests.conftest import FIXTURES, ingest_together

COLL = FIXTURES / "cudagraphs" / "coll"
TRACES = [COLL / f"rank{r}" / f"rank{r}.pt.trace.json.gz" for r in (0, 1)]
CODES = [next((COLL / f"rank{r}").rglob("output_code.py")) for r in (0, 1)]
SUMMARY = {r: json.loads((COLL / f"rank{r}" / "summary.json").read_text()) for r in (0, 1)}
DELAY = SUMMARY[1]["delay"]  # {"rank": 1, "profiler_step": 4, "ms": 30, ...}

QUERIES = {
    "trace_ids": "SELECT rank, timeline_id FROM rank_traces",
    "replays": "SELECT timeline_id, correlation, n_kernels, n_attached, after_capture, partition "
               "FROM graph_replays",
    "calls": "SELECT g.timeline_id, m.ts_ns, g.mode FROM call_graphs g JOIN measured m "
             "ON m.timeline_id = g.timeline_id AND m.seq = g.call_seq WHERE g.class_rank = 1",
    "attached": "SELECT l.timeline_id, l.correlation, l.kernel, n.kernel AS node_kernel, a.step, "
                "a.graph_timeline_id, a.method, a.confidence FROM kernel_attachments a "
                "JOIN kernel_launches l USING (timeline_id, seq) JOIN nodes n "
                "ON n.timeline_id = a.graph_timeline_id AND n.step = a.step "
                "WHERE l.graph_launch ORDER BY l.timeline_id, l.correlation, l.ts_ns, l.seq",
    "nodes": "SELECT timeline_id, step, kernel FROM nodes WHERE json_extract_string(attrs, "
             "'$.partition') = 'partition_0' ORDER BY timeline_id, step",
    "node_methods": "SELECT o.timeline_id, o.kernel, o.attach_method FROM output_node_times o "
                    "WHERE o.counted AND o.measured_timeline_id IS NOT NULL AND o.kind IS NOT NULL",
    "unattached_nodes": "SELECT count(*) FROM unattached_nodes",
    "step_totals": "SELECT timeline_id, step, n_gpu_events, kernel_ns, comm_ns, gpu_first_ns, "
                   "gpu_last_ns FROM step_totals",
    "step_extent": "SELECT timeline_id, step, gpu_first_ns, gpu_last_ns FROM _step_gpu_extent",
    "overlap": "SELECT rank, comm_ns, overlapped_ns, exposed_ns FROM comm_overlap_summary",
    "ranks": "SELECT collective_id, rank, ts_ns FROM collective_ranks",
    "skew": "SELECT * FROM collective_skew",
    "unmatched": "SELECT count(*) FROM collective_unmatched",
    "stragglers": "SELECT rank, caused_wait_ns, times_last FROM stragglers",
    "whatif": "SELECT * FROM whatif_stragglers",
    "late": "SELECT s.profiler_step, s.match_key, l.rank, l.late_ns FROM late_arrivals l "
            "JOIN collective_skew s USING (run, collective_id) ORDER BY s.first_arrival_ns",
    "coll_nodes": "SELECT c.rank, c.seq, n.kernel FROM collective_nodes c JOIN nodes n "
                  "ON n.timeline_id = c.graph_timeline_id AND n.step = c.step",
}


@pytest.fixture(scope="module")
def db(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("cgcoll") / "t.duckdb"
    ingest_together(path, TRACES[0], CODES[0], TRACES[1], CODES[1])
    return path


@pytest.fixture(scope="module")
def got(db) -> dict[str, list[dict]]:
    out = {}
    with open_database(db, read_only=True) as d:
        # the heavy views once: temporary tables of their rows, which this connection's
        # views read in their place (as tlview diff's temporary tables)
        for view in ("kernel_attachments", "call_graphs", "_collective_ranks", "_arrivals"):
            d.sql(f"CREATE TEMP TABLE {view} AS SELECT * FROM main.{view}")
        for k, q in QUERIES.items():
            cur = d.con.execute(q)
            cols = [c[0] for c in cur.description]
            out[k] = [dict(zip(cols, r)) for r in cur.fetchall()]
    return out


def _tid(got, rank: int) -> int:
    return next(r["timeline_id"] for r in got["trace_ids"] if r["rank"] == rank)


def _events(rank: int) -> list[dict]:
    return [e for e in refp.load(TRACES[rank])["traceEvents"] if e.get("ph") == "X"]


def _replays(rank: int) -> dict[int, list[dict]]:
    """correlation -> the GPU events of that cudaGraphLaunch, in the order they ran."""
    ev = _events(rank)
    launches = {e["args"]["correlation"] for e in ev if e["name"] == "cudaGraphLaunch"}
    out: dict[int, list[dict]] = {c: [] for c in launches}
    for e in ev:
        if e.get("cat") in refp.GPU_CATS and e["args"].get("correlation") in launches:
            out[e["args"]["correlation"]].append(e)
    return {c: sorted(ks, key=lambda e: refp.ns(e["ts"])) for c, ks in out.items()}


def _partition_launches(code: Path) -> list[str]:
    """The launches of `def partition_0` in the output code, in order, as the node names
    tlview gives them: triton kernel names, extern_kernels.X, torch.ops.NS.OP.overload."""
    body = code.read_text().split("def partition_0(")[1].split("\ndef ")[0].split("\nclass ")[0]
    out = []
    for line in body.splitlines():
        line = line.strip()
        if line.startswith("#"):
            continue
        m = (re.match(r"(triton_\w+)\.run\(", line) or re.search(r"(extern_kernels\.\w+)\(", line)
             or re.search(r"(torch\.ops\.\w+\.\w+\.\w+)\(", line))
        if m:
            out.append(m.group(1))
    return out


def _op_kind(node: str) -> str:
    """What kind of kernel a launch line runs: the collective, gemm, triton, none."""
    if "wait_tensor" in node:
        return "none"
    if "_c10d_functional" in node:
        return ref.kind(node, "") or "?"
    return "gemm" if node.startswith("extern_kernels.") else node


def _kernel_kind(kernel: str) -> str:
    if "nccl" in kernel.lower():
        return ref.kind(None, kernel) or "?"
    return "gemm" if re.search(r"(?i)gemm|nvjet|xmma|cutlass", kernel) else kernel


def test_fixture_is_what_torch_said(got):
    """The trace holds what the generator read from torch: 6 cudaGraphLaunch per rank (the
    recording step's and 5 replays), 15 kernels each, 7 of them NCCL; the output code's
    partition holds the collectives."""
    for r in (0, 1):
        reps = _replays(r)
        per = SUMMARY[r]["trace"]["per_graph_launch"]
        assert sorted(len(v) for v in reps.values()) == [p["kernels"] for p in per] == [15] * 6
        assert all(sum("nccl" in e["name"].lower() for e in v) == 7 for v in reps.values())
        assert [p["step"] for p in per] == [f"ProfilerStep#{k}" for k in range(2, 8)]
        steps = {c["profiler_step"]: c["tree_after"]["recorded_graph_nodes"]
                 for c in SUMMARY[r]["calls"] if c["profiler_step"] is not None}
        assert steps[1] == 0 and steps[2] == 1  # torch recorded the graph at ProfilerStep#2
        code = _partition_launches(CODES[r])
        assert Counter(_op_kind(n) for n in code if "c10d" in n) == Counter(
            {"AllGather": 3, "ReduceScatter": 3, "AllReduce": 1, "none": 7})


def test_every_replayed_kernel_is_attached_to_its_node(got):
    """Each replay's kernels (its correlation's, in the trace) are all attached, each to the
    node the output code's partition launches it from: Triton kernels by name, the NCCL
    kernels to the collectives of their kind, the cuBLAS ones to the matmuls, in order."""
    for r in (0, 1):
        tid = _tid(got, r)
        reps = _replays(r)
        rows = {x["correlation"]: x for x in got["replays"] if x["timeline_id"] == tid}
        assert {c: (x["n_kernels"], x["n_attached"], x["partition"]) for c, x in rows.items()} \
            == {c: (len(v), len(v), "partition_0") for c, v in reps.items()}
        code = [n for n in _partition_launches(CODES[r]) if _op_kind(n) != "none"]
        by_corr: dict[int, list[dict]] = defaultdict(list)
        for a in got["attached"]:
            if a["timeline_id"] == tid:
                by_corr[a["correlation"]].append(a)
        for corr, kernels in reps.items():
            att = by_corr[corr]
            assert [a["kernel"] for a in att] == [k["name"] for k in kernels]
            # the k-th kernel of a kind to the k-th launch of that kind in the code
            want_of: dict[str, list[str]] = defaultdict(list)
            for n in code:
                want_of[_op_kind(n)].append(n)
            seen: Counter = Counter()
            for a in att:
                kk = _kernel_kind(a["kernel"])
                assert a["node_kernel"] == want_of[kk][seen[kk]], (corr, a)
                seen[kk] += 1
            assert sorted(a["step"] for a in att) == [a["step"] for a in att]
            assert {a["method"] for a in att} == {"triton_name_order", "graph_replay_order"}
            assert {float(a["confidence"]) for a in att} == {1.0}
    methods = Counter((m["kernel"].split(".")[-2] if m["kernel"].startswith("torch.ops")
                       else m["kernel"], m["attach_method"]) for m in got["node_methods"])
    assert methods[("wait_tensor", "no_gpu_work")] == 14  # 7 per rank, nothing to measure
    assert got["unattached_nodes"] == [{"count_star()": 0}]


def _calls(rank: int) -> dict[int, str]:
    """Per '## Call CompiledFxGraph' range (its ts in ns), what the trace shows it did:
    a cudaStreamBeginCapture inside it on its thread -> capture; a cudaGraphLaunch ->
    replay; else its kernels were launched one by one."""
    ev = _events(rank)
    calls = [e for e in ev if e.get("cat") == "user_annotation"
             and e["name"].startswith("## Call CompiledFxGraph")]
    out = {}
    for c in calls:
        lo, hi = c["ts"], c["ts"] + c["dur"]
        inside = {e["name"] for e in ev if e.get("cat") == "cuda_runtime"
                  and e["tid"] == c["tid"] and lo <= e["ts"] < hi}
        out[refp.ns(c["ts"])] = ("cuda_graph_capture" if "cudaStreamBeginCapture" in inside
                                 else "cuda_graph_replay" if "cudaGraphLaunch" in inside
                                 else "cuda_graph_warmup")
    return out


def test_capture_replays_and_warmup_are_told_apart(got, db, capsys):
    """call_graphs.mode per call as the trace shows it; the one replay inside the
    recording call is after_capture; `tlview info` says so."""
    from tlview.cli import main

    for r in (0, 1):
        tid = _tid(got, r)
        want = _calls(r)
        assert Counter(want.values()) == {"cuda_graph_capture": 1, "cuda_graph_replay": 5,
                                          "cuda_graph_warmup": 1}
        assert {c["ts_ns"]: c["mode"] for c in got["calls"] if c["timeline_id"] == tid} == want
        capture = next(ts for ts, m in want.items() if m == "cuda_graph_capture")
        launch_ts = {e["args"]["correlation"]: refp.ns(e["ts"]) for e in _events(r)
                     if e["name"] == "cudaGraphLaunch"}
        first = min(launch_ts, key=launch_ts.get)
        assert launch_ts[first] > capture
        assert {x["correlation"]: x["after_capture"] for x in got["replays"]
                if x["timeline_id"] == tid} == {c: c == first for c in launch_ts}
    assert main(["info", "--db", str(db)]) == 0
    out = capsys.readouterr().out
    assert out.count("90 of them from 6 CUDA-graph replays (1 right after its capture), 90 of "
                     "those attached to compiled nodes; compiled calls: 1 captured a CUDA "
                     "graph, 1 warmed one up (kernels launched one by one)") == 2, out


def test_step_totals_and_overlap_are_the_traces(got):
    """Per ProfilerStep, the GPU events its CPU range launched (a replay's with its
    cudaGraphLaunch), their kernel / NCCL time and extent; per rank the overlap of NCCL
    with compute (docs/profiles.md): both read from the JSON apart."""
    for r in (0, 1):
        tid = _tid(got, r)
        ev = _events(r)
        launch = {e["args"]["correlation"]: refp.ns(e["ts"]) for e in ev
                  if e.get("cat") in ("cuda_runtime", "cuda_driver")
                  and "correlation" in e["args"]}
        steps = [(refp.ns(e["ts"]), refp.ns(e["ts"]) + refp.ns(e["dur"]),
                  int(e["name"].split("#")[1])) for e in ev
                 if e.get("cat") == "user_annotation" and e["name"].startswith("ProfilerStep#")]
        want: dict[int, list[int]] = {s: [0, 0, 0] for *_, s in steps}
        for e in ev:
            t = launch.get(e["args"].get("correlation")) if e.get("cat") in refp.GPU_CATS \
                else None
            s = next((s for a, b, s in steps if t is not None and a <= t < b), None)
            if s is None:
                continue
            want[s][0] += 1
            if e["cat"] == "kernel":
                want[s][2 if refp.is_comm(e["name"]) else 1] += refp.ns(e["dur"])
        rows = {x["step"]: x for x in got["step_totals"] if x["timeline_id"] == tid}
        assert {s: [x["n_gpu_events"], x["kernel_ns"], x["comm_ns"]] for s, x in rows.items()} \
            == want
        ext = ref.gpu_extents(TRACES[r])
        assert {s: x["gpu_last_ns"] - x["gpu_first_ns"] for s, x in rows.items()} == ext
        # the what-if's extent (without the CPU-op join): the same steps and ends
        extent = {x["step"]: (x["gpu_first_ns"], x["gpu_last_ns"])
                  for x in got["step_extent"] if x["timeline_id"] == tid}
        assert extent == {s: (x["gpu_first_ns"], x["gpu_last_ns"]) for s, x in rows.items()
                          if x["gpu_first_ns"] is not None}
        assert {s: b - a for s, (a, b) in extent.items()} == ext
        comm, overlapped = refp.overlap(refp.load(TRACES[r]))
        (o,) = [x for x in got["overlap"] if x["rank"] == r]
        assert (o["comm_ns"], o["overlapped_ns"], o["exposed_ns"]) == \
            (comm, overlapped, comm - overlapped)


def test_collectives_in_replays_are_matched_across_ranks(got):
    """Every NCCL kernel, eager (warm-up) or replayed (no collective record: its kind from
    its name, its group the traces' only one), is in one instance with the same kernel of
    the other rank, as the reference matches them; skews as the reference's."""
    calls = [c for p in TRACES for c in ref.calls(p)]
    instances, methods = ref.match(calls)
    assert len(calls) == 98 and len(instances) == 49
    assert set(methods.values()) == {"step_order"} and len(methods) == 1
    kernels: dict[int, set] = defaultdict(set)
    for x in got["ranks"]:
        kernels[x["collective_id"]].add((x["rank"], x["ts_ns"]))
    by_kernels = {frozenset(v): k for k, v in kernels.items()}
    want = {frozenset((r, c["ts"]) for r, c in inst.items()): key
            for key, inst in instances.items()}
    assert set(by_kernels) == set(want)
    arr = ref.arrivals(instances, ref.offsets(instances))
    skew = {s["collective_id"]: s for s in got["skew"]}
    for ks, cid in by_kernels.items():
        s, a = skew[cid], arr[want[ks]]
        assert (s["skew_ns"], s["last_rank"], s["comm_ns"]) == (a["skew"], a["last_rank"],
                                                                a["comm"])
        assert (s["n_ranks"], s["group_size"], s["complete"], s["consistent"], s["pg"],
                s["pg_ranks"]) == (2, 2, True, True, "0", "[0, 1]")
    assert got["unmatched"] == [{"count_star()": 0}]
    # the replayed NCCL kernels are attached to their collective nodes
    nodes = {(x["rank"], x["kernel"]) for x in got["coll_nodes"]}
    assert {k for _, k in nodes} == {
        "torch.ops._c10d_functional.all_gather_into_tensor.default",
        "torch.ops._c10d_functional.reduce_scatter_tensor.default",
        "torch.ops._c10d_functional.all_reduce_.default"}
    assert len(got["coll_nodes"]) == 98


def test_the_injected_delay_comes_back(got):
    """Rank 1 slept 30 ms before its call at ProfilerStep#4: it arrives last at that step's
    first collective by at least the sleep, the stragglers' wait is the reference's, and the
    what-if replay (exactly the reference's) gives its lateness back at that step, the
    costliest of the run."""
    instances, _ = ref.match([c for p in TRACES for c in ref.calls(p)])
    arr = ref.arrivals(instances, ref.offsets(instances))
    _, caused, last = ref.waits(arr)
    assert {x["rank"]: (x["caused_wait_ns"], x["times_last"]) for x in got["stragglers"]} == \
        {r: (caused.get(r, 0), last.get(r, 0)) for r in (0, 1)}
    step, ms = DELAY["profiler_step"], DELAY["ms"]
    first = next(x for x in got["late"] if x["profiler_step"] == step)
    assert first["rank"] == DELAY["rank"] and first["late_ns"] >= ms * 1e6
    w = {(x["step"], x["rank"]): x for x in got["whatif"]}
    assert {k: (x["n_late"], x["saved_ns"]) for k, x in w.items()} == ref.whatif(TRACES)
    ext = [ref.gpu_extents(p) for p in TRACES]
    for (s, _), x in w.items():
        assert x["measured_ns"] == max(e[s] for e in ext)
    x = w[(step, DELAY["rank"])]
    late = sum(y["late_ns"] for y in got["late"]
               if y["profiler_step"] == step and y["rank"] == DELAY["rank"])
    # the replay saves the lateness, and the idle gaps between the step's collectives
    # (launch latency inside the graph: a few us) with it
    assert ms * 1e6 <= late <= x["saved_ns"] <= 1.001 * late
    assert max(w.values(), key=lambda x: x["saved_ns"]) is x


def test_work_moves_only_with_collectives_it_waited_for(tmp_path):
    """The what-if moves a rank's work with an earlier collective than the previous one only
    if the rank's GPU computed nothing when that collective ended (it waited for it). Rank
    0's trace with a 2 us compute kernel added across the end of each collective of
    ProfilerStep#4 before its last two: its all_reduce's ready time (before the previous
    reduce-scatter's end) then moves with none of them, and the step saves little; read
    alike by the reference replay."""
    import gzip

    with gzip.open(TRACES[0], "rt") as f:
        trace = json.load(f)  # floats: the file's numbers written back as they were
    ev = trace["traceEvents"]
    step = next(e for e in ev if e.get("name") == f"ProfilerStep#{DELAY['profiler_step']}"
                and e.get("cat") == "user_annotation")
    corr = next(e["args"]["correlation"] for e in ev if e.get("name") == "cudaGraphLaunch"
                and step["ts"] <= e["ts"] < step["ts"] + step["dur"])
    nccl = sorted((e for e in ev if e.get("cat") == "kernel" and "nccl" in e["name"]
                   and e["args"].get("correlation") == corr), key=lambda e: e["ts"])
    tri = next(e for e in ev if e.get("cat") == "kernel" and e["name"].startswith("triton_"))
    for i, k in enumerate(nccl[:-2]):
        extra = json.loads(json.dumps(tri))
        extra.update(ts=round(k["ts"] + k["dur"] - 1, 3), dur=2.0)
        extra["args"] = {**extra["args"], "correlation": 10**9 + i}  # no launch record
        ev.append(extra)
    (tmp_path / "rank0").mkdir()
    mutated = tmp_path / "rank0" / "rank0.pt.trace.json.gz"
    with gzip.open(mutated, "wt") as f:
        json.dump(trace, f)
    paths = [mutated, TRACES[1]]
    db = tmp_path / "m.duckdb"
    ingest_together(db, *paths)
    with open_database(db, read_only=True) as d:
        got = {(s_, r): (n, v) for s_, r, n, v in d.sql(
            "SELECT step, rank, n_late, saved_ns FROM whatif_stragglers").fetchall()}
    want = ref.whatif(paths)
    assert got == want
    key = (DELAY["profiler_step"], DELAY["rank"])
    assert want[key][1] < 1e6 < ref.whatif(paths, gate=False)[key][1]
