// Inductor scheduler IR dumps to event columns: the compiled twin of
// ingest/inductor_ir.py (with ingest/last_use.py), which stays the specification.
//
// The whole hot loop is here: line splitting and UTF-8 checks (as ingest/lines.py does
// them, 1 MiB chunk by chunk), line classification, node completion, layouts and the
// storage rule, and last-use tracking; events go straight into Arrow-layout columns
// (columns.hpp), a batch of BATCH_ROWS at a time, never as a Python object per value.
// Each branch below names the Python it mirrors; where Python's behaviour is subtle
// (str.strip, re's Unicode \s \w \d, dict order when a key repeats) the code keeps it.
// Rare cases that need Python itself (str.lower of non-ASCII, integers beyond 64 bits)
// call into it with the GIL.
#include <Python.h>

#include <algorithm>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "columns.hpp"
#include "common.hpp"
#include "inductor_ir_names.hpp"
#include "inductor_ir_text.hpp"
#include "pyjson.hpp"
#include "str_map.hpp"

namespace tlv {
namespace {

using namespace tlv::ir;
using OptStr = std::optional<std::string>;

constexpr size_t BATCH_ROWS = 8192;
constexpr size_t BATCH_TEXT = 64u << 20;

struct PyErrSet {};  // a Python exception is set (raised by code called with the GIL)

// A dict[str, str] with Python's order: a repeated key keeps its first place. Cleared
// per node, its strings are kept for the next one (no allocation per field and node).
struct Fields {
    using KV = std::pair<std::string, std::string>;
    static constexpr size_t LINEAR = 16;  // past this many keys, looked up by a hash index
    std::vector<KV> kv;
    size_t n = 0;
    mutable StrMap<size_t> idx;  // built when a key is added past LINEAR, then used
    const KV* begin() const { return kv.data(); }
    const KV* end() const { return kv.data() + n; }
    bool empty() const { return n == 0; }
    const std::string* get(sv k) const {
        if (!idx.empty()) {
            size_t* i = idx.find(k);
            return i ? &kv[*i].second : nullptr;
        }
        for (size_t i = 0; i < n; ++i)
            if (kv[i].first == k) return &kv[i].second;
        return nullptr;
    }
    std::string& slot(sv k) {
        if (n >= LINEAR) {
            if (idx.empty())
                for (size_t i = 0; i < n; ++i) *idx.emplace(kv[i].first).first = i;
            auto [i, added] = idx.emplace(k);
            if (!added) return kv[*i].second;
            *i = n;
        } else {
            for (size_t i = 0; i < n; ++i)
                if (kv[i].first == k) return kv[i].second;
        }
        if (n == kv.size()) kv.emplace_back();
        KV& e = kv[n++];
        e.first.assign(k.data(), k.size());
        e.second.clear();
        return e.second;
    }
    void set(sv k, sv v) { slot(k).assign(v.data(), v.size()); }
    bool has(sv k) const { return get(k) != nullptr; }
    void clear() {
        if (!idx.empty()) idx.clear();
        n = 0;
    }
};

// A vector whose elements are reset, not destroyed, when cleared (their strings keep
// their memory): T has reset().
template <class T>
struct Pool {
    std::vector<T> items;
    size_t n = 0;
    T& add() {
        if (n == items.size()) items.emplace_back();
        T& t = items[n++];
        t.reset();
        return t;
    }
    size_t size() const { return n; }
    bool empty() const { return n == 0; }
    void clear() { n = 0; }
    T& operator[](size_t i) { return items[i]; }
    const T& operator[](size_t i) const { return items[i]; }
    T& back() { return items[n - 1]; }
    T* begin() { return items.data(); }
    T* end() { return items.data() + n; }
    const T* begin() const { return items.data(); }
    const T* end() const { return items.data() + n; }
};

// A JSON object being built, keys in Python dict order (a repeated key overwrites in
// place); values are JSON text.
struct JObj {
    std::vector<std::pair<std::string, std::string>> kv;
    std::string& slot(sv k) {
        for (auto& p : kv)
            if (p.first == k) { p.second.clear(); return p.second; }
        kv.emplace_back(std::string(k), std::string());
        return kv.back().second;
    }
    void str(sv k, sv v) { put_json_string(slot(k), v, true); }
    void write(std::string& out) const {
        out.push_back('{');
        bool first = true;
        for (auto& p : kv) {
            if (!first) out.push_back(',');
            first = false;
            put_json_string(out, p.first, true);
            out.push_back(':');
            out.append(p.second);
        }
        out.push_back('}');
    }
};

inline void json_str_list(std::string& out, const std::vector<std::string>& v) {
    out.push_back('[');
    for (size_t i = 0; i < v.size(); ++i) {
        if (i) out.push_back(',');
        put_json_string(out, v[i], true);
    }
    out.push_back(']');
}

struct Buffer {
    std::string name, ir_class;
    int64_t line = 0;
    Fields fields;
    void reset() { fields.clear(); }
};

struct Node {
    std::string name, cls, ir, prefix;
    int64_t line = 0;
    Fields fields;
    Pool<Buffer> buffers;
    std::vector<std::string> snodes;
    std::vector<std::unique_ptr<Node>> subs;  // subs[:n_subs] (kept for reuse)
    size_t n_subs = 0;
    Fields blocks;
    std::vector<std::string> unknown;
    void reset(sv n, sv c, sv i, int64_t ln) {
        name.assign(n); cls.assign(c); ir.assign(i); line = ln;
        prefix = name; prefix.push_back('.');
        fields.clear(); buffers.clear(); snodes.clear(); n_subs = 0; blocks.clear();
        unknown.clear();
    }
};

// tensors.storage_bytes's result.
struct Storage {
    std::optional<int64_t> bytes;
    OptStr expr, reason;
    std::string big;  // the byte count, when it does not fit 64 bits
};

// parse_layout's result, with what is derived from it alone (computed once per text).
struct Layout {
    bool has_kind = false;
    std::string kind;
    bool has_size = false, has_stride = false;
    std::vector<std::string> size, stride;
    OptStr device, dtype;
    Fields extra;
    std::string shape_text, stride_text;  // "[8, 4]": the shape and stride columns
    mutable bool has_storage = false, overflow = false;
    mutable Storage storage;  // storage_bytes(size, stride, dtype), once asked
};

// ---- last-use tracking (ingest/last_use.py) ---------------------------------------------

// An insertion-ordered dict[str, V]: a key set again keeps its place; a popped key set
// again goes to the end.
template <class V>
struct OrderedMap {
    struct Slot {
        std::string key;
        V val;
        bool live;
    };
    std::vector<Slot> slots;
    NameMap<size_t> idx;
    size_t dead = 0, head = 0;

    size_t size() const { return idx.size(); }
    V* get(const std::string& k) {
        size_t* i = idx.find(k);
        return i ? &slots[*i].val : nullptr;
    }
    V& set(const std::string& k, V v) {
        auto [i, added] = idx.emplace(k);
        if (!added) {
            slots[*i].val = std::move(v);
            return slots[*i].val;
        }
        *i = slots.size();
        slots.push_back(Slot{k, std::move(v), true});
        return slots.back().val;
    }
    V& get_or_add(sv k) {
        auto [i, added] = idx.emplace(k);
        if (!added) return slots[*i].val;
        *i = slots.size();
        slots.push_back(Slot{std::string(k), V(), true});
        return slots.back().val;
    }
    bool pop(const std::string& k, V* out) {
        size_t* i = idx.find(k);
        if (!i) return false;
        Slot& s = slots[*i];
        *out = std::move(s.val);
        s.live = false;
        s.val = V();
        idx.erase(k);
        ++dead;
        while (head < slots.size() && !slots[head].live) ++head;
        if (dead > 1024 && dead > 2 * idx.size()) compact();
        return true;
    }
    void compact() {  // drop popped slots; the index of each live key moves
        size_t k = 0;
        for (size_t i = 0; i < slots.size(); ++i) {
            if (!slots[i].live) continue;
            if (k != i) slots[k] = std::move(slots[i]);
            *idx.find(slots[k].key) = k;
            ++k;
        }
        slots.resize(k);
        dead = 0;
        head = 0;
    }
    template <class F>
    void each(F&& f) {  // f(key, val&) in order
        for (size_t i = head; i < slots.size(); ++i)
            if (slots[i].live) f(slots[i].key, slots[i].val);
    }
};

struct OpenBuf {
    int64_t own = 0, last = 0, line = 0;
    int64_t unseen = 0;
    bool to_end = false;
    int64_t dependents = 0;
    std::vector<std::string> targets;
    std::optional<int64_t> nbytes;
    std::string producer;
};

struct Closed {
    std::string buffer;
    int64_t last;
    std::string reason;
};

constexpr size_t RECENT_NODES = 65536;

struct LastUse {
    OrderedMap<OpenBuf> open;
    OrderedMap<std::vector<std::string>> waiting;
    NameMap<int64_t> recent;
    std::deque<std::string> recent_order;
    std::vector<Closed> closed;
    std::vector<std::string> candidates;

