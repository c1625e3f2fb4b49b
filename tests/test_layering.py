"""The packages' layering, read from the source with ``ast`` (no import, well under a
second): which package may import which, no import circle among tlview's modules, SQL
only in schemas/, and each store/X_queries.py beside its schemas/queries_X.sql.

Every import statement counts, at module level or inside a function: a circle closed by
an import inside a function is still a circle, only a later one.
"""

from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# pyproject's package-dir: the folder of each package.
PACKAGES = {"tlview": "cli", "tlview.ingest": "ingest", "tlview.store": "store",
            "tlview.tui": "tui", "tlview.schemas": "schemas"}


@cache
def _modules() -> dict[str, Path]:
    out = {}
    for package, folder in PACKAGES.items():
        for path in sorted((ROOT / folder).glob("*.py")):
            out[package if path.stem == "__init__" else f"{package}.{path.stem}"] = path
    return out


@cache
def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text("utf-8"))


@pytest.fixture(autouse=True, scope="module")
def _trees_let_go():
    """The trees parsed once for this file's tests, let go after them: the test process
    would hold every module's tree to its end, each full garbage collection scanning it."""
    yield
    _tree.cache_clear()


def _is_package(module: str) -> bool:
    return _modules()[module].stem == "__init__"


@cache
def _bound_in(module: str) -> frozenset[str]:
    """The names a module's top level binds (what ``from module import name`` can get
    without a submodule)."""
    names = set()
    for node in _tree(_modules()[module]).body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name))
    return frozenset(names)


