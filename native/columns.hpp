// Arrow-layout column builders for rows of the events table, and their export to Python.
//
// A parser fills one EventBatch row by row: it sets the columns it knows and calls
// end_row(); a column not set in a row is NULL there. Only columns touched at least
// once are exported; the writer fills the rest with NULLs. Export hands each column's
// buffers (validity bitmap, offsets, data) to Python as bytes, which the glue in
// ingest/native.py wraps with pyarrow.Array.from_buffers: no Python object per value.
#pragma once

#include <Python.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace tlv {

// Validity kept as one byte per row while building, packed into Arrow's bitmap at export.
struct Validity {
    std::vector<uint8_t> bits;
    size_t nulls = 0;
    void push(bool valid) {
        bits.push_back(valid ? 1 : 0);
        if (!valid) ++nulls;
    }
    void clear() {
        bits.clear();
        nulls = 0;
    }
    size_t size() const { return bits.size(); }
    PyObject* packed() const;  // None when there is no NULL
};

inline PyObject* Validity::packed() const {
    if (nulls == 0) Py_RETURN_NONE;
    size_t n = bits.size();
    PyObject* out = PyBytes_FromStringAndSize(nullptr, (Py_ssize_t)((n + 7) / 8));
    if (!out) return nullptr;
    auto* p = reinterpret_cast<uint8_t*>(PyBytes_AS_STRING(out));
    std::memset(p, 0, (n + 7) / 8);
    for (size_t i = 0; i < n; ++i)
        if (bits[i]) p[i >> 3] |= (uint8_t)(1u << (i & 7));
    return out;
}

inline PyObject* bytes_of(const void* data, size_t n) {
    return PyBytes_FromStringAndSize(static_cast<const char*>(data), (Py_ssize_t)n);
}

struct Column {
    const size_t* rows = nullptr;  // the batch's row counter
    bool used = false;
    virtual ~Column() = default;
    virtual size_t size() const = 0;
    virtual void push_null() = 0;
    virtual void clear() = 0;
    virtual PyObject* export_py() const = 0;  // a tuple, see ingest/native.py
    // Before a value is written in the current row: NULLs for the rows it missed.
    void pad() {
        used = true;
        while (size() < *rows) push_null();
    }
    // A NULL in the current row.
    void set_null() {
        pad();
        push_null();
    }
};

// Fixed-width values (a zero under a NULL) and their validity; export_py names the type.
template <class V, class Arg = V>
struct FixedCol : Column {
    std::vector<V> v;
    Validity valid;
    size_t size() const override { return v.size(); }
    void push_null() override {
        v.push_back(0);
        valid.push(false);
    }
    void clear() override {
        v.clear();
        valid.clear();
        used = false;
    }
    void set(Arg x) {
        pad();
        v.push_back((V)x);
        valid.push(true);
    }
};

struct I64Col final : FixedCol<int64_t> {
    PyObject* export_py() const override {
        return Py_BuildValue("(snnNN)", "i64", (Py_ssize_t)v.size(), (Py_ssize_t)valid.nulls,
                             valid.packed(), bytes_of(v.data(), v.size() * 8));
    }
};

struct I32Col final : FixedCol<int32_t> {
    PyObject* export_py() const override {
        return Py_BuildValue("(snnNN)", "i32", (Py_ssize_t)v.size(), (Py_ssize_t)valid.nulls,
                             valid.packed(), bytes_of(v.data(), v.size() * 4));
    }
};

struct BoolCol final : FixedCol<uint8_t, bool> {  // a value 1 or 0; exported as bits
    PyObject* export_py() const override {
        std::vector<uint8_t> bits((v.size() + 7) / 8, 0);
        for (size_t i = 0; i < v.size(); ++i)
            if (v[i]) bits[i >> 3] |= (uint8_t)(1u << (i & 7));
        return Py_BuildValue("(snnNN)", "bool", (Py_ssize_t)v.size(), (Py_ssize_t)valid.nulls,
                             valid.packed(), bytes_of(bits.data(), bits.size()));
    }
};

// utf8 with int32 offsets (Arrow "string"); the batch flushes long before 2 GB.
struct StrCol final : Column {
    std::vector<int32_t> off{0};
    std::string data;
    Validity valid;
    size_t size() const override { return off.size() - 1; }
    void push_null() override {
        off.push_back((int32_t)data.size());
        valid.push(false);
    }
    void clear() override {
        off.assign(1, 0);
        data.clear();
        valid.clear();
        used = false;
    }
    void set(std::string_view s) {
        pad();
        data.append(s.data(), s.size());
        off.push_back((int32_t)data.size());
        valid.push(true);
    }
    // Build a value in place: begin(), append to `data`, commit().
    std::string& begin() {
        pad();
        return data;
    }
    void commit() {
        off.push_back((int32_t)data.size());
        valid.push(true);
    }
    PyObject* export_py() const override {
        return Py_BuildValue("(snnNNN)", "str", (Py_ssize_t)size(), (Py_ssize_t)valid.nulls,
                             valid.packed(), bytes_of(off.data(), off.size() * 4),
                             bytes_of(data.data(), data.size()));
    }
};

