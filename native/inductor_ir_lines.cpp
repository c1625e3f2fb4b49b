// The scheduler-IR reader: line dispatch and rows, the input (1 MiB chunks, checked
// as ingest/lines.py read_text checks them) and the end of the file.
#include "inductor_ir.hpp"

namespace tlv::ir {

void Parser::line(int64_t number, sv text) {
    if (block && (text.empty() || text[0] == ' ' || text[0] == '\t')) {
        block_add(text);
        return;
    }
    if (pending && !text.empty() && text[0] == ' ' && pend_balance > 0) {
        pend_text.push_back(' ');
        pend_text.append(strip(text));
        pend_balance += balance(text);
        if (pend_balance <= 0) pending_done();
        return;
    }
    feed(number, text);
}

void Parser::block_add(sv text) {
    if (block_node != &top) return;  // a sub-node's loop body: never read
    if (block_lines++) block_text.push_back('\n');
    block_text.append(text);
    if (!blank(text)) block_keep = block_text.size();
}

void Parser::block_close() {
    if (block_node == &top) top.blocks.set(block_name, sv(block_text).substr(0, block_keep));
    block = false;
}

void Parser::block_open(Node* node, std::string name, sv first, bool with_first) {
    block = true;
    block_node = node;
    block_name = std::move(name);
    block_text.clear();
    block_lines = 0;
    block_keep = 0;
    if (with_first) block_add(first);
}

Fields& Parser::pend_target() {
    return pend_buf >= 0 ? top.buffers[(size_t)pend_buf].fields : pend_node->fields;
}

void Parser::pending_done() {
    pending = false;
    pend_target().set(pend_field, strip(pend_text));
}

void Parser::pending_open(Node* node, int64_t bufi, sv field, sv value, int64_t number,
                          int64_t bal) {
    pending = true;
    pend_node = node;
    pend_buf = bufi;
    pend_field.assign(field);
    pend_text.assign(value);
    pend_start = number;
    pend_balance = bal;
}

void Parser::feed(int64_t number, sv text) {
    last_line = number;
    if (pending) {
        bool indented = !text.empty() && (text[0] == ' ' || text[0] == '\t');
        if (!pend_balance && !indented) {
            pending = false;
            pend_target().set(pend_field, "");
            feed(number, text);
            return;
        }
        pend_text.push_back(' ');
        pend_text.append(strip(text));
        pend_balance += balance(text);
        if (pend_balance <= 0) pending_done();
        return;
    }
    if (block) {
        if ((!text.empty() && (text[0] == ' ' || text[0] == '\t')) || blank(text)) {
            block_add(text);
            return;
        }
        block_close();
    }
    if (in_outputs) {
        output_line(number, text);
        return;
    }
    if (blank(text)) return;
    if (text[0] == ' ' || text[0] == '\t') {
        if (!current) fail(number, "indented text before the first node header");
        if (current == &top) top.unknown.emplace_back(text);
        return;
    }
    Node* cur = current;
    if (cur) {
        Node* owner = nullptr;
        sv rest;
        if (starts(text, cur->prefix)) {
            owner = cur;
            rest = text.substr(cur->prefix.size());
        } else if (has_top && starts(text, top.prefix)) {
            owner = &top;
            rest = text.substr(top.prefix.size());
        }
        if (owner) {
            size_t eq = rest.find(" =");
            if (eq != sv::npos) {
                sv field = rest.substr(0, eq);
                if (field.find(' ') == sv::npos) {
                    sv value = rest.substr(eq + 2);
                    if (!value.empty() && value[0] == ' ') value.remove_prefix(1);
                    set_field(owner, field, value, number);
                    return;
                }
            }
        }
    }
    if (!text.empty() && text.back() == ')') {
        if (header(number, text)) return;
    }
    if (!cur) {
        std::string m =
            "expected an Inductor scheduler node header like "
            "'op0: SchedulerNode(ComputedBuffer)', got ";
        put_repr(m, first_chars(text, 80));
        fail(number, std::move(m));
    }
    expect_snode_of = nullptr;
    if (text.find("_layout = ") != sv::npos) {
        size_t we = ident_end(text, 0);
        if (we != sv::npos && we >= 8 && ends(text.substr(0, we), "_layout") &&
            starts(text.substr(we), " = ")) {
            sv name = text.substr(0, we - 7);
            sv value = text.substr(we + 3);
            if (cur == &top)
                top_layouts.set(name, value);
            else if (!top_layouts.has(name))
                top_layouts.set(name, value);
            return;
        }
    }
    if (starts(text, "class ")) {
        size_t we = ident_end(text, 6);
        if (we != sv::npos && we - 6 >= 11 && ends(text.substr(0, we), "_loop_body") &&
            we < text.size() && text[we] == ':' && only_space(text, we + 1)) {
            block_open(cur, "loop_body", text, true);
            return;
        }
    }
    if (ends(text, " code:")) {
        size_t w1 = ident_end(text, 0);
        if (w1 != sv::npos && w1 < text.size() && text[w1] == ' ') {
            size_t w2 = word_end(text, w1 + 1);
            if (w2 > w1 + 1 && text.substr(w2) == " code:" && has_top) {
                block_open(&top, py_lower(text.substr(w1 + 1, w2 - w1 - 1)) + "_code", sv(),
                           false);
                return;
            }
        }
    }
    if (cur == &top) top.unknown.emplace_back(text);
}

bool Parser::header(int64_t number, sv text) {
    size_t w1 = ident_end(text, 0);
    if (w1 == sv::npos || !starts(text.substr(w1), ": ")) return false;
    size_t c0 = w1 + 2, w2 = ident_end(text, c0);
    if (w2 == sv::npos || w2 >= text.size() || text[w2] != '(') return false;
    size_t close = text.size() - 1;  // the final ")"
    sv ir = text.substr(w2 + 1, close - (w2 + 1));
    if (close < w2 + 1 || ir.find_first_of("()") != sv::npos) return false;
    sv name = text.substr(0, w1), cls = text.substr(c0, w2 - c0);
    if (expect_snode_of) {
        Node* parent = expect_snode_of;
        expect_snode_of = nullptr;
        if (parent->n_subs == parent->subs.size())
            parent->subs.push_back(std::make_unique<Node>());
        Node* sub = parent->subs[parent->n_subs++].get();
        sub->reset(name, cls, ir, number);
        parent->snodes.emplace_back(name);
        current = sub;
        return true;
    }
    if (has_top) finish_node();
    top.reset(name, cls, ir, number);
    top_layouts.clear();
    has_top = true;
    current = &top;
    return true;
}

void Parser::set_field(Node* owner, sv field, sv value, int64_t number) {
    expect_snode_of = nullptr;
    if (starts(field, "snodes[")) {
        // snodes\[(\d+)\]\Z
        size_t i = 7, n, e = i;
        while (e < field.size() && decimal_at(field, e, &n)) e += n;
        if (e > i && e + 1 == field.size() && field[e] == ']') {
            expect_snode_of = owner;
            return;
        }
    }
    if (field == "outputs" && strip(value) == "[") {
        skip_outputs = owner != &top;
        in_outputs = true;
        return;
    }
    int64_t bal = balance(value);
    if (bal > 0 || blank(value)) {
        pending_open(owner, -1, field, value, number, bal);
        return;
    }
    owner->fields.set(field, strip(value));
}

void Parser::output_line(int64_t number, sv text) {
    sv st = strip(text);
    if (st == "]" && !(!text.empty() && text[0] == ' ')) {
        in_outputs = false;
        skip_outputs = false;
        return;
    }
    if (skip_outputs) return;
    if (st.empty()) return;
    sv body = lstrip(text);
    size_t dot = body.find('.');
    auto& bufs = top.buffers;
    if (dot != sv::npos && !bufs.empty() && body.substr(0, dot) == bufs.back().name) {
        sv rest = body.substr(dot + 1);
        size_t eq = rest.find(" = ");
        if (eq != sv::npos) {
            sv field = rest.substr(0, eq), value = rest.substr(eq + 3);
            int64_t bal = balance(value);
            if (bal > 0)
                pending_open(nullptr, (int64_t)bufs.size() - 1, field, value, number, bal);
            else
                bufs.back().fields.set(field, strip(value));
            return;
        }
    }
    // _BUF_HEADER: \s+ name ": " Cls \s*\Z
    size_t s = space_end(text, 0);
    if (s > 0) {
        size_t w1 = ident_end(text, s);
        if (w1 != sv::npos && starts(text.substr(w1), ": ")) {
            size_t w2 = ident_end(text, w1 + 2);
            if (w2 != sv::npos && only_space(text, w2)) {
                Buffer& b = bufs.add();
                b.name.assign(text.substr(s, w1 - s));
                b.ir_class.assign(text.substr(w1 + 2, w2 - w1 - 2));
                b.line = number;
                return;
            }
        }
    }
    if (!text.empty() && (text[0] == ' ' || text[0] == '\t') && !starts(st, "]")) {
        if (!bufs.empty()) {
            std::string& u = bufs.back().fields.slot("_unknown");
            u.append(st);
            u.push_back('\n');
            return;
        }
    }
    fail(number, "expected an output buffer line or ']' closing " + top.name + ".outputs");
}

void Parser::end_row() {
    EventBatch& b = *batch;
    b.end_row();
    if (b.rows >= BATCH_ROWS || b.text_bytes() >= BATCH_TEXT) flush();
}

void Parser::flush() {
    if (batch->rows == 0) return;
    done.push_back(std::move(batch));
    if (spare)
        batch = std::move(spare);
    else
        batch.reset(new EventBatch());
}

void Parser::finish() {
    int64_t end = last_line;
    if (pending) fail(pend_start, "file ends inside a bracketed value: truncated?");
    if (in_outputs) fail(end, "file ends inside an outputs list (missing ']'): truncated?");
    if (expect_snode_of) fail(end, "file ends before a fused node's sub-node: truncated?");
    if (block) block_close();
    if (!has_top)
        fail(end ? end : 1,
             "no scheduler nodes found: expected lines like "
             "'op0: SchedulerNode(ComputedBuffer)'");
    finish_node();
    std::string mbuf, muser;
    int64_t mline = 0;
    if (!live.finish(step - 1, &mbuf, &muser, &mline))
        fail(mline,
             mbuf + " is used by " + muser + ", which never appears in the dump: truncated?");
    frees();
    flush();
}

void Parser::chunk(sv data) {
    // lines.py: a NUL whose preceding bytes in this chunk decode (or stop at a cut
    // character) is reported first; then the first byte that is not UTF-8.
    size_t nul = data.find('\0');
    if (nul != sv::npos) {
        bool cutp = false;
        size_t ok = utf8_valid_prefix(data.substr(0, nul), &cutp);
        if (ok == nul || cutp)
            fail(next_line + count_lines(data.substr(0, nul)),
                 "NUL byte in a text dump: binary data?");
    }
    std::string joined;
    size_t bad;
    sv text = utf8_chunk(cut, data, joined, &bad);
    if (bad != sv::npos) {
        fail(
            next_line + count_lines(text.substr(0, bad)),
            "not UTF-8 text (byte " + hex_byte((uint8_t)text[bad]) + "): expected a text dump");
    }
    if (text.find('\0') != sv::npos) {
        size_t p = text.find('\0');
        fail(next_line + count_lines(text.substr(0, p)),
             "NUL byte in a text dump: binary data?");
    }
    if (text.find('\r') == sv::npos) {
        // lines straight from the chunk; only a line cut by its end is copied (buf)
        const char* base = text.data();
        size_t i = 0;
        if (!buf.empty()) {
            const void* nl = std::memchr(base, '\n', text.size());
            if (!nl) {
                buf.append(text);
                return;
            }
            size_t e = (size_t)((const char*)nl - base);
            buf.append(base, e);
            line(next_line, buf);
            ++next_line;
            i = e + 1;
        }
        while (true) {
            const void* nl = std::memchr(base + i, '\n', text.size() - i);
            if (!nl) break;
            size_t e = (size_t)((const char*)nl - base);
            line(next_line, sv(base + i, e - i));
            ++next_line;
            i = e + 1;
        }
        buf.assign(base + i, text.size() - i);
        return;
    }
    size_t start = buf.size();
    {
        // text.replace("\r\n", "\n") within this chunk's text only
        buf.reserve(buf.size() + text.size());
        size_t i = 0;
        while (i < text.size()) {
            size_t r = text.find("\r\n", i);
            if (r == sv::npos) {
                buf.append(text.substr(i));
                break;
            }
            buf.append(text.substr(i, r - i));
            buf.push_back('\n');
            i = r + 2;
        }
    }
    // every complete line
    size_t pos = 0;
    const char* base = buf.data();
    size_t scan = start;
    while (true) {
        const void* nl = std::memchr(base + scan, '\n', buf.size() - scan);
        if (!nl) break;
        size_t e = (size_t)((const char*)nl - base);
        line(next_line, sv(base + pos, e - pos));
        ++next_line;
        pos = scan = e + 1;
    }
    buf.erase(0, pos);
}

void Parser::end_of_input() {
    if (!cut.empty())
        fail(next_line,
             "not UTF-8 text (byte " + hex_byte((uint8_t)cut[0]) + "): expected a text dump");
    if (!buf.empty()) {
        line(next_line, buf);
        ++next_line;
        buf.clear();
    }
    finish();
}

}  // namespace tlv::ir
