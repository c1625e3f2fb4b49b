// A dict keeping Python's order, as the parsers' name tables are (ingest/fx_graph.py,
// ingest/inductor_wrapper.py): assignment to a present key keeps its place, a removed
// key leaves a hole that iteration skips. Values are shared pointers to records with a
// ``name``, their key. One copy for the compiled readers of FX graphs and wrapper modules.
#pragma once

#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace tlv {

template <class P>  // std::shared_ptr<T>, T with a std::string name
struct OrderedDict {
    std::vector<std::pair<std::string, P>> items;  // null P: removed
    std::unordered_map<std::string, size_t> where;
    P get(const std::string& k) const {
        auto it = where.find(k);
        return it == where.end() ? nullptr : items[it->second].second;
    }
    bool has(std::string_view k) const { return where.count(std::string(k)) != 0; }
    void set(const P& v) {
        auto it = where.find(v->name);
        if (it != where.end()) {
            items[it->second].second = v;
            return;
        }
        where[v->name] = items.size();
        items.emplace_back(v->name, v);
    }
    P pop(const std::string& k) {
        auto it = where.find(k);
        if (it == where.end()) return nullptr;
        P v = items[it->second].second;
        items[it->second].second = nullptr;
        where.erase(it);
        return v;
    }
    std::vector<std::string> keys() const {
        std::vector<std::string> out;
        for (auto& it : items)
            if (it.second) out.push_back(it.first);
        return out;
    }
};

}  // namespace tlv
