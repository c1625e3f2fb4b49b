"""JAX device memory profiles (``jax.profiler.save_device_memory_profile``) to timelines.

The file is a gzipped pprof ``profile.proto`` (read by ``pprof.py``) that XLA's client
writes at one instant: every live device buffer and every loaded executable, grouped by
the Python traceback that made it. Sample types are ``allocations``/``count`` and
``space``/``bytes``; each sample holds the buffers of one traceback, one size and one
device (count, and bytes = size x count) with the labels ``kind`` (``buffer`` or
``executable``) and, for buffers, ``device`` (``cpu:0``, ``cuda:0``...).

One timeline per device (format ``jax_memory_profile``, key the device), of one step:
node ``memory_profile`` at step 0 is the instant of the dump; each buffer sample is a
buffer (``sample_<i>``, i its index among the file's samples) allocated at step 0 and live
through it, so that ``memory_curve``/``peak_memory`` give the device bytes held at the dump.

**Bytes.** The profile states each buffer's size on the device (``space`` / count). On the
CPU backend that is what the buffers hold (the live arrays' ``nbytes``). On a GPU or TPU,
XLA's BFC allocator hands out whole chunks of 256-byte multiples (``kMinAllocationSize``),
and ``memory_stats()['bytes_in_use']`` counts the chunks: a buffer row's ``bytes`` is its
size rounded up to 256 B, times count (a lower bound of its chunks: the allocator may hand
out a chunk it does not split, up to twice the rounded size), and ``attrs.profile_bytes``
keeps the profile's own figure. On the real fixtures the rounded sum equals
``bytes_in_use`` at the dump (the 8-byte PRNG key takes 256 B).

``attrs`` of a buffer: ``count`` (buffers it stands for), ``size`` (bytes of each, as the
profile says), ``profile_bytes``, ``stack_id`` (its traceback, interned in
``frames``/``stacks`` as an allocator snapshot's, innermost first), ``labels`` (any other
label), ``offset`` (of its sample in the un-gzipped profile). dtype and shape come from ``dtype``/``shape``
labels where the profile has them (JAX 0.10 writes none).

Executables are not device buffers (their code is not counted in ``bytes_in_use``): the
timeline's note counts them and their generated-code bytes, each with its stack.
"""

from __future__ import annotations

import gzip
import os
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .cuda_snapshot import Interner
from .errors import IngestError
from .format_spec import read_head_bytes
from .lines import ProgressFn
from .pprof import Profile, ProtoError, looks_like_profile, parse_profile
from .records import (
    BufferAllocated,
    BufferFreed,
    NodeScheduled,
    Record,
    Timeline,
    TimelineNote,
)

FORMAT = "jax_memory_profile"
NODE = "memory_profile"
MAX_BYTES = 1 << 30  # a device memory profile is KBs to MBs; more is no profile
CHUNK = 256  # XLA's BFC allocator: every chunk a multiple of kMinAllocationSize
EXPECTED = "expected a gzipped pprof profile (jax.profiler.save_device_memory_profile)"


def read_profile(path: str) -> Profile:
    """The Profile of ``path`` (gzipped or not), or one IngestError naming the place."""
    try:
        with open(path, "rb") as raw:
            gz = raw.read(2) == b"\x1f\x8b"
            raw.seek(0)
            f: Any = gzip.GzipFile(fileobj=raw, mode="rb") if gz else raw
            data = f.read(MAX_BYTES + 1)
    except (EOFError, zlib.error, gzip.BadGzipFile) as e:
        raise IngestError(path, None, f"corrupt gzip data ({e}): {EXPECTED}") from None
    if len(data) > MAX_BYTES:
        raise IngestError(path, None, f"the profile is larger than {MAX_BYTES:,} bytes "
                          f"un-gzipped: {EXPECTED}")
    try:
        return parse_profile(data)
    except ProtoError as e:
        where = "un-gzipped profile" if gz else "profile"
        raise IngestError(path, None, f"byte {e.offset} of the {where}: {e.message}; "
                          f"{EXPECTED}") from None


def _value_index(profile: Profile, path: str) -> tuple[int, int | None]:
    """Which value of a sample is its bytes (``space``/``bytes``, else the first in
    bytes) and which its count (unit ``count``; None: one buffer per sample)."""
    types = profile.sample_types
    space = [i for i, (t, u) in enumerate(types) if u == "bytes"]
    if not space:
        raise IngestError(path, None, f"a pprof profile whose sample types {list(types)} "
                          f"have no value in bytes: {EXPECTED}")
    named = [i for i in space if types[i][0] == "space"]
    count = [i for i, (_t, u) in enumerate(types) if u == "count"]
    return (named or space)[0], (count[0] if count else None)


