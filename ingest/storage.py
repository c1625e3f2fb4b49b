"""Storages shared by several names, as torch programs hold them.

In a wrapper module (``bufX = bufY; del bufY  # reuse``) and in an FX graph (view
ops), one allocation is held by several names in turn. It is one counted buffer,
named by its first name (``root``), live from its allocation until the last name
holding it is released; the other names are 0-byte rows that point at it.
"""

from __future__ import annotations

from typing import Any

import attrs

from .records import BufferAllocated, BufferFreed, Record


@attrs.define
class Storage:
    """One allocation. ``holders`` are the names (and tuples) that keep it alive."""

    root: str
    step: int | None
    line: int
    bytes: int | None = None
    size_expr: str | None = None
    dtype: str | None = None
    shape: str | None = None
    stride: str | None = None
    device: str | None = None
    node: str | None = None
    is_input: bool = False
    layout: str = "empty_strided"
    holders: set[str] = attrs.field(factory=set)
    end: int = -1
    attrs: dict[str, Any] = attrs.field(factory=dict)
    pending_op: Any = None  # wrapper: an op output sized later by assert_size_stride

    def release(self, holder: str, end: int) -> bool:
        """``holder`` stops holding it at step ``end``; True once nothing holds it."""
        self.holders.discard(holder)
        self.end = max(self.end, end)
        return not self.holders

    def records(self, timeline: str, reason: str) -> list[Record]:
        """Its row, allocated at its step and last live at the end of its last holder."""
        step = self.step if self.step is not None else 0
        return [
            BufferAllocated(
                timeline=timeline, step=step, buffer=self.root, bytes=self.bytes,
                node=self.node, layout=self.layout, dtype=self.dtype, shape=self.shape,
                stride=self.stride, device=self.device, size_expr=self.size_expr,
                line=self.line, attrs=dict(self.attrs),
            ),
            BufferFreed(timeline=timeline, step=max(self.end, step), buffer=self.root,
                        reason=reason),
        ]
