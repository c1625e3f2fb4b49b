"""Runs: which incident each source belongs to (schemas/05_runs.sql says the rule).

``register`` records the roots a `tlview ingest` was given before it writes; every write
path then calls ``assign_unassigned`` in its transaction, which gives any source under no
registered root a run of its folder, so that no source is ever without a run. Rows are
only added: a source's run never changes.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
from collections.abc import Iterable, Sequence
from typing import Any

from .db import Database

# The extensions a run named after a file loses (`oom.pickle.gz` is run `oom`).
_EXTENSIONS = (".gz", ".json", ".pickle", ".pkl", ".txt", ".log", ".py", ".pt.trace")


def run_name_of(root: str) -> str:
    """The name a run takes from its root: the last component, a file's without its
    extensions."""
    name = os.path.basename(root.rstrip("/")) or root
    stem = name
    changed = True
    while changed:
        changed = False
        for ext in _EXTENSIONS:
            if stem.endswith(ext) and len(stem) > len(ext):
                stem = stem[: -len(ext)]
                changed = True
    return stem or name


def unique_name(root: str, taken: set[str]) -> str:
    """``run_name_of(root)``, else with its parent folder (``jobA/compiled_train``),
    else numbered (``compiled_train (2)``): a name no other run of the database has."""
    base = run_name_of(root)
    if base not in taken:
        return base
    parent = os.path.basename(os.path.dirname(root.rstrip("/")))
    if parent and f"{parent}/{base}" not in taken:
        return f"{parent}/{base}"
    k = 2
    while f"{base} ({k})" in taken:
        k += 1
    return f"{base} ({k})"


def register(db: Database, roots: Sequence[str],
             skipped: dict[str, dict[str, int]] | None = None) -> list[int]:
    """Record ``roots`` (absolute paths the user named) as runs, in their order, in one
    transaction; a root that is a run already keeps its run. ``skipped``: per folder, the
    files it held that tlview does not read, by kind (kept in the run's attrs, for the
    report's capture health). Returns the run ids."""
    if not roots:
        return []
    db.con.execute("BEGIN TRANSACTION")
    try:
        ids = _add(db, [(r, "named") for r in roots], skipped=skipped or {})
        db.con.execute("COMMIT")
    except BaseException:
        db.con.execute("ROLLBACK")
        raise
    return ids


def assign_unassigned(db: Database) -> list[int]:
    """Give every source under no registered root a run of its folder, or of the folder
    above it that another such source is in (a TORCH_COMPILE_DEBUG tree joins the folder
    of the trace beside it); the caller holds the transaction. The new run ids."""
    top: dict[str, int] = {}  # a folder under another of them joins it (a debug tree)
    for folder, first in sorted(db.query("run_folders_unassigned")):
        above = next((t for t in top if _under(folder, {t})), None)
        if above is None:
            top[folder] = int(first)
        else:
            top[above] = min(top[above], int(first))
    order = sorted(top, key=lambda f: top[f])
    return _add(db, [(f, "folder") for f in order],
                first=[top[f] for f in order]) if top else []


def _add(db: Database, roots: Iterable[tuple[str, str]],
         first: Sequence[int] | None = None,
         skipped: dict[str, dict[str, int]] | None = None) -> list[int]:
    """Runs for ``roots`` (root, how made) not yet registered; ``first``: each one's first
    source id (default: the database's next)."""
    existing = {root: rid for rid, root in db.query("run_roots")}
    taken = {r[0] for r in db.query("run_names")}
    next_id = db.scalar("next_run_id")
    next_source = db.scalar("next_source_id")
    now = _dt.datetime.now()
    ids: list[int] = []
    rows: list[list[Any]] = []
    for i, (root, how) in enumerate(roots):
        first_source = first[i] if first is not None else next_source
        if root in existing:
            ids.append(existing[root])
            continue
        name = unique_name(root, taken)
        taken.add(name)
        existing[root] = next_id
        attrs: dict[str, Any] = {"from": how}
        if skipped and skipped.get(root):
            attrs["skipped"] = skipped[root]
        rows.append([next_id, name, root, first_source, now, json.dumps(attrs)])
        ids.append(next_id)
        next_id += 1
    for row in rows:
        db.con.execute(db.queries["insert_run"], row)
    return ids


def roots_of(paths: Sequence[str], covered: set[str] | None = None) -> list[str]:
    """The run roots of the paths one `tlview ingest` names, in order: each folder is a
    run; files named from one folder are one run of that folder when there are several,
    else the file itself. A file under a run's root already (``covered``: the database's
    roots) takes none: it joins that run."""
    covered = covered or set()
    out: list[str] = []
    files_by_folder: dict[str, list[str]] = {}
    for raw in paths:
        p = os.path.realpath(raw)
        if os.path.isdir(p):
            out.append(p)
        elif os.path.exists(p):
            files_by_folder.setdefault(os.path.dirname(p), []).append(p)
    for folder, files in files_by_folder.items():
        files = [f for f in files if not _under(f, covered)]
        if not files:
            continue
        if len(files) > 1:
            out.append(folder)
        else:
            out.append(files[0])
    seen: set[str] = set()
    return [r for r in out if not (r in seen or seen.add(r))]  # type: ignore[func-returns-value]


def _under(path: str, roots: set[str]) -> bool:
    """Whether ``path`` is one of ``roots`` or inside one."""
    p = path
    while True:
        if p in roots:
            return True
        parent = os.path.dirname(p)
        if parent == p:
            return False
        p = parent


def known_roots(db: Database) -> set[str]:
    """The roots of the runs the database has (of folders: files under them join them)."""
    return {root for _, root in db.query("run_roots")}
