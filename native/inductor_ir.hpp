// The scheduler-IR reader's state (inductor_ir.cpp explains the whole). Its parts:
// inductor_ir_layout.cpp (storage bytes, layouts, the regexes over field values),
// inductor_ir_lines.cpp (line dispatch, rows, the input and the end),
// inductor_ir_finish_node.cpp (a node's completion: _finish_node).
#pragma once

#include "inductor_ir_last_use.hpp"

namespace tlv::ir {

// ---- the parser -------------------------------------------------------------------------

struct Parser {
    PyObject* path_obj = nullptr;
    PyThreadState* ts = nullptr;  // while the GIL is released

    // input: the decoded text not yet split into lines
    std::string buf;
    std::string cut;      // a UTF-8 sequence cut by the end of the last chunk
    int64_t next_line = 1;  // number of the line that starts buf

    // state of ingest/inductor_ir.py's _Parser
    bool has_top = false;
    Node top;
    Node* current = nullptr;
    Node* expect_snode_of = nullptr;
    // pending multi-line value
    bool pending = false;
    Node* pend_node = nullptr;
    int64_t pend_buf = -1;  // an index into top.buffers, or -1: pend_node
    std::string pend_field, pend_text;
    int64_t pend_start = 0, pend_balance = 0;
    // loop body / code block
    bool block = false;
    Node* block_node = nullptr;
    std::string block_name, block_text;
    size_t block_lines = 0, block_keep = 0;
    bool in_outputs = false, skip_outputs = false;
    int64_t step = 0, last_line = 0;
    LastUse live;
    NameMap<char> produced;
    NameMap<std::optional<int64_t>> inputs;
    std::unordered_set<std::string> collective_nodes;
    OptStr device;
    std::vector<std::string> symbolic;
    std::unordered_map<std::string, std::pair<int64_t, std::vector<std::string>>> concat_views;

    StrMap<size_t> layout_index;  // layout text -> its parse in layout_cache
    std::deque<Layout> layout_cache;
    std::unique_ptr<EventBatch> batch{new EventBatch()};
    std::vector<std::unique_ptr<EventBatch>> done;
    std::unique_ptr<EventBatch> spare;  // an exported batch, cleared: its memory reused
    std::string tmp;

    [[noreturn]] void fail(int64_t line, std::string msg) {
        throw ParseError{line, std::move(msg)};
    }

    // -- Python, for the rare cases ---------------------------------------------------------
    struct Gil {
        Parser& p;
        explicit Gil(Parser& p_) : p(p_) {
            if (p.ts) PyEval_RestoreThread(p.ts);
        }
        ~Gil() {
            if (p.ts) p.ts = PyEval_SaveThread();
        }
    };

    std::string py_lower(sv s);

    // tensors.storage_bytes itself, for integers beyond 64 bits.
    Storage py_storage(const std::vector<std::string>& size,
                       const std::vector<std::string>& stride, const OptStr& dtype);

    // -- tensors.storage_bytes ------------------------------------------------------------
    // overflow: set when the byte count is beyond int64 (the caller's error).
    Storage storage_bytes(const std::vector<std::string>& size,
                          const std::vector<std::string>& stride, const OptStr& dtype,
                          bool* overflow);

    Storage from_python(const std::vector<std::string>& size,
                        const std::vector<std::string>& stride, const OptStr& dtype,
                        bool* overflow);

    // -- parse_layout ---------------------------------------------------------------------
    static bool device_arg(sv v, std::string* out);

    const Layout& parse_layout(sv text);

    // storage_bytes of a layout, computed on its first use.
    const Storage& layout_storage(const Layout& L, bool* overflow);

