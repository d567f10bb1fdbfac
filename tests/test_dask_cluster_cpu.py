"""gpureduce.dask.local_cluster without a GPU: which CUDA_VISIBLE_DEVICES entry each worker gets, the errors, and
a real cluster of nannies whose worker processes each see their own entry (gpureduce.device_count made to report
GPUs here; the workers run no CUDA); then clusters of two workers with NumPy standing in for the kernels: every
function against NumPy, a scan that moves no chunk between them, a worker killed mid-reduction.
tests/test_dask_cluster_gpu.py reduces on the real thing."""
import os

import pytest

import gpureduce

pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")
cluster_module = pytest.importorskip("gpureduce.dask.cluster")
gd = pytest.importorskip("gpureduce.dask")


@pytest.fixture
def four_gpus(monkeypatch):
    monkeypatch.setattr(cluster_module._core, "device_count", lambda: 4)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)


def test_every_gpu_by_default_and_the_ordinals_asked_for(four_gpus):
    assert cluster_module.visible_gpus() == ["0", "1", "2", "3"]
    assert cluster_module.visible_gpus([2, 0]) == ["2", "0"]
    assert cluster_module.visible_gpus(3) == ["3"]


def test_ordinals_map_through_this_process_own_visible_devices(four_gpus, monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "4, 5,GPU-1234,7")
    assert cluster_module.visible_gpus() == ["4", "5", "GPU-1234", "7"]
    assert cluster_module.visible_gpus([1, 2]) == ["5", "GPU-1234"]


@pytest.mark.parametrize("gpus,match", [([4], "not one of this process's 4 GPU"), ([-1], "not one of"),
                                        ([0, 0], "repeat"), ([], "empty"), ([True], "not one of"),
                                        (["0"], "not one of")])
def test_bad_ordinals_are_named(four_gpus, gpus, match):
    with pytest.raises(ValueError, match=match):
        cluster_module.visible_gpus(gpus)


def test_no_gpu_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(cluster_module._core, "device_count", lambda: 0)
    with pytest.raises(RuntimeError, match="no CUDA device"):
        gd.local_cluster()


def test_one_nanny_per_gpu_without_a_memory_limit():
    specs = cluster_module.worker_specs(["3", "7"], threads_per_worker=2)
    assert sorted(specs) == ["gpu-3", "gpu-7"]
    for device, spec in (("3", specs["gpu-3"]), ("7", specs["gpu-7"])):
        assert spec["cls"] is distributed.Nanny
        assert spec["options"] == {"nthreads": 2, "memory_limit": 0, "env": {"CUDA_VISIBLE_DEVICES": device}}


def _visible():
    return os.environ.get("CUDA_VISIBLE_DEVICES")


def test_each_worker_process_sees_its_own_entry(monkeypatch):
    monkeypatch.setattr(cluster_module._core, "device_count", lambda: 2)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "6,9")
    with gd.local_cluster(use_dask_cuda=False, dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        seen = client.run(_visible)
        assert sorted(seen.values()) == ["6", "9"]
        assert {w["memory_limit"] for w in client.scheduler_info()["workers"].values()} == {0}


def test_a_scan_on_two_workers_moves_only_its_carries(monkeypatch):
    """Two workers (threads of this process; NumPy's cumsum stands in for the kernels): each block is scanned and
    gets its carry on the worker that holds it, so what crosses between the workers is the blocks' last elements
    and the carries, bytes, never a block (32 KiB each here; Dask's cumreduction moved whole blocks)."""
    import types

    import numpy as np
    import dask.array as da

    monkeypatch.setattr(gd.chunks, "kernels", types.SimpleNamespace(cumsum=np.cumsum))
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None)
    with cluster, distributed.Client(cluster) as client:
        x = da.random.default_rng(5).random(2**18, chunks=2**12).persist()
        distributed.wait(x)
        assert all(client.has_what().values()), "the blocks are on both workers"

        def moved():
            return sum(client.run(lambda dask_worker: dask_worker.transfer_outgoing_bytes_total).values())

        before = moved()
        r = gd.cumsum(x).persist()
        distributed.wait(r)
        assert moved() - before < 2**15, moved() - before
        np.testing.assert_allclose(r.compute(), np.cumsum(x.compute()), rtol=1e-12)


