"""An independent reference for the scheduler-IR liveness rule, written apart from the ingester.

It reads the whole (small) file with regular expressions over the full text,
rather than the ingester's line state machine, and applies the rule from
docs/liveness.md directly: bytes from FixedLayout storage, live from producer step to the
largest non-weak user step (OUTPUT = last step), extended through .mutations and
.aliases, inputs excluded. A NonOwningLayout buffer owns nothing; the buffer named in
its .aliases (a concat buffer, printed later) is live from the view's step.
"""

from __future__ import annotations

import re
from pathlib import Path

ITEM = {"bfloat16": 2, "float16": 2, "float32": 4, "float64": 8, "int8": 1, "uint8": 1,
        "int32": 4, "int64": 8, "bool": 1, "float8_e4m3fn": 1, "float8_e5m2": 1, "int16": 2}


def reference(path: Path) -> dict:
    text = path.read_text()
    # Top-level headers: a header line not directly preceded by an "X.snodes[i] =" line.
    lines = text.split("\n")
    tops: list[tuple[int, str]] = []  # (line index, name)
    sub_parent: dict[str, str] = {}
    for i, ln in enumerate(lines):
        m = re.match(r"^(\w+): \w+\([^()]*\)$", ln)
        if not m:
            continue
        prev = lines[i - 1] if i else ""
        pm = re.match(r"^(\w+)\.snodes\[\d+\] =$", prev)
        if pm:
            sub_parent[m.group(1)] = pm.group(1)
        else:
            tops.append((i, m.group(1)))
    step = {name: k for k, (_, name) in enumerate(tops)}
    for sub, parent in sub_parent.items():
        step[sub] = step[parent]
    n = len(tops)
    bufs: dict[str, dict] = {}
    links: list[tuple[str, str]] = []
    written_into: list[tuple[str, str]] = []  # (NonOwningLayout view, the buffer it writes)
    for k, (start, name) in enumerate(tops):
        end = tops[k + 1][0] if k + 1 < n else len(lines)
        chunk = "\n".join(lines[start:end])
        om = re.search(rf"^{re.escape(name)}\.outputs = \[\n(.*?)\n\]", chunk, re.S | re.M)
        if not om:
            continue
        for bm in re.finditer(r"^    (\w+): \w+\n(.*?)(?=^    \w+: \w+\n|\Z)", om.group(1) + "\n",
                              re.S | re.M):
            bname, body = bm.group(1), bm.group(2)
            lay = re.search(r"\.layout = (\w+)\((.*)\)", body).group(1, 2)
            nbytes = 0
            if lay[0] == "FixedLayout":
                dt = re.search(r"torch\.(\w+)", lay[1]).group(1)
                size = [int(x) for x in re.search(r"size=\[([^\]]*)\]", lay[1]).group(1).split(",") if x.strip()]
                stride = [int(x) for x in re.search(r"stride=\[([^\]]*)\]", lay[1]).group(1).split(",") if x.strip()]
                if 0 in size:
                    nbytes = 0
                else:
                    nbytes = (1 + sum((s - 1) * t for s, t in zip(size, stride))) * ITEM[dt]
            last = k
            um = re.search(r"\.users = (\[.*?\])\n", body, re.S)
            users = um.group(1) if um else "[]"
            for u in re.finditer(r"NodeUser\(node=(OUTPUT|\w+\(name='(\w+)'\)), can_inplace=\w+, is_weak=(\w+)\)", users):
                if u.group(3) == "True":
                    continue
                last = n - 1 if u.group(1) == "OUTPUT" else max(last, step[u.group(2)])
            for rel in ("mutations", "aliases"):
                rm = re.search(rf"\.{rel} = \[(.*?)\]", body)
                if rm:
                    links += [(bname, t) for t in re.findall(r"'(\w+)'", rm.group(1))]
                    if rel == "aliases" and lay[0] == "NonOwningLayout":
                        written_into += [(bname, t) for t in re.findall(r"'(\w+)'", rm.group(1))]
            bufs[bname] = {"bytes": nbytes, "alloc": k, "last": last}
    for view, target in written_into:
        if target in bufs:
            bufs[target]["alloc"] = min(bufs[target]["alloc"], bufs[view]["alloc"])
    changed = True
    while changed:
        changed = False
        for b, t in links:
            if t in bufs and bufs[b]["last"] > bufs[t]["last"]:
                bufs[t]["last"] = bufs[b]["last"]
                changed = True
    curve = [sum(b["bytes"] for b in bufs.values() if b["alloc"] <= s <= b["last"]) for s in range(n)]
    peak = max(curve)
    return {"n_steps": n, "buffers": bufs, "curve": curve, "peak_bytes": peak,
            "peak_step": curve.index(peak)}
