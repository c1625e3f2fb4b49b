# Developer checks. The README's two commands are scripts/demo.sh and scripts/test.sh;
# they install the test extra only, so the checks install the dev extra (ruff, mypy,
# pytest-xdist) themselves, once (the stamp file), and again when pyproject.toml changes.
VENV ?= .venv
PY := $(VENV)/bin/python
DEV := $(VENV)/.tlview-dev-installed

.PHONY: check lint types test bench docs format

check: lint types test

$(PY):
	python3 -m venv $(VENV)

$(DEV): pyproject.toml | $(PY)
	$(PY) -m pip install -q --disable-pip-version-check -e '.[test,dev]'
	touch $@

lint: $(DEV)
	$(PY) -m ruff check ingest store tui cli bench tests
	bash scripts/check_format.sh

# native/*.cpp, *.hpp as .clang-format says (scripts/check_format.sh checks it)
format: $(DEV)
	$(VENV)/bin/clang-format -i native/*.cpp native/*.hpp

types: $(DEV)
	$(PY) -m mypy ingest store cli tui --ignore-missing-imports

test: $(DEV)
	$(PY) -m pytest -q

bench: $(DEV)
	$(PY) -m bench

# docs/views.md from the schema's comments (tests/store/test_views_doc.py fails while it is stale).
docs: $(DEV)
	$(PY) -m tlview.store.views_doc
