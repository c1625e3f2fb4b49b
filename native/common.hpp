// What every compiled parser shares: the input window, UTF-8 checking, errors, and the
// Python object plumbing for a parser type (feed(bytes) -> list, finish() -> list).
#pragma once

#include <Python.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "columns.hpp"

namespace tlv {

// Bad input: becomes tlview.ingest.errors.IngestError(path, line, message). line 0: none.
struct ParseError {
    int64_t line;
    std::string msg;
};

// Length of the longest prefix of s that is valid UTF-8 as Python's strict decoder reads
// it (no overlongs, no encoded surrogates, nothing above U+10FFFF); `cut` true when
// the prefix stops at a sequence cut by the end of s rather than at a bad byte.
// `surrogatepass`: encoded surrogates (ED A0..BF) allowed, as the "surrogatepass" handler
// reads them (pickle text).
inline size_t utf8_valid_prefix(std::string_view s, bool* cut, bool surrogatepass = false) {
    const auto* p = reinterpret_cast<const uint8_t*>(s.data());
    size_t n = s.size(), i = 0;
    *cut = false;
    while (i < n) {
        // 8 ASCII bytes at a time
        while (i + 8 <= n) {
            uint64_t w;
            std::memcpy(&w, p + i, 8);
            if (w & 0x8080808080808080ull) break;
            i += 8;
        }
        if (i >= n) break;
        uint8_t c = p[i];
        if (c < 0x80) {
            ++i;
            continue;
        }
        size_t need;
        uint8_t lo = 0x80, hi = 0xBF;
        if (c >= 0xC2 && c <= 0xDF)
            need = 1;
        else if (c == 0xE0) {
            need = 2;
            lo = 0xA0;
        } else if (c >= 0xE1 && c <= 0xEC)
            need = 2;
        else if (c == 0xED) {
            need = 2;
            if (!surrogatepass) hi = 0x9F;
        } else if (c >= 0xEE && c <= 0xEF)
            need = 2;
        else if (c == 0xF0) {
            need = 3;
            lo = 0x90;
        } else if (c >= 0xF1 && c <= 0xF3)
            need = 3;
        else if (c == 0xF4) {
            need = 3;
            hi = 0x8F;
        } else
            return i;
        for (size_t k = 1; k <= need; ++k) {
            if (i + k >= n) {
                *cut = true;
                return i;
            }
            uint8_t d = p[i + k];
            uint8_t l = k == 1 ? lo : 0x80, h = k == 1 ? hi : 0xBF;
            if (d < l || d > h) return i;
        }
        i += need + 1;
    }
    return i;
}

// A chunk of streamed text after the UTF-8 sequence the chunk before cut (`pending`,
// joined in `joined`): its longest valid prefix, the sequence this chunk cuts kept in
// `pending` for the next. Where a byte is not UTF-8, `*bad` is its offset in the whole
// text returned (pending unchanged but emptied); else npos.
inline std::string_view utf8_chunk(std::string& pending, std::string_view chunk,
                                   std::string& joined, size_t* bad) {
    std::string_view s = chunk;
    if (!pending.empty()) {
        joined = pending;
        joined.append(chunk);
        s = joined;
        pending.clear();
    }
    bool cut = false;
    size_t ok = utf8_valid_prefix(s, &cut);
    if (ok < s.size() && !cut) {
        *bad = ok;
        return s;
    }
    *bad = std::string_view::npos;
    pending.assign(s.data() + ok, s.size() - ok);
    return s.substr(0, ok);
}

inline int64_t count_lines(std::string_view s) {
    int64_t n = 0;
    const char* p = s.data();
    const char* e = p + s.size();
    while ((p = static_cast<const char*>(std::memchr(p, '\n', (size_t)(e - p)))) != nullptr) {
        ++n;
        ++p;
    }
    return n;
}

inline std::string hex_byte(uint8_t b) {
    static const char h[] = "0123456789abcdef";
    return std::string("0x") + h[b >> 4] + h[b & 15];
}

// The bytes of a streamed input not yet consumed, with the line number of their start.
// Text is appended as it arrives (checked as UTF-8); consumed text is dropped.
struct Window {
    std::string buf;
    size_t pos = 0;            // next unconsumed byte
    int64_t line_base = 1;     // line of buf[0]
    std::string pending;       // a UTF-8 sequence cut by the end of the last chunk
    bool eof = false;

    int64_t line_at(size_t p) const {
        return line_base + count_lines(std::string_view(buf).substr(0, p));
    }

    // Append a chunk; a byte that is not UTF-8 is a ParseError at its own line.
    void append(std::string_view chunk) {
        std::string joined;
        size_t bad;
        std::string_view s = utf8_chunk(pending, chunk, joined, &bad);
        if (bad != std::string_view::npos) {
            int64_t line = line_at(buf.size()) + count_lines(s.substr(0, bad));
            throw ParseError{
                line, "not UTF-8 text (byte " + hex_byte((uint8_t)s[bad]) + "): expected JSON"};
        }
        buf.append(s.data(), s.size());
    }

    void finish() {
        eof = true;
        if (!pending.empty())
            throw ParseError{line_at(buf.size()),
                             "not UTF-8 text (a cut multi-byte character): expected JSON"};
    }

