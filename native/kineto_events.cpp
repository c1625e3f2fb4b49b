// The profiler-trace reader: one event to a row (mirrors kineto._Trace.consume).
#include "chrome_trace.hpp"

namespace tlv::kineto {

int Parser::key_id(std::string_view k) {
    const char* d = k.data();
    switch (k.size()) {
        case 2:
            if (!std::memcmp(d, "ph", 2)) return kPh;
            if (!std::memcmp(d, "ts", 2)) return kTs;
            return -1;
        case 3:
            if (!std::memcmp(d, "cat", 3)) return kCat;
            if (!std::memcmp(d, "pid", 3)) return kPid;
            if (!std::memcmp(d, "tid", 3)) return kTid;
            if (!std::memcmp(d, "dur", 3)) return kDur;
            return -1;
        case 4:
            if (!std::memcmp(d, "args", 4)) return kArgs;
            if (!std::memcmp(d, "name", 4)) return kName;
            return -1;
        case 5:
            if (!std::memcmp(d, "bytes", 5)) return kBytes;
            if (!std::memcmp(d, "dtype", 5)) return kDtype;
            if (!std::memcmp(d, "Bytes", 5)) return kBytesCap;
            return -1;
        case 6:
            if (!std::memcmp(d, "device", 6)) return kDevice;
            if (!std::memcmp(d, "stream", 6)) return kStream;
            return -1;
        case 9: return std::memcmp(d, "Device Id", 9) ? -1 : kDeviceId;
        case 11:
            if (!std::memcmp(d, "correlation", 11)) return kCorrelation;
            if (!std::memcmp(d, "Device Type", 11)) return kDeviceType;
            return -1;
        case 13: return std::memcmp(d, "In msg nelems", 13) ? -1 : kInNelems;
        case 14:
            if (!std::memcmp(d, "correlation_id", 14)) return kCorrelationId;
            if (!std::memcmp(d, "Out msg nelems", 14)) return kOutNelems;
            return -1;
        default: return -1;
    }
}

void Parser::index(size_t obj, const JNode** out) {
    for (int k = 0; k < kKeys; ++k) out[k] = nullptr;
    const auto& nodes = doc.nodes;
    size_t i = obj + 1;
    for (size_t m = 0; m < nodes[obj].count; ++m) {
        const JNode& kn = nodes[i];
        size_t v = i + 1;
        int id = key_id(kn.esc ? doc.str(kn, scratch) : doc.text(kn));
        if (id >= 0) out[id] = &nodes[v];
        i = nodes[v].end;
    }
}

bool Parser::is_str(const JNode* n, std::string_view v) const {
    return n && n->t == JT::Str && doc.str_eq(*n, v);
}

std::string Parser::pystr(const JNode* n, const char* key) {
    if (!n || n->t == JT::Null) return "None";
    switch (n->t) {
        case JT::True: return "True";
        case JT::False: return "False";
        case JT::Int: return std::string(int_text(doc.text(*n)));
        case JT::Float: return float_str(n->d);
        case JT::Str: {
            std::string b;
            return std::string(doc.str(*n, b));
        }
        default: break;
    }
    throw BadEvent{std::string("'") + key + "' is " + py_type_name(n) +
                   ": expected a number or a string"};
}

std::pair<int, std::string> Parser::key_of(const JNode* n, const char* key) {
    if (!n || n->t == JT::Null) return {0, ""};
    switch (n->t) {
        case JT::True: return {1, "1"};
        case JT::False: return {1, "0"};
        case JT::Int: return {2, std::string(int_text(doc.text(*n)))};
        case JT::Float: {
            if (std::isnan(n->d))
                return {3, "nan" + std::to_string(++nan_keys)};  // never equal
            std::string t;
            put_py_float(t, n->d == 0 ? 0.0 : n->d);
            return {3, t};
        }
        case JT::Str: {
            std::string b;
            return {4, std::string(doc.str(*n, b))};
        }
        default: break;
    }
    throw BadEvent{std::string("'") + key + "' is " + py_type_name(n) +
                   ": expected a number or a string"};
}

int64_t Parser::checked(const Big& v, const std::string& key) {
    int64_t out;
    if (!v.fits_i64(&out))
        throw BadEvent{"'" + key + "' is " + v.str() + ": out of the 64-bit range"};
    return out;
}

int64_t Parser::int64_of(std::string_view t, const char* key) {
    bool neg = !t.empty() && t[0] == '-';
    size_t nd = t.size() - (neg ? 1 : 0);
    if (nd > 0 && nd <= 18) {
        int64_t v = 0;
        for (size_t i = neg ? 1 : 0; i < t.size(); ++i) v = v * 10 + (t[i] - '0');
        return neg ? -v : v;
    }
    return checked(Big::of_int_text(t), key);
}

bool Parser::int_or_none(const JNode* n, const char* key, int64_t* out) {
    if (!n) return false;
    if (n->t == JT::Int) {
        *out = int64_of(doc.text(*n), key);
        return true;
    }
    if (n->t == JT::Str) {
        std::string b;
        auto t = doc.str(*n, b);
        if (t.empty()) return false;
        for (char c : t)
            if (c < '0' || c > '9') return false;
        *out = checked(Big::of_int_text(t), key);
        return true;
    }
    return false;
}

int64_t Parser::ns(const JNode* n, const char* key) {
    if (n && n->t == JT::Int) {
        std::string_view t = doc.text(*n);
        size_t nd = t.size() - (t[0] == '-' ? 1 : 0);
        if (nd <= 15) return int64_of(t, key) * 1000;
        Big v = Big::of_int_text(t);
        if (v.digits != "0") v.digits += "000";
        return checked(v, std::string(key) + " in ns");
    }
    if (n && n->t == JT::Float) {
        double v = n->d;
        if (std::isnan(v) || std::isinf(v))
            throw BadEvent{"'" + std::string(key) + "' is " + float_str(v) +
                           ": expected a finite number"};
        if (-kExactFloatUs < v && v < kExactFloatUs) {
            double whole = std::trunc(v);
            double frac = std::nearbyint((v - whole) * 1000.0);
            return (int64_t)whole * 1000 + (int64_t)frac;
        }
        return checked(us_to_ns_text(doc.text(*n)), std::string(key) + " in ns");
    }
    throw BadEvent{"'" + std::string(key) + "' is " + py_type_name(n) +
                   ": expected a number of microseconds"};
}

Big Parser::us_to_ns_text(std::string_view text) {
    // chrome_trace.us_to_ns: up to three decimals exactly, else Decimal arithmetic
    size_t dot = text.find('.');
    std::string_view whole = text.substr(0, dot);
    std::string_view frac =
        dot == std::string_view::npos ? std::string_view() : text.substr(dot + 1);
    auto all_digits = [](std::string_view x) {
        if (x.empty()) return false;
        for (char c : x)
            if (c < '0' || c > '9') return false;
        return true;
    };
    std::string_view wd = whole;
    while (!wd.empty() && wd[0] == '-') wd.remove_prefix(1);  // lstrip('-')
    if (frac.size() <= 3 && all_digits(frac) && all_digits(wd)) {
        std::string digits(wd);
        digits.append(frac);
        digits.append(3 - frac.size(), '0');
        Big b = Big::of_int_text(digits);
        b.neg = !whole.empty() && whole[0] == '-' && b.digits != "0";
        return b;
    }
    return decimal_us_to_ns(text);
}

void Parser::count_device(std::string_view d) {
    if (last_device < devices.size() && devices[last_device] == d) return;
    for (size_t i = 0; i < devices.size(); ++i)
        if (devices[i] == d) {
            last_device = i;
            return;
        }
    devices.emplace_back(d);
    last_device = devices.size() - 1;
}

unsigned Parser::dtype_bytes(std::string_view t) {
    static const std::pair<const char*, unsigned> table[] = {
        {"Float", 4},        {"Double", 8},        {"Half", 2},          {"BFloat16", 2},
        {"Int", 4},          {"Long", 8},          {"Short", 2},         {"Char", 1},
        {"Byte", 1},         {"Bool", 1},          {"Float8_e4m3fn", 1}, {"Float8_e5m2", 1},
        {"ComplexFloat", 8}, {"ComplexDouble", 16}};
    for (auto& e : table)
        if (t == e.first) return e.second;
    return 0;
}

bool Parser::message_bytes(size_t args, int64_t* out) {
    if (args == 0) return false;
    const JNode* dt = argk[kDtype];
    if (!dt || dt->t != JT::Str) return false;
    std::string b;
    unsigned size = dtype_bytes(doc.str(*dt, b));
    if (!size) return false;
    bool have = false;
    Big best;
    for (int k : {kInNelems, kOutNelems}) {
        const JNode* c = argk[k];
        if (!c || c->t != JT::Int) continue;
        Big v = Big::of_int_text(doc.text(*c));
        if (!have || best.less(v)) best = v;
        have = true;
    }
    if (!have) return false;
    *out = checked(best.times_small(size), "message bytes");
    return true;
}

bool Parser::is_comm_kernel(std::string_view name) {
    for (size_t i = 0; i + 4 <= name.size(); ++i) {
        char c = lower(name[i]);
        if ((c == 'n' || c == 'r') && lower(name[i + 1]) == 'c' && lower(name[i + 2]) == 'c' &&
            lower(name[i + 3]) == 'l')
            return true;
    }
    return false;
}

const char* Parser::jax_gpu_category(std::string_view name) {
    std::string low(name);
    for (auto& c : low)
        if (c >= 'A' && c <= 'Z') c = (char)(c + 32);
    std::string_view first(low);
    size_t us = first.find('_');
    if (us != std::string_view::npos) first = first.substr(0, us);
    if (low.rfind("memcpy", 0) == 0 || first.find("memcpy") != std::string_view::npos)
        return "memcpy";
    if (low.rfind("memset", 0) == 0) return "memset";
    return "kernel";
}

size_t Parser::args_of() {
    const JNode* a = top[kArgs];
    if (!a || !doc.truthy(*a)) return 0;
    if (a->t != JT::Obj)
        throw BadEvent{std::string("'args' is ") + py_type_name(a) + ": expected an object"};
    size_t i = (size_t)(a - doc.nodes.data());
    if (args_obj != i) {
        index(i, argk);
        args_obj = i;
    }
    return i;
}

void Parser::check_text(bool ok) {
    if (!ok) throw BadEvent{"a \\u escape of an unpaired UTF-16 surrogate: not valid text"};
}

const std::string& Parser::device_name(const JNode* dev) {
    int type = !dev ? -1 : dev->t == JT::Int ? 2 : (dev->t == JT::Str && !dev->esc) ? 4 : -1;
    if (type >= 0 && type == last_dev_type && doc.text(*dev) == last_dev_text)
        return *last_dev_name;
    auto k = key_of(dev, "device");
    auto it = device_names.find(k);
    if (it == device_names.end())
        it = device_names.emplace(k, "cuda:" + pystr(dev, "device")).first;
    last_dev_type = type;
    if (type >= 0) last_dev_text.assign(doc.text(*dev));
    last_dev_name = &it->second;
    return it->second;
}

void Parser::event() {
    index(0, top);
    args_obj = 0;
    const JNode* ph = top[kPh];
    if (!is_str(ph, "X")) {
        other_event(ph);
        return;
    }
    const JNode* cat = top[kCat];
    if (cat && cat->t != JT::Null && cat->t != JT::Str)
        throw BadEvent{std::string("'cat' is ") + py_type_name(cat) + ": expected a string"};
    bool cat_none = !cat || cat->t == JT::Null;
    std::string catbuf;
    std::string_view catv = cat_none ? std::string_view() : s(cat, catbuf);
    size_t args = args_of();
    const char* category = nullptr;
    if (!cat_none) {
        if (catv == "kernel")
            category = "kernel";
        else if (catv == "gpu_memcpy")
            category = "memcpy";
        else if (catv == "gpu_memset")
            category = "memset";
        else if (catv == "gpu_user_annotation")
            category = "gpu_annotation";
    }
    const std::string* jax_device = nullptr;
    if (!category) {
        if (cat_none) {
            auto k = key_of(top[kPid], "pid");
            if (!gpu_pids.empty()) {
                auto it = gpu_pids.find(k);
                if (it != gpu_pids.end()) jax_device = &it->second;
            }
        } else if (catv == "Trace") {
            skipped.add(catv);
            return;
        }
    }
    const JNode* name = top[kName];
    if (!name || name->t != JT::Str)
        throw BadEvent{std::string("an 'X' event whose 'name' is ") +
                       (name ? py_type_name(name) : "NoneType") + ": expected a string"};
    bool name_lone = false;
    std::string_view namev = name->esc ? doc.str(*name, scratch2, &name_lone) : doc.text(*name);
    bool have_bytes = false;
    int64_t nbytes = 0;
    std::string_view device;
    const JNode* stream;
    if (category || jax_device) {
        if (!category) {
            category = jax_gpu_category(namev);
            device = *jax_device;
        } else {
            const JNode* dev = args ? argk[kDevice] : nullptr;
            if (!dev) dev = top[kPid];
            device = device_name(dev);
        }
        if (std::string_view(category) == "kernel") {
            if (is_comm_kernel(namev)) {
                category = "comm";
                have_bytes = message_bytes(args, &nbytes);
            }
        } else if (std::string_view(category) != "gpu_annotation") {
            have_bytes = int_or_none(arg(args, kBytes), "bytes", &nbytes);
        }
        stream = args ? argk[kStream] : nullptr;
        if (!stream) stream = top[kTid];
    } else {
        if (cat_none)
            category = "cpu_op";
        else if (catv == "cpu_op")
            category = "cpu_op";
        else if (catv == "cuda_runtime" || catv == "cuda_driver" || catv == "hip_runtime")
            category = "runtime";
        else if (catv == "user_annotation")
            category = "annotation";
        else if (catv == "python_function")
            category = "python";
        else
            category = "other";
        if (std::string_view(category) == "cpu_op" && namev == "record_param_comms") {
            category = "comm_call";
            have_bytes = message_bytes(args, &nbytes);
        }
        device = "cpu";
        stream = top[kTid];
    }
    const JNode* corr = arg(args, kCorrelation);
    int64_t ts_ns = ns(top[kTs], "ts");
    const JNode* dur = top[kDur];
    int64_t dur_ns = (!dur || dur->t == JT::Null) ? 0 : ns(dur, "dur");
    static const std::string_view drop[] = {"name", "ph", "ts", "dur"};
    // attrs written straight into its column (no copy); a failure ends the parse
    std::string& attrs = batch->attrs.begin();
    size_t mark = attrs.size();
    if (!(doc.dump(0, attrs, false, drop, 4) && !name_lone)) {
        attrs.resize(mark);
        check_text(false);
    }
    batch->attrs.commit();
    int64_t stream_v = 0;
    bool have_stream = stream && stream->t == JT::Int;
    if (have_stream) stream_v = int64_of(doc.text(*stream), "stream");
    int64_t corr_v = 0;
    bool have_corr;
    if (corr && corr->t == JT::Int) {
        corr_v = int64_of(doc.text(*corr), "correlation");
        have_corr = true;
    } else {
        const JNode* c = (!corr || corr->t == JT::Null) ? arg(args, kCorrelationId) : corr;
        have_corr = int_or_none(c, "correlation", &corr_v);
    }
    EventBatch& bt = *batch;
    bt.kind.set("kernel_measured");
    bt.name.set(namev);
    bt.category.set(category);
    bt.device.set(device);
    if (have_stream)
        bt.stream.set(stream_v);
    else
        bt.stream.set_null();
    bt.ts_ns.set(ts_ns);
    bt.dur_ns.set(dur_ns);
    if (have_corr)
        bt.correlation.set(corr_v);
    else
        bt.correlation.set_null();
    if (have_bytes)
        bt.bytes.set(nbytes);
    else
        bt.bytes.set_null();
    end_row(category, device);
}

void Parser::end_row(std::string_view category, std::string_view device) {
    batch->end_row();
    kept.add(category);
    count_device(device);
    if (batch->rows >= kBatchRows || batch->text_bytes() >= kBatchText) flush();
}

void Parser::flush() {
    if (batch->rows == 0) return;
    size_t attrs_size = batch->attrs.data.size(), rows = batch->rows;
    done.push_back(std::move(batch));
    outs.push_back({2, {}, {}, done.size() - 1});
    batch = std::make_unique<EventBatch>();
    // the next batch will be about as large: one allocation per column, no regrowth
    batch->attrs.data.reserve(attrs_size + attrs_size / 8);
    batch->attrs.off.reserve(rows + 1);
}

void Parser::other_event(const JNode* ph) {
    const JNode* name = top[kName];
    if ((is_str(ph, "i") || is_str(ph, "I")) && is_str(name, "[memory]")) {
        memory_event();
        return;
    }
    if (is_str(ph, "M")) metadata_event(name);
    skipped.add("ph=" + pystr(ph, "ph"));
}

void Parser::metadata_event(const JNode* name) {
    if (!is_str(name, "process_name")) return;
    size_t args = args_of();
    const JNode* label = arg(args, kName);
    if (!label || label->t != JT::Str) return;
    bool lone = false;
    std::string b;
    std::string_view lv = doc.str(*label, b, &lone);
    if (lv.rfind("/device:GPU:", 0) != 0) return;
    std::string device = "cuda:" + std::string(lv.substr(lv.rfind(':') + 1));
    if (lone) check_text(!has_surrogate(device));  // only the stored part must be text
    gpu_pids[key_of(top[kPid], "pid")] = device;
}

bool Parser::has_surrogate(std::string_view s) {  // WTF-8 surrogate bytes ED A0..BF xx
    for (size_t i = 0; i + 1 < s.size(); ++i)
        if ((uint8_t)s[i] == 0xED && (uint8_t)s[i + 1] >= 0xA0) return true;
    return false;
}

void Parser::memory_event() {
    size_t args = args_of();
    std::string device = "cpu";
    const JNode* dt = arg(args, kDeviceType);
    if (dt && ((dt->t == JT::Int && int_text(doc.text(*dt)) == "1") ||
               (dt->t == JT::Float && dt->d == 1.0) || dt->t == JT::True))
        device = "cuda:" + pystr(arg(args, kDeviceId), "Device Id");
    const JNode* tid = top[kTid];
    int64_t ts_ns = ns(top[kTs], "ts");
    int64_t nbytes = 0;
    bool have_bytes = int_or_none(arg(args, kBytesCap), "Bytes", &nbytes);
    static const std::string_view drop[] = {"name", "ph", "ts"};
    attrs_buf.clear();
    check_text(doc.dump(0, attrs_buf, false, drop, 3));
    bool have_stream = tid && tid->t == JT::Int;
    int64_t stream_v = have_stream ? int64_of(doc.text(*tid), "tid") : 0;
    EventBatch& bt = *batch;
    bt.kind.set("kernel_measured");
    bt.name.set("[memory]");
    bt.category.set("memory");
    bt.device.set(device);
    if (have_stream)
        bt.stream.set(stream_v);
    else
        bt.stream.set_null();
    bt.ts_ns.set(ts_ns);
    bt.dur_ns.set(0);
    bt.correlation.set_null();
    if (have_bytes)
        bt.bytes.set(nbytes);
    else
        bt.bytes.set_null();
    bt.attrs.set(attrs_buf);
    end_row("memory", device);
}

}  // namespace tlv::kineto
