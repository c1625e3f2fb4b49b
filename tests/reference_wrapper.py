"""Independent simulations of Inductor wrapper code and AOT FX graphs, for the tests.

Written apart from tlview's ingesters (no shared code, a different method): each
walks the program statement by statement, keeps a reference count per storage
and the bytes live at every *moment* (after each allocation, before the next
free), and returns the largest. tlview counts per step; the two must agree.

How the wrapper is counted here (and by torch, see tests/fixtures/gen/make_torch_dumps.py):
* graph inputs are excluded: the caller owns them (``del primals_1`` frees nothing),
  and a name that takes over an input's storage (``buf12 = mul_7; del mul_7``) is the input;
* ``empty_strided_*((sizes), (strides), dtype)``: +storage bytes
  (1 + sum((size-1)*stride)) * itemsize, 0 if a size is 0;
* ``x = y``, ``x = reinterpret_tensor(y, ...)``, ``x = alloc_from_pool(y, ...)``: one more
  reference to y's storage, no bytes; ``del x``: one fewer; at 0 the bytes are freed;
* ``x = <extern/fallback op>(...)``: allocates the op's outputs when the op runs; their
  sizes are read ahead from ``assert_size_stride`` of x (one tensor) or of ``z = x[i]``
  (a tuple; the tuple holds a reference to each element), the dtype from the FX graph
  when given one (same op, sizes and strides), else the first tensor argument's;
* returned names stay referenced until call() returns (the peak cannot fall there);
* graph partitions and subgraphs (``def partition_0(args):``, ``def subgraph_0(args):`` at
  the module's top level) run as Python runs them: ``x_args = [a, b]`` is a list holding a
  reference to each element's storage; the call gives the function a scope of its own
  (its names apart from the caller's), ``p, q = args`` references the list's elements,
  ``args.clear()`` drops the list's references, the return values are referenced by the
  caller's names (``(o1, o2) = f(x_args)``, or ``o = f(x_args)``: a list, ``o[i]``), and
  then the function's own names go.
"""

from __future__ import annotations

import re
from pathlib import Path

ITEMSIZE = {
    "bool": 1, "uint8": 1, "int8": 1, "int16": 2, "int32": 4, "int64": 8,
    "float16": 2, "bfloat16": 2, "float32": 4, "float64": 8,
    "float8_e4m3fn": 1, "float8_e5m2": 1, "complex64": 8,
    # FX short names
    "b8": 1, "u8": 1, "i8": 1, "i16": 2, "i32": 4, "i64": 8, "f16": 2, "bf16": 2, "f32": 4,
    "f64": 8, "f8e4m3fn": 1, "f8e5m2": 1, "c64": 8,
}
FX_LONG = {"b8": "bool", "u8": "uint8", "i8": "int8", "i16": "int16", "i32": "int32",
           "i64": "int64", "f16": "float16", "bf16": "bfloat16", "f32": "float32",
           "f64": "float64", "f8e4m3fn": "float8_e4m3fn", "f8e5m2": "float8_e5m2"}


def nbytes(sizes: list[int], strides: list[int], dtype: str) -> int:
    if any(s == 0 for s in sizes):
        return 0
    return (1 + sum((s - 1) * t for s, t in zip(sizes, strides, strict=True))) * ITEMSIZE[dtype]


def _ints(text: str) -> list[int]:
    return [int(x) for x in re.findall(r"-?\d+", text)]


def _tuples(text: str) -> list[str]:
    """The parenthesised groups at the top level of an argument list."""
    out, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch == "(":
            if depth == 0:
                start = i
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                out.append(text[start:i + 1])
    return out


# -- pulling the sections out of a log, independently of tlview's undress --------------
_GLOG_PREFIX = re.compile(r"^(?:\[rank\d+\]:)?[VIWEC]\d{4} [\d:.]+ +\d+ \S+:\d+\](?: \[[^\]]*\])?"
                          r"(?: \[__(\w+)\])? ?")
_SHORT_HEADER = re.compile(r"^(DEBUG|INFO|WARNING|ERROR|CRITICAL):[\w.]+:")


def log_records(path: Path) -> list[tuple[str, list[str]]]:
    """(first payload line, following payload lines) of each record; reads it all (a test)."""
    records: list[tuple[str, list[str]]] = []
    glog_key = None
    for raw in path.read_text().splitlines():
        m = _GLOG_PREFIX.match(raw)
        if m:
            key = raw[:m.end()].split(" ", 2)[-1]  # source, compile id, artifact (not time)
            key = (key, raw[:m.end()][:25])
            text = raw[m.end():]
            if key != glog_key:
                records.append((text, []))
                glog_key = key
            else:
                records[-1][1].append(text)
            continue
        m = _SHORT_HEADER.match(raw)
        if m:
            glog_key = None
            records.append((raw[m.end():], []))
            continue
        if glog_key is None and records:
            records[-1][1].append(raw)
    return records


