# Developer checks. The README's two commands are scripts/demo.sh and scripts/test.sh.
VENV ?= .venv
PY := $(VENV)/bin/python

.PHONY: check lint types test bench

check: lint types test

$(PY):
	python3 -m venv $(VENV)
	$(PY) -m pip install -q -e '.[test,dev]'

lint: $(PY)
	$(PY) -m ruff check ingest store tui cli bench tests

types: $(PY)
	$(PY) -m mypy ingest store cli tui --ignore-missing-imports

test: $(PY)
	$(PY) -m pytest -q

bench: $(PY)
	$(PY) -m bench
