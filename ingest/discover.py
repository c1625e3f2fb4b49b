"""Finding the dumps and traces inside a folder (a TORCH_COMPILE_DEBUG tree, an XLA dump dir)."""

from __future__ import annotations

from pathlib import Path

from .errors import IngestError
from .formats import detect_format, formats


def discover(folder: Path, fmt: str | None = None) -> list[tuple[str, str | None]]:
    """Every file below ``folder`` that some ingester recognises, in path order.

    A dump split over sibling files (XLA's per-module files) is listed once, by the
    file its format's ``group`` names.
    """
    found: list[tuple[str, str | None]] = []
    groups: set[str] = set()
    for p in sorted(folder.rglob("*")):
        if not p.is_file() or p.name.startswith("."):
            continue
        if fmt is not None:
            spec = formats().get(fmt)
            if spec is None or spec.group is None:
                found.append((str(p), fmt))
                continue
        else:
            try:
                spec = detect_format(str(p))
            except (IngestError, OSError):
                continue
        path = str(p)
        if spec.group is not None:
            path = spec.group(path)
            if path in groups:
                continue
            groups.add(path)
        found.append((path, spec.name))
    return found
