// Flight Recorder dumps: the compiled twin of ingest/flight_recorder.py's per-entry work
// (_Dump.entries), for both forms (flight_recorder_pickle.cpp, flight_recorder_json.cpp).
// The Python module is the specification: every entry it reads as plain data of the
// kinds torch writes (text keys, ints, bools, None, text, lists) becomes here the same
// row of collective_recorded's columns, the same attrs text and the same unknown-key
// counts; any other entry (a value this file does not reproduce: floats or sets in an
// unknown key, a key that is not text, text with lone surrogates, ...) is handed back to
// Python, which reads it with its own code, in its place among the rows. The groups,
// their status and the note stay in Python (the top object comes back as a value).
#pragma once

#include <Python.h>

#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "columns.hpp"
#include "common.hpp"

namespace tlv::fr {

constexpr size_t kBatchRows = 20000;  // flight_recorder.BATCH

// Entry keys by what _Dump.entry does with them (flight_recorder._COLUMNS, plus seq_id).
enum Key : int {
    kRecordId,
    kPgId,
    kProcessGroup,
    kCollectiveSeqId,
    kP2pSeqId,
    kOpId,
    kProfilingName,
    kIsP2p,
    kState,
    kTimeCreated,
    kTimeStarted,
    kTimeCompleted,
    kDurationMs,
    kInputSizes,
    kOutputSizes,
    kInputDtypes,
    kOutputDtypes,
    kTimeoutMs,
    kRetired,
    kFrames,
    kNumColumns,  // keys from here on are not columns: they go to attrs
    kSeqId = kNumColumns,
    kOther
};

constexpr std::string_view kKeyNames[] = {"record_id",
                                          "pg_id",
                                          "process_group",
                                          "collective_seq_id",
                                          "p2p_seq_id",
                                          "op_id",
                                          "profiling_name",
                                          "is_p2p",
                                          "state",
                                          "time_created_ns",
                                          "time_discovered_started_ns",
                                          "time_discovered_completed_ns",
                                          "duration_ms",
                                          "input_sizes",
                                          "output_sizes",
                                          "input_dtypes",
                                          "output_dtypes",
                                          "timeout_ms",
                                          "retired",
                                          "frames",
                                          "seq_id"};

inline Key key_of(std::string_view k) {
    for (int i = 0; i <= kSeqId; ++i)
        if (k == kKeyNames[i]) return (Key)i;
    return kOther;
}

// A scalar as _Dump.entry reads it: the kinds of plain data it handles here.
struct Scalar {
    enum Kind : uint8_t { Absent, None, Bool, Int, Float, Str, Other } k = Absent;
    int64_t i = 0;
    double f = 0;
    std::string_view s;  // Str: UTF-8 (no lone surrogate)
};

// Python's str.isspace for ASCII (what str.strip and int() strip).
inline bool py_space(char c) {
    return c == ' ' || (c >= '\t' && c <= '\r') || (c >= '\x1c' && c <= '\x1f');
}

// flight_recorder._int: an int64 or none (*ok false: Python would read it otherwise, so
// the entry goes to Python: text that is not ASCII).
inline bool int_of(const Scalar& v, int64_t* out, bool* ok) {
    *ok = true;
    switch (v.k) {
        case Scalar::Int: *out = v.i; return true;
        case Scalar::Float:
            if (std::isfinite(v.f) && v.f == std::trunc(v.f) && std::fabs(v.f) < 0x1p63) {
                *out = (int64_t)v.f;
                return true;
            }
            return false;
        case Scalar::Str: {
            std::string_view s = v.s;
            for (char c : s)
                if ((unsigned char)c >= 0x80) {
                    *ok = false;  // Unicode digits and spaces: Python's rules
                    return false;
                }
            size_t a = 0, b = s.size();
            while (a < b && py_space(s[a])) ++a;
            while (b > a && py_space(s[b - 1])) --b;
            s = s.substr(a, b - a);
            size_t d = !s.empty() && s[0] == '-' ? 1 : 0;
            if (s.size() == d || s.size() - d > 19) return false;
            for (size_t k = d; k < s.size(); ++k)
                if (s[k] < '0' || s[k] > '9') return false;
            __int128 x = 0;
            for (size_t k = d; k < s.size(); ++k) x = x * 10 + (s[k] - '0');
            if (d) x = -x;
            if (x < INT64_MIN || x > INT64_MAX) return false;
            *out = (int64_t)x;
            return true;
        }
        default: return false;
    }
}

// str(v) of a scalar _Dump.entry writes as text (op, state, process group); false: not
// one reproduced here.
inline bool text_of(const Scalar& v, std::string& out) {
    switch (v.k) {
        case Scalar::Str: out.assign(v.s); return true;
        case Scalar::Int: out = std::to_string(v.i); return true;
        case Scalar::Bool: out = v.i ? "True" : "False"; return true;
        case Scalar::None: out = "None"; return true;
        default: return false;
    }
}

// One entry's row, as _Dump.entry computes it; `has_*` false: NULL.
struct Row {
    struct I {
        bool has = false;
        int64_t v = 0;
    };
    I step, ts_ns, dur_ns, pg_id, seq_id, p2p_seq_id, op_id, started_ns, completed_ns,
        timeout_ms;
    int64_t stack_id = 0;  // 0: none
    int8_t is_p2p = -1, retired = -1;  // -1: NULL
    bool has_op = false, has_state = false, has_pg = false, has_desc = false;
    std::string op, state, pg, desc;
    bool has_text[4] = {false, false, false, false};  // in/out sizes, in/out dtypes
    std::string text[4];
    bool has_attrs = false;
    std::string attrs;
    bool old_seq = false;
    std::vector<std::string> unknown;  // attrs keys counted in the note
    void clear() {
        step = ts_ns = dur_ns = pg_id = seq_id = p2p_seq_id = op_id = started_ns =
            completed_ns = timeout_ms = I();
        stack_id = 0;
        is_p2p = retired = -1;
        has_op = has_state = has_pg = has_desc = has_attrs = old_seq = false;
        for (auto& h : has_text) h = false;
        attrs.clear();
        unknown.clear();
    }
};

// The scalar fields of a row from the entry's column values (`col[k]`: the value of key
// k, Absent if missing), as _Dump.entry reads them. False: Python reads this entry.
inline bool scalar_fields(const Scalar* col, const Scalar& seq_id, bool has_seq_id, Row& r) {
    bool ok;
    auto int_field = [&](Key k, Row::I& dst, bool zero_is_none) {
        int64_t x;
        if (int_of(col[k], &x, &ok) && !(zero_is_none && x == 0)) {
            dst.has = true;
            dst.v = x;
        }
        return ok;
    };
    if (!int_field(kCollectiveSeqId, r.seq_id, false)) return false;
    if (!r.seq_id.has && has_seq_id) {  // dumps before the collective/p2p split
        int64_t x;
        if (int_of(seq_id, &x, &ok)) {
            r.seq_id.has = true;
            r.seq_id.v = x;
        }
        if (!ok) return false;
        r.old_seq = true;
    }
    if (!int_field(kRecordId, r.step, false) || !int_field(kPgId, r.pg_id, false) ||
        !int_field(kP2pSeqId, r.p2p_seq_id, false) || !int_field(kOpId, r.op_id, false) ||
        !int_field(kTimeCreated, r.ts_ns, false) ||
        !int_field(kTimeoutMs, r.timeout_ms, false) ||
        !int_field(kTimeStarted, r.started_ns, true) ||
        !int_field(kTimeCompleted, r.completed_ns, true))
        return false;
    if (col[kIsP2p].k == Scalar::Bool) r.is_p2p = (int8_t)col[kIsP2p].i;
    if (col[kRetired].k == Scalar::Bool) r.retired = (int8_t)col[kRetired].i;
    for (Key k : {kProfilingName, kState}) {
        const Scalar& v = col[k];
        if (v.k == Scalar::Absent || v.k == Scalar::None) continue;
        if (!text_of(v, k == kState ? r.state : r.op)) return false;
        (k == kState ? r.has_state : r.has_op) = true;
    }
    const Scalar& d = col[kDurationMs];  // round(dur * 1e6), half to even
    if (d.k == Scalar::Int || d.k == Scalar::Float) {
        double x = d.k == Scalar::Int ? (double)d.i : d.f;
        if (std::isfinite(x)) {
            double p = x * 1e6;
            if (!std::isfinite(p)) return false;  // Python's round raises
            double q = std::nearbyint(p);
            if (q >= -0x1p63 && q < 0x1p63) {
                r.dur_ns.has = true;
                r.dur_ns.v = (int64_t)q;
            }
        }
    }
    return true;
}

// collective_recorded's columns (flight_recorder._TYPES), filled row by row.
struct Batch {
    size_t rows = 0;
    I64Col step;
    StrCol op;
    I64Col ts_ns, dur_ns;
    StrCol attrs;
    I32Col stack_id;
    StrCol process_group, pg_desc;
    I64Col pg_id, seq_id, p2p_seq_id, op_id;
    BoolCol is_p2p;
    StrCol state;
    I64Col started_ns, completed_ns;
    StrCol in_sizes, out_sizes, in_dtypes, out_dtypes;
    I64Col timeout_ms;
    BoolCol retired;

