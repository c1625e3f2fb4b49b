// Inductor output code (ingest/inductor_wrapper.py): finding and reading the lines that
// matter.
//
// WrapperParser (Python) stays the parser and the specification. Most lines of a wrapper
// module are kernel source (kept verbatim until the closing ''') and top-level Python
// that the parser ignores (imports, helpers, benchmark code); the compiled-assisted
// parser (inductor_wrapper.CompiledWrapperParser) keeps a module's lines (handed over a
// record's run at a time: log_take_run) and asks these scans where the next line that
// needs the Python parser is, so that every line it does get is one the line-by-line
// parser would have acted on; those lines are read by WrapperParser's code, with the
// first tests of a statement or comment (wrapper_statement, wrapper_comment) and pytext's
// text functions (split_args, dims, balance) done here for ASCII text. Each function
// answers exactly what the Python it replaces would (tests/test_native_wrapper.py).
#include <Python.h>

#include <cctype>
#include <cstring>
#include <string_view>
#include <vector>

#include "common.hpp"
#include "pytext.hpp"

namespace tlv {
namespace {

using namespace pytext;

// First index >= `from` of the list of str in `args` (texts, from) whose text passes
// `hit`; the list's length if none. `name` names the function in a type error.
template <class Hit>
PyObject* first_index(PyObject* args, const char* name, Hit hit) {
    PyObject* texts;
    Py_ssize_t from;
    if (!PyArg_ParseTuple(args, "O!n", &PyList_Type, &texts, &from)) return nullptr;
    Py_ssize_t n = PyList_GET_SIZE(texts);
    for (Py_ssize_t i = from < 0 ? 0 : from; i < n; ++i) {
        PyObject* t = PyList_GET_ITEM(texts, i);
        if (!PyUnicode_Check(t)) {
            PyErr_Format(PyExc_TypeError, "%s: expected a list of str", name);
            return nullptr;
        }
        if (hit(t)) return PyLong_FromSsize_t(i);
    }
    return PyLong_FromSsize_t(n);
}

// Does the text, left-stripped (str.lstrip), start with ''' ? The line that closes a
// kernel's source (WrapperParser._feed in state "source").
bool closes_source(PyObject* t) {
    Py_ssize_t len = PyUnicode_GET_LENGTH(t);
    int kind = PyUnicode_KIND(t);
    const void* data = PyUnicode_DATA(t);
    Py_ssize_t a = 0;
    while (a < len && Py_UNICODE_ISSPACE(PyUnicode_READ(kind, data, a))) ++a;
    return a + 3 <= len && PyUnicode_READ(kind, data, a) == '\'' &&
           PyUnicode_READ(kind, data, a + 1) == '\'' && PyUnicode_READ(kind, data, a + 2) == '\'';
}

PyObject* source_end(PyObject*, PyObject* args) {
    return first_index(args, "wrapper_source_end", closes_source);
}

bool contains(std::string_view s, const char* what) {
    return s.find(what) != std::string_view::npos;
}

// Is this top-level line one WrapperParser._top ignores? Blank once stripped, or not a
// comment and holding none of the texts its patterns need (``async_compile.`` for a
// kernel, ``def `` for call(args) and a function of the program (a graph partition),
// ``rand_strided(`` for an input's metadata). Lines of wider characters are never
// skipped (the parser reads them).
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
    return !contains(s, "async_compile.") && !contains(s, "def ") &&
           !contains(s, "rand_strided(");
}

// First index >= `from` of a line WrapperParser._top may act on (see top_ignored).
PyObject* top_next(PyObject*, PyObject* args) {
    return first_index(args, "wrapper_top_next", [](PyObject* t) { return !top_ignored(t); });
}


int append_str(PyObject* list, std::string_view s) {
    PyObject* o = PyUnicode_FromStringAndSize(s.data(), (Py_ssize_t)s.size());
    if (!o) return -1;
    int r = PyList_Append(list, o);
    Py_DECREF(o);
    return r;
}

// pytext.split_args on an ASCII text, pieces appended to `out` as str (with `skip_empty`,
// only the non-empty ones: pytext.dims).
int split_args_ascii(std::string_view t, PyObject* out, bool skip_empty) {
    std::vector<std::string_view> pieces;
    pytext::split_args(t, &pieces, skip_empty);
    for (std::string_view piece : pieces)
        if (append_str(out, piece) < 0) return -1;
    return 0;
}

// split_args(python, text) / dims(python, text): pytext's, compiled for ASCII text;
// `python(text)` (pytext's own) for any other text.
PyObject* split_or_dims(PyObject* args, bool is_dims) {
    PyObject *python, *text;
    if (!PyArg_ParseTuple(args, "OU", &python, &text)) return nullptr;
    if (!PyUnicode_IS_ASCII(text)) return PyObject_CallOneArg(python, text);
    std::string_view t(reinterpret_cast<const char*>(PyUnicode_1BYTE_DATA(text)),
                       (size_t)PyUnicode_GET_LENGTH(text));
    if (is_dims) {  // t.strip(); one enclosing ( or [ ... ) or ] taken off
        t = strip(t);
        if (!t.empty() && (t[0] == '(' || t[0] == '[') &&
            (t.back() == ')' || t.back() == ']'))
            t = t.size() >= 2 ? t.substr(1, t.size() - 2) : std::string_view();
    }
    PyObject* out = PyList_New(0);
    if (!out) return nullptr;
    if (split_args_ascii(t, out, is_dims) < 0) {
        Py_DECREF(out);
        return nullptr;
    }
    return out;
}

PyObject* split_args(PyObject*, PyObject* args) { return split_or_dims(args, false); }
PyObject* dims(PyObject*, PyObject* args) { return split_or_dims(args, true); }

// log_take_run(batch, i, meta, texts, numbers) -> j: torch_log.parse_log_lines handing
// an open section's parser (one that only keeps its lines) the run of LogLines from i
// that are of the same record as the line it just took (the same `meta` object: undress
// makes one per record), none foreign nor starting a record: their texts and numbers
// appended; j is the index of the first line not taken.
PyObject* take_run(PyObject*, PyObject* args) {
    PyObject *batch, *meta, *texts, *numbers;
    Py_ssize_t i;
    if (!PyArg_ParseTuple(args, "O!nOO!O!", &PyList_Type, &batch, &i, &meta, &PyList_Type,
                          &texts, &PyList_Type, &numbers))
        return nullptr;
    Py_ssize_t n = PyList_GET_SIZE(batch);
    for (; i < n; ++i) {
        PyObject* line = PyList_GET_ITEM(batch, i);
        if (!PyTuple_Check(line) || PyTuple_GET_SIZE(line) < 6) {
            PyErr_SetString(PyExc_TypeError, "log_take_run: expected LogLines");
            return nullptr;
        }
        if (PyTuple_GET_ITEM(line, 3) != meta || PyTuple_GET_ITEM(line, 4) != Py_False ||
            PyTuple_GET_ITEM(line, 5) != Py_False)
            break;
        if (PyList_Append(texts, PyTuple_GET_ITEM(line, 1)) < 0 ||
            PyList_Append(numbers, PyTuple_GET_ITEM(line, 0)) < 0)
            return nullptr;
    }
    return PyLong_FromSsize_t(i);
}


PyObject* sv(std::string_view s) {
    return PyUnicode_FromStringAndSize(s.data(), (Py_ssize_t)s.size());
}

// wrapper_statement(s): what WrapperParser._statement's first tests make of one ASCII
// statement of call(args)'s body, for the shapes nearly every statement has:
//   0                                   nothing to do (empty, `pass...`, `if __name__...`)
//   ("d", [names])                      del statements only
//   ("a", lhs, rhs, [dels], comment)    an assignment (_assign's arguments)
//   ("c", callee, args)                 a call statement
// None for any other statement (a comment, return, with, the unpacking of args,
// get_raw_stream, what no pattern takes) and any non-ASCII one: _statement reads those.
PyObject* statement(PyObject*, PyObject* arg) {
    if (!PyUnicode_Check(arg)) {
        PyErr_SetString(PyExc_TypeError, "wrapper_statement: expected a str");
        return nullptr;
    }
    if (!PyUnicode_IS_ASCII(arg)) Py_RETURN_NONE;
    std::string_view s(reinterpret_cast<const char*>(PyUnicode_1BYTE_DATA(arg)),
                       (size_t)PyUnicode_GET_LENGTH(arg));
    if (starts(s, "#") || s.find('\n') != std::string_view::npos) Py_RETURN_NONE;
    std::string_view code, comment;
    split_comment(s, &code, &comment);
    std::vector<std::string_view> stmts;
    statements(code, &stmts);
    if (stmts.empty()) return PyLong_FromLong(0);
    std::string_view first = stmts[0];
    if (starts(first, "return")) Py_RETURN_NONE;
    if (starts(first, "del ")) {
        PyObject* names = PyList_New(0);
        if (!names) return nullptr;
        for (std::string_view st : stmts) {
            if (!starts(st, "del ")) {  // a del beside something else
                Py_DECREF(names);
                Py_RETURN_NONE;
            }
            if (split_args_ascii(st.substr(4), names, false) < 0) {
                Py_DECREF(names);
                return nullptr;
            }
        }
        PyObject* out = Py_BuildValue("(sN)", "d", names);
        return out;
    }
    if (starts(first, "with ")) Py_RETURN_NONE;  // a device guard, or ignored
    if (starts(first, "pass") || starts(first, "if __name__")) return PyLong_FromLong(0);
    // the unpacking of args (_UNPACK ends with its source), get_raw_stream (_RAW_STREAM)
    if ((first.size() >= 4 && first.substr(first.size() - 4) == "args") ||
        first.find("get_raw_stream(") != std::string_view::npos)
        Py_RETURN_NONE;
    // _ASSIGN: name \s* = \s* rhs
    size_t i = 0;
    if (!first.empty() && (std::isalpha((unsigned char)first[0]) || first[0] == '_')) {
        while (i < first.size() && is_word(first[i])) ++i;
        size_t lhs_end = i;
        while (i < first.size() && is_space(first[i])) ++i;
        if (i < first.size() && first[i] == '=' && !starts(first, "assert_size_stride(") &&
            !starts(first, "assert_alignment(") &&
            first.substr(0, first.find('(')).find("==") == std::string_view::npos) {
            PyObject* dels = PyList_New(0);
            if (!dels) return nullptr;
            for (size_t k = 1; k < stmts.size(); ++k) {
                if (starts(stmts[k], "del ") && append_str(dels, strip(stmts[k].substr(4))) < 0) {
                    Py_DECREF(dels);
                    return nullptr;
                }
            }
            return Py_BuildValue("(sNNNN)", "a", sv(first.substr(0, lhs_end)),
                                 sv(strip(first.substr(i + 1))), dels, sv(comment));
        }
    }
    // _CALL: callee ( args ) at the end
    i = 0;
    if (!first.empty() && (std::isalpha((unsigned char)first[0]) || first[0] == '_')) {
        while (i < first.size() && (is_word(first[i]) || first[i] == '.')) ++i;
        if (i < first.size() && first[i] == '(' && first.size() >= i + 2 &&
            first.back() == ')')
            return Py_BuildValue("(sNN)", "c", sv(first.substr(0, i)),
                                 sv(first.substr(i + 1, first.size() - i - 2)));
    }
    Py_RETURN_NONE;
}

// pytext.balance(python, text): compiled for ASCII text, `python(text)` otherwise.
PyObject* balance(PyObject*, PyObject* args) {
    PyObject *python, *text;
    if (!PyArg_ParseTuple(args, "OU", &python, &text)) return nullptr;
    if (!PyUnicode_IS_ASCII(text)) return PyObject_CallOneArg(python, text);
    std::string_view t(reinterpret_cast<const char*>(PyUnicode_1BYTE_DATA(text)),
                       (size_t)PyUnicode_GET_LENGTH(text));
    return PyLong_FromLong(pytext::balance(t));
}

// Matches `lit` at s[*i], moving *i past it.
bool eat(std::string_view s, size_t* i, std::string_view lit) {
    if (s.substr(*i, lit.size()) != lit) return false;
    *i += lit.size();
    return true;
}

void skip_space(std::string_view s, size_t* i) {
    while (*i < s.size() && is_space(s[*i])) ++*i;
}

// [x.strip() for x in text.split(",") if x.strip()]
PyObject* stripped_items(std::string_view text) {
    PyObject* out = PyList_New(0);
    if (!out) return nullptr;
    size_t start = 0;
    while (true) {
        size_t c = text.find(',', start);
        std::string_view piece = strip(text.substr(start, c == std::string_view::npos
                                                              ? std::string_view::npos
                                                              : c - start));
        if (!piece.empty() && append_str(out, piece) < 0) {
            Py_DECREF(out);
            return nullptr;
        }
        if (c == std::string_view::npos) return out;
        start = c + 1;
    }
}

// wrapper_comment(s): WrapperParser._comment's patterns on an ASCII comment line:
//   ("t", [source nodes], [original aten])   _TOPO
//   ("p", handles)                           _PROVENANCE
//   ("k", path)                              _KERNEL_PATH
// None for any other comment or a non-ASCII one (_comment reads those).
PyObject* comment(PyObject*, PyObject* arg) {
    if (!PyUnicode_Check(arg)) {
        PyErr_SetString(PyExc_TypeError, "wrapper_comment: expected a str");
        return nullptr;
    }
    if (!PyUnicode_IS_ASCII(arg)) Py_RETURN_NONE;
    std::string_view s(reinterpret_cast<const char*>(PyUnicode_1BYTE_DATA(arg)),
                       (size_t)PyUnicode_GET_LENGTH(arg));
    if (s.find('\n') != std::string_view::npos) Py_RETURN_NONE;  // `.` stops there
    size_t i = 0;
    if (!eat(s, &i, "#")) Py_RETURN_NONE;
    skip_space(s, &i);
    size_t at = i;
    if (eat(s, &i, "Topologically Sorted Source Nodes:")) {
        skip_space(s, &i);
        if (!eat(s, &i, "[")) Py_RETURN_NONE;
        size_t close = s.find(']', i);
        if (close == std::string_view::npos) Py_RETURN_NONE;
        std::string_view nodes = s.substr(i, close - i);
        i = close + 1;
        if (!eat(s, &i, ",")) Py_RETURN_NONE;
        skip_space(s, &i);
        if (!eat(s, &i, "Original ATen:")) Py_RETURN_NONE;
        skip_space(s, &i);
        if (!eat(s, &i, "[")) Py_RETURN_NONE;
        close = s.find(']', i);
        if (close == std::string_view::npos) Py_RETURN_NONE;
        std::string_view aten = s.substr(i, close - i);
        return Py_BuildValue("(sNN)", "t", stripped_items(nodes), stripped_items(aten));
    }
    i = at;
    if (eat(s, &i, "[Provenance debug handles]")) {
        skip_space(s, &i);
        return Py_BuildValue("(sN)", "p", sv(strip(s.substr(i))));
    }
    i = at;
    if (eat(s, &i, "kernel path:")) {
        skip_space(s, &i);
        return Py_BuildValue("(sN)", "k", sv(strip(s.substr(i))));
    }
    Py_RETURN_NONE;
}

PyMethodDef functions[] = {
    {"pytext_balance", (PyCFunction)balance, METH_VARARGS,
     "pytext_balance(balance, text): pytext.balance, compiled for ASCII text"},
    {"wrapper_comment", (PyCFunction)comment, METH_O,
     "wrapper_comment(s): a comment's shape as WrapperParser._comment reads it"},
    {"wrapper_statement", (PyCFunction)statement, METH_O,
     "wrapper_statement(s): a body statement's shape as WrapperParser._statement reads it"},
    {"log_take_run", (PyCFunction)take_run, METH_VARARGS,
     "log_take_run(batch, i, meta, texts, numbers): an open section's run of lines"},
    {"pytext_split_args", (PyCFunction)split_args, METH_VARARGS,
     "pytext_split_args(split_args, text): pytext.split_args, compiled for ASCII text"},
    {"pytext_dims", (PyCFunction)dims, METH_VARARGS,
     "pytext_dims(dims, text): pytext.dims, compiled for ASCII text"},
    {"wrapper_source_end", (PyCFunction)source_end, METH_VARARGS,
     "wrapper_source_end(texts, start): index of the next line closing a kernel's source"},
    {"wrapper_top_next", (PyCFunction)top_next, METH_VARARGS,
     "wrapper_top_next(texts, start): index of the next top-level line the parser reads"},
    {nullptr, nullptr, 0, nullptr}};

}  // namespace

int add_torch_wrapper(PyObject* module) { return PyModule_AddFunctions(module, functions); }

}  // namespace tlv
