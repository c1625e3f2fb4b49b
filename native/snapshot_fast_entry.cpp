// The snapshot reader's fast path: one trace entry as torch's pickler writes it, read
// in one go with no object made (cuda_snapshot.hpp says when it declines).
#include "cuda_snapshot.hpp"

namespace tlv::snapshot {

bool Parser::fast_get(uint64_t i, size_t memo0, size_t nm, uint64_t* slot) const {
    uint64_t sv;
    if (i < memo0)
        sv = memo.get((size_t)i);
    else if (i - memo0 < nm)
        sv = fast_memo[i - memo0];
    else
        return false;
    uint64_t kind = sv & 7;
    if (kind < 1 || kind > 3) return false;
    if (i >= memo0 && kind != 1) return false;  // this entry's own list
    *slot = sv;
    return true;
}

bool Parser::fast_long(const uint8_t* d, size_t n, int64_t* out) {
    while (n > 1) {
        uint8_t last = d[n - 1], prev = d[n - 2];
        if ((last == 0x00 && !(prev & 0x80)) || (last == 0xFF && (prev & 0x80)))
            --n;
        else
            break;
    }
    if (n == 0) {
        *out = 0;
        return true;
    }
    if (n > 8) return false;
    uint64_t v = 0;
    for (size_t k = n; k-- > 0;) v = (v << 8) | d[k];
    if (d[n - 1] & 0x80)
        for (size_t k = n; k < 8; ++k) v |= (uint64_t)0xFF << (8 * k);
    *out = (int64_t)v;
    return true;
}

void Parser::put_slot(Val& v, uint64_t slot) {  // a text, frame or stack slot (slot_of)
    switch (slot & 7) {
        case 1: put_str(v, reinterpret_cast<const std::string*>(slot & ~(uint64_t)7)); return;
        case 2: put(v, T::Frame, (int64_t)(slot >> 3)); return;
        default: put(v, T::Stack, (int64_t)(slot >> 3)); return;
    }
}

bool Parser::fast_entry() {
    Mark& m = marks.back();
    if (m.path.n != 2 || !is_text(m.path.k[0], k_traces)) return false;
    const auto* B = reinterpret_cast<const uint8_t*>(buf.data());
    const size_t end = buf.size();
    const size_t memo0 = memo.size();
    size_t p = pos + 1, nm = 0, n = 0, nf = 0;
    int list_slot = -1;   // the frames list's memo slot, in fast_memo
    int frames_at = -1;   // the frames list's value, in fast_vals
    auto memoize = [&](uint64_t slot) {  // MEMOIZE after a value, if there
        if (p < end && B[p] == 0x94) {
            if (nm == kFastMemo) return false;
            fast_memo[nm++] = slot;
            ++p;
        }
        return true;
    };
    auto read_u32 = [&](size_t at) {
        uint32_t v;
        std::memcpy(&v, B + at, 4);
        return v;
    };
    // a text, memoized or new (and then perhaps memoized)
    auto text_at = [&](Val& out) {
        if (p >= end) return false;
        uint8_t op = B[p];
        uint64_t slot;
        if (op == 0x68 || op == 0x6A) {
            size_t w = op == 0x68 ? 1 : 4;
            if (p + 1 + w > end) return false;
            uint64_t i = w == 1 ? B[p + 1] : read_u32(p + 1);
            if (!fast_get(i, memo0, nm, &slot) || (slot & 7) != 1) return false;
            put_slot(out, slot);
            p += 1 + w;
            return true;
        }
        size_t len, head;
        if (op == 0x8C) {
            if (p + 2 > end) return false;
            len = B[p + 1];
            head = 2;
        } else if (op == 0x58) {
            if (p + 5 > end) return false;
            len = read_u32(p + 1);
            head = 5;
        } else {
            return false;
        }
        if (p + head + len > end) return false;
        std::string_view sv(reinterpret_cast<const char*>(B + p + head), len);
        if (!valid_utf8_surrogatepass(sv)) return false;
        const std::string* str = strs.get(sv);
        put_str(out, str);
        p += head + len;
        return memoize(reinterpret_cast<uint64_t>(str) | 1);
    };
    if (!memoize(0)) return false;  // the dict: handed over once done
    if (p >= end || B[p] != 0x28) return false;  // MARK
    ++p;
    for (;;) {
        if (p >= end) return false;
        if (B[p] == 0x75) {
            ++p;
            break;
        }  // SETITEMS
        if (n == kFastKeys) return false;
        Val& k = fast_keys[n];
        Val& v = fast_vals[n];
        if (!text_at(k)) return false;
        for (size_t j = 0; j < n; ++j)
            if (fast_keys[j].s == k.s) return false;  // a key again
        if (p >= end) return false;
        uint8_t op = B[p];
        switch (op) {
            case 0x68:
            case 0x6A: {
                size_t w = op == 0x68 ? 1 : 4;
                if (p + 1 + w > end) return false;
                uint64_t i = w == 1 ? B[p + 1] : read_u32(p + 1), slot;
                if (!fast_get(i, memo0, nm, &slot)) return false;
                put_slot(v, slot);
                p += 1 + w;
                break;
            }
            case 0x8C:
            case 0x58:
                if (!text_at(v)) return false;
                break;
            case 0x4B:
                if (p + 2 > end) return false;
                put(v, T::Int, B[p + 1]);
                p += 2;
                break;
            case 0x4D:
                if (p + 3 > end) return false;
                put(v, T::Int, (uint16_t)(B[p + 1] | (B[p + 2] << 8)));
                p += 3;
                break;
            case 0x4A: {
                if (p + 5 > end) return false;
                int32_t x;
                std::memcpy(&x, B + p + 1, 4);
                put(v, T::Int, x);
                p += 5;
                break;
            }
            case 0x8A: {
                if (p + 2 > end || p + 2 + B[p + 1] > end) return false;
                int64_t x;
                if (!fast_long(B + p + 2, B[p + 1], &x)) return false;
                put(v, T::Int, x);
                p += 2 + B[p + 1];
                break;
            }
            case 0x4E:
                put(v, T::None, 0);
                ++p;
                break;
            case 0x88:
            case 0x89:
                put(v, T::Bool, op == 0x88);
                ++p;
                break;
            case 0x47: {
                if (p + 9 > end) return false;
                uint64_t bits = 0;
                for (int q = 1; q <= 8; ++q) bits = (bits << 8) | B[p + (size_t)q];
                double d;
                std::memcpy(&d, &bits, 8);
                v.t = T::Float;
                v.f = d;
                p += 9;
                break;
            }
            case 0x5D: {  // the frames list
                if (k.s != k_frames) return false;
                ++p;
                if (p < end && B[p] == 0x94) {
                    if (nm == kFastMemo) return false;
                    list_slot = (int)nm;
                    fast_memo[nm++] = 3;  // its stack, set below
                    ++p;
                }
                auto frame = [&](size_t at, size_t* next) {  // a memo read of a frame
                    if (at >= end) return false;
                    size_t w = B[at] == 0x68 ? 1 : B[at] == 0x6A ? 4 : 0;
                    if (!w || at + 1 + w > end) return false;
                    uint64_t i = w == 1 ? B[at + 1] : read_u32(at + 1), slot;
                    if (!fast_get(i, memo0, nm, &slot) || (slot & 7) != 2) return false;
                    if (nf == kFastFrames) return false;
                    fast_frames[nf++] = (int64_t)(slot >> 3);
                    *next = at + 1 + w;
                    return true;
                };
                if (p < end && B[p] == 0x28) {  // MARK frames APPENDS
                    ++p;
                    while (p < end && B[p] != 0x65)
                        if (!frame(p, &p)) return false;
                    if (p >= end) return false;
                    ++p;
                    if (p < end && (B[p] == 0x28 || B[p] == 0x61)) return false;  // more
                } else {
                    size_t next;
                    if (frame(p, &next) && next < end && B[next] == 0x61)
                        p = next + 1;
                    else
                        nf = 0;  // empty: what follows is the next key
                }
                frames_at = (int)n;
                break;
            }
            default: return false;
        }
        ++n;
    }
    // handed over where the generic machine would: the next item or the batch's end
    if (p >= end || (B[p] != 0x7D && B[p] != 0x65)) return false;
    View o{fast_keys, fast_vals, n};
    if (o.get(k_filename) && o.get(k_line) && o.get(k_name)) return false;  // a frame
    // check_plain's count of this dict: itself, its keys and values, a new frames list's
    // frames (each a stand-in)
    spend(1 + 2 * (uint64_t)n + (frames_at >= 0 ? (uint64_t)nf : 0), base + (int64_t)p);
    // The generic machine's handle(): the device, declared, then the entry.
    first_item = false;
    const Val& index = m.path.k[1];
    Device* dp;
    if (fast_dev && index.t == T::Int && index.i == fast_dev_index)
        dp = fast_dev;
    else
        dp = &device(index);
    Device& d = *dp;
    declare(d);
    int64_t sid = 0;
    if (frames_at >= 0) {
        if (nf) sid = stack_of_ids(fast_frames, nf);
        put(fast_vals[frames_at], T::Stack, sid);
    }
    pos = p;
    for (size_t j = 0; j < nm; ++j)
        memo.push((int)j == list_slot ? (((uint64_t)sid << 3) | 3) : fast_memo[j]);
    entry(d, o);
    if (index.t == T::Int) {
        fast_dev = dp;
        fast_dev_index = index.i;
    }
    ++m.handed;
    // compact_memo(pending_from): this entry's slots are already what it leaves
    if (pending_from >= 0) memo.freeze_before((size_t)pending_from);
    pending_from = (int64_t)memo.size();
    return true;
}

const char* Parser::code_opcode(uint8_t op) {
    switch (op) {
        case 0x63: return "GLOBAL";
        case 0x93: return "STACK_GLOBAL";
        case 0x52: return "REDUCE";
        case 0x62: return "BUILD";
        case 0x69: return "INST";
        case 0x6F: return "OBJ";
        case 0x81: return "NEWOBJ";
        case 0x92: return "NEWOBJ_EX";
        case 0x82: return "EXT1";
        case 0x83: return "EXT2";
        case 0x84: return "EXT4";
        case 0x50: return "PERSID";
        case 0x51: return "BINPERSID";
        case 0x97: return "NEXT_BUFFER";
        case 0x98: return "READONLY_BUFFER";
        default: return nullptr;
    }
}

const char* Parser::text_opcode(uint8_t op) {
    switch (op) {
        case 0x49: return "INT";
        case 0x4C: return "LONG";
        case 0x46: return "FLOAT";
        case 0x56: return "UNICODE";
        case 0x53: return "STRING";
        case 0x67: return "GET";
        case 0x70: return "PUT";
        default: return nullptr;
    }
}

}  // namespace tlv::snapshot
