// A strict JSON reader with Python's json semantics, into a flat tree over the input.
//
// It accepts exactly what json.loads accepts (NaN, Infinity, -Infinity included;
// control characters in strings refused) and keeps values as spans of the input, so
// that a string without escapes is never copied. Object lookups see the LAST value of
// a repeated key (a dict's) and re-serialisation writes it at the FIRST key's place,
// as json.dumps(json.loads(text)) would. Reading stops with NeedMore where a value runs
// past the end of the data received so far, so a streaming caller retries it once the
// next chunk has arrived.
#pragma once

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "pyjson.hpp"

namespace tlv {

struct NeedMore {};

// Arrays and objects within one another in one value, at most (chrome_trace.MAX_DEPTH,
// exported as the module's JSON_MAX_DEPTH; a test holds them equal). Python's json has
// no bound of its own but the interpreter's recursion limit, reached somewhere between
// 900 and 1000 levels depending on the caller's stack: both readers refuse the level
// past this one, well below it, at the value's start.
constexpr int kJsonMaxDepth = 512;

struct JsonError {
    size_t pos;  // offset in the data where the problem is
    std::string msg;
};

enum class JT : uint8_t { Null, True, False, Int, Float, Str, Arr, Obj };

struct JNode {
    JT t;
    bool esc = false;   // Str: has escapes (decode before use)
    size_t begin = 0;   // Str: after the opening quote; Int/Float: the number's text
    size_t len = 0;     // text length (Str: up to the closing quote)
    size_t count = 0;   // Arr: elements; Obj: members (each a key node then a value node)
    size_t end = 0;     // index of the node after this subtree
    double d = 0;       // Float
};

// Python's name of the type json.loads gives a value, for error messages.
inline const char* py_type_name(const JNode* n) {
    if (!n) return "missing";
    switch (n->t) {
        case JT::Null: return "NoneType";
        case JT::True:
        case JT::False: return "bool";
        case JT::Int: return "int";
        case JT::Float: return "float";
        case JT::Str: return "str";
        case JT::Arr: return "list";
        case JT::Obj: return "dict";
    }
    return "?";
}

class JsonDoc {
   public:
    std::string_view data;
    bool eof = false;
    std::vector<JNode> nodes;

    // Parse the value at `pos` (no leading whitespace); returns the offset after it.
    size_t parse(size_t pos) {
        nodes.clear();
        return value(pos, 0);
    }

    std::string_view text(const JNode& n) const { return data.substr(n.begin, n.len); }

    // Decoded string value (UTF-8; a lone surrogate escape becomes its WTF-8 bytes and
    // sets *lone). A string without escapes is returned as a view of the input.
    std::string_view str(const JNode& n, std::string& scratch, bool* lone = nullptr) const {
        if (!n.esc) return text(n);
        scratch.clear();
        decode(text(n), scratch, lone);
        return scratch;
    }

    bool str_eq(const JNode& n, std::string_view s) const {
        if (!n.esc) return text(n) == s;
        std::string tmp;
        return str(n, tmp) == s;
    }

    // The value of `key` in object node `obj` (its last occurrence), or nullptr.
    const JNode* get(size_t obj, std::string_view key) const {
        const JNode* found = nullptr;
        size_t i = obj + 1;
        for (size_t k = 0; k < nodes[obj].count; ++k) {
            const JNode& kn = nodes[i];
            size_t v = i + 1;
            if (str_eq(kn, key)) found = &nodes[v];
            i = nodes[v].end;
        }
        return found;
    }

    // Python truthiness of a value (None, False, 0, 0.0, "", [], {} are false).
    bool truthy(const JNode& n) const {
        switch (n.t) {
            case JT::Null:
            case JT::False: return false;
            case JT::True: return true;
            case JT::Int: {
                auto t = text(n);
                return !(t == "0" || t == "-0");
            }
            case JT::Float: return n.d != 0.0 || std::isnan(n.d);
            case JT::Str: return n.len != 0;
            case JT::Arr:
            case JT::Obj: return n.count != 0;
        }
        return true;
    }

