"""TORCH_TRACE ingest at scale: a 100 MB structured trace log made from the real ones.

Input (under bench/out/, made here from the committed fixtures, never random text):
``torch_trace_100MB.log``: the four TORCH_TRACE logs of tests/fixtures/torch_trace
(cpu_step, gpu_step, two_ranks' two ranks) concatenated and repeated, each copy a new
compile (its records' frame_id shifted, the envelope re-written; payloads untouched, so
every md5 still holds) until the size is reached. Rank fields are dropped so that the
log is one process's.

Measured in the same run: a bare Python line scan of the file (the floor of a Python
parser), the database side alone (the same rows prebuilt, bench_wrapper.floor), tlview's
parse alone (records counted, no database) and the whole ingest, each
with the compiled core and with the pure-Python parsers (``TLVIEW_NATIVE=0``, the previous
release's path), and the digests of the rows both wrote (equal). Beside them tlparse
(the Rust tool TORCH_TRACE users run: ``pip install tlparse``, the dev extra; its binary
on PATH, beside this Python, or ``TLVIEW_TLPARSE``) on the same log, its HTML report
written as by default; issue 28's target is tlview's whole ingest >= 5x faster than it.
Size override: TLVIEW_BENCH_TORCH_TRACE_MB (comma list, default 10,50,100).
"""

from __future__ import annotations

import gzip
import json
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

from .bench_wrapper import compare_modes, floor
from .harness import OUT, Result, run_child, scan_floors

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "torch_trace"
OUT_DIR = ROOT / "bench" / "out"
SIZES_MB = [float(x) for x in os.environ.get("TLVIEW_BENCH_TORCH_TRACE_MB", "10,50,100").split(",")]
SOURCES = ["cpu_step/trace.log.gz", "gpu_step/trace.log.gz",
           "two_ranks/dedicated_log_torch_trace_rank_0.log.gz",
           "two_ranks/dedicated_log_torch_trace_rank_1.log.gz"]


def _shifted(lines: list[str], shift: int) -> list[str]:
    out = []
    for line in lines:
        j = line.find("] {")
        if j < 0 or line.startswith("\t"):
            out.append(line)
            continue
        env = json.loads(line[j + 2:])
        env.pop("rank", None)
        if "frame_id" in env:
            env["frame_id"] += shift
        out.append(line[:j + 2] + json.dumps(env))
    return out


def scaled_log(target_mb: float) -> Path:
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    out = OUT_DIR / f"torch_trace_{target_mb:g}MB.log"
    if out.exists() and out.stat().st_size >= target_mb * 1e6:
        return out
    texts = []
    for src in SOURCES:
        with gzip.open(FIXTURES / src, "rt") as f:
            texts.append(f.read().split("\n"))
    written = 0
    k = 0
    with open(out, "w") as f:
        while written < target_mb * 1e6:
            for lines in texts:
                chunk = "\n".join(ln for ln in _shifted(lines, 1000 * k) if ln) + "\n"
                f.write(chunk)
                written += len(chunk.encode())
            k += 1
    return out


def parse_only(path: str) -> int:
    """tlview's TORCH_TRACE parser alone: every record made, none written."""
    from tlview.ingest.torch_trace import parse_file

    return sum(1 for _ in parse_file(path))


def tlparse_binary() -> str | None:
    """tlparse's binary: ``TLVIEW_TLPARSE``, else on PATH, else beside this Python (a
    venv's bin/ that is not on PATH); None where there is none."""
    named = os.environ.get("TLVIEW_TLPARSE")
    if named:
        return named
    beside = Path(sys.executable).with_name("tlparse")
    return shutil.which("tlparse") or (str(beside) if beside.exists() else None)


def tlparse_run(binary: str, path: str, out: str) -> dict:
    """tlparse on ``path``, its report written into ``out`` (made anew): its own wall
    time (the removal of an earlier report and the version query left out), and its CPU
    time and peak RSS, read from this process's children's rusage (the child's own are
    Python's, not tlparse's)."""
    shutil.rmtree(out, ignore_errors=True)
    t0 = time.perf_counter()
    subprocess.run([binary, path, "-o", out, "--overwrite", "--no-browser"], check=True,
                   capture_output=True)
    wall = time.perf_counter() - t0
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)  # before --version runs
    version = subprocess.run([binary, "--version"], capture_output=True, text=True).stdout
    return {"wall_s": wall, "cpu_s": ru.ru_utime + ru.ru_stime,
            "peak_rss_mb": ru.ru_maxrss / 1024, "version": version.strip()}


def vs_tlparse(path: Path, label: str, ingest: Result | None) -> list[Result]:
    """tlparse's row, and tlview's whole ingest's time as a ratio of it (issue 28's
    target: >= 5x faster); nothing, said so, where tlparse is not installed."""
    binary = tlparse_binary()
    if binary is None:
        print(f"{label}: tlparse not found (pip install tlparse, or TLVIEW_TLPARSE): "
              "its baseline left out", file=sys.stderr, flush=True)
        return []
    run = run_child("bench.bench_torch_trace:tlparse_run", binary, str(path),
                    str(OUT / "tlparse_out"))
    got = run["result"]
    wall = got["wall_s"]
    print(f"  {label:<24} tlparse wall {wall:7.2f} s  CPU {got['cpu_s']:7.2f} s  "
          f"peak RSS {got['peak_rss_mb']:5.0f} MB", file=sys.stderr, flush=True)
    ratios = {}
    if ingest is not None:
        ratios["tlview ingest faster by"] = wall / ingest.wall_s
    return [Result(f"{got['version']} (baseline, its HTML report)", label,
                   path.stat().st_size, wall, got["peak_rss_mb"], baseline=ratios,
                   extra={"cpu_s": got["cpu_s"]})]


def main() -> list[Result]:
    OUT.mkdir(parents=True, exist_ok=True)
    results = []
    for mb in SIZES_MB:
        path = scaled_log(mb)
        label = f"TORCH_TRACE {mb:g} MB"
        scan, floors = scan_floors(path, label)
        results.extend(floors)
        results.append(floor(path, label))
        modes = compare_modes(path, label, "torch_trace", scan)
        results.extend(modes)
        ingest = next((r for r in modes if r.name.startswith("tlview ingest")
                       and "compiled core" in r.name), None)
        results.extend(vs_tlparse(path, label, ingest))
    return results
