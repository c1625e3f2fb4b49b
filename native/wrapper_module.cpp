// Inductor output code (ingest/inductor_wrapper.py): one wrapper module read whole.
//
// The compiled twin of WrapperParser's reading of a module after its `# AOT ID` line
// (`_feed` .. `finish`), which stays the specification: tests/test_native_wrapper.py
// runs both on every wrapper module of the fixtures and on mutated modules and requires
// the same records, note and errors. It takes the module's kept lines and returns its
// records (made by calling the record classes, or, given an EventSink, written there as
// rows) and what the note needs. It handles ASCII modules that end well; anything else
// (a non-ASCII line, a number beyond int64, a module that fails, a Python value of a
// shape it does not expect) returns None and the Python parser reads the module, so
// errors are always the Python parser's own.
#include <Python.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "common.hpp"
#include "event_sink.hpp"
#include "ordered_dict.hpp"
#include "pytext.hpp"

namespace tlv {
namespace {

using namespace pytext;

using sv = std::string_view;
using Str = std::optional<std::string>;
using Dims = std::vector<std::string>;

struct Fallback {};  // the Python parser must read this module
struct PyFail {};    // a Python exception is set

bool has(sv s, sv p) { return s.find(p) != sv::npos; }
bool all_digits(sv s) {  // str.isdigit() on ASCII
    if (s.empty()) return false;
    for (char c : s)
        if (!is_digit(c)) return false;
    return true;
}
bool is_name(sv s) {  // _NAME: [A-Za-z_]\w*\Z
    if (s.empty() || !is_head(s[0])) return false;
    for (char c : s)
        if (!is_word(c)) return false;
    return true;
}
sv head_of(sv s) {  // s.split("(")[0]
    size_t p = s.find('(');
    return p == sv::npos ? s : s.substr(0, p);
}

// ---- pytext ---------------------------------------------------------------------------

std::vector<sv> split_args(sv t) {  // pytext.split_args
    std::vector<sv> out;
    pytext::split_args(t, &out);
    return out;
}

Dims dims(sv text) {  // pytext.dims
    sv t = strip(text);
    if (!t.empty() && (t[0] == '(' || t[0] == '[') && (t.back() == ')' || t.back() == ']'))
        t = t.size() >= 2 ? t.substr(1, t.size() - 2) : sv();
    Dims out;
    for (sv d : split_args(t))
        if (!d.empty()) out.emplace_back(d);
    return out;
}



std::vector<sv> statements(sv code) {
    std::vector<sv> out;
    pytext::statements(code, &out);
    return out;
}

// _CALL: (?P<callee>[A-Za-z_][\w.]*)\((?P<args>.*)\)\Z
bool match_call(sv s, sv* callee, sv* args) {
    if (s.empty() || !is_head(s[0])) return false;
    size_t i = 1;
    while (i < s.size() && (is_word(s[i]) || s[i] == '.')) ++i;
    if (i >= s.size() || s[i] != '(' || s.size() < i + 2 || s.back() != ')') return false;
    *callee = s.substr(0, i);
    *args = s.substr(i + 1, s.size() - i - 2);
    return true;
}

// ---- tensors.py -----------------------------------------------------------------------

int itemsize(const Str& dtype) {  // 0: unknown
    if (!dtype) return 0;
    sv d = *dtype;
    size_t dot = d.rfind('.');
    sv name = dot == sv::npos ? d : d.substr(dot + 1);
    static const std::unordered_map<std::string, int> table = {
        {"bool", 1}, {"b8", 1}, {"uint8", 1}, {"u8", 1}, {"int8", 1}, {"i8", 1},
        {"uint16", 2}, {"u16", 2}, {"int16", 2}, {"i16", 2}, {"uint32", 4}, {"u32", 4},
        {"int32", 4}, {"i32", 4}, {"uint64", 8}, {"u64", 8}, {"int64", 8}, {"i64", 8},
        {"float16", 2}, {"f16", 2}, {"half", 2}, {"bfloat16", 2}, {"bf16", 2},
        {"float32", 4}, {"f32", 4}, {"float", 4}, {"float64", 8}, {"f64", 8}, {"double", 8},
        {"complex32", 4}, {"c32", 4}, {"complex64", 8}, {"c64", 8}, {"complex128", 16},
        {"c128", 16}, {"float8_e4m3fn", 1}, {"f8e4m3fn", 1}, {"float8_e5m2", 1},
        {"f8e5m2", 1}, {"float8_e4m3fnuz", 1}, {"f8e4m3fnuz", 1}, {"float8_e5m2fnuz", 1},
        {"f8e5m2fnuz", 1}, {"float8_e8m0fnu", 1}, {"f8e8m0fnu", 1}, {"float4_e2m1fn_x2", 1},
        {"f4e2m1fn_x2", 1}, {"bits8", 1}, {"bits16", 2}, {"bits32", 4}, {"bits64", 8},
        {"bits1x8", 1}, {"bits2x4", 1}, {"bits4x2", 1}, {"qint8", 1}, {"quint8", 1},
        {"qint32", 4}, {"quint4x2", 1}, {"quint2x4", 1}};
    auto it = table.find(std::string(name));
    return it == table.end() ? 0 : it->second;
}

bool is_int(sv s) {  // _INT: -?\d+\Z
    if (!s.empty() && s[0] == '-') s.remove_prefix(1);
    return all_digits(s);
}

// int(s) for -?\d+ within int64 (else Fallback: Python's ints are unbounded).
__int128 to_int(sv s) {
    bool neg = !s.empty() && s[0] == '-';
    if (neg) s.remove_prefix(1);
    while (s.size() > 1 && s[0] == '0') s.remove_prefix(1);
    if (s.size() > 18) throw Fallback{};
    __int128 v = 0;
    for (char c : s) v = v * 10 + (c - '0');
    return neg ? -v : v;
}

const __int128 kI64Max = (__int128)INT64_MAX, kI64Min = (__int128)INT64_MIN;
void check64(__int128 v) {
    if (v > kI64Max || v < kI64Min) throw Fallback{};
}

std::string repr_list(const Dims& d) {  // repr() of a list of plain str
    std::string s = "[";
    for (size_t i = 0; i < d.size(); ++i) {
        for (char c : d[i])
            if (c == '\'' || c == '\\' || c < ' ' || c == 127) throw Fallback{};
        if (i) s += ", ";
        s += "'" + d[i] + "'";
    }
    return s + "]";
}

std::string none_or(const Str& s) { return s ? *s : std::string("None"); }

struct Bytes {  // tensors.Storage
    bool has_bytes = false;
    int64_t bytes = 0;
    Str expr, reason;
};

Bytes storage_bytes(const Dims& sizes, const Dims& strides, const Str& dtype) {
    int isz = itemsize(dtype);
    Bytes b;
    if (sizes.size() != strides.size()) {
        b.reason = "sizes " + repr_list(sizes) + " and strides " + repr_list(strides) +
                   " differ in rank";
        return b;
    }
    bool ints = true;
    for (auto& s : sizes) ints = ints && is_int(s);
    for (auto& t : strides) ints = ints && is_int(t);
    if (ints) {
        __int128 numel = 1;
        for (size_t i = 0; i < sizes.size(); ++i) {
            __int128 si = to_int(sizes[i]);
            if (si == 0) {
                if (isz) { b.has_bytes = true; b.bytes = 0; }
                else b.reason = "unknown dtype " + none_or(dtype);
                return b;
            }
            numel += (si - 1) * to_int(strides[i]);
            check64(numel);
        }
        if (!isz) {
            b.expr = std::to_string((long long)numel) + "*itemsize(" + none_or(dtype) + ")";
            b.reason = "unknown dtype " + none_or(dtype);
            return b;
        }
        __int128 v = numel * isz;
        check64(v);
        b.has_bytes = true;
        b.bytes = (int64_t)v;
        return b;
    }
    std::string e = "(1";
    for (size_t i = 0; i < sizes.size(); ++i) e += " + ((" + sizes[i] + ") - 1)*(" + strides[i] + ")";
    e += ")*" + (isz ? std::to_string(isz) : "itemsize(" + none_or(dtype) + ")");
    b.expr = e;
    b.reason = "symbolic size";
    return b;
}

Str wdtype(sv text) {  // inductor_wrapper._dtype
    sv t = strip(text);
    if (starts(t, "dtype=")) t.remove_prefix(6);
    if (starts(t, "torch.")) return std::string(t.substr(6));
    return std::nullopt;
}

Dims contiguous(const Dims& sizes) {  // _contiguous
    Dims strides;
    std::string acc = "1";
    for (size_t k = sizes.size(); k-- > 0;) {
        const std::string& s = sizes[k];
        strides.push_back(acc);
        if (all_digits(acc) && all_digits(s)) {
            __int128 v = to_int(acc) * to_int(s);
            check64(v);
            acc = std::to_string((long long)v);
        } else {
            acc = acc + "*" + s;
        }
    }
    return Dims(strides.rbegin(), strides.rend());
}

std::vector<sv> split_dots(sv s) {
    std::vector<sv> parts;
    size_t i = 0;
    while (true) {
        size_t d = s.find('.', i);
        parts.push_back(s.substr(i, d == sv::npos ? sv::npos : d - i));
        if (d == sv::npos) return parts;
        i = d + 1;
    }
}

std::string profiler_name(sv kind, sv kernel) {
    if (kind == "extern") {
        auto parts = split_dots(kernel);
        if (parts[0] == "extern_kernels") return "aten::" + std::string(parts.back());
        if (parts.size() >= 4 && parts[0] == "torch" && parts[1] == "ops")
            return std::string(parts[2]) + "::" + std::string(parts[3]);
        if (parts[0] == "aten" && parts.size() >= 2) return "aten::" + std::string(parts[1]);
    }
    return std::string(kernel);
}

std::vector<std::string> params_of(sv signature) {  // _params
    std::vector<std::string> out;
    for (sv p : split_args(signature)) {
        size_t c = p.find(':');
        if (c != sv::npos) p = p.substr(0, c);
        size_t e = p.find('=');
        if (e != sv::npos) p = p.substr(0, e);
        p = rstrip(p);
        size_t i = p.size();
        while (i && is_word(p[i - 1])) --i;
        if (i < p.size()) out.emplace_back(p.substr(i));
    }
    return out;
}

// ---- Python values --------------------------------------------------------------------

struct Ref {
    PyObject* p;
    explicit Ref(PyObject* o = nullptr) : p(o) {}
    Ref(const Ref&) = delete;
    Ref& operator=(const Ref&) = delete;
    ~Ref() { Py_XDECREF(p); }
};

PyObject* chk(PyObject* o) {
    if (!o) throw PyFail{};
    return o;
}
PyObject* S(sv s) { return chk(PyUnicode_FromStringAndSize(s.data(), (Py_ssize_t)s.size())); }
PyObject* SO(const Str& s) {
    if (!s) Py_RETURN_NONE;
    return S(*s);
}
PyObject* I(int64_t v) { return chk(PyLong_FromLongLong(v)); }
PyObject* None() { Py_RETURN_NONE; }
PyObject* B(bool v) { return v ? (Py_INCREF(Py_True), Py_True) : (Py_INCREF(Py_False), Py_False); }
PyObject* new_dict() { return chk(PyDict_New()); }
void dset(PyObject* d, const char* k, PyObject* v) {  // steals v
    int r = PyDict_SetItemString(d, k, v);
    Py_DECREF(v);
    if (r < 0) throw PyFail{};
}
PyObject* str_list(const std::vector<sv>& v) {
    PyObject* l = chk(PyList_New((Py_ssize_t)v.size()));
    for (size_t i = 0; i < v.size(); ++i) {
        PyObject* s = PyUnicode_FromStringAndSize(v[i].data(), (Py_ssize_t)v[i].size());
        if (!s) { Py_DECREF(l); throw PyFail{}; }
        PyList_SET_ITEM(l, (Py_ssize_t)i, s);
    }
    return l;
}
PyObject* str_tuple(const std::vector<std::string>& v) {  // tuple(dict.fromkeys(v))
    std::vector<const std::string*> keep;
    std::unordered_set<std::string> seen;
    for (auto& x : v)
        if (seen.insert(x).second) keep.push_back(&x);
    PyObject* t = chk(PyTuple_New((Py_ssize_t)keep.size()));
    for (size_t i = 0; i < keep.size(); ++i) {
        PyObject* s = PyUnicode_FromStringAndSize(keep[i]->data(), (Py_ssize_t)keep[i]->size());
        if (!s) { Py_DECREF(t); throw PyFail{}; }
        PyTuple_SET_ITEM(t, (Py_ssize_t)i, s);
    }
    return t;
}
sv py_sv(PyObject* o) {  // a str of the module (ASCII) or Fallback
    if (!PyUnicode_CheckExact(o) || !PyUnicode_IS_ASCII(o)) throw Fallback{};
    return sv(reinterpret_cast<const char*>(PyUnicode_1BYTE_DATA(o)),
              (size_t)PyUnicode_GET_LENGTH(o));
}
Str py_str_or_none(PyObject* o) {
    if (o == Py_None) return std::nullopt;
    return std::string(py_sv(o));
}

// ---- the module's names and storages --------------------------------------------------

struct Op;
using OpP = std::shared_ptr<Op>;

struct Storage {  // ingest/storage.py
    std::string root;
    bool has_step = true;
    int64_t step = 0;
    int64_t line = 0;
    bool has_bytes = false;
    int64_t bytes = 0;
    Str size_expr, dtype, shape, stride, device, node;
    bool is_input = false;
    std::string layout = "empty_strided";
    std::unordered_set<std::string> holders;
    int64_t end = -1;
    PyObject* attrs;  // dict, owned
    OpP pending_op;
    Storage() : attrs(chk(PyDict_New())) {}
    ~Storage() { Py_XDECREF(attrs); }
    bool release(const std::string& holder, int64_t e) {
        holders.erase(holder);
        if (e > end) end = e;
        return holders.empty();
    }
};
using StorageP = std::shared_ptr<Storage>;

struct Op {  // _OpResult
    std::string name;
    int64_t step = 0, line = 0;
    std::string op, kernel;
    Str arg_dtype;
    int kind = 0;  // 0 None, 1 tensor, 2 tuple
    Str arg_root;
    std::vector<std::pair<int64_t, std::string>> elements;  // in insertion order
    std::vector<StorageP> storages;
};

struct Name {  // _Name
    std::string name;
    StorageP storage;  // null: a tuple result
    int64_t step = 0, line = 0;
    std::string relation;
    Str target, shape, stride, dtype;
    OpP op;
};
using NameP = std::shared_ptr<Name>;

using Bound = OrderedDict<NameP>;  // the names bound so far, in Python's order

struct Kernel {
    std::string name, kind;
    int64_t line = 0;
    std::vector<PyObject*> source;  // borrowed from the texts list
    PyObject* comments;             // dict, owned
    bool has_params = false;
    std::vector<std::string> params;
    bool launched = false;
    explicit Kernel(PyObject* c) : comments(c) { Py_INCREF(c); }
    ~Kernel() { Py_XDECREF(comments); }
};
using KernelP = std::shared_ptr<Kernel>;

struct Meta {  // input_meta values: (sizes | None, strides | None, dtype | None)
    bool has_sizes = false, has_strides = false;
    Dims sizes, strides;
    Str dtype;
};

Dims py_dims(PyObject* o) {  // a list of str
    if (!PyList_CheckExact(o) && !PyTuple_CheckExact(o)) throw Fallback{};
    Dims d;
    for (Py_ssize_t k = 0; k < PySequence_Fast_GET_SIZE(o); ++k)
        d.emplace_back(py_sv(PySequence_Fast_GET_ITEM(o, k)));
    return d;
}

Meta py_meta(PyObject* o) {
    if (!PyTuple_CheckExact(o) || PyTuple_GET_SIZE(o) != 3) throw Fallback{};
    Meta m;
    PyObject *a = PyTuple_GET_ITEM(o, 0), *b = PyTuple_GET_ITEM(o, 1),
             *c = PyTuple_GET_ITEM(o, 2);
    if (a != Py_None) { m.has_sizes = true; m.sizes = py_dims(a); }
    if (b != Py_None) { m.has_strides = true; m.strides = py_dims(b); }
    m.dtype = py_str_or_none(c);
    return m;
}

const std::unordered_set<std::string>& alloc_fns() {
    static const std::unordered_set<std::string> s = {
        "empty_strided_cuda", "empty_strided_cpu", "empty_strided_xpu", "empty_strided_mtia",
        "empty_strided_cpu_pinned", "empty_strided", "torch.empty_strided",
        "empty_strided_p2p"};
    return s;
}
Str alloc_device(sv callee) {
    if (callee == "empty_strided_cuda") return std::string("cuda");
    if (callee == "empty_strided_cpu" || callee == "empty_strided_cpu_pinned")
        return std::string("cpu");
    if (callee == "empty_strided_xpu") return std::string("xpu");
    if (callee == "empty_strided_mtia") return std::string("mtia");
    return std::nullopt;
}
bool contiguous_fn(sv c) { return c == "torch.empty" || c == "torch.zeros" || c == "torch.ones"; }
bool ignored_call(sv c) {
    static const std::unordered_set<std::string> s = {
        "args.clear", "assert_alignment", "torch.cuda.set_device", "torch.xpu.set_device",
        "run_intermediate_hooks", "torch.cuda.synchronize", "print", "check_memory_step",
        "check_alias"};
    return s.count(std::string(c)) != 0;
}

struct Classes {
    PyObject *node, *alloc, *freed, *aliased;
};

// ---- the reader -----------------------------------------------------------------------

struct Reader {
    Classes cls;
    PyObject* key;    // str
    PyObject* graph;  // the module's FX graph summary (dict) or None
    std::vector<SinkRow> rows;  // the records, as their classes' arguments, in order

