"""`tlview report`'s formats: text (a terminal), md (a postmortem document), html (one
self-contained file: inline style and SVG pictures, nothing fetched, no script) and json
(for scripts and CI). Each figure of md and html names the SQL that reproduces it."""

from __future__ import annotations

import datetime as _dt
import html
import json
from collections.abc import Callable
from typing import Any

from tlview.store.fmt import exact_bytes, human_bytes
from tlview.store.report import Figure, Picture, Report, Table


def duration(ns: int | float | None) -> str:
    """``12.345 ms`` (``1.2 us`` under a microsecond)."""
    if ns is None:
        return "-"
    if abs(ns) < 1_000:
        return f"{ns:,.0f} ns"
    if abs(ns) < 1_000_000:
        return f"{ns / 1e3:,.1f} us"
    return f"{ns / 1e6:,.3f} ms"


def when(ns: int | None) -> str:
    if ns is None:
        return "-"
    t = _dt.datetime.fromtimestamp(ns / 1e9, _dt.timezone.utc)
    return f"{t:%Y-%m-%d %H:%M:%S}.{ns // 1000 % 1_000_000:06d} UTC"


def value_text(v: Any, unit: str, *, exact: bool = True) -> str:
    """A value in its unit: bytes exact (with a binary unit beside), durations in ms."""
    if v is None:
        return "-"
    if unit == "bytes":
        return exact_bytes(int(v)) if exact else f"{int(v):,}"
    if unit == "ns":
        return duration(v)
    if unit == "time":
        return when(int(v))
    if unit == "count":
        return f"{int(v):,}"
    if unit == "pct":
        return f"{float(v):.2f}%"
    if unit == "ratio":
        return f"{100 * float(v):.2f}%"
    if isinstance(v, list):
        return ", ".join(str(x) for x in v)
    return str(v)


def cell(v: Any, unit: str, root: str) -> str:
    """A table cell: exact and short (bytes as digits, paths from the run's root)."""
    if isinstance(v, str) and root and v.startswith(root.rstrip("/") + "/"):
        return v[len(root.rstrip("/")) + 1:]
    return value_text(v, unit, exact=False)


def figure_text(f: Figure) -> str:
    return value_text(f.value, f.unit) + (f" ({f.note})" if f.note else "")


# -- text --------------------------------------------------------------------------------


def render_text(r: Report) -> str:
    run = r.run
    out = [f"tlview report: run {run['run_id']} {run['name']} ({run['root']})", ""]
    if r.headline:
        out += [f"  * {v.text}" for v in r.headline] + [""]
    for s in r.sections:
        out.append(s.title)
        out.append("-" * len(s.title))
        out += [f"  {f.label}: {figure_text(f)}" for f in s.figures]
        for t in s.tables:
            out += ["", f"  {t.title}:"] + ["    " + ln for ln in _aligned(t, run["root"])]
        out += [f"  - {n}" for n in s.notes]
        out.append("")
    out.append("Every figure: `tlview report --format md` names the SQL that reproduces it.")
    return "\n".join(out) + "\n"


TEXT_CELL = 72  # a text table's cell is cut there, and a path in md (html and json: whole)


def _cut(text: str, width: int = TEXT_CELL) -> str:
    """``text`` in ``width`` characters: a path (an allocation site `file:line:function`)
    keeps its end, where the file, line and function are (``…/model.py:42:forward``);
    other text its start."""
    if len(text) <= width:
        return text
    if _is_path(text):
        tail = text[len(text) - (width - 1):]
        slash = tail.find("/")
        return "…" + (tail[slash:] if slash >= 0 else tail)
    return text[:width - 1] + "…"


def _is_path(text: str) -> bool:
    """A path or an allocation site: a '/' and no blank (a sentence has blanks)."""
    return "/" in text and not any(c.isspace() for c in text)


def _aligned(t: Table, root: str) -> list[str]:
    rows = [[_cut(cell(v, u, root)) for v, u in zip(row, t.units)] for row in t.rows]
    widths = [max([len(c)] + [len(r[i]) for r in rows]) for i, c in enumerate(t.columns)]
    right = [u in ("bytes", "ns", "count", "pct", "ratio", "id") for u in t.units]

    def line(cells: list[str]) -> str:
        return "  ".join(c.rjust(w) if r else c.ljust(w)
                         for c, w, r in zip(cells, widths, right)).rstrip()

    return [line(list(t.columns))] + [line(r) for r in rows]


# -- markdown ----------------------------------------------------------------------------


