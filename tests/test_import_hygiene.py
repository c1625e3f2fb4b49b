"""What each package may import, checked in a fresh interpreter (as harlequin does):
ingest/ (every parser, the pure-Python ones and the compiled core's wrappers) never
imports DuckDB; ingest/ and store/ never import textual; the commands that only read
never load pyarrow (nor numpy under it)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _modules(folder: str, package: str) -> list[str]:
    """Every module of ``folder``, as ``package.name`` (the package itself first)."""
    return [package] + sorted(f"{package}.{p.stem}" for p in (ROOT / folder).glob("*.py")
                              if p.stem != "__init__")


def _first_offender(modules: list[str], banned: tuple[str, ...]) -> str:
    """One fresh interpreter imports the modules one by one and checks after each, so the
    first module that brings a banned package in is the one named (a process per module
    was many times slower). '' when none does."""
    code = ("import importlib, sys\n"
            f"for module in {modules!r}:\n"
            "    importlib.import_module(module)\n"
            f"    bad = sorted(m for m in sys.modules if m.split('.')[0] in {banned!r})\n"
            "    if bad:\n"
            "        print(module, 'imports', ','.join(bad[:5])); sys.exit(1)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode in (0, 1), proc.stderr[-800:]
    return proc.stdout.strip()


def test_parsers_never_import_duckdb_or_textual():
    """Every module of tlview.ingest, and the compiled core where it is built: the record
    types live in tlview.ingest.records, not behind the store's package."""
    modules = _modules("ingest", "tlview.ingest")
    assert "tlview.ingest.records" in modules and "tlview.ingest.native" in modules
    try:
        import tlview.ingest._native  # noqa: F401
        modules.append("tlview.ingest._native")
    except ImportError:
        pass
    assert _first_offender(modules, ("duckdb", "textual")) == ""


def test_store_never_imports_textual():
    assert _first_offender(_modules("store", "tlview.store"), ("textual",)) == ""


def test_reading_commands_never_load_pyarrow(tmp_path):
    """`tlview --version`, `sql` and `info` (and every parser listed for the help) leave
    pyarrow and numpy unloaded (what that saves of each command's start: docs/benchmarks.md).
    The writer and the Arrow columns load them where rows are made."""
    from tests.conftest import SEED_002, ingest_into

    db = tmp_path / "t.duckdb"
    ingest_into(db, SEED_002)
    code = ("import sys\n"
            "from tlview.cli import main\n"
            "for args in (['--help'], ['--version'], ['sql', '--db', sys.argv[1], "
            "'SELECT count(*) FROM events'], ['info', '--db', sys.argv[1]]):\n"
            "    try:\n"
            "        assert main(args) == 0, args\n"
            "    except SystemExit as e:\n"
            "        assert e.code == 0, args\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('pyarrow', 'numpy'))[:5])\n")
    proc = subprocess.run([sys.executable, "-c", code, str(db)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-800:]
    assert proc.stdout.splitlines()[-1] == "[]", proc.stdout[-800:]


def test_an_ingest_never_loads_parquet(tmp_path):
    """`tlview ingest` of a file leaves pyarrow's Parquet (and its filesystems, S3's among
    them) unloaded: only shards are written as Parquet by pyarrow (store/shards.py
    write_rows), and every ingest's start paid for loading it (docs/benchmarks.md)."""
    from tests.conftest import SEED_002

    code = ("import sys\n"
            "from tlview.cli import main\n"
            "assert main(['ingest', '--db', sys.argv[1], '-j', '1', sys.argv[2]]) == 0\n"
            "print(sorted(m for m in sys.modules if m.startswith(('pyarrow.parquet', "
            "'pyarrow.fs', 'pyarrow._s3fs')))[:5])\n")
    proc = subprocess.run([sys.executable, "-c", code, str(tmp_path / "t.duckdb"),
                           str(SEED_002)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-800:]
    assert proc.stdout.splitlines()[-1] == "[]", proc.stdout[-800:]
