"""Comparing two runs: alignment by content, peak_diff / site_diff / kernel_time_diff on
real pairs, `tlview diff` and its gates.

Pairs (tests/fixtures/diff, README there): the same MLP compiled on CPU with its first
hidden layer 4x wider, or with a 4x batch (gen/make_diff_pair.py); two H100 allocator
snapshots of one training step, one leaking an activation per step; two H100 profiler
traces of a compiled MLP, one with its first layer 4x wider (gen/gpu_diff_pair.py). Every
expected figure is computed here from the dumps (tests/reference_*.py, regular
expressions, json), never by tlview.
"""

from __future__ import annotations

import gzip
import json
import random
import re
import subprocess
from pathlib import Path

import pytest
from tlview.store import align as al
from tlview.store import open_database
from tlview.store.diff import DiffError, ensure_alignment

from tests.conftest import FIXTURES, SEED_000, ingest_into, ingest_together, tlview_main
from tests.reference_ir import reference as reference_ir
from tests.reference_snapshot import live_at as snapshot_live_at
from tests.reference_snapshot import load as load_snapshot
from tests.reference_snapshot import replay
from tests.reference_wrapper import simulate_wrapper, wrapper_modules

DIFF = FIXTURES / "diff"
GEN = FIXTURES / "gen"


# ----- the alignment algorithm, on its own -----

def _lcs_len(a: list[str], b: list[str]) -> int:
    prev = [0] * (len(b) + 1)
    for x in a:
        cur = [0]
        for j, y in enumerate(b):
            cur.append(prev[j] + 1 if x == y else max(prev[j + 1], cur[j]))
        prev = cur
    return prev[-1]


def _check_alignment(a, b, steps):
    assert [s.a_index for s in steps if s.a_index is not None] == list(range(len(a)))
    assert [s.b_index for s in steps if s.b_index is not None] == list(range(len(b)))
    for s in steps:
        if s.method == al.SAME:
            assert a[s.a_index] == b[s.b_index]


def test_small_ranges_match_an_exact_longest_common_subsequence():
    rng = random.Random(7)
    for _ in range(300):
        a = [rng.choice("abcde") for _ in range(rng.randint(0, 40))]
        b = [rng.choice("abcde") for _ in range(rng.randint(0, 40))]
        pairs = al.match(a, b)
        assert len(pairs) == _lcs_len(a, b)
        assert all(a[i] == b[j] for i, j in pairs)
        assert all(p < q for p, q in zip(pairs, pairs[1:]))
        _check_alignment(a, b, al.align(a, b, a, b))


def test_large_sequences_with_edits_keep_every_untouched_node():
    """20,000 signatures of a repeated layer, with 30 insertions, deletions and shape
    changes: every untouched node is matched to its twin (the anchored path, not the LCS
    table)."""
    rng = random.Random(3)
    layer = [f"k{i}|shape{i % 7}" for i in range(40)]
    a = [f"{s}|L{n}" if i % 5 == 0 else s for n in range(500) for i, s in enumerate(layer)]
    b = list(a)
    a_loose = [s.split("|")[0] for s in a]
    edits = sorted(rng.sample(range(len(a)), 30), reverse=True)
    twin = list(range(len(a)))  # twin[i] = b index of a[i], None when deleted
    b_loose = list(a_loose)
    for n, i in enumerate(edits):
        kind = n % 3
        if kind == 0:  # inserted before i
            b.insert(twin[i], f"new{n}")
            b_loose.insert(twin[i], f"new{n}")
            twin = [t + 1 if t is not None and t >= twin[i] else t for t in twin]
        elif kind == 1:  # deleted
            j = twin[i]
            del b[j], b_loose[j]
            twin = [None if t == j else (t - 1 if t is not None and t > j else t) for t in twin]
        else:  # reshaped: same loose signature
            b[twin[i]] = b[twin[i]] + "|grown"
    steps = al.align(a, b, a_loose, b_loose)
    _check_alignment(a, b, steps)
    got = {s.a_index: s.b_index for s in steps if s.a_index is not None}
    for i, t in enumerate(twin):
        assert got[i] == t, (i, t, got[i])
    counts = {m: sum(s.method == m for s in steps) for m in (al.CHANGED, al.INSERTED, al.DELETED)}
    assert counts == {al.CHANGED: 10, al.INSERTED: 10, al.DELETED: 10}


# ----- real pairs in one database -----

