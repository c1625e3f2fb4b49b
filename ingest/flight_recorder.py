"""Flight Recorder dumps (torch.distributed's per-rank trace of collectives) to events.

With ``TORCH_FR_BUFFER_SIZE`` (``TORCH_NCCL_TRACE_BUFFER_SIZE`` before torch 2.7) each rank
keeps a ring of its last collectives and point-to-point ops; NCCL's watchdog writes it on a
timeout (``TORCH_NCCL_DUMP_ON_TIMEOUT``) to ``TORCH_FR_DUMP_TEMP_FILE`` +  rank, and
``torch._C._distributed_c10d._dump_fr_trace()`` / ``_dump_fr_trace_json()`` (older:
``_dump_nccl_trace``) return it on demand. Two forms of the same content:

- a pickle (protocol 2, written by torch's C++ pickler) of a dict: ``version``,
  ``pg_config``, ``pg_status``, ``comm_lib_version``, ``entries`` (the ring, oldest first),
  ``nccl_comm_state``. Read by ``pickle_stream`` (opcodes, never executed; the entries
  streamed one at a time, their frames interned): a pickle that would run code is refused
  and nothing of it runs.
- JSON (nlohmann, keys in alphabetical order): the same keys, without the frames; the
  pg_status numbers as text, an unseen start or completion as 0 instead of None.

Each dump is one timeline (format ``flight_recorder``, key ``rank<r>``):

- every entry is a ``collective_recorded`` event (ingest/records.py says which field goes
  where); a key this reader does not know is kept in ``attrs``; ``seq_id`` of dumps before
  the split into collective and p2p sequence ids is read as the collective one;
- every ``pg_config`` group a ``process_group`` event (its ranks parsed from the text
  torch writes, ``"[0, 1]"``), every ``pg_status`` group a ``process_group_status`` one;
- the note: the dump's ``version`` and whether this reader knows it (major version 1 or
  2; another is read by structure all the same, and said), the form, the rank as the
  content gives it (a ``rank`` key, where a dump has one), ``comm_lib_version``, the
  per-communicator state, the counts.

**The rank.** torch names a dump ``<prefix><rank>`` (``comm_lib_trace_rank_3``,
``nccl_trace_rank_3``); users add host names and suffixes. The rank is the content's
``rank`` key where present, else from the file name: the number after ``rank`` (``rank3``,
``rank_3``, ``rank-3``), else the only number in the name, else its last number (torch
writes the rank last); the timeline's attrs say which (``rank_from``). A name with no
number gives a dump without rank (key ``dump``), which the hang views name but cannot
place.
"""

from __future__ import annotations

import functools
import gc
import gzip
import json
import marshal
import math
import os
import re
import zlib
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from itertools import chain, repeat
from operator import itemgetter
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import native
from .cuda_snapshot import Frame, InternedStack, Interner, _clean, frame_record
from .errors import IngestError
from .lines import ProgressFn, open_binary
from .pickle_stream import TOP, PickleStream
from .records import (
    EventColumns,
    ProcessGroupProgress,
    ProcessGroupRecorded,
    Record,
    StackInterned,
    Timeline,
    TimelineNote,
    columns_wanted,
    dumps,
)

if TYPE_CHECKING:
    import pyarrow as pa

FORMAT = "flight_recorder"
KNOWN_MAJORS = (1, 2)
ENTRIES = ("entries",)
BATCH = 20_000  # entries per EventColumns (the writer's batch size)
QUEUED = 1_000  # streamed entries converted together (BATCH is a multiple)

# Entry keys read into columns; every other key goes to attrs.
_COLUMNS = {
    "record_id", "pg_id", "process_group", "collective_seq_id", "p2p_seq_id", "op_id",
    "profiling_name", "is_p2p", "state", "time_created_ns", "time_discovered_started_ns",
    "time_discovered_completed_ns", "duration_ms", "input_sizes", "output_sizes",
    "input_dtypes", "output_dtypes", "timeout_ms", "retired", "frames",
}
_TOP_KNOWN = {"version", "pg_config", "pg_status", "comm_lib_version", "entries",
              "nccl_comm_state", "rank"}
_SUFFIXES = re.compile(r"(\.(pkl|pickle|json|gz|txt|bin|dump))+$", re.I)
_RANK_WORD = re.compile(r"rank[_\-.]?(\d+)", re.I)
_NUMBER = re.compile(r"\d+")


