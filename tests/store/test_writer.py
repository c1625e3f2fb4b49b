"""One table per event kind (schemas/00_tables.sql) behind the `events` view, and the
writer that routes each kind's rows to its table (store/writer.py)."""

from __future__ import annotations

import attrs
import pyarrow as pa
import pytest
from tlview.ingest.records import (
    EVENT_KINDS,
    BufferAllocated,
    BufferFreed,
    EventColumns,
    NodeScheduled,
    Source,
    Timeline,
)
from tlview.store import open_database, write_records
from tlview.store import writer as w
from tlview.store.convert import EVENT_COLUMNS, KIND_SCHEMAS


def test_each_kind_table_has_its_records_fields_and_the_view_every_column(db_path):
    with open_database(db_path) as db:
        for cls, kind in EVENT_KINDS.items():
            cols = [r[0] for r in db.sql(
                "SELECT column_name FROM duckdb_columns() WHERE table_name = ? "
                "ORDER BY column_index", [f"events_{kind}"]).fetchall()]
            fields = {f.name for f in attrs.fields(cls)} - {"timeline"}
            assert cols[:3] == ["source_id", "timeline_id", "seq"], kind
            assert set(cols[3:]) == fields, kind
            assert cols == KIND_SCHEMAS[kind].names, kind
        view = [r[0] for r in db.sql("SELECT column_name FROM duckdb_columns() "
                                     "WHERE table_name = 'events' ORDER BY column_index"
                                     ).fetchall()]
        assert tuple(view) == EVENT_COLUMNS


def _events(n_nodes: int) -> list[object]:
    """A schedule of ``n_nodes`` nodes, each allocating one buffer that the next frees:
    three kinds interleaved row by row, as the IR and XLA ingesters emit them."""
    out: list[object] = [Source("mix.txt", 1, "0" * 64, "inductor_ir"),
                         Timeline("t", "t", "inductor_ir")]
    for i in range(n_nodes):
        out.append(NodeScheduled("t", i, f"op{i}"))
        out.append(BufferAllocated("t", i, f"buf{i}", 4 * (i % 7 + 1), node=f"op{i}"))
        if i:
            out.append(BufferFreed("t", i, f"buf{i - 1}"))
    return out


def test_interleaved_kinds_go_in_as_bounded_statements_in_order(db_path, monkeypatch):
    """Three kinds interleaved row by row, HOLD_ROWS lowered to 1,000: they go in by about
    one statement per 1,000 rows, the rows held never pass HOLD_ROWS per kind (plus one
    batch), and every row lands in its table in emission order."""
    monkeypatch.setattr(w, "HOLD_ROWS", 1_000)
    statements: list[tuple[str, int]] = []
    held_max: list[int] = [0]
    real_stream = w._KindStreams.stream

    def stream(self, kind):
        n = 0
        for b in real_stream(self, kind):
            held_max[0] = max(held_max[0], max(self._rows.values(), default=0))
            n += len(b)
            yield b
        statements.append((kind, n))

    monkeypatch.setattr(w._KindStreams, "stream", stream)
    n = 5_000
    with open_database(db_path) as db:
        write_records(db, iter(_events(n)), batch_size=300)
        got = {k: db.sql(f"SELECT count(*), min(seq), max(seq) FROM events_{k}").fetchone()
               for k in ("node_scheduled", "buffer_allocated", "buffer_freed")}
        order = db.sql("SELECT seq, kind, step FROM events ORDER BY seq").fetchall()
        stored = [r[0] for r in db.sql("SELECT seq FROM events_buffer_freed").fetchall()]
        peak = db.sql("SELECT peak_bytes FROM peak_memory").fetchone()[0]
    assert got["node_scheduled"][0] == n and got["buffer_allocated"][0] == n
    assert got["buffer_freed"][0] == n - 1
    assert [r[0] for r in order] == list(range(3 * n - 1))
    assert all(a < b for a, b in zip(stored, stored[1:]))  # each table in emission order
    assert order[:4] == [(0, "node_scheduled", 0), (1, "buffer_allocated", 0),
                         (2, "node_scheduled", 1), (3, "buffer_allocated", 1)]
    # buffer i lives at steps i and i+1: the peak is the largest pair of neighbours
    sizes = [4 * (i % 7 + 1) for i in range(n)]
    assert peak == max(a + b for a, b in zip(sizes, sizes[1:]))
    assert sum(k for _, k in statements) == 3 * n - 1
    # a statement ends when another kind holds HOLD_ROWS rows (then it goes in whole)
    assert len(statements) <= (3 * n) // 1_000 + 3, statements
    assert held_max[0] <= 1_000 + 300, held_max  # a batch may top a kind over the limit


def _split(cols: dict, tids=(5,), seq: int = 0) -> dict:
    """The compiled parsers' columns split by the writer: {kind: column lists}."""
    n = len(cols["kind"])
    rec = EventColumns(tuple(f"t{i}" for i in range(len(tids))), n, cols)
    return {k: b.to_pydict() for k, b in w._columns_by_kind(rec, 3, list(tids), seq)}


