"""The one line per timeline that `tlview ingest` and `tlview info` print.

All timelines of a range come from ONE query (``timeline_summaries``): one query per
timeline made `info` take minutes on thousands of timelines (docs/benchmarks.md).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tlview.store import Database
from tlview.store.fmt import exact_bytes
from tlview.store.words import rank_ranges

from .snapshot_summary import print_snapshot_summary

MEASURED_FORMATS = ("kineto", "jax_trace")
LOG_FORMAT = "torch_trace"
JAX_PROFILE_FORMAT = "jax_memory_profile"
ALL_IDS = (0, 2**31 - 1)  # timeline_id is an INTEGER
HANG_FORMATS = {"flight_recorder": "a rank's Flight Recorder dump (hang_verdict, "
                                   "collective_progress)",
                "stack_dump": "a process's Python stacks (hang_stacks)"}


def print_runs(db: Database, out: Callable[[str], None] = print) -> None:
    """Two lines per run: what it holds (the ``runs`` view), and its peak, saying which
    figure it is."""
    for r in db.query_dicts("run_list"):
        out(run_line(r))
        if r["peak_bytes"] is not None:
            out(f"  peak {exact_bytes(r['peak_bytes'])} {r['peak_what']}, timeline "
                f"{r['peak_timeline_id']}")


def run_line(r: dict[str, Any]) -> str:
    """``run 1 gpu_step: /path; 11 sources (4 output_code.py, ...); ...``."""
    arts = ", ".join(f"{a['files']} {a['kind']}" for a in r["artifacts"] or [])
    parts = [f"run {r['run_id']} {r['name']}: {r['root']}",
             f"{r['n_sources']} source{'s' if r['n_sources'] != 1 else ''} ({arts})",
             f"{r['n_timelines']} timelines, {r['n_graphs']} compiled graph"
             f"{'s' if r['n_graphs'] != 1 else ''}"]
    if r["ranks"]:
        parts.append(f"ranks {rank_ranges(r['ranks'])}")
    versions = [f"{k} {r[c]}" for k, c in (("torch", "torch_version"),
                                           ("triton", "triton_version"),
                                           ("CUDA", "cuda_version"), ("NCCL", "nccl_version"))
                if r[c]]
    if versions:
        parts.append(", ".join(versions))
    return "; ".join(parts)


def print_summaries(db: Database, first: int = ALL_IDS[0], last: int = ALL_IDS[1],
                    out: Callable[[str], None] = print) -> None:
    """The summary of every timeline with id in [first, last], in id order."""
    print_summary_rows(db, db.query_dicts("timeline_summaries", first, last), out)


def print_summary_rows(db: Database, rows: list[dict[str, Any]],
                       out: Callable[[str], None] = print) -> None:
    """The summaries of ``rows`` of ``timeline_summaries`` (one query for many files'
    timelines, printed file by file)."""
    replayed = [r["timeline_id"] for r in rows if r.get("n_replay_kernels")]
    phases = {}  # only traces with CUDA-graph replays pay for this, in one query
    if replayed:
        phases = {p["timeline_id"]: p for p in db.query_dicts("replay_phases", min(replayed),
                                                              max(replayed))}
    for r in rows:
        if r.get("n_replay_kernels"):
            r = {**r, **phases.get(r["timeline_id"], {})}
        if r["format"] == "cuda_snapshot":
            print_snapshot_summary(db, r, out)
            for w in r["warnings"]:
                out(f"  note: {w}")
        else:
            out(summary_text(r))


def summary_text(r: dict[str, Any]) -> str:
    head = (f"timeline {r['timeline_id']} {r['name']} [{r['format']}"
            f"{', ' + r['device'] if r['device'] else ''}]: ")
    if r["format"] in MEASURED_FORMATS:
        return head + _measured(r)
    if r["format"] in HANG_FORMATS:
        return head + HANG_FORMATS[r["format"]]
    if r["format"] == LOG_FORMAT:  # the log's own timeline holds its records, no schedule
        lines = [head + "a TORCH_TRACE log: a source of its run's graphs (listed on their "
                 "own lines) and compile events, not a schedule"]
        return "\n".join(lines + [f"  note: {w}" for w in r["warnings"]])
    if r["format"] == JAX_PROFILE_FORMAT:  # one instant: its live bytes, said as peaks says
        return "\n".join([head + f"{r['n_buffers']} buffer samples live at the dump: "
                           f"{exact_bytes(r['peak_bytes'] or 0)}, live bytes of a JAX memory "
                           "profile (on a GPU what memory_stats()['bytes_in_use'] counts)"]
                          + [f"  note: {w}" for w in r["warnings"]])
    line = head + f"{r['n_steps']} steps, {r['n_buffers']} buffers, {r['n_inputs']} inputs"
    if r["peak_bytes"] is not None:
        line += f"; peak {exact_bytes(r['peak_bytes'])} at step {r['peak_step']} ({r['peak_node']})"
    else:
        line += "; liveness unknown"
    lines = [line]
    if r["n_unknown_bytes"]:
        lines.append(f"  {r['n_unknown_bytes']} buffers have symbolic or unknown sizes: "
                     "not counted in the peak (see buffers.size_expr)")
    lines += [f"  note: {w}" for w in r["warnings"]]
    return "\n".join(lines)


def _measured(r: dict[str, Any]) -> str:
    """A profiler trace: events, GPU kernels, and the comm overlap."""
    line = (f"{r['n_events']:,} events, {r['n_kernels']:,} GPU kernels "
            f"({r['kernel_ns'] / 1e6:,.3f} ms)")
    if r["n_comm"]:
        pct = ", ".join(f"{float(p):.2f}%" for p in r["overlap_pct"] or [])
        line += f", {r['n_comm']:,} communication kernels, overlapped by compute {pct}"
    if r.get("n_replay_kernels"):
        after = r.get("after_capture") or 0
        line += (f"; {r['n_replay_kernels']:,} of them from {r['n_replays']:,} CUDA-graph "
                 f"replays{f' ({after:,} right after its capture)' if after else ''}, "
                 f"{r.get('attached') or 0:,} of those attached to compiled nodes")
        calls = [f"{n:,} {what}" for n, what in (
            (r.get("captures"), "captured a CUDA graph"),
            (r.get("warmups"), "warmed one up (kernels launched one by one)")) if n]
        if calls:
            line += "; compiled calls: " + ", ".join(calls)
    return line
