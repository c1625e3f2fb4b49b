// XLA buffer-assignment dumps to events: the compiled twin of ingest/xla_buffer_assignment.py
// (with xla_live_range.py, xla_peaks.py, xla_shapes.py), which stays the specification:
// tests/test_native_xla.py runs both on every XLA fixture and on mutated dumps and requires
// the same rows, the same closing note, or the same error (file, line, message).
//
// The same two streaming passes as the Python parser: the HloLiveRange section first
// (steps and ranges), then everything else, emitting each used value's events when its
// entry ends. What must be held between the sections is held compactly: names interned
// once in one arena (a value's key is two 32-bit ids), numbers in flat columns, no
// object per value; and out of RAM: the arena and the columns live in a spill file whose
// resident pages are dropped past a budget (Spill), the hash tables over them in memory
// (5 bytes a slot). So the peak RSS of a large dump's ingest grows slowly with the dump
// (measured: docs/benchmarks.md).
//
// Identity is kept simple by scope: this parser reads ASCII text byte by byte, where the
// Python one reads Unicode (its regexes' \s and \w, str.strip). XlaScan checks every file
// first; a file with a byte that could read differently (not ASCII, a control character,
// CR, NUL, bad UTF-8, a number of 17 digits or more) outside the places where text is only
// kept or skipped (the stack-trace breakdown, the memory report's table) is handed to the
// Python parser whole. Real dumps never need that.
#include <Python.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstdint>
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

namespace tlv {
namespace {

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
    while (j < s.size() && is_digit(s[j])) { x = x * 10 + (s[j] - '0'); ++j; }
    *v = x;
    return j - i;
}

std::string i128_str(i128 v) {
    if (v == 0) return "0";
    bool neg = v < 0;
    unsigned __int128 u = neg ? (unsigned __int128)(-(v + 1)) + 1 : (unsigned __int128)v;
    char buf[48];
    int n = 0;
    while (u) { buf[n++] = (char)('0' + (int)(u % 10)); u /= 10; }
    std::string out = neg ? "-" : "";
    while (n) out.push_back(buf[--n]);
    return out;
}

// Python's f"{n:,}".
std::string commas(i128 v) {
    std::string d = i128_str(v);
    std::string sign;
    if (!d.empty() && d[0] == '-') { sign = "-"; d.erase(0, 1); }
    std::string out;
    size_t n = d.size();
    for (size_t i = 0; i < n; ++i) {
        out.push_back(d[i]);
        size_t left = n - 1 - i;
        if (left && left % 3 == 0) out.push_back(',');
    }
    return sign + out;
}

// ---- the spill: the parser's state in a file, not in the process ----------------------

// What must wait between the dump's sections (every value, range, name: about a third of
// the dump's size) lives in an unlinked temporary file mapped shared: its pages belong to
// the kernel's page cache, which writes them to disk under memory pressure, and the parser
// unmaps those it has touched (madvise DONTNEED) whenever they pass a budget
// (TLVIEW_XLA_SPILL_MB, default 32): peak RSS stays flat whatever the dump's size, at the
// cost of minor faults when a dropped page is touched again. TLVIEW_XLA_SPILL_MB=0, or
// no writable temporary directory, keeps everything on the heap.
struct Spill {
    static constexpr size_t kReserve = size_t(1) << 40;  // address space, never all used
    static constexpr size_t kGrow = size_t(64) << 20;    // the file grows in these steps
    static constexpr size_t kPage = 4096;
    int fd = -1, statm = -1;
    char* base = nullptr;
    size_t used = 0, length = 0, budget = 0;
    int64_t shared0 = 0;  // resident shared pages just after the last drop
    int64_t drops = 0;
    std::vector<void*> heap;  // without a file: every block, freed at the end

    Spill() {
        const char* mb = std::getenv("TLVIEW_XLA_SPILL_MB");
        double b = mb && *mb ? std::strtod(mb, nullptr) : 32.0;  // a fraction: tests
        budget = b > 0 ? std::max<size_t>(1, (size_t)(b * 1048576.0)) : 0;
        if (!budget) return;
        const char* dir = std::getenv("TMPDIR");
        std::string tmpl = std::string(dir && *dir ? dir : "/tmp") + "/tlview-xla-XXXXXX";
        fd = mkstemp(tmpl.data());
        if (fd < 0) return;
        unlink(tmpl.c_str());
        void* p = mmap(nullptr, kReserve, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE,
                       fd, 0);
        if (p == MAP_FAILED) { close(fd); fd = -1; return; }
        base = static_cast<char*>(p);
        madvise(base, kReserve, MADV_RANDOM);  // no read-ahead: lookups are scattered
        statm = open("/proc/self/statm", O_RDONLY);
        shared0 = resident_shared();
    }
    ~Spill() {
        if (base) munmap(base, kReserve);
        if (fd >= 0) close(fd);
        if (statm >= 0) close(statm);
        for (void* b : heap) std::free(b);
    }
    Spill(const Spill&) = delete;
    Spill& operator=(const Spill&) = delete;

