// The XLA reader's limits and its small ASCII text helpers (xla_buffer_assignment.cpp;
// XlaScan lets nothing but ASCII through).
#pragma once

#include <Python.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "columns.hpp"
#include "common.hpp"
#include "pyjson.hpp"

namespace tlv::xla {

using i128 = __int128;
using sv = std::string_view;

// small batches: the writer holds a few in flight, and node attrs carry whole instructions
constexpr size_t kBatchRows = 8192;
constexpr size_t kBatchText = size_t(4) << 20;
constexpr int kMaxListed = 8;
constexpr size_t kMaxStackLines = 200;
constexpr size_t kMaxUnknown = 100;

// ---- small text helpers (ASCII: XlaScan let nothing else through) ----------------------

inline bool is_ws(char c) { return c == ' ' || c == '\t'; }
inline bool is_digit(char c) { return c >= '0' && c <= '9'; }
inline bool is_word(char c) {
    return is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

inline sv strip(sv s) {
    while (!s.empty() && is_ws(s.front())) s.remove_prefix(1);
    while (!s.empty() && is_ws(s.back())) s.remove_suffix(1);
    return s;
}
inline sv lstrip(sv s) {
    while (!s.empty() && is_ws(s.front())) s.remove_prefix(1);
    return s;
}
inline bool blank(sv s) { return strip(s).empty(); }
inline bool starts(sv s, sv p) { return s.size() >= p.size() && s.substr(0, p.size()) == p; }
inline bool all_ws(sv s, size_t from) {
    for (size_t i = from; i < s.size(); ++i)
        if (!is_ws(s[i])) return false;
    return true;
}

// Digits at s[i..]: their count (0 if none); value in *v (XlaScan keeps them < 17 digits).
inline size_t digits(sv s, size_t i, int64_t* v) {
    size_t j = i;
    int64_t x = 0;
    while (j < s.size() && is_digit(s[j])) {
        x = x * 10 + (s[j] - '0');
        ++j;
    }
    *v = x;
    return j - i;
}

inline std::string i128_str(i128 v) {
    if (v == 0) return "0";
    bool neg = v < 0;
    unsigned __int128 u = neg ? (unsigned __int128)(-(v + 1)) + 1 : (unsigned __int128)v;
    char buf[48];
    int n = 0;
    while (u) {
        buf[n++] = (char)('0' + (int)(u % 10));
        u /= 10;
    }
    std::string out = neg ? "-" : "";
    while (n) out.push_back(buf[--n]);
    return out;
}

// Python's f"{n:,}".
inline std::string commas(i128 v) {
    std::string d = i128_str(v);
    std::string sign;
    if (!d.empty() && d[0] == '-') {
        sign = "-";
        d.erase(0, 1);
    }
    std::string out;
    size_t n = d.size();
    for (size_t i = 0; i < n; ++i) {
        out.push_back(d[i]);
        size_t left = n - 1 - i;
        if (left && left % 3 == 0) out.push_back(',');
    }
    return sign + out;
}

}  // namespace tlv::xla
