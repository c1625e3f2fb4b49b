"""Finding the dumps and traces inside a folder (a TORCH_COMPILE_DEBUG tree, an XLA dump dir).

A folder ingest must not pass over anything silently: every file below it is either
read, skipped as something no ingester reads (counted by kind, so a person sees that
nothing they expected was missed), or failed (unreadable: reported, the rest go on).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import attrs

from .errors import IngestError
from .formats import NotADump, detect_format, formats


@attrs.frozen
class Skipped:
    path: str
    kind: str  # ".json", "Python pickle", "empty", "hidden"
    looks: str  # what it seems to be, in a few words


@attrs.frozen
class Survey:
    """What a folder holds: files to ingest (path, format), skipped and failed ones."""

    files: tuple[tuple[str, str | None], ...]
    skipped: tuple[Skipped, ...]
    failed: tuple[IngestError, ...]

    def skipped_kinds(self) -> list[tuple[str, int]]:
        """(kind, count), most frequent first."""
        return Counter(s.kind for s in self.skipped).most_common()


def survey(folder: Path, fmt: str | None = None) -> Survey:
    """Every file below ``folder``, sorted by path, sorted into read / skipped / failed.

    A dump split over sibling files (XLA's per-module files) is listed once, by the
    file its format's ``group`` names; its siblings count as read.
    """
    found: list[tuple[str, str | None]] = []
    skipped: list[Skipped] = []
    failed: list[IngestError] = []
    groups: set[str] = set()
    for p in sorted(folder.rglob("*")):
        if not p.is_file():
            continue
        if p.name.startswith("."):
            skipped.append(Skipped(str(p), "hidden", "a hidden file"))
            continue
        if fmt is not None:
            spec = formats().get(fmt)
            if spec is None or spec.group is None:
                found.append((str(p), fmt))
                continue
        else:
            try:
                spec = detect_format(str(p))
            except NotADump as e:
                skipped.append(Skipped(str(p), e.kind, e.looks))
                continue
            except IngestError as e:
                failed.append(e)
                continue
            except OSError as e:
                failed.append(IngestError(str(p), None, f"cannot read it ({e.strerror})"))
                continue
        path = str(p)
        if spec.group is not None:
            path = spec.group(path)
            if path in groups:
                continue
            groups.add(path)
        found.append((path, spec.name))
    return Survey(tuple(found), tuple(skipped), tuple(failed))


def discover(folder: Path, fmt: str | None = None) -> list[tuple[str, str | None]]:
    """Every file below ``folder`` that some ingester recognises, in path order."""
    return list(survey(folder, fmt).files)
