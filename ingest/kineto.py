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
Flow arrows (``ac2g``, ``fwdbwd``), metadata and other instants are counted,
not stored. ``distributedInfo`` (rank, world size, groups) goes to the
timeline's attributes; top-level keys seen after the events go to a note.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tlview.store.records import KernelMeasured, Record, Timeline, TimelineNote

from .chrome_trace import EVENTS_KEY, FloatText, plain, read_trace, us_to_ns
from .errors import IngestError
from .lines import ProgressFn

FORMAT_KINETO = "kineto"
FORMAT_JAX = "jax_trace"
KEY = "trace"

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
# args promoted to columns (not repeated in attrs)
_PROMOTED = {"correlation", "correlation_id", "stream", "device", "bytes", "Bytes",
             "External id", "Ev Idx", "Record function id"}


def is_comm_kernel(name: str) -> bool:
    """A GPU kernel that moves data between devices (the overlap's communication)."""
    low = name.lower()
    return "nccl" in low or "rccl" in low


def _ts(event: dict[str, Any], key: str, r_line: str) -> int:
    v = event.get(key)
    if type(v) is int or type(v) is FloatText:
        return us_to_ns(v)
    if v is None and key == "dur":
        return 0
    raise IngestError(r_line, None, f"event {event.get('name')!r}: expected a number in {key!r}")


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

    def timeline(self) -> Timeline:
        info = self.meta.get("distributedInfo") or {}
        rank = info.get("rank") if isinstance(info, dict) else None
        name = Path(self.path).name
        if rank is not None:
            name = f"rank{rank} {name}"
        attrs = {k: plain(v) for k, v in self.meta.items() if k != "deviceProperties"}
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
        attrs.update({k: plain(v) for k, v in self.late_meta.items()})
        return TimelineNote(timeline=KEY, attrs=attrs)

    def metadata_event(self, ev: dict[str, Any]) -> None:
        if ev.get("name") == "process_name":
            label = str((ev.get("args") or {}).get("name", ""))
            if label.startswith("/device:GPU:"):
                self.gpu_pids[ev.get("pid")] = "cuda:" + label.rsplit(":", 1)[1]

    def record(self, ev: dict[str, Any]) -> KernelMeasured | None:
        ph = ev.get("ph")
        if ph == "X":
            return self.duration_event(ev)
        if ph in ("i", "I") and ev.get("name") == "[memory]":
            return self.memory_event(ev)
        if ph == "M":
            self.metadata_event(ev)
        self.skipped[f"ph={ph}"] += 1
        return None

    def duration_event(self, ev: dict[str, Any]) -> KernelMeasured | None:
        cat = ev.get("cat")
        name = ev.get("name")
        if not isinstance(name, str):
            raise IngestError(self.path, None, f"an 'X' event without a name: {str(ev)[:120]}")
        args = ev.get("args") or {}
        pid = ev.get("pid")
        gpu = cat in _GPU_CATEGORIES or (cat is None and pid in self.gpu_pids)
        if gpu:
            if cat is None:  # jax: GPU activity is told by its process
                category = _jax_gpu_category(name)
                device = self.gpu_pids[pid]
            else:
                category = _GPU_CATEGORIES[cat]
                dev = args.get("device", pid)
                device = f"cuda:{dev}"
            if category == "kernel" and is_comm_kernel(name):
                category = "comm"
            stream = args.get("stream", ev.get("tid"))
        elif cat in _SKIPPED_CATEGORIES:
            self.skipped[cat] += 1
            return None
        else:
            category = _CPU_CATEGORIES.get(cat, "other") if cat is not None else "cpu_op"
            if category == "cpu_op" and name == "record_param_comms":
                category = "comm_call"
            device = "cpu"
            stream = ev.get("tid")
        attrs = {k: plain(v) for k, v in args.items() if k not in _PROMOTED}
        ext = args.get("External id")
        if ext is not None:
            attrs["ext"] = ext
        if category == "other":
            attrs["cat"] = cat
        if not isinstance(stream, int):
            attrs["thread"] = stream
            stream = None
        correlation = args.get("correlation", args.get("correlation_id"))
        if correlation is not None and not isinstance(correlation, int):
            try:
                correlation = int(correlation)
            except ValueError:
                attrs["correlation"] = correlation
                correlation = None
        self.kept[category] += 1
        self.devices.add(device)
        return KernelMeasured(
            timeline=KEY, name=name, ts_ns=_ts(ev, "ts", self.path),
            dur_ns=_ts(ev, "dur", self.path), category=category, device=device,
            stream=stream, correlation=correlation, bytes=_message_bytes(category, args),
            attrs=attrs,
        )

    def memory_event(self, ev: dict[str, Any]) -> KernelMeasured:
        args = ev.get("args") or {}
        device = "cpu"
        if args.get("Device Type") == 1:
            device = f"cuda:{args.get('Device Id')}"
        attrs = {
            "addr": args.get("Addr"), "total_allocated": args.get("Total Allocated"),
            "total_reserved": args.get("Total Reserved"),
        }
        tid = ev.get("tid")
        self.kept["memory"] += 1
        return KernelMeasured(
            timeline=KEY, name="[memory]", ts_ns=_ts(ev, "ts", self.path), dur_ns=0,
            category="memory", device=device, stream=tid if isinstance(tid, int) else None,
            bytes=args.get("Bytes"), attrs=attrs,
        )


def _jax_gpu_category(name: str) -> str:
    low = name.lower()
    if low.startswith("memcpy") or "memcpy" in low.split("_", 1)[0]:
        return "memcpy"
    if low.startswith("memset"):
        return "memset"
    return "kernel"


def _message_bytes(category: str, args: dict[str, Any]) -> int | None:
    """Bytes moved: memcpy/memset say it; collectives give element counts and dtype."""
    if category in ("memcpy", "memset"):
        b = args.get("bytes")
        return b if isinstance(b, int) else None
    if category in ("comm", "comm_call"):
        size = _DTYPE_BYTES.get(str(args.get("dtype")))
        counts = [args.get("In msg nelems"), args.get("Out msg nelems")]
        counts = [c for c in counts if isinstance(c, int)]
        if size and counts:
            return max(counts) * size
    return None


def parse_trace(path: str, progress: ProgressFn | None = None, fmt: str = FORMAT_KINETO
                ) -> Iterator[Record]:
    """The timeline of one trace, then one record per kept event, then a closing note."""
    t = _Trace(path, fmt)
    record = t.record
    for key, value in read_trace(path, progress):
        if key != EVENTS_KEY:
            (t.late_meta if t.started else t.meta)[key] = value
            continue
        if not t.started:
            t.started = True
            yield t.timeline()
        rec = record(value)
        if rec is not None:
            yield rec
    if not t.started:
        raise IngestError(path, None, "no traceEvents: expected a Chrome trace with events")
    yield t.note()


def sniff_kineto(head: str, path: str) -> bool:
    """A Chrome trace that is not jax's: Kineto's header keys or its categories."""
    return '"traceEvents"' in head and not _is_jax(head)


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
