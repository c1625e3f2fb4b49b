"""`tlview diff A B`: what changed between two runs, and a regression gate for CI.

A and B are timeline ids or names. The pair is aligned (``tlview.store.diff``) and the
alignment stored in the database, so that ``timeline_diff(a, b)``, ``peak_diff(a, b)`` and
``kernel_time_diff(a, b)`` then run in ``tlview sql`` and the duckdb CLI; ``--no-store``
keeps the database untouched (the alignment lives in the session's temporary tables).
Exit code 1 when a ``--fail-if-*`` threshold is crossed, 2 on errors.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from typing import Any

from tlview.store import open_database
from tlview.store.diff import ALIGN_VERSION, DiffError, ensure_alignment, resolve
from tlview.store.diff_report import DiffReport, ratio, report
from tlview.store.fmt import exact_bytes, signed_exact_bytes

from .locking import lock_wait_s, say_waiting
from .output import say
from .sql_command import UsageError

_BYTES = {"": 1, "b": 1, "k": 1024, "kb": 1000, "kib": 1024, "m": 1024**2, "mb": 1000**2,
          "mib": 1024**2, "g": 1024**3, "gb": 1000**3, "gib": 1024**3}
_NS = {"": 1, "ns": 1, "us": 1000, "ms": 1000**2, "s": 1000**3}


def add_parser(sub: Any, db_help: str) -> None:
    d = sub.add_parser(
        "diff", help="compare two timelines: peak, buffers, kernels, nodes",
        description="Compare two timelines of the same kind (two compiles of a graph, two "
        "profiler traces, two allocator snapshots): the peak before and after with the "
        "buffers that explain the change, the kernels that explain the time change, and "
        "the nodes inserted or removed. The alignment is stored in the database (see "
        "timeline_diff/peak_diff/kernel_time_diff in docs/views.md). Exit code 1 when a "
        "--fail-if threshold is crossed.")
    d.add_argument("a", metavar="A", help="the timeline before: an id or a name")
    d.add_argument("b", metavar="B", help="the timeline after: an id or a name")
    d.add_argument("--db", default="tlview.duckdb", help=db_help)
    d.add_argument("--json", action="store_true", help="JSON output (default: a report)")
    d.add_argument("--top", type=int, default=10, metavar="N",
                   help="rows of each list (default: 10)")
    d.add_argument("--no-store", action="store_true",
                   help="open the database read-only and keep the alignment only for this "
                   "run (default: store it, so the diff views can read it)")
    d.add_argument("--fail-if-peak-grows", metavar="T", type=_threshold_bytes,
                   help="exit 1 if B's peak exceeds A's by more than T: a percentage "
                   "(5%%) or bytes (64MiB)")
    d.add_argument("--fail-if-time-grows", metavar="T", type=_threshold_ns,
                   help="exit 1 if B's measured time exceeds A's by more than T: a "
                   "percentage (5%%) or a time (200us, 3ms)")


def _threshold(text: str, units: dict[str, int], what: str) -> tuple[str, float]:
    m = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]*)?)\s*(%|[a-zA-Z]*)\s*", text)
    if m is None or (m.group(2) != "%" and m.group(2).lower() not in units):
        raise argparse.ArgumentTypeError(
            f"{text!r}: expected a percentage (5%) or {what} ({', '.join(u for u in units if u)})")
    if m.group(2) == "%":
        return "ratio", float(m.group(1)) / 100
    return "absolute", float(m.group(1)) * units[m.group(2).lower()]


def _threshold_bytes(text: str) -> tuple[str, float]:
    return _threshold(text, _BYTES, "bytes")


def _threshold_ns(text: str) -> tuple[str, float]:
    return _threshold(text, _NS, "a time")


def cmd_diff(args: argparse.Namespace) -> int:
    if args.top < 0:
        raise UsageError("--top: expected 0 or more rows")
    wait, on_wait = lock_wait_s(), say_waiting
    with open_database(args.db, read_only=True, wait_s=wait, on_wait=on_wait) as db:
        a, b = resolve(db, args.a), resolve(db, args.b)
        stored = db.query("alignment_pair", a, b)
    if not args.no_store and not (stored and stored[0][0] == ALIGN_VERSION):
        with open_database(args.db, wait_s=wait, on_wait=on_wait) as db:
            with db.transaction():
                ensure_alignment(db, a, b)
    with open_database(args.db, read_only=True, wait_s=wait, on_wait=on_wait) as db:
        info = ensure_alignment(db, a, b)  # stored, or in this session's temporary tables
        rep = report(db, info, top=args.top)
    gates = _gates(rep, args)
    if args.json:
        out = rep.as_json()
        out["gates"] = gates
        say(json.dumps(out, indent=1, default=str))
    else:
        for line in _lines(rep):
            say(line)
    crossed = [g for g in gates if g["crossed"]]
    for g in crossed:
        print(f"tlview: {g['message']}", file=sys.stderr)
    return 1 if crossed else 0


def _gates(rep: DiffReport, args: argparse.Namespace) -> list[dict[str, Any]]:
    out = []
    for name, th, delta, base, show in (
            ("peak", args.fail_if_peak_grows, rep.peak_delta, rep.a_peak.bytes, exact_bytes),
            ("time", args.fail_if_time_grows, rep.time_delta, rep.a_time_ns, _ns)):
        if th is None:
            continue
        how, limit = th
        if delta is None:
            raise DiffError(f"--fail-if-{name}-grows: {_missing(rep, name)}")
        value = ratio(delta, base) if how == "ratio" else delta
        crossed = value is not None and value > limit
        if how == "ratio":
            text = f"{value * 100:+.2f}%" if value is not None else "n/a"
            text += f" ({show(delta)})" if crossed else ""
            lim = f"{limit * 100:g}%"
        else:
            text, lim = show(delta), show(int(limit))
        out.append({"gate": name, "how": how, "threshold": limit, "value": value,
                    "crossed": crossed,
                    "message": f"{name} grew by {text}, more than {lim}"
                    if crossed else f"{name} change {text} within {lim}"})
    return out


def _missing(rep: DiffReport, name: str) -> str:
    """Why a gate cannot be judged: which side lacks the figure."""
    al = rep.alignment
    if name == "peak":
        have = (rep.a_peak.bytes is not None, rep.b_peak.bytes is not None)
        why = "no liveness"
    else:
        have = (rep.a_time_ns is not None, rep.b_time_ns is not None)
        why = "no measured times: no trace attached, no GPU events"
    if not any(have):
        return f"neither timeline has a {name} ({why})"
    side = al.b if have[0] else al.a
    return (f"{'B' if have[0] else 'A'} (timeline {side.timeline_id} {side.title}) has no "
            f"{name} ({why}): nothing to compare")


def _ns(n: int | None) -> str:
    if n is None:
        return "?"
    if abs(n) >= 1_000_000:
        return f"{n / 1e6:,.3f} ms"
    if abs(n) >= 1000:
        return f"{n / 1e3:,.1f} us"
    return f"{n} ns"


def _pct(delta: int | None, base: int | None) -> str:
    r = ratio(delta, base)
    return "" if r is None else f" ({r * 100:+.2f}%)"


def _lines(rep: DiffReport) -> list[str]:
    al = rep.alignment
    out = [f"A: timeline {al.a.timeline_id} {al.a.title} [{al.a.format}]",
           f"B: timeline {al.b.timeline_id} {al.b.title} [{al.b.format}]",
           f"aligned {al.a_items} and {al.b_items} steps: {al.same} same, {al.changed} "
           f"changed, {al.deleted} removed (A only), {al.inserted} inserted (B only)"]
    larger = max(al.a_items, al.b_items)
    if 2 * (al.same + al.changed) < larger:
        out.append(f"  note: only {al.same + al.changed} of {larger} steps align (same or "
                   "changed): different programs? The rows below pair unrelated steps.")
    if rep.a_peak.bytes is not None or rep.b_peak.bytes is not None:
        out.append(f"peak: {exact_bytes(rep.a_peak.bytes)} at step {rep.a_peak.step} "
                   f"({rep.a_peak.node}) -> {exact_bytes(rep.b_peak.bytes)} at step "
                   f"{rep.b_peak.step} ({rep.b_peak.node})")
        if rep.peak_delta == 0 and not rep.peak_rows:
            out.append("  peak unchanged")
        elif rep.peak_delta is not None:
            out.append(f"  change {signed_exact_bytes(rep.peak_delta)}"
                       f"{_pct(rep.peak_delta, rep.a_peak.bytes)}"
                       + (", explained by:" if rep.peak_rows or rep.site_rows else ""))
        for r in rep.peak_rows:
            names = " -> ".join(x for x in (r["a_buffer"], r["b_buffer"]) if x)
            who = r["b_producer"] or r["a_producer"]
            out.append(f"  {r['status']:6} {signed_exact_bytes(r['delta_bytes']):>28}  {names}"
                       f"  {r['what'] or ''}" + (f"  by {who}" if who else ""))
        if rep.site_rows:
            out.append("  by allocation site:")
            for r in rep.site_rows:
                out.append(f"  {signed_exact_bytes(r['delta_bytes']):>35}  {r['site']}")
    else:
        out.append("peak: neither timeline has a memory curve")
    if rep.time_delta is not None:
        out.append(f"measured time: {_ns(rep.a_time_ns)} -> {_ns(rep.b_time_ns)}, "
                   f"change {_ns(rep.time_delta)}{_pct(rep.time_delta, rep.a_time_ns)}"
                   + (", explained by:" if rep.kernel_rows else ""))
        for r in rep.kernel_rows:
            k = _kernel(r["a_kernel"]) if r["a_kernel"] == r["b_kernel"] else \
                f"{r['a_kernel'] or '-'} -> {r['b_kernel'] or '-'}"
            share = f"{r['share'] * 100:5.1f}%" if r["share"] is not None else "     "
            out.append(f"  {r['method']:8} {_ns(r['delta_ns']):>14} {share}  "
                       f"x{r['a_launches']}/x{r['b_launches']}  {k}")
    elif rep.a_time_ns is not None or rep.b_time_ns is not None:
        side, other, t = (("A", "B", rep.b_time_ns) if rep.a_time_ns is None else
                          ("B", "A", rep.a_time_ns))
        tid = (al.a if side == "A" else al.b).timeline_id
        out.append(f"measured time: {side} (timeline {tid}) has none (no trace attached, no "
                   f"GPU events): nothing to compare; {other}: {_ns(t)}")
    if rep.changed_nodes:
        out.append(f"steps not the same (first {len(rep.changed_nodes)}):")
        for r in rep.changed_nodes:
            out.append(f"  {r['method']:8} {_side(r['a_step'], r['a_node'])}  ->  "
                       f"{_side(r['b_step'], r['b_node'])}")
    return out


def _kernel(name: str | None) -> str:
    """A kernel_time_diff row's kernel: scheduler-IR nodes are measured through the
    output code's launches and carry no kernel name of their own."""
    return name if name is not None else "(nodes without a kernel name)"


def _side(step: int | None, node: str | None) -> str:
    return "-" if step is None else f"{step} {node}"