def rank_from_name(name: str) -> int | None:
    """The rank a dump's file name gives (see the module's doc), or None."""
    stem = _SUFFIXES.sub("", Path(name).name)
    words = _RANK_WORD.findall(stem)
    if words:
        return int(words[-1])
    numbers = _NUMBER.findall(stem)
    return int(numbers[-1]) if numbers else None


_INT64 = (-(1 << 63), 1 << 63)
_LO, _HI = _INT64


def _int(v: Any) -> int | None:
    """An integer field as the dump holds it (JSON gives some as text); None if not one
    (or beyond 64 bits: no dump counts that far)."""
    if type(v) is bool:
        return None
    if type(v) is str and re.fullmatch(r"-?\d{1,19}", v.strip()):
        v = int(v)
    elif type(v) is float and v.is_integer() and abs(v) < 2.0 ** 63:
        v = int(v)
    if type(v) is int and _INT64[0] <= v < _INT64[1]:
        return v
    return None


def _time_ns(v: Any) -> int | None:
    """A discovered-at time: None (pickle) and 0 (JSON) both mean not seen."""
    n = _int(v)
    return n if n else None


_TEXTS: dict[bytes, str] = {}  # sizes and dtypes repeat: their JSON by marshal bytes


def _text(v: Any) -> str | None:
    """A field as compact JSON text (sizes, dtypes: ``[[8]]``, ``["Float"]``)."""
    if v is None:
        return None
    return json.dumps(_plain(v), separators=(",", ":"), default=str)  # as the writer's


def _plain(v: Any) -> Any:
    """Tuples and sets as lists, bytes as text, the pickle reader's stand-ins for frames
    and stacks it interned as their ids (not their objects' text, which names an address):
    what JSON can hold (any other object becomes its text, as in the writer's attrs)."""
    if type(v) is Frame:
        return v.frame_id
    if type(v) is InternedStack:
        return v.stack_id
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    if isinstance(v, (set, frozenset)):  # not what torch writes; a mutated dump's
        return sorted((_plain(x) for x in v), key=repr)
    if isinstance(v, dict):
        return {str(k): _plain(x) for k, x in v.items()}
    if isinstance(v, (bytes, bytearray)):
        return v.decode("utf-8", "replace")
    if isinstance(v, float) and not math.isfinite(v):
        return str(v)
    return v


def _str(v: Any) -> str | None:
    """A text column's value: str(v), surrogates (a pickle's, or JSON's \\ud800, which
    Arrow cannot hold) as U+FFFD; None stays None."""
    return None if v is None else _clean(str(v))


def _pg(v: Any) -> tuple[str | None, str | None]:
    """``process_group``: (name, desc) as a tuple (pickle) or list (JSON); older dumps a
    bare name."""
    if isinstance(v, (list, tuple)):
        return (_str(v[0]) if v else None, _str(v[1]) if len(v) > 1 else None)
    return (_str(v), None)


def _dur_ns(dur: Any) -> int | None:
    """``duration_ms`` in ns, rounded half to even; None where it is not a finite number
    or its ns are (1e308 ms: Python's round raised)."""
    if type(dur) is not float and type(dur) is not int:  # (a bool's type is neither)
        return None
    try:
        ns = dur * 1e6
    except OverflowError:  # an int past a float's range
        return None
    return _int(round(ns)) if math.isfinite(ns) else None


# Column rules over a list of an entry field's values (``None`` where a key is missing):
# the per-value rules above, applied only to values that are not already the plain type
# (one pass of C-level checks over a column, the per-value rule where one fails).
_NONE = type(None)
_INT_OR_NONE = {int, _NONE}


def _ints(vals: list[Any]) -> list[int | None]:
    """``_int`` of each value."""
    types = set(map(type, vals))
    if types <= _INT_OR_NONE:
        nums = vals if _NONE not in types else [v for v in vals if v is not None]
        if not nums or (_LO <= min(nums) and max(nums) < _HI):
            return vals
    return [v if type(v) is int and _LO <= v < _HI else _int(v) for v in vals]


def _times_ns(vals: list[Any]) -> list[int | None]:
    """``_time_ns`` of each value."""
    ns = _ints(vals)
    return [n or None for n in ns] if 0 in ns else ns


def _strs(vals: list[Any]) -> list[str | None]:
    """``_str`` of each value."""
    if set(map(type, vals)) <= {str, _NONE}:
        texts = "".join([v for v in vals if v is not None])
        if _clean(texts) is texts:  # no surrogates in any
            return vals
    return list(map(_str, vals))