    enum { TOP, SOURCE, BODY, DONE } state = TOP;
    std::unordered_map<std::string, KernelP> kernels;
    KernelP kernel;
    Ref comments{chk(PyDict_New())};
    bool has_body_indent = false;
    int64_t body_indent = 0, call_indent = 0, call_line = 0;
    bool returned = false;
    bool has_partial = false;
    std::vector<std::string> partial;
    int64_t partial_start = 0;
    int64_t step = 0;
    bool gap_alloc = false;
    Bound bound;
    std::unordered_map<std::string, std::pair<Dims, Dims>> asserted, sizes;
    std::unordered_map<std::string, Meta> input_meta;
    std::unordered_map<std::string, int64_t> streams;
    Str device, device_index;  // device: the first allocation's
    // Where no allocation names the device (a graph that allocates nothing): the
    // `with torch.<dev>._DeviceGuard(<i>):` of call(), else cpu if it launches C++.
    Str guard_device;
    bool launched_cpp = false;
    int64_t last_line = 0, n_launches = 0;
    std::vector<StorageP> deferred;
    Ref symbols{chk(PyDict_New())};
    Ref unknown{chk(PyList_New(0))};
    int64_t n_unknown = 0;
    std::vector<std::string> warnings;

    ~Reader() {
        for (auto& r : rows)
            for (size_t k = 0; k < r.n; ++k) Py_XDECREF(r.a[k]);
    }

