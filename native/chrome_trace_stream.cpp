// The profiler-trace reader's streaming state machine (mirrors
// chrome_trace._entries/_object/_events).
#include "chrome_trace.hpp"

namespace tlv::kineto {

void Parser::run() {
    for (;;) {
        w.compact();
        const std::string& b = w.buf;
        size_t p = w.pos;
        doc.data = b;
        doc.eof = w.eof;
        auto skip_ws = [&]() {
            while (p < b.size() &&
                   (b[p] == ' ' || b[p] == '\t' || b[p] == '\n' || b[p] == '\r'))
                ++p;
            return p < b.size();
        };
        switch (st) {
            case St::Start: {
                if (!skip_ws()) {
                    if (w.eof)
                        expect_fail(p, "a JSON object with traceEvents (a Chrome trace)");
                    return;
                }
                if (b[p] == '{') {
                    w.pos = p + 1;
                    st = St::ObjFirst;
                } else if (b[p] == '[') {
                    w.pos = p;
                    bare = true;
                    st = St::EvOpen;
                } else
                    expect_fail(p, "a JSON object with traceEvents (a Chrome trace)");
                break;
            }
            case St::ObjFirst: {
                if (!skip_ws()) {
                    if (w.eof) expect_fail(p, "a key string");
                    return;
                }
                if (b[p] == '}') {
                    w.pos = p + 1;
                    st = St::Done;
                } else {
                    w.pos = p;
                    st = St::ObjKey;
                }
                break;
            }
            case St::ObjKey: {
                skip_ws();
                size_t kend;
                if (!value_at(p, "a key string", &kend)) return;
                if (doc.nodes[0].t != JT::Str)
                    fail_at(p, "expected a key string, found " +
                                   std::string(b, p, std::min<size_t>(kend - p, 60)));
                std::string key(doc.str(doc.nodes[0], scratch));
                size_t q = kend;
                while (q < b.size() &&
                       (b[q] == ' ' || b[q] == '\t' || b[q] == '\n' || b[q] == '\r'))
                    ++q;
                if (q >= b.size()) {
                    if (w.eof) expect_fail(q, "':' after a key");
                    return;
                }
                if (b[q] != ':') expect_fail(q, "':' after a key");
                ++q;
                if (key == "traceEvents") {
                    w.pos = q;
                    st = St::EvOpen;
                    break;
                }
                while (q < b.size() &&
                       (b[q] == ' ' || b[q] == '\t' || b[q] == '\n' || b[q] == '\r'))
                    ++q;
                size_t vend;
                if (!value_at(q, "the value of '" + key + "'", &vend)) return;
                outs.push_back({0, key, std::string(b, q, vend - q), 0});
                w.pos = vend;
                st = St::ObjSep;
                break;
            }
            case St::ObjSep: {
                if (!skip_ws()) {
                    if (w.eof) expect_fail(p, "',' or '}' between top-level entries");
                    return;
                }
                if (b[p] == ',') {
                    w.pos = p + 1;
                    st = St::ObjKey;
                } else if (b[p] == '}') {
                    w.pos = p + 1;
                    st = St::Done;
                } else
                    expect_fail(p, "',' or '}' between top-level entries");
                break;
            }
            case St::EvOpen: {
                if (!skip_ws()) {
                    if (w.eof) expect_fail(p, "'[' opening traceEvents");
                    return;
                }
                if (b[p] != '[') expect_fail(p, "'[' opening traceEvents");
                w.pos = p + 1;
                st = St::EvFirst;
                break;
            }
            case St::EvFirst: {
                if (!skip_ws()) {
                    if (w.eof) expect_fail(p, "an event object");
                    return;
                }
                if (b[p] == ']') {
                    w.pos = p + 1;
                    st = bare ? St::Done : St::ObjSep;
                } else {
                    w.pos = p;
                    st = St::EvItem;
                }
                break;
            }
            case St::EvItem: {
                // the hot loop: events and separators, without leaving this case
                for (;;) {
                    skip_ws();
                    size_t vend;
                    if (!value_at(p, "an event object", &vend)) return;
                    if (doc.nodes[0].t != JT::Obj)
                        fail_at(p,
                                std::string("expected an event object in traceEvents, found ") +
                                    py_type_name(&doc.nodes[0]));
                    if (!started) {
                        started = true;
                        outs.push_back({1, {}, {}, 0});
                    }
                    try {
                        event();
                    } catch (const BadEvent& e) { fail_at(p, e.msg); }
                    p = vend;
                    w.pos = p;
                    if (!skip_ws()) {
                        st = St::EvSep;
                        if (w.eof)
                            expect_fail(p, "',' or ']' between events (truncated trace?)");
                        return;
                    }
                    if (b[p] == ',') {
                        ++p;
                        w.pos = p;
                        continue;
                    }
                    if (b[p] == ']') {
                        w.pos = p + 1;
                        st = bare ? St::Done : St::ObjSep;
                        break;
                    }
                    expect_fail(p, "',' or ']' between events (truncated trace?)");
                }
                break;
            }
            case St::EvSep: {
                if (!skip_ws()) {
                    if (w.eof) expect_fail(p, "',' or ']' between events (truncated trace?)");
                    return;
                }
                if (b[p] == ',') {
                    w.pos = p + 1;
                    st = St::EvItem;
                } else if (b[p] == ']') {
                    w.pos = p + 1;
                    st = bare ? St::Done : St::ObjSep;
                } else
                    expect_fail(p, "',' or ']' between events (truncated trace?)");
                break;
            }
            case St::Done: {
                if (!skip_ws()) return;
                fail_at(p, "expected the end of the trace after its closing brace");
            }
        }
    }
}

[[noreturn]] void Parser::expect_fail(size_t p, const std::string& what) {
    std::string found = "end of file";
    if (p < w.buf.size()) found = py_repr_char(w.buf, p);
    fail_at(p, "expected " + what + ", found " + found);
}

std::string Parser::py_repr_char(const std::string& b, size_t p) {
    auto c = (uint8_t)b[p];
    if (c >= 0x80) {  // the whole character, as Python prints a printable one
        size_t n = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
        return "'" + b.substr(p, n) + "'";
    }
    switch (c) {
        case '\n': return "'\\n'";
        case '\r': return "'\\r'";
        case '\t': return "'\\t'";
        case '\'': return "\"'\"";
        case '\\': return "'\\\\'";
        default: break;
    }
    if (c < 0x20 || c == 0x7f) return "'\\x" + hex_byte(c).substr(2) + "'";
    return std::string("'") + (char)c + "'";
}

bool Parser::value_at(size_t p, const std::string& what, size_t* end) {
    try {
        *end = doc.parse(p);
        return true;
    } catch (const NeedMore&) {
        if (w.buf.size() - p > kMaxValue)
            fail_at(p, "an entry larger than 256 MB: expected " + what);
        return false;
    } catch (const JsonError& e) {
        // json's RecursionError has no place: the Python parser names the value's line
        bool deep = e.msg == "nested too deeply";
        fail_at(deep ? p : e.pos, e.msg + ": expected " + what);
    }
}

}  // namespace tlv::kineto
