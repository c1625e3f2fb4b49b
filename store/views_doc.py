"""docs/views.md, generated from the comments of ``schemas/[0-9][0-9]_*.sql``.

The views are tlview's public interface and are documented where they are defined: the
comment block that names an object (``-- name: what it is``, or ``-- a, b: ...`` for
several), else the block right above its CREATE. This module lists the public objects
(every view, table macro and table whose name does not start with ``_``: the one list
the tests check), reads their comments, asks DuckDB for their columns, and writes the
page. Run it after changing a view or its comment:

    python -m tlview.store.views_doc            # writes docs/views.md
    python -m tlview.store.views_doc --check    # exit 1 if docs/views.md is stale
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
from pathlib import Path

import attrs

from .db import _schema_files
from .schema import open_database

COMMAND = "python -m tlview.store.views_doc"
DEFAULT_OUT = Path("docs/views.md")

_CREATE = re.compile(
    r"^CREATE (?:OR REPLACE )?(VIEW|MACRO|TABLE)(?: IF NOT EXISTS)? (\w+)(\([^)]*\))?", re.M)
# A block's first line names objects: `-- name: ...`, `-- f(a, b): ...`, `-- a, b: ...`.
_NAMES = re.compile(r"^(\w+(?:\([^)]*\))?(?:, \w+(?:\([^)]*\))?)*): ")
_NAME = re.compile(r"(\w+)(\([^)]*\))?")


@attrs.frozen
class PublicObject:
    """One documented view, table macro or table of the schema."""

    name: str
    kind: str  # view | macro | table
    file: str  # schemas/<file>.sql
    signature: str  # name, or name(params) for a macro (the comment's names where given)
    doc: tuple[str, ...]  # the comment block's lines, '-- ' taken off ('' if none)
    group: str  # objects sharing one comment block share a group (its first object)


@attrs.frozen
class SchemaFile:
    name: str
    header: tuple[str, ...]  # the file's opening comment, when it documents no object
    objects: tuple[PublicObject, ...]


def _comment_blocks(lines: list[str]) -> list[tuple[int, int]]:
    """(first, end) line ranges of the runs of ``--`` lines."""
    blocks, i = [], 0
    while i < len(lines):
        if lines[i].startswith("--"):
            j = i
            while j < len(lines) and lines[j].startswith("--"):
                j += 1
            blocks.append((i, j))
            i = j
        else:
            i += 1
    return blocks


def _uncomment(lines: list[str]) -> tuple[str, ...]:
    return tuple(line[3:] if line.startswith("-- ") else line[2:].lstrip() for line in lines)


def _named(first_line: str) -> dict[str, str]:
    """The objects a block's first line names, each with its signature."""
    m = _NAMES.match(first_line[3:] if first_line.startswith("-- ") else "")
    if not m:
        return {}
    return {n.group(1): n.group(0) for n in _NAME.finditer(m.group(1))}


def read_schema_file(name: str, text: str) -> SchemaFile:
    """The public objects of one schema file with their comments, in file order."""
    lines = text.split("\n")
    blocks = _comment_blocks(lines)
    naming: dict[str, tuple[int, str]] = {}  # object -> (its block, its signature there)
    for b, (first, _) in enumerate(blocks):
        for obj, sig in _named(lines[first]).items():
            naming.setdefault(obj, (b, sig))
    above = {end: b for b, (_, end) in enumerate(blocks)}  # the block ending right above
    objects: list[PublicObject] = []
    used: set[int] = set()
    prev_block: int | None = None
    for m in _CREATE.finditer(text):
        kind, obj, params = m.group(1).lower(), m.group(2), m.group(3) or ""
        line_no = text.count("\n", 0, m.start())
        own = above.get(line_no)
        if obj.startswith("_"):
            prev_block = own if own is not None else prev_block
            continue
        block, sig = naming.get(obj, (own, obj + params))
        if block is None and kind == "table" and prev_block is not None \
                and lines[line_no - 1].startswith(")"):
            block = prev_block  # a table written right after its sibling shares its comment
        prev_block = block
        doc: tuple[str, ...] = ()
        if block is not None:
            used.add(block)
            doc = _uncomment(lines[slice(*blocks[block])])
            label_gone = _NAMES.sub("", doc[0])  # the label naming the objects is the title
            if re.match(r"[a-z]+\b(?!_)", label_gone):
                label_gone = label_gone[0].upper() + label_gone[1:]
            doc = (label_gone, *doc[1:]) if label_gone else doc[1:]
        group = next((o.name for o in objects if block is not None and o.doc == doc), obj)
        objects.append(PublicObject(obj, kind, f"schemas/{name}", sig, doc, group))
    header: tuple[str, ...] = ()
    if blocks and blocks[0][0] == 0 and 0 not in used and not _named(lines[0]) \
            and not _CREATE.match(lines[blocks[0][1]] if blocks[0][1] < len(lines) else ""):
        header = _uncomment(lines[slice(*blocks[0])])
    return SchemaFile(name, header, tuple(objects))


