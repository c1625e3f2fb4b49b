// AOT FX graphs (TORCH_LOGS=aot_graphs, TORCH_TRACE's aot_*_graph payloads) to records.
//
// The compiled twin of ingest/fx_graph.py's FxGraphParser (`_line` .. `finish`), which
// stays the specification: tests/test_native_torch_log.py runs both on every graph of the
// fixtures and on mutated graphs and requires the same records, note and summary. It
// takes one whole graph (its undressed lines) and returns its records, made by calling
// the record classes directly; it handles ASCII graphs that end well. Anything else (a
// non-ASCII line, a number beyond 18 digits, a graph that fails) returns None and the
// Python parser reads the graph again, so errors are always the Python parser's own.
#include <Python.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "columns.hpp"
#include "common.hpp"
#include "event_sink.hpp"
#include "ordered_dict.hpp"
#include "pyjson.hpp"
#include "pytext.hpp"

namespace tlv {
namespace {

using namespace pytext;

using sv = std::string_view;

struct Fallback {};  // the Python parser must read this graph


int balance(sv s) {
    int d = 0;
    for (char c : s) {
        if (c == '(' || c == '[' || c == '{') ++d;
        else if (c == ')' || c == ']' || c == '}') --d;
    }
    return d;
}

// Python int() of -?\d+ that fits comfortably in int64, else Fallback.
int64_t to_int(sv s) {
    bool neg = !s.empty() && s[0] == '-';
    sv d = neg ? s.substr(1) : s;
    if (d.empty() || d.size() > 18) throw Fallback{};
    int64_t v = 0;
    for (char c : d) {
        if (!is_digit(c)) throw Fallback{};
        v = v * 10 + (c - '0');
    }
    return neg ? -v : v;
}

// re.findall(r"\b[A-Za-z_]\w*\b", s) on ASCII: maximal word runs not starting with a digit.
std::vector<sv> identifiers(sv s) {
    std::vector<sv> out;
    size_t i = 0, n = s.size();
    while (i < n) {
        if (!is_word(s[i])) { ++i; continue; }
        size_t j = i;
        while (j < n && is_word(s[j])) ++j;
        if (!is_digit(s[i])) out.push_back(s.substr(i, j - i));
        i = j;
    }
    return out;
}

std::vector<std::string> split_dims(sv s) {  // [d.strip() for d in s.split(",") if d.strip()]
    std::vector<std::string> out;
    size_t i = 0;
    while (true) {
        size_t c = s.find(',', i);
        sv piece = strip(s.substr(i, c == sv::npos ? sv::npos : c - i));
        if (!piece.empty()) out.emplace_back(piece);
        if (c == sv::npos) break;
        i = c + 1;
    }
    return out;
}

struct Ann {
    std::string dtype;
    std::vector<std::string> shape, stride;
    std::string device;  // "" = None
};

const char* fx_dtype(sv d) {
    static const char* table[][2] = {
        {"b8", "bool"}, {"u8", "uint8"}, {"i8", "int8"}, {"u16", "uint16"}, {"i16", "int16"},
        {"u32", "uint32"}, {"i32", "int32"}, {"u64", "uint64"}, {"i64", "int64"},
        {"f16", "float16"}, {"bf16", "bfloat16"}, {"f32", "float32"}, {"f64", "float64"},
        {"c32", "complex32"}, {"c64", "complex64"}, {"c128", "complex128"},
        {"f8e4m3fn", "float8_e4m3fn"}, {"f8e5m2", "float8_e5m2"},
        {"f8e4m3fnuz", "float8_e4m3fnuz"}, {"f8e5m2fnuz", "float8_e5m2fnuz"},
        {"f8e8m0fnu", "float8_e8m0fnu"}, {"f4e2m1fn_x2", "float4_e2m1fn_x2"}};
    for (auto& e : table)
        if (d == e[0]) return e[1];
    return nullptr;
}

// fx_graph.parse_annotation: `\w+\[[^\]]*\]\[[^\]]*\]\S*` on the stripped text.
bool parse_annotation(sv ann, Ann* a) {
    sv s = strip(ann);
    size_t i = 0, n = s.size();
    while (i < n && is_word(s[i])) ++i;
    if (i == 0 || i >= n || s[i] != '[') return false;
    sv dtype = s.substr(0, i);
    size_t c1 = s.find(']', i + 1);
    if (c1 == sv::npos || c1 + 1 >= n || s[c1 + 1] != '[') return false;
    size_t c2 = s.find(']', c1 + 2);
    if (c2 == sv::npos) return false;
    sv dev = s.substr(c2 + 1);
    for (char c : dev)
        if (is_space(c)) return false;
    const char* t = fx_dtype(dtype);
    a->dtype = t ? std::string(t) : std::string(dtype);
    a->shape = split_dims(s.substr(i + 1, c1 - i - 1));
    a->stride = split_dims(s.substr(c1 + 2, c2 - c1 - 2));
    a->device = std::string(dev);
    return true;
}

int itemsize(sv dtype) {
    size_t dot = dtype.rfind('.');
    sv name = dot == sv::npos ? dtype : dtype.substr(dot + 1);
    static const std::unordered_map<std::string, int> table = {
        {"bool", 1}, {"b8", 1}, {"uint8", 1}, {"u8", 1}, {"int8", 1}, {"i8", 1},
        {"uint16", 2}, {"u16", 2}, {"int16", 2}, {"i16", 2}, {"uint32", 4}, {"u32", 4},
        {"int32", 4}, {"i32", 4}, {"uint64", 8}, {"u64", 8}, {"int64", 8}, {"i64", 8},
        {"float16", 2}, {"f16", 2}, {"half", 2}, {"bfloat16", 2}, {"bf16", 2},
        {"float32", 4}, {"f32", 4}, {"float", 4}, {"float64", 8}, {"f64", 8},
        {"double", 8}, {"complex32", 4}, {"c32", 4}, {"complex64", 8}, {"c64", 8},
        {"complex128", 16}, {"c128", 16}, {"float8_e4m3fn", 1}, {"f8e4m3fn", 1},
        {"float8_e5m2", 1}, {"f8e5m2", 1}, {"float8_e4m3fnuz", 1}, {"f8e4m3fnuz", 1},
        {"float8_e5m2fnuz", 1}, {"f8e5m2fnuz", 1}, {"float8_e8m0fnu", 1},
        {"f8e8m0fnu", 1}, {"float4_e2m1fn_x2", 1}, {"f4e2m1fn_x2", 1}, {"bits8", 1},
        {"bits16", 2}, {"bits32", 4}, {"bits64", 8}, {"bits1x8", 1}, {"bits2x4", 1},
        {"bits4x2", 1}, {"qint8", 1}, {"quint8", 1}, {"qint32", 4}, {"quint4x2", 1},
        {"quint2x4", 1}};
    auto it = table.find(std::string(name));
    return it == table.end() ? 0 : it->second;
}

bool is_int(sv s) {  // tensors._INT: -?\d+\Z
    if (!s.empty() && s[0] == '-') s = s.substr(1);
    if (s.empty()) return false;
    for (char c : s)
        if (!is_digit(c)) return false;
    return true;
}

struct Bytes {
    bool known = false;
    int64_t bytes = 0;
    bool has_expr = false;
    std::string expr, reason;  // reason "" = None
};

// tensors.storage_bytes (the differing-rank reason needs Python's list repr: Fallback).
Bytes storage_bytes(const std::vector<std::string>& sizes,
                    const std::vector<std::string>& strides, const std::string& dtype) {
    Bytes b;
    int isz = itemsize(dtype);
    if (sizes.size() != strides.size()) throw Fallback{};
    bool ints = true;
    for (auto& s : sizes) ints = ints && is_int(s);
    for (auto& t : strides) ints = ints && is_int(t);
    if (ints) {
        __int128 numel = 1;
        for (size_t k = 0; k < sizes.size(); ++k) {
            int64_t si = to_int(sizes[k]);
            if (si == 0) {
                if (isz) { b.known = true; b.bytes = 0; }
                else b.reason = "unknown dtype " + dtype;
                return b;
            }
            numel += (__int128)(si - 1) * to_int(strides[k]);
            if (numel > ((__int128)1 << 100) || numel < -((__int128)1 << 100)) throw Fallback{};
        }
        __int128 total = numel * (isz ? isz : 1);
        if (total > INT64_MAX || total < INT64_MIN) throw Fallback{};
        if (!isz) {
            b.has_expr = true;
            b.expr = std::to_string((int64_t)numel) + "*itemsize(" + dtype + ")";
            b.reason = "unknown dtype " + dtype;
            return b;
        }
        b.known = true;
        b.bytes = (int64_t)total;
        return b;
    }
    std::string e = "(1";
    for (size_t k = 0; k < sizes.size(); ++k) e += " + ((" + sizes[k] + ") - 1)*(" + strides[k] + ")";
    e += ")*";
    e += isz ? std::to_string(isz) : "itemsize(" + dtype + ")";
    b.has_expr = true;
    b.expr = e;
    b.reason = "symbolic size";
    return b;
}

// ---- Python values -------------------------------------------------------------------

struct Ref {  // an owned reference
    PyObject* p = nullptr;
    Ref() = default;
    explicit Ref(PyObject* o) : p(o) { if (!o) throw std::bad_alloc(); }
    Ref(const Ref&) = delete;
    Ref& operator=(const Ref&) = delete;
    ~Ref() { Py_XDECREF(p); }
    PyObject* give() { PyObject* o = p; p = nullptr; return o; }
};

struct PyFail {};  // a Python exception is set

PyObject* S(sv s) {
    PyObject* o = PyUnicode_FromStringAndSize(s.data(), (Py_ssize_t)s.size());
    if (!o) throw PyFail{};
    return o;
}
PyObject* Snone(bool has, sv s) {
    if (!has) { Py_INCREF(Py_None); return Py_None; }
    return S(s);
}
PyObject* I(int64_t v) {
    PyObject* o = PyLong_FromLongLong(v);
    if (!o) throw PyFail{};
    return o;
}
PyObject* None() { Py_INCREF(Py_None); return Py_None; }
PyObject* B(bool v) { PyObject* o = v ? Py_True : Py_False; Py_INCREF(o); return o; }

void dset(PyObject* d, const char* k, PyObject* v) {  // steals v
    int r = PyDict_SetItemString(d, k, v);
    Py_DECREF(v);
    if (r < 0) throw PyFail{};
}

PyObject* str_list(const std::vector<std::string>& v) {
    PyObject* l = PyList_New((Py_ssize_t)v.size());
    if (!l) throw PyFail{};
    for (size_t i = 0; i < v.size(); ++i) {
        PyObject* s = PyUnicode_FromStringAndSize(v[i].data(), (Py_ssize_t)v[i].size());
        if (!s) { Py_DECREF(l); throw PyFail{}; }
        PyList_SET_ITEM(l, (Py_ssize_t)i, s);
    }
    return l;
}

// ---- the parser ----------------------------------------------------------------------

struct Storage {
    std::string root;
    bool has_step = false;
    int64_t step = 0;
    int64_t line = 0;
    bool known = false;
    int64_t bytes = 0;
    bool has_expr = false;
    std::string size_expr;
    bool has_ann = false;  // dtype, shape, stride set
    std::string dtype, shape, stride, device;  // device "" = None
    bool has_node = false;
    std::string node;
    bool is_input = false;
    std::string layout = "empty_strided";
    std::unordered_set<std::string> holders;
    int64_t end = -1;
    PyObject* attrs = nullptr;  // dict, owned
    Storage() {
        attrs = PyDict_New();
        if (!attrs) throw PyFail{};
    }
    ~Storage() { Py_XDECREF(attrs); }
    bool release(const std::string& holder, int64_t e) {
        holders.erase(holder);
        if (e > end) end = e;
        return holders.empty();
    }
};
using StorageP = std::shared_ptr<Storage>;
using Elements = std::shared_ptr<std::vector<StorageP>>;

struct Name {
    std::string name;
    StorageP storage;  // null: a tuple value
    bool has_step = false;
    int64_t step = 0;
    int64_t line = 0;
    std::string relation;
    bool has_target = false;
    std::string target;
    bool has_ann = false;
    Ann ann;
    bool has_op = false;
    std::string op;
    Elements elements = std::make_shared<std::vector<StorageP>>();
};
using NameP = std::shared_ptr<Name>;

using Bound = OrderedDict<NameP>;  // the names bound so far, in Python's order

const std::unordered_set<std::string>& view_ops() {
    static const std::unordered_set<std::string> s = {
        "view", "_unsafe_view", "reshape", "_reshape_alias", "permute", "t", "transpose",
        "expand", "expand_as", "as_strided", "slice", "select", "squeeze", "unsqueeze",
        "alias", "view_as", "unfold", "diagonal", "split", "split_with_sizes", "unbind",
        "chunk", "narrow", "detach", "view_as_real", "view_as_complex", "real", "imag",
        "movedim", "swapaxes", "swapdims", "unflatten", "numpy_T", "T", "mT", "view_of",
        "lift_fresh", "_neg_view", "_conj", "conj", "tensor_split", "split_copy_view",
        "indices", "values"};
    return s;
}
bool multi_view(sv op) {
    return op == "split" || op == "split_with_sizes" || op == "unbind" || op == "chunk" ||
           op == "tensor_split";
}

sv strip_comment(sv code) {  // fx_graph._strip_comment
    size_t i = code.find('#');
    if (i == sv::npos) return code;
    size_t q = 0;
    for (size_t k = 0; k < i; ++k) q += code[k] == '"';
    if (q % 2) {
        size_t j = code.find('"', i);
        i = j != sv::npos ? code.find('#', j) : sv::npos;
        if (i == sv::npos) return code;
    }
    return rstrip(code.substr(0, i));
}

struct Decl {
    sv name, ann;
    size_t end;
};

// _DECL.finditer: (?P<name>[A-Za-z_]\w*): "(?P<ann>[^"]*)"
std::vector<Decl> decls(sv s) {
    std::vector<Decl> out;
    size_t i = 0, n = s.size();
    while (i < n) {
        if (!is_head(s[i])) { ++i; continue; }
        size_t j = i;
        while (j < n && is_word(s[j])) ++j;
        if (j + 3 <= n && s.substr(j, 3) == ": \"") {
            size_t q = s.find('"', j + 3);
            if (q != sv::npos) {
                out.push_back({s.substr(i, j - i), s.substr(j + 3, q - j - 3), q + 1});
                i = q + 1;
                continue;
            }
        }
        i = j;
    }
    return out;
}
bool decl_full(sv s) {
    auto d = decls(s);
    return !d.empty() && d[0].name.data() == s.data() && d[0].end == s.size();
}

// _RELEASE: (?:[A-Za-z_]\w* = )+None\Z
bool is_release(sv s) {
    size_t i = 0, n = s.size();
    while (i < n && is_head(s[i])) {
        size_t j = i;
        while (j < n && is_word(s[j])) ++j;
        if (j + 3 > n || s.substr(j, 3) != " = ") return false;
        i = j + 3;
        if (s.substr(i) == "None") return true;
    }
    return false;
}

std::vector<std::string> split_release(sv code) {  // code.split(" = ")[:-1], stripped
    std::vector<std::string> out;
    size_t i = 0;
    while (true) {
        size_t e = code.find(" = ", i);
        if (e == sv::npos) break;
        out.emplace_back(strip(code.substr(i, e - i)));
        i = e + 3;
    }
    return out;
}

sv first_arg(sv args, bool* has) {  // fx_graph._first_arg
    int depth = 0;
    for (size_t i = 0; i < args.size(); ++i) {
        char c = args[i];
        if (c == '(' || c == '[' || c == '{') ++depth;
        else if (c == ')' || c == ']' || c == '}') --depth;
        else if (c == ',' && depth == 0) { *has = true; return strip(args.substr(0, i)); }
    }
    sv s = strip(args);
    *has = !s.empty();
    return s;
}

struct Classes {
    PyObject *node, *alloc, *freed, *aliased;
};

// json.dumps(value, default=str, separators=(",", ":")) of an attrs value made here
// (dicts of str keys, lists, str, int, float, bool, None); anything else: Fallback.
void dump_py(std::string& out, PyObject* v) {
    if (v == Py_None) { out.append("null"); return; }
    if (v == Py_True) { out.append("true"); return; }
    if (v == Py_False) { out.append("false"); return; }
    if (PyUnicode_CheckExact(v)) {
        Py_ssize_t n = 0;
        const char* s = PyUnicode_AsUTF8AndSize(v, &n);
        if (!s) { PyErr_Clear(); throw Fallback{}; }  // a lone surrogate: Python decides
        put_json_string(out, sv(s, (size_t)n), true);
        return;
    }
    if (PyLong_CheckExact(v)) {
        int overflow = 0;
        long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
        if (overflow || (x == -1 && PyErr_Occurred())) { PyErr_Clear(); throw Fallback{}; }
        out.append(std::to_string(x));
        return;
    }
    if (PyFloat_CheckExact(v)) { put_py_float(out, PyFloat_AS_DOUBLE(v)); return; }
    if (PyDict_CheckExact(v)) {
        out.push_back('{');
        Py_ssize_t pos = 0;
        PyObject *k, *x;
        bool first = true;
        while (PyDict_Next(v, &pos, &k, &x)) {
            if (!PyUnicode_CheckExact(k)) throw Fallback{};
            if (!first) out.push_back(',');
            first = false;
            dump_py(out, k);
            out.push_back(':');
            dump_py(out, x);
        }
        out.push_back('}');
        return;
    }
    if (PyList_CheckExact(v) || PyTuple_CheckExact(v)) {
        out.push_back('[');
        Py_ssize_t n = PySequence_Fast_GET_SIZE(v);
        for (Py_ssize_t i = 0; i < n; ++i) {
            if (i) out.push_back(',');
            dump_py(out, PySequence_Fast_GET_ITEM(v, i));
        }
        out.push_back(']');
        return;
    }
    throw Fallback{};
}

// ---- rows of the events table (the writer's row functions, store/convert.py) ---------

enum class RowKind { node, alloc, freed, aliased, compile };

// One value checked before anything of its row is written (a row is written whole or not).
struct V {
    bool null = true;
    sv s;
    int64_t i = 0;
};

V v_str(PyObject* o) {
    V v;
    if (o == Py_None) return v;
    if (!PyUnicode_CheckExact(o)) throw Fallback{};
    Py_ssize_t n = 0;
    const char* p = PyUnicode_AsUTF8AndSize(o, &n);
    if (!p) { PyErr_Clear(); throw Fallback{}; }  // a lone surrogate: Python decides
    v.null = false;
    v.s = sv(p, (size_t)n);
    return v;
}

V v_int(PyObject* o) {
    V v;
    if (o == Py_None) return v;
    if (!PyLong_CheckExact(o)) throw Fallback{};
    int overflow = 0;
    long long x = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (overflow || (x == -1 && PyErr_Occurred())) { PyErr_Clear(); throw Fallback{}; }
    v.null = false;
    v.i = x;
    return v;
}

std::vector<sv> v_strs(PyObject* o) {  // a tuple of str (reads, writes)
    if (!PyTuple_CheckExact(o)) throw Fallback{};
    std::vector<sv> out;
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(o); ++k) {
        V v = v_str(PyTuple_GET_ITEM(o, k));
        if (v.null) throw Fallback{};
        out.push_back(v.s);
    }
    return out;
}

// `_dumps(attrs) if attrs else None`: false for an empty dict (NULL).
bool v_attrs(PyObject* o, std::string& out) {
    if (!PyDict_CheckExact(o)) throw Fallback{};
    if (PyDict_GET_SIZE(o) == 0) return false;
    dump_py(out, o);
    return true;
}

void put(StrCol& c, const V& v) { if (v.null) c.set_null(); else c.set(v.s); }
void put(I64Col& c, const V& v) { if (v.null) c.set_null(); else c.set(v.i); }
void put(StrListCol& c, const std::vector<sv>& v) {
    c.begin_list();
    for (sv x : v) c.item(x);
    c.end_list();
}

// A record's fields after its timeline (a[0]), in class order, as one row of timeline
// `tl`; fields left out take the class's defaults (attrs {}, reads/writes (),
// is_input False). Every value is checked first: Fallback leaves the batch as it was.
void write_row(EventBatch& b, int32_t tl, RowKind k, PyObject* const* a, size_t n) {
    auto at = [&](size_t i) { return i < n ? a[i] : Py_None; };
    std::string js;
    bool has_js = false;
    switch (k) {
    case RowKind::node: {  // step node node_class ir_type kernel device reads writes line attrs
        V step = v_int(at(1)), node = v_str(at(2)), ncls = v_str(at(3)), irt = v_str(at(4)),
          kern = v_str(at(5)), dev = v_str(at(6)), line = v_int(at(9));
        std::vector<sv> reads, writes;
        if (n > 7) reads = v_strs(a[7]);
        if (n > 8) writes = v_strs(a[8]);
        if (n > 10) has_js = v_attrs(a[10], js);
        b.kind.set("node_scheduled");
        put(b.step, step); put(b.node, node); put(b.node_class, ncls); put(b.ir_type, irt);
        put(b.kernel, kern); put(b.device, dev); put(b.reads, reads); put(b.writes, writes);
        put(b.line, line);
        break;
    }
    case RowKind::alloc: {  // step buffer bytes node layout dtype shape stride device
        V step = v_int(at(1)), buf = v_str(at(2)), bytes = v_int(at(3)),  // size_expr
          node = v_str(at(4)), layout = v_str(at(5)), dtype = v_str(at(6)),  // is_input
          shape = v_str(at(7)), stride = v_str(at(8)), dev = v_str(at(9)),  // allocation
          expr = v_str(at(10)), alloc = v_int(at(12)), off = v_int(at(13)),  // offset
          line = v_int(at(14));                                              // line attrs
        PyObject* inp = at(11);
        if (n > 11 && inp != Py_True && inp != Py_False) throw Fallback{};
        if (n > 15) has_js = v_attrs(a[15], js);
        b.kind.set("buffer_allocated");
        put(b.step, step); put(b.buffer, buf); put(b.bytes, bytes); put(b.node, node);
        put(b.layout, layout); put(b.dtype, dtype); put(b.shape, shape); put(b.stride, stride);
        put(b.device, dev); put(b.size_expr, expr); b.is_input.set(inp == Py_True);
        put(b.allocation, alloc); put(b.offset, off); put(b.line, line);
        break;
    }
    case RowKind::freed: {  // step buffer reason attrs
        V step = v_int(at(1)), buf = v_str(at(2)), reason = v_str(at(3));
        if (n > 4) has_js = v_attrs(a[4], js);
        b.kind.set("buffer_freed");
        put(b.step, step); put(b.buffer, buf); put(b.reason, reason);
        break;
    }
    case RowKind::aliased: {  // step buffer target relation node attrs
        V step = v_int(at(1)), buf = v_str(at(2)), tgt = v_str(at(3)), rel = v_str(at(4)),
          node = v_str(at(5));
        if (n > 6) has_js = v_attrs(a[6], js);
        b.kind.set("buffer_aliased");
        put(b.step, step); put(b.buffer, buf); put(b.target, tgt); put(b.relation, rel);
        put(b.node, node);
        break;
    }
    case RowKind::compile: {  // category name step node kernel ts_ns dur_ns line attrs
        V cat = v_str(at(1)), name = v_str(at(2)), step = v_int(at(3)), node = v_str(at(4)),
          kern = v_str(at(5)), ts = v_int(at(6)), dur = v_int(at(7)), line = v_int(at(8));
        if (n > 9) has_js = v_attrs(a[9], js);
        b.kind.set("compile_event");
        put(b.category, cat); put(b.name, name); put(b.step, step); put(b.node, node);
        put(b.kernel, kern); put(b.ts_ns, ts); put(b.dur_ns, dur); put(b.line, line);
        break;
    }
    }
    if (has_js) b.attrs.set(js);
    b.tl.set(tl);
    b.end_row();
}

// The record classes' fields after `timeline`, in order (store/records.py).
const std::vector<const char*>& field_names(RowKind k) {
    static const std::vector<const char*> node{
        "timeline", "step", "node", "node_class", "ir_type", "kernel", "device", "reads",
        "writes", "line", "attrs"};
    static const std::vector<const char*> alloc{
        "timeline", "step", "buffer", "bytes", "node", "layout", "dtype", "shape", "stride",
        "device", "size_expr", "is_input", "allocation", "offset", "line", "attrs"};
    static const std::vector<const char*> freed{"timeline", "step", "buffer", "reason",
                                                "attrs"};
    static const std::vector<const char*> aliased{"timeline", "step", "buffer", "target",
                                                  "relation", "node", "attrs"};
    static const std::vector<const char*> compile{
        "timeline", "category", "name", "step", "node", "kernel", "ts_ns", "dur_ns", "line",
        "attrs"};
    switch (k) {
    case RowKind::node: return node;
    case RowKind::alloc: return alloc;
    case RowKind::freed: return freed;
    case RowKind::aliased: return aliased;
    default: return compile;
    }
}

// EventSink(classes): event records (and the compiled FX reader's events) as rows of one
// EventBatch, over many timelines (`_tl`), handed out by take() as exported columns.
struct PySink {
    PyObject_HEAD
    EventBatch* batch;
    std::unordered_map<std::string, int32_t>* index;  // timeline key -> _tl
    PyObject* timelines;                               // list of keys, in _tl order
    PyObject* classes[5];                              // NodeScheduled .. CompileEvent
    std::vector<PyObject*>* names[5];                  // interned field names per class
};

int32_t sink_timeline(PySink* self, PyObject* key) {
    V k = v_str(key);
    if (k.null) throw Fallback{};
    auto it = self->index->find(std::string(k.s));
    if (it != self->index->end()) return it->second;
    auto id = (int32_t)self->index->size();
    if (PyList_Append(self->timelines, key) < 0) throw PyFail{};
    self->index->emplace(std::string(k.s), id);
    return id;
}

PyTypeObject SinkType = {PyVarObject_HEAD_INIT(nullptr, 0)};

const RowKind kKinds[5] = {RowKind::node, RowKind::alloc, RowKind::freed, RowKind::aliased,
                           RowKind::compile};

int sink_init(PySink* self, PyObject* args, PyObject*) {
    PyObject* classes;
    if (!PyArg_ParseTuple(args, "O!", &PyTuple_Type, &classes)) return -1;
    if (PyTuple_GET_SIZE(classes) != 5) {
        PyErr_SetString(PyExc_TypeError, "EventSink: expected (NodeScheduled, BufferAllocated, "
                        "BufferFreed, BufferAliased, CompileEvent)");
        return -1;
    }
    if (!self->batch) self->batch = new EventBatch();
    if (!self->index) self->index = new std::unordered_map<std::string, int32_t>();
    self->batch->clear();
    self->index->clear();
    Py_XSETREF(self->timelines, PyList_New(0));
    if (!self->timelines) return -1;
    for (int c = 0; c < 5; ++c) {
        PyObject* cls = PyTuple_GET_ITEM(classes, c);
        Py_INCREF(cls);
        Py_XSETREF(self->classes[c], cls);
        if (!self->names[c]) self->names[c] = new std::vector<PyObject*>();
        for (PyObject* o : *self->names[c]) Py_DECREF(o);
        self->names[c]->clear();
        for (const char* f : field_names(kKinds[c])) {
            PyObject* name = PyUnicode_InternFromString(f);
            if (!name) return -1;
            self->names[c]->push_back(name);
        }
    }
    return 0;
}

void sink_dealloc(PySink* self) {
    delete self->batch;
    delete self->index;
    Py_XDECREF(self->timelines);
    for (int c = 0; c < 5; ++c) {
        Py_XDECREF(self->classes[c]);
        if (self->names[c])
            for (PyObject* o : *self->names[c]) Py_DECREF(o);
        delete self->names[c];
    }
    Py_TYPE(self)->tp_free((PyObject*)self);
}

// add(record) -> bool: the record as a row (True), or False where it is no event record
// the sink takes or a value does not fit (nothing written: the caller yields the record).
PyObject* sink_add(PySink* self, PyObject* rec) {
    if (!self->batch) { PyErr_SetString(PyExc_RuntimeError, "EventSink not initialised"); return nullptr; }
    PyObject* cls = (PyObject*)Py_TYPE(rec);
    int c = 0;
    while (c < 5 && self->classes[c] != cls) ++c;
    if (c == 5) Py_RETURN_FALSE;
    const auto& names = *self->names[c];
    PyObject* a[16] = {};
    size_t n = names.size();
    for (size_t k = 0; k < n; ++k) {
        a[k] = PyObject_GetAttr(rec, names[k]);
        if (!a[k]) {
            for (size_t j = 0; j < k; ++j) Py_DECREF(a[j]);
            return nullptr;
        }
    }
    PyObject* result = Py_True;
    try {
        int32_t tl = sink_timeline(self, a[0]);
        write_row(*self->batch, tl, kKinds[c], a, n);
    } catch (const Fallback&) {
        result = Py_False;
    } catch (const PyFail&) {
        result = nullptr;
    } catch (const std::bad_alloc&) {
        PyErr_NoMemory();
        result = nullptr;
    }
    for (size_t k = 0; k < n; ++k) Py_DECREF(a[k]);
    Py_XINCREF(result);
    return result;
}

PyObject* sink_rows(PySink* self, PyObject*) {
    return PyLong_FromSize_t(self->batch ? self->batch->rows : 0);
}

PyObject* sink_text_bytes(PySink* self, PyObject*) {
    return PyLong_FromSize_t(self->batch ? self->batch->text_bytes() : 0);
}

// take() -> None | (timelines, {"n", "cols"}): the rows so far, and the sink emptied.
PyObject* sink_take(PySink* self, PyObject*) {
    if (!self->batch || self->batch->rows == 0) Py_RETURN_NONE;
    PyObject* cols = self->batch->export_py();
    if (!cols) return nullptr;
    PyObject* tls = PyList_AsTuple(self->timelines);
    if (!tls) { Py_DECREF(cols); return nullptr; }
    PyObject* fresh = PyList_New(0);
    if (!fresh) { Py_DECREF(cols); Py_DECREF(tls); return nullptr; }
    Py_SETREF(self->timelines, fresh);
    self->batch->clear();
    self->index->clear();
    return Py_BuildValue("(NN)", tls, cols);
}

PyMethodDef sink_methods[] = {
    {"add", (PyCFunction)sink_add, METH_O,
     "add(record) -> bool: the event record as a row, or False (nothing written)"},
    {"rows", (PyCFunction)sink_rows, METH_NOARGS, "rows() -> int: rows not yet taken"},
    {"text_bytes", (PyCFunction)sink_text_bytes, METH_NOARGS,
     "text_bytes() -> int: bytes held by the string columns"},
    {"take", (PyCFunction)sink_take, METH_NOARGS,
     "take() -> None | (timelines, exported columns): the rows so far; the sink emptied"},
    {nullptr, nullptr, 0, nullptr}};

struct Fx {
    Classes cls;
    PyObject* key;  // str
    PyObject* out;  // list of records
    // Sink mode: each record is kept as its arguments and, once the whole graph is read,
    // written as a row of the sink (no record object); a graph handed back to the Python
    // parser leaves the sink as it was.
    struct Pending {
        RowKind kind;
        size_t n;
        PyObject* a[16];
    };
    PySink* sink = nullptr;
    std::vector<Pending> pending;
    ~Fx() {
        for (auto& p : pending)
            for (size_t k = 0; k < p.n; ++k) Py_DECREF(p.a[k]);
    }
    int64_t step = 0;
    bool has_location = false;
    std::string location;
    Bound bound;
    bool returned_set = false;
    std::vector<std::string> returned;
    bool saw_forward = false;
    int open_kind = 0;  // 0 none, 1 signature, 2 return
    std::vector<std::string> open_parts;
    int64_t open_start = 0;
    bool has_device = false;
    std::string device;
    int64_t n_unknown = 0;
    PyObject* unknown;  // list of {"line", "text"}
    PyObject* nodes;    // summary outputs
    PyObject* input_meta;
    int64_t never_released = 0;