def _bools(vals: list[Any]) -> list[bool | None]:
    """A bool column: anything else is NULL."""
    if set(map(type, vals)) <= {bool, _NONE}:
        return vals
    return [v if type(v) is bool else None for v in vals]


def _texts(vals: list[Any]) -> list[str | None]:
    """``_text`` of each value, kept by the value's marshal bytes (which tell True, 1 and
    1.0 apart, as the text does); a column with a value marshal cannot write (an
    interned frame's stand-in) value by value."""
    try:
        keys = list(map(marshal.dumps, vals, repeat(0, len(vals))))
    except ValueError:
        return list(map(_text, vals))
    got = list(map(_TEXTS.get, keys))
    if None in got:
        for i, t in enumerate(got):
            if t is None and vals[i] is not None:
                got[i] = text = _text(vals[i])
                if len(_TEXTS) < 100_000:
                    _TEXTS[keys[i]] = text  # type: ignore[assignment]
    return got


def _pgs(vals: list[Any]) -> tuple[list[str | None], list[str | None]]:
    """``_pg`` of each value, as the name and desc columns."""
    if vals and set(map(type, vals)) <= {list, tuple} and min(map(len, vals)) >= 2:
        return _strs(list(map(itemgetter(0), vals))), _strs(list(map(itemgetter(1), vals)))
    pairs = list(map(_pg, vals))
    return [p[0] for p in pairs], [p[1] for p in pairs]

# An entry's fields by how they are read: (column, key).
_INT_FIELDS = (("step", "record_id"), ("pg_id", "pg_id"), ("p2p_seq_id", "p2p_seq_id"),
               ("op_id", "op_id"), ("ts_ns", "time_created_ns"), ("timeout_ms", "timeout_ms"))
_TIME_FIELDS = (("started_ns", "time_discovered_started_ns"),
                ("completed_ns", "time_discovered_completed_ns"))
_TEXT_FIELDS = (("in_sizes", "input_sizes"), ("out_sizes", "output_sizes"),
                ("in_dtypes", "input_dtypes"), ("out_dtypes", "output_dtypes"))
_BOOL_FIELDS = (("is_p2p", "is_p2p"), ("retired", "retired"))
# The columns of collective_recorded events and their Arrow types' names (its table's):
# pyarrow is loaded where the columns are made (_arrow_types), not where formats are listed.
_I64, _STR, _BOOL = "int64", "string", "bool_"
_TYPES = (("step", _I64), ("op", _STR), ("ts_ns", _I64), ("dur_ns", _I64), ("attrs", _STR),
          ("stack_id", "int32"), ("process_group", _STR), ("pg_desc", _STR),
          ("pg_id", _I64), ("seq_id", _I64), ("p2p_seq_id", _I64), ("op_id", _I64),
          ("is_p2p", _BOOL), ("state", _STR), ("started_ns", _I64), ("completed_ns", _I64),
          ("in_sizes", _STR), ("out_sizes", _STR), ("in_dtypes", _STR), ("out_dtypes", _STR),
          ("timeout_ms", _I64), ("retired", _BOOL))
_ATTRS: dict[tuple[tuple[str, Any, type], ...], str] = {}  # an entry's other keys repeat


@functools.cache
def _arrow_types() -> tuple[tuple[str, pa.DataType], ...]:
    import pyarrow as pa

    return tuple((name, getattr(pa, t)()) for name, t in _TYPES)


def _attrs_text(extra: dict[str, Any]) -> str:
    """The attrs JSON of an entry's other keys (the writer's text: ``dumps``)."""
    try:  # (a value's type in the key: True and 1 are equal, their text is not)
        key = tuple((k, v, type(v)) for k, v in extra.items())
        got = _ATTRS.get(key)
    except TypeError:  # a list among them: not kept
        return dumps(extra)  # type: ignore[return-value]
    if got is None:
        got = dumps(extra)
        if len(_ATTRS) < 100_000:
            _ATTRS[key] = got  # type: ignore[assignment]
    return got  # type: ignore[return-value]


def _ranks(v: Any) -> tuple[int, ...] | None:
    """A group's ranks: a list (or tuple) of integers (``_int``), else None."""
    if not isinstance(v, (list, tuple)):
        return None
    ints = _ints(list(v))
    return None if None in ints else tuple(ints)  # type: ignore[arg-type]

