// The profiler-trace reader's state (chrome_trace.cpp explains the whole), with numbers
// as Python's int and float would hold them. Its parts: chrome_trace_stream.cpp (the
// streaming state machine over the JSON: chrome_trace.py), kineto_events.cpp (one event
// to a row: kineto._Trace.consume).
#pragma once

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

namespace tlv::kineto {

constexpr size_t kMaxValue = size_t(256) << 20;  // one entry larger than this is refused
constexpr size_t kBatchRows = 16384;
constexpr size_t kBatchText = size_t(16) << 20;
constexpr double kExactFloatUs = 8796093022208.0;  // 2**43

// A counter that keeps first-seen order (Python's Counter/dict order).
struct Counts {
    std::vector<std::pair<std::string, int64_t>> items;
    void add(std::string_view k, int64_t n = 1) {
        for (auto& it : items)
            if (it.first == k) {
                it.second += n;
                return;
            }
        items.emplace_back(std::string(k), n);
    }
    PyObject* to_py() const {
        PyObject* l = PyList_New((Py_ssize_t)items.size());
        if (!l) return nullptr;
        for (size_t i = 0; i < items.size(); ++i) {
            PyObject* k = py_str(items[i].first);
            if (!k) {
                Py_DECREF(l);
                return nullptr;
            }
            PyList_SET_ITEM(l, (Py_ssize_t)i,
                            Py_BuildValue("(NL)", k, (long long)items[i].second));
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
        if (!t.empty() && t[0] == '-') {
            b.neg = true;
            t.remove_prefix(1);
        }
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
        while (carry) {
            out.push_back((char)('0' + carry % 10));
            carry /= 10;
        }
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
inline Big decimal_us_to_ns(std::string_view t) {
    Big r;
    if (!t.empty() && t[0] == '-') {
        r.neg = true;
        t.remove_prefix(1);
    }
    std::string mant;
    long exp = 0;
    size_t i = 0;
    for (; i < t.size() && t[i] >= '0' && t[i] <= '9'; ++i) mant.push_back(t[i]);
    if (i < t.size() && t[i] == '.') {
        ++i;
        for (; i < t.size() && t[i] >= '0' && t[i] <= '9'; ++i) {
            mant.push_back(t[i]);
            --exp;
        }
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
        if (rest[0] > '5')
            up = true;
        else if (rest[0] < '5')
            up = false;
        else if (rest.find_first_not_of('0', 1) != std::string::npos)
            up = true;
        else
            up = !mant.empty() && ((mant.back() - '0') & 1);
        if (up) {
            size_t k = mant.size();
            while (k > 0 && mant[k - 1] == '9') mant[--k] = '0';
            if (k == 0)
                mant.insert(mant.begin(), '1');
            else
                ++mant[k - 1];
        }
        if (mant.empty()) mant = "0";
    };
    if (mant != "0" && mant.size() > 28) {  // the context's precision, before to_integral
        long drop = (long)mant.size() - 28;
        round_off(28);
        exp += drop;
        if (mant.size() > 28) {
            mant.pop_back();
            ++exp;
        }
    }
    if (exp >= 0) {
        if (mant != "0") mant.append((size_t)std::min(exp, 400L), '0');
    } else {
        long frac = -exp;
        if ((long)mant.size() <= frac) {
            // |value| < 1: 0, or 1 when above one half (half-even rounds 0.5 to 0)
            std::string padded = std::string((size_t)(frac - (long)mant.size()), '0') + mant;
            bool above_half =
                padded[0] > '5' ||
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

inline std::string float_str(double d) {  // str(float) (Python spells inf and nan in lowercase)
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
    struct Out {
        int kind;
        std::string key, raw;
        size_t batch;
    };
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
    void run();

    [[noreturn]] void expect_fail(size_t p, const std::string& what);

    static std::string py_repr_char(const std::string& b, size_t p);

    // Parse the value at p into doc; false when it needs more input.
    bool value_at(size_t p, const std::string& what, size_t* end);

    // -- one event (mirrors kineto._Trace.consume) ------------------------------------
    // The members an event is read by, found in ONE pass over each of its two objects
    // (the event, its args) instead of a scan per lookup; a repeated key keeps its last
    // value, as a dict does.
    enum Key : int {
        kPh,
        kCat,
        kArgs,
        kPid,
        kName,
        kTid,
        kTs,
        kDur,  // the event's
        kDevice,
        kStream,
        kCorrelation,
        kCorrelationId,
        kBytes,
        kDtype,
        kInNelems,
        kOutNelems,
        kDeviceType,
        kDeviceId,
        kBytesCap,  // its args' ("name" is kName)
        kKeys
    };
    const JNode* top[kKeys];
    const JNode* argk[kKeys];
    size_t args_obj = 0;  // node index of the indexed args object (0: none)

    static int key_id(std::string_view k);

    void index(size_t obj, const JNode** out);

    std::string_view s(const JNode* n, std::string& buf) const { return doc.str(*n, buf); }

    bool is_str(const JNode* n, std::string_view v) const;

    // str() of a scalar, as an f-string wrote it; containers are refused.
    std::string pystr(const JNode* n, const char* key);

    // A JSON integer's text as str(int) writes it: JSON has no leading zeros, so only
    // "-0" differs.
    static std::string_view int_text(std::string_view t) { return t == "-0" ? "0" : t; }

    // A scalar as a lookup key that keeps its type (kineto._key).
    std::pair<int, std::string> key_of(const JNode* n, const char* key);

    static int64_t checked(const Big& v, const std::string& key);

    // A JSON integer's text as int64: up to 18 digits directly, longer ones through Big
    // (with the out-of-range error naming `key`).
    static int64_t int64_of(std::string_view t, const char* key);

    // kineto._int_or_none: an int, or a string of ASCII digits, as int64; else none.
    bool int_or_none(const JNode* n, const char* key, int64_t* out);

    // kineto._ns: microseconds to integer nanoseconds, exactly.
    int64_t ns(const JNode* n, const char* key);

    static Big us_to_ns_text(std::string_view text);

    // distinct devices in first-seen order; the last one seen is checked first
    size_t last_device = 0;
    void count_device(std::string_view d);

    // the size of one element of a dtype record_param_comms names
    static unsigned dtype_bytes(std::string_view t);

    bool message_bytes(size_t args, int64_t* out);

    static char lower(char c) { return (c >= 'A' && c <= 'Z') ? (char)(c + 32) : c; }

    // "nccl" or "rccl" in the name, ASCII letters in any case
    static bool is_comm_kernel(std::string_view name);

    static const char* jax_gpu_category(std::string_view name);

    // kineto._args: the args object index (0 when absent or falsy), its members indexed
    size_t args_of();

    const JNode* arg(size_t args, int k) const { return args ? argk[k] : nullptr; }

    void check_text(bool ok);

    // The cuda:N name of a GPU event's device value: the last one's is kept, so that
    // the common case (the same int as the event before) makes no key.
    int last_dev_type = -1;
    std::string last_dev_text;
    const std::string* last_dev_name = nullptr;

    const std::string& device_name(const JNode* dev);

    void event();

    void end_row(std::string_view category, std::string_view device);

    void flush();

    void other_event(const JNode* ph);

    void metadata_event(const JNode* name);

    static bool has_surrogate(std::string_view s);

    void memory_event();
};

}  // namespace tlv::kineto
