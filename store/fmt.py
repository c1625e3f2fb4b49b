"""How figures read, in one place for the CLI and the TUI: bytes in binary units with
their suffix (KiB, MiB, GiB), so ``3.06 GiB`` in a TUI column and ``24.97 GiB`` in a
status line or ``tlview ingest``'s summary read alike, and times in ns/us/ms/s.

Two styles, each a function of its own: the exact figure with a unit hint beside
(``exact_bytes``: what the CLI and the status lines print) and three significant digits
for narrow columns (``short_bytes``, ``short_ns``). No figure is computed here.
"""

from __future__ import annotations

_UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")


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


def signed_exact_bytes(n: int) -> str:
    """``+1,114,112 B (1.06 MiB)``: a change, in ``exact_bytes``."""
    return ("+" if n > 0 else "-" if n < 0 else "") + exact_bytes(abs(n))


def short_bytes(n: int | None) -> str:
    """``25.0 GiB``, ``400 KiB``, ``512 B``: three significant digits, binary unit."""
    if n is None:
        return "?"
    v = float(n)
    unit = _UNITS[0]
    for unit in _UNITS:
        if abs(v) < 1000 or unit == _UNITS[-1]:
            break
        v /= 1024
    if unit == "B":
        return f"{n} B"
    digits = f"{v:.0f}" if abs(v) >= 100 else f"{v:.1f}" if abs(v) >= 10 else f"{v:.2f}"
    return f"{digits} {unit}"


def signed_short_bytes(n: int | None) -> str:
    """``+1.06 MiB``, ``-512 B``: a change, in ``short_bytes``."""
    if n is None:
        return ""
    return ("+" if n > 0 else "-" if n < 0 else "") + short_bytes(abs(n))


def short_ns(ns: int | None) -> str:
    if ns is None:
        return ""
    if ns < 1_000:
        return f"{ns} ns"
    if ns < 1_000_000:
        return f"{ns / 1e3:.1f} us"
    if ns < 1_000_000_000:
        return f"{ns / 1e6:.2f} ms"
    return f"{ns / 1e9:.2f} s"


def signed_ns(n: int | None) -> str:
    """``+1.25 ms``, ``-40.0 us``, ``+12 ns``: a change of time (milliseconds at most)."""
    if n is None:
        return ""
    sign = "+" if n > 0 else "-" if n < 0 else ""
    n = abs(n)
    return sign + (f"{n / 1e6:.2f} ms" if n >= 1_000_000 else f"{n / 1e3:.1f} us"
                   if n >= 1000 else f"{n} ns")


def offset_ms(ns: int) -> str:
    """A time inside a trace, from its start: ``12.345 ms`` (microsecond precision)."""
    return f"{ns / 1e6:,.3f} ms"
