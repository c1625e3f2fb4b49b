"""The per-file work on a Dask cluster (``--dask ADDRESS`` or ``--dask local``).

tlview runs no scheduler of its own: past one machine the tasks of cli/shard_task.py go
to ``dask.distributed`` (a LocalCluster here; SLURM, Kubernetes and the rest through
dask-jobqueue or dask-kubernetes, whose scheduler address ``--dask`` takes). Dask is
the optional extra ``pip install 'tlview[cluster]'``, imported only here and only when
asked for, so the default install stays lean.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

NEEDS = ("--dask needs dask.distributed, which tlview installs only as an extra: "
         "pip install 'tlview[cluster]'")


class ClusterUnavailable(Exception):
    """``--dask`` without dask.distributed installed."""


def _distributed() -> Any:
    """dask.distributed, imported only when asked for."""
    try:
        import distributed
    except ImportError:
        raise ClusterUnavailable(NEEDS) from None
    return distributed


def require() -> None:
    """Raise ClusterUnavailable now, before anything is written, if Dask is missing."""
    _distributed()


@contextmanager
def dask_pool(address: str, jobs: int) -> Iterator[Callable[..., Any]]:
    """``submit(fn, *args)`` on a Dask cluster: ``address`` is a running scheduler's
    (``tcp://host:8786``), or ``local`` for a LocalCluster of ``jobs`` single-threaded
    worker processes on this machine (the parsers hold the GIL: processes, not threads).
    Shards are written where the task is told: on a cluster of several machines, a
    folder every worker and this process see (``--shards DIR`` on shared storage)."""
    distributed = _distributed()
    if address == "local":
        cluster = distributed.LocalCluster(n_workers=jobs, threads_per_worker=1,
                                           processes=True, dashboard_address=None)
        try:
            with distributed.Client(cluster) as client:
                yield _submitter(client)
        finally:
            cluster.close()
    else:
        with distributed.Client(address) as client:
            yield _submitter(client)


def _submitter(client: Any) -> Callable[..., Any]:
    def submit(fn: Callable[..., Any], *args: Any) -> Any:
        # pure=False: a file may change between two runs with the same arguments
        return client.submit(fn, *args, pure=False)

    return submit
