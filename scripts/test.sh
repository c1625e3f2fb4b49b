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
# Compiled bytecode is written and reused (the __pycache__ folders are ignored by git),
# also where the environment turns it off: each of the two workers, and every tlview
# process a test starts, would compile tlview and the assertion-rewritten test modules
# anew (~6 CPU-s of a worker's 13 s of collection).
unset PYTHONDONTWRITEBYTECODE
# Two workers (TLVIEW_TEST_WORKERS=0: one process, e.g. to debug a test).
exec .venv/bin/python -m pytest -q -n "${TLVIEW_TEST_WORKERS:-2}" "$@"