// list<utf8>: a row is begin_list(), item()..., end_list().
struct StrListCol final : Column {
    std::vector<int32_t> off{0};
    StrCol child;
    size_t child_rows = 0;
    Validity valid;
    StrListCol() { child.rows = &child_rows; }
    size_t size() const override { return off.size() - 1; }
    void push_null() override {
        off.push_back((int32_t)child.size());
        valid.push(false);
    }
    void clear() override {
        off.assign(1, 0);
        child.clear();
        child_rows = 0;
        valid.clear();
        used = false;
    }
    void begin_list() { pad(); }
    void item(std::string_view s) {
        child.set(s);
        child_rows = child.size();
    }
    void end_list() {
        off.push_back((int32_t)child.size());
        valid.push(true);
    }
    PyObject* export_py() const override {
        return Py_BuildValue("(snnNNN)", "list", (Py_ssize_t)size(), (Py_ssize_t)valid.nulls,
                             valid.packed(), bytes_of(off.data(), off.size() * 4),
                             child.export_py());
    }
};

// The events table's columns (schemas/00_tables.sql) that parsers fill; source_id,
// timeline_id and seq belong to the writer. `tl` is the row's timeline, as the ordinal
// of the timelines the parser declared (0 = its first).
struct EventBatch {
    size_t rows = 0;
    I32Col tl;
    StrCol kind;
    I64Col step;
    StrCol node, buffer, target, relation, reason, node_class, ir_type, kernel, device;
    StrListCol reads, writes;
    I64Col bytes;
    StrCol layout, dtype, shape, stride, size_expr;
    BoolCol is_input;
    I64Col allocation, offset;
    StrCol op;
    StrListCol buffers;
    StrCol collective, name, category;
    I64Col ts_ns, dur_ns, stream, correlation, line;
    StrCol attrs;
    I64Col address;  // schema v3 (allocator snapshots)
    I32Col stack_id;
    I64Col block_bytes;

    struct Named {
        const char* name;
        Column* col;
    };
    std::vector<Named> all() {
        return {{"_tl", &tl},
                {"kind", &kind},
                {"step", &step},
                {"node", &node},
                {"buffer", &buffer},
                {"target", &target},
                {"relation", &relation},
                {"reason", &reason},
                {"node_class", &node_class},
                {"ir_type", &ir_type},
                {"kernel", &kernel},
                {"device", &device},
                {"reads", &reads},
                {"writes", &writes},
                {"bytes", &bytes},
                {"layout", &layout},
                {"dtype", &dtype},
                {"shape", &shape},
                {"stride", &stride},
                {"size_expr", &size_expr},
                {"is_input", &is_input},
                {"allocation", &allocation},
                {"offset", &offset},
                {"op", &op},
                {"buffers", &buffers},
                {"collective", &collective},
                {"name", &name},
                {"category", &category},
                {"ts_ns", &ts_ns},
                {"dur_ns", &dur_ns},
                {"stream", &stream},
                {"correlation", &correlation},
                {"line", &line},
                {"attrs", &attrs},
                {"address", &address},
                {"stack_id", &stack_id},
                {"block_bytes", &block_bytes}};
    }
    EventBatch() {
        for (auto& c : all()) c.col->rows = &rows;
    }
    EventBatch(const EventBatch&) = delete;
    EventBatch& operator=(const EventBatch&) = delete;

    void end_row() { ++rows; }
    // Bytes held by string columns: a batch is flushed well before int32 offsets overflow.
    size_t text_bytes() const {
        return name.data.size() + attrs.data.size() + node.data.size() + buffer.data.size() +
               kernel.data.size() + shape.data.size() + stride.data.size() +
               reads.child.data.size() + writes.child.data.size() + buffers.child.data.size();
    }
    void clear() {
        for (auto& c : all()) c.col->clear();
        rows = 0;
    }
    // {"n": rows, "cols": {name: buffers}}; every exported column padded to `rows`.
    PyObject* export_py() {
        PyObject* cols = PyDict_New();
        if (!cols) return nullptr;
        for (auto& c : all()) {
            if (!c.col->used) continue;
            while (c.col->size() < rows) c.col->push_null();
            PyObject* t = c.col->export_py();
            if (!t || PyDict_SetItemString(cols, c.name, t) < 0) {
                Py_XDECREF(t);
                Py_DECREF(cols);
                return nullptr;
            }
            Py_DECREF(t);
        }
        return Py_BuildValue("{s:n,s:N}", "n", (Py_ssize_t)rows, "cols", cols);
    }
};

}  // namespace tlv
