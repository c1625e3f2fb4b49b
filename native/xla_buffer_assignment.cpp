// XLA buffer-assignment dumps to events: the compiled twin of ingest/xla_buffer_assignment.py
// (with xla_live_range.py, xla_peaks.py, xla_shapes.py), which stays the specification:
// tests/native/test_xla_buffer_assignment.py runs both on every XLA fixture and on mutated
// dumps and requires the same rows, the same closing note, or the same error (file, line,
// message).
//
// The same two streaming passes as the Python parser: the HloLiveRange section first
// (steps and ranges), then everything else, emitting each used value's events when its
// entry ends. What must be held between the sections is held compactly: names interned
// once in one arena (a value's key is two 32-bit ids), numbers in flat columns, no
// object per value; and out of RAM: the arena and the columns live in a spill file whose
// resident pages are dropped past a budget (Spill), the hash tables over them in memory
// (5 bytes a slot). So the peak RSS of a large dump's ingest grows slowly with the dump
// (measured: docs/benchmarks.md).
//
// Identity is kept simple by scope: this parser reads ASCII text byte by byte, where the
// Python one reads Unicode (its regexes' \s and \w, str.strip). XlaScan checks every file
// first; a file with a byte that could read differently (not ASCII, a control character,
// CR, NUL, bad UTF-8, a number of 17 digits or more) outside the places where text is only
// kept or skipped (the stack-trace breakdown, the memory report's table) is handed to the
// Python parser whole. Real dumps never need that.
#include "xla_buffer_assignment.hpp"

