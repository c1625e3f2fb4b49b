// Last-use tracking for the scheduler-IR reader: the twin of ingest/last_use.py.
#pragma once

#include "inductor_ir_nodes.hpp"

namespace tlv::ir {

// ---- last-use tracking (ingest/last_use.py) ---------------------------------------------

// An insertion-ordered dict[str, V]: a key set again keeps its place; a popped key set
// again goes to the end.
template <class V>
struct OrderedMap {
    struct Slot {
        std::string key;
        V val;
        bool live;
    };
    std::vector<Slot> slots;
    NameMap<size_t> idx;
    size_t dead = 0, head = 0;

    size_t size() const { return idx.size(); }
    V* get(const std::string& k) {
        size_t* i = idx.find(k);
        return i ? &slots[*i].val : nullptr;
    }
    V& set(const std::string& k, V v) {
        auto [i, added] = idx.emplace(k);
        if (!added) {
            slots[*i].val = std::move(v);
            return slots[*i].val;
        }
        *i = slots.size();
        slots.push_back(Slot{k, std::move(v), true});
        return slots.back().val;
    }
    V& get_or_add(sv k) {
        auto [i, added] = idx.emplace(k);
        if (!added) return slots[*i].val;
        *i = slots.size();
        slots.push_back(Slot{std::string(k), V(), true});
        return slots.back().val;
    }
    bool pop(const std::string& k, V* out) {
        size_t* i = idx.find(k);
        if (!i) return false;
        Slot& s = slots[*i];
        *out = std::move(s.val);
        s.live = false;
        s.val = V();
        idx.erase(k);
        ++dead;
        while (head < slots.size() && !slots[head].live) ++head;
        if (dead > 1024 && dead > 2 * idx.size()) compact();
        return true;
    }
    void compact() {  // drop popped slots; the index of each live key moves
        size_t k = 0;
        for (size_t i = 0; i < slots.size(); ++i) {
            if (!slots[i].live) continue;
            if (k != i) slots[k] = std::move(slots[i]);
            *idx.find(slots[k].key) = k;
            ++k;
        }
        slots.resize(k);
        dead = 0;
        head = 0;
    }
    template <class F>
    void each(F&& f) {  // f(key, val&) in order
        for (size_t i = head; i < slots.size(); ++i)
            if (slots[i].live) f(slots[i].key, slots[i].val);
    }
};

struct OpenBuf {
    int64_t own = 0, last = 0, line = 0;
    int64_t unseen = 0;
    bool to_end = false;
    int64_t dependents = 0;
    std::vector<std::string> targets;
    std::optional<int64_t> nbytes;
    std::string producer;
};

struct Closed {
    std::string buffer;
    int64_t last;
    std::string reason;
};

constexpr size_t RECENT_NODES = 65536;

struct LastUse {
    OrderedMap<OpenBuf> open;
    OrderedMap<std::vector<std::string>> waiting;
    NameMap<int64_t> recent;
    std::deque<std::string> recent_order;
    std::vector<Closed> closed;
    std::vector<std::string> candidates;

    // users: node names; an empty optional is an OUTPUT user.
    void buffer(const std::string& name, int64_t step,
                const std::vector<std::pair<bool, sv>>& users, int64_t line,
                std::optional<int64_t> nbytes, const std::string& producer) {
        OpenBuf nb;
        nb.own = step;
        nb.last = step;
        nb.line = line;
        nb.nbytes = nbytes;
        nb.producer = producer;
        OpenBuf& b = open.set(name, std::move(nb));
        for (auto& [output, u] : users) {
            if (output) {
                b.to_end = true;
                continue;
            }
            if (int64_t* seen = recent.find(u)) {
                b.last = std::max(b.last, *seen);
            } else {
                b.unseen += 1;
                waiting.get_or_add(u).push_back(name);
            }
        }
        if (!b.unseen) candidates.push_back(name);
    }

