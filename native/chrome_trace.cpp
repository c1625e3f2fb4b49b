// Chrome-trace JSON (PyTorch profiler / Kineto, jax.profiler) to kernel_measured rows.
//
// The compiled twin of ingest/chrome_trace.py + ingest/kineto.py (`_Trace.consume`),
// which stay the specification: tests/native/test_chrome_trace.py runs both on every fixture
// and on mutated traces and requires the same rows, or the same error line. Top-level entries
// other than traceEvents are handed back as their JSON text (Python builds the timeline
// from them, as before); events are kept in columns, never as Python objects.
#include "chrome_trace.hpp"

namespace tlv {
namespace {

using namespace kineto;

// ---- the Python type ---------------------------------------------------------------------

using PyParser = PyParserOf<Parser>;

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
            if (!item) {
                Py_XDECREF(k);
                Py_XDECREF(r);
            }
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
    return with_chunk(arg, [&](std::string_view chunk) {
        return guarded(self, [&] {
            self->p->w.append(chunk);
            self->p->run();
        });
    });
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
    if (!devices) {
        Py_DECREF(r);
        return nullptr;
    }
    for (size_t i = 0; i < P.devices.size(); ++i)
        PyList_SET_ITEM(devices, (Py_ssize_t)i, py_str(P.devices[i]));
    return append_end(
        r, Py_BuildValue("(sNNN)", "end", P.kept.to_py(), P.skipped.to_py(), devices));
}

PyObject* line(PyParser* self, PyObject*) {
    return PyLong_FromLongLong(self->p->line_of(self->p->w.pos));
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
                    sizeof(PyParser), (initproc)init_path<PyParser>,
                    (destructor)dealloc_path<PyParser>, methods);
}

}  // namespace tlv