    void emit(PyObject* cls_, std::initializer_list<PyObject*> args) {  // steals args
        PyObject* a[16] = {};
        size_t n = 0;
        for (PyObject* x : args) a[n++] = x;
        if (sink) {
            Pending p;
            p.n = n;
            std::memcpy(p.a, a, sizeof a);
            p.kind = cls_ == cls.node ? RowKind::node : cls_ == cls.alloc ? RowKind::alloc
                   : cls_ == cls.freed ? RowKind::freed : RowKind::aliased;
            pending.push_back(p);  // owns the arguments now
            return;
        }
        PyObject* r = PyObject_Vectorcall(cls_, a, n, nullptr);
        for (size_t k = 0; k < n; ++k) Py_DECREF(a[k]);
        if (!r) throw PyFail{};
        int e = PyList_Append(out, r);
        Py_DECREF(r);
        if (e < 0) throw PyFail{};
    }
    PyObject* K() { Py_INCREF(key); return key; }

    void keep_unknown(int64_t number, PyObject* text) {
        ++n_unknown;
        if (PyList_GET_SIZE(unknown) < 200) {
            Ref d(PyDict_New());
            dset(d.p, "line", I(number));
            Py_INCREF(text);
            dset(d.p, "text", text);
            if (PyList_Append(unknown, d.p) < 0) throw PyFail{};
        }
    }