    void emit(SinkKind kind, std::initializer_list<PyObject*> args) {  // steals args
        SinkRow r;
        r.kind = kind;
        r.n = 0;
        for (PyObject* x : args) r.a[r.n++] = x;
        rows.push_back(r);
    }
    PyObject* K() { Py_INCREF(key); return key; }

    void keep_unknown(int64_t number, sv text) {
        ++n_unknown;
        if (PyList_GET_SIZE(unknown.p) < 200) {
            Ref d(new_dict());
            dset(d.p, "line", I(number));
            dset(d.p, "text", S(text));
            if (PyList_Append(unknown.p, d.p) < 0) throw PyFail{};
        }
    }

    // -- top level ----------------------------------------------------------------------
    void feed(int64_t number, PyObject* obj, sv text) {
        last_line = number;
        if (state == SOURCE) {
            if (starts(lstrip(text), "'''")) end_kernel();
            else kernel->source.push_back(obj);
            return;
        }
        if (state == BODY) {
            if (has_partial) {
                partial.emplace_back(strip(text));
                std::string joined;
                for (size_t k = 0; k < partial.size(); ++k) {
                    if (k) joined += ' ';
                    joined += partial[k];
                }
                if (balance(joined) <= 0) {
                    has_partial = false;
                    partial.clear();
                    statement(joined, partial_start);
                }
                return;
            }
            if (strip(text).empty()) return;
            int64_t indent = (int64_t)(text.size() - lstrip(text).size());
            if (!has_body_indent) {
                if (indent <= call_indent) throw Fallback{};  // an error: Python says it
                has_body_indent = true;
                body_indent = indent;
            }
            if (indent >= body_indent) {
                sv s = strip(text);
                if (balance(s) > 0) {
                    has_partial = true;
                    partial.assign(1, std::string(s));
                    partial_start = number;
                    return;
                }
                statement(s, number);
                return;
            }
            if (!returned) throw Fallback{};
            state = DONE;
        }
        top(number, text);
    }

    static std::string kernel_kind(sv method) {
        if (method == "triton") return "triton";
        if (starts(method, "cpp")) return "cpp";
        return std::string(method);
    }

    void new_comments() {
        PyObject* d = chk(PyDict_New());
        Py_DECREF(comments.p);
        comments.p = d;
    }

    void top(int64_t number, sv text) {
        sv s = strip(text);
        if (s.empty()) return;
        if (s[0] == '#') { comment(s); return; }
        // _ASYNC_DEF / _KERNEL_DEF: name = async_compile.kind(
        if (is_head(s[0])) {
            size_t i = 0;
            while (i < s.size() && is_word(s[i])) ++i;
            sv name = s.substr(0, i);
            static const sv mid = " = async_compile.";
            if (s.substr(i, mid.size()) == mid) {
                size_t k0 = i + mid.size(), k = k0;
                while (k < s.size() && is_word(s[k])) ++k;
                if (k > k0 && k < s.size() && s[k] == '(') {
                    auto kn = std::make_shared<Kernel>(comments.p);
                    kn->name = std::string(name);
                    kn->kind = kernel_kind(s.substr(k0, k - k0));
                    kn->line = number;
                    new_comments();
                    // _KERNEL_DEF: ... ( .*? r?''' \s*\Z  (s is stripped)
                    if (ends(s, "'''") && s.size() - 3 >= k + 1) {
                        kernel = kn;
                        state = SOURCE;
                    } else {
                        kernels[kn->name] = kn;
                    }
                    return;
                }
            }
        }
        // _FUNC_DEF on the text: def (\w+)\((\w+)\):\s*\Z, not call: a graph partition or
        // a subgraph, whose dispatches the Python parser reads in place
        if (starts(text, "def ") && !starts(text, "def call(")) {
            sv r = rstrip(text.substr(4));
            size_t i = 0;
            while (i < r.size() && is_word(r[i])) ++i;
            size_t j = i + 1;
            while (j < r.size() && is_word(r[j])) ++j;
            if (i > 0 && is_head(r[0]) && i < r.size() && r[i] == '(' && j > i + 1 &&
                r.substr(j) == "):")
                throw Fallback{};
        }
        // _CALL_DEF on the text: (\s*)def call\((?:self, )?(\w+)\):\s*\Z
        if (state != DONE) {
            size_t ind = text.size() - lstrip(text).size();
            sv r = rstrip(text.substr(ind));
            if (starts(r, "def call(") && ends(r, "):")) {
                sv inner = r.substr(9, r.size() - 11);
                if (starts(inner, "self, ")) inner.remove_prefix(6);
                bool word = !inner.empty();
                for (char c : inner) word = word && is_word(c);
                // (?:self, )? is optional: "self, x" fails \w+ after taking it, and
                // without it "self, x" is no \w+ either: the same answer.
                if (word) {
                    state = BODY;
                    call_indent = (int64_t)ind;
                    call_line = number;
                    new_comments();
                    return;
                }
            }
        }
        // _RAND_STRIDED on s: (\w+) = rand_strided\((.*)\)\Z
        {
            size_t i = 0;
            while (i < s.size() && is_word(s[i])) ++i;
            static const sv mid = " = rand_strided(";
            if (i > 0 && s.substr(i, mid.size()) == mid && ends(s, ")") &&
                s.size() >= i + mid.size() + 1) {
                std::string name(s.substr(0, i));
                auto a = split_args(s.substr(i + mid.size(), s.size() - i - mid.size() - 1));
                if (a.size() < 2) return;  // no sizes and strides: not an input's metadata
                Str dt;
                sv dtype_text;
                bool has_dt = false;
                for (sv x : a) {
                    size_t e = x.find('=');
                    if (e != sv::npos && x.substr(0, e) == "dtype") {
                        has_dt = true;
                        dtype_text = x.substr(e + 1);
                    }
                }
                Meta m;
                m.has_sizes = m.has_strides = true;
                m.sizes = dims(a[0]);
                m.strides = dims(a[1]);
                m.dtype = wdtype(has_dt ? dtype_text : sv());
                input_meta[name] = m;
            }
        }
    }

    // _CPP_DEF.search(src): extern "C"\s+\S*\s*void\s+\w*\s*kernel\((?P<params>.*)
    static bool cpp_def(sv src, size_t* params_at) {
        static const sv lead = "extern \"C\"";
        for (size_t at = src.find(lead); at != sv::npos; at = src.find(lead, at + 1)) {
            size_t n = src.size(), j = at + lead.size(), j0 = j;
            while (j < n && is_space(src[j])) ++j;
            if (j == j0) continue;
            size_t run = j;
            while (run < n && !is_space(src[run])) ++run;
            for (size_t k = run + 1; k-- > j;) {  // \S* from longest to empty
                size_t k2 = k;
                while (k2 < n && is_space(src[k2])) ++k2;
                if (src.substr(k2, 4) != "void") continue;
                size_t k3 = k2 + 4, k4 = k3;
                while (k4 < n && is_space(src[k4])) ++k4;
                if (k4 == k3) continue;
                size_t wrun = k4;
                while (wrun < n && is_word(src[wrun])) ++wrun;
                for (size_t w = wrun + 1; w-- > k4;) {
                    size_t k6 = w;
                    while (k6 < n && is_space(src[k6])) ++k6;
                    if (src.substr(k6, 7) == "kernel(") {
                        *params_at = k6 + 7;
                        return true;
                    }
                }
            }
        }
        return false;
    }

