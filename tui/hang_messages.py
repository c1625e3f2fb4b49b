"""Messages from the hang screen's workers. Each holds immutable snapshots."""

from __future__ import annotations

from textual.message import Message
from tlview.store.hang_queries import Grid, Incident, RankDetail


class IncidentsLoaded(Message):
    """The database's hangs; ``start``: the one to show first (index)."""

    def __init__(self, incidents: tuple[Incident, ...], start: int) -> None:
        super().__init__()
        self.incidents = incidents
        self.start = start


class GridLoaded(Message):
    def __init__(self, grid: Grid) -> None:
        super().__init__()
        self.grid = grid


class RankLoaded(Message):
    """One rank's stacks, newest entries and profiler end, for the detail below."""

    def __init__(self, incident: int, detail: RankDetail) -> None:
        super().__init__()
        self.incident = incident
        self.detail = detail