    void line(int64_t number, PyObject* text_obj, sv text) {
        sv s = strip(text);
        if (open_kind) { continue_open(s, number); return; }
        if (s.empty()) { has_location = false; return; }
        if (returned_set) { keep_unknown(number, text_obj); return; }
        if (starts(s, "#")) {
            size_t i = 1;
            while (i < s.size() && is_space(s[i])) ++i;
            if (starts(s.substr(i), "File: ")) {
                has_location = true;
                location = std::string(strip(s.substr(i + 6)));
            } else if (starts(s, "# No stacktrace found")) {
                has_location = false;
            } else {
                keep_unknown(number, text_obj);
            }
            return;
        }
        if (!saw_forward) {
            if (ends(s, "(torch.nn.Module):") &&
                (std::string(" ") + std::string(s)).find(" class ") != std::string::npos)
                return;
            if (s == "def forward(") {
                open_kind = 1;
                open_parts.clear();
                open_start = number;
                return;
            }
            size_t p = s.find("def forward(self");
            if (p != sv::npos) {
                size_t q = p + 16;
                if (starts(s.substr(q), ", ")) q += 2;
                if (ends(s, "):") && s.size() - 2 >= q) {
                    saw_forward = true;
                    for (auto& d : decls(s.substr(q, s.size() - 2 - q))) input(d.name, d.ann, number);
                    return;
                }
                // a "def forward(self" without a match further on: the regex fails too
            }
        }
        if (starts(s, "return")) {
            sv rest = strip(s.substr(6));
            if (balance(rest) > 0) {
                open_kind = 2;
                open_parts.assign(1, std::string(rest));
                open_start = number;
                return;
            }
            do_return(rest);
            return;
        }
        if (s.find(" = ") == sv::npos) {
            sv code = strip_comment(s);
            auto ds = decls(code);
            if (!ds.empty() && (ends(code, ";") || decl_full(code))) {
                for (auto& d : ds) input(d.name, d.ann, number);
                return;
            }
        }
        if (s.find("fx_pytree.tree_flatten_spec") != sv::npos) return;
        size_t semi = s.find(';');
        sv code = semi == sv::npos ? s : s.substr(0, semi);
        sv release = semi == sv::npos ? sv() : strip(s.substr(semi + 1));
        sv cs = strip(code);
        if (is_release(cs)) {
            for (auto& n : split_release(cs)) do_release(n, step - 1);
            return;
        }
        // _NODE: name(: "ann")? = rhs
        size_t i = 0, n = cs.size();
        if (n && is_head(cs[0])) {
            while (i < n && is_word(cs[i])) ++i;
            sv name = cs.substr(0, i);
            bool has_ann = false;
            sv ann;
            size_t j = i;
            if (starts(cs.substr(j), ": \"")) {
                size_t q = cs.find('"', j + 3);
                if (q != sv::npos && starts(cs.substr(q + 1), " = ")) {
                    has_ann = true;
                    ann = cs.substr(j + 3, q - j - 3);
                    j = q + 1;
                }
            }
            if (starts(cs.substr(j), " = ")) {
                sv rhs = cs.substr(j + 3);
                if (!has_ann && starts(rhs, "self.")) {
                    input(name, sv(), number, true);
                    return;
                }
                node(std::string(name), has_ann, ann, strip(rhs), number);
                if (!release.empty()) {
                    if (!is_release(release)) keep_unknown(number, text_obj);
                    else
                        for (auto& r : split_release(release)) do_release(r, step - 1);
                }
                return;
            }
        }
        keep_unknown(number, text_obj);
    }