    void end_kernel() {
        KernelP k = kernel;
        kernel = nullptr;
        state = TOP;
        if (k->kind == "triton") {
            for (PyObject* o : k->source) {
                sv ln = strip(py_sv(o));
                // _TRITON_DEF: def (\w+)\((.*)\):?
                if (!starts(ln, "def ")) continue;
                size_t i = 4;
                while (i < ln.size() && is_word(ln[i])) ++i;
                if (i == 4 || i >= ln.size() || ln[i] != '(') continue;
                size_t close = ln.rfind(')');
                if (close == sv::npos || close < i + 1) continue;
                if (ln.substr(4, i - 4) != k->name) continue;
                sv params = ln.substr(i + 1, close - i - 1);
                size_t last = params.rfind(')');  // .rsplit(")", 1)[0]
                if (last != sv::npos) params = params.substr(0, last);
                k->has_params = true;
                k->params = params_of(params);
                break;
            }
        } else {
            std::string src;
            for (size_t j = 0; j < k->source.size(); ++j) {
                if (j) src += '\n';
                src += py_sv(k->source[j]);
            }
            size_t at;
            if (cpp_def(src, &at)) {
                sv after(src);
                after = after.substr(at);
                size_t eol = after.find('\n');
                sv sig = eol == sv::npos ? after : after.substr(0, eol);
                size_t close = sig.find(')');
                if (close == sv::npos) {
                    sig = after;
                    close = after.find(')');
                }
                // sig[:close], with Python's sig[:-1] where there is none
                sv cut = close == sv::npos ? (sig.empty() ? sig : sig.substr(0, sig.size() - 1))
                                           : sig.substr(0, close);
                std::string flat(cut);
                for (char& c : flat)
                    if (c == '\n') c = ' ';
                k->has_params = true;
                k->params = params_of(flat);
            }
        }
        kernels[k->name] = k;
    }

    void comment(sv s) {  // _comment
        PyObject* c = comments.p;
        size_t i = 1;
        while (i < s.size() && is_space(s[i])) ++i;
        sv body = s.substr(i);
        static const sv topo = "Topologically Sorted Source Nodes:";
        if (starts(body, topo)) {
            sv r = lstrip(body.substr(topo.size()));
            if (starts(r, "[")) {
                size_t close = r.find(']');
                if (close != sv::npos) {
                    sv nodes = r.substr(1, close - 1);
                    sv r2 = r.substr(close + 1);
                    if (starts(r2, ",")) {
                        r2 = lstrip(r2.substr(1));
                        static const sv aten_lead = "Original ATen:";
                        if (starts(r2, aten_lead)) {
                            r2 = lstrip(r2.substr(aten_lead.size()));
                            size_t c2 = r2.find(']');
                            if (starts(r2, "[") && c2 != sv::npos) {
                                dset(c, "source_nodes", stripped_items(nodes));
                                dset(c, "original_aten", stripped_items(r2.substr(1, c2 - 1)));
                                return;
                            }
                        }
                    }
                }
            }
        }
        static const sv prov = "[Provenance debug handles]";
        if (starts(body, prov)) {
            dset(c, "provenance", S(strip(body.substr(prov.size()))));
            return;
        }
        static const sv kpath = "kernel path:";
        if (starts(body, kpath)) {
            dset(c, "kernel_path", S(strip(body.substr(kpath.size()))));
            return;
        }
        if (starts(s, "# Source node to ATen node mapping")) {
            dset(c, "_block", S("node_mapping"));
            return;
        }
        if (starts(s, "# Graph fragment")) {
            dset(c, "_block", S("graph_fragment"));
            return;
        }
        PyObject* block = PyDict_GetItemString(c, "_block");  // borrowed
        if (block && PyObject_IsTrue(block) && starts(s, "#   ")) {
            append_to(c, block, strip(s.substr(4)));
            return;
        }
        Ref k(S("comments"));
        append_to(c, k.p, strip(s.substr(1)));
    }

    static PyObject* stripped_items(sv text) {
        std::vector<sv> v;
        size_t start = 0;
        while (true) {
            size_t c = text.find(',', start);
            sv piece = strip(text.substr(start, c == sv::npos ? sv::npos : c - start));
            if (!piece.empty()) v.push_back(piece);
            if (c == sv::npos) break;
            start = c + 1;
        }
        return str_list(v);
    }

    static void append_to(PyObject* d, PyObject* k, sv text) {  // d.setdefault(k, []).append
        PyObject* l = PyDict_GetItemWithError(d, k);
        if (!l) {
            if (PyErr_Occurred()) throw PyFail{};
            Ref fresh(chk(PyList_New(0)));
            if (PyDict_SetItem(d, k, fresh.p) < 0) throw PyFail{};
            l = fresh.p;
        }
        if (!PyList_CheckExact(l)) throw Fallback{};
        Ref t(S(text));
        if (PyList_Append(l, t.p) < 0) throw PyFail{};
    }

    // -- the body of call(args) ---------------------------------------------------------
    void statement(sv s, int64_t number) {
        if (starts(s, "#")) { comment(s); return; }
        sv code, cmt;
        split_comment(s, &code, &cmt);
        auto stmts = statements(code);
        if (stmts.empty()) return;
        sv first = stmts[0];
        if (starts(first, "return")) { do_return(strip(first.substr(6)), number); return; }
        if (starts(first, "del ")) {
            for (sv st : stmts) {
                if (!starts(st, "del ")) { keep_unknown(number, s); continue; }
                for (sv n : split_args(st.substr(4))) del(std::string(strip(n)), number, false);
            }
            return;
        }
        // _DEVICE_GUARD: with torch\.(\w+)\._DeviceGuard\((\d+)\):
        if (starts(first, "with torch.")) {
            size_t i = 11;
            while (i < first.size() && is_word(first[i])) ++i;
            static const sv g = "._DeviceGuard(";
            if (i > 11 && first.substr(i, g.size()) == g) {
                size_t d0 = i + g.size(), d = d0;
                while (d < first.size() && is_digit(first[d])) ++d;
                if (d > d0 && first.substr(d, 2) == "):") {
                    device_index = std::string(first.substr(d0, d - d0));
                    if (!guard_device)
                        guard_device = std::string(first.substr(11, i - 11)) + ":" + *device_index;
                    return;
                }
            }
        }
        if (starts(first, "with ") || starts(first, "pass") || starts(first, "if __name__"))
            return;
        sv names;
        if (unpack_args(first, &names)) {
            if (graph != Py_None) {
                PyObject* inputs = PyDict_GetItemString(graph, "inputs");  // borrowed
                if (!inputs || !PyDict_CheckExact(inputs)) throw Fallback{};
                Py_ssize_t pos = 0;
                PyObject *k, *v;
                while (PyDict_Next(inputs, &pos, &k, &v)) {
                    std::string n(py_sv(k));
                    if (!input_meta.count(n)) input_meta[n] = py_meta(v);
                }
            }
            for (sv n : split_args(names)) {
                auto st = std::make_shared<Storage>();
                st->root = std::string(n);
                st->step = -1;
                st->line = number;
                st->is_input = true;
                st->holders.insert(st->root);
                auto nm = std::make_shared<Name>();
                nm->name = st->root;
                nm->storage = st;
                nm->step = -1;
                nm->line = number;
                nm->relation = "input";
                bind(nm);
            }
            return;
        }
        // _RAW_STREAM: (\w+) = get_raw_stream\((\d+)\)\Z
        {
            size_t i = 0;
            while (i < first.size() && is_word(first[i])) ++i;
            static const sv g = " = get_raw_stream(";
            if (i > 0 && first.substr(i, g.size()) == g) {
                size_t d0 = i + g.size(), d = d0;
                while (d < first.size() && is_digit(first[d])) ++d;
                if (d > d0 && d + 1 == first.size() && first[d] == ')') {
                    __int128 v = to_int(first.substr(d0, d - d0));
                    streams[std::string(first.substr(0, i))] = (int64_t)v;
                    return;
                }
            }
        }
        // _ASSIGN: ([A-Za-z_]\w*)\s*=\s*(.*)\Z
        if (!first.empty() && is_head(first[0])) {
            size_t i = 0;
            while (i < first.size() && is_word(first[i])) ++i;
            size_t lhs_end = i;
            while (i < first.size() && is_space(first[i])) ++i;
            if (i < first.size() && first[i] == '=' && !starts(first, "assert_size_stride(") &&
                !starts(first, "assert_alignment(") && !has(head_of(first), "==")) {
                std::vector<std::string> dels;
                for (size_t k = 1; k < stmts.size(); ++k)
                    if (starts(stmts[k], "del ")) dels.emplace_back(strip(stmts[k].substr(4)));
                assign(std::string(first.substr(0, lhs_end)), strip(first.substr(i + 1)), dels,
                       cmt, number, s);
                return;
            }
        }
        sv callee, args;
        if (match_call(first, &callee, &args)) {
            call(callee, args, number, s);
            return;
        }
        keep_unknown(number, s);
    }

