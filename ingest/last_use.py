"""Streaming last-use tracking: state only for buffers whose users have not all appeared.

A buffer's last use is the largest step among its (non-weak) users; a buffer that
another buffer mutates or aliases lives at least as long as that buffer. Users lie
ahead in the schedule, so a buffer stays *open* until every user has appeared and
every buffer linked to it has closed; then its last step is final and it is
released from memory. The memory held is the frontier of open buffers, not the
whole graph, so it stays flat as a dump grows.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable

import attrs

RECENT_NODES = 65536  # node names remembered, for users printed after their node


@attrs.define
class _Open:
    own: int
    last: int
    line: int
    unseen: int = 0  # users not yet appeared
    to_end: bool = False  # an OUTPUT user: live through the last step
    dependents: int = 0  # open buffers that mutate/alias this one
    targets: list[str] = attrs.field(factory=list)  # what this one mutates/aliases
    nbytes: int | None = None
    producer: str = ""


@attrs.frozen
class Closed:
    """A buffer whose last live step is now known."""

    buffer: str
    last: int
    reason: str


class LastUse:
    """Feed it buffers (with their users) and nodes as they appear; it yields closures."""

    def __init__(self) -> None:
        self.open: dict[str, _Open] = {}
        self.waiting: dict[str, list[str]] = {}  # node name -> open buffers waiting for it
        self.recent: OrderedDict[str, int] = OrderedDict()  # node name -> step
        self.closed: list[Closed] = []
        self.candidates: list[str] = []  # buffers that may have become closable

    def buffer(self, name: str, step: int, users: Iterable[str | None], line: int,
               nbytes: int | None, producer: str) -> None:
        """``users``: node names, or None for an OUTPUT user."""
        b = _Open(own=step, last=step, line=line, nbytes=nbytes, producer=producer)
        self.open[name] = b
        for user in users:
            if user is None:
                b.to_end = True
                continue
            seen = self.recent.get(user)
            if seen is not None:
                b.last = max(b.last, seen)
            else:
                b.unseen += 1
                self.waiting.setdefault(user, []).append(name)
        if not b.unseen:
            self.candidates.append(name)

    def link(self, buffer: str, target: str) -> None:
        """``buffer`` mutates or aliases ``target``: target lives at least as long."""
        t = self.open.get(target)
        self.open[buffer].targets.append(target)
        if t is not None:
            t.dependents += 1

    def node(self, names: Iterable[str], step: int) -> None:
        """The node known by ``names`` (a fused node and its sub-nodes) ran at ``step``."""
        for name in names:
            self.recent[name] = step
            if len(self.recent) > RECENT_NODES:
                self.recent.popitem(last=False)
            for buf in self.waiting.pop(name, ()):
                b = self.open.get(buf)
                if b is None:
                    continue
                b.last = max(b.last, step)
                b.unseen -= 1
                if not b.unseen:
                    self.candidates.append(buf)
        candidates, self.candidates = self.candidates, []
        for n in candidates:
            b = self.open.get(n)
            if b is not None and not b.unseen and not b.to_end and not b.dependents:
                self._close(n, "last use")

    def _close(self, name: str, reason: str) -> None:
        """Close ``name``, then each target it was the last dependent of, depth first (a
        chain of views of views is as long as the graph: no recursion)."""
        b = self.open.pop(name, None)
        if b is None:
            return
        self.closed.append(Closed(name, b.last, reason))
        work = [(name, b, iter(b.targets))]
        while work:
            name, b, targets = work[-1]
            for t in targets:
                tb = self.open.get(t)
                if tb is None:
                    # an input, or a buffer that closed before this link was known: a
                    # second, later free record extends it (views take the latest).
                    self.closed.append(Closed(t, b.last, f"extended by {name}"))
                    continue
                tb.last = max(tb.last, b.last)
                tb.dependents -= 1
                if tb.unseen == 0 and not tb.to_end and tb.dependents == 0:
                    del self.open[t]
                    self.closed.append(Closed(t, tb.last, "last use"))
                    work.append((t, tb, iter(tb.targets)))
                    break
            else:
                work.pop()

    def drain(self) -> list[Closed]:
        out, self.closed = self.closed, []
        return out

    def finish(self, last_step: int) -> list[tuple[str, str, int]]:
        """Close everything at the end. Returns (buffer, missing user, line) left waiting."""
        missing = [
            (buf, user, self.open[buf].line)
            for user, bufs in self.waiting.items() for buf in bufs if buf in self.open
        ]
        if missing:
            return missing
        for b in self.open.values():
            if b.to_end:
                b.last = last_step
        while self.open:
            free = [n for n, b in self.open.items() if b.dependents == 0]
            if not free:  # a cycle of links: close what is left as it stands
                free = list(self.open)
                for n in free:
                    self.open[n].dependents = 0
            for n in free:
                self._close(n, "graph output" if self.open.get(n) and self.open[n].to_end
                            else "last use")
        return []