    // zeroed bytes, 64-byte aligned; never freed one by one (all at the end)
    void* alloc(size_t bytes) {
        if (!base) {
            void* b = std::calloc(1, bytes ? bytes : 1);
            if (!b) throw std::bad_alloc();
            heap.push_back(b);
            return b;
        }
        size_t at = (used + 63) & ~size_t(63);
        if (at + bytes > length) {
            size_t want = (at + bytes + kGrow - 1) / kGrow * kGrow;
            // blocks reserved now: a full disk is this error, not a SIGBUS at a later write
            if (want > kReserve ||
                posix_fallocate(fd, (off_t)length, (off_t)(want - length)) != 0)
                throw std::runtime_error(
                    "no room for the XLA parser's spill file in the temporary directory "
                    "(TMPDIR; TLVIEW_XLA_SPILL_MB=0 keeps its state in memory)");
            length = want;
        }
        used = at + bytes;
        return base + at;
    }
    int64_t resident_shared() {
        char buf[128];
        ssize_t n = statm >= 0 ? pread(statm, buf, sizeof buf - 1, 0) : -1;
        if (n <= 0) return 0;
        buf[n] = 0;
        long long size = 0, res = 0, shared = 0;
        if (std::sscanf(buf, "%lld %lld %lld", &size, &res, &shared) != 3) return 0;
        return shared;
    }
    // called often (every few thousand lines): drop our pages once they pass the budget
    void trim() {
        if (!base) return;
        int64_t now = resident_shared();
        if ((now - shared0) * (int64_t)kPage < (int64_t)budget) return;
        madvise(base, (used + kPage - 1) & ~(kPage - 1), MADV_DONTNEED);
        ++drops;
        shared0 = resident_shared();
    }
};

// ---- flat columns in blocks -------------------------------------------------------------

// A growing column kept in blocks of 64K entries: no doubling (its slack and its copy at
// each growth would be most of the parser's memory at 1 GB). Blocks come from the spill
// (where given) else the heap.
template <class T>
struct Col {
    static constexpr size_t kShift = 16, kBlock = size_t(1) << kShift;
    std::vector<T*> blocks;
    size_t n = 0;
    Spill* sp = nullptr;
    Col() = default;
    Col(const Col&) = delete;
    Col& operator=(const Col&) = delete;
    ~Col() {
        if (!sp)
            for (T* b : blocks) delete[] b;
    }
    size_t size() const { return n; }
    T& operator[](size_t i) { return blocks[i >> kShift][i & (kBlock - 1)]; }
    const T& operator[](size_t i) const { return blocks[i >> kShift][i & (kBlock - 1)]; }
    void push_back(const T& x) {
        if ((n & (kBlock - 1)) == 0)
            blocks.push_back(sp ? static_cast<T*>(sp->alloc(sizeof(T) * kBlock)) : new T[kBlock]);
        T* slot = &(*this)[n++];
        new (slot) T(x);
    }
};

// A fixed-size zeroed array from the spill (else the heap), e.g. one entry per step.
template <class T>
struct Arr {
    T* p = nullptr;
    size_t n = 0;
    Spill* sp = nullptr;
    std::vector<T> own;  // without a spill
    void assign(size_t count) {
        n = count;
        if (sp) {
            p = static_cast<T*>(sp->alloc(sizeof(T) * (count ? count : 1)));
        } else {
            own.assign(count, T());
            p = own.data();
        }
    }
    size_t size() const { return n; }
    T& operator[](size_t i) { return p[i]; }
    const T& operator[](size_t i) const { return p[i]; }
};

template <class T>
struct Mapped {  // a zeroed array in its own anonymous mapping: freed, it goes back to the OS
    T* p = nullptr;       // (from malloc, a table freed as it grows would stay in a thread's
    size_t n = 0;         // arena, fragmented: tens of MB held after the parse)
    explicit Mapped(size_t count) : n(count) {
        void* m = mmap(nullptr, bytes(), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                       -1, 0);
        if (m == MAP_FAILED) throw std::bad_alloc();
        p = static_cast<T*>(m);
    }
    Mapped(Mapped&& o) noexcept : p(o.p), n(o.n) { o.p = nullptr; o.n = 0; }
    Mapped& operator=(Mapped&& o) noexcept {
        std::swap(p, o.p);
        std::swap(n, o.n);
        return *this;
    }
    Mapped(const Mapped&) = delete;
    ~Mapped() { if (p) munmap(p, bytes()); }
    size_t bytes() const { return sizeof(T) * (n ? n : 1); }
    size_t size() const { return n; }
    T& operator[](size_t i) { return p[i]; }
    const T& operator[](size_t i) const { return p[i]; }
};

// A hash table's slots: row + 1 (0: empty) and a byte of the key's hash, so that a probe
// reads a row's key only where that byte matches. They stay in memory: they are the
// random-access part of the state (in the spill, every lookup would fault a page back in).
struct Slots {
    Mapped<uint32_t> row;
    Mapped<uint8_t> fp;
    explicit Slots(size_t count = 1024) : row(count), fp(count) {}
    size_t size() const { return row.size(); }
    static uint8_t print(uint64_t h) { return (uint8_t)(h >> 56); }
};

// ---- interned strings: one arena, an open-addressing table ------------------------------

struct Pool {
    // names in blocks of 1 MB (a longer one gets a block of its own); id -> (where, length)
    static constexpr size_t kArena = size_t(1) << 20;
    std::vector<char*> arena;
    size_t used = kArena;  // bytes used in the last block
    Col<uint64_t> pos;     // block << 20 | offset
    Col<uint32_t> len;
    Slots table;           // id + 1; 0 empty
    Spill* sp = nullptr;
    Pool() = default;
    Pool(const Pool&) = delete;
    Pool& operator=(const Pool&) = delete;
    ~Pool() {
        if (!sp)
            for (char* b : arena) delete[] b;
    }
    void attach(Spill* s) { sp = pos.sp = len.sp = s; }
    size_t size() const { return pos.size(); }
    sv get(uint32_t id) const {
        uint64_t p = pos[id];
        return sv(arena[p >> 20] + (p & (kArena - 1)), len[id]);
    }
    static uint64_t hash(sv s) {  // 8 bytes a step
        uint64_t h = 0x9E3779B97F4A7C15ull ^ s.size();
        size_t i = 0;
        for (; i + 8 <= s.size(); i += 8) {
            uint64_t w;
            std::memcpy(&w, s.data() + i, 8);
            h = (h ^ w) * 0xff51afd7ed558ccdull;
            h ^= h >> 32;
        }
        uint64_t w = 0;
        std::memcpy(&w, s.data() + i, s.size() - i);
        h = (h ^ w) * 0xc4ceb9fe1a85ec53ull;
        return h ^ (h >> 29);
    }
    int64_t find(sv s) const {
        uint64_t h = hash(s);
        size_t mask = table.size() - 1, i = h & mask;
        uint8_t f = Slots::print(h);
        while (uint32_t t = table.row[i]) {
            if (table.fp[i] == f && get(t - 1) == s) return t - 1;
            i = (i + 1) & mask;
        }
        return -1;
    }
    uint32_t intern(sv s) {
        uint64_t h = hash(s);
        size_t mask = table.size() - 1, i = h & mask;
        uint8_t f = Slots::print(h);
        while (uint32_t t = table.row[i]) {
            if (table.fp[i] == f && get(t - 1) == s) return t - 1;
            i = (i + 1) & mask;
        }
        uint32_t id = (uint32_t)size();
        if (s.size() > kArena - used) {
            size_t b = std::max(kArena, s.size());
            arena.push_back(sp ? static_cast<char*>(sp->alloc(b)) : new char[b]);
            used = s.size() > kArena ? kArena : 0;
            pos.push_back((uint64_t)(arena.size() - 1) << 20);
        } else {
            pos.push_back(((uint64_t)(arena.size() - 1) << 20) | used);
        }
        std::memcpy(arena[pos[id] >> 20] + (pos[id] & (kArena - 1)), s.data(), s.size());
        if (used < kArena) used += s.size();
        len.push_back((uint32_t)s.size());
        table.row[i] = id + 1;
        table.fp[i] = f;
        if (size() * 8 > table.size() * 7) grow();  // probes cheap: see Slots
        return id;
    }
    void grow() {
        Slots t(table.size() * 2);
        size_t mask = t.size() - 1;
        for (uint32_t id = 0; id < size(); ++id) {  // the names in order: the arena read once
            if (sp && (id & 4095) == 0) sp->trim();
            uint64_t h = hash(get(id));
            size_t i = h & mask;
            while (t.row[i]) i = (i + 1) & mask;
            t.row[i] = id + 1;
            t.fp[i] = Slots::print(h);
        }
        table = std::move(t);
    }
};

// uint64 key -> uint32 value, open addressing (keys never removed).
struct U64Map {
    std::vector<uint64_t> keys = std::vector<uint64_t>(1024);
    std::vector<uint32_t> vals = std::vector<uint32_t>(1024);
    std::vector<uint8_t> used = std::vector<uint8_t>(1024);
    size_t n = 0;
    static uint64_t mix(uint64_t x) {
        x ^= x >> 33; x *= 0xff51afd7ed558ccdull; x ^= x >> 33; x *= 0xc4ceb9fe1a85ec53ull;
        return x ^ (x >> 33);
    }
    const uint32_t* find(uint64_t k) const {
        size_t mask = keys.size() - 1, i = mix(k) & mask;
        while (used[i]) {
            if (keys[i] == k) return &vals[i];
            i = (i + 1) & mask;
        }
        return nullptr;
    }
    void put(uint64_t k, uint32_t v) {  // insert or overwrite
        size_t mask = keys.size() - 1, i = mix(k) & mask;
        while (used[i]) {
            if (keys[i] == k) { vals[i] = v; return; }
            i = (i + 1) & mask;
        }
        used[i] = 1; keys[i] = k; vals[i] = v; ++n;
        if (n * 2 > keys.size()) grow();
    }
    void grow() {
        std::vector<uint64_t> k2(keys.size() * 2);
        std::vector<uint32_t> v2(keys.size() * 2);
        std::vector<uint8_t> u2(keys.size() * 2);
        size_t mask = k2.size() - 1;
        for (size_t j = 0; j < keys.size(); ++j) {
            if (!used[j]) continue;
            size_t i = mix(keys[j]) & mask;
            while (u2[i]) i = (i + 1) & mask;
            u2[i] = 1; k2[i] = keys[j]; v2[i] = vals[j];
        }
        keys.swap(k2); vals.swap(v2); used.swap(u2);
    }
};

inline uint64_t pair_key(uint32_t a, uint32_t b) { return ((uint64_t)a << 32) | b; }

// key -> row, where each row's key can be read back from the rows' own columns: the table
// holds only row numbers and a byte of hash (5 bytes a slot), so a million values cost a
// few MB here. Every row 0..rows-1 is put once, in order (a later row with the same key
// takes its place), so growing re-puts them in row order: the key columns read once, in
// order, not at random.
struct RowTable {
    Slots slots;
    size_t n = 0;
    uint32_t rows = 0;  // rows put so far
    Spill* sp = nullptr;
    std::function<uint64_t(uint32_t)> key_of;
    int64_t find(uint64_t k) const {
        uint64_t h = U64Map::mix(k);
        size_t mask = slots.size() - 1, i = h & mask;
        uint8_t f = Slots::print(h);
        while (uint32_t s = slots.row[i]) {
            if (slots.fp[i] == f && key_of(s - 1) == k) return s - 1;
            i = (i + 1) & mask;
        }
        return -1;
    }
    void put(uint64_t k, uint32_t row) {  // insert, or take the place of the same key
        if (row + 1 > rows) rows = row + 1;
        if (place(slots, k, row)) return;
        if (++n * 8 > slots.size() * 7) {
            Slots t(slots.size() * 2);
            for (uint32_t r = 0; r < rows; ++r) {
                if (sp && (r & 4095) == 0) sp->trim();
                place(t, key_of(r), r);
            }
            slots = std::move(t);
        }
    }
    // true when k was there (now row's)
    bool place(Slots& t, uint64_t k, uint32_t row) const {
        uint64_t h = U64Map::mix(k);
        size_t mask = t.size() - 1, i = h & mask;
        uint8_t f = Slots::print(h);
        while (uint32_t s = t.row[i]) {
            if (t.fp[i] == f && key_of(s - 1) == k) { t.row[i] = row + 1; return true; }
            i = (i + 1) & mask;
        }
        t.row[i] = row + 1;
        t.fp[i] = f;
        return false;
    }
};

// A column of non-negative numbers that nearly always fit 32 bits (ids, sizes, offsets,
// lines, steps): 4 bytes a row, the rare wider one kept aside.
struct Narrow {
    Col<uint32_t> v;
    std::unordered_map<uint32_t, int64_t> wide;
    static constexpr uint32_t kWide = 0xFFFFFFFFu;
    size_t size() const { return v.size(); }
    int64_t operator[](size_t i) const {
        uint32_t x = v[i];
        return x == kWide ? wide.at((uint32_t)i) : (int64_t)x;
    }
    void push_back(int64_t x) {
        if (x >= 0 && x < (int64_t)kWide) {
            v.push_back((uint32_t)x);
        } else {
            wide.emplace((uint32_t)v.size(), x);
            v.push_back(kWide);
        }
    }
};

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
        if (ok) { ok = false; why = std::string(what) + " at line " + std::to_string(n); }
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
                if (c == '\r' || c == 0) { bad(n, "CR or NUL"); return false; }
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
            if (starts(t, "HloLiveRange (max")) sec = Live;
            else if (starts(t, "Memory Space: ")) sec = Report;
            else if (starts(t, "BufferAssignment:") || starts(t, "Used values:") ||
                     starts(t, "Total bytes used: "))
                sec = Top;
            else if (sec == Live || sec == Peak || sec == Stack)
                sec = Top;
        } else if (sec == Live || sec == Peak) {
            sv r = lstrip(t);
            if (sec == Live && starts(r, "Live ranges at ")) sec = Peak;
            else if (sec == Peak && starts(r, "Stack trace breakdown")) sec = Stack;
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
        sv s = chunk;
        if (!pending.empty()) {
            joined = pending;
            joined.append(chunk);
            s = joined;
            pending.clear();
        }
        bool cut = false;
        size_t good = utf8_valid_prefix(s, &cut);
        if (good < s.size() && !cut) { bad(lines.number, "bad UTF-8"); return; }
        pending.assign(s.data() + good, s.size() - good);
        lines.feed(s.substr(0, good),
                   [&](int64_t n, sv t) { return line(n, t) && more(n, t); });
        if (lines.stopped) ok = false;
    }
    template <class F>
    void end_file(F&& more) {
        if (!pending.empty()) bad(lines.number, "a cut UTF-8 character");
        if (ok) lines.finish([&](int64_t n, sv t) { return line(n, t) && more(n, t); });
    }
};

