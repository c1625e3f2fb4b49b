// Flight Recorder dumps, JSON form (``_dump_fr_trace_json``): json_dom.hpp's reader with
// json.loads's semantics, the entries to flight_recorder.hpp's rows (ingest/
// flight_recorder.py's _parse_json). A file this reader does not take as json.loads
// would (too short to tell its encoding, a NUL or a byte order mark in its first bytes,
// not strict UTF-8, bad JSON, nested deeper than json_dom reads, a top value that is not
// an object, entries that are not a list) is left whole to Python, which reads it or says
// what is wrong with it. An entry this file does not reproduce (frames: torch's JSON has
// none, Python interns them; a float, a repeated key, a lone surrogate, text Python would
// write otherwise: see the row builder) goes to Python as its own JSON text, a span of the
// file, in its place among the rows. The rest of the top object (the groups, their status,
// the note) is json.loads's: Python reads the file with the entries' list spliced out.
#include "common.hpp"
#include "flight_recorder.hpp"
#include "json_dom.hpp"

namespace tlv {
namespace {

struct ToPython {};  // the entry being read is Python's

struct Reader {
    JsonDoc doc;
    fr::Rows rows;
    fr::Row row;
    std::string key_buf, bufs[fr::kNumColumns + 1];
    std::vector<std::string_view> spans;  // entries Python reads (fr::Out::value indexes)
    size_t col_node[fr::kNumColumns];
    static constexpr size_t kNone = SIZE_MAX;
    std::vector<std::pair<std::string, size_t>> extra;
    size_t entries_begin = 0, entries_end = 0;  // the entries' list in the file, if any

    // A value's own text in the file (what json.loads reads back to the same value).
    std::string_view span(size_t i) const {
        const JNode& n = doc.nodes[i];
        if (n.t == JT::Str) return doc.data.substr(n.begin - 1, n.len + 2);
        return doc.data.substr(n.begin, n.len);
    }

    // A subtree json.loads then flight_recorder._plain and json.dumps write as json_dom
    // dumps it: no float anywhere (Python's "nan" text, and its caches that take 0.0 and
    // -0.0 for one value, differ).
    bool no_float(size_t i) const {
        for (size_t k = i; k < doc.nodes[i].end; ++k)
            if (doc.nodes[k].t == JT::Float) return false;
        return true;
    }

    void dump(size_t i, std::string& out) const {
        if (!doc.dump(i, out, true)) throw ToPython{};  // a lone surrogate
    }

    std::string_view str(size_t i, std::string& buf) const {
        bool lone = false;
        std::string_view s = doc.str(doc.nodes[i], buf, &lone);
        if (lone) throw ToPython{};  // Python writes U+FFFD for it (cuda_snapshot._clean)
        return s;
    }

    fr::Scalar scalar(size_t i, std::string& buf) const {
        fr::Scalar s;
        if (i == kNone) return s;
        const JNode& n = doc.nodes[i];
        switch (n.t) {
            case JT::Null: s.k = fr::Scalar::None; break;
            case JT::True:
            case JT::False:
                s.k = fr::Scalar::Bool;
                s.i = n.t == JT::True;
                break;
            case JT::Int: {  // beyond 64 bits: Other (no column holds it; str() Python's)
                std::string_view t = doc.text(n);
                auto r = std::from_chars(t.data(), t.data() + t.size(), s.i);
                s.k = r.ec == std::errc() && r.ptr == t.data() + t.size() ? fr::Scalar::Int
                                                                          : fr::Scalar::Other;
                break;
            }
            case JT::Float:
                s.k = fr::Scalar::Float;
                s.f = n.d;
                break;
            case JT::Str:
                s.k = fr::Scalar::Str;
                s.s = str(i, buf);
                break;
            default: s.k = fr::Scalar::Other; break;
        }
        return s;
    }