def render_md(r: Report) -> str:
    run = r.run
    out = [f"# Postmortem: run {run['run_id']} `{run['name']}`", "",
           f"Read from `{run['root']}` by `tlview report`. Every figure names the SQL that "
           "reproduces it: paste it into `tlview sql --db DB` or the duckdb CLI.", ""]
    if r.headline:
        out += ["## Headline", ""] + [f"- {v.text}" for v in r.headline] + [""]
    for s in r.sections:
        out += [f"## {s.title}", ""]
        sqls: list[str] = []
        for f in s.figures:
            n = _ref(sqls, f.sql)
            out.append(f"- **{f.label}**: {_md(figure_text(f))} [SQL {n}](#{s.key}-sql-{n})")
        if s.figures:
            out.append("")
        for t in s.tables:
            n = _ref(sqls, t.sql)
            out += [f"**{_md(t.title)}** ([SQL {n}](#{s.key}-sql-{n}))", "",
                    "| " + " | ".join(t.columns) + " |",
                    "| " + " | ".join("---:" if u in ("bytes", "ns", "count", "pct", "ratio", "id")
                                      else "---" for u in t.units) + " |"]
            out += ["| " + " | ".join(_md(_md_cell(cell(v, u, run["root"])))
                                      for v, u in zip(row, t.units)) + " |" for row in t.rows]
            out.append("")
        for p in s.pictures:
            n = _ref(sqls, p.sql)
            out += [f"*{_md(p.title)}: a picture in `--format html` ([SQL {n}](#{s.key}-sql-{n})).*",
                    ""]
        out += [f"- {_md(n)}" for n in s.notes]
        if s.notes:
            out.append("")
        for i, q in enumerate(sqls, 1):
            out += [f'<a id="{s.key}-sql-{i}"></a>SQL {i}:', "", "```sql", q, "```", ""]
    return "\n".join(out)


def _md_cell(text: str) -> str:
    """A path cut from the left as in text (a table column of 70 characters of a cache
    folder says nothing); other text whole."""
    return _cut(text) if _is_path(text) else text


def _ref(sqls: list[str], sql: str) -> int:
    """The number of ``sql`` in the section's list (each query listed once)."""
    if sql not in sqls:
        sqls.append(sql)
    return sqls.index(sql) + 1


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


# -- html ----------------------------------------------------------------------------------