def _extra(keys: tuple[Any, ...], values: Any) -> dict[str, Any]:
    """An entry's keys that are not columns and their values, as attrs keeps them."""
    return {str(k): v if type(v) is str else _plain(v) for k, v in zip(keys, values)}

class _Dump:
    """One dump as it is read: its timeline key, frames, what the note will say."""

    def __init__(self, path: str, form: str) -> None:
        self.path = path
        self.form = form
        name = Path(path).name
        self.rank = rank_from_name(name)
        self.key = "dump" if self.rank is None else f"rank{self.rank}"
        self.interner = Interner(path)
        self.n_entries = 0
        self.unknown_entry_keys: dict[str, int] = {}
        self.old_seq_ids = 0
        self.bad: IngestError | None = None
        self.queued: list[Any] = []
        self.cols: dict[str, list[Any]] = {name: [] for name, _ in _TYPES}

    def timeline(self) -> Timeline:
        name = Path(self.path).name
        attrs: dict[str, Any] = {"file": name, "form": self.form}
        if self.rank is not None:
            attrs.update(rank=self.rank, rank_from="file name")
        title = f"rank {self.rank}" if self.rank is not None else "rank unknown"
        return Timeline(key=self.key, name=f"{title} flight recorder ({name})",
                        format=FORMAT, device=None, attrs=attrs)

    def entry(self, e: Any) -> None:
        """Add one streamed entry: queued, and converted with the others (``entries``)
        QUEUED at a time; ``rows`` converts the rest. Its frames are interned now, before
        the stream reads on (the frames and stacks in the order read, as the compiled
        core gives them); where that raises, the queue is converted now: the error is
        the first that entry by entry gives."""
        self.queued.append(e)
        if type(e) is dict and "frames" in e:
            try:
                self.interner.stack(e["frames"])
            except Exception:
                self.convert_queued()
                raise
        if len(self.queued) >= QUEUED:
            self.convert_queued()

    def convert_queued(self) -> None:
        """Convert the queued entries now (before what the stream reads after them)."""
        if self.queued:
            queued, self.queued = self.queued, []
            self.entries(queued)

    def entries(self, es: list[Any]) -> None:
        """Add the entries' rows to the columns (their frames interned); ``rows`` hands
        them over. Column by column as the writer's table holds them (collective_recorded's
        fields, store/records.py), each field's rule applied to the list of its values
        (``_columns``): a thousand dumps of thousands of entries each made a record object
        per entry, then a row of it, then cost as much again as json.loads entry by entry
        (docs/benchmarks.md). An entry that is not a dict adds no row and is said once the
        dump is read (a refusal comes first). Where a rule raises, the entries are added
        one at a time: the error is the first entry's, as read in order."""
        dicts = es
        if set(map(type, es)) - {dict}:
            dicts = [e for e in es if type(e) is dict]
            if self.bad is None:
                i, e = next((i, e) for i, e in enumerate(es) if type(e) is not dict)
                self.bad = IngestError(self.path, None, f"entry {self.n_entries + i} is a "
                                       f"{type(e).__name__}, expected a dict with record_id, "
                                       "process_group, collective_seq_id, profiling_name, ...")
        try:
            cols, keys, old_seq_ids = self._columns(dicts)
        except Exception:
            if len(es) == 1:
                raise
            for e in es:
                self.entries([e])
            return
        for name, col in cols.items():
            self.cols[name] += col
        for k, n in keys.items():
            self.unknown_entry_keys[k] = self.unknown_entry_keys.get(k, 0) + n
        self.old_seq_ids += old_seq_ids
        self.n_entries += len(es)

    def _columns(self, es: list[dict[Any, Any]]) -> tuple[dict[str, list[Any]],
                                                          dict[str, int], int]:
        """The entries' column values, the unknown keys' counts (in the order first seen)
        and how many read ``seq_id`` as the collective one; the fields in the order an
        entry's were read one at a time (the same first error)."""
        n = len(es)
        # The keys that are not columns, in each entry's order. Mostly every entry has
        # the same keys in the same order: then its values are the columns. Keys that
        # are not all text (1 and True are equal keys of different text): entry by entry.
        shapes = list(map(tuple, es))
        by_key: dict[Any, list[Any]] | None = None
        if n and shapes.count(shapes[0]) == n and all(type(k) is str for k in shapes[0]):
            by_key = dict(zip(shapes[0], map(list, zip(*map(dict.values, es)))))
            unknown = None
            groups = [(tuple(k for k in shapes[0] if k not in _COLUMNS), n)]
        else:
            counts = Counter(shapes)
            if all(type(k) is str for s in counts for k in s):
                shape_unknown = {s: tuple(k for k in s if k not in _COLUMNS) for s in counts}
                unknown = list(map(shape_unknown.__getitem__, shapes))
                groups = [(shape_unknown[s], m) for s, m in counts.items()]
            else:
                unknown = [tuple(k for k in s if k not in _COLUMNS) for s in shapes]
                groups = [(u, 1) for u in unknown]

        def values(key: str) -> list[Any]:
            if by_key is None:
                return list(map(dict.get, es, repeat(key, n)))
            got = by_key.get(key)
            return [None] * n if got is None else got

        c: dict[str, list[Any]] = {}
        keys: dict[str, int] = {}
        for u, m in groups:
            for k in u:
                key = str(k)
                if key not in ("thread_name", "thread_id", "seq_id"):
                    keys[key] = keys.get(key, 0) + m
        extras: list[dict[str, Any] | None] | None = None
        attrs: list[str | None] | None = None
        if unknown is None:  # one sequence of keys: the other keys' values column-wise
            u = groups[0][0]
            if not u:
                attrs = [None] * n
            else:
                vals = list(zip(*map(values, u)))
                if set(map(type, chain.from_iterable(vals))) == {str}:  # attrs per text
                    texts = {v: _attrs_text(_extra(u, v)) for v in dict.fromkeys(vals)}
                    attrs = list(map(texts.__getitem__, vals))
                else:
                    extras = [_extra(u, v) for v in vals]
        else:
            extras = [_extra(u, [e[k] for k in u]) if u else None
                      for e, u in zip(es, unknown)]
        seq = _ints(values("collective_seq_id"))
        old_seq_ids = 0
        if None in seq:  # dumps before the collective/p2p split
            for i, e in enumerate(es):
                if seq[i] is None and "seq_id" in e:
                    seq[i] = _int(e["seq_id"])
                    old_seq_ids += 1
        c["seq_id"] = seq
        for col, key in _INT_FIELDS:
            c[col] = _ints(values(key))
        for col, key in _TIME_FIELDS:
            c[col] = _times_ns(values(key))
        for col, key in _TEXT_FIELDS:
            c[col] = _texts(values(key))
        for col, key in _BOOL_FIELDS:
            c[col] = _bools(values(key))
        c["op"] = _strs(values("profiling_name"))
        c["state"] = _strs(values("state"))
        c["process_group"], c["pg_desc"] = _pgs(values("process_group"))
        dur = values("duration_ms")
        c["dur_ns"] = dur if set(map(type, dur)) <= {_NONE} else list(map(_dur_ns, dur))
        frames = values("frames")
        c["stack_id"] = (frames if set(map(type, frames)) <= {_NONE}
                         else list(map(self.interner.stack, frames)))
        c["attrs"] = attrs if attrs is not None else [
            None if x is None else _attrs_text(x) for x in extras]  # type: ignore[union-attr]
        return c, keys, old_seq_ids

    def n_rows(self) -> int:
        """Entries added and not yet handed over (queued ones too)."""
        return len(self.cols["op"]) + len(self.queued)

    def rows(self) -> list[Record]:
        """The entries added since the last call: their newly interned frames and stacks,
        then the entries as one EventColumns where the writer reads (``columns_wanted``),
        else as records (the same rows: EventColumns.records)."""
        self.convert_queued()
        out: list[Record] = list(self.interner.take())
        n = len(self.cols["op"])
        if n:
            import pyarrow as pa

            cols = {"kind": pa.repeat(pa.scalar("collective_recorded"), n)}
            cols.update((name, pa.array(self.cols[name], type=t)) for name, t in _arrow_types())
            self.cols = {name: [] for name, _ in _TYPES}
            batch = EventColumns(timelines=(self.key,), n=n, columns=cols)
            if columns_wanted():
                out.append(batch)
            else:
                out += batch.records()
        return out

    def native_rows(self, batch: dict[str, Any]) -> list[Record]:
        """The compiled core's rows of the entries after those added here (as ``rows``
        hands them over: one EventColumns, or its records)."""
        out = self.rows()
        n, got = native.arrow_columns(batch)
        self.n_entries += n
        import pyarrow as pa

        cols = {"kind": pa.repeat(pa.scalar("collective_recorded"), n)}
        cols.update((name, got[name] if name in got else pa.nulls(n, type=t))
                    for name, t in _arrow_types())
        columns = EventColumns(timelines=(self.key,), n=n, columns=cols)
        if columns_wanted():
            out.append(columns)
        else:
            out += columns.records()
        return out

    def native_outputs(self, outputs: list[Any]) -> Iterator[Record]:
        """The records of the compiled core's outputs (native/flight_recorder.hpp): its
        rows, the entries it left to this reader, the attrs keys in the order they were
        first counted, frames and stacks. The entries left to this reader are converted
        before the next output that is not one, and before the next call."""
        for item in outputs:
            tag = item[0]
            if tag == "entry":
                self.entry(item[1])
                if self.n_rows() >= BATCH:
                    yield from self.rows()
                continue
            self.convert_queued()
            if tag == "batch":
                yield from self.native_rows(item[1])
            elif tag == "key":
                self.unknown_entry_keys.setdefault(item[1], 0)
            elif tag == "frame":
                yield frame_record(item[1], item[2])
            elif tag == "stack":
                yield StackInterned(stack_id=item[1], frame_ids=tuple(item[2]))
        self.convert_queued()

    def native_counts(self, keys: dict[str, int], old_seq_ids: int) -> None:
        """What the core's rows add to the note's counts."""
        for k, n in keys.items():
            self.unknown_entry_keys[k] = self.unknown_entry_keys.get(k, 0) + n
        self.old_seq_ids += old_seq_ids

    def tail(self, top: dict[str, Any]) -> list[Record]:
        """The groups, their progress and the note, from the dump's other keys."""
        if self.bad is not None:
            raise self.bad
        out: list[Record] = []
        cfg = top.get("pg_config")
        if isinstance(cfg, dict):
            for k, v in cfg.items():
                out.append(self._group(k, v))
        status = top.get("pg_status")
        if isinstance(status, dict):
            for k, v in status.items():
                v = v if isinstance(v, dict) else {}
                out.append(ProcessGroupProgress(
                    timeline=self.key, pg_id=_int(k),
                    last_enqueued=_int(v.get("last_enqueued_collective")),
                    last_started=_int(v.get("last_started_collective")),
                    last_completed=_int(v.get("last_completed_collective")),
                    attrs={str(a): _plain(b) for a, b in v.items()
                           if a not in ("last_enqueued_collective", "last_started_collective",
                                        "last_completed_collective")} or
                    ({} if _int(k) is not None else {"pg_key": str(k)})))
        out.append(TimelineNote(self.key, self._note(top)))
        return out

    def _group(self, key: Any, v: Any) -> ProcessGroupRecorded:
        if isinstance(v, dict):
            name, desc, ranks_v = v.get("name", key), v.get("desc"), v.get("ranks")
        else:  # older dumps: name -> ranks
            name, desc, ranks_v = key, None, v
        attrs: dict[str, Any] = {}
        ranks: tuple[int, ...] | None = None
        if isinstance(ranks_v, str):
            try:
                parsed = json.loads(ranks_v)
            except ValueError:
                parsed = None
            ranks = _ranks(parsed)
            if ranks is None:
                attrs["ranks_text"] = ranks_v
        else:
            ranks = _ranks(ranks_v)
            if ranks is None and ranks_v is not None:
                attrs["ranks_text"] = _plain(ranks_v)
        if isinstance(v, dict):
            attrs.update({str(a): _plain(b) for a, b in v.items()
                          if a not in ("name", "desc", "ranks")})
        if str(key) != str(name):
            attrs["key"] = str(key)
        return ProcessGroupRecorded(timeline=self.key, process_group=_str(name),
                                    pg_desc=_str(desc), ranks=ranks,
                                    attrs=attrs)

    def _note(self, top: dict[str, Any]) -> dict[str, Any]:
        version = top.get("version")
        note: dict[str, Any] = {"form": self.form, "n_entries": self.n_entries}
        if version is None:
            note["version"] = None
            note["version_note"] = "the dump states no version: read by structure"
        else:
            note["version"] = str(version)
            m = re.fullmatch(r"(\d+)\.(\d+)", str(version).strip())
            known = bool(m) and int(m.group(1)) in KNOWN_MAJORS  # type: ignore[union-attr]
            note["version_known"] = known
            if not known:
                note["version_note"] = (f"version {version} is not one this reader knows "
                                        f"(major {' or '.join(map(str, KNOWN_MAJORS))}): "
                                        "read by structure, unknown keys kept")
        rank = top.get("rank")
        if _int(rank) is not None:
            note["rank"] = _int(rank)
            note["rank_from"] = "content"
        for k in ("comm_lib_version", "nccl_comm_state"):
            if k in top:
                note[k] = _plain(top[k])
        other = {str(k): _plain(v) for k, v in top.items() if k not in _TOP_KNOWN}
        if other:
            note["unknown_keys"] = other
        if self.unknown_entry_keys:
            note["unknown_entry_keys"] = self.unknown_entry_keys
        if self.old_seq_ids:
            note["seq_id_read_as_collective_seq_id"] = self.old_seq_ids
        if "entries" not in top:
            note["entries_note"] = "the dump holds no entries (dumped without collectives)"
        return note


