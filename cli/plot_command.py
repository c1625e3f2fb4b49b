"""`tlview plot TIMELINE... -o FILE.svg|png`: pictures of memory curves for a postmortem.

One timeline: its memory curve (graph memory per step; a snapshot's allocated bytes per
trace entry, with each OOM marked: where, what it asked, and what the device had; a
trace's allocator total over time, where recorded) with the peak marked and labelled by
its node, and below it the measured time per step (a trace: each GPU event at its
start). Two timelines of the same kind: both curves on one axis, aligned step by step
(``timeline_diff``), the difference shaded (red where B holds more); a side's curve
stops at its last step. More, or ``--no-align``: each curve on its own steps (or time).

``figure(db, ids)`` gives the matplotlib figure and ``svg_text(fig)`` its SVG, for
callers that embed the picture (a report). matplotlib is an optional extra (``pip install
'tlview[plot]'``); nothing else of tlview needs it.
"""

from __future__ import annotations

import argparse
import io
import math
from pathlib import Path
from typing import Any

from tlview.store import Database, open_database
from tlview.store.diff import DiffError, ensure_alignment, resolve, side
from tlview.store.fmt import exact_bytes, human_bytes

from .locking import lock_wait_s, say_waiting


class PlotError(Exception):
    """No picture can be drawn (matplotlib missing, nothing to plot, an unknown suffix)."""


def add_parser(sub: Any, db_help: str) -> None:
    p = sub.add_parser(
        "plot", help="draw memory curves (and a diff of two) to SVG or PNG",
        description="Draw the memory curve of each TIMELINE (id or name) with its peak "
        "marked (and a snapshot's OOMs), and the measured time per step where a trace is "
        "attached; for two timelines of the same kind, both curves aligned step by step "
        "with the difference shaded. Needs matplotlib (pip install 'tlview[plot]').")
    p.add_argument("timelines", nargs="+", metavar="TIMELINE", help="timeline ids or names")
    p.add_argument("-o", "--output", required=True, metavar="FILE",
                   help="the picture: .svg or .png")
    p.add_argument("--db", default="tlview.duckdb", help=db_help)
    p.add_argument("--no-align", action="store_true",
                   help="two timelines: each on its own steps (default: aligned)")
    p.add_argument("--title", default=None, help="the picture's title (default: the names)")


def _pyplot() -> Any:
    try:
        import matplotlib

        matplotlib.use("Agg")
        matplotlib.rcParams["svg.fonttype"] = "none"  # SVG text stays text: searchable
        import matplotlib.pyplot as plt
    except ImportError:
        raise PlotError("`tlview plot` needs matplotlib, an optional extra: "
                        "pip install 'tlview[plot]' (or pip install matplotlib)") from None
    return plt


def cmd_plot(args: argparse.Namespace) -> int:
    out = Path(args.output)
    if out.suffix.lower() not in (".svg", ".png"):
        raise PlotError(f"{out}: expected a .svg or .png file name")
    plt = _pyplot()
    with open_database(args.db, read_only=True, wait_s=lock_wait_s(),
                       on_wait=say_waiting) as db:
        ids = [resolve(db, t) for t in args.timelines]
        fig = figure(db, ids, align=not args.no_align, title=args.title)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    print(f"{out}: {len(ids)} timeline{'s' if len(ids) > 1 else ''}")
    return 0


def figure(db: Database, ids: list[int], align: bool = True, title: str | None = None) -> Any:
    """The picture of timelines ``ids`` (a diff of two of one kind unless ``align`` is
    false), titled ``title`` or by their labels. Aligning two timelines needs a database
    that can hold the alignment (stored, or a read-only one's temporary tables)."""
    plt = _pyplot()
    sides = [side(db, t) for t in ids]
    labels = _labels(sides)
    if len(ids) == 2 and align and sides[0].kind == sides[1].kind:
        ensure_alignment(db, ids[0], ids[1])
        fig = _diff_figure(plt, sides, labels, db.query("diff_curves", ids[0], ids[1]))
    else:
        fig = _curves_figure(plt, sides, labels, [db.query("plot_items", t) for t in ids],
                             [db.query("plot_ooms", t) for t in ids])
    fig.suptitle(title or " vs ".join(labels), fontsize=10)
    return fig


