"""Messages from the compiled-timeline screen's workers. Each holds immutable snapshots."""

from __future__ import annotations

from textual.message import Message
from tlview.store.timeline_queries import (
    Collective,
    CollectiveInFlight,
    CurveSummary,
    GraphSource,
    LiveAt,
    NodeDetail,
    NodeKernel,
    SearchHit,
    StepWindow,
    TimelinePeak,
)


class PeakKnown(Message):
    """The timeline's peak, from the store's cache (before the curve is read)."""

    def __init__(self, timeline_id: int, peak: TimelinePeak | None) -> None:
        super().__init__()
        self.timeline_id = timeline_id
        self.peak = peak


class MemoryReady(Message):
    def __init__(self, timeline_id: int, seconds: float, notes: tuple[str, ...] = ()) -> None:
        super().__init__()
        self.timeline_id = timeline_id
        self.seconds = seconds
        self.notes = notes  # what the ingest said of this timeline (e.g. XLA's stated peak)


class CurveLoaded(Message):
    def __init__(self, curve: CurveSummary, width: int) -> None:
        super().__init__()
        self.curve = curve
        self.width = width


class WindowLoaded(Message):
    def __init__(self, window: StepWindow) -> None:
        super().__init__()
        self.window = window


class DurationsLoaded(Message):
    """Measured time per step of one timeline (read once: the attachment is slow)."""

    def __init__(self, timeline_id: int, durations: dict[int, int]) -> None:
        super().__init__()
        self.timeline_id = timeline_id
        self.durations = durations


class LiveLoaded(Message):
    def __init__(self, live: LiveAt) -> None:
        super().__init__()
        self.live = live


class NodeLoaded(Message):
    def __init__(self, timeline_id: int, step: int, detail: NodeDetail | None,
                 collectives: tuple[CollectiveInFlight, ...],
                 all_collectives: tuple[Collective, ...]) -> None:
        super().__init__()
        self.timeline_id = timeline_id
        self.step = step
        self.detail = detail
        self.collectives = collectives
        self.all_collectives = all_collectives


class JumpFound(Message):
    """A search or a collective jump found where to go (or ``step`` None: nothing)."""

    def __init__(self, step: int | None, what: str, hit: SearchHit | None = None) -> None:
        super().__init__()
        self.step = step
        self.what = what
        self.hit = hit


class KernelsFound(Message):
    """The measured kernels attached to the node at ``step`` (empty: none)."""

    def __init__(self, step: int, node: str, kernels: tuple[NodeKernel, ...]) -> None:
        super().__init__()
        self.step = step
        self.node = node
        self.kernels = kernels


class Exported(Message):
    """A CSV was written (``path``), or could not be (``error``)."""

    def __init__(self, what: str, path: str, rows: int, error: str | None = None) -> None:
        super().__init__()
        self.what = what
        self.path = path
        self.rows = rows
        self.error = error


class SourcesLoaded(Message):
    """The timelines of the compiled graph the screen shows (itself among them)."""

    def __init__(self, timeline_id: int, sources: tuple[GraphSource, ...]) -> None:
        super().__init__()
        self.timeline_id = timeline_id
        self.sources = sources
