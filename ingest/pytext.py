"""Reading single statements of generated Python (Inductor output code) without executing it.

Top-level comma and semicolon splitting that respects brackets and quotes, trailing
comments, bracket balance (for statements that span lines), and shape tuples.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

_SPECIAL = re.compile(r"[()\[\]{},'\"\\]")
# A whole expression that is one call: `f(a, b)`, `torch.ops.aten.mm.default(x, y)`
CALL = re.compile(r"(?P<callee>[A-Za-z_][\w.]*)\((?P<args>.*)\)\Z")


def split_args(text: str) -> list[str]:
    """Top-level comma split of a Python argument list (brackets and quotes respected)."""
    if "(" not in text and "[" not in text and "{" not in text and "'" not in text \
            and '"' not in text:
        return [a.strip() for a in text.split(",") if a.strip()]
    out: list[str] = []
    depth = 0
    quote: str | None = None
    start = 0
    escaped_at = -1
    for m in _SPECIAL.finditer(text):
        ch = m.group()
        i = m.start()
        if quote:
            if ch == "\\":
                escaped_at = i + 1
            elif ch == quote and i != escaped_at:
                quote = None
        elif ch in "'\"":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 0:
            out.append(text[start:i].strip())
            start = i + 1
    last = text[start:].strip()
    if last:
        out.append(last)
    return out


def dims(text: str) -> list[str]:
    t = text.strip()
    if t.startswith(("(", "[")) and t.endswith((")", "]")):
        t = t[1:-1]
    return [d for d in split_args(t) if d]


# What each reader below looks for, and both quotes (the other characters change nothing)
_BRACKETS = re.compile(r"[()\[\]{}'\"]")
_HASH = re.compile(r"[#'\"]")
_BRACKETS_SEMI = re.compile(r"[()\[\]{};'\"]")


def _outside_quotes(text: str, marks: re.Pattern[str]) -> Iterator[tuple[int, str]]:
    """Each character ``marks`` finds in ``text`` outside a quoted string, with its index
    (``marks`` finds both quotes too; they are left out)."""
    quote: str | None = None
    for m in marks.finditer(text):
        ch = m.group()
        if quote:
            if ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
        else:
            yield m.start(), ch


def balance(text: str) -> int:
    opened = text.count("(") + text.count("[") + text.count("{")
    if opened == text.count(")") + text.count("]") + text.count("}"):
        return 0
    depth = 0
    for _, ch in _outside_quotes(text, _BRACKETS):
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
    return depth


def split_comment(s: str) -> tuple[str, str, str]:
    """Code and trailing ``# comment`` (quotes respected)."""
    if "#" not in s:
        return s, "", ""
    for i, ch in _outside_quotes(s, _HASH):
        if ch == "#":
            return s[:i].rstrip(), "#", s[i + 1:].strip()
    return s, "", ""


def split_semicolons(code: str) -> list[str]:
    if ";" not in code:
        return [code]
    out: list[str] = []
    depth = 0
    start = 0
    for i, ch in _outside_quotes(code, _BRACKETS_SEMI):
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == ";" and depth == 0:
            out.append(code[start:i])
            start = i + 1
    out.append(code[start:])
    return out