    // _UNPACK with src == "args": names\s*,?\s*=\s*args\Z
    static bool unpack_args(sv s, sv* names) {
        size_t n = s.size(), i = 0;
        if (!n || !is_head(s[0])) return false;
        while (i < n && is_word(s[i])) ++i;
        while (true) {
            size_t j = i;
            while (j < n && is_space(s[j])) ++j;
            if (j >= n || s[j] != ',') break;
            ++j;
            while (j < n && is_space(s[j])) ++j;
            if (j >= n || !is_head(s[j])) break;
            while (j < n && is_word(s[j])) ++j;
            i = j;
        }
        *names = s.substr(0, i);
        while (i < n && is_space(s[i])) ++i;
        if (i < n && s[i] == ',') ++i;
        while (i < n && is_space(s[i])) ++i;
        if (i >= n || s[i] != '=') return false;
        ++i;
        while (i < n && is_space(s[i])) ++i;
        return s.substr(i) == "args";
    }

    void call(sv callee, sv args, int64_t number, sv s) {
        if (callee == "assert_size_stride") {
            auto a = split_args(args);
            if (a.size() >= 3) do_assert(std::string(strip(a[0])), dims(a[1]), dims(a[2]));
            return;
        }
        if (ignored_call(callee)) return;
        std::string kind;
        if (launch_kind(callee, &kind)) {
            launch(callee, kind, args, nullptr, number);
            return;
        }
        keep_unknown(number, s);
    }

    static sv base_of(sv callee) { return ends(callee, ".run") ? callee.substr(0, callee.size() - 4) : callee; }

    bool launch_kind(sv callee, std::string* kind) {
        sv base = base_of(callee);
        auto it = kernels.find(std::string(base));
        if (it != kernels.end()) { *kind = it->second->kind; return true; }
        if (ends(callee, ".run") && starts(base, "triton_")) { *kind = "triton"; return true; }
        if (starts(base, "cpp_fused") || starts(base, "cpp_")) { *kind = "cpp"; return true; }
        if (starts(callee, "extern_kernels.") || starts(callee, "torch.ops.") ||
            starts(callee, "aten.") || starts(callee, "torch._ops.")) {
            *kind = "extern";
            return true;
        }
        size_t dot = callee.find('.');
        if (dot != sv::npos && bound.has(std::string(callee.substr(0, dot))) &&
            ends(callee, "_")) {
            *kind = "extern";
            return true;
        }
        return false;
    }

    void bind(const NameP& nm) {
        NameP old = bound.get(nm->name);
        if (old) release(old, free_step(), false);
        bound.set(nm);
        if (nm->storage) nm->storage->holders.insert(nm->name);
    }

    int64_t free_step() const { return gap_alloc ? step : step - 1; }

    static bool truthy(const Str& s) { return s && !s->empty(); }

    void assign(const std::string& lhs, sv rhs, const std::vector<std::string>& dels, sv cmt,
                int64_t number, sv text) {
        // _SYMBOL: (?:s|u|ps|ks|q|zuf)\d+\Z
        for (sv p : {sv("s"), sv("u"), sv("ps"), sv("ks"), sv("q"), sv("zuf")}) {
            if (starts(lhs, p) && all_digits(sv(lhs).substr(p.size()))) {
                Ref k(S(lhs)), v(S(rhs));
                if (PyDict_SetItem(symbols.p, k.p, v.p) < 0) throw PyFail{};
                return;
            }
        }
        Str target = target_of(rhs);
        bool reuse = has(cmt, "reuse");
        for (auto& d : dels) reuse = reuse || (target && d == *target);
        sv callee, cargs;
        bool is_call = match_call(rhs, &callee, &cargs);
        if (is_call && (alloc_fns().count(std::string(callee)) || contiguous_fn(callee))) {
            auto a = split_args(cargs);
            std::vector<sv> pos;
            std::vector<std::pair<std::string, sv>> kw;  // dict: last one wins
            for (sv x : a) {
                if (!has(head_of(x), "=")) { pos.push_back(x); continue; }
                size_t e = x.find('=');
                std::string k(strip(x.substr(0, e)));
                bool found = false;
                for (auto& p : kw)
                    if (p.first == k) { p.second = x.substr(e + 1); found = true; }
                if (!found) kw.emplace_back(k, x.substr(e + 1));
            }
            auto kwget = [&kw](const char* k) -> const sv* {
                for (auto& p : kw)
                    if (p.first == k) return &p.second;
                return nullptr;
            };
            Dims sz, sd;
            Str dtype;
            if (contiguous_fn(callee)) {
                if (!pos.empty()) sz = dims(pos[0]);
                if (pos.size() > 1 && !starts(pos[0], "(") && !starts(pos[0], "[")) {
                    sz.clear();
                    for (sv p : pos)
                        if (!starts(p, "torch.")) sz.emplace_back(p);
                }
                sd = contiguous(sz);
                const sv* d = kwget("dtype");
                dtype = wdtype(d ? *d : sv());
            } else {
                if (pos.size() < 2) throw Fallback{};  // an error: Python says it
                sz = dims(pos[0]);
                sd = dims(pos[1]);
                const sv* d = kwget("dtype");
                dtype = pos.size() > 2 ? wdtype(pos[2]) : wdtype(d ? *d : sv());
            }
            Str dev = alloc_device(callee);
            if (!dev && kwget("device")) {
                sv d = *kwget("device");
                size_t a0 = 0, b0 = d.size();
                auto q = [](char c) { return c == '\'' || c == '"' || c == ' '; };
                while (a0 < b0 && q(d[a0])) ++a0;
                while (b0 > a0 && q(d[b0 - 1])) --b0;
                dev = std::string(d.substr(a0, b0 - a0));
            }
            if (truthy(dev) && device_index && !has(*dev, ":") && *dev != "cpu")
                dev = *dev + ":" + *device_index;
            if (truthy(dev) && !device) device = dev;
            StorageP st = new_storage(lhs, number, sz, sd, dtype, dev, callee);
            if (!dtype || !itemsize(dtype)) {
                const sv* d = kwget("dtype");
                dset(st->attrs, "dtype_text", pos.size() > 2 ? S(pos[2]) : d ? S(*d) : None());
            }
            gap_alloc = true;
            auto nm = std::make_shared<Name>();
            nm->name = lhs;
            nm->storage = st;
            nm->step = step;
            nm->line = number;
            nm->relation = "alloc";
            nm->shape = st->shape;
            nm->stride = st->stride;
            nm->dtype = dtype;
            bind(nm);
            return;
        }
        if (is_call && callee == "alloc_from_pool") {
            auto a = split_args(cargs);
            std::string pool = a.empty() ? std::string() : std::string(strip(a[0]));
            Str shape, stride, dtype;
            if (a.size() > 3) shape = fmt(dims(a[3]));
            if (a.size() > 4) stride = fmt(dims(a[4]));
            if (a.size() > 2) dtype = wdtype(a[2]);
            alias(lhs, pool, "view", number, shape, stride, dtype, dels, nullptr);
            return;
        }
        if (is_call && callee == "reinterpret_tensor") {
            auto a = split_args(cargs);
            if (a.empty()) throw Fallback{};  // IndexError in Python
            std::string src(strip(a[0]));
            Str shape, stride;
            if (a.size() > 1) shape = fmt(dims(a[1]));
            if (a.size() > 2) stride = fmt(dims(a[2]));
            Ref extra(new_dict());
            if (a.size() > 3) dset(extra.p, "offset", S(strip(a[3])));
            alias(lhs, src, reuse ? "reuse" : "view", number, shape, stride, std::nullopt, dels,
                  extra.p);
            return;
        }
        if (is_name(rhs)) {
            alias(lhs, std::string(rhs), reuse ? "reuse" : "view", number, std::nullopt,
                  std::nullopt, std::nullopt, dels, nullptr);
            return;
        }
        // _INDEX: ([A-Za-z_]\w*)\[(\d+)\]\Z
        if (!rhs.empty() && is_head(rhs[0]) && ends(rhs, "]")) {
            size_t i = 0;
            while (i < rhs.size() && is_word(rhs[i])) ++i;
            if (i < rhs.size() && rhs[i] == '[' && i + 2 < rhs.size() &&
                all_digits(rhs.substr(i + 1, rhs.size() - i - 2))) {
                NameP tup = bound.get(std::string(rhs.substr(0, i)));
                if (tup && tup->op) {
                    __int128 idx = to_int(rhs.substr(i + 1, rhs.size() - i - 2));
                    element(lhs, tup, (int64_t)idx, number);
                    for (auto& d : dels) del(d, number, false);
                    return;
                }
            }
        }
        if (is_call) {
            std::string kind;
            if (launch_kind(callee, &kind)) {
                launch(callee, kind, cargs, &lhs, number);
                for (auto& d : dels) del(d, number, false);
                return;
            }
        }
        // re.fullmatch(r"[\w\s+\-*/%().,]*", rhs) and no name of it bound: a size expression
        bool expr = true;
        for (char c : rhs)
            expr = expr && (is_word(c) || is_space(c) || (c && std::strchr("+-*/%().,", c)));
        if (expr) {
            bool any = false;
            size_t i = 0;
            while (i < rhs.size()) {  // re.findall(r"[A-Za-z_]\w*", rhs)
                if (!is_head(rhs[i])) { ++i; continue; }
                size_t j = i;
                while (j < rhs.size() && is_word(rhs[j])) ++j;
                any = any || bound.has(std::string(rhs.substr(i, j - i)));
                i = j;
            }
            if (!any) return;
        }
        keep_unknown(number, text);
    }