    std::vector<std::pair<const char*, Column*>> all() {
        return {{"step", &step},
                {"op", &op},
                {"ts_ns", &ts_ns},
                {"dur_ns", &dur_ns},
                {"attrs", &attrs},
                {"stack_id", &stack_id},
                {"process_group", &process_group},
                {"pg_desc", &pg_desc},
                {"pg_id", &pg_id},
                {"seq_id", &seq_id},
                {"p2p_seq_id", &p2p_seq_id},
                {"op_id", &op_id},
                {"is_p2p", &is_p2p},
                {"state", &state},
                {"started_ns", &started_ns},
                {"completed_ns", &completed_ns},
                {"in_sizes", &in_sizes},
                {"out_sizes", &out_sizes},
                {"in_dtypes", &in_dtypes},
                {"out_dtypes", &out_dtypes},
                {"timeout_ms", &timeout_ms},
                {"retired", &retired}};
    }
    Batch() {
        for (auto& c : all()) c.second->rows = &rows;
    }
    Batch(const Batch&) = delete;
    Batch& operator=(const Batch&) = delete;

    void add(const Row& r) {
        auto i64 = [](I64Col& c, const Row::I& v) {
            if (v.has) c.set(v.v);
        };
        auto str = [](StrCol& c, bool has, const std::string& v) {
            if (has) c.set(v);
        };
        i64(step, r.step);
        str(op, r.has_op, r.op);
        i64(ts_ns, r.ts_ns);
        i64(dur_ns, r.dur_ns);
        str(attrs, r.has_attrs, r.attrs);
        if (r.stack_id) stack_id.set((int32_t)r.stack_id);
        str(process_group, r.has_pg, r.pg);
        str(pg_desc, r.has_desc, r.desc);
        i64(pg_id, r.pg_id);
        i64(seq_id, r.seq_id);
        i64(p2p_seq_id, r.p2p_seq_id);
        i64(op_id, r.op_id);
        if (r.is_p2p >= 0) is_p2p.set(r.is_p2p != 0);
        str(state, r.has_state, r.state);
        i64(started_ns, r.started_ns);
        i64(completed_ns, r.completed_ns);
        str(in_sizes, r.has_text[0], r.text[0]);
        str(out_sizes, r.has_text[1], r.text[1]);
        str(in_dtypes, r.has_text[2], r.text[2]);
        str(out_dtypes, r.has_text[3], r.text[3]);
        i64(timeout_ms, r.timeout_ms);
        if (r.retired >= 0) retired.set(r.retired != 0);
        ++rows;
    }