    void continue_open(sv s, int64_t number) {
        sv code = strip_comment(s);
        if (open_kind == 1) {
            if (starts(code, ")")) {
                open_kind = 0;
                saw_forward = true;
                return;
            }
            for (auto& d : decls(code)) input(d.name, d.ann, number);
            return;
        }
        open_parts.emplace_back(code);
        std::string text;
        for (size_t k = 0; k < open_parts.size(); ++k) {
            if (k) text += ' ';
            text += open_parts[k];
        }
        if (balance(text) <= 0) {
            open_kind = 0;
            do_return(text);
        }
    }

    void input(sv name_, sv ann, int64_t number, bool empty_ann = false) {
        std::string name(name_);
        Ann a{};
        bool ok = !empty_ann && parse_annotation(ann, &a);
        auto st = std::make_shared<Storage>();
        st->root = name;
        st->line = number;
        st->is_input = true;
        st->holders.insert(name);
        if (ok) {
            Bytes b = storage_bytes(a.shape, a.stride, a.dtype);
            st->known = b.known;
            st->bytes = b.bytes;
            st->has_expr = b.has_expr;
            st->size_expr = b.expr;
            st->has_ann = true;
            st->dtype = a.dtype;
            st->shape = fmt(a.shape);
            st->stride = fmt(a.stride);
            st->device = a.device;
            if (!has_device || device.empty()) {
                // self.device = self.device or a["device"]
                if (!(has_device && !device.empty())) {
                    has_device = !a.device.empty();
                    device = a.device;
                }
            }
            Ref k(S(name));
            Ref v(PyTuple_New(3));
            PyTuple_SET_ITEM(v.p, 0, str_list(a.shape));
            PyTuple_SET_ITEM(v.p, 1, str_list(a.stride));
            PyTuple_SET_ITEM(v.p, 2, S(a.dtype));
            if (PyDict_SetItem(input_meta, k.p, v.p) < 0) throw PyFail{};
        } else {
            dset(st->attrs, "annotation", S(empty_ann ? sv() : ann));
        }
        auto nm = std::make_shared<Name>();
        nm->name = name;
        nm->storage = st;
        nm->line = number;
        nm->relation = "input";
        nm->has_ann = ok;
        nm->ann = a;
        bound.set(nm);
    }