// ---- shapes (ingest/xla_shapes.py) ------------------------------------------------------

struct Shape {
    std::string text;     // stripped
    bool array = false;   // dtype[dims]{layout}
    std::string dtype, dims, layout;
    bool has_layout = false;
    bool known = false;   // bytes known
    i128 bytes = 0;
};

int itemsize(sv d) {
    static const std::pair<const char*, int> T[] = {
        {"pred", 1}, {"s8", 1}, {"u8", 1}, {"s16", 2}, {"u16", 2}, {"s32", 4}, {"u32", 4},
        {"s64", 8}, {"u64", 8}, {"f16", 2}, {"bf16", 2}, {"f32", 4}, {"f64", 8}, {"c64", 8},
        {"c128", 16}, {"f8e5m2", 1}, {"f8e4m3fn", 1}, {"f8e4m3b11fnuz", 1}, {"f8e5m2fnuz", 1},
        {"f8e4m3fnuz", 1}, {"f8e4m3", 1}, {"f8e3m4", 1}, {"f8e8m0fnu", 1}, {"token", 0}};
    for (auto& p : T)
        if (d == p.first) return p.second;
    return -1;
}

// re.sub of a bracketed group with no nested brackets of its kind, left to right.
std::string drop_groups(sv s, const char* pairs) {
    std::string out;
    size_t i = 0;
    while (i < s.size()) {
        bool hit = false;
        for (const char* p = pairs; *p; p += 2) {
            if (s[i] != p[0]) continue;
            size_t j = i + 1;
            while (j < s.size() && s[j] != p[0] && s[j] != p[1]) ++j;
            if (j < s.size() && s[j] == p[1]) { i = j + 1; hit = true; }
            break;
        }
        if (!hit) out.push_back(s[i++]);
    }
    return out;
}

std::string drop_comments(sv t) {  // re.sub(r"/\*.*?\*/", "", t)
    std::string out;
    size_t i = 0;
    while (i < t.size()) {
        if (t[i] == '/' && i + 1 < t.size() && t[i + 1] == '*') {
            size_t e = t.find("*/", i + 2);
            if (e != sv::npos) { i = e + 2; continue; }
        }
        out.push_back(t[i++]);
    }
    return out;
}

int64_t top_level_count(sv inner) {
    if (blank(inner)) return 0;
    std::string flat = drop_groups(inner, "[]{}");
    while (flat.find('(') != std::string::npos) {
        std::string shorter = drop_groups(flat, "()");
        if (shorter == flat) break;
        flat.swap(shorter);
    }
    return (int64_t)std::count(flat.begin(), flat.end(), ',') + 1;
}

Shape parse_shape(sv text) {
    Shape sh;
    sv st = strip(text);
    sh.text = std::string(st);
    std::string tbuf;
    sv t = st;
    if (t.find("/*") != sv::npos) { tbuf = drop_comments(t); t = tbuf; }
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
    sv dtype = t.substr(0, i), dims = t.substr(i + 1, close - i - 1), rest = t.substr(close + 1);
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
            if (!num) { known = false; break; }
            i128 v = 0;
            for (char ch : d) v = v * 10 + (ch - '0');
            if (__builtin_mul_overflow(numel, v, &numel))
                throw std::runtime_error("a shape of more than 2**127 elements");
        }
        if (c == sv::npos) break;
        p = c + 1;
    }
    if (known) { sh.known = true; sh.bytes = numel * size; }
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

std::optional<std::string> instruction_shape(sv ins) {
    size_t eq = ins.find(" = ");
    if (eq == sv::npos) return std::nullopt;
    sv rest = ins.substr(eq + 3);
    if (!rest.empty() && rest[0] == '(') {
        int depth = 0;
        for (size_t i = 0; i < rest.size(); ++i) {
            if (rest[i] == '(') ++depth;
            else if (rest[i] == ')') {
                if (--depth == 0) return std::string(rest.substr(0, i + 1));
            }
        }
        return std::nullopt;
    }
    size_t sp = rest.find(' ');
    return std::string(sp == sv::npos ? rest : rest.substr(0, sp));
}

