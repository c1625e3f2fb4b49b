// Inductor scheduler IR dumps to event columns: the compiled twin of
// ingest/inductor_ir.py (with ingest/last_use.py), which stays the specification.
//
// The whole hot loop is here: line splitting and UTF-8 checks (as ingest/lines.py does
// them, 1 MiB chunk by chunk), line classification, node completion, layouts and the
// storage rule, and last-use tracking; events go straight into Arrow-layout columns
// (columns.hpp), a batch of BATCH_ROWS at a time, never as a Python object per value.
// Each branch below names the Python it mirrors; where Python's behaviour is subtle
// (str.strip, re's Unicode \s \w \d, dict order when a key repeats) the code keeps it.
// Rare cases that need Python itself (str.lower of non-ASCII, integers beyond 64 bits)
// call into it with the GIL.
#include "inductor_ir.hpp"

namespace tlv {
namespace {

using namespace ir;

// ---- the Python type --------------------------------------------------------------------

using PyParser = PyParserOf<Parser>;

PyObject* outputs(PyParser* self) {
    Parser& P = *self->p;
    PyObject* list = PyList_New(0);
    if (!list) return nullptr;
    for (auto& b : P.done) {
        PyObject* e = b->export_py();
        PyObject* item = e ? Py_BuildValue("(sN)", "batch", e) : nullptr;
        b->clear();
        P.spare = std::move(b);
        if (!item || PyList_Append(list, item) < 0) {
            Py_XDECREF(item);
            Py_DECREF(list);
            P.done.clear();
            return nullptr;
        }
        Py_DECREF(item);
    }
    P.done.clear();
    return list;
}

template <class F>
PyObject* guarded(PyParser* self, F&& body) {
    if (self->failed) {
        PyErr_SetString(PyExc_RuntimeError, "the parser failed earlier");
        return nullptr;
    }
    ParseError err{0, {}};
    bool bad = false, pyerr = false;
    std::string other;
    Parser& P = *self->p;
    P.ts = PyEval_SaveThread();
    try {
        body();
    } catch (const ParseError& e) {
        err = e;
        bad = true;
    } catch (const PyErrSet&) { pyerr = true; } catch (const std::bad_alloc&) {
        other = "out of memory";
    } catch (const std::exception& e) { other = e.what(); }
    PyEval_RestoreThread(P.ts);
    P.ts = nullptr;
    if (bad || pyerr || !other.empty()) {
        self->failed = true;
        if (bad)
            raise_parse_error(self->path, err);
        else if (!other.empty())
            PyErr_SetString(PyExc_RuntimeError, other.c_str());
        return nullptr;
    }
    return outputs(self);
}

PyObject* feed(PyParser* self, PyObject* arg) {
    return with_chunk(arg,
                      [&](sv data) { return guarded(self, [&] { self->p->chunk(data); }); });
}

PyObject* finish(PyParser* self, PyObject*) {
    PyObject* r = guarded(self, [&] { self->p->end_of_input(); });
    if (!r) return nullptr;
    Parser& P = *self->p;
    PyObject* sym = PyList_New((Py_ssize_t)P.symbolic.size());
    if (!sym) {
        Py_DECREF(r);
        return nullptr;
    }
    for (size_t i = 0; i < P.symbolic.size(); ++i)
        PyList_SET_ITEM(sym, (Py_ssize_t)i, py_str(P.symbolic[i]));
    PyObject* dev = P.device ? py_str(*P.device) : (Py_INCREF(Py_None), Py_None);
    return append_end(r, Py_BuildValue("(sLNN)", "end", (long long)P.step, dev, sym));
}

PyObject* line(PyParser* self, PyObject*) {
    // where reading stands: the line the unread text starts on (lines.py's gzip errors)
    return PyLong_FromLongLong(self->p->next_line);
}

PyMethodDef methods[] = {
    {"feed", (PyCFunction)feed, METH_O,
     "feed(chunk: bytes) -> list: parse the lines the chunk completes"},
    {"line", (PyCFunction)line, METH_NOARGS, "line() -> int: the line where reading stands"},
    {"finish", (PyCFunction)finish, METH_NOARGS,
     "finish() -> list: the end of the input; the last batches, then ('end', n_steps, "
     "device, symbolic_buffers)"},
    {nullptr, nullptr, 0, nullptr}};

PyTypeObject ParserType = {PyVarObject_HEAD_INIT(nullptr, 0)};

}  // namespace

int add_inductor_ir(PyObject* module) {
    return add_type(module, ParserType, "InductorIrParser",
                    "InductorIrParser(path): scheduler-IR dump bytes to event columns",
                    sizeof(PyParser), (initproc)init_path<PyParser>,
                    (destructor)dealloc_path<PyParser>, methods);
}

}  // namespace tlv
