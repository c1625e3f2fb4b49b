// A hash map from short strings (node and buffer names) to values, open addressing with
// linear probing: one probe is usually one cache line, where std::unordered_map chases
// a node pointer per lookup (the scheduler-IR twin does several lookups per name).
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tlv {

template <class V>
struct StrMap {
    struct Slot {
        uint64_t h = 0;
        uint8_t state = 0;  // 0 empty, 1 full, 2 deleted
        std::string key;
        V val{};
    };
    std::vector<Slot> slots;
    size_t n = 0, tombs = 0, mask = 0;

    // 8 bytes a step (layout texts are keys too, ~80 bytes), then a final mix.
    static uint64_t hash(std::string_view k) {
        const char* p = k.data();
        size_t n = k.size();
        uint64_t h = 0x9e3779b97f4a7c15ull ^ n;
        while (n >= 8) {
            uint64_t w;
            std::memcpy(&w, p, 8);
            h = (h ^ w) * 0xbf58476d1ce4e5b9ull;
            h ^= h >> 31;
            p += 8;
            n -= 8;
        }
        uint64_t w = 0;
        std::memcpy(&w, p, n);
        h = (h ^ w) * 0x94d049bb133111ebull;
        h ^= h >> 29;
        h *= 0xbf58476d1ce4e5b9ull;
        return h ^ (h >> 32);
    }
    size_t size() const { return n; }
    bool empty() const { return n == 0; }

    V* find(std::string_view k) {
        if (slots.empty()) return nullptr;
        uint64_t h = hash(k);
        for (size_t i = h & mask;; i = (i + 1) & mask) {
            Slot& s = slots[i];
            if (s.state == 0) return nullptr;
            if (s.state == 1 && s.h == h && s.key == k) return &s.val;
        }
    }
    bool contains(std::string_view k) { return find(k) != nullptr; }

    // The value of k, added (default) where absent; second: whether it was added.
    std::pair<V*, bool> emplace(std::string_view k) {
        if ((n + tombs + 1) * 10 > slots.size() * 7) grow();
        uint64_t h = hash(k);
        Slot* tomb = nullptr;
        for (size_t i = h & mask;; i = (i + 1) & mask) {
            Slot& s = slots[i];
            if (s.state == 0) {
                Slot* t = tomb ? tomb : &s;
                if (tomb) --tombs;
                t->h = h;
                t->state = 1;
                t->key.assign(k.data(), k.size());
                t->val = V{};
                ++n;
                return {&t->val, true};
            }
            if (s.state == 2) {
                if (!tomb) tomb = &s;
            } else if (s.h == h && s.key == k) {
                return {&s.val, false};
            }
        }
    }
    V& operator[](std::string_view k) { return *emplace(k).first; }

    bool erase(std::string_view k) {
        if (slots.empty()) return false;
        uint64_t h = hash(k);
        for (size_t i = h & mask;; i = (i + 1) & mask) {
            Slot& s = slots[i];
            if (s.state == 0) return false;
            if (s.state == 1 && s.h == h && s.key == k) {
                s.state = 2;
                s.key.clear();
                s.val = V{};
                --n;
                ++tombs;
                return true;
            }
        }
    }

    void clear() {
        slots.clear();
        n = tombs = 0;
        mask = 0;
    }

   private:
    void grow() {
        size_t cap = slots.empty() ? 64 : slots.size();
        while ((n + 1) * 10 > cap * 5) cap *= 2;  // after growing, at most half full
        std::vector<Slot> old;
        old.swap(slots);
        slots.resize(cap);
        mask = cap - 1;
        n = tombs = 0;
        for (auto& s : old) {
            if (s.state != 1) continue;
            for (size_t i = s.h & mask;; i = (i + 1) & mask) {
                Slot& d = slots[i];
                if (d.state == 0) {
                    d.h = s.h;
                    d.state = 1;
                    d.key = std::move(s.key);
                    d.val = std::move(s.val);
                    ++n;
                    break;
                }
            }
        }
    }
};

}  // namespace tlv
