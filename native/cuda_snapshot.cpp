// CUDA allocator snapshots: the compiled twin of ingest/pickle_stream.py (the opcode
// reader: plain data only, streamed, memo compacted) and of ingest/cuda_snapshot.py's
// per-entry work (frames and stacks interned, every trace entry a row, the pairing and
// the block-size replay). The Python modules are the specification: the same rows, the
// same interned ids, the same messages, word for word. What is not per entry stays in
// Python: segments, annotations and the top object come back as plain Python values,
// the devices' trace state at the end.
//
// Memory: one 8-byte slot per memoized object (a tagged value: an interned string,
// frame or stack id, a handed-over item, or an index into a small table of the few live
// containers), the interned strings, frames and stacks, one item under construction,
// and the rows of one batch.
#include "cuda_snapshot.hpp"

namespace tlv {
namespace snapshot {

// int.from_bytes(le, "little", signed=True), through the public API (the private
// _PyLong_FromByteArray did it in one call; these ints are rare: past 64 bits)
PyObject* big_py(const std::string& le) {
    PyObject* from_bytes = PyObject_GetAttrString((PyObject*)&PyLong_Type, "from_bytes");
    PyObject* bytes =
        from_bytes ? PyBytes_FromStringAndSize(le.data(), (Py_ssize_t)le.size()) : nullptr;
    PyObject* args = bytes ? Py_BuildValue("(Ns)", bytes, "little") : nullptr;
    PyObject* kwargs = args ? Py_BuildValue("{s:O}", "signed", Py_True) : nullptr;
    PyObject* r = kwargs ? PyObject_Call(from_bytes, args, kwargs) : nullptr;
    Py_XDECREF(kwargs);
    Py_XDECREF(args);
    Py_XDECREF(from_bytes);
    return r;
}

PyObject* val_to_py(const Val& v, PyObject* path, PyObject* frame_cls, PyObject* stack_cls,
                    int depth) {
    if (v.container() && ++depth > kMaxNesting) {  // see too_deep()
        raise_parse_error(path, ParseError{0, too_deep()});
        return nullptr;
    }
    switch (v.t) {
        case T::None: Py_RETURN_NONE;
        case T::Bool: return PyBool_FromLong((long)v.i);
        case T::Int: return PyLong_FromLongLong(v.i);
        case T::Big: return big_py(*v.s);
        case T::Float: return PyFloat_FromDouble(v.f);
        case T::Str: return py_str(*v.s);
        case T::Bytes: return PyBytes_FromStringAndSize(v.s->data(), (Py_ssize_t)v.s->size());
        case T::BArr:
            return PyByteArray_FromStringAndSize(v.s->data(), (Py_ssize_t)v.s->size());
        case T::Frame: return PyObject_CallFunction(frame_cls, "L", (long long)v.i);
        case T::Stack:
            if (v.i) return PyObject_CallFunction(stack_cls, "L", (long long)v.i);
            return PyObject_CallFunctionObjArgs(stack_cls, Py_None, nullptr);
        case T::Streamed: Py_RETURN_NONE;
        case T::List:
        case T::Tuple: {
            auto& items = v.o->items;
            PyObject* r = v.t == T::List ? PyList_New((Py_ssize_t)items.size())
                                         : PyTuple_New((Py_ssize_t)items.size());
            if (!r) return nullptr;
            for (size_t k = 0; k < items.size(); ++k) {
                PyObject* x = val_to_py(items[k], path, frame_cls, stack_cls, depth);
                if (!x) {
                    Py_DECREF(r);
                    return nullptr;
                }
                if (v.t == T::List)
                    PyList_SET_ITEM(r, (Py_ssize_t)k, x);
                else
                    PyTuple_SET_ITEM(r, (Py_ssize_t)k, x);
            }
            return r;
        }
        case T::Set:
        case T::FSet: {
            PyObject* r = v.t == T::Set ? PySet_New(nullptr) : PyFrozenSet_New(nullptr);
            if (!r) return nullptr;
            for (auto& x : v.o->items) {
                PyObject* px = val_to_py(x, path, frame_cls, stack_cls, depth);
                if (!px || PySet_Add(r, px) < 0) {
                    Py_XDECREF(px);
                    Py_DECREF(r);
                    return nullptr;
                }
                Py_DECREF(px);
            }
            return r;
        }
        case T::Dict: {
            PyObject* r = PyDict_New();
            if (!r) return nullptr;
            for (size_t k = 0; k < v.o->items.size(); ++k) {
                PyObject* pk = val_to_py(v.o->items[k], path, frame_cls, stack_cls, depth);
                PyObject* pv =
                    pk ? val_to_py(v.o->vals[k], path, frame_cls, stack_cls, depth) : nullptr;
                if (!pv || PyDict_SetItem(r, pk, pv) < 0) {
                    Py_XDECREF(pk);
                    Py_XDECREF(pv);
                    Py_DECREF(r);
                    return nullptr;
                }
                Py_DECREF(pk);
                Py_DECREF(pv);
            }
            return r;
        }
    }
    Py_RETURN_NONE;
}

PyObject* interned_py(PyPickle* self, const Parser::Out& o) {
    if (o.kind == 2) {
        PyObject* v = to_py(self, o.value);
        return v ? Py_BuildValue("(sLN)", "frame", (long long)o.id, v) : nullptr;
    }
    PyObject* ids = PyList_New((Py_ssize_t)o.ids.size());
    for (size_t k = 0; ids && k < o.ids.size(); ++k)
        PyList_SET_ITEM(ids, (Py_ssize_t)k, PyLong_FromLongLong(o.ids[k]));
    return ids ? Py_BuildValue("(sLN)", "stack", (long long)o.id, ids) : nullptr;
}

int init_pickle(PyPickle* self, PyObject* args) {
    PyObject *path, *frame_cls, *stack_cls;
    if (!PyArg_ParseTuple(args, "UOO", &path, &frame_cls, &stack_cls)) return -1;
    Py_INCREF(path);
    Py_XSETREF(self->path, path);
    Py_INCREF(frame_cls);
    Py_XSETREF(self->frame_cls, frame_cls);
    Py_INCREF(stack_cls);
    Py_XSETREF(self->stack_cls, stack_cls);
    Py_ssize_t n;
    const char* s = PyUnicode_AsUTF8AndSize(path, &n);
    if (!s) return -1;
    delete self->p;
    self->p = new Parser(std::string(s, (size_t)n));
    self->failed = false;
    return 0;
}

void clear_pickle(PyPickle* self) {
    delete self->p;
    Py_XDECREF(self->path);
    Py_XDECREF(self->frame_cls);
    Py_XDECREF(self->stack_cls);
}

}  // namespace snapshot

namespace {

using namespace snapshot;

// ---- Python values ---------------------------------------------------------------------

using PyParser = PyPickle;

PyObject* i128_py(i128 v) {
    std::string t = i128_text(v);
    return PyLong_FromString(t.c_str(), nullptr, 10);
}

// The devices' trace state, as _Device attributes (see _Parser._consume_native).
PyObject* states_py(PyParser* self) {
    Parser& P = *self->p;
    PyObject* all = PyDict_New();
    if (!all) return nullptr;
    for (auto& dp : P.devices) {
        Device& d = *dp;
        PyObject* live = PyDict_New();
        for (auto& kv : d.live.ordered()) {
            PyObject* k = PyLong_FromLongLong(kv.first);
            PyObject* v = Py_BuildValue("[LLL]", (long long)kv.second.step,
                                        (long long)kv.second.size, (long long)kv.second.block);
            PyDict_SetItem(live, k, v);
            Py_XDECREF(k);
            Py_XDECREF(v);
        }
        PyObject* seg_made = PyDict_New();
        for (auto& kv : d.seg_made) {
            PyObject* k = PyLong_FromLongLong(kv.first);
            PyObject* v = PyLong_FromLongLong(kv.second);
            PyDict_SetItem(seg_made, k, v);
            Py_XDECREF(k);
            Py_XDECREF(v);
        }
        PyObject* examples = PyList_New(0);
        for (auto& e : d.examples) {
            PyObject* s = py_str(e);
            PyList_Append(examples, s);
            Py_XDECREF(s);
        }
        PyObject* before = PyList_New(2);
        PyList_SET_ITEM(before, 0, i128_py(d.before_n));
        PyList_SET_ITEM(before, 1, i128_py(d.before_bytes));
        PyObject* last =
            d.has_last ? PyLong_FromLongLong(d.last_time) : (Py_INCREF(Py_None), Py_None);
        PyObject* st = Py_BuildValue(
            "{s:L,s:N,s:N,s:N,s:N,s:N,s:L,s:O,s:N,s:N}", "step", (long long)d.step, "actions",
            counts_dict(d.actions.items), "problems", counts_dict(d.problems.items), "examples",
            examples, "live", live, "before_freed", before, "estimated", (long long)d.estimated,
            "exact_rule", d.exact_rule ? Py_True : Py_False, "seg_made", seg_made, "last_time",
            last);
        PyObject* key = to_py(self, d.index);
        if (!st || !key || PyDict_SetItem(all, key, st) < 0) {
            Py_XDECREF(st);
            Py_XDECREF(key);
            Py_DECREF(all);
            return nullptr;
        }
        Py_DECREF(st);
        Py_DECREF(key);
    }
    return all;
}

PyObject* outputs(PyParser* self) {
    Parser& P = *self->p;
    PyObject* list = PyList_New(0);
    if (!list) return nullptr;
    for (auto& o : P.outs) {
        PyObject* item = nullptr;
        switch (o.kind) {
            case 0: {
                PyObject* b = o.batch->export_py();
                PyObject* dev = b ? py_str(o.key.substr(5)) : nullptr;
                PyObject* idx = dev ? PyLong_FromUnicodeObject(dev, 10) : nullptr;
                Py_XDECREF(dev);
                item = (b && idx) ? Py_BuildValue("(sNN)", "batch", idx, b) : nullptr;
                if (!item) {
                    Py_XDECREF(b);
                    Py_XDECREF(idx);
                }
                o.batch.reset();
                break;
            }
            case 1: {
                PyObject* v = to_py(self, o.value);
                item = v ? Py_BuildValue("(sN)", "device", v) : nullptr;
                break;
            }
            case 2:
            case 3: item = interned_py(self, o); break;
            case 4:
            case 5: {
                PyObject* v = to_py(self, o.value);
                item = v ? Py_BuildValue("(sN)", o.kind == 4 ? "segment" : "annotation", v)
                         : nullptr;
                break;
            }
        }
        if (!item || PyList_Append(list, item) < 0) {
            Py_XDECREF(item);
            Py_DECREF(list);
            P.outs.clear();
            return nullptr;
        }
        Py_DECREF(item);
    }
    P.outs.clear();
    return list;
}

template <class F>
PyObject* guarded(PyParser* self, F&& body) {
    if (!run_released(self->path, self->failed, body)) {
        self->p->outs.clear();  // a failed parser hands nothing over
        return nullptr;
    }
    return outputs(self);
}

PyObject* feed(PyParser* self, PyObject* arg) {
    return with_chunk(arg, [&](std::string_view chunk) {
        return guarded(self, [&] { self->p->feed(chunk); });
    });
}

PyObject* finish(PyParser* self, PyObject*) {
    PyObject* r = guarded(self, [&] {
        self->p->end();
        self->p->flush_batch();
    });
    if (!r) return nullptr;
    Parser& P = *self->p;
    PyObject* top = P.have_top ? to_py(self, P.top) : (Py_INCREF(Py_None), Py_None);
    PyObject* states = top ? states_py(self) : nullptr;
    PyObject* end = (top && states) ? Py_BuildValue("(sNN)", "end", top, states) : nullptr;
    if (!end) {
        Py_XDECREF(top);
        Py_XDECREF(states);
    }
    return append_end(r, end);
}

PyObject* line(PyParser*, PyObject*) { Py_RETURN_NONE; }

int init(PyParser* self, PyObject* args, PyObject*) { return init_pickle(self, args); }

void dealloc(PyParser* self) {
    clear_pickle(self);
    Py_TYPE(self)->tp_free((PyObject*)self);
}

PyMethodDef methods[] = {
    {"feed", (PyCFunction)feed, METH_O,
     "feed(chunk: bytes) -> list: run the opcodes the chunk completes"},
    {"line", (PyCFunction)line, METH_NOARGS, "line() -> None: a pickle has no lines"},
    {"finish", (PyCFunction)finish, METH_NOARGS,
     "finish() -> list: the end of the file; the last outputs, then ('end', top, states)"},
    {nullptr, nullptr, 0, nullptr}};

PyTypeObject ParserType = {PyVarObject_HEAD_INIT(nullptr, 0)};

}  // namespace

int add_cuda_snapshot(PyObject* module) {
    return add_type(module, ParserType, "SnapshotParser",
                    "SnapshotParser(path, Frame, InternedStack): allocator snapshot "
                    "pickle bytes to trace rows and plain values",
                    sizeof(PyParser), (initproc)init, (destructor)dealloc, methods);
}

}  // namespace tlv