    void entry(size_t i) {
        bool took = false;
        if (doc.nodes[i].t == JT::Obj) {
            try {
                took = row_of(i);
            } catch (const ToPython&) { took = false; }
        }
        if (took) {
            rows.add(row);
            return;
        }
        spans.push_back(span(i));
        rows.python_entry(spans.size() - 1);
    }

    // fr::key_of(k), remembered by the key's place in the entry (torch's entries repeat
    // one sequence of keys: one comparison instead of a search through the names).
    std::vector<std::pair<std::string, fr::Key>> keys_at;
    fr::Key key(size_t m, std::string_view k) {
        if (m < keys_at.size() && keys_at[m].first == k) return keys_at[m].second;
        fr::Key kk = fr::key_of(k);
        if (m < keys_at.size())
            keys_at[m] = {std::string(k), kk};
        else if (m == keys_at.size() && m < 64)
            keys_at.emplace_back(std::string(k), kk);
        return kk;
    }

    // The entry's row; false: Python reads it.
    bool row_of(size_t obj) {
        for (auto& c : col_node) c = kNone;
        size_t seq_id = kNone;
        extra.clear();
        size_t i = obj + 1;
        for (size_t m = 0; m < doc.nodes[obj].count; ++m) {
            size_t v = i + 1;
            std::string_view k = str(i, key_buf);
            i = doc.nodes[v].end;
            fr::Key kk = key(m, k);
            if (kk < fr::kNumColumns) {
                if (col_node[kk] != kNone) return false;  // a repeated key
                col_node[kk] = v;
                continue;
            }
            for (auto& e : extra)
                if (e.first == k) return false;
            if (kk == fr::kSeqId) seq_id = v;
            extra.emplace_back(std::string(k), v);
        }
        size_t frames = col_node[fr::kFrames];
        if (frames != kNone && doc.nodes[frames].t != JT::Null) return false;
        row.clear();
        fr::Scalar col[fr::kNumColumns];
        for (int k = 0; k < fr::kNumColumns; ++k) col[k] = scalar(col_node[k], bufs[k]);
        fr::Scalar seq = scalar(seq_id, bufs[fr::kNumColumns]);
        if (!fr::scalar_fields(col, seq, seq_id != kNone, row)) return false;
        const fr::Key texts[4] = {fr::kInputSizes, fr::kOutputSizes, fr::kInputDtypes,
                                  fr::kOutputDtypes};
        for (int t = 0; t < 4; ++t) {
            size_t v = col_node[texts[t]];
            if (v == kNone || doc.nodes[v].t == JT::Null) continue;
            if (!no_float(v)) return false;
            row.text[t].clear();
            dump(v, row.text[t]);
            row.has_text[t] = true;
        }
        size_t pg = col_node[fr::kProcessGroup];
        if (pg != kNone && !process_group(pg)) return false;
        if (!extra.empty()) {
            std::string& a = row.attrs;
            a.push_back('{');
            for (size_t q = 0; q < extra.size(); ++q) {
                if (q) a.push_back(',');
                put_json_string(a, extra[q].first, true);
                a.push_back(':');
                if (!no_float(extra[q].second)) return false;
                dump(extra[q].second, a);
                if (fr::counted_key(extra[q].first)) row.unknown.push_back(extra[q].first);
            }
            a.push_back('}');
            row.has_attrs = true;
        }
        return true;
    }

    // flight_recorder._pg: a list's first two items, else the value itself.
    bool process_group(size_t pg) {
        std::string buf;
        auto part = [&](size_t i, bool* has, std::string& out) {
            fr::Scalar s = scalar(i, buf);
            if (s.k == fr::Scalar::None) return true;
            *has = true;
            return fr::text_of(s, out);
        };
        const JNode& n = doc.nodes[pg];
        if (n.t != JT::Arr) return part(pg, &row.has_pg, row.pg);
        if (n.count == 0) return true;
        if (!part(pg + 1, &row.has_pg, row.pg)) return false;
        return n.count < 2 || part(doc.nodes[pg + 1].end, &row.has_desc, row.desc);
    }