    void node(const std::string& name, bool has_ann, sv ann, sv rhs, int64_t number) {
        int64_t st_step = step;
        Ann a{};
        bool ok = has_ann && !ann.empty() && parse_annotation(ann, &a);
        // _CALL: target(args)
        bool m = false, g = false;
        sv target, args, gbase;
        int64_t idx = 0;
        size_t n = rhs.size();
        if (n && is_head(rhs[0])) {
            size_t i = 0;
            while (i < n && (is_word(rhs[i]) || rhs[i] == '.')) ++i;
            if (i < n && rhs[i] == '(' && n >= i + 2 && rhs[n - 1] == ')') {
                m = true;
                target = rhs.substr(0, i);
                args = rhs.substr(i + 1, n - i - 2);
            }
            if (!m) {  // _GETITEM: base[-?\d+]
                size_t j = 0;
                while (j < n && is_word(rhs[j])) ++j;
                if (j < n && rhs[j] == '[' && rhs[n - 1] == ']') {
                    sv num = rhs.substr(j + 1, n - j - 2);
                    if (is_int(num)) {
                        g = true;
                        gbase = rhs.substr(0, j);
                        idx = to_int(num);
                    }
                }
            }
        }
        std::string tgt = m ? std::string(target) : (g ? "getitem" : "");
        bool has_target = m || g;
        if (m && target == "operator.getitem") {
            std::vector<sv> parts;
            size_t i = 0;
            while (true) {
                size_t c = args.find(',', i);
                parts.push_back(strip(args.substr(i, c == sv::npos ? sv::npos : c - i)));
                if (c == sv::npos) break;
                i = c + 1;
            }
            g = false;
            if (parts.size() == 2) {
                sv p1 = parts[1];
                size_t k = 0;
                while (k < p1.size() && p1[k] == '-') ++k;
                sv digits = p1.substr(k);
                bool isdig = !digits.empty();
                for (char c : digits) isdig = isdig && is_digit(c);
                if (isdig) {
                    if (k > 1) throw Fallback{};  // int("--1") raises: Python's error
                    size_t w = 0;
                    while (w < parts[0].size() && is_word(parts[0][w])) ++w;
                    idx = to_int(p1);
                    if (w > 0) { g = true; gbase = parts[0].substr(0, w); }
                }
            }
        }
        std::string op = has_target ? op_name(tgt) : "constant";
        Ref attrs(PyDict_New());
        if (has_ann && !ann.empty()) dset(attrs.p, "annotation", S(ann));
        if (has_location && !location.empty()) dset(attrs.p, "source", S(location));
        bool has_first = false;
        sv first = m ? first_arg(args, &has_first) : sv();
        // reads: identifiers of the args (or rhs) that are bound, first occurrence order
        std::vector<sv> reads;
        for (sv id : identifiers(m ? args : rhs)) {
            if (!bound.has(id)) continue;
            bool dup = false;
            for (sv r : reads) dup = dup || r == id;
            if (!dup) reads.push_back(id);
        }
        Ref rt(PyTuple_New((Py_ssize_t)reads.size()));
        for (size_t k = 0; k < reads.size(); ++k) PyTuple_SET_ITEM(rt.p, (Py_ssize_t)k, S(reads[k]));
        Ref wt(PyTuple_New(1));
        PyTuple_SET_ITEM(wt.p, 0, S(name));
        bool dev_has = ok && !a.device.empty() ? true : has_device;
        std::string dev = ok && !a.device.empty() ? a.device : device;
        emit(cls.node, {K(), I(st_step), S(name), S("fx_node"), S(op),
                        Snone(has_target, tgt), Snone(dev_has, dev), rt.give(), wt.give(),
                        I(number), attrs.give()});
        ++step;
        if (ok && !has_device) {
            has_device = !a.device.empty();
            device = a.device;
        }
        if (g && bound.has(gbase)) {
            NameP base = bound.get(std::string(gbase));
            if (!base->storage) {
                auto st = make_storage(name, base->has_step, base->step, number, ok, a, base->name);
                st->holders.insert(base->name);
                dset(st->attrs, "output_index", I(idx));
                base->elements->push_back(st);
                auto nm = std::make_shared<Name>();
                nm->name = name;
                nm->storage = st;
                nm->has_step = base->has_step;
                nm->step = base->step;
                nm->line = number;
                nm->relation = "alloc";
                nm->has_ann = ok;
                nm->ann = a;
                nm->has_op = base->has_op;
                nm->op = base->op;
                bind(nm);
                if (ok && base->has_op && !base->op.empty())
                    add_output(base->op, true, idx, a);
                return;
            }
            view(name, base, st_step, number, ok, a, false, "");
            return;
        }
        if (view_ops().count(op) || (ends(op, "_") && !ends(op, "__"))) {
            NameP src = has_first ? bound.get(std::string(first)) : bound.get("");
            if (src) {
                if (multi_view(op) && !ok) {
                    auto nm = std::make_shared<Name>();
                    nm->name = name;
                    nm->storage = src->storage;
                    nm->has_step = true;
                    nm->step = st_step;
                    nm->line = number;
                    nm->relation = "view";
                    nm->has_target = true;
                    nm->target = src->name;
                    nm->has_op = true;
                    nm->op = op;
                    bind(nm);
                    if (src->storage) src->storage->holders.insert(name);
                    Ref at(PyDict_New());
                    dset(at.p, "op", S(op));
                    emit(cls.aliased, {K(), I(st_step), S(name), S(src->name), S("alias"), None(),
                                       at.give()});
                    return;
                }
                view(name, src, st_step, number, ok, a, true, op);
                return;
            }
        }
        if (!ok) {
            if (!has_ann && m) {
                auto nm = std::make_shared<Name>();
                nm->name = name;
                nm->has_step = true;
                nm->step = st_step;
                nm->line = number;
                nm->relation = "tuple";
                nm->has_op = true;
                nm->op = op;
                bind(nm);
            }
            return;
        }
        auto st = make_storage(name, true, st_step, number, true, a, name);
        add_output(op, false, 0, a);
        auto nm = std::make_shared<Name>();
        nm->name = name;
        nm->storage = st;
        nm->has_step = true;
        nm->step = st_step;
        nm->line = number;
        nm->relation = "alloc";
        nm->has_ann = true;
        nm->ann = a;
        nm->has_op = true;
        nm->op = op;
        bind(nm);
    }