def _renamed(text: str) -> str:
    """The same program as another compile names it: buffers, nodes and kernels numbered
    differently (consistently within the file)."""
    text = re.sub(r"\bbuf(\d+)\b", lambda m: f"buf{int(m.group(1)) + 1000}", text)
    text = re.sub(r"\bop(\d+)\b", lambda m: f"op{int(m.group(1)) + 500}", text)
    return re.sub(r"\b((?:cpp|triton)_\w+?)_(\d+)\b",
                  lambda m: f"{m.group(1)}_{int(m.group(2)) + 7}", text)


@pytest.fixture(scope="module")
def db(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("diff")
    twin = root / "cpu_twin"
    twin.mkdir()
    for f in sorted((DIFF / "cpu_base").iterdir()):
        (twin / f.name).write_text(_renamed(f.read_text()))
    seed_twin = root / "seed000_renamed.txt"
    seed_twin.write_text(_renamed(SEED_000.read_text()))
    path = root / "d.duckdb"
    inputs = []
    for name in ("cpu_base", "cpu_wide", "cpu_batch"):
        inputs += sorted((DIFF / name).glob("*"))
    inputs += sorted(twin.glob("*"))
    inputs += [SEED_000, seed_twin, DIFF / "leak0.pickle.gz", DIFF / "leak1.pickle.gz",
               DIFF / "kineto_base.pt.trace.json.gz", DIFF / "kineto_wide.pt.trace.json.gz"]
    ingest_together(path, *inputs)
    return path


def _tid(db, fmt: str, name: str, source: str) -> int:
    return db.sql("SELECT timeline_id FROM timelines WHERE format = ? AND name LIKE ? "
                  "AND source_path LIKE ?", [fmt, f"%{name}%", f"%{source}%"]).fetchone()[0]


def _pairs(db):
    """(format, graph) -> {variant: timeline id} for the CPU compiles."""
    out = {}
    for fmt, graph in (("inductor_ir", "0_forward"), ("inductor_ir", "0_backward"),
                       ("inductor_wrapper", "0_forward"), ("inductor_wrapper", "0_backward")):
        out[fmt, graph] = {v: _tid(db, fmt, graph, f"/{v}/") for v in
                           ("cpu_base", "cpu_wide", "cpu_batch", "cpu_twin")}
    return out


def _rows(db, sql, params=()):
    cur = db.sql(sql, list(params))
    cols = [d[0] for d in cur.description]
    return [dict(zip(cols, r)) for r in cur.fetchall()]


def test_renamed_compiles_align_fully_to_their_twins(db):
    """Two compiles of one program, nodes, buffers and kernels renumbered: 100% of the
    steps align to their twin (same step), method same."""
    with open_database(db) as d:
        pairs = [(p["cpu_base"], p["cpu_twin"]) for p in _pairs(d).values()]
        pairs.append((_tid(d, "inductor_ir", "000_", "000_"),
                      _tid(d, "inductor_ir", "seed000_renamed", "renamed")))
        for a, b in pairs:
            info = ensure_alignment(d, a, b)
            n = d.sql("SELECT n_steps FROM timelines WHERE timeline_id = ?", [a]).fetchone()[0]
            assert (info.a_items, info.b_items, info.same) == (n, n, n), info
            rows = d.sql("SELECT a_step, b_step, method FROM alignments "
                         "WHERE a_timeline_id = ? AND b_timeline_id = ? ORDER BY pos",
                         [a, b]).fetchall()
            assert rows == [(k, k, "same") for k in range(n)]
            # renamed names really differ: the alignment did not match by name
            names = d.sql("SELECT count(*) FROM nodes x JOIN nodes y USING (step, node) "
                          "WHERE x.timeline_id = ? AND y.timeline_id = ?", [a, b]).fetchone()[0]
            assert names < n


def _ir_output_sizes(path: Path) -> list[list[str]]:
    """Per top-level IR node (file order), the size= of each output it writes."""
    text = path.read_text()
    out = []
    for m in re.finditer(r"^(\w+): \w+\([^()]*\)$(.*?)(?=^\w+: \w+\([^()]*\)$|\Z)", text,
                         re.S | re.M):
        sizes = re.findall(r"^    \w+\.layout = \w+\('[^']*', torch\.\w+, size=(\[[^\]]*\])",
                           m.group(2), re.M)
        out.append(sorted(sizes))
    return out


@pytest.mark.parametrize("variant", ["cpu_wide", "cpu_batch"])
@pytest.mark.parametrize("graph", ["0_forward", "0_backward"])
def test_changed_compiles_name_the_changed_nodes_and_nothing_else(db, variant, graph):
    """The nodes not aligned as `same` are exactly those whose outputs' sizes differ (an
    independent reading of the two IR files); none is inserted or removed, each is its
    twin with new shapes (`changed`)."""
    base = _ir_output_sizes(DIFF / "cpu_base" / f"{graph}.ir_post_fusion.txt")
    other = _ir_output_sizes(DIFF / variant / f"{graph}.ir_post_fusion.txt")
    assert len(base) == len(other)
    differ = [k for k, (x, y) in enumerate(zip(base, other)) if x != y]
    assert differ  # the change reached this graph
    with open_database(db) as d:
        p = _pairs(d)["inductor_ir", graph]
        ensure_alignment(d, p["cpu_base"], p[variant])
        rows = d.sql("SELECT a_step, b_step, method FROM timeline_diff(?, ?) ORDER BY pos",
                     [p["cpu_base"], p[variant]]).fetchall()
    assert [r[0] for r in rows] == [r[1] for r in rows] == list(range(len(base)))
    assert [r[0] for r in rows if r[2] != "same"] == differ
    assert {r[2] for r in rows if r[2] != "same"} == {"changed"}


def _live_at_peak(ref: dict) -> dict[str, int]:
    s = ref["peak_step"]
    return {n: b["bytes"] for n, b in ref["buffers"].items()
            if b["alloc"] <= s <= b["last"] and b["bytes"] > 0}


@pytest.mark.parametrize("variant", ["cpu_wide", "cpu_batch"])
@pytest.mark.parametrize("graph", ["0_forward", "0_backward"])
def test_ir_peak_diff_rows_sum_to_the_difference_of_the_peaks(db, variant, graph):
    ra = reference_ir(DIFF / "cpu_base" / f"{graph}.ir_post_fusion.txt")
    rb = reference_ir(DIFF / variant / f"{graph}.ir_post_fusion.txt")
    with open_database(db) as d:
        p = _pairs(d)["inductor_ir", graph]
        ensure_alignment(d, p["cpu_base"], p[variant])
        rows = _rows(d, "SELECT * FROM peak_diff(?, ?)", [p["cpu_base"], p[variant]])
    assert sum(r["delta_bytes"] for r in rows) == rb["peak_bytes"] - ra["peak_bytes"]
    assert rows[0]["a_peak_bytes"] == ra["peak_bytes"]
    assert rows[0]["b_peak_bytes"] == rb["peak_bytes"]
    # every buffer live at either peak is in exactly one row, with its bytes
    assert {r["a_buffer"]: r["a_bytes"] for r in rows if r["a_buffer"]} == _live_at_peak(ra)
    assert {r["b_buffer"]: r["b_bytes"] for r in rows if r["b_buffer"]} == _live_at_peak(rb)
    for r in rows:
        assert r["delta_bytes"] == (r["b_bytes"] or 0) - (r["a_bytes"] or 0)
        if r["status"] in ("grown", "shrunk", "same"):
            assert r["matched_by"] == "aligned"  # the same node's output, resized or not


@pytest.mark.parametrize("graph", ["0_forward", "0_backward"])
def test_wrapper_peak_diff_of_the_wider_layer(db, graph):
    """Output code: Σ delta = the difference of the simulated peaks, and what grew is
    the wide layer's tensors (a dimension of 1024 = 4 x 256)."""
    (ma,) = wrapper_modules(DIFF / "cpu_base" / f"{graph}.output_code.py")
    (mb,) = wrapper_modules(DIFF / "cpu_wide" / f"{graph}.output_code.py")
    with open_database(db) as d:
        p = _pairs(d)["inductor_wrapper", graph]
        ensure_alignment(d, p["cpu_base"], p["cpu_wide"])
        rows = _rows(d, "SELECT * FROM peak_diff(?, ?)", [p["cpu_base"], p["cpu_wide"]])
    assert sum(r["delta_bytes"] for r in rows) == simulate_wrapper(mb) - simulate_wrapper(ma)
    grown = [r for r in rows if r["delta_bytes"] > 0]
    assert grown and all("1024" in r["what"] for r in grown)


# ----- allocator snapshots: the leak -----

def _leak_line() -> str:
    """gpu_diff_pair.py's line that makes the activation `leak1` keeps (read here from the
    script that made the snapshots)."""
    lines = (GEN / "gpu_diff_pair.py").read_text().splitlines()
    (k,) = [i for i, ln in enumerate(lines, 1) if ln.strip() == "h = model[1](model[0](x))"]
    return f"gpu_diff_pair.py:{k}:step"


def test_leak_peak_diff_names_the_leaked_activations(db):
    sa, sb = load_snapshot(DIFF / "leak0.pickle.gz"), load_snapshot(DIFF / "leak1.pickle.gz")
    ra, rb = replay(sa), replay(sb)
    live_a = snapshot_live_at(sa, ra["peak_index"])
    live_b = snapshot_live_at(sb, rb["peak_index"])
    with open_database(db) as d:
        a = _tid(d, "cuda_snapshot", "leak0", "leak0")
        b = _tid(d, "cuda_snapshot", "leak1", "leak1")
        ensure_alignment(d, a, b)
        rows = _rows(d, "SELECT * FROM peak_diff(?, ?)", [a, b])
        sites = _rows(d, "SELECT * FROM site_diff(?, ?)", [a, b])
    assert sum(r["delta_bytes"] for r in rows) == rb["peak"] - ra["peak"] == 16_777_216
    assert {int(r["a_buffer"], 16): r["a_bytes"] for r in rows if r["a_buffer"]} == live_a
    assert {int(r["b_buffer"], 16): r["b_bytes"] for r in rows if r["b_buffer"]} == live_b
    changed = [r for r in rows if r["delta_bytes"] != 0]
    act = 256 * 4096 * 4  # the leaked activation, fp32 [256, 4096]
    assert [(r["status"], r["delta_bytes"]) for r in changed] == [("new", act)] * 4
    leak = _leak_line()
    # three made in the window at the leaking line, the warm-up's before recording began
    assert sorted(r["what"].endswith(leak) for r in changed) == [False, True, True, True]
    assert {(s["site"].endswith(leak) or s["site"], s["delta_bytes"])
            for s in sites if s["delta_bytes"]} == {
        (True, 3 * act), ("<no frames: made before the window>", act)}
    assert sum(s["delta_bytes"] for s in sites) == rb["peak"] - ra["peak"]


def test_leak_alignment_removes_only_the_leaked_frees(db):
    """Aligned entry by entry, leak1 lacks the free of each step's activation (4 steps:
    free_requested and free_completed) and adds the segment the leak needed."""
    with open_database(db) as d:
        a = _tid(d, "cuda_snapshot", "leak0", "leak0")
        b = _tid(d, "cuda_snapshot", "leak1", "leak1")
        ensure_alignment(d, a, b)
        rows = _rows(d, "SELECT * FROM timeline_diff(?, ?) WHERE method <> 'same'", [a, b])
    deleted = [r for r in rows if r["method"] == "deleted"]
    assert sorted(r["a_node"] for r in deleted) == (
        ["free_completed 4194304"] * 4 + ["free_requested 4194304"] * 4)
    assert [r["b_node"].split()[0] for r in rows if r["method"] == "inserted"] == ["segment_alloc"]
    assert not [r for r in rows if r["method"] == "changed"]


# ----- profiler traces: the wider layer's kernels -----

def _gpu_total_ns(path: Path) -> int:
    """Σ GPU event durations (kernels, copies, fills) in ns, read from the trace itself."""
    with gzip.open(path, "rt") as f:
        events = json.load(f)["traceEvents"]
    from decimal import Decimal

    return int(sum(Decimal(str(e["dur"])) * 1000 for e in events if e.get("ph") == "X"
                   and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")))


def test_kernel_time_diff_names_the_wider_layers_gemms(db):
    ta = _gpu_total_ns(DIFF / "kineto_base.pt.trace.json.gz")
    tb = _gpu_total_ns(DIFF / "kineto_wide.pt.trace.json.gz")
    with open_database(db) as d:
        a = _tid(d, "kineto", "kineto_base", "kineto_base")
        b = _tid(d, "kineto", "kineto_wide", "kineto_wide")
        ensure_alignment(d, a, b)
        rows = _rows(d, "SELECT * FROM kernel_time_diff(?, ?)", [a, b])
    assert sum(r["a_time_ns"] for r in rows) == ta
    assert sum(r["b_time_ns"] for r in rows) == tb
    assert sum(r["delta_ns"] for r in rows) == tb - ta
    assert abs(sum(r["share"] for r in rows) - 1) < 1e-9
    # the slowdown is the GEMMs (the 4x wider layer's matmuls): the 8 largest changes
    # are all GEMM kernels, and GEMMs account for over 90% of the time added
    gemm = [r for r in rows if "gemm" in (r["a_kernel"] or r["b_kernel"])]
    assert all("gemm" in (r["a_kernel"] or r["b_kernel"]) for r in rows[:8])
    assert sum(r["delta_ns"] for r in gemm) > 0.9 * (tb - ta)


def test_pairs_of_other_kinds_are_refused(db):
    with open_database(db, read_only=True) as d:
        a = _tid(d, "kineto", "kineto_base", "kineto_base")
        b = _tid(d, "cuda_snapshot", "leak0", "leak0")
        with pytest.raises(DiffError, match="not of the same kind"):
            ensure_alignment(d, a, b)


def test_a_read_only_session_aligns_in_temporary_tables(db, tmp_path):
    """The TUI's way: the file is not written, the macros still see the alignment."""
    import shutil

    copy = tmp_path / "ro.duckdb"
    shutil.copy(db, copy)
    before = copy.read_bytes()
    with open_database(copy, read_only=True) as d:
        p = _pairs(d)["inductor_ir", "0_forward"]
        info = ensure_alignment(d, p["cpu_batch"], p["cpu_wide"])
        assert not info.stored
        n = d.sql("SELECT count(*) FROM timeline_diff(?, ?)",
                  [p["cpu_batch"], p["cpu_wide"]]).fetchone()[0]
        assert n == info.a_items
    assert copy.read_bytes() == before


# ----- the command -----

def _tlview(*args: str) -> subprocess.CompletedProcess[str]:
    """`tlview ARGS` in this process, as a finished process (conftest.tlview_main)."""
    return tlview_main(*args)


def _main(capsys, *args: str) -> tuple[int, str, str]:
    """The same command in this process (the checks of options that need no new process)."""
    from tlview.cli import main

    code = main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_cli_diff_report_json_and_gates(db, capsys):
    with open_database(db, read_only=True) as d:
        a = str(_tid(d, "cuda_snapshot", "leak0", "leak0"))
        b = str(_tid(d, "cuda_snapshot", "leak1", "leak1"))
    p = _tlview("diff", a, b, "--db", str(db))
    assert p.returncode == 0, p.stderr
    assert "change +16,777,216 B (16.00 MiB) (+6.95%)" in p.stdout
    assert _leak_line() in p.stdout
    assert "8 removed (A only), 1 inserted (B only)" in p.stdout
    # the gate: +6.95% crosses 5% (exit 1, said on stderr), not 7% nor 16 MiB
    g = _tlview("diff", a, b, "--db", str(db), "--json", "--top", "3",
                "--fail-if-peak-grows", "5%")
    assert g.returncode == 1 and "peak grew by +6.95%" in g.stderr
    out = json.loads(g.stdout)
    assert out["peak"]["delta_bytes"] == 16_777_216 and len(out["peak"]["buffers"]) == 3
    assert out["alignment"]["deleted"] == 8
    assert [x["crossed"] for x in out["gates"]] == [True]
    for ok in ("7%", "16MiB"):
        assert _main(capsys, "diff", a, b, "--db", str(db), "--fail-if-peak-grows", ok)[0] == 0
    assert _main(capsys, "diff", a, b, "--db", str(db), "--fail-if-peak-grows", "16000000")[0] == 1
    # no measured times in snapshots: the time gate cannot be judged
    code, _, err = _main(capsys, "diff", a, b, "--db", str(db), "--fail-if-time-grows", "1%")
    assert code == 2 and "no measured times" in err
    with pytest.raises(SystemExit) as e:
        _main(capsys, "diff", a, b, "--db", str(db), "--fail-if-peak-grows", "lots")
    assert e.value.code == 2 and "expected a percentage" in capsys.readouterr().err


def test_cli_diff_time_gate_and_names(db, capsys):
    p = _tlview("diff", "kineto_base.pt.trace.json.gz", "kineto_wide.pt.trace.json.gz",
                "--db", str(db), "--json", "--fail-if-time-grows", "150%")
    assert p.returncode == 1, p.stderr
    out = json.loads(p.stdout)
    ta = _gpu_total_ns(DIFF / "kineto_base.pt.trace.json.gz")
    tb = _gpu_total_ns(DIFF / "kineto_wide.pt.trace.json.gz")
    assert (out["time"]["a_ns"], out["time"]["b_ns"]) == (ta, tb)
    assert out["gates"][0]["value"] == pytest.approx((tb - ta) / ta)
    assert _main(capsys, "diff", "kineto_base.pt.trace.json.gz", "kineto_wide.pt.trace.json.gz",
                 "--db", str(db), "--fail-if-time-grows", "160%")[0] == 0
    code, _, err = _main(capsys, "diff", "0_forward", "kineto_wide.pt.trace.json.gz",
                         "--db", str(db))
    assert code == 2 and "timelines are named '0_forward'" in err
    code, _, err = _main(capsys, "diff", "nothing-here", "1", "--db", str(db))
    assert code == 2 and "no timeline 'nothing-here'" in err


def test_a_changed_timeline_has_its_stored_alignment_recomputed(tmp_path, capsys):
    """`sql --write` that changes a timeline's events recomputes the stored alignments
    it is in (they are caches of both timelines' events)."""
    from tlview.cli import main

    path = tmp_path / "w.duckdb"
    ingest_into(path, DIFF / "cpu_base" / "0_forward.ir_post_fusion.txt",
                DIFF / "cpu_wide" / "0_forward.ir_post_fusion.txt")
    with open_database(path) as d:
        ensure_alignment(d, 1, 2)
    assert main(["sql", "--db", str(path), "--write", "DELETE FROM events_node_scheduled "
                 "WHERE timeline_id = 2 AND step = 9"]) == 0
    capsys.readouterr()
    with open_database(path, read_only=True) as d:
        row = d.query("alignment_pair", 1, 2)[0]
        n = d.sql("SELECT count(*) FROM alignments WHERE b_step = 9").fetchone()[0]
    assert row[2:4] == (10, 9) and n == 0  # a_items, b_items: the step is gone


def test_xla_peak_diff_counts_shared_allocation_bytes_once(tmp_path):
    """XLA values share an allocation's bytes: at each peak every byte range is held by
    one value, so the rows still sum exactly to the difference of the peaks (the
    reference's union of byte ranges, tests/reference_xla.py)."""
    from tests.reference_xla import reference as reference_xla

    xla = FIXTURES / "xla"
    a_file = next(xla.glob("module_0004.*-buffer-assignment.txt"))
    b_file = next(xla.glob("module_0032.*-buffer-assignment.txt"))
    path = tmp_path / "x.duckdb"
    a, b = ingest_into(path, a_file, b_file)
    with open_database(path) as d:
        ensure_alignment(d, a, b)
        rows = _rows(d, "SELECT * FROM peak_diff(?, ?)", [a, b])
    ra, rb = reference_xla(a_file), reference_xla(b_file)
    assert sum(r["delta_bytes"] for r in rows) == rb["peak_bytes"] - ra["peak_bytes"]
    assert sum(r["a_bytes"] or 0 for r in rows) == ra["peak_bytes"]
    assert sum(r["b_bytes"] or 0 for r in rows) == rb["peak_bytes"]


# ----- what the report says when a side has no times, or the two hardly align -----

GPU_STEP = FIXTURES / "torch_trace" / "gpu_step"


@pytest.fixture(scope="module")
def measured_db(tmp_path_factory) -> Path:
    """The H100 step's forward graphs (scheduler IR and output code of two identical
    blocks) measured by its trace, beside seed 002, an IR nothing measured."""
    from tests.conftest import SEED_002

    path = tmp_path_factory.mktemp("measured") / "m.duckdb"
    debug = GPU_STEP / "debug"
    ingest_into(path, debug / "model__0_forward_1.0" / "ir_post_fusion.txt",
                debug / "model__0_forward_1.0" / "output_code.py",
                debug / "model__1_forward_4.1" / "ir_post_fusion.txt",
                debug / "model__1_forward_4.1" / "output_code.py",
                GPU_STEP / "step.pt.trace.json.gz", SEED_002)
    return path


def _ir_ids(path: Path) -> tuple[str, str, str]:
    """(seed 002, the first block's IR, the second block's IR) timeline ids."""
    with open_database(path, read_only=True) as d:
        def tid(src: str) -> str:
            return str(_tid(d, "inductor_ir", "", src))
        return tid("002_"), tid("model__0_forward"), tid("model__1_forward")


@pytest.fixture(scope="module")
def measured_diff(measured_db):
    """`tlview diff ARGS --db measured_db --no-store` in this process, each distinct command
    once for the module: --no-store leaves the file as it was (the alignment is made in
    temporary tables), so a command run again prints the same (each costs seconds of
    DuckDB's planning). Returns (exit status, stdout, stderr)."""
    runs: dict[tuple[str, ...], tuple[int, str, str]] = {}

    def run(*args: str) -> tuple[int, str, str]:
        if args not in runs:
            p = tlview_main("diff", *args, "--db", str(measured_db), "--no-store")
            runs[args] = (p.returncode, p.stdout, p.stderr)
        return runs[args]

    return run


def test_an_unmeasured_side_is_said_and_the_time_gate_refuses(measured_db, measured_diff):
    """Seed 002 has no trace: the report says A is not measured (no '0 ns -> ...', no
    kernel list against nothing) and the time gate exits 2 with why, not 0 in silence."""
    seed, first, _ = _ir_ids(measured_db)
    code, out, err = measured_diff(seed, first)
    assert code == 0, err
    (line,) = [x for x in out.splitlines() if x.startswith("measured time")]
    assert line.startswith(f"measured time: A (timeline {seed}) has none (no trace "
                           "attached, no GPU events): nothing to compare; B: ")
    assert "0 ns ->" not in out and "None" not in out
    code, out, err = measured_diff(seed, first, "--json", "--fail-if-time-grows", "5%")
    assert code == 2
    with open_database(measured_db, read_only=True) as d:  # A by its unique title
        (title,) = d.sql("SELECT title FROM timelines WHERE timeline_id = ?", [int(seed)]).fetchone()
    assert "002_0926b2a0123efc8b" in title
    assert (f"--fail-if-time-grows: A (timeline {seed} {title}) has no "
            "time (no measured times: no trace attached, no GPU events): nothing to compare"
            in err)
    code, out, _ = measured_diff(seed, first, "--json")
    t = json.loads(out)["time"]
    assert (t["a_ns"], t["a_measured"], t["b_measured"], t["kernels"]) == (None, False, True, [])


def test_timelines_that_hardly_align_are_warned(measured_db, measured_diff):
    """Seed 002 (4 nodes) against a transformer block's forward: different programs."""
    seed, first, second = _ir_ids(measured_db)
    code, out, _ = measured_diff(seed, first, "--json")
    al_ = json.loads(out)["alignment"]
    aligned, larger = al_["same"] + al_["changed"], max(al_["a_items"], al_["b_items"])
    assert aligned * 2 < larger
    _, out, _ = measured_diff(seed, first)
    assert (f"  note: only {aligned} of {larger} steps align (same or changed): different "
            "programs? The rows below pair unrelated steps.") in out.splitlines()
    _, out, _ = measured_diff(first, second)
    assert "note: only" not in out


def test_kernels_without_a_name_and_an_unchanged_peak(measured_db, measured_diff):
    """The two identical blocks: IR nodes measured without a kernel name are said so
    (not 'None'); an unchanged peak is 'no change', with no 'explained by:' before
    nothing."""
    _, first, second = _ir_ids(measured_db)
    _, out, _ = measured_diff(first, second)
    lines = out.splitlines()
    assert "None" not in out
    assert any(x.endswith("(nodes without a kernel name)") for x in lines)
    assert "  peak unchanged" in lines
    assert not any(x.endswith("explained by:") and i + 1 < len(lines)
                   and not lines[i + 1].startswith("  ") for i, x in enumerate(lines))


def test_an_absolute_time_gate_says_the_growth_once(db, capsys):
    ta = _gpu_total_ns(DIFF / "kineto_base.pt.trace.json.gz")
    tb = _gpu_total_ns(DIFF / "kineto_wide.pt.trace.json.gz")
    code, _, err = _main(capsys, "diff", "kineto_base.pt.trace.json.gz",
                         "kineto_wide.pt.trace.json.gz", "--db", str(db), "--no-store",
                         "--fail-if-time-grows", "200us")
    assert code == 1
    assert f"tlview: time grew by {(tb - ta) / 1e6:,.3f} ms, more than 200.0 us" in err.splitlines()