def _is_pickle(path: str) -> bool:
    with open_binary(path) as f:
        head = f.read(2)
    return len(head) == 2 and head[0] == 0x80


def parse_flight_recorder(path: str, progress: ProgressFn | None = None) -> Iterator[Record]:
    """The timeline of one rank's dump: its entries, groups, their progress, the note.
    The compiled core reads the entries where it is built (the same rows: native.py)."""
    core = native.module()
    if _is_pickle(path):
        if core is not None and hasattr(core, "FlightRecorderParser"):
            yield from _parse_pickle_native(core, path, progress)
        else:
            yield from _parse_pickle(path, progress)
    else:
        yield from _parse_json(path, core if hasattr(core, "flight_recorder_json") else None)


def _check_top(path: str, item: Any) -> None:
    """The pickle's top object is a dump's dict, its entries (if any) a list."""
    if not isinstance(item, dict):
        raise IngestError(path, None, f"the pickle holds a {type(item).__name__}, expected "
                          "the dict of a Flight Recorder dump (version, pg_config, entries)")
    if "entries" in item and not isinstance(item["entries"], list):
        raise IngestError(path, None, f"entries is a {type(item['entries']).__name__}, "
                          "expected a list")


def _parse_pickle_native(core: Any, path: str, progress: ProgressFn | None) -> Iterator[Record]:
    """The pickle read by the compiled core (its pickle machine, the same refusals)."""
    dump = _Dump(path, "pickle")
    yield dump.timeline()
    parser = core.FlightRecorderParser(path, Frame, InternedStack)
    top: Any = None
    for outputs in native.feed_file(parser, path, progress):
        yield from dump.native_outputs(outputs)
        for item in outputs:
            if item[0] == "top":
                top = item[1]
            elif item[0] == "counts":
                dump.native_counts(item[1], item[2])
    _check_top(path, top)
    yield from dump.rows()
    yield from dump.tail(top)