    static Str target_of(sv rhs) {  // _target_of
        if (is_name(rhs)) return std::string(rhs);
        sv callee, args;
        if (match_call(rhs, &callee, &args) &&
            (callee == "reinterpret_tensor" || callee == "alloc_from_pool")) {
            auto a = split_args(args);
            if (a.empty()) return std::nullopt;
            return std::string(strip(a[0]));
        }
        return std::nullopt;
    }

    StorageP new_storage(const std::string& name, int64_t number, const Dims& sz, const Dims& sd,
                         const Str& dtype, const Str& dev, sv layout) {
        Bytes b = storage_bytes(sz, sd, dtype);
        auto st = std::make_shared<Storage>();
        st->root = name;
        st->step = step;
        st->line = number;
        st->has_bytes = b.has_bytes;
        st->bytes = b.bytes;
        st->size_expr = b.expr;
        st->dtype = dtype;
        st->shape = fmt(sz);
        st->stride = fmt(sd);
        st->device = dev;
        st->layout = std::string(layout);
        if (b.reason) dset(st->attrs, "size_reason", S(*b.reason));
        return st;
    }

    void alias(const std::string& lhs, const std::string& src, const char* relation,
               int64_t number, const Str& shape, const Str& stride, const Str& dtype,
               const std::vector<std::string>& dels, PyObject* extra) {
        NameP base = bound.get(src);
        if (!base) {
            keep_unknown(number, lhs + " = ... " + src + " (unknown name " + src + ")");
            return;
        }
        auto nm = std::make_shared<Name>();
        nm->name = lhs;
        nm->step = step;
        nm->line = number;
        nm->target = src;
        if (!base->storage) {
            nm->relation = "tuple";
            nm->op = base->op;
        } else {
            nm->storage = base->storage;
            nm->relation = relation;
            nm->shape = truthy(shape) ? shape : base->shape;
            nm->stride = truthy(stride) ? stride : base->stride;
            nm->dtype = truthy(dtype) ? dtype : base->dtype;
        }
        bind(nm);
        bool is_reuse = std::strcmp(relation, "reuse") == 0;
        Ref attrs(new_dict());
        dset(attrs.p, "line", I(number));
        if (extra && PyDict_Update(attrs.p, extra) < 0) throw PyFail{};
        Py_INCREF(attrs.p);
        emit(SinkKind::aliased, {K(), I(step), S(lhs), S(src), S(is_reuse ? "reuse" : "alias"),
                                 None(), attrs.p});
        for (auto& d : dels) del(d, number, is_reuse);
    }

    void element(const std::string& lhs, const NameP& tup, int64_t index, int64_t number) {
        OpP op = tup->op;
        if (op->kind == 0) op->kind = 2;
        bool found = false;
        for (auto& e : op->elements)
            if (e.first == index) { e.second = lhs; found = true; }
        if (!found) op->elements.emplace_back(index, lhs);
        auto st = std::make_shared<Storage>();
        st->root = lhs;
        st->step = op->step;
        st->line = number;
        st->node = op->kernel;
        st->layout = "extern_output";
        st->pending_op = op;
        dset(st->attrs, "op", S(op->op));
        dset(st->attrs, "output_index", I(index));
        st->holders.insert(tup->name);
        op->storages.push_back(st);
        auto nm = std::make_shared<Name>();
        nm->name = lhs;
        nm->storage = st;
        nm->step = op->step;
        nm->line = number;
        nm->relation = "alloc";
        bind(nm);
    }

    void do_assert(const std::string& name, const Dims& sz, const Dims& sd) {
        asserted[name] = {sz, sd};
        NameP nm = bound.get(name);
        if (!nm) return;
        if (nm->relation == "input") {
            if (!input_meta.count(name)) {
                Meta m;
                m.has_sizes = m.has_strides = true;
                m.sizes = sz;
                m.strides = sd;
                input_meta[name] = m;
            }
            return;
        }
        if (nm->op && nm->op->kind == 0 && !nm->storage) {
            nm->op->kind = 1;
            auto st = std::make_shared<Storage>();
            st->root = name;
            st->step = nm->op->step;
            st->line = nm->line;
            st->node = nm->op->kernel;
            st->layout = "extern_output";
            st->pending_op = nm->op;
            dset(st->attrs, "op", S(nm->op->op));
            st->holders.insert(name);
            nm->storage = st;
        }
        StorageP st = nm->storage;
        if (st && st->pending_op && st->root == name) size_from_assert(st, sz, sd);
    }

    void size_from_assert(const StorageP& st, const Dims& sz, const Dims& sd) {
        OpP op = st->pending_op;
        st->pending_op = nullptr;
        PyObject* index = PyDict_GetItemString(st->attrs, "output_index");  // borrowed
        Str dtype;
        const char* source = "";
        if (fx_dtype(op->op, index ? index : Py_None, sz, sd, &dtype)) source = "FX graph annotation";
        if (!dtype) {
            dtype = op->arg_dtype;
            source = "inferred from the op's first tensor argument";
            dset(st->attrs, "dtype_inferred", B(true));
            if (!dtype) dset(st->attrs, "dtype_from_input", SO(op->arg_root));
        }
        dset(st->attrs, "dtype_source", S(source));
        Bytes b = storage_bytes(sz, sd, dtype);
        st->has_bytes = b.has_bytes;
        st->bytes = b.bytes;
        st->size_expr = b.expr;
        if (b.reason) dset(st->attrs, "size_reason", S(*b.reason));
        st->dtype = dtype;
        st->shape = fmt(sz);
        st->stride = fmt(sd);
        dset(st->attrs, "size_from", S("assert_size_stride"));
        sizes[st->root] = {sz, sd};
    }

    // _fx_dtype: true where the graph names exactly one dtype (which may be None).
    bool fx_dtype(const std::string& op, PyObject* index, const Dims& sz, const Dims& sd, Str* out) {
        if (graph == Py_None) return false;
        PyObject* outputs = PyDict_GetItemString(graph, "outputs");  // borrowed
        if (!outputs || !PyList_CheckExact(outputs)) throw Fallback{};
        std::string shape = fmt(sz), stride = fmt(sd);
        std::vector<Str> found;
        for (Py_ssize_t k = 0; k < PyList_GET_SIZE(outputs); ++k) {
            PyObject* t = PyList_GET_ITEM(outputs, k);
            if (!PyTuple_CheckExact(t) || PyTuple_GET_SIZE(t) != 5) throw Fallback{};
            PyObject *o = PyTuple_GET_ITEM(t, 0), *i = PyTuple_GET_ITEM(t, 1),
                     *dt = PyTuple_GET_ITEM(t, 2), *sh = PyTuple_GET_ITEM(t, 3),
                     *s2 = PyTuple_GET_ITEM(t, 4);
            if (py_sv(o) != op) continue;
            if (i != Py_None && !PyLong_CheckExact(i)) throw Fallback{};
            if (index != Py_None && !PyLong_CheckExact(index)) throw Fallback{};
            if (i == Py_None || index == Py_None) {
                if (i != index) continue;
            } else {
                int eq = PyObject_RichCompareBool(i, index, Py_EQ);
                if (eq < 0) throw PyFail{};
                if (!eq) continue;
            }
            if (sh == Py_None || py_sv(sh) != shape) continue;
            if (s2 != Py_None && py_sv(s2) != stride) continue;
            Str d = py_str_or_none(dt);
            bool dup = false;
            for (auto& f : found) dup = dup || f == d;
            if (!dup) found.push_back(d);
        }
        if (found.size() == 1) {
            *out = found[0];
            return true;
        }
        return false;
    }

