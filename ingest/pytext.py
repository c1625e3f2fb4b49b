"""Reading single statements of generated Python (Inductor output code) without executing it.

Top-level comma and semicolon splitting that respects brackets and quotes, trailing
comments, bracket balance (for statements that span lines), and shape tuples.
"""

from __future__ import annotations

import re

_SPECIAL = re.compile(r"[()\[\]{},'\"\\]")


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


def balance(text: str) -> int:
    opened = text.count("(") + text.count("[") + text.count("{")
    if opened == text.count(")") + text.count("]") + text.count("}"):
        return 0
    depth = 0
    quote: str | None = None
    for ch in text:
        if quote:
            if ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
    return depth


def split_comment(s: str) -> tuple[str, str, str]:
    """Code and trailing ``# comment`` (quotes respected)."""
    if "#" not in s:
        return s, "", ""
    quote: str | None = None
    for i, ch in enumerate(s):
        if quote:
            if ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
        elif ch == "#":
            return s[:i].rstrip(), "#", s[i + 1:].strip()
    return s, "", ""


def split_semicolons(code: str) -> list[str]:
    if ";" not in code:
        return [code]
    out: list[str] = []
    depth = 0
    quote: str | None = None
    cur: list[str] = []
    for ch in code:
        if quote:
            if ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == ";" and depth == 0:
            out.append("".join(cur))
            cur = []
            continue
        cur.append(ch)
    out.append("".join(cur))
    return out
