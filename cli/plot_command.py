"""`tlview plot TIMELINE... -o FILE.svg|png`: pictures of memory curves for a postmortem.

One timeline: its memory curve (graph memory per step; a snapshot's allocated bytes per
trace entry; a trace's allocator total per GPU event, where recorded) with the peak marked
and labelled by its node, and below it the measured time per step where a trace is
attached. Two timelines of the same kind: both curves on one axis, aligned step by step
(``timeline_diff``), the difference shaded (red where B holds more). More, or
``--no-align``: each curve on its own steps. matplotlib is an optional extra
(``pip install 'tlview[plot]'``); nothing else of tlview needs it.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from tlview.store import open_database
from tlview.store.diff import DiffError, ensure_alignment, resolve, side

from .locking import lock_wait_s, say_waiting


class PlotError(Exception):
    """No picture can be drawn (matplotlib missing, nothing to plot, an unknown suffix)."""


def add_parser(sub: Any, db_help: str) -> None:
    p = sub.add_parser(
        "plot", help="draw memory curves (and a diff of two) to SVG or PNG",
        description="Draw the memory curve of each TIMELINE (id or name) with its peak "
        "marked, and the measured time per step where a trace is attached; for two "
        "timelines of the same kind, both curves aligned step by step with the difference "
        "shaded. Needs matplotlib (pip install 'tlview[plot]').")
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
        sides = [side(db, t) for t in ids]
        if len(ids) == 2 and not args.no_align and sides[0].kind == sides[1].kind:
            ensure_alignment(db, ids[0], ids[1])
            rows = db.query("diff_curves", ids[0], ids[1])
            fig = _diff_figure(plt, sides, rows)
        else:
            fig = _curves_figure(plt, sides, [db.query("plot_items", t) for t in ids])
    fig.suptitle(args.title or " vs ".join(f"{s.timeline_id} {s.name}" for s in sides),
                 fontsize=10)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    print(f"{out}: {len(ids)} timeline{'s' if len(ids) > 1 else ''}")
    return 0


def _carry(values: list[int | None]) -> list[float]:
    """None (a step missing on this side) takes the value before it, 0 at the start."""
    out: list[float] = []
    last = 0.0
    for v in values:
        if v is not None:
            last = float(v)
        out.append(last)
    return out


_UNITS = ((1024**3, "GiB"), (1024**2, "MiB"), (1024, "KiB"), (1, "B"))


def _unit(peak: float) -> tuple[int, str]:
    """The binary unit the curve is drawn in: the largest one the peak reaches."""
    return next((u for u in _UNITS if peak >= u[0]), _UNITS[-1])


def _scaled(values: list[float], unit: int) -> list[float]:
    return [v / unit for v in values]


def _mark_peak(ax: Any, xs: list[float], ys: list[float], labels: list[Any], steps: list[Any],
               color: str, name: str, unit: tuple[int, str], below: bool = False) -> None:
    """Mark the first maximum of ``ys`` (already scaled) and label it with its node."""
    if not ys:
        return
    k = max(range(len(ys)), key=lambda i: (ys[i], -i))
    ax.plot([xs[k]], [ys[k]], marker="v", color=color, markersize=8, zorder=5)
    node = str(labels[k] or "")
    node = node if len(node) <= 40 else node[:39] + "…"
    exact = f"{round(ys[k] * unit[0]):,} B"
    right = xs[k] > (xs[0] + xs[-1]) / 2
    ax.annotate(f"{name}peak {exact}\nstep {steps[k]}: {node}",
                (xs[k], ys[k]), textcoords="offset points",
                xytext=(-8 if right else 8, -30 if below else 8), fontsize=8, color=color,
                ha="right" if right else "left",
                bbox={"boxstyle": "round,pad=0.2", "fc": "white", "ec": color, "alpha": 0.85})


def _legend(ax: Any) -> None:
    """Above the panel, in one row: never over the curves or the peak labels."""
    ax.legend(fontsize=8, loc="lower left", bbox_to_anchor=(0, 1.0), ncol=4, frameon=False,
              borderaxespad=0.2)


def _figure(plt: Any, has_memory: bool, has_time: bool) -> tuple[Any, Any, Any]:
    """A figure with a memory panel and/or a time panel; (fig, memory_ax, time_ax)."""
    n = int(has_memory) + int(has_time)
    fig, axes = plt.subplots(n, 1, figsize=(9, 5.5 if n == 2 else 3.8), sharex=True,
                             squeeze=False,
                             gridspec_kw={"height_ratios": [3, 1.4] if n == 2 else [1]})
    mem = axes[0][0] if has_memory else None
    tim = axes[-1][0] if has_time else None
    return fig, mem, tim


def _finish(fig: Any, mem: Any, tim: Any, unit: tuple[int, str], xlabel: str) -> None:
    if mem is not None:
        mem.set_ylabel(f"live ({unit[1]})")
        mem.grid(True, alpha=0.3)
        lo, hi = mem.get_ylim()
        mem.set_ylim(lo, hi + (hi - lo) * 0.3)  # room for the peak labels
    if tim is not None:
        tim.set_ylabel("measured us\n(all calls)")
        tim.grid(True, alpha=0.3)
    (tim if tim is not None else mem).set_xlabel(xlabel)
    fig.tight_layout(rect=(0, 0, 1, 0.96))


def _curves_figure(plt: Any, sides: list[Any], data: list[list[tuple[Any, ...]]]) -> Any:
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
        xs = [float(r[0]) for r in rows]
        c = colors[k % len(colors)]
        label = f"{s.timeline_id} {s.name}"
        if mem is not None:
            ys = _scaled(_carry([r[2] for r in rows]), unit[0])
            mem.step([*xs, xs[-1] + 1] if xs else xs, [*ys, ys[-1]] if ys else ys, where="post",
                     color=c, label=label)
            _mark_peak(mem, xs, ys, [r[1] for r in rows], [r[0] for r in rows], c,
                       "" if len(sides) == 1 else f"{s.timeline_id} ", unit)
        if tim is not None:
            tim.bar(xs, [(r[3] or 0) / 1e3 for r in rows], width=0.9, align="edge", color=c,
                    alpha=0.6 if len(sides) > 1 else 1.0, label=label)
    if len(sides) > 1:
        _legend(mem if mem is not None else tim)
    _finish(fig, mem, tim, unit, "step (a trace: GPU event in time order; a snapshot: "
            "trace entry)")
    return fig


def _diff_figure(plt: Any, sides: list[Any], rows: list[tuple[Any, ...]]) -> Any:
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
    la = f"A {sides[0].timeline_id} {sides[0].name}"
    lb = f"B {sides[1].timeline_id} {sides[1].name}"
    if mem is not None:
        a = _scaled(_carry([r[6] for r in rows]), unit[0])
        b = _scaled(_carry([r[7] for r in rows]), unit[0])
        xe, ae, be = [*xs, xs[-1] + 1], [*a, a[-1]], [*b, b[-1]]  # the last step's width
        mem.step(xe, ae, where="post", color="tab:blue", label=la)
        mem.step(xe, be, where="post", color="tab:orange", label=lb)
        more = [y > x for x, y in zip(ae, be)]
        less = [y < x for x, y in zip(ae, be)]
        mem.fill_between(xe, ae, be, where=more, step="post", color="tab:red", alpha=0.25,
                         label="B holds more")
        mem.fill_between(xe, ae, be, where=less, step="post", color="tab:green", alpha=0.25,
                         label="B holds less")
        _mark_peak(mem, xs, a, [r[4] for r in rows], [r[2] for r in rows], "tab:blue", "A ", unit,
                   below=max(a) >= max(b))
        _mark_peak(mem, xs, b, [r[5] for r in rows], [r[3] for r in rows], "tab:orange", "B ",
                   unit,
                   below=max(b) > max(a))
        for x, r in zip(xs, rows):
            if r[1] in ("inserted", "deleted"):
                mem.axvline(x, color="0.6", lw=0.5, ls=":")
        _legend(mem)
    if tim is not None:
        tim.bar([x + 0.05 for x in xs], [(r[8] or 0) / 1e3 for r in rows], width=0.45,
                align="edge", color="tab:blue", label=la)
        tim.bar([x + 0.5 for x in xs], [(r[9] or 0) / 1e3 for r in rows], width=0.45,
                align="edge", color="tab:orange", label=lb)
        if mem is None:
            _legend(tim)
    _finish(fig, mem, tim, unit, "aligned step (dotted: a step on one side only)")
    return fig
