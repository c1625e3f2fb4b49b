// Python's str semantics on UTF-8 text, for the scheduler-IR twin (inductor_ir.cpp).
//
// The Python parser (ingest/inductor_ir.py) is the specification; it splits and strips
// with str methods and matches with `re` patterns whose \s, \w and \d are Unicode-aware.
// These helpers give the same answers on bytes: ASCII by table, anything else through
// CPython's own character database (pure lookups, safe without the GIL).
#pragma once

#include <Python.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tlv::ir {

using sv = std::string_view;

// str.isspace() on ASCII: \t \n \v \f \r, \x1c-\x1f and the space.
inline bool ascii_space(uint8_t c) {
    return c == ' ' || (c >= 9 && c <= 13) || (c >= 0x1c && c <= 0x1f);
}
inline bool ascii_word(uint8_t c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '_';
}
inline bool ident_start(uint8_t c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

// Decode the code point at s[i] (valid UTF-8); n = its length in bytes.
inline uint32_t cp_at(sv s, size_t i, size_t* n) {
    auto c = (uint8_t)s[i];
    if (c < 0x80) {
        *n = 1;
        return c;
    }
    if (c < 0xE0) {
        *n = 2;
        return ((c & 0x1Fu) << 6) | ((uint8_t)s[i + 1] & 0x3Fu);
    }
    if (c < 0xF0) {
        *n = 3;
        return ((c & 0x0Fu) << 12) | (((uint8_t)s[i + 1] & 0x3Fu) << 6) |
               ((uint8_t)s[i + 2] & 0x3Fu);
    }
    *n = 4;
    return ((c & 0x07u) << 18) | (((uint8_t)s[i + 1] & 0x3Fu) << 12) |
           (((uint8_t)s[i + 2] & 0x3Fu) << 6) | ((uint8_t)s[i + 3] & 0x3Fu);
}
// Start of the code point that ends just before s[i].
inline size_t cp_before(sv s, size_t i) {
    size_t j = i - 1;
    while (j > 0 && ((uint8_t)s[j] & 0xC0) == 0x80) --j;
    return j;
}

inline bool uni_space(uint32_t c) { return Py_UNICODE_ISSPACE((Py_UCS4)c); }
inline bool uni_word(uint32_t c) { return c == '_' || Py_UNICODE_ISALNUM((Py_UCS4)c); }
inline bool uni_decimal(uint32_t c) { return Py_UNICODE_ISDECIMAL((Py_UCS4)c); }

// Is the character at s[i] whitespace / a word character / a decimal digit (re's \s \w
// \d)? n = its length.
inline bool space_at(sv s, size_t i, size_t* n) {
    auto c = (uint8_t)s[i];
    if (c < 0x80) {
        *n = 1;
        return ascii_space(c);
    }
    return uni_space(cp_at(s, i, n));
}
inline bool word_at(sv s, size_t i, size_t* n) {
    auto c = (uint8_t)s[i];
    if (c < 0x80) {
        *n = 1;
        return ascii_word(c);
    }
    return uni_word(cp_at(s, i, n));
}
inline bool decimal_at(sv s, size_t i, size_t* n) {
    auto c = (uint8_t)s[i];
    if (c < 0x80) {
        *n = 1;
        return c >= '0' && c <= '9';
    }
    return uni_decimal(cp_at(s, i, n));
}

// End of the run of \w characters starting at i.
inline size_t word_end(sv s, size_t i) {
    size_t n;
    while (i < s.size()) {
        auto c = (uint8_t)s[i];
        if (c < 0x80) {
            if (!ascii_word(c)) break;
            ++i;
            continue;
        }
        if (!word_at(s, i, &n)) break;
        i += n;
    }
    return i;
}
// Start of the run of \w characters ending at i, not before lo.
inline size_t word_start(sv s, size_t i, size_t lo) {
    while (i > lo) {
        auto c = (uint8_t)s[i - 1];
        if (c < 0x80) {
            if (!ascii_word(c)) break;
            --i;
            continue;
        }
        size_t j = cp_before(s, i), n;
        if (j < lo || !word_at(s, j, &n)) break;
        i = j;
    }
    return i;
}
// `[A-Za-z_]\w*` at i: its end, or npos.
inline size_t ident_end(sv s, size_t i) {
    if (i >= s.size() || !ident_start((uint8_t)s[i])) return sv::npos;
    return word_end(s, i + 1);
}
inline size_t space_end(sv s, size_t i) {
    size_t n;
    while (i < s.size() && space_at(s, i, &n)) i += n;
    return i;
}
// `\s*\Z` from i.
inline bool only_space(sv s, size_t i) { return space_end(s, i) == s.size(); }

// str.strip(), str.lstrip(), and "not text.strip()".
inline sv lstrip(sv s) { return s.substr(space_end(s, 0)); }
inline sv rstrip(sv s) {
    size_t e = s.size(), n;
    while (e > 0) {
        auto c = (uint8_t)s[e - 1];
        if (c < 0x80) {
            if (!ascii_space(c)) break;
            --e;
            continue;
        }
        size_t j = cp_before(s, e);
        if (!space_at(s, j, &n)) break;
        e = j;
    }
    return s.substr(0, e);
}
inline sv strip(sv s) { return rstrip(lstrip(s)); }
inline bool blank(sv s) { return space_end(s, 0) == s.size(); }

inline bool starts(sv s, sv p) {
    return s.size() >= p.size() && s.compare(0, p.size(), p) == 0;
}
inline bool ends(sv s, sv p) {
    return s.size() >= p.size() && s.compare(s.size() - p.size(), p.size(), p) == 0;
}

// (text.count("[") + "(" + "{") - (closing ones), by a table (no branch per byte).
struct BalanceTable {
    int8_t d[256] = {};
    constexpr BalanceTable() {
        d[(uint8_t)'['] = d[(uint8_t)'('] = d[(uint8_t)'{'] = 1;
        d[(uint8_t)']'] = d[(uint8_t)')'] = d[(uint8_t)'}'] = -1;
    }
};
inline constexpr BalanceTable BALANCE{};
inline int64_t balance(sv s) {
    int64_t b = 0;
    for (char c : s) b += BALANCE.d[(uint8_t)c];
    return b;
}

// repr(str) as Python writes it.
inline void put_repr(std::string& out, sv s) {
    bool squote = s.find('\'') != sv::npos, dquote = s.find('"') != sv::npos;
    char q = (squote && !dquote) ? '"' : '\'';
    static const char hx[] = "0123456789abcdef";
    out.push_back(q);
    size_t i = 0;
    while (i < s.size()) {
        size_t n;
        uint32_t c = cp_at(s, i, &n);
        if (c == (uint32_t)q || c == '\\') {
            out.push_back('\\');
            out.push_back((char)c);
        } else if (c == '\t')
            out.append("\\t");
        else if (c == '\n')
            out.append("\\n");
        else if (c == '\r')
            out.append("\\r");
        else if (c < 0x20 || c == 0x7f) {
            out.append("\\x");
            out.push_back(hx[c >> 4]);
            out.push_back(hx[c & 15]);
        } else if (c < 0x7f)
            out.push_back((char)c);
        else if (Py_UNICODE_ISPRINTABLE((Py_UCS4)c))
            out.append(s.data() + i, n);
        else if (c < 0x100) {
            out.append("\\x");
            out.push_back(hx[c >> 4]);
            out.push_back(hx[c & 15]);
        } else if (c < 0x10000) {
            out.append("\\u");
            for (int k = 12; k >= 0; k -= 4) out.push_back(hx[(c >> k) & 15]);
        } else {
            out.append("\\U");
            for (int k = 28; k >= 0; k -= 4) out.push_back(hx[(c >> k) & 15]);
        }
        i += n;
    }
    out.push_back(q);
}

// The first n code points of s (text[:n]).
inline sv first_chars(sv s, size_t n) {
    size_t i = 0, k = 0, len;
    while (i < s.size() && k < n) {
        cp_at(s, i, &len);
        i += len;
        ++k;
    }
    return s.substr(0, i);
}

// text[1:-1] on a string whose first character is ASCII.
inline sv inner(sv s) {
    if (s.size() < 2) return sv();
    size_t last = cp_before(s, s.size());
    return last <= 1 ? sv() : s.substr(1, last - 1);
}

// split_dims (ingest/tensors.py): "[s0, 2*s1, 4]" -> ["s0", "2*s1", "4"].
inline void split_dims(sv text, std::vector<std::string>& out) {
    out.clear();
    text = strip(text);
    if (!text.empty() && (text[0] == '[' || text[0] == '(')) text = inner(text);
    int64_t depth = 0;
    size_t start = 0;
    for (size_t i = 0; i < text.size(); ++i) {
        char ch = text[i];
        if (ch == '(' || ch == '[' || ch == '{')
            ++depth;
        else if (ch == ')' || ch == ']' || ch == '}')
            --depth;
        if (ch == ',' && depth == 0) {
            sv piece = strip(text.substr(start, i - start));
            if (!piece.empty()) out.emplace_back(piece);
            start = i + 1;
        }
    }
    sv piece = strip(text.substr(start));
    if (!piece.empty()) out.emplace_back(piece);
}

}  // namespace tlv::ir
