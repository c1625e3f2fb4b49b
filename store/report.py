"""The postmortem of a run (`tlview report`) as data: its headline and its sections.

Every figure, table and picture is read by a named query of ``schemas/queries_report.sql``
over the public views, and carries that query with its values in place (``sql``), so a
reader can paste it into `tlview sql` or the duckdb CLI and get the figure back. Nothing
here formats for a screen: the renderers (cli/report_render.py, the TUI's runs screen)
do, the sentences of the headline with the ``Words`` they are given.

A report is the list ``SECTIONS`` of section builders, each ``(Context) -> Section |
None`` (None: no data for it in this run); a builder may add verdicts to the headline.
A new section (a hang's, CUDA-graph replays) is one builder added to that list.
"""

from __future__ import annotations

import datetime as _dt
import json
from collections.abc import Callable, Sequence
from typing import Any

import attrs
from attrs import frozen

from . import hang_queries, words
from .db import Database
from .rank_queries import WhatIf

# -- the report's vocabulary -----------------------------------------------------------

# Units a value can have; the renderers format by them. "time": Unix ns.
UNITS = ("bytes", "ns", "count", "pct", "ratio", "text", "bool", "time", "id")


@frozen
class Figure:
    """One number (or fact) of the report and the SQL that reproduces it."""

    key: str
    label: str
    value: Any
    unit: str
    sql: str
    note: str = ""  # what the figure is, in words (e.g. which kind of peak)


@frozen
class Table:
    key: str
    title: str
    columns: tuple[str, ...]
    units: tuple[str, ...]
    rows: tuple[tuple[Any, ...], ...]
    sql: str


@frozen
class Picture:
    """A curve (``series``: name -> y values at ``xs``) or bars (one x per label) with
    marked places; drawn by the renderer."""

    key: str
    title: str
    kind: str  # curve | bars
    xs: tuple[Any, ...]
    series: tuple[tuple[str, tuple[int | None, ...]], ...]
    marks: tuple[tuple[Any, str], ...]
    x_label: str
    y_unit: str
    sql: str


@frozen
class Evidence:
    """Where a verdict's evidence is: a screen of the TUI and the place on it."""

    screen: str  # snapshot | timeline | profiler | ranks | hang
    timeline_id: int | None
    at: int | None = None  # a snapshot's trace entry, a timeline's step, a hang's rank


@frozen
class Verdict:
    key: str
    text: str
    evidence: Evidence | None
    figures: tuple[str, ...] = ()  # keys of the figures it states


@frozen
class Section:
    key: str
    title: str
    figures: tuple[Figure, ...] = ()
    tables: tuple[Table, ...] = ()
    pictures: tuple[Picture, ...] = ()
    notes: tuple[str, ...] = ()


@frozen
class Report:
    run: dict[str, Any]
    headline: tuple[Verdict, ...]
    sections: tuple[Section, ...]

    def figure(self, key: str) -> Figure | None:
        return next((f for s in self.sections for f in s.figures if f.key == key), None)

    def as_json(self) -> dict[str, Any]:
        """Plain values (the json format's document)."""
        return {"run": self.run,
                "headline": [attrs.asdict(v) for v in self.headline],
                "sections": [attrs.asdict(s) for s in self.sections]}


def utc(ns: int | None) -> str:
    """``2026-11-28 06:12:01 UTC`` (to the second)."""
    if ns is None:
        return "-"
    return f"{_dt.datetime.fromtimestamp(ns // 10**9, _dt.timezone.utc):%Y-%m-%d %H:%M:%S} UTC"


@frozen
class Words:
    """How the headline's sentences write bytes and durations (the CLI exactly, the TUI
    in short units)."""

    bytes: Callable[[int | None], str]
    ns: Callable[[int | None], str]
    time: Callable[[int | None], str] = utc  # a moment (Unix ns)


class RunNotFound(LookupError):
    pass


# -- SQL with its values in place ------------------------------------------------------


def literal(v: Any) -> str:
    """A value as SQL text: numbers as they are, text quoted ('' inside), NULL."""
    if v is None:
        return "NULL"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(literal(x) for x in v) + "]"
    return "'" + str(v).replace("'", "''") + "'"


def render_sql(sql: str, params: Sequence[Any]) -> str:
    """``sql`` with each ``?`` (in order) and ``$n`` replaced by its value, outside quoted
    text and comments: the query as a user would paste it."""
    out: list[str] = []
    i, k, n = 0, 0, len(sql)
    while i < n:
        c = sql[i]
        if c in "'\"":  # quoted text (a doubled quote inside it is the quote itself)
            j = i + 1
            while j < n and not (sql[j] == c and sql[j + 1:j + 2] != c):
                j += 2 if sql[j] == c else 1
            out.append(sql[i:j + 1])
            i = j + 1
        elif sql.startswith("--", i):
            j = sql.find("\n", i)
            i = n if j < 0 else j + 1  # comments are left out
        elif c == "?":
            out.append(literal(params[k]))
            k += 1
            i += 1
        elif c == "$" and i + 1 < n and sql[i + 1].isdigit():
            j = i + 1
            while j < n and sql[j].isdigit():
                j += 1
            out.append(literal(params[int(sql[i + 1:j]) - 1]))
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out).strip() + ";"


