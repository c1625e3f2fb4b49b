"""Tensor arithmetic shared by the torch ingesters: dtype sizes and storage bytes.

The storage rule (documented in docs/liveness.md): a tensor of sizes ``s`` and strides
``t`` touches ``1 + sum((s_i - 1) * t_i)`` elements, times the dtype's item size,
and 0 bytes if any size is 0. Sizes may be symbolic (``s0``, ``s1*s0``): then the
byte count is unknown (``None``) and the expression is kept, never taken as 0.
"""

from __future__ import annotations

import re

import attrs

# Item sizes in bytes, by the name torch prints after ``torch.`` (or FX's short names).
ITEMSIZE: dict[str, int] = {
    "bool": 1, "b8": 1,
    "uint8": 1, "u8": 1, "int8": 1, "i8": 1,
    "uint16": 2, "u16": 2, "int16": 2, "i16": 2,
    "uint32": 4, "u32": 4, "int32": 4, "i32": 4,
    "uint64": 8, "u64": 8, "int64": 8, "i64": 8,
    "float16": 2, "f16": 2, "half": 2, "bfloat16": 2, "bf16": 2,
    "float32": 4, "f32": 4, "float": 4,
    "float64": 8, "f64": 8, "double": 8,
    "complex32": 4, "c32": 4, "complex64": 8, "c64": 8, "complex128": 16, "c128": 16,
    "float8_e4m3fn": 1, "f8e4m3fn": 1, "float8_e5m2": 1, "f8e5m2": 1,
    "float8_e4m3fnuz": 1, "f8e4m3fnuz": 1, "float8_e5m2fnuz": 1, "f8e5m2fnuz": 1,
    "float8_e8m0fnu": 1, "f8e8m0fnu": 1, "float4_e2m1fn_x2": 1, "f4e2m1fn_x2": 1,
    "bits8": 1, "bits16": 2, "bits32": 4, "bits64": 8, "bits1x8": 1, "bits2x4": 1, "bits4x2": 1,
    "qint8": 1, "quint8": 1, "qint32": 4, "quint4x2": 1, "quint2x4": 1,
}

_INT = re.compile(r"-?\d+\Z")


def itemsize(dtype: str | None) -> int | None:
    """Bytes per element of ``dtype`` (``torch.bfloat16``, ``bf16``...), or None if unknown."""
    if dtype is None:
        return None
    name = dtype.rsplit(".", 1)[-1]
    return ITEMSIZE.get(name)


def split_dims(text: str) -> list[str]:
    """``'[s0, 2*s1, 4]'`` -> ``['s0', '2*s1', '4']`` (commas inside brackets respected)."""
    text = text.strip()
    if text.startswith(("[", "(")):
        text = text[1:-1]
    out: list[str] = []
    depth = 0
    cur: list[str] = []
    for ch in text:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        if ch == "," and depth == 0:
            piece = "".join(cur).strip()
            if piece:
                out.append(piece)
            cur = []
        else:
            cur.append(ch)
    piece = "".join(cur).strip()
    if piece:
        out.append(piece)
    return out


@attrs.frozen
class Storage:
    """Bytes a tensor's storage spans: exact when every dim is a number, else an expression."""

    bytes: int | None
    expr: str | None = None  # the symbolic byte expression, when bytes is None
    reason: str | None = None  # why bytes is None (symbolic size, unknown dtype...)


def storage_bytes(sizes: list[str], strides: list[str], dtype: str | None) -> Storage:
    """Apply the storage rule to sizes and strides given as printed (numbers or expressions)."""
    isz = itemsize(dtype)
    if len(sizes) != len(strides):
        return Storage(None, None, f"sizes {sizes} and strides {strides} differ in rank")
    if all(_INT.match(s) for s in sizes) and all(_INT.match(t) for t in strides):
        numel = 1
        for s, t in zip(sizes, strides):
            si = int(s)
            if si == 0:
                return Storage(0) if isz is not None else Storage(None, None, f"unknown dtype {dtype}")
            numel += (si - 1) * int(t)
        if isz is None:
            return Storage(None, f"{numel}*itemsize({dtype})", f"unknown dtype {dtype}")
        return Storage(numel * isz)
    terms = ["1"] + [f"(({s}) - 1)*({t})" for s, t in zip(sizes, strides)]
    expr = f"({' + '.join(terms)})*{isz if isz is not None else f'itemsize({dtype})'}"
    return Storage(None, expr, "symbolic size")
