"""The runs view (schemas/75_runs.sql) against the views it summarises, on every fixture.

``runs.n_graphs`` counts the graphs by the graphs view's key over the graph forms it has
already derived (reading ``graphs`` would derive every timeline a second time): the two
must agree on every run.
"""

from __future__ import annotations

import pytest

# The database of every fixture, which ingest/test_events_digest writes (one xdist group).
pytestmark = pytest.mark.xdist_group("fixtures_compiled")


@pytest.fixture(scope="module")
def con(all_fixtures):
    return all_fixtures.db.con


def test_n_graphs_is_the_rows_of_graphs(con):
    listed = dict(con.execute("SELECT run_id, count(*) FROM graphs GROUP BY run_id").fetchall())
    counted = dict(con.execute("SELECT run_id, n_graphs FROM runs").fetchall())
    assert {run: n for run, n in counted.items() if n} == listed
    assert sum(n > 1 for n in listed.values()) >= 5  # runs of several graphs among them