@attrs.define
class Context:
    """What the section builders share: the database, the run, the headline so far."""

    db: Database
    run: dict[str, Any]
    run_sql: str
    words: Words
    formats: dict[str, int]  # the run's timelines by format: what applies
    headline: list[Verdict] = attrs.Factory(list)
    peak: dict[str, Any] | None = None
    health: list[str] = attrs.Factory(list)  # what a section found the capture lacks
    scratch: list[str] = attrs.Factory(list)  # queries that drop what the report made
    _asked: dict[tuple[Any, ...], tuple[list[dict[str, Any]], str]] = attrs.Factory(dict)

    def has(self, *formats: str) -> bool:
        return any(self.formats.get(f) for f in formats)

    @property
    def run_id(self) -> int:
        return int(self.run["run_id"])

    def ask(self, name: str, *params: Any) -> tuple[list[dict[str, Any]], str]:
        """The rows of the named query (as dicts) and its SQL with the values in place
        (asked once per report: sections share them)."""
        key = (name, *params)
        if key not in self._asked:
            self._asked[key] = (self.db.query_dicts(name, *params),
                                render_sql(self.db.queries[name], params))
        return self._asked[key]

    def match_once(self) -> None:
        """The run's collective matching computed once, for every view the report asks
        that derives it (report_match_once); dropped when the report is built."""
        self._once(MATCH_ONCE, "report_match_once", "report_match_drop")

    def allocs_once(self) -> None:
        """The allocations of the run's snapshots by output-code line and graph call read
        once, for every view the report asks that derives them (report_allocs_once);
        dropped when the report is built."""
        self._once(ALLOCS_ONCE, "report_allocs_once", "report_allocs_drop")

    def _once(self, enabled: bool, make: str, drop: str) -> None:
        """The named query ``make`` (of the run), once per report where ``enabled``; its
        ``drop`` runs when the report is built."""
        if enabled and drop not in self.scratch:
            self.db.query(drop)  # a report before it ended half-way
            self.db.sql(self.db.queries[make], [self.run_id])
            self.scratch.append(drop)

    def table(self, key: str, title: str, name: str, *params: Any,
              units: dict[str, str] | None = None,
              columns: Sequence[str] | None = None) -> Table | None:
        """The rows of a named query as a table (``columns``: only those, in that order)."""
        rows, sql = self.ask(name, *params)
        if not rows:
            return None
        cols = tuple(columns or rows[0])
        return Table(key, title, cols, tuple((units or {}).get(c, unit_of(c)) for c in cols),
                     tuple(tuple(_plain(r[c]) for c in cols) for r in rows), sql)


def unit_of(column: str) -> str:
    """A column's unit from its name (the views' conventions)."""
    if column in ("first_ns", "last_ns", "at_time_ns", "since_ns"):
        return "time"
    if column.endswith("_ns"):
        return "ns"
    if column.endswith("bytes") or column in ("size", "device_free", "largest_free_block"):
        return "bytes"
    if column.endswith(("_pct", "_share")) or column == "wait_share":
        return "pct" if column.endswith("_pct") else "ratio"
    if column.endswith("_id") or column in ("rank", "event_index", "at_step", "step",
                                             "call_index", "reference_rank"):
        return "id"
    if column.startswith("n_") or column in ("timelines", "steps", "blocks", "launches",
                                              "calls", "times_last", "entries", "buffers",
                                              "replays", "dumps", "kernels") \
            or column.endswith(("_allocations", "_buffers")):
        return "count"
    return "text"


def _plain(v: Any) -> Any:
    """A value JSON can hold (DuckDB gives Decimal, datetime, lists of structs...)."""
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    if isinstance(v, dict):
        return {str(k): _plain(x) for k, x in v.items()}
    try:
        return float(v) if not hasattr(v, "isoformat") else v.isoformat()
    except (TypeError, ValueError):
        return str(v)


# -- the sections ----------------------------------------------------------------------


def read_section(ctx: Context) -> Section | None:
    """What was read: the run's artifacts, ranks, versions and the window each covers."""
    run, run_sql = ctx.run, ctx.run_sql
    figs = [Figure("run_sources", "artifacts", run["n_sources"], "count", run_sql,
                   words.artifact_counts(run["artifacts"])),
            Figure("run_timelines", "timelines", run["n_timelines"], "count", run_sql,
                   "copies of a compiled graph in other artifacts counted once"),
            Figure("run_graphs", "compiled graphs", run["n_graphs"], "count", run_sql)]
    if run["ranks"]:
        figs.append(Figure("run_ranks", "ranks", list(run["ranks"]), "text", run_sql))
    for col, label in (("torch_version", "torch"), ("triton_version", "triton"),
                       ("cuda_version", "CUDA"), ("nccl_version", "NCCL")):
        if run[col]:
            figs.append(Figure(col, label, run[col], "text", run_sql))
    if run["first_ns"] is not None:
        figs += [Figure("run_first_ns", "from", run["first_ns"], "time", run_sql),
                 Figure("run_last_ns", "to", run["last_ns"], "time", run_sql)]
    tables = [t for t in (ctx.table("artifacts", "artifacts", "report_artifacts", ctx.run_id),)
              if t is not None]
    return Section("read", "What was read", tuple(figs), tuple(tables))


def hang_section(ctx: Context) -> Section | None:
    """A hang, from the run's Flight Recorder dumps: per incident the first collective where
    the ranks disagree (hang_verdict): who holds it up, in which process group and
    collective, what the others are stuck in and since when, which dumps are missing or
    unusable and what can still be concluded."""
    if not ctx.has("flight_recorder"):
        return None
    with hang_queries.dumps_read_once(ctx.db):
        return _hang_section(ctx)


