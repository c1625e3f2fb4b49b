"""Messages from the profiler screen's workers. Each holds immutable snapshots."""

from __future__ import annotations

from textual.message import Message
from tlview.store.profile_queries import (
    KernelAttachment,
    KernelLaunch,
    LaneWindow,
    MeasuredKernel,
    MemoryWindow,
    TraceOverview,
    TraceSummary,
)


class OverviewLoaded(Message):
    """The trace's lanes and extent; ``start``: the kernel to open at, if one was asked."""

    def __init__(self, overview: TraceOverview, start: MeasuredKernel | None) -> None:
        super().__init__()
        self.overview = overview
        self.start = start


class LanesLoaded(Message):
    def __init__(self, window: LaneWindow) -> None:
        super().__init__()
        self.window = window


class MemoryLoaded(Message):
    def __init__(self, window: MemoryWindow) -> None:
        super().__init__()
        self.window = window


class KernelFound(Message):
    """The kernel at the cursor (None: idle there); ``move``: put the cursor on it."""

    def __init__(self, lane: int, t: int, kernel: MeasuredKernel | None,
                 move: bool = False, what: str = "") -> None:
        super().__init__()
        self.lane = lane
        self.t = t
        self.kernel = kernel
        self.move = move
        self.what = what


class LaunchLoaded(Message):
    def __init__(self, launch: KernelLaunch, memory: int | None) -> None:
        super().__init__()
        self.launch = launch
        self.memory = memory


class SummaryLoaded(Message):
    def __init__(self, summary: TraceSummary) -> None:
        super().__init__()
        self.summary = summary


class AttachmentsLoaded(Message):
    def __init__(self, attachments: dict[int, KernelAttachment]) -> None:
        super().__init__()
        self.attachments = attachments


class NodeKernelsLoaded(Message):
    """The kernels of the node the screen was opened for, in time order."""

    def __init__(self, kernels: tuple[MeasuredKernel, ...]) -> None:
        super().__init__()
        self.kernels = kernels