    // {"n": rows, "cols": {name: buffers}} (ingest/native.py); a column never set is left
    // out (all NULL: the Python side makes it).
    PyObject* export_py() {
        PyObject* cols = PyDict_New();
        if (!cols) return nullptr;
        for (auto& c : all()) {
            if (!c.second->used) continue;
            while (c.second->size() < rows) c.second->push_null();
            PyObject* t = c.second->export_py();
            if (!t || PyDict_SetItemString(cols, c.first, t) < 0) {
                Py_XDECREF(t);
                Py_DECREF(cols);
                return nullptr;
            }
            Py_DECREF(t);
        }
        return Py_BuildValue("{s:n,s:N}", "n", (Py_ssize_t)rows, "cols", cols);
    }
};

// What the reader hands to Python, in file order: batches of rows, entries Python reads
// itself, attrs keys counted for the first time (the note lists them in that order).
struct Out {
    enum Kind { Rows, Entry, NewKey } kind;
    std::unique_ptr<Batch> batch;  // Rows
    std::string text;  // NewKey: the key
    size_t value = 0;  // Entry: the index of its value (see the reader)
};

// list.append(item), taking item's reference; false (a Python error set) where item is
// NULL or the append fails.
inline bool append_new(PyObject* list, PyObject* item) {
    if (!item) return false;
    int rc = PyList_Append(list, item);
    Py_DECREF(item);
    return rc == 0;
}

// The rows of one dump, and the note's counts of what the rows hold.
struct Rows {
    std::unique_ptr<Batch> batch = std::make_unique<Batch>();
    std::vector<Out> outs;
    std::vector<std::pair<std::string, int64_t>> unknown;  // first-count order
    std::unordered_map<std::string, size_t> unknown_at;
    int64_t old_seq_ids = 0;

