// One device's trace in the snapshot reader (cuda_snapshot._Device: the trace part and
// the block-size replay), with the ordered containers the Python side reads back.
#pragma once

#include "snapshot_plain.hpp"

namespace tlv::snapshot {

// ---- ordered containers the Python side reads back ---------------------------------------

struct Counter {  // a collections.Counter's content, in first-seen order
    std::vector<std::pair<std::string, int64_t>> items;
    std::unordered_map<std::string, size_t> at;
    std::vector<std::pair<const std::string*, size_t>> by_ptr;  // interned text seen
    size_t add(const std::string& k) {
        auto it = at.find(k);
        if (it == at.end()) {
            at.emplace(k, items.size());
            items.emplace_back(k, 1);
            return items.size() - 1;
        }
        ++items[it->second].second;
        return it->second;
    }
    // `k` shown as `text` (the same interned text is always shown the same)
    void add(const std::string* k, const std::string& text) {
        for (auto& e : by_ptr)
            if (e.first == k) {
                ++items[e.second].second;
                return;
            }
        size_t at_k = add(text);
        if (by_ptr.size() < 64) by_ptr.emplace_back(k, at_k);
    }
    bool empty() const { return items.empty(); }
};

// An int64 -> V hash map, open addressing (linear probing, backward-shift deletion): no
// allocation per entry, for the replay's per-entry lookups.
template <class V>
struct I64Map {
    struct Slot {
        int64_t key;
        V val;
        bool used;
    };
    std::vector<Slot> slots;
    size_t count = 0, mask = 0;
    static size_t hash(int64_t k) {
        uint64_t x = (uint64_t)k;
        x ^= x >> 33;
        x *= 0xff51afd7ed558ccdULL;
        x ^= x >> 33;
        return (size_t)x;
    }
    void grow() {
        std::vector<Slot> old = std::move(slots);
        slots.assign(old.empty() ? 64 : old.size() * 2, Slot{0, V{}, false});
        mask = slots.size() - 1;
        count = 0;
        for (auto& sl : old)
            if (sl.used) *put(sl.key) = sl.val;
    }
    V* get(int64_t k) {
        if (!count) return nullptr;
        for (size_t i = hash(k) & mask;; i = (i + 1) & mask) {
            if (!slots[i].used) return nullptr;
            if (slots[i].key == k) return &slots[i].val;
        }
    }
    const V* get(int64_t k) const { return const_cast<I64Map*>(this)->get(k); }
    // the value at k, made (V{}) if new; `fresh` says which
    V* put(int64_t k, bool* fresh = nullptr) {
        if ((count + 1) * 4 > slots.size() * 3) grow();
        for (size_t i = hash(k) & mask;; i = (i + 1) & mask) {
            if (!slots[i].used) {
                slots[i] = Slot{k, V{}, true};
                ++count;
                if (fresh) *fresh = true;
                return &slots[i].val;
            }
            if (slots[i].key == k) {
                if (fresh) *fresh = false;
                return &slots[i].val;
            }
        }
    }
    bool erase(int64_t k) {
        if (!count) return false;
        size_t i = hash(k) & mask;
        for (;; i = (i + 1) & mask) {
            if (!slots[i].used) return false;
            if (slots[i].key == k) break;
        }
        for (size_t j = i;;) {  // shift back the entries that probed past i
            j = (j + 1) & mask;
            if (!slots[j].used) break;
            size_t home = hash(slots[j].key) & mask;
            if (((j - home) & mask) >= ((j - i) & mask)) {
                slots[i] = slots[j];
                i = j;
            }
        }
        slots[i].used = false;
        --count;
        return true;
    }
    template <class F>
    void each(F&& f) const {
        for (auto& sl : slots)
            if (sl.used) f(sl.key, sl.val);
    }
};

struct Made {
    int64_t step, size, block;
};

struct LiveMap {  // a dict address -> [step, size, block], insertion-ordered
    struct E {
        Made m;
        uint64_t seq;
    };
    I64Map<E> at;
    uint64_t next = 0;
    Made* get(int64_t a) {
        E* e = at.get(a);
        return e ? &e->m : nullptr;
    }
    void set(int64_t a, Made m) {
        bool fresh;
        E* e = at.put(a, &fresh);
        e->m = m;
        if (fresh) e->seq = next++;
    }
    void erase(int64_t a) { at.erase(a); }
    std::vector<std::pair<int64_t, Made>> ordered() const {  // insertion order
        std::vector<std::pair<uint64_t, std::pair<int64_t, Made>>> v;
        at.each([&](int64_t a, const E& e) { v.push_back({e.seq, {a, e.m}}); });
        std::sort(v.begin(), v.end(),
                  [](const auto& x, const auto& y) { return x.first < y.first; });
        std::vector<std::pair<int64_t, Made>> out;
        for (auto& x : v) out.push_back(x.second);
        return out;
    }
};

// ---- one device's trace (cuda_snapshot._Device: the trace part and the replay) ------------

struct Device {
    Val index;            // the device index as the dump gave it (an int)
    std::string key;      // cuda:N
    bool declared = false;
    int64_t step = 0;
    Counter actions, problems;
    std::vector<std::string> examples;
    LiveMap live;
    I64Map<char> freed_before;
    i128 before_n = 0, before_bytes = 0;
    int64_t estimated = 0;
    bool exact_rule = true;
    bool has_last = false;
    int64_t last_time = 0;
    // live blocks by start: their size, and whether inferred from the end state only
    struct Blk {
        int64_t size;
        bool tentative;
    };
    std::map<int64_t, Blk> starts;
    std::map<int64_t, int64_t> segs;            // segment start -> size
    std::unordered_map<int64_t, int64_t> seg_made;

