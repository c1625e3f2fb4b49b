// The XLA buffer-assignment reader's state (xla_buffer_assignment.cpp explains the
// whole). Its parts: xla_live_range.cpp (pass 1: HloLiveRange), xla_values.cpp (pass 2:
// allocations and used values, and their rows), xla_peaks.cpp (the end: the note, the
// moment rule, the peaks).
#pragma once

#include "xla_shapes.hpp"

namespace tlv::xla {

// ---- the parser -------------------------------------------------------------------------

struct Alloc {
    int64_t index, size;
    uint32_t kind;          // into Parser::kinds
    bool has_param = false;
    int64_t parameter = 0;
    int64_t param_shape = -1, param_index = -1, output_shape = -1;  // misc pool ids
};

struct Kind {
    std::vector<std::string> parts;
    std::string joined;  // ", "
    std::string slash;   // "/" or "temp"
    bool maybe_live_out = false;
};

enum : uint8_t { kPhi = 1, kEmitted = 2, kHasRange = 4 };

struct PeakValue {
    std::string name;
    int64_t bytes;
};

struct Parser {
    Spill spill;  // first: every column below may hold its blocks
    std::vector<std::string> paths, names;  // names: Path(p).name
    size_t file = 0;
    Pool strs;    // instruction and value names
    Pool misc;    // "{index}" texts, shapes, kinds' texts
    // -- live ranges (pass 1)
    bool have_live = false;
    int64_t schedule_end = 0;
    Col<uint32_t> sequence;
    Narrow sequence_lines;
    Col<int32_t> step_of;  // by name id: its step, -1 none
    RowTable range_of;             // (name, index) -> range row
    Col<uint32_t> r_name, r_index;
    Narrow r_start, r_end, r_line;
    Col<uint8_t> r_taken;
    bool has_peak = false;
    int64_t peak_step = 0;
    const char* peak_form = nullptr;
    std::vector<PeakValue> peak_values;
    std::vector<std::string> stack_trace;
    std::optional<std::string> peak_unknown;
    // -- pass 2
    enum Sec { Start, Allocations, AfterTotal, Used, Live, Report } sec = Start;
    Col<Alloc> allocs;
    RowTable alloc_of;  // index -> slot
    std::vector<Kind> kinds;
    std::map<std::string, uint32_t> kind_ids;
    int64_t current_alloc = -1;
    // values, one row each
    RowTable value_of;  // (name, index) -> row
    RowTable row_of_id;
    Col<uint32_t> v_name, v_index, v_shape, v_alloc;
    Narrow v_id, v_color, v_offset, v_size, v_line;
    Col<int32_t> v_range;
    Col<uint8_t> v_flags;
    std::vector<std::optional<Shape>> shapes;  // parsed, by misc id
    // the used value being read
    bool in_entry = false;
    int64_t e_id = 0, e_line = 0;
    std::string e_name, e_index;
    std::vector<std::string> e_positions, e_uses;
    std::optional<std::string> e_instruction;
    int e_list = 0;  // 0 none, 1 positions, 2 uses
    Facts last;
    std::unordered_map<uint32_t, std::optional<i128>> ishape;  // instruction_shape_of bytes
    Arr<uint8_t> scheduled;
    std::optional<int64_t> total_bytes_used;
    std::vector<std::pair<std::string, int64_t>> report;
    std::optional<std::string> report_space;
    std::vector<std::string> unknown;
    bool seen_ba = false;
    // XLA's moment rule, summed per time: 64-bit sums, 128-bit once one would overflow
    Arr<int64_t> up, down;
    std::vector<i128> up_w, down_w;
    bool moment_wide = false;
    bool moment_unknown = false;
    int64_t number = 0;  // the last line read (for finish's error)
    // output
    EventBatch batch;
    std::vector<PyObject*> ready;  // exported batches (owned references)
    std::string note;

