"""Short figures for narrow columns (the exact ones are shown beside, in the status line)."""

from __future__ import annotations


def short_bytes(n: int | None) -> str:
    """``25.0G``, ``400K``, ``512B``: three significant digits and a binary unit."""
    if n is None:
        return "?"
    v = float(n)
    for unit in ("B", "K", "M", "G", "T"):
        if abs(v) < 1000 or unit == "T":
            break
        v /= 1024
    if unit == "B":
        return f"{n}B"
    return (f"{v:.0f}" if abs(v) >= 100 else f"{v:.1f}" if abs(v) >= 10 else f"{v:.2f}") + unit


def short_ns(ns: int | None) -> str:
    if ns is None:
        return ""
    if ns < 1_000:
        return f"{ns}ns"
    if ns < 1_000_000:
        return f"{ns / 1e3:.1f}us"
    if ns < 1_000_000_000:
        return f"{ns / 1e6:.2f}ms"
    return f"{ns / 1e9:.2f}s"


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
