// Python source text on ASCII as ingest/pytext.py reads it (str.strip()'s whitespace, \w,
// statements split at top-level semicolons, arguments at top-level commas, comments,
// bracket balance), and the shape text and op names the torch parsers derive from it.
// One copy for the compiled readers of torch logs (torch_fx.cpp, torch_wrapper.cpp,
// wrapper_module.cpp), which must all read exactly as the Python parsers do.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace tlv::pytext {

using sv = std::string_view;

inline bool is_digit(char c) { return c >= '0' && c <= '9'; }
inline bool is_space(char c) {  // str.strip() / \s on ASCII
    return c == ' ' || (c >= '\t' && c <= '\r') || (c >= '\x1c' && c <= '\x1f');
}
inline bool is_word(char c) {
    return is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
inline bool is_head(char c) { return is_word(c) && !is_digit(c); }

inline sv strip(sv s) {
    size_t a = 0, b = s.size();
    while (a < b && is_space(s[a])) ++a;
    while (b > a && is_space(s[b - 1])) --b;
    return s.substr(a, b - a);
}
inline sv lstrip(sv s) {
    size_t a = 0;
    while (a < s.size() && is_space(s[a])) ++a;
    return s.substr(a);
}
inline sv rstrip(sv s) {
    size_t b = s.size();
    while (b > 0 && is_space(s[b - 1])) --b;
    return s.substr(0, b);
}
inline bool starts(sv s, sv p) { return s.size() >= p.size() && s.substr(0, p.size()) == p; }
inline bool ends(sv s, sv p) {
    return s.size() >= p.size() && s.substr(s.size() - p.size()) == p;
}

// [c.strip() for c in pytext.split_semicolons(code) if c.strip()], appended to ``out``:
// a semicolon inside brackets or a quoted string does not split.
inline void statements(sv code, std::vector<sv>* out) {
    auto put = [out](sv piece) {
        piece = strip(piece);
        if (!piece.empty()) out->push_back(piece);
    };
    if (code.find(';') == sv::npos) {
        put(code);
        return;
    }
    int depth = 0;
    char quote = 0;
    size_t start = 0;
    for (size_t i = 0; i < code.size(); ++i) {
        char ch = code[i];
        if (quote) {
            if (ch == quote) quote = 0;
        } else if (ch == '\'' || ch == '"') {
            quote = ch;
        } else if (ch == '(' || ch == '[' || ch == '{') {
            ++depth;
        } else if (ch == ')' || ch == ']' || ch == '}') {
            --depth;
        } else if (ch == ';' && depth == 0) {
            put(code.substr(start, i - start));
            start = i + 1;
        }
    }
    put(code.substr(start));
}

// pytext.split_args: the pieces between top-level commas, stripped, appended to ``out``
// (with ``skip_empty``, only the non-empty ones: pytext.dims). Quirks kept: without
// brackets or quotes, empty pieces are dropped; with them, only an empty last piece is;
// a backslash in a quote escapes the character after it, even another backslash's escape.
inline void split_args(sv t, std::vector<sv>* out, bool skip_empty = false) {
    if (t.find_first_of("([{'\"") == sv::npos) {
        size_t start = 0;
        while (true) {
            size_t c = t.find(',', start);
            sv piece = strip(t.substr(start, c == sv::npos ? sv::npos : c - start));
            if (!piece.empty()) out->push_back(piece);
            if (c == sv::npos) return;
            start = c + 1;
        }
    }
    int depth = 0;
    char quote = 0;
    size_t start = 0, escaped_at = (size_t)-1;
    for (size_t i = 0; i < t.size(); ++i) {
        char ch = t[i];
        if (quote) {
            if (ch == '\\') escaped_at = i + 1;
            else if (ch == quote && i != escaped_at) quote = 0;
        } else if (ch == '\'' || ch == '"') {
            quote = ch;
        } else if (ch == '(' || ch == '[' || ch == '{') {
            ++depth;
        } else if (ch == ')' || ch == ']' || ch == '}') {
            --depth;
        } else if (ch == ',' && depth == 0) {
            sv piece = strip(t.substr(start, i - start));
            if (!(skip_empty && piece.empty())) out->push_back(piece);
            start = i + 1;
        }
    }
    sv last = strip(t.substr(start));
    if (!last.empty()) out->push_back(last);
}

// pytext.balance: brackets opened minus closed outside quotes (0 where the counts agree).
inline long balance(sv t) {
    long opened = 0, closed = 0;
    for (char ch : t) {
        opened += ch == '(' || ch == '[' || ch == '{';
        closed += ch == ')' || ch == ']' || ch == '}';
    }
    if (opened == closed) return 0;
    long depth = 0;
    char quote = 0;
    for (char ch : t) {
        if (quote) {
            if (ch == quote) quote = 0;
        } else if (ch == '\'' || ch == '"') {
            quote = ch;
        } else if (ch == '(' || ch == '[' || ch == '{') {
            ++depth;
        } else if (ch == ')' || ch == ']' || ch == '}') {
            --depth;
        }
    }
    return depth;
}

// pytext.split_comment: the code (rstripped) and the comment (stripped) after a # outside
// quotes; the whole text and no comment where there is none.
inline void split_comment(sv s, sv* code, sv* comment) {
    *code = s;
    *comment = sv();
    if (s.find('#') == sv::npos) return;
    char quote = 0;
    for (size_t i = 0; i < s.size(); ++i) {
        char ch = s[i];
        if (quote) {
            if (ch == quote) quote = 0;
        } else if (ch == '\'' || ch == '"') {
            quote = ch;
        } else if (ch == '#') {
            *code = rstrip(s.substr(0, i));
            *comment = strip(s.substr(i + 1));
            return;
        }
    }
}

// "[a, b]": the shape and stride text of tensors (ingest/tensors.py's _fmt).
inline std::string fmt(const std::vector<std::string>& d) {
    std::string s = "[";
    for (size_t i = 0; i < d.size(); ++i) {
        if (i) s += ", ";
        s += d[i];
    }
    return s + "]";
}

// fx_graph.op_name: the op of a call target (torch.ops.aten.mm.default, aten.mm, mm).
inline std::string op_name(sv target) {
    std::vector<sv> parts;
    size_t i = 0;
    while (true) {
        size_t d = target.find('.', i);
        parts.push_back(target.substr(i, d == sv::npos ? sv::npos : d - i));
        if (d == sv::npos) break;
        i = d + 1;
    }
    if (parts.size() >= 4 && parts[0] == "torch" && parts[1] == "ops") return std::string(parts[3]);
    if (parts.size() >= 2 && (parts[0] == "aten" || parts[0] == "prims"))
        return std::string(parts[1]);
    return std::string(parts.back());
}

}  // namespace tlv::pytext