    // users: node names; an empty optional is an OUTPUT user.
    void buffer(const std::string& name, int64_t step,
                const std::vector<std::pair<bool, sv>>& users, int64_t line,
                std::optional<int64_t> nbytes, const std::string& producer) {
        OpenBuf nb;
        nb.own = step; nb.last = step; nb.line = line; nb.nbytes = nbytes;
        nb.producer = producer;
        OpenBuf& b = open.set(name, std::move(nb));
        for (auto& [output, u] : users) {
            if (output) { b.to_end = true; continue; }
            if (int64_t* seen = recent.find(u)) {
                b.last = std::max(b.last, *seen);
            } else {
                b.unseen += 1;
                waiting.get_or_add(u).push_back(name);
            }
        }
        if (!b.unseen) candidates.push_back(name);
    }

    void link(const std::string& buffer, const std::string& target) {
        OpenBuf* t = open.get(target);
        open.get(buffer)->targets.push_back(target);
        if (t) t->dependents += 1;
    }

    void node(const std::vector<const std::string*>& names, int64_t step) {
        for (const std::string* np : names) {
            const std::string& name = *np;
            auto [slot, added] = recent.emplace(name);
            *slot = step;
            if (added) {
                recent_order.push_back(name);
                if (recent.size() > RECENT_NODES) {
                    recent.erase(recent_order.front());
                    recent_order.pop_front();
                }
            }
            auto& bufs = bufs_;
            if (waiting.pop(name, &bufs)) {
                for (auto& buf : bufs) {
                    OpenBuf* b = open.get(buf);
                    if (!b) continue;
                    b->last = std::max(b->last, step);
                    b->unseen -= 1;
                    if (!b->unseen) candidates.push_back(buf);
                }
            }
        }
        auto& cands = cands_;  // empty: candidates keeps its memory
        cands.swap(candidates);
        for (auto& n : cands) {
            OpenBuf* b = open.get(n);
            if (b && !b->unseen && !b->to_end && !b->dependents) close(n, LAST_USE);
        }
        cands.clear();
    }
    std::vector<std::string> bufs_, cands_;
    inline static const std::string LAST_USE = "last use";

    // last_use.LastUse._close: `name`, then each target it was the last dependent of,
    // depth first without recursion (a chain of views of views is as long as the graph).
    struct Closing {
        std::string name;
        OpenBuf b;
        size_t next = 0;
    };
    std::vector<Closing> closing_;
    void close(const std::string& name, const std::string& reason) {
        OpenBuf b;
        if (!open.pop(name, &b)) return;
        closed.push_back(Closed{name, b.last, reason});
        auto& work = closing_;
        work.clear();
        work.push_back(Closing{name, std::move(b), 0});
        while (!work.empty()) {
            Closing& c = work.back();
            if (c.next == c.b.targets.size()) {
                work.pop_back();
                continue;
            }
            std::string t = c.b.targets[c.next++];
            OpenBuf* tb = open.get(t);
            if (!tb) {
                closed.push_back(Closed{t, c.b.last, "extended by " + c.name});
                continue;
            }
            tb->last = std::max(tb->last, c.b.last);
            tb->dependents -= 1;
            if (tb->unseen == 0 && !tb->to_end && tb->dependents == 0) {
                OpenBuf nb;
                open.pop(t, &nb);
                closed.push_back(Closed{t, nb.last, LAST_USE});
                work.push_back(Closing{std::move(t), std::move(nb), 0});
            }
        }
    }

    // false, with (buffer, user, line) of the first buffer left waiting; else closes all.
    bool finish(int64_t last_step, std::string* mbuf, std::string* muser, int64_t* mline) {
        bool missing = false;
        waiting.each([&](const std::string& user, std::vector<std::string>& bufs) {
            if (missing) return;
            for (auto& buf : bufs) {
                OpenBuf* b = open.get(buf);
                if (b) {
                    missing = true;
                    *mbuf = buf; *muser = user; *mline = b->line;
                    return;
                }
            }
        });
        if (missing) return false;
        open.each([&](const std::string&, OpenBuf& b) {
            if (b.to_end) b.last = last_step;
        });
        while (open.size()) {
            std::vector<std::string> free;
            open.each([&](const std::string& k, OpenBuf& b) {
                if (b.dependents == 0) free.push_back(k);
            });
            if (free.empty()) {
                open.each([&](const std::string& k, OpenBuf& b) {
                    free.push_back(k);
                    b.dependents = 0;
                });
            }
            for (auto& n : free) {
                OpenBuf* b = open.get(n);
                close(n, (b && b->to_end) ? "graph output" : "last use");
            }
        }
        return true;
    }
};

// ---- itemsize (ingest/tensors.py ITEMSIZE) ----------------------------------------------

std::optional<int> itemsize_of(sv name) {
    static const std::unordered_map<std::string, int> table = {
        {"bool", 1}, {"b8", 1}, {"uint8", 1}, {"u8", 1}, {"int8", 1}, {"i8", 1},
        {"uint16", 2}, {"u16", 2}, {"int16", 2}, {"i16", 2},
        {"uint32", 4}, {"u32", 4}, {"int32", 4}, {"i32", 4},
        {"uint64", 8}, {"u64", 8}, {"int64", 8}, {"i64", 8},
        {"float16", 2}, {"f16", 2}, {"half", 2}, {"bfloat16", 2}, {"bf16", 2},
        {"float32", 4}, {"f32", 4}, {"float", 4},
        {"float64", 8}, {"f64", 8}, {"double", 8},
        {"complex32", 4}, {"c32", 4}, {"complex64", 8}, {"c64", 8}, {"complex128", 16},
        {"c128", 16},
        {"float8_e4m3fn", 1}, {"f8e4m3fn", 1}, {"float8_e5m2", 1}, {"f8e5m2", 1},
        {"float8_e4m3fnuz", 1}, {"f8e4m3fnuz", 1}, {"float8_e5m2fnuz", 1},
        {"f8e5m2fnuz", 1}, {"float8_e8m0fnu", 1}, {"f8e8m0fnu", 1},
        {"float4_e2m1fn_x2", 1}, {"f4e2m1fn_x2", 1},
        {"bits8", 1}, {"bits16", 2}, {"bits32", 4}, {"bits64", 8}, {"bits1x8", 1},
        {"bits2x4", 1}, {"bits4x2", 1},
        {"qint8", 1}, {"quint8", 1}, {"qint32", 4}, {"quint4x2", 1}, {"quint2x4", 1},
    };
    auto it = table.find(std::string(name));
    if (it == table.end()) return std::nullopt;
    return it->second;
}

inline sv after_last_dot(sv s) {  // s.rsplit(".", 1)[-1]
    size_t d = s.rfind('.');
    return d == sv::npos ? s : s.substr(d + 1);
}

// `-?\d+\Z` (Unicode digits); value when it fits 18 digits, else *big.
bool py_int(sv s, int64_t* v, bool* big) {
    size_t i = 0;
    bool neg = false;
    if (i < s.size() && s[i] == '-') { neg = true; ++i; }
    if (i >= s.size()) return false;
    int64_t acc = 0;
    int digits = 0;
    *big = false;
    while (i < s.size()) {
        size_t n;
        auto c = (uint8_t)s[i];
        int d;
        if (c >= '0' && c <= '9') { d = c - '0'; n = 1; }
        else if (c >= 0x80) {
            uint32_t cp = cp_at(s, i, &n);
            if (!uni_decimal(cp)) return false;
            d = Py_UNICODE_TODECIMAL((Py_UCS4)cp);
        } else return false;
        if (digits > 0 || d != 0) ++digits;
        if (digits > 18) *big = true;
        else acc = acc * 10 + d;
        i += n;
    }
    *v = neg ? -acc : acc;
    return true;
}

std::string i128_str(__int128 v) {
    if (v == 0) return "0";
    bool neg = v < 0;
    unsigned __int128 u = neg ? (unsigned __int128)(-(v + 1)) + 1 : (unsigned __int128)v;
    std::string s;
    while (u) { s.push_back((char)('0' + (int)(u % 10))); u /= 10; }
    if (neg) s.push_back('-');
    std::reverse(s.begin(), s.end());
    return s;
}

// ---- the parser -------------------------------------------------------------------------

struct Parser {
    PyObject* path_obj = nullptr;
    PyThreadState* ts = nullptr;  // while the GIL is released