_STYLE = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 2em auto; max-width: 70em; color: #222; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; border-bottom: 1px solid #ccc; }
table { border-collapse: collapse; margin: .5em 0 1em; font-size: 13px; }
th, td { border: 1px solid #ddd; padding: 2px 6px; } td.n { text-align: right; }
details { margin: 0 0 .3em 1em; } pre { background: #f6f6f6; padding: .5em; overflow-x: auto; }
ul.headline li { margin: .3em 0; font-weight: 600; } .note { color: #555; }
svg text { font: 11px sans-serif; }
"""


def render_html(r: Report) -> str:
    run = r.run
    e = html.escape
    out = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
           f"<title>tlview report: {e(run['name'])}</title>", f"<style>{_STYLE}</style>",
           "</head><body>",
           f"<h1>Postmortem: run {run['run_id']} <code>{e(run['name'])}</code></h1>",
           f"<p>Read from <code>{e(run['root'])}</code> by <code>tlview report</code>. Every "
           "figure names the SQL that reproduces it (paste it into <code>tlview sql</code> "
           "or the duckdb CLI).</p>"]
    if r.headline:
        out += ['<h2>Headline</h2><ul class="headline">']
        out += [f"<li>{e(v.text)}</li>" for v in r.headline]
        out.append("</ul>")
    for s in r.sections:
        out.append(f'<h2 id="{e(s.key)}">{e(s.title)}</h2>')
        if s.figures:
            out.append("<ul>")
            for f in s.figures:
                out.append(f"<li><b>{e(f.label)}</b>: {e(figure_text(f))}{_sql_html(f.sql)}</li>")
            out.append("</ul>")
        for p in s.pictures:
            out.append(f"<p><b>{e(p.title)}</b></p>{svg(p)}{_sql_html(p.sql)}")
        for t in s.tables:
            out.append(f"<p><b>{e(t.title)}</b></p>{_sql_html(t.sql)}<table><tr>"
                       + "".join(f"<th>{e(c)}</th>" for c in t.columns) + "</tr>")
            for row in t.rows:
                out.append("<tr>" + "".join(
                    f'<td class="n">{e(cell(v, u, run["root"]))}</td>'
                    if u in ("bytes", "ns", "count", "pct", "ratio", "id")
                    else f"<td>{e(cell(v, u, run['root']))}</td>"
                    for v, u in zip(row, t.units)) + "</tr>")
            out.append("</table>")
        if s.notes:
            out.append("<ul>" + "".join(f'<li class="note">{e(n)}</li>' for n in s.notes)
                       + "</ul>")
    out.append("</body></html>")
    return "\n".join(out) + "\n"


def _sql_html(sql: str) -> str:
    return f"<details><summary>SQL</summary><pre>{html.escape(sql)}</pre></details>"


def svg(p: Picture, width: int = 720, height: int = 220) -> str:
    """The picture as inline SVG, drawn here (no plotting library, nothing fetched)."""
    return _bars(p, width) if p.kind == "bars" else _curve(p, width, height)


_COLORS = ("#1f77b4", "#ff7f0e", "#999999", "#2ca02c")


def _curve(p: Picture, width: int, height: int) -> str:
    left, right, top, bottom = 80, 10, 20, 30
    w, h = width - left - right, height - top - bottom
    xs = [float(x) for x in p.xs]
    ys = [float(y) for _, s in p.series for y in s if y is not None]
    x0, x1 = min(xs), max(xs)
    ymax = max(ys) if ys else 1.0
    sx: Callable[[float], float] = lambda x: left + (x - x0) / ((x1 - x0) or 1) * w  # noqa: E731
    sy: Callable[[float], float] = lambda y: top + h - y / (ymax or 1) * h  # noqa: E731
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             f'role="img" aria-label="{html.escape(p.title)}">',
             f'<rect x="{left}" y="{top}" width="{w}" height="{h}" fill="none" stroke="#ccc"/>',
             f'<text x="{left - 4}" y="{top + 4}" text-anchor="end">{_axis(ymax, p.y_unit)}</text>',
             f'<text x="{left - 4}" y="{top + h}" text-anchor="end">0</text>',
             f'<text x="{left + w / 2}" y="{height - 6}" text-anchor="middle">'
             f'{html.escape(p.x_label)}</text>']
    for i, (name, s) in enumerate(p.series):
        pts = " ".join(f"{sx(x):.1f},{sy(float(y)):.1f}" for x, y in zip(xs, s) if y is not None)
        color = _COLORS[i % len(_COLORS)]
        parts.append(f'<polyline fill="none" stroke="{color}" stroke-width="1.2" points="{pts}"/>')
        parts.append(f'<text x="{left + 8 + 110 * i}" y="{top - 6}" fill="{color}">'
                     f'{html.escape(name)}</text>')
    for x, label in p.marks:
        if x is None:
            continue
        px = sx(float(x))
        parts.append(f'<line x1="{px:.1f}" y1="{top}" x2="{px:.1f}" y2="{top + h}" '
                     'stroke="#d62728" stroke-dasharray="3,2"/>')
        parts.append(f'<text x="{px + 3:.1f}" y="{top + 12}" fill="#d62728">'
                     f'{html.escape(label)}</text>')
    parts.append("</svg>")
    return "".join(parts)


def _bars(p: Picture, width: int) -> str:
    (name, values), = p.series
    row, left = 16, 90
    height = row * len(values) + 10
    vmax = max((float(v) for v in values if v is not None), default=1.0) or 1.0
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             f'role="img" aria-label="{html.escape(p.title)}">']
    for i, (label, v) in enumerate(zip(p.xs, values)):
        y = 5 + i * row
        bw = (width - left - 120) * float(v or 0) / vmax
        parts.append(f'<text x="{left - 4}" y="{y + 11}" text-anchor="end">'
                     f'{html.escape(str(label))}</text>')
        parts.append(f'<rect x="{left}" y="{y + 2}" width="{bw:.1f}" height="{row - 4}" '
                     f'fill="{_COLORS[0]}"/>')
        parts.append(f'<text x="{left + bw + 4:.1f}" y="{y + 11}">'
                     f'{html.escape(_axis(v, p.y_unit))}</text>')
    parts.append("</svg>")
    return "".join(parts)


def _axis(v: Any, unit: str) -> str:
    if v is None:
        return "-"
    return human_bytes(int(v)) if unit == "bytes" else duration(v) if unit == "ns" else f"{v:,}"


# -- json ----------------------------------------------------------------------------------


def render_json(r: Report) -> str:
    doc = r.as_json()
    for s in doc["sections"]:
        for f in s["figures"]:
            f["text"] = value_text(f["value"], f["unit"])
    return json.dumps(doc, indent=1, default=str) + "\n"


RENDERERS: dict[str, Callable[[Report], str]] = {
    "text": render_text, "md": render_md, "html": render_html, "json": render_json}
