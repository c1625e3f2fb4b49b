"""Bad scheduler-IR input: a clear error naming file and line, and the database unchanged."""

from __future__ import annotations

import shutil
from pathlib import Path

import duckdb
import pytest
from tlview.ingest import IngestError

from tests.conftest import SEED_001, SEED_002, SEED_003, ingest_into, tlview_main

_TABLES = ("sources", "timeline_records", "timeline_notes", "events", "tlview_meta")
# Each table's row count and an order-independent checksum of every row's content, in one
# query (a query costs more than these small tables' scans).
_SNAPSHOT_SQL = " UNION ALL ".join(
    f"SELECT {i} AS i, '{t}', count(*), sum(hash(t)::HUGEINT) FROM {t} t"
    for i, t in enumerate(_TABLES)) + " ORDER BY i"


def snapshot(db_path: Path) -> tuple:
    """Row counts and a checksum of every table: equal before and after a failed ingest."""
    con = duckdb.connect(str(db_path), read_only=True)
    try:
        return tuple(row[1:] for row in con.execute(_SNAPSHOT_SQL).fetchall())
    finally:
        con.close()


@pytest.fixture
def db_with_one(db_path: Path, alone) -> Path:
    """A database holding seed 002 alone, which the test may change: a copy of the one
    ingested once per test process (conftest's ``alone``)."""
    shutil.copyfile(alone(SEED_002)[0], db_path)
    return db_path


def _fails(db_path: Path, bad: Path, fmt: str | None = None) -> IngestError:
    before = snapshot(db_path)
    with pytest.raises(IngestError) as ei:
        ingest_into(db_path, bad, fmt=fmt)
    assert snapshot(db_path) == before
    assert str(bad) in str(ei.value) or bad.name in str(ei.value)
    return ei.value


def test_truncated_mid_outputs(db_with_one, tmp_path):
    lines = SEED_001.read_text().splitlines(keepends=True)
    cut = next(i for i, ln in enumerate(lines) if ln.startswith("op3.outputs = [")) + 3
    bad = tmp_path / "trunc.txt"
    bad.write_text("".join(lines[:cut]))
    err = _fails(db_with_one, bad)
    assert err.line is not None and "truncated" in err.message


def test_truncated_between_nodes_dangling_user(db_with_one, tmp_path):
    text = SEED_002.read_text()
    bad = tmp_path / "trunc2.txt"
    bad.write_text(text[: text.index("op2: SchedulerNode")])
    err = _fails(db_with_one, bad)
    assert "op2" in err.message and "never appears" in err.message
    # the line that declares the buffer whose user is missing
    assert err.line == text.splitlines().index("    buf1: ExternKernelOut") + 1


def test_other_format_forced(db_with_one):
    err = _fails(db_with_one, SEED_003, fmt="inductor_ir")
    assert err.line == 1 and "expected an Inductor scheduler node header" in err.message


def test_binary_garbage(db_with_one, tmp_path):
    bad = tmp_path / "garbage.bin"
    bad.write_bytes(bytes(range(256)) * 10)
    err = _fails(db_with_one, bad, fmt="inductor_ir")
    assert err.line == 1


def test_flipped_byte_invalid_utf8(db_with_one, tmp_path):
    data = bytearray(SEED_002.read_bytes())
    pos = data.index(b"op2.writes")
    data[pos + 3] = 0xFF
    bad = tmp_path / "flip.txt"
    bad.write_bytes(bytes(data))
    err = _fails(db_with_one, bad)
    assert err.line == SEED_002.read_bytes()[:pos].count(b"\n") + 1


def test_empty_file(db_with_one, tmp_path):
    bad = tmp_path / "empty.txt"
    bad.write_text("")
    err = _fails(db_with_one, bad)
    assert "empty" in err.message


def test_symbolic_sizes_kept_not_zero(db_path, tmp_path):
    text = SEED_002.read_text().replace(
        "buf1.layout = FixedLayout('cuda', torch.bfloat16, size=[128, 256], stride=[256, 1])",
        "buf1.layout = FixedLayout('cuda', torch.bfloat16, size=[s0, 256], stride=[256, 1])",
    )
    assert "s0" in text
    p = tmp_path / "sym.txt"
    p.write_text(text)
    (tid,) = ingest_into(db_path, p)
    con = duckdb.connect(str(db_path), read_only=True)
    b = con.execute("SELECT bytes, size_expr, shape FROM buffers WHERE buffer='buf1'").fetchone()
    assert b[0] is None and "s0" in b[1] and b[2] == "[s0, 256]"
    row = con.execute(
        "SELECT live_bytes, unknown_live FROM memory_curve WHERE step = 1").fetchone()
    assert row == (1_048_576, 1)  # buf0 counted, buf1 reported as unknown, not as 0


def test_unknown_fields_kept(db_path, tmp_path):
    text = SEED_002.read_text().replace(
        "op1.node.kernel = extern_kernels.mm",
        "op1.node.kernel = extern_kernels.mm\nop1.future_field = {'x': 1}\nsomething unexpected",
        1,
    )
    p = tmp_path / "future.txt"
    p.write_text(text)
    ingest_into(db_path, p)
    con = duckdb.connect(str(db_path), read_only=True)
    attrs = con.execute("SELECT attrs FROM nodes WHERE node='op1'").fetchone()[0]
    assert "future_field" in attrs and "something unexpected" in attrs


def test_cli_error_is_one_line_nonzero(tmp_path):
    bad = tmp_path / "garbage.txt"
    bad.write_text("hello world\nthis is not a dump\n")
    proc = tlview_main("ingest", str(bad), "--db", str(tmp_path / "x.duckdb"))
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "garbage.txt:1" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_unknown_node_kind_and_dtype(db_path, tmp_path):
    """A node class and a dtype from a torch this tlview has not seen: kept, sized where it can be."""
    text = (SEED_002.read_text()
            .replace("op2: SchedulerNode(ComputedBuffer)", "op2: FancyNewSchedulerNode(ShinyBuffer)")
            .replace("buf1.layout = FixedLayout('cuda', torch.bfloat16, size=[128, 256]",
                     "buf1.layout = FixedLayout('cuda', torch.float6_e3m2, size=[128, 256]"))
    p = tmp_path / "new.txt"
    p.write_text(text)
    (tid,) = ingest_into(db_path, p)
    con = duckdb.connect(str(db_path), read_only=True)
    assert con.execute("SELECT node_class, ir_type FROM nodes WHERE node='op2'").fetchone() == (
        "FancyNewSchedulerNode", "ShinyBuffer")
    b = con.execute("SELECT bytes, dtype, size_expr FROM buffers WHERE buffer='buf1'").fetchone()
    assert b[0] is None and b[1] == "float6_e3m2" and "itemsize(float6_e3m2)" in b[2]
    assert con.execute("SELECT unknown_live FROM memory_curve WHERE step = 1").fetchone()[0] == 1