    // -- the regexes over field values ----------------------------------------------------
    // _DEP.finditer: f(kind, name) for each `\w+Dep\((?:name=)?'([^']+)'`
    template <class F>
    static void scan_deps(sv t, F&& f) {
        size_t pos = 0, from = 0;
        while (true) {
            size_t j = t.find('(', from);
            if (j == sv::npos) return;
            from = j + 1;
            size_t s = word_start(t, j, pos);
            sv kind = t.substr(s, j - s);
            if (kind.size() < 4 || !ends(kind, "Dep")) continue;
            size_t k = j + 1;
            if (starts(t.substr(k), "name=")) {
                size_t q = try_quote(t, k + 5);
                if (q != sv::npos) {
                    f(kind, t.substr(k + 6, q - (k + 6)));
                    pos = from = q + 1;
                    continue;
                }
            }
            size_t q = try_quote(t, k);
            if (q != sv::npos) {
                f(kind, t.substr(k + 1, q - (k + 1)));
                pos = from = q + 1;
            }
        }
    }
    // '[^']+' at k: index of the closing quote, or npos
    static size_t try_quote(sv t, size_t k);
    // _QUOTED.findall
    template <class F>
    static void scan_quoted(sv t, F&& f) {
        size_t pos = 0;
        while (true) {
            size_t i = t.find('\'', pos);
            if (i == sv::npos) return;
            size_t k = t.find('\'', i + 1);
            if (k == sv::npos) return;
            f(t.substr(i + 1, k - i - 1));
            pos = k + 1;
        }
    }
    // _USER.finditer: f(is_output, node, rest)
    template <class F>
    static void scan_users(sv t, F&& f) {
        static const sv head = "NodeUser(node=";
        size_t from = 0;
        while (true) {
            size_t s = t.find(head, from);
            if (s == sv::npos) return;
            size_t p = s + head.size();
            if (starts(t.substr(p), "OUTPUT")) {
                size_t r = p + 6, c = t.find(')', r);
                if (c != sv::npos) {
                    f(true, sv(), t.substr(r, c - r));
                    from = c + 1;
                    continue;
                }
            }
            size_t we = word_end(t, p);
            static const sv nm = "(name='";
            if (we > p && starts(t.substr(we), nm)) {
                size_t a = we + nm.size();
                size_t q = t.find('\'', a);
                if (q != sv::npos && q > a && q + 1 < t.size() && t[q + 1] == ')') {
                    size_t r = q + 2, c = t.find(')', r);
                    if (c != sv::npos) {
                        f(false, t.substr(a, q - a), t.substr(r, c - r));
                        from = c + 1;
                        continue;
                    }
                }
            }
            from = s + 1;
        }
    }

    static void dep_names(sv t, std::vector<std::string>& out);

    // -- line dispatch --------------------------------------------------------------------
    void line(int64_t number, sv text);

    void block_add(sv text);
    void block_close();
    void block_open(Node* node, std::string name, sv first, bool with_first);

    Fields& pend_target();
    void pending_done();
    void pending_open(Node* node, int64_t bufi, sv field, sv value, int64_t number,
                      int64_t bal);

    void feed(int64_t number, sv text);
    Fields top_layouts;  // name -> layout text (order unused)

    // _HEADER: `name: Cls(ir)` then \s* to the end (the line ends with ")").
    bool header(int64_t number, sv text);

    void set_field(Node* owner, sv field, sv value, int64_t number);

    void output_line(int64_t number, sv text);

    // -- rows -----------------------------------------------------------------------------
    void end_row();
    void flush();
    template <class C, class Opt>
    static void set_opt(C& c, const Opt& v) {  // the value, or NULL
        if (v)
            c.set(*v);
        else
            c.set_null();
    }

    // -- node completion (_finish_node) ---------------------------------------------------
    std::vector<std::string> writes, reads, met, names_tmp, later_;
    static bool in(const std::vector<std::string>& v, const std::string& x);

    void finish_node();

    void frees();

    void link_concat_views(const std::string& name);

    static void shape_text(std::string& out, const std::vector<std::string>& dims);

    [[noreturn]] void out_of_range(int64_t line, const std::string& name, const Storage& s);

    void declare_inputs(const Node& node, const std::vector<std::string>& names);

    // A buffer_allocated row's dtype, shape, stride and device columns from its layout.
    void layout_columns(const Layout& L);

    // A buffer's attrs written straight as JSON, or through a JObj when one of its fields
    // has the name of a key allocate() sets itself (the dict then overwrites in place).
    struct AttrWriter {
        JObj* obj;
        std::string& out;
        bool first = true;
        std::string& slot(sv k) {
            if (obj) return obj->slot(k);
            out.push_back(first ? '{' : ',');
            first = false;
            put_json_string(out, k, true);
            out.push_back(':');
            return out;
        }
        void str(sv k, sv v) { put_json_string(slot(k), v, true); }
        void finish() {
            if (obj)
                obj->write(out);
            else
                out.append(first ? "{}" : "}");
        }
    };
    static bool own_attr_key(sv k);
    std::vector<std::pair<bool, sv>> users_;  // (is OUTPUT, node name)
    std::string attrs_;

    void allocate(const Node& node, int64_t st, const Buffer& buf);

    void collective(const Node& node, int64_t st, const OptStr& kernel);

    // -- end of file (finish) -------------------------------------------------------------
    void finish();

    // -- input: 1 MiB chunks, checked as ingest/lines.py read_text checks them ------------
    void chunk(sv data);

    void end_of_input();
};

}  // namespace tlv::ir
