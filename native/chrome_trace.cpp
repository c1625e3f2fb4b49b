// Chrome-trace JSON (PyTorch profiler / Kineto, jax.profiler) to kernel_measured rows.
//
// The compiled twin of ingest/chrome_trace.py + ingest/kineto.py (`_Trace.consume`),
// which stay the specification: tests/test_native.py runs both on every fixture and on
// mutated traces and requires the same rows, or the same error line. Top-level entries
// other than traceEvents are handed back as their JSON text (Python builds the timeline
// from them, as before); events are kept in columns, never as Python objects.
#include <Python.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "columns.hpp"
#include "common.hpp"
#include "json_dom.hpp"
#include "pyjson.hpp"

namespace tlv {
namespace {

constexpr size_t kMaxValue = size_t(256) << 20;  // one entry larger than this is refused
constexpr size_t kBatchRows = 16384;
constexpr size_t kBatchText = size_t(16) << 20;
constexpr double kExactFloatUs = 8796093022208.0;  // 2**43

// A counter that keeps first-seen order (Python's Counter/dict order).
struct Counts {
    std::vector<std::pair<std::string, int64_t>> items;
    void add(std::string_view k, int64_t n = 1) {
        for (auto& it : items)
            if (it.first == k) { it.second += n; return; }
        items.emplace_back(std::string(k), n);
    }
    PyObject* to_py() const {
        PyObject* l = PyList_New((Py_ssize_t)items.size());
        if (!l) return nullptr;
        for (size_t i = 0; i < items.size(); ++i) {
            PyObject* k = py_str(items[i].first);
            if (!k) { Py_DECREF(l); return nullptr; }
            PyList_SET_ITEM(l, (Py_ssize_t)i, Py_BuildValue("(NL)", k, (long long)items[i].second));
        }
        return l;
    }
};

struct BadEvent {
    std::string msg;
};

// ---- numbers as Python's int/float would hold them -------------------------------------

struct Big {  // a decimal integer as canonical text (sign + digits, no leading zeros)
    bool neg = false;
    std::string digits = "0";
    std::string str() const { return (neg && digits != "0" ? "-" : "") + digits; }
    bool fits_i64(int64_t* out) const {
        static const std::string kMax = "9223372036854775807", kMin = "9223372036854775808";
        const std::string& lim = neg ? kMin : kMax;
        if (digits.size() > lim.size() || (digits.size() == lim.size() && digits > lim))
            return false;
        unsigned long long v = 0;
        for (char c : digits) v = v * 10 + (unsigned)(c - '0');
        *out = neg ? (int64_t)(0 - v) : (int64_t)v;
        return true;
    }
    static Big of_int_text(std::string_view t) {
        Big b;
        if (!t.empty() && t[0] == '-') { b.neg = true; t.remove_prefix(1); }
        size_t z = 0;
        while (z + 1 < t.size() && t[z] == '0') ++z;
        b.digits = std::string(t.substr(z));
        if (b.digits == "0") b.neg = false;
        return b;
    }
    Big times_small(unsigned m) const {
        Big r;
        r.neg = neg;
        std::string out;
        unsigned carry = 0;
        for (size_t i = digits.size(); i-- > 0;) {
            unsigned v = (unsigned)(digits[i] - '0') * m + carry;
            out.push_back((char)('0' + v % 10));
            carry = v / 10;
        }
        while (carry) { out.push_back((char)('0' + carry % 10)); carry /= 10; }
        while (out.size() > 1 && out.back() == '0') out.pop_back();
        std::reverse(out.begin(), out.end());
        r.digits = out;
        if (r.digits == "0") r.neg = false;
        return r;
    }
    bool less(const Big& o) const {  // this < o
        if (neg != o.neg) return neg;
        bool mag_less = digits.size() != o.digits.size() ? digits.size() < o.digits.size()
                                                         : digits < o.digits;
        bool equal = digits == o.digits;
        return neg ? (!mag_less && !equal) : mag_less;
    }
};

// Decimal(text) * 1000 rounded half-even to an integer, with Decimal's 28 significant
// digits: what ingest/chrome_trace.us_to_ns does for numbers a double cannot hold exactly.
Big decimal_us_to_ns(std::string_view t) {
    Big r;
    if (!t.empty() && t[0] == '-') { r.neg = true; t.remove_prefix(1); }
    std::string mant;
    long exp = 0;
    size_t i = 0;
    for (; i < t.size() && t[i] >= '0' && t[i] <= '9'; ++i) mant.push_back(t[i]);
    if (i < t.size() && t[i] == '.') {
        ++i;
        for (; i < t.size() && t[i] >= '0' && t[i] <= '9'; ++i) { mant.push_back(t[i]); --exp; }
    }
    if (i < t.size() && (t[i] == 'e' || t[i] == 'E')) {
        ++i;
        bool eneg = false;
        if (i < t.size() && (t[i] == '+' || t[i] == '-')) eneg = t[i++] == '-';
        long e = 0;
        for (; i < t.size(); ++i) e = std::min(e * 10 + (t[i] - '0'), 100000000L);
        exp += eneg ? -e : e;
    }
    size_t z = 0;
    while (z + 1 < mant.size() && mant[z] == '0') ++z;
    mant.erase(0, z);
    exp += 3;
    auto round_off = [&](size_t keep) {  // keep the first `keep` digits, half-even
        if (keep >= mant.size()) return;
        std::string rest = mant.substr(keep);
        mant.resize(keep);
        bool up;
        if (rest[0] > '5') up = true;
        else if (rest[0] < '5') up = false;
        else if (rest.find_first_not_of('0', 1) != std::string::npos) up = true;
        else up = !mant.empty() && ((mant.back() - '0') & 1);
        if (up) {
            size_t k = mant.size();
            while (k > 0 && mant[k - 1] == '9') mant[--k] = '0';
            if (k == 0) mant.insert(mant.begin(), '1');
            else ++mant[k - 1];
        }
        if (mant.empty()) mant = "0";
    };
    if (mant != "0" && mant.size() > 28) {  // the context's precision, before to_integral
        long drop = (long)mant.size() - 28;
        round_off(28);
        exp += drop;
        if (mant.size() > 28) { mant.pop_back(); ++exp; }
    }
    if (exp >= 0) {
        if (mant != "0") mant.append((size_t)std::min(exp, 400L), '0');
    } else {
        long frac = -exp;
        if ((long)mant.size() <= frac) {
            // |value| < 1: 0, or 1 when above one half (half-even rounds 0.5 to 0)
            std::string padded = std::string((size_t)(frac - (long)mant.size()), '0') + mant;
            bool above_half = padded[0] > '5' ||
                (padded[0] == '5' && padded.find_first_not_of('0', 1) != std::string::npos);
            mant = above_half ? "1" : "0";
        } else {
            round_off(mant.size() - (size_t)frac);
        }
    }
    z = 0;
    while (z + 1 < mant.size() && mant[z] == '0') ++z;
    r.digits = mant.substr(z);
    if (r.digits == "0") r.neg = false;
    return r;
}

std::string float_str(double d) {  // str(float) (Python spells inf and nan in lowercase)
    if (std::isnan(d)) return "nan";
    if (std::isinf(d)) return d < 0 ? "-inf" : "inf";
    std::string s;
    put_py_float(s, d);
    return s;
}

// ---- the parser ------------------------------------------------------------------------

enum class St { Start, ObjFirst, ObjKey, ObjSep, EvOpen, EvFirst, EvItem, EvSep, Done };

struct Parser {
    std::string path;
    Window w;
    St st = St::Start;
    bool bare = false;
    bool started = false;
    JsonDoc doc;
    std::string scratch, scratch2, attrs_buf;
    std::unique_ptr<EventBatch> batch = std::make_unique<EventBatch>();
    std::vector<std::unique_ptr<EventBatch>> done;
    // outputs not yet handed to Python, in order: ('meta', key, raw) / ('start',) / batch
    struct Out { int kind; std::string key, raw; size_t batch; };
    std::vector<Out> outs;
    Counts kept, skipped;
    std::vector<std::string> devices;  // distinct device strings, first-seen order
    std::map<std::pair<int, std::string>, std::string> gpu_pids;  // jax pid -> cuda:N
    std::map<std::pair<int, std::string>, std::string> device_names;
    uint64_t nan_keys = 0;  // a NaN key equals nothing, not even another NaN