    // Drop what was consumed, keeping line numbers right.
    void compact() {
        if (pos == 0) return;
        line_base += count_lines(std::string_view(buf).substr(0, pos));
        buf.erase(0, pos);
        pos = 0;
    }
};

// Python <-> C++ glue -------------------------------------------------------------------

// Set the Python error for a ParseError (IngestError from tlview.ingest.errors).
inline void raise_parse_error(PyObject* path, const ParseError& e) {
    PyObject* mod = PyImport_ImportModule("tlview.ingest.errors");
    if (!mod) return;
    PyObject* cls = PyObject_GetAttrString(mod, "IngestError");
    Py_DECREF(mod);
    if (!cls) return;
    PyObject* line = e.line > 0 ? PyLong_FromLongLong(e.line) : (Py_INCREF(Py_None), Py_None);
    PyObject* msg = PyUnicode_DecodeUTF8(e.msg.data(), (Py_ssize_t)e.msg.size(), "replace");
    PyObject* exc =
        (line && msg) ? PyObject_CallFunctionObjArgs(cls, path, line, msg, nullptr) : nullptr;
    Py_XDECREF(line);
    Py_XDECREF(msg);
    Py_DECREF(cls);
    if (exc) {
        PyErr_SetObject((PyObject*)Py_TYPE(exc), exc);
        Py_DECREF(exc);
    }
}

inline PyObject* py_str(std::string_view s) {
    return PyUnicode_DecodeUTF8(s.data(), (Py_ssize_t)s.size(), "surrogatepass");
}

// Runs a parser's ``body`` without the GIL. A ParseError becomes the ingest error naming
// ``path`` and its line, anything else a RuntimeError; either way ``failed`` is set (a
// parser never goes on after an error). False when a Python error is set.
template <class F>
bool run_released(PyObject* path, bool& failed, F&& body) {
    if (failed) {
        PyErr_SetString(PyExc_RuntimeError, "the parser failed earlier");
        return false;
    }
    ParseError err{0, {}};
    bool bad = false;
    std::string other;
    Py_BEGIN_ALLOW_THREADS try { body(); } catch (const ParseError& e) {
        err = e;
        bad = true;
    } catch (const std::bad_alloc&) {
        other = "out of memory";
    } catch (const std::exception& e) { other = e.what(); }
    Py_END_ALLOW_THREADS if (bad) {
        failed = true;
        raise_parse_error(path, err);
        return false;
    }
    if (!other.empty()) {
        failed = true;
        PyErr_SetString(PyExc_RuntimeError, other.c_str());
        return false;
    }
    return true;
}

// feed(chunk)'s buffer: run(chunk) over the bytes of a bytes-like object; its result.
template <class Run>
PyObject* with_chunk(PyObject* arg, Run&& run) {
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0) return nullptr;
    PyObject* r = run(std::string_view(static_cast<const char*>(view.buf), (size_t)view.len));
    PyBuffer_Release(&view);
    return r;
}

// finish()'s last output: `end` (a new reference, or null: failed) appended to the
// outputs `r`; r, or null with both released.
inline PyObject* append_end(PyObject* r, PyObject* end) {
    if (!end || PyList_Append(r, end) < 0) {
        Py_XDECREF(end);
        Py_DECREF(r);
        return nullptr;
    }
    Py_DECREF(end);
    return r;
}

// {text: count} from (text, count) pairs in their order (a collections.Counter's content).
inline PyObject* counts_dict(const std::vector<std::pair<std::string, int64_t>>& items) {
    PyObject* d = PyDict_New();
    if (!d) return nullptr;
    for (auto& kv : items) {
        PyObject* k = py_str(kv.first);
        PyObject* n = k ? PyLong_FromLongLong(kv.second) : nullptr;
        if (!n || PyDict_SetItem(d, k, n) < 0) {
            Py_XDECREF(k);
            Py_XDECREF(n);
            Py_DECREF(d);
            return nullptr;
        }
        Py_DECREF(k);
        Py_DECREF(n);
    }
    return d;
}

// A parser type's Python object: its parser, the path its errors name, and whether it
// failed (a failed parser refuses every later call).
template <class P>
struct PyParserOf {
    PyObject_HEAD
    P* p;
    PyObject* path;
    bool failed;
};

// init(path) of a parser made from nothing but its path's type: a fresh parser.
template <class Self>
int init_path(Self* self, PyObject* args, PyObject*) {
    PyObject* path;
    if (!PyArg_ParseTuple(args, "U", &path)) return -1;
    Py_INCREF(path);
    Py_XSETREF(self->path, path);
    delete self->p;
    self->p = new std::remove_pointer_t<decltype(self->p)>();
    self->failed = false;
    return 0;
}

template <class Self>
void dealloc_path(Self* self) {
    delete self->p;
    Py_XDECREF(self->path);
    Py_TYPE(self)->tp_free((PyObject*)self);
}

// Registers a parser type as module.<name>: the fields every parser type sets alike.
inline int add_type(PyObject* module, PyTypeObject& type, const char* name, const char* doc,
                    Py_ssize_t size, initproc init, destructor dealloc, PyMethodDef* methods,
                    newfunc make = PyType_GenericNew) {
    static const std::string prefix = "tlview.ingest._native.";
    // tp_name must outlive the type: one string per registered name, never freed
    type.tp_name = (new std::string(prefix + name))->c_str();
    type.tp_basicsize = size;
    type.tp_flags = Py_TPFLAGS_DEFAULT;
    type.tp_doc = doc;
    type.tp_new = make;
    type.tp_init = init;
    type.tp_dealloc = dealloc;
    type.tp_methods = methods;
    if (PyType_Ready(&type) < 0) return -1;
    Py_INCREF(&type);
    return PyModule_AddObject(module, name, (PyObject*)&type);
}

}  // namespace tlv