    Str arg_buffers(sv arg) {  // _arg_buffers
        sv a = strip(arg);
        if (is_name(a) && bound.has(std::string(a))) return std::string(a);
        sv callee, args;
        if (match_call(a, &callee, &args) && callee == "reinterpret_tensor") {
            auto inner = split_args(args);
            if (!inner.empty() && bound.has(std::string(strip(inner[0]))))
                return std::string(strip(inner[0]));
        }
        return std::nullopt;
    }

    Str dtype_of(const std::string& name) {
        NameP nm = bound.get(name);
        if (!nm) return std::nullopt;
        if (truthy(nm->dtype)) return nm->dtype;
        StorageP st = nm->storage;
        if (st && truthy(st->dtype)) return st->dtype;
        auto it = input_meta.find(st ? st->root : name);
        return it == input_meta.end() ? std::nullopt : it->second.dtype;
    }

    void launch(sv callee, const std::string& kind, sv args_text, const std::string* lhs,
                int64_t number) {
        int64_t at = step;
        sv base = base_of(callee);
        auto kit = kernels.find(std::string(base));
        KernelP kn = kit == kernels.end() ? nullptr : kit->second;
        launched_cpp = launched_cpp || kind == "cpp";
        std::vector<sv> pos;
        std::vector<std::pair<std::string, std::string>> kw;  // dict order, last value wins
        for (sv a : split_args(args_text)) {
            sv head = head_of(a);
            sv hs = strip(head);
            if (has(head, "=") && !starts(hs, "'") && !starts(hs, "\"")) {
                size_t e = a.find('=');
                std::string k(strip(a.substr(0, e)));
                std::string v(strip(a.substr(e + 1)));
                bool found = false;
                for (auto& p : kw)
                    if (p.first == k) { p.second = v; found = true; }
                if (!found) kw.emplace_back(k, v);
            } else {
                pos.push_back(a);
            }
        }
        std::vector<std::string> reads, writes;
        for (size_t i = 0; i < pos.size(); ++i) {
            Str b = arg_buffers(pos[i]);
            if (!b) continue;
            const std::string* p =
                kn && kn->has_params && i < kn->params.size() ? &kn->params[i] : nullptr;
            if (p && starts(*p, "out_ptr")) {
                writes.push_back(*b);
            } else if (p && starts(*p, "in_out_ptr")) {
                reads.push_back(*b);
                writes.push_back(*b);
            } else {
                reads.push_back(*b);
            }
        }
        if (kind == "extern" && !reads.empty() && !lhs) {
            auto parts = split_dots(base);
            if (ends(base, "_") || (parts.size() >= 2 && ends(parts[parts.size() - 2], "_")))
                writes.push_back(reads[0]);
        }
        for (auto& p : kw) {
            Str b = arg_buffers(p.second);
            if (b) (p.first == "out" ? writes : reads).push_back(*b);
        }
        Ref attrs(new_dict());
        for (auto& p : kw) {
            if (p.first == "grid") dset(attrs.p, "grid", S(p.second));
        }
        for (auto& p : kw) {
            if (p.first != "stream") continue;
            auto it = streams.find(p.second);
            dset(attrs.p, "stream", it != streams.end() ? I(it->second) : S(p.second));
        }
        {  // the comments waiting, those of the kernel's definition after them
            Py_ssize_t pos_ = 0;
            PyObject *k, *v;
            while (PyDict_Next(comments.p, &pos_, &k, &v)) {
                if (starts(py_sv(k), "_")) continue;
                if (PyDict_SetItem(attrs.p, k, v) < 0) throw PyFail{};
            }
            new_comments();
        }
        if (kn) {
            Py_ssize_t pos_ = 0;
            PyObject *k, *v;
            while (PyDict_Next(kn->comments, &pos_, &k, &v)) {
                if (starts(py_sv(k), "_")) continue;
                if (PyDict_SetDefault(attrs.p, k, v) == nullptr) throw PyFail{};
            }
            if (!kn->launched) {
                Ref sep(S("\n"));
                Ref lst(chk(PyList_New((Py_ssize_t)kn->source.size())));
                for (size_t j = 0; j < kn->source.size(); ++j) {
                    Py_INCREF(kn->source[j]);
                    PyList_SET_ITEM(lst.p, (Py_ssize_t)j, kn->source[j]);
                }
                dset(attrs.p, "kernel_source", chk(PyUnicode_Join(sep.p, lst.p)));
                kn->launched = true;
            }
            dset(attrs.p, "defined_at_line", I(kn->line));
        }
        dset(attrs.p, "profiler_name", S(profiler_name(kind, base)));
        if (lhs) {
            writes.push_back(*lhs);
            dset(attrs.p, "returns", S(*lhs));
        }
        Py_INCREF(attrs.p);
        emit(SinkKind::node, {K(), I(at), S(base), S(kind), None(), S(base), SO(device),
                              str_tuple(reads), str_tuple(writes), I(number), attrs.p});
        ++step;
        ++n_launches;
        gap_alloc = false;
        if (lhs) {
            auto op = std::make_shared<Op>();
            for (sv a : pos) {
                Str b = arg_buffers(a);
                if (!b) continue;
                op->arg_dtype = dtype_of(*b);
                StorageP st = bound.get(*b)->storage;
                op->arg_root = st ? st->root : *b;
                break;
            }
            op->name = *lhs;
            op->step = at;
            op->line = number;
            op->op = op_name(base);
            op->kernel = std::string(base);
            auto nm = std::make_shared<Name>();
            nm->name = *lhs;
            nm->step = at;
            nm->line = number;
            nm->relation = "result";
            nm->op = op;
            bind(nm);
            auto it = asserted.find(*lhs);
            if (it != asserted.end()) {
                auto copy = it->second;
                do_assert(*lhs, copy.first, copy.second);
            }
        }
    }

    void del(const std::string& name, int64_t number, bool reuse) {
        NameP nm = bound.pop(name);
        if (!nm) {
            keep_unknown(number, "del " + name + " (name not bound)");
            return;
        }
        release(nm, free_step(), reuse);
    }

    void release(const NameP& nm, int64_t end, bool reuse) {  // _release / _release_list
        if (!nm->storage) {
            OpP op = nm->op;
            if (op && op->kind == 2) {
                Ref attrs(new_dict()), elements(new_dict());
                dset(attrs.p, "op", S(op->op));
                for (auto& e : op->elements) {
                    std::string k = std::to_string((long long)e.first);
                    dset(elements.p, k.c_str(), S(e.second));
                }
                Py_INCREF(elements.p);
                dset(attrs.p, "elements", elements.p);
                Py_INCREF(attrs.p);
                emit(SinkKind::alloc, {K(), I(nm->step), S(nm->name), I(0), S(op->kernel),
                                       S("tuple"), None(), None(), None(), None(), None(),
                                       B(false), None(), None(), I(nm->line), attrs.p});
                emit(SinkKind::freed, {K(), I(std::max(end, nm->step)), S(nm->name), S("del"),
                                       new_dict()});
                for (auto& st : op->storages)
                    if (st->holders.count(nm->name) && st->release(nm->name, end))
                        storage_rows(st);
                return;
            }
            if (op) {
                auto st = std::make_shared<Storage>();
                st->root = nm->name;
                st->step = op->step;
                st->line = nm->line;
                st->node = op->kernel;
                st->layout = "extern_output";
                dset(st->attrs, "op", S(op->op));
                dset(st->attrs, "size_reason",
                     S("extern output without assert_size_stride: size unknown"));
                st->end = std::max(end, op->step);
                if (!reuse)
                    warnings.push_back(nm->name + ": output of " + op->kernel +
                                       " has no assert_size_stride; its size is unknown");
                storage_rows(st);
            }
            return;
        }
        StorageP st = nm->storage;
        int64_t name_end = std::max(end, nm->step);
        bool free = st->release(nm->name, name_end);
        if (nm->name != st->root) {
            Ref attrs(new_dict());
            dset(attrs.p, "storage", S(st->root));
            dset(attrs.p, "target", SO(nm->target));
            dset(attrs.p, "storage_is_input", B(st->is_input));
            Py_INCREF(attrs.p);
            emit(SinkKind::alloc, {K(), nm->step >= 0 ? I(nm->step) : None(), S(nm->name), I(0),
                                   None(), S(nm->relation), SO(nm->dtype), SO(nm->shape),
                                   SO(nm->stride), SO(st->device), None(), B(false), None(),
                                   None(), I(nm->line), attrs.p});
            emit(SinkKind::freed, {K(), I(name_end), S(nm->name),
                                   S(returned ? "return" : "del"), new_dict()});
        }
        if (free) storage_rows(st);
    }