    void add_output(const std::string& op, bool has_idx, int64_t idx, const Ann& a) {
        Ref t(PyTuple_New(5));
        PyTuple_SET_ITEM(t.p, 0, S(op));
        PyTuple_SET_ITEM(t.p, 1, has_idx ? I(idx) : None());
        PyTuple_SET_ITEM(t.p, 2, S(a.dtype));
        PyTuple_SET_ITEM(t.p, 3, S(fmt(a.shape)));
        PyTuple_SET_ITEM(t.p, 4, S(fmt(a.stride)));
        if (PyList_Append(nodes, t.p) < 0) throw PyFail{};
    }

    StorageP make_storage(const std::string& name, bool has_step, int64_t st_step,
                          int64_t number, bool ok, const Ann& a, const std::string& node_) {
        auto st = std::make_shared<Storage>();
        st->root = name;
        st->has_step = has_step;
        st->step = st_step;
        st->line = number;
        st->has_node = true;
        st->node = node_;
        st->layout = "fx_output";
        if (ok) {
            Bytes b = storage_bytes(a.shape, a.stride, a.dtype);
            st->known = b.known;
            st->bytes = b.bytes;
            st->has_expr = b.has_expr;
            st->size_expr = b.expr;
            if (!b.reason.empty()) dset(st->attrs, "size_reason", S(b.reason));
            st->has_ann = true;
            st->dtype = a.dtype;
            st->shape = fmt(a.shape);
            st->stride = fmt(a.stride);
            st->device = a.device;
        } else {
            dset(st->attrs, "size_reason", S("no tensor annotation"));
        }
        return st;
    }