def _hang_section(ctx: Context) -> Section | None:
    incidents, inc_sql = ctx.ask("hang_incidents", None, ctx.run_id)
    if not incidents:
        return None
    figs: list[Figure] = []
    tables: list[Table] = []
    notes: list[str] = []
    dumps = ctx.table("fr_dumps", "the Flight Recorder dumps by incident and status (fr_dumps)",
                      "report_fr_dumps", ctx.run_id)
    if dumps is not None:
        tables.append(dumps)
    for n, r in enumerate(incidents, 1):
        rows, v_sql = ctx.ask("hang_verdicts", r["incident"])
        i = hang_queries.incident(ctx.db, r, rows)
        k = f"hang{n}"
        of = f"incident {i.incident}"
        figs.append(Figure(f"{k}_dumps", f"{of}: ranks with a dump read", len(i.ranks),
                           "count", inc_sql, f"ranks {words.rank_ranges(list(i.ranks))}; "
                           f"{i.n_dumps} dumps in all"))
        if i.missing:
            figs.append(Figure(f"{k}_missing", f"{of}: ranks without a usable dump",
                               list(i.missing), "text", inc_sql,
                               "members of its groups (fr_groups.missing)"))
        root = list(i.root)
        if root:
            v0 = root[0]
            culprits = [v.rank for v in root if v.culprit]
            waiting = [v.rank for v in root if v.verdict == "waiting"]
            figs += [
                Figure(f"{k}_group", f"{of}: process group", hang_queries.group_name(
                    v0.pg_desc, v0.process_group), "text", v_sql,
                    f"the group whose collective was issued first (root), name {v0.process_group}"),
                Figure(f"{k}_seq", f"{of}: collective sequence id", v0.seq, "id", v_sql,
                       words.expected(root)),
                Figure(f"{k}_finding", f"{of}: finding", v0.finding, "text", v_sql),
                Figure(f"{k}_culprits", f"{of}: culprit ranks", culprits, "text", v_sql,
                       "the ranks that hold it up (hang_verdict.culprit)" if culprits else
                       "none can be told from the dumps"),
                Figure(f"{k}_waiting", f"{of}: ranks waiting in it", waiting, "text", v_sql),
                Figure(f"{k}_since_ns", f"{of}: waiting since", v0.since_ns, "time", v_sql,
                       "the earliest enqueue of the collective on any rank")]
            blocked = [f"rank {v.rank} in {v.blocked_in}" for v in i.verdicts if v.blocked_in]
            if blocked:
                notes.append(f"{of}: blocked in another group: " + "; ".join(blocked))
            culprit = next((v for v in root if v.culprit), None)
            ctx.headline.append(Verdict(
                k, words.hang_sentence(i, ctx.words.time),
                Evidence("hang", r["timeline_id"], culprit.rank if culprit else None),
                (f"{k}_culprits", f"{k}_group", f"{k}_seq", f"{k}_since_ns")))
        else:
            ctx.headline.append(Verdict(k, words.hang_sentence(i, ctx.words.time),
                                        Evidence("hang", r["timeline_id"]), (f"{k}_dumps",)))
        t = ctx.table(f"{k}_verdict", f"{of}: each group's first disagreement, per rank "
                      "(hang_verdict)", "hang_verdicts", r["incident"], columns=(
                          "process_group", "pg_desc", "seq", "rank", "verdict", "culprit",
                          "ops", "in_sizes", "since_ns", "last_op", "last_seq", "blocked_in",
                          "root"))
        if t is not None:
            tables.append(t)
        notes += [f"{of}: {words.group_line(g)}" for g in words.by_group(i).values()]
        if i.missing:
            notes.append(f"{of}: {words.missing_conclusion(i)}")
        ctx.health += [f"{of}: {x}" for x in words.incident_notes(i)]
    return Section("hang", "Hang", tuple(figs), tuple(tables), notes=tuple(notes))


def memory_section(ctx: Context) -> Section | None:
    """The run's peak, each OOM, who held the memory at the peak and at each OOM (by
    allocation site and by compiled graph and buffer), what was made before recording."""
    peaks, peaks_sql = ctx.ask("report_peaks", ctx.run_id)
    if not peaks:
        return None
    p = ctx.peak = peaks[0]  # the most measured figure (run_peaks): the first row
    w = ctx.words
    figs = [Figure("peak_bytes", "peak", p["peak_bytes"], "bytes", peaks_sql, p["what"])]
    snapshot = p["figure"] in ("allocator_blocks", "allocator_requested")
    if p["requested_bytes"] is not None and p["requested_bytes"] != p["peak_bytes"]:
        figs.append(Figure("peak_requested_bytes", "peak in requested bytes",
                           p["requested_bytes"], "bytes", peaks_sql,
                           "the same peak as the sizes asked for (the allocator rounds up)"))
    jax = p["figure"] == "jax_memory_profile"
    where = (f"at trace entry {p['at_step']:,}" if snapshot and p["at_step"] is not None
             else "at the dump" if jax
             else f"at step {p['at_step']} ({p['at_node']})" if p["at_step"] is not None
             else "")
    figs.append(Figure("peak_figure", "which figure", p["figure"], "text", peaks_sql, p["what"]))
    evidence = (Evidence("snapshot", p["timeline_id"], p["at_step"]) if snapshot
                else Evidence("profiler", p["timeline_id"]) if p["figure"] == "profiler_memory"
                else Evidence("timeline", p["timeline_id"], p["at_step"]))
    ctx.headline.append(Verdict(
        "peak", f"Peak {w.bytes(p['peak_bytes'])}, {p['what']}, in {p['title']}"
        + (f" {where}" if where else "") + ".", evidence, ("peak_bytes",)))
    tables: list[Table] = []
    pictures: list[Picture] = []
    notes: list[str] = []
    t = ctx.table("peaks", "every memory figure of the run (copies left out), the most "
                  "measured first: the run's peak", "report_peaks", ctx.run_id)
    if t is not None and len(t.rows) > 1:
        tables.append(t)
    if snapshot:
        tid, at = p["timeline_id"], p["at_step"]
        figs += _holders(ctx, "peak", tid, at, tables, notes)
        pictures += _curve_picture(ctx, tid)
    if ctx.has("jax_memory_profile"):
        figs += _jax_profiles(ctx, tables)
    ooms, ooms_sql = _ooms(ctx)
    for i, o in enumerate(ooms, 1):
        k = f"oom{i}"
        fits = {True: "it would have fit: the memory was there", False: "it would not fit",
                None: "whether it fits is unknown"}[o["request_fits"]]
        figs += [Figure(f"{k}_requested_bytes", f"OOM {i}: requested", o["requested_bytes"],
                        "bytes", ooms_sql, f"{o['title']}, trace entry {o['event_index']:,}"),
                 Figure(f"{k}_device_free", f"OOM {i}: free on the device (CUDA)",
                        o["device_free"], "bytes", ooms_sql),
                 Figure(f"{k}_allocated_bytes", f"OOM {i}: allocated", o["allocated_bytes"],
                        "bytes", ooms_sql, "requested bytes of the live blocks"),
                 Figure(f"{k}_reserved_bytes", f"OOM {i}: reserved", o["reserved_bytes"],
                        "bytes", ooms_sql),
                 Figure(f"{k}_largest_free_block", f"OOM {i}: largest free block",
                        o["largest_free_block"], "bytes", ooms_sql,
                        f"of the request's stream and pool: {fits}")]
        ctx.headline.append(Verdict(
            k, f"OOM in {o['title']} at trace entry {o['event_index']:,}: asked for "
            f"{w.bytes(o['requested_bytes'])} with {w.bytes(o['device_free'])} free on the "
            f"device, {w.bytes(o['allocated_bytes'])} allocated and "
            f"{w.bytes(o['reserved_bytes'])} reserved; the largest free block "
            f"{w.bytes(o['largest_free_block'])}: {fits}.",
            Evidence("snapshot", o["timeline_id"], o["event_index"]),
            (f"{k}_requested_bytes", f"{k}_device_free", f"{k}_largest_free_block")))
        figs += _holders(ctx, k, o["timeline_id"], o["event_index"], tables, notes,
                         when=f"at OOM {i}")
    return Section("memory", "Memory", tuple(figs), tuple(tables), tuple(pictures), tuple(notes))


