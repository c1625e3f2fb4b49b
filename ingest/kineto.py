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

from tlview.store.records import MeasuredBatch, Record, Timeline, TimelineNote

from .chrome_trace import EVENTS_KEY, exact_ns, read_trace
from .errors import IngestError
from .lines import ProgressFn

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


def _int_or_none(v: Any) -> int | None:
    if type(v) is int:
        return v
    if isinstance(v, str) and v.isdigit():
        return int(v)
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
        attrs = {k: v for k, v in self.meta.items() if k != "deviceProperties"}
        if "deviceProperties" in self.meta:
            attrs["gpus"] = [d.get("name") for d in self.meta["deviceProperties"]
                             if isinstance(d, dict)]
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
            label = str((ev.get("args") or {}).get("name", ""))
            if label.startswith("/device:GPU:"):
                self.gpu_pids[ev.get("pid")] = "cuda:" + label.rsplit(":", 1)[1]

    def consume(self, items: Iterator[tuple[str, Any, str | None]]) -> Iterator[Record]:
        """The records of the trace's entries: timeline, event batches, note.

        The hot loop: one pass per event, locals only, counts taken per batch.
        """
        gpu_cats = _GPU_CATEGORIES
        cpu_cats = _CPU_CATEGORIES
        encode = _ENCODER.encode
        devices: dict[Any, str] = {}
        cols = self.cols
        for key, ev, raw in items:
            if key != EVENTS_KEY:
                (self.late_meta if self.started else self.meta)[key] = ev
                continue
            if not self.started:
                self.started = True
                yield self.timeline()
            if ev.get("ph") != "X":
                self.other_event(ev, raw)
            else:
                cat = ev.get("cat")
                name = ev.get("name")
                args = ev.get("args") or _EMPTY
                category = gpu_cats.get(cat)
                nbytes = None
                if category is not None or (cat is None and ev.get("pid") in self.gpu_pids):
                    pid = ev.get("pid")
                    if category is None:  # jax: GPU activity is told by its process
                        category = _jax_gpu_category(name)
                        device = self.gpu_pids[pid]
                    else:
                        dev = args.get("device", pid)
                        if dev not in devices:
                            devices[dev] = f"cuda:{dev}"
                        device = devices[dev]
                    if category == "kernel":
                        if is_comm_kernel(name):
                            category = "comm"
                            nbytes = _message_bytes(args)
                    elif category != "gpu_annotation":
                        nbytes = _int_or_none(args.get("bytes"))
                    stream = args.get("stream", ev.get("tid"))
                else:
                    category = cpu_cats.get(cat)
                    if category is None:
                        if cat in _SKIPPED_CATEGORIES:
                            self.skipped[cat] += 1
                            continue
                        category = "other" if cat is not None else "cpu_op"
                    elif category == "cpu_op" and name == "record_param_comms":
                        category = "comm_call"
                        nbytes = _message_bytes(args)
                    device = "cpu"
                    stream = ev.get("tid")
                if type(name) is not str:
                    raise IngestError(self.path, None,
                                      f"an 'X' event without a name: {str(ev)[:120]}")
                ts = ev.get("ts")
                dur = ev.get("dur")
                corr = args.get("correlation")
                cols["name"].append(name)
                cols["category"].append(category)
                cols["device"].append(device)
                cols["stream"].append(stream if type(stream) is int else None)
                cols["ts_ns"].append(
                    ts * 1000 if type(ts) is int else exact_ns(ts, "ts", raw))
                cols["dur_ns"].append(
                    0 if dur is None else dur * 1000 if type(dur) is int
                    else exact_ns(dur, "dur", raw))
                cols["correlation"].append(
                    corr if type(corr) is int else _int_or_none(
                        args.get("correlation_id") if corr is None else corr))
                cols["bytes"].append(nbytes)
                del ev["name"], ev["ph"]
                ev.pop("ts", None)
                ev.pop("dur", None)
                cols["attrs"].append(encode(ev))
            if len(cols["name"]) >= BATCH:
                yield self.take()
                cols = self.cols
        if not self.started:
            raise IngestError(self.path, None,
                              "no traceEvents: expected a Chrome trace with events")
        if cols["name"]:
            yield self.take()
        yield self.note()

    def other_event(self, ev: dict[str, Any], raw: str | None) -> None:
        ph = ev.get("ph")
        if ph in ("i", "I") and ev.get("name") == "[memory]":
            self.memory_event(ev, raw)
            return
        if ph == "M":
            self.metadata_event(ev)
        self.skipped[f"ph={ph}"] += 1

    def memory_event(self, ev: dict[str, Any], raw: str | None) -> None:
        args = ev.get("args") or {}
        device = "cpu"
        if args.get("Device Type") == 1:
            device = f"cuda:{args.get('Device Id')}"
        tid = ev.get("tid")
        c = self.cols
        c["name"].append("[memory]")
        c["category"].append("memory")
        c["device"].append(device)
        c["stream"].append(tid if type(tid) is int else None)
        c["ts_ns"].append(exact_ns(ev.get("ts"), "ts", raw))
        c["dur_ns"].append(0)
        c["correlation"].append(None)
        c["bytes"].append(_int_or_none(args.get("Bytes")))
        for k in ("name", "ph", "ts"):
            ev.pop(k, None)
        c["attrs"].append(_ENCODER.encode(ev))


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
        return max(counts) * size
    return None


def parse_trace(path: str, progress: ProgressFn | None = None, fmt: str = FORMAT_KINETO
                ) -> Iterator[Record]:
    """The timeline of one trace, then its kept events in batches, then a closing note."""
    return _Trace(path, fmt).consume(read_trace(path, progress))


def measured_records(path: str, fmt: str = FORMAT_KINETO) -> list[Any]:
    """Every kept event of a trace as ``KernelMeasured`` values (tests, small traces)."""
    out: list[Any] = []
    for rec in parse_trace(path, None, fmt):
        if isinstance(rec, MeasuredBatch):
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
    from .formats import FormatSpec

    return [
        FormatSpec(name=FORMAT_KINETO,
                   description="PyTorch profiler (Kineto) Chrome trace, .json or .json.gz",
                   sniff=sniff_kineto, parse=_parse_kineto),
        FormatSpec(name=FORMAT_JAX, description="jax.profiler Chrome trace (*.trace.json.gz)",
                   sniff=sniff_jax, parse=_parse_jax),
    ]


SPECS = _specs()