    void view(const std::string& name, const NameP& src, int64_t st_step, int64_t number,
              bool ok, const Ann& a, bool has_op, const std::string& op) {
        auto nm = std::make_shared<Name>();
        nm->name = name;
        nm->storage = src->storage;
        nm->has_step = true;
        nm->step = st_step;
        nm->line = number;
        nm->relation = "view";
        nm->has_target = true;
        nm->target = src->name;
        nm->has_ann = ok;
        nm->ann = a;
        nm->has_op = has_op;
        nm->op = op;
        if (!src->storage) {
            nm->relation = "tuple";
            nm->elements = src->elements;
        }
        bind(nm);
        Ref at(PyDict_New());
        if (has_op && !op.empty()) dset(at.p, "op", S(op));
        emit(cls.aliased, {K(), I(st_step), S(name), S(src->name), S("alias"), None(), at.give()});
    }

    void bind(const NameP& nm) {
        if (bound.has(nm->name)) do_release(nm->name, step - 1);
        bound.set(nm);
        if (nm->storage) nm->storage->holders.insert(nm->name);
    }

    void do_release(const std::string& name, int64_t end) {
        NameP nm = bound.pop(name);
        if (!nm) return;
        if (!nm->storage) {
            auto elems = *nm->elements;  // a copy: emitting never changes it, but be safe
            for (auto& st : elems)
                if (st->holders.count(name) && st->release(name, end)) emit_storage(*st);
            return;
        }
        StorageP st = nm->storage;
        bool free_ = st->release(name, end);
        if (nm->relation != "input" && name != st->root) {
            const Ann& a = nm->ann;
            bool ha = nm->has_ann;
            Ref at(PyDict_New());
            dset(at.p, "storage", S(st->root));
            dset(at.p, "target", Snone(nm->has_target, nm->target));
            dset(at.p, "op", Snone(nm->has_op, nm->op));
            dset(at.p, "storage_is_input", B(st->is_input));
            emit(cls.alloc, {K(), nm->has_step ? I(nm->step) : None(), S(name), I(0), S(name),
                             S("view"), Snone(ha, a.dtype), ha ? S(fmt(a.shape)) : None(),
                             ha ? S(fmt(a.stride)) : None(), Snone(ha && !a.device.empty(), a.device),
                             None(), B(false), None(), None(), I(nm->line), at.give()});
            int64_t s0 = nm->has_step ? nm->step : 0;
            emit(cls.freed, {K(), I(end > s0 ? end : s0), S(name), S("last use")});
        }
        if (free_) emit_storage(*st);
    }