    Parser() {
        strs.attach(&spill);
        misc.attach(&spill);
        for (RowTable* t : {&range_of, &alloc_of, &value_of, &row_of_id}) t->sp = &spill;
        for (Narrow* c : {&sequence_lines, &r_start, &r_end, &r_line, &v_id, &v_color,
                          &v_offset, &v_size, &v_line})
            c->v.sp = &spill;
        for (Col<uint32_t>* c :
             {&sequence, &r_name, &r_index, &v_name, &v_index, &v_shape, &v_alloc})
            c->sp = &spill;
        step_of.sp = &spill;
        v_range.sp = &spill;
        r_taken.sp = v_flags.sp = &spill;
        allocs.sp = &spill;
        scheduled.sp = up.sp = down.sp = &spill;
        range_of.key_of = [this](uint32_t r) { return pair_key(r_name[r], r_index[r]); };
        alloc_of.key_of = [this](uint32_t r) { return (uint64_t)allocs[r].index; };
        value_of.key_of = [this](uint32_t r) { return pair_key(v_name[r], v_index[r]); };
        row_of_id.key_of = [this](uint32_t r) { return (uint64_t)v_id[r]; };
    }
    Parser(const Parser&) = delete;
    Parser& operator=(const Parser&) = delete;

    ParseError err(int64_t line, std::string msg) { return ParseError{line, std::move(msg)}; }

    uint32_t ticks = 0;
    void tick() {  // once a line or a row: the spill's budget checked now and then
        if ((++ticks & 1023) == 0) spill.trim();
    }

    // ---- pass 1: HloLiveRange -----------------------------------------------------
    enum LSec { LSearch, LHeader, LSeq, LRanges, LPeak, LStack, LAfter, LDone } lsec = LSearch;
    i128 cumulative = 0;
    int64_t l_number = 0;
    std::string live_path;

    // HloLiveRange \(max (\d+)\):\s*\Z
    bool live_header(sv t);

    bool live_line(int64_t number_, sv t);

    void check_complete(int64_t n);

    void seq_line(int64_t n, sv t);

    // \s+([^\s{}]+)(\{[\d,]*\})  -> name, index; returns position after, or npos
    static size_t name_index(sv t, size_t i, sv* name, sv* index);

    void range_line(int64_t n, sv t);

    void peak_line(int64_t n, sv t);

    void end_live();

    // ---- pass 2 ---------------------------------------------------------------------
    void keep_unknown(int64_t n, sv t);

    bool line(int64_t n, sv t);

    void top_level(int64_t n, sv t);

    void allocation_header(int64_t n, sv t);

    // <(\d+) ([^\s{}<>]+)(\{[\d,]*\})?( \(phi\))?(?: @(\d+))?>  at t[i]; end in *end
    struct Ref {
        int64_t id = 0, color = 0;
        sv name, index;
        bool phi = false;
    };
    static bool value_ref(sv t, size_t i, Ref* r, size_t* end);

    void used_header(int64_t n, sv t);

    void value_line(int64_t n, sv t);

    void used_line(int64_t n, sv t);

    // ---- emitting ---------------------------------------------------------------------
    int64_t value_row_of(sv name, sv index);

    const Shape& shape_of(uint32_t id);

    std::optional<i128> instruction_bytes(sv name);

    void end_entry();

    void keep_unknown_at(int64_t n, const std::string& t) { keep_unknown(n, t); }

    void flush_if_full();
    void flush();

    void scheduled_node(uint32_t nid, int32_t step, const Facts* f);

    void place(i128* dummy, int64_t start, int64_t end, const std::optional<i128>& ib);

    static void put_ib(Obj& o, const std::optional<i128>& ib);

    void value_events(uint32_t row, const Facts* f, bool entry);

    void buffer_key(uint32_t row);

    // the attrs object `o` is open in batch.attrs: finish it and the row
    void allocated(uint32_t row, bool has_step, int64_t step, Obj& o);

    void unallocated_events(uint32_t r);

    // ---- the end ----------------------------------------------------------------------
    void start_pass2();

    // The end, in steps: each call emits up to a few batches of what was left unmatched
    // (hand them over before the next: at 1 GB there are half a million such rows) and
    // returns true once the note is built.
    int fin_stage = 0;
    size_t fin_i = 0;
    std::vector<uint32_t> without;
    bool finish();

    void finish_start();

    std::string some(const std::vector<std::string>& names_);

    void build_note(const std::vector<uint32_t>& without);

    int64_t moment();

    // tlview's rule (xla_peaks.union_curve_columns) over the placed values: the first step
    // of the maximum, the maximum, and the bytes at XLA's stated step; sums in T.
    struct CurvePeak {
        bool any = false;
        size_t step = 0;
        i128 peak = 0, at_k = 0;
    };
    template <class T>
    CurvePeak union_peak(const Arr<uint32_t>& rows);

    CurvePeak union_curve_peak();

    void peak_warnings(Obj& o, std::vector<std::string>& out);
};

}  // namespace tlv::xla
