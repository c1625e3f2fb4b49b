// The scheduler-IR reader: a node's completion (inductor_ir._finish_node).
#include "inductor_ir.hpp"

namespace tlv::ir {

bool Parser::in(const std::vector<std::string>& v, const std::string& x) {
    return std::find(v.begin(), v.end(), x) != v.end();
}

void Parser::finish_node() {
    Node& node = top;
    int64_t st = step++;
    const Fields& f = node.fields;
    OptStr dev;
    const std::string* gd = f.get("group.device");
    if (gd && !gd->empty()) {
        dev = *gd;
    } else {
        for (size_t i = 0; i < node.n_subs; ++i) {
            const std::string* sg = node.subs[i]->fields.get("group.device");
            if (sg) {
                dev = *sg;
                break;
            }
        }
    }
    static const std::string empty;
    auto field = [&](sv k) -> sv {
        const std::string* v = f.get(k);
        return v ? sv(*v) : sv(empty);
    };
    dep_names(field("writes"), writes);
    dep_names(field("unmet_dependencies"), reads);
    dep_names(field("met_dependencies"), met);
    for (auto& n : met)
        if (std::find(writes.begin(), writes.end(), n) == writes.end()) reads.push_back(n);
    OptStr kernel;
    if (const std::string* k = f.get("node.kernel"); k && *k != "None") kernel = *k;

    // attrs
    std::string& a = batch->attrs.begin();
    a.append("{\"line\":");
    a.append(std::to_string(node.line));
    if (const std::string* v = f.get("group.iteration")) {
        a.append(",\"group_iteration\":");
        put_json_string(a, *v, true);
    }
    if (const std::string* v = f.get("sizes")) {
        a.append(",\"sizes\":");
        put_json_string(a, *v, true);
    }
    {
        sv um = field("unmet_dependencies"), mt = field("met_dependencies");
        tmp.assign(um);
        tmp.append(mt);
        if (tmp.find("WeakDep(") != std::string::npos) {
            bool any = false;
            scan_deps(tmp, [&](sv kind, sv name) {
                if (kind != "WeakDep") return;
                a.append(any ? "," : ",\"weak_deps\":[");
                any = true;
                put_json_string(a, name, true);
            });
            if (any) a.push_back(']');
        }
    }
    if (!node.snodes.empty()) {
        a.append(",\"snodes\":");
        json_str_list(a, node.snodes);
    }
    {
        static const sv known[] = {"writes",       "unmet_dependencies", "met_dependencies",
                                   "group.device", "group.iteration",    "sizes",
                                   "node.kernel"};
        bool any = false;
        for (auto& kv : f) {
            if (std::find(std::begin(known), std::end(known), sv(kv.first)) != std::end(known))
                continue;
            a.append(any ? "," : ",\"fields\":{");
            any = true;
            put_json_string(a, kv.first, true);
            a.push_back(':');
            put_json_string(a, kv.second, true);
        }
        if (any) a.push_back('}');
    }
    for (auto& kv : node.blocks) {
        a.push_back(',');
        put_json_string(a, kv.first, true);
        a.push_back(':');
        put_json_string(a, kv.second, true);
    }
    if (!node.unknown.empty()) {
        a.append(",\"unknown_lines\":");
        json_str_list(a, node.unknown);
    }
    a.push_back('}');

    if (!dev) {
        // buffer_layouts: {name: layout} (a repeated name: first place, last value)
        for (size_t i = 0; i < node.buffers.size() && !dev; ++i) {
            const std::string& nm = node.buffers[i].name;
            bool seen = false;
            for (size_t j = 0; j < i; ++j)
                if (node.buffers[j].name == nm) {
                    seen = true;
                    break;
                }
            if (seen) continue;
            const std::string* lay = nullptr;
            for (size_t j = node.buffers.size(); j-- > i;)
                if (node.buffers[j].name == nm) {
                    lay = node.buffers[j].fields.get("layout");
                    break;
                }
            if (lay && !lay->empty()) {
                const Layout& L = parse_layout(*lay);
                if (L.device && !L.device->empty()) dev = *L.device;
            }
        }
    }
    if (dev && !dev->empty() && !device) device = dev;

    EventBatch& b = *batch;
    b.attrs.commit();
    b.kind.set("node_scheduled");
    b.step.set(st);
    b.node.set(node.name);
    b.node_class.set(node.cls);
    b.ir_type.set(node.ir);
    set_opt(b.kernel, kernel);
    set_opt(b.device, dev);
    b.reads.begin_list();
    for (auto& r : reads) b.reads.item(r);
    b.reads.end_list();
    b.writes.begin_list();
    for (auto& w : writes) b.writes.item(w);
    b.writes.end_list();
    b.line.set(node.line);
    end_row();

    // links: (buffer index, target, relation)
    struct Link {
        size_t buf;
        std::string target;
        bool mutation;
    };
    std::vector<Link> links;
    for (size_t i = 0; i < node.buffers.size(); ++i) {
        for (int r = 0; r < 2; ++r) {
            const std::string* v = node.buffers[i].fields.get(r == 0 ? "mutations" : "aliases");
            if (!v) continue;
            scan_quoted(*v, [&](sv t) { links.push_back(Link{i, std::string(t), r == 0}); });
        }
    }
    auto& later = later_;
    later.clear();
    for (auto& l : links) {
        if (produced.contains(l.target) || inputs.contains(l.target)) continue;
        const std::string* lay = node.buffers[l.buf].fields.get("layout");
        if (lay && !lay->empty() && parse_layout(*lay).kind == "NonOwningLayout")
            if (!in(later, l.target)) later.push_back(l.target);
    }
    names_tmp = reads;
    for (auto& l : links)
        if (!in(later, l.target)) names_tmp.push_back(l.target);
    declare_inputs(node, names_tmp);
    for (auto& buf : node.buffers) allocate(node, st, buf);
    for (auto& buf : node.buffers) link_concat_views(buf.name);
    for (auto& l : links) {
        const std::string& bname = node.buffers[l.buf].name;
        if (in(later, l.target)) {
            auto it = concat_views.find(l.target);
            if (it == concat_views.end()) {
                concat_views.emplace(l.target,
                                     std::make_pair(st, std::vector<std::string>{bname}));
            } else {
                it->second.first = std::min(it->second.first, st);
                it->second.second.push_back(bname);
            }
        } else {
            live.link(bname, l.target);
        }
        EventBatch& e = *batch;
        e.kind.set("buffer_aliased");
        e.step.set(st);
        e.buffer.set(bname);
        e.target.set(l.target);
        e.relation.set(l.mutation ? "mutation" : "alias");
        e.node.set(node.name);
        end_row();
    }
    static const std::string COLL = "_CollectiveKernel", WAIT = "_WaitKernel";
    if (node.ir == COLL || node.cls == COLL) {
        collective_nodes.insert(node.name);
        collective(node, st, kernel);
    } else if (node.ir == WAIT || node.cls == WAIT) {
        OptStr coll;
        for (auto& r : reads) {
            OpenBuf* ob = live.open.get(r);
            if (ob && collective_nodes.count(ob->producer)) {
                coll = ob->producer;
                break;
            }
        }
        EventBatch& e = *batch;
        e.kind.set("collective_waited");
        e.step.set(st);
        e.node.set(node.name);
        set_opt(e.collective, coll);
        std::string& at = e.attrs.begin();
        at.append("{\"reads\":");
        json_str_list(at, reads);
        at.push_back('}');
        e.attrs.commit();
        end_row();
    }
    std::vector<const std::string*> nn;
    nn.push_back(&node.name);
    for (auto& s : node.snodes) nn.push_back(&s);
    live.node(nn, st);
    frees();
}

void Parser::frees() {
    for (auto& c : live.closed) {
        if (inputs.contains(c.buffer)) continue;
        EventBatch& e = *batch;
        e.kind.set("buffer_freed");
        e.step.set(c.last);
        e.buffer.set(c.buffer);
        e.reason.set(c.reason);
        end_row();
    }
    live.closed.clear();
}

void Parser::link_concat_views(const std::string& name) {
    auto it = concat_views.find(name);
    if (it == concat_views.end()) return;
    auto views = std::move(it->second.second);
    concat_views.erase(it);
    for (auto& v : views)
        if (live.open.get(v)) live.link(v, name);
}

void Parser::shape_text(std::string& out, const std::vector<std::string>& dims) {
    out.assign("[");
    for (size_t i = 0; i < dims.size(); ++i) {
        if (i) out.append(", ");
        out.append(dims[i]);
    }
    out.push_back(']');
}

[[noreturn]] void Parser::out_of_range(int64_t line, const std::string& name,
                                       const Storage& s) {
    fail(line, "buffer " + name + ": " + s.big + " bytes is out of range (more than 64 bits)");
}

void Parser::declare_inputs(const Node& node, const std::vector<std::string>& names) {
    for (auto& name : names) {
        if (produced.contains(name) || inputs.contains(name)) continue;
        const std::string* li = top_layouts.get(name);
        static const Layout none;
        const Layout& L = (li && !li->empty()) ? parse_layout(*li) : none;
        std::optional<Storage> stg;
        if (L.has_size && L.has_stride) {
            bool overflow;
            stg = layout_storage(L, &overflow);
            if (overflow) out_of_range(node.line, name, *stg);
        }
        inputs[name] = stg ? stg->bytes : std::nullopt;
        EventBatch& e = *batch;
        e.kind.set("buffer_allocated");
        e.step.set_null();
        e.buffer.set(name);
        set_opt(e.bytes, stg ? stg->bytes : std::nullopt);
        e.node.set_null();
        if (L.has_kind)
            e.layout.set(L.kind);
        else
            e.layout.set_null();
        layout_columns(L);
        set_opt(e.size_expr, stg ? stg->expr : std::nullopt);
        e.is_input.set(true);
        e.line.set(node.line);
        end_row();
    }
}

void Parser::layout_columns(const Layout& L) {
    EventBatch& e = *batch;
    set_opt(e.dtype, L.dtype);
    if (L.has_size)
        e.shape.set(L.shape_text);
    else
        e.shape.set_null();
    if (L.has_stride)
        e.stride.set(L.stride_text);
    else
        e.stride.set_null();
    set_opt(e.device, L.device);
}

bool Parser::own_attr_key(sv k) {
    static const sv keys[] = {"ir_class",         "layout_args",     "written_from_step",
                              "written_by_views", "owns_no_storage", "bytes_unknown",
                              "layout_rule"};
    for (sv x : keys)
        if (k == x) return true;
    return false;
}

void Parser::allocate(const Node& node, int64_t st, const Buffer& buf) {
    const std::string* lay_text = buf.fields.get("layout");
    if (!lay_text)
        fail(buf.line, "buffer " + buf.name + " of " + node.name + " has no .layout line");
    const Layout& L = parse_layout(*lay_text);
    const std::string& kind = L.kind;
    auto& users = users_;
    users.clear();
    if (const std::string* u = buf.fields.get("users")) {
        scan_users(*u, [&](bool output, sv name, sv rest) {
            if (rest.find("is_weak=True") != sv::npos) return;
            users.emplace_back(output, name);
        });
    }
    produced.emplace(buf.name);
    bool clash = false;
    for (auto& kv : buf.fields)
        if (own_attr_key(kv.first)) clash = true;
    JObj obj;
    attrs_.clear();
    AttrWriter at{clash ? &obj : nullptr, attrs_};
    at.str("ir_class", buf.ir_class);
    if (!L.extra.empty()) {
        std::string& s = at.slot("layout_args");
        s.push_back('{');
        bool first = true;
        for (auto& kv : L.extra) {
            if (!first) s.push_back(',');
            first = false;
            put_json_string(s, kv.first, true);
            s.push_back(':');
            put_json_string(s, kv.second, true);
        }
        s.push_back('}');
    }
    for (auto& kv : buf.fields)
        if (kv.first != "layout" && kv.first != "users") at.str(kv.first, kv.second);
    int64_t alloc_step = st;
    auto views = concat_views.find(buf.name);
    if (views != concat_views.end()) {
        alloc_step = std::min(st, views->second.first);
        at.slot("written_from_step").append(std::to_string(views->second.first));
        json_str_list(at.slot("written_by_views"), views->second.second);
    }
    if (kind == "NonOwningLayout") {
        std::string into = "written into ";
        bool first = true;
        if (const std::string* al = buf.fields.get("aliases"))
            scan_quoted(*al, [&](sv t) {
                if (!first) into.append(", ");
                first = false;
                into.append(t);
            });
        at.str("owns_no_storage", into);
    }
    std::optional<int64_t> nbytes;
    OptStr size_expr;
    if (kind == "NoneLayout" || kind == "MultiOutputLayout" ||
        kind == "MutationLayoutSHOULDREMOVE" || kind == "NonOwningLayout") {
        nbytes = 0;
    } else if (L.has_size && L.has_stride) {
        bool overflow;
        const Storage& s = layout_storage(L, &overflow);
        if (overflow) out_of_range(buf.line, buf.name, s);
        nbytes = s.bytes;
        size_expr = s.expr;
        if (s.reason) {
            at.str("bytes_unknown", *s.reason);
            symbolic.push_back(buf.name);
        }
        if (kind != "FixedLayout")
            at.str("layout_rule", kind + " sized by the FixedLayout storage rule");
    } else {
        at.str("bytes_unknown", "layout " + kind + " has no size/stride");
        symbolic.push_back(buf.name);
    }
    live.buffer(buf.name, st, users, buf.line, nbytes, node.name);
    EventBatch& e = *batch;
    e.kind.set("buffer_allocated");
    e.step.set(alloc_step);
    e.buffer.set(buf.name);
    set_opt(e.bytes, nbytes);
    e.node.set(node.name);
    e.layout.set(kind);
    layout_columns(L);
    set_opt(e.size_expr, size_expr);
    e.is_input.set(false);
    e.line.set(buf.line);
    at.finish();
    e.attrs.set(attrs_);
    end_row();
}

void Parser::collective(const Node& node, int64_t st, const OptStr& kernel) {
    sv k = (kernel && !kernel->empty()) ? sv(*kernel) : sv(node.ir);
    std::vector<sv> op;
    size_t s = 0;
    while (true) {
        size_t d = k.find('.', s);
        if (d == sv::npos) {
            op.push_back(k.substr(s));
            break;
        }
        op.push_back(k.substr(s, d - s));
        s = d + 1;
    }
    sv name = (op.size() >= 2 && (op.back() == "default" || op.back() == "out"))
                  ? op[op.size() - 2]
                  : op.back();
    std::vector<std::string> touched;
    auto add = [&](sv n) {
        for (auto& t : touched)
            if (t == n) return;
        touched.emplace_back(n);
    };
    for (auto& r : reads) add(r);
    for (auto& buf : node.buffers)
        for (int r = 0; r < 2; ++r)
            if (const std::string* v = buf.fields.get(r == 0 ? "mutations" : "aliases"))
                scan_quoted(*v, add);
    bool all_known = true, any = false;
    int64_t mx = 0;
    for (auto& t : touched) {
        std::optional<int64_t> b;
        if (OpenBuf* ob = live.open.get(t))
            b = ob->nbytes;
        else if (auto* in = inputs.find(t))
            b = *in;
        if (!b) {
            all_known = false;
            continue;
        }
        mx = any ? std::max(mx, *b) : *b;
        any = true;
    }
    EventBatch& e = *batch;
    e.kind.set("collective_issued");
    e.step.set(st);
    e.node.set(node.name);
    e.op.set(name);
    if (any && all_known)
        e.bytes.set(mx);
    else
        e.bytes.set_null();
    e.buffers.begin_list();
    for (auto& t : touched) e.buffers.item(t);
    e.buffers.end_list();
    std::string& at = e.attrs.begin();
    at.append("{\"kernel\":");
    if (kernel)
        put_json_string(at, *kernel, true);
    else
        at.append("null");
    at.push_back('}');
    e.attrs.commit();
    end_row();
}

}  // namespace tlv::ir
