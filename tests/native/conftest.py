"""Fixtures the compiled core's differential tests share."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from tlview.store import Database, open_database


@pytest.fixture(scope="module")
def dbs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[bool, Database]]:
    """One database per parser (compiled: True) for a module's ingests: a source's digest
    does not depend on the sources beside it (conftest.IngestedFixtures), and a failed
    ingest leaves its database as it was; one database each spares every ingest a new
    database's schema (most of the time of an ingest of a few events)."""
    folder = tmp_path_factory.mktemp("twins")
    with open_database(folder / "py.duckdb") as py, open_database(folder / "c.duckdb") as c:
        yield {False: py, True: c}
