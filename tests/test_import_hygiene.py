"""ingest/ and store/ never import textual: checked in a fresh interpreter (as harlequin does)."""

from __future__ import annotations

import subprocess
import sys

import pytest

MODULES = [
    "tlview.ingest", "tlview.ingest.inductor_ir", "tlview.ingest.formats",
    "tlview.store", "tlview.store.timeline_queries", "tlview.store.writer",
    "tlview.store.profile_queries", "tlview.store.memory_holders", "tlview.store.align",
    "tlview.store.diff", "tlview.store.diff_report", "tlview.store.shards",
]


@pytest.mark.parametrize("module", MODULES)
def test_no_textual(module):
    code = (f"import sys, {module}; "
            "bad = sorted(m for m in sys.modules if m == 'textual' or m.startswith('textual.')); "
            "print(','.join(bad)); sys.exit(1 if bad else 0)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, f"{module} imports {proc.stdout.strip()} {proc.stderr[-500:]}"