def svg_text(fig: Any) -> str:
    """The figure as one SVG document (text kept as text)."""
    buf = io.StringIO()
    fig.savefig(buf, format="svg")
    return buf.getvalue()


def _labels(sides: list[Any]) -> list[str]:
    """``id title``: the title is unique and says the run and the source
    (``8 compiled_train · 0_forward · output code``)."""
    return [f"{s.timeline_id} {s.title}" for s in sides]


def _carry(values: list[int | None]) -> list[float]:
    """None (a step missing on this side) takes the value before it; before the side's
    first step and after its last, nothing is drawn (NaN): the side was not recorded."""
    known = [i for i, v in enumerate(values) if v is not None]
    if not known:
        return [math.nan] * len(values)
    out: list[float] = []
    last = math.nan
    for i, v in enumerate(values):
        if v is not None:
            last = float(v)
        out.append(last if known[0] <= i <= known[-1] else math.nan)
    return out


_UNITS = ((1024**3, "GiB"), (1024**2, "MiB"), (1024, "KiB"), (1, "B"))


def _unit(peak: float) -> tuple[int, str]:
    """The binary unit the curve is drawn in: the largest one the peak reaches."""
    return next((u for u in _UNITS if peak >= u[0]), _UNITS[-1])


def _scaled(values: list[float], unit: int) -> list[float]:
    return [v / unit for v in values]


def _mark_peak(ax: Any, xs: list[float], ys: list[float], labels: list[Any], where: list[str],
               color: str, name: str, unit: tuple[int, str], below: bool = False) -> None:
    """Mark the first maximum of ``ys`` (already scaled) and label it with its node;
    ``where``: how each point is named (``step 5``, ``event 29 at 0.214 ms``)."""
    finite = [i for i, y in enumerate(ys) if not math.isnan(y)]
    if not finite:
        return
    k = max(finite, key=lambda i: (ys[i], -i))
    ax.plot([xs[k]], [ys[k]], marker="v", color=color, markersize=8, zorder=5)
    node = str(labels[k] or "")
    node = node if len(node) <= 40 else node[:39] + "…"
    exact = f"{round(ys[k] * unit[0]):,} B"
    right = xs[k] > (xs[0] + xs[-1]) / 2
    ax.annotate(f"{name}peak {exact}\n{where[k]}: {node}",
                (xs[k], ys[k]), textcoords="offset points",
                xytext=(-8 if right else 8, -30 if below else 8), fontsize=8, color=color,
                ha="right" if right else "left",
                bbox={"boxstyle": "round,pad=0.2", "fc": "white", "ec": color, "alpha": 0.85})


def _legend(fig: Any, ax: Any) -> None:
    """Above the panel, never over the curves or the peak labels, in as many columns as
    fit the figure's width (long names take a row each)."""
    renderer = fig.canvas.get_renderer()
    n = len(ax.get_legend_handles_labels()[1])
    for ncol in range(max(n, 1), 0, -1):
        leg = ax.legend(fontsize=8, loc="lower left", bbox_to_anchor=(0, 1.0), ncol=ncol,
                        frameon=False, borderaxespad=0.2)
        if leg.get_window_extent(renderer).x1 <= fig.bbox.x1 - 4:
            return


def _figure(plt: Any, has_memory: bool, has_time: bool) -> tuple[Any, Any, Any]:
    """A figure with a memory panel and/or a time panel; (fig, memory_ax, time_ax)."""
    n = int(has_memory) + int(has_time)
    fig, axes = plt.subplots(n, 1, figsize=(9, 5.5 if n == 2 else 3.8), sharex=True,
                             squeeze=False,
                             gridspec_kw={"height_ratios": [3, 1.4] if n == 2 else [1]})
    mem = axes[0][0] if has_memory else None
    tim = axes[-1][0] if has_time else None
    return fig, mem, tim


def _finish(fig: Any, mem: Any, tim: Any, unit: tuple[int, str], xlabel: str,
            tlabel: str = "measured us\n(all calls)") -> None:
    if mem is not None:
        mem.set_ylabel(f"live ({unit[1]})")
        mem.grid(True, alpha=0.3)
        lo, hi = mem.get_ylim()
        mem.set_ylim(lo, hi + (hi - lo) * 0.3)  # room for the peak labels
    if tim is not None:
        tim.set_ylabel(tlabel)
        tim.grid(True, alpha=0.3)
    (tim if tim is not None else mem).set_xlabel(xlabel)
    fig.tight_layout(rect=(0, 0, 1, 0.96))


