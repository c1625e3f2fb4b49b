"""Profiler traces (PyTorch profiler / Kineto, jax.profiler) to measured events.

One trace is one measured timeline (one rank). Every kept event becomes a
``KernelMeasured`` record with ``ts_ns``/``dur_ns`` in integer nanoseconds
(the trace's microseconds, exactly) and a ``category``:

=============  ==============================================================
kernel         a GPU kernel that computes (Triton, cuBLAS ``nvjet_*``, ...)
comm           a GPU communication kernel (``ncclDevKernel_*``, ``rccl*``)
memcpy/memset  GPU copies and fills (neither compute nor communication)
runtime        CUDA runtime/driver calls (``cudaLaunchKernel``, ...): the CPU
               side of a launch, joined to its kernel by ``correlation``
cpu_op         CPU operators (``aten::mm``, ``Torch-Compiled Region: 0/0``,
               ``CompiledFunction``), joined to runtime calls by ``attrs.ext``
comm_call      ``record_param_comms``: collective name, message sizes, ranks
annotation     user annotations (``ProfilerStep#N``, ``## Call CompiledFxGraph
               ... ##``, ``record_function`` ranges); ``gpu_annotation`` the
               same ranges projected on a GPU stream
python         Python function events (``with_stack=True``)
memory         ``[memory]`` instant events: ``bytes`` (+alloc/-free), with
               ``total_allocated``/``total_reserved``/``addr`` in attrs
other          any other duration event, its ``cat`` kept in attrs
=============  ==============================================================

``device`` is ``cuda:N`` for GPU activity and memory of a GPU, else ``cpu``.
``stream`` is the GPU stream for GPU events and the thread id for CPU events.
``attrs`` is the rest of the event as compact JSON (everything but name, ph, ts and
dur, which are columns), so nothing the profiler said is lost:
``attrs.args."External id"``, ``attrs.args.grid``, ``attrs.cat``, ``attrs.pid``, ...
Events are yielded in columnar ``MeasuredBatch`` records (the fast path).
Flow arrows (``ac2g``, ``fwdbwd``), metadata and other instants are counted,
not stored. ``distributedInfo`` (rank, world size, groups) goes to the
timeline's attributes; top-level keys seen after the events go to a note.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from . import native
from .chrome_trace import EVENTS_KEY, BadEvent, TraceReader, exact_ns
from .errors import IngestError
from .lines import ProgressFn
from .records import EventColumns, MeasuredBatch, Record, Timeline, TimelineNote

FORMAT_KINETO = "kineto"
FORMAT_JAX = "jax_trace"
KEY = "trace"
BATCH = 20_000

_GPU_CATEGORIES = {
    "kernel": "kernel", "gpu_memcpy": "memcpy", "gpu_memset": "memset",
    "gpu_user_annotation": "gpu_annotation",
}
_CPU_CATEGORIES = {
    "cpu_op": "cpu_op", "cuda_runtime": "runtime", "cuda_driver": "runtime",
    "hip_runtime": "runtime", "user_annotation": "annotation",
    "python_function": "python",
}
_SKIPPED_CATEGORIES = {"Trace"}  # the profiler's own span
# Element sizes of the dtypes record_param_comms names.
_DTYPE_BYTES = {
    "Float": 4, "Double": 8, "Half": 2, "BFloat16": 2, "Int": 4, "Long": 8, "Short": 2,
    "Char": 1, "Byte": 1, "Bool": 1, "Float8_e4m3fn": 1, "Float8_e5m2": 1,
    "ComplexFloat": 8, "ComplexDouble": 16,
}
_EMPTY: dict[str, Any] = {}
_ENCODER = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False)
COLUMNS = ("name", "category", "device", "stream", "ts_ns", "dur_ns", "correlation", "bytes",
           "attrs")


def is_comm_kernel(name: str) -> bool:
    """A GPU kernel that moves data between devices (the overlap's communication)."""
    low = name.lower()
    return "nccl" in low or "rccl" in low


def _int_or_none(v: Any, key: str) -> int | None:
    """An int, or a string of ASCII digits, as int64; anything else None."""
    if type(v) is int:
        return _int64(v, key)
    if type(v) is str and v.isascii() and v.isdigit():
        return _int64(int(v), key)
    return None


class _Trace:
    """State of one trace while its events stream by."""

    def __init__(self, path: str, fmt: str) -> None:
        self.path = path
        self.format = fmt
        self.meta: dict[str, Any] = {}
        self.late_meta: dict[str, Any] = {}
        self.started = False
        self.skipped: Counter[str] = Counter()
        self.kept: Counter[str] = Counter()
        self.gpu_pids: dict[Any, str] = {}  # jax: pid of "/device:GPU:N" -> cuda:N
        self.devices: set[str] = set()
        self.cols: dict[str, list[Any]] = {c: [] for c in COLUMNS}

    def take(self) -> MeasuredBatch:
        self.kept.update(self.cols["category"])
        self.devices.update(self.cols["device"])
        batch = MeasuredBatch(timeline=KEY, columns=self.cols)
        self.cols = {c: [] for c in COLUMNS}
        return batch

    def timeline(self) -> Timeline:
        info = self.meta.get("distributedInfo") or {}
        rank = info.get("rank") if isinstance(info, dict) else None
        name = Path(self.path).name
        if rank is not None:
            name = f"rank{rank} {name}"
        props = self.meta.get("deviceProperties")
        # a list of devices (as torch writes it) becomes their names; anything else is
        # kept as the trace says it
        attrs = {k: v for k, v in self.meta.items()
                 if k != "deviceProperties" or not isinstance(props, list)}
        if isinstance(props, list):
            attrs["gpus"] = [d.get("name") for d in props if isinstance(d, dict)]
        if rank is not None:
            attrs["rank"] = rank
            attrs["world_size"] = info.get("world_size")
        return Timeline(key=KEY, name=name, format=self.format, device=None, attrs=attrs)

    def note(self) -> TimelineNote:
        devices = sorted(d for d in self.devices if d != "cpu")
        attrs: dict[str, Any] = {
            "kept": dict(self.kept), "skipped": dict(self.skipped),
            "gpu_devices": devices,
        }
        if len(devices) == 1:
            attrs["device"] = devices[0]
        attrs.update(self.late_meta)
        return TimelineNote(timeline=KEY, attrs=attrs)

    def metadata_event(self, ev: dict[str, Any]) -> None:
        if ev.get("name") == "process_name":
            label = _args(ev).get("name", "")
            if type(label) is str and label.startswith("/device:GPU:"):
                device = "cuda:" + label.rsplit(":", 1)[1]
                _check_text(device)
                self.gpu_pids[_key(ev.get("pid"), "pid")] = device

    def consume(self, reader: TraceReader) -> Iterator[Record]:
        """The records of the trace's entries: timeline, event batches, note.

        The hot loop: one pass per event, locals only, counts taken per batch. An event
        whose content breaks its meaning is an IngestError at the line where it begins.
        """
        gpu_cats = _GPU_CATEGORIES
        cpu_cats = _CPU_CATEGORIES
        encode = _ENCODER.encode
        devices: dict[Any, str] = {}
        cols = self.cols
        for key, ev, raw in reader:
            if key != EVENTS_KEY:
                (self.late_meta if self.started else self.meta)[key] = ev
                continue
            if not self.started:
                self.started = True
                yield self.timeline()
            try:
                ph = ev.get("ph")
                if ph != "X":
                    self.other_event(ev, ph, raw)
                else:
                    cat = ev.get("cat")
                    if cat is not None and type(cat) is not str:
                        raise BadEvent(f"'cat' is {_kind(cat)}: expected a string")
                    args = _args(ev)
                    category = gpu_cats.get(cat)  # type: ignore[arg-type]  # None: no match
                    jax_device = None
                    if category is None:
                        if cat is None:
                            pid = _key(ev.get("pid"), "pid")
                            jax_device = self.gpu_pids.get(pid) if self.gpu_pids else None
                        elif cat in _SKIPPED_CATEGORIES:
                            self.skipped[cat] += 1
                            continue
                    name = ev.get("name")
                    if type(name) is not str:
                        raise BadEvent(f"an 'X' event whose 'name' is {_kind(name)}: "
                                       "expected a string")
                    nbytes = None
                    if category is not None or jax_device is not None:
                        if category is None:  # jax: GPU activity is told by its process
                            category = _jax_gpu_category(name)
                            device = jax_device
                        else:
                            dev = args.get("device", ev.get("pid"))
                            dkey = _key(dev, "device")
                            device = devices.get(dkey)  # type: ignore[assignment]
                            if device is None:
                                device = devices[dkey] = "cuda:" + _pystr(dev, "device")
                        if category == "kernel":
                            if is_comm_kernel(name):
                                category = "comm"
                                nbytes = _message_bytes(args)
                        elif category != "gpu_annotation":
                            nbytes = _int_or_none(args.get("bytes"), "bytes")
                        stream = args.get("stream", ev.get("tid"))
                    else:
                        category = cpu_cats.get(cat)  # type: ignore[arg-type]
                        if category is None:
                            category = "other" if cat is not None else "cpu_op"
                        elif category == "cpu_op" and name == "record_param_comms":
                            category = "comm_call"
                            nbytes = _message_bytes(args)
                        device = "cpu"
                        stream = ev.get("tid")
                    corr = args.get("correlation")
                    ts_ns = _ns(ev.get("ts", _MISSING), "ts", raw)
                    dur = ev.get("dur")
                    dur_ns = 0 if dur is None else _ns(dur, "dur", raw)
                    del ev["name"], ev["ph"]
                    ev.pop("ts", None)
                    ev.pop("dur", None)
                    attrs = encode(ev)
                    if not attrs.isascii():
                        _check_text(attrs)
                    if not name.isascii():
                        _check_text(name)
                    cols["name"].append(name)
                    cols["category"].append(category)
                    cols["device"].append(device)
                    cols["stream"].append(_int64(stream, "stream") if type(stream) is int
                                          else None)
                    cols["ts_ns"].append(ts_ns)
                    cols["dur_ns"].append(dur_ns)
                    cols["correlation"].append(
                        _int64(corr, "correlation") if type(corr) is int else _int_or_none(
                            args.get("correlation_id") if corr is None else corr,
                            "correlation"))
                    cols["bytes"].append(nbytes)
                    cols["attrs"].append(attrs)
            except BadEvent as e:
                raise IngestError(self.path, reader.event_line(), str(e)) from None
            if len(cols["name"]) >= BATCH:
                yield self.take()
                cols = self.cols
        if not self.started:
            raise IngestError(self.path, None,
                              "no traceEvents: expected a Chrome trace with events")
        if cols["name"]:
            yield self.take()
        yield self.note()

    def consume_native(self, parser: Any, progress: ProgressFn | None) -> Iterator[Record]:
        """``consume`` with the compiled reader: it hands back the top-level entries as JSON
        text and the events as columns; the timeline and note are made here, as above."""
        for outputs in native.feed_file(parser, self.path, progress):
            for item in outputs:
                tag = item[0]
                if tag == "batch":
                    n, columns = native.arrow_columns(item[1])
                    yield EventColumns(timelines=(KEY,), n=n, columns=columns)
                elif tag == "meta":
                    value = json.loads(item[2])
                    (self.late_meta if self.started else self.meta)[item[1]] = value
                elif tag == "start":
                    self.started = True
                    yield self.timeline()
                elif tag == "end":
                    self.kept.update(dict(item[1]))
                    self.skipped.update(dict(item[2]))
                    self.devices.update(item[3])
        if not self.started:
            raise IngestError(self.path, None,
                              "no traceEvents: expected a Chrome trace with events")
        yield self.note()

    def other_event(self, ev: dict[str, Any], ph: Any, raw: str | None) -> None:
        if ph in ("i", "I") and ev.get("name") == "[memory]":
            self.memory_event(ev, raw)
            return
        if ph == "M":
            self.metadata_event(ev)
        self.skipped["ph=" + _pystr(ph, "ph")] += 1

    def memory_event(self, ev: dict[str, Any], raw: str | None) -> None:
        args = _args(ev)
        device = "cpu"
        if args.get("Device Type") == 1:
            device = "cuda:" + _pystr(args.get("Device Id"), "Device Id")
        tid = ev.get("tid")
        ts_ns = _ns(ev.get("ts", _MISSING), "ts", raw)
        nbytes = _int_or_none(args.get("Bytes"), "Bytes")
        for k in ("name", "ph", "ts"):
            ev.pop(k, None)
        attrs = _ENCODER.encode(ev)
        if not attrs.isascii():
            _check_text(attrs)
        c = self.cols
        c["name"].append("[memory]")
        c["category"].append("memory")
        c["device"].append(device)
        c["stream"].append(_int64(tid, "tid") if type(tid) is int else None)
        c["ts_ns"].append(ts_ns)
        c["dur_ns"].append(0)
        c["correlation"].append(None)
        c["bytes"].append(nbytes)
        c["attrs"].append(attrs)


_MISSING = object()
_I64_MIN, _I64_MAX = -(2**63), 2**63 - 1


def _kind(value: Any) -> str:
    """How an error names a JSON value's type (Python's names, as json.loads made it)."""
    return "missing" if value is _MISSING else type(value).__name__


def _args(ev: dict[str, Any]) -> dict[str, Any]:
    """An event's ``args`` object; absent or empty (any falsy value) reads as {}."""
    args = ev.get("args") or _EMPTY
    if type(args) is not dict:
        raise BadEvent(f"'args' is {_kind(args)}: expected an object")
    return args


def _key(value: Any, key: str) -> tuple[type, Any]:
    """A scalar as a lookup key that keeps its type (1, 1.0 and true stay apart)."""
    if type(value) in (list, dict):
        raise BadEvent(f"'{key}' is {_kind(value)}: expected a number or a string")
    return type(value), value


def _pystr(value: Any, key: str) -> str:
    """``str()`` of a scalar JSON value, as the f-strings of the first release wrote it."""
    if type(value) in (list, dict):
        raise BadEvent(f"'{key}' is {_kind(value)}: expected a number or a string")
    return str(value)


def _int64(value: int, key: str) -> int:
    if _I64_MIN <= value <= _I64_MAX:
        return value
    raise BadEvent(f"'{key}' is {value}: out of the 64-bit range")


def _ns(value: Any, key: str, raw: str | None) -> int:
    """Microseconds (int or float) to integer nanoseconds, exactly (see exact_ns)."""
    if type(value) is int:
        ns = value * 1000
    elif type(value) is float:
        if value != value or value in (float("inf"), float("-inf")):
            raise BadEvent(f"'{key}' is {value}: expected a finite number")
        ns = exact_ns(value, key, raw)
    else:
        raise BadEvent(f"'{key}' is {_kind(value)}: expected a number of microseconds")
    return _int64(ns, f"{key} in ns")


def _check_text(text: str) -> None:
    """Text stored from the trace must be valid Unicode (json keeps lone surrogates)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise BadEvent("a \\u escape of an unpaired UTF-16 surrogate: not valid text") from None


def _jax_gpu_category(name: str) -> str:
    low = name.lower()
    if low.startswith("memcpy") or "memcpy" in low.split("_", 1)[0]:
        return "memcpy"
    if low.startswith("memset"):
        return "memset"
    return "kernel"


def _message_bytes(args: dict[str, Any]) -> int | None:
    """Bytes of a collective's larger message: element count times the dtype's size."""
    size = _DTYPE_BYTES.get(str(args.get("dtype")))
    counts = [c for c in (args.get("In msg nelems"), args.get("Out msg nelems"))
              if type(c) is int]
    if size and counts:
        return _int64(max(counts) * size, "message bytes")
    return None


def parse_trace(path: str, progress: ProgressFn | None = None, fmt: str = FORMAT_KINETO
                ) -> Iterator[Record]:
    """The timeline of one trace, then its kept events in batches, then a closing note.

    The compiled core does the reading where it is built (the same rows; see native.py).
    """
    core = native.module()
    if core is None:
        return _Trace(path, fmt).consume(TraceReader(path, progress))
    return _Trace(path, fmt).consume_native(core.ChromeTraceParser(path), progress)


def measured_records(path: str, fmt: str = FORMAT_KINETO) -> list[Any]:
    """Every kept event of a trace as ``KernelMeasured`` values (tests, small traces)."""
    out: list[Any] = []
    for rec in parse_trace(path, None, fmt):
        if isinstance(rec, MeasuredBatch | EventColumns):
            out.extend(rec.records())
    return out


def sniff_kineto(head: str, path: str) -> bool:
    """A Chrome trace that is not jax's (its traceEvents key, or Kineto's header keys
    where a long distributedInfo pushes traceEvents past the head)."""
    if _is_jax(head):
        return False
    return '"traceEvents"' in head or (
        head.lstrip().startswith("{") and '"schemaVersion"' in head
        and ('"deviceProperties"' in head or '"distributedInfo"' in head))


def sniff_jax(head: str, path: str) -> bool:
    return '"traceEvents"' in head and _is_jax(head)


def _is_jax(head: str) -> bool:
    return '"/device:' in head or '"/host:CPU"' in head


def _parse_kineto(path: str, progress: ProgressFn | None = None) -> Iterator[Record]:
    return parse_trace(path, progress, FORMAT_KINETO)


def _parse_jax(path: str, progress: ProgressFn | None = None) -> Iterator[Record]:
    return parse_trace(path, progress, FORMAT_JAX)


def _specs() -> list[Any]:
    from .format_spec import FormatSpec

    return [
        FormatSpec(name=FORMAT_KINETO,
                   description="PyTorch profiler (Kineto) Chrome trace, .json or .json.gz",
                   sniff=sniff_kineto, parse=_parse_kineto, compiled=True),
        FormatSpec(name=FORMAT_JAX, description="jax.profiler Chrome trace (*.trace.json.gz)",
                   sniff=sniff_jax, parse=_parse_jax, compiled=True),
    ]


SPECS = _specs()
