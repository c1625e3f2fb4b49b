"""`python -m bench [NAME ...]`: run every benchmark (or the named ones) and print one table.

Names: the bench_<name>.py modules in this folder (ir, xla, wrapper, kineto, tui, views,
ranks, ...).
Inputs are generated under $TLVIEW_BENCH_DIR/tlview-bench/ (default: the temporary
directory) from the real fixtures; each measurement runs in
its own process so that its peak RSS is its own.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
from pathlib import Path

from .harness import print_table


def main(argv: list[str]) -> int:
    here = Path(__file__).parent
    names = sorted(m.name[len("bench_"):] for m in pkgutil.iter_modules([str(here)])
                   if m.name.startswith("bench_"))
    chosen = argv or names
    unknown = set(chosen) - set(names)
    if unknown:
        print(f"unknown benchmarks {sorted(unknown)}; have {names}", file=sys.stderr)
        return 2
    results = []
    for name in chosen:
        print(f"== {name}", file=sys.stderr, flush=True)
        mod = importlib.import_module(f"bench.bench_{name}")
        results.extend(mod.main())
    print_table(results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