    // input: the decoded text not yet split into lines
    std::string buf;
    std::string cut;      // a UTF-8 sequence cut by the end of the last chunk
    int64_t next_line = 1;  // number of the line that starts buf

    // state of ingest/inductor_ir.py's _Parser
    bool has_top = false;
    Node top;
    Node* current = nullptr;
    Node* expect_snode_of = nullptr;
    // pending multi-line value
    bool pending = false;
    Node* pend_node = nullptr;
    int64_t pend_buf = -1;  // an index into top.buffers, or -1: pend_node
    std::string pend_field, pend_text;
    int64_t pend_start = 0, pend_balance = 0;
    // loop body / code block
    bool block = false;
    Node* block_node = nullptr;
    std::string block_name, block_text;
    size_t block_lines = 0, block_keep = 0;
    bool in_outputs = false, skip_outputs = false;
    int64_t step = 0, last_line = 0;
    LastUse live;
    NameMap<char> produced;
    NameMap<std::optional<int64_t>> inputs;
    std::unordered_set<std::string> collective_nodes;
    OptStr device;
    std::vector<std::string> symbolic;
    std::unordered_map<std::string, std::pair<int64_t, std::vector<std::string>>> concat_views;

    StrMap<size_t> layout_index;  // layout text -> its parse in layout_cache
    std::deque<Layout> layout_cache;
    std::unique_ptr<EventBatch> batch{new EventBatch()};
    std::vector<std::unique_ptr<EventBatch>> done;
    std::unique_ptr<EventBatch> spare;  // an exported batch, cleared: its memory reused
    std::string tmp;

    [[noreturn]] void fail(int64_t line, std::string msg) { throw ParseError{line, std::move(msg)}; }

    // -- Python, for the rare cases ---------------------------------------------------------
    struct Gil {
        Parser& p;
        explicit Gil(Parser& p_) : p(p_) { if (p.ts) PyEval_RestoreThread(p.ts); }
        ~Gil() { if (p.ts) p.ts = PyEval_SaveThread(); }
    };

    std::string py_lower(sv s) {
        bool ascii = true;
        for (char c : s) if ((uint8_t)c >= 0x80) { ascii = false; break; }
        std::string out(s);
        if (ascii) {
            for (auto& c : out) if (c >= 'A' && c <= 'Z') c = (char)(c - 'A' + 'a');
            return out;
        }
        Gil g(*this);
        PyObject* u = py_str(s);
        PyObject* l = u ? PyObject_CallMethod(u, "lower", nullptr) : nullptr;
        Py_XDECREF(u);
        if (!l) throw PyErrSet{};
        Py_ssize_t n;
        const char* d = PyUnicode_AsUTF8AndSize(l, &n);
        if (!d) { Py_DECREF(l); throw PyErrSet{}; }
        out.assign(d, (size_t)n);
        Py_DECREF(l);
        return out;
    }

    // tensors.storage_bytes itself, for integers beyond 64 bits.
    Storage py_storage(const std::vector<std::string>& size,
                       const std::vector<std::string>& stride, const OptStr& dtype) {
        Gil g(*this);
        Storage st;
        PyObject* mod = PyImport_ImportModule("tlview.ingest.tensors");
        if (!mod) throw PyErrSet{};
        auto list = [](const std::vector<std::string>& v) {
            PyObject* l = PyList_New((Py_ssize_t)v.size());
            for (size_t i = 0; l && i < v.size(); ++i) PyList_SET_ITEM(l, (Py_ssize_t)i, py_str(v[i]));
            return l;
        };
        PyObject* a = list(size);
        PyObject* b = list(stride);
        PyObject* d = dtype ? py_str(*dtype) : (Py_INCREF(Py_None), Py_None);
        PyObject* r = PyObject_CallMethod(mod, "storage_bytes", "NNN", a, b, d);
        Py_DECREF(mod);
        if (!r) throw PyErrSet{};
        auto text_attr = [&](const char* name, OptStr* out) {
            PyObject* v = PyObject_GetAttrString(r, name);
            if (!v) throw PyErrSet{};
            if (v != Py_None) {
                Py_ssize_t n;
                const char* s = PyUnicode_AsUTF8AndSize(v, &n);
                if (!s) { Py_DECREF(v); throw PyErrSet{}; }
                *out = std::string(s, (size_t)n);
            }
            Py_DECREF(v);
        };
        PyObject* bv = PyObject_GetAttrString(r, "bytes");
        if (!bv) { Py_DECREF(r); throw PyErrSet{}; }
        if (bv != Py_None) {
            int overflow = 0;
            long long x = PyLong_AsLongLongAndOverflow(bv, &overflow);
            if (overflow) {
                PyObject* t = PyObject_Str(bv);
                Py_ssize_t n;
                const char* s = t ? PyUnicode_AsUTF8AndSize(t, &n) : nullptr;
                if (s) st.big.assign(s, (size_t)n);
                Py_XDECREF(t);
                Py_DECREF(bv);
                Py_DECREF(r);
                if (!s) throw PyErrSet{};
                return st;  // the caller reports it
            }
            st.bytes = x;
        }
        Py_DECREF(bv);
        text_attr("expr", &st.expr);
        text_attr("reason", &st.reason);
        Py_DECREF(r);
        return st;
    }

    // -- tensors.storage_bytes ------------------------------------------------------------
    // overflow: set when the byte count is beyond int64 (the caller's error).
    Storage storage_bytes(const std::vector<std::string>& size,
                          const std::vector<std::string>& stride, const OptStr& dtype,
                          bool* overflow) {
        *overflow = false;
        std::optional<int> isz;
        if (dtype) isz = itemsize_of(after_last_dot(*dtype));
        std::string dname = dtype ? *dtype : "None";
        Storage st;
        if (size.size() != stride.size()) {
            std::string r = "sizes [";
            for (size_t i = 0; i < size.size(); ++i) { if (i) r += ", "; put_repr(r, size[i]); }
            r += "] and strides [";
            for (size_t i = 0; i < stride.size(); ++i) { if (i) r += ", "; put_repr(r, stride[i]); }
            r += "] differ in rank";
            st.reason = r;
            return st;
        }
        bool all_int = true, big = false;
        std::vector<int64_t> sv_(size.size()), tv(size.size());
        for (size_t i = 0; i < size.size() && all_int; ++i) {
            bool b1 = false;
            if (!py_int(size[i], &sv_[i], &b1)) all_int = false;
            big |= b1;
        }
        for (size_t i = 0; i < stride.size() && all_int; ++i) {
            bool b2 = false;
            if (!py_int(stride[i], &tv[i], &b2)) all_int = false;
            big |= b2;
        }
        if (all_int) {
            if (big) return from_python(size, stride, dtype, overflow);
            __int128 numel = 1;
            for (size_t i = 0; i < size.size(); ++i) {
                if (sv_[i] == 0) {
                    if (isz) { st.bytes = 0; return st; }
                    st.reason = "unknown dtype " + dname;
                    return st;
                }
                __int128 term = (__int128)(sv_[i] - 1) * (__int128)tv[i], sum;
                if (__builtin_add_overflow(numel, term, &sum))
                    return from_python(size, stride, dtype, overflow);
                numel = sum;
            }
            if (!isz) {
                st.expr = i128_str(numel) + "*itemsize(" + dname + ")";
                st.reason = "unknown dtype " + dname;
                return st;
            }
            __int128 total;
            if (__builtin_mul_overflow(numel, (__int128)*isz, &total))
                return from_python(size, stride, dtype, overflow);
            if (total > INT64_MAX || total < INT64_MIN) {
                *overflow = true;
                st.big = i128_str(total);
                return st;
            }
            st.bytes = (int64_t)total;
            return st;
        }
        std::string e = "(1";
        for (size_t i = 0; i < size.size(); ++i) {
            e += " + ((";
            e += size[i];
            e += ") - 1)*(";
            e += stride[i];
            e += ")";
        }
        e += ")*";
        e += isz ? std::to_string(*isz) : "itemsize(" + dname + ")";
        st.expr = e;
        st.reason = "symbolic size";
        return st;
    }