    // The whole dump: false where Python reads it (see the top of this file).
    bool read(std::string_view data) {
        // json.loads(bytes) tells UTF-16/32 by NULs in the first four bytes, and reads a
        // byte order mark: both Python's
        if (data.size() < 4 || !data[0] || !data[1] || !data[2] || !data[3]) return false;
        if (data.substr(0, 3) == "\xEF\xBB\xBF") return false;
        bool cut;
        if (utf8_valid_prefix(data, &cut) != data.size()) return false;
        doc.data = data;
        doc.eof = true;
        doc.nodes.reserve(data.size() / 8 + 16);  // torch's dumps: a node per ~10 bytes
        auto ws = [&](size_t q) {
            while (q < data.size() &&
                   (data[q] == ' ' || data[q] == '\t' || data[q] == '\n' || data[q] == '\r'))
                ++q;
            return q;
        };
        size_t p = ws(0);
        if (p == data.size()) return false;
        try {
            p = ws(doc.parse(p));
        } catch (const JsonError&) { return false; } catch (const NeedMore&) {
            return false;
        }
        if (p != data.size() || doc.nodes.empty() || doc.nodes[0].t != JT::Obj) return false;
        const JNode* entries = doc.get(0, "entries");  // a dict's: the last of a repeated key
        if (!entries) return true;
        if (entries->t != JT::Arr) return false;
        entries_begin = entries->begin;
        entries_end = entries->begin + entries->len;
        size_t e = (size_t)(entries - doc.nodes.data());
        size_t i = e + 1;
        for (size_t k = 0; k < entries->count; ++k) {
            entry(i);
            i = doc.nodes[i].end;
        }
        rows.flush();
        return true;
    }
};

// flight_recorder_json(path, data) -> None (Python reads it) or (outputs, entries, counts):
// outputs ("batch", cols), ("entry", its JSON as bytes), ("key", name) in file order;
// entries the (begin, end) offsets of the entries' list in data, or None; counts
// ("counts", {key: n}, old_seq_ids).
PyObject* flight_recorder_json(PyObject*, PyObject* args) {
    PyObject* path;
    Py_buffer view;
    if (!PyArg_ParseTuple(args, "Uy*", &path, &view)) return nullptr;
    std::string_view data(static_cast<const char*>(view.buf), (size_t)view.len);
    auto reader = std::make_unique<Reader>();
    bool took = false, failed = false;
    bool ran = run_released(path, failed, [&] { took = reader->read(data); });
    PyObject* list = ran && took ? PyList_New(0) : nullptr;
    bool ok = list && reader->rows.outs_py(list, [&](size_t i) {
        std::string_view s = reader->spans[i];
        return PyBytes_FromStringAndSize(s.data(), (Py_ssize_t)s.size());
    });
    PyBuffer_Release(&view);
    if (ran && !took) Py_RETURN_NONE;
    PyObject* counts = ok ? reader->rows.counts_py() : nullptr;
    if (!counts) {
        Py_XDECREF(list);
        return nullptr;
    }
    if (reader->entries_end == 0) return Py_BuildValue("(NON)", list, Py_None, counts);
    return Py_BuildValue("(N(nn)N)", list, (Py_ssize_t)reader->entries_begin,
                         (Py_ssize_t)reader->entries_end, counts);
}

PyMethodDef functions[] = {
    {"flight_recorder_json", (PyCFunction)flight_recorder_json, METH_VARARGS,
     "flight_recorder_json(path, data) -> None (Python reads it) or (outputs, entries' "
     "(begin, end) or None, counts)"},
    {nullptr, nullptr, 0, nullptr}};

}  // namespace

int add_flight_recorder_json(PyObject* module) {
    return PyModule_AddFunctions(module, functions);
}

}  // namespace tlv