void parse_metadata(sv ins, Facts& f) {
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
                    if (j + 1 >= n) { j = n; break; }
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
std::optional<std::string> search_token(sv ins, sv prefix, char first, bool calls) {
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

std::optional<std::string> braced(sv t, size_t start) {
    int depth = 0;
    bool in_str = false;
    for (size_t i = start; i < t.size(); ++i) {
        char ch = t[i];
        if (in_str) {
            if (ch == '\\') ++i;
            else if (ch == '"') in_str = false;
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

void instruction_facts(sv ins, Facts& f) {
    f = Facts();
    f.empty = false;
    f.text = std::string(ins);
    auto shape = instruction_shape(ins);
    if (shape && !shape->empty()) { f.has_shape = true; f.shape = *shape; }
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
    void str(sv k, sv v) { key(k); put_json_string(s, v, true); }
    void num(sv k, i128 v) { key(k); s += i128_str(v); }
    void null(sv k) { key(k); s += "null"; }
    void yes(sv k) { key(k); s += "true"; }
    void close() { s.push_back('}'); }
};

void put_str_list(std::string& s, const std::vector<std::string>& v) {
    s.push_back('[');
    for (size_t i = 0; i < v.size(); ++i) {
        if (i) s.push_back(',');
        put_json_string(s, v[i], true);
    }
    s.push_back(']');
}

// ---- the parser -------------------------------------------------------------------------

struct Alloc {
    int64_t index, size;
    uint32_t kind;          // into Parser::kinds
    bool has_param = false;
    int64_t parameter = 0;
    int64_t param_shape = -1, param_index = -1, output_shape = -1;  // misc pool ids
};

struct Kind {
    std::vector<std::string> parts;
    std::string joined;  // ", "
    std::string slash;   // "/" or "temp"
    bool maybe_live_out = false;
};

enum : uint8_t { kPhi = 1, kEmitted = 2, kHasRange = 4 };

struct PeakValue {
    std::string name;
    int64_t bytes;
};

struct Parser {
    Spill spill;  // first: every column below may hold its blocks
    std::vector<std::string> paths, names;  // names: Path(p).name
    size_t file = 0;
    Pool strs;    // instruction and value names
    Pool misc;    // "{index}" texts, shapes, kinds' texts
    // -- live ranges (pass 1)
    bool have_live = false;
    int64_t schedule_end = 0;
    Col<uint32_t> sequence;
    Narrow sequence_lines;
    Col<int32_t> step_of;  // by name id: its step, -1 none
    RowTable range_of;             // (name, index) -> range row
    Col<uint32_t> r_name, r_index;
    Narrow r_start, r_end, r_line;
    Col<uint8_t> r_taken;
    bool has_peak = false;
    int64_t peak_step = 0;
    const char* peak_form = nullptr;
    std::vector<PeakValue> peak_values;
    std::vector<std::string> stack_trace;
    std::optional<std::string> peak_unknown;
    // -- pass 2
    enum Sec { Start, Allocations, AfterTotal, Used, Live, Report } sec = Start;
    Col<Alloc> allocs;
    RowTable alloc_of;  // index -> slot
    std::vector<Kind> kinds;
    std::map<std::string, uint32_t> kind_ids;
    int64_t current_alloc = -1;
    // values, one row each
    RowTable value_of;  // (name, index) -> row
    RowTable row_of_id;
    Col<uint32_t> v_name, v_index, v_shape, v_alloc;
    Narrow v_id, v_color, v_offset, v_size, v_line;
    Col<int32_t> v_range;
    Col<uint8_t> v_flags;
    std::vector<std::optional<Shape>> shapes;  // parsed, by misc id
    // the used value being read
    bool in_entry = false;
    int64_t e_id = 0, e_line = 0;
    std::string e_name, e_index;
    std::vector<std::string> e_positions, e_uses;
    std::optional<std::string> e_instruction;
    int e_list = 0;  // 0 none, 1 positions, 2 uses
    Facts last;
    std::unordered_map<uint32_t, std::optional<i128>> ishape;  // instruction_shape_of bytes
    Arr<uint8_t> scheduled;
    std::optional<int64_t> total_bytes_used;
    std::vector<std::pair<std::string, int64_t>> report;
    std::optional<std::string> report_space;
    std::vector<std::string> unknown;
    bool seen_ba = false;
    // XLA's moment rule, summed per time: 64-bit sums, 128-bit once one would overflow
    Arr<int64_t> up, down;
    std::vector<i128> up_w, down_w;
    bool moment_wide = false;
    bool moment_unknown = false;
    int64_t number = 0;  // the last line read (for finish's error)
    // output
    EventBatch batch;
    std::vector<PyObject*> ready;  // exported batches (owned references)
    std::string note;

    Parser() {
        strs.attach(&spill);
        misc.attach(&spill);
        for (RowTable* t : {&range_of, &alloc_of, &value_of, &row_of_id}) t->sp = &spill;
        for (Narrow* c : {&sequence_lines, &r_start, &r_end, &r_line, &v_id, &v_color,
                          &v_offset, &v_size, &v_line})
            c->v.sp = &spill;
        for (Col<uint32_t>* c : {&sequence, &r_name, &r_index, &v_name, &v_index, &v_shape,
                                 &v_alloc})
            c->sp = &spill;
        step_of.sp = &spill;
        v_range.sp = &spill;
        r_taken.sp = v_flags.sp = &spill;
        allocs.sp = &spill;
        scheduled.sp = up.sp = down.sp = &spill;
        range_of.key_of = [this](uint32_t r) { return pair_key(r_name[r], r_index[r]); };
        alloc_of.key_of = [this](uint32_t r) { return (uint64_t)allocs[r].index; };
        value_of.key_of = [this](uint32_t r) { return pair_key(v_name[r], v_index[r]); };
        row_of_id.key_of = [this](uint32_t r) { return (uint64_t)v_id[r]; };
    }
    Parser(const Parser&) = delete;
    Parser& operator=(const Parser&) = delete;

    ParseError err(int64_t line, std::string msg) { return ParseError{line, std::move(msg)}; }

    uint32_t ticks = 0;
    void tick() {  // once a line or a row: the spill's budget checked now and then
        if ((++ticks & 1023) == 0) spill.trim();
    }

    // ---- pass 1: HloLiveRange -----------------------------------------------------
    enum LSec { LSearch, LHeader, LSeq, LRanges, LPeak, LStack, LAfter, LDone } lsec = LSearch;
    i128 cumulative = 0;
    int64_t l_number = 0;
    std::string live_path;

    // HloLiveRange \(max (\d+)\):\s*\Z
    bool live_header(sv t) {
        if (!starts(t, "HloLiveRange (max ")) return false;
        int64_t v;
        size_t n = digits(t, 18, &v);
        if (!n || t.substr(18 + n, 2) != "):" || !all_ws(t, 20 + n)) return false;
        schedule_end = v;
        return true;
    }

    bool live_line(int64_t number_, sv t) {  // false: the section is over
        l_number = number_;
        tick();
        if (lsec == LSearch) {
            if (live_header(t)) { lsec = LHeader; have_live = true; }
            return true;
        }
        if (blank(t)) return true;
        if (t[0] != ' ') {
            if (starts(t, "HloLiveRange (max"))
                throw err(number_, "a second HloLiveRange section");
            end_live();
            return false;
        }
        switch (lsec) {
            case LHeader:
                if (strip(t) != "InstructionSequence:")
                    throw err(number_, "expected '  InstructionSequence:'");
                lsec = LSeq;
                break;
            case LSeq: seq_line(number_, t); break;
            case LRanges: range_line(number_, t); break;
            case LPeak: peak_line(number_, t); break;
            case LStack:
                if (stack_trace.size() < kMaxStackLines) stack_trace.emplace_back(t);
                break;
            default: break;
        }
        return true;
    }

    void check_complete(int64_t n) {
        if ((int64_t)sequence.size() != schedule_end)
            throw err(n, "truncated live-range section: 'HloLiveRange (max " +
                             std::to_string(schedule_end) + ")' promises " +
                             std::to_string(schedule_end) + " instructions, found " +
                             std::to_string(sequence.size()));
    }

    void seq_line(int64_t n, sv t) {
        // \s+(\d+):(\S+)\s*\Z
        size_t i = 0;
        while (i < t.size() && is_ws(t[i])) ++i;
        int64_t idx;
        size_t nd = i ? digits(t, i, &idx) : 0;
        bool ok = nd > 0 && i + nd < t.size() && t[i + nd] == ':';
        size_t a = i + nd + 1, b = a;
        if (ok) {
            while (b < t.size() && !is_ws(t[b])) ++b;
            ok = b > a && all_ws(t, b);
        }
        if (ok) {
            if (idx != (int64_t)sequence.size())
                throw err(n, "expected instruction " + std::to_string(sequence.size()) +
                                 ", found " + std::to_string(idx));
            sv name = t.substr(a, b - a);
            uint32_t id = strs.intern(name);
            while (step_of.size() <= id) step_of.push_back(-1);
            if (step_of[id] >= 0) throw err(n, "instruction " + std::string(name) +
                                                   " scheduled twice");
            step_of[id] = (int32_t)sequence.size();
            sequence.push_back(id);
            sequence_lines.push_back(n);
        } else if (strip(t) == "BufferLiveRange:") {
            check_complete(n);
            lsec = LRanges;
        } else {
            throw err(n, "expected 'N:instruction' in the InstructionSequence");
        }
    }

    // \s+([^\s{}]+)(\{[\d,]*\})  -> name, index; returns position after, or npos
    static size_t name_index(sv t, size_t i, sv* name, sv* index) {
        size_t a = i;
        while (i < t.size() && !is_ws(t[i]) && t[i] != '{' && t[i] != '}') ++i;
        if (i == a) return sv::npos;
        *name = t.substr(a, i - a);
        if (i >= t.size() || t[i] != '{') { *index = sv(); return i; }
        size_t b = i + 1;
        while (b < t.size() && (is_digit(t[b]) || t[b] == ',')) ++b;
        if (b >= t.size() || t[b] != '}') { *index = sv(); return i; }
        *index = t.substr(i, b + 1 - i);
        return b + 1;
    }

    void range_line(int64_t n, sv t) {
        size_t i = 0;
        while (i < t.size() && is_ws(t[i])) ++i;
        sv name, index;
        size_t p = i ? name_index(t, i, &name, &index) : sv::npos;
        int64_t s = 0, e = 0;
        bool ok = p != sv::npos && !index.empty() && p < t.size() && t[p] == ':';
        if (ok) {
            size_t n1 = digits(t, p + 1, &s);
            ok = n1 && p + 1 + n1 < t.size() && t[p + 1 + n1] == '-';
            if (ok) {
                size_t n2 = digits(t, p + 2 + n1, &e);
                ok = n2 && all_ws(t, p + 2 + n1 + n2);
            }
        }
        if (ok) {
            if (!(0 <= s && s <= e && e <= schedule_end))
                throw err(n, "live range " + std::to_string(s) + "-" + std::to_string(e) +
                                 " outside 0-" + std::to_string(schedule_end));
            uint32_t nid = strs.intern(name), xid = misc.intern(index);
            uint64_t k = pair_key(nid, xid);
            if (range_of.find(k) >= 0)
                throw err(n, "value " + std::string(name) + std::string(index) +
                                 " has two live ranges");
            uint32_t row = (uint32_t)r_start.size();
            r_name.push_back(nid); r_index.push_back(xid);
            r_start.push_back(s); r_end.push_back(e); r_line.push_back(n);
            r_taken.push_back(0);
            range_of.put(k, row);
            return;
        }
        // \s+Live ranges at (-?\d+) \(peak\):\s*\Z
        if (i) {
            sv r = t.substr(i);
            if (starts(r, "Live ranges at ")) {
                size_t q = 15;
                bool neg = q < r.size() && r[q] == '-';
                int64_t k;
                size_t nd = digits(r, q + neg, &k);
                if (nd && r.substr(q + neg + nd, 8) == " (peak):" && all_ws(r, q + neg + nd + 8)) {
                    peak_step = neg ? -k : k;
                    has_peak = true;
                    lsec = LPeak;
                    return;
                }
            }
        }
        if (t.find("Peak memory could not be determined") != sv::npos) {
            peak_unknown = std::string(strip(t));
            lsec = LAfter;
            return;
        }
        throw err(n, "expected 'name{index}:start-end' in BufferLiveRange");
    }

    void peak_line(int64_t n, sv t) {
        size_t i = 0;
        while (i < t.size() && is_ws(t[i])) ++i;
        if (i) {
            // new: name{index}: N bytes (cumulative: M bytes)
            sv name, index;
            size_t p = name_index(t, i, &name, &index);
            if (p != sv::npos && !index.empty() && t.substr(p, 2) == ": ") {
                int64_t b, c;
                size_t nb = digits(t, p + 2, &b);
                size_t q = p + 2 + nb;
                if (nb && t.substr(q, 20) == " bytes (cumulative: ") {
                    size_t nc = digits(t, q + 20, &c);
                    size_t r = q + 20 + nc;
                    if (nc && t.substr(r, 7) == " bytes)" && all_ws(t, r + 7)) {
                        peak_form = "new";
                        cumulative += b;
                        if (c != cumulative)
                            throw err(n, "cumulative " + std::string(t.substr(q + 20, nc)) +
                                             " bytes, expected " + i128_str(cumulative) +
                                             " from the sizes listed above");
                        peak_values.push_back({std::string(name) + std::string(index), b});
                        return;
                    }
                }
            }
            // old: name: N bytes   (name without {}:)
            p = i;
            while (p < t.size() && !is_ws(t[p]) && t[p] != '{' && t[p] != '}' && t[p] != ':') ++p;
            name = t.substr(i, p - i);
            if (p > i && t.substr(p, 2) == ": ") {
                int64_t b;
                size_t nb = digits(t, p + 2, &b);
                if (nb && t.substr(p + 2 + nb, 6) == " bytes" && all_ws(t, p + 8 + nb)) {
                    peak_form = "old";
                    peak_values.push_back({std::string(name), b});
                    return;
                }
            }
        }
        if (starts(lstrip(t), "Stack trace breakdown")) {
            lsec = LStack;
            stack_trace.emplace_back(t);
            return;
        }
        throw err(n, "expected 'name{index}: N bytes' in the peak list");
    }

    void end_live() {
        if (lsec == LHeader || lsec == LSeq) {
            check_complete(l_number);
            throw err(l_number, "truncated live-range section: no BufferLiveRange");
        }
        lsec = LDone;
    }

    // ---- pass 2 ---------------------------------------------------------------------
    void keep_unknown(int64_t n, sv t) {
        if (unknown.size() < kMaxUnknown)
            unknown.push_back(names[file] + ":" + std::to_string(n) + ": " +
                              std::string(t.substr(0, 200)));
    }

    bool line(int64_t n, sv t) {  // false: stop reading this file (its live-range section)
        number = n;
        tick();
        if (t.empty() || blank(t)) return sec != Live;
        if (t[0] != ' ') {
            top_level(n, t);
            return sec != Live;
        }
        switch (sec) {
            case Allocations: value_line(n, t); break;
            case Used: used_line(n, t); break;
            case Report: break;
            default: keep_unknown(n, t);
        }
        return sec != Live;
    }

    void top_level(int64_t n, sv t) {
        if (in_entry) end_entry();
        int64_t v;
        if (starts(t, "allocation ")) {
            allocation_header(n, t);
        } else if (t[0] == '<' && sec == Used) {
            used_header(n, t);
        } else if (starts(t, "BufferAssignment:")) {
            if (seen_ba) throw err(n, "a second BufferAssignment section: one module per dump");
            seen_ba = true;
            sec = Allocations;
        } else if (starts(t, "Total bytes used: ") && digits(t, 18, &v)) {
            total_bytes_used = v;
            sec = AfterTotal;
        } else if (starts(t, "Used values:")) {
            sec = Used;
        } else if (starts(t, "HloLiveRange (max")) {
            sec = Live;
        } else if (starts(t, "Memory Space: ")) {
            report_space = std::string(strip(t.substr(14)));
            sec = Report;
        } else if (sec == Report && starts(t, "Total bytes: ") && digits(t, 13, &v)) {
            std::string space = report_space && !report_space->empty() ? *report_space
                                                                         : "default";
            bool found = false;
            for (auto& kv : report)
                if (kv.first == space) { kv.second = v; found = true; }
            if (!found) report.emplace_back(space, v);
        } else {
            keep_unknown(n, t);
        }
    }

    void allocation_header(int64_t n, sv t) {
        // allocation (\d+): size (\d+)(?:, (.*?))?:\s*\Z
        int64_t index = 0, size = 0;
        size_t ni = digits(t, 11, &index);
        bool ok = ni && t.substr(11 + ni, 7) == ": size ";
        size_t p = 11 + ni + 7, ns = 0;
        if (ok) { ns = digits(t, p, &size); ok = ns > 0; }
        sv rest;
        if (ok) {
            p += ns;
            size_t end = t.size();
            while (end > p && is_ws(t[end - 1])) --end;
            if (end > p && t[end - 1] == ':') {
                if (end - 1 == p) {
                    rest = sv();
                } else if (t.substr(p, 2) == ", " && end - 1 >= p + 2) {
                    rest = t.substr(p + 2, end - 1 - (p + 2));
                } else {
                    ok = false;
                }
            } else {
                ok = false;
            }
        }
        if (!ok) throw err(n, "expected 'allocation N: size S, kind...:'");
        if (sec != Allocations)
            throw err(n, "allocation line outside the BufferAssignment section");
        // shapes between bars; flags_text with each |...| replaced by ||
        std::vector<sv> shapes;
        std::string flags;
        size_t i = 0;
        while (i < rest.size()) {
            if (rest[i] == '|') {
                size_t j = rest.find('|', i + 1);
                if (j != sv::npos) {
                    shapes.push_back(rest.substr(i + 1, j - i - 1));
                    flags += "||";
                    i = j + 1;
                    continue;
                }
            }
            flags.push_back(rest[i++]);
        }
        Alloc a{index, size, 0};
        std::vector<std::string> kind;
        size_t q = 0;
        sv fv(flags);
        while (true) {
            size_t c = fv.find(',', q);
            sv part = strip(fv.substr(q, c == sv::npos ? sv::npos : c - q));
            if (!part.empty()) {
                int64_t pn;
                size_t np = starts(part, "parameter ") ? digits(part, 10, &pn) : 0;
                if (np) {
                    a.has_param = true;
                    a.parameter = pn;
                    a.param_shape = shapes.empty() ? int64_t{-1} : int64_t{misc.intern(shapes[0])};
                    a.param_index = -1;
                    size_t si = fv.find("at ShapeIndex {");
                    while (si != sv::npos) {
                        size_t b = si + 14, e = b + 1;
                        while (e < fv.size() && (is_digit(fv[e]) || fv[e] == ',')) ++e;
                        if (e < fv.size() && fv[e] == '}') {
                            a.param_index = misc.intern(fv.substr(b, e + 1 - b));
                            break;
                        }
                        si = fv.find("at ShapeIndex {", si + 1);
                    }
                    kind.emplace_back("parameter");
                } else if (starts(part, "output shape is")) {
                    a.output_shape = shapes.empty() ? int64_t{-1} : int64_t{misc.intern(shapes.back())};
                    kind.emplace_back("output");
                } else if (starts(part, "shape ||")) {
                } else {
                    kind.emplace_back(part);
                }
            }
            if (c == sv::npos) break;
            q = c + 1;
        }
        if (alloc_of.find((uint64_t)index) >= 0)
            throw err(n, "allocation " + std::to_string(index) + " listed twice");
        std::string kkey;
        for (auto& k : kind) { kkey += k; kkey.push_back('\0'); }
        auto it = kind_ids.find(kkey);
        if (it == kind_ids.end()) {
            Kind k;
            k.parts = kind;
            for (size_t j = 0; j < kind.size(); ++j) {
                if (j) { k.joined += ", "; k.slash += "/"; }
                k.joined += kind[j];
                k.slash += kind[j];
                if (kind[j] == "maybe-live-out") k.maybe_live_out = true;
            }
            if (k.slash.empty()) k.slash = "temp";
            it = kind_ids.emplace(kkey, (uint32_t)kinds.size()).first;
            kinds.push_back(std::move(k));
        }
        a.kind = it->second;
        current_alloc = (int64_t)allocs.size();
        allocs.push_back(a);
        alloc_of.put((uint64_t)index, (uint32_t)current_alloc);
    }

    // <(\d+) ([^\s{}<>]+)(\{[\d,]*\})?( \(phi\))?(?: @(\d+))?>  at t[i]; end in *end
    struct Ref {
        int64_t id = 0, color = 0;
        sv name, index;
        bool phi = false;
    };
    static bool value_ref(sv t, size_t i, Ref* r, size_t* end) {
        if (i >= t.size() || t[i] != '<') return false;
        size_t nd = digits(t, i + 1, &r->id);
        size_t p = i + 1 + nd;
        if (!nd || p >= t.size() || t[p] != ' ') return false;
        size_t a = ++p;
        while (p < t.size() && !is_ws(t[p]) && t[p] != '{' && t[p] != '}' && t[p] != '<' &&
               t[p] != '>')
            ++p;
        if (p == a) return false;
        r->name = t.substr(a, p - a);
        r->index = sv();
        if (p < t.size() && t[p] == '{') {
            size_t b = p + 1;
            while (b < t.size() && (is_digit(t[b]) || t[b] == ',')) ++b;
            if (b >= t.size() || t[b] != '}') return false;
            r->index = t.substr(p, b + 1 - p);
            p = b + 1;
        }
        r->phi = false;
        if (t.substr(p, 6) == " (phi)") { r->phi = true; p += 6; }
        r->color = 0;
        if (t.substr(p, 2) == " @") {
            int64_t c;
            size_t nc = digits(t, p + 2, &c);
            if (nc) { r->color = c; p += 2 + nc; }
        }
        if (p >= t.size() || t[p] != '>') return false;
        *end = p + 1;
        return true;
    }

    void used_header(int64_t n, sv t) {
        Ref r;
        size_t end;
        if (!value_ref(t, 0, &r, &end) || !all_ws(t, end))
            throw err(n, "expected a used value '<id name{index} @color>'");
        in_entry = true;
        e_id = r.id;
        e_name = std::string(r.name);
        e_index = r.index.empty() ? "{}" : std::string(r.index);
        e_line = n;
        e_positions.clear();
        e_uses.clear();
        e_instruction.reset();
        e_list = 0;
    }

    void value_line(int64_t n, sv t) {
        Ref r;
        size_t end;
        int64_t size = 0, offset = 0;
        bool ok = starts(t, " value: ") && value_ref(t, 8, &r, &end) &&
                  t.substr(end, 7) == " (size=";
        if (ok) {
            size_t ns = digits(t, end + 7, &size);
            size_t p = end + 7 + ns;
            ok = ns && t.substr(p, 8) == ",offset=";
            if (ok) {
                size_t no = digits(t, p + 8, &offset);
                p += 8 + no;
                ok = no && t.substr(p, 3) == "): ";
                end = p + 3;
            }
        }
        if (!ok) {
            if (starts(t, " value:"))
                throw err(n, "expected ' value: <id name{index} @color> (size=N,offset=M): "
                             "shape'");
            keep_unknown(n, t);
            return;
        }
        if (current_alloc < 0) throw err(n, "value line before any 'allocation N:' line");
        const Alloc& a = allocs[(size_t)current_alloc];
        if (offset + size > a.size)
            throw err(n, "value " + std::string(r.name) + " at offset " + std::to_string(offset) +
                             " size " + std::to_string(size) + " runs past allocation " +
                             std::to_string(a.index) + "'s " + std::to_string(a.size) +
                             " bytes");
        sv index = r.index.empty() ? sv("{}") : r.index;
        uint32_t nid = strs.intern(r.name), xid = misc.intern(index);
        uint64_t k = pair_key(nid, xid);
        if (value_of.find(k) >= 0)
            throw err(n, "value " + std::string(r.name) + std::string(index) +
                             " assigned twice");
        int32_t lr = -1;
        if (have_live) {
            lr = -2;
            int64_t rr = range_of.find(k);
            if (rr >= 0 && !r_taken[(size_t)rr]) { r_taken[(size_t)rr] = 1; lr = (int32_t)rr; }
        }
        uint32_t row = (uint32_t)v_id.size();
        v_name.push_back(nid); v_index.push_back(xid);
        v_shape.push_back(misc.intern(t.substr(end)));
        v_alloc.push_back((uint32_t)current_alloc);
        v_id.push_back(r.id); v_color.push_back(r.color);
        v_offset.push_back(offset); v_size.push_back(size); v_line.push_back(n);
        value_of.put(k, row);
        row_of_id.put((uint64_t)r.id, row);
        v_range.push_back(lr);
        v_flags.push_back((r.phi ? kPhi : 0) | (lr >= 0 ? kHasRange : 0));
    }

    void used_line(int64_t n, sv t) {
        if (!in_entry) { keep_unknown(n, t); return; }
        sv s = strip(t);
        if (starts(t, "  ") && e_list) {
            if (s != "(none)") (e_list == 1 ? e_positions : e_uses).emplace_back(s);
            return;
        }
        if (s == "positions:") e_list = 1;
        else if (s == "uses:") e_list = 2;
        else if (starts(s, "from instruction:")) {
            e_list = 0;
            e_instruction = std::string(strip(s.substr(17)));
        } else {
            keep_unknown(n, t);
        }
    }

    // ---- emitting ---------------------------------------------------------------------
    int64_t value_row_of(sv name, sv index) {
        int64_t nid = strs.find(name), xid = misc.find(index);
        if (nid < 0 || xid < 0) return -1;
        return value_of.find(pair_key((uint32_t)nid, (uint32_t)xid));
    }

    const Shape& shape_of(uint32_t id) {
        if (shapes.size() <= id) shapes.resize(misc.size());
        if (!shapes[id]) shapes[id] = parse_shape(misc.get(id));
        return *shapes[id];
    }

    std::optional<i128> instruction_bytes(sv name) {
        int64_t row = value_row_of(name, "{}");
        if (row >= 0) return (i128)v_size[(size_t)row];
        int64_t nid = strs.find(name);
        if (nid < 0) return std::nullopt;
        auto it = ishape.find((uint32_t)nid);
        if (it == ishape.end()) return std::nullopt;
        return it->second;
    }

    void end_entry() {
        in_entry = false;
        e_list = 0;
        const Facts* facts = nullptr;
        static const Facts none;
        if (e_instruction) {
            if (last.empty || last.text != *e_instruction) instruction_facts(*e_instruction, last);
            facts = &last;
            if (value_row_of(e_name, "{}") < 0) {
                uint32_t nid = strs.intern(e_name);
                if (!ishape.count(nid)) {
                    std::optional<i128> b;
                    if (last.has_shape) {
                        Shape sh = parse_shape(last.shape);
                        if (sh.known) b = sh.bytes;
                    }
                    ishape.emplace(nid, b);
                }
            }
            int64_t nid = strs.find(e_name);
            if (nid >= 0 && (size_t)nid < step_of.size() && step_of[(size_t)nid] >= 0) {
                int32_t step = step_of[(size_t)nid];
                if (!scheduled[(size_t)step]) scheduled_node((uint32_t)nid, step, &last);
            }
        }
        int64_t row = row_of_id.find((uint64_t)e_id);
        if (row < 0) {
            keep_unknown_at(e_line, "used value <" + std::to_string(e_id) + " " + e_name +
                                        e_index + "> is in no allocation");
            return;
        }
        value_events((uint32_t)row, facts ? facts : &none, true);
    }

    void keep_unknown_at(int64_t n, const std::string& t) { keep_unknown(n, t); }

    void flush_if_full() {
        if (batch.rows >= kBatchRows || batch.text_bytes() >= kBatchText) flush();
    }
    void flush() {
        if (!batch.rows) return;
        PyGILState_STATE g = PyGILState_Ensure();
        PyObject* b = batch.export_py();
        PyGILState_Release(g);
        if (!b) throw std::runtime_error("exporting a batch failed");
        ready.push_back(b);
        batch.clear();
    }

    void scheduled_node(uint32_t nid, int32_t step, const Facts* f) {
        scheduled[(size_t)step] = 1;
        EventBatch& B = batch;
        B.kind.set("node_scheduled");
        B.step.set(step);
        B.node.set(strs.get(nid));
        if (f && f->has_opcode) B.node_class.set(f->opcode); else B.node_class.set_null();
        B.reads.begin_list(); B.reads.end_list();
        B.writes.begin_list(); B.writes.end_list();
        B.line.set(sequence_lines[(size_t)step]);
        if (f && !f->empty) {
            std::string& s = B.attrs.begin();
            Obj o(s);
            o.str("instruction", f->text);
            if (f->has_shape) o.str("shape", f->shape);
            for (int m = 0; m < 4; ++m)
                if (f->meta[m]) o.str(kMetaKeys[m], *f->meta[m]);
            if (f->meta[4]) o.str("stack_frame_id", *f->meta[4]);
            if (f->fusion_kind) o.str("fusion_kind", *f->fusion_kind);
            if (f->calls) o.str("calls", *f->calls);
            if (f->backend_config) o.str("backend_config", *f->backend_config);
            o.close();
            B.attrs.commit();
        } else {
            B.attrs.set_null();
        }
        B.end_row();
        flush_if_full();
    }

    void place(i128* dummy, int64_t start, int64_t end, const std::optional<i128>& ib) {
        (void)dummy;
        if (!ib) moment_unknown = true;
        else if (!moment_unknown) {
            size_t a = (size_t)start, b = (size_t)end + 1;
            int64_t x, y;
            if (!moment_wide && (*ib > INT64_MAX || __builtin_add_overflow(up[a], (int64_t)*ib, &x) ||
                                 __builtin_add_overflow(down[b], (int64_t)*ib, &y))) {
                up_w.assign(up.p, up.p + up.n);
                down_w.assign(down.p, down.p + down.n);
                up.n = down.n = 0;
                moment_wide = true;
            }
            if (moment_wide) { up_w[a] += *ib; down_w[b] += *ib; }
            else { up[a] = x; down[b] = y; }
        }
    }

    static void put_ib(Obj& o, const std::optional<i128>& ib) {
        if (ib) o.num("instruction_bytes", *ib); else o.null("instruction_bytes");
    }

    void value_events(uint32_t row, const Facts* f, bool entry) {
        std::string& s = batch.attrs.begin();
        Obj o(s);
        if (!f->empty) {
            if (f->meta[0]) o.str("op_type", *f->meta[0]);
            if (f->meta[1]) o.str("op_name", *f->meta[1]);
            if (f->meta[2]) {
                if (f->meta[3] && !f->meta[3]->empty())
                    o.str("source", *f->meta[2] + ":" + *f->meta[3]);
                else
                    o.str("source", *f->meta[2]);
            }
        }
        if (entry) {
            if (e_positions.size() > 1) { o.key("positions"); put_str_list(s, e_positions); }
            o.key("uses");
            put_str_list(s, e_uses);
        }
        int32_t lr = v_range[row];
        v_flags[row] |= kEmitted;
        bool ranged = have_live && lr >= 0;
        int64_t start = 0, end = 0;
        if (!ranged) {
            if (have_live) o.yes("no_live_range");
        } else {
            start = r_start[(size_t)lr];
            end = r_end[(size_t)lr];
            auto ib = instruction_bytes(strs.get(v_name[row]));
            put_ib(o, ib);
            place(nullptr, start, end, ib);
        }
        allocated(row, ranged, start, o);
        if (ranged) {
            batch.kind.set("buffer_freed");
            batch.step.set(end);
            buffer_key(row);
            batch.reason.set("live range end");
            batch.end_row();
        }
        flush_if_full();
    }

    void buffer_key(uint32_t row) {
        std::string& b = batch.buffer.begin();
        sv nm = strs.get(v_name[row]), ix = misc.get(v_index[row]);
        b.append(nm.data(), nm.size());
        b.append(ix.data(), ix.size());
        batch.buffer.commit();
    }

    // the attrs object `o` is open in batch.attrs: finish it and the row
    void allocated(uint32_t row, bool has_step, int64_t step, Obj& o) {
        const Alloc& a = allocs[v_alloc[row]];
        const Kind& k = kinds[a.kind];
        o.num("value_id", v_id[row]);
        o.num("allocation_size", a.size);
        o.str("allocation_kind", k.joined);
        if (v_flags[row] & kPhi) o.yes("phi");
        if (v_color[row]) o.num("color", v_color[row]);
        if (a.has_param) {
            o.num("parameter", a.parameter);
            if (a.param_shape >= 0) o.str("parameter_shape", misc.get((uint32_t)a.param_shape));
            else o.null("parameter_shape");
            if (a.param_index >= 0) o.str("parameter_index", misc.get((uint32_t)a.param_index));
            else o.null("parameter_index");
        }
        if (a.output_shape >= 0) o.str("output_shape", misc.get((uint32_t)a.output_shape));
        if (k.maybe_live_out) o.yes("maybe_live_out");
        o.close();
        EventBatch& B = batch;
        B.attrs.commit();  // attrs began before the other columns of this row: fine, see pad
        B.kind.set("buffer_allocated");
        if (has_step) B.step.set(step); else B.step.set_null();
        buffer_key(row);
        B.bytes.set(v_size[row]);
        B.node.set(strs.get(v_name[row]));
        const Shape& sh = shape_of(v_shape[row]);
        if (sh.has_layout) B.layout.set(sh.layout); else B.layout.set_null();
        if (sh.array) { B.dtype.set(sh.dtype); B.shape.set(sh.dims); }
        else { B.dtype.set_null(); B.shape.set(sh.text); }
        B.is_input.set(false);
        B.allocation.set(a.index);
        B.offset.set(v_offset[row]);
        B.line.set(v_line[row]);
        B.end_row();
    }

    void unallocated_events(uint32_t r) {
        sv name = strs.get(r_name[r]);
        auto ib = instruction_bytes(name);
        place(nullptr, r_start[r], r_end[r], ib);
        EventBatch& B = batch;
        for (int pass = 0; pass < 2; ++pass) {
            std::string& b = B.buffer.begin();
            b.append(name.data(), name.size());
            sv ix = misc.get(r_index[r]);
            b.append(ix.data(), ix.size());
            B.buffer.commit();
            if (pass == 0) {
                B.kind.set("buffer_allocated");
                B.step.set(r_start[r]);
                B.bytes.set_null();
                B.node.set(name);
                B.size_expr.set("unknown: no allocation line for this value");
                B.is_input.set(false);
                B.line.set(r_line[r]);
                std::string& s = B.attrs.begin();
                Obj o(s);
                o.yes("no_allocation");
                put_ib(o, ib);
                o.close();
                B.attrs.commit();
            } else {
                B.kind.set("buffer_freed");
                B.step.set(r_end[r]);
                B.reason.set("live range end");
            }
            B.end_row();
        }
        flush_if_full();
    }

    // ---- the end ----------------------------------------------------------------------
    void start_pass2() {
        scheduled.assign(sequence.size());
        up.assign(have_live ? (size_t)schedule_end + 2 : 0);
        down.assign(up.size());
    }

    // The end, in steps: each call emits up to a few batches of what was left unmatched
    // (hand them over before the next: at 1 GB there are half a million such rows) and
    // returns true once the note is built.
    int fin_stage = 0;
    size_t fin_i = 0;
    std::vector<uint32_t> without;
    bool finish() {
        if (fin_stage == 0) finish_start();
        static const Facts none;
        auto full = [&] { return ready.size() >= 2; };
        if (fin_stage == 1) {
            for (; fin_i < v_id.size() && !full(); ++fin_i) {
                tick();
                if (!(v_flags[fin_i] & kEmitted)) value_events((uint32_t)fin_i, &none, false);
            }
            if (fin_i < v_id.size()) return false;
            fin_stage = have_live ? 2 : 4;
            fin_i = 0;
        }
        if (fin_stage == 2) {
            for (; fin_i < sequence.size() && !full(); ++fin_i) {
                tick();
                if (!scheduled[fin_i]) scheduled_node(sequence[fin_i], (int32_t)fin_i, nullptr);
            }
            if (fin_i < sequence.size()) return false;
            fin_stage = 3;
            fin_i = 0;
        }
        if (fin_stage == 3) {
            for (; fin_i < r_start.size() && !full(); ++fin_i) {
                tick();
                if (r_taken[fin_i]) continue;
                without.push_back((uint32_t)fin_i);
                unallocated_events((uint32_t)fin_i);
            }
            if (fin_i < r_start.size()) return false;
            fin_stage = 4;
        }
        flush();
        build_note(without);
        return true;
    }

    void finish_start() {
        if (in_entry) end_entry();
        if (!seen_ba) {
            std::string where;
            const std::string& nm = names[file];
            static const char* const kSuffixes[] = {
                "-buffer-assignment.txt", "-buffer-assignment-values.txt", "-live-range.txt",
                "-memory-usage-report.txt"};
            std::string base = nm;
            if (base.size() > 3 && base.compare(base.size() - 3, 3, ".gz") == 0)
                base.erase(base.size() - 3);
            for (const char* suf : kSuffixes) {
                size_t L = std::strlen(suf);
                if (base.size() >= L && base.compare(base.size() - L, L, suf) == 0) {
                    where = " (its sibling " + base.substr(0, base.size() - L) +
                            "-buffer-assignment.txt is missing)";
                    break;
                }
            }
            throw err(number, "no 'BufferAssignment:' section: expected an XLA "
                              "buffer-assignment dump" + where);
        }
        fin_stage = 1;
        fin_i = 0;
    }

    std::string some(const std::vector<std::string>& names_) {
        std::string out;
        for (size_t i = 0; i < names_.size() && i < (size_t)kMaxListed; ++i) {
            if (i) out += ", ";
            out += names_[i];
        }
        if (names_.size() > (size_t)kMaxListed)
            out += " and " + std::to_string(names_.size() - kMaxListed) + " more";
        return out;
    }

    void build_note(const std::vector<uint32_t>& without) {
        std::vector<std::string> warnings;
        std::string& s = note;
        Obj o(s);
        if (total_bytes_used) o.num("total_bytes_used", *total_bytes_used);
        else o.null("total_bytes_used");
        o.num("n_allocations", (i128)allocs.size());
        o.num("n_values", (i128)v_id.size());
        if (!report.empty()) {
            o.key("memory_usage_report");
            Obj r(s);
            for (auto& kv : report) r.num(kv.first, kv.second);
            r.close();
        }
        if (!unknown.empty()) { o.key("unknown_lines"); put_str_list(s, unknown); }
        if (!have_live) {
            o.str("liveness", "unknown");
            warnings.push_back("no HloLiveRange section: allocations ingested, liveness "
                               "unknown (no schedule, no memory curve)");
            o.key("warnings");
            put_str_list(s, warnings);
            o.close();
            return;
        }
        o.num("schedule_end", schedule_end);
        if (!without.empty()) {
            std::vector<std::string> keys;
            for (uint32_t r : without)
                keys.push_back(std::string(strs.get(r_name[r])) + std::string(misc.get(r_index[r])));
            o.key("live_range_without_allocation");
            put_str_list(s, keys);
            warnings.push_back(std::to_string(keys.size()) + " values in BufferLiveRange have no "
                               "allocation line (size unknown, not counted): " + some(keys));
        }
        std::vector<std::string> no_range;
        std::map<std::string, int64_t> by_kind;
        for (uint32_t row = 0; row < v_id.size(); ++row) {
            tick();
            if (v_flags[row] & kHasRange) continue;
            no_range.push_back(std::string(strs.get(v_name[row])) +
                               std::string(misc.get(v_index[row])));
            by_kind[kinds[allocs[v_alloc[row]].kind].slash] += 1;
        }
        if (!no_range.empty()) {
            o.key("allocation_without_live_range");
            put_str_list(s, no_range);
            std::string bk;
            for (auto& kv : by_kind) {
                if (!bk.empty()) bk += ", ";
                bk += std::to_string(kv.second) + " " + kv.first;
            }
            warnings.push_back(std::to_string(no_range.size()) + " allocated values have no live "
                               "range (" + bk + "; values of called computations): liveness "
                               "unknown, not counted: " + some(no_range));
        }
        if (peak_unknown) warnings.push_back("XLA: " + *peak_unknown);
        if (has_peak) peak_warnings(o, warnings);
        if (!warnings.empty()) { o.key("warnings"); put_str_list(s, warnings); }
        o.close();
    }

    int64_t moment() {
        i128 usage = 0, peak = 0;
        int64_t m = 0;
        size_t n = moment_wide ? up_w.size() : up.size();
        for (size_t t = 0; t < n; ++t) {
            tick();
            usage += moment_wide ? up_w[t] : (i128)up[t];
            if (peak < usage) { peak = usage; m = (int64_t)t; }
            usage -= moment_wide ? down_w[t] : (i128)down[t];
        }
        return m;
    }

    // tlview's rule (xla_peaks.union_curve_columns) over the placed values: the first step
    // of the maximum, the maximum, and the bytes at XLA's stated step; sums in T.
    struct CurvePeak {
        bool any = false;
        size_t step = 0;
        i128 peak = 0, at_k = 0;
    };
    template <class T>
    CurvePeak union_peak(const Arr<uint32_t>& rows) {
        size_t n_steps = sequence.size();
        Arr<T> delta;  // zeroed
        delta.sp = &spill;
        delta.assign(n_steps + 1);
        size_t i = 0;
        std::vector<int64_t> bounds;
        std::vector<std::pair<int64_t, int64_t>> spans;
        while (i < rows.size()) {
            size_t j = i;
            while (j < rows.size() && v_alloc[rows[j]] == v_alloc[rows[i]]) ++j;
            bounds.clear();
            for (size_t k = i; k < j; ++k) {
                tick();
                bounds.push_back(v_offset[rows[k]]);
                bounds.push_back(v_offset[rows[k]] + v_size[rows[k]]);
            }
            std::sort(bounds.begin(), bounds.end());
            bounds.erase(std::unique(bounds.begin(), bounds.end()), bounds.end());
            for (size_t b = 0; b + 1 < bounds.size(); ++b) {
                int64_t lo = bounds[b], hi = bounds[b + 1];
                spans.clear();
                for (size_t k = i; k < j; ++k) {
                    tick();
                    uint32_t r = rows[k];
                    if (v_offset[r] <= lo && v_offset[r] + v_size[r] >= hi) {
                        int32_t lr = v_range[r];
                        spans.emplace_back(r_start[(size_t)lr], r_end[(size_t)lr]);
                    }
                }
                std::sort(spans.begin(), spans.end());
                int64_t ms = 0, me = 0;
                bool open = false;
                auto add = [&](int64_t s0, int64_t e0) {
                    if ((size_t)s0 < n_steps) {
                        delta[(size_t)s0] += (T)(hi - lo);
                        delta[std::min((size_t)e0 + 1, n_steps)] -= (T)(hi - lo);
                    }
                };
                for (auto& sp : spans) {
                    if (open && sp.first <= me + 1) {
                        me = std::max(me, sp.second);
                    } else {
                        if (open) add(ms, me);
                        ms = sp.first; me = sp.second; open = true;
                    }
                }
                if (open) add(ms, me);
            }
            i = j;
        }
        CurvePeak out;
        T live = 0;
        for (size_t t = 0; t < n_steps; ++t) {
            tick();
            live += delta[t];
            if (!out.any || (i128)live > out.peak) { out.any = true; out.peak = live; out.step = t; }
            if (peak_step >= 0 && (size_t)peak_step == t) out.at_k = live;
        }
        return out;
    }

    CurvePeak union_curve_peak() {
        auto placed = [&](uint32_t row) {
            return (v_flags[row] & kHasRange) && (v_flags[row] & kEmitted) && v_size[row] > 0;
        };
        size_t n = 0;
        for (uint32_t row = 0; row < v_id.size(); ++row) n += (tick(), placed(row));
        Arr<uint32_t> rows;  // in the spill: one entry a value
        rows.sp = &spill;
        rows.assign(n);
        i128 total = 0;
        n = 0;
        for (uint32_t row = 0; row < v_id.size(); ++row)
            if (tick(), placed(row)) {
                rows[n++] = row;
                total += v_size[row];
            }
        std::stable_sort(rows.p, rows.p + rows.n,
                         [&](uint32_t a, uint32_t b) { return v_alloc[a] < v_alloc[b]; });
        return total <= (i128)INT64_MAX ? union_peak<int64_t>(rows) : union_peak<i128>(rows);
    }

    void peak_warnings(Obj& o, std::vector<std::string>& out) {
        std::string& s = note;
        i128 stated = 0;
        for (auto& p : peak_values) stated += p.bytes;
        o.key("xla_peak");
        {
            Obj x(s);
            x.num("step", peak_step);
            if (peak_form) x.str("form", peak_form); else x.null("form");
            x.num("bytes", stated);
            x.key("values");
            s.push_back('[');
            for (size_t i = 0; i < peak_values.size(); ++i) {
                if (i) s.push_back(',');
                Obj v(s);
                v.str("name", peak_values[i].name);
                v.num("bytes", peak_values[i].bytes);
                v.close();
            }
            s.push_back(']');
            if (!stack_trace.empty()) { x.key("stack_trace"); put_str_list(s, stack_trace); }
            x.close();
        }
        if (!moment_unknown) {
            int64_t m = moment();
            if (m != peak_step)
                out.push_back("XLA's moment rule recomputed from the live ranges gives step " +
                              std::to_string(m) + ", but the dump states " +
                              std::to_string(peak_step));
        }
        CurvePeak cp = union_curve_peak();
        if (cp.any && cp.peak != cp.at_k)
            out.push_back("XLA states its peak at step " + std::to_string(peak_step) + " (" +
                          commas(stated) + " bytes listed, " + commas(cp.at_k) +
                          " live by tlview's rule); the true maximum is " + commas(cp.peak) +
                          " bytes at step " + std::to_string(cp.step));
    }
};

// ---- Python glue --------------------------------------------------------------------------

struct PyXla {
    PyObject_HEAD
    Parser* p;
    Scan* scan;
    Lines* lines;
    PyObject* path;  // the current file's path (for errors)
    bool failed;
    // pass 1 runs inside the scan: its error waits until the scan says the dump is plain
    bool p1_active;
    bool p1_failed;
    ParseError* p1_error;
    std::string p1_path;
};

template <class F>
PyObject* guarded(PyXla* self, F&& body) {
    if (!run_released(self->path, self->failed, body)) return nullptr;
    // hand over the exported batches
    Parser& P = *self->p;
    PyObject* list = PyList_New(0);
    bool ok = list != nullptr;
    for (PyObject* b : P.ready) {
        if (ok && PyList_Append(list, b) < 0) ok = false;
        Py_DECREF(b);
    }
    P.ready.clear();
    if (!ok) {
        Py_XDECREF(list);
        return nullptr;
    }
    return list;
}

int init(PyXla* self, PyObject* args, PyObject*) {
    PyObject *paths, *names;
    if (!PyArg_ParseTuple(args, "O!O!", &PyList_Type, &paths, &PyList_Type, &names)) return -1;
    delete self->p;
    delete self->scan;
    delete self->lines;
    delete self->p1_error;
    self->p = new Parser();
    self->scan = new Scan();
    self->lines = new Lines();
    self->p1_error = new ParseError{0, {}};
    self->p1_path.clear();
    self->failed = false;
    self->p1_active = false;
    self->p1_failed = false;
    for (int k = 0; k < 2; ++k) {
        PyObject* l = k ? names : paths;
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(l); ++i) {
            Py_ssize_t n;
            const char* s = PyUnicode_AsUTF8AndSize(PyList_GET_ITEM(l, i), &n);
            if (!s) return -1;
            (k ? self->p->names : self->p->paths).emplace_back(s, (size_t)n);
        }
    }
    Py_INCREF(Py_None);
    Py_XSETREF(self->path, Py_None);
    return 0;
}

PyObject* new_xla(PyTypeObject* type, PyObject*, PyObject*) {
    PyXla* self = (PyXla*)type->tp_alloc(type, 0);
    if (self) new (&self->p1_path) std::string();
    return (PyObject*)self;
}

void dealloc(PyXla* self) {
    if (self->p)
        for (PyObject* x : self->p->ready) Py_DECREF(x);
    delete self->p;
    delete self->scan;
    delete self->lines;
    delete self->p1_error;
    self->p1_path.~basic_string();
    Py_XDECREF(self->path);
    Py_TYPE(self)->tp_free((PyObject*)self);
}

// begin(path, index, pass): a file starts (pass 1 with the scan; pass 2: the events)
PyObject* begin(PyXla* self, PyObject* args) {
    PyObject* path;
    Py_ssize_t index;
    int pass;
    if (!PyArg_ParseTuple(args, "Uni", &path, &index, &pass)) return nullptr;
    Py_INCREF(path);
    Py_XSETREF(self->path, path);
    *self->lines = Lines();
    Parser& P = *self->p;
    P.file = (size_t)index;
    if (pass == 1) {
        self->scan->begin_file();
        // Python's pass 1 reads files until one holds the section (or fails)
        self->p1_active = !P.have_live && !self->p1_failed;
        if (self->p1_active) P.lsec = Parser::LSearch;
    }
    Py_RETURN_NONE;
}

// pass 1 on one line, inside the scan; never stops the scan
bool pass1_line(PyXla* self, int64_t n, sv t) {
    if (!self->p1_active) return true;
    try {
        if (!self->p->live_line(n, t)) self->p1_active = false;
    } catch (const ParseError& e) {
        *self->p1_error = e;
        self->p1_failed = true;
        self->p1_active = false;
        self->p1_path = self->p->paths[self->p->file];
    }
    return true;
}

// feed1(chunk) -> bool: the scan and pass 1; False when the dump is not plain (stop)
PyObject* feed1(PyXla* self, PyObject* arg) {
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0) return nullptr;
    sv chunk(static_cast<const char*>(view.buf), (size_t)view.len);
    PyObject* r = guarded(self, [&] {
        self->scan->feed(chunk, [&](int64_t n, sv t) { return pass1_line(self, n, t); });
    });
    PyBuffer_Release(&view);
    if (!r) return nullptr;
    Py_DECREF(r);
    return PyBool_FromLong(self->scan->ok);
}

// end1() -> bool: the file's end in the scan and pass 1; False when not plain
PyObject* end1(PyXla* self, PyObject*) {
    PyObject* r = guarded(self, [&] {
        self->scan->end_file([&](int64_t n, sv t) { return pass1_line(self, n, t); });
        Parser& P = *self->p;
        if (self->p1_active && P.lsec != Parser::LSearch && P.lsec != Parser::LDone) {
            try {
                P.end_live();
            } catch (const ParseError& e) {
                *self->p1_error = e;
                self->p1_failed = true;
                self->p1_path = P.paths[P.file];
            }
        }
        self->p1_active = false;
    });
    if (!r) return nullptr;
    Py_DECREF(r);
    return PyBool_FromLong(self->scan->ok);
}

// verdict() -> None when this parser reads the dump, else why Python must; raises pass 1's
// error (an IngestError) when the dump is plain but its live-range section is bad
PyObject* verdict(PyXla* self, PyObject*) {
    if (!self->scan->ok) return py_str(self->scan->why);
    if (self->p1_failed) {
        PyObject* path = py_str(self->p1_path);
        if (!path) return nullptr;
        raise_parse_error(path, *self->p1_error);
        Py_DECREF(path);
        self->failed = true;
        return nullptr;
    }
    Py_RETURN_NONE;
}

PyObject* start2(PyXla* self, PyObject*) {
    self->p->start_pass2();
    Py_RETURN_NONE;
}

// feed2(chunk) -> (batches, more): pass 2
PyObject* feed2(PyXla* self, PyObject* arg) {
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0) return nullptr;
    sv chunk(static_cast<const char*>(view.buf), (size_t)view.len);
    PyObject* r = guarded(self, [&] {
        self->lines->feed(chunk, [&](int64_t n, sv t) { return self->p->line(n, t); });
    });
    PyBuffer_Release(&view);
    if (!r) return nullptr;
    return Py_BuildValue("(NO)", r, self->lines->stopped ? Py_False : Py_True);
}

PyObject* end2(PyXla* self, PyObject*) {
    return guarded(self, [&] {
        self->lines->finish([&](int64_t n, sv t) { return self->p->line(n, t); });
    });
}

// finish() -> (batches, note JSON text, or None: call again for more batches)
PyObject* finish(PyXla* self, PyObject*) {
    bool done = false;
    PyObject* r = guarded(self, [&] { done = self->p->finish(); });
    if (!r) return nullptr;
    if (!done) return Py_BuildValue("(NO)", r, Py_None);
    return Py_BuildValue("(NN)", r, py_str(self->p->note));
}

// stats() -> {"spill_bytes": the spill file's bytes in use (0: on the heap), "spill_drops"}
PyObject* stats(PyXla* self, PyObject*) {
    const Spill& sp = self->p->spill;
    return Py_BuildValue("{s:n,s:L}", "spill_bytes", (Py_ssize_t)(sp.base ? sp.used : 0),
                         "spill_drops", (long long)sp.drops);
}

PyMethodDef methods[] = {
    {"stats", (PyCFunction)stats, METH_NOARGS, "the spill's use: {spill_bytes, spill_drops}"},
    {"begin", (PyCFunction)begin, METH_VARARGS, "begin(path, index, pass): a file starts"},
    {"feed1", (PyCFunction)feed1, METH_O, "the scan and pass 1 (live ranges): False: not plain"},
    {"end1", (PyCFunction)end1, METH_NOARGS, "the scan and pass 1, end of file"},
    {"verdict", (PyCFunction)verdict, METH_NOARGS,
     "None, or why Python must read this dump; raises pass 1's error"},
    {"start2", (PyCFunction)start2, METH_NOARGS, "pass 2 begins"},
    {"feed2", (PyCFunction)feed2, METH_O, "pass 2: (batches, keep reading this file)"},
    {"end2", (PyCFunction)end2, METH_NOARGS, "pass 2, end of file: batches"},
    {"finish", (PyCFunction)finish, METH_NOARGS,
     "(batches, note JSON), or (batches, None): call again"},
    {nullptr, nullptr, 0, nullptr}};

PyTypeObject XlaType = {PyVarObject_HEAD_INIT(nullptr, 0)};

}  // namespace

int add_xla_buffer_assignment(PyObject* module) {
    return add_type(module, XlaType, "XlaBufferAssignment",
                    "XlaBufferAssignment(paths, names): an XLA dump's files to event columns",
                    sizeof(PyXla), (initproc)init, (destructor)dealloc, methods,
                    new_xla);
}

}  // namespace tlv