_XLABEL = {"trace": "time since the trace's first GPU event (ms)",
           "allocator": "trace entry (the allocator's history, in order)"}


def _xs(kind: str, rows: list[tuple[Any, ...]]) -> tuple[list[float], float, list[str]]:
    """Where each row is drawn, where the last one ends, and how each is named: a
    trace's GPU events at their start, in ms since its first (the last ends with its
    duration); other timelines' steps at their number."""
    if kind == "trace" and rows and all(r[4] is not None for r in rows):
        t0 = rows[0][4]
        xs = [(r[4] - t0) / 1e6 for r in rows]
        end = max(x + (r[3] or 0) / 1e6 for x, r in zip(xs, rows))
        return xs, end, [f"GPU event {r[0]} at {x:,.3f} ms" for x, r in zip(xs, rows)]
    xs = [float(r[0]) for r in rows]
    what = "entry" if kind == "allocator" else "step"
    return xs, (xs[-1] + 1 if xs else 0.0), [f"{what} {r[0]}" for r in rows]


def _curves_figure(plt: Any, sides: list[Any], labels: list[str],
                   data: list[list[tuple[Any, ...]]], ooms: list[list[tuple[Any, ...]]]) -> Any:
    has_memory = any(r[2] is not None for rows in data for r in rows)
    has_time = any(r[3] is not None for rows in data for r in rows)
    if not has_memory and not has_time:
        raise PlotError("nothing to draw: no memory curve and no measured times "
                        f"for timeline{'s' if len(sides) > 1 else ''} "
                        f"{', '.join(str(s.timeline_id) for s in sides)}")
    fig, mem, tim = _figure(plt, has_memory, has_time)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    peak = max((r[2] or 0 for rows in data for r in rows), default=0)
    unit = _unit(peak)
    for k, (s, rows) in enumerate(zip(sides, data)):
        xs, end, where = _xs(s.kind, rows)
        c = colors[k % len(colors)]
        if mem is not None:
            ys = _scaled(_carry([r[2] for r in rows]), unit[0])
            mem.step([*xs, end] if xs else xs, [*ys, ys[-1]] if ys else ys, where="post",
                     color=c, label=labels[k])
            _mark_peak(mem, xs, ys, [r[1] for r in rows], where, c,
                       "" if len(sides) == 1 else f"{s.timeline_id} ", unit)
        if tim is not None:
            times = [(r[3] or 0) / 1e3 for r in rows]
            if s.kind == "trace":  # each GPU event at its start: lines, any width
                tim.vlines(xs, 0, times, color=c, lw=1, label=labels[k])
            else:
                tim.bar(xs, times, width=0.9, align="edge", color=c,
                        alpha=0.6 if len(sides) > 1 else 1.0, label=labels[k])
    if len(sides) > 1:
        _legend(fig, mem if mem is not None else tim)
    kinds = {s.kind for s in sides}
    xlabel = (_XLABEL.get(next(iter(kinds)), "step") if len(kinds) == 1 else
              "step (a compiled timeline), trace entry (a snapshot), ms (a trace)")
    _finish(fig, mem, tim, unit, xlabel,
            "GPU event (us)" if kinds == {"trace"} else "measured us\n(all calls)")
    if mem is not None:
        for k, rows in enumerate(ooms):
            for o in rows:
                _mark_oom(mem, o, unit, colors[k % len(colors)] if len(sides) > 1 else "tab:red")
    return fig


