// CUDA allocator snapshots: the compiled twin of ingest/pickle_stream.py (the opcode
// reader: plain data only, streamed, memo compacted) and of ingest/cuda_snapshot.py's
// per-entry work (frames and stacks interned, every trace entry a row, the pairing and
// the block-size replay). The Python modules are the specification: the same rows, the
// same interned ids, the same messages, word for word. What is not per entry stays in
// Python: segments, annotations and the top object come back as plain Python values,
// the devices' trace state at the end.
//
// Memory: one 8-byte slot per memoized object (a tagged value: an interned string,
// frame or stack id, a handed-over item, or an index into a small table of the few live
// containers), the interned strings, frames and stacks, one item under construction,
// and the rows of one batch.
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

namespace tlv {
namespace {

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
constexpr size_t kIndexFrom = 16;  // a dict's keys or a set's members hashed from this many on
const char* const kPlain = "expected the plain data torch writes (dicts, lists, text and numbers";

// ---- values ------------------------------------------------------------------------------

enum class T : uint8_t {
    None, Bool, Int, Big, Float, Str, Bytes, BArr, List, Tuple, Dict, Set, FSet,
    Frame, Stack, Streamed
};

struct Obj;
using ObjP = std::shared_ptr<Obj>;

struct Val {
    T t = T::None;
    union {
        int64_t i;             // Bool (0/1), Int, Frame id, Stack id (0: no stack)
        double f;              // Float
        const std::string* s;  // Str, Bytes, BArr, Big (little-endian two's complement)
    };
    ObjP o;  // List, Tuple, Dict, Set, FSet
    Val() : i(0) {}
    static Val none() { return Val(); }
    static Val boolean(bool b) { Val v; v.t = T::Bool; v.i = b; return v; }
    static Val integer(int64_t x) { Val v; v.t = T::Int; v.i = x; return v; }
    static Val flt(double x) { Val v; v.t = T::Float; v.f = x; return v; }
    static Val str(T t, const std::string* s) { Val v; v.t = t; v.s = s; return v; }
    static Val obj(T t, ObjP o) { Val v; v.t = t; v.o = std::move(o); return v; }
    static Val id(T t, int64_t x) { Val v; v.t = t; v.i = x; return v; }
    bool container() const { return t >= T::List && t <= T::FSet; }
};

// A dict's keys or a set's members by hash (hash_of) -> their index in items.
using KeyIndex = std::unordered_multimap<uint64_t, uint32_t>;

struct Obj {
    T kind;
    std::vector<Val> items;  // list/tuple/set/frozenset items; a dict's keys
    std::vector<Val> vals;   // a dict's values
    std::unique_ptr<KeyIndex> index;  // a dict or set of kIndexFrom or more: items hashed
    explicit Obj(T k) : kind(k) {}
    Obj(const Obj& o)
        : kind(o.kind), items(o.items), vals(o.vals),
          index(o.index ? std::make_unique<KeyIndex>(*o.index) : nullptr) {}
    ~Obj();
};

// The containers a value holds are released one after another, not by recursion: a
// pickle can nest a million lists before any check sees them (it builds from the inside
// out), and freeing them recursively would overflow the stack.
Obj::~Obj() {
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

const char* type_name(const Val& v) {
    switch (v.t) {
        case T::None: return "NoneType";
        case T::Bool: return "bool";
        case T::Int: case T::Big: return "int";
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

bool numeric(const Val& v) { return v.t == T::Bool || v.t == T::Int || v.t == T::Float || v.t == T::Big; }

bool py_equal(const Val& a, const Val& b);

// A float that is a whole number in int64's range, as that int64 (the range checked
// before the cast: outside it the cast is undefined).
bool int64_of_float(double f, int64_t* out) {
    if (!(f >= -9223372036854775808.0 && f < 9223372036854775808.0)) return false;
    auto whole = (int64_t)f;
    if ((double)whole != f) return false;
    *out = whole;
    return true;
}

bool num_equal(const Val& a, const Val& b) {
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

uint64_t mix(uint64_t x) {  // splitmix64's finalizer
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

// A hash that agrees with py_equal: equal numbers (True, 1, 1.0) hash alike, text by its
// interned pointer, a tuple by its items in order, a frozenset by its members in any order.
// Keys are checked first (Parser::hashable): at most kMaxNesting deep, kMaxKeyValues values.
uint64_t hash_of(const Val& v) {
    switch (v.t) {
        case T::None: return 0x6e6f6e65ULL;
        case T::Bool: case T::Int: return mix((uint64_t)v.i);
        case T::Float: {
            int64_t whole;
            if (int64_of_float(v.f, &whole)) return mix((uint64_t)whole);
            uint64_t bits;
            std::memcpy(&bits, &v.f, 8);
            return mix(bits ^ 0x666c6f6174ULL);
        }
        case T::Big: case T::Str: case T::Bytes: case T::BArr:
            return mix(reinterpret_cast<uint64_t>(v.s));
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

void build_index(Obj& o) {
    o.index = std::make_unique<KeyIndex>();
    o.index->reserve(o.items.size() * 2);
    for (size_t j = 0; j < o.items.size(); ++j) o.index->emplace(hash_of(o.items[j]), (uint32_t)j);
}

// Where a key (member) equal to `v` is in o.items, or -1.
int64_t find_key(const Obj& o, const Val& v) {
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

bool contains(const Obj& o, const Val& v) { return find_key(o, v) >= 0; }

// A new key (member) at the end of o.items, hashed once there are enough.
void push_key(Obj& o, Val k) {
    o.items.push_back(std::move(k));
    if (o.index) o.index->emplace(hash_of(o.items.back()), (uint32_t)(o.items.size() - 1));
    else if (o.items.size() >= kIndexFrom) build_index(o);
}

// set.add
void set_add(Obj& o, Val v) {
    if (!contains(o, v)) push_key(o, std::move(v));
}

bool py_equal(const Val& a, const Val& b) {
    if (numeric(a) && numeric(b)) return num_equal(a, b);
    if (a.t != b.t) return false;
    switch (a.t) {
        case T::None: return true;
        case T::Str: case T::Bytes: return a.s == b.s;
        case T::Frame: case T::Stack: return a.i == b.i;
        case T::Tuple: {
            auto& x = a.o->items; auto& y = b.o->items;
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
void dict_set(Obj& d, Val k, Val v) {
    int64_t j = find_key(d, k);
    if (j >= 0) { d.vals[(size_t)j] = std::move(v); return; }
    d.vals.push_back(std::move(v));
    push_key(d, std::move(k));
}

const Val* dict_get(const Obj& d, const std::string* key) {
    int64_t j = find_key(d, Val::str(T::Str, key));
    return j >= 0 ? &d.vals[(size_t)j] : nullptr;
}

// ---- plain values as JSON (cuda_snapshot._plain, _key, _canonical) ---------------------------

void big_decimal(const std::string& le, std::string& out) {  // little-endian two's complement
    std::vector<uint8_t> mag(le.begin(), le.end());
    bool neg = !mag.empty() && (mag.back() & 0x80);
    if (neg) {  // two's complement negate
        unsigned carry = 1;
        for (auto& b : mag) {
            unsigned v = (uint8_t)~b + carry;
            b = (uint8_t)v;
            carry = v >> 8;
        }
    }
    std::string digits;
    while (true) {
        bool zero = true;
        unsigned rem = 0;
        for (size_t k = mag.size(); k-- > 0;) {
            unsigned cur = (rem << 8) | mag[k];
            mag[k] = (uint8_t)(cur / 10);
            rem = cur % 10;
            if (mag[k]) zero = false;
        }
        digits.push_back((char)('0' + rem));
        if (zero) break;
    }
    while (digits.size() > 1 && digits.back() == '0') digits.pop_back();
    if (neg && digits != "0") out.push_back('-');
    out.append(digits.rbegin(), digits.rend());
}

// Surrogate code points (a pickle may carry them, JSON and Arrow cannot) become U+FFFD,
// as cuda_snapshot._clean does.
std::string clean_text(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    for (size_t i = 0; i < s.size();) {
        auto c = (uint8_t)s[i];
        if (c == 0xED && i + 1 < s.size() && (uint8_t)s[i + 1] >= 0xA0) {
            out.append("\xEF\xBF\xBD");
            i += 3;
        } else {
            out.push_back((char)c);
            ++i;
        }
    }
    return out;
}

bool has_surrogate(std::string_view s) {
    for (size_t i = 0; i + 1 < s.size(); ++i)
        if ((uint8_t)s[i] == 0xED && (uint8_t)s[i + 1] >= 0xA0) return true;
    return false;
}

void put_json_text(std::string& out, std::string_view s) {
    if (has_surrogate(s)) put_json_string(out, clean_text(s), true);
    else put_json_string(out, s, true);
}

void latin1_utf8(std::string_view b, std::string& out) {
    for (unsigned char c : b) put_utf8(out, c);
}

void json_of(const Val& v, std::string& out, bool sort_keys, int depth = 0);

// Keys as text, each once (a dict's keys can meet as text: 1 and "1"): found by a scan,
// or by hash once there are kIndexFrom of them.
struct KeyTexts {
    std::unique_ptr<std::unordered_map<std::string, size_t>> at;
    size_t find(const std::vector<std::string>& keys, const std::string& k) const {
        if (at) {
            auto it = at->find(k);
            return it == at->end() ? keys.size() : it->second;
        }
        for (size_t q = 0; q < keys.size(); ++q)
            if (keys[q] == k) return q;
        return keys.size();
    }
    void add(std::vector<std::string>& keys, std::string k) {
        keys.push_back(std::move(k));
        if (at) {
            at->emplace(keys.back(), keys.size() - 1);
        } else if (keys.size() >= kIndexFrom) {
            at = std::make_unique<std::unordered_map<std::string, size_t>>();
            for (size_t q = 0; q < keys.size(); ++q) at->emplace(keys[q], q);
        }
    }
};

// _key(k): text as is; anything else its canonical JSON.
std::string key_text(const Val& k, int depth = 0) {
    if (k.t == T::Str) return has_surrogate(*k.s) ? clean_text(*k.s) : *k.s;
    std::string s;
    json_of(k, s, true, depth);
    return s;
}

// What a reader says of a value deeper than kMaxNesting. The values are checked where
// the pickle hands them over (Parser::check_plain, with the byte): this is the guard of
// the recursive readers, for a value changed after its check (a memo read of a
// container outside the item, appended to later).
std::string too_deep() {
    return "data nested deeper than " + std::to_string(kMaxNesting) + " levels: " + kPlain +
           " a few levels deep)";
}

void json_of(const Val& v, std::string& out, bool sort_keys, int depth) {
    if (v.container() && ++depth > kMaxNesting) throw ParseError{0, too_deep()};
    switch (v.t) {
        case T::None: out.append("null"); return;
        case T::Bool: out.append(v.i ? "true" : "false"); return;
        case T::Int: out.append(std::to_string(v.i)); return;
        case T::Big: big_decimal(*v.s, out); return;
        case T::Float: put_py_float(out, v.f); return;
        case T::Str: put_json_text(out, *v.s); return;
        case T::Bytes: case T::BArr: {
            std::string u;
            latin1_utf8(*v.s, u);
            put_json_string(out, u, true);
            return;
        }
        case T::Frame: out.append(std::to_string(v.i)); return;
        case T::Stack:
            if (v.i) out.append(std::to_string(v.i)); else out.append("null");
            return;
        case T::Streamed: out.append("null"); return;
        case T::List: case T::Tuple: {
            out.push_back('[');
            bool first = true;
            for (auto& x : v.o->items) {
                if (!first) out.push_back(',');
                first = false;
                json_of(x, out, sort_keys, depth);
            }
            out.push_back(']');
            return;
        }
        case T::Set: case T::FSet: {  // sorted by canonical JSON
            std::vector<std::string> parts;
            for (auto& x : v.o->items) {
                std::string s;
                json_of(x, s, true, depth);
                parts.push_back(std::move(s));
            }
            std::vector<std::string> shown;
            std::vector<size_t> order(parts.size());
            for (size_t k = 0; k < order.size(); ++k) order[k] = k;
            std::stable_sort(order.begin(), order.end(),
                             [&](size_t a, size_t b) { return parts[a] < parts[b]; });
            out.push_back('[');
            for (size_t k = 0; k < order.size(); ++k) {
                if (k) out.push_back(',');
                if (sort_keys) out.append(parts[order[k]]);
                else json_of(v.o->items[order[k]], out, false, depth);
            }
            out.push_back(']');
            return;
        }
        case T::Dict: {
            // keys as text, a later equal key replacing the value in place
            std::vector<std::string> keys;
            std::vector<const Val*> vals;
            KeyTexts seen;
            for (size_t j = 0; j < v.o->items.size(); ++j) {
                std::string k = key_text(v.o->items[j], depth);
                size_t at = seen.find(keys, k);
                if (at == keys.size()) {
                    seen.add(keys, std::move(k));
                    vals.push_back(&v.o->vals[j]);
                } else {
                    vals[at] = &v.o->vals[j];
                }
            }
            std::vector<size_t> order(keys.size());
            for (size_t k = 0; k < order.size(); ++k) order[k] = k;
            if (sort_keys)
                std::stable_sort(order.begin(), order.end(),
                                 [&](size_t a, size_t b) { return keys[a] < keys[b]; });
            out.push_back('{');
            for (size_t k = 0; k < order.size(); ++k) {
                if (k) out.push_back(',');
                put_json_text(out, keys[order[k]]);
                out.push_back(':');
                json_of(*vals[order[k]], out, sort_keys, depth);
            }
            out.push_back('}');
            return;
        }
    }
}

bool truthy(const Val& v) {
    switch (v.t) {
        case T::None: return false;
        case T::Bool: case T::Int: return v.i != 0;
        case T::Big: return true;  // normalized: never zero
        case T::Float: return v.f != 0.0;
        case T::Str: case T::Bytes: case T::BArr: return !v.s->empty();
        case T::List: case T::Tuple: case T::Dict: case T::Set: case T::FSet:
            return !v.o->items.empty();
        case T::Frame: return true;
        case T::Stack: return v.i != 0;
        case T::Streamed: return true;
    }
    return true;
}

std::string hex_of(int64_t v) {  // cuda_snapshot._hex
    static const char h[] = "0123456789abcdef";
    uint64_t m = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    std::string d;
    do { d.push_back(h[m & 15]); m >>= 4; } while (m);
    std::string out = v < 0 ? "-0x" : "0x";
    out.append(d.rbegin(), d.rend());
    return out;
}

std::string i128_text(i128 v) {
    if (v == 0) return "0";
    bool neg = v < 0;
    unsigned __int128 m = neg ? (unsigned __int128)0 - (unsigned __int128)v : (unsigned __int128)v;
    std::string d;
    while (m) { d.push_back((char)('0' + (int)(m % 10))); m /= 10; }
    if (neg) d.push_back('-');
    return std::string(d.rbegin(), d.rend());
}

// ---- ordered containers the Python side reads back ---------------------------------------

struct Counter {  // a collections.Counter's content, in first-seen order
    std::vector<std::pair<std::string, int64_t>> items;
    std::unordered_map<std::string, size_t> at;
    std::vector<std::pair<const std::string*, size_t>> by_ptr;  // interned text seen
    size_t add(const std::string& k) {
        auto it = at.find(k);
        if (it == at.end()) {
            at.emplace(k, items.size());
            items.emplace_back(k, 1);
            return items.size() - 1;
        }
        ++items[it->second].second;
        return it->second;
    }
    // `k` shown as `text` (the same interned text is always shown the same)
    void add(const std::string* k, const std::string& text) {
        for (auto& e : by_ptr)
            if (e.first == k) { ++items[e.second].second; return; }
        size_t at_k = add(text);
        if (by_ptr.size() < 64) by_ptr.emplace_back(k, at_k);
    }
    bool empty() const { return items.empty(); }
};

// An int64 -> V hash map, open addressing (linear probing, backward-shift deletion): no
// allocation per entry, for the replay's per-entry lookups.
template <class V>
struct I64Map {
    struct Slot { int64_t key; V val; bool used; };
    std::vector<Slot> slots;
    size_t count = 0, mask = 0;
    static size_t hash(int64_t k) {
        uint64_t x = (uint64_t)k;
        x ^= x >> 33; x *= 0xff51afd7ed558ccdULL; x ^= x >> 33;
        return (size_t)x;
    }
    void grow() {
        std::vector<Slot> old = std::move(slots);
        slots.assign(old.empty() ? 64 : old.size() * 2, Slot{0, V{}, false});
        mask = slots.size() - 1;
        count = 0;
        for (auto& sl : old)
            if (sl.used) *put(sl.key) = sl.val;
    }
    V* get(int64_t k) {
        if (!count) return nullptr;
        for (size_t i = hash(k) & mask;; i = (i + 1) & mask) {
            if (!slots[i].used) return nullptr;
            if (slots[i].key == k) return &slots[i].val;
        }
    }
    const V* get(int64_t k) const { return const_cast<I64Map*>(this)->get(k); }
    // the value at k, made (V{}) if new; `fresh` says which
    V* put(int64_t k, bool* fresh = nullptr) {
        if ((count + 1) * 4 > slots.size() * 3) grow();
        for (size_t i = hash(k) & mask;; i = (i + 1) & mask) {
            if (!slots[i].used) {
                slots[i] = Slot{k, V{}, true};
                ++count;
                if (fresh) *fresh = true;
                return &slots[i].val;
            }
            if (slots[i].key == k) {
                if (fresh) *fresh = false;
                return &slots[i].val;
            }
        }
    }
    bool erase(int64_t k) {
        if (!count) return false;
        size_t i = hash(k) & mask;
        for (;; i = (i + 1) & mask) {
            if (!slots[i].used) return false;
            if (slots[i].key == k) break;
        }
        for (size_t j = i;;) {  // shift back the entries that probed past i
            j = (j + 1) & mask;
            if (!slots[j].used) break;
            size_t home = hash(slots[j].key) & mask;
            if (((j - home) & mask) >= ((j - i) & mask)) {
                slots[i] = slots[j];
                i = j;
            }
        }
        slots[i].used = false;
        --count;
        return true;
    }
    template <class F>
    void each(F&& f) const {
        for (auto& sl : slots)
            if (sl.used) f(sl.key, sl.val);
    }
};

struct Made { int64_t step, size, block; };

struct LiveMap {  // a dict address -> [step, size, block], insertion-ordered
    struct E { Made m; uint64_t seq; };
    I64Map<E> at;
    uint64_t next = 0;
    Made* get(int64_t a) { E* e = at.get(a); return e ? &e->m : nullptr; }
    void set(int64_t a, Made m) {
        bool fresh;
        E* e = at.put(a, &fresh);
        e->m = m;
        if (fresh) e->seq = next++;
    }
    void erase(int64_t a) { at.erase(a); }
    std::vector<std::pair<int64_t, Made>> ordered() const {  // insertion order
        std::vector<std::pair<uint64_t, std::pair<int64_t, Made>>> v;
        at.each([&](int64_t a, const E& e) { v.push_back({e.seq, {a, e.m}}); });
        std::sort(v.begin(), v.end(),
                  [](const auto& x, const auto& y) { return x.first < y.first; });
        std::vector<std::pair<int64_t, Made>> out;
        for (auto& x : v) out.push_back(x.second);
        return out;
    }
};

// ---- one device's trace (cuda_snapshot._Device: the trace part and the replay) ------------

struct Device {
    Val index;            // the device index as the dump gave it (an int)
    std::string key;      // cuda:N
    bool declared = false;
    int64_t step = 0;
    Counter actions, problems;
    std::vector<std::string> examples;
    LiveMap live;
    I64Map<char> freed_before;
    i128 before_n = 0, before_bytes = 0;
    int64_t estimated = 0;
    bool exact_rule = true;
    bool has_last = false;
    int64_t last_time = 0;
    // live blocks by start: their size, and whether inferred from the end state only
    struct Blk { int64_t size; bool tentative; };
    std::map<int64_t, Blk> starts;
    std::map<int64_t, int64_t> segs;            // segment start -> size
    std::unordered_map<int64_t, int64_t> seg_made;

    void problem(const std::string& kind, const std::string& text) {
        problems.add(kind);
        if (examples.size() < kMaxExamples)
            examples.push_back("step " + std::to_string(step) + ": " + text);
    }
    void live_add(int64_t a, int64_t size, bool tentative = false) {
        auto r = starts.try_emplace(a, Blk{size, tentative});
        if (!r.second) {
            r.first->second.size = size;
            r.first->second.tentative |= tentative;
        }
    }
    bool live_remove(int64_t a) { return starts.erase(a) != 0; }
    void drop_tentative(i128 lo, i128 hi) {
        auto it = lo > (i128)INT64_MAX ? starts.end()
                  : starts.lower_bound(lo < (i128)INT64_MIN ? INT64_MIN : (int64_t)lo);
        while (it != starts.end() && (i128)it->first < hi) {
            if (it->second.tentative) it = starts.erase(it);
            else ++it;
        }
    }
    bool segment_end(int64_t a, i128* end) const {
        auto it = segs.upper_bound(a);
        if (it == segs.begin()) return false;
        --it;
        i128 e = (i128)it->first + it->second;
        if ((i128)a < e) { *end = e; return true; }
        return false;
    }
    static int64_t round_size(int64_t size) {
        if (size < kMinBlock) return kMinBlock;
        if (size > kI64Max - kMinBlock + 1) return size;
        return (size + kMinBlock - 1) / kMinBlock * kMinBlock;
    }
    int64_t block_bytes(int64_t a, int64_t size) {
        int64_t rounded = round_size(size);
        drop_tentative(a, (i128)a + rounded);
        i128 seg_end;
        if (!segment_end(a, &seg_end) || !exact_rule) {
            ++estimated;
            return rounded;
        }
        auto it = starts.upper_bound(a);
        i128 nxt = (it != starts.end() && (i128)it->first < seg_end) ? (i128)it->first : seg_end;
        i128 remaining = nxt - a - rounded;
        bool split = rounded <= kSmallSize ? remaining >= kMinBlock : remaining > kSmallSize;
        if (split || nxt - a > (i128)kI64Max) return rounded;
        return (int64_t)(nxt - a);
    }
    void seg_add(int64_t a, int64_t size) { segs[a] = size; }
    void seg_remove(int64_t a) { segs.erase(a); }
};

// ---- the memo: one tagged 8-byte slot per memoized object, old slots packed ----------------
//
// Slots are written at the end and rewritten only while their item is being handed over;
// whole chunks of 4096 slots behind that point are frozen: each slot becomes a byte (or
// two) indexing the chunk's palette of distinct values (an item's dict, its frames list and
// its text repeat the same few values), so a trace of millions of entries keeps about
// 1.1 bytes per memoized object instead of 8.
struct Memo {
    static constexpr size_t kChunk = 4096;
    struct Frozen {
        std::vector<uint64_t> palette;
        std::vector<uint8_t> i8;
        std::vector<uint16_t> i16;
        std::vector<uint64_t> raw;
        uint64_t get(size_t k) const {
            if (!raw.empty()) return raw[k];
            return palette[i8.empty() ? i16[k] : i8[k]];
        }
    };
    std::vector<Frozen> frozen;
    std::vector<uint64_t> tail;  // the slots from frozen.size() * kChunk on
    size_t size() const { return frozen.size() * kChunk + tail.size(); }
    size_t tail_start() const { return frozen.size() * kChunk; }
    uint64_t get(size_t i) const {
        if (i >= tail_start()) return tail[i - tail_start()];
        return frozen[i / kChunk].get(i % kChunk);
    }
    void push(uint64_t v) { tail.push_back(v); }
    void set(size_t i, uint64_t v) {
        if (i >= tail_start()) { tail[i - tail_start()] = v; return; }
        Frozen& f = frozen[i / kChunk];  // rare: a BINPUT over an old index
        if (f.raw.empty()) {  // unpacked first (get() reads raw once it is not empty)
            std::vector<uint64_t> raw(kChunk);
            for (size_t k = 0; k < kChunk; ++k) raw[k] = f.get(k);
            f.raw = std::move(raw);
            f.i8.clear(); f.i8.shrink_to_fit();
            f.i16.clear(); f.i16.shrink_to_fit();
            f.palette.clear(); f.palette.shrink_to_fit();
        }
        f.raw[i % kChunk] = v;
    }
    // Pack every whole chunk that lies before `keep` (slots from `keep` on may change).
    void freeze_before(size_t keep) {
        while (tail.size() >= 2 * kChunk && tail_start() + kChunk <= keep) {
            Frozen f;
            std::unordered_map<uint64_t, uint16_t> at;
            bool wide = false, raw = false;
            for (size_t k = 0; k < kChunk; ++k) {
                auto it = at.find(tail[k]);
                if (it == at.end()) {
                    if (f.palette.size() == 65536) { raw = true; break; }
                    at.emplace(tail[k], (uint16_t)f.palette.size());
                    f.palette.push_back(tail[k]);
                }
            }
            if (raw) {
                f.palette.clear();
                f.raw.assign(tail.begin(), tail.begin() + kChunk);
            } else {
                wide = f.palette.size() > 256;
                if (wide) f.i16.resize(kChunk); else f.i8.resize(kChunk);
                for (size_t k = 0; k < kChunk; ++k) {
                    uint16_t x = at[tail[k]];
                    if (wide) f.i16[k] = x; else f.i8[k] = (uint8_t)x;
                }
                f.palette.shrink_to_fit();
            }
            frozen.push_back(std::move(f));
            tail.erase(tail.begin(), tail.begin() + kChunk);
        }
    }
};

// ---- the parser ------------------------------------------------------------------------

struct Path {  // a path from the top object: a list's (at most two keys, text or index),
    int n = 0;    // or an item's (its list's and its index)
    Val k[3];
};

struct Mark {
    bool known = false;
    Path path;
    bool streamed = false;
    int64_t handed = 0;
};

enum class Head { Segments, Traces, Annotations, Other };

struct Parser {
    std::string path;
    // input
    std::string buf;
    size_t pos = 0;
    int64_t base = 0;  // file offset of buf[0]
    bool eof = false, started = false, done = false;
    // the machine
    Pool strs;
    std::vector<Val> stack;
    std::vector<std::vector<Val>> metastack;
    std::vector<Mark> marks;
    bool streamed = false;
    int64_t pending_from = -1;
    Memo memo;                        // tagged slots, see slot_of
    std::unordered_map<uint64_t, Val> memo_extra;
    std::vector<Val> side;            // values a slot cannot hold itself
    std::vector<uint32_t> side_free;
    std::unordered_map<const Obj*, std::pair<Path, ObjP>> paths;
    std::unordered_set<const Obj*> streamed_ids;
    // the snapshot
    bool first_item = true;
    Val top;
    bool have_top = false;
    std::unordered_map<std::string, int64_t> frames;  // canonical key -> id
    // A frame dict object already interned (kept alive, so its address is never reused;
    // forgotten if it is changed afterwards).
    std::unordered_map<const Obj*, std::pair<int64_t, ObjP>> frame_of_obj;
    std::unordered_map<std::string, int64_t> stacks;  // ids as bytes -> id
    std::vector<std::unique_ptr<Device>> devices;     // first-use order
    std::unordered_map<std::string, Device*> device_at;
    std::unique_ptr<EventBatch> batch = std::make_unique<EventBatch>();
    std::string batch_device;
    // outputs, in order
    struct Out {
        int kind;  // 0 batch, 1 device, 2 frame, 3 stack, 4 segment, 5 annotation
        std::unique_ptr<EventBatch> batch;
        std::string key;
        Val value;
        int64_t id = 0;
        std::vector<int64_t> ids;
    };
    std::vector<Out> outs;
    // interned keys
    const std::string *k_action, *k_addr, *k_size, *k_stream, *k_time_us, *k_frames,
        *k_filename, *k_line, *k_name, *k_address, *k_total_size, *k_device, *k_blocks,
        *k_requested_size, *k_state, *k_history, *k_real_size, *k_segments, *k_traces,
        *k_annotations, *k_settings;
    const std::string *a_alloc, *a_free_requested, *a_free_completed, *a_segment_alloc,
        *a_segment_map, *a_segment_free, *a_segment_unmap;

    explicit Parser(std::string p) : path(std::move(p)) {
        k_action = strs.get("action"); k_addr = strs.get("addr"); k_size = strs.get("size");
        k_stream = strs.get("stream"); k_time_us = strs.get("time_us");
        k_frames = strs.get("frames"); k_filename = strs.get("filename");
        k_line = strs.get("line"); k_name = strs.get("name"); k_address = strs.get("address");
        k_total_size = strs.get("total_size"); k_device = strs.get("device");
        k_blocks = strs.get("blocks"); k_requested_size = strs.get("requested_size");
        k_state = strs.get("state"); k_history = strs.get("history");
        k_real_size = strs.get("real_size"); k_segments = strs.get("segments");
        k_traces = strs.get("device_traces"); k_annotations = strs.get("external_annotations");
        k_settings = strs.get("allocator_settings");
        a_alloc = strs.get("alloc"); a_free_requested = strs.get("free_requested");
        a_free_completed = strs.get("free_completed"); a_segment_alloc = strs.get("segment_alloc");
        a_segment_map = strs.get("segment_map"); a_segment_free = strs.get("segment_free");
        a_segment_unmap = strs.get("segment_unmap");
    }

    [[noreturn]] void fail(const std::string& msg) { throw ParseError{0, msg}; }
    [[noreturn]] void fail_at(int64_t at, const std::string& msg) {
        throw ParseError{0, "byte " + grouped(at) + ": " + msg};
    }
    static std::string grouped(int64_t v) {  // f"{v:,}"
        std::string d = std::to_string(v < 0 ? -v : v), out;
        for (size_t k = 0; k < d.size(); ++k) {
            if (k && (d.size() - k) % 3 == 0) out.push_back(',');
            out.push_back(d[k]);
        }
        return v < 0 ? "-" + out : out;
    }

    // -- memo slots: low 3 bits the kind, the rest its payload -------------------------
    // 0 handed over, 1 interned text (pointer), 2 frame id, 3 stack id, 4 side index
    uint64_t slot_of(const Val& v) {
        switch (v.t) {
            case T::Streamed: return 0;
            case T::Str: return reinterpret_cast<uint64_t>(v.s) | 1;
            case T::Frame: return ((uint64_t)v.i << 3) | 2;
            case T::Stack: return ((uint64_t)v.i << 3) | 3;
            default: break;
        }
        uint32_t k;
        if (!side_free.empty()) { k = side_free.back(); side_free.pop_back(); side[k] = v; }
        else { k = (uint32_t)side.size(); side.push_back(v); }
        return ((uint64_t)k << 3) | 4;
    }
    Val val_of(uint64_t s) const {
        switch (s & 7) {
            case 0: { Val v; v.t = T::Streamed; return v; }
            case 1: return Val::str(T::Str, reinterpret_cast<const std::string*>(s & ~(uint64_t)7));
            case 2: return Val::id(T::Frame, (int64_t)(s >> 3));
            case 3: return Val::id(T::Stack, (int64_t)(s >> 3));
            default: return side[s >> 3];
        }
    }
    void release(uint64_t s) {
        if ((s & 7) == 4) { side[s >> 3] = Val(); side_free.push_back((uint32_t)(s >> 3)); }
    }
    void memo_put(uint64_t i, const Val& v) {
        if (i == memo.size()) memo.push(slot_of(v));
        else if (i < memo.size()) { release(memo.get(i)); memo.set(i, slot_of(v)); }
        else memo_extra[i] = v;
    }
    Val memo_get(uint64_t i, int64_t at) {
        Val v;
        if (i < memo.size()) v = val_of(memo.get(i));
        else {
            auto it = memo_extra.find(i);
            if (it == memo_extra.end())
                fail_at(at, "memo entry " + std::to_string(i) + " read before it was written");
            v = it->second;
        }
        if (v.t == T::Streamed)
            fail_at(at, "memo entry " + std::to_string(i) + " refers back to an item already "
                    "handed over (a snapshot never shares its trace entries)");
        return v;
    }

    // -- paths ----------------------------------------------------------------------------
    static bool is_text(const Val& v, const std::string* s) { return v.t == T::Str && v.s == s; }
    bool stream_path(const Path& p) const {
        if (p.n == 1) return is_text(p.k[0], k_segments) || is_text(p.k[0], k_annotations);
        return p.n == 2 && is_text(p.k[0], k_traces);
    }
    void new_path(const Val& obj) {
        if (metastack.empty()) {
            if (stack.empty()) { Path p; paths[obj.o.get()] = {p, obj.o}; }
            return;
        }
        Mark& m = marks.back();
        if (!m.known || m.streamed || m.path.n >= 2) return;
        const Val& owner = metastack.back().back();
        Path p = m.path;
        if (owner.t == T::Dict) {
            if (stack.size() % 2 == 1 && stack.back().t == T::Str) {
                p.k[p.n++] = stack.back();
            } else if (stack.size() % 2 == 0 && !stack.empty() && stack.back().t == T::List &&
                       stack.back().o->items.empty() && paths.count(stack.back().o.get()) &&
                       !streamed_ids.count(stack.back().o.get())) {
                p = paths[stack.back().o.get()].first;
                if (p.n >= 2) return;
                p.k[p.n++] = Val::integer(0);
            } else {
                return;
            }
        } else if (owner.t == T::List) {
            p.k[p.n++] = Val::integer(m.handed + (int64_t)stack.size());
        } else {
            return;
        }
        paths[obj.o.get()] = {p, obj.o};
        if (obj.t == T::List && stream_path(p)) streamed_ids.insert(obj.o.get());
    }
    std::vector<std::vector<Val>> vector_pool;  // emptied item vectors, capacity kept
    std::vector<Val> take_vector() {
        if (vector_pool.empty()) return {};
        std::vector<Val> v = std::move(vector_pool.back());
        vector_pool.pop_back();
        return v;
    }
    void give_vector(std::vector<Val>&& v) {
        if (vector_pool.size() < 64 && v.capacity() > 0 && v.capacity() <= 4096) {
            v.clear();
            vector_pool.push_back(std::move(v));
        }
    }
    void pop_mark() {
        marks.pop_back();
        give_vector(std::move(stack));
        stack = std::move(metastack.back());
        metastack.pop_back();
        streamed = !marks.empty() && marks.back().streamed;
    }

    // -- input ------------------------------------------------------------------------------
    bool have(size_t n) const { return buf.size() - pos >= n; }
    uint8_t u8(size_t p) const { return (uint8_t)buf[p]; }
    uint32_t u32(size_t p) const { uint32_t v; std::memcpy(&v, buf.data() + p, 4); return v; }
    int32_t i32(size_t p) const { int32_t v; std::memcpy(&v, buf.data() + p, 4); return v; }
    uint64_t u64(size_t p) const { uint64_t v; std::memcpy(&v, buf.data() + p, 8); return v; }

    // Suspend (more data comes) or, at the end of the file, report the truncation.
    struct Suspend {};
    void need(size_t n, int64_t at) {
        if (have(n)) return;
        if (eof) fail_at(at, "the file ends inside this opcode: truncated pickle, expected "
                             "more data before STOP");
        throw Suspend{};
    }

    // `head` bytes of opcode and length, then `n` of data (which may claim any size).
    void need_len(size_t head, uint64_t n, int64_t at) {
        if (n > ((uint64_t)1 << 62)) {
            if (eof) fail_at(at, "the file ends inside this opcode: truncated pickle, expected "
                                 "more data before STOP");
            throw Suspend{};
        }
        need(head + (size_t)n, at);
    }

    Val text(size_t p, size_t n, int64_t at) {
        std::string_view s(buf.data() + p, n);
        if (!valid_utf8_surrogatepass(s)) fail_at(at, "a string that is not UTF-8");
        return Val::str(T::Str, strs.get(s));
    }
    static bool valid_utf8_surrogatepass(std::string_view s) {
        const auto* p = reinterpret_cast<const uint8_t*>(s.data());
        size_t n = s.size(), i = 0;
        while (i < n) {
            uint8_t c = p[i];
            if (c < 0x80) { ++i; continue; }
            size_t need;
            uint8_t lo = 0x80, hi = 0xBF;
            if (c >= 0xC2 && c <= 0xDF) need = 1;
            else if (c == 0xE0) { need = 2; lo = 0xA0; }
            else if (c >= 0xE1 && c <= 0xEF) need = 2;  // ED: surrogates allowed
            else if (c == 0xF0) { need = 3; lo = 0x90; }
            else if (c >= 0xF1 && c <= 0xF3) need = 3;
            else if (c == 0xF4) { need = 3; hi = 0x8F; }
            else return false;
            for (size_t k = 1; k <= need; ++k) {
                if (i + k >= n) return false;
                uint8_t d = p[i + k];
                uint8_t l = k == 1 ? lo : 0x80, h = k == 1 ? hi : 0xBF;
                if (d < l || d > h) return false;
            }
            i += need + 1;
        }
        return true;
    }
    Val long_of(size_t p, size_t n) {
        // Python int.from_bytes(little, signed): an int64 when it fits, else normalized bytes
        std::string le(buf.data() + p, n);
        while (le.size() > 1) {  // drop redundant sign bytes
            uint8_t last = (uint8_t)le.back(), prev = (uint8_t)le[le.size() - 2];
            if ((last == 0x00 && !(prev & 0x80)) || (last == 0xFF && (prev & 0x80))) le.pop_back();
            else break;
        }
        if (le.empty()) return Val::integer(0);
        if (le.size() <= 8) {
            uint64_t v = 0;
            for (size_t k = le.size(); k-- > 0;) v = (v << 8) | (uint8_t)le[k];
            if ((uint8_t)le.back() & 0x80)
                for (size_t k = le.size(); k < 8; ++k) v |= (uint64_t)0xFF << (8 * k);
            return Val::integer((int64_t)v);
        }
        return Val::str(T::Big, strs.get(le));
    }

    // -- the opcode loop (pickle_stream.PickleStream._run) ---------------------------------
    void run() {
        if (done) return;
        if (!started) {
            if (!have(1)) {
                if (eof) fail_at(0, "the file ends before STOP: truncated pickle");
                return;
            }
            if (u8(0) != 0x80)
                fail_at(0, "not a pickle of protocol 2 or later (no PROTO opcode); expected "
                           "a file written by torch (pickle protocol 2 to 5)");
            started = true;
        }
        try {
            while (!done) step();
        } catch (Suspend&) {
        }
        compact_input();
    }

    void compact_input() {
        if (pos > (1u << 20) || pos == buf.size()) {
            buf.erase(0, pos);
            base += (int64_t)pos;
            pos = 0;
        }
    }

    void flush_items(int64_t at) {  // the previous item of a streamed list is complete
        Mark& m = marks.back();
        checked.clear();
        for (auto& item : stack) {
            Path p = m.path;
            p.k[p.n++] = Val::integer(m.handed);
            handle(p, item, at);
            ++m.handed;
        }
        stack.clear();
        if (pending_from >= 0) compact_memo((size_t)pending_from, at);
        pending_from = (int64_t)memo.size();
    }

    static bool no_push(uint8_t op) {
        switch (op) {
            case 0x28: case 0x94: case 0x71: case 0x72: case 0x75: case 0x65: case 0x61:
            case 0x73: case 0x95: case 0x80: case 0x2E: case 0x90: case 0x30: case 0x31:
            case 0x85: case 0x86: case 0x87: case 0x74: case 0x6C: case 0x64: case 0x91:
                return true;
            default: return false;
        }
    }

    void step() {
        if (!have(1)) {
            if (eof) fail_at(base + (int64_t)pos, "the file ends before STOP: truncated pickle");
            throw Suspend{};
        }
        const uint8_t op = u8(pos);
        const int64_t at = base + (int64_t)pos;
        if (streamed && !stack.empty() && !no_push(op)) flush_items(at);
        if (op == 0x7D && streamed && stack.empty() && fast_entry()) return;
        const size_t a = pos + 1;  // the argument
        switch (op) {
            case 0x68: {  // BINGET
                need(2, at);
                stack.push_back(memo_get(u8(a), at));
                pos = a + 1;
                return;
            }
            case 0x94:  // MEMOIZE
                if (stack.empty()) fail_at(at, "MEMOIZE with an empty stack");
                memo_put(memo.size(), stack.back());
                pos = a;
                return;
            case 0x8C: {  // SHORT_BINUNICODE
                need(2, at);
                size_t n = u8(a);
                need(2 + n, at);
                stack.push_back(text(a + 1, n, at));
                pos = a + 1 + n;
                return;
            }
            case 0x6A: {  // LONG_BINGET
                need(5, at);
                stack.push_back(memo_get(u32(a), at));
                pos = a + 4;
                return;
            }
            case 0x4B:  // BININT1
                need(2, at);
                stack.push_back(Val::integer(u8(a)));
                pos = a + 1;
                return;
            case 0x8A: {  // LONG1
                need(2, at);
                size_t n = u8(a);
                need(2 + n, at);
                stack.push_back(long_of(a + 1, n));
                pos = a + 1 + n;
                return;
            }
            case 0x4A:  // BININT
                need(5, at);
                stack.push_back(Val::integer(i32(a)));
                pos = a + 4;
                return;
            case 0x4D:  // BININT2
                need(3, at);
                stack.push_back(Val::integer((uint16_t)(u8(a) | (u8(a + 1) << 8))));
                pos = a + 2;
                return;
            case 0x7D: case 0x5D: {  // EMPTY_DICT, EMPTY_LIST
                Val v = Val::obj(op == 0x7D ? T::Dict : T::List,
                                 std::make_shared<Obj>(op == 0x7D ? T::Dict : T::List));
                new_path(v);
                stack.push_back(std::move(v));
                pos = a;
                return;
            }
            case 0x28: {  // MARK
                Mark m;
                if (!stack.empty() && (stack.back().t == T::Dict || stack.back().t == T::List)) {
                    auto it = paths.find(stack.back().o.get());
                    if (it != paths.end()) { m.known = true; m.path = it->second.first; }
                    m.streamed = stack.back().t == T::List && streamed_ids.count(stack.back().o.get());
                }
                metastack.push_back(std::move(stack));
                stack = take_vector();
                marks.push_back(m);
                streamed = m.streamed;
                if (streamed) pending_from = (int64_t)memo.size();
                pos = a;
                return;
            }
            case 0x75: case 0x65: {  // SETITEMS, APPENDS
                if (metastack.empty()) fail_at(at, "SETITEMS/APPENDS without a MARK");
                pos = a;
                if (marks.back().streamed) {
                    Mark& m = marks.back();
                    checked.clear();
                    for (auto& item : stack) {
                        Path p = m.path;
                        p.k[p.n++] = Val::integer(m.handed);
                        handle(p, item, at);
                        ++m.handed;
                    }
                    stack.clear();
                    if (pending_from >= 0) compact_memo((size_t)pending_from, at);
                    pending_from = -1;
                }
                std::vector<Val> items = std::move(stack);
                pop_mark();
                struct Back {  // the items' vector goes back to the pool, its capacity kept
                    Parser& P; std::vector<Val>& v;
                    ~Back() { P.give_vector(std::move(v)); }
                } back{*this, items};
                if (stack.empty()) fail_at(at, "SETITEMS/APPENDS with nothing to add to");
                Val& target = stack.back();
                if (op == 0x75) {
                    if (target.t != T::Dict)
                        fail_at(at, std::string("SETITEMS on a ") + type_name(target) +
                                        ", expected a dict");
                    if (items.size() % 2) fail_at(at, "SETITEMS with an odd number of values");
                    if (!frame_of_obj.empty()) frame_of_obj.erase(target.o.get());
                    Obj& d = *target.o;
                    d.items.reserve(d.items.size() + items.size() / 2);
                    d.vals.reserve(d.vals.size() + items.size() / 2);
                    for (size_t k = 0; k < items.size(); k += 2) {
                        hashable(items[k], at);
                        dict_set(d, std::move(items[k]), std::move(items[k + 1]));
                    }
                } else if (target.t == T::List) {
                    auto& dst = target.o->items;
                    dst.reserve(dst.size() + items.size());
                    for (auto& v : items) dst.push_back(std::move(v));
                } else {
                    fail_at(at, std::string("APPENDS to a ") + type_name(target) +
                                    ", expected a list");
                }
                return;
            }
            case 0x85: case 0x86: case 0x87: {  // TUPLE1..3
                size_t n = op - 0x84;
                if (stack.size() < n) fail_at(at, "TUPLE with too few values");
                auto o = std::make_shared<Obj>(T::Tuple);
                o->items.assign(stack.end() - (long)n, stack.end());
                stack.resize(stack.size() - n);
                stack.push_back(Val::obj(T::Tuple, o));
                pos = a;
                return;
            }
            case 0x89: stack.push_back(Val::boolean(false)); pos = a; return;  // NEWFALSE
            case 0x88: stack.push_back(Val::boolean(true)); pos = a; return;   // NEWTRUE
            case 0x4E: stack.push_back(Val::none()); pos = a; return;          // NONE
            case 0x47: {  // BINFLOAT (big-endian)
                need(9, at);
                uint64_t bits = 0;
                for (int k = 0; k < 8; ++k) bits = (bits << 8) | u8(a + (size_t)k);
                double d;
                std::memcpy(&d, &bits, 8);
                stack.push_back(Val::flt(d));
                pos = a + 8;
                return;
            }
            case 0x61: {  // APPEND
                if (stack.size() < 2 || stack[stack.size() - 2].t != T::List)
                    fail_at(at, "APPEND without a list below its value");
                pos = a;
                Val v = std::move(stack.back());
                stack.pop_back();
                const Obj* list = stack.back().o.get();
                if (streamed_ids.count(list)) {  // a streamed list of one item
                    Path p = paths[list].first;
                    p.k[p.n++] = Val::integer(0);
                    checked.clear();
                    handle(p, v, at);
                    compact_memo(pending_from >= 0 ? (size_t)pending_from : memo.size(), at);
                    pending_from = -1;
                } else {
                    stack.back().o->items.push_back(std::move(v));
                }
                return;
            }
            case 0x73: {  // SETITEM
                if (stack.size() < 3 || stack[stack.size() - 3].t != T::Dict)
                    fail_at(at, "SETITEM without a dict below its key and value");
                Val v = std::move(stack.back());
                stack.pop_back();
                Val k = std::move(stack.back());
                stack.pop_back();
                hashable(k, at);
                if (!frame_of_obj.empty()) frame_of_obj.erase(stack.back().o.get());
                dict_set(*stack.back().o, k, v);
                pos = a;
                return;
            }
            case 0x58: {  // BINUNICODE
                need(5, at);
                uint64_t n = u32(a);
                need_len(5, n, at);
                stack.push_back(text(a + 4, n, at));
                pos = a + 4 + n;
                return;
            }
            case 0x8D: {  // BINUNICODE8
                need(9, at);
                uint64_t n = u64(a);
                need_len(9, n, at);
                stack.push_back(text(a + 8, (size_t)n, at));
                pos = a + 8 + (size_t)n;
                return;
            }
            case 0x95:  // FRAME
                need(9, at);
                pos = a + 8;
                return;
            case 0x80: {  // PROTO
                need(2, at);
                uint8_t proto = u8(a);
                pos = a + 1;
                if (proto < 2 || proto > 5)
                    fail_at(at, "pickle protocol " + std::to_string(proto) + ": expected 2 to 5");
                return;
            }
            case 0x71:  // BINPUT
                if (stack.empty()) fail_at(at, "BINPUT with an empty stack");
                need(2, at);
                memo_put(u8(a), stack.back());
                pos = a + 1;
                return;
            case 0x72:  // LONG_BINPUT
                if (stack.empty()) fail_at(at, "LONG_BINPUT with an empty stack");
                need(5, at);
                memo_put(u32(a), stack.back());
                pos = a + 4;
                return;
            case 0x29:  // EMPTY_TUPLE
                stack.push_back(Val::obj(T::Tuple, std::make_shared<Obj>(T::Tuple)));
                pos = a;
                return;
            case 0x74: {  // TUPLE
                if (metastack.empty()) fail_at(at, "TUPLE without a MARK");
                auto o = std::make_shared<Obj>(T::Tuple);
                o->items = std::move(stack);
                pop_mark();
                stack.push_back(Val::obj(T::Tuple, o));
                pos = a;
                return;
            }
            case 0x6C: case 0x64: {  // LIST, DICT
                if (metastack.empty()) fail_at(at, "LIST/DICT without a MARK");
                std::vector<Val> items = std::move(stack);
                pop_mark();
                Val v;
                if (op == 0x6C) {
                    auto o = std::make_shared<Obj>(T::List);
                    o->items = std::move(items);
                    v = Val::obj(T::List, o);
                } else {
                    if (items.size() % 2) fail_at(at, "DICT with an odd number of values");
                    auto o = std::make_shared<Obj>(T::Dict);
                    for (size_t k = 0; k < items.size(); k += 2) {
                        hashable(items[k], at);
                        dict_set(*o, items[k], items[k + 1]);
                    }
                    v = Val::obj(T::Dict, o);
                }
                new_path(v);
                stack.push_back(std::move(v));
                pos = a;
                return;
            }
            case 0x8F:  // EMPTY_SET
                stack.push_back(Val::obj(T::Set, std::make_shared<Obj>(T::Set)));
                pos = a;
                return;
            case 0x90: {  // ADDITEMS
                if (metastack.empty()) fail_at(at, "ADDITEMS without a MARK");
                std::vector<Val> items = std::move(stack);
                pop_mark();
                if (stack.empty() || stack.back().t != T::Set) fail_at(at, "ADDITEMS without a set");
                for (auto& v : items) {
                    hashable(v, at);
                    set_add(*stack.back().o, v);
                }
                pos = a;
                return;
            }
            case 0x91: {  // FROZENSET
                if (metastack.empty()) fail_at(at, "FROZENSET without a MARK");
                std::vector<Val> items = std::move(stack);
                pop_mark();
                auto o = std::make_shared<Obj>(T::FSet);
                for (auto& v : items) {
                    hashable(v, at);
                    set_add(*o, v);
                }
                stack.push_back(Val::obj(T::FSet, o));
                pos = a;
                return;
            }
            case 0x30:  // POP
                if (!stack.empty()) stack.pop_back();
                else if (!metastack.empty()) pop_mark();
                else fail_at(at, "POP with an empty stack");
                pos = a;
                return;
            case 0x31:  // POP_MARK
                if (metastack.empty()) fail_at(at, "POP_MARK without a MARK");
                pop_mark();
                pos = a;
                return;
            case 0x32:  // DUP
                if (stack.empty()) fail_at(at, "DUP with an empty stack");
                stack.push_back(stack.back());
                pos = a;
                return;
            case 0x43: case 0x42: case 0x8E: case 0x55: case 0x54: case 0x96: {
                size_t width = (op == 0x43 || op == 0x55) ? 1 : (op == 0x42 || op == 0x54) ? 4 : 8;
                need(1 + width, at);
                uint64_t n = width == 1 ? u8(a) : width == 4 ? u32(a) : u64(a);
                need_len(1 + width, n, at);
                std::string_view data(buf.data() + a + width, (size_t)n);
                if (op == 0x55 || op == 0x54) {
                    for (unsigned char c : data)
                        if (c >= 0x80) fail_at(at, "a Python 2 string that is not ASCII");
                    stack.push_back(Val::str(T::Str, strs.get(data)));
                } else {
                    stack.push_back(Val::str(op == 0x96 ? T::BArr : T::Bytes, strs.get(data)));
                }
                pos = a + width + (size_t)n;
                return;
            }
            case 0x8B: {  // LONG4
                need(5, at);
                int32_t n = i32(a);
                if (n < 0) fail_at(at, "LONG4 with a negative length");
                need(5 + (size_t)n, at);
                stack.push_back(long_of(a + 4, (size_t)n));
                pos = a + 4 + (size_t)n;
                return;
            }
            case 0x2E:  // STOP
                if (!metastack.empty())
                    fail_at(at, "STOP inside an unfinished MARK: truncated or corrupt");
                if (stack.size() != 1)
                    fail_at(at, "STOP with " + std::to_string(stack.size()) +
                                    " values on the stack, expected 1");
                pos = a;
                done = true;
                {
                    Path p;
                    p.n = -1;  // TOP
                    checked.clear();
                    handle(p, stack[0], at);
                }
                return;
            default: break;
        }
        const char* code = code_opcode(op);
        if (code) {
            std::string target;
            if (op == 0x63) {  // GLOBAL module\nname\n within the next 256 bytes
                if (!eof && !have(1 + 256)) throw Suspend{};
                std::string_view w(buf.data() + a, std::min<size_t>(256, buf.size() - a));
                size_t n1 = w.find('\n');
                size_t n2 = n1 == std::string_view::npos ? n1 : w.find('\n', n1 + 1);
                if (n2 != std::string_view::npos) {
                    std::string_view mod = w.substr(0, n1), name = w.substr(n1 + 1, n2 - n1 - 1);
                    bool c1, c2;
                    if (utf8_valid_prefix(mod, &c1) == mod.size() &&
                        utf8_valid_prefix(name, &c2) == name.size())
                        target = " " + std::string(mod) + "." + std::string(name);
                    else
                        target = " (a name that is not UTF-8)";
                }
            } else if (op == 0x93 && stack.size() >= 2 && stack[stack.size() - 2].t == T::Str &&
                       stack.back().t == T::Str) {
                target = " " + clean_text(*stack[stack.size() - 2].s) + "." +
                         clean_text(*stack.back().s);
            }
            fail_at(at, std::string("refused pickle opcode ") + code + target +
                            ": it imports or calls code, and a memory snapshot holds only "
                            "dicts, lists, strings and numbers (nothing was run)");
        }
        const char* textop = text_opcode(op);
        if (textop)
            fail_at(at, std::string("refused pickle opcode ") + textop +
                            ": a text opcode of protocol 0, which torch never writes");
        fail_at(at, "unknown pickle opcode " + hex_byte(op) + ": corrupt file or not a pickle");
    }

    // -- the fast path: one trace entry as torch's pickler writes it -------------------------
    //
    // EMPTY_DICT [MEMOIZE] MARK (key value)* SETITEMS, the keys text (memoized or new), the
    // values scalars, text, or the frames list: EMPTY_LIST [MEMOIZE], then MARK and memo
    // reads of frames already interned then APPENDS, or one such read then APPEND, or
    // nothing. Read in one go from the buffer with no object made: the entry's row, and
    // the memo slots the generic machine would hold once the item is handed over and
    // compacted (the dict: handed over; the list: its stack; text: itself). Anything else
    // (another shape, a memo read of a container, a frame seen for the first time, bytes
    // not yet read, odd text or numbers) leaves the state untouched and returns false: the
    // generic machine above runs the same opcodes one by one. The item is handed over
    // where the generic machine would hand it: the next opcode starts the next item
    // (EMPTY_DICT) or ends the batch (APPENDS).
    static constexpr size_t kFastKeys = 32, kFastFrames = 512, kFastMemo = 64;
    Val fast_keys[kFastKeys], fast_vals[kFastKeys];
    int64_t fast_frames[kFastFrames];
    uint64_t fast_memo[kFastMemo];
    int64_t fast_dev_index = 0;  // the device of the last fast entry (an int index)
    Device* fast_dev = nullptr;

    // A memo read: text, a frame or a stack (as slot_of holds them), else no.
    bool fast_get(uint64_t i, size_t memo0, size_t nm, uint64_t* slot) const {
        uint64_t sv;
        if (i < memo0) sv = memo.get((size_t)i);
        else if (i - memo0 < nm) sv = fast_memo[i - memo0];
        else return false;
        uint64_t kind = sv & 7;
        if (kind < 1 || kind > 3) return false;
        if (i >= memo0 && kind != 1) return false;  // this entry's own list
        *slot = sv;
        return true;
    }
    // LONG1's little-endian bytes as an int64, when they fit (as long_of reads them).
    static bool fast_long(const uint8_t* d, size_t n, int64_t* out) {
        while (n > 1) {
            uint8_t last = d[n - 1], prev = d[n - 2];
            if ((last == 0x00 && !(prev & 0x80)) || (last == 0xFF && (prev & 0x80))) --n;
            else break;
        }
        if (n == 0) { *out = 0; return true; }
        if (n > 8) return false;
        uint64_t v = 0;
        for (size_t k = n; k-- > 0;) v = (v << 8) | d[k];
        if (d[n - 1] & 0x80)
            for (size_t k = n; k < 8; ++k) v |= (uint64_t)0xFF << (8 * k);
        *out = (int64_t)v;
        return true;
    }

    // Only scalars and ids go in fast_keys / fast_vals: their object pointer stays empty,
    // so a value is written as its tag and payload.
    static void put(Val& v, T t, int64_t i) { v.t = t; v.i = i; }
    static void put_str(Val& v, const std::string* s) { v.t = T::Str; v.s = s; }
    static void put_slot(Val& v, uint64_t slot) {  // a text, frame or stack slot (slot_of)
        switch (slot & 7) {
            case 1: put_str(v, reinterpret_cast<const std::string*>(slot & ~(uint64_t)7)); return;
            case 2: put(v, T::Frame, (int64_t)(slot >> 3)); return;
            default: put(v, T::Stack, (int64_t)(slot >> 3)); return;
        }
    }

    bool fast_entry() {
        Mark& m = marks.back();
        if (m.path.n != 2 || !is_text(m.path.k[0], k_traces)) return false;
        const auto* B = reinterpret_cast<const uint8_t*>(buf.data());
        const size_t end = buf.size();
        const size_t memo0 = memo.size();
        size_t p = pos + 1, nm = 0, n = 0, nf = 0;
        int list_slot = -1;   // the frames list's memo slot, in fast_memo
        int frames_at = -1;   // the frames list's value, in fast_vals
        auto memoize = [&](uint64_t slot) {  // MEMOIZE after a value, if there
            if (p < end && B[p] == 0x94) {
                if (nm == kFastMemo) return false;
                fast_memo[nm++] = slot;
                ++p;
            }
            return true;
        };
        auto read_u32 = [&](size_t at) { uint32_t v; std::memcpy(&v, B + at, 4); return v; };
        // a text, memoized or new (and then perhaps memoized)
        auto text_at = [&](Val& out) {
            if (p >= end) return false;
            uint8_t op = B[p];
            uint64_t slot;
            if (op == 0x68 || op == 0x6A) {
                size_t w = op == 0x68 ? 1 : 4;
                if (p + 1 + w > end) return false;
                uint64_t i = w == 1 ? B[p + 1] : read_u32(p + 1);
                if (!fast_get(i, memo0, nm, &slot) || (slot & 7) != 1) return false;
                put_slot(out, slot);
                p += 1 + w;
                return true;
            }
            size_t len, head;
            if (op == 0x8C) {
                if (p + 2 > end) return false;
                len = B[p + 1]; head = 2;
            } else if (op == 0x58) {
                if (p + 5 > end) return false;
                len = read_u32(p + 1); head = 5;
            } else {
                return false;
            }
            if (p + head + len > end) return false;
            std::string_view sv(reinterpret_cast<const char*>(B + p + head), len);
            if (!valid_utf8_surrogatepass(sv)) return false;
            const std::string* str = strs.get(sv);
            put_str(out, str);
            p += head + len;
            return memoize(reinterpret_cast<uint64_t>(str) | 1);
        };
        if (!memoize(0)) return false;  // the dict: handed over once done
        if (p >= end || B[p] != 0x28) return false;  // MARK
        ++p;
        for (;;) {
            if (p >= end) return false;
            if (B[p] == 0x75) { ++p; break; }  // SETITEMS
            if (n == kFastKeys) return false;
            Val& k = fast_keys[n];
            Val& v = fast_vals[n];
            if (!text_at(k)) return false;
            for (size_t j = 0; j < n; ++j)
                if (fast_keys[j].s == k.s) return false;  // a key again
            if (p >= end) return false;
            uint8_t op = B[p];
            switch (op) {
                case 0x68: case 0x6A: {
                    size_t w = op == 0x68 ? 1 : 4;
                    if (p + 1 + w > end) return false;
                    uint64_t i = w == 1 ? B[p + 1] : read_u32(p + 1), slot;
                    if (!fast_get(i, memo0, nm, &slot)) return false;
                    put_slot(v, slot);
                    p += 1 + w;
                    break;
                }
                case 0x8C: case 0x58:
                    if (!text_at(v)) return false;
                    break;
                case 0x4B:
                    if (p + 2 > end) return false;
                    put(v, T::Int, B[p + 1]);
                    p += 2;
                    break;
                case 0x4D:
                    if (p + 3 > end) return false;
                    put(v, T::Int, (uint16_t)(B[p + 1] | (B[p + 2] << 8)));
                    p += 3;
                    break;
                case 0x4A: {
                    if (p + 5 > end) return false;
                    int32_t x;
                    std::memcpy(&x, B + p + 1, 4);
                    put(v, T::Int, x);
                    p += 5;
                    break;
                }
                case 0x8A: {
                    if (p + 2 > end || p + 2 + B[p + 1] > end) return false;
                    int64_t x;
                    if (!fast_long(B + p + 2, B[p + 1], &x)) return false;
                    put(v, T::Int, x);
                    p += 2 + B[p + 1];
                    break;
                }
                case 0x4E: put(v, T::None, 0); ++p; break;
                case 0x88: case 0x89: put(v, T::Bool, op == 0x88); ++p; break;
                case 0x47: {
                    if (p + 9 > end) return false;
                    uint64_t bits = 0;
                    for (int q = 1; q <= 8; ++q) bits = (bits << 8) | B[p + (size_t)q];
                    double d;
                    std::memcpy(&d, &bits, 8);
                    v.t = T::Float;
                    v.f = d;
                    p += 9;
                    break;
                }
                case 0x5D: {  // the frames list
                    if (k.s != k_frames) return false;
                    ++p;
                    if (p < end && B[p] == 0x94) {
                        if (nm == kFastMemo) return false;
                        list_slot = (int)nm;
                        fast_memo[nm++] = 3;  // its stack, set below
                        ++p;
                    }
                    auto frame = [&](size_t at, size_t* next) {  // a memo read of a frame
                        if (at >= end) return false;
                        size_t w = B[at] == 0x68 ? 1 : B[at] == 0x6A ? 4 : 0;
                        if (!w || at + 1 + w > end) return false;
                        uint64_t i = w == 1 ? B[at + 1] : read_u32(at + 1), slot;
                        if (!fast_get(i, memo0, nm, &slot) || (slot & 7) != 2) return false;
                        if (nf == kFastFrames) return false;
                        fast_frames[nf++] = (int64_t)(slot >> 3);
                        *next = at + 1 + w;
                        return true;
                    };
                    if (p < end && B[p] == 0x28) {  // MARK frames APPENDS
                        ++p;
                        while (p < end && B[p] != 0x65)
                            if (!frame(p, &p)) return false;
                        if (p >= end) return false;
                        ++p;
                        if (p < end && (B[p] == 0x28 || B[p] == 0x61)) return false;  // more
                    } else {
                        size_t next;
                        if (frame(p, &next) && next < end && B[next] == 0x61) p = next + 1;
                        else nf = 0;  // empty: what follows is the next key
                    }
                    frames_at = (int)n;
                    break;
                }
                default:
                    return false;
            }
            ++n;
        }
        // handed over where the generic machine would: the next item or the batch's end
        if (p >= end || (B[p] != 0x7D && B[p] != 0x65)) return false;
        View o{fast_keys, fast_vals, n};
        if (o.get(k_filename) && o.get(k_line) && o.get(k_name)) return false;  // a frame
        // The generic machine's handle(): the device, declared, then the entry.
        first_item = false;
        const Val& index = m.path.k[1];
        Device* dp;
        if (fast_dev && index.t == T::Int && index.i == fast_dev_index) dp = fast_dev;
        else dp = &device(index);
        Device& d = *dp;
        declare(d);
        int64_t sid = 0;
        if (frames_at >= 0) {
            if (nf) sid = stack_of_ids(fast_frames, nf);
            put(fast_vals[frames_at], T::Stack, sid);
        }
        pos = p;
        for (size_t j = 0; j < nm; ++j)
            memo.push((int)j == list_slot ? (((uint64_t)sid << 3) | 3) : fast_memo[j]);
        entry(d, o);
        if (index.t == T::Int) { fast_dev = dp; fast_dev_index = index.i; }
        ++m.handed;
        // compact_memo(pending_from): this entry's slots are already what it leaves
        if (pending_from >= 0) memo.freeze_before((size_t)pending_from);
        pending_from = (int64_t)memo.size();
        return true;
    }

    static const char* code_opcode(uint8_t op) {
        switch (op) {
            case 0x63: return "GLOBAL"; case 0x93: return "STACK_GLOBAL";
            case 0x52: return "REDUCE"; case 0x62: return "BUILD"; case 0x69: return "INST";
            case 0x6F: return "OBJ"; case 0x81: return "NEWOBJ"; case 0x92: return "NEWOBJ_EX";
            case 0x82: return "EXT1"; case 0x83: return "EXT2"; case 0x84: return "EXT4";
            case 0x50: return "PERSID"; case 0x51: return "BINPERSID";
            case 0x97: return "NEXT_BUFFER"; case 0x98: return "READONLY_BUFFER";
            default: return nullptr;
        }
    }
    static const char* text_opcode(uint8_t op) {
        switch (op) {
            case 0x49: return "INT"; case 0x4C: return "LONG"; case 0x46: return "FLOAT";
            case 0x56: return "UNICODE"; case 0x53: return "STRING"; case 0x67: return "GET";
            case 0x70: return "PUT";
            default: return nullptr;
        }
    }

    // pickle_stream.PickleStream._hashable: no list, dict, set or bytearray inside; at
    // most kMaxNesting deep and kMaxKeyValues values (hash_of and py_equal read it whole).
    static bool unhashable(const Val& k) {
        return k.t == T::List || k.t == T::Dict || k.t == T::Set || k.t == T::BArr;
    }
    std::vector<std::pair<const Obj*, size_t>> key_walk;
    void hashable(const Val& k, int64_t at) {
        if (k.t != T::Tuple && k.t != T::FSet) {
            if (unhashable(k))
                fail_at(at, std::string("a ") + type_name(k) + " used as a dict key or set member");
            return;
        }
        key_walk.clear();
        key_walk.emplace_back(k.o.get(), 0);
        size_t n = 1;
        while (!key_walk.empty()) {
            auto& top = key_walk.back();
            if (top.second == top.first->items.size()) {
                key_walk.pop_back();
                continue;
            }
            const Val& x = top.first->items[top.second++];
            ++n;
            if (unhashable(x))
                fail_at(at, std::string("a ") + type_name(x) + " used as a dict key or set member");
            if (n > kMaxKeyValues)
                fail_at(at, "a dict key or set member of more than " + grouped((int64_t)kMaxKeyValues) +
                                " values: " + kPlain + " as keys)");
            if (x.t == T::Tuple || x.t == T::FSet) {
                if (key_walk.size() == (size_t)kMaxNesting)
                    fail_at(at, "a dict key or set member nested deeper than " +
                                    std::to_string(kMaxNesting) + " levels: " + kPlain + " as keys)");
                key_walk.emplace_back(x.o.get(), 0);
            }
        }
    }

    // pickle_stream.PickleStream._check_plain: containers at most kMaxNesting deep, none
    // inside itself. Depth first without recursion; `checked` (cleared for each hand-over)
    // holds the containers already checked and their height.
    std::unordered_map<const Obj*, int> checked;
    struct Walk { const Obj* o; size_t next; int height; };
    std::vector<Walk> walk;
    std::unordered_set<const Obj*> on_path;
    void check_plain(const Val& v, int64_t at) {
        if (!v.container() || checked.count(v.o.get())) return;
        walk.clear();
        on_path.clear();
        walk.push_back({v.o.get(), 0, 0});
        on_path.insert(v.o.get());
        while (!walk.empty()) {
            const Obj* o = walk.back().o;
            bool dict = o->kind == T::Dict;
            size_t n = dict ? 2 * o->items.size() : o->items.size();
            const Val* down = nullptr;
            while (walk.back().next < n) {
                size_t k = walk.back().next++;
                const Val& x = dict ? (k % 2 ? o->vals[k / 2] : o->items[k / 2]) : o->items[k];
                if (!x.container()) continue;
                auto it = checked.find(x.o.get());
                if (it != checked.end()) {
                    if ((int)walk.size() + it->second > kMaxNesting) fail_at(at, too_deep());
                    walk.back().height = std::max(walk.back().height, it->second);
                    continue;
                }
                if (on_path.count(x.o.get()))
                    fail_at(at, std::string("a ") + type_name(x) + " that contains itself: " +
                                    kPlain + ", no cycles)");
                if ((int)walk.size() == kMaxNesting) fail_at(at, too_deep());
                down = &x;
                break;
            }
            if (down) {
                on_path.insert(down->o.get());
                walk.push_back({down->o.get(), 0, 0});
                continue;
            }
            int height = walk.back().height + 1;
            walk.pop_back();
            on_path.erase(o);
            checked[o] = height;
            if (!walk.empty()) walk.back().height = std::max(walk.back().height, height);
        }
    }

    // -- after an item: the memo keeps stand-ins (Interner.compact) -----------------------
    static bool is_frame_dict(const Val& v, const Parser& P) {
        return v.t == T::Dict && dict_get(*v.o, P.k_filename) && dict_get(*v.o, P.k_line) &&
               dict_get(*v.o, P.k_name);
    }
    void compact_memo(size_t start, int64_t at) {
        for (size_t k = start; k < memo.size(); ++k) {  // what Interner.compact reads, checked
            uint64_t s = memo.get(k);
            if ((s & 7) != 4) continue;
            const Val& v = side[s >> 3];
            if (v.t == T::List || v.t == T::Dict || v.t == T::Set || v.t == T::Tuple)
                check_plain(v, at);
        }
        for (size_t k = start; k < memo.size(); ++k) {
            uint64_t s = memo.get(k);
            if ((s & 7) != 4) continue;
            const Val& v = side[s >> 3];
            if (v.t != T::List && v.t != T::Dict && v.t != T::Set && v.t != T::Tuple) continue;
            Val repl;
            repl.t = T::Streamed;
            if (v.t == T::Dict && is_frame_dict(v, *this)) {
                repl = Val::id(T::Frame, frame_id(v));
            } else if (v.t == T::List) {
                bool frames_like = true;
                for (auto& f : v.o->items)
                    if (!(f.t == T::Frame || (f.t == T::Dict && dict_get(*f.o, k_filename)))) {
                        frames_like = false;
                        break;
                    }
                if (frames_like) repl = Val::id(T::Stack, stack_id(v));
            }
            release(s);
            memo.set(k, slot_of(repl));
        }
        memo.freeze_before(pending_from >= 0 ? std::min((size_t)pending_from, start) : start);
    }

    // -- interning (cuda_snapshot.Interner) ---------------------------------------------------
    int64_t frame_id(const Val& f) {
        if (f.t == T::Frame) return f.i;
        if (f.t != T::Dict)
            fail(std::string("a frame that is a ") + type_name(f) +
                 ", expected a dict with filename, line and name");
        auto cached = frame_of_obj.find(f.o.get());
        if (cached != frame_of_obj.end()) return cached->second.first;
        int64_t id = frame_id_of(f);
        frame_of_obj.emplace(f.o.get(), std::make_pair(id, f.o));
        return id;
    }
    int64_t frame_id_of(const Val& f) {
        const Obj& d = *f.o;
        std::string key;
        auto part = [&](const std::string* k) {
            const Val* v = dict_get(d, k);
            json_of(v ? *v : Val::none(), key, true);
            key.push_back('\0');
        };
        part(k_filename);
        part(k_line);
        part(k_name);
        auto extra = std::make_shared<Obj>(T::Dict);
        for (size_t j = 0; j < d.items.size(); ++j) {
            const Val& k = d.items[j];
            if (k.t == T::Str && (k.s == k_filename || k.s == k_line || k.s == k_name)) continue;
            extra->items.push_back(k);
            extra->vals.push_back(d.vals[j]);
        }
        if (!extra->items.empty()) json_of(Val::obj(T::Dict, extra), key, true);
        else key.append("None");
        auto it = frames.find(key);
        if (it != frames.end()) return it->second;
        int64_t id = (int64_t)frames.size() + 1;
        frames.emplace(std::move(key), id);
        Out o;
        o.kind = 2;
        o.id = id;
        o.value = f;
        outs.push_back(std::move(o));
        return id;
    }
    // None for no frames (0), else the stack id.
    int64_t stack_id(const Val& frames_v) {
        if (frames_v.t == T::None) return 0;
        if (frames_v.t == T::Stack) return frames_v.i;
        if (frames_v.t != T::List)
            fail(std::string("frames that are a ") + type_name(frames_v) +
                 ", expected a list of frames");
        if (frames_v.o->items.empty()) return 0;
        std::vector<int64_t>& ids = stack_ids_buf;
        ids.clear();
        for (auto& f : frames_v.o->items) ids.push_back(frame_id(f));
        return stack_of_ids(ids.data(), ids.size());
    }
    // The stack of these frame ids (at least one): its id, interned on first sight.
    int64_t stack_of_ids(const int64_t* ids, size_t n) {
        stack_key.assign(reinterpret_cast<const char*>(ids), n * 8);
        auto it = stacks.find(stack_key);
        if (it != stacks.end()) return it->second;
        int64_t id = (int64_t)stacks.size() + 1;
        stacks.emplace(stack_key, id);
        Out o;
        o.kind = 3;
        o.id = id;
        o.ids.assign(ids, ids + n);
        outs.push_back(std::move(o));
        return id;
    }
    std::vector<int64_t> stack_ids_buf;
    std::string stack_key;

    // -- items (cuda_snapshot._Parser._consume) ------------------------------------------------
    static Head head_of(const Path& p, const Parser& P) {
        if (p.n < 1) return Head::Other;
        if (is_text(p.k[0], P.k_traces)) return Head::Traces;
        if (is_text(p.k[0], P.k_segments)) return Head::Segments;
        if (is_text(p.k[0], P.k_annotations)) return Head::Annotations;
        return Head::Other;
    }

    void handle(const Path& p, const Val& value, int64_t at) {
        check_plain(value, at);
        bool top_item = p.n == -1;
        if (first_item) {
            first_item = false;
            if (top_item && value.t != T::Dict)
                fail(std::string("a pickle of a ") + type_name(value) +
                     ", not an allocator snapshot: expected a dict with 'segments' and "
                     "'device_traces' (torch.cuda.memory._dump_snapshot)");
        }
        if (top_item) {
            top = value;
            have_top = true;
            finish_top();
            return;
        }
        switch (head_of(p, *this)) {
            case Head::Traces: {
                Device& d = device(p.k[1]);
                declare(d);
                entry(d, value);
                return;
            }
            case Head::Segments: segment(value); return;
            case Head::Annotations: annotation(value); return;
            default: return;
        }
    }

    Device& device(const Val& index) {
        std::string text;
        if (index.t == T::Int) {
            if (index.i < 0) fail("device " + std::to_string(index.i) +
                                  ": expected a device index (an int >= 0)");
            text = std::to_string(index.i);
        } else if (index.t == T::Big) {
            big_decimal(*index.s, text);
            if (text[0] == '-') fail("device " + text + ": expected a device index (an int >= 0)");
        } else {
            fail(std::string("a device that is a ") + type_name(index) +
                 ": expected a device index (an int >= 0)");
        }
        auto it = device_at.find(text);
        if (it != device_at.end()) return *it->second;
        auto d = std::make_unique<Device>();
        d->index = index;
        d->key = "cuda:" + text;
        Device* raw = d.get();
        devices.push_back(std::move(d));
        device_at.emplace(text, raw);
        return *raw;
    }

    void flush_batch() {
        if (batch->rows == 0) return;
        Out o;
        o.kind = 0;
        o.batch = std::move(batch);
        o.key = batch_device;
        outs.push_back(std::move(o));
        batch = std::make_unique<EventBatch>();
    }

    void declare(Device& d) {
        if (d.declared) return;
        d.declared = true;
        flush_batch();
        Out o;
        o.kind = 1;
        o.value = d.index;
        outs.push_back(std::move(o));
    }

    static bool int64_of(const Val* v, int64_t* out) {
        if (v && v->t == T::Int) { *out = v->i; return true; }
        return false;
    }
    static bool time_of(const Val* v, int64_t* out) {
        if (v && v->t == T::Int && v->i >= -kTimeLimit && v->i <= kTimeLimit) {
            *out = v->i;
            return true;
        }
        return false;
    }

    std::string keys_of(const Obj& d) { return keys_of(d.items.data(), d.items.size()); }
    std::string keys_of(const Val* keys, size_t n) {  // cuda_snapshot._keys
        std::vector<std::string> names;
        for (size_t j = 0; j < n; ++j) {
            const Val& k = keys[j];
            names.push_back(k.t == T::Str ? clean_text(*k.s)
                                          : std::string("<") + type_name(k) + ">");
        }
        std::sort(names.begin(), names.end());
        std::string out;
        for (size_t k = 0; k < names.size() && k < 8; ++k) {
            if (k) out.append(", ");
            out.append(names[k]);
        }
        if (names.size() > 8) out.append(", ...");
        return out;
    }

    // cuda_snapshot._Device.entry: one trace entry, one row.
    void entry(Device& d, const Val& e) {
        if (e.t != T::Dict)
            fail("trace entry " + std::to_string(d.step) + " of " + d.key + " is a " +
                 type_name(e) + ", expected a dict with an action");
        entry(d, View{e.o->items.data(), e.o->vals.data(), e.o->items.size()});
    }
    // A dict's keys and values (Python's dict: unique keys, insertion order), wherever they
    // lie: an Obj's vectors, or the fast path's arrays (fast_entry).
    struct View {
        const Val* keys;
        const Val* vals;
        size_t n;
        const Val* get(const std::string* key) const {
            for (size_t j = 0; j < n; ++j)
                if (keys[j].t == T::Str && keys[j].s == key) return &vals[j];
            return nullptr;
        }
    };
    void entry(Device& d, const View& o) {
        const Val* action_v = o.get(k_action);
        if (!action_v || action_v->t != T::Str)
            fail("trace entry " + std::to_string(d.step) + " of " + d.key +
                 " has no action (its keys: " + keys_of(o.keys, o.n) + ")");
        // interned: the same text is the same pointer
        const std::string* action_p = action_v->s;
        std::string cleaned;
        const bool odd = has_surrogate(*action_p);
        if (odd) cleaned = clean_text(*action_p);
        const std::string& action = odd ? cleaned : *action_p;
        int64_t addr = 0, size = 0, time_us = 0, stream = 0;
        const Val* addr_v = o.get(k_addr);
        const Val* size_v = o.get(k_size);
        const Val* time_v = o.get(k_time_us);
        const Val* stream_v = o.get(k_stream);
        bool has_addr = int64_of(addr_v, &addr), has_size = int64_of(size_v, &size);
        bool has_time = time_of(time_v, &time_us), has_stream = int64_of(stream_v, &stream);
        // attrs: every key this reader does not know, then columns it could not hold.
        // Entries mostly repeat the same text keys and scalar values: the last entry's
        // attrs are kept with those keys and values, and reused when they are the same.
        std::string& attrs = attrs_buf;
        bool fallback_cols = (addr_v && addr_v->t != T::None && !has_addr) ||
                             (size_v && size_v->t != T::None && !has_size) ||
                             (stream_v && stream_v->t != T::None && !has_stream) ||
                             (time_v && time_v->t != T::None && !has_time);
        bool same = !fallback_cols && attrs_sig_ok;
        if (same) {
            size_t na = 0;
            for (size_t j = 0; j < o.n && same; ++j) {
                const Val& k = o.keys[j];
                if (k.t == T::Str && (k.s == k_action || k.s == k_addr || k.s == k_size ||
                                      k.s == k_stream || k.s == k_time_us || k.s == k_frames))
                    continue;
                const Val& v = o.vals[j];
                same = k.t == T::Str && na < attrs_sig.size() && attrs_sig[na].key == k.s &&
                       attrs_sig[na].t == v.t && same_scalar(v, attrs_sig[na]);
                ++na;
            }
            same = same && na == attrs_sig.size();
        }
        if (!same) {
            attrs.clear();
            attrs_sig.clear();
            attrs_sig_ok = !fallback_cols;
            std::vector<std::string>& akeys = akeys_buf;
            std::vector<const Val*>& avals = avals_buf;
            akeys.clear();
            avals.clear();
            KeyTexts seen;
            auto add_attr = [&](std::string k, const Val* v) {
                size_t q = seen.find(akeys, k);
                if (q < akeys.size()) { avals[q] = v; return; }
                seen.add(akeys, std::move(k));
                avals.push_back(v);
            };
            for (size_t j = 0; j < o.n; ++j) {
                const Val& k = o.keys[j];
                if (k.t == T::Str && (k.s == k_action || k.s == k_addr || k.s == k_size ||
                                      k.s == k_stream || k.s == k_time_us || k.s == k_frames))
                    continue;
                add_attr(key_text(k), &o.vals[j]);
                const Val& v = o.vals[j];
                if (k.t == T::Str && scalar(v)) attrs_sig.push_back(Sig{k.s, v.t, v.i});
                else attrs_sig_ok = false;
            }
            if (addr_v && addr_v->t != T::None && !has_addr) add_attr("addr", addr_v);
            if (size_v && size_v->t != T::None && !has_size) add_attr("size", size_v);
            if (stream_v && stream_v->t != T::None && !has_stream) add_attr("stream", stream_v);
            if (time_v && time_v->t != T::None && !has_time) add_attr("time_us", time_v);
            if (!akeys.empty()) {
                attrs.push_back('{');
                for (size_t q = 0; q < akeys.size(); ++q) {
                    if (q) attrs.push_back(',');
                    put_json_text(attrs, akeys[q]);
                    attrs.push_back(':');
                    json_of(*avals[q], attrs, false);
                }
                attrs.push_back('}');
            }
        }
        int64_t step = d.step;
        d.actions.add(action_p, action);
        if (has_time) {
            if (d.has_last && time_us < d.last_time)
                d.problem("time_goes_back", "time_us " + std::to_string(time_us) + " < " +
                                                std::to_string(d.last_time) +
                                                " (a ring buffer not in order?)");
            d.last_time = time_us;
            d.has_last = true;
        }
        bool has_block = false, has_corr = false;
        int64_t block = 0, corr = 0;
        if (has_addr && has_size) {
            if (action_p == a_alloc) {
                if (Made* m = d.live.get(addr)) {
                    d.problem("alloc_of_live_address", "alloc at " + hex_of(addr) +
                                                           " still allocated since step " +
                                                           std::to_string(m->step));
                    d.live_remove(addr);
                }
                d.freed_before.erase(addr);
                block = d.block_bytes(addr, size);
                has_block = true;
                d.live_add(addr, block);
                d.live.set(addr, Made{step, size, block});
            } else if (action_p == a_free_requested || action_p == a_free_completed) {
                Made* m = d.live.get(addr);
                Made made{};
                if (m) {
                    made = *m;
                    corr = made.step;
                    block = made.block;
                    has_corr = has_block = true;
                    if (made.size != size)
                        d.problem("free_size_differs", action + " of " + hex_of(addr) + " with " +
                                                           std::to_string(size) +
                                                           " bytes, allocated with " +
                                                           std::to_string(made.size) +
                                                           " at step " + std::to_string(made.step));
                } else if (d.freed_before.get(addr) && action_p == a_free_completed) {
                    d.problem("double_free", "free_completed of " + hex_of(addr) +
                                                 " again without an alloc between");
                }
                if (action_p == a_free_completed) {
                    if (m) {
                        d.live.erase(addr);
                        d.live_remove(addr);
                    } else {
                        d.before_n += 1;
                        d.before_bytes += size;
                        *d.freed_before.put(addr) = 1;
                        d.live_remove(addr);
                        d.estimated += 1;
                        block = Device::round_size(size);
                        has_block = true;
                    }
                }
            } else if (action_p == a_segment_alloc || action_p == a_segment_map) {
                if (action_p == a_segment_map) d.exact_rule = false;
                d.drop_tentative(addr, (i128)addr + size);
                d.seg_add(addr, size);
                d.seg_made[addr] = step;
            } else if (action_p == a_segment_free || action_p == a_segment_unmap) {
                d.seg_remove(addr);
                auto it = d.seg_made.find(addr);
                if (it != d.seg_made.end()) {
                    corr = it->second;
                    has_corr = true;
                    d.seg_made.erase(it);
                }
            }
        }
        const Val* frames_v = o.get(k_frames);
        int64_t sid = stack_id(frames_v ? *frames_v : Val::none());
        d.step += 1;
        // the row
        if (batch->rows >= kBatchRows || batch->text_bytes() > (1u << 30) ||
            (batch->rows && batch_device != d.key))
            flush_batch();
        batch_device = d.key;
        EventBatch& b = *batch;
        b.kind.set("allocator_action");
        b.step.set(step);
        b.op.set(action);
        if (has_addr) b.address.set(addr); else b.address.set_null();
        if (has_size) b.bytes.set(size); else b.bytes.set_null();
        if (has_block) b.block_bytes.set(block); else b.block_bytes.set_null();
        if (has_stream) b.stream.set(stream); else b.stream.set_null();
        if (has_time) b.ts_ns.set(time_us * 1000); else b.ts_ns.set_null();
        if (sid) b.stack_id.set((int32_t)sid);
        if (has_corr) b.correlation.set(corr); else b.correlation.set_null();
        b.device.set(d.key);
        if (!attrs.empty()) b.attrs.set(attrs); else b.attrs.set_null();
        b.end_row();
    }
    std::string attrs_buf;
    // The last attrs' keys and values, when all are text keys and scalar values (see
    // entry): scalars are equal when their payload bits are (text is interned).
    struct Sig { const std::string* key; T t; int64_t bits; };
    std::vector<Sig> attrs_sig;
    bool attrs_sig_ok = false;
    std::vector<std::string> akeys_buf;
    std::vector<const Val*> avals_buf;
    static bool scalar(const Val& v) {
        switch (v.t) {
            case T::None: case T::Bool: case T::Int: case T::Float: case T::Str: case T::Big:
            case T::Bytes: case T::BArr: case T::Frame: case T::Stack:
                return true;
            default:
                return false;
        }
    }
    static bool same_scalar(const Val& v, const Sig& sig) {
        return v.t == T::None || v.i == sig.bits;
    }


    // cuda_snapshot._Parser.segment: validated here (the same messages), its blocks fed to
    // the device's replay; the plain value goes to Python with stand-ins for its frames.
    void segment(const Val& s) {
        if (s.t != T::Dict)
            fail(std::string("a segment that is a ") + type_name(s) + ", expected a dict");
        const Obj& so = *s.o;
        int64_t address, size;
        if (!int64_of(dict_get(so, k_address), &address) || !int64_of(dict_get(so, k_total_size), &size))
            fail("a segment without address and total_size (its keys: " + keys_of(so) + ")");
        const Val* dev_v = dict_get(so, k_device);
        Val dev = dev_v ? *dev_v : Val::integer(0);
        const Val* blocks_v = dict_get(so, k_blocks);
        std::vector<Val> none;
        const std::vector<Val>* blocks = &none;
        if (blocks_v && truthy(*blocks_v)) {
            if (blocks_v->t != T::List) fail("segment blocks that are not a list");
            blocks = &blocks_v->o->items;
        }
        // The copy for Python: the same dict, each frames value replaced by its stack.
        auto out_seg = std::make_shared<Obj>(so);
        auto out_blocks = std::make_shared<Obj>(T::List);
        struct B { int64_t addr, size; bool active; };
        std::vector<B> parsed;
        i128 at = address;
        for (auto& b : *blocks) {
            int64_t bsize, baddr;
            if (b.t != T::Dict || !int64_of(dict_get(*b.o, k_size), &bsize))
                fail("a block without a size in segment " + hex_of(address));
            const Obj& bo = *b.o;
            if (!int64_of(dict_get(bo, k_address), &baddr)) {
                if (at < (i128)INT64_MIN || at > (i128)INT64_MAX)
                    fail("blocks that run past the 64-bit address space in segment " +
                         hex_of(address));
                baddr = (int64_t)at;
            }
            auto ob = std::make_shared<Obj>(bo);
            const Val* frames_v = dict_get(bo, k_frames);
            Val frames = frames_v ? *frames_v : Val::none();
            bool history_layout = dict_get(bo, k_history) && !frames_v;
            std::shared_ptr<Obj> hist_copy;
            if (history_layout) {
                const Val* hist_v = dict_get(bo, k_history);
                bool empty = !truthy(*hist_v);
                if (!empty && (hist_v->t != T::List ||
                               (!hist_v->o->items.empty() && hist_v->o->items[0].t != T::Dict)))
                    fail("a block history that is not a list of dicts");
                if (!empty && !hist_v->o->items.empty()) {
                    const Val* hf = dict_get(*hist_v->o->items[0].o, k_frames);
                    frames = hf ? *hf : Val::none();
                    if (hf) {  // hand Python the stand-in in history[0]
                        hist_copy = std::make_shared<Obj>(*hist_v->o);
                        auto h0 = std::make_shared<Obj>(*hist_copy->items[0].o);
                        hist_copy->items[0] = Val::obj(T::Dict, h0);
                    }
                }
            }
            const Val* state = dict_get(bo, k_state);
            if (!state || state->t != T::Str)
                fail("a block without a state in segment " + hex_of(address));
            int64_t sid = stack_id(frames);
            Val stand = Val::id(T::Stack, sid);
            if (frames_v) dict_set(*ob, Val::str(T::Str, k_frames), stand);
            if (hist_copy) {
                dict_set(*hist_copy->items[0].o, Val::str(T::Str, k_frames), stand);
                dict_set(*ob, Val::str(T::Str, k_history), Val::obj(T::List, hist_copy));
            }
            out_blocks->items.push_back(Val::obj(T::Dict, ob));
            bool active = *state->s == "active_allocated" || *state->s == "active_pending_free";
            parsed.push_back(B{baddr, bsize, active});
            at = (i128)baddr + bsize;
        }
        Device& d = device(dev);  // before the segment's frames, as Python evaluates it
        const Val* seg_frames = dict_get(so, k_frames);
        int64_t seg_sid = stack_id(seg_frames ? *seg_frames : Val::none());
        if (seg_frames) dict_set(*out_seg, Val::str(T::Str, k_frames), Val::id(T::Stack, seg_sid));
        if (blocks_v && blocks_v->t == T::List)
            dict_set(*out_seg, Val::str(T::Str, k_blocks), Val::obj(T::List, out_blocks));
        // _Device.add_segment: the replay's end state
        d.seg_add(address, size);
        const Val* expandable = dict_get(so, strs.get("is_expandable"));
        if (expandable && truthy(*expandable)) d.exact_rule = false;
        for (auto& b : parsed)
            if (b.active) {
                d.live_add(b.addr, b.size, true);
            }
        Out o;
        o.kind = 4;
        o.value = Val::obj(T::Dict, out_seg);
        outs.push_back(std::move(o));
    }

    void annotation(const Val& a) {
        flush_batch();  // annotations are rows too: keep the order
        Out o;
        o.kind = 5;
        o.value = a;
        outs.push_back(std::move(o));
    }

    // _Parser._check_top and the items left in the top object (lists of one, or lists
    // whose path could not be told), as _consume handles them.
    void finish_top() {
        const char* expected_msg = ", not an allocator snapshot: expected a dict with "
                                   "'segments' and 'device_traces' "
                                   "(torch.cuda.memory._dump_snapshot)";
        if (top.t != T::Dict || !dict_get(*top.o, k_segments) || !dict_get(*top.o, k_traces)) {
            std::string with_keys;
            if (top.t == T::Dict && !top.o->items.empty()) with_keys = " with keys " + keys_of(*top.o);
            fail(std::string("a pickle of a ") + type_name(top) + with_keys + expected_msg);
        }
        struct K { const std::string* key; T kind; const char* name; };
        const K want[] = {{k_segments, T::List, "list"}, {k_traces, T::List, "list"},
                          {k_annotations, T::List, "list"}, {k_settings, T::Dict, "dict"}};
        for (auto& w : want) {
            const Val* v = dict_get(*top.o, w.key);
            if (v && v->t != w.kind)
                fail("'" + *w.key + "' is a " + type_name(*v) + ", expected a " + w.name +
                     ": not an allocator snapshot in the layout torch writes");
        }
        const Val* segs = dict_get(*top.o, k_segments);
        if (truthy(*segs))
            for (auto& s : std::vector<Val>(segs->o->items)) segment(s);
        const Val* traces = dict_get(*top.o, k_traces);
        auto& tr = traces->o->items;
        for (size_t i = 0; i < tr.size(); ++i) {
            if (tr[i].t != T::List) fail("device_traces[" + std::to_string(i) + "] is not a list");
            for (auto& e : std::vector<Val>(tr[i].o->items)) {
                Device& d = device(Val::integer((int64_t)i));
                declare(d);
                entry(d, e);
            }
        }
        const Val* anns = dict_get(*top.o, k_annotations);
        if (anns && truthy(*anns))
            for (auto& x : anns->o->items) annotation(x);
        flush_batch();
    }
};

// ---- Python values ---------------------------------------------------------------------

struct PyParser {
    PyObject_HEAD
    Parser* p;
    PyObject* path;
    PyObject* frame_cls;
    PyObject* stack_cls;
    bool failed;
};

PyObject* to_py(PyParser* self, const Val& v, int depth = 0);

// int.from_bytes(le, "little", signed=True), through the public API (the private
// _PyLong_FromByteArray did it in one call; these ints are rare: past 64 bits)
PyObject* big_py(const std::string& le) {
    PyObject* from_bytes = PyObject_GetAttrString((PyObject*)&PyLong_Type, "from_bytes");
    PyObject* bytes = from_bytes ? PyBytes_FromStringAndSize(le.data(), (Py_ssize_t)le.size())
                                 : nullptr;
    PyObject* args = bytes ? Py_BuildValue("(Ns)", bytes, "little") : nullptr;
    PyObject* kwargs = args ? Py_BuildValue("{s:O}", "signed", Py_True) : nullptr;
    PyObject* r = kwargs ? PyObject_Call(from_bytes, args, kwargs) : nullptr;
    Py_XDECREF(kwargs);
    Py_XDECREF(args);
    Py_XDECREF(from_bytes);
    return r;
}

PyObject* to_py(PyParser* self, const Val& v, int depth) {
    if (v.container() && ++depth > kMaxNesting) {  // see too_deep()
        raise_parse_error(self->path, ParseError{0, too_deep()});
        return nullptr;
    }
    switch (v.t) {
        case T::None: Py_RETURN_NONE;
        case T::Bool: return PyBool_FromLong((long)v.i);
        case T::Int: return PyLong_FromLongLong(v.i);
        case T::Big: return big_py(*v.s);
        case T::Float: return PyFloat_FromDouble(v.f);
        case T::Str: return py_str(*v.s);
        case T::Bytes: return PyBytes_FromStringAndSize(v.s->data(), (Py_ssize_t)v.s->size());
        case T::BArr: return PyByteArray_FromStringAndSize(v.s->data(), (Py_ssize_t)v.s->size());
        case T::Frame: return PyObject_CallFunction(self->frame_cls, "L", (long long)v.i);
        case T::Stack:
            if (v.i) return PyObject_CallFunction(self->stack_cls, "L", (long long)v.i);
            return PyObject_CallFunctionObjArgs(self->stack_cls, Py_None, nullptr);
        case T::Streamed: Py_RETURN_NONE;
        case T::List: case T::Tuple: {
            auto& items = v.o->items;
            PyObject* r = v.t == T::List ? PyList_New((Py_ssize_t)items.size())
                                         : PyTuple_New((Py_ssize_t)items.size());
            if (!r) return nullptr;
            for (size_t k = 0; k < items.size(); ++k) {
                PyObject* x = to_py(self, items[k], depth);
                if (!x) { Py_DECREF(r); return nullptr; }
                if (v.t == T::List) PyList_SET_ITEM(r, (Py_ssize_t)k, x);
                else PyTuple_SET_ITEM(r, (Py_ssize_t)k, x);
            }
            return r;
        }
        case T::Set: case T::FSet: {
            PyObject* r = v.t == T::Set ? PySet_New(nullptr) : PyFrozenSet_New(nullptr);
            if (!r) return nullptr;
            for (auto& x : v.o->items) {
                PyObject* px = to_py(self, x, depth);
                if (!px || PySet_Add(r, px) < 0) { Py_XDECREF(px); Py_DECREF(r); return nullptr; }
                Py_DECREF(px);
            }
            return r;
        }
        case T::Dict: {
            PyObject* r = PyDict_New();
            if (!r) return nullptr;
            for (size_t k = 0; k < v.o->items.size(); ++k) {
                PyObject* pk = to_py(self, v.o->items[k], depth);
                PyObject* pv = pk ? to_py(self, v.o->vals[k], depth) : nullptr;
                if (!pv || PyDict_SetItem(r, pk, pv) < 0) {
                    Py_XDECREF(pk); Py_XDECREF(pv); Py_DECREF(r);
                    return nullptr;
                }
                Py_DECREF(pk);
                Py_DECREF(pv);
            }
            return r;
        }
    }
    Py_RETURN_NONE;
}

PyObject* i128_py(i128 v) {
    std::string t = i128_text(v);
    return PyLong_FromString(t.c_str(), nullptr, 10);
}

PyObject* counter_py(const Counter& c) {
    PyObject* d = PyDict_New();
    if (!d) return nullptr;
    for (auto& kv : c.items) {
        PyObject* k = py_str(kv.first);
        PyObject* n = PyLong_FromLongLong(kv.second);
        if (!k || !n || PyDict_SetItem(d, k, n) < 0) {
            Py_XDECREF(k); Py_XDECREF(n); Py_DECREF(d);
            return nullptr;
        }
        Py_DECREF(k);
        Py_DECREF(n);
    }
    return d;
}

// The devices' trace state, as _Device attributes (see _Parser._consume_native).
PyObject* states_py(PyParser* self) {
    Parser& P = *self->p;
    PyObject* all = PyDict_New();
    if (!all) return nullptr;
    for (auto& dp : P.devices) {
        Device& d = *dp;
        PyObject* live = PyDict_New();
        for (auto& kv : d.live.ordered()) {
            PyObject* k = PyLong_FromLongLong(kv.first);
            PyObject* v = Py_BuildValue("[LLL]", (long long)kv.second.step,
                                        (long long)kv.second.size, (long long)kv.second.block);
            PyDict_SetItem(live, k, v);
            Py_XDECREF(k);
            Py_XDECREF(v);
        }
        PyObject* seg_made = PyDict_New();
        for (auto& kv : d.seg_made) {
            PyObject* k = PyLong_FromLongLong(kv.first);
            PyObject* v = PyLong_FromLongLong(kv.second);
            PyDict_SetItem(seg_made, k, v);
            Py_XDECREF(k);
            Py_XDECREF(v);
        }
        PyObject* examples = PyList_New(0);
        for (auto& e : d.examples) {
            PyObject* s = py_str(e);
            PyList_Append(examples, s);
            Py_XDECREF(s);
        }
        PyObject* before = PyList_New(2);
        PyList_SET_ITEM(before, 0, i128_py(d.before_n));
        PyList_SET_ITEM(before, 1, i128_py(d.before_bytes));
        PyObject* last = d.has_last ? PyLong_FromLongLong(d.last_time) : (Py_INCREF(Py_None), Py_None);
        PyObject* st = Py_BuildValue(
            "{s:L,s:N,s:N,s:N,s:N,s:N,s:L,s:O,s:N,s:N}", "step", (long long)d.step,
            "actions", counter_py(d.actions), "problems", counter_py(d.problems),
            "examples", examples, "live", live, "before_freed", before,
            "estimated", (long long)d.estimated, "exact_rule", d.exact_rule ? Py_True : Py_False,
            "seg_made", seg_made, "last_time", last);
        PyObject* key = to_py(self, d.index);
        if (!st || !key || PyDict_SetItem(all, key, st) < 0) {
            Py_XDECREF(st); Py_XDECREF(key); Py_DECREF(all);
            return nullptr;
        }
        Py_DECREF(st);
        Py_DECREF(key);
    }
    return all;
}

PyObject* outputs(PyParser* self) {
    Parser& P = *self->p;
    PyObject* list = PyList_New(0);
    if (!list) return nullptr;
    for (auto& o : P.outs) {
        PyObject* item = nullptr;
        switch (o.kind) {
            case 0: {
                PyObject* b = o.batch->export_py();
                PyObject* dev = b ? py_str(o.key.substr(5)) : nullptr;
                PyObject* idx = dev ? PyLong_FromUnicodeObject(dev, 10) : nullptr;
                Py_XDECREF(dev);
                item = (b && idx) ? Py_BuildValue("(sNN)", "batch", idx, b) : nullptr;
                if (!item) { Py_XDECREF(b); Py_XDECREF(idx); }
                o.batch.reset();
                break;
            }
            case 1: {
                PyObject* v = to_py(self, o.value);
                item = v ? Py_BuildValue("(sN)", "device", v) : nullptr;
                break;
            }
            case 2: {
                PyObject* v = to_py(self, o.value);
                item = v ? Py_BuildValue("(sLN)", "frame", (long long)o.id, v) : nullptr;
                break;
            }
            case 3: {
                PyObject* ids = PyList_New((Py_ssize_t)o.ids.size());
                for (size_t k = 0; ids && k < o.ids.size(); ++k)
                    PyList_SET_ITEM(ids, (Py_ssize_t)k, PyLong_FromLongLong(o.ids[k]));
                item = ids ? Py_BuildValue("(sLN)", "stack", (long long)o.id, ids) : nullptr;
                break;
            }
            case 4: case 5: {
                PyObject* v = to_py(self, o.value);
                item = v ? Py_BuildValue("(sN)", o.kind == 4 ? "segment" : "annotation", v)
                         : nullptr;
                break;
            }
        }
        if (!item || PyList_Append(list, item) < 0) {
            Py_XDECREF(item);
            Py_DECREF(list);
            P.outs.clear();
            return nullptr;
        }
        Py_DECREF(item);
    }
    P.outs.clear();
    return list;
}

template <class F>
PyObject* guarded(PyParser* self, F&& body) {
    if (!run_released(self->path, self->failed, body)) {
        self->p->outs.clear();  // a failed parser hands nothing over
        return nullptr;
    }
    return outputs(self);
}

PyObject* feed(PyParser* self, PyObject* arg) {
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0) return nullptr;
    std::string_view chunk(static_cast<const char*>(view.buf), (size_t)view.len);
    PyObject* r = guarded(self, [&] {
        Parser& P = *self->p;
        if (!P.done) P.buf.append(chunk.data(), chunk.size());
        P.run();
    });
    PyBuffer_Release(&view);
    return r;
}

PyObject* finish(PyParser* self, PyObject*) {
    PyObject* r = guarded(self, [&] {
        Parser& P = *self->p;
        P.eof = true;
        P.run();
        P.flush_batch();
    });
    if (!r) return nullptr;
    Parser& P = *self->p;
    PyObject* top = P.have_top ? to_py(self, P.top) : (Py_INCREF(Py_None), Py_None);
    PyObject* states = top ? states_py(self) : nullptr;
    PyObject* end = (top && states) ? Py_BuildValue("(sNN)", "end", top, states) : nullptr;
    if (!end) { Py_XDECREF(top); Py_XDECREF(states); Py_DECREF(r); return nullptr; }
    if (PyList_Append(r, end) < 0) { Py_DECREF(end); Py_DECREF(r); return nullptr; }
    Py_DECREF(end);
    return r;
}

PyObject* line(PyParser*, PyObject*) { Py_RETURN_NONE; }

int init(PyParser* self, PyObject* args, PyObject*) {
    PyObject *path, *frame_cls, *stack_cls;
    if (!PyArg_ParseTuple(args, "UOO", &path, &frame_cls, &stack_cls)) return -1;
    Py_INCREF(path);
    Py_XSETREF(self->path, path);
    Py_INCREF(frame_cls);
    Py_XSETREF(self->frame_cls, frame_cls);
    Py_INCREF(stack_cls);
    Py_XSETREF(self->stack_cls, stack_cls);
    Py_ssize_t n;
    const char* s = PyUnicode_AsUTF8AndSize(path, &n);
    if (!s) return -1;
    delete self->p;
    self->p = new Parser(std::string(s, (size_t)n));
    self->failed = false;
    return 0;
}

void dealloc(PyParser* self) {
    delete self->p;
    Py_XDECREF(self->path);
    Py_XDECREF(self->frame_cls);
    Py_XDECREF(self->stack_cls);
    Py_TYPE(self)->tp_free((PyObject*)self);
}

PyMethodDef methods[] = {
    {"feed", (PyCFunction)feed, METH_O,
     "feed(chunk: bytes) -> list: run the opcodes the chunk completes"},
    {"line", (PyCFunction)line, METH_NOARGS, "line() -> None: a pickle has no lines"},
    {"finish", (PyCFunction)finish, METH_NOARGS,
     "finish() -> list: the end of the file; the last outputs, then ('end', top, states)"},
    {nullptr, nullptr, 0, nullptr}};

PyTypeObject ParserType = {PyVarObject_HEAD_INIT(nullptr, 0)};

}  // namespace

int add_cuda_snapshot(PyObject* module) {
    return add_type(module, ParserType, "SnapshotParser",
                    "SnapshotParser(path, Frame, InternedStack): allocator snapshot "
                        "pickle bytes to trace rows and plain values",
                    sizeof(PyParser), (initproc)init, (destructor)dealloc, methods);
}

}  // namespace tlv