    // json.dumps(value, separators=(",", ":"), ensure_ascii=...) of node i, leaving out
    // the members of a top-level object whose keys are in `drop`. Returns false if a
    // string holds a lone surrogate escape (Python would store text that is not UTF-8).
    bool dump(size_t i, std::string& out, bool ensure_ascii,
              const std::string_view* drop = nullptr, size_t ndrop = 0) const {
        bool ok = true;
        dump_node(i, out, ensure_ascii, drop, ndrop, ok);
        return ok;
    }

    static void decode(std::string_view s, std::string& out, bool* lone);

   private:
    static bool is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

    [[noreturn]] void fail(size_t pos, const char* msg) const { throw JsonError{pos, msg}; }

    size_t ws(size_t p) const {
        while (p < data.size() && is_ws(data[p])) ++p;
        return p;
    }

    char at(size_t p) const {
        if (p >= data.size()) {
            if (eof) throw JsonError{p, "the file ends"};
            throw NeedMore{};
        }
        return data[p];
    }

    size_t add(JT t, size_t begin, size_t len) {
        nodes.push_back(JNode{t, false, begin, len, 0, 0, 0});
        return nodes.size() - 1;
    }

    size_t literal(size_t p, std::string_view word, JT t, double d = 0) {
        for (size_t k = 0; k < word.size(); ++k)
            if (at(p + k) != word[k]) fail(p, "Expecting value");
        size_t i = add(t, p, word.size());
        nodes[i].d = d;
        nodes[i].end = i + 1;
        return p + word.size();
    }

    // `depth`: the arrays and objects around the value at p.
    size_t value(size_t p, int depth) {
        char c = at(p);
        if ((c == '{' || c == '[') && depth >= kJsonMaxDepth) fail(p, "nested too deeply");
        switch (c) {
            case '"': return string(p);
            case '{': return object(p, depth);
            case '[': return array(p, depth);
            case 'n': return literal(p, "null", JT::Null);
            case 't': return literal(p, "true", JT::True);
            case 'f': return literal(p, "false", JT::False);
            case 'N': return literal(p, "NaN", JT::Float, std::nan(""));
            case 'I': return literal(p, "Infinity", JT::Float, HUGE_VAL);
            default: break;
        }
        if (c == '-' || (c >= '0' && c <= '9')) {
            if (c == '-' && at(p + 1) == 'I')
                return literal(p, "-Infinity", JT::Float, -HUGE_VAL);
            return number(p);
        }
        fail(p, "Expecting value");
    }

    bool digit_at(size_t p) const {
        char c = at(p);
        return c >= '0' && c <= '9';
    }

    // -?(0|[1-9]\d*)(\.\d+)?([eE][-+]?\d+)? exactly as Python's scanner matches it; a
    // number that reaches the end of the data may go on in the next chunk.
    size_t number(size_t p) {
        size_t start = p;
        if (data[p] == '-') ++p;
        if (!digit_at(p)) fail(start, "Expecting value");
        if (data[p] == '0') {
            ++p;
        } else {
            while (p < data.size() && data[p] >= '0' && data[p] <= '9') ++p;
        }
        bool is_float = false;
        if (p >= data.size() && !eof) throw NeedMore{};
        if (p < data.size() && data[p] == '.') {
            if (digit_at(p + 1)) {
                p += 2;
                while (p < data.size() && data[p] >= '0' && data[p] <= '9') ++p;
                is_float = true;
            }
        }
        if (p >= data.size() && !eof) throw NeedMore{};
        if (p < data.size() && (data[p] == 'e' || data[p] == 'E')) {
            size_t q = p + 1;
            char s = at(q);
            if (s == '+' || s == '-') ++q;
            if (digit_at(q)) {
                while (q < data.size() && data[q] >= '0' && data[q] <= '9') ++q;
                p = q;
                is_float = true;
            }
        }
        if (p >= data.size() && !eof) throw NeedMore{};
        size_t i = add(is_float ? JT::Float : JT::Int, start, p - start);
        nodes[i].end = i + 1;
        if (is_float) {
            nodes[i].d = parse_double(data.substr(start, p - start));
        } else if (p - start - (data[start] == '-') > 4300) {
            fail(start, "an integer of more than 4300 digits");
        }
        return p;
    }

