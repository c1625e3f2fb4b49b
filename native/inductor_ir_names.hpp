// A map from scheduler-IR names (buffers, nodes) to values, for the IR twin
// (inductor_ir.cpp).
//
// Inductor names nearly every buffer `buf<N>` and every node `op<N>`, numbered in
// order, and a dump of a long run holds hundreds of thousands of them: a hash table over
// the strings misses the cache on most lookups. Here such a name (canonical decimal: no
// sign, no leading zero) is its number, an index into pages of a dense array allocated
// as they are touched; any other name goes to a StrMap. A name has one spelling, so it
// lives in exactly one of the two: the map behaves as one dict[str, V].
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>
#include <utility>
#include <vector>

#include "str_map.hpp"

namespace tlv::ir {

template <class V>
struct NameMap {
    static constexpr uint32_t PAGE_BITS = 12, PAGE = 1u << PAGE_BITS;
    static constexpr uint64_t MAX_NUMBER = 1ull << 31;
    struct Page {
        V val[PAGE]{};
        uint8_t present[PAGE]{};
    };
    // pages[kind] for `buf<N>` (0) and `op<N>` (1)
    std::vector<std::unique_ptr<Page>> pages[2];
    StrMap<V> other;
    size_t n_dense = 0;

    // The kind and number of a `buf<N>` / `op<N>` name; false for any other name.
    static bool dense_key(std::string_view k, int* kind, uint64_t* number) {
        size_t i;
        if (k.size() > 3 && k[0] == 'b' && k[1] == 'u' && k[2] == 'f') {
            *kind = 0;
            i = 3;
        } else if (k.size() > 2 && k[0] == 'o' && k[1] == 'p') {
            *kind = 1;
            i = 2;
        } else
            return false;
        if (k[i] == '0' && k.size() > i + 1) return false;  // "buf01" is another name
        if (k.size() - i > 10) return false;
        uint64_t x = 0;
        for (; i < k.size(); ++i) {
            auto c = (uint8_t)k[i];
            if (c < '0' || c > '9') return false;
            x = x * 10 + (c - '0');
        }
        if (x >= MAX_NUMBER) return false;
        *number = x;
        return true;
    }

    size_t size() const { return n_dense + other.size(); }
    bool empty() const { return size() == 0; }

    V* find(std::string_view k) {
        int kind;
        uint64_t x;
        if (!dense_key(k, &kind, &x)) return other.find(k);
        auto& ps = pages[kind];
        size_t p = (size_t)(x >> PAGE_BITS), j = (size_t)(x & (PAGE - 1));
        if (p >= ps.size() || !ps[p] || !ps[p]->present[j]) return nullptr;
        return &ps[p]->val[j];
    }
    bool contains(std::string_view k) { return find(k) != nullptr; }

    // The value of k, added (default) where absent; second: whether it was added.
    std::pair<V*, bool> emplace(std::string_view k) {
        int kind;
        uint64_t x;
        if (!dense_key(k, &kind, &x)) return other.emplace(k);
        auto& ps = pages[kind];
        size_t p = (size_t)(x >> PAGE_BITS), j = (size_t)(x & (PAGE - 1));
        if (p >= ps.size()) ps.resize(p + 1);
        if (!ps[p]) ps[p].reset(new Page());
        Page& pg = *ps[p];
        if (pg.present[j]) return {&pg.val[j], false};
        pg.present[j] = 1;
        pg.val[j] = V{};
        ++n_dense;
        return {&pg.val[j], true};
    }
    V& operator[](std::string_view k) { return *emplace(k).first; }

    bool erase(std::string_view k) {
        int kind;
        uint64_t x;
        if (!dense_key(k, &kind, &x)) return other.erase(k);
        auto& ps = pages[kind];
        size_t p = (size_t)(x >> PAGE_BITS), j = (size_t)(x & (PAGE - 1));
        if (p >= ps.size() || !ps[p] || !ps[p]->present[j]) return false;
        ps[p]->present[j] = 0;
        ps[p]->val[j] = V{};
        --n_dense;
        return true;
    }
};

}  // namespace tlv::ir
