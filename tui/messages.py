"""Messages every screen may send to the app, which routes between screens.

Screens never push one another's screens: they ask the app (``OpenTimeline``), so the
app alone decides which screen shows a timeline. Each screen's own messages (from its
workers) live beside it.
"""

from __future__ import annotations

from textual.message import Message
from tlview.store.timeline_queries import DataVersion, TimelineInfo, TimelinePeak


class Failed(Message):
    """Something the user must read: one sentence, no traceback."""

    def __init__(self, text: str, fatal: bool = False) -> None:
        super().__init__()
        self.text = text
        self.fatal = fatal


class TimelinesLoaded(Message):
    """The database's timelines and their peaks (at opening, and after an ingest)."""

    def __init__(self, timelines: tuple[TimelineInfo, ...], peaks: dict[int, TimelinePeak],
                 has_durations: bool, version: DataVersion) -> None:
        super().__init__()
        self.timelines = timelines
        self.peaks = peaks
        self.has_durations = has_durations
        self.version = version


class PeaksLoaded(Message):
    """More peaks, read after the timelines (CUDA allocator snapshots' allocated peaks)."""

    def __init__(self, peaks: dict[int, TimelinePeak]) -> None:
        super().__init__()
        self.peaks = peaks


class OpenTimeline(Message):
    """Show a timeline: a compiled one at ``step``, a measured one at the kernel ``seq``
    (``kernels``: the attached kernels of a node, to step through; ``why``: said on arrival)."""

    def __init__(self, timeline_id: int, *, step: int | None = None, seq: int | None = None,
                 kernels: tuple[int, ...] = (), why: str = "") -> None:
        super().__init__()
        self.timeline_id = timeline_id
        self.step = step
        self.seq = seq
        self.kernels = kernels
        self.why = why


class DatabaseWaiting(Message):
    """A read waits for an ingest to release the file (``text`` says so), or no longer."""

    def __init__(self, text: str | None) -> None:
        super().__init__()
        self.text = text


class GoBack(Message):
    """Leave this screen for the one before it (after a jump), or the chooser."""


class OpenRanks(Message):
    """Show the ranks screen: the collectives across ranks of the run holding the trace
    ``timeline_id`` (None: the first run)."""

    def __init__(self, timeline_id: int | None = None) -> None:
        super().__init__()
        self.timeline_id = timeline_id


class OpenHang(Message):
    """Show the hang screen at the incident of the dump ``timeline_id``, its cursor on
    ``rank`` (the culprit a verdict names) with that rank's detail, else on the first
    culprit."""

    def __init__(self, timeline_id: int, rank: int | None = None) -> None:
        super().__init__()
        self.timeline_id = timeline_id
        self.rank = rank


class CompareTimelines(Message):
    """Show timelines ``a`` and ``b`` side by side, aligned (the chooser's ``c``)."""

    def __init__(self, a: int, b: int) -> None:
        super().__init__()
        self.a = a
        self.b = b
