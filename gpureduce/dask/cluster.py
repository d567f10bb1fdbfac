"""One Dask worker per GPU of this machine: ``gpureduce.dask.local_cluster()``.

Each worker is its own process that sees one GPU alone (``CUDA_VISIBLE_DEVICES`` set before CUDA starts there),
so every chunk a worker holds is reduced on that worker's GPU and the GPUs work side by side.  dask-cuda's
``LocalCUDACluster`` does this where it is installed; without it, a ``distributed.SpecCluster`` of nannies, one per
GPU, does the same with nothing but ``distributed``.

The workers' memory limit is off by default (``memory_limit=0``): an array persisted for reductions is meant to
stay in host memory, and Dask's default limit (a share of the memory the machine reports at start-up, which on
some virtual machines is a fraction of what they may use) would spill it to disk or restart the worker.
"""
from __future__ import annotations

import os

from .. import _core


def visible_gpus(gpus=None):
    """The ``CUDA_VISIBLE_DEVICES`` entry of each GPU in `gpus` (this process's ordinals; default: every GPU it
    sees), so that a worker started with that entry sees that GPU alone, also where this process itself was
    given a subset of the machine's GPUs."""
    count = _core.device_count()
    if count == 0:
        raise RuntimeError("gpureduce.dask.local_cluster: no CUDA device is visible to this process, so there is "
                           "no GPU to give a worker (gpureduce.device_count() is 0)")
    ordinals = list(range(count)) if gpus is None else [gpus] if isinstance(gpus, int) else list(gpus)
    if not ordinals:
        raise ValueError("gpureduce.dask.local_cluster: gpus is empty; give GPU ordinals, e.g. gpus=[0, 1], or "
                         "None for every GPU")
    for g in ordinals:
        if not isinstance(g, int) or isinstance(g, bool) or not 0 <= g < count:
            raise ValueError(f"gpureduce.dask.local_cluster: GPU ordinal {g!r} is not one of this process's "
                             f"{count} GPU(s) (0 to {count - 1})")
    if len(set(ordinals)) != len(ordinals):
        raise ValueError(f"gpureduce.dask.local_cluster: GPU ordinals {ordinals} repeat one; each worker has its "
                         "own GPU")
    parent = [d.strip() for d in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if d.strip()]
    return [parent[g] if len(parent) == count else str(g) for g in ordinals]


def worker_specs(devices, *, threads_per_worker=1, memory_limit=0):
    """The SpecCluster worker specification: one nanny per ``CUDA_VISIBLE_DEVICES`` entry in `devices`."""
    from distributed import Nanny

    return {f"gpu-{device}": {"cls": Nanny, "options": {"nthreads": threads_per_worker, "memory_limit": memory_limit,
                                                         "env": {"CUDA_VISIBLE_DEVICES": device}}}
            for device in devices}


def local_cluster(gpus=None, *, threads_per_worker=1, memory_limit=0, dashboard_address=":0", use_dask_cuda=None,
                  **cluster_options):
    """A local Dask cluster of one worker process per GPU; each worker sees its own GPU alone.

    Parameters
    ----------
    gpus : int or sequence of int, optional
        This process's GPU ordinals to give a worker each (default: every GPU it sees).
    threads_per_worker : int
        Threads of each worker (1: one chunk at a time per GPU, which is what the GPU can serve best).
    memory_limit : int or str
        Each worker's memory limit, as Dask takes it; 0 (the default) sets none (see the module's notes).
    dashboard_address : str
        Where the scheduler's dashboard listens (":0": any free port), when Bokeh is installed.
    use_dask_cuda : bool, optional
        Whether to build it with dask-cuda's LocalCUDACluster; by default, where dask-cuda imports.
    **cluster_options
        Passed on to LocalCUDACluster or SpecCluster.

    Returns
    -------
    distributed.deploy.Cluster
        Give it to ``distributed.Client``; close it (or use it in a ``with`` block) when done.

    Examples
    --------
    >>> from distributed import Client                                    # doctest: +SKIP
    >>> with gpureduce.dask.local_cluster() as cluster, Client(cluster):  # doctest: +SKIP
    ...     x = da.random.random(2**30, chunks=2**26).persist()
    ...     total = gpureduce.dask.sum(x).compute()
    """
    try:
        import distributed  # noqa: F401  (only to fail early, with the way to install it)
    except ImportError as e:
        raise ImportError("gpureduce.dask.local_cluster needs Dask's distributed scheduler: "
                          "pip install 'gpureduce[dask]' (or 'distributed')") from e
    devices = visible_gpus(gpus)
    if use_dask_cuda is None:
        try:
            import dask_cuda  # noqa: F401
            use_dask_cuda = True
        except ImportError:
            use_dask_cuda = False
    if use_dask_cuda:
        from dask_cuda import LocalCUDACluster

        return LocalCUDACluster(CUDA_VISIBLE_DEVICES=",".join(devices), threads_per_worker=threads_per_worker,
                                memory_limit=memory_limit, dashboard_address=dashboard_address, **cluster_options)
    from distributed import Scheduler, SpecCluster

    scheduler = {"cls": Scheduler, "options": {"dashboard_address": dashboard_address}}
    return SpecCluster(workers=worker_specs(devices, threads_per_worker=threads_per_worker,
                                            memory_limit=memory_limit),
                       scheduler=scheduler, **cluster_options)
