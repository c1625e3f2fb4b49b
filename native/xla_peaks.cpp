// The XLA reader's end (ingest/xla_peaks.py and the note of xla_buffer_assignment.py):
// values never used, the closing note, XLA's moment rule and the peaks.
#include "xla_buffer_assignment.hpp"

namespace tlv::xla {

void Parser::start_pass2() {
    scheduled.assign(sequence.size());
    up.assign(have_live ? (size_t)schedule_end + 2 : 0);
    down.assign(up.size());
}

bool Parser::finish() {
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

void Parser::finish_start() {
    if (in_entry) end_entry();
    if (!seen_ba) {
        std::string where;
        const std::string& nm = names[file];
        static const char* const kSuffixes[] = {"-buffer-assignment.txt",
                                                "-buffer-assignment-values.txt",
                                                "-live-range.txt", "-memory-usage-report.txt"};
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
        throw err(number,
                  "no 'BufferAssignment:' section: expected an XLA "
                  "buffer-assignment dump" +
                      where);
    }
    fin_stage = 1;
    fin_i = 0;
}

std::string Parser::some(const std::vector<std::string>& names_) {
    std::string out;
    for (size_t i = 0; i < names_.size() && i < (size_t)kMaxListed; ++i) {
        if (i) out += ", ";
        out += names_[i];
    }
    if (names_.size() > (size_t)kMaxListed)
        out += " and " + std::to_string(names_.size() - kMaxListed) + " more";
    return out;
}

void Parser::build_note(const std::vector<uint32_t>& without) {
    std::vector<std::string> warnings;
    std::string& s = note;
    Obj o(s);
    if (total_bytes_used)
        o.num("total_bytes_used", *total_bytes_used);
    else
        o.null("total_bytes_used");
    o.num("n_allocations", (i128)allocs.size());
    o.num("n_values", (i128)v_id.size());
    if (!report.empty()) {
        o.key("memory_usage_report");
        Obj r(s);
        for (auto& kv : report) r.num(kv.first, kv.second);
        r.close();
    }
    if (!unknown.empty()) {
        o.key("unknown_lines");
        put_str_list(s, unknown);
    }
    if (!have_live) {
        o.str("liveness", "unknown");
        warnings.push_back(
            "no HloLiveRange section: allocations ingested, liveness "
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
            keys.push_back(std::string(strs.get(r_name[r])) +
                           std::string(misc.get(r_index[r])));
        o.key("live_range_without_allocation");
        put_str_list(s, keys);
        warnings.push_back(std::to_string(keys.size()) +
                           " values in BufferLiveRange have no "
                           "allocation line (size unknown, not counted): " +
                           some(keys));
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
        warnings.push_back(std::to_string(no_range.size()) +
                           " allocated values have no live "
                           "range (" +
                           bk +
                           "; values of called computations): liveness "
                           "unknown, not counted: " +
                           some(no_range));
    }
    if (peak_unknown) warnings.push_back("XLA: " + *peak_unknown);
    if (has_peak) peak_warnings(o, warnings);
    if (!warnings.empty()) {
        o.key("warnings");
        put_str_list(s, warnings);
    }
    o.close();
}

int64_t Parser::moment() {
    i128 usage = 0, peak = 0;
    int64_t m = 0;
    size_t n = moment_wide ? up_w.size() : up.size();
    for (size_t t = 0; t < n; ++t) {
        tick();
        usage += moment_wide ? up_w[t] : (i128)up[t];
        if (peak < usage) {
            peak = usage;
            m = (int64_t)t;
        }
        usage -= moment_wide ? down_w[t] : (i128)down[t];
    }
    return m;
}

template <class T>
Parser::CurvePeak Parser::union_peak(const Arr<uint32_t>& rows) {
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
                    ms = sp.first;
                    me = sp.second;
                    open = true;
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
        if (!out.any || (i128)live > out.peak) {
            out.any = true;
            out.peak = live;
            out.step = t;
        }
        if (peak_step >= 0 && (size_t)peak_step == t) out.at_k = live;
    }
    return out;
}

Parser::CurvePeak Parser::union_curve_peak() {
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

void Parser::peak_warnings(Obj& o, std::vector<std::string>& out) {
    std::string& s = note;
    i128 stated = 0;
    for (auto& p : peak_values) stated += p.bytes;
    o.key("xla_peak");
    {
        Obj x(s);
        x.num("step", peak_step);
        if (peak_form)
            x.str("form", peak_form);
        else
            x.null("form");
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
        if (!stack_trace.empty()) {
            x.key("stack_trace");
            put_str_list(s, stack_trace);
        }
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

}  // namespace tlv::xla