JAX_PROFILES = 4  # the JAX memory profiles whose sites the report lists, the largest first


def _jax_profiles(ctx: Context, tables: list[Table]) -> list[Figure]:
    """The run's JAX device memory profiles: each one's live bytes and who holds them, by
    the Python line that made them (memory_profile_sites); the run's peak's largest site is
    a verdict."""
    profiles = ctx.table("jax_profiles", "JAX device memory profiles: the bytes live at each "
                         "dump (peaks)", "report_jax_profiles", ctx.run_id)
    if profiles is None:
        return []
    if len(profiles.rows) > 1:
        tables.append(profiles)
    figs: list[Figure] = []
    p = ctx.peak
    for i, row in enumerate(profiles.rows[:JAX_PROFILES], 1):
        r = dict(zip(profiles.columns, row))
        sites = ctx.table(f"jax{i}_sites", f"{r['title']}: live bytes by the line that made "
                          "them (memory_profile_sites)", "report_jax_sites", r["timeline_id"])
        if sites is None:
            continue
        tables.append(sites)
        if p is None or p["timeline_id"] != r["timeline_id"]:
            continue
        site, n, b = sites.rows[0]
        figs.append(Figure("peak_top_site", "largest holder at the dump", site, "text",
                           sites.sql, f"{n:,} buffers, {ctx.words.bytes(b)}, "
                           f"{_share(b, r['live_bytes'])} of the live bytes"))
        ctx.headline.append(Verdict(
            "peak_holder", f"At the dump, {site} held {ctx.words.bytes(b)} "
            f"({_share(b, r['live_bytes'])} of the live bytes).",
            Evidence("timeline", r["timeline_id"], 0), ("peak_top_site",)))
    return figs


def _ooms(ctx: Context) -> tuple[list[dict[str, Any]], str]:
    """The run's OOMs (the ooms view), read where a snapshot's notes count one (the view
    joins every block; a snapshot without an OOM skips it)."""
    snaps = ctx.ask("report_snapshot_events", ctx.run_id)[0] if ctx.has("cuda_snapshot") else []
    if not any(s["ooms"] for s in snaps):
        return [], ""
    return ctx.ask("report_ooms", ctx.run_id)