def wrapper_modules(path: Path) -> list[list[str]]:
    """The module text of every 'Output code:' record of a log, or the file itself."""
    text = path.read_text()
    if text.startswith("# AOT ID"):
        return [text.splitlines()]
    return [body for first, body in log_records(path) if first.strip() == "Output code:"]


def fx_graphs(path: Path) -> dict[str, list[str]]:
    """Title ('Forward graph 0') -> body lines of every 'TRACED GRAPH' record."""
    out = {}
    for first, body in log_records(path):
        if first.strip() == "TRACED GRAPH" and body:
            title = body[0].strip().strip("=").strip()
            out[title] = body[1:]
    return out


def aot_id(module: list[str]) -> str:
    return re.search(r"\['([^']*)'\]", module[0])[1]


# -- the wrapper ------------------------------------------------------------------------
def _body_at(module: list[str], start: int) -> list[str]:
    indent = len(module[start]) - len(module[start].lstrip())
    body = []
    for ln in module[start + 1:]:
        if ln.strip() and len(ln) - len(ln.lstrip()) <= indent:
            break
        body.append(ln.strip())
    return [b for b in body if b and not b.startswith("#")]


def _call_body(module: list[str]) -> list[str]:
    start = next(i for i, ln in enumerate(module) if re.match(r"\s*def call\(", ln))
    return _body_at(module, start)


def _functions(module: list[str]) -> dict[str, list[str]]:
    """name -> body of each top-level ``def name(args):`` but call."""
    out = {}
    for i, ln in enumerate(module):
        m = re.match(r"def (\w+)\(args\):", ln)
        if m and m[1] != "call":
            out[m[1]] = _body_at(module, i)
    return out


def _fx_outputs(fx_body: list[str] | None) -> list[tuple[str, str, list[int], list[int], int | None]]:
    """(op, dtype, sizes, strides, index) of FX nodes, getitems of tuple nodes included."""
    if not fx_body:
        return []
    out = []
    op_of: dict[str, str] = {}
    for ln in fx_body:
        m = re.match(r'\s*(\w+)(?:: "(\w+)\[([^\]]*)\]\[([^\]]*)\][^"]*")? = ([^;]*)', ln)
        if not m:
            continue
        name, dt, sz, st, rhs = m.groups()
        call = re.match(r"torch\.ops\.\w+\.(\w+)", rhs)
        item = re.match(r"(\w+)\[(\d+)\]$", rhs.strip())
        if call:
            op_of[name] = call[1]
            if dt:
                out.append((call[1], FX_LONG.get(dt, dt), _ints(sz), _ints(st), None))
        elif item and dt and item[1] in op_of:
            out.append((op_of[item[1]], FX_LONG.get(dt, dt), _ints(sz), _ints(st), int(item[2])))
    return out


def _fx_inputs(fx_body: list[str] | None) -> dict[str, str]:
    if not fx_body:
        return {}
    for ln in fx_body:
        if "def forward(" in ln:
            return {n: FX_LONG.get(d, d) for n, d in re.findall(r'(\w+): "(\w+)\[', ln)}
    return {}