    void problem(const std::string& kind, const std::string& text) {
        problems.add(kind);
        if (examples.size() < kMaxExamples)
            examples.push_back("step " + std::to_string(step) + ": " + text);
    }
    void live_add(int64_t a, int64_t size, bool tentative = false) {
        auto r = starts.try_emplace(a, Blk{size, tentative});
        if (!r.second) {
            r.first->second.size = size;
            r.first->second.tentative |= tentative;
        }
    }
    bool live_remove(int64_t a) { return starts.erase(a) != 0; }
    void drop_tentative(i128 lo, i128 hi) {
        auto it = lo > (i128)INT64_MAX
                      ? starts.end()
                      : starts.lower_bound(lo < (i128)INT64_MIN ? INT64_MIN : (int64_t)lo);
        while (it != starts.end() && (i128)it->first < hi) {
            if (it->second.tentative)
                it = starts.erase(it);
            else
                ++it;
        }
    }
    bool segment_end(int64_t a, i128* end) const {
        auto it = segs.upper_bound(a);
        if (it == segs.begin()) return false;
        --it;
        i128 e = (i128)it->first + it->second;
        if ((i128)a < e) {
            *end = e;
            return true;
        }
        return false;
    }
    static int64_t round_size(int64_t size) {
        if (size < kMinBlock) return kMinBlock;
        if (size > kI64Max - kMinBlock + 1) return size;
        return (size + kMinBlock - 1) / kMinBlock * kMinBlock;
    }
    int64_t block_bytes(int64_t a, int64_t size) {
        int64_t rounded = round_size(size);
        drop_tentative(a, (i128)a + rounded);
        i128 seg_end;
        if (!segment_end(a, &seg_end) || !exact_rule) {
            ++estimated;
            return rounded;
        }
        auto it = starts.upper_bound(a);
        i128 nxt =
            (it != starts.end() && (i128)it->first < seg_end) ? (i128)it->first : seg_end;
        i128 remaining = nxt - a - rounded;
        bool split = rounded <= kSmallSize ? remaining >= kMinBlock : remaining > kSmallSize;
        if (split || nxt - a > (i128)kI64Max) return rounded;
        return (int64_t)(nxt - a);
    }
    void seg_add(int64_t a, int64_t size) { segs[a] = size; }
    void seg_remove(int64_t a) { segs.erase(a); }
};

}  // namespace tlv::snapshot