def _holders(ctx: Context, key: str, tid: int, at: int, tables: list[Table],
             notes: list[str], when: str = "at the peak") -> list[Figure]:
    """Who held the memory after trace entry ``at``: totals (and what was made before the
    recording window), the sites and the compiled graphs' buffers; the first site is a
    verdict when it is the peak's."""
    rows, sql = ctx.ask("report_held_total", tid, at)
    h = rows[0]
    if not h["blocks"]:
        return []
    figs = [Figure(f"{key}_held_bytes", f"held {when}", h["bytes"], "bytes", sql,
                   f"{h['blocks']:,} blocks: requested bytes"),
            Figure(f"{key}_held_block_bytes", f"held {when}, whole blocks", h["block_bytes"],
                   "bytes", sql),
            Figure(f"{key}_before_window_bytes", f"made before the recording window ({when})",
                   h["before_window_bytes"], "bytes", sql,
                   f"{h['before_window_blocks']:,} blocks, "
                   f"{_share(h['before_window_bytes'], h['bytes'])} of what was held")]
    if h["no_frames_blocks"]:
        ctx.health.append(f"{when}: {h['no_frames_blocks']:,} blocks "
                     f"({ctx.words.bytes(h['no_frames_bytes'])}) have no frames: torch recorded "
                     "no stack for them (history recorded with stacks='python' from another "
                     "thread, e.g. the autograd engine's, or context=None)")
    holder: tuple[str, int, str] | None = None  # (who, bytes, figure key): the verdict's
    by_site = ctx.table(f"{key}_by_site", f"held {when}, by allocation site",
                        "report_held_by_site", tid, at)
    if by_site is not None:
        tables.append(by_site)
        site, n, b = by_site.rows[0][0], by_site.rows[0][1], by_site.rows[0][2]
        figs.append(Figure(f"{key}_top_site", f"largest holder {when}", site, "text",
                           by_site.sql, f"{n:,} blocks, {_share(b, h['bytes'])}"))
        holder = (site, b, f"{key}_top_site")
    if ctx.has("inductor_wrapper"):
        ctx.allocs_once()  # report_held_graphs, report_held_by_graph, report_plan_calls
        graphs, sql = ctx.ask("report_held_graphs", tid, at, tid)
        top = next((g for g in graphs if not g["graph"].startswith("(")), None)
        if top is not None:
            figs.append(Figure(f"{key}_top_graph", f"compiled graph holding the most {when}",
                               top["graph"], "text", sql,
                               f"{top['blocks']:,} blocks, {ctx.words.bytes(top['bytes'])}, "
                               f"{_share(top['bytes'], h['bytes'])}"))
            if holder is None or top["bytes"] > holder[1]:
                holder = (f"compiled graph {top['graph']}'s buffers", top["bytes"],
                          f"{key}_top_graph")
    if key == "peak" and holder is not None:
        ctx.headline.append(Verdict(
            "peak_holder", f"At the peak, {holder[0]} held {ctx.words.bytes(holder[1])} "
            f"({_share(holder[1], h['bytes'])} of what was allocated).",
            Evidence("snapshot", tid, at), (holder[2],)))
    if ctx.has("inductor_wrapper"):
        by_graph = ctx.table(f"{key}_by_graph", f"held {when}, by compiled graph, buffer and "
                             "line (planned_vs_actual)", "report_held_by_graph", tid, at, tid)
        if by_graph is not None and any(not r[0].startswith("(") for r in by_graph.rows):
            tables.append(by_graph)  # some of the blocks map to a graph's line
    return figs


def _share(part: int | None, whole: int | None) -> str:
    if not whole or part is None:
        return "-"
    return f"{100 * part / whole:.1f}%"


def _curve_picture(ctx: Context, tid: int, points: int = 400) -> list[Picture]:
    rows, sql = ctx.ask("report_curve", tid, points)
    if len(rows) < 2:
        return []
    ooms = [(o["event_index"], f"OOM {i}") for i, o in enumerate(_ooms(ctx)[0], 1)
            if o["timeline_id"] == tid]
    marks = [(ctx.peak["at_step"], "peak")] if ctx.peak and ctx.peak["timeline_id"] == tid else []
    return [Picture("curve", "allocated memory over the trace (whole blocks, requested, reserved)",
                    "curve", tuple(r["first_event"] for r in rows),
                    (("whole blocks", tuple(r["block_bytes"] for r in rows)),
                     ("requested", tuple(r["allocated_bytes"] for r in rows)),
                     ("reserved", tuple(r["reserved_bytes"] for r in rows))),
                    tuple(marks + ooms), "trace entry", "bytes", sql)]


def plan_section(ctx: Context) -> Section | None:
    """Plan vs actual: each compiled graph's planned peak beside what the allocator did
    during its calls, the gap by who made the bytes."""
    tables: list[Table] = []
    figs: list[Figure] = []
    notes: list[str] = []
    if not ctx.has("inductor_wrapper", "inductor_ir"):
        return None
    if ctx.has("cuda_snapshot") and ctx.has("inductor_wrapper"):
        ctx.allocs_once()
    calls = (ctx.table("plan_calls", "planned vs actual, per graph call (planned_vs_actual_calls)",
                       "report_plan_calls", ctx.run_id) if ctx.has("cuda_snapshot") else None)
    if calls is not None and any(r[calls.columns.index("graph")] for r in calls.rows):
        calls = attrs.evolve(calls, rows=tuple(r for r in calls.rows
                                               if r[calls.columns.index("graph")]))
        tables.append(calls)
        cols = calls.columns
        worst = max(calls.rows, key=lambda r: (r[cols.index("measured_peak_bytes")] or 0))
        row = dict(zip(cols, worst))
        figs += [Figure("plan_graph", "graph with the largest measured call peak", row["graph"],
                        "text", calls.sql, f"call {row['call_index']}"),
                 Figure("plan_planned_peak_bytes", "its planned peak",
                        row["planned_peak_bytes"], "bytes", calls.sql,
                        "the output code's own buffers, inputs excluded"),
                 Figure("plan_measured_peak_bytes", "the allocator's peak during the call",
                        row["measured_peak_bytes"], "bytes", calls.sql,
                        "requested bytes of every live block, whoever made it")]
        parts = [("planned_live_bytes", "its planned buffers"),
                 ("unplanned_call_bytes", "the call's unplanned allocations (workspaces)"),
                 ("other_graph_bytes", "other graphs' buffers (e.g. what the forward saved)"),
                 ("optimizer_bytes", "optimizer state"),
                 ("before_window_bytes", "made before the recording window"),
                 ("other_bytes", "everything else (inputs, eager tensors)")]
        gap = ", ".join(f"{ctx.words.bytes(row[c])} {what}" for c, what in parts if row[c])
        notes.append(f"{row['graph']} (call {row['call_index']}): planned "
                     f"{ctx.words.bytes(row['planned_peak_bytes'])}, the allocator held "
                     f"{ctx.words.bytes(row['measured_peak_bytes'])}: {gap}.")
    elif ctx.has("cuda_snapshot"):
        unmapped, sql = ctx.ask("report_plan_unmapped", ctx.run_id)
        if unmapped:
            reasons = sorted({r["unmapped_reason"] for r in unmapped if r["unmapped_reason"]})
            notes.append("planned_vs_actual maps no call of this run's snapshot: "
                         + ("; ".join(reasons) or "its frames name output code no timeline holds")
                         + f" ({sql})")
    est = None if not ctx.has("kineto") else ctx.table("memory_estimates", "the compiler's memory estimates beside the profiler's "
                    "(memory_estimate_vs_measured)", "report_memory_estimates", ctx.run_id)
    if est is not None:
        tables.append(est)
    if not tables and not notes:
        return None
    return Section("plan", "Plan vs actual", tuple(figs), tuple(tables), notes=tuple(notes))