    int64_t line_of(size_t p) const { return w.line_at(p); }

    [[noreturn]] void fail_at(size_t p, const std::string& msg) {
        throw ParseError{line_of(p), msg};
    }

    // -- the streaming state machine (mirrors chrome_trace._entries/_object/_events) --
    void run() {
        for (;;) {
            w.compact();
            const std::string& b = w.buf;
            size_t p = w.pos;
            doc.data = b;
            doc.eof = w.eof;
            auto skip_ws = [&]() {
                while (p < b.size() && (b[p] == ' ' || b[p] == '\t' || b[p] == '\n' || b[p] == '\r'))
                    ++p;
                return p < b.size();
            };
            switch (st) {
                case St::Start: {
                    if (!skip_ws()) { if (w.eof) expect_fail(p, "a JSON object with traceEvents (a Chrome trace)"); return; }
                    if (b[p] == '{') { w.pos = p + 1; st = St::ObjFirst; }
                    else if (b[p] == '[') { w.pos = p; bare = true; st = St::EvOpen; }
                    else expect_fail(p, "a JSON object with traceEvents (a Chrome trace)");
                    break;
                }
                case St::ObjFirst: {
                    if (!skip_ws()) { if (w.eof) expect_fail(p, "a key string"); return; }
                    if (b[p] == '}') { w.pos = p + 1; st = St::Done; }
                    else { w.pos = p; st = St::ObjKey; }
                    break;
                }
                case St::ObjKey: {
                    skip_ws();
                    size_t kend;
                    if (!value_at(p, "a key string", &kend)) return;
                    if (doc.nodes[0].t != JT::Str)
                        fail_at(p, "expected a key string, found " + std::string(b, p, std::min<size_t>(kend - p, 60)));
                    std::string key(doc.str(doc.nodes[0], scratch));
                    size_t q = kend;
                    while (q < b.size() && (b[q] == ' ' || b[q] == '\t' || b[q] == '\n' || b[q] == '\r')) ++q;
                    if (q >= b.size()) { if (w.eof) expect_fail(q, "':' after a key"); return; }
                    if (b[q] != ':') expect_fail(q, "':' after a key");
                    ++q;
                    if (key == "traceEvents") {
                        w.pos = q;
                        st = St::EvOpen;
                        break;
                    }
                    while (q < b.size() && (b[q] == ' ' || b[q] == '\t' || b[q] == '\n' || b[q] == '\r')) ++q;
                    size_t vend;
                    if (!value_at(q, "the value of '" + key + "'", &vend)) return;
                    outs.push_back({0, key, std::string(b, q, vend - q), 0});
                    w.pos = vend;
                    st = St::ObjSep;
                    break;
                }
                case St::ObjSep: {
                    if (!skip_ws()) { if (w.eof) expect_fail(p, "',' or '}' between top-level entries"); return; }
                    if (b[p] == ',') { w.pos = p + 1; st = St::ObjKey; }
                    else if (b[p] == '}') { w.pos = p + 1; st = St::Done; }
                    else expect_fail(p, "',' or '}' between top-level entries");
                    break;
                }
                case St::EvOpen: {
                    if (!skip_ws()) { if (w.eof) expect_fail(p, "'[' opening traceEvents"); return; }
                    if (b[p] != '[') expect_fail(p, "'[' opening traceEvents");
                    w.pos = p + 1;
                    st = St::EvFirst;
                    break;
                }
                case St::EvFirst: {
                    if (!skip_ws()) { if (w.eof) expect_fail(p, "an event object"); return; }
                    if (b[p] == ']') { w.pos = p + 1; st = bare ? St::Done : St::ObjSep; }
                    else { w.pos = p; st = St::EvItem; }
                    break;
                }
                case St::EvItem: {
                    // the hot loop: events and separators, without leaving this case
                    for (;;) {
                        skip_ws();
                        size_t vend;
                        if (!value_at(p, "an event object", &vend)) return;
                        if (doc.nodes[0].t != JT::Obj)
                            fail_at(p, std::string("expected an event object in traceEvents, found ") +
                                           py_type_name(&doc.nodes[0]));
                        if (!started) {
                            started = true;
                            outs.push_back({1, {}, {}, 0});
                        }
                        try {
                            event();
                        } catch (const BadEvent& e) {
                            fail_at(p, e.msg);
                        }
                        p = vend;
                        w.pos = p;
                        if (!skip_ws()) {
                            st = St::EvSep;
                            if (w.eof) expect_fail(p, "',' or ']' between events (truncated trace?)");
                            return;
                        }
                        if (b[p] == ',') { ++p; w.pos = p; continue; }
                        if (b[p] == ']') { w.pos = p + 1; st = bare ? St::Done : St::ObjSep; break; }
                        expect_fail(p, "',' or ']' between events (truncated trace?)");
                    }
                    break;
                }
                case St::EvSep: {
                    if (!skip_ws()) { if (w.eof) expect_fail(p, "',' or ']' between events (truncated trace?)"); return; }
                    if (b[p] == ',') { w.pos = p + 1; st = St::EvItem; }
                    else if (b[p] == ']') { w.pos = p + 1; st = bare ? St::Done : St::ObjSep; }
                    else expect_fail(p, "',' or ']' between events (truncated trace?)");
                    break;
                }
                case St::Done: {
                    if (!skip_ws()) return;
                    fail_at(p, "expected the end of the trace after its closing brace");
                }
            }
        }
    }

