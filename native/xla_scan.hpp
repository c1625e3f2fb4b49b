// A dump's lines from its chunks, and XlaScan: may this dump be read byte by byte, or
// must the Python parser read it (xla_buffer_assignment.cpp says why)?
#pragma once

#include "xla_spill.hpp"

namespace tlv::xla {

// ---- the file's lines, from chunks ------------------------------------------------------

// Splits fed bytes at '\n' as ingest/lines.read_text does (the last line only if not
// empty); calls on_line(number, text) -> false to stop reading this file.
struct Lines {
    std::string carry;
    int64_t number = 0;
    bool stopped = false;
    template <class F>
    void feed(sv chunk, F&& on_line) {
        size_t i = 0;
        while (!stopped) {
            const void* nl = std::memchr(chunk.data() + i, '\n', chunk.size() - i);
            if (!nl) break;
            size_t j = (size_t)((const char*)nl - chunk.data());
            ++number;
            if (!carry.empty()) {
                carry.append(chunk.data() + i, j - i);
                std::string line;
                line.swap(carry);
                if (!on_line(number, sv(line))) stopped = true;
            } else if (!on_line(number, chunk.substr(i, j - i))) {
                stopped = true;
            }
            i = j + 1;
        }
        if (!stopped) carry.append(chunk.data() + i, chunk.size() - i);
    }
    template <class F>
    void finish(F&& on_line) {
        if (!stopped && !carry.empty()) {
            ++number;
            std::string line;
            line.swap(carry);
            on_line(number, sv(line));
        }
        carry.clear();
    }
};

// ---- XlaScan: may this dump be read byte by byte? ---------------------------------------

struct Scan {
    enum Sec { Top, Report, Live, Peak, Stack } sec = Top;
    bool ok = true;
    std::string why;
    Lines lines;
    std::string pending;  // a UTF-8 sequence cut by a chunk's end

    void bad(int64_t n, const char* what) {
        if (ok) {
            ok = false;
            why = std::string(what) + " at line " + std::to_string(n);
        }
    }
    // Any byte >= 0x80 or < 0x20 (a tab too), or 8 digits in a row: then look closer.
    static bool needs_care(sv t) {
        const char* p = t.data();
        size_t n = t.size(), i = 0;
        constexpr uint64_t k80 = 0x8080808080808080ull, k20 = 0x2020202020202020ull,
                           kF0 = 0xF0F0F0F0F0F0F0F0ull, k30 = 0x3030303030303030ull,
                           k06 = 0x0606060606060606ull;
        for (; i + 8 <= n; i += 8) {
            uint64_t w;
            std::memcpy(&w, p + i, 8);
            if ((w & k80) || ((w - k20) & ~w & k80)) return true;
            if ((w & kF0) == k30 && ((w + k06) & kF0) == k30) return true;
        }
        for (; i < n; ++i) {
            auto c = (unsigned char)p[i];
            if (c >= 0x80 || c < 0x20) return true;
        }
        return false;
    }
    bool line(int64_t n, sv t) {
        bool top = !t.empty() && t[0] != ' ';
        bool odd = false, printable = false;
        if (needs_care(t)) {
            bool kept = !top && (sec == Stack || sec == Report);  // text only kept or skipped
            int run = 0;
            for (unsigned char c : t) {
                if (c >= 0x80 || (c < 0x20 && c != '\t')) odd = true;
                if (c == '\r' || c == 0) {
                    bad(n, "CR or NUL");
                    return false;
                }
                if (c > 0x20 && c < 0x7f) printable = true;
                if (c >= '0' && c <= '9') {
                    if (++run >= 17 && !kept) {
                        bad(n, "a long number");
                        return false;
                    }
                } else {
                    run = 0;
                }
            }
            if (odd) {
                if (!(printable && kept)) {
                    bad(n, "a character that is not plain ASCII");
                    return false;
                }
                return true;  // kept lines move no section
            }
        }
        if (top) {
            if (blank(t)) return true;
            // the sections as pass 2 (and pass 1, for the live range) move between them
            if (starts(t, "HloLiveRange (max"))
                sec = Live;
            else if (starts(t, "Memory Space: "))
                sec = Report;
            else if (starts(t, "BufferAssignment:") || starts(t, "Used values:") ||
                     starts(t, "Total bytes used: "))
                sec = Top;
            else if (sec == Live || sec == Peak || sec == Stack)
                sec = Top;
        } else if (sec == Live || sec == Peak) {
            sv r = lstrip(t);
            if (sec == Live && starts(r, "Live ranges at "))
                sec = Peak;
            else if (sec == Peak && starts(r, "Stack trace breakdown"))
                sec = Stack;
        }
        return true;
    }
    void begin_file() {
        sec = Top;
        lines = Lines();
        pending.clear();
    }
    // Check a chunk; then `more(number, line)` for each of its lines (false: stop).
    template <class F>
    void feed(sv chunk, F&& more) {
        if (!ok) return;
        std::string joined;
        size_t at;
        sv text = utf8_chunk(pending, chunk, joined, &at);
        if (at != sv::npos) {
            bad(lines.number, "bad UTF-8");
            return;
        }
        lines.feed(text, [&](int64_t n, sv t) { return line(n, t) && more(n, t); });
        if (lines.stopped) ok = false;
    }
    template <class F>
    void end_file(F&& more) {
        if (!pending.empty()) bad(lines.number, "a cut UTF-8 character");
        if (ok) lines.finish([&](int64_t n, sv t) { return line(n, t) && more(n, t); });
    }
};

}  // namespace tlv::xla