def _imported(module: str, node: ast.Import | ast.ImportFrom) -> list[str]:
    """The tlview modules (or package names) one import statement brings in. A name
    from a package that its ``__init__`` does not bind is a submodule (a compiled one,
    ``_native``, has no .py here): that submodule, not the package."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if node.level:
        base = module if _is_package(module) else module.rpartition(".")[0]
        for _ in range(node.level - 1):
            base = base.rpartition(".")[0]
        target = f"{base}.{node.module}" if node.module else base
    else:
        target = node.module or ""
    out = []
    for alias in node.names:
        sub = f"{target}.{alias.name}"
        if sub in _modules() or (target in _modules() and _is_package(target)
                                 and alias.name not in _bound_in(target)):
            out.append(sub)
        else:
            out.append(target)
    return out


def _statements(body: list[ast.stmt]):
    """Every statement in ``body`` and the blocks nested in it (functions, classes,
    branches), except under ``if TYPE_CHECKING:``; expressions are not entered, so this
    is cheaper than ``ast.walk``."""
    for node in body:
        yield node
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.dump(node.test):
            yield from _statements(node.orelse)
            continue
        for field in ("body", "orelse", "finalbody"):
            yield from _statements(getattr(node, field, []))
        for part in getattr(node, "handlers", []) + getattr(node, "cases", []):
            yield from _statements(part.body)


@cache
def _imports(module: str) -> tuple[tuple[str, int], ...]:
    """Every module ``module`` imports (anywhere in it), with the line."""
    return tuple((name, node.lineno) for node in _statements(_tree(_modules()[module]).body)
                 if isinstance(node, (ast.Import, ast.ImportFrom))
                 for name in _imported(module, node))


def _graph() -> dict[str, set[str]]:
    mods = _modules()
    return {m: {name for name, _ in _imports(m) if name in mods and name != m} for m in mods}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan's, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            v, children = work[-1]
            for w in children:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    if len(comp) > 1:
                        out.append(sorted(comp))
    return out


def test_cycle_finder_finds_a_circle():
    """The finder itself, on a made-up graph: a -> b -> c -> a is one circle, d is not."""
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set()}
    assert _cycles(graph) == [["a", "b", "c"]]


def test_no_import_cycles():
    """No circle among tlview's modules (the format registry and the formats; db, caches
    and diff were two)."""
    assert _cycles(_graph()) == []


def _cli_modules() -> set[str]:
    return {m for m in _modules() if m == "tlview" or m.count(".") == 1
            and m.split(".")[1] not in ("ingest", "store", "tui", "schemas")}


# Which tlview packages each package may import (its own always).
ALLOWED = {
    "tlview.ingest": set(),  # parsers: bytes to records, nothing of the store
    "tlview.store": {"tlview.ingest.records"},  # the records it writes, no format
    "tlview.tui": {"tlview.store"},  # the store's query functions; never the CLI
}


def _package_of(module: str) -> str:
    for package in ("tlview.ingest", "tlview.store", "tlview.tui", "tlview.schemas"):
        if module == package or module.startswith(package + "."):
            return package
    return "tlview"


def test_packages_import_only_what_their_layer_allows():
    """ingest imports no other tlview package; the store only the record types; the TUI
    only the store (never the CLI package: ``tlview``, ``tlview.fmt``, ...)."""
    cli = _cli_modules()
    bad = []
    for module in _modules():
        package = _package_of(module)
        if package not in ALLOWED:
            continue
        for name, line in _imports(module):
            if not name.startswith("tlview"):
                continue
            theirs = _package_of(name)
            if theirs == package and name not in cli:
                continue
            if name in ALLOWED[package] or theirs in ALLOWED[package] and name not in cli:
                continue
            bad.append(f"{_modules()[module].relative_to(ROOT)}:{line} imports {name}")
    assert bad == []


def test_the_layer_check_sees_the_cli_package():
    assert {"tlview", "tlview.cli", "tlview.api"} <= _cli_modules()
    assert _package_of("tlview.fmt") == "tlview" and "tlview.store.fmt" not in _cli_modules()


# SQL in a string: a statement's head (upper case, as all of tlview's SQL is written)
# followed by what it reads or writes.
SQL = re.compile(r"\b(SELECT\b[\s\S]*\bFROM|INSERT\s+INTO|UPDATE\s+\w+\s+SET|DELETE\s+FROM|"
                 r"CREATE\s+(OR\s+REPLACE\s+)?(TABLE|VIEW|MACRO)|BEGIN\s+TRANSACTION|COMMIT|"
                 r"ROLLBACK)\b")
# Where the user's own SQL runs: `tlview sql` and the scripting API (their examples in
# docstrings), and the transaction `tlview sql --write` wraps around it.
SQL_ALLOWED = {"cli/sql_command.py", "cli/api.py"}


def _strings(path: Path) -> list[tuple[int, str]]:
    tree = _tree(path)
    docs = {id(node.body[0].value) for node in ast.walk(tree)
            if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef,
                                 ast.ClassDef))
            and node.body and isinstance(node.body[0], ast.Expr)}
    return [(node.lineno, node.value) for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str)
            and id(node) not in docs]


def test_sql_pattern():
    assert SQL.search("SELECT path FROM sources WHERE source_id = ?")
    assert SQL.search("BEGIN TRANSACTION")
    assert not SQL.search("select a run from the list")


def test_cli_and_tui_hold_no_sql():
    """The CLI and the TUI read through the store's query functions and named queries
    (schemas/queries_*.sql); SQL text in their code is a query the store should own."""
    bad = []
    for folder in ("cli", "tui"):
        for path in sorted((ROOT / folder).glob("*.py")):
            rel = f"{folder}/{path.name}"
            if rel in SQL_ALLOWED:
                continue
            bad += [f"{rel}:{line} {text[:60]!r}" for line, text in _strings(path)
                    if SQL.search(text)]
    assert bad == []


def _query_names(sql_file: Path) -> set[str]:
    return set(re.findall(r"^-- name: (\S+)", sql_file.read_text("utf-8"), re.M))


# Named queries with no store module of their own: users and tests run them by name
# (``db.query("xla_peak_check_of", tid)``, docs/liveness.md).
BY_NAME_ONLY = {"xla", "wrapper"}


def test_query_modules_pair_with_their_sql():
    """store/X_queries.py runs the named queries of schemas/queries_X.sql, and only
    those (literal names: ``db.query("name", ...)``, ``db.queries["name"]``); every
    schemas/queries_X.sql has its store/X_queries.py or store/X.py (or is run by name
    only); none is empty."""
    schemas = ROOT / "schemas"
    files = {p.stem.removeprefix("queries_"): p for p in schemas.glob("queries_*.sql")}
    defined = {name: x for x, p in files.items() for name in _query_names(p)}
    defined.update((name, "") for name in _query_names(schemas / "queries.sql"))
    problems = []
    for x, path in sorted(files.items()):
        if not _query_names(path):
            problems.append(f"{path.name} defines no query")
        if not ((ROOT / "store" / f"{x}_queries.py").exists()
                or (ROOT / "store" / f"{x}.py").exists() or x in BY_NAME_ONLY):
            problems.append(f"{path.name} has no store/{x}_queries.py nor store/{x}.py")
    for module in sorted((ROOT / "store").glob("*_queries.py")):
        x = module.stem.removesuffix("_queries")
        if x not in files:
            problems.append(f"{module.name} has no schemas/queries_{x}.sql")
            continue
        for _, text in _strings(module):
            if text in defined and defined[text] != x:
                problems.append(f"{module.name} runs {text!r} of "
                                f"queries{'_' if defined[text] else ''}{defined[text]}.sql")
    assert problems == []