    Storage from_python(const std::vector<std::string>& size,
                        const std::vector<std::string>& stride, const OptStr& dtype,
                        bool* overflow) {
        Storage st = py_storage(size, stride, dtype);
        *overflow = !st.big.empty();
        return st;
    }

    // -- parse_layout ---------------------------------------------------------------------
    static bool device_arg(sv v, std::string* out) {
        // device\(type='(?P<type>\w+)'(?:, index=(?P<index>\d+))?\)
        static const sv head = "device(type='";
        if (!starts(v, head)) return false;
        size_t i = head.size(), e = word_end(v, i);
        if (e == i || e >= v.size() || v[e] != '\'') return false;
        sv type = v.substr(i, e - i);
        size_t k = e + 1;
        static const sv idx = ", index=";
        if (starts(v.substr(k), idx)) {
            size_t d = k + idx.size(), n;
            size_t de = d;
            while (de < v.size() && decimal_at(v, de, &n)) de += n;
            if (de > d && de < v.size() && v[de] == ')') {
                out->assign(type);
                out->push_back(':');
                out->append(v.substr(d, de - d));
                return true;
            }
        }
        if (k < v.size() && v[k] == ')') {
            out->assign(type);
            return true;
        }
        return false;
    }

    const Layout& parse_layout(sv text) {
        if (size_t* i = layout_index.find(text)) return layout_cache[*i];
        if (layout_cache.size() >= 8192) { layout_index.clear(); layout_cache.clear(); }
        *layout_index.emplace(text).first = layout_cache.size();
        Layout& L = layout_cache.emplace_back();
        L.has_kind = true;
        sv t = strip(text);
        size_t we = ident_end(t, 0);
        if (we == sv::npos || we >= t.size() || t[we] != '(' || t.back() != ')' ||
            t.size() < we + 2) {
            L.kind.assign(t);
            return L;
        }
        L.kind.assign(t.substr(0, we));
        sv args = t.substr(we + 1, t.size() - 1 - (we + 1));
        std::vector<std::string> parts;
        split_dims(args, parts);
        std::string dev;
        for (auto& a_ : parts) {
            sv a = a_;
            bool quoted = !a.empty() && (a[0] == '\'' || a[0] == '"');
            size_t eq = a.find('=');
            if (eq != sv::npos && !quoted) {
                sv key = strip(a.substr(0, eq)), val = strip(a.substr(eq + 1));
                if (key == "size") { split_dims(val, L.size); L.has_size = true; }
                else if (key == "stride") { split_dims(val, L.stride); L.has_stride = true; }
                else if (key == "device") {
                    if (device_arg(val, &dev)) L.device = dev; else L.device = std::string(val);
                } else if (key == "dtype") L.dtype = std::string(after_last_dot(val));
                else L.extra.set(key, val);
            } else if (quoted) {
                size_t b = 0, e = a.size();
                while (b < e && (a[b] == '\'' || a[b] == '"')) ++b;
                while (e > b && (a[e - 1] == '\'' || a[e - 1] == '"')) --e;
                L.device = std::string(a.substr(b, e - b));
            } else if (starts(a, "torch.")) {
                L.dtype = std::string(a.substr(6));
            } else if (device_arg(a, &dev)) {
                L.device = dev;
            }
        }
        if (L.has_size) shape_text(L.shape_text, L.size);
        if (L.has_stride) shape_text(L.stride_text, L.stride);
        return L;
    }

    // storage_bytes of a layout, computed on its first use.
    const Storage& layout_storage(const Layout& L, bool* overflow) {
        if (!L.has_storage) {
            L.storage = storage_bytes(L.size, L.stride, L.dtype, &L.overflow);
            L.has_storage = true;
        }
        *overflow = L.overflow;
        return L.storage;
    }

    // -- the regexes over field values ----------------------------------------------------
    // _DEP.finditer: f(kind, name) for each `\w+Dep\((?:name=)?'([^']+)'`
    template <class F>
    static void scan_deps(sv t, F&& f) {
        size_t pos = 0, from = 0;
        while (true) {
            size_t j = t.find('(', from);
            if (j == sv::npos) return;
            from = j + 1;
            size_t s = word_start(t, j, pos);
            sv kind = t.substr(s, j - s);
            if (kind.size() < 4 || !ends(kind, "Dep")) continue;
            size_t k = j + 1;
            if (starts(t.substr(k), "name=")) {
                size_t q = try_quote(t, k + 5);
                if (q != sv::npos) {
                    f(kind, t.substr(k + 6, q - (k + 6)));
                    pos = from = q + 1;
                    continue;
                }
            }
            size_t q = try_quote(t, k);
            if (q != sv::npos) {
                f(kind, t.substr(k + 1, q - (k + 1)));
                pos = from = q + 1;
            }
        }
    }
    // '[^']+' at k: index of the closing quote, or npos
    static size_t try_quote(sv t, size_t k) {
        if (k >= t.size() || t[k] != '\'') return sv::npos;
        size_t q = t.find('\'', k + 1);
        if (q == sv::npos || q == k + 1) return sv::npos;
        return q;
    }
    // _QUOTED.findall
    template <class F>
    static void scan_quoted(sv t, F&& f) {
        size_t pos = 0;
        while (true) {
            size_t i = t.find('\'', pos);
            if (i == sv::npos) return;
            size_t k = t.find('\'', i + 1);
            if (k == sv::npos) return;
            f(t.substr(i + 1, k - i - 1));
            pos = k + 1;
        }
    }
    // _USER.finditer: f(is_output, node, rest)
    template <class F>
    static void scan_users(sv t, F&& f) {
        static const sv head = "NodeUser(node=";
        size_t from = 0;
        while (true) {
            size_t s = t.find(head, from);
            if (s == sv::npos) return;
            size_t p = s + head.size();
            if (starts(t.substr(p), "OUTPUT")) {
                size_t r = p + 6, c = t.find(')', r);
                if (c != sv::npos) {
                    f(true, sv(), t.substr(r, c - r));
                    from = c + 1;
                    continue;
                }
            }
            size_t we = word_end(t, p);
            static const sv nm = "(name='";
            if (we > p && starts(t.substr(we), nm)) {
                size_t a = we + nm.size();
                size_t q = t.find('\'', a);
                if (q != sv::npos && q > a && q + 1 < t.size() && t[q + 1] == ')') {
                    size_t r = q + 2, c = t.find(')', r);
                    if (c != sv::npos) {
                        f(false, t.substr(a, q - a), t.substr(r, c - r));
                        from = c + 1;
                        continue;
                    }
                }
            }
            from = s + 1;
        }
    }

    static void dep_names(sv t, std::vector<std::string>& out) {
        out.clear();
        scan_deps(t, [&](sv kind, sv name) {
            if (kind == "WeakDep") return;
            for (auto& o : out) if (o == name) return;
            out.emplace_back(name);
        });
    }

    // -- line dispatch --------------------------------------------------------------------
    void line(int64_t number, sv text) {
        if (block && (text.empty() || text[0] == ' ' || text[0] == '\t')) {
            block_add(text);
            return;
        }
        if (pending && !text.empty() && text[0] == ' ' && pend_balance > 0) {
            pend_text.push_back(' ');
            pend_text.append(strip(text));
            pend_balance += balance(text);
            if (pend_balance <= 0) pending_done();
            return;
        }
        feed(number, text);
    }

    void block_add(sv text) {
        if (block_node != &top) return;  // a sub-node's loop body: never read
        if (block_lines++) block_text.push_back('\n');
        block_text.append(text);
        if (!blank(text)) block_keep = block_text.size();
    }
    void block_close() {
        if (block_node == &top)
            top.blocks.set(block_name, sv(block_text).substr(0, block_keep));
        block = false;
    }
    void block_open(Node* node, std::string name, sv first, bool with_first) {
        block = true;
        block_node = node;
        block_name = std::move(name);
        block_text.clear();
        block_lines = 0;
        block_keep = 0;
        if (with_first) block_add(first);
    }

    Fields& pend_target() {
        return pend_buf >= 0 ? top.buffers[(size_t)pend_buf].fields : pend_node->fields;
    }
    void pending_done() {
        pending = false;
        pend_target().set(pend_field, strip(pend_text));
    }
    void pending_open(Node* node, int64_t bufi, sv field, sv value, int64_t number,
                      int64_t bal) {
        pending = true;
        pend_node = node;
        pend_buf = bufi;
        pend_field.assign(field);
        pend_text.assign(value);
        pend_start = number;
        pend_balance = bal;
    }