def test_a_value_in_a_column_its_kind_has_not_is_refused():
    """Columns whose node_scheduled row has a `bytes` (no column of that kind) would lose
    it: refused (the ingest fails and writes nothing); so is a kind tlview has not."""
    cols = dict(kind=pa.array(["node_scheduled"]), step=pa.array([0], pa.int64()),
                node=pa.array(["op"]), bytes=pa.array([8], pa.int64()))
    with pytest.raises(ValueError, match="node_scheduled events with a value in column 'bytes'"):
        _split(cols)
    cols["bytes"] = pa.nulls(1, pa.int64())  # a column of NULLs is no value
    assert _split(cols)["node_scheduled"]["node"] == ["op"]
    cols["kind"] = pa.array(["node_sheduled"])
    with pytest.raises(ValueError, match="event kind 'node_sheduled': not one of tlview's"):
        _split(cols)


def test_columns_of_mixed_kinds_are_split_with_each_kinds_values():
    """Rows of two kinds in one batch: each kind's rows, in its columns, with the writer's
    ids and seq; `bytes` of the buffer is kept, the same `bytes` on a node's row refused."""
    def cols(node_bytes):
        return dict(kind=pa.array(["node_scheduled", "buffer_allocated", "node_scheduled"]),
                    step=pa.array([0, 0, 1], pa.int64()), node=pa.array(["a", "a", "b"]),
                    buffer=pa.array([None, "buf0", None]),
                    bytes=pa.array([node_bytes, 64, None], pa.int64()),
                    _tl=pa.array([1, 0, 1], pa.int32()))

    got = _split(cols(None), tids=(7, 9), seq=10)
    assert list(got) == ["node_scheduled", "buffer_allocated"]  # in order of first row
    assert got["node_scheduled"]["seq"] == [10, 12] and got["node_scheduled"]["node"] == ["a", "b"]
    assert got["node_scheduled"]["timeline_id"] == [9, 9]
    assert got["buffer_allocated"]["bytes"] == [64] and got["buffer_allocated"]["seq"] == [11]
    assert got["buffer_allocated"]["timeline_id"] == [7]
    assert got["buffer_allocated"]["source_id"] == [3]
    assert list(got["buffer_allocated"]) == KIND_SCHEMAS["buffer_allocated"].names
    with pytest.raises(ValueError, match="node_scheduled events with a value in column 'bytes'"):
        _split(cols(8))


def test_records_go_in_their_kinds_columns_and_widen_to_the_view():
    """attrs records become rows of their own table (``convert.kind_row``); a shard set's
    wide batches are those rows with NULL elsewhere, equal to the 40-column row."""
    from tlview.store.convert import event_tuple

    recs = _events(3)
    rows = w.SourceRows(iter(recs), 4, 1)
    got = list(rows.kind_batches())
    assert [k for k, _ in got] == ["node_scheduled", "buffer_allocated", "buffer_freed"]
    for kind, b in got:
        assert b.schema == KIND_SCHEMAS[kind]
    assert dict(rows.counts) == {"node_scheduled": 3, "buffer_allocated": 3, "buffer_freed": 2}
    wide = {}
    for b in w.SourceRows(iter(recs), 4, 1).batches():
        for r in b.to_pylist():
            wide[r["seq"]] = tuple(r.values())
    events = [r for r in recs if type(r) in EVENT_KINDS]
    for seq, rec in enumerate(events):
        want = (4, 1, seq, *(list(v) if isinstance(v, tuple) else v for v in event_tuple(rec)))
        assert wide[seq] == want, seq


