// EventSink: event records (NodeScheduled .. CompileEvent) as rows of Arrow-layout
// columns, attrs as the writer's JSON text, over many timelines, handed out as exported
// columns (ingest/event_sink.py). The writer's row functions (store/convert.py) are the
// specification: a record the sink cannot write as they would (a Decimal, an int beyond
// 64 bits, a non-str key) is refused and passes through as a record.
#include <Python.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "columns.hpp"
#include "common.hpp"
#include "pyjson.hpp"

namespace tlv {
namespace {

using sv = std::string_view;

struct Fallback {};  // a value the sink does not write as the writer would
struct PyFail {};    // a Python exception is set

// json.dumps(value, default=str, separators=(",", ":")) of an attrs value made here
// (dicts of str keys, lists, str, int, float, bool, None); anything else: Fallback.
void dump_py(std::string& out, PyObject* v) {
    if (v == Py_None) {
        out.append("null");
        return;
    }
    if (v == Py_True) {
        out.append("true");
        return;
    }
    if (v == Py_False) {
        out.append("false");
        return;
    }
    if (PyUnicode_CheckExact(v)) {
        Py_ssize_t n = 0;
        const char* s = PyUnicode_AsUTF8AndSize(v, &n);
        if (!s) {
            PyErr_Clear();
            throw Fallback{};
        }  // a lone surrogate: Python decides
        put_json_string(out, sv(s, (size_t)n), true);
        return;
    }
    if (PyLong_CheckExact(v)) {
        int overflow = 0;
        long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
        if (overflow || (x == -1 && PyErr_Occurred())) {
            PyErr_Clear();
            throw Fallback{};
        }
        out.append(std::to_string(x));
        return;
    }
    if (PyFloat_CheckExact(v)) {
        put_py_float(out, PyFloat_AS_DOUBLE(v));
        return;
    }
    if (PyDict_CheckExact(v)) {
        out.push_back('{');
        Py_ssize_t pos = 0;
        PyObject *k, *x;
        bool first = true;
        while (PyDict_Next(v, &pos, &k, &x)) {
            if (!PyUnicode_CheckExact(k)) throw Fallback{};
            if (!first) out.push_back(',');
            first = false;
            dump_py(out, k);
            out.push_back(':');
            dump_py(out, x);
        }
        out.push_back('}');
        return;
    }
    if (PyList_CheckExact(v) || PyTuple_CheckExact(v)) {
        out.push_back('[');
        Py_ssize_t n = PySequence_Fast_GET_SIZE(v);
        for (Py_ssize_t i = 0; i < n; ++i) {
            if (i) out.push_back(',');
            dump_py(out, PySequence_Fast_GET_ITEM(v, i));
        }
        out.push_back(']');
        return;
    }
    throw Fallback{};
}

// ---- rows of the events table (the writer's row functions, store/convert.py) ---------

enum class RowKind { node, alloc, freed, aliased, compile };

// One value checked before anything of its row is written (a row is written whole or not).
struct V {
    bool null = true;
    sv s;
    int64_t i = 0;
};

V v_str(PyObject* o) {
    V v;
    if (o == Py_None) return v;
    if (!PyUnicode_CheckExact(o)) throw Fallback{};
    Py_ssize_t n = 0;
    const char* p = PyUnicode_AsUTF8AndSize(o, &n);
    if (!p) {
        PyErr_Clear();
        throw Fallback{};
    }  // a lone surrogate: Python decides
    v.null = false;
    v.s = sv(p, (size_t)n);
    return v;
}

V v_int(PyObject* o) {
    V v;
    if (o == Py_None) return v;
    if (!PyLong_CheckExact(o)) throw Fallback{};
    int overflow = 0;
    long long x = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (overflow || (x == -1 && PyErr_Occurred())) {
        PyErr_Clear();
        throw Fallback{};
    }
    v.null = false;
    v.i = x;
    return v;
}

std::vector<sv> v_strs(PyObject* o) {  // a tuple of str (reads, writes)
    if (!PyTuple_CheckExact(o)) throw Fallback{};
    std::vector<sv> out;
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(o); ++k) {
        V v = v_str(PyTuple_GET_ITEM(o, k));
        if (v.null) throw Fallback{};
        out.push_back(v.s);
    }
    return out;
}

// `_dumps(attrs) if attrs else None`: false for an empty dict (NULL).
bool v_attrs(PyObject* o, std::string& out) {
    if (!PyDict_CheckExact(o)) throw Fallback{};
    if (PyDict_GET_SIZE(o) == 0) return false;
    dump_py(out, o);
    return true;
}

void put(StrCol& c, const V& v) {
    if (v.null)
        c.set_null();
    else
        c.set(v.s);
}
void put(I64Col& c, const V& v) {
    if (v.null)
        c.set_null();
    else
        c.set(v.i);
}
void put(StrListCol& c, const std::vector<sv>& v) {
    c.begin_list();
    for (sv x : v) c.item(x);
    c.end_list();
}

// A record's fields after its timeline (a[0]), in class order, as one row of timeline
// `tl`; fields left out take the class's defaults (attrs {}, reads/writes (),
// is_input False). Every value is checked first: Fallback leaves the batch as it was.
void write_row(EventBatch& b, int32_t tl, RowKind k, PyObject* const* a, size_t n) {
    auto at = [&](size_t i) { return i < n ? a[i] : Py_None; };
    std::string js;
    bool has_js = false;
    switch (k) {
        case RowKind::node: {  // step node node_class ir_type kernel device reads writes line
                               // attrs
            V step = v_int(at(1)), node = v_str(at(2)), ncls = v_str(at(3)), irt = v_str(at(4)),
              kern = v_str(at(5)), dev = v_str(at(6)), line = v_int(at(9));
            std::vector<sv> reads, writes;
            if (n > 7) reads = v_strs(a[7]);
            if (n > 8) writes = v_strs(a[8]);
            if (n > 10) has_js = v_attrs(a[10], js);
            b.kind.set("node_scheduled");
            put(b.step, step);
            put(b.node, node);
            put(b.node_class, ncls);
            put(b.ir_type, irt);
            put(b.kernel, kern);
            put(b.device, dev);
            put(b.reads, reads);
            put(b.writes, writes);
            put(b.line, line);
            break;
        }
        case RowKind::alloc: {  // step buffer bytes node layout dtype shape stride device
            V step = v_int(at(1)), buf = v_str(at(2)), bytes = v_int(at(3)),  // size_expr
                node = v_str(at(4)), layout = v_str(at(5)), dtype = v_str(at(6)),  // is_input
                shape = v_str(at(7)), stride = v_str(at(8)), dev = v_str(at(9)),  // allocation
                expr = v_str(at(10)), alloc = v_int(at(12)), off = v_int(at(13)),  // offset
                line = v_int(at(14));  // line attrs
            PyObject* inp = at(11);
            if (n > 11 && inp != Py_True && inp != Py_False) throw Fallback{};
            if (n > 15) has_js = v_attrs(a[15], js);
            b.kind.set("buffer_allocated");
            put(b.step, step);
            put(b.buffer, buf);
            put(b.bytes, bytes);
            put(b.node, node);
            put(b.layout, layout);
            put(b.dtype, dtype);
            put(b.shape, shape);
            put(b.stride, stride);
            put(b.device, dev);
            put(b.size_expr, expr);
            b.is_input.set(inp == Py_True);
            put(b.allocation, alloc);
            put(b.offset, off);
            put(b.line, line);
            break;
        }
        case RowKind::freed: {  // step buffer reason attrs
            V step = v_int(at(1)), buf = v_str(at(2)), reason = v_str(at(3));
            if (n > 4) has_js = v_attrs(a[4], js);
            b.kind.set("buffer_freed");
            put(b.step, step);
            put(b.buffer, buf);
            put(b.reason, reason);
            break;
        }
        case RowKind::aliased: {  // step buffer target relation node attrs
            V step = v_int(at(1)), buf = v_str(at(2)), tgt = v_str(at(3)), rel = v_str(at(4)),
              node = v_str(at(5));
            if (n > 6) has_js = v_attrs(a[6], js);
            b.kind.set("buffer_aliased");
            put(b.step, step);
            put(b.buffer, buf);
            put(b.target, tgt);
            put(b.relation, rel);
            put(b.node, node);
            break;
        }
        case RowKind::compile: {  // category name step node kernel ts_ns dur_ns line attrs
            V cat = v_str(at(1)), name = v_str(at(2)), step = v_int(at(3)), node = v_str(at(4)),
              kern = v_str(at(5)), ts = v_int(at(6)), dur = v_int(at(7)), line = v_int(at(8));
            if (n > 9) has_js = v_attrs(a[9], js);
            b.kind.set("compile_event");
            put(b.category, cat);
            put(b.name, name);
            put(b.step, step);
            put(b.node, node);
            put(b.kernel, kern);
            put(b.ts_ns, ts);
            put(b.dur_ns, dur);
            put(b.line, line);
            break;
        }
    }
    if (has_js) b.attrs.set(js);
    b.tl.set(tl);
    b.end_row();
}

// The record classes' fields after `timeline`, in order (ingest/records.py).
const std::vector<const char*>& field_names(RowKind k) {
    static const std::vector<const char*> node{"timeline", "step",   "node",   "node_class",
                                               "ir_type",  "kernel", "device", "reads",
                                               "writes",   "line",   "attrs"};
    static const std::vector<const char*> alloc{"timeline",   "step",   "buffer",    "bytes",
                                                "node",       "layout", "dtype",     "shape",
                                                "stride",     "device", "size_expr", "is_input",
                                                "allocation", "offset", "line",      "attrs"};
    static const std::vector<const char*> freed{"timeline", "step", "buffer", "reason",
                                                "attrs"};
    static const std::vector<const char*> aliased{"timeline", "step", "buffer", "target",
                                                  "relation", "node", "attrs"};
    static const std::vector<const char*> compile{"timeline", "category", "name",  "step",
                                                  "node",     "kernel",   "ts_ns", "dur_ns",
                                                  "line",     "attrs"};
    switch (k) {
        case RowKind::node: return node;
        case RowKind::alloc: return alloc;
        case RowKind::freed: return freed;
        case RowKind::aliased: return aliased;
        default: return compile;
    }
}

// EventSink(classes): event records (and the compiled FX reader's events) as rows of one
// EventBatch, over many timelines (`_tl`), handed out by take() as exported columns.
struct PySink {
    PyObject_HEAD
    EventBatch* batch;
    std::unordered_map<std::string, int32_t>* index;  // timeline key -> _tl
    PyObject* timelines;  // list of keys, in _tl order
    PyObject* classes[5];  // NodeScheduled .. CompileEvent
    std::vector<PyObject*>* names[5];  // interned field names per class
};

int32_t sink_timeline(PySink* self, PyObject* key) {
    V k = v_str(key);
    if (k.null) throw Fallback{};
    auto it = self->index->find(std::string(k.s));
    if (it != self->index->end()) return it->second;
    auto id = (int32_t)self->index->size();
    if (PyList_Append(self->timelines, key) < 0) throw PyFail{};
    self->index->emplace(std::string(k.s), id);
    return id;
}

PyTypeObject SinkType = {PyVarObject_HEAD_INIT(nullptr, 0)};

const RowKind kKinds[5] = {RowKind::node, RowKind::alloc, RowKind::freed, RowKind::aliased,
                           RowKind::compile};

int sink_init(PySink* self, PyObject* args, PyObject*) {
    PyObject* classes;
    if (!PyArg_ParseTuple(args, "O!", &PyTuple_Type, &classes)) return -1;
    if (PyTuple_GET_SIZE(classes) != 5) {
        PyErr_SetString(PyExc_TypeError,
                        "EventSink: expected (NodeScheduled, BufferAllocated, "
                        "BufferFreed, BufferAliased, CompileEvent)");
        return -1;
    }
    if (!self->batch) self->batch = new EventBatch();
    if (!self->index) self->index = new std::unordered_map<std::string, int32_t>();
    self->batch->clear();
    self->index->clear();
    Py_XSETREF(self->timelines, PyList_New(0));
    if (!self->timelines) return -1;
    for (int c = 0; c < 5; ++c) {
        PyObject* cls = PyTuple_GET_ITEM(classes, c);
        Py_INCREF(cls);
        Py_XSETREF(self->classes[c], cls);
        if (!self->names[c]) self->names[c] = new std::vector<PyObject*>();
        for (PyObject* o : *self->names[c]) Py_DECREF(o);
        self->names[c]->clear();
        for (const char* f : field_names(kKinds[c])) {
            PyObject* name = PyUnicode_InternFromString(f);
            if (!name) return -1;
            self->names[c]->push_back(name);
        }
    }
    return 0;
}

void sink_dealloc(PySink* self) {
    delete self->batch;
    delete self->index;
    Py_XDECREF(self->timelines);
    for (int c = 0; c < 5; ++c) {
        Py_XDECREF(self->classes[c]);
        if (self->names[c])
            for (PyObject* o : *self->names[c]) Py_DECREF(o);
        delete self->names[c];
    }
    Py_TYPE(self)->tp_free((PyObject*)self);
}

// add(record) -> bool: the record as a row (True), or False where it is no event record
// the sink takes or a value does not fit (nothing written: the caller yields the record).
PyObject* sink_add(PySink* self, PyObject* rec) {
    if (!self->batch) {
        PyErr_SetString(PyExc_RuntimeError, "EventSink not initialised");
        return nullptr;
    }
    PyObject* cls = (PyObject*)Py_TYPE(rec);
    int c = 0;
    while (c < 5 && self->classes[c] != cls) ++c;
    if (c == 5) Py_RETURN_FALSE;
    const auto& names = *self->names[c];
    PyObject* a[16] = {};
    size_t n = names.size();
    for (size_t k = 0; k < n; ++k) {
        a[k] = PyObject_GetAttr(rec, names[k]);
        if (!a[k]) {
            for (size_t j = 0; j < k; ++j) Py_DECREF(a[j]);
            return nullptr;
        }
    }
    PyObject* result = Py_True;
    try {
        int32_t tl = sink_timeline(self, a[0]);
        write_row(*self->batch, tl, kKinds[c], a, n);
    } catch (const Fallback&) { result = Py_False; } catch (const PyFail&) {
        result = nullptr;
    } catch (const std::bad_alloc&) {
        PyErr_NoMemory();
        result = nullptr;
    }
    for (size_t k = 0; k < n; ++k) Py_DECREF(a[k]);
    Py_XINCREF(result);
    return result;
}

PyObject* sink_rows(PySink* self, PyObject*) {
    return PyLong_FromSize_t(self->batch ? self->batch->rows : 0);
}

PyObject* sink_text_bytes(PySink* self, PyObject*) {
    return PyLong_FromSize_t(self->batch ? self->batch->text_bytes() : 0);
}

// take() -> None | (timelines, {"n", "cols"}): the rows so far, and the sink emptied.
PyObject* sink_take(PySink* self, PyObject*) {
    if (!self->batch || self->batch->rows == 0) Py_RETURN_NONE;
    PyObject* cols = self->batch->export_py();
    if (!cols) return nullptr;
    PyObject* tls = PyList_AsTuple(self->timelines);
    if (!tls) {
        Py_DECREF(cols);
        return nullptr;
    }
    PyObject* fresh = PyList_New(0);
    if (!fresh) {
        Py_DECREF(cols);
        Py_DECREF(tls);
        return nullptr;
    }
    Py_SETREF(self->timelines, fresh);
    self->batch->clear();
    self->index->clear();
    return Py_BuildValue("(NN)", tls, cols);
}

PyMethodDef sink_methods[] = {
    {"add", (PyCFunction)sink_add, METH_O,
     "add(record) -> bool: the event record as a row, or False (nothing written)"},
    {"rows", (PyCFunction)sink_rows, METH_NOARGS, "rows() -> int: rows not yet taken"},
    {"text_bytes", (PyCFunction)sink_text_bytes, METH_NOARGS,
     "text_bytes() -> int: bytes held by the string columns"},
    {"take", (PyCFunction)sink_take, METH_NOARGS,
     "take() -> None | (timelines, exported columns): the rows so far; the sink emptied"},
    {nullptr, nullptr, 0, nullptr}};

}  // namespace

int add_event_sink(PyObject* module) {
    return add_type(module, SinkType, "EventSink",
                    "EventSink(classes): event records as rows of exported columns "
                    "(torch logs and TORCH_TRACE logs, where the writer takes columns)",
                    sizeof(PySink), (initproc)sink_init, (destructor)sink_dealloc,
                    sink_methods);
}

}  // namespace tlv
