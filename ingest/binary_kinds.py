"""What a binary file looks like, by its first bytes, in words (never the bytes themselves).

`tlview ingest` of a file no ingester reads says what it seems to be, so that a person
who gave it a pickle, a checkpoint or a database learns what to give instead; raw bytes
in an error line only garble the terminal.
"""

from __future__ import annotations

import attrs


@attrs.frozen
class BinaryKind:
    kind: str  # short, for counts: "Python pickle"
    description: str  # the sentence for the error line


# (magic at offset, offset, kind, description), first match wins.
_MAGIC: list[tuple[bytes, int, str, str]] = [
    (b"DUCK", 8, "DuckDB database",
     "a DuckDB database, not a dump: open it with `tlview FILE` or `tlview sql --db FILE`"),
    (b"PK\x03\x04", 0, "zip archive",
     "a zip archive (torch.save checkpoints and .pt2 packages are zip files), not a dump: "
     "extract the dump or trace from it"),
    (b"\x7fELF", 0, "ELF binary", "an ELF executable or shared library, not a dump"),
    (b"PAR1", 0, "Parquet file", "a Parquet file, not a dump"),
    (b"SQLite format 3\x00", 0, "SQLite database", "an SQLite database, not a dump"),
    (b"\x93NUMPY", 0, "NumPy array", "a NumPy .npy array, not a dump"),
    (b"\x28\xb5\x2f\xfd", 0, "zstd data",
     "zstd-compressed data: decompress it first (tlview reads .gz itself)"),
    (b"BZh", 0, "bzip2 data", "bzip2-compressed data: decompress it first (tlview reads .gz itself)"),
    (b"\xfd7zXZ\x00", 0, "xz data", "xz-compressed data: decompress it first (tlview reads .gz itself)"),
    (b"\x89PNG\r\n\x1a\n", 0, "PNG image", "a PNG image, not a dump"),
    (b"\xff\xd8\xff", 0, "JPEG image", "a JPEG image, not a dump"),
    (b"%PDF-", 0, "PDF document", "a PDF document, not a dump"),
]

_PICKLE = ("Python pickle",
           "a Python pickle, but not a CUDA memory snapshot (torch.cuda.memory._dump_snapshot: "
           "a dict with `segments` and `device_traces`) or a Flight Recorder dump (a dict "
           "with `version`, `pg_config`, `entries`); tlview never unpickles its input")


def binary_kind(head: bytes, path: str = "") -> BinaryKind | None:
    """What ``head`` (a file's first bytes, un-gzipped) is, or None if it looks like text."""
    for magic, offset, kind, description in _MAGIC:
        if head[offset:offset + len(magic)] == magic:
            return BinaryKind(kind, description)
    if len(head) >= 2 and head[0] == 0x80 and 2 <= head[1] <= 5:
        return BinaryKind(*_PICKLE)
    if not _looks_binary(head):
        return None
    if path.endswith(".pb") or ".xplane." in path:
        return BinaryKind("protobuf", "binary data (a protobuf?): for a jax.profiler run, "
                          "ingest the *.trace.json.gz written beside the *.xplane.pb")
    return BinaryKind("binary data", "binary data, not a text dump or a trace")


def _looks_binary(head: bytes) -> bool:
    """A NUL byte, or more than a tenth of the characters not UTF-8 text."""
    if b"\x00" in head:
        return True
    text = head.decode("utf-8", errors="replace")
    bad = text.count("\ufffd") + sum(1 for c in text if c < " " and c not in "\t\n\r\f\v\x1b")
    return bad > len(text) / 10
