"""Human formatting of figures: bytes shown exactly, with a binary-unit hint beside."""

from __future__ import annotations


def human_bytes(n: int | None) -> str:
    if n is None:
        return "?"
    units = ["B", "KiB", "MiB", "GiB", "TiB"]
    v = float(n)
    for u in units:
        if abs(v) < 1024 or u == units[-1]:
            return f"{v:.0f} {u}" if u == "B" else f"{v:.2f} {u}"
        v /= 1024
    return f"{n} B"


def exact_bytes(n: int | None) -> str:
    """``1,114,112 B (1.06 MiB)`` — the exact figure first, always."""
    if n is None:
        return "unknown"
    return f"{n:,} B ({human_bytes(n)})"