    void emit_storage(Storage& st) {
        PyObject* bytes = st.known ? I(st.bytes) : None();
        PyObject* expr = st.has_expr ? S(st.size_expr) : None();
        bool ha = st.has_ann;
        if (st.is_input) {
            Py_INCREF(st.attrs);
            emit(cls.alloc, {K(), None(), S(st.root), bytes, None(), S("input"),
                             Snone(ha, st.dtype), Snone(ha, st.shape), Snone(ha, st.stride),
                             Snone(ha && !st.device.empty(), st.device), expr, B(true), None(),
                             None(), I(st.line), st.attrs});
            return;
        }
        int64_t s0 = st.has_step ? st.step : 0;
        PyObject* copy = PyDict_Copy(st.attrs);
        if (!copy) { Py_DECREF(bytes); Py_DECREF(expr); throw PyFail{}; }
        emit(cls.alloc, {K(), I(s0), S(st.root), bytes, Snone(st.has_node, st.node),
                         S(st.layout), Snone(ha, st.dtype), Snone(ha, st.shape),
                         Snone(ha, st.stride), Snone(ha && !st.device.empty(), st.device), expr,
                         B(false), None(), None(), I(st.line), copy});
        emit(cls.freed, {K(), I(st.end > s0 ? st.end : s0), S(st.root), S("last use")});
    }

    void do_return(sv text) {
        returned_set = true;
        returned.clear();
        for (sv id : identifiers(text))
            if (bound.has(id)) returned.emplace_back(id);
    }

    void finish() {
        if (open_kind || !saw_forward || !returned_set) throw Fallback{};  // Python's errors
        int64_t last = step - 1 > 0 ? step - 1 : 0;
        std::unordered_set<std::string> ret(returned.begin(), returned.end());
        for (auto& name : bound.keys()) {
            NameP nm = bound.get(name);
            if (!ret.count(name) && nm->relation != "input") ++never_released;
            do_release(name, last);
        }
    }
};

// fx_graph(texts, numbers, key, classes, sink=None) -> None | (records, n_steps, device,
//   outputs, n_unknown, unknown, never_released, nodes, input_meta); with a sink, the
//   graph's events are written there as rows (once the graph is read) and records is [].
PyObject* fx_graph(PyObject*, PyObject* args) {
    PyObject *texts, *numbers, *key;
    Classes cls;
    PyObject* sink = Py_None;
    if (!PyArg_ParseTuple(args, "O!O!U(OOOO)|O", &PyList_Type, &texts, &PyList_Type, &numbers,
                          &key, &cls.node, &cls.alloc, &cls.freed, &cls.aliased, &sink))
        return nullptr;
    if (sink != Py_None && !PyObject_TypeCheck(sink, &SinkType)) {
        PyErr_SetString(PyExc_TypeError, "fx_graph: sink must be an EventSink or None");
        return nullptr;
    }
    Py_ssize_t n = PyList_GET_SIZE(texts);
    if (PyList_GET_SIZE(numbers) != n) {
        PyErr_SetString(PyExc_ValueError, "fx_graph: texts and numbers differ in length");
        return nullptr;
    }
    Fx fx;
    fx.cls = cls;
    fx.key = key;
    if (sink != Py_None) fx.sink = (PySink*)sink;
    PyObject *out = PyList_New(0), *unknown = PyList_New(0), *nodes = PyList_New(0),
             *meta = PyDict_New();
    fx.out = out;
    fx.unknown = unknown;
    fx.nodes = nodes;
    fx.input_meta = meta;
    auto drop = [&] {
        Py_XDECREF(out);
        Py_XDECREF(unknown);
        Py_XDECREF(nodes);
        Py_XDECREF(meta);
    };
    if (!out || !unknown || !nodes || !meta) { drop(); return nullptr; }
    try {
        for (Py_ssize_t i = 0; i < n; ++i) {
            PyObject* t = PyList_GET_ITEM(texts, i);
            if (!PyUnicode_Check(t) || !PyUnicode_IS_ASCII(t)) throw Fallback{};
            int64_t number = PyLong_AsLongLong(PyList_GET_ITEM(numbers, i));
            if (number == -1 && PyErr_Occurred()) throw PyFail{};
            sv text(reinterpret_cast<const char*>(PyUnicode_1BYTE_DATA(t)),
                    (size_t)PyUnicode_GET_LENGTH(t));
            fx.line(number, t, text);
        }
        fx.finish();
        PyObject* outputs = PyList_New((Py_ssize_t)fx.returned.size());
        if (!outputs) throw PyFail{};
        for (size_t k = 0; k < fx.returned.size(); ++k)
            PyList_SET_ITEM(outputs, (Py_ssize_t)k, S(fx.returned[k]));
        if (fx.sink) {  // the graph is read: its rows go to the sink
            try {
                int32_t tl = sink_timeline(fx.sink, key);
                for (auto& p : fx.pending) write_row(*fx.sink->batch, tl, p.kind, p.a, p.n);
            } catch (const Fallback&) {  // values made here always fit: never in practice
                Py_DECREF(outputs);
                PyErr_SetString(PyExc_RuntimeError, "fx_graph: a row did not fit the sink");
                throw PyFail{};
            }
        }
        PyObject* r = Py_BuildValue("(OLNNLOLOO)", out, (long long)fx.step,
                                    fx.has_device ? S(fx.device) : None(), outputs,
                                    (long long)fx.n_unknown, unknown,
                                    (long long)fx.never_released, nodes, meta);
        drop();
        return r;
    } catch (const Fallback&) {
        drop();
        Py_RETURN_NONE;
    } catch (const PyFail&) {
        drop();
        return nullptr;
    } catch (const std::bad_alloc&) {
        drop();
        if (!PyErr_Occurred()) PyErr_NoMemory();
        return nullptr;
    }
}

PyMethodDef methods[] = {
    {"fx_graph", (PyCFunction)fx_graph, METH_VARARGS,
     "fx_graph(texts, numbers, key, classes, sink=None): one FX graph's records "
     "(fx_graph.py's twin; with an EventSink, its events go there as rows and the records "
     "list is empty), or None where the Python parser must read it"},
    {nullptr, nullptr, 0, nullptr}};

}  // namespace

bool is_event_sink(PyObject* o) { return PyObject_TypeCheck(o, &SinkType); }

int sink_write(PyObject* sink, PyObject* key, const std::vector<SinkRow>& rows) {
    static const RowKind kinds[4] = {RowKind::node, RowKind::alloc, RowKind::freed,
                                     RowKind::aliased};
    auto* s = (PySink*)sink;
    if (!s->batch) {
        PyErr_SetString(PyExc_RuntimeError, "EventSink not initialised");
        return -1;
    }
    try {
        int32_t tl = sink_timeline(s, key);
        for (auto& r : rows) write_row(*s->batch, tl, kinds[(int)r.kind], r.a, r.n);
    } catch (const Fallback&) {
        PyErr_SetString(PyExc_RuntimeError, "sink_write: a row did not fit the sink");
        return -1;
    } catch (const PyFail&) {
        return -1;
    } catch (const std::bad_alloc&) {
        PyErr_NoMemory();
        return -1;
    }
    return 0;
}

int add_torch_fx(PyObject* module) {
    if (PyModule_AddFunctions(module, methods) < 0) return -1;
    return add_type(module, SinkType, "EventSink",
                    "EventSink(classes): event records as rows of exported columns "
                    "(torch logs and TORCH_TRACE logs, where the writer takes columns)",
                    sizeof(PySink), (initproc)sink_init, (destructor)sink_dealloc,
                    sink_methods);
}

}  // namespace tlv
