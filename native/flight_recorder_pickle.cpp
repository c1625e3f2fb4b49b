// Flight Recorder dumps, pickle form: the snapshot reader's pickle machine
// (pickle_machine.cpp: opcodes, never executed; the same refusals, the memo compacted by
// the same interning of frames and stacks) with the dump's entries streamed to
// flight_recorder.hpp's rows instead of a snapshot's trace (ingest/flight_recorder.py's
// _parse_pickle with pickle_stream.PickleStream and cuda_snapshot.Interner).
#include "cuda_snapshot.hpp"
#include "flight_recorder.hpp"
#include "pyjson.hpp"

namespace tlv {
namespace {

using snapshot::Obj;
using snapshot::Parser;
using snapshot::Path;
using snapshot::T;
using snapshot::Val;

// flight_recorder._plain then json.dumps (ensure_ascii, no spaces) of the plain data
// torch writes: None, bools, ints, text, lists, tuples, dicts of text keys. False for
// anything else (Python writes it).
bool plain_json(const Val& v, std::string& out) {
    switch (v.t) {
        case T::None: out.append("null"); return true;
        case T::Bool: out.append(v.i ? "true" : "false"); return true;
        case T::Int: out.append(std::to_string(v.i)); return true;
        case T::Str:
            if (snapshot::has_surrogate(*v.s)) return false;
            put_json_string(out, *v.s, true);
            return true;
        case T::List:
        case T::Tuple: {
            out.push_back('[');
            bool first = true;
            for (auto& x : v.o->items) {
                if (!first) out.push_back(',');
                first = false;
                if (!plain_json(x, out)) return false;
            }
            out.push_back(']');
            return true;
        }
        case T::Dict: {
            out.push_back('{');
            for (size_t j = 0; j < v.o->items.size(); ++j) {
                const Val& k = v.o->items[j];
                if (k.t != T::Str || snapshot::has_surrogate(*k.s)) return false;
                if (j) out.push_back(',');
                put_json_string(out, *k.s, true);
                out.push_back(':');
                if (!plain_json(v.o->vals[j], out)) return false;
            }
            out.push_back('}');
            return true;
        }
        default: return false;
    }
}

// A value as _Dump.entry's scalar reads see it; false: not one reproduced here.
bool scalar_of(const Val* v, fr::Scalar& s) {
    s = fr::Scalar();
    if (!v) return true;
    switch (v->t) {
        case T::None: s.k = fr::Scalar::None; return true;
        case T::Bool:
            s.k = fr::Scalar::Bool;
            s.i = v->i;
            return true;
        case T::Int:
            s.k = fr::Scalar::Int;
            s.i = v->i;
            return true;
        case T::Float:
            s.k = fr::Scalar::Float;
            s.f = v->f;
            return true;
        case T::Str:
            if (snapshot::has_surrogate(*v->s)) return false;
            s.k = fr::Scalar::Str;
            s.s = *v->s;
            return true;
        default: s.k = fr::Scalar::Other; return true;
    }
}

// flight_recorder._pg's str() of one part; false: Python writes it.
bool pg_part(const Val& v, bool* has, std::string& out) {
    fr::Scalar s;
    if (!scalar_of(&v, s)) return false;
    if (s.k == fr::Scalar::None) return true;
    *has = true;
    return fr::text_of(s, out);
}

struct Reader final : snapshot::Items {
    Parser& P;
    fr::Rows rows;
    std::vector<Val> values;  // entries Python reads (fr::Out::value indexes them)
    Val top;
    bool have_top = false;
    const std::string* k_entries;
    std::unordered_map<const std::string*, int> key_at;  // interned key -> fr::Key, -1 odd
    fr::Row row;
    const Val* col_val[fr::kNumColumns];
    std::vector<std::pair<const std::string*, const Val*>> extra;

    explicit Reader(Parser& p) : P(p) {
        k_entries = P.strs.get("entries");
        P.items_to = this;
        P.holds = "a Flight Recorder dump";
    }