    [[noreturn]] void expect_fail(size_t p, const std::string& what) {
        std::string found = "end of file";
        if (p < w.buf.size()) found = py_repr_char(w.buf, p);
        fail_at(p, "expected " + what + ", found " + found);
    }

    static std::string py_repr_char(const std::string& b, size_t p) {
        auto c = (uint8_t)b[p];
        if (c >= 0x80) {  // the whole character, as Python prints a printable one
            size_t n = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
            return "'" + b.substr(p, n) + "'";
        }
        switch (c) {
            case '\n': return "'\\n'";
            case '\r': return "'\\r'";
            case '\t': return "'\\t'";
            case '\'': return "\"'\"";
            case '\\': return "'\\\\'";
            default: break;
        }
        if (c < 0x20 || c == 0x7f) return "'\\x" + hex_byte(c).substr(2) + "'";
        return std::string("'") + (char)c + "'";
    }

    // Parse the value at p into doc; false when it needs more input.
    bool value_at(size_t p, const std::string& what, size_t* end) {
        try {
            *end = doc.parse(p);
            return true;
        } catch (const NeedMore&) {
            if (w.buf.size() - p > kMaxValue)
                fail_at(p, "an entry larger than 256 MB: expected " + what);
            return false;
        } catch (const JsonError& e) {
            // json's RecursionError has no place: the Python parser names the value's line
            bool deep = e.msg == "nested too deeply";
            fail_at(deep ? p : e.pos, e.msg + ": expected " + what);
        }
    }

