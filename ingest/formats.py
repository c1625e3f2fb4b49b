"""Which ingester reads which file: format sniffing by content, and the registry.

Each format module exposes a ``SPEC``; detection looks at the first few KB of
text (after stripping log prefixes where the format allows them), never at the
file name alone, because users rename dumps.
"""

from __future__ import annotations

from pathlib import Path

from .binary_kinds import binary_kind
from .errors import IngestError
from .format_spec import FormatSpec, read_head_bytes


def _registry() -> list[FormatSpec]:
    from . import (
        cuda_snapshot,
        flight_recorder,
        inductor_ir,
        jax_memory_profile,
        kineto,
        stack_dump,
        torch_log,
        torch_trace,
        xla_buffer_assignment,
    )

    # The binary formats first: their sniffers check exact bytes, the text ones patterns.
    # torch_trace before torch_log: a TORCH_TRACE log's payloads hold output code too.
    return [cuda_snapshot.SPEC, jax_memory_profile.SPEC, inductor_ir.SPEC,
            xla_buffer_assignment.SPEC, torch_trace.SPEC, torch_log.SPEC,
            *kineto.SPECS, flight_recorder.SPEC, stack_dump.SPEC]


def formats() -> dict[str, FormatSpec]:
    return {f.name: f for f in _registry()}


class NotADump(IngestError):
    """The file is readable but no ingester reads it. ``kind`` says what it seems to be
    (``.json``, ``Python pickle``, ``empty``), for a folder's count of skipped files;
    ``looks`` the same in a few words, for its list."""

    def __init__(self, path: str, line: int | None, message: str, kind: str,
                 looks: str) -> None:
        super().__init__(path, line, message)
        self.kind = kind
        self.looks = looks


def _is_gzip(path: str) -> bool:
    with open(path, "rb") as f:
        return f.read(2) == b"\x1f\x8b"


def detect_format(path: str) -> FormatSpec:
    """The format of ``path`` by its content; else NotADump saying what it looks like
    (never quoting binary bytes) and what was expected."""
    data = read_head_bytes(path)
    gz = "gzip-compressed: " if _is_gzip(path) else ""
    if not data.strip():
        raise NotADump(path, 1, f"{gz}empty file: expected a dump or trace", "empty",
                       f"{gz}empty")
    head = data.decode("utf-8", errors="replace")
    for spec in _registry():
        if spec.sniff(head, path):
            return spec
    binary = binary_kind(data, path)
    if binary is not None:
        kind = f"gzip of {binary.kind}" if gz else binary.kind
        raise NotADump(path, None, gz + binary.description, kind, kind)
    names = ", ".join(f"{f.name} ({f.description})" for f in _registry())
    first = next((ln for ln in head.splitlines() if ln.strip()), "")[:80]
    name = Path(path)
    suffix = ("".join(name.suffixes[-2:]) if name.suffix == ".gz" else name.suffix).lower()
    raise NotADump(path, 1, f"{gz}unrecognised input {first!r}: expected one of {names}",
                   suffix or "without suffix", f"{gz}text starting {first[:40]!r}")