    bool streams(const Path& p) const override {
        return p.n == 1 && Parser::is_text(p.k[0], k_entries);
    }

    void item(const Path& p, const Val& value, int64_t) override {
        if (p.n == -1) {
            top = value;
            have_top = true;
            return;
        }
        entry(value);
    }

    int key(const std::string* s) {
        auto it = key_at.find(s);
        if (it != key_at.end()) return it->second;
        int k = snapshot::has_surrogate(*s) ? -1 : (int)fr::key_of(*s);
        key_at.emplace(s, k);
        return k;
    }

    // _Dump.entry: the entry's row, or the entry for Python (its frames interned here
    // all the same, as an InternedStack: one interner numbers every stack).
    void entry(const Val& e) {
        if (e.t != T::Dict) {
            to_python(e);
            return;
        }
        const Obj& d = *e.o;
        for (auto& c : col_val) c = nullptr;
        const Val* seq_id = nullptr;
        extra.clear();
        bool odd = false;
        for (size_t j = 0; j < d.items.size(); ++j) {
            const Val& k = d.items[j];
            int kk = k.t == T::Str ? key(k.s) : -1;
            if (kk < 0) {
                odd = true;
                continue;
            }
            if (kk < fr::kNumColumns) {
                col_val[kk] = &d.vals[j];
                continue;
            }
            if (kk == fr::kSeqId) seq_id = &d.vals[j];
            extra.emplace_back(k.s, &d.vals[j]);
        }
        const Val* frames = col_val[fr::kFrames];
        int64_t sid = frames && frames->t != T::None ? P.stack_id(*frames) : 0;
        if (odd || !fill(seq_id)) {
            if (frames && frames->t != T::None && frames->t != T::Stack) {
                auto copy = std::make_shared<Obj>(d);  // frames as their interned stack
                copy->vals[(size_t)(frames - d.vals.data())] = Val::id(T::Stack, sid);
                to_python(Val::obj(T::Dict, copy));
            } else {
                to_python(e);
            }
            return;
        }
        row.stack_id = sid;
        rows.add(row);
    }

    void to_python(const Val& v) {
        values.push_back(v);
        rows.python_entry(values.size() - 1);
    }

