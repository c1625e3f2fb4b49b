"""Messages from the workers to the app. Each holds immutable snapshots only."""

from __future__ import annotations

from textual.message import Message
from tlview.store.timeline_queries import (
    CollectiveInFlight,
    CurveSummary,
    LiveAt,
    NodeDetail,
    SearchHit,
    StepWindow,
    TimelineInfo,
    TimelinePeak,
)


class Opened(Message):
    """The database is open; its timelines (peaks come later, in PeaksLoaded)."""

    def __init__(self, timelines: tuple[TimelineInfo, ...], has_durations: bool) -> None:
        super().__init__()
        self.timelines = timelines
        self.has_durations = has_durations


class Failed(Message):
    """Something the user must read: one sentence, no traceback."""

    def __init__(self, text: str, fatal: bool = False) -> None:
        super().__init__()
        self.text = text
        self.fatal = fatal


class PeaksLoaded(Message):
    def __init__(self, peaks: dict[int, TimelinePeak]) -> None:
        super().__init__()
        self.peaks = peaks


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


class LiveLoaded(Message):
    def __init__(self, live: LiveAt) -> None:
        super().__init__()
        self.live = live


class NodeLoaded(Message):
    def __init__(self, timeline_id: int, step: int, detail: NodeDetail | None,
                 collectives: tuple[CollectiveInFlight, ...]) -> None:
        super().__init__()
        self.timeline_id = timeline_id
        self.step = step
        self.detail = detail
        self.collectives = collectives


class JumpFound(Message):
    """A search or a collective jump found where to go (or ``step`` None: nothing)."""

    def __init__(self, step: int | None, what: str, hit: SearchHit | None = None) -> None:
        super().__init__()
        self.step = step
        self.what = what
        self.hit = hit
