"""Torch-log ingest at scale: a 50 MB TORCH_LOGS=aot_graphs,output_code log made from real ones.

Inputs (under bench/out/, made here from the committed fixtures, never random text):
* ``torch_glog_50MB.log``: the four real CPU torch 2.13 logs of tests/fixtures/torch in
  torch's default glog dress, repeated with renamed AOT ids / graph numbers (each copy is
  a new compile: ``['12_forward']``, ``Forward graph 12``) until 50 MB;
* ``torch_short_50MB.log``: the same with the ``TORCH_LOGS_FORMAT=short`` logs and seed 004.

Baseline in the same run: a bare Python line scan of the same file.
Size override: TLVIEW_BENCH_WRAPPER_MB (default 50).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from .harness import OUT, Result, run_child

ROOT = Path(__file__).resolve().parent.parent
TORCH = ROOT / "tests" / "fixtures" / "torch"
SEED_004 = ROOT / "tests" / "fixtures" / "seeds" / "004_11560de70615f418.txt"
OUT_DIR = ROOT / "bench" / "out"
SIZES_MB = [float(x) for x in os.environ.get("TLVIEW_BENCH_WRAPPER_MB", "10,50,100").split(",")]
PROGRAMS = ["mlp_train", "transformer_block", "conv_net", "inplace_mutation"]

_AOT = re.compile(r"(AOT ID: \[')(\d+)(_\w+'\])")
_GRAPH = re.compile(r"(===== \w+ graph )(\d+)( =====)")


def scaled_log(dress: str, target_mb: float) -> Path:
    """Real logs repeated, each copy renumbered as a new compile, up to ``target_mb``."""
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    out = OUT_DIR / f"torch_{dress}_{target_mb:g}MB.log"
    if out.exists() and out.stat().st_size >= target_mb * 1e6:
        return out
    if dress == "glog":
        sources = [TORCH / f"{p}.log" for p in PROGRAMS]
    else:
        sources = [TORCH / f"{p}.short.log" for p in PROGRAMS] + [SEED_004]
    texts = [p.read_text() for p in sources]
    written = 0
    k = 0
    with open(out, "w") as f:
        while written < target_mb * 1e6:
            for text in texts:
                chunk = _AOT.sub(lambda m, k=k: f"{m[1]}{k}{m[3]}", text)
                chunk = _GRAPH.sub(lambda m, k=k: f"{m[1]}{k}{m[3]}", chunk)
                f.write(chunk)
                written += len(chunk)
                k += 1
    return out


def main() -> list[Result]:
    OUT.mkdir(parents=True, exist_ok=True)
    results = []
    for dress, mb in [(d, mb) for d in ("glog", "short") for mb in SIZES_MB]:
        path = scaled_log(dress, mb)
        size = path.stat().st_size
        label = f"torch log ({dress}) {mb:g} MB"
        scan = run_child("bench.harness:line_scan", str(path))
        ing = run_child("bench.harness:ingest_file", str(path), str(OUT / "wrapper.duckdb"))
        results.append(Result("line scan (baseline)", label, size, scan["wall_s"],
                              scan["peak_rss_mb"]))
        results.append(Result(
            "tlview ingest torch_log", label, size, ing["wall_s"], ing["peak_rss_mb"],
            events=ing["result"], baseline={"vs line scan": ing["wall_s"] / scan["wall_s"]},
        ))
    return results
