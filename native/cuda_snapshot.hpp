// The allocator snapshot reader's state (cuda_snapshot.cpp explains the whole): the
// pickle machine's memo, stack and marks, and the snapshot's interned frames, stacks
// and devices. Its parts: pickle_machine.cpp (the opcodes), snapshot_fast_entry.cpp
// (a trace entry in one go), snapshot_records.cpp (frames, stacks, entries, segments).
#pragma once

#include "snapshot_device.hpp"

namespace tlv::snapshot {

// ---- the memo: one tagged 8-byte slot per memoized object, old slots packed ----------------
//
// Slots are written at the end and rewritten only while their item is being handed over;
// whole chunks of 4096 slots behind that point are frozen: each slot becomes a byte (or
// two) indexing the chunk's palette of distinct values (an item's dict, its frames list and
// its text repeat the same few values), so a trace of millions of entries keeps about
// 1.1 bytes per memoized object instead of 8.
struct Memo {
    static constexpr size_t kChunk = 4096;
    struct Frozen {
        std::vector<uint64_t> palette;
        std::vector<uint8_t> i8;
        std::vector<uint16_t> i16;
        std::vector<uint64_t> raw;
        uint64_t get(size_t k) const {
            if (!raw.empty()) return raw[k];
            return palette[i8.empty() ? i16[k] : i8[k]];
        }
    };
    std::vector<Frozen> frozen;
    std::vector<uint64_t> tail;  // the slots from frozen.size() * kChunk on
    size_t size() const { return frozen.size() * kChunk + tail.size(); }
    size_t tail_start() const { return frozen.size() * kChunk; }
    uint64_t get(size_t i) const {
        if (i >= tail_start()) return tail[i - tail_start()];
        return frozen[i / kChunk].get(i % kChunk);
    }
    void push(uint64_t v) { tail.push_back(v); }
    void set(size_t i, uint64_t v) {
        if (i >= tail_start()) {
            tail[i - tail_start()] = v;
            return;
        }
        Frozen& f = frozen[i / kChunk];  // rare: a BINPUT over an old index
        if (f.raw.empty()) {  // unpacked first (get() reads raw once it is not empty)
            std::vector<uint64_t> raw(kChunk);
            for (size_t k = 0; k < kChunk; ++k) raw[k] = f.get(k);
            f.raw = std::move(raw);
            f.i8.clear();
            f.i8.shrink_to_fit();
            f.i16.clear();
            f.i16.shrink_to_fit();
            f.palette.clear();
            f.palette.shrink_to_fit();
        }
        f.raw[i % kChunk] = v;
    }
    // Pack every whole chunk that lies before `keep` (slots from `keep` on may change).
    void freeze_before(size_t keep) {
        while (tail.size() >= 2 * kChunk && tail_start() + kChunk <= keep) {
            Frozen f;
            std::unordered_map<uint64_t, uint16_t> at;
            bool wide = false, raw = false;
            for (size_t k = 0; k < kChunk; ++k) {
                auto it = at.find(tail[k]);
                if (it == at.end()) {
                    if (f.palette.size() == 65536) {
                        raw = true;
                        break;
                    }
                    at.emplace(tail[k], (uint16_t)f.palette.size());
                    f.palette.push_back(tail[k]);
                }
            }
            if (raw) {
                f.palette.clear();
                f.raw.assign(tail.begin(), tail.begin() + kChunk);
            } else {
                wide = f.palette.size() > 256;
                if (wide)
                    f.i16.resize(kChunk);
                else
                    f.i8.resize(kChunk);
                for (size_t k = 0; k < kChunk; ++k) {
                    uint16_t x = at[tail[k]];
                    if (wide)
                        f.i16[k] = x;
                    else
                        f.i8[k] = (uint8_t)x;
                }
                f.palette.shrink_to_fit();
            }
            frozen.push_back(std::move(f));
            tail.erase(tail.begin(), tail.begin() + kChunk);
        }
    }
};

// ---- the parser ------------------------------------------------------------------------

struct Path {  // a path from the top object: a list's (at most two keys, text or index),
    int n = 0;    // or an item's (its list's and its index)
    Val k[3];
};

struct Mark {
    bool known = false;
    Path path;
    bool streamed = false;
    int64_t handed = 0;
};

enum class Head { Segments, Traces, Annotations, Other };

// Another format read by this machine (flight_recorder_pickle.cpp): which lists stream,
// and where their items and the top object go instead of the snapshot's handling.
struct Items {
    virtual ~Items() = default;
    virtual bool streams(const Path& p) const = 0;
    // An item of a streamed list (p: its path), or the top object (p.n == -1), checked.
    virtual void item(const Path& p, const Val& value, int64_t at) = 0;
};

struct Parser {
    std::string path;
    Items* items_to = nullptr;  // null: the snapshot's own handling
    const char* holds = "a memory snapshot";  // what the file should be (refusals' words)
    // input
    std::string buf;
    size_t pos = 0;
    int64_t base = 0;  // file offset of buf[0]
    bool eof = false, started = false, done = false;
    // the machine
    Pool strs;
    std::vector<Val> stack;
    std::vector<std::vector<Val>> metastack;
    std::vector<Mark> marks;
    bool streamed = false;
    int64_t pending_from = -1;
    Memo memo;                        // tagged slots, see slot_of
    std::unordered_map<uint64_t, Val> memo_extra;
    std::vector<Val> side;            // values a slot cannot hold itself
    std::vector<uint32_t> side_free;
    std::unordered_map<const Obj*, std::pair<Path, ObjP>> paths;
    std::unordered_set<const Obj*> streamed_ids;
    // the snapshot
    bool first_item = true;
    Val top;
    bool have_top = false;
    std::unordered_map<std::string, int64_t> frames;  // canonical key -> id
    // A frame dict object already interned (kept alive, so its address is never reused;
    // forgotten if it is changed afterwards).
    std::unordered_map<const Obj*, std::pair<int64_t, ObjP>> frame_of_obj;
    std::unordered_map<std::string, int64_t> stacks;  // ids as bytes -> id
    std::vector<std::unique_ptr<Device>> devices;     // first-use order
    std::unordered_map<std::string, Device*> device_at;
    std::unique_ptr<EventBatch> batch = std::make_unique<EventBatch>();
    std::string batch_device;
    // outputs, in order
    struct Out {
        int kind;  // 0 batch, 1 device, 2 frame, 3 stack, 4 segment, 5 annotation
        std::unique_ptr<EventBatch> batch;
        std::string key;
        Val value;
        int64_t id = 0;
        std::vector<int64_t> ids;
    };
    std::vector<Out> outs;
    // interned keys
    const std::string *k_action, *k_addr, *k_size, *k_stream, *k_time_us, *k_frames,
        *k_filename, *k_line, *k_name, *k_address, *k_total_size, *k_device, *k_blocks,
        *k_requested_size, *k_state, *k_history, *k_real_size, *k_segments, *k_traces,
        *k_annotations, *k_settings;
    const std::string *a_alloc, *a_free_requested, *a_free_completed, *a_segment_alloc,
        *a_segment_map, *a_segment_free, *a_segment_unmap;

