"""Browsing while ingesting: the UI keeps no file open while idle, so a real `tlview ingest`
into the same database succeeds while the UI is open, and the new timeline appears."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import duckdb
from tlview.tui.app import TlviewApp
from tlview.tui.chooser import ChooserScreen

from tests.conftest import SEED_001, SEED_002, SEED_003, ingest_into
from tests.tui.pilot import asynctest, press, settle, wait_for
from tests.tui.screen_text import screen_text

TLVIEW = str(Path(sys.executable).with_name("tlview"))


@asynctest
async def test_ingest_while_open_then_chooser_lists_it(tmp_path):
    path = tmp_path / "live.duckdb"
    ingest_into(path, SEED_001, SEED_002)
    app = TlviewApp(str(path), poll_s=0.2)
    async with app.run_test(size=(100, 24)) as pilot:
        await settle(pilot)
        await press(pilot, "enter")  # a timeline open, as a person would have it
        assert app.screen.timeline.timeline_id == 1
        await wait_for(pilot, lambda: not app.reader.is_open)  # idle: the file is free
        proc = subprocess.run([TLVIEW, "ingest", str(SEED_003), "--db", str(path)],
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
        assert re.search(r"^timeline 3 \S+ · 003_5960cad812240b69 · XLA buffer assignment \[",
                         proc.stdout, re.M), proc.stdout  # under its title
        chooser = app.chooser
        assert chooser is not None
        await wait_for(pilot, lambda: len(chooser.all_rows) == 3)
        await settle(pilot)
        assert any("1 new timeline: 003_5960cad812240b69" in n.message
                   for n in app._notifications)
        await press(pilot, "t")
        assert isinstance(app.screen, ChooserScreen)
        text = screen_text(app)
        assert "003_5960cad812240b69" in text and "3 timelines" in text
        con = duckdb.connect(str(path), read_only=True)
        try:
            ((peak,),) = con.execute(
                "SELECT peak_bytes FROM peak_memory WHERE timeline_id = 3").fetchall()
        finally:
            con.close()
        assert chooser.all_rows[2].peak.peak_bytes == peak == 1_092_637_220
        await press(pilot, "end", "enter")
        assert app.screen.timeline.timeline_id == 3
