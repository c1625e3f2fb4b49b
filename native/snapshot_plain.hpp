// A snapshot's plain values as JSON text (cuda_snapshot._plain, _key, _canonical) and
// as Python truth values, for the snapshot reader (cuda_snapshot.cpp).
#pragma once

#include "pickle_values.hpp"

namespace tlv::snapshot {

// ---- plain values as JSON (cuda_snapshot._plain, _key, _canonical)
// ---------------------------

inline void big_decimal(const std::string& le,
                        std::string& out) {  // little-endian two's complement
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
inline std::string clean_text(std::string_view s) {
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

inline bool has_surrogate(std::string_view s) {
    for (size_t i = 0; i + 1 < s.size(); ++i)
        if ((uint8_t)s[i] == 0xED && (uint8_t)s[i + 1] >= 0xA0) return true;
    return false;
}

inline void put_json_text(std::string& out, std::string_view s) {
    if (has_surrogate(s))
        put_json_string(out, clean_text(s), true);
    else
        put_json_string(out, s, true);
}

inline void latin1_utf8(std::string_view b, std::string& out) {
    for (unsigned char c : b) put_utf8(out, c);
}

inline void json_of(const Val& v, std::string& out, bool sort_keys, int depth = 0);

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
inline std::string key_text(const Val& k, int depth = 0) {
    if (k.t == T::Str) return has_surrogate(*k.s) ? clean_text(*k.s) : *k.s;
    std::string s;
    json_of(k, s, true, depth);
    return s;
}

// What a reader says of a value deeper than kMaxNesting. The values are checked where
// the pickle hands them over (Parser::check_plain, with the byte): this is the guard of
// the recursive readers, for a value changed after its check (a memo read of a
// container outside the item, appended to later).
inline std::string too_deep() {
    return "data nested deeper than " + std::to_string(kMaxNesting) + " levels: " + kPlain +
           " a few levels deep)";
}

inline void json_of(const Val& v, std::string& out, bool sort_keys, int depth) {
    if (v.container() && ++depth > kMaxNesting) throw ParseError{0, too_deep()};
    switch (v.t) {
        case T::None: out.append("null"); return;
        case T::Bool: out.append(v.i ? "true" : "false"); return;
        case T::Int: out.append(std::to_string(v.i)); return;
        case T::Big: big_decimal(*v.s, out); return;
        case T::Float: put_py_float(out, v.f); return;
        case T::Str: put_json_text(out, *v.s); return;
        case T::Bytes:
        case T::BArr: {
            std::string u;
            latin1_utf8(*v.s, u);
            put_json_string(out, u, true);
            return;
        }
        case T::Frame: out.append(std::to_string(v.i)); return;
        case T::Stack:
            if (v.i)
                out.append(std::to_string(v.i));
            else
                out.append("null");
            return;
        case T::Streamed: out.append("null"); return;
        case T::List:
        case T::Tuple: {
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
        case T::Set:
        case T::FSet: {  // sorted by canonical JSON
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
                if (sort_keys)
                    out.append(parts[order[k]]);
                else
                    json_of(v.o->items[order[k]], out, false, depth);
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

inline bool truthy(const Val& v) {
    switch (v.t) {
        case T::None: return false;
        case T::Bool:
        case T::Int: return v.i != 0;
        case T::Big: return true;  // normalized: never zero
        case T::Float: return v.f != 0.0;
        case T::Str:
        case T::Bytes:
        case T::BArr: return !v.s->empty();
        case T::List:
        case T::Tuple:
        case T::Dict:
        case T::Set:
        case T::FSet: return !v.o->items.empty();
        case T::Frame: return true;
        case T::Stack: return v.i != 0;
        case T::Streamed: return true;
    }
    return true;
}

inline std::string hex_of(int64_t v) {  // cuda_snapshot._hex
    static const char h[] = "0123456789abcdef";
    uint64_t m = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    std::string d;
    do {
        d.push_back(h[m & 15]);
        m >>= 4;
    } while (m);
    std::string out = v < 0 ? "-0x" : "0x";
    out.append(d.rbegin(), d.rend());
    return out;
}

inline std::string i128_text(i128 v) {
    if (v == 0) return "0";
    bool neg = v < 0;
    unsigned __int128 m =
        neg ? (unsigned __int128)0 - (unsigned __int128)v : (unsigned __int128)v;
    std::string d;
    while (m) {
        d.push_back((char)('0' + (int)(m % 10)));
        m /= 10;
    }
    if (neg) d.push_back('-');
    return std::string(d.rbegin(), d.rend());
}

}  // namespace tlv::snapshot