    explicit Parser(std::string p) : path(std::move(p)) {
        k_action = strs.get("action");
        k_addr = strs.get("addr");
        k_size = strs.get("size");
        k_stream = strs.get("stream");
        k_time_us = strs.get("time_us");
        k_frames = strs.get("frames");
        k_filename = strs.get("filename");
        k_line = strs.get("line");
        k_name = strs.get("name");
        k_address = strs.get("address");
        k_total_size = strs.get("total_size");
        k_device = strs.get("device");
        k_blocks = strs.get("blocks");
        k_requested_size = strs.get("requested_size");
        k_state = strs.get("state");
        k_history = strs.get("history");
        k_real_size = strs.get("real_size");
        k_segments = strs.get("segments");
        k_traces = strs.get("device_traces");
        k_annotations = strs.get("external_annotations");
        k_settings = strs.get("allocator_settings");
        a_alloc = strs.get("alloc");
        a_free_requested = strs.get("free_requested");
        a_free_completed = strs.get("free_completed");
        a_segment_alloc = strs.get("segment_alloc");
        a_segment_map = strs.get("segment_map");
        a_segment_free = strs.get("segment_free");
        a_segment_unmap = strs.get("segment_unmap");
    }

    [[noreturn]] void fail(const std::string& msg) { throw ParseError{0, msg}; }
    [[noreturn]] void fail_at(int64_t at, const std::string& msg);
    static std::string grouped(int64_t v);

    // -- memo slots: low 3 bits the kind, the rest its payload -------------------------
    // 0 handed over, 1 interned text (pointer), 2 frame id, 3 stack id, 4 side index
    uint64_t slot_of(const Val& v);
    Val val_of(uint64_t s) const;
    void release(uint64_t s);
    void memo_put(uint64_t i, const Val& v);
    Val memo_get(uint64_t i, int64_t at);

    // -- paths ----------------------------------------------------------------------------
    static bool is_text(const Val& v, const std::string* s) {
        return v.t == T::Str && v.s == s;
    }
    bool stream_path(const Path& p) const;
    void new_path(const Val& obj);
    std::vector<std::vector<Val>> vector_pool;  // emptied item vectors, capacity kept
    std::vector<Val> take_vector();
    void give_vector(std::vector<Val>&& v);
    void pop_mark();