def _stack(profile: Profile, location_ids: tuple[int, ...]) -> list[dict[str, Any]]:
    """A sample's frames as the allocator snapshot's frame dicts, innermost first."""
    out = []
    for lid in location_ids:
        for line in profile.locations[lid]:
            fn = profile.functions[line.function_id]
            out.append({"filename": fn.filename, "line": line.line, "name": fn.name})
    return out


def parse_profile_file(path: str, progress: ProgressFn | None = None) -> Iterator[Record]:
    profile = read_profile(path)
    if progress is not None:
        size = os.path.getsize(path)
        progress(size, size)
    nbytes_i, count_i = _value_index(profile, path)
    name = Path(path).name
    interner = Interner(path)
    devices: dict[str, list[Record]] = {}
    executables: list[dict[str, Any]] = []
    kinds: dict[str, int] = {}
    for i, s in enumerate(profile.samples):
        labels = {la.key: (la.text if la.text is not None else la.num) for la in s.labels}
        kind = labels.pop("kind", None)
        kinds[str(kind)] = kinds.get(str(kind), 0) + 1
        stack_id = interner.stack(_stack(profile, s.location_ids))
        count = s.values[count_i] if count_i is not None else 1
        nbytes = s.values[nbytes_i]
        dev = labels.pop("device", None)
        device = dev if isinstance(dev, str) else "device" if dev is None else f"device:{dev}"
        if kind == "executable":
            executables.append({"sample": i, "count": count, "bytes": nbytes,
                                "stack_id": stack_id})
            continue
        buf = f"sample_{i}"
        attrs: dict[str, Any] = {"count": count, "stack_id": stack_id, "offset": s.offset,
                                 "profile_bytes": nbytes}
        held = nbytes
        if count > 0 and nbytes >= 0 and nbytes % count == 0:
            attrs["size"] = size = nbytes // count
            if not device.startswith("cpu"):
                held = count * (-(-size // CHUNK) * CHUNK)
        if kind != "buffer":
            attrs["kind"] = kind
        dtype, shape = labels.pop("dtype", None), labels.pop("shape", None)
        if labels:
            attrs["labels"] = labels
        devices.setdefault(device, []).extend((
            BufferAllocated(timeline=device, step=0, buffer=buf, bytes=held, node=NODE,
                            dtype=None if dtype is None else str(dtype),
                            shape=None if shape is None else str(shape), device=device,
                            attrs=attrs),
            BufferFreed(timeline=device, step=0, buffer=buf, reason="live at the dump")))
    yield from interner.take()
    summary: dict[str, Any] = {
        "sample_types": [list(t) for t in profile.sample_types],
        "samples": len(profile.samples), "sample_kinds": kinds,
        "executables": {"samples": len(executables),
                        "count": sum(e["count"] for e in executables),
                        "bytes": sum(e["bytes"] for e in executables),
                        "list": executables},
        "time_nanos": profile.time_nanos or None,
    }
    if profile.comments:
        summary["comments"] = list(profile.comments)
    if profile.unknown_fields:
        summary["unknown_fields"] = profile.unknown_fields
    if profile.mappings:
        summary["mappings"] = profile.mappings
    if not devices:  # nothing live on any device: one empty timeline says so
        devices["device"] = []
    for device in sorted(devices):
        events = devices[device]
        allocated = [e for e in events if isinstance(e, BufferAllocated)]
        yield Timeline(key=device, name=f"{name} {device}", format=FORMAT, device=device,
                       attrs={"time_nanos": profile.time_nanos or None})
        yield NodeScheduled(timeline=device, step=0, node=NODE, node_class="dump",
                            device=device)
        yield from events
        yield TimelineNote(timeline=device, attrs={
            "device": device, "buffers": sum(e.attrs["count"] for e in allocated),
            "buffer_samples": len(allocated),
            "profile_bytes": sum(e.attrs["profile_bytes"] for e in allocated),
            "live_bytes": sum(e.bytes or 0 for e in allocated),
            "bytes_rule": "as the profile says" if device.startswith("cpu") else
            f"each buffer rounded up to {CHUNK} B (XLA's BFC allocator chunks)", **summary})


def sniff(head: str, path: str) -> bool:
    """A pprof Profile whose first field is a sample type (see ``pprof.looks_like_profile``)."""
    try:
        data = read_head_bytes(path, 4096)
    except (IngestError, OSError):
        return False
    return looks_like_profile(data)


def _spec() -> Any:
    from .format_spec import FormatSpec

    return FormatSpec(name=FORMAT, description="JAX device memory profile "
                      "(jax.profiler.save_device_memory_profile, gzipped pprof)",
                      sniff=sniff, parse=parse_profile_file)


SPEC = _spec()