    void link(const std::string& buffer, const std::string& target) {
        OpenBuf* t = open.get(target);
        open.get(buffer)->targets.push_back(target);
        if (t) t->dependents += 1;
    }

    void node(const std::vector<const std::string*>& names, int64_t step) {
        for (const std::string* np : names) {
            const std::string& name = *np;
            auto [slot, added] = recent.emplace(name);
            *slot = step;
            if (added) {
                recent_order.push_back(name);
                if (recent.size() > RECENT_NODES) {
                    recent.erase(recent_order.front());
                    recent_order.pop_front();
                }
            }
            auto& bufs = bufs_;
            if (waiting.pop(name, &bufs)) {
                for (auto& buf : bufs) {
                    OpenBuf* b = open.get(buf);
                    if (!b) continue;
                    b->last = std::max(b->last, step);
                    b->unseen -= 1;
                    if (!b->unseen) candidates.push_back(buf);
                }
            }
        }
        auto& cands = cands_;  // empty: candidates keeps its memory
        cands.swap(candidates);
        for (auto& n : cands) {
            OpenBuf* b = open.get(n);
            if (b && !b->unseen && !b->to_end && !b->dependents) close(n, LAST_USE);
        }
        cands.clear();
    }
    std::vector<std::string> bufs_, cands_;
    inline static const std::string LAST_USE = "last use";

    // last_use.LastUse._close: `name`, then each target it was the last dependent of,
    // depth first without recursion (a chain of views of views is as long as the graph).
    struct Closing {
        std::string name;
        OpenBuf b;
        size_t next = 0;
    };
    std::vector<Closing> closing_;
    void close(const std::string& name, const std::string& reason) {
        OpenBuf b;
        if (!open.pop(name, &b)) return;
        closed.push_back(Closed{name, b.last, reason});
        auto& work = closing_;
        work.clear();
        work.push_back(Closing{name, std::move(b), 0});
        while (!work.empty()) {
            Closing& c = work.back();
            if (c.next == c.b.targets.size()) {
                work.pop_back();
                continue;
            }
            std::string t = c.b.targets[c.next++];
            OpenBuf* tb = open.get(t);
            if (!tb) {
                closed.push_back(Closed{t, c.b.last, "extended by " + c.name});
                continue;
            }
            tb->last = std::max(tb->last, c.b.last);
            tb->dependents -= 1;
            if (tb->unseen == 0 && !tb->to_end && tb->dependents == 0) {
                OpenBuf nb;
                open.pop(t, &nb);
                closed.push_back(Closed{t, nb.last, LAST_USE});
                work.push_back(Closing{std::move(t), std::move(nb), 0});
            }
        }
    }

    // false, with (buffer, user, line) of the first buffer left waiting; else closes all.
    bool finish(int64_t last_step, std::string* mbuf, std::string* muser, int64_t* mline) {
        bool missing = false;
        waiting.each([&](const std::string& user, std::vector<std::string>& bufs) {
            if (missing) return;
            for (auto& buf : bufs) {
                OpenBuf* b = open.get(buf);
                if (b) {
                    missing = true;
                    *mbuf = buf;
                    *muser = user;
                    *mline = b->line;
                    return;
                }
            }
        });
        if (missing) return false;
        open.each([&](const std::string&, OpenBuf& b) {
            if (b.to_end) b.last = last_step;
        });
        while (open.size()) {
            std::vector<std::string> free;
            open.each([&](const std::string& k, OpenBuf& b) {
                if (b.dependents == 0) free.push_back(k);
            });
            if (free.empty()) {
                open.each([&](const std::string& k, OpenBuf& b) {
                    free.push_back(k);
                    b.dependents = 0;
                });
            }
            for (auto& n : free) {
                OpenBuf* b = open.get(n);
                close(n, (b && b->to_end) ? "graph output" : "last use");
            }
        }
        return true;
    }
};

}  // namespace tlv::ir