    static double parse_double(std::string_view t) {
        double d = 0;
        auto r = std::from_chars(t.data(), t.data() + t.size(), d);
        if (r.ec == std::errc::result_out_of_range) {
            // overflow gives +-inf, underflow +-0.0, as Python's float() does
            bool neg = t[0] == '-';
            size_t e = t.find_first_of("eE");
            long exp = 0;
            if (e != std::string_view::npos) {
                auto es = t.substr(e + 1);
                if (!es.empty() && es[0] == '+') es.remove_prefix(1);
                std::from_chars(es.data(), es.data() + es.size(), exp);
            }
            d = exp > 0 ? HUGE_VAL : 0.0;
            if (neg) d = -d;
        }
        return d;
    }

    size_t string(size_t p) {
        size_t start = p;
        ++p;
        bool esc = false;
        for (;;) {
            if (p >= data.size()) {
                if (eof) fail(start, "the file ends");  // Python: "cut" at the end of input
                throw NeedMore{};
            }
            auto c = (uint8_t)data[p];
            if (c == '"') break;
            if (c < 0x20) fail(p, "Invalid control character at");
            if (c == '\\') {
                esc = true;
                char e = at(p + 1);
                if (e == 'u') {
                    for (int k = 2; k < 6; ++k) {
                        char h = at(p + k);
                        if (!((h >= '0' && h <= '9') || (h >= 'a' && h <= 'f') ||
                              (h >= 'A' && h <= 'F')))
                            fail(p + 1, "Invalid \\uXXXX escape");
                    }
                    p += 6;
                    continue;
                }
                if (!std::strchr("\"\\/bfnrt", e) || e == 0) fail(p, "Invalid \\escape");
                p += 2;
                continue;
            }
            ++p;
        }
        size_t i = add(JT::Str, start + 1, p - start - 1);
        nodes[i].esc = esc;
        nodes[i].end = i + 1;
        return p + 1;
    }

    size_t array(size_t p, int depth) {
        size_t i = add(JT::Arr, p, 0);
        p = ws(p + 1);
        if (at(p) == ']') {
            nodes[i].end = nodes.size();
            nodes[i].len = p + 1 - nodes[i].begin;
            return p + 1;
        }
        size_t n = 0;
        for (;;) {
            p = value(p, depth + 1);
            ++n;
            p = ws(p);
            char c = at(p);
            if (c == ']') break;
            if (c != ',') fail(p, "Expecting ',' delimiter");
            p = ws(p + 1);
            if (at(p) == ']') fail(p, "Expecting value");
        }
        nodes[i].count = n;
        nodes[i].end = nodes.size();
        nodes[i].len = p + 1 - nodes[i].begin;
        return p + 1;
    }

    size_t object(size_t p, int depth) {
        size_t i = add(JT::Obj, p, 0);
        p = ws(p + 1);
        if (at(p) == '}') {
            nodes[i].end = nodes.size();
            nodes[i].len = p + 1 - nodes[i].begin;
            return p + 1;
        }
        size_t n = 0;
        for (;;) {
            if (at(p) != '"') fail(p, "Expecting property name enclosed in double quotes");
            p = string(p);
            p = ws(p);
            if (at(p) != ':') fail(p, "Expecting ':' delimiter");
            p = ws(p + 1);
            p = value(p, depth + 1);
            ++n;
            p = ws(p);
            char c = at(p);
            if (c == '}') break;
            if (c != ',') fail(p, "Expecting ',' delimiter");
            p = ws(p + 1);
        }
        nodes[i].count = n;
        nodes[i].end = nodes.size();
        nodes[i].len = p + 1 - nodes[i].begin;
        return p + 1;
    }

