"""docs/views.md documents every public view, table macro and table, from the comments
where the schema defines them, and is what `python -m tlview.store.views_doc` writes
today: a view added, renamed or re-commented without re-running it fails here."""

from __future__ import annotations

import difflib
from pathlib import Path

import pytest
from tlview.store import views_doc

PAGE = Path(__file__).resolve().parents[2] / "docs" / "views.md"
FIX = f"run `{views_doc.COMMAND}` and commit docs/views.md"


@pytest.fixture(scope="module")
def rendered() -> str:
    return views_doc.render()


def test_every_public_object_has_a_comment_and_a_place_in_the_page():
    objects = views_doc.public_objects()
    assert len({o.name for o in objects}) == len(objects) > 90
    undocumented = [f"{o.file}: {o.name}" for o in objects if not o.doc]
    assert not undocumented, ("no comment names or precedes these (write `-- name: what it "
                              f"is` above its CREATE): {undocumented}")
    page = PAGE.read_text(encoding="utf-8")
    missing = [o.name for o in objects if f'<a id="{o.name}"></a>' not in page]
    assert not missing, f"docs/views.md lacks {missing}: {FIX}"


def test_the_page_is_what_the_schema_gives_today(rendered):
    page = PAGE.read_text(encoding="utf-8")
    if page != rendered:
        diff = "".join(list(difflib.unified_diff(page.splitlines(True), rendered.splitlines(True),
                                                 "docs/views.md", "generated"))[:40])
        pytest.fail(f"docs/views.md is stale versus schemas/*.sql: {FIX}\n{diff}")


SQL = """\
-- A header that documents no object.

-- first_view: what it is.
--   col_a: the first column;
--   col_b / col_c: two more, the second
--     wrapped.
CREATE OR REPLACE VIEW first_view AS SELECT 1 AS col_a;

-- _helper: not public.
CREATE OR REPLACE VIEW _helper AS SELECT 1;

-- pair_one, pair_two: two views that share this comment.
CREATE OR REPLACE VIEW pair_one AS SELECT 1;

CREATE OR REPLACE VIEW pair_two AS SELECT 2;

CREATE OR REPLACE VIEW bare AS SELECT 3;

-- a_macro(x, y): a table macro, ncclKernel_* and '<no frames>' in its text.
CREATE OR REPLACE MACRO a_macro(p, q) AS TABLE SELECT p, q;
"""


def test_comments_are_found_by_name_else_above_the_create():
    f = views_doc.read_schema_file("99_x.sql", SQL)
    assert f.header == ("A header that documents no object.",)
    got = {o.name: o for o in f.objects}
    assert list(got) == ["first_view", "pair_one", "pair_two", "bare", "a_macro"]
    assert got["first_view"].doc == ("What it is.", "  col_a: the first column;",
                                     "  col_b / col_c: two more, the second", "    wrapped.")
    assert got["pair_two"].doc == got["pair_one"].doc == ("Two views that share this comment.",)
    assert got["pair_two"].group == "pair_one"
    assert got["bare"].doc == ()
    assert (got["a_macro"].kind, got["a_macro"].signature) == ("macro", "a_macro(x, y)")
    assert views_doc._markdown(got["first_view"].doc) == [
        "What it is.", "", "- col_a: the first column;",
        "- col_b / col_c: two more, the second wrapped.", ""]
    assert views_doc._markdown(got["a_macro"].doc) == [
        "A table macro, `ncclKernel_*` and `'<no frames>'` in its text.", ""]