def simulate_wrapper(module: list[str], fx_body: list[str] | None = None) -> int:
    """The most bytes call() holds at any moment, inputs excluded."""
    body = _call_body(module)
    funcs = _functions(module)
    input_dtype = {n: FX_LONG.get(d, d) for n, d in re.findall(
        r"(\w+) = rand_strided\(.*dtype=torch\.(\w+)\)", "\n".join(module))}
    input_dtype.update(_fx_inputs(fx_body))
    fx_out = _fx_outputs(fx_body)
    asserts = {}
    elements: dict[str, list[tuple[int, str]]] = {}
    for ln in body + [x for f in funcs.values() for x in f]:
        m = re.match(r"assert_size_stride\((\w+), (.*)\)$", ln)
        if m:
            sz, st = _tuples(m[2])[:2]
            asserts[m[1]] = (_ints(sz), _ints(st))
        m = re.match(r"(\w+) = (\w+)\[(\d+)\]$", ln)
        if m:
            elements.setdefault(m[2], []).append((int(m[3]), m[1]))

    refs: dict[int, int] = {}      # storage id -> references
    size: dict[int, int] = {}      # storage id -> bytes (0 for inputs: not counted)
    dtype_of: dict[int, str] = {}
    counter = [0]
    live = peak = 0

    def new(nb: int, dt: str | None) -> int:
        counter[0] += 1
        refs[counter[0]] = 0
        size[counter[0]] = nb
        if dt:
            dtype_of[counter[0]] = dt
        return counter[0]

    def ref(holds: dict, name: str, sids: list[int]) -> None:
        unref(holds, name)  # rebinding a name drops what it held
        holds[name] = list(sids)
        for s in sids:
            refs[s] += 1

    def unref(holds: dict, name: str) -> None:
        nonlocal live
        for s in holds.pop(name, []):
            refs[s] -= 1
            if refs[s] == 0:
                live -= size[s]

    def alloc(nb: int) -> None:
        nonlocal live, peak
        live += nb
        peak = max(peak, live)

    def run(stmts: list[str], holds: dict, lists: dict, args: list[list[int]] | None,
            args_list: str | None, caller: dict | None) -> list[list[int]]:
        """Run a body in the scope ``holds`` (name -> storages) and ``lists`` (a list's
        name -> its elements' storages); returns the storages of what it returns."""
        for ln in stmts:
            code = ln.split("  #")[0]
            for st in [s.strip() for s in code.split(";") if s.strip()]:
                m = re.match(r"([\w, ]+?),? = args$", st)
                if m and args is not None:  # a function's parameters: the list's elements
                    for n, sids in zip([x.strip() for x in m[1].split(",")], args):
                        ref(holds, n, sids)
                    continue
                if m:
                    for n in [x.strip() for x in m[1].split(",")]:
                        ref(holds, n, [new(0, input_dtype.get(n))])
                    continue
                if st == "args.clear()" and caller is not None and args_list is not None:
                    unref(caller, args_list)  # the caller's list object, emptied
                    continue
                if st.startswith("del "):
                    for n in st[4:].split(","):
                        unref(holds, n.strip())
                        lists.pop(n.strip(), None)
                    continue
                if st.startswith("return"):
                    if args is None:
                        continue
                    t = st[len("return"):].strip().strip("()")
                    return [list(holds.get(x.strip(), [])) for x in t.split(",") if x.strip()]
                m = re.match(r"(\w+) = \[(.*)\]$", st)
                if m:  # an argument list
                    elems = [list(holds.get(x.strip(), [])) for x in m[2].split(",")
                             if x.strip()]
                    lists[m[1]] = elems
                    ref(holds, m[1], [x for e in elems for x in e])
                    continue
                m = re.match(r"\(([\w, ]*)\) = (?:self\.partitions\[(\d+)\]|(\w+))\((\w+)\)$",
                             st) or re.match(r"(\w+) = ()(\w+)\((\w+)\)$", st)
                if m and (m[3] in funcs or (m[2] and f"partition_{m[2]}" in funcs)):
                    fn = funcs[f"partition_{m[2]}" if m[2] else m[3]]
                    own: dict = {}
                    got = run(fn, own, {}, lists.get(m[4], []), m[4], holds)
                    if st.startswith("("):
                        outs = [x.strip() for x in m[1].split(",") if x.strip()]
                        for o, sids in zip(outs, got, strict=True):
                            ref(holds, o, sids)
                    else:  # o = f(f_args): o is the list of its results
                        lists[m[1]] = got
                        ref(holds, m[1], [x for e in got for x in e])
                    for n in list(own):
                        unref(own, n)
                    continue
                m = re.match(r"(\w+) = \[None\] \* \d+$", st)
                if m:
                    continue
                m = re.match(r"(\w+) = (empty_strided\w*|torch\.empty_strided)\((.*)\)$", st)
                if m:
                    sz, stv = _tuples(m[3])[:2]
                    dt = re.findall(r"torch\.(\w+)", m[3])[-1]
                    sid = new(nbytes(_ints(sz), _ints(stv), dt), dt)
                    ref(holds, m[1], [sid])
                    alloc(size[sid])
                    continue
                m = re.match(r"(\w+) = (?:reinterpret_tensor|alloc_from_pool)\((\w+)", st)
                if m or re.match(r"(\w+) = (\w+)$", st):
                    m = m or re.match(r"(\w+) = (\w+)$", st)
                    ref(holds, m[1], holds.get(m[2], []))
                    continue
                m = re.match(r"(\w+) = (\w+)\[(\d+)\]$", st)
                if m:
                    if m[2] in lists:
                        el = lists[m[2]]
                        ref(holds, m[1], el[int(m[3])] if int(m[3]) < len(el) else [])
                        continue
                    tup = holds.get(m[2], [])
                    ref(holds, m[1], [tup[int(m[3])]] if int(m[3]) < len(tup) else [])
                    continue
                m = re.match(r"(\w+) = ((?:extern_kernels|torch\.ops|aten)[\w.]*)\((.*)\)$", st)
                if m:
                    name, op = m[1], m[2]
                    opname = op.split(".")[3] if op.startswith("torch.ops") else op.split(".")[-1]
                    first = re.search(r"(?:reinterpret_tensor\()?\b(\w+)\b", m[3])[1]
                    first_dt = next((dtype_of[s] for s in holds.get(first, [])
                                     if s in dtype_of), None)
                    outs = sorted(elements.get(name, [])) or [(None, name)]
                    sids = []
                    slots = max((i for i, _ in outs if i is not None), default=-1) + 1
                    by_index = dict(outs) if outs[0][0] is not None else {}
                    for i in range(slots if by_index else 1):
                        el = by_index.get(i, name) if by_index else name
                        if el not in asserts:
                            sids.append(new(0, None))
                            continue
                        sz, stv = asserts[el]
                        cands = {d for (o, d, s1, s2, ix) in fx_out
                                 if o == opname and s1 == sz and s2 == stv
                                 and ix == (i if by_index else None)}
                        dt = cands.pop() if len(cands) == 1 else first_dt
                        sid = new(nbytes(sz, stv, dt), dt)
                        sids.append(sid)
                        alloc(size[sid])
                    ref(holds, name, sids)
                    continue
                # launches with out= and other statements hold no new memory
        return []

    run(body, {}, {}, None, None, None)
    return peak


