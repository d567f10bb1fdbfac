"""gpureduce.dask on a cluster of one worker process per GPU (gpureduce.dask.local_cluster): every GPU of the
machine holds chunks and reduces them, and the results equal NumPy's (integers exactly, floats within twice
gpureduce.testing.error_bound, for the tree of partials).  On a machine with one GPU the cluster has one worker;
the 2-GPU machine runs it with two."""
import numpy as np
import pytest

import gpureduce
from gpureduce.testing import error_bound

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")
gd = pytest.importorskip("gpureduce.dask")

pytestmark = pytest.mark.gpu


def _own_gpu():
    """The worker's view: how many GPUs it sees, and the PCI bus of its GPU 0."""
    import gpureduce
    return gpureduce.device_count(), gpureduce._core.device_properties()["pci_bus_id"]


@pytest.fixture(scope="module")
def client():
    with gd.local_cluster(use_dask_cuda=False) as cluster, distributed.Client(cluster) as c:
        yield c


def test_each_worker_sees_its_own_gpu(client):
    seen = client.run(_own_gpu)
    assert len(seen) == gpureduce.device_count()
    assert all(count == 1 for count, _ in seen.values()), seen
    assert len({bus for _, bus in seen.values()}) == len(seen), f"two workers share a GPU: {seen}"


def _spread(client, x):
    """x persisted on the workers, every worker holding some of its chunks."""
    x = x.persist()
    distributed.wait(x)
    holders = {w for ws in client.who_has(x).values() for w in ws}
    assert len(holders) == len(client.scheduler_info()["workers"]), f"chunks on {len(holders)} workers only"
    return x


@pytest.mark.parametrize("dtype", ["float32", "int64"])
def test_reductions_and_scans_across_gpus(client, dtype, rng):
    x = (rng.standard_normal((4096, 300)) * 100).astype(dtype)
    d = _spread(client, da.from_array(x, chunks=(512, 150)))
    for op in ("sum", "prod", "min", "max", "mean", "argmin", "argmax"):
        for axis in (None, 0, 1):
            got = np.asarray(getattr(gd, op)(d, axis=axis).compute())
            want = getattr(np, op)(x, axis=axis)
            assert got.dtype == np.asarray(want).dtype and got.shape == np.shape(want), (op, axis)
            if op in ("sum", "mean") and got.dtype.kind == "f":
                bound = 2 * error_bound(op, x, got.dtype, axis=axis)
                assert np.all(np.abs(got - getattr(np, op)(x.astype(np.float64), axis=axis)) <= bound), (op, axis)
            elif op == "prod" and got.dtype.kind == "f":
                continue  # products of thousands of normals overflow: only sums and extremes are checked here
            elif op != "prod":
                np.testing.assert_array_equal(got, want, err_msg=f"{op} axis={axis}")
    for axis in (None, 0, 1):
        got = gd.cumsum(d, axis=axis).compute()
        if x.dtype.kind in "iu":
            np.testing.assert_array_equal(got, np.cumsum(x, axis=axis))
        else:
            bound = 2 * error_bound("cumsum", x, got.dtype, axis=axis)
            assert np.all(np.abs(got - np.cumsum(x.astype(np.float64), axis=axis)) <= bound)
        np.testing.assert_array_equal(gd.cummax(d, axis=axis).compute(),
                                      np.maximum.accumulate(x.ravel() if axis is None else x,
                                                            axis=0 if axis is None else axis))


def test_results_do_not_depend_on_scheduling(client, rng):
    x = rng.standard_normal(2**22).astype(np.float32)
    d = _spread(client, da.from_array(x, chunks=2**18))
    first = gd.sum(d).compute()
    again = [gd.sum(d).compute() for _ in range(4)]
    assert all(a.tobytes() == first.tobytes() for a in again), (first, again)
    scan = gd.cumsum(d).compute()
    assert gd.cumsum(d).compute().tobytes() == scan.tobytes()


@pytest.mark.parametrize("kind", ["numpy", "cupy"])
@pytest.mark.parametrize("dtype", ["float64", "int32"])
def test_every_function_across_gpus_matches_numpy(client, kind, dtype):
    """Every reduction and scan of gpureduce.dask, along every axis and the whole array, on chunks spread over the
    workers (NumPy chunks in their memory, or CuPy chunks on their GPUs): NumPy's dtype, shape and values."""
    from test_dask_cluster_cpu import every_function_data, every_function_matches_numpy

    x = every_function_data(dtype)
    d = da.from_array(x, chunks=(16, 12))
    if kind == "cupy":
        cupy = pytest.importorskip("cupy")
        d = d.map_blocks(cupy.asarray)
    every_function_matches_numpy(x, _spread(client, d))

