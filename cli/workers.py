"""How many worker processes a parallel ingest or shard takes by default: in a module of
its own, so that the commands' help says it without loading the parallel ingest."""

from __future__ import annotations

import os


def default_jobs() -> int:
    """Every core this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1
