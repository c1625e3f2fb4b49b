// JSON text exactly as Python's json module writes it (separators ",", ":").
//
// The compiled ingest must write the same attrs text as the Python ingesters
// (`json.dumps(..., separators=(",", ":"))`, ensure_ascii on or off), byte for byte, so
// that both give identical rows. Nothing here needs the GIL: floats are formatted by
// std::to_chars (shortest round-trip digits), then laid out by float.__repr__'s rules.
#pragma once

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace tlv {

static const char kHex[] = "0123456789abcdef";

inline void put_u4(std::string& out, uint32_t cu) {
    char b[6] = {
        '\\',         'u', kHex[(cu >> 12) & 15], kHex[(cu >> 8) & 15], kHex[(cu >> 4) & 15],
        kHex[cu & 15]};
    out.append(b, 6);
}

// Decode one UTF-8 sequence at s[i] (input already validated); returns the code point.
inline uint32_t utf8_at(std::string_view s, size_t& i) {
    auto c = (uint8_t)s[i];
    if (c < 0x80) {
        ++i;
        return c;
    }
    if (c < 0xE0) {
        uint32_t cp = ((c & 0x1Fu) << 6) | ((uint8_t)s[i + 1] & 0x3Fu);
        i += 2;
        return cp;
    }
    if (c < 0xF0) {
        uint32_t cp = ((c & 0x0Fu) << 12) | (((uint8_t)s[i + 1] & 0x3Fu) << 6) |
                      ((uint8_t)s[i + 2] & 0x3Fu);
        i += 3;
        return cp;
    }
    uint32_t cp = ((c & 0x07u) << 18) | (((uint8_t)s[i + 1] & 0x3Fu) << 12) |
                  (((uint8_t)s[i + 2] & 0x3Fu) << 6) | ((uint8_t)s[i + 3] & 0x3Fu);
    i += 4;
    return cp;
}

inline void put_utf8(std::string& out, uint32_t cp) {
    if (cp < 0x80) {
        out.push_back((char)cp);
    } else if (cp < 0x800) {
        out.push_back((char)(0xC0 | (cp >> 6)));
        out.push_back((char)(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
        out.push_back((char)(0xE0 | (cp >> 12)));
        out.push_back((char)(0x80 | ((cp >> 6) & 0x3F)));
        out.push_back((char)(0x80 | (cp & 0x3F)));
    } else {
        out.push_back((char)(0xF0 | (cp >> 18)));
        out.push_back((char)(0x80 | ((cp >> 12) & 0x3F)));
        out.push_back((char)(0x80 | ((cp >> 6) & 0x3F)));
        out.push_back((char)(0x80 | (cp & 0x3F)));
    }
}

// A JSON string literal of UTF-8 text `s`, as json.dumps writes it.
inline void put_json_string(std::string& out, std::string_view s, bool ensure_ascii) {
    out.push_back('"');
    size_t i = 0, n = s.size();
    while (i < n) {
        // copy the run that needs no escaping in one go
        size_t j = i;
        while (j < n) {
            auto c = (uint8_t)s[j];
            // json escapes everything outside ' '..'~' when ensure_ascii (DEL too)
            if (c < 0x20 || c == '"' || c == '\\' || (ensure_ascii && c >= 0x7F)) break;
            ++j;
        }
        out.append(s.data() + i, j - i);
        i = j;
        if (i >= n) break;
        auto c = (uint8_t)s[i];
        switch (c) {
            case '"':
                out.append("\\\"");
                ++i;
                continue;
            case '\\':
                out.append("\\\\");
                ++i;
                continue;
            case '\n':
                out.append("\\n");
                ++i;
                continue;
            case '\r':
                out.append("\\r");
                ++i;
                continue;
            case '\t':
                out.append("\\t");
                ++i;
                continue;
            case '\b':
                out.append("\\b");
                ++i;
                continue;
            case '\f':
                out.append("\\f");
                ++i;
                continue;
            default: break;
        }
        if (c < 0x20) {
            put_u4(out, c);
            ++i;
            continue;
        }
        uint32_t cp = utf8_at(s, i);  // ensure_ascii and not ASCII
        if (cp >= 0x10000) {
            cp -= 0x10000;
            put_u4(out, 0xD800 | (cp >> 10));
            put_u4(out, 0xDC00 | (cp & 0x3FF));
        } else {
            put_u4(out, cp);
        }
    }
    out.push_back('"');
}

// float.__repr__ (and so json.dumps) of a double: shortest round-trip digits, positional
// notation for decimal exponents -4 <= e < 16, else d.ddde+XX; ".0" on integral values;
// json writes inf and nan as Infinity, -Infinity and NaN.
inline void put_py_float(std::string& out, double v) {
    if (std::isnan(v)) {
        out.append("NaN");
        return;
    }
    if (std::isinf(v)) {
        out.append(v < 0 ? "-Infinity" : "Infinity");
        return;
    }
    char buf[64];
    auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific);
    std::string_view sci(buf, (size_t)(r.ptr - buf));  // [-]d[.ddd]e[+-]XX
    bool neg = false;
    if (!sci.empty() && sci[0] == '-') {
        neg = true;
        sci.remove_prefix(1);
    }
    size_t epos = sci.find('e');
    std::string_view mant = sci.substr(0, epos);
    int exp10 = 0;
    std::from_chars(sci.data() + epos + 1 + (sci[epos + 1] == '+' ? 1 : 0),
                    sci.data() + sci.size(), exp10);
    char digits[32];
    size_t nd = 0;
    for (char c : mant)
        if (c != '.') digits[nd++] = c;
    while (nd > 1 && digits[nd - 1] == '0') --nd;  // to_chars gives shortest, keep safe
    int decpt = exp10 + 1;  // value = 0.d1d2... * 10^decpt
    if (neg) out.push_back('-');
    if (decpt > -4 && decpt <= 16) {
        if (decpt <= 0) {
            out.append("0.");
            out.append((size_t)(-decpt), '0');
            out.append(digits, nd);
        } else if ((size_t)decpt >= nd) {
            out.append(digits, nd);
            out.append((size_t)decpt - nd, '0');
            out.append(".0");
        } else {
            out.append(digits, (size_t)decpt);
            out.push_back('.');
            out.append(digits + decpt, nd - (size_t)decpt);
        }
        return;
    }
    out.push_back(digits[0]);
    if (nd > 1) {
        out.push_back('.');
        out.append(digits + 1, nd - 1);
    }
    out.push_back('e');
    int e = decpt - 1;
    out.push_back(e < 0 ? '-' : '+');
    if (e < 0) e = -e;
    if (e < 10) out.push_back('0');
    out.append(std::to_string(e));
}

// A JSON integer's text as Python prints the int it parses to ("-0" is 0).
inline void put_py_int_text(std::string& out, std::string_view text) {
    if (text == "-0") {
        out.push_back('0');
        return;
    }
    out.append(text);
}

}  // namespace tlv