    void feed(int64_t number, sv text) {
        last_line = number;
        if (pending) {
            bool indented = !text.empty() && (text[0] == ' ' || text[0] == '\t');
            if (!pend_balance && !indented) {
                pending = false;
                pend_target().set(pend_field, "");
                feed(number, text);
                return;
            }
            pend_text.push_back(' ');
            pend_text.append(strip(text));
            pend_balance += balance(text);
            if (pend_balance <= 0) pending_done();
            return;
        }
        if (block) {
            if ((!text.empty() && (text[0] == ' ' || text[0] == '\t')) || blank(text)) {
                block_add(text);
                return;
            }
            block_close();
        }
        if (in_outputs) {
            output_line(number, text);
            return;
        }
        if (blank(text)) return;
        if (text[0] == ' ' || text[0] == '\t') {
            if (!current) fail(number, "indented text before the first node header");
            if (current == &top) top.unknown.emplace_back(text);
            return;
        }
        Node* cur = current;
        if (cur) {
            Node* owner = nullptr;
            sv rest;
            if (starts(text, cur->prefix)) {
                owner = cur;
                rest = text.substr(cur->prefix.size());
            } else if (has_top && starts(text, top.prefix)) {
                owner = &top;
                rest = text.substr(top.prefix.size());
            }
            if (owner) {
                size_t eq = rest.find(" =");
                if (eq != sv::npos) {
                    sv field = rest.substr(0, eq);
                    if (field.find(' ') == sv::npos) {
                        sv value = rest.substr(eq + 2);
                        if (!value.empty() && value[0] == ' ') value.remove_prefix(1);
                        set_field(owner, field, value, number);
                        return;
                    }
                }
            }
        }
        if (!text.empty() && text.back() == ')') {
            if (header(number, text)) return;
        }
        if (!cur) {
            std::string m = "expected an Inductor scheduler node header like "
                            "'op0: SchedulerNode(ComputedBuffer)', got ";
            put_repr(m, first_chars(text, 80));
            fail(number, std::move(m));
        }
        expect_snode_of = nullptr;
        if (text.find("_layout = ") != sv::npos) {
            size_t we = ident_end(text, 0);
            if (we != sv::npos && we >= 8 && ends(text.substr(0, we), "_layout") &&
                starts(text.substr(we), " = ")) {
                sv name = text.substr(0, we - 7);
                sv value = text.substr(we + 3);
                if (cur == &top) top_layouts.set(name, value);
                else if (!top_layouts.has(name)) top_layouts.set(name, value);
                return;
            }
        }
        if (starts(text, "class ")) {
            size_t we = ident_end(text, 6);
            if (we != sv::npos && we - 6 >= 11 && ends(text.substr(0, we), "_loop_body") &&
                we < text.size() && text[we] == ':' && only_space(text, we + 1)) {
                block_open(cur, "loop_body", text, true);
                return;
            }
        }
        if (ends(text, " code:")) {
            size_t w1 = ident_end(text, 0);
            if (w1 != sv::npos && w1 < text.size() && text[w1] == ' ') {
                size_t w2 = word_end(text, w1 + 1);
                if (w2 > w1 + 1 && text.substr(w2) == " code:" && has_top) {
                    block_open(&top, py_lower(text.substr(w1 + 1, w2 - w1 - 1)) + "_code",
                               sv(), false);
                    return;
                }
            }
        }
        if (cur == &top) top.unknown.emplace_back(text);
    }
    Fields top_layouts;  // name -> layout text (order unused)

    // _HEADER: `name: Cls(ir)` then \s* to the end (the line ends with ")").
    bool header(int64_t number, sv text) {
        size_t w1 = ident_end(text, 0);
        if (w1 == sv::npos || !starts(text.substr(w1), ": ")) return false;
        size_t c0 = w1 + 2, w2 = ident_end(text, c0);
        if (w2 == sv::npos || w2 >= text.size() || text[w2] != '(') return false;
        size_t close = text.size() - 1;  // the final ")"
        sv ir = text.substr(w2 + 1, close - (w2 + 1));
        if (close < w2 + 1 || ir.find_first_of("()") != sv::npos) return false;
        sv name = text.substr(0, w1), cls = text.substr(c0, w2 - c0);
        if (expect_snode_of) {
            Node* parent = expect_snode_of;
            expect_snode_of = nullptr;
            if (parent->n_subs == parent->subs.size())
                parent->subs.push_back(std::make_unique<Node>());
            Node* sub = parent->subs[parent->n_subs++].get();
            sub->reset(name, cls, ir, number);
            parent->snodes.emplace_back(name);
            current = sub;
            return true;
        }
        if (has_top) finish_node();
        top.reset(name, cls, ir, number);
        top_layouts.clear();
        has_top = true;
        current = &top;
        return true;
    }

    void set_field(Node* owner, sv field, sv value, int64_t number) {
        expect_snode_of = nullptr;
        if (starts(field, "snodes[")) {
            // snodes\[(\d+)\]\Z
            size_t i = 7, n, e = i;
            while (e < field.size() && decimal_at(field, e, &n)) e += n;
            if (e > i && e + 1 == field.size() && field[e] == ']') {
                expect_snode_of = owner;
                return;
            }
        }
        if (field == "outputs" && strip(value) == "[") {
            skip_outputs = owner != &top;
            in_outputs = true;
            return;
        }
        int64_t bal = balance(value);
        if (bal > 0 || blank(value)) {
            pending_open(owner, -1, field, value, number, bal);
            return;
        }
        owner->fields.set(field, strip(value));
    }

    void output_line(int64_t number, sv text) {
        sv st = strip(text);
        if (st == "]" && !(!text.empty() && text[0] == ' ')) {
            in_outputs = false;
            skip_outputs = false;
            return;
        }
        if (skip_outputs) return;
        if (st.empty()) return;
        sv body = lstrip(text);
        size_t dot = body.find('.');
        auto& bufs = top.buffers;
        if (dot != sv::npos && !bufs.empty() && body.substr(0, dot) == bufs.back().name) {
            sv rest = body.substr(dot + 1);
            size_t eq = rest.find(" = ");
            if (eq != sv::npos) {
                sv field = rest.substr(0, eq), value = rest.substr(eq + 3);
                int64_t bal = balance(value);
                if (bal > 0)
                    pending_open(nullptr, (int64_t)bufs.size() - 1, field, value, number, bal);
                else
                    bufs.back().fields.set(field, strip(value));
                return;
            }
        }
        // _BUF_HEADER: \s+ name ": " Cls \s*\Z
        size_t s = space_end(text, 0);
        if (s > 0) {
            size_t w1 = ident_end(text, s);
            if (w1 != sv::npos && starts(text.substr(w1), ": ")) {
                size_t w2 = ident_end(text, w1 + 2);
                if (w2 != sv::npos && only_space(text, w2)) {
                    Buffer& b = bufs.add();
                    b.name.assign(text.substr(s, w1 - s));
                    b.ir_class.assign(text.substr(w1 + 2, w2 - w1 - 2));
                    b.line = number;
                    return;
                }
            }
        }
        if (!text.empty() && (text[0] == ' ' || text[0] == '\t') && !starts(st, "]")) {
            if (!bufs.empty()) {
                std::string& u = bufs.back().fields.slot("_unknown");
                u.append(st);
                u.push_back('\n');
                return;
            }
        }
        fail(number, "expected an output buffer line or ']' closing " + top.name + ".outputs");
    }

    // -- rows -----------------------------------------------------------------------------
    void end_row() {
        EventBatch& b = *batch;
        b.end_row();
        if (b.rows >= BATCH_ROWS || b.text_bytes() >= BATCH_TEXT) flush();
    }
    void flush() {
        if (batch->rows == 0) return;
        done.push_back(std::move(batch));
        if (spare) batch = std::move(spare);
        else batch.reset(new EventBatch());
    }
    static void set_opt(StrCol& c, const OptStr& v) {
        if (v) c.set(*v); else c.set_null();
    }
    static void set_opt(I64Col& c, const std::optional<int64_t>& v) {
        if (v) c.set(*v); else c.set_null();
    }

    // -- node completion (_finish_node) ---------------------------------------------------
    std::vector<std::string> writes, reads, met, names_tmp, later_;
    static bool in(const std::vector<std::string>& v, const std::string& x) {
        return std::find(v.begin(), v.end(), x) != v.end();
    }

