// PyTorch logs (TORCH_LOGS): taking the glog / short dress off each line.
//
// The compiled twin of ingest/torch_log.py's `undress`, which stays the specification:
// tests/native/test_torch_log.py runs both on every torch-log fixture and on mutated and
// truncated logs and requires the same LogLine sequence (and so the same rows and errors).
// Lines arrive already decoded (ingest/lines.py reads, checks and splits the file, so its
// errors are the Python path's own); this matches the prefixes with byte scans instead of
// regular expressions and makes one LogLine per line. A line holding any non-ASCII
// character is matched by the Python regexes instead (`slow`, torch_log._undress_slow):
// their \d, \s and \w are Unicode classes, and such lines are rare.
#include <Python.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "common.hpp"

namespace tlv {
namespace {

inline bool is_digit(char c) { return c >= '0' && c <= '9'; }
inline bool is_space(char c) {  // Python's str \s / isspace() on ASCII
    return c == ' ' || (c >= '\t' && c <= '\r') || (c >= '\x1c' && c <= '\x1f');
}
inline bool is_word(char c) {
    return is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

// One optional piece of a glog prefix (a regex group that may not take part).
struct Opt {
    bool has = false;
    std::string_view v;
};

struct Glog {
    Opt rank;
    char level = 0;
    std::string_view date, time, pid, src, lineno;
    Opt cid, artifact;
    size_t end = 0;
};

// torch_log._GLOG.match on an ASCII line.
bool match_glog(std::string_view s, Glog* g) {
    size_t n = s.size(), i = 0;
    if (i < n && s[i] == '[') {  // (?:\[rank(\d+)\]:)?
        if (s.substr(0, 5) != "[rank") return false;
        size_t j = 5;
        while (j < n && is_digit(s[j])) ++j;
        if (j == 5 || j + 1 >= n || s[j] != ']' || s[j + 1] != ':') return false;
        g->rank = {true, s.substr(5, j - 5)};
        i = j + 2;
    }
    if (i >= n || std::strchr("VIWEC", s[i]) == nullptr) return false;
    g->level = s[i++];
    if (i + 4 > n) return false;
    for (size_t k = 0; k < 4; ++k)
        if (!is_digit(s[i + k])) return false;
    g->date = s.substr(i, 4);
    i += 4;
    if (i >= n || s[i] != ' ') return false;
    ++i;
    // \d\d:\d\d:\d\d\.\d+
    size_t t0 = i;
    static const char* pat = "dd:dd:dd.";
    for (const char* p = pat; *p; ++p, ++i) {
        if (i >= n) return false;
        if (*p == 'd' ? !is_digit(s[i]) : s[i] != *p) return false;
    }
    size_t f0 = i;
    while (i < n && is_digit(s[i])) ++i;
    if (i == f0) return false;
    g->time = s.substr(t0, i - t0);
    size_t sp = i;  // " +"
    while (i < n && s[i] == ' ') ++i;
    if (i == sp) return false;
    size_t p0 = i;  // (\d+)
    while (i < n && is_digit(s[i])) ++i;
    if (i == p0) return false;
    g->pid = s.substr(p0, i - p0);
    if (i >= n || s[i] != ' ') return false;
    ++i;
    // ([^\s\]]+):(\d+)\] : the run of non-space non-']' chars, split at its last ':'
    size_t r0 = i;
    while (i < n && !is_space(s[i]) && s[i] != ']') ++i;
    if (i >= n || s[i] != ']') return false;
    std::string_view run = s.substr(r0, i - r0);
    size_t colon = run.rfind(':');
    if (colon == std::string_view::npos || colon == 0 || colon + 1 == run.size()) return false;
    for (size_t k = colon + 1; k < run.size(); ++k)
        if (!is_digit(run[k])) return false;
    g->src = run.substr(0, colon);
    g->lineno = run.substr(colon + 1);
    ++i;  // ']'
    // (?: \[([^\]\s]*)\])?
    if (i + 1 < n && s[i] == ' ' && s[i + 1] == '[') {
        size_t c0 = i + 2, j = c0;
        while (j < n && s[j] != ']' && !is_space(s[j])) ++j;
        if (j < n && s[j] == ']') {
            g->cid = {true, s.substr(c0, j - c0)};
            i = j + 1;
        }
    }
    // (?: \[__(\w+)\])?
    if (i + 3 < n && s.substr(i, 4) == " [__") {
        size_t a0 = i + 4, j = a0;
        while (j < n && is_word(s[j])) ++j;
        if (j > a0 && j < n && s[j] == ']') {
            g->artifact = {true, s.substr(a0, j - a0)};
            i = j + 1;
        }
    }
    g->end = i;
    return true;
}

struct Short {
    std::string_view level, logger;
    size_t end = 0;
};

// torch_log._SHORT.match on an ASCII line.
bool match_short(std::string_view s, Short* m) {
    static const char* levels[] = {"DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"};
    for (const char* lv : levels) {
        size_t L = std::strlen(lv);
        if (s.size() > L && s.substr(0, L) == lv && s[L] == ':') {
            size_t i = L + 1, j = i;
            while (j < s.size() && (is_word(s[j]) || s[j] == '.')) ++j;
            if (j == i || j >= s.size() || s[j] != ':') return false;
            m->level = s.substr(0, L);
            m->logger = s.substr(i, j - i);
            m->end = j + 1;
            return true;
        }
    }
    return false;
}

// torch_log._PY_WARNING.match on an ASCII line: \S.*:\d+: \w*(?:Warning|Error):
bool match_warning(std::string_view s) {
    size_t n = s.size();
    if (n == 0 || is_space(s[0])) return false;
    for (size_t c = s.find(':', 1); c != std::string_view::npos; c = s.find(':', c + 1)) {
        size_t i = c + 1, d0 = i;
        while (i < n && is_digit(s[i])) ++i;
        if (i == d0 || i + 1 >= n || s[i] != ':' || s[i + 1] != ' ') continue;
        i += 2;
        size_t w0 = i;
        while (i < n && is_word(s[i])) ++i;
        std::string_view w = s.substr(w0, i - w0);
        if (i + 1 >= n || s[i] != ':' || s[i + 1] != ' ') continue;
        if ((w.size() >= 7 && w.substr(w.size() - 7) == "Warning") ||
            (w.size() >= 5 && w.substr(w.size() - 5) == "Error"))
            return true;
    }
    return false;
}

bool blank(std::string_view s) {
    for (char c : s)
        if (!is_space(c)) return false;
    return true;
}

const char* glog_level(char c) {
    switch (c) {
        case 'V': return "DEBUG";
        case 'I': return "INFO";
        case 'W': return "WARNING";
        case 'E': return "ERROR";
        default: return "CRITICAL";
    }
}

PyObject* py_sv(std::string_view s) {
    return PyUnicode_DecodeUTF8(s.data(), (Py_ssize_t)s.size(), "strict");
}

PyObject* py_int(std::string_view digits) {
    if (digits.size() <= 18) {
        long long v = 0;
        for (char c : digits) v = v * 10 + (c - '0');
        return PyLong_FromLongLong(v);
    }
    std::string z(digits);
    return PyLong_FromString(z.c_str(), nullptr, 10);
}

int set_item(PyObject* d, const char* k, PyObject* v) {  // steals v
    if (!v) return -1;
    int r = PyDict_SetItemString(d, k, v);
    Py_DECREF(v);
    return r;
}

PyObject* glog_meta(const Glog& g) {
    PyObject* d = PyDict_New();
    if (!d) return nullptr;
    std::string time(g.date);
    time += ' ';
    time.append(g.time);
    std::string source(g.src);
    source += ':';
    source.append(g.lineno);
    if (set_item(d, "dress", PyUnicode_FromString("glog")) < 0 ||
        set_item(d, "level", PyUnicode_FromString(glog_level(g.level))) < 0 ||
        set_item(d, "time", py_sv(time)) < 0 || set_item(d, "pid", py_int(g.pid)) < 0 ||
        set_item(d, "source", py_sv(source)) < 0 ||
        (g.rank.has && set_item(d, "rank", py_int(g.rank.v)) < 0) ||
        (g.cid.has && set_item(d, "compile_id", py_sv(g.cid.v)) < 0) ||
        (g.artifact.has && set_item(d, "log", py_sv(g.artifact.v)) < 0)) {
        Py_DECREF(d);
        return nullptr;
    }
    return d;
}

PyObject* short_meta(std::string_view level, std::string_view logger) {
    PyObject* d = PyDict_New();
    if (!d) return nullptr;
    if (set_item(d, "dress", PyUnicode_FromString("short")) < 0 ||
        set_item(d, "level", py_sv(level)) < 0 || set_item(d, "logger", py_sv(logger)) < 0) {
        Py_DECREF(d);
        return nullptr;
    }
    size_t dot = logger.rfind('.');
    std::string_view last = dot == std::string_view::npos ? logger : logger.substr(dot + 1);
    if (last.size() >= 2 && last.substr(0, 2) == "__" &&
        set_item(d, "log", py_sv(last.substr(2))) < 0) {
        Py_DECREF(d);
        return nullptr;
    }
    return d;
}

// The record identity of a glog prefix (torch_log.undress's `new_key`): every piece but
// the date, each with its presence, length-prefixed so that no two keys collide.
void put_key(std::string* k, bool has, std::string_view v) {
    k->push_back(has ? '\1' : '\0');
    uint32_t n = (uint32_t)v.size();
    k->append(reinterpret_cast<const char*>(&n), 4);
    k->append(v.data(), v.size());
}

void glog_key(const Glog& g, std::string* k) {
    k->clear();
    auto put = [k](bool has, std::string_view v) { put_key(k, has, v); };
    put(g.rank.has, g.rank.v);
    put(true, std::string_view(&g.level, 1));
    put(true, g.time);
    put(true, g.pid);
    put(true, g.src);
    put(true, g.lineno);
    put(g.cid.has, g.cid.v);
    put(g.artifact.has, g.artifact.v);
}

struct PyUndress {
    PyObject_HEAD
    PyObject* cls;   // LogLine
    PyObject* slow;  // torch_log._undress_slow
    int64_t record;
    bool have_key;
    std::string* key;
    std::string* scratch;
    int dress;  // 0 none, 1 glog, 2 short
    PyObject* meta;
    bool in_traceback, after_warning;
    PyObject* record_obj;  // `record` as an int, made once per record
    int64_t record_of;
    // The prefix (up to the match's end) of the last glog line, where its pattern matched
    // with both optional groups (compile id, artifact), so that nothing after it can
    // change the match: a line that starts with the same bytes is of the same record.
    // Empty where the record's key came otherwise.
    std::string* prefix;
};

// LogLine(number, text, record, meta, starts_record, foreign) without a Python call:
// allocated as the tuple subclass it is (a NamedTuple has no __dict__) and filled in.
PyObject* make_line(PyUndress* self, PyObject* number, PyObject* text, bool starts,
                    bool foreign) {
    PyTypeObject* cls = (PyTypeObject*)self->cls;
    PyObject* t = cls->tp_alloc(cls, 6);
    if (!t) {
        Py_DECREF(text);
        return nullptr;
    }
    Py_INCREF(number);
    PyTuple_SET_ITEM(t, 0, number);
    PyTuple_SET_ITEM(t, 1, text);  // stolen
    if (!self->record_obj || self->record_of != self->record) {  // one int per record
        PyObject* rec = PyLong_FromLongLong(self->record);
        if (!rec) {
            Py_DECREF(t);
            return nullptr;
        }
        Py_XSETREF(self->record_obj, rec);
        self->record_of = self->record;
    }
    Py_INCREF(self->record_obj);
    PyTuple_SET_ITEM(t, 2, self->record_obj);
    PyObject* meta = self->meta ? self->meta : Py_None;
    Py_INCREF(meta);
    PyTuple_SET_ITEM(t, 3, meta);
    PyObject* b = starts ? Py_True : Py_False;
    Py_INCREF(b);
    PyTuple_SET_ITEM(t, 4, b);
    b = foreign ? Py_True : Py_False;
    Py_INCREF(b);
    PyTuple_SET_ITEM(t, 5, b);
    return t;
}

PyObject* substr(PyObject* raw, Py_ssize_t start) {
    return PyUnicode_Substring(raw, start, PyUnicode_GET_LENGTH(raw));
}

// What the Python regexes say of a non-ASCII line: (kind, end, groups..., warning, blank)
// as torch_log._undress_slow returns it.
struct Slow {
    PyObject* r = nullptr;
    ~Slow() { Py_XDECREF(r); }
};

// Undress one line; returns the LogLine (new reference) or nullptr with an exception set.
PyObject* undress_line(PyUndress* self, PyObject* number, PyObject* raw) {
    bool ascii = PyUnicode_IS_ASCII(raw);
    std::string_view s;
    if (ascii)
        s = std::string_view(reinterpret_cast<const char*>(PyUnicode_1BYTE_DATA(raw)),
                             (size_t)PyUnicode_GET_LENGTH(raw));
    Slow slow;
    if (!ascii) {
        slow.r = PyObject_CallOneArg(self->slow, raw);
        if (!slow.r) return nullptr;
        if (!PyTuple_Check(slow.r) || PyTuple_GET_SIZE(slow.r) != 5) {
            PyErr_SetString(PyExc_TypeError, "_undress_slow: expected a 5-tuple");
            return nullptr;
        }
    }
    if (ascii && !self->prefix->empty() && s.size() >= self->prefix->size() &&
        std::memcmp(s.data(), self->prefix->data(), self->prefix->size()) == 0) {
        // The same prefix as the last glog line: the same match, the same record.
        Py_ssize_t end = (Py_ssize_t)self->prefix->size();
        if ((size_t)end < s.size() && s[(size_t)end] == ' ') ++end;
        self->in_traceback = self->after_warning = false;
        PyObject* text = substr(raw, end);
        if (!text) return nullptr;
        return make_line(self, number, text, false, false);
    }
    Py_UCS4 first = PyUnicode_GET_LENGTH(raw) ? PyUnicode_READ_CHAR(raw, 0) : 0;
    // glog prefix
    if (first && first < 128 && std::strchr("[VIWEC", (int)first)) {
        if (ascii) {
            Glog g;
            if (match_glog(s, &g)) {
                Py_ssize_t end = (Py_ssize_t)g.end;
                if (g.end < s.size() && s[g.end] == ' ') ++end;
                glog_key(g, self->scratch);
                bool starts = !self->have_key || *self->scratch != *self->key;
                if (starts) {
                    PyObject* meta = glog_meta(g);
                    if (!meta) return nullptr;
                    ++self->record;
                    self->key->swap(*self->scratch);
                    self->have_key = true;
                    self->dress = 1;
                    Py_XSETREF(self->meta, meta);
                }
                if (g.cid.has && g.artifact.has)
                    self->prefix->assign(s.data(), g.end);
                else
                    self->prefix->clear();
                self->in_traceback = self->after_warning = false;
                PyObject* text = substr(raw, end);
                if (!text) return nullptr;
                return make_line(self, number, text, starts, false);
            }
        } else {
            PyObject* m = PyTuple_GET_ITEM(slow.r, 0);  // None or (end, key, meta)
            if (m != Py_None) {
                Py_ssize_t end = PyLong_AsSsize_t(PyTuple_GET_ITEM(m, 0));
                if (end < 0 && PyErr_Occurred()) return nullptr;
                PyObject* key = PyTuple_GET_ITEM(m, 1);  // the 8 pieces, str or None
                self->scratch->clear();
                for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(key); ++k) {
                    PyObject* v = PyTuple_GET_ITEM(key, k);
                    Py_ssize_t len = 0;
                    const char* b = v == Py_None ? "" : PyUnicode_AsUTF8AndSize(v, &len);
                    if (!b) return nullptr;
                    put_key(self->scratch, v != Py_None, std::string_view(b, (size_t)len));
                }
                bool starts = !self->have_key || *self->scratch != *self->key;
                self->prefix->clear();
                if (starts) {
                    PyObject* meta = PyTuple_GET_ITEM(m, 2);
                    Py_INCREF(meta);
                    ++self->record;
                    self->key->swap(*self->scratch);
                    self->have_key = true;
                    self->dress = 1;
                    Py_XSETREF(self->meta, meta);
                }
                self->in_traceback = self->after_warning = false;
                PyObject* text = substr(raw, end);
                if (!text) return nullptr;
                return make_line(self, number, text, starts, false);
            }
        }
    }
    // short prefix
    if (first && first < 128 && std::strchr("DIWEC", (int)first)) {
        PyObject* meta = nullptr;
        Py_ssize_t end = -1;
        if (ascii) {
            Short m;
            if (match_short(s, &m)) {
                meta = short_meta(m.level, m.logger);
                if (!meta) return nullptr;
                end = (Py_ssize_t)m.end;
            }
        } else {
            PyObject* m = PyTuple_GET_ITEM(slow.r, 1);  // None or (end, meta)
            if (m != Py_None) {
                end = PyLong_AsSsize_t(PyTuple_GET_ITEM(m, 0));
                if (end < 0 && PyErr_Occurred()) return nullptr;
                meta = PyTuple_GET_ITEM(m, 1);
                Py_INCREF(meta);
            }
        }
        if (meta) {
            ++self->record;
            self->have_key = false;
            self->prefix->clear();
            self->dress = 2;
            Py_XSETREF(self->meta, meta);
            self->in_traceback = self->after_warning = false;
            PyObject* text = substr(raw, end);
            if (!text) return nullptr;
            return make_line(self, number, text, true, false);
        }
    }
    // A line without a prefix.
    bool is_blank = ascii ? blank(s) : PyObject_IsTrue(PyTuple_GET_ITEM(slow.r, 3));
    bool lead_ws = first == ' ' || first == '\t';
    Py_INCREF(raw);
    if (self->in_traceback) {
        if (!(lead_ws || is_blank)) self->in_traceback = false;  // the exception line
        return make_line(self, number, raw, false, true);
    }
    static const char kTb[] = "Traceback (most recent call last):";
    bool tb;
    if (ascii) {
        tb = s.size() >= sizeof(kTb) - 1 && s.substr(0, sizeof(kTb) - 1) == kTb;
    } else {
        tb = PyObject_IsTrue(PyTuple_GET_ITEM(slow.r, 4));
    }
    if (tb) {
        self->in_traceback = true;
        return make_line(self, number, raw, false, true);
    }
    bool warning = ascii ? match_warning(s) : PyObject_IsTrue(PyTuple_GET_ITEM(slow.r, 2));
    if (warning) {
        self->after_warning = true;
        return make_line(self, number, raw, false, true);
    }
    bool two_spaces =
        PyUnicode_GET_LENGTH(raw) >= 2 && first == ' ' && PyUnicode_READ_CHAR(raw, 1) == ' ';
    if (self->after_warning && two_spaces && !is_blank) {
        self->after_warning = false;
        return make_line(self, number, raw, false, true);
    }
    self->after_warning = false;
    return make_line(self, number, raw, false, self->dress == 1);
}

// feed(lines: list[str], first: int) -> list[LogLine]
PyObject* feed(PyUndress* self, PyObject* args) {
    PyObject* lines;
    long long first;
    if (!PyArg_ParseTuple(args, "O!L", &PyList_Type, &lines, &first)) return nullptr;
    Py_ssize_t n = PyList_GET_SIZE(lines);
    PyObject* out = PyList_New(n);
    if (!out) return nullptr;
    for (Py_ssize_t i = 0; i < n; ++i) {
        PyObject* raw = PyList_GET_ITEM(lines, i);
        if (!PyUnicode_Check(raw)) {
            PyErr_SetString(PyExc_TypeError, "feed: expected a list of str");
            Py_DECREF(out);
            return nullptr;
        }
        PyObject* number = PyLong_FromLongLong(first + i);
        if (!number) {
            Py_DECREF(out);
            return nullptr;
        }
        PyObject* line = undress_line(self, number, raw);
        Py_DECREF(number);
        if (!line) {
            Py_DECREF(out);
            return nullptr;
        }
        PyList_SET_ITEM(out, i, line);
    }
    return out;
}

int init(PyUndress* self, PyObject* args, PyObject*) {
    PyObject *cls, *slow;
    if (!PyArg_ParseTuple(args, "O!O", &PyType_Type, &cls, &slow)) return -1;
    if (!PyType_IsSubtype((PyTypeObject*)cls, &PyTuple_Type) ||
        ((PyTypeObject*)cls)->tp_dictoffset != 0) {
        PyErr_SetString(PyExc_TypeError,
                        "TorchLogUndress: expected a tuple class without __dict__ (LogLine)");
        return -1;
    }
    Py_INCREF(cls);
    Py_XSETREF(self->cls, cls);
    Py_INCREF(slow);
    Py_XSETREF(self->slow, slow);
    Py_CLEAR(self->meta);
    Py_CLEAR(self->record_obj);
    self->record_of = -1;
    if (!self->key) self->key = new std::string();
    if (!self->scratch) self->scratch = new std::string();
    if (!self->prefix) self->prefix = new std::string();
    self->prefix->clear();
    self->key->clear();
    self->record = 0;
    self->have_key = false;
    self->dress = 0;
    self->in_traceback = self->after_warning = false;
    return 0;
}

void dealloc(PyUndress* self) {
    Py_XDECREF(self->cls);
    Py_XDECREF(self->slow);
    Py_XDECREF(self->meta);
    Py_XDECREF(self->record_obj);
    delete self->key;
    delete self->scratch;
    delete self->prefix;
    Py_TYPE(self)->tp_free((PyObject*)self);
}

PyMethodDef methods[] = {
    {"feed", (PyCFunction)feed, METH_VARARGS,
     "feed(lines: list[str], first: int) -> list[LogLine]: lines numbered from `first`"},
    {nullptr, nullptr, 0, nullptr}};

PyTypeObject UndressType = {PyVarObject_HEAD_INIT(nullptr, 0)};

// TORCH_TRACE logs: the lines of a chunk as record lines and runs of payload lines
// (torch_trace.TraceParser.parse_groups reads them; TraceParser.parse is the spec).
//
// trace_groups(lines: list[str], first: int) -> list of
//   (number, line)                          a record line (not empty, no leading tab)
//   (number, texts, data, numbers | None)   a run of payload lines: their texts without
//       the tab, data = the texts joined by newlines as UTF-8 bytes (what the md5 is of),
//       numbers where empty lines inside the run make them not consecutive
// Empty lines are skipped, as the Python loop skips them.
struct Run {
    PyObject* texts = nullptr;
    PyObject* numbers = nullptr;
    std::string data;
    long long first = 0, next = 0;
    bool gaps = false;
    ~Run() {
        Py_XDECREF(texts);
        Py_XDECREF(numbers);
    }
};

int flush_run(Run* r, PyObject* out) {
    if (!r->texts) return 0;
    PyObject* data = PyBytes_FromStringAndSize(r->data.data(), (Py_ssize_t)r->data.size());
    if (!data) return -1;
    PyObject* nums = r->gaps ? r->numbers : Py_None;
    PyObject* t = Py_BuildValue("(LOOO)", r->first, r->texts, data, nums);
    Py_DECREF(data);
    if (!t) return -1;
    int e = PyList_Append(out, t);
    Py_DECREF(t);
    Py_CLEAR(r->texts);
    Py_CLEAR(r->numbers);
    r->data.clear();
    r->gaps = false;
    return e;
}

PyObject* trace_groups(PyObject*, PyObject* args) {
    PyObject* lines;
    long long first;
    if (!PyArg_ParseTuple(args, "O!L", &PyList_Type, &lines, &first)) return nullptr;
    PyObject* out = PyList_New(0);
    if (!out) return nullptr;
    Run run;
    Py_ssize_t n = PyList_GET_SIZE(lines);
    for (Py_ssize_t i = 0; i < n; ++i) {
        PyObject* line = PyList_GET_ITEM(lines, i);
        if (!PyUnicode_Check(line)) {
            PyErr_SetString(PyExc_TypeError, "trace_groups: expected a list of str");
            Py_DECREF(out);
            return nullptr;
        }
        Py_ssize_t len = PyUnicode_GET_LENGTH(line);
        if (len == 0) continue;
        long long number = first + i;
        if (PyUnicode_READ_CHAR(line, 0) != '\t') {
            PyObject* num = PyLong_FromLongLong(number);
            PyObject* t = num ? PyTuple_Pack(2, num, line) : nullptr;
            Py_XDECREF(num);
            if (!t || flush_run(&run, out) < 0 || PyList_Append(out, t) < 0) {
                Py_XDECREF(t);
                Py_DECREF(out);
                return nullptr;
            }
            Py_DECREF(t);
            continue;
        }
        Py_ssize_t blen;
        const char* b = PyUnicode_AsUTF8AndSize(line, &blen);
        PyObject* text = b ? PyUnicode_Substring(line, 1, len) : nullptr;
        PyObject* num = text ? PyLong_FromLongLong(number) : nullptr;
        if (!num) {
            Py_XDECREF(text);
            Py_DECREF(out);
            return nullptr;
        }
        if (!run.texts) {
            run.texts = PyList_New(0);
            run.numbers = PyList_New(0);
            run.first = run.next = number;
            if (!run.texts || !run.numbers) {
                Py_DECREF(text);
                Py_DECREF(num);
                Py_DECREF(out);
                return nullptr;
            }
        } else {
            run.data.push_back('\n');
        }
        if (number != run.next) run.gaps = true;
        run.next = number + 1;
        run.data.append(b + 1, (size_t)(blen - 1));
        int e = PyList_Append(run.texts, text) < 0 || PyList_Append(run.numbers, num) < 0;
        Py_DECREF(text);
        Py_DECREF(num);
        if (e) {
            Py_DECREF(out);
            return nullptr;
        }
    }
    if (flush_run(&run, out) < 0) {
        Py_DECREF(out);
        return nullptr;
    }
    return out;
}

PyMethodDef functions[] = {
    {"trace_groups", (PyCFunction)trace_groups, METH_VARARGS,
     "trace_groups(lines, first): a TORCH_TRACE chunk's record lines and payload runs"},
    {nullptr, nullptr, 0, nullptr}};

}  // namespace

int add_torch_log(PyObject* module) {
    if (PyModule_AddFunctions(module, functions) < 0) return -1;
    return add_type(module, UndressType, "TorchLogUndress",
                    "TorchLogUndress(LogLine, slow): torch_log.undress, compiled",
                    sizeof(PyUndress), (initproc)init, (destructor)dealloc, methods);
}

}  // namespace tlv
