"""Finding the dumps and traces inside a folder (a TORCH_COMPILE_DEBUG tree, an XLA dump dir)."""

from __future__ import annotations

from pathlib import Path

from .errors import IngestError
from .formats import detect_format


def discover(folder: Path, fmt: str | None = None) -> list[tuple[str, str | None]]:
    """Every file below ``folder`` that some ingester recognises, in path order."""
    found: list[tuple[str, str | None]] = []
    for p in sorted(folder.rglob("*")):
        if not p.is_file() or p.name.startswith("."):
            continue
        if fmt is not None:
            found.append((str(p), fmt))
            continue
        try:
            spec = detect_format(str(p))
        except (IngestError, OSError):
            continue
        found.append((str(p), spec.name))
    return found
