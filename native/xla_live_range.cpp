// The XLA reader's pass 1: the HloLiveRange section (ingest/xla_live_range.py).
#include "xla_buffer_assignment.hpp"

namespace tlv::xla {

bool Parser::live_header(sv t) {
    if (!starts(t, "HloLiveRange (max ")) return false;
    int64_t v;
    size_t n = digits(t, 18, &v);
    if (!n || t.substr(18 + n, 2) != "):" || !all_ws(t, 20 + n)) return false;
    schedule_end = v;
    return true;
}

bool Parser::live_line(int64_t number_, sv t) {  // false: the section is over
    l_number = number_;
    tick();
    if (lsec == LSearch) {
        if (live_header(t)) {
            lsec = LHeader;
            have_live = true;
        }
        return true;
    }
    if (blank(t)) return true;
    if (t[0] != ' ') {
        if (starts(t, "HloLiveRange (max")) throw err(number_, "a second HloLiveRange section");
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

void Parser::check_complete(int64_t n) {
    if ((int64_t)sequence.size() != schedule_end)
        throw err(n, "truncated live-range section: 'HloLiveRange (max " +
                         std::to_string(schedule_end) + ")' promises " +
                         std::to_string(schedule_end) + " instructions, found " +
                         std::to_string(sequence.size()));
}

void Parser::seq_line(int64_t n, sv t) {
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
        if (step_of[id] >= 0)
            throw err(n, "instruction " + std::string(name) + " scheduled twice");
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

size_t Parser::name_index(sv t, size_t i, sv* name, sv* index) {
    size_t a = i;
    while (i < t.size() && !is_ws(t[i]) && t[i] != '{' && t[i] != '}') ++i;
    if (i == a) return sv::npos;
    *name = t.substr(a, i - a);
    if (i >= t.size() || t[i] != '{') {
        *index = sv();
        return i;
    }
    size_t b = i + 1;
    while (b < t.size() && (is_digit(t[b]) || t[b] == ',')) ++b;
    if (b >= t.size() || t[b] != '}') {
        *index = sv();
        return i;
    }
    *index = t.substr(i, b + 1 - i);
    return b + 1;
}

void Parser::range_line(int64_t n, sv t) {
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
            throw err(
                n, "value " + std::string(name) + std::string(index) + " has two live ranges");
        uint32_t row = (uint32_t)r_start.size();
        r_name.push_back(nid);
        r_index.push_back(xid);
        r_start.push_back(s);
        r_end.push_back(e);
        r_line.push_back(n);
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

void Parser::peak_line(int64_t n, sv t) {
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

void Parser::end_live() {
    if (lsec == LHeader || lsec == LSeq) {
        check_complete(l_number);
        throw err(l_number, "truncated live-range section: no BufferLiveRange");
    }
    lsec = LDone;
}

}  // namespace tlv::xla
