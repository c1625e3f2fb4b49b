// Inductor output code (ingest/inductor_wrapper.py): finding the lines that matter.
//
// WrapperParser (Python) stays the whole parser and the specification. Most lines of a
// wrapper module are kernel source (kept verbatim until the closing ''') and top-level
// Python that the parser ignores (imports, helpers, benchmark code); the compiled
// WrapperParser (inductor_wrapper.CompiledWrapperParser) keeps a module's lines and asks
// these scans where the next line that needs the Python parser is, so that every line it
// does get is one the line-by-line parser would have acted on. Each scan answers exactly
// what the Python test it replaces would (tests/test_native_wrapper.py).
#include <Python.h>

#include <cstring>
#include <string_view>

#include "common.hpp"

namespace tlv {
namespace {

// First index >= `from` whose text, left-stripped (str.lstrip), starts with ''' : the
// line that closes a kernel's source (WrapperParser._feed in state "source").
PyObject* source_end(PyObject*, PyObject* args) {
    PyObject* texts;
    Py_ssize_t from;
    if (!PyArg_ParseTuple(args, "O!n", &PyList_Type, &texts, &from)) return nullptr;
    Py_ssize_t n = PyList_GET_SIZE(texts);
    for (Py_ssize_t i = from < 0 ? 0 : from; i < n; ++i) {
        PyObject* t = PyList_GET_ITEM(texts, i);
        if (!PyUnicode_Check(t)) {
            PyErr_SetString(PyExc_TypeError, "wrapper_source_end: expected a list of str");
            return nullptr;
        }
        Py_ssize_t len = PyUnicode_GET_LENGTH(t);
        int kind = PyUnicode_KIND(t);
        const void* data = PyUnicode_DATA(t);
        Py_ssize_t a = 0;
        while (a < len && Py_UNICODE_ISSPACE(PyUnicode_READ(kind, data, a))) ++a;
        if (a + 3 <= len && PyUnicode_READ(kind, data, a) == '\'' &&
            PyUnicode_READ(kind, data, a + 1) == '\'' && PyUnicode_READ(kind, data, a + 2) == '\'')
            return PyLong_FromSsize_t(i);
    }
    return PyLong_FromSsize_t(n);
}

bool contains(std::string_view s, const char* what) {
    return s.find(what) != std::string_view::npos;
}

// Is this top-level line one WrapperParser._top ignores? Blank once stripped, or not a
// comment and holding none of the texts its patterns need (``async_compile.`` for a
// kernel, ``def call(`` for call(args), ``rand_strided(`` for an input's metadata). Lines
// of wider characters are never skipped (the parser reads them).
bool top_ignored(PyObject* t) {
    Py_ssize_t len = PyUnicode_GET_LENGTH(t);
    int kind = PyUnicode_KIND(t);
    const void* data = PyUnicode_DATA(t);
    Py_ssize_t a = 0;
    while (a < len && Py_UNICODE_ISSPACE(PyUnicode_READ(kind, data, a))) ++a;
    if (a == len) return true;  // blank
    if (kind != PyUnicode_1BYTE_KIND) return false;
    std::string_view s(static_cast<const char*>(data), (size_t)len);
    if (s[(size_t)a] == '#') return false;
    return !contains(s, "async_compile.") && !contains(s, "def call(") &&
           !contains(s, "rand_strided(");
}

// First index >= `from` of a line WrapperParser._top may act on (see top_ignored).
PyObject* top_next(PyObject*, PyObject* args) {
    PyObject* texts;
    Py_ssize_t from;
    if (!PyArg_ParseTuple(args, "O!n", &PyList_Type, &texts, &from)) return nullptr;
    Py_ssize_t n = PyList_GET_SIZE(texts);
    for (Py_ssize_t i = from < 0 ? 0 : from; i < n; ++i) {
        PyObject* t = PyList_GET_ITEM(texts, i);
        if (!PyUnicode_Check(t)) {
            PyErr_SetString(PyExc_TypeError, "wrapper_top_next: expected a list of str");
            return nullptr;
        }
        if (!top_ignored(t)) return PyLong_FromSsize_t(i);
    }
    return PyLong_FromSsize_t(n);
}

PyMethodDef functions[] = {
    {"wrapper_source_end", (PyCFunction)source_end, METH_VARARGS,
     "wrapper_source_end(texts, start): index of the next line closing a kernel's source"},
    {"wrapper_top_next", (PyCFunction)top_next, METH_VARARGS,
     "wrapper_top_next(texts, start): index of the next top-level line the parser reads"},
    {nullptr, nullptr, 0, nullptr}};

}  // namespace

int add_torch_wrapper(PyObject* module) { return PyModule_AddFunctions(module, functions); }

}  // namespace tlv