def test_rows_handed_to_duckdb_are_let_go(db_path):
    """DuckDB (2.0) holds on to the batches of a registered Arrow table after unregister,
    inside an open transaction: the store hands tables over as draining streams, so
    their memory comes back once the INSERT has read them."""
    from tlview.store.db import insert_arrow

    n = 1 << 20
    with open_database(db_path) as db:
        db.con.execute("CREATE TABLE t (a BIGINT, b BIGINT)")
        db.con.execute("BEGIN TRANSACTION")
        base = pa.total_allocated_bytes()
        for i in range(3):
            table = pa.table({"a": pa.array(range(n), pa.int64()),
                              "b": pa.array(range(n), pa.int64())})
            table = pa.Table.from_batches(table.to_batches(max_chunksize=16_384))
            insert_arrow(db.con, "INSERT INTO t SELECT * FROM _rows", "_rows", table)
            del table
            assert pa.total_allocated_bytes() - base < n, i  # all but scraps returned
        db.con.execute("COMMIT")
        assert db.sql("SELECT count(*), sum(a) FROM t").fetchone() == (3 * n, 3 * n * (n - 1) // 2)


def test_a_shard_set_has_each_kind_as_a_view_in_its_tables_columns(tmp_path):
    """The views read events_<kind> (not the events union: a dozen branches in every plan);
    over a shard set those are views of its one Parquet events table, in the same columns
    and with the same rows as the database's tables."""
    from tlview.cli import main
    from tlview.store.shards import open_shards

    from tests.conftest import FIXTURES, SEED_002, ingest_into

    db = tmp_path / "k.duckdb"
    snap = FIXTURES / "snapshot" / "frag_oom.pickle"
    trace = next((FIXTURES / "profile" / "single").glob("*.json*"))
    ingest_into(db, SEED_002, snap, trace)
    out = tmp_path / "set"
    assert main(["export", "--parquet", str(out), "--db", str(db)]) == 0
    with open_database(db, read_only=True) as d, open_shards(out) as s:
        for kind, schema in KIND_SCHEMAS.items():
            q = f"SELECT * FROM events_{kind} ORDER BY source_id, seq"
            assert [c[0] for c in s.sql(q).description] == schema.names, kind
            assert s.sql(q).fetchall() == d.sql(q).fetchall(), kind
        assert d.sql("SELECT count(DISTINCT kind) FROM events").fetchone()[0] >= 6


def test_a_python_parser_runs_in_the_writers_thread_a_compiled_twin_beside_it(
        db_path, monkeypatch):
    """The writer parses in a thread of its own only where a compiled twin reads the file
    (FormatSpec.compiled): it releases the GIL, so the parse overlaps the database's work.
    A Python parser runs in the writer's thread, reading what the thread would (columns
    accepted while it reads, and only then)."""
    import threading

    from tlview.ingest import records_for
    from tlview.ingest.records import columns_wanted

    from tests.conftest import FIXTURES

    started: list[str] = []
    start = threading.Thread.start

    def spy(self):
        started.append(self.name)
        return start(self)

    monkeypatch.setattr(threading.Thread, "start", spy)
    with open_database(db_path) as db:
        log = FIXTURES / "seeds" / "004_11560de70615f418.txt"  # a torch log: Python only
        assert write_records(db, records_for(log)).counts["node_scheduled"] > 0
        assert "tlview-parse" not in started
        assert not columns_wanted()  # the flag is not left on in this thread
        trace = FIXTURES / "profile" / "coll" / "rank0" / "rank0.pt.trace.json.gz"
        assert sum(write_records(db, records_for(trace)).counts.values()) > 0
        assert started.count("tlview-parse") == 1


def test_records_closed_in_their_parse_thread_stop_there_without_an_error():
    """An ingest that ends early leaves its records to the garbage collector (the error
    SourceRows keeps holds them in a cycle), which may close them in the parse thread
    itself, inside the parser. That closing raises nothing (it printed "cannot join
    current thread" and "generator already executing" under an interrupted ingest's one
    line), and the parse stops there: the thread ends, its records closed once, by it."""
    import threading

    from tlview.ingest.records import Source, Timeline

    chain: list = []
    raised: list[BaseException] = []
    closed: list[str] = []
    idle = threading.Event()

    def parse():
        yield Source(path="x", size=0, sha256="0" * 64, format="kineto")
        for n in range(100_000):
            if n == 600:  # the caller takes no more: a collection in this thread
                idle.wait(5)
                try:
                    chain[0].close()
                except BaseException as e:
                    raised.append(e)
            yield Timeline(key=f"t{n}", name="t", format="kineto")

    class Twin:  # a compiled twin's records (ingest.source.Records)
        compiled_twin = True

        def __init__(self):
            self.it = parse()

        def __iter__(self):
            return self

        def __next__(self):
            return next(self.it)

        def close(self):
            closed.append(threading.current_thread().name)
            self.it.close()

    chain.append(w._parsing(Twin()))
    assert isinstance(next(chain[0]), Source)
    assert next(chain[0]).key == "t0"
    parse_thread = next(t for t in threading.enumerate() if t.name == "tlview-parse")
    idle.set()
    parse_thread.join(10)
    assert not parse_thread.is_alive()
    assert raised == [] and closed == ["tlview-parse"]


def test_an_ingest_that_fails_stops_its_parse_thread_at_once(db_path):
    """A compiled twin's parse runs in a thread; where the write fails (here an event of an
    undeclared timeline, found while DuckDB pulls the rows) the writer closes the records
    before it raises, so the thread ends now, not whenever a garbage collection finds
    them (it sat blocked on its full queue with the file open). The collector is off."""
    import gc
    import threading

    class Twin:  # a compiled twin's records (ingest.source.Records)
        compiled_twin = True

        def __init__(self, records):
            self.it = iter(records)

        def __iter__(self):
            return self

        def __next__(self):
            return next(self.it)

    records = _events(5_000)
    records.insert(300, BufferFreed("undeclared", 1, "buf0"))
    gc.disable()
    try:
        with open_database(db_path) as db, pytest.raises(ValueError, match="undeclared"):
            write_records(db, Twin(records))
        parse = [t for t in threading.enumerate() if t.name == "tlview-parse"]
        for t in parse:
            t.join(2)
        assert not any(t.is_alive() for t in parse)
    finally:
        gc.enable()
