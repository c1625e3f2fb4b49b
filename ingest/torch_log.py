"""PyTorch logs (``TORCH_LOGS=aot_graphs,output_code``): undressing lines and finding sections.

torch prints its logs in more than one dress:

* glog (the default): every line of every record carries a prefix::

      [rank0]:V1121 23:39:08.467000 597 torch/_inductor/graph.py:2045] [0/0] [__output_code] <text>

  (rank when distributed, level letter, date and time, pid, source file:line,
  compile id, artifact log name). Lines without a prefix in such a log were
  written by someone else (a Python warning, a traceback) and are *interleaved*.
* short (``TORCH_LOGS_FORMAT=short``, Python's basic format, seed 004): only the
  first line of a record has ``LEVEL:logger.name:``; the record's other lines
  follow bare, up to the next record header.
* bare: no prefix at all (an ``output_code.py`` file written by ``TORCH_COMPILE_DEBUG``).

:func:`undress` turns raw lines into :class:`LogLine` (payload text, the record
it belongs to, the prefix facts). :func:`parse_torch_log` splits the payload into
sections and hands each to its parser:

* ``Output code:`` (or a bare ``# AOT ID:`` line): an Inductor wrapper module
  (:mod:`tlview.ingest.inductor_wrapper`);
* ``TRACED GRAPH`` followed by ``===== Forward graph 0 =====``: an FX graph
  (:mod:`tlview.ingest.fx_graph`).

A section is the lines of its record: in the glog dress, the lines carrying the
same prefix (source line, compile id, artifact, pid); in the short dress, the
record's lines up to the next header. Warnings and tracebacks are recognised
and skipped wherever they appear, and counted; they never end an ingest.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import Any, NamedTuple

import attrs

from .errors import IngestError
from .records import Record, TimelineNote

FORMAT = "torch_log"

_GLOG = re.compile(
    r"(?:\[rank(?P<rank>\d+)\]:)?(?P<level>[VIWEC])(?P<date>\d{4}) "
    r"(?P<time>\d\d:\d\d:\d\d\.\d+) +(?P<pid>\d+) (?P<src>[^\s\]]+):(?P<lineno>\d+)\]"
    r"(?: \[(?P<cid>[^\]\s]*)\])?(?: \[__(?P<artifact>\w+)\])?"
)
_SHORT = re.compile(r"(?P<level>DEBUG|INFO|WARNING|ERROR|CRITICAL):(?P<logger>[\w.]+):")
_PY_WARNING = re.compile(r"\S.*:\d+: \w*(?:Warning|Error): ")
_TRACEBACK = "Traceback (most recent call last):"
_GRAPH_TITLE = re.compile(r"\s*=====\s*(?P<title>.*?)\s*=====\s*\Z")

_FX_KEPT = 64  # FX graph summaries kept for the wrapper modules that follow them

_LEVELS = {"V": "DEBUG", "I": "INFO", "W": "WARNING", "E": "ERROR", "C": "CRITICAL"}


class LogLine(NamedTuple):
    """One line of a log with its dress removed.

    ``record`` numbers the log records (0 before the first); ``meta`` holds the
    prefix facts of the record (None for bare text); ``foreign`` marks an
    interleaved line (warning, traceback) that belongs to no section.
    """

    number: int
    text: str
    record: int
    meta: dict[str, Any] | None
    starts_record: bool = False
    foreign: bool = False


def _glog_meta(m: re.Match[str]) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "dress": "glog", "level": _LEVELS[m["level"]], "time": f"{m['date']} {m['time']}",
        "pid": int(m["pid"]), "source": f"{m['src']}:{m['lineno']}",
    }
    if m["rank"] is not None:
        meta["rank"] = int(m["rank"])
    if m["cid"] is not None:
        meta["compile_id"] = m["cid"]
    if m["artifact"] is not None:
        meta["log"] = m["artifact"]
    return meta


def _short_meta(m: re.Match[str]) -> dict[str, Any]:
    meta = {"dress": "short", "level": m["level"], "logger": m["logger"]}
    if m["logger"].rsplit(".", 1)[-1].startswith("__"):
        meta["log"] = m["logger"].rsplit(".", 1)[-1][2:]
    return meta


def undress(lines: Iterable[tuple[int, str]]) -> Iterator[LogLine]:
    """Strip glog/short prefixes; mark record starts and interleaved lines."""
    record = 0
    key: tuple[Any, ...] | None = None  # glog prefix identity of the current record
    dress: str | None = None  # dress of the current record
    meta: dict[str, Any] | None = None
    in_traceback = False
    after_warning = False
    # The glog prefix of the last line (its text up to the match's end) and what could
    # still follow it in a longer match (the optional compile id and artifact): a line
    # that begins with the same prefix, not followed by that, matches it the same way, so
    # it continues the record without the match (the lines of one record repeat its
    # prefix; the figures: docs/benchmarks.md, `undress`).
    prefix: str | None = None
    longer = ""
    for number, raw in lines:
        starts = False
        if prefix is None or not raw.startswith(prefix) or (
                longer and raw.startswith(longer, len(prefix))):
            prefix = None
            m = _GLOG.match(raw) if raw[:1] in "[VIWEC" and raw[:1] else None
            if m:
                new_key = (m["rank"], m["level"], m["time"], m["pid"], m["src"], m["lineno"],
                           m["cid"], m["artifact"])
                starts = new_key != key
                if starts:
                    record += 1
                    key, dress, meta = new_key, "glog", _glog_meta(m)
                prefix = raw[:m.end()]
                longer = ("" if m["artifact"] is not None
                          else " [__" if m["cid"] is not None else " [")
        if prefix is not None:  # a glog line: its text after the prefix
            text = raw[len(prefix):]
            if text.startswith(" "):
                text = text[1:]
            in_traceback = after_warning = False
            yield LogLine(number, text, record, meta, starts)
            continue
        if raw[:1] in "DIWEC" and raw[:1]:
            m = _SHORT.match(raw)
            if m:
                record += 1
                key, dress = None, "short"
                meta = _short_meta(m)
                in_traceback = after_warning = False
                yield LogLine(number, raw[m.end():], record, meta, True)
                continue
        # A line without a prefix.
        if in_traceback:
            if raw.startswith((" ", "\t")) or not raw.strip():
                yield LogLine(number, raw, record, meta, foreign=True)
                continue
            in_traceback = False
            yield LogLine(number, raw, record, meta, foreign=True)  # the exception line
            continue
        if raw.startswith(_TRACEBACK):
            in_traceback = True
            yield LogLine(number, raw, record, meta, foreign=True)
            continue
        if _PY_WARNING.match(raw):
            after_warning = True
            yield LogLine(number, raw, record, meta, foreign=True)
            continue
        if after_warning and raw.startswith("  ") and raw.strip():
            after_warning = False  # the source line warnings.warn echoes
            yield LogLine(number, raw, record, meta, foreign=True)
            continue
        after_warning = False
        if dress == "glog":
            yield LogLine(number, raw, record, meta, foreign=True)
            continue
        yield LogLine(number, raw, record, meta)


def graph_title(text: str) -> str | None:
    """``' ===== Forward graph 0 ====='`` -> ``'Forward graph 0'``."""
    m = _GRAPH_TITLE.match(text)
    return m["title"] if m else None


@attrs.define
class _Open:
    parser: Any
    record: int
    dress: str | None
    key: tuple[Any, ...] | None
    # The last prefix facts seen and whether they continue the section: a record's lines
    # share one meta dict, so most lines are decided without building their key.
    seen: Any = None
    seen_continues: bool = False


def _section_key(line: LogLine) -> tuple[Any, ...] | None:
    m = line.meta
    if not m or m.get("dress") != "glog":
        return None
    return (m.get("rank"), m.get("pid"), m.get("source"), m.get("compile_id"), m.get("log"))


def parse_torch_log(lines: Iterable[tuple[int, str]], path: str, *,
                    graph: dict[str, Any] | None = None) -> Iterator[Record]:
    """Yield the records of every FX graph and wrapper module in a torch log, in log order.

    ``lines``: (number, raw line); see :func:`parse_log_lines` for the rest.
    """
    return parse_log_lines(undress(lines), path, graph=graph)


def parse_log_lines(loglines: Iterable[LogLine], path: str, *,
                    graph: dict[str, Any] | None = None) -> Iterator[Record]:
    """The records of a torch log's undressed lines (:func:`undress`), in log order.

    ``graph``: the FX graph summary of the module(s) where the caller knows it (the
    ``fx_graph_*.py`` files beside a debug folder's ``output_code.py``), used for the
    dtypes of extern outputs when the log itself holds no graph of the same AOT id.

    Each timeline gets exactly one TimelineNote (its summary), yielded once nothing
    more can be learned about it (an ``Output code written to:`` line follows its module).
    """
    from .fx_graph import FxGraphParser
    from .inductor_wrapper import WrapperParser

    names = _Names()
    fx_by_aot: dict[str, Any] = {}  # aot id -> summary of its FX graph (for extern dtypes)
    current: _Open | None = None
    pending_title: LogLine | None = None  # a "TRACED GRAPH" line waiting for its title
    note: TimelineNote | None = None  # the last closed section's note, still open to facts
    foreign = 0
    n_sections = 0
    last = 0

    def close() -> Iterator[Record]:
        nonlocal current, note
        if current is None:
            return
        parser, current = current.parser, None
        yield from parser.finish()
        if isinstance(parser, FxGraphParser) and parser.aot_id:
            fx_by_aot.pop(parser.aot_id, None)
            fx_by_aot[parser.aot_id] = parser.summary()
            while len(fx_by_aot) > _FX_KEPT:  # a wrapper follows its graphs closely
                del fx_by_aot[next(iter(fx_by_aot))]
        if note is not None:
            yield note
        note = parser.note

    def open_section(parser: Any, line: LogLine) -> Iterator[Record]:
        nonlocal current, n_sections
        yield from close()
        n_sections += 1
        current = _Open(parser, line.record, (line.meta or {}).get("dress"), _section_key(line))

    for line in loglines:
        last = line.number
        if line.foreign:
            foreign += 1
            if current is not None:
                current.parser.interleaved += 1
            continue
        text = line.text
        if pending_title is not None:
            title = graph_title(text)
            header, pending_title = pending_title, None
            if title is not None and line.record == header.record:
                parser = FxGraphParser(path, names.take("fx", title), title, header)
                yield from open_section(parser, line)
                yield from parser.start()
                continue
        if current is not None and _continues(current, line) and not (
                line.starts_record and _starts_section(text)):
            yield from current.parser.feed(line)
            continue
        # Not part of the open section: a new section, or text between sections.
        stripped = text.strip()
        if stripped == "TRACED GRAPH":
            pending_title = line
            continue
        if stripped == "Output code:":
            yield from open_section(WrapperParser(
                path, names, header=line, fx_graphs=fx_by_aot, graph=graph), line)
            continue
        if stripped.startswith("# AOT ID:"):
            wrapper = WrapperParser(path, names, header=line, fx_graphs=fx_by_aot,
                                    graph=graph)
            yield from open_section(wrapper, line)
            yield from wrapper.feed(line)
            continue
        if stripped.startswith("Output code written to:"):
            yield from close()
            if note is not None and note.attrs.get("written_to") is None:
                note = TimelineNote(timeline=note.timeline, attrs={
                    **note.attrs, "written_to": stripped.split(":", 1)[1].strip()})
            continue
        if current is not None and current.dress != "glog" and line.starts_record:
            yield from close()
    yield from close()
    if note is not None:
        if foreign:
            note = TimelineNote(timeline=note.timeline,
                                attrs={**note.attrs, "log_interleaved_lines": foreign})
        yield note
    if n_sections == 0:
        raise IngestError(path, last or 1, "no FX graph ('TRACED GRAPH' / '===== ... graph N "
                          "=====') and no Inductor output code ('Output code:' / '# AOT ID:') "
                          "found: expected a TORCH_LOGS=aot_graphs,output_code log or an "
                          "output_code.py")


def _starts_section(text: str) -> bool:
    s = text.strip()
    return s in ("TRACED GRAPH", "Output code:")


def _continues(sec: _Open, line: LogLine) -> bool:
    """Does ``line`` belong to the open section's record?"""
    if sec.dress == "glog":
        if line.meta is not sec.seen or sec.seen is None:
            sec.seen, sec.seen_continues = line.meta, _section_key(line) == sec.key
        return sec.seen_continues
    return line.record == sec.record and not line.starts_record


class _Names:
    """Unique timeline keys and display names within one ingest."""

    def __init__(self) -> None:
        self.used: dict[str, int] = {}

    def take(self, kind: str, name: str) -> tuple[str, str]:
        base = f"{kind}:{name}"
        n = self.used.get(base, 0)
        self.used[base] = n + 1
        if n == 0:
            return base, name
        return f"{base}#{n + 1}", f"{name} #{n + 1}"


def sniff(head: str, path: str) -> bool:
    """A torch log with FX graphs or output code, or a bare ``output_code.py``."""
    return ("TRACED GRAPH" in head and "graph" in head) or "Output code:" in head or (
        "# AOT ID:" in head and "async_compile" in head)


# The readable FX graphs TORCH_COMPILE_DEBUG writes beside a graph's output_code.py: the
# graph as AOT autograd traced it, then after Inductor's post-grad passes.
SIBLING_GRAPHS = ("fx_graph_readable.py", "fx_graph_transformed.py")


def sibling_graph(path: str) -> dict[str, Any] | None:
    """The FX graph summary of an ``output_code.py`` (or ``<aot id>.output_code.py``) from
    the ``fx_graph_readable.py`` / ``fx_graph_transformed.py`` in the same folder, which
    state every node's dtype and shape; None where there are none. Only regular files
    beside the given one are read (never a link out of the folder)."""
    from pathlib import Path

    from .fx_graph import graph_summary
    from .lines import read_lines

    p = Path(path)
    if not p.name.endswith("output_code.py"):
        return None
    prefix = p.name[: -len("output_code.py")]
    outputs: list[Any] = []
    inputs: dict[str, Any] = {}
    files = []
    for name in SIBLING_GRAPHS:
        q = p.with_name(prefix + name)
        if q.is_symlink() or not q.is_file():
            continue
        summary = graph_summary(read_lines(q))
        outputs += summary["outputs"]
        for k, v in summary["inputs"].items():
            inputs.setdefault(k, v)
        files.append(q.name)
    if not files:
        return None
    return {"outputs": outputs, "inputs": inputs, "files": files}


def parse_file(path: str, progress: Any = None) -> Iterator[Record]:
    from .lines import read_lines

    return parse_torch_log(read_lines(path, progress), path, graph=sibling_graph(path))


def _spec() -> Any:
    from .format_spec import FormatSpec

    return FormatSpec(
        name=FORMAT,
        description="PyTorch TORCH_LOGS=aot_graphs,output_code log (glog or short dress) "
        "or an Inductor output_code.py",
        sniff=sniff,
        parse=parse_file,
    )


SPEC = _spec()