    void finish_node() {
        Node& node = top;
        int64_t st = step++;
        const Fields& f = node.fields;
        OptStr dev;
        const std::string* gd = f.get("group.device");
        if (gd && !gd->empty()) {
            dev = *gd;
        } else {
            for (size_t i = 0; i < node.n_subs; ++i) {
                const std::string* sg = node.subs[i]->fields.get("group.device");
                if (sg) { dev = *sg; break; }
            }
        }
        static const std::string empty;
        auto field = [&](sv k) -> sv {
            const std::string* v = f.get(k);
            return v ? sv(*v) : sv(empty);
        };
        dep_names(field("writes"), writes);
        dep_names(field("unmet_dependencies"), reads);
        dep_names(field("met_dependencies"), met);
        for (auto& n : met)
            if (std::find(writes.begin(), writes.end(), n) == writes.end()) reads.push_back(n);
        OptStr kernel;
        if (const std::string* k = f.get("node.kernel"); k && *k != "None") kernel = *k;

        // attrs
        std::string& a = batch->attrs.begin();
        a.append("{\"line\":");
        a.append(std::to_string(node.line));
        if (const std::string* v = f.get("group.iteration")) {
            a.append(",\"group_iteration\":");
            put_json_string(a, *v, true);
        }
        if (const std::string* v = f.get("sizes")) {
            a.append(",\"sizes\":");
            put_json_string(a, *v, true);
        }
        {
            sv um = field("unmet_dependencies"), mt = field("met_dependencies");
            tmp.assign(um);
            tmp.append(mt);
            if (tmp.find("WeakDep(") != std::string::npos) {
                bool any = false;
                scan_deps(tmp, [&](sv kind, sv name) {
                    if (kind != "WeakDep") return;
                    a.append(any ? "," : ",\"weak_deps\":[");
                    any = true;
                    put_json_string(a, name, true);
                });
                if (any) a.push_back(']');
            }
        }
        if (!node.snodes.empty()) {
            a.append(",\"snodes\":");
            json_str_list(a, node.snodes);
        }
        {
            static const sv known[] = {"writes", "unmet_dependencies", "met_dependencies",
                                       "group.device", "group.iteration", "sizes",
                                       "node.kernel"};
            bool any = false;
            for (auto& kv : f) {
                if (std::find(std::begin(known), std::end(known), sv(kv.first)) !=
                    std::end(known))
                    continue;
                a.append(any ? "," : ",\"fields\":{");
                any = true;
                put_json_string(a, kv.first, true);
                a.push_back(':');
                put_json_string(a, kv.second, true);
            }
            if (any) a.push_back('}');
        }
        for (auto& kv : node.blocks) {
            a.push_back(',');
            put_json_string(a, kv.first, true);
            a.push_back(':');
            put_json_string(a, kv.second, true);
        }
        if (!node.unknown.empty()) {
            a.append(",\"unknown_lines\":");
            json_str_list(a, node.unknown);
        }
        a.push_back('}');

        if (!dev) {
            // buffer_layouts: {name: layout} (a repeated name: first place, last value)
            for (size_t i = 0; i < node.buffers.size() && !dev; ++i) {
                const std::string& nm = node.buffers[i].name;
                bool seen = false;
                for (size_t j = 0; j < i; ++j)
                    if (node.buffers[j].name == nm) { seen = true; break; }
                if (seen) continue;
                const std::string* lay = nullptr;
                for (size_t j = node.buffers.size(); j-- > i;)
                    if (node.buffers[j].name == nm) {
                        lay = node.buffers[j].fields.get("layout");
                        break;
                    }
                if (lay && !lay->empty()) {
                    const Layout& L = parse_layout(*lay);
                    if (L.device && !L.device->empty()) dev = *L.device;
                }
            }
        }
        if (dev && !dev->empty() && !device) device = dev;

        EventBatch& b = *batch;
        b.attrs.commit();
        b.kind.set("node_scheduled");
        b.step.set(st);
        b.node.set(node.name);
        b.node_class.set(node.cls);
        b.ir_type.set(node.ir);
        set_opt(b.kernel, kernel);
        set_opt(b.device, dev);
        b.reads.begin_list();
        for (auto& r : reads) b.reads.item(r);
        b.reads.end_list();
        b.writes.begin_list();
        for (auto& w : writes) b.writes.item(w);
        b.writes.end_list();
        b.line.set(node.line);
        end_row();

        // links: (buffer index, target, relation)
        struct Link { size_t buf; std::string target; bool mutation; };
        std::vector<Link> links;
        for (size_t i = 0; i < node.buffers.size(); ++i) {
            for (int r = 0; r < 2; ++r) {
                const std::string* v = node.buffers[i].fields.get(r == 0 ? "mutations" : "aliases");
                if (!v) continue;
                scan_quoted(*v, [&](sv t) { links.push_back(Link{i, std::string(t), r == 0}); });
            }
        }
        auto& later = later_;
        later.clear();
        for (auto& l : links) {
            if (produced.contains(l.target) || inputs.contains(l.target)) continue;
            const std::string* lay = node.buffers[l.buf].fields.get("layout");
            if (lay && !lay->empty() && parse_layout(*lay).kind == "NonOwningLayout")
                if (!in(later, l.target)) later.push_back(l.target);
        }
        names_tmp = reads;
        for (auto& l : links)
            if (!in(later, l.target)) names_tmp.push_back(l.target);
        declare_inputs(node, names_tmp);
        for (auto& buf : node.buffers) allocate(node, st, buf);
        for (auto& buf : node.buffers) link_concat_views(buf.name);
        for (auto& l : links) {
            const std::string& bname = node.buffers[l.buf].name;
            if (in(later, l.target)) {
                auto it = concat_views.find(l.target);
                if (it == concat_views.end()) {
                    concat_views.emplace(l.target, std::make_pair(st, std::vector<std::string>{bname}));
                } else {
                    it->second.first = std::min(it->second.first, st);
                    it->second.second.push_back(bname);
                }
            } else {
                live.link(bname, l.target);
            }
            EventBatch& e = *batch;
            e.kind.set("buffer_aliased");
            e.step.set(st);
            e.buffer.set(bname);
            e.target.set(l.target);
            e.relation.set(l.mutation ? "mutation" : "alias");
            e.node.set(node.name);
            end_row();
        }
        static const std::string COLL = "_CollectiveKernel", WAIT = "_WaitKernel";
        if (node.ir == COLL || node.cls == COLL) {
            collective_nodes.insert(node.name);
            collective(node, st, kernel);
        } else if (node.ir == WAIT || node.cls == WAIT) {
            OptStr coll;
            for (auto& r : reads) {
                OpenBuf* ob = live.open.get(r);
                if (ob && collective_nodes.count(ob->producer)) { coll = ob->producer; break; }
            }
            EventBatch& e = *batch;
            e.kind.set("collective_waited");
            e.step.set(st);
            e.node.set(node.name);
            set_opt(e.collective, coll);
            std::string& at = e.attrs.begin();
            at.append("{\"reads\":");
            json_str_list(at, reads);
            at.push_back('}');
            e.attrs.commit();
            end_row();
        }
        std::vector<const std::string*> nn;
        nn.push_back(&node.name);
        for (auto& s : node.snodes) nn.push_back(&s);
        live.node(nn, st);
        frees();
    }

    void frees() {
        for (auto& c : live.closed) {
            if (inputs.contains(c.buffer)) continue;
            EventBatch& e = *batch;
            e.kind.set("buffer_freed");
            e.step.set(c.last);
            e.buffer.set(c.buffer);
            e.reason.set(c.reason);
            end_row();
        }
        live.closed.clear();
    }

    void link_concat_views(const std::string& name) {
        auto it = concat_views.find(name);
        if (it == concat_views.end()) return;
        auto views = std::move(it->second.second);
        concat_views.erase(it);
        for (auto& v : views)
            if (live.open.get(v)) live.link(v, name);
    }

    static void shape_text(std::string& out, const std::vector<std::string>& dims) {
        out.assign("[");
        for (size_t i = 0; i < dims.size(); ++i) {
            if (i) out.append(", ");
            out.append(dims[i]);
        }
        out.push_back(']');
    }

    [[noreturn]] void out_of_range(int64_t line, const std::string& name, const Storage& s) {
        fail(line, "buffer " + name + ": " + s.big + " bytes is out of range (more than 64 bits)");
    }

