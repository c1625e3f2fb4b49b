"""Figures for narrow columns, in one system: binary units with their suffix (KiB, MiB,
GiB), the same the status lines and ``tlview ingest`` use, so ``3.06 GiB`` in a column
and ``24.97 GiB`` in the status line read alike. Exact bytes are shown beside."""

from __future__ import annotations

_UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")


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


def offset_ms(ns: int) -> str:
    """A time inside a trace, from its start: ``12.345 ms`` (microsecond precision)."""
    return f"{ns / 1e6:,.3f} ms"


def short_path(path: str | None) -> str:
    """``file.py:44 in forward, code: ...`` without its folders."""
    if not path:
        return ""
    head, sep, rest = path.partition(" ")
    return head.rsplit("/", 1)[-1] + sep + rest


def fit(text: str, width: int, ellipsis: str = "…", left: bool = False) -> str:
    """``text`` cut to ``width`` cells with an ellipsis (at the start when ``left``)."""
    if width <= 0:
        return ""
    if len(text) <= width:
        return text
    if width <= len(ellipsis):
        return text[:width]
    if left:
        return ellipsis + text[len(text) - (width - len(ellipsis)):]
    return text[: width - len(ellipsis)] + ellipsis


_KINDS = {
    "SchedulerNode": "sched", "FusedSchedulerNode": "fused",
    "ExternKernelSchedulerNode": "extern", "NopKernelSchedulerNode": "nop",
    "ForeachKernelSchedulerNode": "foreach", "GroupedSchedulerNode": "group",
    "_CollectiveKernel": "coll", "_WaitKernel": "wait",
}


def node_kind(node_class: str | None, ir_type: str | None) -> str:
    """A short word for what a node is: collective and wait first, then its class."""
    if ir_type in ("_CollectiveKernel", "_WaitKernel"):
        return _KINDS[ir_type]
    if node_class is None:
        return ""
    return _KINDS.get(node_class, node_class[:7].lower())
