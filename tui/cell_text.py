"""Text fitted to a terminal's cells: a string cut with an ellipsis, a path without its
folders, a scheduler node's class in a word. Figures are formatted by ``tlview.store.fmt``
(one module for the CLI and the TUI)."""

from __future__ import annotations


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