    // -- input ------------------------------------------------------------------------------
    bool have(size_t n) const { return buf.size() - pos >= n; }
    uint8_t u8(size_t p) const { return (uint8_t)buf[p]; }
    uint32_t u32(size_t p) const {
        uint32_t v;
        std::memcpy(&v, buf.data() + p, 4);
        return v;
    }
    int32_t i32(size_t p) const {
        int32_t v;
        std::memcpy(&v, buf.data() + p, 4);
        return v;
    }
    uint64_t u64(size_t p) const {
        uint64_t v;
        std::memcpy(&v, buf.data() + p, 8);
        return v;
    }

    // Suspend (more data comes) or, at the end of the file, report the truncation.
    struct Suspend {};
    void need(size_t n, int64_t at);

    // `head` bytes of opcode and length, then `n` of data (which may claim any size).
    void need_len(size_t head, uint64_t n, int64_t at);

    Val text(size_t p, size_t n, int64_t at);
    static bool valid_utf8_surrogatepass(std::string_view s);
    Val long_of(size_t p, size_t n);

    // -- the opcode loop (pickle_stream.PickleStream._run) ---------------------------------
    void run();
    // feed(chunk): the opcodes the chunk completes (bytes after the top object ignored)
    void feed(std::string_view chunk) {
        if (!done) buf.append(chunk.data(), chunk.size());
        run();
    }
    // finish(): the end of the file
    void end() {
        eof = true;
        run();
    }

    void compact_input();

    void flush_items(int64_t at);
    // The items on the stack handed to handle() as the streamed list's next items, the
    // memo they used compacted.
    void hand_over_items(int64_t at);

    static bool no_push(uint8_t op);

    void step();

    // -- the fast path: one trace entry as torch's pickler writes it -------------------------
    //
    // EMPTY_DICT [MEMOIZE] MARK (key value)* SETITEMS, the keys text (memoized or new), the
    // values scalars, text, or the frames list: EMPTY_LIST [MEMOIZE], then MARK and memo
    // reads of frames already interned then APPENDS, or one such read then APPEND, or
    // nothing. Read in one go from the buffer with no object made: the entry's row, and
    // the memo slots the generic machine would hold once the item is handed over and
    // compacted (the dict: handed over; the list: its stack; text: itself). Anything else
    // (another shape, a memo read of a container, a frame seen for the first time, bytes
    // not yet read, odd text or numbers) leaves the state untouched and returns false: the
    // generic machine above runs the same opcodes one by one. The item is handed over
    // where the generic machine would hand it: the next opcode starts the next item
    // (EMPTY_DICT) or ends the batch (APPENDS).
    static constexpr size_t kFastKeys = 32, kFastFrames = 512, kFastMemo = 64;
    Val fast_keys[kFastKeys], fast_vals[kFastKeys];
    int64_t fast_frames[kFastFrames];
    uint64_t fast_memo[kFastMemo];
    int64_t fast_dev_index = 0;  // the device of the last fast entry (an int index)
    Device* fast_dev = nullptr;

    // A memo read: text, a frame or a stack (as slot_of holds them), else no.
    bool fast_get(uint64_t i, size_t memo0, size_t nm, uint64_t* slot) const;
    // LONG1's little-endian bytes as an int64, when they fit (as long_of reads them).
    static bool fast_long(const uint8_t* d, size_t n, int64_t* out);

    // Only scalars and ids go in fast_keys / fast_vals: their object pointer stays empty,
    // so a value is written as its tag and payload.
    static void put(Val& v, T t, int64_t i) {
        v.t = t;
        v.i = i;
    }
    static void put_str(Val& v, const std::string* s) {
        v.t = T::Str;
        v.s = s;
    }
    static void put_slot(Val& v, uint64_t slot);

    bool fast_entry();

    static const char* code_opcode(uint8_t op);
    static const char* text_opcode(uint8_t op);

    // pickle_stream.PickleStream._hashable: no list, dict, set or bytearray inside; at
    // most kMaxNesting deep and kMaxKeyValues values (hash_of and py_equal read it whole).
    static bool unhashable(const Val& k);
    std::vector<std::pair<const Obj*, size_t>> key_walk;
    void hashable(const Val& k, int64_t at);

