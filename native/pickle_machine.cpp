// The pickle machine of the snapshot reader (ingest/pickle_stream.py's PickleStream):
// the memo's tagged slots, the input, the opcode loop, and the checks of plain data.
#include "cuda_snapshot.hpp"

namespace tlv::snapshot {

[[noreturn]] void Parser::fail_at(int64_t at, const std::string& msg) {
    throw ParseError{0, "byte " + grouped(at) + ": " + msg};
}

std::string Parser::grouped(int64_t v) {  // f"{v:,}"
    std::string d = std::to_string(v < 0 ? -v : v), out;
    for (size_t k = 0; k < d.size(); ++k) {
        if (k && (d.size() - k) % 3 == 0) out.push_back(',');
        out.push_back(d[k]);
    }
    return v < 0 ? "-" + out : out;
}

uint64_t Parser::slot_of(const Val& v) {
    switch (v.t) {
        case T::Streamed: return 0;
        case T::Str: return reinterpret_cast<uint64_t>(v.s) | 1;
        case T::Frame: return ((uint64_t)v.i << 3) | 2;
        case T::Stack: return ((uint64_t)v.i << 3) | 3;
        default: break;
    }
    uint32_t k;
    if (!side_free.empty()) {
        k = side_free.back();
        side_free.pop_back();
        side[k] = v;
    } else {
        k = (uint32_t)side.size();
        side.push_back(v);
    }
    return ((uint64_t)k << 3) | 4;
}

Val Parser::val_of(uint64_t s) const {
    switch (s & 7) {
        case 0: {
            Val v;
            v.t = T::Streamed;
            return v;
        }
        case 1: return Val::str(T::Str, reinterpret_cast<const std::string*>(s & ~(uint64_t)7));
        case 2: return Val::id(T::Frame, (int64_t)(s >> 3));
        case 3: return Val::id(T::Stack, (int64_t)(s >> 3));
        default: return side[s >> 3];
    }
}

void Parser::release(uint64_t s) {
    if ((s & 7) == 4) {
        side[s >> 3] = Val();
        side_free.push_back((uint32_t)(s >> 3));
    }
}

void Parser::memo_put(uint64_t i, const Val& v) {
    if (i == memo.size())
        memo.push(slot_of(v));
    else if (i < memo.size()) {
        release(memo.get(i));
        memo.set(i, slot_of(v));
    } else
        memo_extra[i] = v;
}

Val Parser::memo_get(uint64_t i, int64_t at) {
    Val v;
    if (i < memo.size())
        v = val_of(memo.get(i));
    else {
        auto it = memo_extra.find(i);
        if (it == memo_extra.end())
            fail_at(at, "memo entry " + std::to_string(i) + " read before it was written");
        v = it->second;
    }
    if (v.t == T::Streamed)
        fail_at(at, "memo entry " + std::to_string(i) +
                        " refers back to an item already "
                        "handed over (a snapshot never shares its trace entries)");
    return v;
}

bool Parser::stream_path(const Path& p) const {
    if (items_to) return items_to->streams(p);
    if (p.n == 1) return is_text(p.k[0], k_segments) || is_text(p.k[0], k_annotations);
    return p.n == 2 && is_text(p.k[0], k_traces);
}

void Parser::new_path(const Val& obj) {
    if (metastack.empty()) {
        if (stack.empty()) {
            Path p;
            paths[obj.o.get()] = {p, obj.o};
        }
        return;
    }
    Mark& m = marks.back();
    if (!m.known || m.streamed || m.path.n >= 2) return;
    const Val& owner = metastack.back().back();
    Path p = m.path;
    if (owner.t == T::Dict) {
        if (stack.size() % 2 == 1 && stack.back().t == T::Str) {
            p.k[p.n++] = stack.back();
        } else if (stack.size() % 2 == 0 && !stack.empty() && stack.back().t == T::List &&
                   stack.back().o->items.empty() && paths.count(stack.back().o.get()) &&
                   !streamed_ids.count(stack.back().o.get())) {
            p = paths[stack.back().o.get()].first;
            if (p.n >= 2) return;
            p.k[p.n++] = Val::integer(0);
        } else {
            return;
        }
    } else if (owner.t == T::List) {
        p.k[p.n++] = Val::integer(m.handed + (int64_t)stack.size());
    } else {
        return;
    }
    paths[obj.o.get()] = {p, obj.o};
    if (obj.t == T::List && stream_path(p)) streamed_ids.insert(obj.o.get());
}

std::vector<Val> Parser::take_vector() {
    if (vector_pool.empty()) return {};
    std::vector<Val> v = std::move(vector_pool.back());
    vector_pool.pop_back();
    return v;
}

void Parser::give_vector(std::vector<Val>&& v) {
    if (vector_pool.size() < 64 && v.capacity() > 0 && v.capacity() <= 4096) {
        v.clear();
        vector_pool.push_back(std::move(v));
    }
}

void Parser::pop_mark() {
    marks.pop_back();
    give_vector(std::move(stack));
    stack = std::move(metastack.back());
    metastack.pop_back();
    streamed = !marks.empty() && marks.back().streamed;
}

void Parser::need(size_t n, int64_t at) {
    if (have(n)) return;
    if (eof)
        fail_at(at,
                "the file ends inside this opcode: truncated pickle, expected "
                "more data before STOP");
    throw Suspend{};
}

void Parser::need_len(size_t head, uint64_t n, int64_t at) {
    if (n > ((uint64_t)1 << 62)) {
        if (eof)
            fail_at(at,
                    "the file ends inside this opcode: truncated pickle, expected "
                    "more data before STOP");
        throw Suspend{};
    }
    need(head + (size_t)n, at);
}

Val Parser::text(size_t p, size_t n, int64_t at) {
    std::string_view s(buf.data() + p, n);
    if (!valid_utf8_surrogatepass(s)) fail_at(at, "a string that is not UTF-8");
    return Val::str(T::Str, strs.get(s));
}

bool Parser::valid_utf8_surrogatepass(std::string_view s) {
    bool cut;
    return utf8_valid_prefix(s, &cut, true) == s.size();
}

Val Parser::long_of(size_t p, size_t n) {
    // Python int.from_bytes(little, signed): an int64 when it fits, else normalized bytes
    std::string le(buf.data() + p, n);
    while (le.size() > 1) {  // drop redundant sign bytes
        uint8_t last = (uint8_t)le.back(), prev = (uint8_t)le[le.size() - 2];
        if ((last == 0x00 && !(prev & 0x80)) || (last == 0xFF && (prev & 0x80)))
            le.pop_back();
        else
            break;
    }
    if (le.empty()) return Val::integer(0);
    if (le.size() <= 8) {
        uint64_t v = 0;
        for (size_t k = le.size(); k-- > 0;) v = (v << 8) | (uint8_t)le[k];
        if ((uint8_t)le.back() & 0x80)
            for (size_t k = le.size(); k < 8; ++k) v |= (uint64_t)0xFF << (8 * k);
        return Val::integer((int64_t)v);
    }
    return Val::str(T::Big, strs.get(le));
}

void Parser::run() {
    if (done) return;
    if (!started) {
        if (!have(1)) {
            if (eof) fail_at(0, "the file ends before STOP: truncated pickle");
            return;
        }
        if (u8(0) != 0x80)
            fail_at(0,
                    "not a pickle of protocol 2 or later (no PROTO opcode); expected "
                    "a file written by torch (pickle protocol 2 to 5)");
        started = true;
    }
    try {
        while (!done) step();
    } catch (Suspend&) {}
    compact_input();
}

void Parser::compact_input() {
    if (pos > (1u << 20) || pos == buf.size()) {
        buf.erase(0, pos);
        base += (int64_t)pos;
        pos = 0;
    }
}

void Parser::flush_items(int64_t at) {  // the previous item of a streamed list is complete
    hand_over_items(at);
    pending_from = (int64_t)memo.size();
}

void Parser::hand_over_items(int64_t at) {
    Mark& m = marks.back();
    checked.clear();
    for (auto& item : stack) {
        Path p = m.path;
        p.k[p.n++] = Val::integer(m.handed);
        handle(p, item, at);
        ++m.handed;
    }
    stack.clear();
    if (pending_from >= 0) compact_memo((size_t)pending_from, at);
}

bool Parser::no_push(uint8_t op) {
    switch (op) {
        case 0x28:
        case 0x94:
        case 0x71:
        case 0x72:
        case 0x75:
        case 0x65:
        case 0x61:
        case 0x73:
        case 0x95:
        case 0x80:
        case 0x2E:
        case 0x90:
        case 0x30:
        case 0x31:
        case 0x85:
        case 0x86:
        case 0x87:
        case 0x74:
        case 0x6C:
        case 0x64:
        case 0x91: return true;
        default: return false;
    }
}

void Parser::step() {
    if (!have(1)) {
        if (eof) fail_at(base + (int64_t)pos, "the file ends before STOP: truncated pickle");
        throw Suspend{};
    }
    const uint8_t op = u8(pos);
    const int64_t at = base + (int64_t)pos;
    if (streamed && !stack.empty() && !no_push(op)) flush_items(at);
    if (op == 0x7D && streamed && stack.empty() && !items_to && fast_entry()) return;
    const size_t a = pos + 1;  // the argument
    switch (op) {
        case 0x68: {  // BINGET
            need(2, at);
            stack.push_back(memo_get(u8(a), at));
            pos = a + 1;
            return;
        }
        case 0x94:  // MEMOIZE
            if (stack.empty()) fail_at(at, "MEMOIZE with an empty stack");
            memo_put(memo.size(), stack.back());
            pos = a;
            return;
        case 0x8C: {  // SHORT_BINUNICODE
            need(2, at);
            size_t n = u8(a);
            need(2 + n, at);
            stack.push_back(text(a + 1, n, at));
            pos = a + 1 + n;
            return;
        }
        case 0x6A: {  // LONG_BINGET
            need(5, at);
            stack.push_back(memo_get(u32(a), at));
            pos = a + 4;
            return;
        }
        case 0x4B:  // BININT1
            need(2, at);
            stack.push_back(Val::integer(u8(a)));
            pos = a + 1;
            return;
        case 0x8A: {  // LONG1
            need(2, at);
            size_t n = u8(a);
            need(2 + n, at);
            stack.push_back(long_of(a + 1, n));
            pos = a + 1 + n;
            return;
        }
        case 0x4A:  // BININT
            need(5, at);
            stack.push_back(Val::integer(i32(a)));
            pos = a + 4;
            return;
        case 0x4D:  // BININT2
            need(3, at);
            stack.push_back(Val::integer((uint16_t)(u8(a) | (u8(a + 1) << 8))));
            pos = a + 2;
            return;
        case 0x7D:
        case 0x5D: {  // EMPTY_DICT, EMPTY_LIST
            Val v = Val::obj(op == 0x7D ? T::Dict : T::List,
                             std::make_shared<Obj>(op == 0x7D ? T::Dict : T::List));
            new_path(v);
            stack.push_back(std::move(v));
            pos = a;
            return;
        }
        case 0x28: {  // MARK
            Mark m;
            if (!stack.empty() && (stack.back().t == T::Dict || stack.back().t == T::List)) {
                auto it = paths.find(stack.back().o.get());
                if (it != paths.end()) {
                    m.known = true;
                    m.path = it->second.first;
                }
                m.streamed =
                    stack.back().t == T::List && streamed_ids.count(stack.back().o.get());
            }
            metastack.push_back(std::move(stack));
            stack = take_vector();
            marks.push_back(m);
            streamed = m.streamed;
            if (streamed) pending_from = (int64_t)memo.size();
            pos = a;
            return;
        }
        case 0x75:
        case 0x65: {  // SETITEMS, APPENDS
            if (metastack.empty()) fail_at(at, "SETITEMS/APPENDS without a MARK");
            pos = a;
            if (marks.back().streamed) {
                hand_over_items(at);
                pending_from = -1;
            }
            std::vector<Val> items = std::move(stack);
            pop_mark();
            struct Back {  // the items' vector goes back to the pool, its capacity kept
                Parser& P;
                std::vector<Val>& v;
                ~Back() { P.give_vector(std::move(v)); }
            } back{*this, items};
            if (stack.empty()) fail_at(at, "SETITEMS/APPENDS with nothing to add to");
            Val& target = stack.back();
            if (op == 0x75) {
                if (target.t != T::Dict)
                    fail_at(at, std::string("SETITEMS on a ") + type_name(target) +
                                    ", expected a dict");
                if (items.size() % 2) fail_at(at, "SETITEMS with an odd number of values");
                if (!frame_of_obj.empty()) frame_of_obj.erase(target.o.get());
                Obj& d = *target.o;
                d.items.reserve(d.items.size() + items.size() / 2);
                d.vals.reserve(d.vals.size() + items.size() / 2);
                for (size_t k = 0; k < items.size(); k += 2) {
                    hashable(items[k], at);
                    dict_set(d, std::move(items[k]), std::move(items[k + 1]));
                }
            } else if (target.t == T::List) {
                auto& dst = target.o->items;
                dst.reserve(dst.size() + items.size());
                for (auto& v : items) dst.push_back(std::move(v));
            } else {
                fail_at(at,
                        std::string("APPENDS to a ") + type_name(target) + ", expected a list");
            }
            return;
        }
        case 0x85:
        case 0x86:
        case 0x87: {  // TUPLE1..3
            size_t n = op - 0x84;
            if (stack.size() < n) fail_at(at, "TUPLE with too few values");
            auto o = std::make_shared<Obj>(T::Tuple);
            o->items.assign(stack.end() - (long)n, stack.end());
            stack.resize(stack.size() - n);
            stack.push_back(Val::obj(T::Tuple, o));
            pos = a;
            return;
        }
        case 0x89:
            stack.push_back(Val::boolean(false));
            pos = a;
            return;  // NEWFALSE
        case 0x88:
            stack.push_back(Val::boolean(true));
            pos = a;
            return;   // NEWTRUE
        case 0x4E:
            stack.push_back(Val::none());
            pos = a;
            return;          // NONE
        case 0x47: {  // BINFLOAT (big-endian)
            need(9, at);
            uint64_t bits = 0;
            for (int k = 0; k < 8; ++k) bits = (bits << 8) | u8(a + (size_t)k);
            double d;
            std::memcpy(&d, &bits, 8);
            stack.push_back(Val::flt(d));
            pos = a + 8;
            return;
        }
        case 0x61: {  // APPEND
            if (stack.size() < 2 || stack[stack.size() - 2].t != T::List)
                fail_at(at, "APPEND without a list below its value");
            pos = a;
            Val v = std::move(stack.back());
            stack.pop_back();
            const Obj* list = stack.back().o.get();
            if (streamed_ids.count(list)) {  // a streamed list of one item
                Path p = paths[list].first;
                p.k[p.n++] = Val::integer(0);
                checked.clear();
                handle(p, v, at);
                compact_memo(pending_from >= 0 ? (size_t)pending_from : memo.size(), at);
                pending_from = -1;
            } else {
                stack.back().o->items.push_back(std::move(v));
            }
            return;
        }
        case 0x73: {  // SETITEM
            if (stack.size() < 3 || stack[stack.size() - 3].t != T::Dict)
                fail_at(at, "SETITEM without a dict below its key and value");
            Val v = std::move(stack.back());
            stack.pop_back();
            Val k = std::move(stack.back());
            stack.pop_back();
            hashable(k, at);
            if (!frame_of_obj.empty()) frame_of_obj.erase(stack.back().o.get());
            dict_set(*stack.back().o, k, v);
            pos = a;
            return;
        }
        case 0x58: {  // BINUNICODE
            need(5, at);
            uint64_t n = u32(a);
            need_len(5, n, at);
            stack.push_back(text(a + 4, n, at));
            pos = a + 4 + n;
            return;
        }
        case 0x8D: {  // BINUNICODE8
            need(9, at);
            uint64_t n = u64(a);
            need_len(9, n, at);
            stack.push_back(text(a + 8, (size_t)n, at));
            pos = a + 8 + (size_t)n;
            return;
        }
        case 0x95:  // FRAME
            need(9, at);
            pos = a + 8;
            return;
        case 0x80: {  // PROTO
            need(2, at);
            uint8_t proto = u8(a);
            pos = a + 1;
            if (proto < 2 || proto > 5)
                fail_at(at, "pickle protocol " + std::to_string(proto) + ": expected 2 to 5");
            return;
        }
        case 0x71:  // BINPUT
            if (stack.empty()) fail_at(at, "BINPUT with an empty stack");
            need(2, at);
            memo_put(u8(a), stack.back());
            pos = a + 1;
            return;
        case 0x72:  // LONG_BINPUT
            if (stack.empty()) fail_at(at, "LONG_BINPUT with an empty stack");
            need(5, at);
            memo_put(u32(a), stack.back());
            pos = a + 4;
            return;
        case 0x29:  // EMPTY_TUPLE
            stack.push_back(Val::obj(T::Tuple, std::make_shared<Obj>(T::Tuple)));
            pos = a;
            return;
        case 0x74: {  // TUPLE
            if (metastack.empty()) fail_at(at, "TUPLE without a MARK");
            auto o = std::make_shared<Obj>(T::Tuple);
            o->items = std::move(stack);
            pop_mark();
            stack.push_back(Val::obj(T::Tuple, o));
            pos = a;
            return;
        }
        case 0x6C:
        case 0x64: {  // LIST, DICT
            if (metastack.empty()) fail_at(at, "LIST/DICT without a MARK");
            std::vector<Val> items = std::move(stack);
            pop_mark();
            Val v;
            if (op == 0x6C) {
                auto o = std::make_shared<Obj>(T::List);
                o->items = std::move(items);
                v = Val::obj(T::List, o);
            } else {
                if (items.size() % 2) fail_at(at, "DICT with an odd number of values");
                auto o = std::make_shared<Obj>(T::Dict);
                for (size_t k = 0; k < items.size(); k += 2) {
                    hashable(items[k], at);
                    dict_set(*o, items[k], items[k + 1]);
                }
                v = Val::obj(T::Dict, o);
            }
            new_path(v);
            stack.push_back(std::move(v));
            pos = a;
            return;
        }
        case 0x8F:  // EMPTY_SET
            stack.push_back(Val::obj(T::Set, std::make_shared<Obj>(T::Set)));
            pos = a;
            return;
        case 0x90: {  // ADDITEMS
            if (metastack.empty()) fail_at(at, "ADDITEMS without a MARK");
            std::vector<Val> items = std::move(stack);
            pop_mark();
            if (stack.empty() || stack.back().t != T::Set)
                fail_at(at, "ADDITEMS without a set");
            for (auto& v : items) {
                hashable(v, at);
                set_add(*stack.back().o, v);
            }
            pos = a;
            return;
        }
        case 0x91: {  // FROZENSET
            if (metastack.empty()) fail_at(at, "FROZENSET without a MARK");
            std::vector<Val> items = std::move(stack);
            pop_mark();
            auto o = std::make_shared<Obj>(T::FSet);
            for (auto& v : items) {
                hashable(v, at);
                set_add(*o, v);
            }
            stack.push_back(Val::obj(T::FSet, o));
            pos = a;
            return;
        }
        case 0x30:  // POP
            if (!stack.empty())
                stack.pop_back();
            else if (!metastack.empty())
                pop_mark();
            else
                fail_at(at, "POP with an empty stack");
            pos = a;
            return;
        case 0x31:  // POP_MARK
            if (metastack.empty()) fail_at(at, "POP_MARK without a MARK");
            pop_mark();
            pos = a;
            return;
        case 0x32:  // DUP
            if (stack.empty()) fail_at(at, "DUP with an empty stack");
            stack.push_back(stack.back());
            pos = a;
            return;
        case 0x43:
        case 0x42:
        case 0x8E:
        case 0x55:
        case 0x54:
        case 0x96: {
            size_t width = (op == 0x43 || op == 0x55) ? 1 : (op == 0x42 || op == 0x54) ? 4 : 8;
            need(1 + width, at);
            uint64_t n = width == 1 ? u8(a) : width == 4 ? u32(a) : u64(a);
            need_len(1 + width, n, at);
            std::string_view data(buf.data() + a + width, (size_t)n);
            if (op == 0x55 || op == 0x54) {
                for (unsigned char c : data)
                    if (c >= 0x80) fail_at(at, "a Python 2 string that is not ASCII");
                stack.push_back(Val::str(T::Str, strs.get(data)));
            } else {
                stack.push_back(Val::str(op == 0x96 ? T::BArr : T::Bytes, strs.get(data)));
            }
            pos = a + width + (size_t)n;
            return;
        }
        case 0x8B: {  // LONG4
            need(5, at);
            int32_t n = i32(a);
            if (n < 0) fail_at(at, "LONG4 with a negative length");
            need(5 + (size_t)n, at);
            stack.push_back(long_of(a + 4, (size_t)n));
            pos = a + 4 + (size_t)n;
            return;
        }
        case 0x2E:  // STOP
            if (!metastack.empty())
                fail_at(at, "STOP inside an unfinished MARK: truncated or corrupt");
            if (stack.size() != 1)
                fail_at(at, "STOP with " + std::to_string(stack.size()) +
                                " values on the stack, expected 1");
            pos = a;
            done = true;
            {
                Path p;
                p.n = -1;  // TOP
                checked.clear();
                handle(p, stack[0], at);
            }
            return;
        default: break;
    }
    const char* code = code_opcode(op);
    if (code) {
        std::string target;
        if (op == 0x63) {  // GLOBAL module\nname\n within the next 256 bytes
            if (!eof && !have(1 + 256)) throw Suspend{};
            std::string_view w(buf.data() + a, std::min<size_t>(256, buf.size() - a));
            size_t n1 = w.find('\n');
            size_t n2 = n1 == std::string_view::npos ? n1 : w.find('\n', n1 + 1);
            if (n2 != std::string_view::npos) {
                std::string_view mod = w.substr(0, n1), name = w.substr(n1 + 1, n2 - n1 - 1);
                bool c1, c2;
                if (utf8_valid_prefix(mod, &c1) == mod.size() &&
                    utf8_valid_prefix(name, &c2) == name.size())
                    target = " " + std::string(mod) + "." + std::string(name);
                else
                    target = " (a name that is not UTF-8)";
            }
        } else if (op == 0x93 && stack.size() >= 2 && stack[stack.size() - 2].t == T::Str &&
                   stack.back().t == T::Str) {
            target = " " + clean_text(*stack[stack.size() - 2].s) + "." +
                     clean_text(*stack.back().s);
        }
        fail_at(at, std::string("refused pickle opcode ") + code + target +
                        ": it imports or calls code, and " + holds +
                        " holds only "
                        "dicts, lists, strings and numbers (nothing was run)");
    }
    const char* textop = text_opcode(op);
    if (textop)
        fail_at(at, std::string("refused pickle opcode ") + textop +
                        ": a text opcode of protocol 0, which torch never writes");
    fail_at(at, "unknown pickle opcode " + hex_byte(op) + ": corrupt file or not a pickle");
}

bool Parser::unhashable(const Val& k) {
    return k.t == T::List || k.t == T::Dict || k.t == T::Set || k.t == T::BArr;
}

void Parser::hashable(const Val& k, int64_t at) {
    if (k.t != T::Tuple && k.t != T::FSet) {
        if (unhashable(k))
            fail_at(at, std::string("a ") + type_name(k) + " used as a dict key or set member");
        return;
    }
    key_walk.clear();
    key_walk.emplace_back(k.o.get(), 0);
    size_t n = 1;
    while (!key_walk.empty()) {
        auto& top = key_walk.back();
        if (top.second == top.first->items.size()) {
            key_walk.pop_back();
            continue;
        }
        const Val& x = top.first->items[top.second++];
        ++n;
        if (unhashable(x))
            fail_at(at, std::string("a ") + type_name(x) + " used as a dict key or set member");
        if (n > kMaxKeyValues)
            fail_at(at, "a dict key or set member of more than " +
                            grouped((int64_t)kMaxKeyValues) + " values: " + kPlain +
                            " as keys)");
        if (x.t == T::Tuple || x.t == T::FSet) {
            if (key_walk.size() == (size_t)kMaxNesting)
                fail_at(at, "a dict key or set member nested deeper than " +
                                std::to_string(kMaxNesting) + " levels: " + kPlain +
                                " as keys)");
            key_walk.emplace_back(x.o.get(), 0);
        }
    }
}

static uint64_t members(const Obj* o) {  // pickle_stream._size
    return o->kind == T::Dict ? 2 * (uint64_t)o->items.size() : (uint64_t)o->items.size();
}

uint64_t Parser::check_plain(const Val& v, int64_t at) {
    if (!v.container()) return 1;
    auto known = checked.find(v.o.get());
    if (known != checked.end()) return known->second.values;
    walk.clear();
    on_path.clear();
    walk.push_back({v.o.get(), 0, 0, 1 + members(v.o.get())});
    on_path.insert(v.o.get());
    uint64_t values = 0;
    while (!walk.empty()) {
        const Obj* o = walk.back().o;
        bool dict = o->kind == T::Dict;
        size_t n = dict ? 2 * o->items.size() : o->items.size();
        const Val* down = nullptr;
        while (walk.back().next < n) {
            size_t k = walk.back().next++;
            const Val& x = dict ? (k % 2 ? o->vals[k / 2] : o->items[k / 2]) : o->items[k];
            if (!x.container()) continue;
            auto it = checked.find(x.o.get());
            if (it != checked.end()) {
                if ((int)walk.size() + it->second.height > kMaxNesting) fail_at(at, too_deep());
                walk.back().height = std::max(walk.back().height, it->second.height);
                walk.back().values = add_values(walk.back().values, it->second.values - 1);
                continue;
            }
            if (on_path.count(x.o.get()))
                fail_at(at, std::string("a ") + type_name(x) +
                                " that contains itself: " + kPlain + ", no cycles)");
            if ((int)walk.size() == kMaxNesting) fail_at(at, too_deep());
            down = &x;
            break;
        }
        if (down) {
            on_path.insert(down->o.get());
            walk.push_back({down->o.get(), 0, 0, 1 + members(down->o.get())});
            continue;
        }
        int height = walk.back().height + 1;
        values = walk.back().values;
        walk.pop_back();
        on_path.erase(o);
        checked[o] = {height, values};
        if (!walk.empty()) {
            walk.back().height = std::max(walk.back().height, height);
            walk.back().values = add_values(walk.back().values, values - 1);
        }
    }
    return values;
}

void Parser::spend(uint64_t values, int64_t at) {
    values_handed = add_values(values_handed, values);
    uint64_t limit = kValuesFloor + kValuesPerByte * (uint64_t)at;
    if (values_handed <= limit) return;
    fail_at(at, "memo reads repeat containers into more than " + grouped((int64_t)limit) +
                    " values by this byte (" + grouped((int64_t)kValuesFloor) + " plus " +
                    std::to_string(kValuesPerByte) + " per byte read): " + kPlain +
                    ", each written out where it is used)");
}

}  // namespace tlv::snapshot