MANY_TRACES = 16  # past this many traces the time section gives the run's figures only
# Compute the run's collective matching once per report (Context.match_once); off, each
# view derives it again (what `python -m bench report` compares).
MATCH_ONCE = True
# Read the run's snapshots' allocations by output-code line once per report
# (Context.allocs_once); off, each view derives them again.
ALLOCS_ONCE = True


def time_section(ctx: Context) -> Section | None:
    """Step time, top kernels, exposed communication and overlap, stragglers, clocks."""
    if not ctx.has("kineto", "jax_trace"):
        return None
    traces, _ = ctx.ask("report_traces", ctx.run_id)
    w = ctx.words
    figs: list[Figure] = []
    tables: list[Table] = []
    pictures: list[Picture] = []
    notes: list[str] = []
    step_rows, step_sql = ctx.ask("report_step_time", ctx.run_id)
    st = step_rows[0] if step_rows else None
    if st is not None and st["step_ns"] is not None:
        figs.append(Figure("step_ns", "step time", st["step_ns"], "ns", step_sql,
                           f"the median over {st['traces']:,} trace(s) of each one's median "
                           "ProfilerStep (its CPU range)"))
        figs.append(Figure("max_step_ns", "longest step", st["max_step_ns"], "ns", step_sql))
    # per trace (with its GPU work: step_totals, seconds at a thousand ranks) where a reader
    # reads them one by one
    steps = (ctx.table("steps", "profiler steps per trace, the slowest first (step_totals)",
                       "report_steps", ctx.run_id) if len(traces) <= MANY_TRACES else None)
    for t in (steps, ctx.table("top_kernels", "top kernels (all traces of the run)",
                               "report_top_kernels", ctx.run_id),
              ctx.table("overlap", "communication: exposed and overlapped by compute, the "
                        "most exposed first (comm_overlap_summary)", "report_overlap",
                        ctx.run_id)):
        if t is not None:
            tables.append(t)
    ov = next((t for t in tables if t.key == "overlap"), None)
    if ov is not None:
        row = dict(zip(ov.columns, ov.rows[0]))
        who = f"rank {row['rank']}" if row["rank"] is not None else f"timeline {row['timeline_id']}"
        figs.append(Figure("exposed_comm_ns", "exposed communication (most of any trace)",
                           row["exposed_ns"], "ns", ov.sql,
                           f"{who}: {row['overlap_pct']}% of its {w.ns(row['comm_ns'])} "
                           "communication overlapped by compute"))
    if ctx.run["ranks"]:
        ctx.match_once()  # stragglers, clock offsets and what-if: one matching
    strag = ctx.table("stragglers", "stragglers: the wait each rank's late arrivals caused, "
                      "the worst first, and its clock's offset", "report_stragglers", ctx.run_id
                      ) if _has_collectives(ctx) else None
    if strag is not None:
        tables.append(strag)
        row = dict(zip(strag.columns, strag.rows[0]))
        no_steps = [t["title"] for t in traces if not t["profiler_steps"]]
        base = ("their collectives' span (the traces have no ProfilerStep marks)" if no_steps
                else "their step time")
        figs += [Figure("straggler_rank", "straggler rank", row["rank"], "id", strag.sql),
                 Figure("straggler_caused_wait_ns", "the wait it caused the others",
                        row["caused_wait_ns"], "ns", strag.sql,
                        f"over {row['times_last']} collectives it reached last"),
                 Figure("straggler_wait_share", "share of the others' time",
                        row["wait_share"], "ratio", strag.sql, f"of {base}")]
        costs = _whatif(ctx, figs, tables, notes)
        if row["caused_wait_ns"]:
            cost = costs.get(row["rank"])
            ctx.headline.append(Verdict(
                "straggler", f"Straggler rank {row['rank']}: its late arrivals cost the other "
                f"ranks {w.ns(row['caused_wait_ns'])} of waiting "
                f"({100 * float(row['wait_share'] or 0):.2f}% of {base})"
                + (f"; {cost.sentence(w.ns)}" if cost else "") + ".",
                Evidence("ranks", row["timeline_id"]),
                ("straggler_caused_wait_ns", "straggler_wait_share")
                + ((f"whatif_rank{row['rank']}_modelled_ns",) if cost else ())))
        pictures.append(Picture(
            "stragglers", "wait caused, per rank (largest first)", "bars",
            tuple(f"rank {r[0]}" for r in strag.rows[:16]),
            (("caused wait", tuple(r[strag.columns.index("caused_wait_ns")]
                                   for r in strag.rows[:16])),), (), "rank", "ns", strag.sql))
    figs += _graph_replays(ctx, tables)
    keys = {f.key: f.value for f in figs}
    if "step_ns" in keys:
        exposed = (f"; exposed communication up to {w.ns(keys['exposed_comm_ns'])} per trace"
                   if "exposed_comm_ns" in keys else "")
        ctx.headline.append(Verdict(
            "time", f"Step time {w.ns(keys['step_ns'])} (longest {w.ns(keys['max_step_ns'])})"
            f"{exposed}.", Evidence("profiler", traces[0]["timeline_id"]),
            ("step_ns", "exposed_comm_ns")))
    return Section("time", "Time", tuple(figs), tuple(tables), tuple(pictures), tuple(notes))