    // pickle_stream.PickleStream._check_plain: containers at most kMaxNesting deep, none
    // inside itself; returns the values v holds as its readers see them (itself, and each
    // shared container once per place). Depth first without recursion; `checked` (cleared
    // for each hand-over) holds the containers already checked, their height and count.
    struct Checked {
        int height;
        uint64_t values;
    };
    std::unordered_map<const Obj*, Checked> checked;
    struct Walk {
        const Obj* o;
        size_t next;
        int height;
        uint64_t values;
    };
    std::vector<Walk> walk;
    std::unordered_set<const Obj*> on_path;
    uint64_t check_plain(const Val& v, int64_t at);
    // pickle_stream.PickleStream._spend: `values` more handed over at `at`; past
    // kValuesFloor + kValuesPerByte * at the file is refused (a memo-read bomb).
    uint64_t values_handed = 0;
    void spend(uint64_t values, int64_t at);

    // -- after an item: the memo keeps stand-ins (Interner.compact) -----------------------
    static bool is_frame_dict(const Val& v, const Parser& P);
    void compact_memo(size_t start, int64_t at);

    // -- interning (cuda_snapshot.Interner) ---------------------------------------------------
    int64_t frame_id(const Val& f);
    int64_t frame_id_of(const Val& f);
    // None for no frames (0), else the stack id.
    int64_t stack_id(const Val& frames_v);
    // The stack of these frame ids (at least one): its id, interned on first sight.
    int64_t stack_of_ids(const int64_t* ids, size_t n);
    std::vector<int64_t> stack_ids_buf;
    std::string stack_key;

    // -- items (cuda_snapshot._Parser._consume)
    // ------------------------------------------------
    static Head head_of(const Path& p, const Parser& P);

    void handle(const Path& p, const Val& value, int64_t at);

    Device& device(const Val& index);

    void flush_batch();

    void declare(Device& d);

    static bool int64_of(const Val* v, int64_t* out);
    static bool time_of(const Val* v, int64_t* out);

    std::string keys_of(const Obj& d) { return keys_of(d.items.data(), d.items.size()); }
    std::string keys_of(const Val* keys, size_t n);

    // cuda_snapshot._Device.entry: one trace entry, one row.
    void entry(Device& d, const Val& e);
    // A dict's keys and values (Python's dict: unique keys, insertion order), wherever they
    // lie: an Obj's vectors, or the fast path's arrays (fast_entry).
    struct View {
        const Val* keys;
        const Val* vals;
        size_t n;
        const Val* get(const std::string* key) const {
            for (size_t j = 0; j < n; ++j)
                if (keys[j].t == T::Str && keys[j].s == key) return &vals[j];
            return nullptr;
        }
    };
    void entry(Device& d, const View& o);
    std::string attrs_buf;
    // The last attrs' keys and values, when all are text keys and scalar values (see
    // entry): scalars are equal when their payload bits are (text is interned).
    struct Sig {
        const std::string* key;
        T t;
        int64_t bits;
    };
    std::vector<Sig> attrs_sig;
    bool attrs_sig_ok = false;
    std::vector<std::string> akeys_buf;
    std::vector<const Val*> avals_buf;
    static bool scalar(const Val& v);
    static bool same_scalar(const Val& v, const Sig& sig);

    // cuda_snapshot._Parser.segment: validated here (the same messages), its blocks fed to
    // the device's replay; the plain value goes to Python with stand-ins for its frames.
    void segment(const Val& s);

    void annotation(const Val& a);

    // _Parser._check_top and the items left in the top object (lists of one, or lists
    // whose path could not be told), as _consume handles them.
    void finish_top();
};

// A value as Python holds it (frames and stacks as the given stand-in classes); null with
// the Python error set, an IngestError naming `path` for a value nested too deep.
PyObject* val_to_py(const Val& v, PyObject* path, PyObject* frame_cls, PyObject* stack_cls,
                    int depth = 0);

// ---- the pickle readers' Python objects (SnapshotParser, FlightRecorderParser) ----------

// The parser, the path, and the classes frames and stacks become in Python values.
struct PyPickle : PyParserOf<Parser> {
    PyObject* frame_cls;
    PyObject* stack_cls;
};

inline PyObject* to_py(PyPickle* self, const Val& v) {
    return val_to_py(v, self->path, self->frame_cls, self->stack_cls);
}

// An interned frame or stack output (Out kind 2 or 3): ("frame", id, value) or
// ("stack", id, ids); null with the Python error set.
PyObject* interned_py(PyPickle* self, const Parser::Out& o);

// init(path, Frame, InternedStack): the references kept, a fresh parser; -1 on error.
int init_pickle(PyPickle* self, PyObject* args);

// dealloc's common part: the parser and the references released.
void clear_pickle(PyPickle* self);

}  // namespace tlv::snapshot