    // The row's fields but the stack; false: Python reads the entry.
    bool fill(const Val* seq_id) {
        row.clear();
        fr::Scalar col[fr::kNumColumns], seq;
        for (int k = 0; k < fr::kNumColumns; ++k)
            if (!scalar_of(col_val[k], col[k])) return false;
        if (!scalar_of(seq_id, seq)) return false;
        const Val* dur = col_val[fr::kDurationMs];
        if (dur && dur->t == T::Big) return false;  // int * 1e6 may overflow in Python
        if (!fr::scalar_fields(col, seq, seq_id != nullptr, row)) return false;
        const fr::Key texts[4] = {fr::kInputSizes, fr::kOutputSizes, fr::kInputDtypes,
                                  fr::kOutputDtypes};
        for (int t = 0; t < 4; ++t) {
            const Val* v = col_val[texts[t]];
            if (!v || v->t == T::None) continue;
            row.text[t].clear();
            if (!plain_json(*v, row.text[t])) return false;
            row.has_text[t] = true;
        }
        const Val* pg = col_val[fr::kProcessGroup];
        if (pg && (pg->t == T::List || pg->t == T::Tuple)) {
            auto& items = pg->o->items;
            if (!items.empty() && !pg_part(items[0], &row.has_pg, row.pg)) return false;
            if (items.size() > 1 && !pg_part(items[1], &row.has_desc, row.desc)) return false;
        } else if (pg && !pg_part(*pg, &row.has_pg, row.pg)) {
            return false;
        }
        if (!extra.empty()) {
            std::string& a = row.attrs;
            a.push_back('{');
            for (size_t q = 0; q < extra.size(); ++q) {
                if (q) a.push_back(',');
                put_json_string(a, *extra[q].first, true);
                a.push_back(':');
                if (!plain_json(*extra[q].second, a)) return false;
                if (fr::counted_key(*extra[q].first)) row.unknown.push_back(*extra[q].first);
            }
            a.push_back('}');
            row.has_attrs = true;
        }
        return true;
    }
};

struct PyReader : snapshot::PyPickle {
    Reader* r;
};

// The outputs so far, in order: the frames and stacks interned, then the rows' outputs:
// ("frame", id, value), ("stack", id, ids), ("batch", cols), ("entry", value),
// ("key", name).
PyObject* outputs(PyReader* self) {
    Parser& P = *self->p;
    fr::Rows& R = self->r->rows;
    PyObject* list = PyList_New(0);
    bool ok = list != nullptr;
    for (auto& o : P.outs) {
        if (!ok) break;
        if (o.kind == 2 || o.kind == 3)
            ok = fr::append_new(list, snapshot::interned_py(self, o));
    }
    ok = ok && R.outs_py(list, [&](size_t i) { return to_py(self, self->r->values[i]); });
    P.outs.clear();
    R.outs.clear();
    self->r->values.clear();
    if (!ok) {
        Py_XDECREF(list);
        return nullptr;
    }
    return list;
}

template <class F>
PyObject* guarded(PyReader* self, F&& body) {
    if (!run_released(self->path, self->failed, body)) {
        self->p->outs.clear();
        self->r->rows.outs.clear();
        return nullptr;
    }
    return outputs(self);
}

PyObject* feed(PyReader* self, PyObject* arg) {
    return with_chunk(arg, [&](std::string_view chunk) {
        return guarded(self, [&] { self->p->feed(chunk); });
    });
}

PyObject* finish(PyReader* self, PyObject*) {
    PyObject* r = guarded(self, [&] {
        self->p->end();
        self->r->rows.flush();
    });
    if (!r) return nullptr;
    PyObject* top = self->r->have_top ? to_py(self, self->r->top) : nullptr;
    if (!self->r->have_top) {
        Py_INCREF(Py_None);
        top = Py_None;
    }
    if (!top || !fr::append_new(r, Py_BuildValue("(sN)", "top", top)) ||
        !fr::append_new(r, self->r->rows.counts_py())) {
        Py_DECREF(r);
        return nullptr;
    }
    return r;
}

PyObject* line(PyReader*, PyObject*) { Py_RETURN_NONE; }

int init(PyReader* self, PyObject* args, PyObject*) {
    if (init_pickle(self, args) < 0) return -1;
    delete self->r;  // it held the parser init_pickle replaced (its destructor reads none)
    self->r = new Reader(*self->p);
    return 0;
}

void dealloc(PyReader* self) {
    delete self->r;
    clear_pickle(self);
    Py_TYPE(self)->tp_free((PyObject*)self);
}

PyMethodDef methods[] = {
    {"feed", (PyCFunction)feed, METH_O,
     "feed(chunk: bytes) -> list: run the opcodes the chunk completes"},
    {"line", (PyCFunction)line, METH_NOARGS, "line() -> None: a pickle has no lines"},
    {"finish", (PyCFunction)finish, METH_NOARGS,
     "finish() -> list: the end of the file; the last outputs, then ('top', top) and "
     "('counts', unknown entry keys, old seq ids)"},
    {nullptr, nullptr, 0, nullptr}};

PyTypeObject ReaderType = {PyVarObject_HEAD_INIT(nullptr, 0)};

}  // namespace

int add_flight_recorder_pickle(PyObject* module) {
    return add_type(module, ReaderType, "FlightRecorderParser",
                    "FlightRecorderParser(path, Frame, InternedStack): Flight Recorder "
                    "pickle bytes to collective_recorded rows and plain values",
                    sizeof(PyReader), (initproc)init, (destructor)dealloc, methods);
}

}  // namespace tlv
