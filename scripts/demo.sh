#!/usr/bin/env bash
# The README's first command: install tlview into .venv, ingest a bundled
# sample (Inductor scheduler IR of a conv-net backward), print its peak memory.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
    "$PY" -m venv .venv
fi
.venv/bin/python -m pip install -q --disable-pip-version-check -e '.[test]'
rm -f demo.duckdb
.venv/bin/tlview ingest tests/fixtures/seeds/000_f2a980d458b1ffe8.txt --db demo.duckdb
.venv/bin/tlview sql --db demo.duckdb \
  "SELECT t.name, p.peak_step, p.peak_bytes, p.node FROM peak_memory p JOIN timelines t USING (timeline_id)"
echo "Open it with: .venv/bin/tlview demo.duckdb"
