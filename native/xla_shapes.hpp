// XLA shapes (ingest/xla_shapes.py), an instruction's facts, and JSON objects as
// json.dumps(separators=(",", ":")) writes them, for the XLA reader.
#pragma once

#include "xla_scan.hpp"

namespace tlv::xla {

// ---- shapes (ingest/xla_shapes.py) ------------------------------------------------------

struct Shape {
    std::string text;     // stripped
    bool array = false;   // dtype[dims]{layout}
    std::string dtype, dims, layout;
    bool has_layout = false;
    bool known = false;   // bytes known
    i128 bytes = 0;
};

inline int itemsize(sv d) {
    static const std::pair<const char*, int> T[] = {
        {"pred", 1},       {"s8", 1},         {"u8", 1},
        {"s16", 2},        {"u16", 2},        {"s32", 4},
        {"u32", 4},        {"s64", 8},        {"u64", 8},
        {"f16", 2},        {"bf16", 2},       {"f32", 4},
        {"f64", 8},        {"c64", 8},        {"c128", 16},
        {"f8e5m2", 1},     {"f8e4m3fn", 1},   {"f8e4m3b11fnuz", 1},
        {"f8e5m2fnuz", 1}, {"f8e4m3fnuz", 1}, {"f8e4m3", 1},
        {"f8e3m4", 1},     {"f8e8m0fnu", 1},  {"token", 0}};
    for (auto& p : T)
        if (d == p.first) return p.second;
    return -1;
}

// re.sub of a bracketed group with no nested brackets of its kind, left to right.
inline std::string drop_groups(sv s, const char* pairs) {
    std::string out;
    size_t i = 0;
    while (i < s.size()) {
        bool hit = false;
        for (const char* p = pairs; *p; p += 2) {
            if (s[i] != p[0]) continue;
            size_t j = i + 1;
            while (j < s.size() && s[j] != p[0] && s[j] != p[1]) ++j;
            if (j < s.size() && s[j] == p[1]) {
                i = j + 1;
                hit = true;
            }
            break;
        }
        if (!hit) out.push_back(s[i++]);
    }
    return out;
}

inline std::string drop_comments(sv t) {  // re.sub(r"/\*.*?\*/", "", t)
    std::string out;
    size_t i = 0;
    while (i < t.size()) {
        if (t[i] == '/' && i + 1 < t.size() && t[i + 1] == '*') {
            size_t e = t.find("*/", i + 2);
            if (e != sv::npos) {
                i = e + 2;
                continue;
            }
        }
        out.push_back(t[i++]);
    }
    return out;
}

inline int64_t top_level_count(sv inner) {
    if (blank(inner)) return 0;
    std::string flat = drop_groups(inner, "[]{}");
    while (flat.find('(') != std::string::npos) {
        std::string shorter = drop_groups(flat, "()");
        if (shorter == flat) break;
        flat.swap(shorter);
    }
    return (int64_t)std::count(flat.begin(), flat.end(), ',') + 1;
}

inline Shape parse_shape(sv text) {
    Shape sh;
    sv st = strip(text);
    sh.text = std::string(st);
    std::string tbuf;
    sv t = st;
    if (t.find("/*") != sv::npos) {
        tbuf = drop_comments(t);
        t = tbuf;
    }
    if (!t.empty() && t[0] == '(') {
        size_t r = t.rfind(')');
        sv inner = r >= 1 ? t.substr(1, r - 1) : sv();
        sh.known = true;
        sh.bytes = (i128)top_level_count(inner) * 8;
        return sh;
    }
    // ([a-z][a-z0-9]*)\[([^\]]*)\](\{[^}]*\})?\Z
    size_t i = 0;
    if (t.empty() || !(t[0] >= 'a' && t[0] <= 'z')) return sh;
    while (i < t.size() && ((t[i] >= 'a' && t[i] <= 'z') || is_digit(t[i]))) ++i;
    if (i >= t.size() || t[i] != '[') return sh;
    size_t close = t.find(']', i + 1);
    if (close == sv::npos) return sh;
    sv dtype = t.substr(0, i), dims = t.substr(i + 1, close - i - 1),
       rest = t.substr(close + 1);
    if (!rest.empty()) {
        if (rest[0] != '{' || rest.back() != '}' ||
            rest.substr(1, rest.size() - 2).find('}') != sv::npos)
            return sh;
        sh.has_layout = true;
        sh.layout = std::string(rest);
    }
    sh.array = true;
    sh.dtype = std::string(dtype);
    sh.dims = "[" + std::string(dims) + "]";
    int size = itemsize(dtype);
    i128 numel = 1;
    bool known = size >= 0;
    size_t p = 0;
    while (known) {
        size_t c = dims.find(',', p);
        sv d = strip(dims.substr(p, c == sv::npos ? sv::npos : c - p));
        while (!d.empty() && (d[0] == '<' || d[0] == '=')) d.remove_prefix(1);
        if (!d.empty()) {
            bool num = true;
            for (char ch : d) num = num && is_digit(ch);
            if (!num) {
                known = false;
                break;
            }
            i128 v = 0;
            for (char ch : d) v = v * 10 + (ch - '0');
            if (__builtin_mul_overflow(numel, v, &numel))
                throw std::runtime_error("a shape of more than 2**127 elements");
        }
        if (c == sv::npos) break;
        p = c + 1;
    }
    if (known) {
        sh.known = true;
        sh.bytes = numel * size;
    }
    return sh;
}

// ---- instruction facts ------------------------------------------------------------------

struct Facts {
    std::string text;  // the instruction the facts are of
    bool has_shape = false, has_opcode = false;
    std::string shape, opcode;
    // op_type, op_name, source_file, source_line, stack_frame_id (metadata; raw text)
    std::optional<std::string> meta[5];
    std::optional<std::string> fusion_kind, calls, backend_config;
    bool empty = true;
};

const char* const kMetaKeys[5] = {"op_type", "op_name", "source_file", "source_line",
                                  "stack_frame_id"};

inline std::optional<std::string> instruction_shape(sv ins) {
    size_t eq = ins.find(" = ");
    if (eq == sv::npos) return std::nullopt;
    sv rest = ins.substr(eq + 3);
    if (!rest.empty() && rest[0] == '(') {
        int depth = 0;
        for (size_t i = 0; i < rest.size(); ++i) {
            if (rest[i] == '(')
                ++depth;
            else if (rest[i] == ')') {
                if (--depth == 0) return std::string(rest.substr(0, i + 1));
            }
        }
        return std::nullopt;
    }
    size_t sp = rest.find(' ');
    return std::string(sp == sv::npos ? rest : rest.substr(0, sp));
}

inline void parse_metadata(sv ins, Facts& f) {
    size_t at = ins.find("metadata={");
    if (at == sv::npos) return;
    size_t pos = at + 10, n = ins.size();
    while (pos < n && ins[pos] != '}') {
        size_t i = pos;
        while (i < n && is_ws(ins[i])) ++i;
        size_t k0 = i;
        while (i < n && is_word(ins[i])) ++i;
        if (i == k0 || i >= n || ins[i] != '=') break;
        sv key = ins.substr(k0, i - k0);
        ++i;
        std::string val;
        bool got = false;
        if (i < n && ins[i] == '"') {
            size_t j = i + 1;
            while (j < n) {
                if (ins[j] == '\\') {
                    if (j + 1 >= n) {
                        j = n;
                        break;
                    }
                    j += 2;
                } else if (ins[j] == '"') {
                    break;
                } else {
                    ++j;
                }
            }
            if (j < n && ins[j] == '"') {
                val = std::string(ins.substr(i + 1, j - i - 1));
                pos = j + 1;
                got = true;
            }
        }
        if (!got) {
            size_t j = i;
            while (j < n && !is_ws(ins[j]) && ins[j] != '}') ++j;
            if (j == i) break;
            val = std::string(ins.substr(i, j - i));
            pos = j;
        }
        for (int m = 0; m < 5; ++m)
            if (key == kMetaKeys[m]) f.meta[m] = val;
    }
}

// `, kind=(k\w+)` / `, calls=(%[\w.\-]+)`: the first occurrence
inline std::optional<std::string> search_token(sv ins, sv prefix, char first, bool calls) {
    size_t p = 0;
    while ((p = ins.find(prefix, p)) != sv::npos) {
        size_t i = p + prefix.size();
        if (i < ins.size() && ins[i] == first) {
            size_t j = i + 1;
            while (j < ins.size() &&
                   (is_word(ins[j]) || (calls && (ins[j] == '.' || ins[j] == '-'))))
                ++j;
            if (j > i + 1) return std::string(ins.substr(i, j - i));
        }
        ++p;
    }
    return std::nullopt;
}

inline std::optional<std::string> braced(sv t, size_t start) {
    int depth = 0;
    bool in_str = false;
    for (size_t i = start; i < t.size(); ++i) {
        char ch = t[i];
        if (in_str) {
            if (ch == '\\')
                ++i;
            else if (ch == '"')
                in_str = false;
        } else if (ch == '"') {
            in_str = true;
        } else if (ch == '{') {
            ++depth;
        } else if (ch == '}') {
            if (--depth == 0) return std::string(t.substr(start, i - start + 1));
        }
    }
    return std::nullopt;
}

inline void instruction_facts(sv ins, Facts& f) {
    f = Facts();
    f.empty = false;
    f.text = std::string(ins);
    auto shape = instruction_shape(ins);
    if (shape && !shape->empty()) {
        f.has_shape = true;
        f.shape = *shape;
    }
    if (shape) {  // instruction_opcode
        sv rest = lstrip(ins.substr(ins.find(" = ") + 3 + shape->size()));
        size_t paren = rest.find('(');
        if (paren != sv::npos && paren > 0) {
            f.has_opcode = true;
            f.opcode = std::string(rest.substr(0, paren));
        }
    }
    parse_metadata(ins, f);
    f.fusion_kind = search_token(ins, ", kind=", 'k', false);
    f.calls = search_token(ins, ", calls=", '%', true);
    size_t at = ins.find("backend_config=");
    if (at != sv::npos && at + 15 < ins.size() && ins[at + 15] == '{')
        f.backend_config = braced(ins, at + 15);
}

// ---- JSON objects as json.dumps(separators=(",", ":")) writes them ---------------------

struct Obj {
    std::string& s;
    bool first = true;
    explicit Obj(std::string& out) : s(out) { s.push_back('{'); }
    void key(sv k) {
        if (!first) s.push_back(',');
        first = false;
        put_json_string(s, k, true);
        s.push_back(':');
    }
    void str(sv k, sv v) {
        key(k);
        put_json_string(s, v, true);
    }
    void num(sv k, i128 v) {
        key(k);
        s += i128_str(v);
    }
    void null(sv k) {
        key(k);
        s += "null";
    }
    void yes(sv k) {
        key(k);
        s += "true";
    }
    void close() { s.push_back('}'); }
};

inline void put_str_list(std::string& s, const std::vector<std::string>& v) {
    s.push_back('[');
    for (size_t i = 0; i < v.size(); ++i) {
        if (i) s.push_back(',');
        put_json_string(s, v[i], true);
    }
    s.push_back(']');
}

}  // namespace tlv::xla
