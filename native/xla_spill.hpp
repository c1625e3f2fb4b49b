// Where the XLA reader keeps what it must hold between its passes: a spill file whose
// resident pages are dropped past a budget, flat columns in blocks over it, interned
// names in one arena, and the hash tables over them (xla_buffer_assignment.cpp).
#pragma once

#include "xla_text.hpp"

namespace tlv::xla {

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
        void* p =
            mmap(nullptr, kReserve, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, fd, 0);
        if (p == MAP_FAILED) {
            close(fd);
            fd = -1;
            return;
        }
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
            blocks.push_back(sp ? static_cast<T*>(sp->alloc(sizeof(T) * kBlock))
                                : new T[kBlock]);
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
    T* p = nullptr;  // (from malloc, a table freed as it grows would stay in a thread's
    size_t n = 0;  // arena, fragmented: tens of MB held after the parse)
    explicit Mapped(size_t count) : n(count) {
        void* m =
            mmap(nullptr, bytes(), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m == MAP_FAILED) throw std::bad_alloc();
        p = static_cast<T*>(m);
    }
    Mapped(Mapped&& o) noexcept : p(o.p), n(o.n) {
        o.p = nullptr;
        o.n = 0;
    }
    Mapped& operator=(Mapped&& o) noexcept {
        std::swap(p, o.p);
        std::swap(n, o.n);
        return *this;
    }
    Mapped(const Mapped&) = delete;
    ~Mapped() {
        if (p) munmap(p, bytes());
    }
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
    Col<uint64_t> pos;  // block << 20 | offset
    Col<uint32_t> len;
    Slots table;  // id + 1; 0 empty
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
        x ^= x >> 33;
        x *= 0xff51afd7ed558ccdull;
        x ^= x >> 33;
        x *= 0xc4ceb9fe1a85ec53ull;
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
            if (keys[i] == k) {
                vals[i] = v;
                return;
            }
            i = (i + 1) & mask;
        }
        used[i] = 1;
        keys[i] = k;
        vals[i] = v;
        ++n;
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
            u2[i] = 1;
            k2[i] = keys[j];
            v2[i] = vals[j];
        }
        keys.swap(k2);
        vals.swap(v2);
        used.swap(u2);
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
            if (t.fp[i] == f && key_of(s - 1) == k) {
                t.row[i] = row + 1;
                return true;
            }
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

}  // namespace tlv::xla
