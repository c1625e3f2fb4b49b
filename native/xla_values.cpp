// The XLA reader's pass 2 (ingest/xla_buffer_assignment.py): allocations and used
// values, and each used value's events when its entry ends.
#include "xla_buffer_assignment.hpp"

namespace tlv::xla {

void Parser::keep_unknown(int64_t n, sv t) {
    if (unknown.size() < kMaxUnknown)
        unknown.push_back(names[file] + ":" + std::to_string(n) + ": " +
                          std::string(t.substr(0, 200)));
}

bool Parser::line(int64_t n, sv t) {  // false: stop reading this file (its live-range section)
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

void Parser::top_level(int64_t n, sv t) {
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
        std::string space = report_space && !report_space->empty() ? *report_space : "default";
        bool found = false;
        for (auto& kv : report)
            if (kv.first == space) {
                kv.second = v;
                found = true;
            }
        if (!found) report.emplace_back(space, v);
    } else {
        keep_unknown(n, t);
    }
}

void Parser::allocation_header(int64_t n, sv t) {
    // allocation (\d+): size (\d+)(?:, (.*?))?:\s*\Z
    int64_t index = 0, size = 0;
    size_t ni = digits(t, 11, &index);
    bool ok = ni && t.substr(11 + ni, 7) == ": size ";
    size_t p = 11 + ni + 7, ns = 0;
    if (ok) {
        ns = digits(t, p, &size);
        ok = ns > 0;
    }
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
                a.output_shape =
                    shapes.empty() ? int64_t{-1} : int64_t{misc.intern(shapes.back())};
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
    for (auto& k : kind) {
        kkey += k;
        kkey.push_back('\0');
    }
    auto it = kind_ids.find(kkey);
    if (it == kind_ids.end()) {
        Kind k;
        k.parts = kind;
        for (size_t j = 0; j < kind.size(); ++j) {
            if (j) {
                k.joined += ", ";
                k.slash += "/";
            }
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

bool Parser::value_ref(sv t, size_t i, Ref* r, size_t* end) {
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
    if (t.substr(p, 6) == " (phi)") {
        r->phi = true;
        p += 6;
    }
    r->color = 0;
    if (t.substr(p, 2) == " @") {
        int64_t c;
        size_t nc = digits(t, p + 2, &c);
        if (nc) {
            r->color = c;
            p += 2 + nc;
        }
    }
    if (p >= t.size() || t[p] != '>') return false;
    *end = p + 1;
    return true;
}

void Parser::used_header(int64_t n, sv t) {
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

void Parser::value_line(int64_t n, sv t) {
    Ref r;
    size_t end;
    int64_t size = 0, offset = 0;
    bool ok =
        starts(t, " value: ") && value_ref(t, 8, &r, &end) && t.substr(end, 7) == " (size=";
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
            throw err(n,
                      "expected ' value: <id name{index} @color> (size=N,offset=M): "
                      "shape'");
        keep_unknown(n, t);
        return;
    }
    if (current_alloc < 0) throw err(n, "value line before any 'allocation N:' line");
    const Alloc& a = allocs[(size_t)current_alloc];
    if (offset + size > a.size)
        throw err(n, "value " + std::string(r.name) + " at offset " + std::to_string(offset) +
                         " size " + std::to_string(size) + " runs past allocation " +
                         std::to_string(a.index) + "'s " + std::to_string(a.size) + " bytes");
    sv index = r.index.empty() ? sv("{}") : r.index;
    uint32_t nid = strs.intern(r.name), xid = misc.intern(index);
    uint64_t k = pair_key(nid, xid);
    if (value_of.find(k) >= 0)
        throw err(n, "value " + std::string(r.name) + std::string(index) + " assigned twice");
    int32_t lr = -1;
    if (have_live) {
        lr = -2;
        int64_t rr = range_of.find(k);
        if (rr >= 0 && !r_taken[(size_t)rr]) {
            r_taken[(size_t)rr] = 1;
            lr = (int32_t)rr;
        }
    }
    uint32_t row = (uint32_t)v_id.size();
    v_name.push_back(nid);
    v_index.push_back(xid);
    v_shape.push_back(misc.intern(t.substr(end)));
    v_alloc.push_back((uint32_t)current_alloc);
    v_id.push_back(r.id);
    v_color.push_back(r.color);
    v_offset.push_back(offset);
    v_size.push_back(size);
    v_line.push_back(n);
    value_of.put(k, row);
    row_of_id.put((uint64_t)r.id, row);
    v_range.push_back(lr);
    v_flags.push_back((r.phi ? kPhi : 0) | (lr >= 0 ? kHasRange : 0));
}

void Parser::used_line(int64_t n, sv t) {
    if (!in_entry) {
        keep_unknown(n, t);
        return;
    }
    sv s = strip(t);
    if (starts(t, "  ") && e_list) {
        if (s != "(none)") (e_list == 1 ? e_positions : e_uses).emplace_back(s);
        return;
    }
    if (s == "positions:")
        e_list = 1;
    else if (s == "uses:")
        e_list = 2;
    else if (starts(s, "from instruction:")) {
        e_list = 0;
        e_instruction = std::string(strip(s.substr(17)));
    } else {
        keep_unknown(n, t);
    }
}

int64_t Parser::value_row_of(sv name, sv index) {
    int64_t nid = strs.find(name), xid = misc.find(index);
    if (nid < 0 || xid < 0) return -1;
    return value_of.find(pair_key((uint32_t)nid, (uint32_t)xid));
}

const Shape& Parser::shape_of(uint32_t id) {
    if (shapes.size() <= id) shapes.resize(misc.size());
    if (!shapes[id]) shapes[id] = parse_shape(misc.get(id));
    return *shapes[id];
}

std::optional<i128> Parser::instruction_bytes(sv name) {
    int64_t row = value_row_of(name, "{}");
    if (row >= 0) return (i128)v_size[(size_t)row];
    int64_t nid = strs.find(name);
    if (nid < 0) return std::nullopt;
    auto it = ishape.find((uint32_t)nid);
    if (it == ishape.end()) return std::nullopt;
    return it->second;
}

void Parser::end_entry() {
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
        keep_unknown_at(e_line, "used value <" + std::to_string(e_id) + " " + e_name + e_index +
                                    "> is in no allocation");
        return;
    }
    value_events((uint32_t)row, facts ? facts : &none, true);
}

void Parser::flush_if_full() {
    if (batch.rows >= kBatchRows || batch.text_bytes() >= kBatchText) flush();
}

void Parser::flush() {
    if (!batch.rows) return;
    PyGILState_STATE g = PyGILState_Ensure();
    PyObject* b = batch.export_py();
    PyGILState_Release(g);
    if (!b) throw std::runtime_error("exporting a batch failed");
    ready.push_back(b);
    batch.clear();
}

void Parser::scheduled_node(uint32_t nid, int32_t step, const Facts* f) {
    scheduled[(size_t)step] = 1;
    EventBatch& B = batch;
    B.kind.set("node_scheduled");
    B.step.set(step);
    B.node.set(strs.get(nid));
    if (f && f->has_opcode)
        B.node_class.set(f->opcode);
    else
        B.node_class.set_null();
    B.reads.begin_list();
    B.reads.end_list();
    B.writes.begin_list();
    B.writes.end_list();
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

void Parser::place(i128* dummy, int64_t start, int64_t end, const std::optional<i128>& ib) {
    (void)dummy;
    if (!ib)
        moment_unknown = true;
    else if (!moment_unknown) {
        size_t a = (size_t)start, b = (size_t)end + 1;
        int64_t x, y;
        if (!moment_wide &&
            (*ib > INT64_MAX || __builtin_add_overflow(up[a], (int64_t)*ib, &x) ||
             __builtin_add_overflow(down[b], (int64_t)*ib, &y))) {
            up_w.assign(up.p, up.p + up.n);
            down_w.assign(down.p, down.p + down.n);
            up.n = down.n = 0;
            moment_wide = true;
        }
        if (moment_wide) {
            up_w[a] += *ib;
            down_w[b] += *ib;
        } else {
            up[a] = x;
            down[b] = y;
        }
    }
}

void Parser::put_ib(Obj& o, const std::optional<i128>& ib) {
    if (ib)
        o.num("instruction_bytes", *ib);
    else
        o.null("instruction_bytes");
}

void Parser::value_events(uint32_t row, const Facts* f, bool entry) {
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
        if (e_positions.size() > 1) {
            o.key("positions");
            put_str_list(s, e_positions);
        }
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

void Parser::buffer_key(uint32_t row) {
    std::string& b = batch.buffer.begin();
    sv nm = strs.get(v_name[row]), ix = misc.get(v_index[row]);
    b.append(nm.data(), nm.size());
    b.append(ix.data(), ix.size());
    batch.buffer.commit();
}

void Parser::allocated(uint32_t row, bool has_step, int64_t step, Obj& o) {
    const Alloc& a = allocs[v_alloc[row]];
    const Kind& k = kinds[a.kind];
    o.num("value_id", v_id[row]);
    o.num("allocation_size", a.size);
    o.str("allocation_kind", k.joined);
    if (v_flags[row] & kPhi) o.yes("phi");
    if (v_color[row]) o.num("color", v_color[row]);
    if (a.has_param) {
        o.num("parameter", a.parameter);
        if (a.param_shape >= 0)
            o.str("parameter_shape", misc.get((uint32_t)a.param_shape));
        else
            o.null("parameter_shape");
        if (a.param_index >= 0)
            o.str("parameter_index", misc.get((uint32_t)a.param_index));
        else
            o.null("parameter_index");
    }
    if (a.output_shape >= 0) o.str("output_shape", misc.get((uint32_t)a.output_shape));
    if (k.maybe_live_out) o.yes("maybe_live_out");
    o.close();
    EventBatch& B = batch;
    B.attrs.commit();  // attrs began before the other columns of this row: fine, see pad
    B.kind.set("buffer_allocated");
    if (has_step)
        B.step.set(step);
    else
        B.step.set_null();
    buffer_key(row);
    B.bytes.set(v_size[row]);
    B.node.set(strs.get(v_name[row]));
    const Shape& sh = shape_of(v_shape[row]);
    if (sh.has_layout)
        B.layout.set(sh.layout);
    else
        B.layout.set_null();
    if (sh.array) {
        B.dtype.set(sh.dtype);
        B.shape.set(sh.dims);
    } else {
        B.dtype.set_null();
        B.shape.set(sh.text);
    }
    B.is_input.set(false);
    B.allocation.set(a.index);
    B.offset.set(v_offset[row]);
    B.line.set(v_line[row]);
    B.end_row();
}

void Parser::unallocated_events(uint32_t r) {
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

}  // namespace tlv::xla
