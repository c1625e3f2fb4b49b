// What the scheduler-IR reader (inductor_ir.cpp) holds of a node: its fields, buffers,
// storages and layouts, attrs written as JSON, and tensors.py's ITEMSIZE.
#pragma once

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

namespace tlv::ir {

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
            if (p.first == k) {
                p.second.clear();
                return p.second;
            }
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
        name.assign(n);
        cls.assign(c);
        ir.assign(i);
        line = ln;
        prefix = name;
        prefix.push_back('.');
        fields.clear();
        buffers.clear();
        snodes.clear();
        n_subs = 0;
        blocks.clear();
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

// ---- itemsize (ingest/tensors.py ITEMSIZE) ----------------------------------------------

inline std::optional<int> itemsize_of(sv name) {
    static const std::unordered_map<std::string, int> table = {
        {"bool", 1},        {"b8", 1},
        {"uint8", 1},       {"u8", 1},
        {"int8", 1},        {"i8", 1},
        {"uint16", 2},      {"u16", 2},
        {"int16", 2},       {"i16", 2},
        {"uint32", 4},      {"u32", 4},
        {"int32", 4},       {"i32", 4},
        {"uint64", 8},      {"u64", 8},
        {"int64", 8},       {"i64", 8},
        {"float16", 2},     {"f16", 2},
        {"half", 2},        {"bfloat16", 2},
        {"bf16", 2},        {"float32", 4},
        {"f32", 4},         {"float", 4},
        {"float64", 8},     {"f64", 8},
        {"double", 8},      {"complex32", 4},
        {"c32", 4},         {"complex64", 8},
        {"c64", 8},         {"complex128", 16},
        {"c128", 16},       {"float8_e4m3fn", 1},
        {"f8e4m3fn", 1},    {"float8_e5m2", 1},
        {"f8e5m2", 1},      {"float8_e4m3fnuz", 1},
        {"f8e4m3fnuz", 1},  {"float8_e5m2fnuz", 1},
        {"f8e5m2fnuz", 1},  {"float8_e8m0fnu", 1},
        {"f8e8m0fnu", 1},   {"float4_e2m1fn_x2", 1},
        {"f4e2m1fn_x2", 1}, {"bits8", 1},
        {"bits16", 2},      {"bits32", 4},
        {"bits64", 8},      {"bits1x8", 1},
        {"bits2x4", 1},     {"bits4x2", 1},
        {"qint8", 1},       {"quint8", 1},
        {"qint32", 4},      {"quint4x2", 1},
        {"quint2x4", 1},
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
inline bool py_int(sv s, int64_t* v, bool* big) {
    size_t i = 0;
    bool neg = false;
    if (i < s.size() && s[i] == '-') {
        neg = true;
        ++i;
    }
    if (i >= s.size()) return false;
    int64_t acc = 0;
    int digits = 0;
    *big = false;
    while (i < s.size()) {
        size_t n;
        auto c = (uint8_t)s[i];
        int d;
        if (c >= '0' && c <= '9') {
            d = c - '0';
            n = 1;
        } else if (c >= 0x80) {
            uint32_t cp = cp_at(s, i, &n);
            if (!uni_decimal(cp)) return false;
            d = Py_UNICODE_TODECIMAL((Py_UCS4)cp);
        } else
            return false;
        if (digits > 0 || d != 0) ++digits;
        if (digits > 18)
            *big = true;
        else
            acc = acc * 10 + d;
        i += n;
    }
    *v = neg ? -acc : acc;
    return true;
}

inline std::string i128_str(__int128 v) {
    if (v == 0) return "0";
    bool neg = v < 0;
    unsigned __int128 u = neg ? (unsigned __int128)(-(v + 1)) + 1 : (unsigned __int128)v;
    std::string s;
    while (u) {
        s.push_back((char)('0' + (int)(u % 10)));
        u /= 10;
    }
    if (neg) s.push_back('-');
    std::reverse(s.begin(), s.end());
    return s;
}

}  // namespace tlv::ir
