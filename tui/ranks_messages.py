"""Messages from the ranks screen's workers. Each holds immutable snapshots."""

from __future__ import annotations

from textual.message import Message
from tlview.store.rank_queries import Arrival, LateTarget, RunInfo, RunView, WhatIf


class RunsLoaded(Message):
    """The database's runs of rank traces; ``start``: the run to show first (index)."""

    def __init__(self, runs: tuple[RunInfo, ...], start: int) -> None:
        super().__init__()
        self.runs = runs
        self.start = start


class RunLoaded(Message):
    def __init__(self, view: RunView) -> None:
        super().__init__()
        self.view = view


class WhatIfLoaded(Message):
    """The step of the run a straggler cost the most (None: none), read after the run."""

    def __init__(self, run: int, whatif: WhatIf | None) -> None:
        super().__init__()
        self.run = run
        self.whatif = whatif


class ArrivalsLoaded(Message):
    """The ranks of one collective, latest first."""

    def __init__(self, run: int, collective_id: int, arrivals: tuple[Arrival, ...]) -> None:
        super().__init__()
        self.run = run
        self.collective_id = collective_id
        self.arrivals = arrivals


class TargetsLoaded(Message):
    """Where each collective's last rank was just before it arrived (Enter goes there)."""

    def __init__(self, run: int, targets: dict[int, LateTarget]) -> None:
        super().__init__()
        self.run = run
        self.targets = targets
