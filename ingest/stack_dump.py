"""Python stack dumps of a hung rank: faulthandler's and py-spy's text, to thread stacks.

Two tools print where each thread of a Python process sits, innermost frame first:

- ``faulthandler.dump_traceback(file, all_threads=True)`` (and its ``dump_traceback_later``
  watchdog, ``faulthandler.register`` on a signal, a fatal error):
  ``Thread 0x00007f...`` or ``Current thread 0x...`` or ``Stack`` then ``(most recent call
  first):``, one ``  File "path", line N in func`` per frame (``  <no Python frame>``,
  ``  ...`` where the stack is cut); a fatal error's ``Fatal Python error: ...`` and
  ``Extension modules: ...`` lines, a watchdog's ``Timeout (0:00:05)!`` around them.
- ``py-spy dump --pid PID``: ``Process PID: command``, ``Python vX.Y.Z (path)``, then per
  thread ``Thread 0x7F... (active): "MainThread"`` (``idle``, ``active+gil``...) and one
  ``    func (path:line)`` per frame, ``--locals`` adding indented ``Arguments:`` /
  ``Locals:`` lines (kept with their frame).

Each file is one timeline (format ``stack_dump``, key ``rank<r>``, the rank from the file
name as for Flight Recorder dumps: ``rank3.faulthandler.txt``, ``stacks_rank_3.txt``); each
thread a ``thread_stack`` event whose frames are interned (``frames``, ``stacks``; a
py-spy frame's locals in the frame's attrs). A file holding several dumps (a watchdog
that fired twice) numbers them: ``attrs.dump`` 0, 1, ... (a new dump begins at a
``Timeout``/``Fatal Python error`` line, or where a thread already listed appears again).
Lines of neither form (log lines around the dump) are counted in the note, the first 20
quoted; a file with no thread at all is refused.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .cuda_snapshot import Interner
from .errors import IngestError
from .flight_recorder import rank_from_name
from .lines import ProgressFn, read_text
from .records import Record, ThreadStack, Timeline, TimelineNote

FORMAT = "stack_dump"
MAX_EXAMPLES = 20

_FH_THREAD = re.compile(
    r"^(?P<current>Current thread|Thread) (?P<id>0x[0-9a-fA-F]+)"
    r"(?: \[(?P<name>[^\]]*)\])? \(most recent call first\):\s*$")
_FH_STACK = re.compile(r"^Stack \(most recent call first\):\s*$")
_FH_FRAME = re.compile(r'^  File "(?P<file>.*)", line (?P<line>\d+|\?\?\?) in (?P<name>.*)$')
_FH_MARK = re.compile(r"^  (<no Python frame>|\.\.\.)\s*$")
_FH_NEW_DUMP = re.compile(r"^(Timeout \([\d:.]+\)!|Fatal Python error: )")
_SPY_PROCESS = re.compile(r"^Process (?P<pid>\d+): (?P<cmd>.*)$")
_SPY_PYTHON = re.compile(r"^Python v(?P<version>\S+)(?: \((?P<exe>.*)\))?\s*$")
_SPY_THREAD = re.compile(r'^Thread (?P<id>(0x)?[0-9a-fA-F]+) \((?P<state>[\w+]+)\)'
                         r'(?:: "(?P<name>.*)")?\s*$')
_SPY_FRAME = re.compile(r"^    (?P<name>\S.*?) \((?P<file>.*?)(?::(?P<line>\d+))?\)\s*$")
_SPY_DETAIL = re.compile(r"^        \S")


class _Thread:
    __slots__ = ("id", "name", "state", "frames", "dump", "line")

    def __init__(self, tid: str | None, name: str | None, state: str | None, dump: int,
                 line: int) -> None:
        self.id, self.name, self.state, self.dump, self.line = tid, name, state, dump, line
        self.frames: list[dict[str, Any]] = []


class _Reader:
    def __init__(self, path: str) -> None:
        self.path = path
        self.rank = rank_from_name(Path(path).name)
        self.key = "stacks" if self.rank is None else f"rank{self.rank}"
        self.interner = Interner(path)
        self.dump = 0  # which dump of the file (a watchdog that fired twice: 0, 1, ...)
        self.seen: set[str | None] = set()  # the threads of this dump
        self.tool: str | None = None
        self.meta: dict[str, Any] = {}
        self.unknown = 0
        self.examples: list[str] = []
        self.threads = 0

    def thread(self, t: _Thread | None) -> list[Record]:
        """The records of a finished thread (its newly interned frames first)."""
        if t is None:
            return []
        sid = self.interner.stack(t.frames)
        attrs: dict[str, Any] = {"dump": t.dump, "line": t.line}
        if not t.frames:
            attrs["no_frames"] = True
        rec = ThreadStack(timeline=self.key, step=self.threads, thread=t.id, name=t.name,
                          state=t.state, stack_id=sid, attrs=attrs)
        self.threads += 1
        return [*self.interner.take(), rec]

    def next_dump(self) -> None:
        """A header line: the threads after it are another dump's."""
        if self.threads:
            self.dump += 1
            self.seen = set()

    def other(self, n: int, text: str) -> None:
        if not text.strip():
            return
        self.unknown += 1
        if len(self.examples) < MAX_EXAMPLES:
            self.examples.append(f"line {n}: {text[:200]}")

    def read(self, progress: ProgressFn | None) -> Iterator[Record]:  # noqa: C901 - one loop
        name = Path(self.path).name
        attrs: dict[str, Any] = {"file": name}
        if self.rank is not None:
            attrs.update(rank=self.rank, rank_from="file name")
        title = f"rank {self.rank}" if self.rank is not None else "rank unknown"
        yield Timeline(key=self.key, name=f"{title} Python stacks ({name})", format=FORMAT,
                       device=None, attrs=attrs)
        cur: _Thread | None = None
        for n, text in enumerate(read_text(self.path, progress), 1):
            m = _FH_THREAD.match(text) or _FH_STACK.match(text)
            s = None if m else _SPY_THREAD.match(text)
            if m or s:
                yield from self.thread(cur)
                g = (m or s).groupdict()  # type: ignore[union-attr]
                tid = g.get("id")
                if tid in self.seen and tid is not None:
                    self.next_dump()
                self.seen.add(tid)
                if m:
                    self.tool = self.tool or "faulthandler"
                    state = "current" if g.get("current") == "Current thread" else None
                else:
                    self.tool = "py-spy"
                    state = g["state"]
                cur = _Thread(tid, g.get("name"), state, self.dump, n)
                continue
            if cur is not None:
                f = _FH_FRAME.match(text)
                if f:
                    line = f["line"]
                    cur.frames.append({"filename": f["file"], "name": f["name"],
                                       "line": int(line) if line.isdigit() else None})
                    continue
                if _FH_MARK.match(text):
                    if text.strip() == "...":
                        cur.frames.append({"filename": None, "name": "...", "line": None,
                                           "cut": True})
                    continue
                f = _SPY_FRAME.match(text)
                if f and self.tool == "py-spy":
                    cur.frames.append({"filename": f["file"], "name": f["name"],
                                       "line": int(f["line"]) if f["line"] else None})
                    continue
                if _SPY_DETAIL.match(text) and self.tool == "py-spy" and cur.frames:
                    cur.frames[-1].setdefault("locals", []).append(text.strip())
                    continue
            p = None if _FH_NEW_DUMP.match(text) else _SPY_PROCESS.match(text)
            if p or _FH_NEW_DUMP.match(text):
                yield from self.thread(cur)
                cur = None
                self.next_dump()
                if p:
                    self.meta.update(pid=int(p["pid"]), command=p["cmd"])
                else:
                    self.meta.setdefault("headers", []).append(text.strip()[:200])
                continue
            v = _SPY_PYTHON.match(text)
            if v:
                self.meta.update(python=v["version"], executable=v["exe"])
                continue
            if cur is not None and not text.strip():
                yield from self.thread(cur)
                cur = None
                continue
            self.other(n, text)
        yield from self.thread(cur)
        if not self.threads:
            raise IngestError(self.path, None, "no thread stack in it: expected faulthandler's "
                              "'Thread 0x... (most recent call first):' or py-spy dump's "
                              "'Thread 0x... (active): \"MainThread\"' lines")
        note: dict[str, Any] = {"tool": self.tool, "threads": self.threads, "dumps": self.dump + 1,
                                **self.meta}
        if self.unknown:
            note["other_lines"] = self.unknown
            note["other_examples"] = self.examples
        yield TimelineNote(self.key, note)


def parse_stack_dump(path: str, progress: ProgressFn | None = None) -> Iterator[Record]:
    """The timeline of one process's stack dump: its threads, their interned frames."""
    return _Reader(path).read(progress)


def sniff(head: str, path: str) -> bool:
    """faulthandler's thread or stack header, or py-spy's process line and a thread."""
    lines = head.splitlines()
    if any(_FH_THREAD.match(ln) or _FH_STACK.match(ln) for ln in lines):
        return True
    return any(_SPY_PROCESS.match(ln) for ln in lines[:5]) and any(
        _SPY_THREAD.match(ln) for ln in lines)


def _spec() -> Any:
    from .format_spec import FormatSpec

    return FormatSpec(name=FORMAT, description="Python stack dump of one process "
                      "(faulthandler.dump_traceback, py-spy dump), one per rank",
                      sniff=sniff, parse=parse_stack_dump)


SPEC = _spec()