    void storage_rows(const StorageP& st) {
        if (st->is_input) {
            auto it = input_meta.find(st->root);
            const Meta* m = it == input_meta.end() ? nullptr : &it->second;
            bool have = m && m->has_sizes && m->has_strides;
            Bytes b;
            if (have) b = storage_bytes(m->sizes, m->strides, m->dtype);
            emit(SinkKind::alloc,
                 {K(), None(), S(st->root), have && b.has_bytes ? I(b.bytes) : None(), None(),
                  S("input"), m ? SO(m->dtype) : None(),
                  m && m->has_sizes ? S(fmt(m->sizes)) : None(),
                  m && m->has_strides ? S(fmt(m->strides)) : None(), SO(device),
                  have ? SO(b.expr) : None(), B(true), None(), None(), I(st->line), new_dict()});
            return;
        }
        if (st->pending_op) {
            dset(st->attrs, "size_reason",
                 S("extern output without assert_size_stride: size unknown"));
            warnings.push_back(st->root + ": output of " + st->pending_op->kernel +
                               " has no assert_size_stride; its size is unknown");
            st->pending_op = nullptr;
        }
        if (!st->dtype) {
            PyObject* v = PyDict_GetItemString(st->attrs, "dtype_from_input");  // borrowed
            if (v) {
                int t = PyObject_IsTrue(v);
                if (t < 0) throw PyFail{};
                if (t) {
                    deferred.push_back(st);
                    return;
                }
            }
        }
        records(st, "storage released");
    }

    void records(const StorageP& st, const char* reason) {  // Storage.records
        int64_t s = st->has_step ? st->step : 0;
        emit(SinkKind::alloc, {K(), I(s), S(st->root), st->has_bytes ? I(st->bytes) : None(),
                               SO(st->node), S(st->layout), SO(st->dtype), SO(st->shape),
                               SO(st->stride), SO(st->device), SO(st->size_expr), B(false),
                               None(), None(), I(st->line), chk(PyDict_Copy(st->attrs))});
        emit(SinkKind::freed, {K(), I(std::max(st->end, s)), S(st->root), S(reason), new_dict()});
    }

    void do_return(sv text, int64_t number) {
        sv t = strip(text);
        if (starts(t, "(") && ends(t, ")")) t = t.substr(1, t.size() >= 2 ? t.size() - 2 : 0);
        std::vector<std::string> got;
        for (sv a : split_args(t)) {
            Str b = arg_buffers(a);
            if (b) got.push_back(*b);
        }
        int64_t at = step;
        Ref attrs(new_dict());
        Ref lst(chk(PyList_New((Py_ssize_t)got.size())));
        for (size_t k = 0; k < got.size(); ++k) PyList_SET_ITEM(lst.p, (Py_ssize_t)k, S(got[k]));
        Py_INCREF(lst.p);
        dset(attrs.p, "returns", lst.p);
        Py_INCREF(attrs.p);
        emit(SinkKind::node, {K(), I(at), S("return"), S("return"), None(), None(), SO(device),
                              str_tuple(got), chk(PyTuple_New(0)), I(number), attrs.p});
        ++step;
        returned = true;
        std::vector<NameP> live;
        for (auto& it : bound.items)
            if (it.second) live.push_back(it.second);
        for (auto& nm : live) {
            bound.pop(nm->name);
            release(nm, at, false);
        }
    }

    void finish() {
        if (state == SOURCE || has_partial || (state == TOP && call_line == 0) ||
            (state == BODY && !returned))
            throw Fallback{};  // an error: Python says it
        std::vector<StorageP> later(deferred);
        for (auto& st : later) {
            PyObject* root = PyDict_GetItemString(st->attrs, "dtype_from_input");  // borrowed
            if (!root) throw Fallback{};
            Str from = py_str_or_none(root);
            if (PyDict_DelItemString(st->attrs, "dtype_from_input") < 0) throw PyFail{};
            const Meta* m = nullptr;
            if (from) {
                auto it = input_meta.find(*from);
                if (it != input_meta.end()) m = &it->second;
            }
            auto sit = sizes.find(st->root);
            if (sit == sizes.end()) throw Fallback{};
            if (m && m->dtype) {
                st->dtype = m->dtype;
                Bytes b = storage_bytes(sit->second.first, sit->second.second, st->dtype);
                st->has_bytes = b.has_bytes;
                st->bytes = b.bytes;
                st->size_expr = b.expr;
                if (b.reason) {
                    dset(st->attrs, "size_reason", S(*b.reason));
                } else if (PyDict_GetItemString(st->attrs, "size_reason") &&
                           PyDict_DelItemString(st->attrs, "size_reason") < 0) {
                    throw PyFail{};
                }
            }
            storage_rows(st);
        }
    }
};

// wrapper_module(texts, numbers, start, key, classes, graph, sink=None) -> None |
//   (records, n_steps, device, launches, kernels_defined, never_launched, n_unknown,
//    unknown, warnings, symbols)
// The module's lines from `start` (after its # AOT ID line) read as WrapperParser reads
// them; with an EventSink, its events go there as rows and records is [].
PyObject* wrapper_module(PyObject*, PyObject* args) {
    PyObject *texts, *numbers, *key, *graph;
    Py_ssize_t start;
    Classes cls;
    PyObject* sink = Py_None;
    if (!PyArg_ParseTuple(args, "O!O!nU(OOOO)O|O", &PyList_Type, &texts, &PyList_Type,
                          &numbers, &start, &key, &cls.node, &cls.alloc, &cls.freed,
                          &cls.aliased, &graph, &sink))
        return nullptr;
    if (sink != Py_None && !is_event_sink(sink)) {
        PyErr_SetString(PyExc_TypeError, "wrapper_module: sink must be an EventSink or None");
        return nullptr;
    }
    Py_ssize_t n = PyList_GET_SIZE(texts);
    if (PyList_GET_SIZE(numbers) != n) {
        PyErr_SetString(PyExc_ValueError, "wrapper_module: texts and numbers differ in length");
        return nullptr;
    }
    if (graph != Py_None && !PyDict_CheckExact(graph)) Py_RETURN_NONE;
    try {
        Reader r;
        r.cls = cls;
        r.key = key;
        r.graph = graph;
        for (Py_ssize_t i = 0; i < n; ++i) {  // ASCII lines without a newline, or Python
            PyObject* t = PyList_GET_ITEM(texts, i);
            if (!PyUnicode_CheckExact(t) || !PyUnicode_IS_ASCII(t) ||
                std::memchr(PyUnicode_1BYTE_DATA(t), '\n', (size_t)PyUnicode_GET_LENGTH(t)))
                Py_RETURN_NONE;
        }
        for (Py_ssize_t i = start < 0 ? 0 : start; i < n; ++i) {
            PyObject* t = PyList_GET_ITEM(texts, i);
            int64_t number = PyLong_AsLongLong(PyList_GET_ITEM(numbers, i));
            if (number == -1 && PyErr_Occurred()) throw PyFail{};
            r.feed(number, t, py_sv(t));
        }
        r.finish();
        PyObject* out = chk(PyList_New(0));
        Ref outr(out);
        if (sink != Py_None) {
            if (sink_write(sink, key, r.rows) < 0) throw PyFail{};
        } else {
            for (auto& row : r.rows) {
                PyObject* c = row.kind == SinkKind::node    ? cls.node
                              : row.kind == SinkKind::alloc ? cls.alloc
                              : row.kind == SinkKind::freed ? cls.freed
                                                            : cls.aliased;
                Ref rec(chk(PyObject_Vectorcall(c, row.a, row.n, nullptr)));
                if (PyList_Append(out, rec.p) < 0) throw PyFail{};
            }
        }
        std::vector<std::string> never;
        for (auto& k : r.kernels)
            if (!k.second->launched) never.push_back(k.first);
        std::sort(never.begin(), never.end());
        std::vector<sv> never_sv(never.begin(), never.end());
        std::vector<sv> warn_sv(r.warnings.begin(), r.warnings.end());
        Py_INCREF(out);
        Str device = r.device ? r.device : r.guard_device ? r.guard_device
                   : r.launched_cpp ? Str("cpu") : Str();
        return Py_BuildValue("(NLNLnNLONO)", out, (long long)r.step, SO(device),
                             (long long)r.n_launches, (Py_ssize_t)r.kernels.size(),
                             str_list(never_sv), (long long)r.n_unknown, r.unknown.p,
                             str_list(warn_sv), r.symbols.p);
    } catch (const Fallback&) {
        if (PyErr_Occurred()) PyErr_Clear();
        Py_RETURN_NONE;
    } catch (const PyFail&) {
        return nullptr;
    } catch (const std::bad_alloc&) {
        if (!PyErr_Occurred()) PyErr_NoMemory();
        return nullptr;
    }
}

PyMethodDef methods[] = {
    {"wrapper_module", (PyCFunction)wrapper_module, METH_VARARGS,
     "wrapper_module(texts, numbers, start, key, classes, graph, sink=None): one wrapper "
     "module's records (WrapperParser's twin), or None where the Python parser must read it"},
    {nullptr, nullptr, 0, nullptr}};

}  // namespace

int add_wrapper_module(PyObject* module) { return PyModule_AddFunctions(module, methods); }

}  // namespace tlv
