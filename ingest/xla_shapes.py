"""XLA shape text: ``bf16[32,1024]{1,0}``, tuples ``(f32[], s8[16]{0})``, and byte sizes.

Sizes follow ``ShapeUtil::ByteSizeOf(shape, pointer_size=8)``: an array is its
element count times the element size; a tuple is only its index table, 8 bytes
per top-level element (its elements are buffers of their own). XLA's peak
moment rule (``HloLiveRange::ComputePeakMemoryMoment``) charges every value the
size of its *defining instruction's* shape, so a tuple element is charged the
table of the tuple that holds it, not its own bytes.
"""

from __future__ import annotations

import re

import attrs

POINTER_SIZE = 8

# Element sizes of XLA primitive types, as printed in shapes.
XLA_ITEMSIZE: dict[str, int] = {
    "pred": 1, "s8": 1, "u8": 1, "s16": 2, "u16": 2, "s32": 4, "u32": 4, "s64": 8, "u64": 8,
    "f16": 2, "bf16": 2, "f32": 4, "f64": 8, "c64": 8, "c128": 16,
    "f8e5m2": 1, "f8e4m3fn": 1, "f8e4m3b11fnuz": 1, "f8e5m2fnuz": 1, "f8e4m3fnuz": 1,
    "f8e4m3": 1, "f8e3m4": 1, "f8e8m0fnu": 1, "token": 0,
}

_ARRAY = re.compile(r"(?P<dtype>[a-z][a-z0-9]*)\[(?P<dims>[^\]]*)\](?P<layout>\{[^}]*\})?\Z")
_PARENS = re.compile(r"[()]")
_DIMS_OR_LAYOUT = re.compile(r"\[[^\[\]]*\]|\{[^{}]*\}")
_INNER_TUPLE = re.compile(r"\([^()]*\)")
_COMMENT = re.compile(r"/\*.*?\*/")


@attrs.frozen
class ShapeText:
    """One printed shape split into its parts; ``bytes`` is None where it cannot be known."""

    text: str
    dtype: str | None
    dims: str | None  # "[32,1024]" for arrays, None for tuples
    layout: str | None
    is_tuple: bool
    n_elements: int | None  # top-level tuple elements
    bytes: int | None  # ByteSizeOf(shape, 8)


def _top_level_count(inner: str) -> int:
    """Top-level elements of a tuple's inside: drop every bracketed group, count commas."""
    if not inner.strip():
        return 0
    flat = _DIMS_OR_LAYOUT.sub("", inner)
    while "(" in flat:
        shorter = _INNER_TUPLE.sub("", flat)
        if shorter == flat:
            break
        flat = shorter
    return flat.count(",") + 1


def parse_shape(text: str) -> ShapeText:
    """``bf16[2,3]{1,0}`` or ``(f32[], s8[4]{0})`` to its parts and ByteSizeOf."""
    t = text.strip()
    if "/*" in t:
        t = _COMMENT.sub("", t)
    if t.startswith("("):
        n = _top_level_count(t[1:t.rfind(")")])
        return ShapeText(text.strip(), None, None, None, True, n, n * POINTER_SIZE)
    m = _ARRAY.match(t)
    if not m:
        return ShapeText(text.strip(), None, None, None, False, None, None)
    dtype, dims = m["dtype"], m["dims"]
    size = XLA_ITEMSIZE.get(dtype)
    numel = 1
    for d in dims.split(","):
        d = d.strip().lstrip("<=")  # bounded dynamic dims print as <=N
        if not d:
            continue
        if not d.isdigit():
            size = None
            break
        numel *= int(d)
    return ShapeText(text.strip(), dtype, f"[{dims}]", m["layout"], False, None,
                     None if size is None else numel * size)


def instruction_shape(instruction: str) -> str | None:
    """The result shape printed in ``%name = SHAPE opcode(...)``, or None if not found."""
    eq = instruction.find(" = ")
    if eq < 0:
        return None
    rest = instruction[eq + 3:]
    if rest.startswith("("):
        depth = 0
        for m in _PARENS.finditer(rest):
            depth += 1 if m.group() == "(" else -1
            if depth == 0:
                return rest[:m.end()]
        return None
    return rest.split(" ", 1)[0]


def instruction_opcode(instruction: str, shape: str | None) -> str | None:
    """The opcode in ``%name = SHAPE opcode(...)``, given its ``instruction_shape``."""
    if shape is None:
        return None
    rest = instruction[instruction.find(" = ") + 3 + len(shape):].lstrip()
    paren = rest.find("(")
    return rest[:paren] if paren > 0 else None