    void flush() {
        if (batch->rows == 0) return;
        Out o{Out::Rows, std::move(batch), {}, 0};
        outs.push_back(std::move(o));
        batch = std::make_unique<Batch>();
    }
    void add(const Row& r) {
        for (auto& k : r.unknown) {
            auto it = unknown_at.find(k);
            if (it != unknown_at.end()) {
                ++unknown[it->second].second;
                continue;
            }
            unknown_at.emplace(k, unknown.size());
            unknown.emplace_back(k, 1);
            outs.push_back(Out{Out::NewKey, nullptr, k, 0});
        }
        if (r.old_seq) ++old_seq_ids;
        batch->add(r);
        if (batch->rows >= kBatchRows) flush();
    }
    // An entry Python reads: the rows before it go first.
    void python_entry(size_t value) {
        flush();
        outs.push_back(Out{Out::Entry, nullptr, {}, value});
    }
    // The outputs appended to ``list`` in order: ("batch", cols), ("entry", entry(value))
    // (the reader's own form of an entry Python reads), ("key", name); false (a Python
    // error set) where one fails.
    template <class EntryPy>
    bool outs_py(PyObject* list, EntryPy&& entry) const {
        for (auto& o : outs) {
            PyObject* item;
            if (o.kind == Out::Rows) {
                PyObject* b = o.batch->export_py();
                item = b ? Py_BuildValue("(sN)", "batch", b) : nullptr;
            } else if (o.kind == Out::Entry) {
                PyObject* v = entry(o.value);
                item = v ? Py_BuildValue("(sN)", "entry", v) : nullptr;
            } else {
                PyObject* k = py_str(o.text);
                item = k ? Py_BuildValue("(sN)", "key", k) : nullptr;
            }
            if (!append_new(list, item)) return false;
        }
        return true;
    }
    // ("counts", {key: n}, old_seq_ids): what the rows add to the note.
    // (The keys hold no surrogates: an entry with such a key goes to Python.)
    PyObject* counts_py() const {
        PyObject* d = counts_dict(unknown);
        if (!d) return nullptr;
        return Py_BuildValue("(sNL)", "counts", d, (long long)old_seq_ids);
    }
};

// An attrs key counted in the note (flight_recorder: all but these three).
inline bool counted_key(std::string_view k) {
    return k != "thread_name" && k != "thread_id" && k != "seq_id";
}

}  // namespace tlv::fr