def schema_files() -> list[SchemaFile]:
    """Every numbered schema file (the ones tlview creates), in the order it runs them."""
    return [read_schema_file(name, text) for name, text in _schema_files()]


def public_objects() -> list[PublicObject]:
    """Every public view, table macro and table: the list docs/views.md documents and
    the tests run (through the duckdb CLI, among others)."""
    return [o for f in schema_files() for o in f.objects]


# ---- markdown ------------------------------------------------------------------------

def _escape(text: str) -> str:
    """Comment text as markdown: `code` spans stay as they are; a word holding `*` or an
    HTML-like `<name>` becomes code (markdown would take them for emphasis or a tag);
    backslashes and an underscore opening a word are escaped."""
    out = []
    for i, part in enumerate(re.split(r"(`[^`]*`)", text)):
        if i % 2:
            out.append(part)
            continue
        for j, piece in enumerate(_AS_CODE.split(part)):
            if j % 2:
                out.append(f"`{piece}`")
            else:
                out.append(re.sub(r"(?<!\w)_(?=\w)", r"\\_", piece.replace("\\", "\\\\")))
    return "".join(out)


_AS_CODE = re.compile(r"([^\s`(]*<[A-Za-z/][^<>`]*>[^\s`,;:)]*|[^\s`(]+\*[^\s`,;:)]*|\*[^\s`,;:)]+)")
# An indented line that opens a list item: `name: ...`, `a / b: ...`, `x = ...`, or a term
# followed by a column of spaces (`'seq'        the sequence number ...`).
_LABEL = re.compile(r"^[\w`'\"][\w`'\"./,()| -]*?( =|:) |^\S+ {2,}\S|^'\w+' ")


def _markdown(doc: tuple[str, ...]) -> list[str]:
    """A comment block as paragraphs (unindented lines) and lists (indented lines: an
    item starts at the least indented line that opens with a label, ``col: ...``)."""
    out: list[str] = []
    para: list[str] = []
    items: list[str] = []
    indent = None
    last = ""

    def flush() -> None:
        nonlocal indent
        if para:
            out.extend([" ".join(para), ""])
            para.clear()
        if items:
            out.extend([*(f"- {i}" for i in items), ""])
            items.clear()
        indent = None

    for raw in doc:
        text = raw.strip()
        if not text:
            flush()
            continue
        lead = len(raw) - len(raw.lstrip())
        if lead == 0:
            if items:
                flush()
            para.append(_escape(text))
            last = text
            continue
        if not items and para and not (_LABEL.match(text) and last[-1] in ";.:)"):
            para.append(_escape(text))  # a paragraph's line, indented
            last = text
            continue
        if para:
            out.extend([" ".join(para), ""])
            para.clear()
        if indent is None or lead < indent:
            indent = lead
        # a new item: a label at the list's indent after a line that ended a clause
        if not items or (lead == indent and _LABEL.match(text) and last[-1] in ";.:)"):
            items.append(_escape(text))
        else:
            items[-1] += " " + _escape(text)
        last = text
    flush()
    return out


def _groups(objects: tuple[PublicObject, ...]) -> list[list[PublicObject]]:
    """The objects in file order, those sharing one comment together."""
    groups: dict[str, list[PublicObject]] = {}
    for o in objects:
        groups.setdefault(o.group, []).append(o)
    return list(groups.values())


def _anchor(o: PublicObject) -> str:
    return o.name