def _parse_pickle(path: str, progress: ProgressFn | None) -> Iterator[Record]:
    dump = _Dump(path, "pickle")
    yield dump.timeline()
    total = os.path.getsize(path)
    with open_binary(path) as f:
        stream = PickleStream(f, path, lambda p: p == ENTRIES, dump.interner.compact,
                              (lambda n: progress(min(n, total), total)) if progress else None,
                              holds="a Flight Recorder dump")
        try:
            for where, item in stream.items():
                if where == TOP:
                    _check_top(path, item)
                    yield from dump.rows()
                    yield from dump.tail(item)
                else:
                    dump.entry(item)
                    if dump.n_rows() >= BATCH:
                        yield from dump.rows()
        except Exception as e:
            dump.convert_queued()  # the entries read before: an error of theirs comes first
            if isinstance(e, (EOFError, zlib.error, gzip.BadGzipFile)):
                raise IngestError(path, None, f"corrupt gzip data ({e})") from None
            raise


def _parse_json(path: str, core: Any = None) -> Iterator[Record]:
    try:
        yield from _parse_json_nested(path, core)
    except RecursionError:  # json.loads of data nested ~1,000 deep
        raise IngestError(path, None, "data nested too deep for Python's JSON reader; "
                          "expected the JSON of a Flight Recorder dump") from None


