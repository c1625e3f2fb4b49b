"""Messages of the runs screen's workers and of its routes. Each holds immutable values."""

from __future__ import annotations

from textual.message import Message
from tlview.store.report import RunRow, Verdict


class RunsListed(Message):
    """The database's runs, before their verdicts."""

    def __init__(self, runs: tuple[RunRow, ...]) -> None:
        super().__init__()
        self.runs = runs


class VerdictsRead(Message):
    """One run's verdict lines (the report's headline)."""

    def __init__(self, run_id: int, verdicts: tuple[Verdict, ...]) -> None:
        super().__init__()
        self.run_id = run_id
        self.verdicts = verdicts


class OpenRuns(Message):
    """Show the runs screen (the chooser's ``s``)."""


class ShowRun(Message):
    """Show the chooser with only the timelines of run ``name``."""

    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = name