def _mark_oom(ax: Any, o: tuple[Any, ...], unit: tuple[int, str], color: str) -> None:
    """An OOM of a snapshot (a ``plot_ooms`` row): a line at its entry, the request drawn
    on top of what was allocated, and what the device had: reserved + CUDA free at the
    OOM as a line where it is on the scale, else said in the label."""
    idx, requested, segment, allocated, reserved, free = o
    u = unit[0]
    ax.axvline(idx, color="tab:red", ls="--", lw=0.8)
    ax.plot([idx, idx], [allocated / u, (allocated + requested) / u], color="tab:red", lw=4,
            solid_capstyle="butt", zorder=6)
    ax.plot([idx], [allocated / u], marker="X", color="tab:red", markersize=8, zorder=7)
    text = (f"OOM at entry {idx}: requested {exact_bytes(requested)}"
            + (f",\nasking CUDA for a {human_bytes(segment)} segment"
               if segment != requested else ""))
    lo, hi = ax.get_ylim()
    cap = None if free is None or reserved is None else reserved + free
    if cap is not None and cap / u <= hi * 1.5:
        ax.axhline(cap / u, color="0.3", ls=":", lw=1)
        ax.set_ylim(lo, max(hi, cap / u * 1.08))
        ax.annotate(f"reserved + CUDA free at the OOM: {exact_bytes(cap)}", (0, cap / u),
                    xycoords=("axes fraction", "data"), xytext=(4, 3),
                    textcoords="offset points", fontsize=8, color="0.3")
    elif cap is not None:
        text += (f"\nreserved {human_bytes(reserved)} + CUDA free {human_bytes(free)}, off "
                 "the scale:\nCUDA had room, a per-process limit "
                 "(set_per_process_memory_fraction) refused it")
    ax.annotate(text, (idx, (allocated + requested) / u), xycoords="data",
                xytext=(0.02, 0.96), textcoords="axes fraction", ha="left", va="top",
                fontsize=8, color="tab:red",
                arrowprops={"arrowstyle": "->", "color": "tab:red", "lw": 0.8},
                bbox={"boxstyle": "round,pad=0.2", "fc": "white", "ec": "tab:red",
                      "alpha": 0.9})


def _diff_figure(plt: Any, sides: list[Any], labels: list[str],
                 rows: list[tuple[Any, ...]]) -> Any:
    if not rows:
        raise DiffError(f"timelines {sides[0].timeline_id} and {sides[1].timeline_id} "
                        "have no steps to compare")
    has_memory = any(r[6] is not None or r[7] is not None for r in rows)
    has_time = any(r[8] is not None or r[9] is not None for r in rows)
    if not has_memory and not has_time:
        raise PlotError("nothing to draw: neither timeline has a memory curve or times")
    fig, mem, tim = _figure(plt, has_memory, has_time)
    xs = [float(r[0]) for r in rows]
    unit = _unit(max((max(r[6] or 0, r[7] or 0) for r in rows), default=0))
    la, lb = f"A {labels[0]}", f"B {labels[1]}"
    if mem is not None:
        # a side's value where it has a step, carried across the other side's steps,
        # nothing before its first or after its last
        a = _scaled(_carry([r[6] if r[2] is not None else None for r in rows]), unit[0])
        b = _scaled(_carry([r[7] if r[3] is not None else None for r in rows]), unit[0])
        xe, ae, be = [*xs, xs[-1] + 1], [*a, a[-1]], [*b, b[-1]]  # the last step's width
        mem.step(xe, ae, where="post", color="tab:blue", label=la)
        mem.step(xe, be, where="post", color="tab:orange", label=lb)
        more = [y > x for x, y in zip(ae, be)]
        less = [y < x for x, y in zip(ae, be)]
        mem.fill_between(xe, ae, be, where=more, step="post", color="tab:red", alpha=0.25,
                         label="B holds more")
        mem.fill_between(xe, ae, be, where=less, step="post", color="tab:green", alpha=0.25,
                         label="B holds less")
        top_a = max((y for y in a if not math.isnan(y)), default=0.0)
        top_b = max((y for y in b if not math.isnan(y)), default=0.0)
        _mark_peak(mem, xs, a, [r[4] for r in rows], [f"step {r[2]}" for r in rows],
                   "tab:blue", "A ", unit, below=top_a >= top_b)
        _mark_peak(mem, xs, b, [r[5] for r in rows], [f"step {r[3]}" for r in rows],
                   "tab:orange", "B ", unit, below=top_b > top_a)
        for x, r in zip(xs, rows):
            if r[1] in ("inserted", "deleted"):
                mem.axvline(x, color="0.6", lw=0.5, ls=":")
        _legend(fig, mem)
    if tim is not None:
        tim.bar([x + 0.05 for x in xs], [(r[8] or 0) / 1e3 for r in rows], width=0.45,
                align="edge", color="tab:blue", label=la)
        tim.bar([x + 0.5 for x in xs], [(r[9] or 0) / 1e3 for r in rows], width=0.45,
                align="edge", color="tab:orange", label=lb)
        if mem is None:
            _legend(fig, tim)
    _finish(fig, mem, tim, unit, "aligned step (dotted: a step on one side only)")
    return fig