# -- FX graphs --------------------------------------------------------------------------
VIEWS = {"view", "_unsafe_view", "reshape", "permute", "t", "transpose", "expand", "as_strided",
         "slice", "select", "squeeze", "unsqueeze", "alias", "view_as", "unfold", "diagonal",
         "split", "split_with_sizes", "unbind", "chunk", "narrow", "detach", "movedim"}


def simulate_fx(body: list[str]) -> int:
    """The most bytes an FX graph holds at any moment, placeholders excluded."""
    nodes = []
    for ln in body:
        m = re.match(r'\s*(\w+)(?:: "([^"]*)")? = (.*)$', ln)
        if not m or "fx_pytree" in ln or ln.strip().startswith(("return", "#")):
            continue
        name, ann, rest = m.groups()
        code, _, rel = rest.partition(";")
        nodes.append((name, ann, code.strip(), [x.strip() for x in rel.split("=")[:-1]]))
    getitems: dict[str, dict[int, str]] = {}
    for _name, ann, code, _ in nodes:
        g = re.match(r"(\w+)\[(\d+)\]$", code)
        if g:
            getitems.setdefault(g[1], {})[int(g[2])] = ann
    refs: dict[int, int] = {}
    size: dict[int, int] = {}
    holds: dict[str, list[int]] = {}
    live = peak = 0
    n = 0

    def new(nb: int) -> int:
        nonlocal n
        n += 1
        refs[n], size[n] = 0, nb
        return n

    def ref(name: str, sids: list[int]) -> None:
        holds[name] = list(sids)
        for s in sids:
            refs[s] += 1

    def unref(name: str) -> None:
        nonlocal live
        for s in holds.pop(name, []):
            refs[s] -= 1
            if refs[s] == 0:
                live -= size[s]

    def ann_bytes(ann: str | None) -> int:
        m = re.match(r"(\w+)\[([^\]]*)\]\[([^\]]*)\]", ann or "")
        return nbytes(_ints(m[2]), _ints(m[3]), m[1]) if m else 0

    for name, ann, code, released in nodes:
        op = re.match(r"torch\.ops\.\w+\.(\w+)", code)
        opname = op[1] if op else ""
        first = re.search(r"\((\w+)", code)
        g = re.match(r"(\w+)\[(\d+)\]$", code)
        if g:
            src = holds.get(g[1], [])
            ref(name, [src[int(g[2])]] if int(g[2]) < len(src) else src[:1])
        elif opname in VIEWS or (opname.endswith("_") and not opname.endswith("__")):
            ref(name, holds.get(first[1], []) if first else [])
        elif name in getitems and not ann:  # a tuple: all its elements appear now
            count = max(getitems[name]) + 1
            sids = [new(ann_bytes(getitems[name].get(i))) for i in range(count)]
            ref(name, sids)
            live += sum(size[s] for s in sids)
        else:
            sid = new(ann_bytes(ann))
            ref(name, [sid])
            live += size[sid]
        peak = max(peak, live)
        for r in released:
            unref(r)
    return peak