    // -- one event (mirrors kineto._Trace.consume) ------------------------------------
    // The members an event is read by, found in ONE pass over each of its two objects
    // (the event, its args) instead of a scan per lookup; a repeated key keeps its last
    // value, as a dict does.
    enum Key : int {
        kPh, kCat, kArgs, kPid, kName, kTid, kTs, kDur,  // the event's
        kDevice, kStream, kCorrelation, kCorrelationId, kBytes, kDtype, kInNelems,
        kOutNelems, kDeviceType, kDeviceId, kBytesCap,  // its args' ("name" is kName)
        kKeys
    };
    const JNode* top[kKeys];
    const JNode* argk[kKeys];
    size_t args_obj = 0;  // node index of the indexed args object (0: none)

    static int key_id(std::string_view k) {
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

    void index(size_t obj, const JNode** out) {
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

    std::string_view s(const JNode* n, std::string& buf) const { return doc.str(*n, buf); }

    bool is_str(const JNode* n, std::string_view v) const {
        return n && n->t == JT::Str && doc.str_eq(*n, v);
    }

    // str() of a scalar, as an f-string wrote it; containers are refused.
    std::string pystr(const JNode* n, const char* key) {
        if (!n || n->t == JT::Null) return "None";
        switch (n->t) {
            case JT::True: return "True";
            case JT::False: return "False";
            case JT::Int: return std::string(int_text(doc.text(*n)));
            case JT::Float: return float_str(n->d);
            case JT::Str: { std::string b; return std::string(doc.str(*n, b)); }
            default: break;
        }
        throw BadEvent{std::string("'") + key + "' is " + py_type_name(n) +
                       ": expected a number or a string"};
    }

    // A JSON integer's text as str(int) writes it: JSON has no leading zeros, so only
    // "-0" differs.
    static std::string_view int_text(std::string_view t) { return t == "-0" ? "0" : t; }

    // A scalar as a lookup key that keeps its type (kineto._key).
    std::pair<int, std::string> key_of(const JNode* n, const char* key) {
        if (!n || n->t == JT::Null) return {0, ""};
        switch (n->t) {
            case JT::True: return {1, "1"};
            case JT::False: return {1, "0"};
            case JT::Int: return {2, std::string(int_text(doc.text(*n)))};
            case JT::Float: {
                if (std::isnan(n->d)) return {3, "nan" + std::to_string(++nan_keys)};  // never equal
                std::string t;
                put_py_float(t, n->d == 0 ? 0.0 : n->d);
                return {3, t};
            }
            case JT::Str: { std::string b; return {4, std::string(doc.str(*n, b))}; }
            default: break;
        }
        throw BadEvent{std::string("'") + key + "' is " + py_type_name(n) +
                       ": expected a number or a string"};
    }

    static int64_t checked(const Big& v, const std::string& key) {
        int64_t out;
        if (!v.fits_i64(&out))
            throw BadEvent{"'" + key + "' is " + v.str() + ": out of the 64-bit range"};
        return out;
    }

    // A JSON integer's text as int64: up to 18 digits directly, longer ones through Big
    // (with the out-of-range error naming `key`).
    static int64_t int64_of(std::string_view t, const char* key) {
        bool neg = !t.empty() && t[0] == '-';
        size_t nd = t.size() - (neg ? 1 : 0);
        if (nd > 0 && nd <= 18) {
            int64_t v = 0;
            for (size_t i = neg ? 1 : 0; i < t.size(); ++i) v = v * 10 + (t[i] - '0');
            return neg ? -v : v;
        }
        return checked(Big::of_int_text(t), key);
    }

    // kineto._int_or_none: an int, or a string of ASCII digits, as int64; else none.
    bool int_or_none(const JNode* n, const char* key, int64_t* out) {
        if (!n) return false;
        if (n->t == JT::Int) { *out = int64_of(doc.text(*n), key); return true; }
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

    // kineto._ns: microseconds to integer nanoseconds, exactly.
    int64_t ns(const JNode* n, const char* key) {
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

    static Big us_to_ns_text(std::string_view text) {
        // chrome_trace.us_to_ns: up to three decimals exactly, else Decimal arithmetic
        size_t dot = text.find('.');
        std::string_view whole = text.substr(0, dot);
        std::string_view frac = dot == std::string_view::npos ? std::string_view() : text.substr(dot + 1);
        auto all_digits = [](std::string_view x) {
            if (x.empty()) return false;
            for (char c : x) if (c < '0' || c > '9') return false;
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

    // distinct devices in first-seen order; the last one seen is checked first
    size_t last_device = 0;
    void count_device(std::string_view d) {
        if (last_device < devices.size() && devices[last_device] == d) return;
        for (size_t i = 0; i < devices.size(); ++i)
            if (devices[i] == d) { last_device = i; return; }
        devices.emplace_back(d);
        last_device = devices.size() - 1;
    }

    // the size of one element of a dtype record_param_comms names
    static unsigned dtype_bytes(std::string_view t) {
        static const std::pair<const char*, unsigned> table[] = {
            {"Float", 4}, {"Double", 8}, {"Half", 2}, {"BFloat16", 2}, {"Int", 4}, {"Long", 8},
            {"Short", 2}, {"Char", 1}, {"Byte", 1}, {"Bool", 1}, {"Float8_e4m3fn", 1},
            {"Float8_e5m2", 1}, {"ComplexFloat", 8}, {"ComplexDouble", 16}};
        for (auto& e : table)
            if (t == e.first) return e.second;
        return 0;
    }

    bool message_bytes(size_t args, int64_t* out) {
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

    static char lower(char c) { return (c >= 'A' && c <= 'Z') ? (char)(c + 32) : c; }

    // "nccl" or "rccl" in the name, ASCII letters in any case
    static bool is_comm_kernel(std::string_view name) {
        for (size_t i = 0; i + 4 <= name.size(); ++i) {
            char c = lower(name[i]);
            if ((c == 'n' || c == 'r') && lower(name[i + 1]) == 'c' &&
                lower(name[i + 2]) == 'c' && lower(name[i + 3]) == 'l')
                return true;
        }
        return false;
    }

    static const char* jax_gpu_category(std::string_view name) {
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

    // kineto._args: the args object index (0 when absent or falsy), its members indexed
    size_t args_of() {
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

    const JNode* arg(size_t args, int k) const { return args ? argk[k] : nullptr; }

    void check_text(bool ok) {
        if (!ok) throw BadEvent{"a \\u escape of an unpaired UTF-16 surrogate: not valid text"};
    }

    // The cuda:N name of a GPU event's device value: the last one's is kept, so that
    // the common case (the same int as the event before) makes no key.
    int last_dev_type = -1;
    std::string last_dev_text;
    const std::string* last_dev_name = nullptr;

    const std::string& device_name(const JNode* dev) {
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

    void event() {
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
            if (catv == "kernel") category = "kernel";
            else if (catv == "gpu_memcpy") category = "memcpy";
            else if (catv == "gpu_memset") category = "memset";
            else if (catv == "gpu_user_annotation") category = "gpu_annotation";
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
            if (cat_none) category = "cpu_op";
            else if (catv == "cpu_op") category = "cpu_op";
            else if (catv == "cuda_runtime" || catv == "cuda_driver" || catv == "hip_runtime")
                category = "runtime";
            else if (catv == "user_annotation") category = "annotation";
            else if (catv == "python_function") category = "python";
            else category = "other";
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
        if (have_stream) bt.stream.set(stream_v); else bt.stream.set_null();
        bt.ts_ns.set(ts_ns);
        bt.dur_ns.set(dur_ns);
        if (have_corr) bt.correlation.set(corr_v); else bt.correlation.set_null();
        if (have_bytes) bt.bytes.set(nbytes); else bt.bytes.set_null();
        end_row(category, device);
    }

    void end_row(std::string_view category, std::string_view device) {
        batch->end_row();
        kept.add(category);
        count_device(device);
        if (batch->rows >= kBatchRows || batch->text_bytes() >= kBatchText) flush();
    }

    void flush() {
        if (batch->rows == 0) return;
        size_t attrs_size = batch->attrs.data.size(), rows = batch->rows;
        done.push_back(std::move(batch));
        outs.push_back({2, {}, {}, done.size() - 1});
        batch = std::make_unique<EventBatch>();
        // the next batch will be about as large: one allocation per column, no regrowth
        batch->attrs.data.reserve(attrs_size + attrs_size / 8);
        batch->attrs.off.reserve(rows + 1);
    }

    void other_event(const JNode* ph) {
        const JNode* name = top[kName];
        if ((is_str(ph, "i") || is_str(ph, "I")) && is_str(name, "[memory]")) {
            memory_event();
            return;
        }
        if (is_str(ph, "M")) metadata_event(name);
        skipped.add("ph=" + pystr(ph, "ph"));
    }

    void metadata_event(const JNode* name) {
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

    static bool has_surrogate(std::string_view s) {  // WTF-8 surrogate bytes ED A0..BF xx
        for (size_t i = 0; i + 1 < s.size(); ++i)
            if ((uint8_t)s[i] == 0xED && (uint8_t)s[i + 1] >= 0xA0) return true;
        return false;
    }

    void memory_event() {
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
        if (have_stream) bt.stream.set(stream_v); else bt.stream.set_null();
        bt.ts_ns.set(ts_ns);
        bt.dur_ns.set(0);
        bt.correlation.set_null();
        if (have_bytes) bt.bytes.set(nbytes); else bt.bytes.set_null();
        bt.attrs.set(attrs_buf);
        end_row("memory", device);
    }
};

// ---- the Python type ---------------------------------------------------------------------

struct PyParser {
    PyObject_HEAD
    Parser* p;
    PyObject* path;
    bool failed;
};

PyObject* outputs(PyParser* self) {
    Parser& P = *self->p;
    PyObject* list = PyList_New(0);
    if (!list) return nullptr;
    for (auto& o : P.outs) {
        PyObject* item = nullptr;
        if (o.kind == 0) {
            PyObject* k = py_str(o.key);
            PyObject* r = py_str(o.raw);
            item = (k && r) ? Py_BuildValue("(sNN)", "meta", k, r) : nullptr;
            if (!item) { Py_XDECREF(k); Py_XDECREF(r); }
        } else if (o.kind == 1) {
            item = Py_BuildValue("(s)", "start");
        } else {
            PyObject* b = P.done[o.batch]->export_py();
            item = b ? Py_BuildValue("(sN)", "batch", b) : nullptr;
            P.done[o.batch].reset();
        }
        if (!item || PyList_Append(list, item) < 0) {
            Py_XDECREF(item);
            Py_DECREF(list);
            return nullptr;
        }
        Py_DECREF(item);
    }
    P.outs.clear();
    P.done.clear();
    return list;
}

template <class F>
PyObject* guarded(PyParser* self, F&& body) {
    if (!run_released(self->path, self->failed, body)) return nullptr;
    return outputs(self);
}

PyObject* feed(PyParser* self, PyObject* arg) {
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0) return nullptr;
    std::string_view chunk(static_cast<const char*>(view.buf), (size_t)view.len);
    PyObject* r = guarded(self, [&] {
        self->p->w.append(chunk);
        self->p->run();
    });
    PyBuffer_Release(&view);
    return r;
}

PyObject* finish(PyParser* self, PyObject*) {
    PyObject* r = guarded(self, [&] {
        Parser& P = *self->p;
        P.w.finish();
        P.run();
        if (P.st != St::Done) {
            size_t end = P.w.buf.size();
            throw ParseError{P.line_of(end), "the file ends inside the trace: truncated?"};
        }
        P.flush();
    });
    if (!r) return nullptr;
    Parser& P = *self->p;
    PyObject* devices = PyList_New((Py_ssize_t)P.devices.size());
    if (!devices) { Py_DECREF(r); return nullptr; }
    for (size_t i = 0; i < P.devices.size(); ++i)
        PyList_SET_ITEM(devices, (Py_ssize_t)i, py_str(P.devices[i]));
    PyObject* end = Py_BuildValue("(sNNN)", "end", P.kept.to_py(), P.skipped.to_py(), devices);
    if (!end || PyList_Append(r, end) < 0) { Py_XDECREF(end); Py_DECREF(r); return nullptr; }
    Py_DECREF(end);
    return r;
}

PyObject* line(PyParser* self, PyObject*) {
    return PyLong_FromLongLong(self->p->line_of(self->p->w.pos));
}

int init(PyParser* self, PyObject* args, PyObject*) {
    PyObject* path;
    if (!PyArg_ParseTuple(args, "U", &path)) return -1;
    Py_INCREF(path);
    Py_XSETREF(self->path, path);
    delete self->p;
    self->p = new Parser();
    self->failed = false;
    return 0;
}

void dealloc(PyParser* self) {
    delete self->p;
    Py_XDECREF(self->path);
    Py_TYPE(self)->tp_free((PyObject*)self);
}

PyMethodDef methods[] = {
    {"feed", (PyCFunction)feed, METH_O,
     "feed(chunk: bytes) -> list: parse what the chunk completes"},
    {"line", (PyCFunction)line, METH_NOARGS, "line() -> int: the line where reading stands"},
    {"finish", (PyCFunction)finish, METH_NOARGS,
     "finish() -> list: the end of the input; the last outputs, then ('end', ...)"},
    {nullptr, nullptr, 0, nullptr}};

PyTypeObject ParserType = {PyVarObject_HEAD_INIT(nullptr, 0)};

}  // namespace

int add_chrome_trace(PyObject* module) {
    return add_type(module, ParserType, "ChromeTraceParser",
                    "ChromeTraceParser(path): Kineto/JAX trace bytes to event columns",
                    sizeof(PyParser), (initproc)init, (destructor)dealloc, methods);
}

}  // namespace tlv