    void dump_string(const JNode& n, std::string& out, bool ensure_ascii, bool& ok) const {
        if (!n.esc) {
            if (!ensure_ascii) {
                // the input's own text: with no escape in it, it holds no quote, backslash
                // or control character, so json.dumps writes it unchanged
                out.push_back('"');
                out.append(data.data() + n.begin, n.len);
                out.push_back('"');
                return;
            }
            put_json_string(out, text(n), ensure_ascii);
            return;
        }
        std::string tmp;
        bool lone = false;
        decode(text(n), tmp, &lone);
        if (lone) ok = false;
        put_json_string(out, tmp, ensure_ascii);
    }

    void dump_node(size_t i, std::string& out, bool ensure_ascii, const std::string_view* drop,
                   size_t ndrop, bool& ok) const {
        const JNode& n = nodes[i];
        switch (n.t) {
            case JT::Null: out.append("null"); return;
            case JT::True: out.append("true"); return;
            case JT::False: out.append("false"); return;
            case JT::Int: put_py_int_text(out, text(n)); return;
            case JT::Float: put_py_float(out, n.d); return;
            case JT::Str: dump_string(n, out, ensure_ascii, ok); return;
            case JT::Arr: {
                out.push_back('[');
                size_t c = i + 1;
                for (size_t k = 0; k < n.count; ++k) {
                    if (k) out.push_back(',');
                    dump_node(c, out, ensure_ascii, nullptr, 0, ok);
                    c = nodes[c].end;
                }
                out.push_back(']');
                return;
            }
            case JT::Obj: dump_object(i, out, ensure_ascii, drop, ndrop, ok); return;
        }
    }