    void declare_inputs(const Node& node, const std::vector<std::string>& names) {
        for (auto& name : names) {
            if (produced.contains(name) || inputs.contains(name)) continue;
            const std::string* li = top_layouts.get(name);
            static const Layout none;
            const Layout& L = (li && !li->empty()) ? parse_layout(*li) : none;
            std::optional<Storage> stg;
            if (L.has_size && L.has_stride) {
                bool overflow;
                stg = layout_storage(L, &overflow);
                if (overflow) out_of_range(node.line, name, *stg);
            }
            inputs[name] = stg ? stg->bytes : std::nullopt;
            EventBatch& e = *batch;
            e.kind.set("buffer_allocated");
            e.step.set_null();
            e.buffer.set(name);
            set_opt(e.bytes, stg ? stg->bytes : std::nullopt);
            e.node.set_null();
            if (L.has_kind) e.layout.set(L.kind); else e.layout.set_null();
            set_opt(e.dtype, L.dtype);
            if (L.has_size) e.shape.set(L.shape_text); else e.shape.set_null();
            if (L.has_stride) e.stride.set(L.stride_text); else e.stride.set_null();
            set_opt(e.device, L.device);
            set_opt(e.size_expr, stg ? stg->expr : std::nullopt);
            e.is_input.set(true);
            e.line.set(node.line);
            end_row();
        }
    }

    // A buffer's attrs written straight as JSON, or through a JObj when one of its fields
    // has the name of a key allocate() sets itself (the dict then overwrites in place).
    struct AttrWriter {
        JObj* obj;
        std::string& out;
        bool first = true;
        std::string& slot(sv k) {
            if (obj) return obj->slot(k);
            out.push_back(first ? '{' : ',');
            first = false;
            put_json_string(out, k, true);
            out.push_back(':');
            return out;
        }
        void str(sv k, sv v) { put_json_string(slot(k), v, true); }
        void finish() {
            if (obj) obj->write(out);
            else out.append(first ? "{}" : "}");
        }
    };
    static bool own_attr_key(sv k) {
        static const sv keys[] = {"ir_class", "layout_args", "written_from_step",
                                  "written_by_views", "owns_no_storage", "bytes_unknown",
                                  "layout_rule"};
        for (sv x : keys)
            if (k == x) return true;
        return false;
    }
    std::vector<std::pair<bool, sv>> users_;  // (is OUTPUT, node name)
    std::string attrs_;

    void allocate(const Node& node, int64_t st, const Buffer& buf) {
        const std::string* lay_text = buf.fields.get("layout");
        if (!lay_text)
            fail(buf.line, "buffer " + buf.name + " of " + node.name + " has no .layout line");
        const Layout& L = parse_layout(*lay_text);
        const std::string& kind = L.kind;
        auto& users = users_;
        users.clear();
        if (const std::string* u = buf.fields.get("users")) {
            scan_users(*u, [&](bool output, sv name, sv rest) {
                if (rest.find("is_weak=True") != sv::npos) return;
                users.emplace_back(output, name);
            });
        }
        produced.emplace(buf.name);
        bool clash = false;
        for (auto& kv : buf.fields)
            if (own_attr_key(kv.first)) clash = true;
        JObj obj;
        attrs_.clear();
        AttrWriter at{clash ? &obj : nullptr, attrs_};
        at.str("ir_class", buf.ir_class);
        if (!L.extra.empty()) {
            std::string& s = at.slot("layout_args");
            s.push_back('{');
            bool first = true;
            for (auto& kv : L.extra) {
                if (!first) s.push_back(',');
                first = false;
                put_json_string(s, kv.first, true);
                s.push_back(':');
                put_json_string(s, kv.second, true);
            }
            s.push_back('}');
        }
        for (auto& kv : buf.fields)
            if (kv.first != "layout" && kv.first != "users") at.str(kv.first, kv.second);
        int64_t alloc_step = st;
        auto views = concat_views.find(buf.name);
        if (views != concat_views.end()) {
            alloc_step = std::min(st, views->second.first);
            at.slot("written_from_step").append(std::to_string(views->second.first));
            json_str_list(at.slot("written_by_views"), views->second.second);
        }
        if (kind == "NonOwningLayout") {
            std::string into = "written into ";
            bool first = true;
            if (const std::string* al = buf.fields.get("aliases"))
                scan_quoted(*al, [&](sv t) {
                    if (!first) into.append(", ");
                    first = false;
                    into.append(t);
                });
            at.str("owns_no_storage", into);
        }
        std::optional<int64_t> nbytes;
        OptStr size_expr;
        if (kind == "NoneLayout" || kind == "MultiOutputLayout" ||
            kind == "MutationLayoutSHOULDREMOVE" || kind == "NonOwningLayout") {
            nbytes = 0;
        } else if (L.has_size && L.has_stride) {
            bool overflow;
            const Storage& s = layout_storage(L, &overflow);
            if (overflow) out_of_range(buf.line, buf.name, s);
            nbytes = s.bytes;
            size_expr = s.expr;
            if (s.reason) {
                at.str("bytes_unknown", *s.reason);
                symbolic.push_back(buf.name);
            }
            if (kind != "FixedLayout")
                at.str("layout_rule", kind + " sized by the FixedLayout storage rule");
        } else {
            at.str("bytes_unknown", "layout " + kind + " has no size/stride");
            symbolic.push_back(buf.name);
        }
        live.buffer(buf.name, st, users, buf.line, nbytes, node.name);
        EventBatch& e = *batch;
        e.kind.set("buffer_allocated");
        e.step.set(alloc_step);
        e.buffer.set(buf.name);
        set_opt(e.bytes, nbytes);
        e.node.set(node.name);
        e.layout.set(kind);
        set_opt(e.dtype, L.dtype);
        if (L.has_size) e.shape.set(L.shape_text); else e.shape.set_null();
        if (L.has_stride) e.stride.set(L.stride_text); else e.stride.set_null();
        set_opt(e.device, L.device);
        set_opt(e.size_expr, size_expr);
        e.is_input.set(false);
        e.line.set(buf.line);
        at.finish();
        e.attrs.set(attrs_);
        end_row();
    }

    void collective(const Node& node, int64_t st, const OptStr& kernel) {
        sv k = (kernel && !kernel->empty()) ? sv(*kernel) : sv(node.ir);
        std::vector<sv> op;
        size_t s = 0;
        while (true) {
            size_t d = k.find('.', s);
            if (d == sv::npos) { op.push_back(k.substr(s)); break; }
            op.push_back(k.substr(s, d - s));
            s = d + 1;
        }
        sv name = (op.size() >= 2 && (op.back() == "default" || op.back() == "out"))
                      ? op[op.size() - 2] : op.back();
        std::vector<std::string> touched;
        auto add = [&](sv n) {
            for (auto& t : touched) if (t == n) return;
            touched.emplace_back(n);
        };
        for (auto& r : reads) add(r);
        for (auto& buf : node.buffers)
            for (int r = 0; r < 2; ++r)
                if (const std::string* v = buf.fields.get(r == 0 ? "mutations" : "aliases"))
                    scan_quoted(*v, add);
        bool all_known = true, any = false;
        int64_t mx = 0;
        for (auto& t : touched) {
            std::optional<int64_t> b;
            if (OpenBuf* ob = live.open.get(t)) b = ob->nbytes;
            else if (auto* in = inputs.find(t)) b = *in;
            if (!b) { all_known = false; continue; }
            mx = any ? std::max(mx, *b) : *b;
            any = true;
        }
        EventBatch& e = *batch;
        e.kind.set("collective_issued");
        e.step.set(st);
        e.node.set(node.name);
        e.op.set(name);
        if (any && all_known) e.bytes.set(mx); else e.bytes.set_null();
        e.buffers.begin_list();
        for (auto& t : touched) e.buffers.item(t);
        e.buffers.end_list();
        std::string& at = e.attrs.begin();
        at.append("{\"kernel\":");
        if (kernel) put_json_string(at, *kernel, true); else at.append("null");
        at.push_back('}');
        e.attrs.commit();
        end_row();
    }