def _has_collectives(ctx: Context) -> bool:
    """Whether the run's traces hold a collective kernel: without one the rank views have
    no row for it, and asking them costs a second of planning."""
    return bool(ctx.ask("report_has_collectives", ctx.run_id)[0][0]["has"])


def _whatif(ctx: Context, figs: list[Figure], tables: list[Table],
            notes: list[str]) -> dict[int, WhatIf]:
    """What each straggler cost (whatif_stragglers): per rank its costliest step, in words
    and as figures; the table of the costliest steps. Returns those per rank."""
    t = ctx.table("whatif", "what each straggler cost: its costliest step without its late "
                  "arrivals, the stragglers in order (whatif_stragglers)", "report_whatif",
                  ctx.run_id)
    if t is None:
        return {}
    tables.append(t)
    costs: dict[int, WhatIf] = {}
    for r in t.rows:
        c = WhatIf(*r)
        if not c.saved_ns:
            continue
        costs[c.rank] = c
        k = f"whatif_rank{c.rank}"
        figs += [Figure(f"{k}_measured_ns", f"rank {c.rank}'s costliest step ({c.step}), "
                        "as measured", c.measured_ns, "ns", t.sql,
                        "the longest GPU extent of the step over the ranks"),
                 Figure(f"{k}_modelled_ns", f"step {c.step} without rank {c.rank}'s delay",
                        c.modelled_ns, "ns", t.sql,
                        f"{ctx.words.ns(c.saved_ns)} saved, {c.n_late} late arrival"
                        f"{'s' if c.n_late != 1 else ''} on time")]
        notes.append(c.sentence(ctx.words.ns)[0].upper() + c.sentence(ctx.words.ns)[1:]
                     + " (whatif_stragglers: the step's collectives replayed with its late "
                     "arrivals on time)")
    return costs


def _graph_replays(ctx: Context, tables: list[Table]) -> list[Figure]:
    """CUDA-graph replays: how many GPU kernels came from replays and how many of those are
    attached to a compiled node (graph_replays); the unattached ones go to capture health."""
    if not ctx.ask("report_has_graph_launches", ctx.run_id)[0][0]["has"]:
        return []
    t = ctx.table("graph_replays", "CUDA-graph replays per trace (graph_replays)",
                  "report_graph_replays", ctx.run_id)
    if t is None:
        return []
    tables.append(t)
    col = {c: i for i, c in enumerate(t.columns)}
    total = {c: sum(r[col[c]] or 0 for r in t.rows)
             for c in ("replays", "replay_kernels", "attached_kernels", "unattached_kernels")}
    figs = [Figure("replay_kernels", "GPU kernels from CUDA-graph replays",
                   total["replay_kernels"], "count", t.sql,
                   f"of {total['replays']:,} replays (cudaGraphLaunch)"),
            Figure("replay_attached_kernels", "of those, attached to a compiled node",
                   total["attached_kernels"], "count", t.sql,
                   f"{_share(total['attached_kernels'], total['replay_kernels'])}")]
    if total["unattached_kernels"]:
        rows, sql = ctx.ask("report_replay_unattached", ctx.run_id)
        ctx.health.append(
            f"{total['unattached_kernels']:,} GPU kernels of CUDA-graph replays are attached "
            "to no compiled node (their time is in unattached_kernels, not node_times): "
            + "; ".join(f"{r['kernels']:,} {r['reason']}" for r in rows) + f" ({sql})")
    return figs


def compile_section(ctx: Context) -> Section | None:
    """The compiled graphs (each once), the compiler's time estimates against what was
    measured, recompiles."""
    tables: list[Table] = []
    figs: list[Figure] = []
    notes: list[str] = []
    graphs = ctx.table("graphs", "compiled graphs, each once (graphs)", "report_graphs",
                       ctx.run_id)
    if graphs is not None:
        tables.append(graphs)
    compiles = (ctx.table("compiles", "compiles (compilation_metrics)", "report_compiles",
                          ctx.run_id) if ctx.has("torch_trace") else None)
    if compiles is not None:
        tables.append(compiles)
        rows, sql = ctx.ask("report_recompiles", ctx.run_id)
        figs.append(Figure("recompiles", "recompiles", rows[0]["recompiles"], "count", sql,
                           "compiles of a frame after its first"))
        frames: dict[tuple[Any, Any], int] = {}
        for r in compiles.rows:
            d = dict(zip(compiles.columns, r))
            frames[(d["co_name"], d["co_filename"])] = frames.get(
                (d["co_name"], d["co_filename"]), 0) + 1
        notes += [f"{name} ({file}) was compiled {n} times"
                  for (name, file), n in frames.items() if n > 1]
    # estimate_vs_measured has rows only where the run has Inductor's estimates (seconds
    # of planning for its empty answer otherwise); capture health says why it is empty
    est = (ctx.table("estimates", "Inductor's estimated runtime beside the measured one, per "
                     "graph (estimate_vs_measured)", "report_estimates", ctx.run_id)
           if ctx.has("kineto", "jax_trace") and ctx.has("inductor_wrapper")
           and ctx.ask("report_estimate_sources", ctx.run_id)[0][0]["estimates"] else None)
    if est is not None:
        tables.append(est)
    if not tables:
        return None
    return Section("compile", "Compile", tuple(figs), tuple(tables), notes=tuple(notes))