    void dump_object(size_t i, std::string& out, bool ensure_ascii,
                     const std::string_view* drop, size_t ndrop, bool& ok) const;
};

inline void JsonDoc::decode(std::string_view s, std::string& out, bool* lone) {
    auto hex = [](char h) -> uint32_t {
        if (h >= '0' && h <= '9') return (uint32_t)(h - '0');
        if (h >= 'a' && h <= 'f') return (uint32_t)(h - 'a' + 10);
        return (uint32_t)(h - 'A' + 10);
    };
    auto u4 = [&](size_t k) {
        return (hex(s[k]) << 12) | (hex(s[k + 1]) << 8) | (hex(s[k + 2]) << 4) | hex(s[k + 3]);
    };
    size_t i = 0;
    while (i < s.size()) {
        size_t j = s.find('\\', i);
        if (j == std::string_view::npos) j = s.size();
        out.append(s.data() + i, j - i);
        i = j;
        if (i >= s.size()) break;
        char e = s[i + 1];
        if (e != 'u') {
            switch (e) {
                case 'b': out.push_back('\b'); break;
                case 'f': out.push_back('\f'); break;
                case 'n': out.push_back('\n'); break;
                case 'r': out.push_back('\r'); break;
                case 't': out.push_back('\t'); break;
                default: out.push_back(e); break;  // " \ /
            }
            i += 2;
            continue;
        }
        uint32_t cp = u4(i + 2);
        i += 6;
        if (cp >= 0xD800 && cp <= 0xDBFF && i + 6 <= s.size() && s[i] == '\\' &&
            s[i + 1] == 'u') {
            uint32_t lo = u4(i + 2);
            if (lo >= 0xDC00 && lo <= 0xDFFF) {
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                i += 6;
            }
        }
        if (cp >= 0xD800 && cp <= 0xDFFF) {
            if (lone) *lone = true;
            // WTF-8: the surrogate's own three bytes (Python's "surrogatepass")
            out.push_back((char)(0xE0 | (cp >> 12)));
            out.push_back((char)(0x80 | ((cp >> 6) & 0x3F)));
            out.push_back((char)(0x80 | (cp & 0x3F)));
            continue;
        }
        put_utf8(out, cp);
    }
}

inline void JsonDoc::dump_object(size_t i, std::string& out, bool ensure_ascii,
                                 const std::string_view* drop, size_t ndrop, bool& ok) const {
    const JNode& n = nodes[i];
    // members: (key node, value node); a repeated key keeps its first place, last value
    struct M {
        size_t key, val;
        std::string_view k;
        bool skip;
    };
    // small objects (every event) on the stack, no allocation
    constexpr size_t kSmall = 24;
    M small[kSmall];
    std::vector<M> big;
    M* ms_begin = small;
    if (n.count > kSmall) {
        big.resize(n.count);
        ms_begin = big.data();
    }
    struct Span {
        M* b;
        size_t n;
        M* begin() const { return b; }
        M* end() const { return b + n; }
        size_t size() const { return n; }
        M& operator[](size_t k) const { return b[k]; }
    } ms{ms_begin, 0};
    std::vector<std::string> decoded;  // keys with escapes
    size_t c = i + 1;
    bool escaped_keys = false;
    for (size_t m = 0; m < n.count; ++m) {
        const JNode& kn = nodes[c];
        std::string_view k;
        if (kn.esc) {
            if (decoded.empty()) decoded.reserve(n.count);  // views into it stay valid
            decoded.emplace_back();
            bool lone = false;
            decode(text(kn), decoded.back(), &lone);
            if (lone) ok = false;
            escaped_keys = true;
        } else {
            k = text(kn);
        }
        ms[ms.n++] = M{c, c + 1, k, false};
        c = nodes[c + 1].end;
    }
    if (escaped_keys) {  // point the views at the decoded keys (vector now stable)
        size_t d = 0;
        for (auto& m : ms)
            if (nodes[m.key].esc) m.k = decoded[d++];
    }
    // equal keys: the size and first byte tell most apart without a memcmp call
    auto same = [](std::string_view x, std::string_view y) {
        return x.size() == y.size() && (x.empty() || (x[0] == y[0] && x == y));
    };
    if (ndrop)
        for (auto& m : ms)
            for (size_t d = 0; d < ndrop; ++d)
                if (same(m.k, drop[d])) m.skip = true;
    if (ms.size() > 1) {
        // first place, last value: O(n^2) on small objects, sorted indexes on large ones
        if (ms.size() <= kSmall) {
            for (size_t a = 0; a < ms.size(); ++a) {
                if (ms[a].skip) continue;
                for (size_t b = a + 1; b < ms.size(); ++b) {
                    if (!ms[b].skip && same(ms[b].k, ms[a].k)) {
                        ms[a].val = ms[b].val;
                        ms[b].skip = true;
                    }
                }
            }
        } else {
            std::vector<size_t> idx(ms.size());
            for (size_t a = 0; a < idx.size(); ++a) idx[a] = a;
            std::stable_sort(idx.begin(), idx.end(),
                             [&](size_t x, size_t y) { return ms[x].k < ms[y].k; });
            for (size_t a = 0; a < idx.size();) {
                size_t b = a + 1;
                while (b < idx.size() && ms[idx[b]].k == ms[idx[a]].k) ++b;
                if (b - a > 1) {
                    size_t first = idx[a];  // stable: the lowest index of the run
                    ms[first].val = ms[idx[b - 1]].val;
                    for (size_t r = a + 1; r < b; ++r) ms[idx[r]].skip = true;
                }
                a = b;
            }
        }
    }
    out.push_back('{');
    bool first = true;
    for (auto& m : ms) {
        if (m.skip) continue;
        if (!first) out.push_back(',');
        first = false;
        dump_string(nodes[m.key], out, ensure_ascii, ok);
        out.push_back(':');
        dump_node(m.val, out, ensure_ascii, nullptr, 0, ok);
    }
    out.push_back('}');
}

}  // namespace tlv
