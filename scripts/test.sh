#!/usr/bin/env bash
# The README's test command: makes .venv (if missing), installs tlview with its
# test extras, and runs the test suite.
#
# The compiled core is required here (TLVIEW_REQUIRE_NATIVE=1, as in CI): a core that
# does not build fails the install, and one that is missing or does not import fails
# the tests instead of their skipping. On a machine without a C++ compiler:
# TLVIEW_REQUIRE_NATIVE=0 bash scripts/test.sh tests the pure-Python parsers alone.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
export TLVIEW_REQUIRE_NATIVE=${TLVIEW_REQUIRE_NATIVE:-1}
if [ ! -x .venv/bin/python ]; then
    "$PY" -m venv .venv
fi
.venv/bin/python -m pip install -q --disable-pip-version-check -e '.[test]'
# Two workers (TLVIEW_TEST_WORKERS=0: one process, e.g. to debug a test).
exec .venv/bin/python -m pytest -q -n "${TLVIEW_TEST_WORKERS:-2}" "$@"
