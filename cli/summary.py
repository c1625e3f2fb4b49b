"""The lines per run and timeline that `tlview ingest` and `tlview info` print.

All timelines of a range come from ONE query (``timeline_summaries``): one query per
timeline made `info` take minutes on thousands of timelines (docs/benchmarks.md).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import PurePath
from typing import Any

from tlview.store import Database
from tlview.store.fmt import exact_bytes
from tlview.store.words import artifact_counts, rank_ranges

from .snapshot_summary import print_snapshot_summary

MEASURED_FORMATS = ("kineto", "jax_trace")
LOG_FORMAT = "torch_trace"
JAX_PROFILE_FORMAT = "jax_memory_profile"
ALL_IDS = (0, 2**31 - 1)  # timeline_id is an INTEGER
HANG_FORMATS = {"flight_recorder": "a rank's Flight Recorder dump (hang_verdict, "
                                   "collective_progress)",
                "stack_dump": "a process's Python stacks (hang_stacks)"}


def print_info(db: Database, out: Callable[[str], None] = print) -> None:
    """`tlview info`'s listing: per run what it holds and its peak, then its timelines."""
    print_by_run(db, db.query_dicts("run_list"), db.query_dicts("timeline_summaries", *ALL_IDS),
                 out)


def print_ingested(db: Database, tids: Iterable[int],
                   out: Callable[[str], None] = print) -> None:
    """An ingest's closing summary: the runs of the new timelines ``tids``, listed as
    `tlview info` lists them."""
    new = set(tids)
    if not new:
        return
    rows = [r for r in db.query_dicts("timeline_summaries", min(new), max(new))
            if r["timeline_id"] in new]
    runs = {r["run_id"] for r in rows}
    print_by_run(db, [r for r in db.query_dicts("run_list") if r["run_id"] in runs], rows, out)


def print_by_run(db: Database, runs: list[dict[str, Any]], rows: list[dict[str, Any]],
                 out: Callable[[str], None] = print) -> None:
    """Each run of ``runs`` (rows of ``run_list``): two lines, what it holds (the ``runs``
    view) and its peak saying which figure it is; then its timelines of ``rows`` (rows of
    ``timeline_summaries``). Timelines of no listed run come last."""
    by_run: dict[Any, list[dict[str, Any]]] = {}
    for r in rows:
        by_run.setdefault(r["run_id"], []).append(r)
    for run in runs:
        out(run_line(run))
        if run["peak_bytes"] is not None:
            out(f"  peak {exact_bytes(run['peak_bytes'])} {run['peak_what']}, timeline "
                f"{run['peak_timeline_id']}")
        print_timelines(db, by_run.pop(run["run_id"], []), out)
    print_timelines(db, sorted((r for rs in by_run.values() for r in rs),
                               key=lambda r: r["timeline_id"]), out)


def run_line(r: dict[str, Any]) -> str:
    """``run 1 gpu_step: /path; 11 sources (4 output_code.py, ...); ...``."""
    arts = artifact_counts(r["artifacts"])
    parts = [f"run {r['run_id']} {r['name']}: {r['root']}",
             f"{r['n_sources']} source{'s' if r['n_sources'] != 1 else ''} ({arts})",
             f"{r['n_timelines']} timeline{'s' if r['n_timelines'] != 1 else ''}, "
             f"{r['n_graphs']} compiled graph"
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


def print_timelines(db: Database, rows: list[dict[str, Any]],
                    out: Callable[[str], None] = print) -> None:
    """The timelines of ``rows`` (rows of ``timeline_summaries``), each under its title:
    a compiled graph once, through the timeline that lists it (graphs), with its other
    forms (scheduler IR, FX graph) below it and, for each, the artifacts that repeat it
    (copies, counted once); a TORCH_TRACE log as a source of its run. A copy or a form
    whose graph is not among ``rows`` (a file ingested later) stands on its own."""
    replayed = [r["timeline_id"] for r in rows if r.get("n_replay_kernels")]
    phases = {}  # only traces with CUDA-graph replays pay for this, in one query
    if replayed:
        phases = {p["timeline_id"]: p for p in db.query_dicts("replay_phases", min(replayed),
                                                              max(replayed))}
    ids = {r["timeline_id"] for r in rows}
    copies: dict[int, list[dict[str, Any]]] = {}
    forms: dict[int, list[dict[str, Any]]] = {}
    top = []
    for r in rows:
        if r.get("n_replay_kernels"):
            r = {**r, **phases.get(r["timeline_id"], {})}
        graph = r.get("graph_timeline_id")
        if r.get("copy_of") is not None and r["copy_of"] in ids:
            copies.setdefault(r["copy_of"], []).append(r)
        elif graph is not None and graph != r["timeline_id"] and graph in ids:
            forms.setdefault(graph, []).append(r)
        else:
            top.append(r)
    for r in top:
        _print_one(db, r, r.get("title") or r["name"], "", copies, out)
        for f in forms.get(r["timeline_id"], []):
            _print_one(db, f, _form_words(f), "  ", copies, out)


def _form_words(r: dict[str, Any]) -> str:
    """A form's title without its run and graph (``scheduler IR``, ``FX graph in torch
    log``): it is listed under its graph's line."""
    title, mark = r.get("title") or r["name"], f" · {r['graph']} · "
    return title[title.index(mark) + len(mark):] if mark in title else title


def _print_one(db: Database, r: dict[str, Any], words: str, indent: str,
               copies: dict[int, list[dict[str, Any]]], out: Callable[[str], None]) -> None:
    """One timeline's lines, under ``words``, indented; then the artifacts repeating it."""
    say: Callable[[str], None] = (lambda line: out(indent + line)) if indent else out
    tid = r["timeline_id"]
    if r["format"] == LOG_FORMAT:  # a source of the run, not a timeline of its own
        say(f"source {r['source_id']} {PurePath(r['source_path'] or '').name} (TORCH_TRACE "
            "log): a source of its run's graphs (listed once each) and of compile events, "
            "not a timeline of its own")
        for w in r["warnings"]:
            say(f"  note: {w}")
        return
    head = (f"timeline {tid} {words} [{r['format']}"
            f"{', ' + r['device'] if r['device'] else ''}]")
    if r["format"] == "cuda_snapshot":
        print_snapshot_summary(db, r, head, say)
        for w in r["warnings"]:
            say(f"  note: {w}")
    else:
        for line in summary_text(r, head).splitlines():
            say(line)
    again = copies.get(tid, [])
    if again:
        where = ", ".join(f"{c['source_kind']} (timeline {c['timeline_id']})" for c in again)
        say(f"  also in {where}: copies of it, listed and counted once, here")
    elif r.get("copy_of") is not None:
        say(f"  a copy of timeline {r['copy_of']}: listed and counted once, there")


def summary_text(r: dict[str, Any], head: str) -> str:
    """The lines of a timeline other than a snapshot, the first after ``head``."""
    head += ": "
    if r["format"] in MEASURED_FORMATS:
        return head + _measured(r)
    if r["format"] in HANG_FORMATS:
        return head + HANG_FORMATS[r["format"]]
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