    // -- end of file (finish) -------------------------------------------------------------
    void finish() {
        int64_t end = last_line;
        if (pending) fail(pend_start, "file ends inside a bracketed value: truncated?");
        if (in_outputs) fail(end, "file ends inside an outputs list (missing ']'): truncated?");
        if (expect_snode_of) fail(end, "file ends before a fused node's sub-node: truncated?");
        if (block) block_close();
        if (!has_top)
            fail(end ? end : 1, "no scheduler nodes found: expected lines like "
                                "'op0: SchedulerNode(ComputedBuffer)'");
        finish_node();
        std::string mbuf, muser;
        int64_t mline = 0;
        if (!live.finish(step - 1, &mbuf, &muser, &mline))
            fail(mline, mbuf + " is used by " + muser +
                            ", which never appears in the dump: truncated?");
        frees();
        flush();
    }

    // -- input: 1 MiB chunks, checked as ingest/lines.py read_text checks them ------------
    void chunk(sv data) {
        // lines.py: a NUL whose preceding bytes in this chunk decode (or stop at a cut
        // character) is reported first; then the first byte that is not UTF-8.
        size_t nul = data.find('\0');
        if (nul != sv::npos) {
            bool cutp = false;
            size_t ok = utf8_valid_prefix(data.substr(0, nul), &cutp);
            if (ok == nul || cutp)
                fail(next_line + count_lines(data.substr(0, nul)),
                     "NUL byte in a text dump: binary data?");
        }
        std::string joined;
        sv s = data;
        size_t lead = cut.size();
        if (lead) {
            joined = cut;
            joined.append(data);
            s = joined;
            cut.clear();
        }
        bool cutp = false;
        size_t ok = utf8_valid_prefix(s, &cutp);
        if (ok < s.size() && !cutp) {
            fail(next_line + count_lines(s.substr(0, ok)),
                 "not UTF-8 text (byte " + hex_byte((uint8_t)s[ok]) + "): expected a text dump");
        }
        sv text = s.substr(0, ok);
        cut.assign(s.substr(ok));
        if (text.find('\0') != sv::npos) {
            size_t p = text.find('\0');
            fail(next_line + count_lines(text.substr(0, p)),
                 "NUL byte in a text dump: binary data?");
        }
        if (text.find('\r') == sv::npos) {
            // lines straight from the chunk; only a line cut by its end is copied (buf)
            const char* base = text.data();
            size_t i = 0;
            if (!buf.empty()) {
                const void* nl = std::memchr(base, '\n', text.size());
                if (!nl) {
                    buf.append(text);
                    return;
                }
                size_t e = (size_t)((const char*)nl - base);
                buf.append(base, e);
                line(next_line, buf);
                ++next_line;
                i = e + 1;
            }
            while (true) {
                const void* nl = std::memchr(base + i, '\n', text.size() - i);
                if (!nl) break;
                size_t e = (size_t)((const char*)nl - base);
                line(next_line, sv(base + i, e - i));
                ++next_line;
                i = e + 1;
            }
            buf.assign(base + i, text.size() - i);
            return;
        }
        size_t start = buf.size();
        {
            // text.replace("\r\n", "\n") within this chunk's text only
            buf.reserve(buf.size() + text.size());
            size_t i = 0;
            while (i < text.size()) {
                size_t r = text.find("\r\n", i);
                if (r == sv::npos) { buf.append(text.substr(i)); break; }
                buf.append(text.substr(i, r - i));
                buf.push_back('\n');
                i = r + 2;
            }
        }
        // every complete line
        size_t pos = 0;
        const char* base = buf.data();
        size_t scan = start;
        while (true) {
            const void* nl = std::memchr(base + scan, '\n', buf.size() - scan);
            if (!nl) break;
            size_t e = (size_t)((const char*)nl - base);
            line(next_line, sv(base + pos, e - pos));
            ++next_line;
            pos = scan = e + 1;
        }
        buf.erase(0, pos);
    }

    void end_of_input() {
        if (!cut.empty())
            fail(next_line, "not UTF-8 text (byte " + hex_byte((uint8_t)cut[0]) +
                                "): expected a text dump");
        if (!buf.empty()) {
            line(next_line, buf);
            ++next_line;
            buf.clear();
        }
        finish();
    }
};

// ---- the Python type --------------------------------------------------------------------

struct PyParser {
    PyObject_HEAD
    Parser* p;
    PyObject* path;
    bool failed;
};

PyObject* outputs(PyParser* self) {
    Parser& P = *self->p;
    PyObject* list = PyList_New(0);
    if (!list) return nullptr;
    for (auto& b : P.done) {
        PyObject* e = b->export_py();
        PyObject* item = e ? Py_BuildValue("(sN)", "batch", e) : nullptr;
        b->clear();
        P.spare = std::move(b);
        if (!item || PyList_Append(list, item) < 0) {
            Py_XDECREF(item);
            Py_DECREF(list);
            P.done.clear();
            return nullptr;
        }
        Py_DECREF(item);
    }
    P.done.clear();
    return list;
}

template <class F>
PyObject* guarded(PyParser* self, F&& body) {
    if (self->failed) {
        PyErr_SetString(PyExc_RuntimeError, "the parser failed earlier");
        return nullptr;
    }
    ParseError err{0, {}};
    bool bad = false, pyerr = false;
    std::string other;
    Parser& P = *self->p;
    P.ts = PyEval_SaveThread();
    try {
        body();
    } catch (const ParseError& e) {
        err = e;
        bad = true;
    } catch (const PyErrSet&) {
        pyerr = true;
    } catch (const std::bad_alloc&) {
        other = "out of memory";
    } catch (const std::exception& e) {
        other = e.what();
    }
    PyEval_RestoreThread(P.ts);
    P.ts = nullptr;
    if (bad || pyerr || !other.empty()) {
        self->failed = true;
        if (bad) raise_parse_error(self->path, err);
        else if (!other.empty()) PyErr_SetString(PyExc_RuntimeError, other.c_str());
        return nullptr;
    }
    return outputs(self);
}

PyObject* feed(PyParser* self, PyObject* arg) {
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0) return nullptr;
    sv data(static_cast<const char*>(view.buf), (size_t)view.len);
    PyObject* r = guarded(self, [&] { self->p->chunk(data); });
    PyBuffer_Release(&view);
    return r;
}

PyObject* finish(PyParser* self, PyObject*) {
    PyObject* r = guarded(self, [&] { self->p->end_of_input(); });
    if (!r) return nullptr;
    Parser& P = *self->p;
    PyObject* sym = PyList_New((Py_ssize_t)P.symbolic.size());
    if (!sym) { Py_DECREF(r); return nullptr; }
    for (size_t i = 0; i < P.symbolic.size(); ++i)
        PyList_SET_ITEM(sym, (Py_ssize_t)i, py_str(P.symbolic[i]));
    PyObject* dev = P.device ? py_str(*P.device) : (Py_INCREF(Py_None), Py_None);
    PyObject* end = Py_BuildValue("(sLNN)", "end", (long long)P.step, dev, sym);
    if (!end || PyList_Append(r, end) < 0) { Py_XDECREF(end); Py_DECREF(r); return nullptr; }
    Py_DECREF(end);
    return r;
}

PyObject* line(PyParser* self, PyObject*) {
    // where reading stands: the line the unread text starts on (lines.py's gzip errors)
    return PyLong_FromLongLong(self->p->next_line);
}

int init(PyParser* self, PyObject* args, PyObject*) {
    PyObject* path;
    if (!PyArg_ParseTuple(args, "U", &path)) return -1;
    Py_INCREF(path);
    Py_XSETREF(self->path, path);
    delete self->p;
    self->p = new Parser();
    self->failed = false;
    return 0;
}

void dealloc(PyParser* self) {
    delete self->p;
    Py_XDECREF(self->path);
    Py_TYPE(self)->tp_free((PyObject*)self);
}

PyMethodDef methods[] = {
    {"feed", (PyCFunction)feed, METH_O,
     "feed(chunk: bytes) -> list: parse the lines the chunk completes"},
    {"line", (PyCFunction)line, METH_NOARGS, "line() -> int: the line where reading stands"},
    {"finish", (PyCFunction)finish, METH_NOARGS,
     "finish() -> list: the end of the input; the last batches, then ('end', n_steps, "
     "device, symbolic_buffers)"},
    {nullptr, nullptr, 0, nullptr}};

PyTypeObject ParserType = {PyVarObject_HEAD_INIT(nullptr, 0)};

}  // namespace

int add_inductor_ir(PyObject* module) {
    return add_type(module, ParserType, "InductorIrParser",
                    "InductorIrParser(path): scheduler-IR dump bytes to event columns",
                    sizeof(PyParser), (initproc)init, (destructor)dealloc, methods);
}

}  // namespace tlv
