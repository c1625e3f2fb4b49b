"""Writing what a screen shows to CSV (in a worker: file I/O never runs on the UI thread)."""

from __future__ import annotations

import csv
import os
from collections.abc import Iterable, Sequence
from typing import Any


def write_csv(path: str, header: Sequence[str], rows: Iterable[Sequence[Any]]) -> int:
    """Write ``rows`` under ``header`` to ``path`` (``~`` expanded); returns the row count.
    Written to a temporary name first, so a failed export leaves no half file."""
    path = os.path.expanduser(path)
    tmp = f"{path}.tlview-tmp"
    n = 0
    try:
        with open(tmp, "w", newline="", encoding="utf-8") as f:
            w = csv.writer(f)
            w.writerow(header)
            for row in rows:
                w.writerow(["" if v is None else v for v in row])
                n += 1
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
    return n


def default_name(timeline_id: int, what: str, step: int | None = None) -> str:
    at = f"-step{step}" if step is not None else ""
    return f"tlview-t{timeline_id}-{what}{at}.csv"
