"""ingest/ and store/ never import textual: checked in a fresh interpreter (as harlequin does)."""

from __future__ import annotations

import subprocess
import sys

MODULES = [
    "tlview.ingest", "tlview.ingest.inductor_ir", "tlview.ingest.formats",
    "tlview.store", "tlview.store.timeline_queries", "tlview.store.writer",
    "tlview.store.profile_queries", "tlview.store.memory_holders", "tlview.store.align",
    "tlview.store.diff", "tlview.store.diff_report", "tlview.store.shards",
    "tlview.store.runs", "tlview.store.report",
]


def test_no_textual():
    """One fresh interpreter imports the modules one by one and checks after each, so the
    first module that brings textual in is the one named (a process per module was
    many times slower)."""
    code = ("import importlib, sys\n"
            f"for module in {MODULES!r}:\n"
            "    importlib.import_module(module)\n"
            "    bad = sorted(m for m in sys.modules if m == 'textual' or m.startswith('textual.'))\n"
            "    if bad:\n"
            "        print(module, ','.join(bad)); sys.exit(1)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, f"{proc.stdout.strip()} {proc.stderr[-500:]}"
