"""gpureduce.dask.local_cluster without a GPU: which CUDA_VISIBLE_DEVICES entry each worker gets, the errors, and
a real cluster of nannies whose worker processes each see their own entry (gpureduce.device_count made to report
GPUs here; the workers run no CUDA).  tests/test_dask_cluster_gpu.py reduces on the real thing."""
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
