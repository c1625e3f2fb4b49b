// The EventSink (native/torch_fx.cpp) as the other compiled readers write to it: event
// records kept as their classes' arguments, written as rows once a reader is done.
#pragma once

#include <Python.h>

#include <cstddef>
#include <vector>

namespace tlv {

enum class SinkKind { node, alloc, freed, aliased };  // NodeScheduled .. BufferAliased

// One record: its class's fields after nothing left out, timeline first (owned refs).
struct SinkRow {
    SinkKind kind;
    size_t n;
    PyObject* a[16];
};

bool is_event_sink(PyObject* o);

// The rows written to the sink as rows of timeline `key` (their a[0] is ignored); -1 with
// an exception set where a value does not fit (never for values a reader makes).
int sink_write(PyObject* sink, PyObject* key, const std::vector<SinkRow>& rows);

}  // namespace tlv