def _columns(db, objects: list[PublicObject]) -> dict[str, str]:
    """Each object's columns and types, as DuckDB binds them: views and tables from the
    catalog (no query is planned), a table macro by describing a call with NULL arguments."""
    got: dict[str, list[tuple[str, str]]] = {}
    for table, column, typ in db.sql("SELECT table_name, column_name, data_type FROM "
                                     "duckdb_columns() ORDER BY table_name, column_index").fetchall():
        got.setdefault(table, []).append((column, typ))
    for o in objects:
        if o.kind == "macro":
            n_params = len(re.findall(r"\w+", _sql_signature(o)[len(o.name):]))
            call = f"{o.name}({', '.join(['NULL'] * n_params)})"
            got[o.name] = [(r[0], r[1]) for r in db.sql(f"DESCRIBE SELECT * FROM {call}").fetchall()]
    return {o.name: ", ".join(f"`{c}` {t}" for c, t in got[o.name]) for o in objects}


_SQL_SIGNATURES: dict[str, str] = {}


def _sql_signature(o: PublicObject) -> str:
    if not _SQL_SIGNATURES:
        for _, text in _schema_files():
            for m in _CREATE.finditer(text):
                _SQL_SIGNATURES[m.group(2)] = m.group(2) + (m.group(3) or "")
    return _SQL_SIGNATURES[o.name]


def _slug(title: str) -> str:
    """GitHub's anchor of a heading."""
    return re.sub(r"[^\w\- ]", "", title.lower()).replace(" ", "-")


def render() -> str:
    """docs/views.md, as the schema files and DuckDB give it now."""
    files = schema_files()
    out = [
        "# Views, table macros and tables",
        "",
        f"<!-- Generated by `{COMMAND}` from the comments in schemas/[0-9][0-9]_*.sql."
        " Do not edit: edit the comment where the view is defined, then run it again. -->",
        "",
        "The public interface of a tlview database: every object below is stored in the",
        "file itself, so `tlview sql`, the plain `duckdb` CLI and DuckDB's Python module all",
        "read it (names starting with `_` are helpers, not an interface). A table macro is",
        "called like a table: `SELECT * FROM live_at(1, 879)`. The columns are those DuckDB",
        "binds today; what they mean is in the text, from the comment where the object is",
        "defined.",
        "",
    ]
    for f in files:
        if not f.objects:
            continue
        names = ", ".join(f"[`{o.name}`](#{_anchor(o)})" for o in f.objects)
        out.append(f"- [`schemas/{f.name}`](#{_slug('schemas/' + f.name)}): {names}")
    out.append("")
    with tempfile.TemporaryDirectory() as tmp, open_database(Path(tmp) / "doc.duckdb") as db:
        columns = _columns(db, [o for f in files for o in f.objects])
    for f in files:
        if not f.objects:
            continue
        out += [f"## schemas/{f.name}", ""]
        if f.header:
            out += _markdown(f.header)
        for group in _groups(f.objects):
            title = ", ".join(f"`{o.signature}`" for o in group)
            anchors = "".join(f'<a id="{_anchor(o)}"></a>' for o in group)
            out += [f"### {title}", "", anchors, ""]
            out += _markdown(group[0].doc)
            for o in group:
                kind = {"view": "View", "macro": "Table macro", "table": "Table"}[o.kind]
                label = f"{kind} `{o.name}`" if len(group) > 1 else kind
                out += [f"{label}; columns: {columns[o.name]}.", ""]
    while out and out[-1] == "":
        out.pop()
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog=COMMAND, description=__doc__.split("\n\n")[0])
    p.add_argument("out", nargs="?", type=Path, default=DEFAULT_OUT,
                   help=f"the page to write (default {DEFAULT_OUT})")
    p.add_argument("--check", action="store_true",
                   help="write nothing; exit 1 if the page differs from what it would write")
    args = p.parse_args(argv)
    text = render()
    if args.check:
        current = args.out.read_text(encoding="utf-8") if args.out.exists() else ""
        if current != text:
            print(f"{args.out} is stale: run `{COMMAND}`", file=sys.stderr)
            return 1
        return 0
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text, encoding="utf-8")
    print(f"{args.out}: {len(public_objects())} objects")
    return 0


if __name__ == "__main__":
    sys.exit(main())
