#!/usr/bin/env bash
# Fails when a file of the compiled core is not formatted as .clang-format says, naming
# the file and line (clang-format --dry-run --Werror). The clang-format is the one the
# test extra pins (pyproject.toml), so CI and every machine format alike.
# To format: .venv/bin/clang-format -i native/*.cpp native/*.hpp
set -euo pipefail
cd "$(dirname "$0")/.."
CF=${CLANG_FORMAT:-.venv/bin/clang-format}
if [ ! -x "$CF" ]; then
    echo "check_format.sh: no $CF (pip install -e '.[test]' brings it)" >&2
    exit 2
fi
"$CF" --dry-run --Werror native/*.cpp native/*.hpp
echo "check_format: native/ formatted ($("$CF" --version))"
