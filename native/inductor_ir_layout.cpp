// The scheduler-IR reader: Python for the rare cases, tensors.storage_bytes,
// parse_layout and the regexes over field values (ingest/inductor_ir.py).
#include "inductor_ir.hpp"

namespace tlv::ir {

std::string Parser::py_lower(sv s) {
    bool ascii = true;
    for (char c : s)
        if ((uint8_t)c >= 0x80) {
            ascii = false;
            break;
        }
    std::string out(s);
    if (ascii) {
        for (auto& c : out)
            if (c >= 'A' && c <= 'Z') c = (char)(c - 'A' + 'a');
        return out;
    }
    Gil g(*this);
    PyObject* u = py_str(s);
    PyObject* l = u ? PyObject_CallMethod(u, "lower", nullptr) : nullptr;
    Py_XDECREF(u);
    if (!l) throw PyErrSet{};
    Py_ssize_t n;
    const char* d = PyUnicode_AsUTF8AndSize(l, &n);
    if (!d) {
        Py_DECREF(l);
        throw PyErrSet{};
    }
    out.assign(d, (size_t)n);
    Py_DECREF(l);
    return out;
}

Storage Parser::py_storage(const std::vector<std::string>& size,
                           const std::vector<std::string>& stride, const OptStr& dtype) {
    Gil g(*this);
    Storage st;
    PyObject* mod = PyImport_ImportModule("tlview.ingest.tensors");
    if (!mod) throw PyErrSet{};
    auto list = [](const std::vector<std::string>& v) {
        PyObject* l = PyList_New((Py_ssize_t)v.size());
        for (size_t i = 0; l && i < v.size(); ++i)
            PyList_SET_ITEM(l, (Py_ssize_t)i, py_str(v[i]));
        return l;
    };
    PyObject* a = list(size);
    PyObject* b = list(stride);
    PyObject* d = dtype ? py_str(*dtype) : (Py_INCREF(Py_None), Py_None);
    PyObject* r = PyObject_CallMethod(mod, "storage_bytes", "NNN", a, b, d);
    Py_DECREF(mod);
    if (!r) throw PyErrSet{};
    auto text_attr = [&](const char* name, OptStr* out) {
        PyObject* v = PyObject_GetAttrString(r, name);
        if (!v) throw PyErrSet{};
        if (v != Py_None) {
            Py_ssize_t n;
            const char* s = PyUnicode_AsUTF8AndSize(v, &n);
            if (!s) {
                Py_DECREF(v);
                throw PyErrSet{};
            }
            *out = std::string(s, (size_t)n);
        }
        Py_DECREF(v);
    };
    PyObject* bv = PyObject_GetAttrString(r, "bytes");
    if (!bv) {
        Py_DECREF(r);
        throw PyErrSet{};
    }
    if (bv != Py_None) {
        int overflow = 0;
        long long x = PyLong_AsLongLongAndOverflow(bv, &overflow);
        if (overflow) {
            PyObject* t = PyObject_Str(bv);
            Py_ssize_t n;
            const char* s = t ? PyUnicode_AsUTF8AndSize(t, &n) : nullptr;
            if (s) st.big.assign(s, (size_t)n);
            Py_XDECREF(t);
            Py_DECREF(bv);
            Py_DECREF(r);
            if (!s) throw PyErrSet{};
            return st;  // the caller reports it
        }
        st.bytes = x;
    }
    Py_DECREF(bv);
    text_attr("expr", &st.expr);
    text_attr("reason", &st.reason);
    Py_DECREF(r);
    return st;
}

Storage Parser::storage_bytes(const std::vector<std::string>& size,
                              const std::vector<std::string>& stride, const OptStr& dtype,
                              bool* overflow) {
    *overflow = false;
    std::optional<int> isz;
    if (dtype) isz = itemsize_of(after_last_dot(*dtype));
    std::string dname = dtype ? *dtype : "None";
    Storage st;
    if (size.size() != stride.size()) {
        std::string r = "sizes [";
        for (size_t i = 0; i < size.size(); ++i) {
            if (i) r += ", ";
            put_repr(r, size[i]);
        }
        r += "] and strides [";
        for (size_t i = 0; i < stride.size(); ++i) {
            if (i) r += ", ";
            put_repr(r, stride[i]);
        }
        r += "] differ in rank";
        st.reason = r;
        return st;
    }
    bool all_int = true, big = false;
    std::vector<int64_t> sv_(size.size()), tv(size.size());
    for (size_t i = 0; i < size.size() && all_int; ++i) {
        bool b1 = false;
        if (!py_int(size[i], &sv_[i], &b1)) all_int = false;
        big |= b1;
    }
    for (size_t i = 0; i < stride.size() && all_int; ++i) {
        bool b2 = false;
        if (!py_int(stride[i], &tv[i], &b2)) all_int = false;
        big |= b2;
    }
    if (all_int) {
        if (big) return from_python(size, stride, dtype, overflow);
        __int128 numel = 1;
        for (size_t i = 0; i < size.size(); ++i) {
            if (sv_[i] == 0) {
                if (isz) {
                    st.bytes = 0;
                    return st;
                }
                st.reason = "unknown dtype " + dname;
                return st;
            }
            __int128 term = (__int128)(sv_[i] - 1) * (__int128)tv[i], sum;
            if (__builtin_add_overflow(numel, term, &sum))
                return from_python(size, stride, dtype, overflow);
            numel = sum;
        }
        if (!isz) {
            st.expr = i128_str(numel) + "*itemsize(" + dname + ")";
            st.reason = "unknown dtype " + dname;
            return st;
        }
        __int128 total;
        if (__builtin_mul_overflow(numel, (__int128)*isz, &total))
            return from_python(size, stride, dtype, overflow);
        if (total > INT64_MAX || total < INT64_MIN) {
            *overflow = true;
            st.big = i128_str(total);
            return st;
        }
        st.bytes = (int64_t)total;
        return st;
    }
    std::string e = "(1";
    for (size_t i = 0; i < size.size(); ++i) {
        e += " + ((";
        e += size[i];
        e += ") - 1)*(";
        e += stride[i];
        e += ")";
    }
    e += ")*";
    e += isz ? std::to_string(*isz) : "itemsize(" + dname + ")";
    st.expr = e;
    st.reason = "symbolic size";
    return st;
}

Storage Parser::from_python(const std::vector<std::string>& size,
                            const std::vector<std::string>& stride, const OptStr& dtype,
                            bool* overflow) {
    Storage st = py_storage(size, stride, dtype);
    *overflow = !st.big.empty();
    return st;
}

bool Parser::device_arg(sv v, std::string* out) {
    // device\(type='(?P<type>\w+)'(?:, index=(?P<index>\d+))?\)
    static const sv head = "device(type='";
    if (!starts(v, head)) return false;
    size_t i = head.size(), e = word_end(v, i);
    if (e == i || e >= v.size() || v[e] != '\'') return false;
    sv type = v.substr(i, e - i);
    size_t k = e + 1;
    static const sv idx = ", index=";
    if (starts(v.substr(k), idx)) {
        size_t d = k + idx.size(), n;
        size_t de = d;
        while (de < v.size() && decimal_at(v, de, &n)) de += n;
        if (de > d && de < v.size() && v[de] == ')') {
            out->assign(type);
            out->push_back(':');
            out->append(v.substr(d, de - d));
            return true;
        }
    }
    if (k < v.size() && v[k] == ')') {
        out->assign(type);
        return true;
    }
    return false;
}

const Layout& Parser::parse_layout(sv text) {
    if (size_t* i = layout_index.find(text)) return layout_cache[*i];
    if (layout_cache.size() >= 8192) {
        layout_index.clear();
        layout_cache.clear();
    }
    *layout_index.emplace(text).first = layout_cache.size();
    Layout& L = layout_cache.emplace_back();
    L.has_kind = true;
    sv t = strip(text);
    size_t we = ident_end(t, 0);
    if (we == sv::npos || we >= t.size() || t[we] != '(' || t.back() != ')' ||
        t.size() < we + 2) {
        L.kind.assign(t);
        return L;
    }
    L.kind.assign(t.substr(0, we));
    sv args = t.substr(we + 1, t.size() - 1 - (we + 1));
    std::vector<std::string> parts;
    split_dims(args, parts);
    std::string dev;
    for (auto& a_ : parts) {
        sv a = a_;
        bool quoted = !a.empty() && (a[0] == '\'' || a[0] == '"');
        size_t eq = a.find('=');
        if (eq != sv::npos && !quoted) {
            sv key = strip(a.substr(0, eq)), val = strip(a.substr(eq + 1));
            if (key == "size") {
                split_dims(val, L.size);
                L.has_size = true;
            } else if (key == "stride") {
                split_dims(val, L.stride);
                L.has_stride = true;
            } else if (key == "device") {
                if (device_arg(val, &dev))
                    L.device = dev;
                else
                    L.device = std::string(val);
            } else if (key == "dtype")
                L.dtype = std::string(after_last_dot(val));
            else
                L.extra.set(key, val);
        } else if (quoted) {
            size_t b = 0, e = a.size();
            while (b < e && (a[b] == '\'' || a[b] == '"')) ++b;
            while (e > b && (a[e - 1] == '\'' || a[e - 1] == '"')) --e;
            L.device = std::string(a.substr(b, e - b));
        } else if (starts(a, "torch.")) {
            L.dtype = std::string(a.substr(6));
        } else if (device_arg(a, &dev)) {
            L.device = dev;
        }
    }
    if (L.has_size) shape_text(L.shape_text, L.size);
    if (L.has_stride) shape_text(L.stride_text, L.stride);
    return L;
}

const Storage& Parser::layout_storage(const Layout& L, bool* overflow) {
    if (!L.has_storage) {
        L.storage = storage_bytes(L.size, L.stride, L.dtype, &L.overflow);
        L.has_storage = true;
    }
    *overflow = L.overflow;
    return L.storage;
}

size_t Parser::try_quote(sv t, size_t k) {
    if (k >= t.size() || t[k] != '\'') return sv::npos;
    size_t q = t.find('\'', k + 1);
    if (q == sv::npos || q == k + 1) return sv::npos;
    return q;
}

void Parser::dep_names(sv t, std::vector<std::string>& out) {
    out.clear();
    scan_deps(t, [&](sv kind, sv name) {
        if (kind == "WeakDep") return;
        for (auto& o : out)
            if (o == name) return;
        out.emplace_back(name);
    });
}

}  // namespace tlv::ir
