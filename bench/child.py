"""Run one measured function in a fresh process and print its wall time and peak RSS as JSON.

Usage: python -m bench.child MODULE:FUNC [ARG ...]
Each measurement gets its own process so that peak RSS belongs to it alone.
"""

from __future__ import annotations

import importlib
import json
import resource
import sys
import time


def main() -> None:
    target, *args = sys.argv[1:]
    mod, _, func = target.partition(":")
    fn = getattr(importlib.import_module(mod), func)
    t0 = time.perf_counter()
    result = fn(*args)
    wall = time.perf_counter() - t0
    rss_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"wall_s": wall, "peak_rss_mb": rss_kb / 1024, "result": result}))


if __name__ == "__main__":
    main()
