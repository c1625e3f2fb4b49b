"""One table per event kind (schemas/00_tables.sql) behind the `events` view, and the
writer that routes each kind's rows to its table (store/writer.py)."""

from __future__ import annotations

import attrs
import pyarrow as pa
import pytest
from tlview.store import open_database, write_records
from tlview.store import writer as w
from tlview.store.convert import EVENT_COLUMNS, EVENT_SCHEMA, KIND_SCHEMAS
from tlview.store.records import (
    EVENT_KINDS,
    BufferAllocated,
    BufferFreed,
    NodeScheduled,
    Source,
    Timeline,
)


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


def test_a_value_in_a_column_its_kind_has_not_is_refused(db_path):
    """A batch whose node_scheduled row has a `bytes` (no column of that kind) would lose
    it: the ingest fails and writes nothing."""
    cols = {f.name: pa.nulls(1, f.type) for f in EVENT_SCHEMA}
    cols.update(source_id=pa.array([0], pa.int32()), timeline_id=pa.array([0], pa.int32()),
                seq=pa.array([0], pa.int64()), kind=pa.array(["node_scheduled"]),
                step=pa.array([0], pa.int64()), node=pa.array(["op"]),
                bytes=pa.array([8], pa.int64()))
    batch = pa.RecordBatch.from_arrays(list(cols.values()), schema=EVENT_SCHEMA)
    with pytest.raises(ValueError, match="node_scheduled events with a value in column 'bytes'"):
        list(w._by_kind([batch]))
    cols["kind"] = pa.array(["node_sheduled"])
    batch = pa.RecordBatch.from_arrays(list(cols.values()), schema=EVENT_SCHEMA)
    with pytest.raises(ValueError, match="event kind 'node_sheduled': not one of tlview's"):
        list(w._by_kind([batch]))


def test_a_batch_of_mixed_kinds_is_split_with_each_kinds_values():
    """Rows of two kinds in one batch: each kind's rows, in its columns; `bytes` of the
    buffer is kept, and the same `bytes` on the node's row is refused."""
    def batch(node_bytes):
        cols = {f.name: pa.nulls(3, f.type) for f in EVENT_SCHEMA}
        cols.update(source_id=pa.array([0, 0, 0], pa.int32()),
                    timeline_id=pa.array([0, 0, 0], pa.int32()),
                    seq=pa.array([0, 1, 2], pa.int64()),
                    kind=pa.array(["node_scheduled", "buffer_allocated", "node_scheduled"]),
                    step=pa.array([0, 0, 1], pa.int64()), node=pa.array(["a", "a", "b"]),
                    buffer=pa.array([None, "buf0", None]),
                    bytes=pa.array([node_bytes, 64, None], pa.int64()))
        return pa.RecordBatch.from_arrays(list(cols.values()), schema=EVENT_SCHEMA)

    got = {k: b.to_pydict() for k, b in w._by_kind([batch(None)])}
    assert got["node_scheduled"]["seq"] == [0, 2] and got["node_scheduled"]["node"] == ["a", "b"]
    assert got["buffer_allocated"]["bytes"] == [64] and got["buffer_allocated"]["seq"] == [1]
    assert list(got["buffer_allocated"]) == KIND_SCHEMAS["buffer_allocated"].names
    with pytest.raises(ValueError, match="node_scheduled events with a value in column 'bytes'"):
        list(w._by_kind([batch(8)]))


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
    from conftest import FIXTURES, SEED_002, ingest_into
    from tlview.cli import main
    from tlview.store.shards import open_shards

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
