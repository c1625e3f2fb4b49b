"""Scaled inputs made from the real fixtures: renamed copies, never random text."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SEEDS = ROOT / "tests" / "fixtures" / "seeds"
OUT_DIR = ROOT / "bench" / "out"

_IR_NAME = re.compile(r"(?<![A-Za-z0-9])(op|buf)(\d+)")


def scaled_ir(target_mb: float, seed: Path = SEEDS / "000_f2a980d458b1ffe8.txt") -> Path:
    """Seed 000 (a real 959-node conv-net backward) repeated with renamed ops and buffers
    until the file reaches ``target_mb``: one long schedule of a graph run many times."""
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    out = OUT_DIR / f"ir_{target_mb:g}MB.txt"
    if out.exists() and out.stat().st_size >= target_mb * 1e6:
        return out
    text = seed.read_text()
    top = max(int(m.group(2)) for m in _IR_NAME.finditer(text)) + 1
    written = 0
    k = 0
    with open(out, "w") as f:
        while written < target_mb * 1e6:
            off = k * top
            chunk = _IR_NAME.sub(lambda m, off=off: f"{m.group(1)}{int(m.group(2)) + off}", text)
            if not chunk.endswith("\n\n\n"):
                chunk = chunk.rstrip("\n") + "\n\n\n"
            f.write(chunk)
            written += len(chunk)
            k += 1
    return out