def health_section(ctx: Context) -> Section | None:
    """Capture health: what this report cannot know, and why."""
    notes: list[str] = list(ctx.health)
    skipped_rows, _ = ctx.ask("report_skipped", ctx.run_id)
    skipped = json.loads(skipped_rows[0]["skipped"]) if skipped_rows and skipped_rows[0]["skipped"] else {}
    if skipped:
        n = sum(skipped.values())
        notes.append(f"{n} file{'s' if n != 1 else ''} of the folder tlview does not read were "
                     "skipped: " + ", ".join(f"{c} {k}" for k, c in skipped.items()))
    for a in ctx.ask("report_empty_artifacts", ctx.run_id)[0]:
        notes.append(f"{a['path']} ({a['kind']}) recorded nothing: no timeline")
    snaps = ctx.ask("report_snapshot_events", ctx.run_id)[0] if ctx.has("cuda_snapshot") else []
    for s in snaps:
        if s["entries"] == 100_000:
            notes.append(f"timeline {s['timeline_id']}: the allocator trace holds exactly "
                         "100,000 entries, torch's default max_entries: the ring buffer is "
                         "likely full, the oldest entries lost")
        if s["consistent"] is False:
            notes.append(f"timeline {s['timeline_id']}: the allocator trace does not match "
                         "its allocations; its sums are not to be trusted")
    traces = ctx.ask("report_traces", ctx.run_id)[0] if ctx.has("kineto", "jax_trace") else []
    for t in traces:
        if not t["profiler_steps"]:
            notes.append(f"{t['title']}: no ProfilerStep marks (profiler.step() not called): "
                         "step times and shares of a step are over the whole trace")
    for o in ctx.ask("report_stream_overlaps", ctx.run_id)[0] if traces else []:
        notes.append(f"timeline {o['timeline_id']}: {o['overlapping']:,} GPU events start "
                     "before the previous one on their stream ends (dropped or misordered "
                     "events, or clock trouble)")
    for r in ctx.ask("report_rank_runs", ctx.run_id)[0] if traces and _has_collectives(ctx) else []:
        if r["missing"]:
            notes.append(f"ranks without a trace: {_ranks_text(r['missing'])} of "
                         f"{r['world_size']}: their collectives are matched without them")
    est = (ctx.ask("report_estimate_sources", ctx.run_id)[0][0]
           if ctx.has("inductor_wrapper") else {"traces": 0, "estimates": 0})
    if est["traces"] and not est["estimates"] and ctx.run["n_graphs"]:
        notes.append("estimate_vs_measured is empty: no Inductor runtime estimates in the "
                     "run (a TORCH_TRACE log written with LOG_TLPARSE=1 carries them)")
    elif est["estimates"] and not est["traces"]:
        notes.append("estimate_vs_measured is empty: no profiler trace covers the estimated "
                     "graphs")
    elif est["estimates"] and not est["attached_calls"]:
        notes.append("estimate_vs_measured is empty: no call in the profiler traces matched "
                     "an ingested output code (unattached_kernels says why)")
    for r in ctx.ask("report_warnings", ctx.run_id)[0]:
        notes.append(f"{r['title']}: {r['warning']}")
    return Section("health", "Capture health: what this report cannot know",
                   notes=tuple(notes or ["nothing found missing or inconsistent"]))


def _ranks_text(ranks: Sequence[int]) -> str:
    if len(ranks) <= 8:
        return ", ".join(str(r) for r in ranks)
    return ", ".join(str(r) for r in ranks[:8]) + f" and {len(ranks) - 8} more"


SectionBuilder = Callable[[Context], "Section | None"]

# The report, in order: add a section here (memory must come before plan: it finds the
# run's peak).
SECTIONS: list[SectionBuilder] = [read_section, hang_section, memory_section, plan_section,
                                  time_section, compile_section, health_section]


# -- entry points ----------------------------------------------------------------------


def find_run(db: Database, name: str | None) -> tuple[int, int]:
    """The run ``name`` (its id or name) means, else the last run: (run id, runs in the
    database). RunNotFound names the runs there are."""
    runs = db.query("report_run_names")
    if not runs:
        raise RunNotFound("the database holds no run: ingest one with `tlview ingest PATH`")
    if name is None:
        return int(runs[-1][0]), len(runs)
    ids = [r[0] for r in db.query("run_by_name_or_id", name, name)]
    if not ids:
        known = ", ".join(f"{i} {n}" for i, n in runs[:20])
        raise RunNotFound(f"no run {name!r} in the database; its runs: {known}"
                          + (" ..." if len(runs) > 20 else ""))
    return int(ids[0]), len(runs)


def build_report(db: Database, run_id: int, words: Words,
                 sections: Sequence[SectionBuilder] | None = None) -> Report:
    """The report of run ``run_id``: every section that has data, the headline their
    builders found."""
    rows = db.query_dicts("report_run", run_id)
    if not rows:
        raise RunNotFound(f"no run {run_id} in the database")
    run = {k: _plain(v) for k, v in rows[0].items()}
    formats = {f: n for f, n in db.query("report_formats", run_id)}
    ctx = Context(db, run, render_sql(db.queries["report_run"], [run_id]), words, formats)
    try:
        built = [s for b in (SECTIONS if sections is None else sections)
                 if (s := b(ctx)) is not None]
    finally:
        for q in ctx.scratch:
            db.sql(db.queries[q])
    return Report(run, tuple(ctx.headline), tuple(built))


@frozen
class RunRow:
    """A run as the TUI's runs screen lists it (the ``runs`` view)."""

    run_id: int
    name: str
    root: str
    n_sources: int
    n_timelines: int
    artifacts: str  # "4 output_code.py, 1 profiler trace"


def list_runs(db: Database) -> tuple[RunRow, ...]:
    return tuple(RunRow(r["run_id"], r["name"], r["root"], r["n_sources"], r["n_timelines"],
                        words.artifact_counts(r["artifacts"]))
                 for r in db.query_dicts("run_list"))


def headline(db: Database, run_id: int, words: Words) -> tuple[Verdict, ...]:
    """The verdict lines of a run (the report's headline), for the TUI's runs screen."""
    return build_report(db, run_id, words,
                        sections=[hang_section, memory_section, time_section]).headline
