#!/usr/bin/env bash
# The README's test command: makes .venv (if missing), installs tlview with its
# test extras, and runs the test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
    "$PY" -m venv .venv
fi
.venv/bin/python -m pip install -q --disable-pip-version-check -e '.[test]'
# Two workers (TLVIEW_TEST_WORKERS=0: one process, e.g. to debug a test).
exec .venv/bin/python -m pytest -q -n "${TLVIEW_TEST_WORKERS:-2}" "$@"