def every_function_data(dtype):
    """A 60 x 40 array for _every_function_matches_numpy: floats in [0.5, 1.5) (products neither overflow nor
    underflow), integers in [-3, 3]."""
    import numpy as np
    rng = np.random.default_rng(11)
    return (rng.uniform(0.5, 1.5, (60, 40)) if dtype == "float64" else rng.integers(-3, 4, (60, 40))).astype(dtype)


def every_function_matches_numpy(x, d):
    """Every function of gpureduce.dask (reductions and scans) over `d`, the chunked `x` (NumPy or CuPy chunks),
    along every axis and the whole array: NumPy's dtype, shape and values (test_dask_cpu's check: floats to a
    relative 1e-4 or 1e-10).  tests/test_dask_cluster_gpu.py runs it on GPU workers."""
    import warnings

    import numpy as np
    from test_dask_cpu import check, reference

    for op in gd.OPERATORS:
        for axis in (None,) + tuple(range(x.ndim)):
            with np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                got = getattr(gd, op)(d, axis=axis).compute()
                want = reference(op, x, axis=axis)
            got = got.get() if hasattr(got, "get") else got  # CuPy chunks' result: to the host
            check(np.asarray(got), np.asarray(want), x.dtype)


@pytest.mark.parametrize("dtype", ["float64", "int32"])
def test_every_function_on_two_workers_matches_numpy(monkeypatch, dtype):
    """Every reduction and scan of gpureduce.dask on a cluster of two workers (threads of this process; NumPy's
    functions stand in for the kernels) holding a 4 x 4 grid of chunks between them."""
    import dask.array as da
    from test_dask_cpu import NUMPY_KERNELS

    monkeypatch.setattr(gd.chunks, "kernels", NUMPY_KERNELS)
    x = every_function_data(dtype)
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None)
    with cluster, distributed.Client(cluster) as client:
        d = da.from_array(x, chunks=(16, 12)).persist()
        distributed.wait(d)
        assert len({w for ws in client.who_has(d).values() for w in ws}) == 2, "the chunks are on both workers"
        every_function_matches_numpy(x, d)


class _SlowNumpyKernels(distributed.WorkerPlugin):
    """On every worker, also one that starts later (a restarted one): NumPy's sum and cumsum stand in for the
    kernels, each taking 30 ms a chunk, so that a worker can be killed while a reduction runs."""

    def setup(self, worker):
        import time
        import types

        import numpy as np
        import gpureduce.dask.chunks as chunks

        def slow(fn):
            def run(*args, **kwargs):
                time.sleep(0.03)
                return fn(*args, **kwargs)
            return run
        chunks.kernels = types.SimpleNamespace(sum=slow(np.sum), cumsum=slow(np.cumsum))


@pytest.mark.parametrize("op", ["sum", "cumsum"])
def test_a_worker_killed_during_a_reduction_never_gives_a_wrong_answer(op):
    """A worker process killed while a reduction or a scan runs on it: its nanny starts a new one, Dask computes
    the lost chunks again, and the answer is NumPy's (exactly: integers), never a partial one."""
    import os
    import sys
    import time

    import numpy as np
    import dask.array as da

    x = np.arange(64 * 500, dtype=np.int64) % 7 - 3
    env = {"PYTHONPATH": os.pathsep.join(sys.path)}  # the workers import this plugin's module
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                       memory_limit=0, env=env)
    with cluster, distributed.Client(cluster) as client:
        client.register_plugin(_SlowNumpyKernels())
        d = da.from_array(x, chunks=500).persist()  # 64 chunks: about a second of work on each worker
        distributed.wait(d)
        result = client.compute(getattr(gd, op)(d))
        time.sleep(0.4)
        assert not result.done(), "the work ended before a worker could be killed"
        def workers():  # the scheduler's own list (the client's scheduler_info is refreshed every few seconds)
            return sorted(client.run_on_scheduler(lambda dask_scheduler: list(dask_scheduler.workers)))

        victim = workers()[0]
        try:
            client.run(os._exit, 1, workers=[victim])  # the process dies at once, mid-task
        except Exception:
            pass  # the run's own reply is lost with the worker
        got = result.result(timeout=120)
        assert victim not in workers()
        np.testing.assert_array_equal(got, getattr(np, op)(x))
