// The values of a pickle as the snapshot reader holds them (cuda_snapshot.cpp): tagged
// scalars, interned text and shared containers, with Python's equality and hashing of
// dict keys and set members (ingest/pickle_stream.py is the specification).
#pragma once

#include <Python.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <deque>
#include <list>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "columns.hpp"
#include "common.hpp"
#include "pyjson.hpp"

namespace tlv::snapshot {

using i128 = __int128;
constexpr int64_t kMinBlock = 512;
constexpr int64_t kSmallSize = 1 << 20;
constexpr int64_t kI64Max = INT64_MAX;
constexpr int64_t kTimeLimit = INT64_MAX / 1000;
constexpr size_t kMaxExamples = 20;
constexpr size_t kBatchRows = 16384;  // rows in flight (parse thread, queue, INSERT) stay small
// pickle_stream.MAX_NESTING, MAX_KEY_VALUES: every value read is checked against them
// (Parser::check_plain, Parser::hashable), so the readers below may recurse.
constexpr int kMaxNesting = 100;
constexpr size_t kMaxKeyValues = 10000;
// pickle_stream.MAX_VALUES_FLOOR, MAX_VALUES_PER_BYTE: the values handed over, each shared
// container once per place, at most this floor plus this many per byte read so far
// (Parser::spend); counts saturate at kValuesSaturated, far above any bound.
constexpr uint64_t kValuesFloor = 1000000;
constexpr uint64_t kValuesPerByte = 16;
constexpr uint64_t kValuesSaturated = uint64_t(1) << 62;
inline uint64_t add_values(uint64_t a, uint64_t b) {
    return a >= kValuesSaturated || b >= kValuesSaturated - a ? kValuesSaturated : a + b;
}
// a dict's keys or a set's members hashed from this many on (a Flight Recorder entry's
// 22 text keys are found faster by pointer than hashed)
constexpr size_t kIndexFrom = 32;
const char* const kPlain =
    "expected the plain data torch writes (dicts, lists, text and numbers";

// ---- values ------------------------------------------------------------------------------

enum class T : uint8_t {
    None,
    Bool,
    Int,
    Big,
    Float,
    Str,
    Bytes,
    BArr,
    List,
    Tuple,
    Dict,
    Set,
    FSet,
    Frame,
    Stack,
    Streamed
};

struct Obj;
using ObjP = std::shared_ptr<Obj>;

struct Val {
    T t = T::None;
    union {
        int64_t i;  // Bool (0/1), Int, Frame id, Stack id (0: no stack)
        double f;  // Float
        const std::string* s;  // Str, Bytes, BArr, Big (little-endian two's complement)
    };
    ObjP o;  // List, Tuple, Dict, Set, FSet
    Val() : i(0) {}
    static Val none() { return Val(); }
    static Val boolean(bool b) {
        Val v;
        v.t = T::Bool;
        v.i = b;
        return v;
    }
    static Val integer(int64_t x) {
        Val v;
        v.t = T::Int;
        v.i = x;
        return v;
    }
    static Val flt(double x) {
        Val v;
        v.t = T::Float;
        v.f = x;
        return v;
    }
    static Val str(T t, const std::string* s) {
        Val v;
        v.t = t;
        v.s = s;
        return v;
    }
    static Val obj(T t, ObjP o) {
        Val v;
        v.t = t;
        v.o = std::move(o);
        return v;
    }
    static Val id(T t, int64_t x) {
        Val v;
        v.t = t;
        v.i = x;
        return v;
    }
    bool container() const { return t >= T::List && t <= T::FSet; }
};

// A dict's keys or a set's members by hash (hash_of) -> their index in items.
using KeyIndex = std::unordered_multimap<uint64_t, uint32_t>;

struct Obj {
    T kind;
    std::vector<Val> items;  // list/tuple/set/frozenset items; a dict's keys
    std::vector<Val> vals;  // a dict's values
    std::unique_ptr<KeyIndex> index;  // a dict or set of kIndexFrom or more: items hashed
    explicit Obj(T k) : kind(k) {}
    Obj(const Obj& o)
        : kind(o.kind),
          items(o.items),
          vals(o.vals),
          index(o.index ? std::make_unique<KeyIndex>(*o.index) : nullptr) {}
    ~Obj();
};

// The containers a value holds are released one after another, not by recursion: a
// pickle can nest a million lists before any check sees them (it builds from the inside
// out), and freeing them recursively would overflow the stack.
inline Obj::~Obj() {
    static thread_local std::vector<ObjP>* pending = nullptr;
    std::vector<ObjP> mine;
    std::vector<ObjP>& q = pending ? *pending : mine;
    for (auto& v : items)
        if (v.o) q.push_back(std::move(v.o));
    for (auto& v : vals)
        if (v.o) q.push_back(std::move(v.o));
    if (pending) return;  // an outer destructor's loop releases them
    pending = &mine;
    while (!mine.empty()) {
        ObjP last = std::move(mine.back());
        mine.pop_back();
        last.reset();  // its own containers go onto `mine`
    }
    pending = nullptr;
}

inline const char* type_name(const Val& v) {
    switch (v.t) {
        case T::None: return "NoneType";
        case T::Bool: return "bool";
        case T::Int:
        case T::Big: return "int";
        case T::Float: return "float";
        case T::Str: return "str";
        case T::Bytes: return "bytes";
        case T::BArr: return "bytearray";
        case T::List: return "list";
        case T::Tuple: return "tuple";
        case T::Dict: return "dict";
        case T::Set: return "set";
        case T::FSet: return "frozenset";
        case T::Frame: return "Frame";
        case T::Stack: return "InternedStack";
        case T::Streamed: return "_Streamed";
    }
    return "?";
}

// Interned byte strings: one copy of each, compared by pointer.
struct Pool {
    std::deque<std::string> store;
    std::unordered_map<std::string_view, const std::string*> map;
    // Short text seen lately, by a cheap hash (a trace repeats the same few values).
    static constexpr size_t kRecent = 4096;
    std::vector<const std::string*> recent = std::vector<const std::string*>(kRecent, nullptr);
    const std::string* get(std::string_view s) {
        if (s.size() <= 24) {
            uint64_t h = 1469598103934665603ULL ^ s.size();
            for (unsigned char c : s) h = (h ^ c) * 1099511628211ULL;
            const std::string*& slot = recent[(h ^ (h >> 29)) & (kRecent - 1)];
            if (slot && *slot == s) return slot;
            slot = get_slow(s);
            return slot;
        }
        return get_slow(s);
    }
    const std::string* get_slow(std::string_view s) {
        auto it = map.find(s);
        if (it != map.end()) return it->second;
        store.emplace_back(s);
        const std::string* p = &store.back();
        map.emplace(std::string_view(*p), p);
        return p;
    }
};

// ---- Python's equality of keys (dict keys, set members) ------------------------------------

inline bool numeric(const Val& v) {
    return v.t == T::Bool || v.t == T::Int || v.t == T::Float || v.t == T::Big;
}

inline bool py_equal(const Val& a, const Val& b);

// A float that is a whole number in int64's range, as that int64 (the range checked
// before the cast: outside it the cast is undefined).
inline bool int64_of_float(double f, int64_t* out) {
    if (!(f >= -9223372036854775808.0 && f < 9223372036854775808.0)) return false;
    auto whole = (int64_t)f;
    if ((double)whole != f) return false;
    *out = whole;
    return true;
}

inline bool num_equal(const Val& a, const Val& b) {
    if (a.t == T::Big || b.t == T::Big) return a.t == b.t && a.s == b.s;
    if (a.t == T::Float || b.t == T::Float) {
        if (a.t == T::Float && b.t == T::Float) return a.f == b.f;
        const Val& fl = a.t == T::Float ? a : b;
        const Val& in = a.t == T::Float ? b : a;
        int64_t whole;
        return int64_of_float(fl.f, &whole) && whole == in.i;
    }
    return a.i == b.i;
}

inline uint64_t mix(uint64_t x) {  // splitmix64's finalizer
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

// A hash that agrees with py_equal: equal numbers (True, 1, 1.0) hash alike, text by its
// interned pointer, a tuple by its items in order, a frozenset by its members in any order.
// Keys are checked first (Parser::hashable): at most kMaxNesting deep, kMaxKeyValues values.
inline uint64_t hash_of(const Val& v) {
    switch (v.t) {
        case T::None: return 0x6e6f6e65ULL;
        case T::Bool:
        case T::Int: return mix((uint64_t)v.i);
        case T::Float: {
            int64_t whole;
            if (int64_of_float(v.f, &whole)) return mix((uint64_t)whole);
            uint64_t bits;
            std::memcpy(&bits, &v.f, 8);
            return mix(bits ^ 0x666c6f6174ULL);
        }
        case T::Big:
        case T::Str:
        case T::Bytes:
        case T::BArr: return mix(reinterpret_cast<uint64_t>(v.s));
        case T::Frame: return mix((uint64_t)v.i ^ 0x4672ULL);
        case T::Stack: return mix((uint64_t)v.i ^ 0x5374ULL);
        case T::Tuple: {
            uint64_t h = 0x7475706cULL;
            for (auto& x : v.o->items) h = mix(h ^ hash_of(x));
            return h;
        }
        case T::FSet: {
            uint64_t h = 0x6673ULL;
            for (auto& x : v.o->items) h += mix(hash_of(x));
            return h;
        }
        default: return mix(reinterpret_cast<uint64_t>(v.o.get()));  // never keys
    }
}

inline void build_index(Obj& o) {
    o.index = std::make_unique<KeyIndex>();
    o.index->reserve(o.items.size() * 2);
    for (size_t j = 0; j < o.items.size(); ++j)
        o.index->emplace(hash_of(o.items[j]), (uint32_t)j);
}

// Where a key (member) equal to `v` is in o.items, or -1.
inline int64_t find_key(const Obj& o, const Val& v) {
    if (o.index) {
        auto range = o.index->equal_range(hash_of(v));
        for (auto it = range.first; it != range.second; ++it)
            if (py_equal(o.items[it->second], v)) return it->second;
        return -1;
    }
    if (v.t == T::Str) {  // text keys: by pointer (interned)
        for (size_t j = 0; j < o.items.size(); ++j)
            if (o.items[j].t == T::Str && o.items[j].s == v.s) return (int64_t)j;
        return -1;
    }
    for (size_t j = 0; j < o.items.size(); ++j)
        if (py_equal(o.items[j], v)) return (int64_t)j;
    return -1;
}

inline bool contains(const Obj& o, const Val& v) { return find_key(o, v) >= 0; }

// A new key (member) at the end of o.items, hashed once there are enough.
inline void push_key(Obj& o, Val k) {
    o.items.push_back(std::move(k));
    if (o.index)
        o.index->emplace(hash_of(o.items.back()), (uint32_t)(o.items.size() - 1));
    else if (o.items.size() >= kIndexFrom)
        build_index(o);
}

// set.add
inline void set_add(Obj& o, Val v) {
    if (!contains(o, v)) push_key(o, std::move(v));
}

inline bool py_equal(const Val& a, const Val& b) {
    if (numeric(a) && numeric(b)) return num_equal(a, b);
    if (a.t != b.t) return false;
    switch (a.t) {
        case T::None: return true;
        case T::Str:
        case T::Bytes: return a.s == b.s;
        case T::Frame:
        case T::Stack: return a.i == b.i;
        case T::Tuple: {
            auto& x = a.o->items;
            auto& y = b.o->items;
            if (x.size() != y.size()) return false;
            for (size_t k = 0; k < x.size(); ++k)
                if (!py_equal(x[k], y[k])) return false;
            return true;
        }
        case T::FSet: {
            auto& x = a.o->items;
            if (x.size() != b.o->items.size()) return false;
            for (auto& v : x)
                if (!contains(*b.o, v)) return false;
            return true;
        }
        default: return a.o == b.o;  // never keys (unhashable) or the same object
    }
}

// A dict: insertion order, the first key kept and the last value, as Python's dict does.
// Text keys are found by pointer (interned), others by Python's equality; a dict of
// kIndexFrom keys or more by hash.
inline void dict_set(Obj& d, Val k, Val v) {
    int64_t j = find_key(d, k);
    if (j >= 0) {
        d.vals[(size_t)j] = std::move(v);
        return;
    }
    d.vals.push_back(std::move(v));
    push_key(d, std::move(k));
}

inline const Val* dict_get(const Obj& d, const std::string* key) {
    int64_t j = find_key(d, Val::str(T::Str, key));
    return j >= 0 ? &d.vals[(size_t)j] : nullptr;
}

}  // namespace tlv::snapshot
