// The snapshot's records (ingest/cuda_snapshot.py's Interner and _Parser._consume):
// frames and stacks interned, trace entries as rows, segments and annotations.
#include "cuda_snapshot.hpp"

namespace tlv::snapshot {

bool Parser::is_frame_dict(const Val& v, const Parser& P) {
    return v.t == T::Dict && dict_get(*v.o, P.k_filename) && dict_get(*v.o, P.k_line) &&
           dict_get(*v.o, P.k_name);
}

void Parser::compact_memo(size_t start, int64_t at) {
    for (size_t k = start; k < memo.size(); ++k) {  // what Interner.compact reads, checked
        uint64_t s = memo.get(k);
        if ((s & 7) != 4) continue;
        const Val& v = side[s >> 3];
        if ((v.t == T::List || v.t == T::Dict || v.t == T::Set || v.t == T::Tuple) &&
            !checked.count(v.o.get()))
            spend(check_plain(v, at), at);
    }
    for (size_t k = start; k < memo.size(); ++k) {
        uint64_t s = memo.get(k);
        if ((s & 7) != 4) continue;
        const Val& v = side[s >> 3];
        if (v.t != T::List && v.t != T::Dict && v.t != T::Set && v.t != T::Tuple) continue;
        Val repl;
        repl.t = T::Streamed;
        if (v.t == T::Dict && is_frame_dict(v, *this)) {
            repl = Val::id(T::Frame, frame_id(v));
        } else if (v.t == T::List) {
            bool frames_like = true;
            for (auto& f : v.o->items)
                if (!(f.t == T::Frame || (f.t == T::Dict && dict_get(*f.o, k_filename)))) {
                    frames_like = false;
                    break;
                }
            if (frames_like) repl = Val::id(T::Stack, stack_id(v));
        }
        release(s);
        memo.set(k, slot_of(repl));
    }
    memo.freeze_before(pending_from >= 0 ? std::min((size_t)pending_from, start) : start);
}

int64_t Parser::frame_id(const Val& f) {
    if (f.t == T::Frame) return f.i;
    if (f.t != T::Dict)
        fail(std::string("a frame that is a ") + type_name(f) +
             ", expected a dict with filename, line and name");
    auto cached = frame_of_obj.find(f.o.get());
    if (cached != frame_of_obj.end()) return cached->second.first;
    int64_t id = frame_id_of(f);
    frame_of_obj.emplace(f.o.get(), std::make_pair(id, f.o));
    return id;
}

int64_t Parser::frame_id_of(const Val& f) {
    const Obj& d = *f.o;
    std::string key;
    auto part = [&](const std::string* k) {
        const Val* v = dict_get(d, k);
        json_of(v ? *v : Val::none(), key, true);
        key.push_back('\0');
    };
    part(k_filename);
    part(k_line);
    part(k_name);
    auto extra = std::make_shared<Obj>(T::Dict);
    for (size_t j = 0; j < d.items.size(); ++j) {
        const Val& k = d.items[j];
        if (k.t == T::Str && (k.s == k_filename || k.s == k_line || k.s == k_name)) continue;
        extra->items.push_back(k);
        extra->vals.push_back(d.vals[j]);
    }
    if (!extra->items.empty())
        json_of(Val::obj(T::Dict, extra), key, true);
    else
        key.append("None");
    auto it = frames.find(key);
    if (it != frames.end()) return it->second;
    int64_t id = (int64_t)frames.size() + 1;
    frames.emplace(std::move(key), id);
    Out o;
    o.kind = 2;
    o.id = id;
    o.value = f;
    outs.push_back(std::move(o));
    return id;
}

int64_t Parser::stack_id(const Val& frames_v) {
    if (frames_v.t == T::None) return 0;
    if (frames_v.t == T::Stack) return frames_v.i;
    if (frames_v.t != T::List)
        fail(std::string("frames that are a ") + type_name(frames_v) +
             ", expected a list of frames");
    if (frames_v.o->items.empty()) return 0;
    std::vector<int64_t>& ids = stack_ids_buf;
    ids.clear();
    for (auto& f : frames_v.o->items) ids.push_back(frame_id(f));
    return stack_of_ids(ids.data(), ids.size());
}

int64_t Parser::stack_of_ids(const int64_t* ids, size_t n) {
    stack_key.assign(reinterpret_cast<const char*>(ids), n * 8);
    auto it = stacks.find(stack_key);
    if (it != stacks.end()) return it->second;
    int64_t id = (int64_t)stacks.size() + 1;
    stacks.emplace(stack_key, id);
    Out o;
    o.kind = 3;
    o.id = id;
    o.ids.assign(ids, ids + n);
    outs.push_back(std::move(o));
    return id;
}

Head Parser::head_of(const Path& p, const Parser& P) {
    if (p.n < 1) return Head::Other;
    if (is_text(p.k[0], P.k_traces)) return Head::Traces;
    if (is_text(p.k[0], P.k_segments)) return Head::Segments;
    if (is_text(p.k[0], P.k_annotations)) return Head::Annotations;
    return Head::Other;
}

void Parser::handle(const Path& p, const Val& value, int64_t at) {
    spend(check_plain(value, at), at);
    if (items_to) {
        items_to->item(p, value, at);
        return;
    }
    bool top_item = p.n == -1;
    if (first_item) {
        first_item = false;
        if (top_item && value.t != T::Dict)
            fail(std::string("a pickle of a ") + type_name(value) +
                 ", not an allocator snapshot: expected a dict with 'segments' and "
                 "'device_traces' (torch.cuda.memory._dump_snapshot)");
    }
    if (top_item) {
        top = value;
        have_top = true;
        finish_top();
        return;
    }
    switch (head_of(p, *this)) {
        case Head::Traces: {
            Device& d = device(p.k[1]);
            declare(d);
            entry(d, value);
            return;
        }
        case Head::Segments: segment(value); return;
        case Head::Annotations: annotation(value); return;
        default: return;
    }
}

Device& Parser::device(const Val& index) {
    std::string text;
    if (index.t == T::Int) {
        if (index.i < 0)
            fail("device " + std::to_string(index.i) +
                 ": expected a device index (an int >= 0)");
        text = std::to_string(index.i);
    } else if (index.t == T::Big) {
        big_decimal(*index.s, text);
        if (text[0] == '-') fail("device " + text + ": expected a device index (an int >= 0)");
    } else {
        fail(std::string("a device that is a ") + type_name(index) +
             ": expected a device index (an int >= 0)");
    }
    auto it = device_at.find(text);
    if (it != device_at.end()) return *it->second;
    auto d = std::make_unique<Device>();
    d->index = index;
    d->key = "cuda:" + text;
    Device* raw = d.get();
    devices.push_back(std::move(d));
    device_at.emplace(text, raw);
    return *raw;
}

void Parser::flush_batch() {
    if (batch->rows == 0) return;
    Out o;
    o.kind = 0;
    o.batch = std::move(batch);
    o.key = batch_device;
    outs.push_back(std::move(o));
    batch = std::make_unique<EventBatch>();
}

void Parser::declare(Device& d) {
    if (d.declared) return;
    d.declared = true;
    flush_batch();
    Out o;
    o.kind = 1;
    o.value = d.index;
    outs.push_back(std::move(o));
}

bool Parser::int64_of(const Val* v, int64_t* out) {
    if (v && v->t == T::Int) {
        *out = v->i;
        return true;
    }
    return false;
}

bool Parser::time_of(const Val* v, int64_t* out) {
    if (v && v->t == T::Int && v->i >= -kTimeLimit && v->i <= kTimeLimit) {
        *out = v->i;
        return true;
    }
    return false;
}

std::string Parser::keys_of(const Val* keys, size_t n) {  // cuda_snapshot._keys
    std::vector<std::string> names;
    for (size_t j = 0; j < n; ++j) {
        const Val& k = keys[j];
        names.push_back(k.t == T::Str ? clean_text(*k.s)
                                      : std::string("<") + type_name(k) + ">");
    }
    std::sort(names.begin(), names.end());
    std::string out;
    for (size_t k = 0; k < names.size() && k < 8; ++k) {
        if (k) out.append(", ");
        out.append(names[k]);
    }
    if (names.size() > 8) out.append(", ...");
    return out;
}

void Parser::entry(Device& d, const Val& e) {
    if (e.t != T::Dict)
        fail("trace entry " + std::to_string(d.step) + " of " + d.key + " is a " +
             type_name(e) + ", expected a dict with an action");
    entry(d, View{e.o->items.data(), e.o->vals.data(), e.o->items.size()});
}

void Parser::entry(Device& d, const View& o) {
    const Val* action_v = o.get(k_action);
    if (!action_v || action_v->t != T::Str)
        fail("trace entry " + std::to_string(d.step) + " of " + d.key +
             " has no action (its keys: " + keys_of(o.keys, o.n) + ")");
    // interned: the same text is the same pointer
    const std::string* action_p = action_v->s;
    std::string cleaned;
    const bool odd = has_surrogate(*action_p);
    if (odd) cleaned = clean_text(*action_p);
    const std::string& action = odd ? cleaned : *action_p;
    int64_t addr = 0, size = 0, time_us = 0, stream = 0;
    const Val* addr_v = o.get(k_addr);
    const Val* size_v = o.get(k_size);
    const Val* time_v = o.get(k_time_us);
    const Val* stream_v = o.get(k_stream);
    bool has_addr = int64_of(addr_v, &addr), has_size = int64_of(size_v, &size);
    bool has_time = time_of(time_v, &time_us), has_stream = int64_of(stream_v, &stream);
    // attrs: every key this reader does not know, then columns it could not hold.
    // Entries mostly repeat the same text keys and scalar values: the last entry's
    // attrs are kept with those keys and values, and reused when they are the same.
    std::string& attrs = attrs_buf;
    bool fallback_cols = (addr_v && addr_v->t != T::None && !has_addr) ||
                         (size_v && size_v->t != T::None && !has_size) ||
                         (stream_v && stream_v->t != T::None && !has_stream) ||
                         (time_v && time_v->t != T::None && !has_time);
    bool same = !fallback_cols && attrs_sig_ok;
    if (same) {
        size_t na = 0;
        for (size_t j = 0; j < o.n && same; ++j) {
            const Val& k = o.keys[j];
            if (k.t == T::Str && (k.s == k_action || k.s == k_addr || k.s == k_size ||
                                  k.s == k_stream || k.s == k_time_us || k.s == k_frames))
                continue;
            const Val& v = o.vals[j];
            same = k.t == T::Str && na < attrs_sig.size() && attrs_sig[na].key == k.s &&
                   attrs_sig[na].t == v.t && same_scalar(v, attrs_sig[na]);
            ++na;
        }
        same = same && na == attrs_sig.size();
    }
    if (!same) {
        attrs.clear();
        attrs_sig.clear();
        attrs_sig_ok = !fallback_cols;
        std::vector<std::string>& akeys = akeys_buf;
        std::vector<const Val*>& avals = avals_buf;
        akeys.clear();
        avals.clear();
        KeyTexts seen;
        auto add_attr = [&](std::string k, const Val* v) {
            size_t q = seen.find(akeys, k);
            if (q < akeys.size()) {
                avals[q] = v;
                return;
            }
            seen.add(akeys, std::move(k));
            avals.push_back(v);
        };
        for (size_t j = 0; j < o.n; ++j) {
            const Val& k = o.keys[j];
            if (k.t == T::Str && (k.s == k_action || k.s == k_addr || k.s == k_size ||
                                  k.s == k_stream || k.s == k_time_us || k.s == k_frames))
                continue;
            add_attr(key_text(k), &o.vals[j]);
            const Val& v = o.vals[j];
            if (k.t == T::Str && scalar(v))
                attrs_sig.push_back(Sig{k.s, v.t, v.i});
            else
                attrs_sig_ok = false;
        }
        if (addr_v && addr_v->t != T::None && !has_addr) add_attr("addr", addr_v);
        if (size_v && size_v->t != T::None && !has_size) add_attr("size", size_v);
        if (stream_v && stream_v->t != T::None && !has_stream) add_attr("stream", stream_v);
        if (time_v && time_v->t != T::None && !has_time) add_attr("time_us", time_v);
        if (!akeys.empty()) {
            attrs.push_back('{');
            for (size_t q = 0; q < akeys.size(); ++q) {
                if (q) attrs.push_back(',');
                put_json_text(attrs, akeys[q]);
                attrs.push_back(':');
                json_of(*avals[q], attrs, false);
            }
            attrs.push_back('}');
        }
    }
    int64_t step = d.step;
    d.actions.add(action_p, action);
    if (has_time) {
        if (d.has_last && time_us < d.last_time)
            d.problem("time_goes_back", "time_us " + std::to_string(time_us) + " < " +
                                            std::to_string(d.last_time) +
                                            " (a ring buffer not in order?)");
        d.last_time = time_us;
        d.has_last = true;
    }
    bool has_block = false, has_corr = false;
    int64_t block = 0, corr = 0;
    if (has_addr && has_size) {
        if (action_p == a_alloc) {
            if (Made* m = d.live.get(addr)) {
                d.problem("alloc_of_live_address", "alloc at " + hex_of(addr) +
                                                       " still allocated since step " +
                                                       std::to_string(m->step));
                d.live_remove(addr);
            }
            d.freed_before.erase(addr);
            block = d.block_bytes(addr, size);
            has_block = true;
            d.live_add(addr, block);
            d.live.set(addr, Made{step, size, block});
        } else if (action_p == a_free_requested || action_p == a_free_completed) {
            Made* m = d.live.get(addr);
            Made made{};
            if (m) {
                made = *m;
                corr = made.step;
                block = made.block;
                has_corr = has_block = true;
                if (made.size != size)
                    d.problem("free_size_differs",
                              action + " of " + hex_of(addr) + " with " + std::to_string(size) +
                                  " bytes, allocated with " + std::to_string(made.size) +
                                  " at step " + std::to_string(made.step));
            } else if (d.freed_before.get(addr) && action_p == a_free_completed) {
                d.problem("double_free", "free_completed of " + hex_of(addr) +
                                             " again without an alloc between");
            }
            if (action_p == a_free_completed) {
                if (m) {
                    d.live.erase(addr);
                    d.live_remove(addr);
                } else {
                    d.before_n += 1;
                    d.before_bytes += size;
                    *d.freed_before.put(addr) = 1;
                    d.live_remove(addr);
                    d.estimated += 1;
                    block = Device::round_size(size);
                    has_block = true;
                }
            }
        } else if (action_p == a_segment_alloc || action_p == a_segment_map) {
            if (action_p == a_segment_map) d.exact_rule = false;
            d.drop_tentative(addr, (i128)addr + size);
            d.seg_add(addr, size);
            d.seg_made[addr] = step;
        } else if (action_p == a_segment_free || action_p == a_segment_unmap) {
            d.seg_remove(addr);
            auto it = d.seg_made.find(addr);
            if (it != d.seg_made.end()) {
                corr = it->second;
                has_corr = true;
                d.seg_made.erase(it);
            }
        }
    }
    const Val* frames_v = o.get(k_frames);
    int64_t sid = stack_id(frames_v ? *frames_v : Val::none());
    d.step += 1;
    // the row
    if (batch->rows >= kBatchRows || batch->text_bytes() > (1u << 30) ||
        (batch->rows && batch_device != d.key))
        flush_batch();
    batch_device = d.key;
    EventBatch& b = *batch;
    b.kind.set("allocator_action");
    b.step.set(step);
    b.op.set(action);
    if (has_addr)
        b.address.set(addr);
    else
        b.address.set_null();
    if (has_size)
        b.bytes.set(size);
    else
        b.bytes.set_null();
    if (has_block)
        b.block_bytes.set(block);
    else
        b.block_bytes.set_null();
    if (has_stream)
        b.stream.set(stream);
    else
        b.stream.set_null();
    if (has_time)
        b.ts_ns.set(time_us * 1000);
    else
        b.ts_ns.set_null();
    if (sid) b.stack_id.set((int32_t)sid);
    if (has_corr)
        b.correlation.set(corr);
    else
        b.correlation.set_null();
    b.device.set(d.key);
    if (!attrs.empty())
        b.attrs.set(attrs);
    else
        b.attrs.set_null();
    b.end_row();
}

bool Parser::scalar(const Val& v) {
    switch (v.t) {
        case T::None:
        case T::Bool:
        case T::Int:
        case T::Float:
        case T::Str:
        case T::Big:
        case T::Bytes:
        case T::BArr:
        case T::Frame:
        case T::Stack: return true;
        default: return false;
    }
}

bool Parser::same_scalar(const Val& v, const Sig& sig) {
    return v.t == T::None || v.i == sig.bits;
}

void Parser::segment(const Val& s) {
    if (s.t != T::Dict)
        fail(std::string("a segment that is a ") + type_name(s) + ", expected a dict");
    const Obj& so = *s.o;
    int64_t address, size;
    if (!int64_of(dict_get(so, k_address), &address) ||
        !int64_of(dict_get(so, k_total_size), &size))
        fail("a segment without address and total_size (its keys: " + keys_of(so) + ")");
    const Val* dev_v = dict_get(so, k_device);
    Val dev = dev_v ? *dev_v : Val::integer(0);
    const Val* blocks_v = dict_get(so, k_blocks);
    std::vector<Val> none;
    const std::vector<Val>* blocks = &none;
    if (blocks_v && truthy(*blocks_v)) {
        if (blocks_v->t != T::List) fail("segment blocks that are not a list");
        blocks = &blocks_v->o->items;
    }
    // The copy for Python: the same dict, each frames value replaced by its stack.
    auto out_seg = std::make_shared<Obj>(so);
    auto out_blocks = std::make_shared<Obj>(T::List);
    struct B {
        int64_t addr, size;
        bool active;
    };
    std::vector<B> parsed;
    i128 at = address;
    for (auto& b : *blocks) {
        int64_t bsize, baddr;
        if (b.t != T::Dict || !int64_of(dict_get(*b.o, k_size), &bsize))
            fail("a block without a size in segment " + hex_of(address));
        const Obj& bo = *b.o;
        if (!int64_of(dict_get(bo, k_address), &baddr)) {
            if (at < (i128)INT64_MIN || at > (i128)INT64_MAX)
                fail("blocks that run past the 64-bit address space in segment " +
                     hex_of(address));
            baddr = (int64_t)at;
        }
        auto ob = std::make_shared<Obj>(bo);
        const Val* frames_v = dict_get(bo, k_frames);
        Val frames = frames_v ? *frames_v : Val::none();
        bool history_layout = dict_get(bo, k_history) && !frames_v;
        std::shared_ptr<Obj> hist_copy;
        if (history_layout) {
            const Val* hist_v = dict_get(bo, k_history);
            bool empty = !truthy(*hist_v);
            if (!empty && (hist_v->t != T::List ||
                           (!hist_v->o->items.empty() && hist_v->o->items[0].t != T::Dict)))
                fail("a block history that is not a list of dicts");
            if (!empty && !hist_v->o->items.empty()) {
                const Val* hf = dict_get(*hist_v->o->items[0].o, k_frames);
                frames = hf ? *hf : Val::none();
                if (hf) {  // hand Python the stand-in in history[0]
                    hist_copy = std::make_shared<Obj>(*hist_v->o);
                    auto h0 = std::make_shared<Obj>(*hist_copy->items[0].o);
                    hist_copy->items[0] = Val::obj(T::Dict, h0);
                }
            }
        }
        const Val* state = dict_get(bo, k_state);
        if (!state || state->t != T::Str)
            fail("a block without a state in segment " + hex_of(address));
        int64_t sid = stack_id(frames);
        Val stand = Val::id(T::Stack, sid);
        if (frames_v) dict_set(*ob, Val::str(T::Str, k_frames), stand);
        if (hist_copy) {
            dict_set(*hist_copy->items[0].o, Val::str(T::Str, k_frames), stand);
            dict_set(*ob, Val::str(T::Str, k_history), Val::obj(T::List, hist_copy));
        }
        out_blocks->items.push_back(Val::obj(T::Dict, ob));
        bool active = *state->s == "active_allocated" || *state->s == "active_pending_free";
        parsed.push_back(B{baddr, bsize, active});
        at = (i128)baddr + bsize;
    }
    Device& d = device(dev);  // before the segment's frames, as Python evaluates it
    const Val* seg_frames = dict_get(so, k_frames);
    int64_t seg_sid = stack_id(seg_frames ? *seg_frames : Val::none());
    if (seg_frames) dict_set(*out_seg, Val::str(T::Str, k_frames), Val::id(T::Stack, seg_sid));
    if (blocks_v && blocks_v->t == T::List)
        dict_set(*out_seg, Val::str(T::Str, k_blocks), Val::obj(T::List, out_blocks));
    // _Device.add_segment: the replay's end state
    d.seg_add(address, size);
    const Val* expandable = dict_get(so, strs.get("is_expandable"));
    if (expandable && truthy(*expandable)) d.exact_rule = false;
    for (auto& b : parsed)
        if (b.active) { d.live_add(b.addr, b.size, true); }
    Out o;
    o.kind = 4;
    o.value = Val::obj(T::Dict, out_seg);
    outs.push_back(std::move(o));
}

void Parser::annotation(const Val& a) {
    flush_batch();  // annotations are rows too: keep the order
    Out o;
    o.kind = 5;
    o.value = a;
    outs.push_back(std::move(o));
}

void Parser::finish_top() {
    const char* expected_msg =
        ", not an allocator snapshot: expected a dict with "
        "'segments' and 'device_traces' "
        "(torch.cuda.memory._dump_snapshot)";
    if (top.t != T::Dict || !dict_get(*top.o, k_segments) || !dict_get(*top.o, k_traces)) {
        std::string with_keys;
        if (top.t == T::Dict && !top.o->items.empty())
            with_keys = " with keys " + keys_of(*top.o);
        fail(std::string("a pickle of a ") + type_name(top) + with_keys + expected_msg);
    }
    struct K {
        const std::string* key;
        T kind;
        const char* name;
    };
    const K want[] = {{k_segments, T::List, "list"},
                      {k_traces, T::List, "list"},
                      {k_annotations, T::List, "list"},
                      {k_settings, T::Dict, "dict"}};
    for (auto& w : want) {
        const Val* v = dict_get(*top.o, w.key);
        if (v && v->t != w.kind)
            fail("'" + *w.key + "' is a " + type_name(*v) + ", expected a " + w.name +
                 ": not an allocator snapshot in the layout torch writes");
    }
    const Val* segs = dict_get(*top.o, k_segments);
    if (truthy(*segs))
        for (auto& s : std::vector<Val>(segs->o->items)) segment(s);
    const Val* traces = dict_get(*top.o, k_traces);
    auto& tr = traces->o->items;
    for (size_t i = 0; i < tr.size(); ++i) {
        if (tr[i].t != T::List) fail("device_traces[" + std::to_string(i) + "] is not a list");
        for (auto& e : std::vector<Val>(tr[i].o->items)) {
            Device& d = device(Val::integer((int64_t)i));
            declare(d);
            entry(d, e);
        }
    }
    const Val* anns = dict_get(*top.o, k_annotations);
    if (anns && truthy(*anns))
        for (auto& x : anns->o->items) annotation(x);
    flush_batch();
}

}  // namespace tlv::snapshot