@contextmanager
def _gc_paused() -> Iterator[None]:
    """The cycle collector paused for the block (restored as it was)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _parse_json_nested(path: str, core: Any) -> Iterator[Record]:
    """A JSON dump read, its entries converted and the tree it made let go, all with the
    cycle collector paused: the tree and the columns made from it hold no cycles, and the
    collector's passes over the young tree (json.loads makes ~60,000 objects per
    2,000-entry dump; each pass of the collector walks every young one) cost a third of
    json.loads's CPU during json.loads (15 -> 10 ms) and as much again during the
    conversion (2026-11-28). The rows are handed over once the tree is gone (the columns
    of every entry, ~a tenth of the tree's memory). The compiled core, where it is built,
    reads the entries instead (``_json_core``)."""
    with _gc_paused():
        records = _json_records(path, core)
    yield from records


def _json_records(path: str, core: Any) -> list[Record]:
    with open_binary(path) as f:
        data = f.read()
    got = core.flight_recorder_json(path, data) if core is not None else None
    if got is not None:  # the compiled core read it; else this code reads it or says why
        return _json_core(path, data, *got)
    try:
        top = json.loads(data)
    except UnicodeDecodeError as e:
        raise IngestError(path, None, f"byte {e.start:,}: not UTF-8: expected the JSON "
                          "of a Flight Recorder dump") from None
    except json.JSONDecodeError as e:
        ends = e.pos >= len(data.rstrip()) - 1 or (
            e.msg.startswith("Unterminated string") and b'"' not in data[e.pos + 1:])
        what = "the file ends inside the JSON: truncated dump" if ends else e.msg
        raise IngestError(path, e.lineno, f"column {e.colno}: {what}; expected the JSON "
                          "of a Flight Recorder dump (_dump_fr_trace_json)") from None
    except ValueError:  # json's limit on an integer's digits (int_max_str_digits)
        raise IngestError(path, None, "an integer of more than 4300 digits; expected the "
                          "JSON of a Flight Recorder dump") from None
    del data
    if not isinstance(top, dict):
        raise IngestError(path, 1, f"the JSON holds a {type(top).__name__}, expected the "
                          "object of a Flight Recorder dump (version, pg_config, entries)")
    entries = top.get("entries", [])
    if not isinstance(entries, list):
        raise IngestError(path, 1, f"entries is a {type(entries).__name__}, expected a list")
    dump = _Dump(path, "json")
    out: list[Record] = [dump.timeline()]
    for i in range(0, len(entries), BATCH):
        dump.entries(entries[i:i + BATCH])
        out += dump.rows()
    out += dump.tail(top)
    return out


def _json_core(path: str, data: bytes, outputs: list[Any], entries: tuple[int, int] | None,
               counts: tuple[str, dict[str, int], int]) -> list[Record]:
    """The records of a JSON dump the compiled core read (native/flight_recorder_json.cpp):
    its rows, the entries it left to this reader as their JSON text, and the rest of the
    top object as json.loads reads it with the entries' list made empty."""
    dump = _Dump(path, "json")
    out: list[Record] = [dump.timeline()]
    out += dump.native_outputs([("entry", json.loads(o[1])) if o[0] == "entry" else o
                                for o in outputs])
    dump.native_counts(counts[1], counts[2])
    if entries is not None:
        data = data[:entries[0]] + b"[]" + data[entries[1]:]
    top = json.loads(data)
    del data
    out += dump.rows()
    out += dump.tail(top)
    return out


_PICKLE_MARKS = (b"pg_config", b"pg_status", b"entries")
_JSON_FIRST_KEY = re.compile(r'\s*\{\s*"(comm_lib_version|entries|nccl_comm_state|pg_config|'
                             r'pg_status|version|rank)"\s*:')


def sniff(head: str, path: str) -> bool:
    """A pickle whose first KB names pg_config / pg_status / entries next to version, or
    a JSON object whose first key is one of a dump's (nlohmann sorts them; a summary that
    merely quotes pg_config, as the fixtures' facts.json, is not one) naming an entry's
    keys or pg_config."""
    if head.lstrip().startswith("{"):  # the object's first key is one of the dump's
        return _JSON_FIRST_KEY.match(head) is not None and (
            '"pg_config"' in head or '"profiling_name"' in head)
    try:
        with open_binary(path) as f:
            start = f.read(1024)
    except (OSError, EOFError, zlib.error):
        return False
    return (len(start) > 2 and start[0] == 0x80 and 2 <= start[1] <= 5
            and b"version" in start and any(m in start for m in _PICKLE_MARKS))


def _spec() -> Any:
    from .format_spec import FormatSpec

    return FormatSpec(name=FORMAT, description="torch.distributed Flight Recorder dump "
                      "(pickle or JSON, one per rank: <prefix><rank>)",
                      sniff=sniff, parse=parse_flight_recorder, compiled=True)


SPEC = _spec()
