#!/usr/bin/env bash
# The compiled core under AddressSanitizer + UndefinedBehaviorSanitizer: builds it with
# -fsanitize=address,undefined,float-cast-overflow into build/sanitize (the normal build
# and .venv stay as they are), then with the sanitizer runtimes preloaded into Python
# runs the compiled core's differential tests and a fuzz campaign of every format
# (python -m bench.fuzz --parse: mutated real fixtures, compiled core against the Python
# parsers). Any sanitizer report, crash, traceback, hang or disagreement fails the run;
# the input is kept in build/sanitize/fuzz/ (current/: the one a crash ended on).
#
#   SANITIZE_SECONDS   seconds of fuzzing (default 240; .ci/run uses a short campaign)
#   SANITIZE_TESTS     the tests to run first (default: the compiled core's; "" for none)
#   SANITIZE_SEED      the campaign's seed (default: from the clock; printed)
#   SANITIZE_FORMATS   the campaign's formats (comma-separated; default: all)
#
# Needs .venv with the test extras (bash scripts/test.sh makes it) and gcc/g++ with
# their sanitizer runtimes (libasan, libubsan: Debian's gcc-12 brings them).
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
OUT=build/sanitize
PY=.venv/bin/python
if [ ! -x "$PY" ]; then
    echo "sanitize.sh: no .venv (run bash scripts/test.sh first)" >&2
    exit 2
fi
ASAN=$(gcc -print-file-name=libasan.so)
UBSAN=$(gcc -print-file-name=libubsan.so)
if [ ! -e "$ASAN" ] || [ ! -e "$UBSAN" ]; then
    echo "sanitize.sh: gcc's libasan/libubsan are missing (apt-get install libasan8 libubsan1)" >&2
    exit 2
fi

# The build: setup.py's own, into a separate tree (the package and the sanitized core);
# -O1 -g1 (after setup.py's -O2): line numbers in reports, half the compile time.
SAN="-fsanitize=address,undefined -fsanitize=float-cast-overflow -fno-sanitize-recover=all"
FLAGS="$SAN -fno-omit-frame-pointer -O1 -g1"
mkdir -p "$OUT"
FORCE=--force  # setup.py rebuilds what is older than its sources, whatever the flags were
[ "$(cat "$OUT/flags" 2>/dev/null)" = "$FLAGS" ] && FORCE=
# The package is copied anew (the objects in temp.* are kept): a file the tree no longer
# has (a removed or renamed SQL file) would otherwise stay in the copy that is imported.
rm -rf "$OUT"/build/lib.*
TLVIEW_NATIVE_CFLAGS="$FLAGS" TLVIEW_NATIVE_LDFLAGS="$SAN" TLVIEW_REQUIRE_NATIVE=1 \
    "$PY" setup.py -q build --build-base "$OUT/build" $FORCE > "$OUT/build.log" 2>&1 \
    || { tail -30 "$OUT/build.log" >&2; exit 1; }
echo "$FLAGS" > "$OUT/flags"
LIB=$(echo "$OUT"/build/lib.*)
echo "sanitize: core built with $FLAGS ($(( $(date +%s) - start )) s)"

export PYTHONPATH="$PWD/$LIB"
export LD_PRELOAD="$ASAN $UBSAN"
# CPython frees little at exit: no leak report; the first error of either kind ends it.
export ASAN_OPTIONS=detect_leaks=0:abort_on_error=1:halt_on_error=1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
export TLVIEW_REQUIRE_NATIVE=1
# the sanitized core is the one imported, not the normal build's
"$PY" -c "import sys, tlview.ingest._native as n; \
sys.exit(0 if n.__file__.startswith('$PWD/$LIB') else 'sanitize: imported ' + n.__file__)"

TESTS=${SANITIZE_TESTS-tests/native/test_chrome_trace.py tests/native/test_inductor_ir.py tests/native/test_cuda_snapshot.py tests/native/test_xla_buffer_assignment.py tests/native/test_flight_recorder.py tests/native/test_fuzz_findings.py}
if [ -n "$TESTS" ]; then
    # shellcheck disable=SC2086
    "$PY" -m pytest -q -x -p no:cacheprovider -n "${TLVIEW_TEST_WORKERS:-2}" $TESTS
    echo "sanitize: tests done ($(( $(date +%s) - start )) s)"
fi
SEED=${SANITIZE_SEED:+--seed $SANITIZE_SEED}
FORMATS=${SANITIZE_FORMATS:+--formats $SANITIZE_FORMATS}
# shellcheck disable=SC2086
"$PY" -m bench.fuzz "${SANITIZE_SECONDS:-240}" --parse --timeout 60 --out "$OUT/fuzz" $SEED \
    $FORMATS
echo "sanitize: clean ($(( $(date +%s) - start )) s)"
