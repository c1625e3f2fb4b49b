// tlview.ingest._native: the compiled ingest core.
//
// Each input format that needs speed has a parser type here (its own .cpp), the twin of
// a Python parser that stays the specification (ingest/native.py explains the contract).
#include <Python.h>

#include "json_dom.hpp"

namespace tlv {
int add_chrome_trace(PyObject* module);
int add_cuda_snapshot(PyObject* module);
int add_xla_buffer_assignment(PyObject* module);
int add_inductor_ir(PyObject* module);
int add_flight_recorder_pickle(PyObject* module);
int add_flight_recorder_json(PyObject* module);
}  // namespace tlv

static PyModuleDef native_module = {
    PyModuleDef_HEAD_INIT,
    "tlview.ingest._native",
    "Compiled parsers of tlview's ingest (twins of the Python parsers).",
    -1,
    nullptr,
    nullptr,
    nullptr,
    nullptr,
    nullptr};

PyMODINIT_FUNC PyInit__native(void) {
    PyObject* m = PyModule_Create(&native_module);
    if (!m) return nullptr;
    if (tlv::add_chrome_trace(m) < 0 || tlv::add_cuda_snapshot(m) < 0 ||
        tlv::add_xla_buffer_assignment(m) < 0 || tlv::add_inductor_ir(m) < 0 ||
        tlv::add_flight_recorder_pickle(m) < 0 || tlv::add_flight_recorder_json(m) < 0) {
        Py_DECREF(m);
        return nullptr;
    }
    // Bumped whenever any parser's output changes, so a stale build is never used.
    if (PyModule_AddIntConstant(m, "ABI", 6) < 0 ||
        PyModule_AddIntConstant(m, "JSON_MAX_DEPTH", tlv::kJsonMaxDepth) < 0) {
        Py_DECREF(m);
        return nullptr;
    }
    return m;
}