namespace tlv {
namespace {

using namespace xla;

// ---- Python glue --------------------------------------------------------------------------

struct PyXla {
    PyObject_HEAD
    Parser* p;
    Scan* scan;
    Lines* lines;
    PyObject* path;  // the current file's path (for errors)
    bool failed;
    // pass 1 runs inside the scan: its error waits until the scan says the dump is plain
    bool p1_active;
    bool p1_failed;
    ParseError* p1_error;
    std::string p1_path;
};

template <class F>
PyObject* guarded(PyXla* self, F&& body) {
    if (!run_released(self->path, self->failed, body)) return nullptr;
    // hand over the exported batches
    Parser& P = *self->p;
    PyObject* list = PyList_New(0);
    bool ok = list != nullptr;
    for (PyObject* b : P.ready) {
        if (ok && PyList_Append(list, b) < 0) ok = false;
        Py_DECREF(b);
    }
    P.ready.clear();
    if (!ok) {
        Py_XDECREF(list);
        return nullptr;
    }
    return list;
}

int init(PyXla* self, PyObject* args, PyObject*) {
    PyObject *paths, *names;
    if (!PyArg_ParseTuple(args, "O!O!", &PyList_Type, &paths, &PyList_Type, &names)) return -1;
    delete self->p;
    delete self->scan;
    delete self->lines;
    delete self->p1_error;
    self->p = new Parser();
    self->scan = new Scan();
    self->lines = new Lines();
    self->p1_error = new ParseError{0, {}};
    self->p1_path.clear();
    self->failed = false;
    self->p1_active = false;
    self->p1_failed = false;
    for (int k = 0; k < 2; ++k) {
        PyObject* l = k ? names : paths;
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(l); ++i) {
            Py_ssize_t n;
            const char* s = PyUnicode_AsUTF8AndSize(PyList_GET_ITEM(l, i), &n);
            if (!s) return -1;
            (k ? self->p->names : self->p->paths).emplace_back(s, (size_t)n);
        }
    }
    Py_INCREF(Py_None);
    Py_XSETREF(self->path, Py_None);
    return 0;
}

PyObject* new_xla(PyTypeObject* type, PyObject*, PyObject*) {
    PyXla* self = (PyXla*)type->tp_alloc(type, 0);
    if (self) new (&self->p1_path) std::string();
    return (PyObject*)self;
}

void dealloc(PyXla* self) {
    if (self->p)
        for (PyObject* x : self->p->ready) Py_DECREF(x);
    delete self->p;
    delete self->scan;
    delete self->lines;
    delete self->p1_error;
    self->p1_path.~basic_string();
    Py_XDECREF(self->path);
    Py_TYPE(self)->tp_free((PyObject*)self);
}

// begin(path, index, pass): a file starts (pass 1 with the scan; pass 2: the events)
PyObject* begin(PyXla* self, PyObject* args) {
    PyObject* path;
    Py_ssize_t index;
    int pass;
    if (!PyArg_ParseTuple(args, "Uni", &path, &index, &pass)) return nullptr;
    Py_INCREF(path);
    Py_XSETREF(self->path, path);
    *self->lines = Lines();
    Parser& P = *self->p;
    P.file = (size_t)index;
    if (pass == 1) {
        self->scan->begin_file();
        // Python's pass 1 reads files until one holds the section (or fails)
        self->p1_active = !P.have_live && !self->p1_failed;
        if (self->p1_active) P.lsec = Parser::LSearch;
    }
    Py_RETURN_NONE;
}

// pass 1 on one line, inside the scan; never stops the scan
bool pass1_line(PyXla* self, int64_t n, sv t) {
    if (!self->p1_active) return true;
    try {
        if (!self->p->live_line(n, t)) self->p1_active = false;
    } catch (const ParseError& e) {
        *self->p1_error = e;
        self->p1_failed = true;
        self->p1_active = false;
        self->p1_path = self->p->paths[self->p->file];
    }
    return true;
}

// feed1(chunk) -> bool: the scan and pass 1; False when the dump is not plain (stop)
PyObject* feed1(PyXla* self, PyObject* arg) {
    PyObject* r = with_chunk(arg, [&](sv chunk) {
        return guarded(self, [&] {
            self->scan->feed(chunk, [&](int64_t n, sv t) { return pass1_line(self, n, t); });
        });
    });
    if (!r) return nullptr;
    Py_DECREF(r);
    return PyBool_FromLong(self->scan->ok);
}

// end1() -> bool: the file's end in the scan and pass 1; False when not plain
PyObject* end1(PyXla* self, PyObject*) {
    PyObject* r = guarded(self, [&] {
        self->scan->end_file([&](int64_t n, sv t) { return pass1_line(self, n, t); });
        Parser& P = *self->p;
        if (self->p1_active && P.lsec != Parser::LSearch && P.lsec != Parser::LDone) {
            try {
                P.end_live();
            } catch (const ParseError& e) {
                *self->p1_error = e;
                self->p1_failed = true;
                self->p1_path = P.paths[P.file];
            }
        }
        self->p1_active = false;
    });
    if (!r) return nullptr;
    Py_DECREF(r);
    return PyBool_FromLong(self->scan->ok);
}

// verdict() -> None when this parser reads the dump, else why Python must; raises pass 1's
// error (an IngestError) when the dump is plain but its live-range section is bad
PyObject* verdict(PyXla* self, PyObject*) {
    if (!self->scan->ok) return py_str(self->scan->why);
    if (self->p1_failed) {
        PyObject* path = py_str(self->p1_path);
        if (!path) return nullptr;
        raise_parse_error(path, *self->p1_error);
        Py_DECREF(path);
        self->failed = true;
        return nullptr;
    }
    Py_RETURN_NONE;
}

PyObject* start2(PyXla* self, PyObject*) {
    self->p->start_pass2();
    Py_RETURN_NONE;
}

// feed2(chunk) -> (batches, more): pass 2
PyObject* feed2(PyXla* self, PyObject* arg) {
    PyObject* r = with_chunk(arg, [&](sv chunk) {
        return guarded(self, [&] {
            self->lines->feed(chunk, [&](int64_t n, sv t) { return self->p->line(n, t); });
        });
    });
    if (!r) return nullptr;
    return Py_BuildValue("(NO)", r, self->lines->stopped ? Py_False : Py_True);
}

PyObject* end2(PyXla* self, PyObject*) {
    return guarded(self, [&] {
        self->lines->finish([&](int64_t n, sv t) { return self->p->line(n, t); });
    });
}

// finish() -> (batches, note JSON text, or None: call again for more batches)
PyObject* finish(PyXla* self, PyObject*) {
    bool done = false;
    PyObject* r = guarded(self, [&] { done = self->p->finish(); });
    if (!r) return nullptr;
    if (!done) return Py_BuildValue("(NO)", r, Py_None);
    return Py_BuildValue("(NN)", r, py_str(self->p->note));
}

// stats() -> {"spill_bytes": the spill file's bytes in use (0: on the heap), "spill_drops"}
PyObject* stats(PyXla* self, PyObject*) {
    const Spill& sp = self->p->spill;
    return Py_BuildValue("{s:n,s:L}", "spill_bytes", (Py_ssize_t)(sp.base ? sp.used : 0),
                         "spill_drops", (long long)sp.drops);
}

PyMethodDef methods[] = {
    {"stats", (PyCFunction)stats, METH_NOARGS, "the spill's use: {spill_bytes, spill_drops}"},
    {"begin", (PyCFunction)begin, METH_VARARGS, "begin(path, index, pass): a file starts"},
    {"feed1", (PyCFunction)feed1, METH_O,
     "the scan and pass 1 (live ranges): False: not plain"},
    {"end1", (PyCFunction)end1, METH_NOARGS, "the scan and pass 1, end of file"},
    {"verdict", (PyCFunction)verdict, METH_NOARGS,
     "None, or why Python must read this dump; raises pass 1's error"},
    {"start2", (PyCFunction)start2, METH_NOARGS, "pass 2 begins"},
    {"feed2", (PyCFunction)feed2, METH_O, "pass 2: (batches, keep reading this file)"},
    {"end2", (PyCFunction)end2, METH_NOARGS, "pass 2, end of file: batches"},
    {"finish", (PyCFunction)finish, METH_NOARGS,
     "(batches, note JSON), or (batches, None): call again"},
    {nullptr, nullptr, 0, nullptr}};

PyTypeObject XlaType = {PyVarObject_HEAD_INIT(nullptr, 0)};

}  // namespace

int add_xla_buffer_assignment(PyObject* module) {
    return add_type(module, XlaType, "XlaBufferAssignment",
                    "XlaBufferAssignment(paths, names): an XLA dump's files to event columns",
                    sizeof(PyXla), (initproc)init, (destructor)dealloc, methods, new_xla);
}

}  // namespace tlv
