"""Messages from the snapshot screen's workers. Each holds immutable snapshots."""

from __future__ import annotations

from textual.message import Message
from tlview.store.snapshot_queries import (
    OomDetail,
    SiteRow,
    SnapshotCurve,
    SnapshotOverview,
    SnapshotPoint,
)


class OverviewLoaded(Message):
    """The peaks, the number of entries and the OOMs (None: no allocator state)."""

    def __init__(self, overview: SnapshotOverview | None) -> None:
        super().__init__()
        self.overview = overview


class CurveLoaded(Message):
    def __init__(self, curve: SnapshotCurve) -> None:
        super().__init__()
        self.curve = curve


class PointLoaded(Message):
    """The entry at ``event_index`` and what the allocator held after it."""

    def __init__(self, event_index: int, point: SnapshotPoint | None) -> None:
        super().__init__()
        self.event_index = event_index
        self.point = point


class SitesLoaded(Message):
    """The blocks live after ``event_index``, by site (read after its point)."""

    def __init__(self, event_index: int, sites: tuple[SiteRow, ...]) -> None:
        super().__init__()
        self.event_index = event_index
        self.sites = sites


class OomsLoaded(Message):
    def __init__(self, ooms: tuple[OomDetail, ...]) -> None:
        super().__init__()
        self.ooms = ooms


class StackLoaded(Message):
    def __init__(self, stack_id: int, frames: tuple[str, ...]) -> None:
        super().__init__()
        self.stack_id = stack_id
        self.frames = frames
